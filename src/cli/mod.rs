//! The `smolsweep` command line.

use clap::{Parser, Subcommand};

pub mod apply;
pub mod auto;
pub mod browse;
pub mod compact;
pub mod delete;
pub mod filters;
pub mod help;
pub mod history;
pub mod keep;
pub mod out;
pub mod plan;
pub(crate) use smolsweep::prefix;
pub mod progress;
pub mod prom;
pub mod prompt;
pub mod prune;
pub mod reap;
pub mod report;
pub mod run;
pub mod scan;
pub mod stop;
pub mod trend;
pub mod uninstall;
pub mod verify;
pub mod why;

#[derive(Debug, Parser)]
#[command(
    name = "smolsweep",
    version,
    about = "Find and safely reclaim what SmolVM leaves behind",
    after_long_help = "Exit status: 0 done, or nothing to do; 1 refused (a named target that is absent \
or cannot be acted on, a plan not confirmed, an apply whose every item was skipped) or any failure; \
2 usage error. `smolsweep man` has the details, the files and the environment."
)]
pub struct Cli {
    /// The same as the `--accept-newer` of the commands that scan (given before the command).
    #[arg(long, value_name = "PRODUCT", value_parser = ["celesto", "smolvm", "all"])]
    pub accept_newer: Vec<String>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Scan both SmolVMs' state (read-only) and report findings.
    Scan(scan::ScanArgs),
    /// Browse the scan in the terminal: open groups, mark items, review and reclaim them.
    Browse(browse::BrowseArgs),
    /// Delete what the scan found reclaimable (plan, confirm, execute).
    Prune(prune::PruneArgs),
    /// End orphaned VM processes of this HOME (pid + start time proven).
    Reap(reap::ReapArgs),
    /// Stop machines or sandboxes through their product's CLI.
    Stop(stop::StopArgs),
    /// Delete machines or sandboxes (record and storage) through their product's CLI.
    Delete(delete::DeleteArgs),
    /// Give back the space the guest freed inside the disks of stopped machines and saved disks.
    Compact(compact::CompactArgs),
    /// Write a plan to a file for review (`smolsweep apply FILE` runs it).
    Plan(plan::PlanArgs),
    /// Run a plan written by `smolsweep plan`, re-checking every item.
    Apply(apply::ApplyArgs),
    /// Show the journal of executed plans.
    History(history::HistoryArgs),
    /// Uninstall SmolVM (either product or both), then prove what is left.
    Uninstall(uninstall::UninstallArgs),
    /// Prove that no machine, VM directory or VM process of this HOME is left (read-only).
    Verify(verify::VerifyArgs),
    /// Keep findings, machines or whole kinds out of every reclaim.
    Keep(keep::KeepArgs),
    /// Apply an automatic clean-up policy without asking (prints the run as JSON).
    Auto(auto::AutoArgs),
    /// Show how the space SmolVM uses changed over time, and what each reclaim freed.
    Trend(trend::TrendArgs),
    /// Say how Smolsweep judges a path, finding, machine, sandbox or process, and on what
    /// evidence (read-only).
    Why(why::WhyArgs),
    /// List every kind of finding: short name, JSON id, label (what `--kind` takes).
    Kinds,
    /// Print a shell completion script (bash, zsh or fish).
    Completions {
        #[arg(value_enum)]
        shell: Shell,
    },
    /// Print the man page (roff), or write it and one page per command to a directory.
    Man {
        /// Write smolsweep.1 and smolsweep-COMMAND.1 here instead of printing smolsweep.1.
        #[arg(long, value_name = "DIR")]
        out_dir: Option<std::path::PathBuf>,
    },
}

/// Which shell to write completions for.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

/// The commands that scan (or re-judge what they act on), so `--accept-newer` applies: paths
/// as `help::examples` names them.
const SCANNING: &[&str] = &[
    "scan",
    "browse",
    "prune",
    "reap",
    "stop",
    "delete",
    "plan",
    "apply",
    "uninstall",
    "auto",
    "keep add",
    "why",
];

