//! One regression test per upstream hazard that applies to Smolsweep and had no test named after
//! it yet: Celesto SmolVM's B10, B14, B18 and B21 (`celesto-smolvm.md` §8), and smol-machines
//! smolvm's hazards 1, 4, 6, 10, 11, 14, 15, 16, 23 and 25 (`smol-machines-smolvm.md` §8).
//!
//! Every test lays out its own scratch HOME, and signals only processes it spawned itself (the
//! stand-in VMM of the fixtures crate, killed by its own pid when its guard drops). No test runs
//! a real product CLI: where a CLI matters, a logging stand-in on a scratch `PATH` proves whether
//! it was called and with what.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, SystemTime};

use serde_json::json;
use smolsweep::env::EnvSnapshot;
use smolsweep::exec::RealRunner;
use smolsweep::exec::{self, ActionRunner, Confirmed, How, Outcome, Road, UnwiredRunner};
use smolsweep::exec::{ProcessRef, ReapOptions};
use smolsweep::model::{
    Finding, OptInClass, OwnerRecord, Platform, Product, ScanReport, Scope, Verdict, VmProcess,
};
use smolsweep::plan::{Action, Plan, Selection};
use smolsweep::scan::{scan, ScanOptions};
use smolsweep_fixtures::smolvm::{DiskSet, Smolvm};
use smolsweep_fixtures::vmm::{self, Shape};
use smolsweep_fixtures::{age_tree, hold_flock, Home, Layout, OLD};

// ---------------------------------------------------------------------------------------------
// Helpers.

const BASE_PATH: &str = "/usr/bin:/bin";

fn scratch() -> tempfile::TempDir {
    tempfile::tempdir().expect("tempdir")
}

fn linux_home(dir: &Path) -> Home {
    Home::new(dir, Layout::Linux).expect("scratch HOME")
}

/// The environment a scan of `home` sees: its HOME, its socket dir, and `path` as PATH.
fn env_of(home: &Home, path: &str) -> EnvSnapshot {
    let mut vars = home.env_vars();
    vars.push(("PATH".into(), path.into()));
    let mut env = EnvSnapshot::from_pairs(home.root.clone(), vars);
    env.euid = rustix::process::geteuid().as_raw();
    LAST_ENV.with(|l| *l.borrow_mut() = Some(env.clone()));
    env
}

thread_local! {
    /// The environment of the last scan: the executor re-judges in the same one.
    static LAST_ENV: std::cell::RefCell<Option<EnvSnapshot>> = const { std::cell::RefCell::new(None) };
}

fn scan_home(home: &Home) -> ScanReport {
    scan(&ScanOptions {
        env: env_of(home, BASE_PATH),
        platform: Platform::Linux,
        age_guard: Duration::from_secs(120),
        now: SystemTime::now(),
    })
}

/// The finding at exactly `p` (panics with the list of findings when there is none).
fn finding<'a>(r: &'a ScanReport, p: &Path) -> &'a Finding {
    r.findings.iter().find(|f| f.path == p).unwrap_or_else(|| {
        let all: Vec<String> = r
            .findings
            .iter()
            .map(|f| format!("{} [{}]", f.path.display(), f.kind))
            .collect();
        panic!(
            "no finding for {}; findings:\n{}",
            p.display(),
            all.join("\n")
        )
    })
}

fn has_finding(r: &ScanReport, p: &Path) -> bool {
    r.findings.iter().any(|f| f.path == p)
}

/// Kind, verdict and owner of the finding at `p`, for one-line assertions.
fn judged<'a>(r: &'a ScanReport, p: &Path) -> (&'a str, Verdict, Option<&'a str>) {
    let f = finding(r, p);
    (f.kind.as_str(), f.verdict, f.owner.as_deref())
}

/// The finding at `p` has this kind, verdict and owner (the reason is shown when not).
fn expect_judged(r: &ScanReport, p: &Path, want: (&str, Verdict, Option<&str>)) {
    assert_eq!(
        judged(r, p),
        want,
        "{}: {}",
        p.display(),
        finding(r, p).reason
    );
}

fn process(r: &ScanReport, pid: u32) -> &VmProcess {
    r.processes
        .iter()
        .find(|p| p.pid == pid)
        .unwrap_or_else(|| panic!("pid {pid} is not among the scan's VM processes"))
}

fn planned(plan: &Plan, p: &Path) -> bool {
    plan.actions
        .iter()
        .any(|a| matches!(&a.action, Action::DeletePath { path, .. } if path == p))
}

fn every_class() -> BTreeSet<OptInClass> {
    [
        OptInClass::SavedDisks,
        OptInClass::Caches,
        OptInClass::Residue,
    ]
    .into_iter()
    .collect()
}

fn only_ids(ids: &[&Finding]) -> Selection {
    Selection {
        ids: ids.iter().map(|f| f.id.clone()).collect(),
        ..Default::default()
    }
}

/// Execute as confirmed, each action re-judged by the real judge in the scan's environment.
fn execute_with(plan: &Plan, runner: &dyn ActionRunner) -> exec::ExecReport {
    let env = LAST_ENV
        .with(|l| l.borrow().clone())
        .expect("scanned first");
    let mut judge = exec::Rejudge::new(ScanOptions {
        env,
        platform: Platform::Linux,
        age_guard: Duration::from_secs(120),
        now: SystemTime::now(),
    });
    let confirmed = Confirmed::of(plan, How::YesFlag);
    crate::run_given(plan, Some(confirmed), Road::given(&mut judge, runner)).expect("the plan runs")
}

/// Path deletions only (no machine, process or mount action is wired in).
fn execute(plan: &Plan) -> exec::ExecReport {
    execute_with(plan, &UnwiredRunner)
}

