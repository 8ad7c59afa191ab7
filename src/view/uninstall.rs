//! The guided uninstall as a person reads it, on every surface: the preflight's lines (the
//! CLI's text and the window's rows side by side), what each step's outcome is called, what a
//! flag is called in the window, what is left in place, and the refusals of a plan that is not
//! the one shown. Pure: functions of the preflight's, the plan's and the run's facts, handed in
//! by the uninstall (which stands above this room) as plain values.

use std::path::Path;

use serde::Serialize;

use crate::install::Install;
use crate::model::{human_bytes, Machine, Product, VmProcess};
use crate::pathblock::PathBlock;
use crate::record::Outcome;

/// A plan sent back that is not the one shown (another digest, another number of steps).
pub const NOT_THE_PLAN_SHOWN: &str = "the plan is not the one shown; review it again";
/// A run or a tick asked before any plan was made.
pub const NO_PLAN_YET: &str = "no plan has been made yet";
/// A plan run a second time.
pub const ALREADY_RAN: &str = "this plan has already run; start over for a new one";
/// A plan sent back with no step ticked.
pub const NOTHING_TICKED: &str = "no step is ticked: nothing to do";
/// An install whose version could not be read.
pub const VERSION_UNKNOWN: &str = "version unknown";
/// A step without a summary, in the progress line.
const STEP: &str = "Step";

/// One item of a list the window shows: what it is (a path, a pid, a command), a line about
/// it, and its size ("" when none is shown).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Row {
    /// What it is: a path, `pid 4242`, a command.
    pub main: String,
    /// What a person reads about it ("" when nothing).
    pub detail: String,
    /// Its size in words ("" when none is shown).
    pub size: String,
}

impl Row {
    fn new(main: impl Into<String>, detail: impl Into<String>) -> Row {
        Row {
            main: main.into(),
            detail: detail.into(),
            size: String::new(),
        }
    }
}

/// The preflight as the window lists it, one row per item, in the preflight's order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PreflightRows {
    /// Each install: its path; product, method, distribution, version.
    pub installs: Vec<Row>,
    /// Each existing state directory, then the shared `~/.smolvm`.
    pub state_dirs: Vec<Row>,
    /// Each machine or sandbox record.
    pub machines: Vec<Row>,
    /// Each VM process of this HOME.
    pub processes: Vec<Row>,
    /// Each mount under the roots.
    pub mounts: Vec<Row>,
    /// Each launcher and what it points to.
    pub launchers: Vec<Row>,
    /// Each PATH block: its file and line, its lines.
    pub path_blocks: Vec<Row>,
    /// Each PATH block as the choices page names it (its non-empty lines on one line).
    pub path_block_choices: Vec<Row>,
    /// Each credential: its path; product and what it is.
    pub credentials: Vec<Row>,
    /// Each credential as the choices page names it: its path and what it is.
    pub credential_choices: Vec<Row>,
    /// Each system file: the command that removes it; product and what it is.
    pub system: Vec<Row>,
}

// ---- the preflight: the window's rows --------------------------------------------------------

/// An install: `/home/me/.smolvm` — "smol-machines smolvm · script · 1.32.2".
pub fn install_row(i: &Install) -> Row {
    let dist = i
        .distribution
        .as_deref()
        .map(|d| format!(" ({d})"))
        .unwrap_or_default();
    let version = i.version.as_deref().unwrap_or(VERSION_UNKNOWN);
    Row::new(
        i.path.display().to_string(),
        format!(
            "{} · {}{dist} · {version}",
            i.product.display_name(),
            i.method
        ),
    )
}

/// A state directory: "Celesto SmolVM · data · 2 mounts inside", with its size.
pub fn state_dir_row(product: Product, label: &str, mounts: usize, path: &Path, size: &str) -> Row {
    let mounts = match mounts {
        0 => String::new(),
        1 => " · 1 mount inside".into(),
        n => format!(" · {n} mounts inside"),
    };
    Row {
        size: size.to_string(),
        ..Row::new(
            path.display().to_string(),
            format!("{} · {label}{mounts}", product.display_name()),
        )
    }
}

/// The shared `~/.smolvm`: "shared: 3 entries of smol-machines smolvm, 1 of Celesto SmolVM, 0
/// others".
pub fn dot_smolvm_row(path: &Path, smolvm: usize, celesto: usize, others: usize) -> Row {
    Row::new(
        path.display().to_string(),
        format!(
            "shared: {smolvm} entries of {}, {celesto} of {}, {others} others",
            Product::Smolvm.display_name(),
            Product::Celesto.display_name(),
        ),
    )
}

/// A machine or sandbox record: its name — "smol-machines smolvm · running · pid 42".
pub fn machine_row(m: &Machine) -> Row {
    let pid = m.pid.map(|p| format!(" · {}", pid(p))).unwrap_or_default();
    Row::new(
        m.name.clone(),
        format!("{} · {}{pid}", m.product.display_name(), m.state),
    )
}

