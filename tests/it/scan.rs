//! The scan against realistic scratch HOMEs of both products (the fixture crate's edge-case
//! catalogues), real processes shaped like VMMs, and the `smolsweep scan` binary itself.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use smolsweep::env::EnvSnapshot;
use smolsweep::model::{Finding, Platform, Product, ScanReport, Scope, Verdict};
use smolsweep::scan::{scan, ScanOptions};
use smolsweep_fixtures::vmm::{fake_vmm_bin, spawn, Shape};
use smolsweep_fixtures::{celesto_edge_cases, smolvm_edge_cases, Home, Layout};

fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// PATH holding the real Celesto CLI, so the installed version (0.1.10) is detected.
fn celesto_path() -> String {
    let bin = smolsweep_fixtures::real_tools::require_celesto_bin();
    format!("{}:/usr/bin:/bin", bin.parent().unwrap().display())
}

fn options(home: &Home, path: &str) -> ScanOptions {
    let mut vars: Vec<(String, String)> = home.env_vars();
    vars.push(("PATH".into(), path.into()));
    let mut env = EnvSnapshot::from_pairs(home.root.clone(), vars);
    env.euid = euid();
    ScanOptions {
        env,
        platform: Platform::Linux,
        age_guard: Duration::from_secs(120),
        now: SystemTime::now(),
    }
}

fn by_path(r: &ScanReport) -> BTreeMap<PathBuf, &Finding> {
    r.findings.iter().map(|f| (f.path.clone(), f)).collect()
}

/// What each fixture label may become. `None` in the list means "no finding at all" is fine.
fn allowed(label: &str) -> Vec<Option<Verdict>> {
    use Verdict::*;
    match label {
        "live" | "machine_dir" | "young_orphan_disk" | "current_cache" | "stale_cache_in_use"
        | "newer_cache" | "young_dangling_dir" | "held_lock" | "pack_cache_leased" => {
            vec![Some(Protected)]
        }
        "orphan_disk"
        | "companion"
        | "orphan_log"
        | "in_use_candidate"
        | "stale_lock"
        | "stale_known_hosts"
        | "stale_forward"
        | "stale_socket"
        | "stale_libkrun_config"
        | "stale_cache"
        | "stale_cache_symlink"
        | "symlink_disk"
        | "dangling_dir"
        | "empty_dir"
        | "name_only_dir"
        | "free_lock"
        | "dead_ephemeral_dir"
        | "shared_record_orphan"
        | "pause_record"
        | "init_staging"
        | "network_dir"
        | "custom_image_killed"
        | "seed"
        | "macos_image_failed"
        | "old_lume" => {
            vec![Some(Reclaimable)]
        }
        "custom_image_in_use" | "seed_in_use" | "current_lume" => vec![Some(Protected)],
        "saved" | "orphan_firmware" | "orphan_snapshot" | "cow_base" | "restore_cache"
        | "checkpoint_unpack" | "init_layers" | "image_seeds" | "pack_cache" | "libs_cache"
        | "registry_cache" | "image_archive" | "cache_shared" | "shared_record" | "usage_log"
        | "custom_image" | "s3_image" | "macos_image" | "dashboard_assets" => {
            vec![Some(OptIn)]
        }
        "orphan_companion" | "orphan_browser_dir" => vec![Some(Reclaimable), Some(OptIn)],
        // PyPI smolvm content in ~/.smolvm: Celesto's to judge, never smol-machines'.
        "legacy_home_entry" => vec![None, Some(Protected), Some(Reclaimable), Some(OptIn)],
        "unrecognised" => vec![Some(Unknown), None],
        "pack_mount" => vec![Some(Protected), None],
        // Left over once no Celesto VM runs (the name says nothing of whose it was).
        "gvproxy_socket" => vec![Some(Reclaimable), Some(Protected)],
        // Never offered: not findings, or shown as protected.
        _ => vec![None, Some(Protected)],
    }
}

/// Where Smolsweep deliberately reads an item more carefully than the fixture's label.
fn stricter(path: &Path, records: &[String]) -> Option<Vec<Option<Verdict>>> {
    let name = path.file_name()?.to_str()?;
    // A lock file stays while what it guards exists: deleting a lock file someone is about to
    // open breaks mutual exclusion (the snapshot and these machines still exist).
    if name == "snapshot-snap-old.lock" {
        return Some(vec![Some(Verdict::Protected)]);
    }
    if let Some(m) = name
        .strip_prefix('.')
        .and_then(|n| n.split(".fork-operation").next())
    {
        if name.contains(".fork-operation") && records.iter().any(|r| r == m) {
            return Some(vec![Some(Verdict::Protected)]);
        }
    }
    None
}