/// No path deletion is planned at or below any of `dirs`.
fn assert_nothing_planned_under(plan: &Plan, dirs: &[&PathBuf]) {
    for d in dirs {
        assert!(
            !plan.actions.iter().any(|a| matches!(&a.action,
                Action::DeletePath { path, .. } if path.starts_with(d))),
            "{} planned",
            d.display()
        );
    }
}

/// Every planned path deletion lies inside `scratch` (checked before anything is executed: the
/// scan also looks at system roots such as `/var/lib/celesto`).
fn assert_deletes_only_inside(plan: &Plan, scratch: &Path) {
    for a in &plan.actions {
        if let Action::DeletePath { path, .. } = &a.action {
            assert!(
                path.starts_with(scratch),
                "planned a deletion outside the scratch dir: {}",
                path.display()
            );
        }
    }
}

/// What a write, create, delete or rename below `root` changes: (file type, inode, size, mtime,
/// mtime ns, ctime, ctime ns) of every path. Nothing is read, so the 20 GiB sparse disks of the
/// fixtures cost nothing.
type Stamp = (u32, u64, u64, i64, i64, i64, i64);

fn tree_state(root: &Path) -> BTreeMap<PathBuf, Stamp> {
    walkdir::WalkDir::new(root)
        .follow_links(false)
        .into_iter()
        .map(|e| {
            let e = e.expect("walk the scratch tree");
            let m = e.path().symlink_metadata().expect("lstat");
            (
                e.path().to_path_buf(),
                (
                    m.mode() & 0o170000, // S_IFMT (libc's is u16 on macOS)
                    m.ino(),
                    m.size(),
                    m.mtime(),
                    m.mtime_nsec(),
                    m.ctime(),
                    m.ctime_nsec(),
                ),
            )
        })
        .collect()
}

fn tree_diff(before: &BTreeMap<PathBuf, Stamp>, after: &BTreeMap<PathBuf, Stamp>) -> Vec<String> {
    let mut out = Vec::new();
    for (p, b) in before {
        match after.get(p) {
            None => out.push(format!("vanished: {}", p.display())),
            Some(a) if a != b => out.push(format!("changed: {} {b:?} -> {a:?}", p.display())),
            _ => {}
        }
    }
    for p in after.keys().filter(|p| !before.contains_key(*p)) {
        out.push(format!("appeared: {}", p.display()));
    }
    out
}

