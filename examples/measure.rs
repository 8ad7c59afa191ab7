//! Measure paths the way the scan does and print the totals.
//!
//! `cargo run --release --example measure -- [--threads N] PATH...`
//! Prints one line per path (`apparent=… allocated=… files=… dirs=… errors=… mounts=…`) and a
//! total line when several paths share one sizer (hard links and overlaps counted once).

use std::path::PathBuf;
use std::process::ExitCode;

use smolsweep::scan::Sizer;

fn main() -> ExitCode {
    let mut threads = 0usize;
    let mut paths = Vec::new();
    let mut args = std::env::args_os().skip(1);
    while let Some(a) = args.next() {
        if a == "--threads" {
            match args.next().and_then(|n| n.to_str()?.parse().ok()) {
                Some(n) => threads = n,
                None => {
                    eprintln!("--threads needs a number");
                    return ExitCode::from(2);
                }
            }
        } else {
            paths.push(PathBuf::from(a));
        }
    }
    if paths.is_empty() {
        eprintln!("usage: measure [--threads N] PATH...");
        return ExitCode::from(2);
    }
    let mut sizer = if threads == 0 {
        Sizer::new()
    } else {
        Sizer::with_threads(threads)
    };
    let (mut apparent, mut allocated, mut files) = (0u64, 0u64, 0u64);
    let mut failed = false;
    for p in &paths {
        match sizer.measure(p) {
            Ok(m) => {
                println!(
                    "apparent={} allocated={} files={} dirs={} errors={} mounts={} {}",
                    m.apparent,
                    m.allocated,
                    m.files,
                    m.dirs,
                    m.errors,
                    m.mounts.len(),
                    p.display()
                );
                apparent += m.apparent;
                allocated += m.allocated;
                files += m.files;
            }
            Err(e) => {
                eprintln!("{}: {e}", p.display());
                failed = true;
            }
        }
    }
    if paths.len() > 1 {
        println!("apparent={apparent} allocated={allocated} files={files} total");
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
