//! `smolsweep scan`.

use crate::scan::{scan, ScanOptions};

#[derive(Debug, clap::Args)]
pub struct ScanArgs {
    /// Print one JSON object (schema smolsweep.scan/1) instead of the human report.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: ScanArgs) -> i32 {
    let opts = match ScanOptions::from_env() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("smolsweep: {e:#}");
            return 1;
        }
    };
    let report = scan(&opts);
    if args.json {
        match serde_json::to_string_pretty(&report) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("smolsweep: {e}");
                return 1;
            }
        }
    } else {
        print!("{}", crate::report::render(&report));
    }
    0
}