/// Logging stand-ins for product CLIs in `<dir>/bin`: each appends `<name> <args>` to
/// `<dir>/cli.log` (a `machine delete --name N` call answers as smolvm 1.32.2 does).
fn fake_clis(dir: &Path, names: &[&str]) -> (PathBuf, PathBuf) {
    let bin = dir.join("bin");
    let log = dir.join("cli.log");
    std::fs::create_dir_all(&bin).unwrap();
    let script = format!(
        "#!/bin/sh\nprintf '%s %s\\n' \"${{0##*/}}\" \"$*\" >> '{}'\n\
         if [ \"$1 $2\" = 'machine delete' ]; then echo \"Deleted machine: $4\"; fi\nexit 0\n",
        log.display()
    );
    for n in names {
        let p = bin.join(n);
        std::fs::write(&p, &script).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    (bin, log)
}

fn cli_calls(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .map(|s| s.lines().map(str::to_string).collect())
        .unwrap_or_default()
}

/// The `smolsweep` binary with a clean environment: only HOME, the socket dir and PATH.
fn run_smolsweep(home: &Home, path: &str, args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_smolsweep"))
        .args(args)
        .env_clear()
        .envs(home.env_vars())
        .env("PATH", path)
        .output()
        .expect("run smolsweep");
    assert!(
        out.status.success(),
        "smolsweep {args:?}: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    out
}

const PRUNE_DRY_RUN_EVERYTHING: &[&str] = &[
    "prune",
    "--dry-run",
    "--include-saved",
    "--include-caches",
    "--include-residue",
    "--json",
];

fn standin() -> PathBuf {
    vmm::standin_bin(Path::new(env!("CARGO_TARGET_TMPDIR")))
}

/// `/proc/<pid>/stat` state letter, `None` once the pid is gone.
fn proc_state(pid: u32) -> Option<char> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    s[s.rfind(')')? + 2..].chars().next()
}

fn raw(storage: u64, overlay: u64) -> DiskSet {
    DiskSet::Raw { storage, overlay }
}

// ---------------------------------------------------------------------------------------------
// Celesto SmolVM (celesto-smolvm.md §8).

/// B10: "orphaned companions are invisible: `ghost.ext4.retained` or `x.qcow2.backing-*`
/// without their disk are never reported by prune or delete."
#[test]
fn b10_companions_whose_disk_is_gone_are_found_and_reclaimed() {
    let t = scratch();
    let home = linux_home(t.path());
    let data = home.celesto_data_dir().unwrap();
    let marker = data.retained("ghost.ext4").unwrap();
    let backing = data
        .companion("ghost2.qcow2", ".backing-5e5e.qcow2", 192 << 10)
        .unwrap();
    // The same situation for a sandbox that still exists: its companion is kept.
    data.row("kept1", "stopped", "firecracker", None).unwrap();
    let kept = data
        .companion("kept1.ext4", ".backup-51e0", 64 << 10)
        .unwrap();
    age_tree(&home.root, OLD).unwrap();
    // Written just now (a create in progress writes files before its row): kept for now.
    let fresh = data
        .companion("fresh1.qcow2", ".backing-9a9a.qcow2", 64 << 10)
        .unwrap();

    let r = scan_home(&home);
    expect_judged(
        &r,
        &fresh,
        (
            "celesto.young_companion",
            Verdict::Protected,
            Some("fresh1"),
        ),
    );
    expect_judged(
        &r,
        &marker,
        (
            "celesto.orphan_companion",
            Verdict::Reclaimable,
            Some("ghost"),
        ),
    );
    expect_judged(
        &r,
        &backing,
        (
            "celesto.orphan_companion",
            Verdict::Reclaimable,
            Some("ghost2"),
        ),
    );
    expect_judged(
        &r,
        &kept,
        (
            "celesto.orphan_companion",
            Verdict::Protected,
            Some("kept1"),
        ),
    );
    assert!(finding(&r, &backing).allocated_bytes >= 192 << 10);

    // The default prune offers both; the companion of a live sandbox is never planned.
    let all = Plan::from_scan(&r, &Selection::reclaimable());
    assert!(
        planned(&all, &marker) && planned(&all, &backing),
        "{all:#?}"
    );
    assert!(!planned(&all, &kept));

    let plan = Plan::from_scan(
        &r,
        &only_ids(&[finding(&r, &marker), finding(&r, &backing)]),
    );
    let rep = execute(&plan);
    assert_eq!(rep.done().count(), 2, "{rep:#?}");
    assert!(!marker.exists() && !backing.exists());
    assert!(kept.exists());
}

/// B14: "dry run is not read-only: it creates the data directory, the DB, `disks/` and
/// `snapshots/`, runs `reconcile()` (DB writes), and runs `qemu-img info` on every candidate
/// disk."
#[test]
fn b14_scan_and_prune_dry_run_create_write_and_run_nothing() {
    let t = scratch();
    // A HOME with no Celesto state at all (upstream's dry run would create the data dir, the DB,
    // disks/ and snapshots/ there).
    std::fs::create_dir(t.path().join("bare")).unwrap();
    let bare = linux_home(&t.path().join("bare"));
    // A HOME whose data dir has a row reconcile() would rewrite (recorded running, pid that
    // cannot exist), an orphan qcow2 disk (upstream runs `qemu-img info` on it) and no snapshots/.
    std::fs::create_dir(t.path().join("used")).unwrap();
    let used = linux_home(&t.path().join("used"));
    let data = used.celesto_data_dir().unwrap();
    data.row(
        "stale-run",
        "running",
        "firecracker",
        Some(smolsweep_fixtures::IMPOSSIBLE_PID),
    )
    .unwrap();
    let orphan = data.disk("orph1", "qcow2", 1 << 20, 1 << 16).unwrap();
    std::fs::remove_dir(data.dir.join("snapshots")).unwrap();
    let (bin, log) = fake_clis(t.path(), &["celesto", "smolvm", "qemu-img", "ps"]);
    age_tree(t.path(), OLD).unwrap();
    let path = format!("{}:{BASE_PATH}", bin.display());

    let before = tree_state(t.path());
    for home in [&bare, &used] {
        let scanned = run_smolsweep(home, &path, &["scan", "--json"]);
        let report: ScanReport = serde_json::from_slice(&scanned.stdout).unwrap();
        let dry = run_smolsweep(home, &path, PRUNE_DRY_RUN_EVERYTHING);
        let v: serde_json::Value = serde_json::from_slice(&dry.stdout).unwrap();
        assert_eq!(v["dry_run"], true, "{v}");
        assert!(v["done"].as_array().unwrap().is_empty(), "{v}");
        if home.root == used.root {
            // The dry run did look at the state: the orphan disk is what it would delete.
            assert_eq!(
                judged(&report, &orphan),
                ("celesto.orphan_disk", Verdict::Reclaimable, Some("orph1"))
            );
            let would = v["would_do"].to_string();
            assert!(would.contains(orphan.to_str().unwrap()), "{v}");
        }
    }
    let diffs = tree_diff(&before, &tree_state(t.path()));
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
    assert!(!bare.path(".local/state/celesto").exists());
    assert!(!bare.path(".local/state/smolvm").exists());
    assert!(!data.dir.join("snapshots").exists());
    assert_eq!(
        cli_calls(&log),
        Vec::<String>::new(),
        "no CLI, ps or qemu-img"
    );
}

/// B18: "the log sweep picks up any `*.log` in the data directory (`.hidden.log`,
/// `Weird.Name.log`) with an unvalidated `vm_id`."
#[test]
fn b18_stray_log_names_are_unknown_and_never_deleted() {
    let t = scratch();
    let home = linux_home(t.path());
    let data = home.celesto_data_dir().unwrap();
    let hidden = data.log_file(".hidden.log", 100).unwrap();
    let weird = data.log_file("Weird.Name.log", 100).unwrap();
    let orphan = data.log("orph1", 500).unwrap();
    age_tree(&home.root, OLD).unwrap();

    let r = scan_home(&home);
    for p in [&hidden, &weird] {
        expect_judged(&r, p, ("celesto.unrecognised_log", Verdict::Unknown, None));
    }
    assert_eq!(
        judged(&r, &orphan),
        ("celesto.orphan_log", Verdict::Reclaimable, Some("orph1"))
    );

    // Even asked for by id, with everything else, the stray names are never planned.
    let mut sel = only_ids(&[
        finding(&r, &hidden),
        finding(&r, &weird),
        finding(&r, &orphan),
    ]);
    sel.all_reclaimable = true;
    sel.include = every_class();
    let plan = Plan::from_scan(&r, &sel);
    assert!(planned(&plan, &orphan));
    for p in [&hidden, &weird] {
        assert!(!planned(&plan, p));
        let id = &finding(&r, p).id;
        let why = &plan
            .skipped_at_plan
            .iter()
            .find(|s| &s.id == id)
            .unwrap_or_else(|| panic!("{} not reported as skipped", p.display()))
            .why;
        assert!(why.contains("never deleted"), "{why}");
    }
    execute(&plan);
    assert!(!orphan.exists());
    assert!(hidden.exists() && weird.exists());
}

/// B21: "state that is never reclaimed: `/tmp/libkrun-<id>-<hex>.json`, `/tmp/vsock-<id>.sock`;
/// `locks/**`; `ssh-known-hosts/<id>.known_hosts`, `~/.celesto/forwards/<id>.json`; orphan
/// `firmware/<id>/`; `browser-sessions/<id>/`; snapshots of deleted VMs."
#[test]
fn b21_residue_upstream_never_reclaims_is_offered_and_kept_for_live_sandboxes() {
    let t = scratch();
    let home = linux_home(t.path());
    let data = home.celesto_data_dir().unwrap();
    let socks = home.sockets();
    let ch = home.celesto_home().unwrap();
    data.row("live1", "stopped", "firecracker", None).unwrap();

    let reclaimable: Vec<(PathBuf, &str, &str)> = [
        (
            socks.libkrun_config("gone1").unwrap(),
            "celesto.libkrun_config",
        ),
        (socks.vsock("gone1").unwrap(), "celesto.socket_residue"),
        (
            data.lock("gone1.create.lock").unwrap(),
            "celesto.lock_residue",
        ),
        (
            data.lock("gone1.snapshot.lock").unwrap(),
            "celesto.lock_residue",
        ),
        (
            data.known_hosts("gone1").unwrap(),
            "celesto.known_hosts_residue",
        ),
    ]
    .into_iter()
    .chain(
        ch.forward("gone1")
            .unwrap()
            .into_iter()
            .map(|p| (p, "celesto.forward_residue")),
    )
    .map(|(p, k)| (p, k, "gone1"))
    .collect();
    let resource_lock = data.lock("resources/ssh-2201.lock").unwrap();
    let residue: Vec<(PathBuf, &str, &str)> = vec![
        (
            data.firmware("gone1").unwrap(),
            "celesto.firmware_residue",
            "gone1",
        ),
        (
            data.browser_dir("gone-sess").unwrap(),
            "celesto.browser_session_residue",
            "gone-sess",
        ),
        (
            data.snapshot("snap-old", "gone1").unwrap(),
            "celesto.snapshot",
            "gone1",
        ),
    ];
    // The same kinds of state of a sandbox that exists.
    let mut live: Vec<PathBuf> = vec![
        socks.libkrun_config("live1").unwrap(),
        socks.vsock("live1").unwrap(),
        data.lock("live1.create.lock").unwrap(),
        data.known_hosts("live1").unwrap(),
        data.firmware("live1").unwrap(),
        data.snapshot("snap-live", "live1").unwrap(),
    ];
    live.extend(ch.forward("live1").unwrap());
    for root in [&home.root, &home.socket_dir] {
        age_tree(root, OLD).unwrap();
    }

    let r = scan_home(&home);
    for (p, kind, owner) in &reclaimable {
        assert_eq!(
            judged(&r, p),
            (*kind, Verdict::Reclaimable, Some(*owner)),
            "{}: {}",
            p.display(),
            finding(&r, p).reason
        );
    }
    assert_eq!(
        judged(&r, &resource_lock),
        ("celesto.lock_residue", Verdict::Reclaimable, None)
    );
    for (p, kind, owner) in &residue {
        let f = finding(&r, p);
        assert_eq!(
            (judged(&r, p), f.opt_in_class),
            (
                (*kind, Verdict::OptIn, Some(*owner)),
                Some(OptInClass::Residue)
            ),
            "{}: {}",
            p.display(),
            f.reason
        );
    }
    for p in &live {
        let f = finding(&r, p);
        assert_eq!(
            f.verdict,
            Verdict::Protected,
            "{}: {}",
            p.display(),
            f.reason
        );
    }

    // A default prune takes the reclaimable residue only; residue that may hold user data
    // (firmware NVRAM, snapshots, browser artifacts) needs --include-residue.
    let default = Plan::from_scan(&r, &Selection::reclaimable());
    let with_residue = Plan::from_scan(
        &r,
        &Selection {
            include: [OptInClass::Residue].into_iter().collect(),
            ..Selection::reclaimable()
        },
    );
    for (p, _, _) in &reclaimable {
        assert!(planned(&default, p), "{}", p.display());
    }
    assert!(planned(&default, &resource_lock));
    for (p, _, _) in &residue {
        assert!(!planned(&default, p), "{}", p.display());
        assert!(planned(&with_residue, p), "{}", p.display());
    }
    for p in &live {
        assert!(!planned(&with_residue, p), "{}", p.display());
    }
}

// ---------------------------------------------------------------------------------------------
// smol-machines smolvm (smol-machines-smolvm.md §8).

/// Hazard 1: "`machine ls` (and every `machine` subcommand) deletes data: the orphaned-ephemeral
/// sweep removes the record and the directory of any ephemeral record whose PID fails
/// `kill(pid, 0)` or that has no PID."
#[test]
fn hazard_1_scan_and_dry_run_never_run_smolvm_and_change_no_machine_dir() {
    let t = scratch();
    let home = linux_home(t.path());
    let sm = home.smolvm().unwrap();
    // What `machine ls` would delete: a dead ephemeral machine and a booting one (no PID yet).
    sm.record(
        "eph1",
        json!({"state": "running", "pid": smolsweep_fixtures::IMPOSSIBLE_PID_SMOLVM,
               "pid_start_time": 987_654u64, "ephemeral": true}),
    )
    .unwrap();
    let dead_eph = sm.machine_dir("eph1", raw(1 << 20, 256 << 10)).unwrap();
    sm.record("eph-boot", json!({"ephemeral": true})).unwrap();
    let booting = sm.machine_dir("eph-boot", raw(1 << 16, 1 << 16)).unwrap();
    let dangling = sm.dangling_dir("vm-1a68e494").unwrap();
    let empty = sm.empty_dir("0123456789abcdef").unwrap();
    let (bin, log) = fake_clis(t.path(), &["smolvm", "smol", "smolvm-bin"]);
    age_tree(t.path(), OLD).unwrap();
    let path = format!("{}:{BASE_PATH}", bin.display());

    let before = tree_state(t.path());
    let out = run_smolsweep(&home, &path, &["scan", "--json"]);
    run_smolsweep(&home, &path, PRUNE_DRY_RUN_EVERYTHING);
    let r: ScanReport = serde_json::from_slice(&out.stdout).unwrap();
    // The scan saw all of it, and judged it without asking smolvm.
    assert_eq!(
        judged(&r, &dead_eph),
        (
            "smolvm.dead_ephemeral_dir",
            Verdict::Reclaimable,
            Some("eph1")
        )
    );
    assert_eq!(
        judged(&r, &booting),
        ("smolvm.machine_dir", Verdict::Protected, Some("eph-boot"))
    );
    assert_eq!(judged(&r, &dangling).1, Verdict::Reclaimable);
    assert_eq!(judged(&r, &empty).1, Verdict::Reclaimable);
    for name in ["eph1", "eph-boot"] {
        assert!(r.machines.iter().any(|m| m.name == name), "{name} listed");
    }
    let diffs = tree_diff(&before, &tree_state(t.path()));
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
    assert_eq!(
        cli_calls(&log),
        Vec::<String>::new(),
        "smolvm was never run"
    );
}

/// Hazard 4: "`serve start` reclaim has no liveness check (no process, `vm.lock` or reservation
/// check), so it can race a concurrent create/run."
#[test]
fn hazard_4_dangling_dir_that_a_process_uses_or_that_just_changed_is_protected() {
    let t = scratch();
    let home = linux_home(t.path());
    let sm = home.smolvm().unwrap();
    sm.record("other", json!({})).unwrap();
    let booting = sm.dangling_dir("vm-boot1").unwrap();
    let locked = sm.dangling_dir("vm-cli1").unwrap();
    let vm_lock = smolsweep_fixtures::write(&locked.join("vm.lock"), b"").unwrap();
    let idle = sm.dangling_dir("vm-idle1").unwrap();
    age_tree(t.path(), OLD).unwrap();
    let young = sm.dangling_dir("vm-young1").unwrap();
    // A VMM booting from one dir; a launching CLI (not a VMM) holding the other's vm.lock.
    let vmm = vmm::boot_vm_holding(&standin(), &home.root, &booting, None);
    let cli = vmm::spawn(
        &standin(),
        &Shape {
            argv: ["smolvm", "machine", "run", "--name", "vm-cli1"]
                .map(String::from)
                .to_vec(),
            open: Some(&vm_lock),
            home: Some(&home.root),
            ..Default::default()
        },
    );

    let r = scan_home(&home);
    for (dir, pid) in [(&booting, vmm.pid()), (&locked, cli.pid())] {
        let f = finding(&r, dir);
        assert_eq!(
            (f.kind.as_str(), f.verdict),
            ("smolvm.referenced_dir", Verdict::Protected),
            "{}",
            f.reason
        );
        assert!(f.reason.contains(&pid.to_string()), "{}", f.reason);
    }
    assert_eq!(
        judged(&r, &young),
        ("smolvm.young_dir", Verdict::Protected, Some("vm-young1"))
    );
    assert_eq!(
        judged(&r, &idle),
        (
            "smolvm.dangling_dir",
            Verdict::Reclaimable,
            Some("vm-idle1")
        )
    );
    let plan = Plan::from_scan(&r, &Selection::reclaimable());
    assert!(planned(&plan, &idle));
    assert_nothing_planned_under(&plan, &[&booting, &locked, &young]);
}

/// Hazard 4 (the `vm.lock` part): a dangling directory whose `vm.lock` is locked right now is
/// protected even when the holder's open files do not show it (here the holder opened the lock
/// through a hard link elsewhere, as a process of another user would be unreadable).
#[test]
fn hazard_4_dangling_dir_whose_vm_lock_is_held_is_protected_even_when_the_holder_is_unseen() {
    let t = scratch();
    let home = linux_home(t.path());
    let sm = home.smolvm().unwrap();
    sm.record("other", json!({})).unwrap();
    let locked = sm.dangling_dir("vm-lock1").unwrap();
    let vm_lock = smolsweep_fixtures::write(&locked.join("vm.lock"), b"").unwrap();
    let free = sm.dangling_dir("vm-free1").unwrap();
    smolsweep_fixtures::write(&free.join("vm.lock"), b"").unwrap();
    age_tree(t.path(), OLD).unwrap();
    let elsewhere = t.path().join("elsewhere.lock");
    std::fs::hard_link(&vm_lock, &elsewhere).unwrap();
    let _held = hold_flock(&elsewhere).unwrap();

    let r = scan_home(&home);
    let f = finding(&r, &locked);
    assert_eq!(
        (f.kind.as_str(), f.verdict),
        ("smolvm.referenced_dir", Verdict::Protected),
        "{}",
        f.reason
    );
    assert!(f.reason.contains("vm.lock is held"), "{}", f.reason);
    assert_eq!(finding(&r, &free).verdict, Verdict::Reclaimable);
}

/// Hazard 4 (the reservation part): "`serve start` reclaim has no liveness check (no process,
/// `vm.lock` or reservation check), so it can race a concurrent create/run."
#[test]
fn hazard_4_dangling_dir_of_a_name_with_a_live_create_reservation_is_protected() {
    let t = scratch();
    let home = linux_home(t.path());
    let sm = home.smolvm().unwrap();
    sm.record("other", json!({})).unwrap();
    let creating = sm.dangling_dir("vm-creating1").unwrap();
    // The reservation's owner is alive: this test process.
    sm.reservation("vm-creating1", std::process::id() as i64)
        .unwrap();
    // A stale reservation: its owner is gone, so it does not protect.
    let stale = sm.dangling_dir("vm-stale1").unwrap();
    sm.reservation("vm-stale1", smolsweep_fixtures::IMPOSSIBLE_PID_SMOLVM)
        .unwrap();
    let later = sm.dangling_dir("vm-later1").unwrap();
    age_tree(t.path(), OLD).unwrap();
    let r = scan_home(&home);
    let f = finding(&r, &creating);
    assert_eq!(f.verdict, Verdict::Protected, "{} ({})", f.reason, f.kind);
    assert_eq!(f.kind, "smolvm.reserved_dir");
    assert!(f.reason.contains("being created"), "{}", f.reason);
    assert_eq!(finding(&r, &stale).verdict, Verdict::Reclaimable);

    // A reservation made after the plan keeps the directory at deletion time.
    let plan = Plan::from_scan(&r, &Selection::reclaimable());
    assert_deletes_only_inside(&plan, t.path());
    assert!(planned(&plan, &later) && planned(&plan, &stale));
    sm.reservation("vm-later1", std::process::id() as i64)
        .unwrap();
    let report = execute(&plan);
    assert!(later.exists(), "a directory being created was deleted");
    let rec = report
        .records
        .iter()
        .find(|x| matches!(&x.action, Action::DeletePath { path, .. } if path == &later))
        .unwrap();
    match &rec.outcome {
        Outcome::Skipped { why, .. } => assert!(why.contains("being created"), "{why}"),
        o => panic!("{o:?}"),
    }
    assert!(!stale.exists());
}

/// Hazard 6: "`vm.lock` is not a running probe: held by the launching CLI/serve, released when
/// a detached CLI exits."
#[test]
fn hazard_6_liveness_comes_from_pid_and_start_time_never_from_vm_lock() {
    let t = scratch();
    let home = linux_home(t.path());
    let sm = home.smolvm().unwrap();
    // Running, detached: its CLI exited, so nobody holds its vm.lock.
    let live_dir = sm.machine_dir("live1", raw(1 << 16, 1 << 16)).unwrap();
    let vmm = vmm::boot_vm_holding(&standin(), &home.root, &live_dir, None);
    let st = ProcessRef::current(vmm.pid())
        .expect("the stand-in runs")
        .start_time;
    sm.record(
        "live1",
        json!({"state": "running", "pid": vmm.pid(), "pid_start_time": st}),
    )
    .unwrap();
    // Recorded running, process gone, but its vm.lock held (as serve holds it for a registry
    // entry).
    let dead_dir = sm.machine_dir("dead1", raw(1 << 16, 1 << 16)).unwrap();
    sm.record(
        "dead1",
        json!({"state": "running", "pid": smolsweep_fixtures::IMPOSSIBLE_PID_SMOLVM,
               "pid_start_time": 42u64}),
    )
    .unwrap();
    // A dangling dir whose vm.lock nobody holds.
    let dangling = sm.dangling_dir("vm-gone1").unwrap();
    smolsweep_fixtures::write(&dangling.join("vm.lock"), b"").unwrap();
    age_tree(t.path(), OLD).unwrap();
    let _held = hold_flock(&dead_dir.join("vm.lock")).unwrap();
    let held = |p: &Path| smolsweep_fixtures::flock_held(p);
    assert!(!held(&live_dir.join("vm.lock")) && held(&dead_dir.join("vm.lock")));
    assert!(!held(&dangling.join("vm.lock")));

    let r = scan_home(&home);
    let machine = |n: &str| r.machines.iter().find(|m| m.name == n).unwrap();
    let live = machine("live1");
    assert!(live.alive, "{live:?}");
    assert_eq!(live.effective_state, "running");
    assert_eq!(
        judged(&r, &live_dir),
        ("smolvm.machine_dir", Verdict::Protected, Some("live1"))
    );
    let dead = machine("dead1");
    assert!(!dead.alive, "{dead:?}");
    assert!(dead.effective_state.starts_with("stale"), "{dead:?}");
    assert_eq!(
        judged(&r, &dangling),
        (
            "smolvm.dangling_dir",
            Verdict::Reclaimable,
            Some("vm-gone1")
        )
    );
    let p = process(&r, vmm.pid());
    assert_eq!((p.owner.as_deref(), p.orphan), (Some("live1"), false));
}

/// Hazard 10: "Ctrl-C and killed wrappers leave VMs running: after SIGINT to the CLI the VM's
/// processes were alive, `machine list` said `No machines found`, and no VM cache dir existed."
#[test]
fn hazard_10_vm_left_running_without_record_or_dir_is_an_orphan_and_is_reaped() {
    let t = scratch();
    let home = linux_home(t.path());
    let sm = home.smolvm().unwrap();
    sm.record("other", json!({})).unwrap();
    let never_made = sm.vms_dir().join(Smolvm::hash("vm-ctrlc1"));
    let vmm = vmm::boot_vm_holding(&standin(), &home.root, &never_made, None);
    let pid = vmm.pid();

    let r = scan_home(&home);
    assert!(r.machines.iter().all(|m| m.name == "other"));
    let p = process(&r, pid);
    assert_eq!(
        (p.product, p.shape.as_str(), p.orphan, p.scope),
        (Product::Smolvm, "smolvm.boot_vm", true, Scope::ThisHome),
        "{}",
        p.reason
    );
    assert_eq!(r.totals.orphan_process_count, 1);

    let plan = Plan::from_scan(
        &r,
        &Selection {
            reap_orphans: true,
            ..Default::default()
        },
    );
    let signals: Vec<(u32, u64)> = plan
        .actions
        .iter()
        .filter_map(|a| match &a.action {
            Action::SignalProcess {
                pid, start_time, ..
            } => Some((*pid, *start_time)),
            _ => None,
        })
        .collect();
    assert_eq!(signals, vec![(pid, p.start_time)], "{plan:#?}");
    assert_deletes_only_inside(&plan, t.path());
    let runner = RealRunner {
        reap: ReapOptions {
            term_grace: Duration::from_secs(2),
            kill_grace: Duration::from_secs(5),
        },
        ..RealRunner::new(env_of(&home, BASE_PATH), Platform::Linux)
    };
    let rep = execute_with(&plan, &runner);
    let out = &rep.records[0].outcome;
    assert!(
        matches!(out, Outcome::Done { .. }),
        "reaping the orphan: {out:?}"
    );
    // Dead: a zombie of this test (reaped when its guard drops) or gone.
    assert!(
        matches!(proc_state(pid), None | Some('Z') | Some('X')),
        "{:?}",
        proc_state(pid)
    );
}

/// Hazard 11: "Deleted-but-open disks (#787): storage deleted under a live `_boot-vm`; 420 GiB
/// held on macOS v1.6.13."
#[test]
fn hazard_11_bytes_a_vmm_holds_in_deleted_files_are_reported() {
    let t = scratch();
    let home = linux_home(t.path());
    let sm = home.smolvm().unwrap();
    sm.record("other", json!({})).unwrap();
    let dir = sm.vms_dir().join(Smolvm::hash("vm-787"));
    let storage = dir.join("storage.raw");
    std::fs::create_dir_all(&dir).unwrap();
    let len = 2usize << 20;
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&storage).unwrap();
        f.write_all(&smolsweep_fixtures::noise(len, 787)).unwrap();
        f.sync_all().unwrap();
    }
    let vmm = vmm::boot_vm_holding(&standin(), &home.root, &dir, Some(&storage));

    let before = scan_home(&home);
    assert_eq!(process(&before, vmm.pid()).held_deleted_bytes, 0);
    // What the buggy `delete` did: the machine's storage removed under its live VMM.
    std::fs::remove_dir_all(&dir).unwrap();
    let r = scan_home(&home);
    let p = process(&r, vmm.pid());
    assert!(p.fds_readable, "{p:?}");
    assert!(p.orphan && p.scope == Scope::ThisHome, "{}", p.reason);
    assert!(
        p.held_deleted_bytes >= len as u64,
        "held {} of {len}",
        p.held_deleted_bytes
    );
    assert!(r.totals.held_deleted_bytes >= p.held_deleted_bytes);
}

