//! Issue 20: the app's rescans (`scan::memo`) take a process that has not run since it was read
//! from the memo instead of reading its files again. What a sleeping process holds, maps or
//! works in can still be renamed or unlinked by others: a rescan sees it exactly as a full scan
//! does. One test per hazard, named after it.
//!
//! Every test lays out its own scratch HOME and starts its own sleeping processes (killed by
//! their own pid when their guard drops); nothing is assumed of the machine's other processes.

use crate::scan_options as opts;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::json;
use smolsweep::model::ScanReport;
use smolsweep::scan::memo::{scan_with_memo, scan_with_memo_and, ScanMemo};
use smolsweep::scan::scan;
use smolsweep_fixtures::smolvm::Smolvm;
use smolsweep_fixtures::vmm::{self, Shape};
use smolsweep_fixtures::{age_tree, Home, Layout, OLD};

/// A Python process that runs `code` (with `P1`, `P2` in its environment), prints `ready` and
/// then blocks reading its stdin: it does not run again until it is killed.
struct Sleeper(Child);

impl Sleeper {
    fn new(code: &str, env: &[(&str, &Path)], cwd: Option<&Path>) -> Sleeper {
        let mut cmd = Command::new("python3");
        cmd.args([
            "-c",
            &format!(
                "import os, sys, mmap\n{code}\nprint('ready', flush=True)\nsys.stdin.read()\n"
            ),
        ])
        .envs(env.iter().map(|(k, v)| (*k, *v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
        if let Some(d) = cwd {
            cmd.current_dir(d);
        }
        let mut child = cmd.spawn().expect("python3");
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "ready");
        smolsweep_fixtures::vmm::wait_asleep(child.id());
        Sleeper(child)
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Memo rescans until one takes processes from the memo (the first reads the whole table, and
/// so does one after a change in the walked trees).
fn rescan_from_memo(home: &Home, memo: &ScanMemo) -> ScanReport {
    for _ in 0..8 {
        let r = scan_with_memo(&opts(home), memo);
        if memo.table_stats().kept > 0 {
            return r;
        }
    }
    panic!(
        "no rescan took a process from the memo: {:?}",
        memo.table_stats()
    );
}

/// Per finding: its path, verdict and the pids using it.
fn uses(r: &ScanReport) -> Vec<(PathBuf, String, Vec<u32>)> {
    let mut v: Vec<_> = r
        .findings
        .iter()
        .map(|f| {
            (
                f.path.clone(),
                format!("{:?}", f.verdict),
                f.used_by.clone(),
            )
        })
        .collect();
    v.sort();
    v
}

fn used_by(r: &ScanReport, path: &Path) -> Vec<u32> {
    r.findings
        .iter()
        .find(|f| f.path == path)
        .unwrap_or_else(|| panic!("no finding {}: {:#?}", path.display(), uses(r)))
        .used_by
        .clone()
}

/// A memo rescan, checked against a full scan made right after it.
fn rescan_as_full(home: &Home, memo: &ScanMemo) -> ScanReport {
    let r = scan_with_memo(&opts(home), memo);
    assert_eq!(
        uses(&r),
        uses(&scan(&opts(home))),
        "{:?}",
        memo.table_stats()
    );
    r
}

fn write(p: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, bytes).unwrap();
}

#[test]
fn a_file_held_by_a_sleeping_process_and_renamed_into_a_root_is_still_in_use() {
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Linux).unwrap();
    let sm = home.smolvm().unwrap();
    sm.record("other", json!({})).unwrap();
    let ghost = sm.dangling_dir("ghost").unwrap();
    let data = home.celesto_data_dir().unwrap();
    data.row("alive", "running", "qemu", None).unwrap();
    data.disk("gone1", "qcow2", 1 << 20, 1 << 16).unwrap();
    age_tree(&home.root, OLD).unwrap();
    // Outside every root: what the sleeper holds open, maps (no descriptor left) and works in.
    let outside = t.path().join("outside");
    let (held, mapped, work) = (
        outside.join("held.raw"),
        outside.join("mapped.img"),
        outside.join("work"),
    );
    write(&held, b"held");
    write(&mapped, &[b"QFI\xfb".as_slice(), &[0u8; 8192]].concat());
    std::fs::create_dir_all(&work).unwrap();
    let p = Sleeper::new(
        "h = open(os.environ['P1'], 'rb')\n\
         f = open(os.environ['P2'], 'rb')\n\
         m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)\n\
         f.close()",
        &[("P1", &held), ("P2", &mapped)],
        Some(&work),
    );
    let memo = ScanMemo::new();

    // Held open, renamed into a directory finding (matched there by path only).
    rescan_from_memo(&home, &memo);
    let into_dir = ghost.join("held.raw");
    std::fs::rename(&held, &into_dir).unwrap();
    assert!(used_by(&rescan_as_full(&home, &memo), &ghost).contains(&p.pid()));

    // Mapped, renamed into a root as a file finding of its own.
    rescan_from_memo(&home, &memo);
    let disk = data.disks().join("gone2.qcow2");
    std::fs::rename(&mapped, &disk).unwrap();
    assert!(used_by(&rescan_as_full(&home, &memo), &disk).contains(&p.pid()));

    // Its working directory, moved in as a new machine directory.
    rescan_from_memo(&home, &memo);
    let machine = sm.vms_dir().join(Smolvm::hash("moved"));
    std::fs::rename(&work, &machine).unwrap();
    assert!(used_by(&rescan_as_full(&home, &memo), &machine).contains(&p.pid()));

    // Held open, renamed again as a file finding (matched by its inode as well).
    rescan_from_memo(&home, &memo);
    let disk3 = data.disks().join("gone3.qcow2");
    std::fs::rename(&into_dir, &disk3).unwrap();
    assert!(used_by(&rescan_as_full(&home, &memo), &disk3).contains(&p.pid()));
    assert!(!used_by(&rescan_as_full(&home, &memo), &ghost).contains(&p.pid()));
}

#[test]
fn a_file_unlinked_under_a_sleeping_holder_is_still_counted() {
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Linux).unwrap();
    let sm = home.smolvm().unwrap();
    sm.record("other", json!({})).unwrap();
    let ghost = sm.dangling_dir("ghost").unwrap();
    let storage = sm.vms_dir().join(Smolvm::hash("vm")).join("storage.raw");
    write(&storage, &vec![7u8; 1 << 20]);
    let log = ghost.join("held.log");
    write(&log, &vec![5u8; 64 << 10]);
    age_tree(&home.root, OLD).unwrap();
    // A VMM holding its disk, and a plain process holding a log, both asleep.
    let standin = vmm::standin_bin(Path::new(env!("CARGO_TARGET_TMPDIR")));
    let cfg = storage.with_file_name("boot-config.json");
    let vm = vmm::spawn(
        &standin,
        &Shape {
            argv: vec![
                "/proc/self/exe".into(),
                "_boot-vm".into(),
                cfg.display().to_string(),
            ],
            comm: Some("libkrun VM"),
            open: Some(&storage),
            home: Some(&home.root),
        },
    );
    smolsweep_fixtures::vmm::wait_asleep(vm.pid());
    let p = Sleeper::new("h = open(os.environ['P1'], 'rb')", &[("P1", &log)], None);
    let memo = ScanMemo::new();
    rescan_from_memo(&home, &memo);

    std::fs::remove_file(&storage).unwrap();
    std::fs::remove_file(&log).unwrap();
    let r = rescan_as_full(&home, &memo);
    let row = r.processes.iter().find(|v| v.pid == vm.pid()).unwrap();
    assert!(row.held_deleted_bytes >= 1 << 20, "{row:?}");
    assert_eq!(
        row.held_deleted_bytes,
        scan(&opts(&home))
            .processes
            .iter()
            .find(|v| v.pid == vm.pid())
            .unwrap()
            .held_deleted_bytes
    );
    // The unlinked log is held by its identity alone: its old place is not in use by it any
    // more, as a full scan says (that asks the kernel, which reaches no unlinked file by name).
    assert!(!used_by(&r, &ghost).contains(&p.pid()));
    // And so it stays, rescan after rescan.
    let r = rescan_from_memo(&home, &memo);
    assert!(!used_by(&r, &ghost).contains(&p.pid()));
    let row = r.processes.iter().find(|v| v.pid == vm.pid()).unwrap();
    assert!(row.held_deleted_bytes >= 1 << 20, "{row:?}");
}

#[test]
fn the_whole_table_is_read_first_after_clear_and_after_a_name_moved_in_a_walked_tree() {
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Linux).unwrap();
    let sm = home.smolvm().unwrap();
    sm.record("other", json!({})).unwrap();
    let ghost = sm.dangling_dir("ghost").unwrap();
    age_tree(&home.root, OLD).unwrap();
    let _p = Sleeper::new("pass", &[], Some(&ghost));
    let memo = ScanMemo::new();
    scan_with_memo(&opts(&home), &memo);
    assert!(memo.table_stats().whole, "first scan");
    rescan_from_memo(&home, &memo);

    memo.clear();
    scan_with_memo(&opts(&home), &memo);
    assert!(memo.table_stats().whole, "after clear");
    rescan_from_memo(&home, &memo);

    write(&ghost.join("new"), b"x");
    scan_with_memo(&opts(&home), &memo);
    assert!(memo.table_stats().whole, "after a name was created");
    rescan_from_memo(&home, &memo);

    // A scan given its processes takes in what the watches saw without the table's memo.
    write(&ghost.join("newer"), b"x");
    scan_with_memo_and(&opts(&home), vec![], &memo);
    scan_with_memo(&opts(&home), &memo);
    assert!(memo.table_stats().whole, "after a scan given its processes");
}
