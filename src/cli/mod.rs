//! The `smolsweep` command line.

use clap::{Parser, Subcommand};

pub mod auto;
pub mod filters;
pub mod keep;
pub mod out;
pub mod prefix;
pub mod progress;
pub mod prom;
pub mod prompt;
pub mod reclaim;
pub mod report;
pub mod scan;
pub mod uninstall;

#[derive(Debug, Parser)]
#[command(
    name = "smolsweep",
    version,
    about = "Find and safely reclaim what SmolVM leaves behind",
    after_long_help = "Exit status: 0 done, or nothing to do; 1 refused (a named target that is absent \
or cannot be acted on, a plan not confirmed) or any failure; 2 usage error."
)]
pub struct Cli {
    /// Judge this product with the rules of the newest version Smolsweep knows although the
    /// installed one is newer (its leftovers become reclaimable again): `celesto`, `smolvm` or
    /// `all`. Repeatable; the same as SMOLSWEEP_ACCEPT_NEWER.
    #[arg(long, global = true, value_name = "PRODUCT", value_parser = ["celesto", "smolvm", "all"])]
    pub accept_newer: Vec<String>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Scan both SmolVMs' state (read-only) and report findings.
    Scan(scan::ScanArgs),
    /// Delete what the scan found reclaimable (plan, confirm, execute).
    Prune(reclaim::PruneArgs),
    /// End orphaned VM processes of this HOME (pid + start time proven).
    Reap(reclaim::ReapArgs),
    /// Stop machines or sandboxes through their product's CLI.
    Stop(reclaim::StopArgs),
    /// Delete machines or sandboxes (record and storage) through their product's CLI.
    Delete(reclaim::DeleteArgs),
    /// Write a plan to a file for review (`smolsweep apply FILE` runs it).
    Plan(reclaim::PlanArgs),
    /// Run a plan written by `smolsweep plan`, re-checking every item.
    Apply(reclaim::ApplyArgs),
    /// Show the journal of executed plans.
    History(reclaim::HistoryArgs),
    /// Uninstall SmolVM (either product or both), then prove what is left.
    Uninstall(uninstall::UninstallArgs),
    /// Prove that no machine, VM directory or VM process of this HOME is left (read-only).
    Verify(uninstall::VerifyArgs),
    /// Keep findings, machines or whole kinds out of every reclaim.
    Keep(keep::KeepArgs),
    /// Apply an automatic clean-up policy without asking (prints the run as JSON).
    Auto(auto::AutoArgs),
    /// Print a shell completion script (bash, zsh or fish).
    #[command(hide = true)]
    Completions {
        #[arg(value_enum)]
        shell: Shell,
    },
    /// Print the man page (roff), or write it and one page per command to a directory.
    #[command(hide = true)]
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

/// `smolsweep completions SHELL`: the completion script, generated from these definitions.
pub fn completions(shell: Shell) -> String {
    use clap::CommandFactory;
    let mut cmd = Cli::command();
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
    use clap::CommandFactory;
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    cmd
}

/// `smolsweep man --out-dir DIR`: smolsweep.1 and one page per (visible) command.
pub fn write_man_pages(dir: &std::path::Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    clap_mangen::generate_to(man_command(), dir)
}

/// `smolsweep man`: the man page (roff, section 1), generated from these definitions.
pub fn man_page() -> String {
    let cmd = man_command();
    let mut buf: Vec<u8> = Vec::new();
    // Writing to a Vec cannot fail.
    let _ = clap_mangen::Man::new(cmd).render(&mut buf);
    String::from_utf8_lossy(&buf).into_owned()
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
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            if !e.use_stderr() {
                // --help, --version: to stdout, which may be a closed pipe.
                out::print(&e.render().to_string());
                return 0;
            }
            let _ = e.print();
            return 2;
        }
    };
    smolsweep::scan::accept_newer(&cli.accept_newer);
    match cli.command {
        Command::Scan(a) => scan::run(a),
        Command::Prune(a) => reclaim::prune(a),
        Command::Reap(a) => reclaim::reap(a),
        Command::Stop(a) => reclaim::stop(a),
        Command::Delete(a) => reclaim::delete(a),
        Command::Plan(a) => reclaim::plan(a),
        Command::Apply(a) => reclaim::apply(a),
        Command::History(a) => reclaim::history(a),
        Command::Uninstall(a) => uninstall::run_uninstall(a),
        Command::Verify(a) => uninstall::run_verify(a),
        Command::Keep(a) => keep::run(a),
        Command::Auto(a) => auto::run(a),
        Command::Completions { shell } => {
            out::print(&completions(shell));
            0
        }
        Command::Man { out_dir: None } => {
            out::print(&man_page());
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
