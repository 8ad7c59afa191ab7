//! What both watchers share (the inotify one on Linux, `watch.rs`; the `notify` crate's
//! elsewhere, `watch_notify.rs`): which directories are worth watching, the coalescing of
//! changes into one wake of the scan loop, and waiting for the report's VM processes to exit.
//! Each watcher brings only its event source and its test of which events can change a finding.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use smolsweep::model::ScanReport;
use smolsweep::scan::ExitWatch;
use tauri::{AppHandle, Manager, Runtime};
use tokio::sync::mpsc;

use crate::state::AppState;

/// After a change, a wake waits this long without another one...
pub const QUIET: Duration = Duration::from_secs(2);
/// ...but no longer than this after the first...
pub const MAX_WAIT: Duration = Duration::from_secs(10);
/// ...and after a wake, changes are ignored for this long.
pub const MIN_SPACING: Duration = Duration::from_secs(20);

/// VM processes as (pid, start time).
pub(crate) type VmSet = BTreeSet<(u32, u64)>;

/// Watched directories, each with whether content writes in it matter too (it is a product's
/// root or holds an inventory).
pub type WatchSet = BTreeMap<PathBuf, bool>;

/// The directories worth watching, each without recursion: every existing root, and the
/// directory of every finding and of every inventory a finding is re-checked against. Roots and
/// inventory directories report content writes too; the others (disks, logs, machine
/// directories: what a running VM writes into all day) only their entries' changes.
pub fn dirs_to_watch(r: &ScanReport) -> WatchSet {
    let mut out: WatchSet = r
        .products
        .iter()
        .flat_map(|p| p.roots.values().map(|d| (d.clone(), true)))
        .collect();
    for f in &r.findings {
        if let Some(parent) = f.path.parent() {
            out.entry(parent.to_path_buf()).or_insert(false);
        }
        if let Some(rc) = &f.owner_recheck {
            for i in rc.inventories.iter().filter_map(|i| i.parent()) {
                out.insert(i.to_path_buf(), true);
            }
        }
    }
    out.retain(|p, _| p.is_dir());
    out
}

/// Coalesce what arrives on `rx` into wakes of the scan loop: after the first change, wait for
/// [`QUIET`] without another (at most [`MAX_WAIT`]), wake once, then ignore changes for
/// [`MIN_SPACING`].
pub(crate) fn debounce<R: Runtime>(app: &AppHandle<R>, mut rx: mpsc::UnboundedReceiver<()>) {
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        while rx.recv().await.is_some() {
            let started = tokio::time::Instant::now();
            loop {
                let left = MAX_WAIT.saturating_sub(started.elapsed());
                if left.is_zero() {
                    break;
                }
                match tokio::time::timeout(QUIET.min(left), rx.recv()).await {
                    Ok(Some(())) => continue,
                    Ok(None) => return,
                    Err(_) => break,
                }
            }
            tracing::debug!("a finding may have changed: rescanning");
            app.state::<AppState>().wake.notify_one();
            tokio::time::sleep(MIN_SPACING).await;
            while rx.try_recv().is_ok() {}
        }
    });
}

/// The report's VM processes, waited for through pidfds: an exit wakes the scan loop through the
/// same coalescing as file events, whose rescan re-reads the process table and, with the
/// directory memo, walks nothing again.
pub(crate) struct Exits {
    tx: mpsc::UnboundedSender<()>,
    current: Mutex<Option<(VmSet, ExitWatch)>>,
}

impl Exits {
    pub(crate) fn new(tx: mpsc::UnboundedSender<()>) -> Exits {
        Exits {
            tx,
            current: Mutex::new(None),
        }
    }

    /// Wait for the VM processes of `r`.
    pub(crate) fn watch(&self, r: &ScanReport) {
        self.watch_set(r.processes.iter().map(|p| (p.pid, p.start_time)).collect());
    }

    /// Wait for `want`; the watch is replaced only when the set of processes changes.
    pub(crate) fn watch_set(&self, want: VmSet) {
        let mut cur = smolsweep::lock(&self.current);
        if cur.as_ref().is_some_and(|(have, _)| *have == want) {
            return;
        }
        let tx = self.tx.clone();
        let pids: Vec<(u32, u64)> = want.iter().copied().collect();
        let watch = ExitWatch::start(&pids, move |pid| {
            tracing::debug!("VM process {pid} exited");
            let _ = tx.send(());
        });
        *cur = Some((want, watch));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vm_process_exit_wakes_the_scan_loop_without_a_file_event() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let exits = Exits::new(tx);
        let mut vm = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = vm.id();
        let start = smolsweep::exec::ProcessRef::current(pid)
            .unwrap()
            .start_time;
        let set: VmSet = [(pid, start)].into_iter().collect();
        exits.watch_set(set.clone());
        // The same set again keeps the same watch (no second thread, no second wake-up).
        exits.watch_set(set);
        std::thread::sleep(Duration::from_millis(200));
        assert!(rx.try_recv().is_err(), "nothing exited yet");
        vm.kill().unwrap();
        vm.wait().unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while rx.try_recv().is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "the VM process's exit woke nothing"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(200));
        assert!(rx.try_recv().is_err(), "one exit, one wake-up");
    }
}
