//! What `--help` and the man pages say beyond the flags: examples for every command, the files
//! Smolsweep reads and writes, the environment it reads, the exit status, and the kinds table
//! (`smolsweep kinds`, `--kind help`).

use std::io::Write;

use smolsweep::model::FindingKind;

/// Examples per command (its path: "" for smolsweep itself, `scan`, `keep add`): the command
/// line and what it does.
const EXAMPLES: &[(&str, &[(&str, &str)])] = &[
    (
        "",
        &[
            (
                "smolsweep scan",
                "what both SmolVMs left behind, in one screen",
            ),
            (
                "smolsweep prune -n",
                "what prune would delete; change nothing",
            ),
            (
                "smolsweep prune -y",
                "delete everything reclaimable, without asking",
            ),
            ("smolsweep history", "the newest runs, one line each"),
        ],
    ),
    (
        "scan",
        &[
            (
                "smolsweep scan",
                "the summary: what is reclaimable, and how much",
            ),
            (
                "smolsweep scan -v",
                "every item under the summary, with its id",
            ),
            ("smolsweep scan -q", "only the totals line"),
            (
                "smolsweep scan --json | jq .totals",
                "the report for a script",
            ),
            (
                "smolsweep scan --older-than 7d --kind orphan_disk",
                "old orphaned Celesto disks",
            ),
            (
                "smolsweep scan --format prometheus",
                "metrics for node_exporter's textfile collector",
            ),
        ],
    ),
    (
        "browse",
        &[
            (
                "smolsweep browse",
                "open groups, mark items with Space, review with d, run with y",
            ),
            ("smolsweep browse --product celesto", "only Celesto's items"),
            ("LANG=C smolsweep browse", "the same, drawn in ASCII"),
        ],
    ),
    (
        "prune",
        &[
            ("smolsweep prune", "show the plan and ask"),
            (
                "smolsweep prune -n",
                "the plan as a dry run; change nothing",
            ),
            (
                "smolsweep prune -y --include-caches",
                "also rebuildable caches, without asking",
            ),
            (
                "smolsweep prune -y --product smolvm --older-than 30d",
                "only old smolvm leftovers",
            ),
        ],
    ),
    (
        "reap",
        &[
            (
                "smolsweep reap -n",
                "which orphaned VM processes would be ended",
            ),
            (
                "smolsweep reap 4242 -y",
                "end this one (if it is an orphan of this HOME)",
            ),
        ],
    ),
    (
        "stop",
        &[
            ("smolsweep stop web", "stop machine web (asks first)"),
            ("smolsweep stop web db -y", "stop two, without asking"),
        ],
    ),
    (
        "delete",
        &[
            (
                "smolsweep delete web -n",
                "what deleting machine web would remove",
            ),
            (
                "smolsweep delete base --cascade -y",
                "delete base and the machines branched from it",
            ),
        ],
    ),
    (
        "compact",
        &[
            (
                "smolsweep compact -n",
                "which disks compacting would shrink, and by how much",
            ),
            (
                "smolsweep compact web -y",
                "compact machine web's disks, without asking",
            ),
        ],
    ),
    (
        "plan",
        &[
            (
                "smolsweep plan --out plan.json",
                "write the plan for review",
            ),
            ("smolsweep plan --out - | jq .actions", "the plan on stdout"),
            (
                "smolsweep plan --id 3f2a9c --reap --out plan.json",
                "one finding and the orphans",
            ),
        ],
    ),
    (
        "apply",
        &[
            (
                "smolsweep apply plan.json",
                "run a reviewed plan (asks first; every item re-checked)",
            ),
            (
                "smolsweep apply plan.json -n",
                "what it would still do today",
            ),
        ],
    ),
    (
        "history",
        &[
            ("smolsweep history", "the newest 10 runs, newest first"),
            ("smolsweep history -n 50", "the newest 50"),
            (
                "smolsweep history 3f2a",
                "every item of the run whose id starts with 3f2a",
            ),
            ("smolsweep history --json", "the runs for a script"),
        ],
    ),
    (
        "uninstall",
        &[
            (
                "smolsweep uninstall -n",
                "the preflight and the plan; change nothing",
            ),
            (
                "smolsweep uninstall --product smolvm -y",
                "uninstall smolvm, then prove it is gone",
            ),
            (
                "smolsweep uninstall --remove-credentials --remove-path-block",
                "also logins and PATH lines",
            ),
        ],
    ),
    (
        "verify",
        &[
            (
                "smolsweep verify",
                "prove no machine, VM directory or VM process is left",
            ),
            ("smolsweep verify --json", "the proof for a script"),
        ],
    ),
    (
        "keep",
        &[
            (
                "smolsweep keep add web --why 'demo on Friday'",
                "keep machine web and everything of it",
            ),
            ("smolsweep keep list", "every rule: id, since, what, reason"),
            (
                "smolsweep keep remove 1a2b",
                "remove the rule whose id starts with 1a2b",
            ),
        ],
    ),
    (
        "keep add",
        &[
            (
                "smolsweep keep add web --why 'demo on Friday'",
                "keep machine web",
            ),
            (
                "smolsweep keep add --kind image_cache_stale",
                "keep every old Celesto image cache",
            ),
            (
                "smolsweep keep add web --why 'until Monday'",
                "on a rule that exists: only the reason changes",
            ),
        ],
    ),
    (
        "keep list",
        &[
            ("smolsweep keep list", "rule, since, what it keeps, reason"),
            ("smolsweep keep list --json", "the keep file"),
        ],
    ),
    (
        "keep remove",
        &[
            ("smolsweep keep remove 1a2b3c4d", "remove this rule"),
            (
                "smolsweep keep remove 1a",
                "the same, when no other rule id starts with 1a",
            ),
        ],
    ),
    (
        "auto",
        &[
            ("smolsweep auto -n", "what the policy would do now"),
            (
                "smolsweep auto --policy ~/.config/smolsweep/auto-policy.json",
                "run this policy",
            ),
        ],
    ),
    (
        "trend",
        &[
            (
                "smolsweep trend",
                "how much SmolVM uses, against a week ago, and the series",
            ),
            ("smolsweep trend --json", "the series for a script"),
        ],
    ),
    (
        "why",
        &[
            (
                "smolsweep why ~/.local/state/celesto/disks/0123abcd.qcow2",
                "how this file is judged, and what would free it",
            ),
            (
                "smolsweep why 3f2a",
                "the finding whose id starts with 3f2a",
            ),
            (
                "smolsweep why smolvm:web",
                "machine web: its record, VM process, what it owns",
            ),
            (
                "smolsweep why 4242",
                "whether process 4242 is a VM, and whose",
            ),
            (
                "smolsweep why celesto:abc123 --json",
                "the same facts as data",
            ),
        ],
    ),
    (
        "kinds",
        &[
            ("smolsweep kinds", "every kind: short name, JSON id, label"),
            ("smolsweep scan --kind help", "the same table"),
        ],
    ),
    (
        "completions",
        &[
            (
                "smolsweep completions bash > ~/.local/share/bash-completion/completions/smolsweep",
                "bash",
            ),
            (
                "smolsweep completions zsh > \"${fpath[1]}/_smolsweep\"",
                "zsh",
            ),
            (
                "smolsweep completions fish > ~/.config/fish/completions/smolsweep.fish",
                "fish",
            ),
        ],
    ),
    (
        "man",
        &[
            ("smolsweep man | man -l -", "read the man page"),
            (
                "smolsweep man --out-dir /usr/share/man/man1",
                "write one page per command",
            ),
        ],
    ),
];