fn check_manifest(
    r: &ScanReport,
    m: &smolsweep_fixtures::Manifest,
    product: &str,
    records: &[String],
    relabel: &dyn Fn(&str) -> &str,
) {
    let found = by_path(r);
    let mut wrong = Vec::new();
    for e in m.entries.iter().filter(|e| e.product == product) {
        let got = found.get(&e.path).map(|f| f.verdict);
        let ok = stricter(&e.path, records).unwrap_or_else(|| allowed(relabel(e.label)));
        if !ok.contains(&got) {
            let reason = found.get(&e.path).map(|f| f.reason.as_str()).unwrap_or("");
            wrong.push(format!(
                "{} [{}]: got {:?} — {reason}",
                e.path.display(),
                e.label,
                got
            ));
        }
    }
    assert!(wrong.is_empty(), "misclassified:\n{}", wrong.join("\n"));
    // Nothing outside the catalogue is ever offered.
    for f in &r.findings {
        if matches!(f.verdict, Verdict::Reclaimable | Verdict::OptIn) {
            assert!(
                f.path.ancestors().any(|a| m.entry(a).is_some()),
                "offered a path the fixture never made: {} ({})",
                f.path.display(),
                f.kind
            );
        }
    }
}

#[test]
fn celesto_edge_cases_are_classified_as_documented() {
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Linux).unwrap();
    let case = celesto_edge_cases(&home).unwrap();
    let r = scan(&options(&home, &celesto_path()));
    check_manifest(&r, &case.manifest, "celesto", &[], &|l| l);
    for f in &r.findings {
        assert_eq!(f.product, Product::Celesto, "{}", f.path.display());
    }
    // ~/.smolvm/images belongs to PyPI smolvm, which is not installed: its caches are opt-in.
    let legacy_cache = home.path(".smolvm/images/ubuntu-v0.0.36-amd64-firecracker");
    assert_eq!(by_path(&r)[&legacy_cache].verdict, Verdict::OptIn);
    let cel = r
        .products
        .iter()
        .find(|p| p.product == Product::Celesto)
        .unwrap();
    assert!(cel.detected);
    assert_eq!(cel.status, "ok", "{:?}", cel.problems);
    assert_eq!(cel.version.as_deref(), Some("0.1.10"));
}

#[test]
fn smolvm_edge_cases_are_classified_as_documented() {
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Linux).unwrap();
    let mut case = smolvm_edge_cases(&home).unwrap();
    let names: Vec<String> = case.records.iter().map(|r| r.name.clone()).collect();
    // While a smolvm operation holds a lock, caches may be in use: nothing of them is offered.
    let busy = scan(&options(&home, "/usr/bin:/bin"));
    for e in &case.manifest.entries {
        let f = by_path(&busy)
            .get(&e.path)
            .map(|f| (f.verdict, f.reason.clone()));
        match e.label {
            "held_lock" => assert_eq!(f.unwrap().0, Verdict::Protected),
            "cow_base" | "restore_cache" | "init_layers" | "image_seeds" | "registry_cache"
            | "image_archive" => {
                let (v, why) = f.unwrap();
                assert_eq!(v, Verdict::Protected, "{}: {why}", e.path.display());
                assert!(why.contains("running"), "{why}");
            }
            _ => {}
        }
    }
    // Released: the same tree with nothing running.
    case.held_locks.clear();
    let r = scan(&options(&home, "/usr/bin:/bin"));
    check_manifest(&r, &case.manifest, "smolvm", &names, &|l| {
        if l == "held_lock" {
            "free_lock"
        } else {
            l
        }
    });
    assert!(
        r.findings
            .iter()
            .any(|f| f.kind == "smolvm.shared_pack" && f.verdict == Verdict::OptIn),
        "an unreferenced _shared entry is offered as a cache"
    );
    // Records come from the DB with liveness; the `running` record whose pid is dead is stale.
    for rec in &case.records {
        let m = r
            .machines
            .iter()
            .find(|m| m.name == rec.name)
            .unwrap_or_else(|| panic!("machine {} missing", rec.name));
        assert_eq!(m.state, rec.state, "{}", rec.name);
        assert!(!m.alive, "{} has no live VM", rec.name);
        if rec.state == "running" {
            assert!(m.effective_state.starts_with("stale"), "{:?}", m);
        }
    }
}

