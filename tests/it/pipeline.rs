//! The whole pipeline on realistic scratch HOMEs: real scan → plan → (mutation) → execute.
//! Ownership is re-checked at the moment of deletion: a sandbox row or a machine record
//! created after the plan for an orphan's id makes it someone's again.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use smolsweep::env::EnvSnapshot;
use smolsweep::exec::{self, Confirmed, How, Outcome, Road, UnwiredRunner};
use smolsweep::model::{Platform, ScanReport};
use smolsweep::plan::{Action, Plan, Selection};
use smolsweep::scan::{scan, ScanOptions};
use smolsweep_fixtures::{Home, Layout, OLD};

fn scan_home(home: &Home) -> ScanReport {
    scan_home_with(home, &[])
}

fn scan_home_with(home: &Home, extra: &[(&str, &Path)]) -> ScanReport {
    let mut vars = home.env_vars();
    vars.push(("PATH".into(), "/usr/bin:/bin".into()));
    for (k, v) in extra {
        vars.push((k.to_string(), v.display().to_string()));
    }
    let mut env = EnvSnapshot::from_pairs(home.root.clone(), vars);
    env.euid = rustix::process::geteuid().as_raw();
    let opts = ScanOptions {
        env,
        platform: Platform::Linux,
        age_guard: Duration::from_secs(120),
        now: SystemTime::now(),
    };
    LAST.with(|l| *l.borrow_mut() = Some(opts.clone()));
    scan(&opts)
}

thread_local! {
    /// The environment of the last scan: the executor re-judges in the same one.
    static LAST: std::cell::RefCell<Option<ScanOptions>> = const { std::cell::RefCell::new(None) };
}

/// Execute as the user confirmed, re-judged by the real judge in the scan's environment.
fn execute(plan: &Plan) -> exec::ExecReport {
    let opts = LAST.with(|l| l.borrow().clone()).expect("scanned first");
    let mut judge = exec::Rejudge::new(opts);
    crate::run_given(
        plan,
        Some(Confirmed::of(plan, How::YesFlag)),
        Road::given(&mut judge, &UnwiredRunner),
    )
    .unwrap()
}

fn outcome_of<'a>(r: &'a exec::ExecReport, p: &Path) -> &'a Outcome {
    &r.records
        .iter()
        .find(|rec| matches!(&rec.action, Action::DeletePath { path, .. } if path == p))
        .unwrap_or_else(|| panic!("{} not planned", p.display()))
        .outcome
}

#[test]
fn b9_sandbox_row_created_for_an_orphan_id_after_the_plan_keeps_its_files() {
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Linux).unwrap();
    let data = home.celesto_data_dir().unwrap();
    let reborn = data.disk("reborn", "ext4", 1 << 20, 1 << 16).unwrap();
    let reborn_log = data.log("reborn", 100).unwrap();
    let gone = data.disk("gone", "ext4", 1 << 20, 1 << 16).unwrap();
    smolsweep_fixtures::age_tree(&home.root, OLD).unwrap();
    let plan = Plan::from_scan(&scan_home(&home), &Selection::reclaimable());
    assert!(plan.actions.len() >= 3, "{plan:?}");
    // Between the confirmation and the deletion, a sandbox with that id appears.
    data.row("reborn", "created", "firecracker", None).unwrap();
    let r = execute(&plan);
    for p in [&reborn, &reborn_log] {
        assert!(p.exists(), "{} survived", p.display());
        match outcome_of(&r, p) {
            Outcome::Skipped { why, .. } => assert!(why.contains("exists"), "{why}"),
            o => panic!("{o:?}"),
        }
    }
    assert!(!gone.exists(), "the orphan nobody claimed is gone");
    assert!(outcome_of(&r, &gone).is_done());
}

/// Residue outside the data directory (port-forward state, `/tmp` sockets) belongs to a sandbox
/// id too: a sandbox created with that id after the plan keeps it.
#[test]
fn sandbox_created_after_the_plan_keeps_its_forward_state_and_sockets() {
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Linux).unwrap();
    let data = home.celesto_data_dir().unwrap();
    data.row("other", "stopped", "firecracker", None).unwrap();
    let forwards = home.celesto_home().unwrap().forward("back1").unwrap();
    let vsock = home.sockets().vsock("back1").unwrap();
    let gone = home.sockets().vsock("gone1").unwrap();
    smolsweep_fixtures::age_tree(&home.root, OLD).unwrap();
    let plan = Plan::from_scan(&scan_home(&home), &Selection::reclaimable());
    data.row("back1", "created", "firecracker", None).unwrap();
    let r = execute(&plan);
    for p in forwards.iter().chain([&vsock]) {
        assert!(
            std::fs::symlink_metadata(p).is_ok(),
            "{} deleted",
            p.display()
        );
        match outcome_of(&r, p) {
            Outcome::Skipped { why, .. } => assert!(why.contains("exists"), "{why}"),
            o => panic!("{o:?}"),
        }
    }
    assert!(std::fs::symlink_metadata(&gone).is_err());
    assert!(outcome_of(&r, &gone).is_done());
}

