//! The `smolsweep` command line.

use clap::{Parser, Subcommand};

pub mod scan;

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
}

/// Parse arguments and run; returns the process exit code (0 ok, 1 refused/failure, 2 usage).
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
    }
}