/// `--accept-newer` on a command that scans.
fn accept_newer_arg() -> clap::Arg {
    clap::Arg::new("accept_newer")
        .long("accept-newer")
        .value_name("PRODUCT")
        .value_parser(["celesto", "smolvm", "all"])
        .action(clap::ArgAction::Append)
        .help(
            "Judge this product with the rules of the newest version Smolsweep knows although \
the installed one is newer (its leftovers become reclaimable again): `celesto`, `smolvm` or \
`all`. Repeatable; the same as SMOLSWEEP_ACCEPT_NEWER.",
        )
}

/// One subcommand (and its own subcommands) with what the derive cannot say: its examples,
/// `--accept-newer` when it scans, and `--kind` by groups and short names.
fn finish(mut c: clap::Command, path: &str) -> clap::Command {
    if !help::examples(path).is_empty() {
        c = c.after_help(help::examples_text(path));
    }
    if SCANNING.contains(&path) {
        c = c.arg(accept_newer_arg());
    }
    if c.get_arguments().any(|a| a.get_id() == "kind") {
        c = c.mut_arg("kind", |a| {
            let first = a.get_help().map(|h| h.to_string()).unwrap_or_default();
            a.hide_possible_values(true)
                .long_help(help::kind_long_help(&first))
        });
    }
    let subs: Vec<String> = c
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    for name in subs {
        let sub_path = if path.is_empty() {
            name.clone()
        } else {
            format!("{path} {name}")
        };
        c = c.mut_subcommand(name, |s| finish(s, &sub_path));
    }
    c
}

/// The command line as parsed, completed and documented.
pub fn cli_command() -> clap::Command {
    use clap::CommandFactory;
    finish(Cli::command(), "")
}

/// `smolsweep completions SHELL`: the completion script, generated from these definitions.
pub fn completions(shell: Shell) -> String {
    let mut cmd = cli_command();
    let mut buf: Vec<u8> = Vec::new();
    match shell {
        Shell::Bash => {
            clap_complete::generate(clap_complete::Shell::Bash, &mut cmd, "smolsweep", &mut buf)
        }
        Shell::Zsh => {
            clap_complete::generate(clap_complete::Shell::Zsh, &mut cmd, "smolsweep", &mut buf)
        }
        Shell::Fish => {
            clap_complete::generate(clap_complete::Shell::Fish, &mut cmd, "smolsweep", &mut buf)
        }
    }
    String::from_utf8_lossy(&buf).into_owned()
}

fn man_command() -> clap::Command {
    let mut cmd = cli_command().disable_help_subcommand(true);
    cmd.build();
    cmd
}

/// `smolsweep man --out-dir DIR`: smolsweep.1 and one page per (visible) command.
pub fn write_man_pages(dir: &std::path::Path) -> std::io::Result<()> {
    fn pages(cmd: &clap::Command, path: &str, dir: &std::path::Path) -> std::io::Result<()> {
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            let sub_path = format!("{path} {}", sub.get_name());
            pages(sub, sub_path.trim_start(), dir)?;
        }
        let name = cmd.get_display_name().unwrap_or_else(|| cmd.get_name());
        let mut f = std::fs::File::create(dir.join(format!("{name}.1")))?;
        help::render_man(cmd.clone(), path, &mut f)
    }
    std::fs::create_dir_all(dir)?;
    pages(&man_command(), "", dir)
}

/// `smolsweep man`: the man page (roff, section 1), generated from these definitions.
pub fn man_page() -> String {
    let mut buf: Vec<u8> = Vec::new();
    // Writing to a Vec cannot fail.
    let _ = help::render_man(man_command(), "", &mut buf);
    String::from_utf8_lossy(&buf).into_owned()
}

/// `--accept-newer` as given before the command and on it (or on `keep add`).
fn accepted_newer(top: &clap::ArgMatches) -> Vec<String> {
    let mut out = Vec::new();
    let mut m = Some(top);
    while let Some(cur) = m {
        if let Ok(Some(v)) = cur.try_get_many::<String>("accept_newer") {
            out.extend(v.cloned());
        }
        m = cur.subcommand().map(|(_, sub)| sub);
    }
    out
}