#[test]
fn b1_cache_a_disk_backs_onto_is_protected_even_for_an_orphan_disk() {
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Linux).unwrap();
    let data = home.celesto_data_dir().unwrap();
    let images = home.celesto_image_dir().unwrap();
    let cache = images
        .image("ubuntu-v0.1.9-amd64-qemu", &[("rootfs.ext4", 1 << 20)])
        .unwrap();
    let stale = images
        .image("ubuntu-v0.1.8-amd64-qemu", &[("rootfs.ext4", 1 << 20)])
        .unwrap();
    data.qcow2_overlay("sdk1", &cache.join("rootfs.ext4"))
        .unwrap();
    smolsweep_fixtures::age_tree(&home.root, smolsweep_fixtures::OLD).unwrap();
    let r = scan(&options(&home, &celesto_path()));
    let f = by_path(&r);
    assert_eq!(
        f[&cache].verdict,
        Verdict::Protected,
        "{}",
        f[&cache].reason
    );
    assert!(f[&cache].reason.contains("sdk1"));
    assert_eq!(f[&stale].verdict, Verdict::Reclaimable);
    // The orphan overlay itself is still reclaimable: deleting it first frees the cache.
    assert_eq!(
        f[&data.disks().join("sdk1.qcow2")].verdict,
        Verdict::Reclaimable
    );
}

#[test]
fn b3_b4_disk_in_use_protects_its_log_and_longer_paths_protect_nothing() {
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Linux).unwrap();
    let data = home.celesto_data_dir().unwrap();
    let disk = data.disk("inuse", "qcow2", 1 << 20, 1 << 16).unwrap();
    let log = data.log("inuse", 100).unwrap();
    let victim = data.disk("victim", "qcow2", 1 << 20, 1 << 16).unwrap();
    let backup = data.companion("victim.qcow2", "backup-zz", 10).unwrap();
    let _ = backup;
    smolsweep_fixtures::age_tree(&home.root, smolsweep_fixtures::OLD).unwrap();
    let bin = fake_vmm_bin(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/fake_vmm.rs"),
        Path::new(env!("CARGO_TARGET_TMPDIR")),
    );
    // A QEMU shape naming the disk exactly in -drive file=…
    let _qemu = spawn(
        &bin,
        &Shape {
            argv: vec![
                "qemu-system-x86_64".into(),
                "-drive".into(),
                format!("file={},if=none,format=qcow2", disk.display()),
            ],
            ..Default::default()
        },
    );
    // Something naming a longer path that merely contains victim.qcow2 (upstream B4).
    let _tail = spawn(
        &bin,
        &Shape {
            argv: vec![
                "tail".into(),
                "-f".into(),
                format!("{}.backup-zz", victim.display()),
            ],
            ..Default::default()
        },
    );
    let r = scan(&options(&home, &celesto_path()));
    let f = by_path(&r);
    assert_eq!(f[&disk].verdict, Verdict::Protected, "{}", f[&disk].reason);
    assert_eq!(
        f[&log].verdict,
        Verdict::Protected,
        "B3: {}",
        f[&log].reason
    );
    assert_eq!(
        f[&victim].verdict,
        Verdict::Reclaimable,
        "B4: {}",
        f[&victim].reason
    );
}

