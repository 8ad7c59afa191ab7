//! The fixture builders produce what they claim: files exist with the sizes, modes, ages, link
//! targets and socket types they promise; the inventories are readable with the exact upstream
//! schemas; the qcow2 overlays carry their backing paths; the manifests cover their labels.

use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use rusqlite::{Connection, OpenFlags};
use serde_json::Value;
use smolsweep_fixtures::celesto::{self, CELESTO_SCHEMA, CURRENT_VERSION};
use smolsweep_fixtures::smolvm::{self, Smolvm, RECORD_KEYS, SMOLVM_SCHEMA};
use smolsweep_fixtures::{
    age_tree, allocated, big::big_tree, celesto_edge_cases, smolvm_edge_cases, Home, Layout,
    IMPOSSIBLE_PID, IMPOSSIBLE_PID_SMOLVM,
};
use tempfile::TempDir;

const GIB: u64 = 1 << 30;

fn home(layout: Layout) -> (TempDir, Home) {
    let t = tempfile::tempdir().unwrap();
    let h = Home::new(t.path(), layout).unwrap();
    (t, h)
}

fn ro(db: &Path) -> Connection {
    Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap()
}

fn schema_text(db: &Path) -> String {
    let c = ro(db);
    let mut st = c
        .prepare("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY rowid")
        .unwrap();
    let v: Vec<String> = st
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    v.iter().map(|s| format!("{s};\n")).collect()
}

fn mtime(p: &Path) -> SystemTime {
    fs::symlink_metadata(p).unwrap().modified().unwrap()
}

fn age_of(p: &Path) -> Duration {
    SystemTime::now()
        .duration_since(mtime(p))
        .unwrap_or(Duration::ZERO)
}

