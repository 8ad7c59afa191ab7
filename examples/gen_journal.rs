//! Write a large journal for the journal-read benchmark (`bench/journal.sh`).
//!
//! `cargo run --release --example gen_journal -- OUT MB [ACTIONS [LAST_MB]]`
//! Appends finished runs of ACTIONS (default 200) orphan-disk deletions each to OUT, as the
//! journal writes them (one JSON line per entry), until OUT holds at least MB megabytes (10^6
//! bytes). Run `n` starts at `n` seconds after the epoch and frees `n` bytes. With LAST_MB, one
//! more run follows that was interrupted right after its `plan_started` line, a plan of as many
//! deletions as make that line LAST_MB megabytes: the journal's newest line. Prints the number
//! of runs written.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use smolsweep::exec::{ActionRecord, Origin, Outcome};
use smolsweep::journal::JournalEntry;
use smolsweep::model::{FileIdentity, FindingKind, Product};
use smolsweep::plan::{Action, PlannedAction};

fn delete(i: usize) -> Action {
    let root = PathBuf::from("/home/u/.local/state/celesto");
    Action::DeletePath {
        finding_id: format!("{i:016x}"),
        product: Product::Celesto,
        kind: FindingKind::CelestoOrphanDisk,
        path: root.join(format!("disks/gone{i:06}.qcow2")),
        root,
        identity: FileIdentity {
            dev: 2049,
            ino: 1_000_000 + i as u64,
            file_type: 0o100000,
            size: 1 << 30,
            mtime_ns: 1_700_000_000_000_000_000,
        },
        is_dir: false,
        expected_bytes: 1 << 20,
        after_reap: vec![],
        mounts_inside: vec![],
        owner_recheck: None,
        beside: None,
    }
}

/// The lines of run `n`.
fn run(n: u64, actions: usize) -> Vec<JournalEntry> {
    let plan_id = format!("{n:064x}");
    let planned: Vec<PlannedAction> = (0..actions).map(|i| PlannedAction::of(delete(i))).collect();
    let mut v = Vec::with_capacity(actions + 2);
    for (i, pa) in planned.iter().enumerate() {
        v.push(JournalEntry::Action {
            at_ms: n * 1000 + 1,
            plan_id: plan_id.clone(),
            record: Box::new(ActionRecord {
                index: i,
                summary: pa.summary.clone(),
                action: pa.action.clone(),
                outcome: Outcome::done("deleted (1 entry)"),
                freed_bytes: 1 << 20,
            }),
        });
    }
    v.insert(
        0,
        JournalEntry::PlanStarted {
            at_ms: n * 1000,
            plan_id: plan_id.clone(),
            home: "/home/u".into(),
            estimated_bytes: n,
            actions: planned,
            origin: Some(Origin::new("auto", "auto")),
        },
    );
    v.push(JournalEntry::PlanFinished {
        at_ms: n * 1000 + 2,
        plan_id,
        done: actions,
        skipped: 0,
        failed: 0,
        estimated_bytes: n,
        freed_bytes: n,
        filesystems: vec![],
    });
    v
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(out), Some(mb)) = (
        args.first(),
        args.get(1).and_then(|m| m.parse::<u64>().ok()),
    ) else {
        eprintln!("usage: gen_journal OUT MB [ACTIONS [LAST_MB]]");
        return ExitCode::from(2);
    };
    let actions = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(200);
    let file = match std::fs::File::create(out) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("{out}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut w = std::io::BufWriter::new(file);
    let (mut written, mut n) = (0u64, 0u64);
    while written < mb * 1_000_000 {
        n += 1;
        for e in run(n, actions) {
            let mut line = serde_json::to_vec(&e).expect("an entry serialises");
            line.push(b'\n');
            written += line.len() as u64;
            if let Err(e) = w.write_all(&line) {
                eprintln!("{out}: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    if let Some(last_mb) = args.get(3).and_then(|m| m.parse::<u64>().ok()) {
        n += 1;
        let one = serde_json::to_vec(&PlannedAction::of(delete(0)))
            .expect("an action serialises")
            .len() as u64;
        let started = run(n, (last_mb * 1_000_000 / one) as usize).swap_remove(0);
        let mut line = serde_json::to_vec(&started).expect("an entry serialises");
        line.push(b'\n');
        if let Err(e) = w.write_all(&line) {
            eprintln!("{out}: {e}");
            return ExitCode::FAILURE;
        }
    }
    if let Err(e) = w.flush() {
        eprintln!("{out}: {e}");
        return ExitCode::FAILURE;
    }
    println!("{n}");
    ExitCode::SUCCESS
}