/// Whether `--kind help` was given anywhere: the kinds table is the answer.
fn kind_help_asked(top: &clap::ArgMatches) -> bool {
    let mut m = Some(top);
    while let Some(cur) = m {
        if let Ok(Some(mut v)) = cur.try_get_many::<String>("kind") {
            if v.any(|k| k == "help") {
                return true;
            }
        }
        m = cur.subcommand().map(|(_, sub)| sub);
    }
    false
}

/// Output flags that cannot go together, which clap's own rules cannot say: `scan --json`
/// with a `--format` other than json.
fn conflicting_output(cli: &Cli) -> Option<String> {
    match &cli.command {
        Command::Scan(a) if a.json && a.format.as_deref().is_some_and(|f| f != "json") => {
            Some(format!(
                "the argument '--json' cannot be used with '--format {}'",
                a.format.as_deref().unwrap_or_default()
            ))
        }
        _ => None,
    }
}

/// Parse the arguments: the parsed command line and `--accept-newer`, or the exit code (help
/// and version printed: 0; a usage error: 2).
fn parse() -> Result<(Cli, Vec<String>), i32> {
    use clap::FromArgMatches;
    let mut cmd = cli_command();
    let parsed = cmd
        .try_get_matches_from_mut(std::env::args_os())
        .and_then(|m| Cli::from_arg_matches(&m).map(|c| (c, m)));
    let (cli, matches) = match parsed {
        Ok(p) => p,
        Err(e) => {
            if !e.use_stderr() {
                // --help, --version: to stdout, which may be a closed pipe.
                out::print(&e.render().to_string());
                return Err(0);
            }
            let _ = e.print();
            return Err(2);
        }
    };
    if kind_help_asked(&matches) {
        out::print(&help::kinds_table(out::width()));
        return Err(0);
    }
    if let Some(msg) = conflicting_output(&cli) {
        let sub = matches.subcommand_name().unwrap_or_default().to_string();
        let mut c = cmd.find_subcommand(&sub).cloned().unwrap_or(cmd);
        let e = c.error(clap::error::ErrorKind::ArgumentConflict, msg);
        let _ = e.print();
        return Err(2);
    }
    let accepted = accepted_newer(&matches);
    Ok((cli, accepted))
}

/// A `println!` anywhere in the process that finds stdout closed (`smolsweep … | head`) ends it
/// quietly with exit code 0 rather than a panic message and 101, like [`out`] does.
fn quiet_broken_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if msg.starts_with("failed printing to stdout") && msg.contains("Broken pipe") {
            std::process::exit(0);
        }
        default(info);
    }));
}

/// Parse arguments and run; returns the process exit code (0 ok, 1 refused/failure, 2 usage).
pub fn main() -> i32 {
    quiet_broken_pipe();
    let (cli, accepted) = match parse() {
        Ok(p) => p,
        Err(code) => return code,
    };
    smolsweep::scan::accept_newer(&accepted);
    match cli.command {
        Command::Scan(a) => scan::run(a),
        Command::Browse(a) => browse::run(a),
        Command::Prune(a) => prune::run(a),
        Command::Reap(a) => reap::run(a),
        Command::Stop(a) => stop::run(a),
        Command::Delete(a) => delete::run(a),
        Command::Compact(a) => compact::run(a),
        Command::Plan(a) => plan::run(a),
        Command::Apply(a) => apply::run(a),
        Command::History(a) => history::run(a),
        Command::Uninstall(a) => uninstall::run(a),
        Command::Verify(a) => verify::run(a),
        Command::Keep(a) => keep::run(a),
        Command::Auto(a) => auto::run(a),
        Command::Trend(a) => trend::run(a),
        Command::Why(a) => why::run(a),
        Command::Kinds => {
            out::print(&help::kinds_table(out::width()));
            0
        }
        Command::Completions { shell } => {
            out::raw(&completions(shell));
            0
        }
        Command::Man { out_dir: None } => {
            out::raw(&man_page());
            0
        }
        Command::Man { out_dir: Some(dir) } => match write_man_pages(&dir) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!(
                    "smolsweep: cannot write man pages to {}: {e}",
                    dir.display()
                );
                1
            }
        },
    }
}
