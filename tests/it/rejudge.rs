//! Re-judging at the moment of action: what changed between the plan and "yes" is seen by the
//! executor, whatever the plan file says. One regression test per hole, named after it.
//!
//! Every test lays out its own scratch HOME and signals only processes it spawned itself.

use crate::scan_options as opts;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::json;
use smolsweep::exec::{self, ActionRunner, Confirmed, How, Outcome, Rejudge, Road};
use smolsweep::journal::{Journal, JournalEntry};
use smolsweep::model::{Product, ScanReport};
use smolsweep::plan::{Action, Plan, PlanError, PlannedAction, Selection};
use smolsweep::scan::scan;
use smolsweep_fixtures::vmm::{self, Shape};
use smolsweep_fixtures::{age_tree, Home, Layout, OLD};

fn scan_home(home: &Home) -> ScanReport {
    scan(&opts(home))
}

/// Records what it was asked to do; does nothing.
#[derive(Default)]
struct Recorder(std::cell::RefCell<Vec<String>>);

impl ActionRunner for Recorder {
    fn stop_machine(&self, _: Product, name: &str, _: Option<u32>, _: Option<u64>) -> Outcome {
        self.0.borrow_mut().push(format!("stop {name}"));
        Outcome::done("stopped")
    }
    fn delete_machine(
        &self,
        _: Product,
        name: &str,
        _: bool,
        _: &[String],
        _: Option<(u32, u64)>,
    ) -> Outcome {
        self.0.borrow_mut().push(format!("delete {name}"));
        Outcome::done("deleted")
    }
    fn reap(&self, pid: u32, _: u64, _: Product, _: Option<&str>, _: u32) -> Outcome {
        self.0.borrow_mut().push(format!("reap {pid}"));
        Outcome::done("ended")
    }
    fn detach(&self, m: &Path) -> Outcome {
        self.0.borrow_mut().push(format!("detach {}", m.display()));
        Outcome::done("detached")
    }
}

/// Execute as confirmed, re-judged by the real judge in `home`'s environment.
fn execute(home: &Home, plan: &Plan, runner: &dyn ActionRunner) -> exec::ExecReport {
    let mut judge = Rejudge::new(opts(home));
    let confirmed = Confirmed::of(plan, How::YesFlag);
    crate::run_given(plan, Some(confirmed), Road::given(&mut judge, runner)).expect("runs")
}

fn outcome_for<'r>(r: &'r exec::ExecReport, p: &Path) -> &'r Outcome {
    &r.records
        .iter()
        .find(|rec| matches!(&rec.action, Action::DeletePath { path, .. } if path == p))
        .unwrap_or_else(|| panic!("{} was not planned", p.display()))
        .outcome
}

fn skipped_why(o: &Outcome) -> &str {
    match o {
        Outcome::Skipped { why, .. } => why,
        o => panic!("expected a skip, got {o:?}"),
    }
}

fn standin() -> PathBuf {
    vmm::standin_bin(Path::new(env!("CARGO_TARGET_TMPDIR")))
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s[s.rfind(')')? + 2..].chars().next())
        .is_some_and(|c| c != 'Z')
}

/// A plan edited by hand, its id recomputed so that it is self-consistent again.
fn edited(plan: &Plan, edit: impl FnOnce(&mut Plan)) -> Plan {
    let mut p = plan.clone();
    edit(&mut p);
    for a in &mut p.actions {
        a.summary = a.action.describe();
    }
    p.id = p.content_id();
    Plan::from_json(&p.to_json_pretty()).expect("a self-consistent plan loads")
}

fn celesto_orphan(home: &Home) -> PathBuf {
    let data = home.celesto_data_dir().unwrap();
    data.row("alive", "running", "qemu", None).unwrap();
    let disk = data.disk("gone1", "qcow2", 1 << 20, 1 << 16).unwrap();
    age_tree(&home.root, OLD).unwrap();
    disk
}

