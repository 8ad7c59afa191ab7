//! The compaction estimate in the scan (issue 32): every disk of a stopped machine or sandbox
//! and every saved disk of both products, made offline with e2fsprogs and qemu-img, reported as
//! its own figure (never in the reclaimable total) in `scan` (JSON and text), `why` and the
//! Prometheus export; a disk a process holds is not estimated.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};
use smolsweep::exec::{self, Confirmed, ExecContext, How, Outcome, RealRunner, Rejudge};
use smolsweep::plan::{Action, Plan};
use smolsweep_fixtures::disks::{debugfs_w, ext4_image, run as tool, s, to_qcow2};
use smolsweep_fixtures::smolvm::{DiskSet, Smolvm};
use smolsweep_fixtures::vmm::{self};
use smolsweep_fixtures::{age_tree, Scratch, OLD};

fn run(sc: &Scratch, args: &[&str]) -> String {
    let o = sc
        .command(env!("CARGO_BIN_EXE_smolsweep"), args)
        .env("LANG", "C.UTF-8")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// An ext4 image with 12 MiB written and deleted and 2 MiB kept in `/keep`, at `path`
/// (replacing what is there).
fn freed_disk(path: &Path, scratch: &Path) -> PathBuf {
    let img = ext4_image(
        scratch,
        "img.ext4",
        "128M",
        &[("big", 12), ("keep", 2)],
        &[],
    );
    debugfs_w(&img, "rm /big");
    let _ = std::fs::remove_file(path);
    std::fs::rename(&img, path).unwrap();
    path.to_path_buf()
}

struct Home1 {
    web_storage: PathBuf,
    web_overlay: PathBuf,
    sandbox: PathBuf,
    saved: PathBuf,
}

/// smolvm `web` (created, not running) with a real ext4 `storage.raw` and a sparse
/// `overlay.raw` holding no file system; Celesto sandbox `sb1` (stopped) with a qcow2 disk;
/// a saved Celesto disk `gone1.ext4`.
fn home1(sc: &Scratch) -> Home1 {
    let sm = sc.home.smolvm().unwrap();
    sm.record("web", json!({})).unwrap();
    let dir = sm
        .machine_dir(
            "web",
            DiskSet::Raw {
                storage: 1 << 20,
                overlay: 1 << 20,
            },
        )
        .unwrap();
    let web_storage = freed_disk(&dir.join("storage.raw"), sc.dir());
    let d = sc.home.celesto_data_dir().unwrap();
    d.row("sb1", "stopped", "qemu", None).unwrap();
    let raw = freed_disk(&sc.dir().join("sb1.raw"), sc.dir());
    let sandbox = to_qcow2(&raw, &d.disks().join("sb1.qcow2"));
    let saved = freed_disk(&d.disks().join("gone1.ext4"), sc.dir());
    d.retained("gone1.ext4").unwrap();
    age_tree(&sc.home.root, OLD).unwrap();
    Home1 {
        web_overlay: dir.join("overlay.raw"),
        web_storage,
        sandbox,
        saved,
    }
}

fn disk<'a>(v: &'a Value, p: &Path) -> &'a Value {
    v["compact"]["disks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["path"].as_str() == p.to_str())
        .unwrap_or_else(|| panic!("{} not estimated: {:#}", p.display(), v["compact"]))
}

