//! Reclaiming: plans, the delete primitive, the executor, the journal and the CLI, all in
//! scratch directories. Scan reports are built here from real temp trees (the scanner is tested
//! on its own).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{symlink, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use smolsweep::exec::{
    ActionRunner, Confirmed, ExecError, ExecReport, How, Judge, Origin, Outcome, ProgressEvent,
    Road, RunError,
};
use smolsweep::journal::{self, Journal, JournalEntry};
use smolsweep::model::*;
use smolsweep::plan::{Action, Plan, PlanError, Selection};

// ---------------------------------------------------------------- helpers

const OLD: Duration = Duration::from_secs(3600);

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Set a path's mtime (not following symlinks for files and dirs we create) an hour back, as
/// leftovers are: the scan happened after they were last written.
fn age(p: &Path) {
    let f = fs::File::open(p).unwrap();
    f.set_modified(SystemTime::now() - OLD).unwrap();
}

/// Age a whole tree (directories last, so their mtimes stay old).
fn age_tree(p: &Path) {
    let md = fs::symlink_metadata(p).unwrap();
    if md.file_type().is_symlink() {
        return;
    }
    if md.is_dir() {
        for e in fs::read_dir(p).unwrap() {
            age_tree(&e.unwrap().path());
        }
    }
    age(p);
}

fn write(p: &Path, bytes: usize) {
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, vec![7u8; bytes]).unwrap();
}

/// A finding as the scan reports it, sizes summed over a directory's tree.
fn finding(root: &Path, path: &Path, verdict: Verdict) -> Finding {
    finding_sized(root, path, verdict, true)
}

fn finding_sized(root: &Path, path: &Path, verdict: Verdict, walk: bool) -> Finding {
    let md = fs::symlink_metadata(path).unwrap();
    let (mut apparent, mut allocated) = (md.size(), md.blocks() * 512);
    if md.is_dir() && walk {
        for e in walkdir::WalkDir::new(path).min_depth(1) {
            let m = e.unwrap().metadata().unwrap();
            apparent += m.size();
            allocated += m.blocks() * 512;
        }
    }
    Finding {
        apparent_bytes: apparent,
        allocated_bytes: allocated,
        reason: "test".into(),
        opt_in_class: (verdict == Verdict::OptIn).then_some(OptInClass::Caches),
        identity: Some(FileIdentity::of(path).unwrap()),
        is_dir: md.is_dir(),
        root: Some(root.to_path_buf()),
        ..Finding::new(
            finding_id(
                Product::Celesto,
                smolsweep::model::FindingKind::CelestoOrphanDisk,
                path,
            ),
            Product::Celesto,
            smolsweep::model::FindingKind::CelestoOrphanDisk,
            path.to_path_buf(),
            verdict,
        )
    }
}

fn report(home: &Path, roots: &[&Path], findings: Vec<Finding>) -> ScanReport {
    let mut r = ScanReport {
        schema: SCAN_SCHEMA.into(),
        home: home.to_path_buf(),
        platform: Platform::Linux,
        products: vec![ProductReport {
            product: Product::Celesto,
            detected: true,
            status: "ok".into(),
            roots: roots
                .iter()
                .enumerate()
                .map(|(i, r)| (format!("root{i}"), r.to_path_buf()))
                .collect::<BTreeMap<_, _>>(),
            problems: vec![],
            version: None,
            newer: None,
        }],
        findings,
        machines: vec![],
        processes: vec![],
        totals: Totals::default(),
        // One second early: a coarse file system clock may stamp a write just after the scan
        // with a time just before it.
        scanned_at: now_secs() - 1,
        scanned_at_ns: 0,
        duration_ms: 1,
        compact: Default::default(),
    };
    r.compute_totals();
    r
}

/// Records every call; answers with fixed outcomes.
#[derive(Default)]
struct Recorder {
    calls: RefCell<Vec<String>>,
    reap_fails: bool,
}

impl ActionRunner for Recorder {
    fn stop_machine(&self, _: Product, name: &str, _: Option<u32>, _: Option<u64>) -> Outcome {
        self.calls.borrow_mut().push(format!("stop {name}"));
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
        self.calls.borrow_mut().push(format!("delete {name}"));
        Outcome::done("deleted")
    }
    fn reap(&self, pid: u32, _: u64, _: Product, _: Option<&str>, _: u32) -> Outcome {
        self.calls.borrow_mut().push(format!("reap {pid}"));
        if self.reap_fails {
            Outcome::failed("still alive after SIGKILL")
        } else {
            Outcome::done("ended")
        }
    }
    fn detach(&self, m: &Path) -> Outcome {
        self.calls
            .borrow_mut()
            .push(format!("detach {}", m.display()));
        Outcome::done("detached")
    }
}

/// These tests exercise the executor's mechanics (delete primitive, ordering, journal) on
/// hand-built findings that no scan would produce, so the re-judge answers "as planned"; the
/// real judge is exercised in tests/it/pipeline.rs and tests/it/rejudge.rs.
struct AsPlanned;

impl Judge for AsPlanned {
    fn still_confirmed(&mut self, _: &Plan, _: &Action) -> Result<(), String> {
        Ok(())
    }
    fn changed(&mut self) {}
}

fn run(plan: &Plan, runner: &dyn ActionRunner) -> ExecReport {
    let confirmed = Confirmed::of(plan, How::YesFlag);
    crate::run_given(plan, Some(confirmed), Road::given(&mut AsPlanned, runner)).unwrap()
}

fn dry(plan: &Plan, runner: &dyn ActionRunner) -> ExecReport {
    crate::run_given(plan, None, Road::given(&mut AsPlanned, runner)).unwrap()
}

fn exists(p: &Path) -> bool {
    fs::symlink_metadata(p).is_ok()
}

/// A scratch HOME with one state root inside it.
struct Scratch {
    _t: tempfile::TempDir,
    home: PathBuf,
    root: PathBuf,
    outside: PathBuf,
}

fn scratch() -> Scratch {
    let t = tempfile::tempdir().unwrap();
    let home = t.path().join("home");
    let root = home.join(".local/state/celesto");
    let outside = t.path().join("outside");
    fs::create_dir_all(&root).unwrap();
    fs::create_dir_all(&outside).unwrap();
    Scratch {
        home,
        root,
        outside,
        _t: t,
    }
}