/// The examples of the command at `path` (none for an unknown path).
pub fn examples(path: &str) -> &'static [(&'static str, &'static str)] {
    EXAMPLES
        .iter()
        .find(|(p, _)| *p == path)
        .map_or(&[], |(_, ex)| ex)
}

/// The examples as `--help` shows them, after the options.
pub fn examples_text(path: &str) -> String {
    let ex = examples(path);
    let width = ex.iter().map(|(c, _)| c.len()).max().unwrap_or(0);
    // A command and its comment side by side where they fit the terminal, else the comment
    // on the line under its command (issue 31: help fits the width).
    let side_by_side = crate::cli::out::width().is_none_or(|w| {
        ex.iter()
            .all(|(_, what)| 2 + width + 4 + what.chars().count() <= w)
    });
    let mut s = String::from("Examples:\n");
    for (cmd, what) in ex {
        match side_by_side {
            true => s.push_str(&format!("  {cmd:<width$}  # {what}\n")),
            false => s.push_str(&format!("  {cmd}\n      # {what}\n")),
        }
    }
    s.pop();
    s
}

/// FILES: path (as the user finds it) and what it is.
pub const FILES: &[(&str, &str)] = &[
    (
        "$SMOLSWEEP_DATA_DIR/journal.jsonl",
        "The journal: one JSON line per planned run, per action as it completes, and per finished \
run; `smolsweep history` reads it. Without SMOLSWEEP_DATA_DIR, the data directory is \
$XDG_DATA_HOME/smolsweep (else ~/.local/share/smolsweep) on Linux and \
~/Library/Application Support/org.Smolsweep.smolsweep on macOS.",
    ),
    (
        "$SMOLSWEEP_DATA_DIR/keep.json",
        "The keep rules (schema smolsweep.keep/1), shared by the CLI and the app; `smolsweep keep` \
edits it. In the same data directory as the journal.",
    ),
    (
        "$SMOLSWEEP_DATA_DIR/trend.json",
        "The space history (schema smolsweep.trend/1): the scans' totals per product, one point \
per hour for a week and one per day for a year, written by the app after each scan and by \
`smolsweep auto`; `smolsweep trend` reads it. A damaged one starts afresh.",
    ),
    (
        "~/.config/smolsweep/auto-policy.json",
        "The automatic clean-up policy `smolsweep auto` applies (also the systemd unit's).",
    ),
    (
        "FILE of plan --out and apply",
        "A plan (JSON, schema smolsweep.plan/1), written by `smolsweep plan`, run by `smolsweep apply`.",
    ),
];

