//! Rescan soon after something that can change a finding happens under the SmolVM roots.
//!
//! **What is watched.** Only the directories findings live in (the parent of every finding,
//! the products' roots, and the directories holding their inventories), each without
//! recursion: a 100k-file `_shared` store costs one watch for `_shared`, not one per directory
//! inside it (inotify watches are a per-user limit). The watch set is updated in place after a
//! scan (directories added and removed), never rebuilt.
//!
//! **Which events the kernel sends** ([`dirs_to_watch`]): every watched directory reports its
//! entries created, removed or renamed and their attributes changed; only the products' roots
//! and the directories of inventories also report content written (`IN_MODIFY`,
//! `IN_CLOSE_WRITE`). A directory of disks, logs or a machine's files, where a running VM writes
//! all day, asks the kernel for no content events at all, so a VM's writes never wake the app:
//! they cannot change a verdict, and sizes of growing files are refreshed by the next scan that
//! runs for another reason (the interval, a change, "Rescan now"). Opens and reads are never
//! asked for. Of what arrives, [`schedules_scan`] keeps entry changes anywhere and content
//! written to an inventory (`*.db`, its `-wal`/`-journal`) or a lock file.
//!
//! **VM processes.** Each VM process of the latest report is waited for through a pidfd
//! ([`smolsweep::procs::exits`]): its exit (a disk no longer in use, a machine no longer
//! running) wakes the scan loop like a file event, with no polling of the process table.
//!
//! Events are coalesced by the shared core (`watch_core`): after the first change it waits for a quiet
//! moment (`QUIET`, at most `MAX_WAIT`), wakes the scan loop once, then ignores changes for a
//! while (`MIN_SPACING`).

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask, Watches};
use smolsweep::model::ScanReport;
use tauri::{AppHandle, Manager, Runtime};
use tokio::sync::mpsc;

use crate::watch_core::{debounce, dirs_to_watch, Exits, WatchSet};

pub(crate) struct WatchState {
    tx: mpsc::UnboundedSender<()>,
    current: Mutex<Option<DirWatcher>>,
    /// The VM processes of the latest report, waited for through pidfds.
    exits: Exits,
    counts: Arc<Counts>,
}

/// What the watcher has read, for tests and the bench's reasoning.
#[derive(Default)]
pub(crate) struct Counts {
    /// inotify events read from the kernel.
    read: AtomicU64,
    /// Reads that held an event asking for a rescan.
    scheduled: AtomicU64,
}

/// Entries created, removed, renamed or their attributes changed, and the directory itself
/// removed or renamed: what every watched directory reports.
const STRUCTURE: WatchMask = WatchMask::CREATE
    .union(WatchMask::DELETE)
    .union(WatchMask::MOVED_FROM)
    .union(WatchMask::MOVED_TO)
    .union(WatchMask::ATTRIB)
    .union(WatchMask::DELETE_SELF)
    .union(WatchMask::MOVE_SELF)
    .union(WatchMask::ONLYDIR);
/// Content written: reported only by the directories of inventories.
const CONTENT: WatchMask = WatchMask::MODIFY.union(WatchMask::CLOSE_WRITE);

/// An inventory or a lock: its content is what the scan judges by.
fn is_inventory_or_lock(name: &OsStr) -> bool {
    let name = name.to_str().unwrap_or_default();
    smolsweep::scan::is_inventory_content(name) || name.ends_with(".lock")
}

/// Whether an inotify event (its mask and the name of the entry, if any) can change what a scan
/// finds: any change of entries; content written only to an inventory or a lock (the kernel
/// sends content events only from inventory directories, see [`dirs_to_watch`]); a lost queue.
pub fn schedules_scan(mask: EventMask, name: Option<&OsStr>) -> bool {
    let entries = EventMask::CREATE
        | EventMask::DELETE
        | EventMask::MOVED_FROM
        | EventMask::MOVED_TO
        | EventMask::ATTRIB
        | EventMask::DELETE_SELF
        | EventMask::MOVE_SELF
        | EventMask::Q_OVERFLOW;
    if mask.intersects(entries) {
        return true;
    }
    mask.intersects(EventMask::MODIFY | EventMask::CLOSE_WRITE)
        && name.is_some_and(is_inventory_or_lock)
}

