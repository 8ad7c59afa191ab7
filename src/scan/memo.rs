//! Incremental rescans for a long-running process (the tray app): what the last scan's walks
//! read per directory is kept in a [`ScanMemo`] and reused by the next scan for every directory
//! the kernel reported no change in (see [`DirMemo`] for exactly what that trusts).
//!
//! Everything else is read afresh on every scan: roots, inventories, lock table, process table,
//! the `lstat` of every finding's path. A rescan gives the findings a full scan would give; the
//! memo only saves re-reading unchanged directories. Nothing that deletes uses it: plans and
//! the executor's re-judge run their own fresh scans, and `smolsweep scan` is always fresh.

use std::sync::Arc;

use super::procindex::ProcIndex;
use super::{list_processes, scan_sized, ScanOptions};
use crate::model::ScanReport;
pub use crate::size::MemoStats;
use crate::size::{DirMemo, Sizer};

/// Every this long a rescan reads everything again, whatever the kernel reported: some
/// changes raise no event in a remembered directory (a small file written through a hard link
/// made from outside every walked tree, or through `mmap`), and this bounds how long a size
/// shown can miss them.
pub const FULL_READ_EVERY: std::time::Duration = std::time::Duration::from_secs(30 * 60);

/// What earlier scans measured, for the next one.
#[derive(Debug, Default)]
pub struct ScanMemo {
    dirs: Arc<DirMemo>,
    /// When the memo was last emptied (its next scan read everything).
    emptied: std::sync::Mutex<Option<std::time::Instant>>,
}

impl ScanMemo {
    /// An empty memo: the first scan through it reads every directory.
    pub fn new() -> Self {
        Self::default()
    }

    /// Directories reused and read by the last scan.
    pub fn stats(&self) -> MemoStats {
        self.dirs.stats()
    }

    /// Forget everything: the next scan reads every directory.
    pub fn clear(&self) {
        self.dirs.clear();
    }
}

/// [`super::scan`], reusing what `memo` remembers and remembering what this scan reads.
pub fn scan_with_memo(opts: &ScanOptions, memo: &ScanMemo) -> ScanReport {
    scan_memo(opts, list_processes, memo)
}

/// [`scan_with_memo`] with a given process list.
pub fn scan_with_memo_and(
    opts: &ScanOptions,
    processes: Vec<crate::procs::RawProcess>,
    memo: &ScanMemo,
) -> ScanReport {
    scan_memo(opts, move || processes.clone(), memo)
}

/// One memo scan; `processes` is called again only when the scan must be made again.
fn scan_memo(
    opts: &ScanOptions,
    mut processes: impl FnMut() -> Vec<crate::procs::RawProcess>,
    memo: &ScanMemo,
) -> ScanReport {
    {
        let mut emptied = memo.emptied.lock().unwrap_or_else(|e| e.into_inner());
        if emptied.is_none_or(|t| t.elapsed() >= FULL_READ_EVERY) {
            memo.dirs.clear();
            *emptied = Some(std::time::Instant::now());
        }
    }
    memo.dirs.begin_scan();
    let euid = opts.env.euid;
    let r = scan_sized(
        opts,
        || ProcIndex::build(processes(), euid),
        Sizer::with_memo(Arc::clone(&memo.dirs)),
    );
    memo.dirs.end_scan();
    if !memo.dirs.untrusted() {
        return r;
    }
    // A file gained a link since its directory was remembered: read everything again.
    memo.dirs.clear();
    memo.dirs.begin_scan();
    let r = scan_sized(
        opts,
        || ProcIndex::build(processes(), euid),
        Sizer::with_memo(Arc::clone(&memo.dirs)),
    );
    memo.dirs.end_scan();
    r
}
