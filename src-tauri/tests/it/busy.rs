//! The app's background work (the scan loop and the file watcher) under Tauri's mock runtime,
//! with the real core scan of a scratch HOME while a "VM" (a thread of this test) writes its
//! disk: the writes wake nothing and cause no rescan, and a new orphan beside it is still seen.
//! No display needed.

use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use smolsweep::env::EnvSnapshot;
use smolsweep::exec::{Confirmed, ExecReport, Origin, ProgressEvent};
use smolsweep::model::{Platform, Product, ScanReport};
use smolsweep::plan::Plan as CorePlan;
use smolsweep::scan::{scan, ScanOptions};
use smolsweep_desktop::{build_app, watch_counts, Backend, Deps, Note, Notifier};
use smolsweep_fixtures::{age_tree, celesto_edge_cases, CelestoCase, Home, Layout, OLD};
use tauri::test::{mock_builder, mock_context, noop_assets, MockRuntime};
use tauri::App;

/// The real scan of one scratch HOME, counted, its latest report kept.
struct RealHome {
    home: Home,
    data: PathBuf,
    scans: AtomicUsize,
    last: Mutex<Option<ScanReport>>,
}

fn scan_of(home: &Home) -> ScanReport {
    let mut vars = home.env_vars();
    vars.push(("PATH".into(), "/usr/bin:/bin".into()));
    let mut env = EnvSnapshot::from_pairs(home.root.clone(), vars);
    env.euid = rustix::process::geteuid().as_raw();
    scan(&ScanOptions {
        env,
        platform: Platform::Linux,
        age_guard: Duration::from_secs(120),
        now: SystemTime::now(),
    })
}

impl Backend for RealHome {
    fn scan(&self) -> anyhow::Result<ScanReport> {
        let r = scan_of(&self.home);
        *self.last.lock().unwrap() = Some(r.clone());
        self.scans.fetch_add(1, Ordering::SeqCst);
        Ok(r)
    }
    fn execute(
        &self,
        _: &CorePlan,
        _: Confirmed,
        _: Origin,
        _: &dyn Fn(&ProgressEvent),
    ) -> Result<ExecReport, String> {
        Err("not in this test".into())
    }
    fn journal_path(&self) -> Option<PathBuf> {
        Some(self.data.join("journal.jsonl"))
    }
    fn keep_path(&self) -> Option<PathBuf> {
        Some(self.data.join("keep.json"))
    }
    fn auto_policy_path(&self) -> Option<PathBuf> {
        Some(self.data.join("policy.json"))
    }
}

struct Quiet;
impl Notifier for Quiet {
    fn notify(&self, _: &Note, _: Box<dyn FnOnce() + Send>) -> anyhow::Result<()> {
        Ok(())
    }
}

/// A running app watching a HOME with Celesto's edge cases, and what the test writes into.
struct World {
    _dir: tempfile::TempDir,
    /// Holds the fixture's locks for the test's life.
    _celesto: CelestoCase,
    backend: Arc<RealHome>,
    app: App<MockRuntime>,
    /// A sandbox disk, written by the test's "VM".
    disk: PathBuf,
    /// An ordinary file in Celesto's root (a directory that reports content writes).
    probe: PathBuf,
}