#[test]
fn vmm_opens_a_planned_disk_after_the_plan_is_skipped() {
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Linux).unwrap();
    let disk = celesto_orphan(&home);
    let plan = Plan::from_scan(&scan_home(&home), &Selection::reclaimable());
    assert!(plan
        .actions
        .iter()
        .any(|a| matches!(&a.action, Action::DeletePath { path, .. } if path == &disk)));
    // After the plan, a VM starts on that disk (it holds it open; its argv does not name it).
    let vm = vmm::spawn(
        &standin(),
        &Shape {
            argv: vec!["qemu-system-x86_64".into(), "-nographic".into()],
            comm: None,
            open: Some(&disk),
            home: Some(&home.root),
        },
    );
    let r = execute(&home, &plan, &Recorder::default());
    let why = skipped_why(outcome_for(&r, &disk));
    assert!(why.contains(&vm.pid().to_string()), "{why}");
    assert!(disk.exists(), "the disk of a live VM was deleted");
}

#[test]
fn vmm_boots_from_a_planned_dangling_dir_is_skipped() {
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Linux).unwrap();
    let sm = home.smolvm().unwrap();
    sm.record("other", json!({})).unwrap();
    let dir = sm.dangling_dir("ghost").unwrap();
    age_tree(&home.root, OLD).unwrap();
    let plan = Plan::from_scan(&scan_home(&home), &Selection::reclaimable());
    assert!(
        plan.actions
            .iter()
            .any(|a| matches!(&a.action, Action::DeletePath { path, .. } if path == &dir)),
        "{plan:#?}"
    );
    // smolvm #787: a `_boot-vm` starts from that directory, holding its storage open.
    let vm = vmm::boot_vm_holding(&standin(), &home.root, &dir, Some(&dir.join("storage.raw")));
    let r = execute(&home, &plan, &Recorder::default());
    let why = skipped_why(outcome_for(&r, &dir));
    assert!(!why.is_empty());
    assert!(
        dir.join("storage.raw").exists(),
        "storage removed under a live VMM"
    );
    assert!(alive(vm.pid()));
}

#[test]
fn process_with_its_cwd_in_a_planned_dir_keeps_it() {
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Linux).unwrap();
    let sm = home.smolvm().unwrap();
    sm.record("other", json!({})).unwrap();
    let dir = sm.dangling_dir("ghost").unwrap();
    age_tree(&home.root, OLD).unwrap();
    let plan = Plan::from_scan(&scan_home(&home), &Selection::reclaimable());
    // A shell whose working directory is in there (not a VMM, holding nothing open).
    let mut sh = Command::new("sleep")
        .arg("30")
        .current_dir(&dir)
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let r = execute(&home, &plan, &Recorder::default());
    let why = skipped_why(outcome_for(&r, &dir)).to_string();
    sh.kill().unwrap();
    sh.wait().unwrap();
    assert!(why.contains(&sh.id().to_string()), "{why}");
    assert!(dir.exists());
}

#[test]
fn record_appears_before_a_reap_skips_it() {
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Linux).unwrap();
    let sm = home.smolvm().unwrap();
    sm.record("other", json!({})).unwrap();
    let dir = sm.dangling_dir("late").unwrap();
    age_tree(&home.root, OLD).unwrap();
    let vm = vmm::boot_vm_holding(&standin(), &home.root, &dir, None);
    let sel = Selection {
        reap_orphans: true,
        ..Default::default()
    };
    let plan = Plan::from_scan(&scan_home(&home), &sel);
    assert!(
        plan.actions
            .iter()
            .any(|a| matches!(a.action, Action::SignalProcess { pid, .. } if pid == vm.pid())),
        "{plan:#?}"
    );
    // Between the plan and the reap, the machine is recorded: the VM is someone's now.
    sm.record("late", json!({"state": "running", "pid": vm.pid()}))
        .unwrap();
    let runner = Recorder::default();
    let r = execute(&home, &plan, &runner);
    assert!(runner.0.borrow().is_empty(), "{:?}", runner.0.borrow());
    let why = skipped_why(&r.records[0].outcome);
    assert!(why.contains("no longer an orphan"), "{why}");
    assert!(alive(vm.pid()));
}