/// Start the debounce task. The watches are set by [`update`] after each scan.
pub(crate) fn start<R: Runtime>(app: &AppHandle<R>) {
    let (tx, rx) = mpsc::unbounded_channel::<()>();
    app.manage(WatchState {
        exits: Exits::new(tx.clone()),
        tx,
        current: Mutex::new(None),
        counts: Arc::default(),
    });
    debounce(app, rx);
}

/// (inotify events read, reads that asked for a rescan) since the app started; `None` without
/// background work.
pub(crate) fn counts<R: Runtime>(app: &AppHandle<R>) -> Option<(u64, u64)> {
    let ws = app.try_state::<WatchState>()?;
    Some((
        ws.counts.read.load(Ordering::SeqCst),
        ws.counts.scheduled.load(Ordering::SeqCst),
    ))
}

/// One inotify instance, its watches (with whether each reports content) and the thread that
/// reads it: the thread sleeps in `read` until the kernel has an event the masks asked for.
pub struct DirWatcher {
    watches: Watches,
    have: BTreeMap<PathBuf, (bool, WatchDescriptor)>,
    stop: Arc<AtomicBool>,
}

impl DirWatcher {
    /// A watcher that sends on `tx` once per read holding an event [`schedules_scan`] accepts.
    pub(crate) fn new(tx: mpsc::UnboundedSender<()>, counts: Arc<Counts>) -> std::io::Result<Self> {
        let ino = Inotify::init()?;
        let watches = ino.watches();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        std::thread::Builder::new()
            .name("smolsweep-watch".into())
            .spawn(move || read_loop(ino, &tx, &counts, &stopped))?;
        Ok(DirWatcher {
            watches,
            have: BTreeMap::new(),
            stop,
        })
    }

    /// The directories watched now.
    #[cfg(test)]
    fn watched(&self) -> WatchSet {
        self.have
            .iter()
            .map(|(p, (c, _))| (p.clone(), *c))
            .collect()
    }

    /// Bring the watches to `want` (non-recursive), adding, changing and removing only the
    /// difference.
    pub fn rewatch(&mut self, want: &WatchSet) {
        let gone: Vec<PathBuf> = self
            .have
            .keys()
            .filter(|p| !want.contains_key(*p))
            .cloned()
            .collect();
        for p in gone {
            if let Some((_, wd)) = self.have.remove(&p) {
                let _ = self.watches.remove(wd);
            }
        }
        for (p, &content) in want {
            if self.have.get(p).is_some_and(|(c, _)| *c == content) {
                continue;
            }
            let mask = if content {
                STRUCTURE | CONTENT
            } else {
                STRUCTURE
            };
            // Adding a watched directory again replaces its mask (same descriptor).
            match self.watches.add(p, mask) {
                Ok(wd) => {
                    self.have.insert(p.clone(), (content, wd));
                }
                Err(e) => tracing::warn!("watching {}: {e}", p.display()),
            }
        }
    }
}

impl Drop for DirWatcher {
    /// Ends the reading thread: removing a watch makes the kernel send `IN_IGNORED`, which wakes
    /// it to see `stop`.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for (_, (_, wd)) in std::mem::take(&mut self.have) {
            let _ = self.watches.remove(wd);
        }
        if let Ok(wd) = self.watches.add("/", WatchMask::DELETE_SELF) {
            let _ = self.watches.remove(wd);
        }
    }
}

fn read_loop(mut ino: Inotify, tx: &mpsc::UnboundedSender<()>, counts: &Counts, stop: &AtomicBool) {
    let mut buf = [0u8; 4096];
    loop {
        let events = match ino.read_events_blocking(&mut buf) {
            Ok(ev) => ev,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                tracing::warn!("file watching stopped: {e}");
                return;
            }
        };
        let mut wake = false;
        for ev in events {
            counts.read.fetch_add(1, Ordering::SeqCst);
            wake |= schedules_scan(ev.mask, ev.name);
        }
        if stop.load(Ordering::SeqCst) {
            return;
        }
        if wake {
            counts.scheduled.fetch_add(1, Ordering::SeqCst);
            let _ = tx.send(());
        }
    }
}

