//! Every file Smolsweep reads is read safely, and the environment is carried exactly (issue 17):
//! a plan, report or policy a user or a timer names is never waited on (a named pipe, a device)
//! and never read past its cap; a plan is checked whole (no action twice, at most
//! `MAX_ACTIONS`) before its first action; a HOME that is not UTF-8 is the HOME that is
//! scanned and cleaned, and a path-deciding variable that is not UTF-8 is refused by name.
//!
//! Every test runs the built binary (or the executor) on a scratch HOME it creates, with a
//! cleared environment, and kills only the process it spawned, through its own handle, when that
//! process has not ended after [`WATCHDOG`].

use std::ffi::OsStr;
use std::io::{Read, Seek};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use smolsweep::exec::{
    self, Confirmed, ExecError, How, Judge, Origin, Road, RunError, UnwiredRunner,
};
use smolsweep::journal;
use smolsweep::plan::{Action, Plan, PlanError, PlannedAction, MAX_ACTIONS};
use smolsweep_fixtures::{Home, Layout, Scratch, OLD};

/// How long a command may take before the test calls it hung and kills it.
const WATCHDOG: Duration = Duration::from_secs(10);

/// What a watched run printed and returned.
struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Ran {
    fn text(&self) -> String {
        format!("--- stdout\n{}--- stderr\n{}", self.stdout, self.stderr)
    }
}

/// Run `c` with its output in files of `dir`; kill it (by its own handle) and fail the test if
/// it has not ended after [`WATCHDOG`].
fn run_watched(mut c: Command, dir: &Path) -> Ran {
    let mut out = tempfile::tempfile_in(dir).unwrap();
    let mut err = tempfile::tempfile_in(dir).unwrap();
    let started = Instant::now();
    let mut child = c
        .stdout(out.try_clone().unwrap())
        .stderr(err.try_clone().unwrap())
        .spawn()
        .unwrap();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if started.elapsed() > WATCHDOG {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "smolsweep {:?} was still running after {WATCHDOG:?}: it waited on its input",
                c.get_args().collect::<Vec<_>>()
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let read = |f: &mut std::fs::File| {
        let mut s = String::new();
        f.rewind().unwrap();
        f.read_to_string(&mut s).unwrap();
        s
    };
    Ran {
        code: status.code().unwrap_or(-1),
        stdout: read(&mut out),
        stderr: read(&mut err),
    }
}

fn smolsweep(s: &Scratch, args: &[&OsStr]) -> Command {
    let mut c = s.command(env!("CARGO_BIN_EXE_smolsweep"), &[]);
    c.args(args);
    c
}

fn run(s: &Scratch, args: &[&str]) -> Ran {
    let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
    run_watched(smolsweep(s, &args), s.dir())
}

/// A scratch HOME with two orphaned smolvm VM directories (record gone), old enough to reclaim.
fn with_orphans(home: &Home) -> Vec<PathBuf> {
    let sm = home.smolvm().unwrap();
    sm.record("kept", serde_json::json!({})).unwrap();
    let dirs = (0..2)
        .map(|i| sm.dangling_dir(&format!("vm-orphan-{i}")).unwrap())
        .collect();
    smolsweep_fixtures::age_tree(&home.root, OLD).unwrap();
    dirs
}

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
}

fn assert_all_exist(paths: &[PathBuf], ran: &Ran) {
    for p in paths {
        assert!(p.exists(), "{} was deleted\n{}", p.display(), ran.text());
    }
}

/// The journal of `s` records no run (it may not even exist).
fn assert_no_run_journaled(s: &Scratch) {
    let r = run(s, &["history", "--json"]);
    assert_eq!(r.code, 0, "{}", r.text());
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["runs"], serde_json::json!([]), "{}", r.text());
}

