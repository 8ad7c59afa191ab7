//! Reading both products' inventories, against databases made by the real CLIs
//! (celesto 0.1.10 from PyPI, smolvm 1.32.2 from the smolmachines wheel).
//!
//! The real tools come from `scripts/setup/20-real-tools.sh`; without them these tests fail.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime};

use crate::inventory::celesto::{read_celesto_db, valid_sandbox_id};
use crate::inventory::smolvm::{
    read_smolvm_db, read_smolvm_inventory, read_smolvm_reservations, vm_dir_hash,
};
use crate::inventory::InventoryError;
use rusqlite::Connection;
use smolsweep_fixtures::real_tools::{
    celesto_cmd, install_smolvm_script_layout, run_ok, smolvm_cmd,
};

// ---------------------------------------------------------------------------------------------
// Helpers

/// Everything observable about the files below `dir` (and `dir` itself).
#[derive(Debug, PartialEq, Eq)]
struct Stamp {
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    atime: (i64, i64),
    ino: u64,
    mode: u32,
    uid: u32,
    bytes: Option<Vec<u8>>,
}

fn stamp_tree(dir: &Path) -> BTreeMap<PathBuf, Stamp> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(p) = todo.pop() {
        let m = std::fs::symlink_metadata(&p).unwrap();
        if m.is_dir() {
            for e in std::fs::read_dir(&p).unwrap() {
                todo.push(e.unwrap().path());
            }
        }
        // Read contents through O_NOATIME so the check itself does not move atime.
        let bytes = m.is_file().then(|| {
            use std::io::Read;
            let mut v = Vec::new();
            crate::inventory::sqlite_ro::open_noatime(&p)
                .unwrap()
                .read_to_end(&mut v)
                .unwrap();
            v
        });
        out.insert(
            p,
            Stamp {
                size: m.size(),
                mtime: (m.mtime(), m.mtime_nsec()),
                ctime: (m.ctime(), m.ctime_nsec()),
                // Listing a directory (this function does) and resolving a symlink (any reader
                // must) move their atime; regular files are compared.
                atime: if m.is_file() {
                    (m.atime(), m.atime_nsec())
                } else {
                    (0, 0)
                },
                ino: m.ino(),
                mode: m.mode(),
                uid: m.uid(),
                bytes,
            },
        );
    }
    out
}

fn assert_unchanged(before: &BTreeMap<PathBuf, Stamp>, after: &BTreeMap<PathBuf, Stamp>) {
    let mut diffs = Vec::new();
    for (p, a) in after {
        match before.get(p) {
            None => diffs.push(format!("created {}", p.display())),
            Some(b) if b != a => {
                let mut what = Vec::new();
                if b.size != a.size {
                    what.push("size");
                }
                if b.mtime != a.mtime {
                    what.push("mtime");
                }
                if b.ctime != a.ctime {
                    what.push("ctime");
                }
                if b.atime != a.atime {
                    what.push("atime");
                }
                if b.bytes != a.bytes {
                    what.push("bytes");
                }
                if (b.ino, b.mode, b.uid) != (a.ino, a.mode, a.uid) {
                    what.push("inode/mode/owner");
                }
                diffs.push(format!("{}: {}", p.display(), what.join("+")));
            }
            _ => {}
        }
    }
    for p in before.keys() {
        if !after.contains_key(p) {
            diffs.push(format!("removed {}", p.display()));
        }
    }
    assert!(diffs.is_empty(), "reading changed files: {diffs:#?}");
}

/// Sets every file's atime 100 s before its mtime, so a relatime read would move it.
fn age_atimes(dir: &Path) {
    for (p, s) in stamp_tree(dir) {
        if s.bytes.is_none() {
            continue;
        }
        let mtime = SystemTime::UNIX_EPOCH + Duration::new(s.mtime.0 as u64, s.mtime.1 as u32);
        let f = std::fs::File::options().write(true).open(&p).unwrap();
        f.set_times(
            std::fs::FileTimes::new()
                .set_accessed(mtime - Duration::from_secs(100))
                .set_modified(mtime),
        )
        .unwrap();
    }
}