/// Hazard 14: "`machine prune` boots a stopped machine."
#[test]
fn hazard_14_reclaiming_everything_never_runs_machine_prune_nor_touches_a_stopped_machine() {
    let t = scratch();
    let home = linux_home(t.path());
    let sm = home.smolvm().unwrap();
    let stopped = sm.machine_dir("stopped1", raw(1 << 20, 256 << 10)).unwrap();
    sm.record(
        "stopped1",
        json!({"state": "stopped", "restart": {"user_stopped": true}}),
    )
    .unwrap();
    sm.record(
        "eph1",
        json!({"state": "running", "pid": smolsweep_fixtures::IMPOSSIBLE_PID_SMOLVM,
               "pid_start_time": 987_654u64, "ephemeral": true}),
    )
    .unwrap();
    sm.machine_dir("eph1", raw(1 << 16, 1 << 16)).unwrap();
    let dangling = sm.dangling_dir("vm-1a68e494").unwrap();
    sm.restore_checkpoints().unwrap();
    let (bin, log) = fake_clis(t.path(), &["smolvm"]);
    age_tree(t.path(), OLD).unwrap();
    let path = format!("{}:{BASE_PATH}", bin.display());

    let stopped_before = tree_state(&stopped);
    let r = scan(&ScanOptions {
        env: env_of(&home, &path),
        platform: Platform::Linux,
        age_guard: Duration::from_secs(120),
        now: SystemTime::now(),
    });
    let plan = Plan::from_scan(
        &r,
        &Selection {
            include: every_class(),
            ..Selection::reclaimable()
        },
    );
    assert_deletes_only_inside(&plan, t.path());
    let runner = RealRunner::new(env_of(&home, &path), Platform::Linux);
    let rep = execute_with(&plan, &runner);
    assert!(rep.done().count() >= 3, "{rep:#?}");

    // The only CLI call is the delete of the dead ephemeral machine.
    let calls = cli_calls(&log);
    assert_eq!(calls, vec!["smolvm machine delete --name eph1 --force"]);
    assert!(!calls
        .iter()
        .any(|c| c.contains("prune") || c.contains("start")));
    assert!(!dangling.exists(), "the reclaim did run");
    let diffs = tree_diff(&stopped_before, &tree_state(&stopped));
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
    let rec = smolsweep_fixtures::smolvm::read_record(&sm.db, "stopped1").unwrap();
    assert_eq!(rec["state"], "stopped");
}