#[test]
fn machine_created_for_a_dangling_dir_after_the_plan_keeps_it() {
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Linux).unwrap();
    let sm = home.smolvm().unwrap();
    sm.record("other", serde_json::json!({})).unwrap();
    let dangling: PathBuf = sm.dangling_dir("vm-back").unwrap();
    let gone: PathBuf = sm.dangling_dir("vm-gone").unwrap();
    smolsweep_fixtures::age_tree(&home.root, OLD).unwrap();
    let plan = Plan::from_scan(&scan_home(&home), &Selection::reclaimable());
    sm.record("vm-back", serde_json::json!({})).unwrap();
    let r = execute(&plan);
    assert!(dangling.exists());
    match outcome_of(&r, &dangling) {
        Outcome::Skipped { why, .. } => assert!(why.contains("vm-back"), "{why}"),
        o => panic!("{o:?}"),
    }
    assert!(!gone.exists());
}

/// With `XDG_DATA_HOME` and `XDG_CACHE_HOME` in unrelated places, the machine database is not
/// anywhere near the machine directories; the re-check reads the database the scan read.
#[test]
fn machine_created_after_the_plan_keeps_its_dir_when_xdg_puts_data_and_cache_apart() {
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Linux).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let (data_home, cache_home) = (scratch.path().join("data"), scratch.path().join("c/ache"));
    let mut sm = home.smolvm().unwrap();
    sm.data_root = data_home.join("smolvm");
    sm.db = sm.data_root.join("server/smolvm.db");
    sm.cache_dir = cache_home.clone();
    sm.cache_root = cache_home.join("smolvm");
    std::fs::create_dir_all(sm.vms_dir()).unwrap();
    sm.record("other", serde_json::json!({})).unwrap();
    let back = sm.dangling_dir("vm-back").unwrap();
    let gone = sm.dangling_dir("vm-gone").unwrap();
    smolsweep_fixtures::age_tree(scratch.path(), OLD).unwrap();
    let report = scan_home_with(
        &home,
        &[
            ("XDG_DATA_HOME", &data_home),
            ("XDG_CACHE_HOME", &cache_home),
        ],
    );
    let plan = Plan::from_scan(&report, &Selection::reclaimable());
    for p in [&back, &gone] {
        assert!(
            plan.actions.iter().any(|a| matches!(&a.action,
                Action::DeletePath { path, .. } if path == p)),
            "{} not planned: {plan:#?}",
            p.display()
        );
    }
    sm.record("vm-back", serde_json::json!({})).unwrap();
    let r = execute(&plan);
    assert!(back.exists());
    match outcome_of(&r, &back) {
        Outcome::Skipped { why, .. } => assert!(why.contains("vm-back"), "{why}"),
        o => panic!("{o:?}"),
    }
    assert!(!gone.exists());
}

/// A plan carries what to re-read; a plan whose inventory became unreadable deletes nothing
/// that depended on it.
#[test]
fn unreadable_inventory_at_deletion_keeps_the_orphan() {
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Linux).unwrap();
    let data = home.celesto_data_dir().unwrap();
    let disk = data.disk("lost", "ext4", 1 << 20, 1 << 16).unwrap();
    smolsweep_fixtures::age_tree(&home.root, OLD).unwrap();
    let plan = Plan::from_scan(&scan_home(&home), &Selection::reclaimable());
    let db = home.path(".local/state/celesto/celesto.db");
    std::fs::write(&db, b"not a database any more").unwrap();
    let r = execute(&plan);
    assert!(disk.exists());
    match outcome_of(&r, &disk) {
        Outcome::Skipped { why, .. } => assert!(why.contains("cannot verify"), "{why}"),
        o => panic!("{o:?}"),
    }
}

#[test]
fn dead_ephemeral_machine_is_planned_as_a_machine_delete_not_a_path_delete() {
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Linux).unwrap();
    let sm = home.smolvm().unwrap();
    sm.record(
        "eph9",
        serde_json::json!({"state": "running", "pid": smolsweep_fixtures::IMPOSSIBLE_PID_SMOLVM,
                           "pid_start_time": 42u64, "ephemeral": true}),
    )
    .unwrap();
    let dir = sm
        .machine_dir(
            "eph9",
            smolsweep_fixtures::smolvm::DiskSet::Raw {
                storage: 1 << 16,
                overlay: 1 << 16,
            },
        )
        .unwrap();
    smolsweep_fixtures::age_tree(&home.root, OLD).unwrap();
    let plan = Plan::from_scan(&scan_home(&home), &Selection::reclaimable());
    assert!(plan.actions.iter().any(|a| matches!(&a.action,
        Action::DeleteMachine { name, .. } if name == "eph9")));
    assert!(!plan.actions.iter().any(|a| matches!(&a.action,
        Action::DeletePath { path, .. } if path.starts_with(&dir))));
}
