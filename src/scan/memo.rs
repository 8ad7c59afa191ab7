//! Incremental rescans for a long-running process (the tray app): what the last scan's walks
//! read per directory is kept in a [`ScanMemo`] and reused by the next scan for every directory
//! the kernel reported no change in (see [`DirMemo`] for exactly what that trusts).
//!
//! Everything else is read afresh on every scan: roots, inventories, lock table, process table,
//! the `lstat` of every finding's path. A rescan gives the findings a full scan would give; the
//! memo only saves re-reading unchanged directories. Nothing that deletes uses it: plans and
//! the executor's re-judge run their own fresh scans, and `smolsweep scan` is always fresh.

use std::sync::Arc;

use super::{list_processes, scan_sized, ScanOptions};
use crate::model::ScanReport;
use crate::size::{DirMemo, MemoStats, Sizer};

/// What earlier scans measured, for the next one.
#[derive(Debug, Default)]
pub struct ScanMemo {
    dirs: Arc<DirMemo>,
}

impl ScanMemo {
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
    scan_with_memo_and(opts, list_processes(), memo)
}

/// [`scan_with_memo`] with a given process list.
pub fn scan_with_memo_and(
    opts: &ScanOptions,
    processes: Vec<crate::procs::RawProcess>,
    memo: &ScanMemo,
) -> ScanReport {
    memo.dirs.begin_scan();
    let r = scan_sized(opts, processes, Sizer::with_memo(Arc::clone(&memo.dirs)));
    memo.dirs.end_scan();
    r
}