/// Hazard 15: "Failed boots leave state: `machine start` failure keeps the `created` record and
/// the full dir; `machine run` failure leaves a dangling dir with no record."
#[test]
fn hazard_15_failed_start_keeps_its_machine_and_failed_run_dir_is_reclaimable_after_the_age_guard()
{
    let t = scratch();
    let home = linux_home(t.path());
    let sm = home.smolvm().unwrap();
    let started = sm.machine_dir("booted", DiskSet::FailedBoot1322).unwrap();
    sm.record("booted", json!({})).unwrap();
    let run_left = sm.dangling_dir("vm-1a68e494").unwrap();
    age_tree(t.path(), OLD).unwrap();
    // A `machine run` that failed a moment ago.
    let just_failed = sm.dangling_dir("vm-2b79f5a5").unwrap();

    let r = scan_home(&home);
    assert_eq!(
        judged(&r, &started),
        ("smolvm.machine_dir", Verdict::Protected, Some("booted"))
    );
    let m = r.machines.iter().find(|m| m.name == "booted").unwrap();
    assert_eq!((m.state.as_str(), m.alive), ("created", false));
    let f = finding(&r, &run_left);
    assert_eq!(
        (f.kind.as_str(), f.verdict, f.owner.as_deref()),
        (
            "smolvm.dangling_dir",
            Verdict::Reclaimable,
            Some("vm-1a68e494")
        )
    );
    assert!(f.reason.contains("machine run"), "{}", f.reason);
    assert_eq!(
        judged(&r, &just_failed),
        ("smolvm.young_dir", Verdict::Protected, Some("vm-2b79f5a5"))
    );
    let plan = Plan::from_scan(&r, &Selection::reclaimable());
    assert!(planned(&plan, &run_left));
    assert_nothing_planned_under(&plan, &[&started, &just_failed]);
}