/// A `sqlite3` shell process that ran `sql`, printed `ready` and keeps the database open
/// (and whatever locks `sql` took) until dropped.
struct Holder(Child);

impl Holder {
    fn start(db: &Path, sql: &str) -> Holder {
        let mut child = Command::new("sqlite3")
            .arg(db)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("sqlite3 shell (apt: sqlite3) from scripts/setup/20-real-tools.sh");
        let stdin = child.stdin.as_mut().unwrap();
        writeln!(stdin, "{sql}\n.print ready").unwrap();
        stdin.flush().unwrap();
        let mut out = BufReader::new(child.stdout.as_mut().unwrap());
        loop {
            let mut line = String::new();
            assert!(
                out.read_line(&mut line).unwrap() > 0,
                "sqlite3 shell exited before getting ready"
            );
            if line.trim() == "ready" {
                break;
            }
        }
        Holder(child)
    }
}

impl Holder {
    /// SIGKILL (our own child), so SQLite gets no chance to checkpoint or clean up.
    fn crash(mut self) {
        self.0.kill().unwrap();
        let _ = self.0.wait();
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        drop(self.0.stdin.take());
        let _ = self.0.wait();
    }
}

// ---------------------------------------------------------------------------------------------
// Celesto

struct CelestoHome {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    data: PathBuf,
    images: PathBuf,
}

impl CelestoHome {
    /// A scratch tree whose `celesto.db` was created by the real `celesto sandbox prune
    /// --dry-run --json` (which creates the data dir, the DB, `disks/` and `snapshots/`: B14).
    fn new() -> CelestoHome {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let data = tmp.path().join("state");
        let images = tmp.path().join("images");
        for d in [&home, &images] {
            std::fs::create_dir(d).unwrap();
            std::fs::set_permissions(d, std::os::unix::fs::PermissionsExt::from_mode(0o700))
                .unwrap();
        }
        let h = CelestoHome {
            _tmp: tmp,
            home,
            data,
            images,
        };
        let out = h.prune_dry_run();
        assert!(out.status.success(), "celesto prune failed: {out:?}");
        assert!(h.db().is_file(), "celesto did not create celesto.db");
        h
    }
    fn db(&self) -> PathBuf {
        self.data.join("celesto.db")
    }
    fn prune_dry_run(&self) -> std::process::Output {
        celesto_cmd(&self.home, &self.data, &self.images)
            .args(["sandbox", "prune", "--dry-run", "--json"])
            .output()
            .unwrap()
    }
    fn config(&self, id: &str, backend: &str) -> String {
        let (ext, fmt) = if backend == "qemu" {
            ("qcow2", "qcow2")
        } else {
            ("ext4", "raw-ext4")
        };
        serde_json::json!({
            "vm_id": id,
            "rootfs_path": self.data.join("disks").join(format!("{id}.{ext}")),
            "rootfs_format": fmt,
            "backend": backend,
            "disk_mode": "isolated",
            "retain_disk_on_delete": id.ends_with("keep"),
            "kernel_path": self.images.join("base-kernel-v0.1.10-amd64/vmlinux.elf"),
            "initrd_path": null,
        })
        .to_string()
    }
}

fn insert_vm(db: &Path, id: &str, status: &str, config: &str, pid: Option<i64>) {
    let c = Connection::open(db).unwrap();
    c.execute(
        "INSERT INTO vms (id, status, config, pid, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, '2026-11-30T00:00:00+00:00', '2026-11-30T00:00:00+00:00')",
        rusqlite::params![id, status, config, pid],
    )
    .unwrap();
}

fn insert_browser(db: &Path, session: &str, vm: &str) {
    let c = Connection::open(db).unwrap();
    c.execute(
        "INSERT INTO browser_sessions (session_id, vm_id, config, status, created_at, updated_at)
         VALUES (?1, ?2, '{}', 'ready', '2026-11-30T00:00:00+00:00', '2026-11-30T00:00:00+00:00')",
        [session, vm],
    )
    .unwrap();
}