#[test]
fn edited_plan_naming_an_unresolved_root_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Linux).unwrap();
    celesto_orphan(&home);
    let plan = Plan::from_scan(&scan_home(&home), &Selection::reclaimable());
    let elsewhere = t.path().join("projects");
    std::fs::create_dir_all(elsewhere.join("src")).unwrap();
    std::fs::write(elsewhere.join("src/main.rs"), b"fn main() {}").unwrap();
    let target = elsewhere.join("src");
    let id = smolsweep::model::FileIdentity::of(&target).unwrap();
    let p = edited(&plan, |p| {
        if let Action::DeletePath {
            path,
            root,
            identity,
            ..
        } = &mut p.actions[0].action
        {
            *path = target.clone();
            *root = elsewhere.clone();
            *identity = id;
        }
        p.roots.push(elsewhere.clone());
    });
    let r = execute(&home, &p, &Recorder::default());
    let why = skipped_why(outcome_for(&r, &target));
    assert!(why.contains("not one this environment resolves"), "{why}");
    assert!(elsewhere.join("src/main.rs").exists());
}

#[test]
fn edited_plan_naming_a_path_outside_the_roots_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Linux).unwrap();
    celesto_orphan(&home);
    let report = scan_home(&home);
    let plan = Plan::from_scan(&report, &Selection::reclaimable());
    let keep = home.root.join("Documents");
    std::fs::create_dir_all(&keep).unwrap();
    std::fs::write(keep.join("thesis.tex"), b"\\begin{document}").unwrap();
    let id = smolsweep::model::FileIdentity::of(&keep).unwrap();
    // The path is inside HOME but in no product root; the plan keeps a real root.
    let p = edited(&plan, |p| {
        if let Action::DeletePath { path, identity, .. } = &mut p.actions[0].action {
            *path = keep.clone();
            *identity = id;
        }
    });
    let r = execute(&home, &p, &Recorder::default());
    assert!(!outcome_for(&r, &keep).is_done());
    assert!(keep.join("thesis.tex").exists());
}

#[test]
fn edited_plan_naming_a_non_vmm_process_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Linux).unwrap();
    celesto_orphan(&home);
    let plan = Plan::from_scan(&scan_home(&home), &Selection::reclaimable());
    let mut editor = Command::new("sleep").arg("30").spawn().unwrap();
    let pid = editor.id();
    let start = smolsweep::exec::ProcessRef::current(pid)
        .unwrap()
        .start_time;
    let p = edited(&plan, |p| {
        p.actions.insert(
            0,
            PlannedAction::of(Action::SignalProcess {
                pid,
                start_time: start,
                product: Product::Celesto,
                owner: None,
                uid: rustix::process::getuid().as_raw(),
                shape: "celesto.qemu".into(),
                uninstall: false,
                held_bytes: 0,
            }),
        );
    });
    let runner = Recorder::default();
    let r = execute(&home, &p, &runner);
    let alive_after = alive(pid);
    editor.kill().unwrap();
    editor.wait().unwrap();
    assert!(runner.0.borrow().is_empty(), "{:?}", runner.0.borrow());
    assert!(skipped_why(&r.records[0].outcome).contains("not a VM process"));
    assert!(alive_after);
}

#[test]
fn edited_plan_with_a_lying_summary_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Linux).unwrap();
    celesto_orphan(&home);
    let plan = Plan::from_scan(&scan_home(&home), &Selection::reclaimable());
    let mut p = plan.clone();
    p.actions[0].summary = "tidy up a log file (0 B)".into();
    p.id = p.content_id();
    match Plan::from_json(&p.to_json_pretty()) {
        Err(PlanError::Summary { claimed, actual }) => {
            assert_eq!(claimed, "tidy up a log file (0 B)");
            assert!(actual.starts_with("delete file"), "{actual}");
        }
        other => panic!("an edited summary was accepted: {other:?}"),
    }
    // A scan report fed to apply is named as such.
    let report = serde_json::to_string(&scan_home(&home)).unwrap();
    assert!(matches!(
        Plan::from_json(&report),
        Err(PlanError::ScanReport)
    ));
}