#[test]
fn compactable_is_reported_per_disk_and_in_total_never_in_the_reclaimable_total() {
    let sc = Scratch::new();
    let h = home1(&sc);
    let v: Value = serde_json::from_str(&run(&sc, &["scan", "--json"])).unwrap();
    let mib = 1u64 << 20;
    for (p, owner, saved) in [
        (&h.web_storage, "web", false),
        (&h.sandbox, "sb1", false),
        (&h.saved, "gone1", true),
    ] {
        let d = disk(&v, p);
        let n = d["compactable_bytes"].as_u64().unwrap();
        assert!((11 * mib..=13 * mib).contains(&n), "{d:#}");
        assert_eq!(d["owner"], owner);
        assert_eq!(d["saved"], saved);
        assert!(d.get("cannot_tell").is_none(), "{d:#}");
    }
    let overlay = disk(&v, &h.web_overlay);
    assert_eq!(overlay["cannot_tell"], "not an ext4 file system");
    assert_eq!(overlay["compactable_bytes"], 0);
    let c = &v["compact"];
    let sum: u64 = c["disks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["compactable_bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(c["compactable_bytes"].as_u64().unwrap(), sum);
    assert_eq!(c["compactable_disks"], 3);
    assert!(c["cannot_tell_disks"].as_u64().unwrap() >= 1);
    // Never in the reclaimable total: it is the sum of the reclaimable findings alone.
    let reclaimable: u64 = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["verdict"] == "reclaimable")
        .map(|f| f["allocated_bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(v["totals"]["reclaimable_allocated_bytes"], reclaimable);

    let text = run(&sc, &["scan"]);
    let line = text
        .lines()
        .find(|l| l.starts_with("Compactable:"))
        .unwrap();
    assert!(line.contains("inside 3 disks"), "{text}");
    assert!(
        text.replace("\n  ", " ")
            .contains("(opt-in, not in the reclaimable total); cannot tell for 1 other disk."),
        "{text}"
    );
    // (lines wrapped at the terminal's width joined again)
    let verbose = run(&sc, &["scan", "-v"]).replace("\n    ", " ");
    assert!(verbose.contains("smolvm:web storage.raw: "), "{verbose}");
    assert!(
        verbose.contains("celesto:gone1 (saved) gone1.ext4: "),
        "{verbose}"
    );
    assert!(
        verbose.contains(
            "overlay.raw: cannot tell what compacting would give back (not an ext4 file system)."
        ),
        "{verbose}"
    );
    let why = run(&sc, &["why", "smolvm:web"]);
    assert!(
        why.lines()
            .any(|l| l.trim_start().starts_with("Compact") && l.contains("storage.raw")),
        "{why}"
    );
}

#[test]
fn compactable_bytes_in_the_prometheus_export_pass_promtool_and_equal_the_json() {
    let sc = Scratch::new();
    home1(&sc);
    let text = run(&sc, &["scan", "--format", "prometheus"]);
    let mut check = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("promtool (scripts/setup/60-promtool.sh)");
    use std::io::Write;
    check
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = check.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let v: Value = serde_json::from_str(&run(&sc, &["scan", "--json"])).unwrap();
    let metric = |name: &str| -> u64 {
        text.lines()
            .find(|l| l.starts_with(&format!("{name}{{")))
            .and_then(|l| l.rsplit(' ').next())
            .unwrap_or_else(|| panic!("{name} missing: {text}"))
            .parse()
            .unwrap()
    };
    assert_eq!(
        metric("smolsweep_compactable_bytes"),
        v["compact"]["compactable_bytes"]
    );
    assert!(metric("smolsweep_compactable_bytes") > 0);
    assert_eq!(metric("smolsweep_compactable_disks"), 3);
    assert_eq!(
        metric("smolsweep_compact_cannot_tell_disks"),
        v["compact"]["cannot_tell_disks"]
    );
}

/// Hazard: estimating a disk a VM is writing reads a file system in flux. A disk a process
/// holds is not estimated at all.
#[test]
fn compact_held_disk_is_not_estimated() {
    let sc = Scratch::new();
    let h = home1(&sc);
    let dir = sc
        .home
        .smolvm()
        .unwrap()
        .vms_dir()
        .join(Smolvm::hash("web"));
    let _vm = vmm::boot_vm_holding(
        &vmm::standin_bin(Path::new(env!("CARGO_TARGET_TMPDIR"))),
        &sc.home.root,
        &dir,
        Some(&h.web_storage),
    );
    let v: Value = serde_json::from_str(&run(&sc, &["scan", "--json"])).unwrap();
    let disks = v["compact"]["disks"].as_array().unwrap();
    assert!(
        disks
            .iter()
            .all(|d| !d["path"].as_str().unwrap().starts_with(s(&dir))),
        "{disks:#?}"
    );
    // The others still are.
    disk(&v, &h.sandbox);
    disk(&v, &h.saved);
}

/// Hazard: a paused guest's saved memory may hold blocks its file system's bitmaps do not show
/// yet, and a record that says running (even with its process gone) is not at rest: neither
/// machine's disks are estimated, however real their ext4.
#[test]
fn compact_paused_or_recorded_running_machine_disks_are_not_estimated() {
    let sc = Scratch::new();
    let sm = sc.home.smolvm().unwrap();
    let mut dirs = Vec::new();
    for (name, state) in [
        ("napping", "paused"),
        ("ghost", "running"),
        ("idle", "stopped"),
    ] {
        sm.record(name, json!({"state": state, "pid": 999_999_999u64}))
            .unwrap();
        let dir = sm.machine_dir(name, DiskSet::Paused).unwrap();
        freed_disk(&dir.join("storage.raw"), sc.dir());
        dirs.push(dir);
    }
    age_tree(&sc.home.root, OLD).unwrap();
    let v: Value = serde_json::from_str(&run(&sc, &["scan", "--json"])).unwrap();
    let estimated = |dir: &Path| {
        v["compact"]["disks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["path"].as_str().unwrap().starts_with(s(dir)))
    };
    assert!(!estimated(&dirs[0]), "paused: {:#}", v["compact"]);
    assert!(!estimated(&dirs[1]), "recorded running: {:#}", v["compact"]);
    assert!(estimated(&dirs[2]), "stopped: {:#}", v["compact"]);
}

/// Allocated bytes of a file.
fn allocated(p: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(p).unwrap().blocks() * 512
}

/// The ext4 file system of `disk` as raw (a qcow2 converted to a scratch copy).
fn as_raw(disk: &Path, scratch: &Path) -> PathBuf {
    if disk.extension().is_some_and(|e| e == "qcow2") {
        let out = scratch.join("check.raw");
        let _ = std::fs::remove_file(&out);
        tool("qemu-img", &["convert", "-O", "raw", s(disk), s(&out)]);
        out
    } else {
        disk.to_path_buf()
    }
}

/// SHA-256 of `/keep` and `/small` in the file system of `disk`, and `e2fsck -fn` clean.
fn files_and_fsck(disk: &Path, scratch: &Path) -> Vec<String> {
    use sha2::{Digest, Sha256};
    let raw = as_raw(disk, scratch);
    tool("e2fsck", &["-fn", s(&raw)]);
    ["keep", "small"]
        .iter()
        .map(|f| {
            let out = scratch.join(format!("dumped-{f}"));
            let _ = std::fs::remove_file(&out);
            tool(
                "debugfs",
                &["-R", &format!("dump /{f} {}", s(&out)), s(&raw)],
            );
            hex::encode(Sha256::digest(std::fs::read(&out).unwrap()))
        })
        .collect()
}

fn compact_json(sc: &Scratch, args: &[&str]) -> Value {
    let mut all = vec!["compact", "--json"];
    all.extend_from_slice(args);
    let o = sc
        .command(env!("CARGO_BIN_EXE_smolsweep"), &all)
        .env("PATH", "/usr/bin:/bin:/usr/sbin:/sbin")
        .output()
        .unwrap();
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)))
}