#[test]
fn smolvm_vm_processes_are_attributed_and_scoped_by_home() {
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Linux).unwrap();
    std::fs::create_dir(t.path().join("other")).unwrap();
    let other = Home::new(&t.path().join("other"), Layout::Linux).unwrap();
    let sm = home.smolvm().unwrap();
    sm.record("kept", serde_json::json!({})).unwrap();
    let kept_dir = sm
        .machine_dir(
            "kept",
            smolsweep_fixtures::smolvm::DiskSet::Raw {
                storage: 1 << 16,
                overlay: 1 << 16,
            },
        )
        .unwrap();
    let orphan_dir = sm.dangling_dir("vm-orphan").unwrap();
    let other_sm = other.smolvm().unwrap();
    let foreign_dir = other_sm.dangling_dir("vm-foreign").unwrap();
    smolsweep_fixtures::age_tree(t.path(), smolsweep_fixtures::OLD).unwrap();
    let bin = fake_vmm_bin(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/fake_vmm.rs"),
        Path::new(env!("CARGO_TARGET_TMPDIR")),
    );
    let boot = |dir: &Path, h: &Home| {
        spawn(
            &bin,
            &Shape {
                argv: vec![
                    "/proc/self/exe".into(),
                    "_boot-vm".into(),
                    dir.join("boot-config.json").display().to_string(),
                ],
                comm: Some("libkrun VM"),
                home: Some(&h.root),
                ..Default::default()
            },
        )
    };
    let p_kept = boot(&kept_dir, &home);
    // Running as smolvm records it: state, pid and start time (a record without them does not
    // own the VM that boots its directory).
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", p_kept.pid())).unwrap();
    let start: u64 = stat[stat.rfind(')').unwrap() + 2..]
        .split(' ')
        .nth(19)
        .unwrap()
        .parse()
        .unwrap();
    sm.record(
        "kept",
        serde_json::json!({"state": "running", "pid": p_kept.pid(), "pid_start_time": start}),
    )
    .unwrap();
    let p_orphan = boot(&orphan_dir, &home);
    let p_foreign = boot(&foreign_dir, &other);
    let r = scan(&options(&home, "/usr/bin:/bin"));
    let proc_of = |pid: u32| {
        r.processes
            .iter()
            .find(|p| p.pid == pid)
            .unwrap_or_else(|| panic!("pid {pid} not found"))
    };
    let k = proc_of(p_kept.pid());
    assert_eq!(
        (k.owner.as_deref(), k.orphan, k.scope),
        (Some("kept"), false, Scope::ThisHome)
    );
    let o = proc_of(p_orphan.pid());
    assert_eq!(
        (o.owner.as_deref(), o.orphan, o.scope),
        (Some("vm-orphan"), true, Scope::ThisHome)
    );
    let fo = proc_of(p_foreign.pid());
    assert_eq!((fo.orphan, fo.scope), (false, Scope::Foreign));
    // The directory a live VM runs from is never dangling, whatever its record says.
    let f = by_path(&r);
    assert_eq!(
        f[&orphan_dir].verdict,
        Verdict::Protected,
        "{}",
        f[&orphan_dir].reason
    );
    assert!(
        !f.contains_key(&foreign_dir),
        "another HOME's state is not scanned"
    );
    assert_eq!(r.totals.orphan_process_count, 1);
}

#[test]
fn unreadable_inventory_makes_findings_unknown_never_reclaimable() {
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Linux).unwrap();
    let data = home.celesto_data_dir().unwrap();
    let disk = data.disk("gone", "ext4", 1 << 20, 1 << 16).unwrap();
    std::fs::write(data.dir.join("celesto.db"), vec![0x42u8; 8192]).unwrap();
    smolsweep_fixtures::age_tree(&home.root, smolsweep_fixtures::OLD).unwrap();
    let r = scan(&options(&home, &celesto_path()));
    let f = by_path(&r);
    assert_eq!(f[&disk].verdict, Verdict::Unknown, "{}", f[&disk].reason);
    let cel = r
        .products
        .iter()
        .find(|p| p.product == Product::Celesto)
        .unwrap();
    assert_eq!(cel.status, "unknown");
    assert!(!cel.problems.is_empty());
    assert_eq!(r.totals.reclaimable_allocated_bytes, 0);
}

/// Every path below `root` with what a scan must not change.
/// (inode, atime, atime ns, mtime, mtime ns, ctime, size, data digest).
type Stamp = (u64, i64, i64, i64, i64, i64, u64, Vec<u8>);

fn state_of(root: &Path) -> BTreeMap<PathBuf, Stamp> {
    let mut out = BTreeMap::new();
    // Walk with O_NOATIME listings: the check itself must not disturb what it checks.
    let mut paths = vec![root.to_path_buf()];
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for (path, is_dir) in smolsweep_fixtures::noatime::read_dir(&d).unwrap() {
            if is_dir {
                stack.push(path.clone());
            }
            paths.push(path);
        }
    }
    for p in paths {
        let m = std::fs::symlink_metadata(&p).unwrap();
        let content = if m.is_file() {
            data_digest(&p)
        } else {
            Vec::new()
        };
        out.insert(
            p.clone(),
            (
                m.ino(),
                m.atime(),
                m.atime_nsec(),
                m.mtime(),
                m.mtime_nsec(),
                m.ctime(),
                m.size(),
                content,
            ),
        );
    }
    out
}