/// PID above Linux's PID_MAX_LIMIT (4194304): never alive.
const IMPOSSIBLE_PID: i64 = 4_194_304 + 12_345;

#[test]
fn celesto_real_schema_rows_read_back() {
    let h = CelestoHome::new();
    let db = h.db();
    insert_vm(&db, "new1", "created", &h.config("new1", "qemu"), None);
    insert_vm(
        &db,
        "off1keep",
        "stopped",
        &h.config("off1keep", "firecracker"),
        None,
    );
    insert_vm(&db, "bad1", "error", &h.config("bad1", "qemu"), None);
    insert_vm(
        &db,
        "run1",
        "running",
        &h.config("run1", "qemu"),
        Some(IMPOSSIBLE_PID),
    );
    insert_browser(&db, "same1", "same1");
    insert_browser(&db, "sess2", "bvm2");
    Connection::open(&db)
        .unwrap()
        .execute(
            "INSERT INTO snapshots (snapshot_id, vm_id, snapshot_path, mem_file_path, disk_path,
                 vm_config, network_config, created_at)
             VALUES ('snap1', 'gone1', '/s', '/m', '/x', '{}', '{}', '2026-11-30T00:00:00+00:00')",
            [],
        )
        .unwrap();

    let inv = read_celesto_db(&db).unwrap();
    assert_eq!(inv.db_path, db);
    assert!(!inv.legacy);
    assert!(inv.problems.is_empty(), "{:?}", inv.problems);
    let by: BTreeMap<_, _> = inv.sandboxes.iter().map(|s| (s.id.as_str(), s)).collect();
    assert_eq!(by.len(), 4);
    assert_eq!(by["new1"].status, "created");
    assert_eq!(by["off1keep"].status, "stopped");
    assert_eq!(by["bad1"].status, "error");
    let run = by["run1"];
    assert_eq!(
        (run.status.as_str(), run.pid),
        ("running", Some(IMPOSSIBLE_PID))
    );
    assert_eq!(
        run.rootfs_path.as_deref(),
        Some(h.data.join("disks/run1.qcow2").as_path())
    );
    assert_eq!(
        run.kernel_path.as_deref(),
        Some(
            h.images
                .join("base-kernel-v0.1.10-amd64/vmlinux.elf")
                .as_path()
        )
    );
    assert_eq!(run.initrd_path, None);
    assert_eq!(run.backend.as_deref(), Some("qemu"));
    assert_eq!(run.created_at.as_deref(), Some("2026-11-30T00:00:00+00:00"));
    assert!(by["off1keep"].retain_disk_on_delete && !run.retain_disk_on_delete);
    assert_eq!(by["off1keep"].config["rootfs_format"], "raw-ext4");
    assert_eq!(inv.browser_ids, vec!["same1", "sess2", "bvm2"]);
    assert_eq!(
        inv.snapshots,
        vec![("snap1".to_string(), "gone1".to_string())]
    );
    let live: Vec<&str> = inv.live_ids().collect();
    for id in ["new1", "off1keep", "bad1", "run1", "same1", "sess2", "bvm2"] {
        assert!(live.contains(&id), "{id} must be live");
    }

    // The rows are what the real CLI accepts: its own (writing) dry run reconciles the running
    // row with a dead PID to `error` (which is why Smolsweep reads instead of running it).
    let out = h.prune_dry_run();
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Marked stale VM as ERROR: run1"), "{err}");
    let after = read_celesto_db(&db).unwrap();
    let run = after.sandboxes.iter().find(|s| s.id == "run1").unwrap();
    assert_eq!((run.status.as_str(), run.pid), ("error", None));
}