/// A tmpfs mounted for the life of the guard (CI runs as root); lazily unmounted on drop.
struct TmpfsMount(PathBuf);

impl TmpfsMount {
    fn new(at: &Path, size: &str) -> TmpfsMount {
        fs::create_dir_all(at).unwrap();
        let st = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size}"),
                "smolsweep-test",
            ])
            .arg(at)
            .status()
            .expect("running mount");
        assert!(
            st.success(),
            "mounting a tmpfs at {} failed (this test needs root)",
            at.display()
        );
        TmpfsMount(at.to_path_buf())
    }
}

impl Drop for TmpfsMount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

// ---------------------------------------------------------------- dry run

#[test]
fn dry_run_never_reaches_delete_primitive() {
    let s = scratch();
    write(&s.root.join("disks/a.ext4"), 4096);
    write(&s.root.join("a.log"), 100);
    write(&s.root.join("vms/m1/disk.raw"), 8192);
    age_tree(&s.root.join("disks"));
    age_tree(&s.root.join("vms"));
    let findings = vec![
        finding(&s.root, &s.root.join("disks/a.ext4"), Verdict::Reclaimable),
        finding(&s.root, &s.root.join("a.log"), Verdict::Reclaimable),
        finding(&s.root, &s.root.join("vms/m1"), Verdict::Reclaimable),
    ];
    let mut rep = report(&s.home, &[&s.root], findings);
    rep.processes.push(VmProcess {
        pid: 4_000_000,
        start_time: 1,
        product: Product::Smolvm,
        shape: ProcShape::SmolvmBootVm,
        owner: Some("m1".into()),
        orphan: true,
        scope: Scope::ThisHome,
        held_deleted_bytes: 0,
        uid: 0,
        comm: String::new(),
        argv: vec![],
        paths: vec![],
        reason: String::new(),
        fds_readable: true,
        kept: None,
    });
    rep.machines.push(Machine {
        alive: true,
        ..Machine::new(Product::Smolvm, "m2", "running")
    });
    let plan = Plan::from_scan(
        &rep,
        &Selection {
            all_reclaimable: true,
            reap_orphans: true,
            stop_machines: vec!["m2".into()],
            ..Default::default()
        },
    );
    assert_eq!(plan.actions.len(), 5, "{:#?}", plan.actions);

    let data = tempfile::tempdir().unwrap();
    let jpath = data.path().join("journal.jsonl");
    Journal::open(&jpath).unwrap();
    let runner = Recorder::default();
    let before = smolsweep::exec::delete_calls_on_this_thread();
    let r = smolsweep::exec::run(
        &plan,
        None,
        Origin::new("cli", "test"),
        Road::given(&mut AsPlanned, &runner).journal_at(jpath.clone()),
    )
    .unwrap();
    assert_eq!(smolsweep::exec::delete_calls_on_this_thread(), before);
    assert!(
        runner.calls.borrow().is_empty(),
        "{:?}",
        runner.calls.borrow()
    );
    assert!(r.dry_run);
    assert_eq!(r.would_do().count(), 5);
    assert_eq!(r.done().count(), 0);
    assert_eq!(r.freed_bytes, 0);
    for p in ["disks/a.ext4", "a.log", "vms/m1/disk.raw"] {
        assert!(s.root.join(p).exists(), "{p} deleted by a dry run");
    }
    assert_eq!(
        fs::read(&jpath).unwrap().len(),
        0,
        "a dry run wrote the journal"
    );

    // The same plan executed does reach the primitive: the counter is live.
    let r = run(&plan, &runner);
    assert_eq!(smolsweep::exec::delete_calls_on_this_thread(), before + 3);
    assert_eq!(r.done().count(), 5, "{:#?}", r.records);
    assert!(!s.root.join("disks/a.ext4").exists());
}

// ---------------------------------------------------------------- races and mutations

fn exchange(dir: &Path, a: &str, b: &str) -> bool {
    let Ok(d) = fs::File::open(dir) else {
        return false;
    };
    rustix::fs::renameat_with(&d, a, &d, b, rustix::fs::RenameFlags::EXCHANGE).is_ok()
}

#[test]
fn symlink_swap_race_canary_survives() {
    let t = tempfile::tempdir().unwrap();
    let canary = t.path().join("canary");
    for i in 0..20 {
        write(&canary.join(format!("c{i}")), 10);
    }
    write(&canary.join("deep/c"), 10);
    let canary_count = 21;
    let swaps = Arc::new(AtomicU64::new(0));
    for round in 0..200 {
        let home = t.path().join("home");
        let root = home.join(".cache/smolvm");
        let target = root.join(format!("vms/m{round}"));
        for d in 0..4 {
            for f in 0..15 {
                write(&target.join(format!("sub/d{d}/f{f}")), 10);
            }
        }
        write(&target.join("disk.raw"), 100);
        symlink(&canary, target.join("link")).unwrap();
        symlink(&canary, target.join("sub/link")).unwrap();
        symlink(&canary, root.join("vms/tlink")).unwrap();
        age_tree(&root);
        let f = finding(&root, &target, Verdict::Reclaimable);
        let rep = report(&home, &[&root], vec![f]);
        let plan = Plan::from_scan(&rep, &Selection::reclaimable());
        assert_eq!(plan.delete_count(), 1);

        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::new();
        // Swap a directory inside the target (and one below it) with a symlink to the canary,
        // and, on odd rounds, the target itself.
        let mut pairs: Vec<(PathBuf, String, String)> = vec![
            (target.clone(), "sub".into(), "link".into()),
            (target.join("sub"), "d1".into(), "link".into()),
        ];
        if round % 2 == 1 {
            pairs.push((root.join("vms"), "tlink".into(), format!("m{round}")));
        }
        for (dir, a, b) in pairs {
            let stop = stop.clone();
            let swaps = swaps.clone();
            threads.push(std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    if fs::symlink_metadata(&dir).is_err() {
                        std::thread::yield_now();
                        continue;
                    }
                    if exchange(&dir, &a, &b) {
                        swaps.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }));
        }
        std::thread::sleep(Duration::from_micros(200));
        let _ = run(&plan, &Recorder::default());
        stop.store(true, Ordering::Relaxed);
        for th in threads {
            th.join().unwrap();
        }
        let n = walkdir::WalkDir::new(&canary)
            .into_iter()
            .filter(|e| e.as_ref().unwrap().file_type().is_file())
            .count();
        assert_eq!(n, canary_count, "canary lost files in round {round}");
        fs::remove_dir_all(&home).unwrap();
    }
    assert!(swaps.load(Ordering::Relaxed) > 200, "the swapper never ran");
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    Deleted,
    Kept,
}

