//! Helpers for the display-server tests: a scratch HOME with SmolVM leftovers, the app process,
//! the tray menu over D-Bus, dunst's history, screenshots.
#![allow(dead_code)]

pub mod wd;

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use smolsweep::model::{
    finding_id, Finding, OptInClass, Platform, Product, ProductReport, ScanReport, Scope, Totals,
    Verdict, VmProcess, SCAN_SCHEMA,
};

pub const APP: &str = env!("CARGO_BIN_EXE_smolsweep-desktop");

/// Wait until `f` returns `Some`, or panic with `what` after `secs`.
pub fn wait_for<T>(secs: u64, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let end = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f() {
            return v;
        }
        if Instant::now() > end {
            panic!("timed out after {secs} s waiting for {what}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

pub fn run(cmd: &str, args: &[&str]) -> Result<String, String> {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .map_err(|e| format!("{cmd}: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "{cmd} {args:?}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// A scratch HOME holding SmolVM leftovers, described to the app by a report file.
pub struct Scratch {
    pub dir: tempfile::TempDir,
    pub home: PathBuf,
    pub report_file: PathBuf,
    pub report: ScanReport,
}

impl Scratch {
    pub fn new() -> Scratch {
        let dir = tempfile::tempdir().unwrap();
        let fixture =
            smolsweep_fixtures::Home::new(dir.path(), smolsweep_fixtures::Layout::Linux).unwrap();
        let home = fixture.root.clone();
        // Celesto's layout: data dir `~/.local/state/celesto` (a real celesto.db that records
        // sandbox `sb-live`, disks/), images in `~/.celesto/images`. The executor judges every
        // action again on the real system, so the saved report below must agree with it.
        let celesto = fixture.celesto_data_dir().unwrap();
        celesto.row("sb-live", "stopped", "qemu", None).unwrap();
        let data = celesto.dir.clone();
        let images = home.join(".celesto/images");
        std::fs::create_dir_all(&images).unwrap();
        let report_file = dir.path().join("report.json");
        let mut roots = std::collections::BTreeMap::new();
        roots.insert("data_dir".to_string(), data.clone());
        roots.insert("image_dir".to_string(), images);
        let report = ScanReport {
            schema: SCAN_SCHEMA.into(),
            home: home.clone(),
            platform: Platform::Linux,
            products: vec![ProductReport {
                product: Product::Celesto,
                detected: true,
                status: "ok".into(),
                roots,
                problems: vec![],
                version: Some("0.1.10".into()),
                newer: None,
            }],
            findings: vec![],
            machines: vec![],
            processes: vec![],
            totals: Totals::default(),
            scanned_at: 0,
            scanned_at_ns: 0,
            duration_ms: 0,
            compact: Default::default(),
        };
        let s = Scratch {
            dir,
            home,
            report_file,
            report,
        };
        s.save();
        s
    }

    /// The usual leftovers, with the scan's kinds and reasons: two orphan disks, an old image
    /// cache (opt-in), the disk of a sandbox that exists (protected).
    pub fn with_leftovers() -> Scratch {
        let mut s = Scratch::new();
        for (id, size) in [("sb-1a2b", 3_000_000), ("sb-9f8e", 2_000_000)] {
            s.orphan_disk(id, size);
        }
        s.add_file(
            ".celesto/images/ubuntu-v0.1.8-amd64-qemu/",
            4_000_000,
            Verdict::OptIn,
            smolsweep::model::FindingKind::CelestoImageCacheStale,
            Some(OptInClass::Caches),
            "Image cache of v0.1.8; celesto is not installed here, so no version is current, and no sandbox uses it.",
        );
        s.add_file(
            ".local/state/celesto/disks/sb-live.qcow2",
            1_000_000,
            Verdict::Protected,
            smolsweep::model::FindingKind::CelestoSandboxDisk,
            None,
            "Disk of sandbox 'sb-live', which exists in celesto.db.",
        );
        s.save();
        s
    }

    /// The disk of a Celesto sandbox that no inventory lists any more.
    pub fn orphan_disk(&mut self, id: &str, size: usize) -> Finding {
        self.add_file(
            &format!(".local/state/celesto/disks/{id}.qcow2"),
            size,
            Verdict::Reclaimable,
            smolsweep::model::FindingKind::CelestoOrphanDisk,
            None,
            &format!("Disk of sandbox '{id}', which no longer exists in any inventory, and no process is using it."),
        )
    }

    /// Create a file (or, for a `rel` ending in `/`, a directory holding one file) of `size` real
    /// bytes and add its finding.
    pub fn add_file(
        &mut self,
        rel: &str,
        size: usize,
        verdict: Verdict,
        kind: smolsweep::model::FindingKind,
        class: Option<OptInClass>,
        reason: &str,
    ) -> Finding {
        // `rel` ending in `/` is a directory (an image cache) holding one file.
        let (rel, is_dir) = match rel.strip_suffix('/') {
            Some(r) => (r, true),
            None => (rel, false),
        };
        let path = self.home.join(rel);
        let file = if is_dir {
            path.join("rootfs.ext4")
        } else {
            path.clone()
        };
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, vec![0x5au8; size]).unwrap();
        // Left behind a while ago, as real leftovers are: the executor's judge protects what
        // changed within the age guard (a sandbox may be being created).
        smolsweep_fixtures::age_tree(&path, smolsweep_fixtures::OLD).unwrap();
        let allocated: u64 = [&path, &file]
            .iter()
            .take(if is_dir { 2 } else { 1 })
            .map(|p| std::fs::symlink_metadata(p).unwrap().blocks() * 512)
            .sum();
        let md = std::fs::symlink_metadata(&file).unwrap();
        let f = Finding {
            owner: (!is_dir)
                .then(|| path.file_stem().map(|s| s.to_string_lossy().into_owned()))
                .flatten(),
            apparent_bytes: md.size(),
            allocated_bytes: allocated,
            reason: reason.into(),
            opt_in_class: class,
            // The identity formula the core re-checks (lstat: dev, ino, type, size, mtime).
            identity: Some(smolsweep::model::FileIdentity::of(&path).unwrap()),
            is_dir,
            // The directory holding it, as the scanner records for a product root's entry.
            root: Some(path.parent().unwrap().to_path_buf()),
            ..Finding::new(
                finding_id(Product::Celesto, kind, &path),
                Product::Celesto,
                kind,
                path.clone(),
                verdict,
            )
        };
        self.report.findings.push(f.clone());
        f
    }

    /// A stopped Celesto sandbox `name` whose VM is not running, with `bytes` of storage.
    pub fn add_stopped_sandbox(&mut self, name: &str, bytes: u64) {
        self.report.machines.push(smolsweep::model::Machine {
            effective_state: "stopped".into(),
            allocated_bytes: bytes,
            ..smolsweep::model::Machine::new(smolsweep::model::Product::Celesto, name, "stopped")
        });
    }

    pub fn add_process(&mut self, p: VmProcess) {
        self.report.processes.push(p);
    }

    /// Write the report the app reads on its next scan (dropping findings whose files are gone,
    /// as a real scan would).
    pub fn save(&self) {
        let mut r = self.report.clone();
        r.findings.retain(|f| f.path.exists());
        r.compute_totals();
        let tmp = self.report_file.with_extension("tmp");
        std::fs::write(&tmp, serde_json::to_vec_pretty(&r).unwrap()).unwrap();
        std::fs::rename(tmp, &self.report_file).unwrap();
    }

    pub fn reclaimable_bytes(&self) -> u64 {
        self.report
            .findings
            .iter()
            .filter(|f| f.verdict == Verdict::Reclaimable && f.path.exists())
            .map(|f| f.allocated_bytes)
            .sum()
    }

    /// Environment for the app: this HOME, fresh XDG dirs, and the report file.
    pub fn app_env(&self) -> Vec<(String, String)> {
        vec![
            ("HOME".into(), self.home.display().to_string()),
            (
                "XDG_CONFIG_HOME".into(),
                self.home.join(".config").display().to_string(),
            ),
            (
                "XDG_DATA_HOME".into(),
                self.home.join(".local/share").display().to_string(),
            ),
            (
                "XDG_CACHE_HOME".into(),
                self.home.join(".cache").display().to_string(),
            ),
            (
                "SMOLSWEEP_REPORT_FILE".into(),
                self.report_file.display().to_string(),
            ),
            (
                "SMOLSWEEP_DATA_DIR".into(),
                self.data_dir().display().to_string(),
            ),
        ]
    }

    /// The app's data directory (`SMOLSWEEP_DATA_DIR`): the core journal is in it.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("smolsweep-data")
    }

    /// The runs of the core journal the app writes (oldest first).
    pub fn runs(&self) -> Vec<smolsweep::journal::RunSummary> {
        journal_runs(&self.data_dir())
    }
}

/// The runs of the core journal in the data directory `data` (oldest first).
pub fn journal_runs(data: &Path) -> Vec<smolsweep::journal::RunSummary> {
    let c = smolsweep::journal::read(&data.join(smolsweep::journal::JOURNAL_FILE)).unwrap();
    smolsweep::journal::runs(&c.entries)
}

/// The `smolsweep` CLI built beside the app.
pub fn cli() -> PathBuf {
    let p = Path::new(APP).with_file_name("smolsweep");
    assert!(p.is_file(), "{} (build the workspace first)", p.display());
    p
}

/// Whether the process `pid` (a child of this test) has exited: gone, or a zombie not yet
/// waited for.
pub fn exited(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(s) => s
            .rsplit_once(')')
            .map(|(_, rest)| rest.trim_start().starts_with('Z'))
            .unwrap_or(false),
    }
}

/// The stand-in VMM the report files describe (the fixtures crate's).
pub use smolsweep_fixtures::vmm::SleepingVmm as FakeVmm;

/// A stand-in VMM as a report file describes it: an orphan of this HOME (no record owns it).
pub trait AsOrphan {
    fn as_orphan(&self, machine: &str, held: u64) -> VmProcess;
}

impl AsOrphan for FakeVmm {
    fn as_orphan(&self, machine: &str, held: u64) -> VmProcess {
        VmProcess {
            pid: self.pid,
            start_time: self.start_time,
            product: Product::Smolvm,
            shape: smolsweep::model::ProcShape::SmolvmBootVm,
            owner: Some(machine.into()),
            orphan: true,
            scope: Scope::ThisHome,
            held_deleted_bytes: held,
            uid: rustix::process::getuid().as_raw(),
            comm: "smolvm".into(),
            argv: vec!["smolvm".into(), "_boot-vm".into()],
            paths: vec![],
            reason: format!("No machine named {machine} in smolvm.db."),
            fds_readable: true,
            kept: None,
        }
    }
}

/// The app, started by the test and stopped when dropped.
pub struct AppProc {
    pub child: Child,
    pub log: PathBuf,
}

pub fn log_dir() -> PathBuf {
    let d = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/desktop-tests");
    std::fs::create_dir_all(&d).unwrap();
    d
}

impl AppProc {
    pub fn launch(s: &Scratch, name: &str, args: &[&str]) -> AppProc {
        let log = log_dir().join(format!("app-{name}.log"));
        let f = std::fs::File::create(&log).unwrap();
        let mut c = Command::new(APP);
        c.args(args)
            .envs(s.app_env())
            .stdout(Stdio::null())
            .stderr(f);
        let child = c.spawn().expect("starting the app (build it first)");
        AppProc { child, log }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for AppProc {
    fn drop(&mut self) {
        if let Some(p) = rustix::process::Pid::from_raw(self.child.id() as i32) {
            let _ = rustix::process::kill_process(p, rustix::process::Signal::TERM);
        }
        for _ in 0..30 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---- the tray menu over D-Bus (com.canonical.dbusmenu) ----------------------------------------

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MenuItem {
    pub id: i32,
    pub label: String,
    pub enabled: bool,
    pub separator: bool,
}

/// Where the app's menu lives: (bus name, object path).
pub fn find_menu(pid: u32) -> Option<(String, String)> {
    let names = run(
        "gdbus",
        &[
            "call",
            "--session",
            "--dest",
            "org.freedesktop.DBus",
            "--object-path",
            "/org/freedesktop/DBus",
            "--method",
            "org.freedesktop.DBus.ListNames",
        ],
    )
    .ok()?;
    for name in names.split('\'').filter(|n| n.starts_with(':')) {
        // Names come and go (gdbus's own connection is listed too): skip those that vanished.
        let Ok(owner) = run(
            "gdbus",
            &[
                "call",
                "--session",
                "--dest",
                "org.freedesktop.DBus",
                "--object-path",
                "/org/freedesktop/DBus",
                "--method",
                "org.freedesktop.DBus.GetConnectionUnixProcessID",
                name,
            ],
        ) else {
            continue;
        };
        if !owner.contains(&format!("uint32 {pid},")) {
            continue;
        }
        let Ok(intro) = run(
            "gdbus",
            &[
                "introspect",
                "--session",
                "--dest",
                name,
                "--object-path",
                "/org/ayatana/NotificationItem",
            ],
        ) else {
            continue;
        };
        for line in intro.lines() {
            let l = line.trim();
            if let Some(node) = l.strip_prefix("node ") {
                // The first `node` line is the introspected path itself; children follow.
                let node = node.trim_end_matches('{').trim();
                if !node.is_empty() && !node.starts_with('/') {
                    return Some((
                        name.to_string(),
                        format!("/org/ayatana/NotificationItem/{node}/Menu"),
                    ));
                }
            }
        }
    }
    None
}

/// Parse a GVariant text string starting at `s` (either quote style); returns it unescaped.
fn gvariant_string(s: &str) -> String {
    let mut chars = s.chars();
    let q = chars.next().unwrap_or('\'');
    let mut out = String::new();
    let mut esc = false;
    for c in chars {
        if esc {
            out.push(c);
            esc = false;
        } else if c == '\\' {
            esc = true;
        } else if c == q {
            break;
        } else {
            out.push(c);
        }
    }
    out
}

/// Every item of the menu layout (flattened, in order), as the desktop shell sees them.
pub fn layout(bus: &str, path: &str) -> Result<Vec<MenuItem>, String> {
    let out = run(
        "gdbus",
        &[
            "call",
            "--session",
            "--dest",
            bus,
            "--object-path",
            path,
            "--method",
            "com.canonical.dbusmenu.GetLayout",
            "--",
            "0",
            "-1",
            "[]",
        ],
    )?;
    let mut items = vec![];
    // Each child is `<(ID, {props}, [children])>`.
    let mut rest = out.as_str();
    while let Some(i) = rest.find("<(") {
        rest = &rest[i + 2..];
        let id_end = rest.find(',').unwrap_or(0);
        let Ok(id) = rest[..id_end].trim().parse::<i32>() else {
            continue;
        };
        let props_start = rest.find('{').unwrap_or(0);
        let props_end = rest
            .find("}, [")
            .or_else(|| rest.find('}'))
            .unwrap_or(rest.len());
        let props = &rest[props_start..props_end];
        let label = props
            .find("'label': <")
            .map(|j| gvariant_string(&props[j + 10..]))
            .unwrap_or_default()
            .replace('_', "");
        let enabled = !props.contains("'enabled': <false>");
        let separator = props.contains("'type': <'separator'>");
        items.push(MenuItem {
            id,
            label,
            enabled,
            separator,
        });
    }
    Ok(items)
}

/// Click an item the way a tray host does.
pub fn click(bus: &str, path: &str, id: i32) -> Result<(), String> {
    run(
        "gdbus",
        &[
            "call",
            "--session",
            "--dest",
            bus,
            "--object-path",
            path,
            "--method",
            "com.canonical.dbusmenu.Event",
            "--",
            &id.to_string(),
            "clicked",
            "<int32 0>",
            "0",
        ],
    )
    .map(|_| ())
}

/// Click the item whose label starts with `label_prefix`, as it is in the menu *now*: the app
/// redraws the menu when a scan changes it, and a redrawn menu's items have new ids, so the id
/// is looked up fresh (and looked up again if the menu changed between the lookup and the click).
pub fn click_label(bus: &str, path: &str, label_prefix: &str) -> Result<(), String> {
    let mut last = String::new();
    for _ in 0..20 {
        let items = layout(bus, path)?;
        let Some(it) = item(&items, label_prefix) else {
            return Err(format!(
                "no menu item {label_prefix:?} in {:?}",
                labels(&items)
            ));
        };
        match click(bus, path, it.id) {
            Ok(()) => return Ok(()),
            Err(e) if e.contains("does not refer to a menu item") => {
                last = e;
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            Err(e) => return Err(e),
        }
    }
    Err(last)
}

pub fn labels(items: &[MenuItem]) -> Vec<String> {
    items
        .iter()
        .filter(|i| !i.separator)
        .map(|i| i.label.clone())
        .collect()
}

pub fn item<'a>(items: &'a [MenuItem], label_prefix: &str) -> Option<&'a MenuItem> {
    items.iter().find(|i| i.label.starts_with(label_prefix))
}

// ---- notifications (dunst) ---------------------------------------------------------------------

/// (appname, summary, body) of every notification dunst has shown and closed.
pub fn dunst_history() -> Vec<(String, String, String)> {
    let _ = run("dunstctl", &["close-all"]);
    std::thread::sleep(Duration::from_millis(500));
    let out = run("dunstctl", &["history"]).unwrap_or_default();
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_default();
    let mut r = vec![];
    if let Some(list) = v["data"][0].as_array() {
        for n in list {
            r.push((
                n["appname"]["data"].as_str().unwrap_or("").to_string(),
                n["summary"]["data"].as_str().unwrap_or("").to_string(),
                n["body"]["data"].as_str().unwrap_or("").to_string(),
            ));
        }
    }
    r
}

// ---- screenshots ---------------------------------------------------------------------------------

/// Save a screenshot of the whole virtual screen under docs/screenshots (when asked to).
pub fn screenshot(name: &str) {
    let Ok(dir) = std::env::var("SMOLSWEEP_SCREENSHOTS") else {
        return;
    };
    let _ = std::fs::create_dir_all(&dir);
    let path = format!("{dir}/{name}.png");
    if let Err(e) = run("import", &["-window", "root", &path]) {
        eprintln!("screenshot {name}: {e}");
    }
}

/// The app on tauri's mock runtime with its window "main", as the mock tests build it: no tray,
/// no background scans; `backend` and `notifier` stand in for the core and the desktop, the
/// settings and the notification state live under `dir`, and every confirmation is answered
/// `confirm`.
pub fn mock_app(
    backend: std::sync::Arc<dyn smolsweep_desktop::Backend>,
    notifier: std::sync::Arc<dyn smolsweep_desktop::Notifier>,
    dir: &Path,
    confirm: bool,
) -> (
    tauri::App<tauri::test::MockRuntime>,
    tauri::WebviewWindow<tauri::test::MockRuntime>,
) {
    use tauri::test::{mock_builder, mock_context, noop_assets};
    let deps = smolsweep_desktop::Deps {
        backend,
        notifier,
        config_dir: Some(dir.join("config")),
        data_dir: Some(dir.join("data")),
        tray: false,
        background: false,
        confirm_answer: confirm,
    };
    let app = smolsweep_desktop::build_app(mock_builder(), deps)
        .build(mock_context(noop_assets()))
        .unwrap();
    let window = tauri::WebviewWindowBuilder::new(&app, "main", Default::default())
        .build()
        .unwrap();
    (app, window)
}