/// SHA-256 over the data regions of a (possibly sparse, many-GiB) file, read `O_NOATIME`:
/// holes read as zeros, so hashing (offset, data) of each region pins every byte.
fn data_digest(path: &Path) -> Vec<u8> {
    use sha2::{Digest, Sha256};
    use std::io::{Read, Seek, SeekFrom};
    use std::os::fd::AsRawFd;
    let mut f = smolsweep_fixtures::noatime::open(path).unwrap();
    let len = f.metadata().unwrap().len() as i64;
    let mut h = Sha256::new();
    let mut pos: i64 = 0;
    let mut buf = vec![0u8; 1 << 16];
    while pos < len {
        // SAFETY: lseek on a valid descriptor.
        let data = unsafe { libc::lseek(f.as_raw_fd(), pos, libc::SEEK_DATA) };
        if data < 0 {
            break; // only a hole remains
        }
        let hole = unsafe { libc::lseek(f.as_raw_fd(), data, libc::SEEK_HOLE) };
        f.seek(SeekFrom::Start(data as u64)).unwrap();
        h.update(data.to_le_bytes());
        let mut left = (hole - data) as usize;
        while left > 0 {
            let n = f.read(&mut buf[..left.min(1 << 16)]).unwrap();
            if n == 0 {
                break;
            }
            h.update(&buf[..n]);
            left -= n;
        }
        pos = hole;
    }
    h.finalize().to_vec()
}

/// Move every atime below `root` before its mtime, so relatime would update it on any read.
fn only_marker_link_atime(p: &Path, b: &Stamp, a: &Stamp) -> bool {
    let link = std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink());
    let marker = p.to_string_lossy().ends_with(".retained");
    link && marker && (b.0, b.3, b.4, b.5, b.6, &b.7) == (a.0, a.3, a.4, a.5, a.6, &a.7)
}

fn age_atimes(root: &Path) {
    for e in walkdir::WalkDir::new(root).follow_links(false) {
        let e = e.unwrap();
        let c = std::ffi::CString::new(e.path().as_os_str().as_encoded_bytes()).unwrap();
        let t = [
            libc::timespec {
                tv_sec: 1_000_000,
                tv_nsec: 0,
            },
            libc::timespec {
                tv_sec: 0,
                tv_nsec: libc::UTIME_OMIT,
            },
        ];
        // SAFETY: valid C string and timespec array.
        let rc = unsafe {
            libc::utimensat(
                libc::AT_FDCWD,
                c.as_ptr(),
                t.as_ptr(),
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        assert_eq!(rc, 0, "utimensat {}", e.path().display());
    }
}

#[test]
fn scan_changes_no_byte_or_timestamp_of_a_populated_tree() {
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Linux).unwrap();
    let _cel = celesto_edge_cases(&home).unwrap();
    let _smol = smolvm_edge_cases(&home).unwrap();
    age_atimes(t.path());
    let before = state_of(t.path());
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_smolsweep"))
        .args(["scan", "--json"])
        .env_clear()
        .envs(home.env_vars())
        .env("PATH", celesto_path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: ScanReport = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report.findings.len() > 50, "the tree was scanned");
    let after = state_of(t.path());
    let mut diffs = Vec::new();
    for (p, b) in &before {
        match after.get(p) {
            None => diffs.push(format!("vanished: {}", p.display())),
            // Resolving a `.retained` marker link (judged as upstream does) is a read of the
            // link the kernel may record in the link's own access time; nothing else may move.
            Some(a) if a != b && !only_marker_link_atime(p, b, a) => diffs.push(format!(
                "changed: {} (ino, atime, atime_ns, mtime, mtime_ns, ctime, size) {:?} -> {:?}",
                p.display(),
                (b.0, b.1, b.2, b.3, b.4, b.5, b.6),
                (a.0, a.1, a.2, a.3, a.4, a.5, a.6)
            )),
            _ => {}
        }
    }
    for p in after.keys().filter(|p| !before.contains_key(*p)) {
        diffs.push(format!("appeared: {}", p.display()));
    }
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}

#[test]
fn json_report_has_the_contract_fields_and_stable_ids() {
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Linux).unwrap();
    let _cel = celesto_edge_cases(&home).unwrap();
    let run = || {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_smolsweep"))
            .args(["scan", "--json"])
            .env_clear()
            .envs(home.env_vars())
            .env("PATH", celesto_path())
            .output()
            .unwrap();
        assert!(out.status.success());
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let a = run();
    assert_eq!(a["schema"], "smolsweep.scan/1");
    assert_eq!(a["home"], home.root.display().to_string());
    assert_eq!(a["platform"], "linux");
    for p in a["products"].as_array().unwrap() {
        for k in ["product", "detected", "status", "roots", "problems"] {
            assert!(p.get(k).is_some(), "product lacks {k}");
        }
    }
    let findings = a["findings"].as_array().unwrap();
    assert!(!findings.is_empty());
    for f in findings {
        for k in [
            "id",
            "product",
            "kind",
            "path",
            "owner",
            "apparent_bytes",
            "allocated_bytes",
            "verdict",
            "reason",
        ] {
            assert!(f.get(k).is_some(), "finding lacks {k}: {f}");
        }
        let kind = f["kind"].as_str().unwrap();
        assert!(kind.starts_with(&format!("{}.", f["product"].as_str().unwrap())));
        assert!(!f["reason"].as_str().unwrap().is_empty());
    }
    for k in ["reclaimable_allocated_bytes", "opt_in_allocated_bytes"] {
        assert!(a["totals"][k].is_u64());
    }
    let ids = |v: &serde_json::Value| -> Vec<String> {
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        ids(&a),
        ids(&run()),
        "ids are stable across scans of the same state"
    );
    // Human output carries the summary table.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_smolsweep"))
        .arg("scan")
        .env_clear()
        .envs(home.env_vars())
        .env("PATH", celesto_path())
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("VERDICT") && text.contains("reclaimable"),
        "{text}"
    );
    assert!(text.contains("Orphaned disks"), "{text}");
    assert!(
        !text.contains("orphan_disk"),
        "no internal kind names: {text}"
    );
}