#[test]
fn randomized_mutations_between_plan_and_apply() {
    let mut rng = StdRng::seed_from_u64(0x5eed_2026);
    let mut counts = BTreeMap::<&str, usize>::new();
    for iter in 0..80 {
        let s = scratch();
        let moved = s.outside.join("moved");
        fs::create_dir_all(&moved).unwrap();
        write(&s.outside.join("bystander/keep"), 10);
        let n = rng.random_range(3..12);
        let mut items: Vec<(PathBuf, bool)> = Vec::new();
        for i in 0..n {
            if rng.random_bool(0.5) {
                let p = s.root.join(format!("disks/i{i}.ext4"));
                write(&p, rng.random_range(1..5000));
                items.push((p, false));
            } else {
                let p = s.root.join(format!("vms/i{i}"));
                for k in 0..rng.random_range(0..6) {
                    write(
                        &p.join(format!("sub{}/f{k}", k % 2)),
                        rng.random_range(1..300),
                    );
                }
                fs::create_dir_all(&p).unwrap();
                items.push((p, true));
            }
        }
        write(&s.root.join("disks/unplanned.ext4"), 10);
        age_tree(&s.root);
        let verdicts = [
            Verdict::Reclaimable,
            Verdict::Reclaimable,
            Verdict::Reclaimable,
            Verdict::Protected,
            Verdict::Unknown,
            Verdict::OptIn,
        ];
        let mut findings = Vec::new();
        let mut expect: BTreeMap<PathBuf, Expect> = BTreeMap::new();
        for (p, _) in &items {
            let v = verdicts[rng.random_range(0..verdicts.len())];
            findings.push(finding(&s.root, p, v));
            expect.insert(
                p.clone(),
                if v == Verdict::Reclaimable {
                    Expect::Deleted
                } else {
                    Expect::Kept
                },
            );
        }
        expect.insert(s.root.join("disks/unplanned.ext4"), Expect::Kept);
        expect.insert(s.outside.join("bystander/keep"), Expect::Kept);
        let rep = report(&s.home, &[&s.root], findings);
        let plan = Plan::from_scan(&rep, &Selection::reclaimable());

        // Mutate between plan and apply.
        for (i, (p, is_dir)) in items.iter().enumerate() {
            let m = rng.random_range(0..10);
            let name = match (is_dir, m) {
                (_, 0..=3) => "none",
                (false, 4) => {
                    let mut f = fs::OpenOptions::new().append(true).open(p).unwrap();
                    std::io::Write::write_all(&mut f, b"more").unwrap();
                    "grow"
                }
                (false, 5) => {
                    let tmp = p.with_extension("tmp");
                    fs::copy(p, &tmp).unwrap();
                    fs::rename(&tmp, p).unwrap();
                    "replace_inode"
                }
                (false, 6) => {
                    fs::File::open(p)
                        .unwrap()
                        .set_modified(SystemTime::now())
                        .unwrap();
                    "touch"
                }
                (true, 4) => {
                    let away = moved.join(format!("i{i}"));
                    fs::rename(p, &away).unwrap();
                    symlink(&away, p).unwrap();
                    expect.insert(away.clone(), Expect::Kept);
                    "dir_to_symlink"
                }
                (true, 5) => {
                    let newf = p.join("appeared");
                    write(&newf, 5);
                    expect.insert(newf, Expect::Kept);
                    "appear_inside"
                }
                (true, 6) => {
                    // A file appears deeper down (the sub directory's mtime changes).
                    let sub = p.join("sub0");
                    if sub.exists() {
                        let newf = sub.join("late");
                        write(&newf, 5);
                        expect.insert(newf, Expect::Kept);
                        "appear_deep"
                    } else {
                        "none"
                    }
                }
                (_, 7) => {
                    if *is_dir {
                        fs::remove_dir_all(p).unwrap();
                    } else {
                        fs::remove_file(p).unwrap();
                    }
                    "vanish"
                }
                (_, 8) => {
                    let newf = s.root.join(format!("disks/new{i}.ext4"));
                    write(&newf, 5);
                    expect.insert(newf, Expect::Kept);
                    "appear_beside"
                }
                _ => "none",
            };
            *counts.entry(name).or_default() += 1;
            match name {
                "none" | "appear_beside" => {}
                "vanish" => {
                    expect.remove(p);
                }
                "dir_to_symlink" => {
                    // The symlink left at the planned path is not what was planned: kept.
                    expect.insert(p.clone(), Expect::Kept);
                }
                "appear_deep" => {
                    // The planned directory itself is unchanged; everything but the changed sub
                    // directory goes, which is reported as partial.
                    expect.remove(p);
                }
                _ => {
                    expect.insert(p.clone(), Expect::Kept);
                }
            }
        }
        let r = run(&plan, &Recorder::default());
        for (p, e) in &expect {
            match e {
                Expect::Deleted => assert!(
                    !exists(p),
                    "iter {iter}: {} should be deleted\n{:#?}",
                    p.display(),
                    r.records
                ),
                Expect::Kept => assert!(
                    exists(p),
                    "iter {iter}: {} should be kept\n{:#?}",
                    p.display(),
                    r.records
                ),
            }
        }
        assert!(r.failed().next().is_none(), "iter {iter}: {:#?}", r.records);
        assert!(exists(&s.root), "the root itself was deleted");
    }
    for k in [
        "grow",
        "replace_inode",
        "touch",
        "dir_to_symlink",
        "appear_inside",
        "appear_deep",
        "vanish",
        "appear_beside",
    ] {
        assert!(
            counts.get(k).copied().unwrap_or(0) > 0,
            "mutation {k} never drawn"
        );
    }
}