fn qemu_info(p: &Path) -> Value {
    let out = Command::new("qemu-img")
        .args(["info", "-U", "--output=json"])
        .arg(p)
        .output()
        .expect("qemu-img must be installed (scripts/setup)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

// ------------------------------------------------------------------------------------------
// Celesto

#[test]
fn celesto_db_schema_is_celesto_0_1_10_ddl_verbatim() {
    let (_t, h) = home(Layout::Linux);
    let d = h.celesto_data_dir().unwrap();
    assert_eq!(schema_text(&d.db), CELESTO_SCHEMA);
    let legacy = d.legacy_smolvm_db().unwrap();
    assert_eq!(legacy.db, d.dir.join("smolvm.db"));
    assert_eq!(schema_text(&legacy.db), CELESTO_SCHEMA);
    let c = ro(&d.db);
    let mode: String = c
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "delete", "celesto uses a rollback journal, not WAL");
    assert_eq!(fs::metadata(&d.db).unwrap().mode() & 0o777, 0o600);
    assert_eq!(fs::metadata(&d.dir).unwrap().mode() & 0o777, 0o700);
    assert!(d.dir.join("disks").is_dir() && d.dir.join("snapshots").is_dir());
}

#[test]
fn celesto_edge_case_manifest_paths_exist_and_cover_every_label() {
    let (_t, h) = home(Layout::Linux);
    let case = celesto_edge_cases(&h).unwrap();
    for e in &case.manifest.entries {
        assert!(
            fs::symlink_metadata(&e.path).is_ok(),
            "{} ({}) missing",
            e.path.display(),
            e.label
        );
        assert!(
            celesto::labels().contains(&e.label),
            "unknown label {}",
            e.label
        );
        assert_eq!(e.product, "celesto");
        assert!(
            e.path.starts_with(&h.root) || e.path.starts_with(&h.socket_dir),
            "{} escapes the scratch dirs",
            e.path.display()
        );
    }
    let used = case.manifest.labels();
    for l in celesto::labels() {
        assert!(used.contains(l), "label {l} never used");
    }
    // No path is listed twice.
    let mut paths: Vec<_> = case.manifest.entries.iter().map(|e| &e.path).collect();
    paths.sort();
    let n = paths.len();
    paths.dedup();
    assert_eq!(n, paths.len(), "duplicate manifest paths");
    // Spot checks of the §12.5 catalogue.
    let m = &case.manifest;
    assert_eq!(m.find("disks/orph1.ext4").label, "orphan_disk");
    assert_eq!(m.find("celesto/orph1.log").label, "orphan_log");
    assert_eq!(m.find("disks/saved1.ext4.retained").label, "saved");
    assert_eq!(m.find("disks/dangle.ext4").label, "orphan_disk");
    assert_eq!(
        m.find("disks/ghost.ext4.retained").label,
        "orphan_companion"
    );
    assert_eq!(m.find("disks/legacy1.ext4").label, "live");
    assert_eq!(m.find("disks/bs-vm.ext4").label, "live");
    assert_eq!(
        m.find("images/ubuntu-v0.1.9-amd64-qemu").label,
        "stale_cache_in_use"
    );
    assert_eq!(m.find("images/ubuntu-v0.1.9").label, "unversioned_cache");
    assert_eq!(
        m.find("images/ubuntu-v1.2.3rc1-amd64-qemu").label,
        "newer_cache"
    );
    assert_eq!(
        m.find(&format!("images/ubuntu-v{CURRENT_VERSION}-amd64-qemu"))
            .label,
        "current_cache"
    );
    for noise in [
        "disks/notes.img",
        "disks/two.dots.qcow2",
        "disks/adir.qcow2",
        "disks/UPPER.qcow2",
        "celesto/.hidden.log",
        "celesto/Weird.Name.log",
        "celesto/not-a-log.txt",
    ] {
        assert_eq!(m.find(noise).label, "unrecognised", "{noise}");
    }
    assert_eq!(case.in_use_disk, case.data.disks().join("inuse1.qcow2"));
}

#[test]
fn celesto_rows_sessions_and_snapshots_read_back() {
    let (_t, h) = home(Layout::Linux);
    let case = celesto_edge_cases(&h).unwrap();
    let c = ro(&case.data.db);
    let mut st = c
        .prepare("SELECT id, status, pid, config FROM vms ORDER BY id")
        .unwrap();
    let rows: Vec<(String, String, Option<i64>, String)> = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let ids: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(
        ids,
        [
            "created1",
            "err1",
            "fire1",
            "stale-pause",
            "stale-run",
            "stopped1",
            "vm-abc123",
            "vm-custom1"
        ]
    );
    for (id, status, pid, cfg) in &rows {
        let cfg: Value = serde_json::from_str(cfg).unwrap();
        assert_eq!(cfg["vm_id"], id.as_str());
        let disk = PathBuf::from(cfg["rootfs_path"].as_str().unwrap());
        assert!(
            disk.is_file(),
            "{id}: rootfs_path {} is its disk",
            disk.display()
        );
        let want_ext = if cfg["backend"] == "qemu" {
            "qcow2"
        } else {
            "ext4"
        };
        assert_eq!(disk.extension().unwrap(), want_ext);
        match id.as_str() {
            "stale-run" => assert_eq!((status.as_str(), *pid), ("running", Some(IMPOSSIBLE_PID))),
            "stale-pause" => assert_eq!((status.as_str(), *pid), ("paused", Some(IMPOSSIBLE_PID))),
            "fire1" => assert_eq!(
                (status.as_str(), *pid),
                ("running", Some(std::process::id() as i64))
            ),
            _ => assert!(pid.is_none()),
        }
    }
    assert!(!Path::new(&format!("/proc/{IMPOSSIBLE_PID}")).exists());
    assert!(!Path::new(&format!("/proc/{IMPOSSIBLE_PID_SMOLVM}")).exists());
    let expect = case.rows.iter().find(|r| r.id == "fire1").unwrap();
    assert!(expect.pid_alive);
    assert!(
        !case
            .rows
            .iter()
            .find(|r| r.id == "stale-run")
            .unwrap()
            .pid_alive
    );

    let sessions: Vec<(String, String)> = c
        .prepare("SELECT session_id, vm_id FROM browser_sessions ORDER BY session_id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        sessions,
        [
            ("bs-same".to_string(), "bs-same".to_string()),
            ("bs-sess".to_string(), "bs-vm".to_string())
        ]
    );
    let snaps: Vec<(String, String)> = c
        .prepare("SELECT snapshot_id, vm_id FROM snapshots ORDER BY snapshot_id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(snaps[0], ("snap-live".into(), "vm-abc123".into()));
    assert_eq!(snaps[1], ("snap-old".into(), "deleted-vm".into()));
    // B5: the row only in smolvm.db.
    let legacy: Vec<String> = ro(&case.data.dir.join("smolvm.db"))
        .prepare("SELECT id FROM vms")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(legacy, ["legacy1"]);
}

#[test]
fn sparse_disks_have_the_promised_apparent_and_allocated_sizes() {
    let (_t, h) = home(Layout::Linux);
    let d = h.celesto_data_dir().unwrap();
    let p = d.disk("vm-x", "ext4", 2 * GIB, 3 << 20).unwrap();
    assert_eq!(fs::metadata(&p).unwrap().len(), 2 * GIB);
    let a = allocated(&p).unwrap();
    assert!(a >= 3 << 20, "allocated {a}");
    assert!(a < 4 << 20, "allocated {a}: the rest must stay a hole");
    // Not all-zero data: compressing file systems still allocate it.
    let mut buf = vec![0u8; 4096];
    use std::io::Read;
    fs::File::open(&p).unwrap().read_exact(&mut buf).unwrap();
    assert!(buf.iter().any(|&b| b != 0));
}

#[test]
fn qcow2_overlay_records_the_absolute_backing_path() {
    let (_t, h) = home(Layout::Linux);
    let case = celesto_edge_cases(&h).unwrap();
    let disks = case.data.disks();
    let base = case
        .images
        .dir
        .join("ubuntu-v0.1.9-amd64-qemu/rootfs.ext4")
        .canonicalize()
        .unwrap();
    let info = qemu_info(&disks.join("vm-abc123.qcow2"));
    assert_eq!(info["format"], "qcow2");
    assert_eq!(info["backing-filename"], base.to_str().unwrap());
    assert_eq!(info["backing-filename-format"], "raw");
    // orph2.qcow2 -> orph2.qcow2.backing-3f2a.qcow2 (a companion inside disks/).
    let info = qemu_info(&disks.join("orph2.qcow2"));
    let backing = PathBuf::from(info["backing-filename"].as_str().unwrap());
    assert_eq!(
        backing,
        disks
            .canonicalize()
            .unwrap()
            .join("orph2.qcow2.backing-3f2a.qcow2")
    );
    assert_eq!(info["backing-filename-format"], "qcow2");
}

#[test]
fn celesto_ages_old_items_and_keeps_the_create_in_progress_young() {
    let (_t, h) = home(Layout::Linux);
    let case = celesto_edge_cases(&h).unwrap();
    let m = &case.manifest;
    for e in &m.entries {
        let age = age_of(&e.path);
        if e.label == "young_orphan_disk" {
            assert!(
                age < Duration::from_secs(600),
                "{} is young",
                e.path.display()
            );
        } else {
            assert!(
                age > Duration::from_secs(3000),
                "{} is old ({age:?})",
                e.path.display()
            );
        }
    }
}

#[test]
fn celesto_symlinks_sockets_and_markers_have_their_shapes() {
    let (_t, h) = home(Layout::Linux);
    let case = celesto_edge_cases(&h).unwrap();
    let disks = case.data.disks();
    // Dangling marker symlink: exists as a link, follows to nothing.
    let marker = disks.join("dangle.ext4.retained");
    assert!(fs::symlink_metadata(&marker)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(!marker.exists());
    // Saved marker: an empty regular file.
    let saved = disks.join("saved1.ext4.retained");
    assert!(saved.is_file() && fs::metadata(&saved).unwrap().len() == 0);
    // link.ext4 -> real-target.ext4 (relative).
    assert_eq!(
        fs::read_link(disks.join("link.ext4")).unwrap(),
        PathBuf::from("real-target.ext4")
    );
    assert!(disks.join("adir.qcow2").is_dir());
    // Real Unix sockets that outlived their listeners.
    for s in [
        "fc-orph1.sock",
        "qmp-orph2.sock",
        "vsock-orph1.sock",
        "krun-gvproxy-1a2b3c4d.sock",
    ] {
        let md = fs::symlink_metadata(h.socket_dir.join(s)).unwrap();
        assert!(md.file_type().is_socket(), "{s} is a socket");
    }
    let cfg = case.manifest.with_label("stale_libkrun_config");
    let name = cfg[0].file_name().unwrap().to_str().unwrap();
    assert!(name.starts_with("libkrun-orph3-") && name.ends_with(".json"));
    assert_eq!(name.len(), "libkrun-orph3-".len() + 32 + ".json".len());
    // The stale-named image symlink points outside the cache at a real directory.
    let link = case.images.dir.join("ubuntu-v0.1.6-amd64-qemu");
    assert!(fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(link.is_dir() && !fs::read_link(&link).unwrap().starts_with(&case.images.dir));
    assert!(case.images.dir.join("ubuntu-v0.1.7-amd64-qemu").is_file());
    // Logs are private, like the CLI's.
    assert_eq!(
        fs::metadata(case.data.dir.join("orph1.log"))
            .unwrap()
            .mode()
            & 0o777,
        0o600
    );
}

#[test]
fn celesto_create_lock_is_held_while_the_case_lives() {
    let (_t, h) = home(Layout::Linux);
    let case = celesto_edge_cases(&h).unwrap();
    let lock = case.data.dir.join("locks/young1.create.lock");
    let try_lock = || {
        let f = fs::File::open(&lock).unwrap();
        rustix::fs::flock(&f, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_ok()
    };
    assert!(!try_lock(), "held while the case lives");
    drop(case);
    assert!(try_lock(), "released with the case");
}

#[test]
fn celesto_config_paths_can_be_edited_per_row() {
    let (_t, h) = home(Layout::Macos);
    let d = h.celesto_data_dir().unwrap();
    let mut cfg = d.default_config("keep1", "firecracker");
    cfg["retain_disk_on_delete"] = Value::Bool(true);
    d.row_with_config("keep1", "stopped", None, &cfg).unwrap();
    d.raw_row("broken", "stopped", "{}", None).unwrap();
    let c = ro(&d.db);
    let got: String = c
        .query_row("SELECT config FROM vms WHERE id='keep1'", [], |r| r.get(0))
        .unwrap();
    let got: Value = serde_json::from_str(&got).unwrap();
    assert_eq!(got["retain_disk_on_delete"], true);
    assert_eq!(got["rootfs_format"], "raw-ext4");
    let broken: String = c
        .query_row("SELECT config FROM vms WHERE id='broken'", [], |r| r.get(0))
        .unwrap();
    assert_eq!(broken, "{}");
    // Celesto's layout is the same on macOS: no ~/Library path.
    assert!(d.dir.ends_with(".local/state/celesto"));
}

// ------------------------------------------------------------------------------------------
// smol-machines smolvm

#[test]
fn smolvm_db_schema_is_the_observed_1_32_2_ddl_in_wal_mode() {
    let (_t, h) = home(Layout::Linux);
    let s = h.smolvm().unwrap();
    s.record("demo", serde_json::json!({})).unwrap();
    assert_eq!(s.db, h.path(".local/share/smolvm/server/smolvm.db"));
    assert_eq!(schema_text(&s.db), SMOLVM_SCHEMA);
    let mode: String = ro(&s.db)
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
}

#[test]
fn smolvm_records_are_json_blobs_with_every_observed_key_in_order() {
    let (_t, h) = home(Layout::Linux);
    let case = smolvm_edge_cases(&h).unwrap();
    let c = ro(&case.smolvm.db);
    let mut st = c
        .prepare("SELECT name, typeof(data), data FROM vms ORDER BY name")
        .unwrap();
    let rows: Vec<(String, String, Vec<u8>)> = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(rows.len(), case.records.len());
    for (name, ty, data) in &rows {
        assert_eq!(ty, "blob", "{name}: smolvm fails on TEXT data (hazard 20)");
        let text = std::str::from_utf8(data).unwrap();
        assert!(text.starts_with(&format!("{{\"name\":\"{name}\",\"created_at\":")));
        let v: Value = serde_json::from_slice(data).unwrap();
        for k in RECORD_KEYS {
            assert!(v.get(*k).is_some(), "{name} lacks {k}");
        }
        // Keys appear in smolvm's order.
        let pos: Vec<usize> = RECORD_KEYS
            .iter()
            .map(|k| text.find(&format!("\"{k}\":")).unwrap())
            .collect();
        assert!(pos.windows(2).all(|w| w[0] < w[1]), "{name}: key order");
    }
    let get = |n: &str| case.records.iter().find(|r| r.name == n).unwrap();
    assert_eq!(get("web").state, "running");
    assert_eq!(get("web").pid, Some(IMPOSSIBLE_PID_SMOLVM));
    assert_eq!(get("web").expected, "stale_running");
    assert!(get("eph1").ephemeral && get("eph1").expected == "dead_ephemeral");
    assert_eq!(get("paused1").state, "paused");
    assert!(get("demo").dir.is_none());
    let recs = smolvm::read_records(&case.smolvm.db).unwrap();
    let child = recs.iter().find(|(n, _)| n == "child1").unwrap();
    assert_eq!(child.1["golden"], "stopped1");
}

#[test]
fn smolvm_db_wal_only_record_needs_a_wal_aware_reader() {
    let (_t, h) = home(Layout::Linux);
    let case = smolvm_edge_cases(&h).unwrap();
    let db = &case.smolvm.db;
    let wal = db.with_extension("db-wal");
    assert!(
        fs::metadata(&wal).unwrap().len() > 0,
        "-wal holds committed data"
    );
    assert!(db.with_extension("db-shm").exists());
    let names = |recs: Vec<(String, Value)>| recs.into_iter().map(|r| r.0).collect::<Vec<_>>();
    let all = names(smolvm::read_records(db).unwrap());
    assert!(all.contains(&"late1".to_string()));
    // immutable=1 ignores the WAL: the record is invisible to such a reader.
    let uri = format!("file:{}?immutable=1", db.display());
    let c = Connection::open_with_flags(
        &uri,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI,
    )
    .unwrap();
    let imm: Vec<String> = c
        .prepare("SELECT name FROM vms")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(!imm.contains(&"late1".to_string()));
    assert!(imm.contains(&"demo".to_string()));
    assert!(case.records.iter().any(|r| r.name == "late1" && r.in_wal));
}

#[test]
fn smolvm_machine_dirs_are_named_by_sha256_prefix_with_a_name_file() {
    let (_t, h) = home(Layout::Linux);
    let case = smolvm_edge_cases(&h).unwrap();
    // Observed with 1.32.2: `ghost` -> ead6ef03d61ee60c.
    assert_eq!(Smolvm::hash("ghost"), "ead6ef03d61ee60c");
    let vms = case.smolvm.vms_dir();
    assert_eq!(vms, h.path(".cache/smolvm/vms"));
    for r in &case.records {
        if let Some(d) = &r.dir {
            assert_eq!(
                d.file_name().unwrap().to_str().unwrap(),
                Smolvm::hash(&r.name)
            );
            assert_eq!(fs::read_to_string(d.join("name")).unwrap(), r.name);
        }
    }
    let ghost = vms.join("ead6ef03d61ee60c");
    assert_eq!(fs::read_dir(&ghost).unwrap().count(), 1);
    assert_eq!(fs::read(ghost.join("name")).unwrap().len(), 5);
    assert_eq!(
        fs::read_dir(vms.join("0123456789abcdef")).unwrap().count(),
        0
    );
    // The 1.32.2 failed-boot set, with real sockets.
    let booted = vms.join(Smolvm::hash("booted"));
    for f in [
        "agent-console.log",
        "agent-startup-error.log",
        "agent.config.json",
        "name",
        "overlay.formatted",
        "overlay.qcow2",
        "storage.formatted",
        "storage.qcow2",
        "vm.lock",
        "vmm-exit.json",
        "workload.log",
    ] {
        assert!(booted.join(f).is_file(), "{f}");
    }
    for s in ["agent.logs", "agent.ready", "control.sock", "ports.sock"] {
        assert!(fs::symlink_metadata(booted.join(s))
            .unwrap()
            .file_type()
            .is_socket());
    }
    // Sparse disks of a stopped machine.
    let st = vms.join(Smolvm::hash("stopped1")).join("storage.raw");
    assert_eq!(fs::metadata(&st).unwrap().len(), 20 * GIB);
    let a = allocated(&st).unwrap();
    assert!((4 << 20..5 << 20).contains(&a), "allocated {a}");
    // The #373 layout.
    assert!(h
        .path(".local/share/smolvm/vms")
        .join(Smolvm::hash("moved1"))
        .join("storage.raw")
        .is_file());
}

#[test]
fn smolvm_edge_case_manifest_paths_exist_and_are_aged() {
    for layout in [Layout::Linux, Layout::Macos] {
        let (_t, h) = home(layout);
        let case = smolvm_edge_cases(&h).unwrap();
        for e in &case.manifest.entries {
            assert!(
                fs::symlink_metadata(&e.path).is_ok(),
                "{layout:?}: {} ({}) missing",
                e.path.display(),
                e.label
            );
            assert!(
                smolvm::labels().contains(&e.label),
                "unknown label {}",
                e.label
            );
            let age = age_of(&e.path);
            if matches!(e.label, "young_dangling_dir" | "held_lock") {
                assert!(age < Duration::from_secs(600), "{} young", e.path.display());
            } else {
                assert!(age > Duration::from_secs(3000), "{} old", e.path.display());
            }
        }
        let used = case.manifest.labels();
        for l in smolvm::labels() {
            let mac_only = matches!(*l, "pack_cache_leased" | "pack_mount");
            assert_eq!(
                used.contains(l),
                layout == Layout::Macos || !mac_only,
                "{layout:?}: label {l}"
            );
        }
        // Held lock really held.
        let held = case.manifest.with_label("held_lock")[0].to_path_buf();
        let f = fs::File::open(&held).unwrap();
        assert!(
            rustix::fs::flock(&f, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_err()
        );
    }
}

#[test]
fn smolvm_macos_layout_uses_library_and_pack_volumes() {
    let (_t, h) = home(Layout::Macos);
    let case = smolvm_edge_cases(&h).unwrap();
    let s = &case.smolvm;
    assert_eq!(s.data_root, h.path("Library/Application Support/smolvm"));
    assert_eq!(s.cache_root, h.path("Library/Caches/smolvm"));
    assert_eq!(s.config_dir, h.path(".config/smolvm"));
    assert!(h.path("Library/Caches/smolvm/vms").is_dir());
    assert!(h
        .path("Library/Application Support/smolvm/server/smolvm.db")
        .is_file());
    assert!(!h.path(".cache").exists() && !h.path(".local/share").exists());
    let pack = h.path("Library/Caches/smolvm-pack/a1b2c3d4");
    assert!(pack.join("layers-cs").is_dir());
    let img = pack.join("layers-cs.sparseimage");
    assert_eq!(fs::metadata(&img).unwrap().len(), 2 * GIB);
    assert!(pack
        .join(format!("leases/{IMPOSSIBLE_PID_SMOLVM}"))
        .is_file());
    assert!(pack.join("leases.lock").is_file());
    let leased = h.path("Library/Caches/smolvm-pack/e5f6a7b8");
    assert!(leased
        .join(format!("leases/{}", std::process::id()))
        .is_file());
    assert!(h
        .path("Library/Caches/smolvm-libs/0badc0de/lib/libkrun.dylib")
        .is_file());
    let wrapper = fs::read_to_string(h.path(".smolvm/smolvm")).unwrap();
    assert!(wrapper.contains("DYLD_LIBRARY_PATH"));
    // Linux-only pieces are absent.
    assert!(!s.data_root.join("init.krun").exists());
    assert!(!h.path(".smolvm/storage-template.ext4").exists());
    // A macOS machine with a per-machine pack volume.
    let packed = s.vms_dir().join(Smolvm::hash("packed1"));
    assert!(packed.join("pack/layers-cs").is_dir());
}

#[test]
fn smolvm_install_launchers_and_path_block_match_the_installer() {
    let (_t, h) = home(Layout::Linux);
    let case = smolvm_edge_cases(&h).unwrap();
    let bin = h.path(".local/bin");
    assert_eq!(
        fs::read_link(bin.join("smolvm")).unwrap(),
        h.path(".smolvm/smolvm")
    );
    assert_eq!(
        fs::read_link(bin.join("smol")).unwrap(),
        h.path(".smolvm/smol")
    );
    assert_eq!(
        fs::read_to_string(h.path(".smolvm/.version")).unwrap(),
        "1.32.2\n"
    );
    // The launcher really runs the wrapper, which execs the dummy smolvm-bin.
    let out = Command::new(bin.join("smolvm"))
        .arg("--version")
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "smolvm 1.32.2\n");
    // Expanded templates are sparse at their virtual sizes (install.sh truncates on Linux).
    assert_eq!(
        fs::metadata(h.path(".smolvm/storage-template.ext4"))
            .unwrap()
            .len(),
        20 * GIB
    );
    let block = format!(
        "\n# smolvm\nexport PATH=\"{}:$PATH\"\n",
        h.path(".local/bin").display()
    );
    for (path, without, has) in &case.rc_files {
        let text = fs::read_to_string(path).unwrap();
        if *has {
            let fish = path.ends_with("config.fish");
            let b = if fish {
                format!(
                    "\n# smolvm\nset -gx PATH {} $PATH\n",
                    h.path(".local/bin").display()
                )
            } else {
                block.clone()
            };
            assert!(text.contains(&b), "{}", path.display());
            assert_eq!(&text.replacen(&b, "", 1), without);
        } else {
            assert_eq!(&text, without);
            assert!(!text.contains("# smolvm"));
        }
    }
    assert!(case
        .rc_files
        .iter()
        .any(|(p, t, has)| p.ends_with(".profile") && !has && t.contains(".local/bin")));
    let cfg = h.path(".config/smolvm/config.toml");
    assert!(fs::read_to_string(&cfg).unwrap().contains("[registries."));
    assert_eq!(fs::metadata(&cfg).unwrap().mode() & 0o777, 0o600);
}

// ------------------------------------------------------------------------------------------
// Shared

#[test]
fn env_vars_point_at_the_scratch_home_and_socket_dir() {
    let (t, h) = home(Layout::Linux);
    let env = h.env_vars();
    assert!(env.contains(&("HOME".into(), t.path().join("home").display().to_string())));
    assert!(env.contains(&(
        "SMOLSWEEP_SOCKET_DIR".into(),
        t.path().join("tmp").display().to_string()
    )));
    assert_eq!(fs::metadata(&h.root).unwrap().mode() & 0o777, 0o700);
}

#[test]
fn both_products_share_one_home_and_keep_their_young_items() {
    let (_t, h) = home(Layout::Linux);
    let sm = smolvm_edge_cases(&h).unwrap();
    let ce = celesto_edge_cases(&h).unwrap();
    let mut all = sm.manifest.clone();
    all.extend(ce.manifest.clone());
    for e in &all.entries {
        let young = matches!(
            e.label,
            "young_orphan_disk" | "young_dangling_dir" | "held_lock"
        );
        let age = age_of(&e.path);
        assert_eq!(
            age < Duration::from_secs(600),
            young,
            "{} ({}) age {age:?}",
            e.path.display(),
            e.label
        );
    }
    // ~/.smolvm holds both products' files, each labelled for its product.
    let dot = h.path(".smolvm");
    assert_eq!(all.entry(&dot.join("smolvm-bin")).unwrap().label, "install");
    assert_eq!(
        all.entry(&dot.join("smolvm-bin")).unwrap().product,
        "smolvm"
    );
    let key = all.entry(&dot.join("keys/id_ed25519")).unwrap();
    assert_eq!((key.label, key.product), ("legacy_home_entry", "celesto"));
    assert!(dot.join("images/ubuntu-v0.0.36-amd64-firecracker").is_dir());
}

#[test]
fn age_tree_ages_children_directories_and_symlinks_without_following() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("x");
    fs::create_dir_all(d.join("sub")).unwrap();
    fs::write(d.join("sub/f"), b"x").unwrap();
    let outside = t.path().join("outside");
    fs::write(&outside, b"y").unwrap();
    std::os::unix::fs::symlink(&outside, d.join("link")).unwrap();
    age_tree(&d, Duration::from_secs(7200)).unwrap();
    for p in [d.clone(), d.join("sub"), d.join("sub/f"), d.join("link")] {
        assert!(age_of(&p) > Duration::from_secs(7000), "{}", p.display());
    }
    assert!(
        age_of(&outside) < Duration::from_secs(600),
        "symlink target untouched"
    );
}

#[test]
fn big_tree_has_small_files_sparse_files_and_hard_links() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("big");
    let made = big_tree(&root, 3000).unwrap();
    assert_eq!(made.files, 3000);
    assert_eq!(made.sparse, 3);
    assert_eq!(made.hard_links, 6);
    let mut files = 0;
    let mut linked = 0;
    let mut apparent = 0u64;
    let mut stack = vec![root.clone()];
    let mut seen = std::collections::HashSet::new();
    while let Some(p) = stack.pop() {
        for e in fs::read_dir(&p).unwrap() {
            let e = e.unwrap();
            let md = e.metadata().unwrap();
            if md.is_dir() {
                stack.push(e.path());
            } else {
                files += 1;
                if md.nlink() > 1 {
                    linked += 1;
                }
                if seen.insert(md.ino()) {
                    apparent += md.len();
                }
            }
        }
    }
    assert_eq!(files, 3000 + 6);
    assert_eq!(linked, 12, "each hard link pair shows twice");
    assert_eq!(apparent, made.apparent);
    assert!(made.dirs >= 3000 / 64);
}