#[test]
fn journal_as_a_symlink_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let elsewhere = t.path().join("elsewhere.txt");
    std::fs::write(&elsewhere, b"precious\n").unwrap();
    let dir = t.path().join("data");
    std::fs::create_dir(&dir).unwrap();
    std::os::unix::fs::symlink(&elsewhere, dir.join("journal.jsonl")).unwrap();
    let e = Journal::open(&dir.join("journal.jsonl")).unwrap_err();
    assert!(e.to_string().contains("symbolic link"), "{e}");
    assert_eq!(std::fs::read(&elsewhere).unwrap(), b"precious\n");
    // A new journal directory is private.
    let fresh = t.path().join("new/data/journal.jsonl");
    Journal::open(&fresh).unwrap();
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(fresh.parent().unwrap())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700);
}

/// A journal on a full file system: the run stops before the next action and says so.
#[test]
fn journal_on_a_full_file_system_stops_the_run() {
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Linux).unwrap();
    let data = home.celesto_data_dir().unwrap();
    data.row("alive", "running", "qemu", None).unwrap();
    let disks: Vec<PathBuf> = (0..4)
        .map(|i| {
            data.disk(&format!("gone{i}"), "qcow2", 1 << 16, 1 << 14)
                .unwrap()
        })
        .collect();
    age_tree(&home.root, OLD).unwrap();
    let plan = Plan::from_scan(&scan_home(&home), &Selection::reclaimable());
    assert!(plan.delete_count() >= 4, "{plan:#?}");

    // A tiny tmpfs (this test mounts it, as root; elsewhere it fails, never passes silently).
    let mnt = t.path().join("tiny");
    std::fs::create_dir(&mnt).unwrap();
    let st = Command::new("mount")
        .args([
            "-t",
            "tmpfs",
            "-o",
            "size=12k",
            "smolsweep-test",
            mnt.to_str().unwrap(),
        ])
        .status()
        .expect("run mount");
    assert!(st.success(), "this test mounts a tmpfs and needs root");
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let _u = Unmount(mnt.clone());
    // tmpfs counts whole pages. The journal is pre-filled so that the run's first line ends
    // exactly on a page boundary, and the file system is filled but for the pages that line
    // needs: the line fits, nothing after it does.
    const PAGE: usize = 4096;
    let started = JournalEntry::PlanStarted {
        at_ms: 1_796_000_000_000,
        plan_id: plan.id.clone(),
        home: plan.home.clone(),
        estimated_bytes: plan.estimated_bytes,
        actions: plan.actions.clone(),
        origin: Some(exec::Origin::new("cli", "apply")),
    };
    let line = serde_json::to_vec(&started).unwrap().len() + 1;
    let pre = PAGE - line % PAGE; // >= 1: room for the placeholder's newline
    let jpath = mnt.join("journal.jsonl");
    let mut placeholder = vec![b'#'; pre - 1];
    placeholder.push(b'\n');
    std::fs::write(&jpath, &placeholder).unwrap();
    let pages_needed = (pre + line).div_ceil(PAGE) - pre.div_ceil(PAGE);
    let filler = mnt.join("filler");
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&filler).unwrap();
        while f.write_all(&[b'x'; PAGE]).is_ok() {}
        let _ = f.sync_all();
        let len = f.metadata().unwrap().len();
        f.set_len(len / PAGE as u64 * PAGE as u64 - (pages_needed * PAGE) as u64)
            .unwrap();
    }

    let mut judge = Rejudge::new(opts(&home));
    let runner = Recorder::default();
    let confirmed = Confirmed::of(&plan, How::YesFlag);
    let road = Road::given(&mut judge, &runner).journal_at(jpath.clone());
    let origin = exec::Origin::new("cli", "test");
    let r = exec::run(&plan, Some(confirmed), origin, road).expect("plan_started fits");
    assert!(r.journal_error.is_some(), "{r:#?}");
    assert!(r.any_failed(), "a run whose journal failed reports failure");
    let done = r.done().count();
    assert!(
        done <= 1,
        "the run went on after the journal failed: {done} done"
    );
    let left = disks.iter().filter(|d| d.exists()).count();
    assert!(left >= disks.len() - 1, "only {left} disks left");
    let not_attempted = r
        .skipped()
        .filter(
            |rec| matches!(&rec.outcome, Outcome::Skipped { why, .. } if why.contains("journal")),
        )
        .count();
    assert!(not_attempted >= disks.len() - 1, "{r:#?}");
}