/// `plan --out` on `s`, read back.
fn written_plan(s: &Scratch) -> Plan {
    let out = s.dir().join("plan.json");
    let r = run(s, &["plan", "--out", out.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.text());
    Plan::from_json(&std::fs::read_to_string(&out).unwrap()).unwrap()
}

// ------------------------------------------------------------------ inputs that are not files

#[test]
fn apply_of_a_fifo_is_refused_without_hanging() {
    let s = Scratch::new();
    let orphans = with_orphans(&s.home);
    let fifo = s.dir().join("plan.json");
    mkfifo(&fifo);
    let link = s.dir().join("link-to-fifo.json");
    std::os::unix::fs::symlink(&fifo, &link).unwrap();
    for p in [&fifo, &link] {
        let r = run(&s, &["apply", p.to_str().unwrap(), "--yes"]);
        assert_eq!(r.code, 1, "{}", r.text());
        assert!(
            r.stderr
                .contains(&format!("{} is a named pipe, not a file", p.display())),
            "{}",
            r.text()
        );
        assert_all_exist(&orphans, &r);
    }
    assert_no_run_journaled(&s);
}

#[test]
fn apply_of_dev_zero_is_refused_quickly() {
    let s = Scratch::new();
    let orphans = with_orphans(&s.home);
    let started = Instant::now();
    let r = run(&s, &["apply", "/dev/zero", "--yes"]);
    assert_eq!(r.code, 1, "{}", r.text());
    assert!(
        r.stderr.contains("/dev/zero is a device, not a file"),
        "{}",
        r.text()
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_all_exist(&orphans, &r);
    assert_no_run_journaled(&s);
}

#[test]
fn auto_policy_of_a_fifo_is_refused_without_hanging() {
    let s = Scratch::new();
    let orphans = with_orphans(&s.home);
    let fifo = s.dir().join("auto-policy.json");
    mkfifo(&fifo);
    let r = run(&s, &["auto", "--policy", fifo.to_str().unwrap()]);
    assert_eq!(r.code, 1, "{}", r.text());
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["status"], "error", "{v}");
    assert_eq!(
        v["error"],
        format!("{} is a named pipe, not a file", fifo.display()),
        "{v}"
    );
    assert_all_exist(&orphans, &r);
    assert_no_run_journaled(&s);
}

#[test]
fn from_report_of_a_fifo_is_refused_without_hanging_by_every_command_that_takes_it() {
    let s = Scratch::new();
    let orphans = with_orphans(&s.home);
    let fifo = s.dir().join("report.json");
    mkfifo(&fifo);
    let f = fifo.to_str().unwrap();
    let out = s.dir().join("never-written.json");
    let commands: [&[&str]; 5] = [
        &["prune", "--yes", "--from-report", f],
        &["reap", "--yes", "--from-report", f],
        &["stop", "kept", "--yes", "--from-report", f],
        &["delete", "kept", "--yes", "--from-report", f],
        &["plan", "--out", out.to_str().unwrap(), "--from-report", f],
    ];
    for args in commands {
        let r = run(&s, args);
        assert_eq!(r.code, 1, "{args:?}\n{}", r.text());
        assert!(
            r.stderr
                .contains(&format!("{f} is a named pipe, not a file")),
            "{args:?}\n{}",
            r.text()
        );
        assert_all_exist(&orphans, &r);
    }
    assert!(!out.exists());
    assert_no_run_journaled(&s);
}

#[test]
fn a_plan_file_larger_than_the_cap_is_refused_unread() {
    let s = Scratch::new();
    let orphans = with_orphans(&s.home);
    // Sparse: 64 MiB and one byte of nothing, taking no space.
    let big = s.dir().join("big-plan.json");
    let f = std::fs::File::create(&big).unwrap();
    f.set_len(smolsweep::MAX_PLAN_BYTES + 1).unwrap();
    drop(f);
    let r = run(&s, &["apply", big.to_str().unwrap(), "--yes"]);
    assert_eq!(r.code, 1, "{}", r.text());
    assert!(
        r.stderr.contains(&format!(
            "{} is larger than 64 MiB; not a plan Smolsweep wrote",
            big.display()
        )),
        "{}",
        r.text()
    );
    // `plan --out` does not overwrite it either.
    let r = run(&s, &["plan", "--out", big.to_str().unwrap()]);
    assert_eq!(r.code, 1, "{}", r.text());
    assert!(
        r.stderr.contains("it exists and is larger than 64 MiB"),
        "{}",
        r.text()
    );
    assert_eq!(
        std::fs::metadata(&big).unwrap().len(),
        smolsweep::MAX_PLAN_BYTES + 1
    );
    assert_all_exist(&orphans, &r);
    assert_no_run_journaled(&s);
}

#[test]
fn a_plan_named_through_a_symlink_is_followed_and_applied() {
    let s = Scratch::new();
    let orphans = with_orphans(&s.home);
    let plan = written_plan(&s);
    assert_eq!(plan.delete_count(), orphans.len());
    let link = s.dir().join("my-plan.json");
    std::os::unix::fs::symlink(s.dir().join("plan.json"), &link).unwrap();
    let r = run(&s, &["apply", link.to_str().unwrap(), "--yes"]);
    assert_eq!(r.code, 0, "{}", r.text());
    assert!(orphans.iter().all(|p| !p.exists()), "{}", r.text());
}

// ------------------------------------------------------------------ plans checked whole

/// A judge that accepts every action as planned: only the plan's own checks can stop a run.
struct AsPlanned;

impl Judge for AsPlanned {
    fn still_confirmed(&mut self, _: &Plan, _: &Action) -> Result<(), String> {
        Ok(())
    }
    fn changed(&mut self) {}
}

/// Execute `plan` for real (confirmed, journaled at `s`'s journal, every action judged as
/// planned): the error that refused it.
fn execute_refused(s: &Scratch, plan: &Plan) -> PlanError {
    let r = exec::run(
        plan,
        Some(Confirmed::of(plan, How::YesFlag)),
        Origin::new("cli", "test"),
        Road::given(&mut AsPlanned, &UnwiredRunner).journal_at(s.data.join("journal.jsonl")),
    );
    let entries = journal::read(&s.data.join("journal.jsonl"))
        .unwrap()
        .entries;
    assert!(entries.is_empty(), "journaled: {entries:?}");
    match r {
        Err(RunError::Exec(ExecError::Plan(e))) => e,
        other => panic!("the plan ran: {other:?}"),
    }
}

/// Write `plan` (its id recomputed, so it is self-consistent) and `apply --yes` it.
fn apply_edited(s: &Scratch, mut plan: Plan) -> Ran {
    plan.id = plan.content_id();
    let edited = s.dir().join("edited-plan.json");
    std::fs::write(&edited, plan.to_json_pretty()).unwrap();
    run(s, &["apply", edited.to_str().unwrap(), "--yes"])
}

#[test]
fn a_plan_repeating_one_action_is_refused() {
    let s = Scratch::new();
    let orphans = with_orphans(&s.home);
    let mut plan = written_plan(&s);
    let n = plan.actions.len();
    let first = plan.actions[0].clone();
    plan.actions.push(first);
    plan.id = plan.content_id();
    match plan.verify() {
        Err(PlanError::Duplicate { first, again, .. }) => assert_eq!((first, again), (1, n + 1)),
        other => panic!("{other:?}"),
    }
    let r = apply_edited(&s, plan.clone());
    assert_eq!(r.code, 1, "{}", r.text());
    assert!(r.stderr.contains("does one thing twice"), "{}", r.text());
    assert_all_exist(&orphans, &r);
    assert_no_run_journaled(&s);
    // The executor (prune, the tray, an automatic run) refuses it before its first action too.
    let e = execute_refused(&s, &plan);
    assert!(matches!(e, PlanError::Duplicate { .. }), "{e}");
    assert_all_exist(&orphans, &r);
}

#[test]
fn a_plan_with_more_than_the_maximum_actions_is_refused() {
    let s = Scratch::new();
    let orphans = with_orphans(&s.home);
    let mut plan = written_plan(&s);
    // Distinct deletes of paths that do not exist, after the real ones.
    let template = plan.actions[0].clone();
    while plan.actions.len() <= MAX_ACTIONS {
        let mut a = template.action.clone();
        if let Action::DeletePath { path, .. } = &mut a {
            path.set_file_name(format!("absent-{}", plan.actions.len()));
        }
        plan.actions.push(PlannedAction::of(a));
    }
    assert_eq!(plan.actions.len(), MAX_ACTIONS + 1);
    let r = apply_edited(&s, plan.clone());
    assert_eq!(r.code, 1, "{}", r.text());
    assert!(
        r.stderr.contains(&format!(
            "the plan has {} actions, more than the {MAX_ACTIONS} one plan may hold",
            MAX_ACTIONS + 1
        )),
        "{}",
        r.text()
    );
    assert_all_exist(&orphans, &r);
    assert_no_run_journaled(&s);
    plan.id = plan.content_id();
    let e = execute_refused(&s, &plan);
    assert!(matches!(e, PlanError::TooManyActions { .. }), "{e}");
    assert_all_exist(&orphans, &r);
    // At the maximum it is a plan like any other.
    plan.actions.truncate(MAX_ACTIONS);
    plan.id = plan.content_id();
    assert!(plan.verify().is_ok());
}

// ------------------------------------------------------------------ the environment, exactly

/// A scratch HOME whose directory name has a byte that is not UTF-8 (`home-\xff`).
fn odd_home(s: &Scratch) -> Home {
    let mut name = b"home-".to_vec();
    name.push(0xff);
    let root = s.dir().join(OsStr::from_bytes(&name));
    smolsweep_fixtures::mkdir_private(&root).unwrap();
    Home {
        root,
        layout: Layout::Linux,
        socket_dir: s.home.socket_dir.clone(),
    }
}

fn run_in(s: &Scratch, home: &Path, args: &[&str]) -> Ran {
    let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
    let mut c = smolsweep(s, &args);
    c.env("HOME", home);
    run_watched(c, s.dir())
}

#[test]
fn a_home_that_is_not_utf8_is_used_as_given_not_replaced() {
    let s = Scratch::new();
    let home = odd_home(&s);
    let orphans = with_orphans(&home);
    let r = run_in(&s, &home.root, &["scan", "--json"]);
    assert_eq!(r.code, 0, "{}", r.text());
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    // The report carries it losslessly (smolsweep::pathser), and it is this HOME.
    let hex = hex_of(home.root.as_os_str().as_bytes());
    assert_eq!(v["home"]["bytes_hex"], hex, "{v:#}");
    let back: smolsweep::model::ScanReport = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(back.home, home.root);
    for o in &orphans {
        assert!(
            back.findings.iter().any(|f| &f.path == o),
            "{} not found in the scan of this HOME",
            o.display()
        );
    }
}

fn hex_of(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn a_plan_for_a_home_that_is_not_utf8_is_applied_to_that_home() {
    let s = Scratch::new();
    let home = odd_home(&s);
    let orphans = with_orphans(&home);
    let out = s.dir().join("odd-plan.json");
    let r = run_in(&s, &home.root, &["plan", "--out", out.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.text());
    let plan = Plan::from_json(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(plan.home, home.root);
    // Another HOME (here the scratch's plain one) is refused, naming both.
    let r = run(&s, &["apply", out.to_str().unwrap(), "--yes"]);
    assert_eq!(r.code, 1, "{}", r.text());
    assert!(r.stderr.contains("made for HOME"), "{}", r.text());
    assert!(r.stderr.contains("home-\\xff"), "{}", r.text());
    assert_all_exist(&orphans, &r);
    let r = run_in(&s, &home.root, &["apply", out.to_str().unwrap(), "--yes"]);
    assert_eq!(r.code, 0, "{}", r.text());
    assert!(orphans.iter().all(|p| !p.exists()), "{}", r.text());
}

#[test]
fn a_non_utf8_xdg_variable_is_refused_by_name() {
    let s = Scratch::new();
    let orphans = with_orphans(&s.home);
    let mut odd = s.dir().as_os_str().as_bytes().to_vec();
    odd.extend_from_slice(b"/data-\xff");
    let odd = OsStr::from_bytes(&odd);
    for var in [
        "XDG_DATA_HOME",
        "XDG_CACHE_HOME",
        "SMOLVM_DATA_DIR",
        "TMPDIR",
    ] {
        for args in [&["scan", "--json"][..], &["prune", "--yes"]] {
            let argv: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
            let mut c = smolsweep(&s, &argv);
            c.env(var, odd);
            let r = run_watched(c, s.dir());
            assert_eq!(r.code, 1, "{var} {args:?}\n{}", r.text());
            assert!(
                r.stderr.contains(&format!(
                    "the environment variable {var} is not valid UTF-8"
                )),
                "{var} {args:?}\n{}",
                r.text()
            );
            assert!(r.stdout.is_empty(), "{var} {args:?}\n{}", r.text());
            assert_all_exist(&orphans, &r);
        }
    }
    assert_no_run_journaled(&s);
    // A variable that decides no path is of no concern.
    let argv = [OsStr::new("scan"), OsStr::new("--json")];
    let mut c = smolsweep(&s, &argv);
    c.env("SOME_OTHER_VARIABLE", odd);
    let r = run_watched(c, s.dir());
    assert_eq!(r.code, 0, "{}", r.text());
}

/// Every file SQLite may write beside an inventory comes from one table (issue 30): a named pipe
/// where any of them belongs — `-shm` beside Celesto's database, `-journal` beside smolvm's,
/// which each product's check once left out — is an odd file of its own, never read, and the
/// scan does not wait on it.
#[test]
fn a_named_pipe_in_place_of_any_sqlite_side_file_is_an_odd_file_and_never_read() {
    let s = Scratch::new();
    let cel = s.home.celesto_data_dir().unwrap();
    let sm = s.home.smolvm().unwrap();
    sm.record("m1", serde_json::json!({})).unwrap();
    let mut pipes = Vec::new();
    for db in [&cel.db, &sm.db] {
        for side in ["-wal", "-shm", "-journal"] {
            let mut p = db.as_os_str().to_owned();
            p.push(side);
            let p = PathBuf::from(p);
            if !p.exists() {
                mkfifo(&p);
                pipes.push(p);
            }
        }
    }
    assert!(pipes.len() >= 4, "{pipes:?}");
    let ran = run(&s, &["scan", "--json"]);
    assert_eq!(ran.code, 0, "{}", ran.text());
    let report: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    for p in &pipes {
        let f = report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"] == p.display().to_string())
            .unwrap_or_else(|| panic!("{} is not a finding:\n{}", p.display(), ran.text()));
        assert!(f["kind"].as_str().unwrap().ends_with(".odd_file"), "{f}");
        assert_eq!(f["verdict"], "unknown", "{f}");
    }
}
