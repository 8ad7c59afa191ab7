//! The scan stays truthful, and every command ends, under hostile file types and names: a named
//! pipe where a file is expected, file names that are not UTF-8 or hold control characters.
//! One regression test per case, each on a scratch HOME of its own, the binary run with a
//! deadline (a hang fails the test instead of hanging the suite).

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use smolsweep_fixtures::{age_tree, Home, Layout, OLD};

/// Run the binary for `home` and wait at most 30 s; a hang kills it and fails.
fn run(home: &Home, data: &Path, args: &[&str]) -> (i32, String, String) {
    run_env(home, data, args, &[])
}

/// [`run`] with more variables (later ones win).
fn run_env(
    home: &Home,
    data: &Path,
    args: &[&str],
    extra: &[(&str, String)],
) -> (i32, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_smolsweep"))
        .args(args)
        .env_clear()
        .envs(home.env_vars())
        .env("SMOLSWEEP_DATA_DIR", data)
        .env("PATH", "/usr/bin:/bin")
        .envs(extra.iter().map(|(k, v)| (*k, v.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("smolsweep {args:?} did not finish in 30 s (it hangs)");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn json_of(args: &[&str], (code, out, err): (i32, String, String)) -> (i32, Value) {
    let v = serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("{args:?} exit {code}: {e}\n{out}\n{err}"));
    (code, v)
}

fn mkfifo(p: &Path) {
    if p.exists() {
        std::fs::remove_file(p).unwrap();
    }
    smolsweep_fixtures::mkfifo(p).unwrap();
}

fn odd(dir: &Path, name: &[u8]) -> PathBuf {
    dir.join(OsString::from_vec(name.to_vec()))
}

fn scratch() -> (tempfile::TempDir, Home, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Linux).unwrap();
    let data = t.path().join("smolsweep-data");
    (t, home, data)
}

fn findings(v: &Value) -> &Vec<Value> {
    v["findings"].as_array().expect("findings")
}

#[test]
fn fifo_at_a_machine_name_file_does_not_hang_the_scan() {
    let (_t, home, data) = scratch();
    let sm = home.smolvm().unwrap();
    sm.record("other", json!({})).unwrap();
    let dir = sm.dangling_dir("ghost").unwrap();
    mkfifo(&dir.join("name"));
    age_tree(&home.root, OLD).unwrap();
    let (code, v) = json_of(&["scan"], run(&home, &data, &["scan", "--json"]));
    assert_eq!(code, 0);
    assert!(
        findings(&v).iter().any(|f| f["path"] == json!(dir)),
        "{v:#}"
    );
    // And prune ends too.
    let (code, _, err) = run(&home, &data, &["prune", "--dry-run"]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn fifo_at_the_celesto_inventory_does_not_hang_and_nothing_of_it_is_reclaimable() {
    let (_t, home, data) = scratch();
    let d = home.celesto_data_dir().unwrap();
    d.row("live1", "running", "qemu", None).unwrap();
    let disk = d.disk("live1", "qcow2", 1 << 16, 1 << 14).unwrap();
    mkfifo(&d.dir.join("celesto.db"));
    age_tree(&home.root, OLD).unwrap();
    let (code, v) = json_of(&["scan"], run(&home, &data, &["scan", "--json"]));
    assert_eq!(code, 0);
    let f = findings(&v)
        .iter()
        .find(|f| f["path"] == json!(disk))
        .expect("the disk is shown");
    assert_eq!(f["verdict"], "unknown", "{f:#}");
    let cel = v["products"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["product"] == "celesto")
        .unwrap();
    assert!(
        cel["problems"].to_string().contains("named pipe"),
        "{cel:#}"
    );
    // The pipe is a finding of its own.
    let pipe = findings(&v)
        .iter()
        .find(|f| f["path"] == json!(d.dir.join("celesto.db")))
        .expect("the pipe is shown");
    assert_eq!(pipe["verdict"], "unknown");
    assert!(
        pipe["reason"]
            .as_str()
            .unwrap()
            .starts_with("A named pipe where Celesto stores its list of sandboxes"),
        "{pipe:#}"
    );
    let (code, _, _) = run(&home, &data, &["prune", "--yes"]);
    assert_eq!(code, 0);
    assert!(disk.exists());
}

#[test]
fn fifo_at_a_wal_file_does_not_hang() {
    let (_t, home, data) = scratch();
    let sm = home.smolvm().unwrap();
    sm.record_in_wal("walled", json!({})).unwrap();
    let db = home.path(".local/share/smolvm/server/smolvm.db");
    let wal = PathBuf::from(format!("{}-wal", db.display()));
    assert!(wal.exists(), "the fixture leaves a WAL");
    mkfifo(&wal);
    let (code, v) = json_of(&["scan"], run(&home, &data, &["scan", "--json"]));
    assert_eq!(code, 0);
    let smol = v["products"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["product"] == "smolvm")
        .unwrap();
    assert!(
        smol["problems"].to_string().contains("named pipe"),
        "{smol:#}"
    );
    let pipe = findings(&v)
        .iter()
        .find(|f| f["path"] == json!(wal))
        .expect("the pipe is shown");
    assert_eq!(pipe["kind"], "smolvm.odd_file");
    assert_eq!(pipe["verdict"], "unknown");
}

#[test]
fn non_utf8_names_in_disks_scan_as_json_losslessly() {
    let (_t, home, data) = scratch();
    let d = home.celesto_data_dir().unwrap();
    d.row("live1", "stopped", "qemu", None).unwrap();
    let name = b"gone\xff\x1b[31m.qcow2";
    let p = odd(&d.disks(), name);
    std::fs::write(&p, vec![0u8; 4096]).unwrap();
    age_tree(&home.root, OLD).unwrap();
    let (code, v) = json_of(&["scan"], run(&home, &data, &["scan", "--json"]));
    assert_eq!(code, 0);
    let want = hex::encode(p.as_os_str().as_encoded_bytes());
    assert!(
        findings(&v)
            .iter()
            .any(|f| f["path"]["bytes_hex"] == json!(want)),
        "{v:#}"
    );
    // The human report escapes the name: no raw escape sequence reaches the terminal.
    let (code, out, _) = run(&home, &data, &["scan", "-v"]);
    assert_eq!(code, 0);
    assert!(!out.contains('\u{1b}'), "{out}");
    assert!(out.contains("gone\\xff\\x1b[31m.qcow2"), "{out}");
}

#[test]
fn non_utf8_name_in_a_dangling_dir_is_pruned_and_journaled() {
    let (_t, home, data) = scratch();
    let sm = home.smolvm().unwrap();
    sm.record("other", json!({})).unwrap();
    let dir = sm.dangling_dir("ghost").unwrap();
    std::fs::write(odd(&dir, b"console\xfe\n.log"), b"x").unwrap();
    age_tree(&home.root, OLD).unwrap();
    let (code, v) = json_of(&["prune"], run(&home, &data, &["prune", "--yes", "--json"]));
    assert_eq!(code, 0, "{v:#}");
    assert!(!dir.exists(), "{v:#}");
    let (code, h) = json_of(&["history"], run(&home, &data, &["history", "--json"]));
    assert_eq!(code, 0);
    assert_eq!(h["damaged_lines"], json!([]), "{h:#}");
    assert_eq!(h["runs"][0]["done"], 1, "{h:#}");
}

#[test]
fn non_utf8_name_inside_a_planned_directory_that_changes_after_the_plan() {
    let (t, home, data) = scratch();
    let sm = home.smolvm().unwrap();
    sm.record("other", json!({})).unwrap();
    let dir = sm.dangling_dir("ghost").unwrap();
    age_tree(&home.root, OLD).unwrap();
    let plan = t.path().join("plan.json");
    let (code, _, err) = run(&home, &data, &["plan", "--out", plan.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    // After the plan, a directory with an odd name appears inside the planned directory.
    let late = odd(&dir, b"late\xff");
    std::fs::create_dir(&late).unwrap();
    std::fs::write(late.join("new"), b"written after the plan").unwrap();
    let args = ["apply", plan.to_str().unwrap(), "--yes", "--json"];
    let (_, v) = json_of(&args, run(&home, &data, &args));
    assert!(late.join("new").exists(), "{v:#}");
    assert!(v["schema"] == "smolsweep.result/1", "{v:#}");
    let (code, h) = json_of(&["history"], run(&home, &data, &["history", "--json"]));
    assert_eq!(code, 0);
    assert_eq!(h["damaged_lines"], json!([]), "{h:#}");
}

/// A Celesto data directory with a live sandbox (its disk in `disks/`) and an orphan disk; the
/// test then damages the inventory. Returns (live disk, orphan disk, celesto.db).
fn celesto_with_live_sandbox(home: &Home) -> (PathBuf, PathBuf, PathBuf) {
    let d = home.celesto_data_dir().unwrap();
    d.row("live1", "stopped", "qemu", None).unwrap();
    d.row("live2", "stopped", "qemu", None).unwrap();
    let live = d.disk("live1", "qcow2", 1 << 16, 1 << 14).unwrap();
    let orphan = d.disk("gone1", "qcow2", 1 << 16, 1 << 14).unwrap();
    age_tree(&home.root, OLD).unwrap();
    (live, orphan, d.dir.join("celesto.db"))
}

/// Scan, then `prune --yes`: neither disk may be reclaimable, and both must survive.
fn assert_untrusted(home: &Home, data: &Path, disks: &[&Path], why: &str) {
    let (code, v) = json_of(&["scan"], run(home, data, &["scan", "--json"]));
    assert_eq!(code, 0);
    for d in disks {
        let f = findings(&v)
            .iter()
            .find(|f| f["path"] == json!(d))
            .unwrap_or_else(|| panic!("{} not shown: {v:#}", d.display()));
        assert_eq!(f["verdict"], "unknown", "{f:#}");
    }
    let cel = v["products"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["product"] == "celesto")
        .unwrap();
    assert!(cel["problems"].to_string().contains(why), "{cel:#}");
    let (code, _, err) = run(home, data, &["prune", "--yes"]);
    assert_eq!(code, 0, "{err}");
    for d in disks {
        assert!(d.exists(), "{} was deleted", d.display());
    }
}

#[test]
fn emptied_vms_page_with_intact_index_is_unknown_never_reclaimable() {
    let (_t, home, data) = scratch();
    let (live, orphan, db) = celesto_with_live_sandbox(&home);
    // The page of the `vms` table rewritten as an empty leaf: the rows are gone, its indexes
    // still list them.
    let (root, page_size): (i64, i64) = {
        let c = rusqlite::Connection::open(&db).unwrap();
        (
            c.query_row(
                "SELECT rootpage FROM sqlite_master WHERE name = 'vms'",
                [],
                |r| r.get(0),
            )
            .unwrap(),
            c.query_row("PRAGMA page_size", [], |r| r.get(0)).unwrap(),
        )
    };
    let mut bytes = std::fs::read(&db).unwrap();
    let at = ((root - 1) * page_size) as usize;
    let page = &mut bytes[at..at + page_size as usize];
    page.fill(0);
    page[0] = 0x0d; // leaf table b-tree page, no cells
    let content = (page_size as u32 & 0xffff) as u16;
    page[5..7].copy_from_slice(&content.to_be_bytes());
    std::fs::write(&db, &bytes).unwrap();
    // Read naively, the inventory now says "no sandboxes".
    let rows: i64 = rusqlite::Connection::open(&db)
        .unwrap()
        .query_row("SELECT count(config) FROM vms NOT INDEXED", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(rows, 0, "the damage empties the table silently");
    assert_untrusted(&home, &data, &[&live, &orphan], "integrity check");
}

#[test]
fn rows_moved_to_an_unknown_table_are_not_trusted() {
    let (_t, home, data) = scratch();
    let (live, orphan, db) = celesto_with_live_sandbox(&home);
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch("CREATE TABLE vms_v2 AS SELECT * FROM vms; DELETE FROM vms;")
        .unwrap();
    assert_untrusted(&home, &data, &[&live, &orphan], "vms_v2");
}

#[test]
fn unknown_user_version_is_not_trusted() {
    let (_t, home, data) = scratch();
    let (live, orphan, db) = celesto_with_live_sandbox(&home);
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch("PRAGMA user_version = 7;")
        .unwrap();
    assert_untrusted(&home, &data, &[&live, &orphan], "user_version 7");
}

#[test]
fn lease_rows_for_missing_sandboxes_are_not_trusted() {
    let (_t, home, data) = scratch();
    let (live, orphan, db) = celesto_with_live_sandbox(&home);
    let c = rusqlite::Connection::open(&db).unwrap();
    let has_leases: i64 = c
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE name = 'ssh_forwards'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(has_leases, 1, "the fixture writes Celesto's whole schema");
    c.execute_batch(
        "INSERT INTO ssh_forwards (vm_id, host_port, guest_port, created_at) VALUES ('live1', 2201, 22, '2026-11-30T00:00:00+00:00');
         PRAGMA foreign_keys = OFF; DELETE FROM vms;",
    )
    .unwrap();
    assert_untrusted(&home, &data, &[&live, &orphan], "ssh_forwards");
}

/// A PyPI install of `celesto` at `version` (a venv on PATH, as pip lays it out).
fn fake_celesto_venv(root: &Path, version: &str) -> PathBuf {
    let venv = root.join("venv");
    let site = venv.join(format!(
        "lib/python3.11/site-packages/celesto-{version}.dist-info"
    ));
    std::fs::create_dir_all(&site).unwrap();
    std::fs::create_dir_all(venv.join("bin")).unwrap();
    std::fs::write(
        site.join("METADATA"),
        format!("Metadata-Version: 2.1\nName: celesto\nVersion: {version}\n"),
    )
    .unwrap();
    std::fs::write(venv.join("pyvenv.cfg"), "home = /usr/bin\n").unwrap();
    let script = format!(
        "#!{}/bin/python3\n# -*- coding: utf-8 -*-\nimport re\nimport sys\nfrom celesto.cli.main import main\n",
        venv.display()
    );
    for (name, body) in [("celesto", script.as_str()), ("python3", "")] {
        let p = venv.join("bin").join(name);
        std::fs::write(&p, body).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    venv.join("bin")
}

fn verdict_of(v: &Value, p: &Path) -> String {
    findings(v)
        .iter()
        .find(|f| f["path"] == json!(p))
        .unwrap_or_else(|| panic!("{} not shown: {v:#}", p.display()))["verdict"]
        .as_str()
        .unwrap()
        .to_string()
}

fn product<'v>(v: &'v Value, name: &str) -> &'v Value {
    v["products"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["product"] == name)
        .unwrap()
}

#[test]
fn newer_celesto_is_shown_but_nothing_of_it_is_reclaimable() {
    let (t, home, data) = scratch();
    let d = home.celesto_data_dir().unwrap();
    d.row("live1", "stopped", "qemu", None).unwrap();
    let orphan = d.disk("gone1", "qcow2", 1 << 16, 1 << 14).unwrap();
    age_tree(&home.root, OLD).unwrap();
    let bin = fake_celesto_venv(t.path(), "0.2.1");
    let path = ("PATH", format!("{}:/usr/bin:/bin", bin.display()));
    let (code, v) = json_of(
        &["scan"],
        run_env(
            &home,
            &data,
            &["scan", "--json"],
            std::slice::from_ref(&path),
        ),
    );
    assert_eq!(code, 0);
    let cel = product(&v, "celesto");
    assert_eq!(cel["version"], "0.2.1", "{cel:#}");
    assert_eq!(cel["status"], "unknown", "{cel:#}");
    assert!(cel["problems"]
        .to_string()
        .contains("newer than the versions Smolsweep knows"));
    assert_eq!(verdict_of(&v, &orphan), "unknown");
    assert_eq!(cel["newer"], "0.2.1", "{cel:#}");
    run_env(
        &home,
        &data,
        &["prune", "--yes"],
        std::slice::from_ref(&path),
    );
    assert!(orphan.exists());
    // An expert accepts the risk for this product.
    let accept = ("SMOLSWEEP_ACCEPT_NEWER", "celesto".to_string());
    let (_, v) = json_of(
        &["scan"],
        run_env(&home, &data, &["scan", "--json"], &[path, accept]),
    );
    assert_eq!(verdict_of(&v, &orphan), "reclaimable");
}

#[test]
fn newer_smolvm_is_shown_but_nothing_of_it_is_reclaimable() {
    let (_t, home, data) = scratch();
    let sm = home.smolvm().unwrap();
    sm.install("1.40.0").unwrap();
    sm.record("other", json!({})).unwrap();
    let dir = sm.dangling_dir("ghost").unwrap();
    age_tree(&home.root, OLD).unwrap();
    let (code, v) = json_of(&["scan"], run(&home, &data, &["scan", "--json"]));
    assert_eq!(code, 0);
    let smol = product(&v, "smolvm");
    assert_eq!(smol["version"], "1.40.0", "{smol:#}");
    assert_eq!(smol["status"], "unknown", "{smol:#}");
    assert_eq!(verdict_of(&v, &dir), "unknown");
    run(&home, &data, &["prune", "--yes"]);
    assert!(dir.exists());
    // The flag accepts the risk for one product, for the scan and the re-judge alike.
    let (_, v) = json_of(
        &["scan"],
        run(
            &home,
            &data,
            &["scan", "--json", "--accept-newer", "smolvm"],
        ),
    );
    assert_eq!(verdict_of(&v, &dir), "reclaimable");
    let (code, _, err) = run(&home, &data, &["--accept-newer", "smolvm", "prune", "-y"]);
    assert_eq!(code, 0, "{err}");
    assert!(!dir.exists(), "pruned once the risk is accepted");
}

#[test]
fn sdk_only_data_dir_explains_what_would_make_it_reclaimable() {
    let (_t, home, data) = scratch();
    let d = home.celesto_data_dir().unwrap();
    let disk = d.disk("sdk1", "qcow2", 1 << 16, 1 << 14).unwrap();
    std::fs::remove_file(d.dir.join("celesto.db")).unwrap();
    age_tree(&home.root, OLD).unwrap();
    let (_, v) = json_of(&["scan"], run(&home, &data, &["scan", "--json"]));
    assert_eq!(verdict_of(&v, &disk), "unknown");
    let why = product(&v, "celesto")["problems"].to_string();
    assert!(
        why.contains("Celesto SDK alone are listed nowhere"),
        "{why}"
    );
    assert!(why.contains("creates the list"), "{why}");
}

// ---------------------------------------------------------------------------------------------
// Randomized damage: a damaged tree never has a reclaimable finding its undamaged twin lacks.

/// A small tree of both products with live, orphaned and young state, laid out as upstream
/// writes it; `seed` varies the counts.
fn layout(home: &Home, rng: &mut rand::rngs::StdRng) {
    use rand::Rng;
    let d = home.celesto_data_dir().unwrap();
    for i in 0..rng.random_range(1..4) {
        d.row(&format!("live{i}"), "stopped", "qemu", None).unwrap();
        d.disk(&format!("live{i}"), "qcow2", 1 << 14, 1 << 12)
            .unwrap();
        d.log(&format!("live{i}"), 100).unwrap();
    }
    for i in 0..rng.random_range(1..5) {
        d.disk(&format!("gone{i}"), "qcow2", 1 << 14, 1 << 12)
            .unwrap();
        d.log(&format!("gone{i}"), 100).unwrap();
    }
    let sm = home.smolvm().unwrap();
    for i in 0..rng.random_range(1..3) {
        sm.record(&format!("kept{i}"), json!({})).unwrap();
    }
    for i in 0..rng.random_range(1..4) {
        sm.dangling_dir(&format!("ghost{i}")).unwrap();
    }
    age_tree(&home.root, OLD).unwrap();
}

/// Every file under `root`, relative to it.
fn files_under(root: &Path) -> Vec<PathBuf> {
    walkdir::WalkDir::new(root)
        .into_iter()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_file())
        .map(|e| e.path().strip_prefix(root).unwrap().to_path_buf())
        .collect()
}

/// One random kind of damage to the tree.
fn damage(home: &Home, rng: &mut rand::rngs::StdRng) -> String {
    use rand::seq::IndexedRandom;
    use rand::Rng;
    let files = files_under(&home.root);
    let dbs: Vec<&PathBuf> = files
        .iter()
        .filter(|f| f.to_string_lossy().ends_with(".db"))
        .collect();
    let any = files.choose(rng).unwrap().clone();
    let db = home.root.join(dbs.choose(rng).unwrap());
    match rng.random_range(0..7) {
        0 => {
            let len = std::fs::metadata(&db).unwrap().len();
            let to = rng.random_range(0..len);
            std::fs::OpenOptions::new()
                .write(true)
                .open(&db)
                .unwrap()
                .set_len(to)
                .unwrap();
            format!("truncated {} to {to}", db.display())
        }
        1 => {
            let mut b = std::fs::read(&db).unwrap();
            let pages = (b.len() / 4096).max(1);
            let p = rng.random_range(0..pages);
            let end = ((p + 1) * 4096).min(b.len());
            b[p * 4096..end].fill(0);
            std::fs::write(&db, b).unwrap();
            format!("zeroed page {p} of {}", db.display())
        }
        2 => {
            let p = home.root.join(&any);
            mkfifo(&p);
            format!("a FIFO at {}", p.display())
        }
        3 => {
            let p = home.root.join(&any);
            let mut name = p.file_name().unwrap().as_encoded_bytes().to_vec();
            name.insert(0, 0xff);
            name.push(b'\n');
            let q = odd(p.parent().unwrap(), &name);
            std::fs::rename(&p, &q).unwrap();
            format!("renamed {} to an odd name", p.display())
        }
        4 => {
            let p = home.root.join(&any);
            std::fs::remove_file(&p).unwrap();
            std::os::unix::fs::symlink(&p, &p).unwrap();
            format!("a symlink loop at {}", p.display())
        }
        5 => {
            let p = home.root.join(&any);
            std::fs::remove_file(&p).unwrap();
            std::fs::create_dir(&p).unwrap();
            format!("a directory at {}", p.display())
        }
        _ => {
            let wal = PathBuf::from(format!("{}-wal", db.display()));
            std::fs::write(&wal, vec![0xa5u8; rng.random_range(1..9000)]).unwrap();
            format!("a garbage -wal beside {}", db.display())
        }
    }
}

/// Reclaimable findings of an in-process scan of `home` (no process table: both twins are
/// judged without one), as paths relative to HOME; the scan runs on a thread with a deadline.
fn reclaimable_rel(home: &Home) -> std::collections::BTreeSet<PathBuf> {
    let mut env = smolsweep::env::EnvSnapshot::from_pairs(home.root.clone(), home.env_vars());
    env.euid = rustix::process::geteuid().as_raw();
    let opts = smolsweep::scan::ScanOptions {
        env,
        platform: smolsweep::model::Platform::Linux,
        age_guard: Duration::from_secs(120),
        now: std::time::SystemTime::now(),
    };
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(smolsweep::scan::scan_with(&opts, Vec::new()));
    });
    let r = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the scan finished within 30 s (it hangs or panicked)");
    r.findings
        .iter()
        .filter(|f| f.verdict == smolsweep::model::Verdict::Reclaimable)
        .map(|f| {
            f.path
                .strip_prefix(&home.root)
                .unwrap_or(&f.path)
                .to_path_buf()
        })
        .collect()
}

#[test]
fn randomized_damage_never_adds_a_reclaimable_finding() {
    use rand::SeedableRng;
    for seed in 0..200u64 {
        let twin = tempfile::tempdir().unwrap();
        let hurt = tempfile::tempdir().unwrap();
        let a = Home::new(twin.path(), Layout::Linux).unwrap();
        let b = Home::new(hurt.path(), Layout::Linux).unwrap();
        // The same layout twice (same seed), then damage to one.
        layout(&a, &mut rand::rngs::StdRng::seed_from_u64(seed));
        layout(&b, &mut rand::rngs::StdRng::seed_from_u64(seed));
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ 0xdead_beef);
        let what: Vec<String> = (0..1 + seed % 3).map(|_| damage(&b, &mut rng)).collect();
        let good = reclaimable_rel(&a);
        assert!(
            !good.is_empty(),
            "seed {seed}: the undamaged twin has leftovers"
        );
        let bad = reclaimable_rel(&b);
        let extra: Vec<&PathBuf> = bad.difference(&good).collect();
        assert!(
            extra.is_empty(),
            "seed {seed}, damage {what:?}: reclaimable only when damaged: {extra:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// What both products leave that Smolsweep did not see (shared/reference/upstream-2026-12.md).

fn finding_of<'v>(v: &'v Value, p: &Path) -> &'v Value {
    findings(v)
        .iter()
        .find(|f| f["path"] == json!(p))
        .unwrap_or_else(|| panic!("{} not shown: {v:#}", p.display()))
}

/// A pid that no process has (a child that ran and was waited for).
fn gone_pid() -> u32 {
    let mut c = Command::new("true").spawn().unwrap();
    let pid = c.id();
    c.wait().unwrap();
    pid
}

#[test]
fn helper_machines_of_interrupted_builds_are_reclaimable_once_their_maker_is_gone() {
    use smolsweep_fixtures::smolvm::DiskSet;
    let (_t, home, data) = scratch();
    let sm = home.smolvm().unwrap();
    let set = || DiskSet::Raw {
        storage: 1 << 16,
        overlay: 1 << 14,
    };
    let gone = format!("image-seed-3f2a9c-{}", gone_pid());
    let live = format!("init-bake-77aa01-{}", std::process::id());
    for n in [&gone, &live] {
        sm.record(n, json!({"state": "created"})).unwrap();
    }
    let gone_dir = sm.machine_dir(&gone, set()).unwrap();
    let live_dir = sm.machine_dir(&live, set()).unwrap();
    age_tree(&home.root, OLD).unwrap();
    let (_, v) = json_of(&["scan"], run(&home, &data, &["scan", "--json"]));
    let f = finding_of(&v, &gone_dir);
    assert_eq!(f["kind"], "smolvm.helper_machine_dir", "{f:#}");
    assert_eq!(f["verdict"], "reclaimable", "{f:#}");
    assert!(
        f["reason"].as_str().unwrap().contains("interrupted"),
        "{f:#}"
    );
    let f = finding_of(&v, &live_dir);
    assert_eq!(f["verdict"], "protected", "{f:#}");
    // The JSON says what the text says (issue 31, item 9): the machine list names its role.
    let m = v["machines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == live.as_str())
        .unwrap_or_else(|| panic!("{v:#}"));
    assert_eq!(m["role"], "helper machine of an image build", "{m:#}");
    assert_eq!(m["noun"], "machine", "{m:#}");
    // Planned as a delete through the CLI, never as a bare directory removal.
    let plan = home.root.join("../plan.json");
    let (code, out, err) = run(&home, &data, &["plan", "--out", plan.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(&format!("delete helper machine '{gone}'")),
        "{out}"
    );
}

#[test]
fn smolvm_temporary_build_trees_of_this_user_are_reclaimable_when_settled() {
    let (_t, home, data) = scratch();
    let sm = home.smolvm().unwrap();
    sm.record("other", json!({})).unwrap();
    let seeds = home.socket_dir.join("smolvm-image-seeds");
    std::fs::create_dir_all(seeds.join("build-1")).unwrap();
    std::fs::write(seeds.join("build-1/rootfs.ext4"), vec![0u8; 8192]).unwrap();
    age_tree(&seeds, OLD).unwrap();
    let layers = home.socket_dir.join("smolvm-init-layers");
    std::fs::create_dir_all(&layers).unwrap();
    std::fs::write(layers.join("fresh"), b"being written").unwrap();
    let (_, v) = json_of(&["scan"], run(&home, &data, &["scan", "--json"]));
    assert_eq!(finding_of(&v, &seeds)["verdict"], "reclaimable");
    assert_eq!(finding_of(&v, &layers)["verdict"], "protected");
    let (code, _, err) = run(&home, &data, &["prune", "--yes"]);
    assert_eq!(code, 0, "{err}");
    assert!(!seeds.exists() && layers.join("fresh").exists());
}

#[test]
fn registry_tokens_are_credentials_shown_and_kept() {
    let (_t, home, data) = scratch();
    let sm = home.smolvm().unwrap();
    sm.record("other", json!({})).unwrap();
    let tokens = home.path(".cache/smolvm/registry-tokens");
    std::fs::create_dir_all(&tokens).unwrap();
    std::fs::write(tokens.join("ghcr.io.json"), b"{\"token\":\"secret\"}").unwrap();
    age_tree(&home.root, OLD).unwrap();
    let (_, v) = json_of(&["scan"], run(&home, &data, &["scan", "--json"]));
    let f = finding_of(&v, &tokens);
    assert_eq!(f["kind"], "smolvm.registry_tokens");
    assert_eq!(f["verdict"], "protected");
    let (code, _, err) = run(
        &home,
        &data,
        &["prune", "--yes", "--include-caches", "--include-residue"],
    );
    assert_eq!(code, 0, "{err}");
    let (_, out, _) = run(&home, &data, &["uninstall", "--product", "smolvm", "--yes"]);
    assert!(tokens.join("ghcr.io.json").exists(), "{out}");
    assert!(out.contains("--remove-credentials"), "{out}");
}

#[test]
fn caches_say_whether_smolvm_trims_them_itself() {
    let (_t, home, data) = scratch();
    let sm = home.smolvm().unwrap();
    sm.record("other", json!({})).unwrap();
    let pack = sm
        .pack("1a2b3c4d", smolsweep_fixtures::IMPOSSIBLE_PID)
        .unwrap();
    age_tree(&home.root, OLD).unwrap();
    let (_, v) = json_of(&["scan"], run(&home, &data, &["scan", "--json"]));
    let why = finding_of(&v, &pack)["reason"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        why.contains("SMOLVM_PACK_CACHE_MAX_BYTES (default"),
        "{why}"
    );
    let cap = ("SMOLVM_PACK_CACHE_MAX_BYTES", "8000000000".to_string());
    let (_, v) = json_of(
        &["scan"],
        run_env(&home, &data, &["scan", "--json"], &[cap]),
    );
    let why = finding_of(&v, &pack)["reason"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        why.contains("SMOLVM_PACK_CACHE_MAX_BYTES=8000000000"),
        "{why}"
    );
}

#[test]
fn celesto_build_staging_and_restore_images_are_found() {
    let (_t, home, data) = scratch();
    let d = home.celesto_data_dir().unwrap();
    d.row("live1", "stopped", "qemu", None).unwrap();
    let images = home.path(".celesto/images");
    let staging = images.join("myimage/.build-0badc0de");
    std::fs::create_dir_all(staging.join("mnt")).unwrap();
    std::fs::write(staging.join("rootfs.tar"), vec![1u8; 16384]).unwrap();
    let young = images.join("other/.build-12345678");
    let ipsw = images.join("macos/.downloads/latest.ipsw");
    std::fs::create_dir_all(ipsw.parent().unwrap()).unwrap();
    std::fs::write(&ipsw, vec![2u8; 16384]).unwrap();
    age_tree(&home.root, OLD).unwrap();
    std::fs::create_dir_all(&young).unwrap();
    std::fs::write(young.join("Dockerfile"), b"FROM alpine\n").unwrap();
    let (_, v) = json_of(&["scan"], run(&home, &data, &["scan", "--json"]));
    let f = finding_of(&v, &staging);
    assert_eq!(f["kind"], "celesto.build_staging", "{f:#}");
    assert_eq!(f["verdict"], "reclaimable", "{f:#}");
    assert!(f["reason"].as_str().unwrap().contains("umount"), "{f:#}");
    assert_eq!(finding_of(&v, &young)["verdict"], "protected");
    let f = finding_of(&v, &ipsw);
    assert_eq!(
        (f["verdict"].as_str(), f["opt_in_class"].as_str()),
        (Some("opt_in"), Some("caches")),
        "{f:#}"
    );
}

#[test]
fn symlinked_retained_marker_is_judged_as_upstream_does() {
    // Upstream: `(disk_dir / f"{disk.name}.retained").exists()` follows the link, so a dangling
    // marker saves nothing and a marker linking to a file saves its disk.
    let (_t, home, data) = scratch();
    let d = home.celesto_data_dir().unwrap();
    let dangling = d.disk("dang1", "qcow2", 1 << 16, 1 << 14).unwrap();
    let dangling_marker = d.retained_dangling("dang1.qcow2").unwrap();
    let linked = d.disk("link1", "qcow2", 1 << 16, 1 << 14).unwrap();
    let target = d.dir.join("marker-target");
    std::fs::write(&target, b"").unwrap();
    let linked_marker = d.disks().join("link1.qcow2.retained");
    std::os::unix::fs::symlink(&target, &linked_marker).unwrap();
    age_tree(&home.root, OLD).unwrap();
    let (_, v) = json_of(&["scan"], run(&home, &data, &["scan", "--json"]));
    assert_eq!(
        verdict_of(&v, &dangling),
        "reclaimable",
        "dangling marker saves nothing"
    );
    assert_eq!(verdict_of(&v, &dangling_marker), "reclaimable");
    assert_eq!(
        verdict_of(&v, &linked),
        "opt_in",
        "a resolving marker saves its disk"
    );
    assert_eq!(finding_of(&v, &linked)["kind"], "celesto.saved_disk");
}

/// Issue 17: the drift guard reads every install, not the first one on PATH. Celesto 0.1.10
/// first on PATH and 0.2.0 later on PATH over the same data dir: Celesto is show-only, and the
/// banner names the newer install.
#[test]
fn drift_guard_counts_a_newer_install_later_on_path() {
    let (t, home, data) = scratch();
    let d = home.celesto_data_dir().unwrap();
    d.row("live1", "stopped", "qemu", None).unwrap();
    let orphan = d.disk("gone1", "qcow2", 1 << 16, 1 << 14).unwrap();
    age_tree(&home.root, OLD).unwrap();
    let first = fake_celesto_venv(&t.path().join("first"), "0.1.10");
    let later = fake_celesto_venv(&t.path().join("later"), "0.2.0");
    let path = (
        "PATH",
        format!("{}:{}:/usr/bin:/bin", first.display(), later.display()),
    );
    let (code, v) = json_of(
        &["scan"],
        run_env(
            &home,
            &data,
            &["scan", "--json"],
            std::slice::from_ref(&path),
        ),
    );
    assert_eq!(code, 0);
    let cel = product(&v, "celesto");
    assert_eq!(cel["status"], "unknown", "{cel:#}");
    let problems = cel["problems"].to_string();
    assert!(problems.contains("0.2.0"), "{problems}");
    assert!(
        problems.contains(&*t.path().join("later/venv").to_string_lossy()),
        "the banner names the newer install: {problems}"
    );
    assert_eq!(verdict_of(&v, &orphan), "unknown");
    // The scan records what it decided, and the window's "accept newer" reads that (the
    // version the report shows first is the older one, on PATH first).
    assert_eq!(cel["newer"], "0.2.0", "{cel:#}");
    let report: smolsweep::model::ScanReport = serde_json::from_value(v.clone()).unwrap();
    assert_eq!(
        smolsweep::view::newer_products(&report),
        vec![smolsweep::model::Product::Celesto]
    );
    run_env(
        &home,
        &data,
        &["prune", "--yes"],
        std::slice::from_ref(&path),
    );
    assert!(orphan.exists(), "nothing of a drifted product is pruned");
}
