//! The compaction estimate in the scan (issue 32): every disk of a stopped machine or sandbox
//! and every saved disk of both products, made offline with e2fsprogs and qemu-img, reported as
//! its own figure (never in the reclaimable total) in `scan` (JSON and text), `why` and the
//! Prometheus export; a disk a process holds is not estimated.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};
use smolsweep_fixtures::disks::{debugfs_w, ext4_image, s, to_qcow2};
use smolsweep_fixtures::smolvm::{DiskSet, Smolvm};
use smolsweep_fixtures::vmm::{self, FakeVmm, Shape};
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

/// An ext4 image with 12 MiB written and deleted at `path` (replacing what is there).
fn freed_disk(path: &Path, scratch: &Path) -> PathBuf {
    let img = ext4_image(scratch, "img.ext4", "128M", &[("big", 12)], &[]);
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

fn boot_vm(dir: &Path, sc: &Scratch, open: &Path) -> FakeVmm {
    vmm::spawn(
        &vmm::standin_bin(Path::new(env!("CARGO_TARGET_TMPDIR"))),
        &Shape {
            argv: vec![
                "/proc/self/exe".into(),
                "_boot-vm".into(),
                dir.join("boot-config.json").display().to_string(),
            ],
            comm: Some("libkrun VM"),
            open: Some(open),
            home: Some(&sc.home.root),
        },
    )
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
    let _vm = boot_vm(&dir, &sc, &h.web_storage);
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
