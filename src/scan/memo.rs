//! Incremental rescans for a long-running process (the tray app): what the last scan's walks
//! read per directory is kept in a [`ScanMemo`] and reused by the next scan for every directory
//! the kernel reported no change in (see [`DirMemo`] for exactly what that trusts), and so is
//! the process table, for every process that has not run since it was read.
//!
//! So are the judges' listings of the products' directories (each entry with its `lstat`),
//! while the same watches prove them unchanged (`size::listings` says exactly what that
//! trusts). Everything else is read afresh on every scan: inventories (unless their files are
//! unchanged, `inventory::cache`), lock table, the `lstat` of every finding's path. A rescan
//! gives the findings a full scan would give; the memo only saves re-reading unchanged
//! directories and processes that did not run.
//!
//! **What deletes or stops never uses the memo**: plans are judged again by the executor
//! (`exec::judge`, `exec::runner`) on its own fresh scans and a fresh process table, and
//! `smolsweep scan`, `why`, the uninstall's preflight and verification always read everything
//! afresh. The memo only feeds what the app shows.
//!
//! **The process table** (issue 20: on a desktop it is most of a scan). A process is read in
//! full again unless it provably has not run since its last read: same pid and start time, same
//! threads, every thread's `schedstat` unchanged (`procs::linux::table_memo` gives the rule and
//! every edge). What can change under a process that does not run is the *name* of what it
//! holds, maps or works in (a rename by another process). Open files are also matched by
//! device and inode, but directories, mapped files and working directories by path only, so
//! the remembered table is trusted only while nothing can have moved into the walked trees:
//! the whole table is read when
//!
//! * the directory memo's watches saw a name created, removed or moved in a walked directory
//!   since the last scan, or the memo was emptied ([`MemoStats::names_moved`]);
//! * the scan before met a directory it was not already watching, or a finding the scan
//!   before it did not have (a name may have moved in before any watch stood);
//! * [`PROC_FULL_READ_EVERY`] has passed since the last whole read, or [`ScanMemo::clear`] was
//!   called.
//!
//! A scan that took processes from the memo and then meets such a directory or finding is
//! made again with the whole table. A walk beyond the directories the memo can watch
//! (`size::MEMO_MAX_DIRS`) meets new directories every time, so it reads the whole
//! table every time. The memo keeps one copy of the table between scans.

use crate::basics::lock;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::procindex::ProcIndex;
use super::{list_processes, scan_sized, ScanOptions};
use crate::model::ScanReport;
use crate::procs::os::TableMemo;
use crate::procs::RawProcess;
pub use crate::size::MemoStats;
use crate::size::{DirMemo, Sizer};

/// Every this long a rescan reads everything again, whatever the kernel reported: some
/// changes raise no event in a remembered directory (a small file written through a hard link
/// made from outside every walked tree, or through `mmap`), and this bounds how long a size
/// shown can miss them.
pub const FULL_READ_EVERY: Duration = Duration::from_secs(30 * 60);

/// Every this long a rescan reads the whole process table again, whatever did not run: it
/// bounds how long the two edges the table's memo does not see can last (a process sharing a
/// descriptor table as a sibling, memory written from outside; `procs::linux::table_memo`).
pub const PROC_FULL_READ_EVERY: Duration = Duration::from_secs(60);

/// What earlier scans measured, for the next one.
#[derive(Debug, Default)]
pub struct ScanMemo {
    dirs: Arc<DirMemo>,
    /// When the memo was last emptied (its next scan read everything).
    emptied: Mutex<Option<Instant>>,
    table: Mutex<Table>,
}

/// How the last scan through a [`ScanMemo`] read the process table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TableStats {
    /// Processes taken as remembered: none of their threads ran since they were read.
    pub kept: usize,
    /// Processes read in full.
    pub read: usize,
    /// The whole table was read (nothing could be taken from the memo).
    pub whole: bool,
    /// The scan was made twice: it took processes from the memo, then found something new
    /// in the walked trees.
    pub again: bool,
}

/// The process table's memo and when it may be trusted.
#[derive(Debug, Default)]
struct Table {
    memo: TableMemo,
    /// When the whole table was last read.
    whole_at: Option<Instant>,
    /// The last scan left a table the next may take processes from.
    trusted: bool,
    /// The last scan's findings, sorted.
    findings: Vec<Seen>,
    stats: TableStats,
}

/// A finding as the next scan compares it: its path as bytes, its device and inode.
type Seen = (Box<[u8]>, Option<(u64, u64)>);

/// Where a memo scan's processes come from.
enum Source {
    /// This machine's table, through the table's memo.
    Live,
    /// A given list (tests, measurements).
    Given(Vec<RawProcess>),
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

    /// How the last scan read the process table.
    pub fn table_stats(&self) -> TableStats {
        lock(&self.table).stats
    }