#[test]
fn compact_gives_back_free_space_of_raw_and_qcow2_disks_and_keeps_every_file() {
    let sc = Scratch::new();
    let h = home1(&sc);
    let disks = [&h.web_storage, &h.sandbox, &h.saved];
    let before: Vec<(u64, Vec<String>)> = disks
        .iter()
        .map(|d| (allocated(d), files_and_fsck(d, sc.dir())))
        .collect();
    let dry = compact_json(&sc, &["-n"]);
    assert_eq!(dry["dry_run"], true, "{dry:#}");
    assert_eq!(
        allocated(&h.web_storage),
        before[0].0,
        "a dry run changes nothing"
    );
    let r = compact_json(&sc, &["-y"]);
    let done = r["done"].as_array().unwrap_or_else(|| panic!("{r:#}"));
    assert_eq!(done.len(), 3, "{r:#}");
    assert!(r["skipped"].as_array().unwrap().is_empty(), "{r:#}");
    assert!(r["failed"].as_array().unwrap().is_empty(), "{r:#}");
    let freed = r["freed_bytes"].as_u64().unwrap();
    assert!(freed >= 33 << 20, "{r:#}");
    for (d, (was, files)) in disks.iter().zip(&before) {
        let now = allocated(d);
        assert!(was - now >= 11 << 20, "{}: {was} -> {now}", d.display());
        assert_eq!(&files_and_fsck(d, sc.dir()), files, "{}", d.display());
    }
    tool("qemu-img", &["check", s(&h.sandbox)]);
    let info = tool("qemu-img", &["info", "--backing-chain", s(&h.sandbox)]);
    assert!(info.contains("file format: qcow2"), "{info}");
    // Nothing is left to compact (aged first: a disk written moments ago is judged as one
    // being created).
    age_tree(&sc.home.root, OLD).unwrap();
    let v: Value = serde_json::from_str(&run(&sc, &["scan", "--json"])).unwrap();
    for d in disks {
        assert_eq!(disk(&v, d)["compactable_bytes"], 0, "{:#}", v["compact"]);
    }
}