/// A VM process: `pid 42` — "Celesto SmolVM · Celesto QEMU VM · …".
pub fn process_row(v: &VmProcess) -> Row {
    Row::new(
        pid(v.pid),
        format!(
            "{} · {} · {}",
            v.product.display_name(),
            v.shape.label(),
            v.reason
        ),
    )
}

/// `pid 42`, as the window's word says it.
fn pid(p: u32) -> String {
    super::words::Word::Pid
        .text()
        .replace("{pid}", &p.to_string())
}

/// A launcher: its path — "→ its target".
pub fn launcher_row(path: &Path, target: &Path) -> Row {
    Row::new(
        path.display().to_string(),
        format!("→ {}", target.display()),
    )
}

/// A PATH block: `~/.bashrc:12` — its lines joined by "⏎".
pub fn path_block_row(b: &PathBlock) -> Row {
    Row::new(
        format!("{}:{}", b.file.display(), b.line),
        b.lines.join(" ⏎ "),
    )
}

/// A PATH block on the choices page: `~/.bashrc:12` — its non-empty lines on one line.
pub fn path_block_choice(b: &PathBlock) -> Row {
    let lines: Vec<&str> = b
        .lines
        .iter()
        .map(String::as_str)
        .filter(|l| !l.trim().is_empty())
        .collect();
    Row::new(format!("{}:{}", b.file.display(), b.line), lines.join(" "))
}

/// Something that holds secrets: its path — "Celesto SmolVM · Celesto account credentials".
pub fn credential_row(product: Product, path: &Path, what: &str) -> Row {
    Row::new(
        path.display().to_string(),
        format!("{} · {what}", product.display_name()),
    )
}

/// A system file: the command that removes it — "Celesto SmolVM · udev rule …".
pub fn system_row(product: Product, command: &str, what: &str) -> Row {
    Row::new(command, format!("{} · {what}", product.display_name()))
}

// ---- the preflight: the CLI's text -----------------------------------------------------------

/// The preflight's first line.
pub fn preflight_head(home: &Path) -> String {
    format!("Uninstall preflight for {}", home.display())
}
/// Headings of the preflight's text.
pub const INSTALLATIONS: &str = "Installations:";
/// When no install was found.
pub const NONE_FOUND: &str = "  none found";
/// Heading of the state directories.
pub const STATE_DIRECTORIES: &str = "State directories:";
/// Heading of the commands that need root.
pub const SYSTEM_FILES: &str =
    "System files that need root (Smolsweep never runs these; run them yourself):";
/// When the mount table could not be read.
pub const MOUNTS_UNREAD: &str = "Mounts: the mount table could not be read";

/// `  Celesto SmolVM (pypi) 0.1.10 at /home/me/venv`.
pub fn install_line(i: &Install) -> String {
    format!(
        "  {} ({}) {} at {}",
        i.product.display_name(),
        i.method,
        i.version.as_deref().unwrap_or(VERSION_UNKNOWN),
        i.path.display()
    )
}

/// `    25.9 MB  smolvm /home/me/.local/share/smolvm (data root)`.
pub fn state_dir_line(product: Product, allocated: u64, path: &Path, kind: &str) -> String {
    format!(
        "  {:>9}  {} {} ({kind})",
        human_bytes(allocated),
        product.as_str(),
        path.display(),
    )
}

/// `  /home/me/.smolvm: 3 smol-machines entries, 1 Celesto entries, 0 others`.
pub fn dot_smolvm_line(path: &Path, smolvm: usize, celesto: usize, others: usize) -> String {
    format!(
        "  {}: {smolvm} smol-machines entries, {celesto} Celesto entries, {others} others",
        path.display()
    )
}

/// The count of records of each product: `1 smolvm machine, 0 Celesto sandboxes:`.
pub fn records_heading(counts: &[(Product, usize)]) -> String {
    let counts: Vec<String> = counts.iter().map(|(p, n)| p.count(*n)).collect();
    format!("{}:", counts.join(", "))
}

/// `  smolvm machine demo (running)`.
pub fn machine_line(m: &Machine) -> String {
    format!(
        "  {} {} {} ({})",
        m.product.as_str(),
        m.product.noun(),
        m.name,
        m.state
    )
}

/// `VM processes of this HOME: 2`.
pub fn processes_heading(n: usize) -> String {
    format!("VM processes of this HOME: {n}")
}

/// `  pid 42 Celesto QEMU VM: …`.
pub fn process_line(v: &VmProcess) -> String {
    format!("  pid {} {}: {}", v.pid, v.shape.label(), v.reason)
}

/// `  mount /…/layers-cs`.
pub fn mount_line(path: &Path) -> String {
    format!("  mount {}", path.display())
}

/// `Launcher: ~/.local/bin/smolvm -> ~/.smolvm/smolvm`.
pub fn launcher_line(path: &Path, target: &Path) -> String {
    format!("Launcher: {} -> {}", path.display(), target.display())
}

/// `PATH block: ~/.bashrc line 12: # smolvm | export PATH=…`.
pub fn path_block_line(b: &PathBlock) -> String {
    format!(
        "PATH block: {} line {}: {}",
        b.file.display(),
        b.line,
        b.lines.join(" | ")
    )
}