// ---------------------------------------------------------------- policy

#[test]
fn refuses_root_home_and_root_dirs() {
    let s = scratch();
    write(&s.root.join("disks/a.ext4"), 10);
    age_tree(&s.root);
    let other_root = s.home.join(".cache/celesto-images");
    fs::create_dir_all(&other_root).unwrap();
    write(&other_root.join("keep"), 10);

    // Findings naming a root, HOME and / are never planned.
    let mut bad = vec![
        finding(&s.root, &s.root, Verdict::Reclaimable),
        finding(&s.root, &s.home, Verdict::Reclaimable),
        finding(&s.root, &other_root, Verdict::Reclaimable),
    ];
    let mut slash = finding_sized(&s.root, Path::new("/"), Verdict::Reclaimable, false);
    slash.root = Some("/".into());
    bad.push(slash);
    let mut home_via_root = finding(&s.root, &s.home, Verdict::Reclaimable);
    home_via_root.root = Some("/".into());
    home_via_root.id = "home-via-slash".into();
    bad.push(home_via_root);
    let rep = report(&s.home, &[&s.root, &other_root], bad);
    let plan = Plan::from_scan(&rep, &Selection::reclaimable());
    assert!(plan.actions.is_empty(), "{:#?}", plan.actions);
    assert_eq!(plan.skipped_at_plan.len(), 5, "{:#?}", plan.skipped_at_plan);

    // A hand-made plan with a valid id still cannot delete them: the primitive refuses.
    let mut evil = plan.clone();
    for (path, root) in [
        (s.root.clone(), s.home.clone()),
        (s.home.clone(), s.home.parent().unwrap().to_path_buf()),
        (other_root.clone(), s.home.clone()),
        (PathBuf::from("/"), PathBuf::from("/")),
        (s.outside.clone(), s.root.clone()),
    ] {
        evil.actions.push(smolsweep::plan::PlannedAction {
            summary: "evil".into(),
            action: Action::DeletePath {
                finding_id: "x".into(),
                product: Product::Celesto,
                kind: smolsweep::model::FindingKind::CelestoOrphanDisk,
                identity: FileIdentity::of(&path).unwrap(),
                path,
                root,
                is_dir: true,
                expected_bytes: 0,
                after_reap: vec![],
                mounts_inside: vec![],
                owner_recheck: None,
                beside: None,
            },
        });
    }
    evil.id = evil.content_id();
    let r = run(&evil, &Recorder::default());
    assert_eq!(r.skipped().count(), 5, "{:#?}", r.records);
    for rec in &r.records {
        let Outcome::Skipped { why, .. } = &rec.outcome else {
            panic!("{rec:?}")
        };
        assert!(
            why.starts_with("refusing") || why.starts_with("not strictly inside"),
            "{why}"
        );
    }
    assert!(s.root.join("disks/a.ext4").exists());
    assert!(other_root.join("keep").exists());
    assert!(s.outside.exists());
}

#[test]
fn b9_file_created_after_confirmation_is_not_deleted() {
    let s = scratch();
    write(&s.root.join("disks/old.ext4"), 100);
    write(&s.root.join("old.log"), 100);
    write(&s.root.join("disks/vanishes.ext4"), 100);
    write(&s.root.join("firmware/old/nvram"), 100);
    age_tree(&s.root);
    let f = vec![
        finding(
            &s.root,
            &s.root.join("disks/old.ext4"),
            Verdict::Reclaimable,
        ),
        finding(&s.root, &s.root.join("old.log"), Verdict::Reclaimable),
        finding(
            &s.root,
            &s.root.join("disks/vanishes.ext4"),
            Verdict::Reclaimable,
        ),
        finding(&s.root, &s.root.join("firmware/old"), Verdict::Reclaimable),
    ];
    let rep = report(&s.home, &[&s.root], f);
    let plan = Plan::from_scan(&rep, &Selection::reclaimable());
    assert_eq!(plan.delete_count(), 4);
    // After the user said yes: new leftovers appear (they match what prune deletes), one
    // planned file vanishes, and a new file appears in a planned directory.
    write(&s.root.join("disks/new.ext4"), 100);
    write(&s.root.join("new.log"), 100);
    fs::remove_file(s.root.join("disks/vanishes.ext4")).unwrap();
    write(&s.root.join("firmware/old/fresh"), 10);
    let r = run(&plan, &Recorder::default());
    assert!(s.root.join("disks/new.ext4").exists());
    assert!(s.root.join("new.log").exists());
    assert!(s.root.join("firmware/old/fresh").exists());
    assert!(s.root.join("firmware/old/nvram").exists());
    assert!(!s.root.join("disks/old.ext4").exists());
    assert!(!s.root.join("old.log").exists());
    assert_eq!(r.done().count(), 2);
    assert_eq!(r.failed().count(), 0, "a vanished file is not a failure");
    let whys: Vec<String> = r
        .skipped()
        .map(|x| match &x.outcome {
            Outcome::Skipped { why, .. } => why.clone(),
            _ => unreachable!(),
        })
        .collect();
    assert!(whys.iter().any(|w| w == "already gone"), "{whys:?}");
    assert!(
        whys.iter().any(|w| w.contains("changed since the scan")),
        "{whys:?}"
    );
}

#[test]
fn b11_duplicate_path_planned_once() {
    let s = scratch();
    write(&s.root.join("dup.log"), 5000);
    write(&s.root.join("vms/m/a"), 5000);
    age_tree(&s.root);
    let a = finding(&s.root, &s.root.join("dup.log"), Verdict::Reclaimable);
    let mut b = a.clone();
    b.id = "second-disk-log".into();
    b.kind = smolsweep::model::FindingKind::CelestoOrphanLog;
    let dir = finding(&s.root, &s.root.join("vms/m"), Verdict::Reclaimable);
    let inner = finding(&s.root, &s.root.join("vms/m/a"), Verdict::Reclaimable);
    let expected = a.allocated_bytes + dir.allocated_bytes;
    let rep = report(&s.home, &[&s.root], vec![a, b, dir, inner]);
    let plan = Plan::from_scan(&rep, &Selection::reclaimable());
    assert_eq!(plan.delete_count(), 2, "{:#?}", plan.actions);
    assert_eq!(plan.estimated_bytes, expected);
    assert_eq!(plan.skipped_at_plan.len(), 2, "{:#?}", plan.skipped_at_plan);
    let r = run(&plan, &Recorder::default());
    assert_eq!(r.done().count(), 2);
    assert_eq!(
        r.skipped().count() + r.failed().count(),
        0,
        "{:#?}",
        r.records
    );
}