#[test]
fn b5_legacy_smolvm_db_rows_are_live() {
    let h = CelestoHome::new();
    // PyPI smolvm 0.0.36 writes the same schema to `smolvm.db` in the same kind of directory.
    let legacy = h.data.join("smolvm.db");
    std::fs::copy(h.db(), &legacy).unwrap();
    insert_vm(&legacy, "old1", "stopped", &h.config("old1", "qemu"), None);
    std::fs::create_dir_all(h.data.join("disks")).unwrap();
    std::fs::write(h.data.join("disks/old1.qcow2"), b"not really qcow2").unwrap();
    std::fs::write(h.data.join("old1.log"), b"boot log\n").unwrap();

    let inv = read_celesto_db(&legacy).unwrap();
    assert!(inv.legacy);
    assert_eq!(inv.db_path, legacy);
    assert_eq!(inv.live_ids().collect::<Vec<_>>(), vec!["old1"]);
    assert!(read_celesto_db(&h.db()).unwrap().sandboxes.is_empty());

    // celesto itself only reads celesto.db: its prune would delete the legacy sandbox's files.
    let out = h.prune_dry_run();
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let removed: Vec<&str> = v["data"]["removed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["vm_id"].as_str().unwrap())
        .collect();
    assert!(removed.contains(&"old1"), "celesto no longer shows B5: {v}");
}

#[test]
fn b17_malformed_config_row_keeps_its_id_live() {
    let h = CelestoHome::new();
    insert_vm(&h.db(), "ok1", "stopped", &h.config("ok1", "qemu"), None);
    insert_vm(&h.db(), "broken1", "stopped", "{not json", None);

    let inv = read_celesto_db(&h.db()).unwrap();
    let broken = inv.sandboxes.iter().find(|s| s.id == "broken1").unwrap();
    assert_eq!(broken.config, serde_json::Value::Null);
    assert_eq!(broken.rootfs_path, None);
    assert!(inv.live_ids().any(|i| i == "broken1"));
    assert!(inv.live_ids().any(|i| i == "ok1"));
    assert_eq!(inv.problems.len(), 1);
    assert!(inv.problems[0].contains("broken1"), "{:?}", inv.problems);

    // Upstream aborts the whole prune on such a row.
    let out = h.prune_dry_run();
    assert!(
        !out.status.success(),
        "celesto no longer shows B17: {out:?}"
    );
}

#[test]
fn celesto_read_changes_no_file() {
    let h = CelestoHome::new();
    insert_vm(
        &h.db(),
        "run1",
        "running",
        &h.config("run1", "qemu"),
        Some(IMPOSSIBLE_PID),
    );
    insert_browser(&h.db(), "s1", "v1");
    age_atimes(&h.data);
    let before = stamp_tree(&h.data);
    for _ in 0..3 {
        assert_eq!(read_celesto_db(&h.db()).unwrap().sandboxes.len(), 1);
    }
    assert_unchanged(&before, &stamp_tree(&h.data));
}

#[test]
fn celesto_held_exclusive_lock_is_locked() {
    let h = CelestoHome::new();
    insert_vm(&h.db(), "a1", "stopped", &h.config("a1", "qemu"), None);
    let holder = Holder::start(&h.db(), "BEGIN EXCLUSIVE;");
    let t = std::time::Instant::now();
    let err = read_celesto_db(&h.db()).unwrap_err();
    assert!(
        matches!(&err, InventoryError::Locked { path, seconds: 2 } if *path == h.db()),
        "{err:?}"
    );
    assert!(
        t.elapsed() >= Duration::from_millis(1500),
        "no busy wait: {:?}",
        t.elapsed()
    );
    drop(holder);
    assert_eq!(read_celesto_db(&h.db()).unwrap().sandboxes.len(), 1);
}

#[test]
fn celesto_older_schema_without_browser_or_snapshot_tables() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("celesto.db");
    let c = Connection::open(&db).unwrap();
    c.execute_batch(
        "CREATE TABLE vms(id TEXT PRIMARY KEY, status TEXT NOT NULL, config TEXT NOT NULL,
            created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
         INSERT INTO vms VALUES('v1', 'stopped', '{}', 't', 't');",
    )
    .unwrap();
    drop(c);
    let inv = read_celesto_db(&db).unwrap();
    assert_eq!(inv.sandboxes.len(), 1);
    assert_eq!(inv.sandboxes[0].pid, None);
    assert!(inv.browser_ids.is_empty() && inv.snapshots.is_empty());
}