/// Watch the directories of the latest report: the watcher is made once, its watches updated.
pub(crate) fn update<R: Runtime>(app: &AppHandle<R>, r: &ScanReport) {
    let Some(ws) = app.try_state::<WatchState>() else {
        return;
    };
    ws.exits.watch(r);
    let want = dirs_to_watch(r);
    let mut cur = smolsweep::lock(&ws.current);
    if cur.is_none() {
        match DirWatcher::new(ws.tx.clone(), ws.counts.clone()) {
            Ok(w) => *cur = Some(w),
            Err(e) => {
                tracing::warn!("file watching unavailable: {e}");
                return;
            }
        }
    }
    if let Some(w) = cur.as_mut() {
        w.rewatch(&want);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn content_writes_do_not_schedule_a_scan_unless_inventory_or_lock() {
        let disk = Some(OsStr::new("vm1.qcow2"));
        let data = EventMask::MODIFY;
        let closed = EventMask::CLOSE_WRITE;
        assert!(!schedules_scan(data, disk));
        assert!(!schedules_scan(closed, disk));
        assert!(!schedules_scan(EventMask::ACCESS, disk));
        assert!(!schedules_scan(EventMask::OPEN, disk));
        assert!(!schedules_scan(EventMask::IGNORED, None));
        let db = Some(OsStr::new("celesto.db"));
        assert!(schedules_scan(data, db));
        assert!(schedules_scan(data, Some(OsStr::new("celesto.db-wal"))));
        assert!(schedules_scan(
            closed,
            Some(OsStr::new(".m.fork-operation.lock"))
        ));
        assert!(schedules_scan(EventMask::CREATE, disk));
        assert!(schedules_scan(EventMask::DELETE, disk));
        assert!(schedules_scan(EventMask::MOVED_TO, disk));
        assert!(schedules_scan(EventMask::ATTRIB, disk));
        assert!(schedules_scan(EventMask::DELETE_SELF, None));
        assert!(schedules_scan(EventMask::Q_OVERFLOW, None));
    }

    fn wait_for_wake(rx: &mut mpsc::UnboundedReceiver<()>, what: &str) {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while rx.try_recv().is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "{what} scheduled no scan"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The real watcher on a disks directory: 40 writes into an in-use disk reach the app as no
    /// event at all (the kernel is not asked for them), a new orphan disk schedules a scan; in
    /// an inventory's directory a write to the inventory schedules one.
    #[test]
    fn real_watcher_ignores_disk_writes_and_sees_a_new_orphan() {
        use std::io::Write;
        let d = tempfile::tempdir().unwrap();
        let disks = d.path().join("disks");
        std::fs::create_dir(&disks).unwrap();
        let live = disks.join("live.qcow2");
        std::fs::write(&live, b"").unwrap();
        let db = d.path().join("celesto.db");
        std::fs::write(&db, b"").unwrap();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let counts = Arc::new(Counts::default());
        let mut w = DirWatcher::new(tx, counts.clone()).unwrap();
        let want: WatchSet = [(disks.clone(), false)].into_iter().collect();
        w.rewatch(&want);
        assert_eq!(w.watched(), want);
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&live)
            .unwrap();
        for _ in 0..40 {
            f.write_all(&[7u8; 4096]).unwrap();
            f.flush().unwrap();
        }
        drop(f);
        // The orphan's creation is queued after every write: once it is read, all are.
        std::fs::write(disks.join("orphan.qcow2"), b"x").unwrap();
        wait_for_wake(&mut rx, "a new orphan disk");
        assert_eq!(
            counts.read.load(Ordering::SeqCst),
            1,
            "the disk's writes reached the app"
        );
        // The inventory's directory reports content: a write to the inventory counts.
        let want: WatchSet = [(disks.clone(), false), (d.path().to_path_buf(), true)]
            .into_iter()
            .collect();
        w.rewatch(&want);
        assert_eq!(w.watched(), want);
        std::fs::OpenOptions::new()
            .append(true)
            .open(&db)
            .unwrap()
            .write_all(b"row")
            .unwrap();
        wait_for_wake(&mut rx, "an inventory write");
        // Unwatched again: nothing more arrives. A wake the inventory write queued before the
        // watches went (a second event of the same write) may still be delivered: let the
        // queue settle, then drain it.
        w.rewatch(&WatchSet::new());
        assert!(w.watched().is_empty());
        std::thread::sleep(Duration::from_millis(300));
        while rx.try_recv().is_ok() {}
        std::fs::write(disks.join("another.qcow2"), b"x").unwrap();
        drop(w);
        std::thread::sleep(Duration::from_millis(300));
        assert!(rx.try_recv().is_err());
    }
}