#[test]
fn b12_symlink_is_unlinked_not_followed() {
    let s = scratch();
    write(&s.outside.join("real-target.ext4"), 4096);
    write(&s.outside.join("dir/keep"), 10);
    fs::create_dir_all(s.root.join("disks")).unwrap();
    symlink(
        s.outside.join("real-target.ext4"),
        s.root.join("disks/link.ext4"),
    )
    .unwrap();
    write(&s.root.join("images/stale/x"), 10);
    symlink(s.outside.join("dir"), s.root.join("images/stale/linkdir")).unwrap();
    symlink(s.outside.join("dir"), s.root.join("images/stale-link")).unwrap();
    age_tree(&s.root);
    let f = vec![
        finding(
            &s.root,
            &s.root.join("disks/link.ext4"),
            Verdict::Reclaimable,
        ),
        finding(&s.root, &s.root.join("images/stale"), Verdict::Reclaimable),
        finding(
            &s.root,
            &s.root.join("images/stale-link"),
            Verdict::Reclaimable,
        ),
    ];
    assert!(!f[2].is_dir, "a symlink to a directory is not a directory");
    let rep = report(&s.home, &[&s.root], f);
    let plan = Plan::from_scan(&rep, &Selection::reclaimable());
    let r = run(&plan, &Recorder::default());
    assert_eq!(r.done().count(), 3, "{:#?}", r.records);
    assert!(!exists(&s.root.join("disks/link.ext4")));
    assert!(!exists(&s.root.join("images/stale-link")));
    assert!(!exists(&s.root.join("images/stale")));
    assert_eq!(
        fs::metadata(s.outside.join("real-target.ext4"))
            .unwrap()
            .len(),
        4096
    );
    assert!(s.outside.join("dir/keep").exists());
}

#[test]
fn mount_point_is_never_deleted_through() {
    let s = scratch();
    let m1 = s.root.join("vms/m1");
    write(&m1.join("disk.raw"), 100);
    let mnt = m1.join("pack/layers-cs");
    let guard = TmpfsMount::new(&mnt, "4m");
    write(&mnt.join("layer/file"), 100);
    let mnt2 = s.root.join("vms/m2");
    let guard2 = TmpfsMount::new(&mnt2, "4m");
    write(&mnt2.join("inside"), 100);
    age(&m1.join("disk.raw"));
    age(&m1.join("pack"));
    age(&m1);
    let mut f1 = finding(&s.root, &m1, Verdict::Reclaimable);
    f1.mounts_inside = vec![mnt.clone()];
    let f2 = finding(&s.root, &mnt2, Verdict::Reclaimable);
    let rep = report(&s.home, &[&s.root], vec![f1, f2]);
    let plan = Plan::from_scan(&rep, &Selection::reclaimable());
    assert_eq!(plan.delete_count(), 2);
    assert!(
        !plan
            .actions
            .iter()
            .any(|a| matches!(a.action, Action::Detach { .. })),
        "no detach on Linux"
    );
    let d = dry(&plan, &Recorder::default());
    assert!(
        d.skipped().any(|x| x.summary.contains("m2")),
        "the dry run reports the mount point: {:#?}",
        d.records
    );
    let r = run(&plan, &Recorder::default());
    assert!(
        mnt.join("layer/file").exists(),
        "deleted through a mount point"
    );
    assert!(
        mnt2.join("inside").exists(),
        "deleted through a mount point"
    );
    assert!(
        !m1.join("disk.raw").exists(),
        "the rest of the directory is deleted"
    );
    assert_eq!(r.failed().count(), 0, "{:#?}", r.records);
    let texts: Vec<String> = r
        .skipped()
        .map(|x| serde_json::to_string(&x.outcome).unwrap())
        .collect();
    assert!(
        texts
            .iter()
            .any(|t| t.contains("mount point") && t.contains("\"partial\":true")),
        "{texts:?}"
    );
    assert!(
        texts
            .iter()
            .any(|t| t.contains("mount point, not deleted through")),
        "{texts:?}"
    );
    drop(guard2);
    drop(guard);
}

// ---------------------------------------------------------------- reap ordering

#[test]
fn smolvm_787_storage_deleted_only_after_its_process_is_ended() {
    for reap_fails in [false, true] {
        let s = scratch();
        let disk = s.root.join("disks/orphan.ext4");
        write(&disk, 100);
        age_tree(&s.root);
        let f = finding(&s.root, &disk, Verdict::Reclaimable);
        let mut rep = report(&s.home, &[&s.root], vec![f]);
        rep.processes.push(VmProcess {
            pid: 4_000_001,
            start_time: 7,
            product: Product::Celesto,
            shape: ProcShape::CelestoQemu,
            owner: Some("orphan".into()),
            orphan: true,
            scope: Scope::ThisHome,
            held_deleted_bytes: 0,
            uid: 0,
            comm: "qemu".into(),
            argv: vec![],
            paths: vec![disk.clone()],
            reason: String::new(),
            fds_readable: true,
            kept: None,
        });
        let plan = Plan::from_scan(
            &rep,
            &Selection {
                all_reclaimable: true,
                reap_orphans: true,
                ..Default::default()
            },
        );
        assert!(matches!(
            plan.actions[0].action,
            Action::SignalProcess { .. }
        ));
        assert!(
            matches!(&plan.actions[1].action, Action::DeletePath { after_reap, .. } if after_reap == &vec![4_000_001])
        );
        // The running VM kept writing to its disk after the scan.
        fs::write(&disk, vec![1u8; 300]).unwrap();
        let runner = Recorder {
            reap_fails,
            ..Default::default()
        };
        let r = run(&plan, &runner);
        assert_eq!(*runner.calls.borrow(), vec!["reap 4000001".to_string()]);
        assert_eq!(exists(&disk), reap_fails, "{:#?}", r.records);
    }
}