    /// Forget everything: the next scan reads every directory and the whole process table.
    pub fn clear(&self) {
        self.dirs.clear();
        *lock(&self.table) = Table::default();
    }

    /// The process table's memo (tests of `/proc`'s).
    #[cfg(all(test, target_os = "linux"))]
    pub(crate) fn with_table<T>(&self, f: impl FnOnce(&mut TableMemo) -> T) -> T {
        f(&mut lock(&self.table).memo)
    }
}

/// [`super::scan`], reusing what `memo` remembers and remembering what this scan reads.
pub fn scan_with_memo(opts: &ScanOptions, memo: &ScanMemo) -> ScanReport {
    scan_memo(opts, Source::Live, memo)
}

/// [`scan_with_memo`] with a given process list.
pub fn scan_with_memo_and(
    opts: &ScanOptions,
    processes: Vec<RawProcess>,
    memo: &ScanMemo,
) -> ScanReport {
    scan_memo(opts, Source::Given(processes), memo)
}

/// One memo scan, made again (from the file system, with the whole process table) when what
/// it reused cannot be trusted.
fn scan_memo(opts: &ScanOptions, source: Source, memo: &ScanMemo) -> ScanReport {
    {
        let mut emptied = lock(&memo.emptied);
        if emptied.is_none_or(|t| t.elapsed() >= FULL_READ_EVERY) {
            memo.dirs.clear();
            *emptied = Some(Instant::now());
        }
    }
    let mut table = lock(&memo.table);
    let (r, table_stands) = scan_pass(opts, &source, memo, &mut table, false);
    let links_stand = !memo.dirs.untrusted();
    if links_stand && table_stands {
        return r;
    }
    if !links_stand {
        // A file gained a link since its directory was remembered: read everything again.
        memo.dirs.clear();
    }
    let (r, _) = scan_pass(opts, &source, memo, &mut table, true);
    table.stats.again = !table_stands;
    r
}

/// One scan through the directory memo, reading the whole process table when `whole` or when
/// the table's memo is not to be trusted; false with it when it took processes from the memo
/// and then met something new in the walked trees.
fn scan_pass(
    opts: &ScanOptions,
    source: &Source,
    memo: &ScanMemo,
    table: &mut Table,
    whole: bool,
) -> (ScanReport, bool) {
    memo.dirs.begin_scan();
    let whole = whole
        || memo.dirs.stats().names_moved
        || !table.trusted
        || table
            .whole_at
            .is_none_or(|t| t.elapsed() >= PROC_FULL_READ_EVERY);
    let euid = opts.env.euid;
    // The judges' listings of directories come from the memo too (`size::listings`).
    let listings: Arc<dyn crate::fsread::Listings> = Arc::clone(&memo.dirs) as _;
    let r = crate::fsread::with_listings(listings, || {
        scan_sized(
            opts,
            || ProcIndex::build(table.read(source, whole), euid),
            Sizer::with_memo(Arc::clone(&memo.dirs)),
        )
    });
    memo.dirs.end_scan();
    let nothing_new = table.settle(&r, memo.dirs.stats());
    if let Source::Given(_) = source {
        // This scan took in the changes the watches reported without checking the remembered
        // table against them: the next live scan reads it whole.
        table.trusted = false;
    }
    (r, nothing_new || table.stats.kept == 0)
}

impl Table {
    /// The process table for one scan, from `source`.
    fn read(&mut self, source: &Source, whole: bool) -> Vec<RawProcess> {
        let procs = match source {
            Source::Given(procs) => {
                self.stats = TableStats::default();
                return procs.clone();
            }
            Source::Live if cfg!(target_os = "linux") => {
                let started = Instant::now();
                let procs = self.memo.list(Path::new("/proc"), whole);
                if whole {
                    self.whole_at = Some(started);
                }
                procs
            }
            Source::Live => return list_processes(),
        };
        let kept = self.memo.kept();
        self.stats = TableStats {
            kept,
            read: procs.len() - kept,
            whole,
            again: false,
        };
        procs
    }

    /// After a scan: whether its walk met nothing new (no directory it was not watching, no
    /// finding the scan before did not have), which the next scan's trust in the table needs.
    fn settle(&mut self, r: &ScanReport, st: MemoStats) -> bool {
        // By the bytes of the path: only equality matters here, and bytes compare faster than
        // paths component by component.
        let mut findings: Vec<Seen> = r
            .findings
            .iter()
            .map(|f| {
                let path = f.path.as_os_str().as_encoded_bytes().into();
                (path, f.identity.as_ref().map(|i| (i.dev, i.ino)))
            })
            .collect();
        findings.sort_unstable();
        let new_finding = findings
            .iter()
            .any(|f| self.findings.binary_search(f).is_err());
        self.findings = findings;
        self.trusted = st.new_dirs == 0 && !new_finding;
        self.trusted
    }
}