/// Execute `plan` through the one executor, judged on a fresh scan of `sc`'s HOME.
fn execute(sc: &Scratch, plan: &Plan) -> exec::ExecReport {
    let opts = crate::scan_options(&sc.home);
    let runner = RealRunner::new(opts.env.clone(), opts.platform);
    let mut judge = Rejudge::new(opts);
    let confirmed = Confirmed::of(plan, How::YesFlag);
    exec::execute(plan, ExecContext::confirmed(confirmed, &runner, &mut judge)).expect("runs")
}

/// Why the compaction of `p` was skipped.
fn skipped(r: &exec::ExecReport, p: &Path) -> String {
    let rec = r
        .records
        .iter()
        .find(|rec| matches!(&rec.action, Action::CompactDisk { path, .. } if path == p))
        .unwrap_or_else(|| panic!("{} not planned", p.display()));
    match &rec.outcome {
        Outcome::Skipped { why, .. } => why.clone(),
        o => panic!("expected a refusal, got {o:?}"),
    }
}

fn plan_for(sc: &Scratch, target: &str) -> Plan {
    let report = smolsweep::scan::scan(&crate::scan_options(&sc.home));
    smolsweep::target::compact_plan(&report, &[target.to_string()]).unwrap()
}

/// Hazard: a machine started, or a process that opened its disk, after the plan was made.
#[test]
fn compact_refuses_a_machine_started_or_a_disk_held_since_the_plan() {
    let sc = Scratch::new();
    let h = home1(&sc);
    let plan = plan_for(&sc, "smolvm:web");
    assert!(!plan.actions.is_empty(), "{plan:#?}");
    let was = allocated(&h.web_storage);
    let dir = h.web_storage.parent().unwrap();
    let vm = vmm::boot_vm_holding(
        &vmm::standin_bin(Path::new(env!("CARGO_TARGET_TMPDIR"))),
        &sc.home.root,
        dir,
        Some(&h.web_storage),
    );
    let r = execute(&sc, &plan);
    assert!(
        skipped(&r, &h.web_storage).contains("not compacted"),
        "{r:#?}"
    );
    assert_eq!(allocated(&h.web_storage), was);
    drop(vm);
    // Recorded running (the product's own record) is refused too.
    let sm = sc.home.smolvm().unwrap();
    sm.record("web", json!({"state": "running"})).unwrap();
    let r = execute(&sc, &plan);
    assert!(
        skipped(&r, &h.web_storage).contains("no longer the disk of a stopped machine"),
        "{r:#?}"
    );
    assert_eq!(allocated(&h.web_storage), was);
}