/// `Left in place unless asked: ~/.celesto/credentials — Celesto account credentials`.
pub fn credential_line(path: &Path, what: &str) -> String {
    format!("Left in place unless asked: {} — {what}", path.display())
}

/// `  sudo rm -rf /var/lib/celesto  # Celesto's system data directory`.
pub fn system_line(command: &str, what: &str) -> String {
    format!("  {command}  # {what}")
}

/// `Problem: …`.
pub fn problem_line(problem: &str) -> String {
    format!("Problem: {problem}")
}

// ---- what is left in place -------------------------------------------------------------------

/// What the window calls the choice a flag stands for (`--remove-credentials`: the
/// "Credentials and keys" choice); a flag it has no choice for is named as it is.
pub fn flag_choice(flag: &str) -> &str {
    match flag {
        "--remove-credentials" => "the “Credentials and keys” choice",
        "--remove-path-block" => "the “PATH lines” choice",
        other => other,
    }
}

/// Something left in place, in the window: its path — "… — remove with the “PATH lines”
/// choice".
pub fn kept_row(path: &Path, what: &str, flag: &str) -> Row {
    Row::new(
        path.display().to_string(),
        format!("{what} — remove with {}", flag_choice(flag)),
    )
}

/// Something left in place, in the CLI's text: `  ~/.config/smolvm — … (remove with
/// --remove-credentials)`.
pub fn kept_line(path: &Path, what: &str, flag: &str) -> String {
    format!("  {} — {what} (remove with {flag})", path.display())
}

// ---- a step's outcome ------------------------------------------------------------------------

/// An outcome's word: `done` (a dry run's steps too), `skipped`, `failed`.
pub fn outcome_word(o: &Outcome) -> &'static str {
    match o {
        Outcome::Done { .. } | Outcome::WouldDo { .. } => "done",
        Outcome::Skipped { .. } => "skipped",
        Outcome::Failed { .. } => "failed",
    }
}

/// What an outcome says beyond its word: what was done, why it was skipped, the error.
pub fn outcome_detail(o: &Outcome) -> &str {
    match o {
        Outcome::Done { detail } | Outcome::WouldDo { detail } => detail,
        Outcome::Skipped { why, .. } => why,
        Outcome::Failed { error } => error,
    }
}

/// A step and what happened, in the CLI's text: ` 1. done: Remove ~/.smolvm — removed` (a
/// failure shouts: `FAILED`).
pub fn step_line(index: usize, summary: &str, o: &Outcome) -> String {
    let word = match o {
        Outcome::Failed { .. } => outcome_word(o).to_uppercase(),
        _ => outcome_word(o).to_string(),
    };
    format!(
        "{:>2}. {word}: {summary} — {}",
        index + 1,
        outcome_detail(o)
    )
}

/// A step and what happened, as the window lists it after a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StepRow {
    /// `1. Remove ~/.smolvm`.
    pub line: String,
    /// The outcome's word (`done`).
    pub word: &'static str,
    /// What was done, why it was skipped, or the error.
    pub detail: String,
}

/// [`StepRow`] of step `index`.
pub fn step_row(index: usize, summary: &str, o: &Outcome) -> StepRow {
    StepRow {
        line: format!("{}. {summary}", index + 1),
        word: outcome_word(o),
        detail: outcome_detail(o).to_string(),
    }
}

/// The progress line of a step that finished: `Remove ~/.smolvm: done`.
pub fn progress_line(summary: &str, o: &Outcome) -> String {
    let summary = if summary.is_empty() { STEP } else { summary };
    format!("{summary}: {}", outcome_word(o))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_reads_alike_in_the_cli_and_the_window() {
        let failed = Outcome::failed("exit 1");
        assert_eq!(
            step_line(11, "Stop machine 'demo'", &failed),
            "12. FAILED: Stop machine 'demo' — exit 1"
        );
        let row = step_row(11, "Stop machine 'demo'", &failed);
        assert_eq!(
            (row.line.as_str(), row.word, row.detail.as_str()),
            ("12. Stop machine 'demo'", "failed", "exit 1")
        );
        let skipped = Outcome::skipped("unticked");
        assert_eq!(progress_line("", &skipped), "Step: skipped");
        assert_eq!(progress_line("Remove a", &skipped), "Remove a: skipped");
    }

    #[test]
    fn a_flag_is_named_as_the_windows_choice() {
        let row = kept_row(
            Path::new("/h/.config/smolvm"),
            "logins",
            "--remove-credentials",
        );
        assert_eq!(
            row.detail,
            "logins — remove with the “Credentials and keys” choice"
        );
        assert_eq!(
            kept_line(
                Path::new("/h/.config/smolvm"),
                "logins",
                "--remove-credentials"
            ),
            "  /h/.config/smolvm — logins (remove with --remove-credentials)"
        );
        assert_eq!(flag_choice("--other"), "--other");
    }
}