// ---------------------------------------------------------------- plan ids

#[test]
fn plan_id_tamper_is_refused() {
    let s = scratch();
    write(&s.root.join("a.log"), 10);
    let rep = report(
        &s.home,
        &[&s.root],
        vec![finding(
            &s.root,
            &s.root.join("a.log"),
            Verdict::Reclaimable,
        )],
    );
    let plan = Plan::from_scan(&rep, &Selection::reclaimable());
    assert_eq!(plan.id.len(), 64);
    let text = plan.to_json_pretty();
    assert_eq!(Plan::from_json(&text).unwrap(), plan);
    let changed_path = text.replace("a.log", "b.log");
    assert!(matches!(
        Plan::from_json(&changed_path),
        Err(PlanError::Tampered { .. })
    ));
    let changed_bytes = text.replace(
        &format!("\"estimated_bytes\": {}", plan.estimated_bytes),
        "\"estimated_bytes\": 1",
    );
    assert_ne!(changed_bytes, text);
    assert!(matches!(
        Plan::from_json(&changed_bytes),
        Err(PlanError::Tampered { .. })
    ));
    // The executor refuses a changed plan and a confirmation given for another plan.
    let mut edited = plan.clone();
    edited.roots.push("/".into());
    let e = crate::run_given(
        &edited,
        Some(Confirmed::of(&edited, How::YesFlag)),
        Road::given(&mut AsPlanned, &Recorder::default()),
    );
    assert!(matches!(
        e,
        Err(RunError::Exec(ExecError::Plan(PlanError::Tampered { .. })))
    ));
    let other = Plan::from_scan(
        &report(&s.home, &[&s.root], vec![]),
        &Selection::reclaimable(),
    );
    let e = crate::run_given(
        &plan,
        Some(Confirmed::of(&other, How::YesFlag)),
        Road::given(&mut AsPlanned, &Recorder::default()),
    );
    assert!(matches!(
        e,
        Err(RunError::Exec(ExecError::WrongConfirmation { .. }))
    ));
    assert!(s.root.join("a.log").exists());
}

/// The token names the exact plan that was shown: another plan, or the shown one changed after
/// the yes (its id made to match again), runs nothing, deletes nothing and journals nothing.
#[test]
fn a_confirmation_of_one_plan_does_not_run_another() {
    let s = scratch();
    write(&s.root.join("a.log"), 10);
    write(&s.root.join("b.log"), 10);
    let plan_of = |name: &str| {
        let f = finding(&s.root, &s.root.join(name), Verdict::Reclaimable);
        Plan::from_scan(
            &report(&s.home, &[&s.root], vec![f]),
            &Selection::reclaimable(),
        )
    };
    let (a, b) = (plan_of("a.log"), plan_of("b.log"));
    assert_eq!((a.actions.len(), b.actions.len()), (1, 1));
    let mut a_changed = a.clone();
    a_changed.actions = b.actions.clone();
    a_changed.id = a_changed.content_id();
    let data = tempfile::tempdir().unwrap();
    let jpath = data.path().join("journal.jsonl");
    let runner = Recorder::default();
    for other in [&b, &a_changed] {
        let before = smolsweep::exec::delete_calls_on_this_thread();
        let r = smolsweep::exec::run(
            other,
            Some(Confirmed::of(&a, How::Answered)),
            Origin::new("cli", "test"),
            Road::given(&mut AsPlanned, &runner).journal_at(jpath.clone()),
        );
        let e = r.expect_err("a token for plan A ran another plan");
        assert!(
            matches!(e, RunError::Exec(ExecError::WrongConfirmation { .. })),
            "{e}"
        );
        assert!(e.to_string().contains("nothing was done"), "{e}");
        assert_eq!(smolsweep::exec::delete_calls_on_this_thread(), before);
    }
    assert!(s.root.join("a.log").exists() && s.root.join("b.log").exists());
    assert!(runner.calls.borrow().is_empty());
    assert!(journal::read(&jpath).unwrap().entries.is_empty());
}

// ---------------------------------------------------------------- journal

#[test]
fn journal_survives_a_crash_mid_run() {
    let s = scratch();
    for i in 0..3 {
        write(&s.root.join(format!("f{i}.log")), 10);
    }
    age_tree(&s.root);
    let f: Vec<Finding> = (0..3)
        .map(|i| {
            finding(
                &s.root,
                &s.root.join(format!("f{i}.log")),
                Verdict::Reclaimable,
            )
        })
        .collect();
    let plan = Plan::from_scan(&report(&s.home, &[&s.root], f), &Selection::reclaimable());
    let data = tempfile::tempdir().unwrap();
    let jpath = data.path().join("journal.jsonl");
    // plan_started must be on disk before the first action starts.
    let seen_before_first = RefCell::new(None);
    let progress = |ev: &ProgressEvent| {
        if let ProgressEvent::Started { index: 0, .. } = ev {
            let c = journal::read(&jpath).unwrap();
            *seen_before_first.borrow_mut() = Some(c.entries.clone());
        }
    };
    let r = smolsweep::exec::run(
        &plan,
        Some(Confirmed::of(&plan, How::YesFlag)),
        Origin::new("cli", "test"),
        Road::given(&mut AsPlanned, &Recorder::default())
            .journal_at(jpath.clone())
            .sink(&progress),
    )
    .unwrap();
    let first = seen_before_first.into_inner().unwrap();
    assert_eq!(first.len(), 1);
    assert!(matches!(&first[0], JournalEntry::PlanStarted { plan_id, .. } if plan_id == &plan.id));
    let c = journal::read(&jpath).unwrap();
    assert_eq!(c.entries.len(), 5);
    let runs = journal::runs(&c.entries);
    assert_eq!(runs.len(), 1);
    assert!(runs[0].finished);
    assert_eq!(runs[0].done, 3);
    assert_eq!(runs[0].freed_bytes, Some(r.freed_bytes));

    // Simulate a crash while writing the third action line: drop plan_finished and cut the
    // last action line in half.
    let text = fs::read_to_string(&jpath).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let crashed = format!(
        "{}\n{}\n{}\n{}",
        lines[0],
        lines[1],
        lines[2],
        &lines[3][..lines[3].len() / 2]
    );
    fs::write(&jpath, crashed).unwrap();
    let c = journal::read(&jpath).unwrap();
    assert_eq!(c.entries.len(), 3);
    assert_eq!(c.damaged_lines, vec![4]);
    let runs = journal::runs(&c.entries);
    assert!(!runs[0].finished);
    assert_eq!(runs[0].done, 2);
    assert_eq!(runs[0].freed_bytes, None);

    // The next run appends after the damaged line and is readable in full.
    let empty = Plan::from_scan(
        &report(&s.home, &[&s.root], vec![]),
        &Selection::reclaimable(),
    );
    smolsweep::exec::run(
        &empty,
        Some(Confirmed::of(&empty, How::YesFlag)),
        Origin::new("cli", "test"),
        Road::given(&mut AsPlanned, &Recorder::default()).journal_at(jpath.clone()),
    )
    .unwrap();
    let c = journal::read(&jpath).unwrap();
    assert_eq!(c.damaged_lines, vec![4]);
    let runs = journal::runs(&c.entries);
    assert_eq!(runs.len(), 2);
    assert!(runs[1].finished);
}

