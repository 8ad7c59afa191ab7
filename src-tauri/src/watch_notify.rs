//! The watcher where inotify is not there (macOS: FSEvents through the `notify` crate). Linux
//! has its own (`watch.rs`), which asks the kernel for content events only where they can
//! change a verdict, so a VM writing its disk wakes nothing.
//!
//! Rescan soon after something that can change a finding happens under the SmolVM roots.
//!
//! **What is watched.** Only the directories findings live in (the parent of every finding,
//! the products' roots, and the directories holding their inventories), each without
//! recursion: a 100k-file `_shared` store costs one watch for `_shared`, not one per directory
//! inside it (inotify watches are a per-user limit). The watch set is updated in place after a
//! scan (directories added and removed), never rebuilt.
//!
//! **Which events count** (`watch_events::schedules_scan`, plain data tested everywhere): entries created, removed or renamed, and
//! attribute changes, anywhere watched; content writes only to inventories (`*.db`, their
//! `-wal`/`-journal`) and lock files. Content written to a disk, a log or anything inside a
//! machine's directory, which is what a running VM does all day, cannot change a verdict and
//! never wakes the scanner; sizes of growing files are refreshed by the next scan that runs
//! for another reason (the interval, a change, "Rescan now").
//!
//! **VM processes.** Each VM process of the latest report is waited for through a pidfd
//! ([`smolsweep::procs::exits`]): its exit (a disk no longer in use, a machine no longer
//! running) wakes the scan loop like a file event, with no polling of the process table.
//!
//! Events are coalesced by the shared core (`watch_core`): after the first change it waits for a quiet
//! moment (`QUIET`, at most `MAX_WAIT`), wakes the scan loop once, then ignores changes for a
//! while (`MIN_SPACING`).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Mutex;

use notify::{RecursiveMode, Watcher};
use smolsweep::model::ScanReport;
use tauri::{AppHandle, Manager, Runtime};
use tokio::sync::mpsc;

use crate::watch_core::{debounce, dirs_to_watch, Exits};
use crate::watch_events::schedules_scan;

pub(crate) struct WatchState {
    tx: mpsc::UnboundedSender<()>,
    current: Mutex<Option<(BTreeSet<PathBuf>, notify::RecommendedWatcher)>>,
    /// The VM processes of the latest report, waited for through pidfds.
    exits: Exits,
}

/// Start the debounce task. The watches are set by [`update`] after each scan.
pub(crate) fn start<R: Runtime>(app: &AppHandle<R>) {
    let (tx, rx) = mpsc::unbounded_channel::<()>();
    app.manage(WatchState {
        exits: Exits::new(tx.clone()),
        tx,
        current: Mutex::new(None),
    });
    debounce(app, rx);
}

/// A watcher that sends on `tx` for every event [`schedules_scan`] accepts.
pub fn make_watcher(tx: mpsc::UnboundedSender<()>) -> notify::Result<notify::RecommendedWatcher> {
    notify::recommended_watcher(move |ev: notify::Result<notify::Event>| {
        if let Ok(ev) = ev {
            if schedules_scan(&ev) {
                let _ = tx.send(());
            }
        }
    })
}

/// Bring the watches of `w` from `old` to `new` (non-recursive), adding and removing only the
/// difference. Returns the set actually watched.
pub fn rewatch(
    w: &mut impl Watcher,
    old: &BTreeSet<PathBuf>,
    new: &BTreeSet<PathBuf>,
) -> BTreeSet<PathBuf> {
    let mut now = old.clone();
    for gone in old.difference(new) {
        let _ = w.unwatch(gone);
        now.remove(gone);
    }
    for added in new.difference(old) {
        match w.watch(added, RecursiveMode::NonRecursive) {
            Ok(()) => {
                now.insert(added.clone());
            }
            Err(e) => tracing::warn!("watching {}: {e}", added.display()),
        }
    }
    now
}

/// Watch the directories of the latest report: the watcher is made once, its watches updated.
/// The Linux watcher's counts of events read; this watcher keeps none.
pub(crate) fn counts<R: Runtime>(_app: &AppHandle<R>) -> Option<(u64, u64)> {
    None
}

pub(crate) fn update<R: Runtime>(app: &AppHandle<R>, r: &ScanReport) {
    let Some(ws) = app.try_state::<WatchState>() else {
        return;
    };
    ws.exits.watch(r);
    let want: BTreeSet<PathBuf> = dirs_to_watch(r).into_keys().collect();
    let mut cur = smolsweep::lock(&ws.current);
    if cur.is_none() {
        match make_watcher(ws.tx.clone()) {
            Ok(w) => *cur = Some((BTreeSet::new(), w)),
            Err(e) => {
                tracing::warn!("file watching unavailable: {e}");
                return;
            }
        }
    }
    if let Some((have, w)) = cur.as_mut() {
        if *have != want {
            *have = rewatch(w, have, &want);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// The real watcher on a disks directory: 40 writes into an in-use disk schedule nothing, a
    /// new orphan disk schedules a scan.
    #[test]
    fn real_watcher_ignores_disk_writes_and_sees_a_new_orphan() {
        use std::io::Write;
        let d = tempfile::tempdir().unwrap();
        let disks = d.path().join("disks");
        std::fs::create_dir(&disks).unwrap();
        let live = disks.join("live.qcow2");
        std::fs::write(&live, b"").unwrap();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut w = make_watcher(tx).unwrap();
        let want: BTreeSet<PathBuf> = [disks.clone()].into_iter().collect();
        assert_eq!(rewatch(&mut w, &BTreeSet::new(), &want), want);
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&live)
            .unwrap();
        for _ in 0..40 {
            f.write_all(&[7u8; 4096]).unwrap();
            f.flush().unwrap();
        }
        drop(f);
        std::thread::sleep(Duration::from_millis(300));
        assert!(
            rx.try_recv().is_err(),
            "writes into an in-use disk scheduled a scan"
        );
        std::fs::write(disks.join("orphan.qcow2"), b"x").unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while rx.try_recv().is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "a new orphan disk scheduled no scan"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        // Unwatched again: nothing more arrives.
        assert!(rewatch(&mut w, &want, &BTreeSet::new()).is_empty());
        while rx.try_recv().is_ok() {}
        std::fs::write(disks.join("another.qcow2"), b"x").unwrap();
        std::thread::sleep(Duration::from_millis(300));
        assert!(rx.try_recv().is_err());
    }
}