/// ENVIRONMENT: every variable the code reads, and what for.
pub const ENVIRONMENT: &[(&str, &str)] = &[
    (
        "HOME",
        "The home whose SmolVM state is scanned and acted on.",
    ),
    (
        "SMOLSWEEP_DATA_DIR",
        "Smolsweep's data directory (journal, keep rules) instead of the platform's.",
    ),
    (
        "SMOLSWEEP_ACCEPT_NEWER",
        "Products (comma-separated: celesto, smolvm, all) judged although installed in a newer \
version than Smolsweep knows; the same as --accept-newer.",
    ),
    (
        "SMOLSWEEP_SOCKET_DIR",
        "Where Celesto's sockets and launcher configs are looked for (default /tmp).",
    ),
    (
        "CELESTO_DATA_DIR, CELESTO_IMAGE_DIR",
        "Celesto's data and image directories, read as Celesto reads them.",
    ),
    (
        "SMOLVM_DATA_DIR, SMOLVM_IMAGE_DIR, SMOLVM_CONFIG, SMOLVM_PACK_CACHE_MAX_BYTES",
        "smolvm's data and image directories, configuration file and pack cache cap, read as \
smolvm reads them.",
    ),
    (
        "XDG_DATA_HOME, XDG_CACHE_HOME, XDG_STATE_HOME, XDG_CONFIG_HOME, XDG_RUNTIME_DIR",
        "Base directories of both products' state, and of Smolsweep's data directory (Linux).",
    ),
    (
        "HOMEBREW_PREFIX, HOMEBREW_CELLAR",
        "Where a Homebrew install of a product is looked for (macOS).",
    ),
    (
        "PATH, TMPDIR",
        "Where the products' CLIs are found and run; their temporary directory.",
    ),
    (
        "SUDO_USER, SUDO_UID",
        "Under sudo: the user whose machines the product CLIs act for.",
    ),
    (
        "NO_COLOR, CLICOLOR_FORCE, TERM",
        "Colour: NO_COLOR turns it off, CLICOLOR_FORCE turns it on in a pipe, TERM=dumb off.",
    ),
    (
        "COLUMNS",
        "The width of the report (default: the terminal's, else 80).",
    ),
    (
        "LC_ALL, LC_CTYPE, LANG",
        "A UTF-8 locale draws the report with Unicode; otherwise ASCII.",
    ),
    (
        "TZ",
        "The time zone of the times `smolsweep history` shows.",
    ),
];

/// EXIT STATUS: code and meaning.
pub const EXIT_STATUS: &[(&str, &str)] = &[
    ("0", "Done, or nothing to do; help and version."),
    (
        "1",
        "Refused or failed: a named target that is absent or cannot be acted on, a plan not \
confirmed (or no terminal to ask on without --yes, when there was something to do), an \
`apply` whose every item was skipped when re-checked, a dirty `verify` proof, or any failure.",
    ),
    (
        "2",
        "Usage error: an unknown flag or value, or flags that cannot go together \
(`scan --json --format prometheus`).",
    ),
];

/// Roff text: backslashes and dashes escaped, a line that would start with a control character
/// guarded.
fn roff(s: &str) -> String {
    let t = s.replace('\\', "\\e").replace('-', "\\-");
    if t.starts_with('.') || t.starts_with('\'') {
        format!("\\&{t}")
    } else {
        t
    }
}

/// A `.TP` list section: bold term, indented text.
fn tp_section(out: &mut String, title: &str, rows: &[(&str, &str)]) {
    out.push_str(&format!(".SH {title}\n"));
    for (term, text) in rows {
        out.push_str(&format!(".TP\n\\fB{}\\fR\n{}\n", roff(term), roff(text)));
    }
}