#[test]
fn celesto_missing_table_or_column_is_unknown_shape() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("celesto.db");
    Connection::open(&db)
        .unwrap()
        .execute_batch("CREATE TABLE other(x);")
        .unwrap();
    assert!(matches!(
        read_celesto_db(&db),
        Err(InventoryError::UnknownShape { .. })
    ));
    Connection::open(&db)
        .unwrap()
        .execute_batch("DROP TABLE other; CREATE TABLE vms(id TEXT, status TEXT);")
        .unwrap();
    let err = read_celesto_db(&db).unwrap_err();
    assert!(
        matches!(&err, InventoryError::UnknownShape { detail, .. } if detail.contains("config")),
        "{err:?}"
    );
}

#[test]
fn missing_inventory_is_missing_and_never_created() {
    let tmp = tempfile::tempdir().unwrap();
    let before = stamp_tree(tmp.path());
    let c = tmp.path().join("celesto.db");
    let s = tmp.path().join("server/smolvm.db");
    assert_eq!(read_celesto_db(&c), Err(InventoryError::Missing(c.clone())));
    assert_eq!(read_smolvm_db(&s), Err(InventoryError::Missing(s.clone())));
    assert_unchanged(&before, &stamp_tree(tmp.path()));
}

#[test]
fn not_a_database_is_corrupt() {
    let tmp = tempfile::tempdir().unwrap();
    let junk = tmp.path().join("celesto.db");
    std::fs::write(&junk, vec![b'x'; 8192]).unwrap();
    assert!(matches!(
        read_celesto_db(&junk),
        Err(InventoryError::Corrupt { .. })
    ));
    // A real header followed by garbage pages.
    let db = tmp.path().join("smolvm.db");
    Connection::open(&db)
        .unwrap()
        .execute_batch("CREATE TABLE vms(name TEXT PRIMARY KEY NOT NULL, data BLOB NOT NULL);")
        .unwrap();
    let mut bytes = std::fs::read(&db).unwrap();
    for b in &mut bytes[100..] {
        *b = 0xA5;
    }
    std::fs::write(&db, &bytes).unwrap();
    let empty = tmp.path().join("empty.db");
    std::fs::write(&empty, b"").unwrap();
    let before = stamp_tree(tmp.path());
    let err = read_smolvm_db(&db).unwrap_err();
    assert!(matches!(err, InventoryError::Corrupt { .. }), "{err:?}");
    // A zero-byte file is what SQLite itself reads as an empty database: no `vms` table.
    assert!(matches!(
        read_celesto_db(&empty),
        Err(InventoryError::UnknownShape { .. })
    ));
    assert_unchanged(&before, &stamp_tree(tmp.path()));
}

#[test]
fn b6_sandbox_ids_follow_the_upstream_rule() {
    assert!(valid_sandbox_id("real1"));
    assert!(!valid_sandbox_id("../../outside"));
    assert!(!valid_sandbox_id("Weird.Name"));
}

// ---------------------------------------------------------------------------------------------
// smol-machines smolvm

struct SmolHome {
    _tmp: tempfile::TempDir,
    home: PathBuf,
}

impl SmolHome {
    fn new() -> SmolHome {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().to_path_buf();
        install_smolvm_script_layout(&home).unwrap();
        let v = run_ok(smolvm_cmd(&home).arg("--version")).unwrap();
        assert_eq!(v.trim(), "smolvm 1.32.2");
        SmolHome { _tmp: tmp, home }
    }
    fn smolvm(&self, args: &[&str]) -> String {
        run_ok(smolvm_cmd(&self.home).args(args)).unwrap()
    }
    fn server(&self) -> PathBuf {
        self.home.join(".local/share/smolvm/server")
    }
    fn db(&self) -> PathBuf {
        self.server().join("smolvm.db")
    }
    fn writer(&self) -> Connection {
        let c = Connection::open(self.db()).unwrap();
        c.busy_timeout(Duration::from_secs(5)).unwrap();
        c
    }
}