// ---------------------------------------------------------------- measured bytes

#[test]
fn freed_bytes_are_measured_per_file_system() {
    let t = tempfile::tempdir().unwrap();
    let home = t.path().join("home");
    let root = home.join(".cache/smolvm");
    let _m = TmpfsMount::new(&root, "64m");
    const MB8: usize = 8 << 20;
    write(&root.join("vms/big/disk.raw"), MB8);
    write(&root.join("held.raw"), MB8);
    age_tree(&root.join("vms"));
    age_tree(&root.join("held.raw"));
    let f = vec![
        finding(&root, &root.join("vms/big"), Verdict::Reclaimable),
        finding(&root, &root.join("held.raw"), Verdict::Reclaimable),
    ];
    let rep = report(&home, &[&root], f);
    let plan = Plan::from_scan(&rep, &Selection::reclaimable());
    // A process holds held.raw open: unlinking it frees nothing until it closes (smolvm #787).
    let holder = fs::File::open(root.join("held.raw")).unwrap();
    let r = run(&plan, &Recorder::default());
    assert_eq!(r.done().count(), 2, "{:#?}", r.records);
    assert_eq!(r.filesystems.len(), 1);
    let fsm = &r.filesystems[0];
    assert!(fsm.free_after > fsm.free_before);
    assert!(
        r.freed_bytes >= MB8 as u64 && r.freed_bytes < (MB8 as u64) + (1 << 20),
        "freed {} (estimate {})",
        r.freed_bytes,
        r.estimated_bytes
    );
    assert!(r.estimated_bytes >= 2 * MB8 as u64);
    drop(holder);
}

/// Another program writing to the same disk while a plan runs (a browser, a build, a VM of
/// another HOME) does not move what Smolsweep says it freed: each action is measured on its own
/// target. Measured as the growth of the file system's free space over the whole run, the
/// 16 MiB written between the two deletes below made it 0.
#[test]
fn freed_bytes_are_not_moved_by_another_program_writing_to_the_same_disk() {
    let t = tempfile::tempdir().unwrap();
    let home = t.path().join("home");
    let root = home.join(".cache/smolvm");
    let _m = TmpfsMount::new(&root, "64m");
    const MB4: usize = 4 << 20;
    write(&root.join("vms/a/disk.raw"), MB4);
    write(&root.join("vms/b/disk.raw"), MB4);
    age_tree(&root.join("vms"));
    let f = vec![
        finding(&root, &root.join("vms/a"), Verdict::Reclaimable),
        finding(&root, &root.join("vms/b"), Verdict::Reclaimable),
    ];
    let rep = report(&home, &[&root], f);
    let plan = Plan::from_scan(&rep, &Selection::reclaimable());
    let other = root.join("another-programs-file");
    let writer = |e: &ProgressEvent| {
        if matches!(e, ProgressEvent::Finished { index: 0, .. }) {
            write(&other, 16 << 20);
        }
    };
    let (runner, mut judge) = (Recorder::default(), AsPlanned);
    let road = Road::given(&mut judge, &runner).sink(&writer);
    let r = crate::run_given(&plan, Some(Confirmed::of(&plan, How::YesFlag)), road).unwrap();
    assert_eq!(r.done().count(), 2, "{:#?}", r.records);
    assert!(other.exists(), "the other program wrote its file");
    let fsm = &r.filesystems[0];
    assert!(
        fsm.free_after < fsm.free_before,
        "the disk as a whole lost space"
    );
    let each: Vec<u64> = r.records.iter().map(|a| a.freed_bytes).collect();
    for b in &each {
        assert!(
            *b >= MB4 as u64 && *b < (MB4 as u64) + (1 << 20),
            "{each:?}"
        );
    }
    assert_eq!(r.freed_bytes, each.iter().sum::<u64>());
}

/// Seen in the desktop's tests beside a build: measured as "never more than the file system
/// gained during the action", a delete that ran while another program wrote to the same disk
/// freed "0 B". What an action frees is the bytes of what it removed (less what a process
/// still holds open), whatever else writes meanwhile.
#[test]
fn freed_bytes_are_not_lowered_by_another_program_writing_during_each_delete() {
    let t = tempfile::tempdir().unwrap();
    let home = t.path().join("home");
    let root = home.join(".cache/smolvm");
    let _m = TmpfsMount::new(&root, "64m");
    const MB4: usize = 4 << 20;
    let names = ["a", "b", "c", "d"];
    for n in names {
        write(&root.join(format!("vms/{n}/disk.raw")), MB4);
    }
    age_tree(&root.join("vms"));
    let f = names
        .iter()
        .map(|n| finding(&root, &root.join(format!("vms/{n}")), Verdict::Reclaimable))
        .collect();
    let rep = report(&home, &[&root], f);
    let plan = Plan::from_scan(&rep, &Selection::reclaimable());
    // Another program writes 8 MiB files to the same file system the whole time.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (stop, dir) = (stop.clone(), root.join("other"));
        std::thread::spawn(move || {
            fs::create_dir_all(&dir).unwrap();
            let mut i = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let f = dir.join(format!("f{}", i % 2));
                let _ = fs::write(&f, vec![7u8; 8 << 20]);
                i += 1;
            }
        })
    };
    let r = run(&plan, &Recorder::default());
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
    assert_eq!(r.done().count(), 4, "{:#?}", r.records);
    let each: Vec<u64> = r.records.iter().map(|a| a.freed_bytes).collect();
    for b in &each {
        assert!(
            *b >= MB4 as u64 && *b < (MB4 as u64) + (1 << 20),
            "{each:?}"
        );
    }
}