/// A dry run counts what it would delete earlier in the same plan as gone, so it previews the
/// base of an overlay it deletes as deleted too, as the real run does (it said "still backs onto
/// it; … not deleted"). That holds within that dry run only: a real run with the same judge
/// afterwards still refuses a base whose overlay stays.
#[test]
fn a_dry_run_previews_a_base_deleted_after_its_overlay_and_does_not_weaken_the_next_run() {
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Linux).unwrap();
    let _cases = smolsweep_fixtures::celesto_edge_cases(&home).unwrap();
    let r = scan_home(&home);
    let plan = Plan::from_scan(&r, &Selection::reclaimable());
    let is_base = |p: &Path| {
        p.to_string_lossy()
            .ends_with("disks/orph2.qcow2.backing-3f2a.qcow2")
    };
    let base_action = |a: &Action| matches!(a, Action::DeletePath { path, .. } if is_base(path));
    assert!(plan.actions.iter().any(|a| base_action(&a.action)));
    let mut judge = Rejudge::new(opts(&home));
    let runner = exec::UnwiredRunner;
    let dry = crate::run_given(&plan, None, Road::given(&mut judge, &runner)).unwrap();
    let rec = dry.records.iter().find(|r| base_action(&r.action)).unwrap();
    assert!(
        matches!(rec.outcome, Outcome::WouldDo { .. }),
        "{:?}",
        rec.outcome
    );
    // The same judge, then a real run of the base alone (its overlay stays): refused.
    let alone = edited(&plan, |p| p.actions.retain(|a| base_action(&a.action)));
    assert_eq!(alone.actions.len(), 1);
    let real = crate::run_given(
        &alone,
        Some(Confirmed::of(&alone, How::YesFlag)),
        Road::given(&mut judge, &runner),
    )
    .unwrap();
    assert!(
        matches!(&real.records[0].outcome, Outcome::Skipped { why, .. } if why.contains("backs onto it")),
        "{:?}",
        real.records[0].outcome
    );
    let Action::DeletePath { path, .. } = &alone.actions[0].action else {
        unreachable!()
    };
    assert!(path.exists(), "the base stays while its overlay does");
}

/// A keep rule saved while a run is under way lost: the executor read the rules once, in the
/// scan before the first action, and deleted the disk the rule named. Four orphan disks; after
/// the first action, a rule keeping the disk planned last is saved (as `keep add` saves it).
#[test]
fn a_keep_rule_added_mid_run_keeps_what_it_names() {
    use smolsweep::exec::ProgressEvent;
    use smolsweep::keep::{Keeps, Rule, Target};
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Linux).unwrap();
    let data = home.celesto_data_dir().unwrap();
    data.row("alive", "running", "qemu", None).unwrap();
    let disks: Vec<PathBuf> = (1..=4)
        .map(|i| {
            data.disk(&format!("gone{i}"), "qcow2", 1 << 20, 1 << 16)
                .unwrap()
        })
        .collect();
    age_tree(&home.root, OLD).unwrap();
    let plan = Plan::from_scan(&scan_home(&home), &Selection::reclaimable());
    let planned: Vec<&PathBuf> = plan
        .actions
        .iter()
        .filter_map(|a| match &a.action {
            Action::DeletePath { path, .. } if disks.contains(path) => Some(path),
            _ => None,
        })
        .collect();
    assert_eq!(planned.len(), 4, "every orphan disk is planned: {plan:?}");
    let (first, last) = (planned[0].clone(), planned[3].clone());
    let o = opts(&home);
    let keep_file = smolsweep::keep::path_for(&o.env, o.platform);
    let keep_last = || {
        let id = smolsweep::model::FileIdentity::of(&last).unwrap();
        let target = Target::Item {
            path: last.clone(),
            dev: id.dev,
            ino: id.ino,
            born_ns: smolsweep::keep::born(&last),
        };
        let mut k = Keeps::load(&keep_file).unwrap();
        k.add(Rule::new(target, "said mid-run", 1_796_083_200));
        k.save(&keep_file).unwrap();
    };
    let progress = |e: &ProgressEvent| {
        if matches!(e, ProgressEvent::Finished { index: 0, .. }) {
            keep_last();
        }
    };
    let mut judge = Rejudge::new(o);
    let confirmed = Confirmed::of(&plan, How::YesFlag);
    let runner = Recorder::default();
    let road = Road::given(&mut judge, &runner).sink(&progress);
    let r = crate::run_given(&plan, Some(confirmed), road).expect("runs");
    assert!(outcome_for(&r, &first).is_done(), "{r:?}");
    assert!(!first.exists());
    let why = skipped_why(outcome_for(&r, &last));
    assert!(why.contains("Kept by you"), "{why}");
    assert!(last.exists(), "the disk a rule named mid-run was deleted");
    for d in &planned[1..3] {
        assert!(outcome_for(&r, d).is_done(), "{r:?}");
    }
}