/// The §13.3 edit: rewrite a record's JSON and keep it a BLOB.
fn json_set(c: &Connection, name: &str, sets: &str) {
    let n = c
        .execute(
            &format!(
                "UPDATE vms SET data = CAST(json_set(CAST(data AS TEXT), {sets}) AS BLOB) WHERE name = ?1"
            ),
            [name],
        )
        .unwrap();
    assert_eq!(n, 1);
}

const DEAD_PID: u32 = 4_206_649;

#[test]
fn machine_ls_is_never_needed_to_read_records() {
    let h = SmolHome::new();
    assert!(h
        .smolvm(&["machine", "create", "--name", "demo"])
        .contains("Created machine: demo"));
    h.smolvm(&["machine", "create", "--name", "eph1"]);
    json_set(
        &h.writer(),
        "eph1",
        &format!("'$.ephemeral', json('true'), '$.state', 'running', '$.pid', {DEAD_PID}"),
    );

    // Reading keeps the dead ephemeral record that any `machine` subcommand would delete.
    let recs = read_smolvm_db(&h.db()).unwrap();
    assert_eq!(
        recs.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(),
        vec!["demo", "eph1"]
    );
    let demo = &recs[0];
    assert_eq!(demo.state, "created");
    assert_eq!(
        (demo.pid, demo.pid_start_time, demo.ephemeral),
        (None, None, false)
    );
    let created = demo.created_at.unwrap();
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    assert!(
        (now - 600..=now + 5).contains(&created),
        "{created} vs {now}"
    );
    assert_eq!(demo.golden, None);
    assert_eq!(demo.data["name"], "demo");
    assert_eq!(
        (recs[1].state.as_str(), recs[1].pid, recs[1].ephemeral),
        ("running", Some(DEAD_PID), true)
    );
    // `machine create` makes no machine directory.
    let vms = h.home.join(".cache/smolvm/vms");
    assert!(!vms.join(vm_dir_hash("demo")).exists());

    // hazard 1: the real `machine ls` deletes the dead ephemeral record.
    let ls = h.smolvm(&["machine", "ls", "-q"]);
    assert_eq!(ls.split_whitespace().collect::<Vec<_>>(), vec!["demo"]);
    assert_eq!(read_smolvm_db(&h.db()).unwrap().len(), 1);
}