#[test]
fn mount_point_under_a_root_is_its_own_protected_finding_and_never_walked() {
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Linux).unwrap();
    let sm = home.smolvm().unwrap();
    let dangling = sm.dangling_dir("vm-mounted").unwrap();
    let mp = dangling.join("pack");
    std::fs::create_dir(&mp).unwrap();
    // A real mount (CI runs as root); unmounted when the guard drops.
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(&self.0).status();
        }
    }
    let st = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=4m", "tmpfs"])
        .arg(&mp)
        .status()
        .expect("mount");
    assert!(st.success(), "mounting a tmpfs needs root");
    let _guard = Unmount(mp.clone());
    std::fs::write(mp.join("inside"), vec![1u8; 200_000]).unwrap();
    smolsweep_fixtures::age_tree(&dangling, smolsweep_fixtures::OLD).unwrap();
    let r = scan(&options(&home, "/usr/bin:/bin"));
    let f = by_path(&r);
    let m = f.get(&mp).expect("the mount point is a finding");
    assert_eq!(m.kind, "smolvm.mount_point");
    assert_eq!(m.verdict, Verdict::Protected);
    let d = f[&dangling];
    assert_eq!(d.mounts_inside, vec![mp.clone()]);
    // The mount's contents are not counted: the same figure as `du -sx`.
    let du = std::process::Command::new("du")
        .args(["-s", "-x", "-B1"])
        .arg(&dangling)
        .output()
        .unwrap();
    let du: u64 = String::from_utf8_lossy(&du.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(d.allocated_bytes, du);
    assert!(!f.contains_key(&mp.join("inside")));
}

#[test]
fn macos_layout_is_scanned_as_data_on_linux() {
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Macos).unwrap();
    let mut case = smolvm_edge_cases(&home).unwrap();
    let names: Vec<String> = case.records.iter().map(|r| r.name.clone()).collect();
    case.held_locks.clear();
    let mut opts = options(&home, "/usr/bin:/bin");
    opts.platform = Platform::Macos;
    let r = scan(&opts);
    assert_eq!(r.platform, Platform::Macos);
    let smol = r
        .products
        .iter()
        .find(|p| p.product == Product::Smolvm)
        .unwrap();
    assert_eq!(
        smol.roots["cache_root"],
        home.path("Library/Caches/smolvm"),
        "macOS roots come from ~/Library"
    );
    check_manifest(&r, &case.manifest, "smolvm", &names, &|l| {
        if l == "held_lock" {
            "free_lock"
        } else {
            l
        }
    });
    // The leased pack (this test's own pid holds the lease) is protected.
    let leased = case.manifest.with_label("pack_cache_leased");
    assert!(!leased.is_empty());
    for p in leased {
        assert_eq!(by_path(&r)[p].verdict, Verdict::Protected);
    }
}