// ---------------------------------------------------------------- CLI

fn cli(args: &[&str], home: &Path, data: &Path) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_smolsweep"))
        .args(args)
        .env("HOME", home)
        .env("SMOLSWEEP_DATA_DIR", data)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// A scratch HOME laid out as Celesto writes it: a live sandbox's disk, two orphaned disks and
/// a saved one (opt-in), all older than the age guard.
struct CelestoScratch {
    _t: tempfile::TempDir,
    home: PathBuf,
    outside: PathBuf,
    live: PathBuf,
    orphans: Vec<PathBuf>,
    saved: PathBuf,
}

fn celesto_scratch() -> CelestoScratch {
    let t = tempfile::tempdir().unwrap();
    let home = smolsweep_fixtures::Home::new(t.path(), smolsweep_fixtures::Layout::Linux).unwrap();
    let data = home.celesto_data_dir().unwrap();
    data.row("live1", "stopped", "qemu", None).unwrap();
    let live = data.disk("live1", "qcow2", 1 << 16, 1 << 14).unwrap();
    let orphans = vec![
        data.disk("gone1", "qcow2", 1 << 16, 1 << 14).unwrap(),
        data.disk("gone2", "qcow2", 1 << 16, 1 << 14).unwrap(),
    ];
    let saved = data.disk("kept1", "qcow2", 1 << 16, 1 << 14).unwrap();
    data.retained("kept1.qcow2").unwrap();
    smolsweep_fixtures::age_tree(&home.root, OLD).unwrap();
    let outside = t.path().join("outside");
    fs::create_dir_all(&outside).unwrap();
    CelestoScratch {
        home: home.root.clone(),
        outside,
        live,
        orphans,
        saved,
        _t: t,
    }
}

#[test]
fn cli_prune_without_yes_off_a_terminal_is_a_dry_run_exiting_1() {
    let s = celesto_scratch();
    let data = s.outside.join("data");
    let (code, out, err) = cli(&["prune"], &s.home, &data);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("gone1.qcow2"), "{out}");
    assert!(err.contains("--yes"), "{err}");
    assert!(s.orphans.iter().all(|p| p.exists()));
    assert!(!data.join("journal.jsonl").exists());

    let (code, out, _) = cli(&["prune", "--dry-run", "--json"], &s.home, &data);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["schema"], "smolsweep.result/1");
    assert_eq!(v["dry_run"], true);
    assert_eq!(v["would_do"].as_array().unwrap().len(), 2, "{v}");
    assert!(s.orphans.iter().all(|p| p.exists()));

    let (code, out, err) = cli(
        &["prune", "--yes", "--json", "--include-saved"],
        &s.home,
        &data,
    );
    assert_eq!(code, 0, "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["dry_run"], false);
    // Two orphans, the saved disk and its .retained marker.
    assert_eq!(v["done"].as_array().unwrap().len(), 4, "{v}");
    assert_eq!(v["failed"].as_array().unwrap().len(), 0);
    assert!(v["estimated_bytes"].as_u64().unwrap() > 0);
    assert!(v["freed_bytes"].is_u64());
    assert!(s.orphans.iter().all(|p| !p.exists()));
    assert!(!s.saved.exists());
    assert!(s.live.exists(), "a live sandbox's disk was deleted");

    // Again: nothing left to do (exit 0).
    let (code, out, _) = cli(&["prune", "--yes", "--json"], &s.home, &data);
    assert_eq!(code, 0, "{out}");

    let (code, out, _) = cli(&["history", "--json"], &s.home, &data);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["runs"].as_array().unwrap().len(), 1, "{v}");
    assert_eq!(v["runs"][0]["done"], 4);
    assert_eq!(v["runs"][0]["origin"]["command"], "prune", "{v}");
    let (code, out, _) = cli(&["history"], &s.home, &data);
    assert_eq!(code, 0);
    assert!(out.contains("4 done"), "{out}");

    let (code, _, _) = cli(&["prune", "--bogus"], &s.home, &data);
    assert_eq!(code, 2);
}

#[test]
fn cli_plan_then_apply_refuses_a_tampered_plan() {
    let s = celesto_scratch();
    let data = s.outside.join("data");
    let pf = s.outside.join("plan.json");
    let (code, out, err) = cli(&["plan", "--out", pf.to_str().unwrap()], &s.home, &data);
    assert_eq!(code, 0, "{out}{err}");
    let text = fs::read_to_string(&pf).unwrap();
    let tampered = s.outside.join("tampered.json");
    fs::write(&tampered, text.replace("gone1.qcow2", "live1.qcow2")).unwrap();
    let (code, _, err) = cli(
        &["apply", tampered.to_str().unwrap(), "--yes"],
        &s.home,
        &data,
    );
    assert_eq!(code, 1);
    assert!(err.contains("changed after it was made"), "{err}");
    assert!(s.live.exists());
    let (code, _, err) = cli(&["apply", pf.to_str().unwrap(), "--yes"], &s.outside, &data);
    assert_eq!(code, 1, "another HOME must be refused");
    assert!(err.contains("HOME"), "{err}");
    let (code, out, err) = cli(&["apply", pf.to_str().unwrap(), "--yes"], &s.home, &data);
    assert_eq!(code, 0, "{out}{err}");
    assert!(s.orphans.iter().all(|p| !p.exists()));
    assert!(s.live.exists());
    assert!(
        s.saved.exists(),
        "an opt-in disk was deleted without being asked for"
    );
}
