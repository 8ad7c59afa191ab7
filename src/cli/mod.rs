//! The `smolsweep` command line.

use clap::{Parser, Subcommand};

pub mod out;
pub mod reclaim;
pub mod scan;
pub mod uninstall;

#[derive(Debug, Parser)]
#[command(
    name = "smolsweep",
    version,
    about = "Find and safely reclaim what SmolVM leaves behind"
)]
pub struct Cli {
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
}

/// Parse arguments and run; returns the process exit code (0 ok, 1 refused/failure, 2 usage).
/// Progress for a person: one `[i/n] summary` line on stderr as each action starts (nothing
/// with `--json`).
fn progress_lines(json: bool) -> impl Fn(&crate::exec::ProgressEvent) {
    move |ev| {
        if let (
            false,
            crate::exec::ProgressEvent::Started {
                index,
                total,
                summary,
            },
        ) = (json, ev)
        {
            eprintln!("[{}/{}] {summary}", index + 1, total);
        }
    }
}

pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return code;
        }
    };
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
    }
}