/// Items (issue 29): a rule on a saved disk saved between two actions of one run keeps the
/// disk and its marker, although the run already took the disk's companion file: the marker
/// goes last, after the disk, and both are judged with the rule as it is at their moment.
#[test]
fn a_keep_rule_added_between_two_actions_of_one_run_keeps_the_whole_saved_disk() {
    use smolsweep::exec::ProgressEvent;
    use smolsweep::keep::{Keeps, Rule, Target};
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Linux).unwrap();
    let data = home.celesto_data_dir().unwrap();
    data.row("alive", "running", "qemu", None).unwrap();
    let disk = data.disk("kept7", "qcow2", 1 << 20, 1 << 16).unwrap();
    let marker = data.retained("kept7.qcow2").unwrap();
    let companion = data
        .companion("kept7.qcow2", ".create-backup-9c1d", 4096)
        .unwrap();
    age_tree(&home.root, OLD).unwrap();
    let mut sel = Selection::reclaimable();
    sel.include.insert(smolsweep::model::OptInClass::SavedDisks);
    let plan = Plan::from_scan(&scan_home(&home), &sel);
    let order: Vec<&PathBuf> = plan
        .actions
        .iter()
        .filter_map(|a| match &a.action {
            Action::DeletePath { path, .. } => Some(path),
            _ => None,
        })
        .collect();
    assert_eq!(order, vec![&companion, &disk, &marker], "{plan:#?}");
    let o = opts(&home);
    let keep_file = smolsweep::keep::path_for(&o.env, o.platform);
    let keep_disk = || {
        let id = smolsweep::model::FileIdentity::of(&disk).unwrap();
        let target = Target::Item {
            path: disk.clone(),
            dev: id.dev,
            ino: id.ino,
            born_ns: smolsweep::keep::born(&disk),
        };
        let mut k = Keeps::load(&keep_file).unwrap();
        k.add(Rule::new(target, "backups", 1_796_083_200));
        k.save(&keep_file).unwrap();
    };
    let progress = |e: &ProgressEvent| {
        if matches!(e, ProgressEvent::Finished { index: 0, .. }) {
            keep_disk();
        }
    };
    let mut judge = Rejudge::new(o);
    let confirmed = Confirmed::of(&plan, How::YesFlag);
    let runner = Recorder::default();
    let road = Road::given(&mut judge, &runner).sink(&progress);
    let r = crate::run_given(&plan, Some(confirmed), road).expect("runs");
    assert!(outcome_for(&r, &companion).is_done(), "{r:?}");
    for p in [&disk, &marker] {
        assert!(
            skipped_why(outcome_for(&r, p)).contains("Kept by you"),
            "{r:?}"
        );
        assert!(
            p.exists(),
            "{} went after a rule kept its disk",
            p.display()
        );
    }
}
