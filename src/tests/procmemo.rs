//! The process table's memo of the app's rescans (`procs::linux::table_memo`, issue 20): which
//! processes it takes as remembered and which it reads again, one test per hazard.
//!
//! Two kinds of tables: this machine's `/proc`, where only processes the test started are
//! looked at (a Python that sleeps until it is poked, killed by its own pid on drop), and a
//! stand-in `/proc` of plain files and links in a scratch directory, read by the same code,
//! where a pid can be reused or a counter set at will.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use crate::procs::linux::{self, TableMemo};
use crate::procs::RawProcess;

// ---- this machine's table ----------------------------------------------------------------

/// A Python that holds `P` open, prints `ready`, then sleeps until a line arrives: it opens the
/// path the line names and answers `ok`.
struct Poked {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Poked {
    fn new(held: &Path) -> Poked {
        let mut child = Command::new("python3")
            .args([
                "-c",
                "import os, sys\nkept = [open(os.environ['P'], 'rb')]\nprint('ready', flush=True)\n\
                 for line in sys.stdin:\n    kept.append(open(line.rstrip('\\n'), 'rb'))\n    \
                 print('ok', flush=True)\n",
            ])
            .env("P", held)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut p = Poked {
            child,
            stdin,
            stdout,
        };
        p.answer("ready");
        p
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn answer(&mut self, want: &str) {
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        assert_eq!(line.trim(), want);
        smolsweep_fixtures::vmm::wait_asleep(self.pid());
    }

    /// Make it run: it opens `path`.
    fn open(&mut self, path: &Path) {
        writeln!(self.stdin, "{}", path.display()).unwrap();
        self.stdin.flush().unwrap();
        self.answer("ok");
    }
}

impl Drop for Poked {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn proc_root() -> &'static Path {
    Path::new("/proc")
}

fn of(procs: &[RawProcess], pid: u32) -> Option<&RawProcess> {
    procs.iter().find(|p| p.pid == pid)
}

fn holds(p: &RawProcess, path: &Path) -> bool {
    p.open_files.iter().any(|f| f.path == path)
}

#[test]
fn a_sleeping_process_is_not_read_again() {
    let tmp = tempfile::tempdir().unwrap();
    let held = tmp.path().join("held");
    std::fs::write(&held, b"x").unwrap();
    let p = Poked::new(&held);
    let mut memo = TableMemo::default();
    memo.list(proc_root(), true);
    assert!(!memo.was_kept(p.pid()), "a whole read keeps nothing");

    let listed = memo.list(proc_root(), false);
    assert!(memo.was_kept(p.pid()));
    // As it was read, which is what a full read gives now: it did not run.
    let fresh = linux::read_process(proc_root(), p.pid()).unwrap();
    assert_eq!(of(&listed, p.pid()), Some(&fresh));
    assert!(holds(&fresh, &held));

    // Taken from the memo, not read: what the memo says is what is listed.
    let marker = tmp.path().join("only-in-the-memo");
    memo.remembered_mut(p.pid())
        .unwrap()
        .mapped
        .push(marker.clone());
    let listed = memo.list(proc_root(), false);
    assert!(of(&listed, p.pid()).unwrap().mapped.contains(&marker));
}

#[test]
fn a_process_that_ran_since_the_last_rescan_is_read_again() {
    let tmp = tempfile::tempdir().unwrap();
    let (held, later) = (tmp.path().join("held"), tmp.path().join("later"));
    std::fs::write(&held, b"x").unwrap();
    std::fs::write(&later, b"y").unwrap();
    let mut p = Poked::new(&held);
    let mut memo = TableMemo::default();
    memo.list(proc_root(), true);
    memo.list(proc_root(), false);
    assert!(memo.was_kept(p.pid()));

    p.open(&later);
    let listed = memo.list(proc_root(), false);
    assert!(!memo.was_kept(p.pid()));
    let q = of(&listed, p.pid()).unwrap();
    assert!(holds(q, &held) && holds(q, &later), "{:?}", q.open_files);
    // Asleep again: from the memo again, with what it opened.
    let listed = memo.list(proc_root(), false);
    assert!(memo.was_kept(p.pid()));
    assert!(holds(of(&listed, p.pid()).unwrap(), &later));
}

#[test]
fn an_exited_process_is_dropped() {
    let tmp = tempfile::tempdir().unwrap();
    let held = tmp.path().join("held");
    std::fs::write(&held, b"x").unwrap();
    let mut p = Poked::new(&held);
    let pid = p.pid();
    let mut memo = TableMemo::default();
    memo.list(proc_root(), true);
    p.child.kill().unwrap();
    p.child.wait().unwrap();
    assert_eq!(of(&memo.list(proc_root(), false), pid), None);
}

// ---- a stand-in /proc --------------------------------------------------------------------

/// A `/proc` of plain files and links in a scratch directory.
struct FakeProc {
    dir: tempfile::TempDir,
}

impl FakeProc {
    fn new() -> FakeProc {
        let f = FakeProc {
            dir: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir(f.root()).unwrap();
        f
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("proc")
    }

    /// A file outside the stand-in `/proc`, for a process to hold.
    fn file(&self, name: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::write(&p, name).unwrap();
        p
    }

    fn pid_dir(&self, pid: u32) -> PathBuf {
        self.root().join(pid.to_string())
    }

    /// Process `pid` with one thread (its own id) and one held file (descriptor 3).
    fn process(&self, pid: u32, ppid: u32, argv: &[&str], held: &Path) {
        let d = self.pid_dir(pid);
        std::fs::create_dir_all(d.join("fd")).unwrap();
        std::fs::write(d.join("status"), "Name:\tx\nUid:\t1000\t1000\t1000\t1000\n").unwrap();
        std::fs::write(d.join("cmdline"), argv.join("\0") + "\0").unwrap();
        std::fs::write(d.join("maps"), "").unwrap();
        std::os::unix::fs::symlink("/", d.join("root")).unwrap();
        self.stat(pid, ppid, 1000);
        self.schedstat(pid, pid, Some("5000 10 3"));
        self.fd(pid, held);
    }

    fn stat(&self, pid: u32, ppid: u32, start: u64) {
        let line = format!(
            "{pid} (exe) S {ppid} {pid} {pid} 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 {start} 1000 10\n"
        );
        std::fs::write(self.pid_dir(pid).join("stat"), line).unwrap();
    }

    /// Thread `tid`'s `schedstat` (`None`: the thread is gone).
    fn schedstat(&self, pid: u32, tid: u32, text: Option<&str>) {
        let d = self.pid_dir(pid).join("task").join(tid.to_string());
        match text {
            Some(t) => {
                std::fs::create_dir_all(&d).unwrap();
                std::fs::write(d.join("schedstat"), t).unwrap();
            }
            None => std::fs::remove_dir_all(&d).unwrap(),
        }
    }

    /// Descriptor 3 now names `target` (which, in a real table, only running could do).
    fn fd(&self, pid: u32, target: &Path) {
        let link = self.pid_dir(pid).join("fd/3");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(target, link).unwrap();
    }
}

/// List the stand-in table through `memo`; what process `pid` holds, and whether it was kept.
fn held_by(fx: &FakeProc, memo: &mut TableMemo, pid: u32) -> (Vec<PathBuf>, bool) {
    let listed = memo.list(&fx.root(), false);
    let p = of(&listed, pid).expect("listed");
    let files = p.open_files.iter().map(|f| f.path.clone()).collect();
    (files, memo.was_kept(pid))
}

#[test]
fn a_reused_pid_is_read_afresh() {
    let fx = FakeProc::new();
    let (a, b) = (fx.file("a"), fx.file("b"));
    fx.process(4242, 1, &["sleeper"], &a);
    let mut memo = TableMemo::default();
    memo.list(&fx.root(), true);
    // Same pid, start time, threads and counters: taken as it was (the stand-in's descriptor
    // changed, which a process that did not run cannot do).
    fx.fd(4242, &b);
    assert_eq!(held_by(&fx, &mut memo, 4242), (vec![a.clone()], true));
    // The pid now names another process, whose counters happen to read the same.
    fx.stat(4242, 1, 2000);
    assert_eq!(held_by(&fx, &mut memo, 4242), (vec![b.clone()], false));
    let listed = memo.list(&fx.root(), false);
    assert_eq!(of(&listed, 4242).unwrap().start_time, 2000);
}

#[test]
fn a_thread_that_ran_appeared_or_left_makes_the_process_read_again() {
    let fx = FakeProc::new();
    let (a, b, c, d) = (fx.file("a"), fx.file("b"), fx.file("c"), fx.file("d"));
    fx.process(7, 1, &["sleeper"], &a);
    let mut memo = TableMemo::default();
    memo.list(&fx.root(), true);
    // Only the count of times switched in moved (same run time: a tick may not have passed).
    fx.fd(7, &b);
    fx.schedstat(7, 7, Some("5000 10 4"));
    assert_eq!(held_by(&fx, &mut memo, 7), (vec![b.clone()], false));
    // A new thread.
    fx.fd(7, &c);
    fx.schedstat(7, 8, Some("100 1 1"));
    assert_eq!(held_by(&fx, &mut memo, 7), (vec![c.clone()], false));
    assert_eq!(held_by(&fx, &mut memo, 7), (vec![c.clone()], true));
    // A thread gone.
    fx.fd(7, &d);
    fx.schedstat(7, 8, None);
    assert_eq!(held_by(&fx, &mut memo, 7), (vec![d.clone()], false));
}

#[test]
fn an_unreadable_or_empty_schedstat_makes_the_process_read_again() {
    let fx = FakeProc::new();
    let (a, b, c) = (fx.file("a"), fx.file("b"), fx.file("c"));
    fx.process(9, 1, &["sleeper"], &a);
    // A kernel that keeps no scheduler statistics writes zeros: nothing tells it did not run.
    fx.schedstat(9, 9, Some("0 0 0\n"));
    let mut memo = TableMemo::default();
    memo.list(&fx.root(), true);
    fx.fd(9, &b);
    assert_eq!(held_by(&fx, &mut memo, 9), (vec![b.clone()], false));
    // Unreadable (here: not a number; in a real table, permission or a thread gone).
    fx.schedstat(9, 9, Some("-"));
    fx.fd(9, &c);
    assert_eq!(held_by(&fx, &mut memo, 9), (vec![c.clone()], false));
}

#[test]
fn the_parent_of_an_exited_process_is_read_again() {
    // A child made with CLONE_FILES shares its parent's descriptor table: what it opened
    // before exiting stays open in the parent, which need not have run.
    let fx = FakeProc::new();
    let (a, b, c) = (fx.file("a"), fx.file("b"), fx.file("c"));
    fx.process(100, 1, &["parent"], &a);
    fx.process(101, 100, &["child"], &a);
    fx.process(200, 1, &["bystander"], &a);
    let mut memo = TableMemo::default();
    memo.list(&fx.root(), true);
    std::fs::remove_dir_all(fx.pid_dir(101)).unwrap();
    fx.fd(100, &b);
    fx.fd(200, &c);
    assert_eq!(held_by(&fx, &mut memo, 100), (vec![b.clone()], false));
    assert_eq!(held_by(&fx, &mut memo, 200), (vec![a.clone()], true));
    assert!(of(&memo.list(&fx.root(), false), 101).is_none());
}

#[test]
fn a_process_shaped_like_a_vmm_is_always_read_in_full() {
    // What the report says of a VMM (held bytes of unlinked files, whose HOME) is always read.
    let fx = FakeProc::new();
    let (a, b) = (fx.file("a"), fx.file("b"));
    let cfg = fx.dir.path().join("vms/0123456789abcdef/boot-config.json");
    let cfg = cfg.to_str().unwrap();
    fx.process(300, 1, &["/proc/self/exe", "_boot-vm", cfg], &a);
    let mut memo = TableMemo::default();
    memo.list(&fx.root(), true);
    fx.fd(300, &b);
    assert_eq!(held_by(&fx, &mut memo, 300), (vec![b.clone()], false));
}

// ---- what deletes ------------------------------------------------------------------------

fn opts(home: &smolsweep_fixtures::Home) -> crate::scan::ScanOptions {
    crate::tests::scan_options(home, &[("PATH", "/usr/bin:/bin")])
}

fn used_by(r: &crate::model::ScanReport, path: &Path) -> Vec<u32> {
    r.findings
        .iter()
        .find(|f| f.path == path)
        .map(|f| f.used_by.clone())
        .unwrap_or_else(|| panic!("no finding {}", path.display()))
}

#[test]
fn what_deletes_never_reads_the_remembered_table() {
    use crate::exec::{Confirmed, ExecContext, How, Outcome, Rejudge, UnwiredRunner};
    use crate::model::Verdict;
    use crate::plan::{Action, Plan, Selection};
    use crate::scan::memo::{scan_with_memo, ScanMemo};

    let t = tempfile::tempdir().unwrap();
    let home = smolsweep_fixtures::Home::new(t.path(), smolsweep_fixtures::Layout::Linux).unwrap();
    let sm = home.smolvm().unwrap();
    sm.record("other", serde_json::json!({})).unwrap();
    let ghost = sm.dangling_dir("ghost").unwrap();
    smolsweep_fixtures::age_tree(&home.root, smolsweep_fixtures::OLD).unwrap();
    let p = Poked::new(&ghost.join("agent-startup-error.log"));
    let memo = ScanMemo::new();
    let mut kept = false;
    for _ in 0..8 {
        scan_with_memo(&opts(&home), &memo);
        kept = memo.with_table(|t| t.was_kept(p.pid()));
        if kept {
            break;
        }
    }
    assert!(kept, "the sleeper was never taken from the memo");
    // The memo now says something the process table does not: it holds nothing.
    memo.with_table(|t| t.remembered_mut(p.pid()).unwrap().open_files.clear());
    let shown = scan_with_memo(&opts(&home), &memo);
    assert!(memo.with_table(|t| t.was_kept(p.pid())));
    assert!(
        !used_by(&shown, &ghost).contains(&p.pid()),
        "the memo was used"
    );

    // A scan, a plan and the executor's re-judge read the table afresh.
    let fresh = crate::scan::scan(&opts(&home));
    assert!(used_by(&fresh, &ghost).contains(&p.pid()));
    let deletes_ghost = |plan: &Plan| {
        plan.actions
            .iter()
            .any(|a| matches!(&a.action, Action::DeletePath { path, .. } if path == &ghost))
    };
    assert!(!deletes_ghost(&Plan::from_scan(
        &fresh,
        &Selection::reclaimable()
    )));
    // The kernel still counts the holder the stale memo lost: the app's scan leaves it alone as
    // held by a process it cannot see.
    let g = shown.findings.iter().find(|f| f.path == ghost).unwrap();
    assert_eq!(g.verdict, Verdict::Protected, "{}", g.reason);
    assert!(g.reason.contains("cannot see"), "{}", g.reason);
    // Even a plan made from a view that missed that too is refused when it runs.
    let mut shown = shown;
    for f in shown.findings.iter_mut().filter(|f| f.path == ghost) {
        f.verdict = Verdict::Reclaimable;
    }
    let plan = Plan::from_scan(&shown, &Selection::reclaimable());
    assert!(deletes_ghost(&plan));
    let mut judge = Rejudge::new(opts(&home));
    let confirmed = Confirmed::of(&plan, How::YesFlag);
    let report = crate::exec::execute(
        &plan,
        ExecContext::confirmed(confirmed, &UnwiredRunner, &mut judge),
    )
    .unwrap();
    let outcome = &report
        .records
        .iter()
        .find(|r| matches!(&r.action, Action::DeletePath { path, .. } if path == &ghost))
        .unwrap()
        .outcome;
    match outcome {
        Outcome::Skipped { why, .. } => assert!(why.contains(&p.pid().to_string()), "{why}"),
        o => panic!("deleted under a process: {o:?}"),
    }
    assert!(ghost.join("agent-startup-error.log").exists());
    assert!(holds(
        of(&crate::procs::list(), p.pid()).unwrap(),
        &ghost.join("agent-startup-error.log")
    ));
}

#[test]
fn a_kernel_thread_seen_before_is_kept_without_its_schedstat() {
    // A kernel thread (no arguments, a child of kthreadd) has no files, arguments or user
    // memory that could change: the same one (same start time) is kept without reading its
    // threads; a pid reused by a user process is read afresh.
    let fx = FakeProc::new();
    let a = fx.file("a");
    fx.process(50, 2, &[], &a);
    fx.schedstat(50, 50, Some("0 0 0"));
    let mut memo = TableMemo::default();
    memo.list(&fx.root(), true);
    assert_eq!(held_by(&fx, &mut memo, 50), (vec![], true));
    fx.process(60, 1, &["sleeper"], &a);
    fx.schedstat(60, 60, Some("0 0 0"));
    memo.list(&fx.root(), true);
    assert_eq!(
        held_by(&fx, &mut memo, 60),
        (vec![a.clone()], false),
        "a user process without a schedstat is read in full"
    );
    fx.stat(50, 1, 3000);
    std::fs::write(fx.pid_dir(50).join("cmdline"), "sleeper\0").unwrap();
    assert_eq!(
        held_by(&fx, &mut memo, 50),
        (vec![a], false),
        "the pid reused"
    );
}