/// Hazard 16: "Restore caches hold guest RAM (`_restore-base`, `_restore-checkpoints`), survive
/// every command including `serve start`'s reclaim, and can reach GiBs."
#[test]
fn hazard_16_restore_caches_are_opt_in_caches_never_in_a_default_reclaim() {
    let t = scratch();
    let home = linux_home(t.path());
    let sm = home.smolvm().unwrap();
    sm.record("other", json!({})).unwrap();
    let base = sm.restore_base().unwrap();
    let checkpoints = sm.restore_checkpoints().unwrap();
    age_tree(t.path(), OLD).unwrap();

    let r = scan_home(&home);
    for p in [&base, &checkpoints] {
        let f = finding(&r, p);
        assert_eq!(
            (f.kind.as_str(), f.verdict, f.opt_in_class),
            (
                "smolvm.restore_cache",
                Verdict::OptIn,
                Some(OptInClass::Caches)
            ),
            "{}",
            f.reason
        );
        assert!(f.allocated_bytes >= 2 << 20, "{}", f.allocated_bytes);
    }
    let default = Plan::from_scan(&r, &Selection::reclaimable());
    let caches = Plan::from_scan(
        &r,
        &Selection {
            include: [OptInClass::Caches].into_iter().collect(),
            ..Selection::reclaimable()
        },
    );
    for p in [&base, &checkpoints] {
        assert!(!planned(&default, p), "{}", p.display());
        assert!(planned(&caches, p), "{}", p.display());
    }
}