/// Hazard: compacting a base changes what every overlay over it reads.
#[test]
fn compact_refuses_a_base_disk_with_overlays() {
    let sc = Scratch::new();
    let h = home1(&sc);
    let d = sc.home.celesto_data_dir().unwrap();
    d.row("sb2", "stopped", "qemu", None).unwrap();
    let ov = d.disks().join("sb2.qcow2");
    tool(
        "qemu-img",
        &[
            "create",
            "-q",
            "-f",
            "qcow2",
            "-b",
            s(&h.saved),
            "-F",
            "raw",
            s(&ov),
        ],
    );
    age_tree(&sc.home.root, OLD).unwrap();
    let plan = plan_for(&sc, s(&h.saved));
    let was = allocated(&h.saved);
    let r = execute(&sc, &plan);
    assert!(skipped(&r, &h.saved).contains("backing file"), "{r:#?}");
    assert_eq!(allocated(&h.saved), was);
}

/// Hazard: a journal that needs recovery holds blocks the bitmaps do not show yet.
#[test]
fn compact_refuses_a_disk_whose_journal_needs_recovery() {
    let sc = Scratch::new();
    let h = home1(&sc);
    debugfs_w(&h.web_storage, "feature needs_recovery");
    age_tree(&sc.home.root, OLD).unwrap();
    let plan = plan_for(&sc, "smolvm:web");
    assert!(
        plan.actions.iter().all(
            |a| !matches!(&a.action, Action::CompactDisk { path, .. } if path == &h.web_storage)
        ),
        "{plan:#?}"
    );
    assert!(
        plan.skipped_at_plan
            .iter()
            .any(|s| s.why.contains("journal needs recovery")),
        "{plan:#?}"
    );
}

/// Hazard: a disk written since the plan was estimated on other contents.
#[test]
fn compact_refuses_a_disk_changed_since_the_plan() {
    let sc = Scratch::new();
    let h = home1(&sc);
    let plan = plan_for(&sc, s(&h.saved));
    debugfs_w(&h.saved, "mkdir /new");
    let was = allocated(&h.saved);
    let r = execute(&sc, &plan);
    assert!(
        skipped(&r, &h.saved).contains("changed since the plan"),
        "{r:#?}"
    );
    assert_eq!(allocated(&h.saved), was);
}

/// Hazard: a keep rule on the machine is the user saying "leave it alone".
#[test]
fn compact_refuses_a_kept_machines_disk() {
    let sc = Scratch::new();
    let h = home1(&sc);
    run(&sc, &["keep", "add", "smolvm:web"]);
    let was = allocated(&h.web_storage);
    // Never planned (issue 39): refused by name, with the rule.
    let r = compact_json(&sc, &["smolvm:web", "-y"]);
    assert!(
        r["error"].as_str().unwrap().contains("kept by you"),
        "{r:#}"
    );
    assert_eq!(allocated(&h.web_storage), was);
    // A plan made before the rule is refused when it runs (the re-judge reads the rules).
    let plan = plan_for(&sc, "smolvm:web");
    let mut opts = crate::scan_options(&sc.home);
    opts.env.vars.insert(
        "SMOLSWEEP_DATA_DIR".into(),
        sc.data.to_string_lossy().into_owned(),
    );
    let runner = RealRunner::new(opts.env.clone(), opts.platform);
    let mut judge = Rejudge::new(opts);
    let confirmed = Confirmed::of(&plan, How::YesFlag);
    let r = exec::execute(
        &plan,
        ExecContext::confirmed(confirmed, &runner, &mut judge),
    )
    .unwrap();
    assert!(skipped(&r, &h.web_storage).contains("kept"), "{r:#?}");
    assert_eq!(allocated(&h.web_storage), was);
}