/// The man page of `cmd` (its path `path`: "" for smolsweep itself): clap_mangen's sections,
/// then EXAMPLES, and on the main page FILES, ENVIRONMENT and EXIT STATUS.
pub fn render_man(cmd: clap::Command, path: &str, w: &mut dyn Write) -> std::io::Result<()> {
    let has_args = cmd.get_arguments().any(|a| !a.is_hide_set());
    let has_subcommands = cmd.get_subcommands().any(|s| !s.is_hide_set());
    let has_version = cmd.get_version().or(cmd.get_long_version()).is_some();
    let man = clap_mangen::Man::new(cmd);
    man.render_title(w)?;
    man.render_name_section(w)?;
    man.render_synopsis_section(w)?;
    man.render_description_section(w)?;
    if has_args {
        man.render_options_section(w)?;
    }
    if has_subcommands {
        man.render_subcommands_section(w)?;
    }
    let mut s = String::new();
    let ex = examples(path);
    if !ex.is_empty() {
        s.push_str(".SH EXAMPLES\n");
        for (cmd, what) in ex {
            s.push_str(&format!(".TP\n\\fB{}\\fR\n{}\n", roff(cmd), roff(what)));
        }
    }
    if path.is_empty() {
        tp_section(&mut s, "FILES", FILES);
        tp_section(&mut s, "ENVIRONMENT", ENVIRONMENT);
    }
    tp_section(&mut s, "EXIT STATUS", EXIT_STATUS);
    w.write_all(s.as_bytes())?;
    if has_version {
        man.render_version_section(w)?;
    }
    Ok(())
}

/// `smolsweep kinds`: one row per kind: short name, JSON id, label; where the three do not fit
/// `width` columns (a terminal's), the JSON id goes on a line of its own under the short name.
pub fn kinds_table(width: Option<usize>) -> String {
    let rows: Vec<(String, &str, &str)> = FindingKind::ALL
        .iter()
        .map(|k| (k.short().to_string(), k.as_str(), k.label()))
        .collect();
    let w0 = rows.iter().map(|r| r.0.len()).max().unwrap_or(0).max(5);
    let w1 = rows.iter().map(|r| r.1.len()).max().unwrap_or(0);
    let w2 = rows.iter().map(|r| r.2.len()).max().unwrap_or(0);
    let mut s = String::new();
    if width.is_none_or(|w| w0 + w1 + w2 + 4 <= w) {
        s.push_str(&format!("{:<w0$}  {:<w1$}  LABEL\n", "SHORT", "JSON ID"));
        for (short, id, label) in rows {
            s.push_str(&format!("{short:<w0$}  {id:<w1$}  {label}\n"));
        }
    } else {
        s.push_str(&format!("{:<w0$}  LABEL\n  JSON ID\n", "SHORT"));
        for (short, id, label) in rows {
            s.push_str(&format!("{short:<w0$}  {label}\n  {id}\n"));
        }
    }
    s.push_str(
        "\n`--kind` takes the short name (the label as the scan shows it) or the JSON id; a short \
name both products have (mount-points) means both in a filter.\n",
    );
    s
}

/// `--kind`'s long help: the kinds in groups (product and what removing them costs), by short
/// name, instead of every value on one line.
pub fn kind_long_help(first: &str) -> String {
    use smolsweep::model::Product;
    use smolsweep::model::Risk;
    let mut s = format!("{first}. `smolsweep kinds` or `--kind help` prints the full table.\n");
    for product in Product::ALL {
        for risk in [Risk::Leftover, Risk::Rebuild, Risk::UserData] {
            let names: Vec<&str> = FindingKind::ALL
                .iter()
                .filter(|k| k.product() == product && k.risk() == risk)
                .map(|k| k.short())
                .collect();
            if !names.is_empty() {
                s.push_str(&format!(
                    "\n{} ({}): {}",
                    product.as_str(),
                    risk.label(),
                    names.join(", ")
                ));
            }
        }
    }
    s.push_str(
        "\nOthers are never reclaimed (in use, unverified, credentials): see `smolsweep kinds`.",
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kinds_table_has_one_row_per_kind() {
        let t = kinds_table(None);
        for k in FindingKind::ALL {
            assert!(
                t.lines().any(|l| l.starts_with(k.short())
                    && l.contains(k.as_str())
                    && l.contains(k.label())),
                "{k:?}"
            );
        }
    }

    #[test]
    fn roff_escapes_dashes_and_guards_control_lines() {
        assert_eq!(roff("a-b \\x"), "a\\-b \\ex");
        assert_eq!(roff(".hidden"), "\\&.hidden");
    }
}