#[test]
fn hazard_20_data_blob_not_text_untouched() {
    let h = SmolHome::new();
    h.smolvm(&["machine", "create", "--name", "demo"]);
    h.smolvm(&["machine", "create", "--name", "eph1"]);
    let w = h.writer();
    json_set(
        &w,
        "demo",
        &format!("'$.state', 'running', '$.pid', {DEAD_PID}, '$.pid_start_time', 987654321, '$.golden', 'base1'"),
    );
    json_set(&w, "eph1", "'$.ephemeral', json('true')");
    drop(w);
    let types = |h: &SmolHome| -> Vec<String> {
        let c = Connection::open_with_flags(h.db(), rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
        let mut s = c
            .prepare("SELECT typeof(data) FROM vms ORDER BY name")
            .unwrap();
        s.query_map([], |r| r.get(0))
            .unwrap()
            .map(|r| r.unwrap())
            .collect()
    };
    assert_eq!(types(&h), vec!["blob", "blob"]);

    let inv = read_smolvm_inventory(&h.db()).unwrap();
    let demo = inv.records.iter().find(|r| r.name == "demo").unwrap();
    assert_eq!(demo.state, "running");
    assert_eq!(demo.pid, Some(DEAD_PID));
    assert_eq!(demo.pid_start_time, Some(987654321));
    assert_eq!(demo.golden.as_deref(), Some("base1"));
    assert!(!demo.ephemeral);
    let eph = inv.records.iter().find(|r| r.name == "eph1").unwrap();
    assert!(eph.ephemeral && eph.pid.is_none() && eph.state == "created");
    assert_eq!(types(&h), vec!["blob", "blob"]);

    // smolvm still reads the edited BLOB records; it shows the dead "running" one as stopped
    // while the stored record keeps `running`.
    let st: serde_json::Value =
        serde_json::from_str(&h.smolvm(&["machine", "status", "--name", "demo", "--json"]))
            .unwrap();
    assert_eq!(st["state"], "stopped", "{st}");
    assert_eq!(
        read_smolvm_db(&h.db())
            .unwrap()
            .iter()
            .find(|r| r.name == "demo")
            .unwrap()
            .state,
        "running"
    );
}

#[test]
fn text_data_is_read_too_and_non_json_data_is_unknown_shape() {
    let h = SmolHome::new();
    h.smolvm(&["machine", "create", "--name", "demo"]);
    let w = h.writer();
    // TEXT would break smolvm itself (hazard 20); Smolsweep still reads it.
    w.execute(
        "INSERT INTO vms (name, data) VALUES ('t1', '{\"name\":\"t1\",\"state\":\"stopped\",\"created_at\":\"2024-01-01\"}')",
        [],
    )
    .unwrap();
    let recs = read_smolvm_db(&h.db()).unwrap();
    let t1 = recs.iter().find(|r| r.name == "t1").unwrap();
    assert_eq!((t1.state.as_str(), t1.created_at), ("stopped", None));

    w.execute("UPDATE vms SET data = x'00ff10' WHERE name = 't1'", [])
        .unwrap();
    let err = read_smolvm_db(&h.db()).unwrap_err();
    assert!(
        matches!(&err, InventoryError::UnknownShape { detail, .. } if detail.contains("t1")),
        "{err:?}"
    );
    w.execute(
        "UPDATE vms SET data = CAST('[1,2]' AS BLOB) WHERE name = 't1'",
        [],
    )
    .unwrap();
    assert!(matches!(
        read_smolvm_db(&h.db()),
        Err(InventoryError::UnknownShape { .. })
    ));
    w.execute_batch("DELETE FROM vms WHERE name = 't1'; ALTER TABLE vms RENAME TO vms_old;")
        .unwrap();
    assert!(matches!(
        read_smolvm_db(&h.db()),
        Err(InventoryError::UnknownShape { .. })
    ));
}

#[test]
fn hazard_2_create_reservations_are_read() {
    let h = SmolHome::new();
    h.smolvm(&["machine", "create", "--name", "demo"]);
    assert!(read_smolvm_reservations(&h.db()).unwrap().is_empty());
    h.writer()
        .execute(
            "INSERT INTO vm_create_reservations (name, owner_token, owner_pid, created_at)
             VALUES ('booting1', 'tok', 4242, 1796004250)",
            [],
        )
        .unwrap();
    let r = read_smolvm_reservations(&h.db()).unwrap();
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].name, "booting1");
    assert_eq!(
        (r[0].owner_pid, r[0].created_at),
        (Some(4242), Some(1796004250))
    );
}

#[test]
fn wal_committed_frames_only_in_wal_are_read_and_nothing_changes() {
    let h = SmolHome::new();
    h.smolvm(&["machine", "create", "--name", "demo"]);
    h.smolvm(&["machine", "create", "--name", "other"]);
    // As observed: the CLI leaves `-wal` and `-shm`, and the records are only in `-wal`.
    let wal = h.server().join("smolvm.db-wal");
    assert!(wal.metadata().unwrap().len() > 0);
    assert!(h.server().join("smolvm.db-shm").is_file());
    let main_only = Connection::open_with_flags(
        format!("file:{}?immutable=1", h.db().display()),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_URI,
    )
    .unwrap()
    .query_row(
        "SELECT count(*) FROM sqlite_master WHERE name = 'vms'",
        [],
        |r| r.get::<_, i64>(0),
    )
    .unwrap();
    assert_eq!(
        main_only, 0,
        "expected the schema and rows to be only in -wal"
    );

    age_atimes(&h.server());
    let before = stamp_tree(&h.server());
    let recs = read_smolvm_db(&h.db()).unwrap();
    assert_eq!(recs.len(), 2);
    assert_unchanged(&before, &stamp_tree(&h.server()));

    // Through a symlink: SQLite uses the target's `-wal`/`-shm`; nothing appears beside the link.
    let elsewhere = tempfile::tempdir().unwrap();
    let link = elsewhere.path().join("smolvm.db");
    std::os::unix::fs::symlink(h.db(), &link).unwrap();
    let before_link = stamp_tree(elsewhere.path());
    assert_eq!(read_smolvm_db(&link).unwrap().len(), 2);
    assert_unchanged(&before_link, &stamp_tree(elsewhere.path()));
    assert_unchanged(&before, &stamp_tree(&h.server()));
}