/// Hazard: `smolsweep compact DISK` names the disk on its own command line, which the one "in
/// use" rule reads as a process naming it; Smolsweep's own process is no use of it.
#[test]
fn compact_a_disk_named_by_its_path_on_the_command_line() {
    let sc = Scratch::new();
    let h = home1(&sc);
    let was = allocated(&h.saved);
    let r = compact_json(&sc, &[s(&h.saved), "-y"]);
    assert_eq!(r["done"].as_array().map(Vec::len), Some(1), "{r:#}");
    assert_eq!(r["done"][0]["path"], s(&h.saved), "{r:#}");
    assert!(was - allocated(&h.saved) >= 11 << 20);
    // Only the disk named: the others keep their space.
    disk(
        &serde_json::from_str(&run(&sc, &["scan", "--json"])).unwrap(),
        &h.sandbox,
    );
}

/// Hazard: `smolvm machine start` mid-compaction. smolvm takes the machine's `vm.lock` before it
/// starts the VM: while someone holds it the disk is not compacted (and while compaction holds
/// it, smolvm's start is refused by smolvm itself).
#[test]
fn compact_refuses_a_smolvm_disk_whose_vm_lock_is_held() {
    let sc = Scratch::new();
    let h = home1(&sc);
    let plan = plan_for(&sc, "smolvm:web");
    let lock = std::fs::File::open(h.web_storage.parent().unwrap().join("vm.lock")).unwrap();
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive).unwrap();
    let was = allocated(&h.web_storage);
    let r = execute(&sc, &plan);
    assert!(skipped(&r, &h.web_storage).contains("vm.lock"), "{r:#?}");
    assert_eq!(allocated(&h.web_storage), was);
    drop(lock);
    let r = execute(&sc, &plan);
    assert!(r.records.iter().all(|rec| rec.outcome.is_done()), "{r:#?}");
    assert!(was - allocated(&h.web_storage) >= 11 << 20);
}