impl World {
    fn counts(&self) -> (u64, u64) {
        watch_counts(self.app.handle()).expect("background work runs")
    }
}

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !f() {
        assert!(std::time::Instant::now() < deadline, "{what}: not reached");
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// Append to the probe until the watcher has read `after` + 1 events or more: every event
/// queued before it has then been read (one inotify queue, in order).
fn barrier(w: &World) -> u64 {
    let before = w.counts().0;
    append(&w.probe);
    wait_until("the probe's write read by the watcher", || {
        w.counts().0 > before
    });
    w.counts().0
}

fn append(p: &Path) {
    let mut f = std::fs::OpenOptions::new().append(true).open(p).unwrap();
    f.write_all(b"probe\n").unwrap();
}

fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::new(dir.path(), Layout::Linux).unwrap();
    let celesto = celesto_edge_cases(&home).unwrap();
    let first = scan_of(&home);
    let disk = first
        .findings
        .iter()
        .map(|f| f.path.clone())
        .find(|p| p.extension().is_some_and(|e| e == "qcow2") && p.is_file())
        .expect("a sandbox disk in the fixture");
    let root = first
        .products
        .iter()
        .filter(|p| p.product == Product::Celesto)
        .flat_map(|p| p.roots.values().cloned())
        .find(|d| d.is_dir() && Some(d.as_path()) != disk.parent())
        .expect("Celesto's root");
    let probe = root.join("probe.txt");
    std::fs::write(&probe, b"").unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let backend = Arc::new(RealHome {
        home,
        data: data.clone(),
        scans: AtomicUsize::new(0),
        last: Mutex::new(None),
    });
    let app = build_app(
        mock_builder(),
        Deps {
            backend: backend.clone(),
            notifier: Arc::new(Quiet),
            config_dir: Some(dir.path().join("config")),
            data_dir: Some(data),
            tray: false,
            background: true,
            confirm_answer: false,
        },
    )
    .build(mock_context(noop_assets()))
    .unwrap();
    let mut app = app;
    // The mock runtime has no event loop: one iteration runs `setup`, which starts the scan
    // loop and the watcher.
    #[allow(deprecated)]
    app.run_iteration(|_, _| {});
    let w = World {
        _dir: dir,
        _celesto: celesto,
        backend,
        app,
        disk,
        probe,
    };
    wait_until("the watcher started", || {
        watch_counts(w.app.handle()).is_some()
    });
    wait_until("the first scan", || {
        w.backend.scans.load(Ordering::SeqCst) >= 1
    });
    // The watches are set after the scan: write to the probe until the watcher reads it.
    wait_until("the watches set", || {
        let before = w.counts().0;
        append(&w.probe);
        std::thread::sleep(Duration::from_millis(100));
        w.counts().0 > before
    });
    assert_eq!(w.backend.scans.load(Ordering::SeqCst), 1);
    w
}

/// A "VM": writes 4 KiB at a moving offset into `disk` until `stop` (or `n` writes).
fn writer(disk: &Path, stop: Arc<AtomicBool>, n: usize) -> std::thread::JoinHandle<usize> {
    let f = std::fs::OpenOptions::new().write(true).open(disk).unwrap();
    std::thread::spawn(move || {
        let buf = [7u8; 4096];
        let mut made = 0;
        while made < n && !stop.load(Ordering::SeqCst) {
            f.write_all_at(&buf, (made % 64) as u64 * 4096).unwrap();
            made += 1;
            std::thread::sleep(Duration::from_millis(2));
        }
        made
    })
}

#[test]
fn a_vm_writing_its_disk_causes_no_rescan() {
    let w = world();
    let (read0, scheduled0) = w.counts();
    let made = writer(&w.disk, Arc::new(AtomicBool::new(false)), 200)
        .join()
        .unwrap();
    assert_eq!(made, 200);
    let read1 = barrier(&w);
    let (_, scheduled1) = w.counts();
    // Only the probe's own write (and its close) was read: none of the disk's 200 writes.
    assert!(read1 - read0 <= 2, "{} events read", read1 - read0);
    assert_eq!(scheduled1, scheduled0, "a write asked for a rescan");
    assert_eq!(w.backend.scans.load(Ordering::SeqCst), 1);
}

#[test]
fn a_new_orphan_beside_a_busy_vm_is_still_seen() {
    let w = world();
    let stop = Arc::new(AtomicBool::new(false));
    let vm = writer(&w.disk, stop.clone(), usize::MAX);
    // An old disk no sandbox knows, moved in beside the busy one.
    let orphan = w.disk.with_file_name("vm-late.qcow2");
    let outside = w._dir.path().join("vm-late.qcow2");
    std::fs::write(&outside, vec![0u8; 65536]).unwrap();
    age_tree(&outside, OLD).unwrap();
    std::fs::rename(&outside, &orphan).unwrap();
    wait_until("a rescan that finds the new orphan", || {
        w.backend.scans.load(Ordering::SeqCst) >= 2
            && w.backend
                .last
                .lock()
                .unwrap()
                .as_ref()
                .is_some_and(|r| r.findings.iter().any(|f| f.path == orphan))
    });
    stop.store(true, Ordering::SeqCst);
    assert!(vm.join().unwrap() > 0);
    assert_eq!(
        w.backend.scans.load(Ordering::SeqCst),
        2,
        "one rescan for the orphan"
    );
}