/// Hazard 23: "A leftover hash dir makes a recreated machine boot a stale disk (#949, closed)."
#[test]
fn hazard_23_leftover_hash_dir_of_a_deleted_name_is_reclaimed_before_the_name_is_reused() {
    let t = scratch();
    let home = linux_home(t.path());
    let sm = home.smolvm().unwrap();
    sm.record("other", json!({})).unwrap();
    let stale = sm.dangling_dir("web").unwrap();
    assert!(stale.join("storage.raw").is_file());
    age_tree(t.path(), OLD).unwrap();

    let r = scan_home(&home);
    let f = finding(&r, &stale);
    assert_eq!(
        (f.kind.as_str(), f.verdict, f.owner.as_deref()),
        ("smolvm.dangling_dir", Verdict::Reclaimable, Some("web")),
        "{}",
        f.reason
    );
    // Re-checked against the database at deletion: a machine recreated under that name since
    // the scan keeps the directory.
    let rc = f.owner_recheck.as_ref().expect("an ownership re-check");
    assert_eq!(rc.record, OwnerRecord::MachineDirHash(Smolvm::hash("web")));
    assert!(rc.inventories.contains(&sm.db));
    let plan = Plan::from_scan(&r, &only_ids(&[f]));
    let rep = execute(&plan);
    assert!(rep.records[0].outcome.is_done(), "{rep:#?}");
    assert!(!stale.exists(), "no stale disk is left for a new 'web'");
}