/// `smolsweep ARGS` with `path` as its `PATH`: its exit code, stdout and stderr.
fn run_on_path(sc: &Scratch, path: &str, args: &[&str]) -> (i32, String, String) {
    let o = sc
        .command(env!("CARGO_BIN_EXE_smolsweep"), args)
        .env("LANG", "C.UTF-8")
        .env("PATH", path)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A directory holding a stand-in `e2fsck` that prints what e2fsprogs 1.42.9 prints for `-V`
/// (recorded) and, asked to do anything else, leaves `ran` behind and fails.
fn old_e2fsck(sc: &Scratch) -> (PathBuf, PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let bin = sc.dir().join("old-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let recorded = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/tool-versions/e2fsck-1.42.9-centos7-first-line.txt");
    let ran = sc.dir().join("old-e2fsck-ran");
    let script = format!(
        "#!/bin/sh\nif [ \"$1\" = -V ]; then cat '{}' >&2; exit 0; fi\ntouch '{}'\nexit 8\n",
        recorded.display(),
        ran.display()
    );
    let exe = bin.join("e2fsck");
    std::fs::write(&exe, script).unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    (bin, ran)
}

/// Hazard: an e2fsck older than trusted (one that checks a `fast_commit` file system without
/// replaying it) releasing blocks it wrongly calls free. Its raw disks are "cannot tell" with
/// why, are not planned and not compacted, and it is never run but for its version; the qcow2
/// disk (QEMU's tools) is estimated as before.
#[test]
fn compact_with_an_e2fsck_too_old_is_cannot_tell_and_never_run() {
    let sc = Scratch::new();
    let h = home1(&sc);
    let (bin, ran) = old_e2fsck(&sc);
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let (code, out, err) = run_on_path(&sc, &path, &["scan", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    for p in [&h.web_storage, &h.saved] {
        let d = disk(&v, p);
        assert_eq!(d["compactable_bytes"], 0, "{d:#}");
        assert_eq!(
            d["cannot_tell"],
            "e2fsck 1.42.9 is older than 1.46.0, the oldest version trusted to compact a disk; \
             update e2fsprogs (Debian/Ubuntu: apt install e2fsprogs; macOS: brew install \
             e2fsprogs)",
            "{d:#}"
        );
    }
    assert!(disk(&v, &h.sandbox)["compactable_bytes"].as_u64().unwrap() > 11 << 20);
    let was = allocated(&h.web_storage);
    let (code, out, err) = run_on_path(&sc, &path, &["compact", "smolvm:web", "-y"]);
    assert_eq!(
        code, 1,
        "a named disk that cannot be compacted is refused: {out}{err}"
    );
    assert!(
        (out.clone() + &err).contains("e2fsck 1.42.9 is older than 1.46.0"),
        "{out}{err}"
    );
    assert_eq!(allocated(&h.web_storage), was);
    assert!(!ran.exists(), "the old e2fsck was run on a disk");
    // The executor judges the tools again: a plan made with a trusted e2fsck is not carried
    // out by the old one put first on PATH since.
    let plan = plan_for(&sc, s(&h.saved));
    assert_eq!(plan.actions.len(), 1, "{plan:#?}");
    let file = sc.dir().join("plan.json");
    std::fs::write(&file, plan.to_json_pretty()).unwrap();
    let (code, out, err) = run_on_path(&sc, &path, &["apply", s(&file), "-y", "--json"]);
    assert_eq!(code, 1, "{out}{err}");
    let r: Value = serde_json::from_str(&out).unwrap();
    assert!(
        r["skipped"][0]["why"]
            .as_str()
            .is_some_and(|w| w.contains("e2fsck 1.42.9 is older")),
        "{r:#}"
    );
    assert!(!ran.exists(), "the old e2fsck was run on a disk");
}

/// Hazard: a missing tool hiding the space a person could get back, or a compaction that
/// half-runs without it. With QEMU's tools missing, the qcow2 disk's estimate is still shown,
/// with what to install; compacting it is refused with that sentence and changes nothing.
#[test]
fn compact_with_qemu_tools_missing_shows_the_estimate_and_says_what_to_install() {
    let sc = Scratch::new();
    let h = home1(&sc);
    let empty = sc.dir().join("empty-bin");
    std::fs::create_dir_all(&empty).unwrap();
    let path = empty.display().to_string();
    let (code, out, err) = run_on_path(&sc, &path, &["scan", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let d = disk(&v, &h.sandbox);
    assert!(d["compactable_bytes"].as_u64().unwrap() > 11 << 20, "{d:#}");
    let needs = "qemu-img and qemu-io are not installed: install QEMU's tools (Debian/Ubuntu: \
                 apt install qemu-utils; macOS: brew install qemu)";
    assert_eq!(d["needs"], needs, "{d:#}");
    // e2fsck is found where Debian installs it, off a user's PATH.
    assert!(
        disk(&v, &h.web_storage).get("needs").is_none(),
        "{:#}",
        v["compact"]
    );
    let (_, text, _) = run_on_path(&sc, &path, &["scan", "-v"]);
    assert!(
        text.replace("\n    ", " ")
            .contains(&format!("To compact it: {needs}.")),
        "{text}"
    );
    let was = allocated(&h.sandbox);
    let (code, out, err) = run_on_path(&sc, &path, &["compact", "celesto:sb1", "-y"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!((out.clone() + &err).contains(needs), "{out}{err}");
    assert_eq!(allocated(&h.sandbox), was);
}

/// Hazard: a long compaction that shows nothing until it ends, and a total that hides which
/// disk gave back what. Each disk gets a progress line as it finishes, with the bytes measured
/// on it (a bar redrawn in place while it runs at a terminal), and the JSON result carries
/// them per disk.
#[test]
fn compact_shows_a_progress_line_per_disk_with_the_bytes_it_freed() {
    use smolsweep::model::human_bytes;
    let sc = Scratch::new();
    let h = home1(&sc);
    // Not a terminal: one plain line per disk on stderr.
    let was = allocated(&h.web_storage);
    let (code, _, err) = run_on_path(&sc, "/usr/bin:/bin", &["compact", s(&h.web_storage), "-y"]);
    assert_eq!(code, 0, "{err}");
    let freed = was - allocated(&h.web_storage);
    assert!(freed >= 11 << 20);
    let line = err
        .lines()
        .find(|l| l.starts_with("[1/1] done     compact smol-machines smolvm disk "))
        .unwrap_or_else(|| panic!("no progress line: {err}"));
    assert!(
        line.contains("storage.raw of web")
            && line.ends_with(&format!(": freed {} (measured)", human_bytes(freed))),
        "{line}"
    );
    // At a terminal (`script` from util-linux gives it one): the bar, then the line.
    let o = Command::new("script")
        .args([
            "-qec",
            &format!(
                "{} compact celesto:sb1 -y >/dev/null",
                env!("CARGO_BIN_EXE_smolsweep")
            ),
            "/dev/null",
        ])
        .env_clear()
        .envs(sc.home.env_vars())
        .env("SMOLSWEEP_DATA_DIR", sc.dir().join("data"))
        .env("PATH", "/usr/bin:/bin")
        .env("COLUMNS", "100")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("script (util-linux)");
    let tty = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{tty}");
    assert!(
        tty.contains("\r\x1b[K[--"),
        "no bar drawn while it ran: {tty:?}"
    );
    assert!(
        tty.contains("[1/1] done     compact Celesto SmolVM disk ") && tty.contains("(measured)"),
        "{tty:?}"
    );
    // The JSON result: what each disk freed, measured on it.
    let was = allocated(&h.saved);
    let r = compact_json(&sc, &[s(&h.saved), "-y"]);
    let rec = &r["done"][0];
    assert_eq!(rec["path"], s(&h.saved), "{r:#}");
    assert_eq!(rec["freed_bytes"], was - allocated(&h.saved), "{r:#}");
    assert_eq!(r["freed_bytes"], rec["freed_bytes"], "{r:#}");
}

/// Hazard: a compaction confirmed with words that do not say what it does (its plan had no
/// sentence of its own and was announced as "Nothing to do"). The window, the tray and the CLI
/// confirm it with the core's sentence for the plan the executor runs.
#[test]
fn compact_plan_is_confirmed_with_the_cores_sentence() {
    use smolsweep::model::human_bytes;
    let sc = Scratch::new();
    home1(&sc);
    let report = smolsweep::scan::scan(&crate::scan_options(&sc.home));
    let plan = smolsweep::target::compact_plan(&report, &[]).unwrap();
    let c = smolsweep::view::confirmation(&plan);
    assert_eq!(c.headline, "Compact 3 disks");
    assert_eq!(
        c.question(),
        format!(
            "Compact 3 disks, freeing about {}",
            human_bytes(plan.estimated_bytes)
        )
    );
    let out = run(&sc, &["compact", "-n"]);
    let first = out.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("Plan ") && first.ends_with(&c.sentence()),
        "{out}"
    );
    // The tray's entry names the same disks and bytes as the plan.
    let tray = smolsweep::tray::TrayModel::from_report(&report, &Default::default());
    assert_eq!(
        tray.compact.map(|i| i.label),
        Some(format!(
            "Compact 3 disks: {}…",
            human_bytes(report.compact.compactable_bytes)
        ))
    );
    assert_eq!(plan.estimated_bytes, report.compact.compactable_bytes);
}