#[test]
fn wal_read_while_a_writer_holds_uncheckpointed_frames_changes_nothing() {
    let h = SmolHome::new();
    h.smolvm(&["machine", "create", "--name", "demo"]);
    let holder = Holder::start(
        &h.db(),
        "PRAGMA wal_autocheckpoint=0;
         UPDATE vms SET data = CAST(json_set(CAST(data AS TEXT), '$.state', 'stopped') AS BLOB) WHERE name = 'demo';
         INSERT INTO vms (name, data) SELECT 'second', CAST(json_set(CAST(data AS TEXT), '$.name', 'second') AS BLOB) FROM vms WHERE name = 'demo';",
    );
    age_atimes(&h.server());
    let before = stamp_tree(&h.server());
    let recs = read_smolvm_db(&h.db()).unwrap();
    assert_eq!(
        recs.iter()
            .map(|r| (r.name.as_str(), r.state.as_str()))
            .collect::<Vec<_>>(),
        vec![("demo", "stopped"), ("second", "stopped")]
    );
    assert_unchanged(&before, &stamp_tree(&h.server()));

    // Why `readonly_shm=1`: a plain `mode=ro` reader stores a read mark in `-shm`.
    let plain = Connection::open_with_flags(
        format!("file:{}?mode=ro", h.db().display()),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_URI,
    )
    .unwrap();
    let n: i64 = plain
        .query_row("SELECT count(*) FROM vms", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 2);
    drop(plain);
    let after = stamp_tree(&h.server());
    let shm = h.server().join("smolvm.db-shm");
    assert_ne!(
        before[&shm].bytes, after[&shm].bytes,
        "plain mode=ro no longer writes -shm"
    );
    drop(holder);
}

#[test]
fn wal_db_without_wal_and_shm_files_is_read_without_creating_them() {
    let h = SmolHome::new();
    h.smolvm(&["machine", "create", "--name", "demo"]);
    // The last connection to close checkpoints and removes `-wal` and `-shm`.
    let w = h.writer();
    w.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    drop(w);
    assert!(!h.server().join("smolvm.db-wal").exists());
    assert!(!h.server().join("smolvm.db-shm").exists());
    let mode: i64 = {
        let b = std::fs::read(h.db()).unwrap();
        b[18] as i64
    };
    assert_eq!(mode, 2, "still a WAL database");
    age_atimes(&h.server());
    let before = stamp_tree(&h.server());
    let recs = read_smolvm_db(&h.db()).unwrap();
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0].name, "demo");
    assert_unchanged(&before, &stamp_tree(&h.server()));

    // `-wal` present but `-shm` gone: also read without creating `-shm`.
    let holder = Holder::start(
        &h.db(),
        "PRAGMA wal_autocheckpoint=0;
         UPDATE vms SET data = CAST(json_set(CAST(data AS TEXT), '$.state', 'failed') AS BLOB) WHERE name = 'demo';",
    );
    holder.crash(); // leaves `-wal` (no checkpoint on close), like a killed CLI
    assert!(h.server().join("smolvm.db-wal").metadata().unwrap().len() > 0);
    std::fs::remove_file(h.server().join("smolvm.db-shm")).unwrap();
    let before = stamp_tree(&h.server());
    let recs = read_smolvm_db(&h.db()).unwrap();
    assert_eq!(recs[0].state, "failed");
    assert_unchanged(&before, &stamp_tree(&h.server()));
}