/// Hazard 25: "`.fork-operation.lock` files accumulate, some never swept."
#[test]
fn hazard_25_fork_operation_locks_are_found_and_free_ones_of_gone_names_reclaimed() {
    let t = scratch();
    let home = linux_home(t.path());
    let sm = home.smolvm().unwrap();
    sm.record("demo", json!({})).unwrap();
    let ghost = sm.fork_lock("ghost").unwrap();
    let ghost_pause = sm.fork_pause_lock("ghost").unwrap();
    let demo = sm.fork_lock("demo").unwrap();
    let bookkeeping = sm.bookkeeping().unwrap();
    age_tree(t.path(), OLD).unwrap();
    let busy = hold_flock(&sm.vms_dir().join(".busy1.fork-operation.lock")).unwrap();

    let r = scan_home(&home);
    for p in [&ghost, &ghost_pause] {
        expect_judged(
            &r,
            p,
            ("smolvm.fork_lock", Verdict::Reclaimable, Some("ghost")),
        );
    }
    assert_eq!(
        judged(&r, &demo),
        ("smolvm.fork_lock", Verdict::Protected, Some("demo"))
    );
    let b = finding(&r, &busy.path);
    assert_eq!(
        (b.kind.as_str(), b.verdict),
        ("smolvm.fork_lock", Verdict::Protected)
    );
    assert!(b.reason.contains("held"), "{}", b.reason);
    for p in &bookkeeping {
        assert!(!has_finding(&r, p), "{} offered", p.display());
    }

    let plan = Plan::from_scan(&r, &Selection::reclaimable());
    assert!(!planned(&plan, &demo) && !planned(&plan, &busy.path));
    let plan = Plan::from_scan(
        &r,
        &only_ids(&[finding(&r, &ghost), finding(&r, &ghost_pause)]),
    );
    let rep = execute(&plan);
    assert_eq!(rep.done().count(), 2, "{rep:#?}");
    assert!(!ghost.exists() && !ghost_pause.exists());
    assert!(demo.exists() && busy.path.exists());
}
