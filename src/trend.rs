//! Space over time: a compact, bounded history of the scans' totals per product, and of what
//! each reclaim freed (read from the journal).
//!
//! One point per hour for the last week, one per day for the year before; older points are
//! dropped. A later point in the same slot replaces the earlier one (a point records its own
//! time), so the file stays a few hundred kilobytes at most however often a surface scans. It
//! lives beside the journal in the data directory ([`crate::journal::data_dir`]), is written
//! atomically (a temporary file in the same directory, fsynced, renamed over it, the directory
//! fsynced) and read like every file Smolsweep did not just make: a regular file only, never
//! through a symlink, never more than [`MAX_TREND_BYTES`]. A damaged file (not JSON, cut short,
//! too large, a pipe or a directory in its place) starts afresh and says so
//! ([`Loaded::damaged`]); the journal is only ever read here.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::filter::Filter;
use crate::journal::RunSummary;
use crate::model::{Product, ScanReport};
use crate::plan::{Plan, Selection};

/// File name of the history inside the data directory.
pub const TREND_FILE: &str = "trend.json";
/// `smolsweep.trend/1`: the schema of the file.
pub const TREND_SCHEMA: &str = "smolsweep.trend/1";
/// Largest history file read; anything larger is damaged (what Smolsweep writes stays far
/// below: [`MAX_POINTS`] points of two products).
pub const MAX_TREND_BYTES: u64 = 512 << 10;
/// Most points (and most freed markers) kept: one per hour for a week and one per day for a
/// year fit with room to spare.
pub const MAX_POINTS: usize = 600;

const HOUR: u64 = 3_600;
const DAY: u64 = 86_400;
/// Points younger than this keep one per hour.
pub(crate) const WEEK: u64 = 7 * DAY;
/// Points older than this are dropped.
const YEAR: u64 = 365 * DAY;

/// One product's totals at a scan, as the scan's view shows them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProductTotals {
    /// Allocated bytes of everything the scan found of the product (every verdict).
    pub on_disk: u64,
    /// What "Reclaim" would free of it: the planner's estimate, as `--product` shows it.
    pub reclaimable: u64,
    /// Allocated bytes of its opt-in findings.
    pub opt_in: u64,
    /// Allocated bytes of its protected findings.
    pub protected: u64,
    /// Deleted-but-open bytes its orphaned VM processes of this HOME hold.
    pub held_by_orphans: u64,
    /// How many orphaned VM processes of this HOME it has.
    #[serde(default)]
    pub orphans: u64,
}

/// The totals of one scan.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Point {
    /// When the scan ran, in seconds since the Unix epoch.
    pub at: u64,
    /// Each product's totals.
    pub products: BTreeMap<Product, ProductTotals>,
}

impl Point {
    /// The totals of `report` per product, at the scan's time: what `scan --product P` shows
    /// (the same filter, the same planner estimate for "reclaimable", the report's own sums
    /// for the rest).
    pub fn of(report: &ScanReport) -> Point {
        let at = if report.scanned_at > 0 {
            report.scanned_at
        } else {
            crate::basics::now_secs()
        };
        let mut products = BTreeMap::new();
        for p in Product::ALL {
            products.insert(p, product_totals(report, p));
        }
        Point { at, products }
    }

    /// Allocated bytes on disk over every product.
    pub fn on_disk(&self) -> u64 {
        self.products.values().map(|t| t.on_disk).sum()
    }
}

fn product_totals(report: &ScanReport, product: Product) -> ProductTotals {
    let filter = Filter {
        products: vec![product],
        ..Default::default()
    };
    let mut items = report.clone();
    filter.apply(&mut items, std::time::SystemTime::now());
    let plan = Plan::from_scan(&items, &Selection::reclaimable());
    let t = &items.totals;
    let orphans = report
        .processes
        .iter()
        .filter(|p| p.product == product && p.is_this_homes_orphan());
    ProductTotals {
        on_disk: t.reclaimable_allocated_bytes
            + t.opt_in_allocated_bytes
            + t.protected_allocated_bytes
            + t.unknown_allocated_bytes,
        reclaimable: plan.estimated_bytes,
        opt_in: t.opt_in_allocated_bytes,
        protected: t.protected_allocated_bytes,
        held_by_orphans: orphans.clone().map(|p| p.held_deleted_bytes).sum(),
        orphans: orphans.count() as u64,
    }
}

/// What the reclaims of one slot freed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Freed {
    /// When the (latest) run of the slot started, in seconds since the Unix epoch.
    pub at: u64,
    /// Bytes measured freed, summed over the slot's runs.
    pub freed_bytes: u64,
    /// How many runs freed them.
    pub runs: u64,
}

/// The whole history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trend {
    /// [`TREND_SCHEMA`].
    pub schema: String,
    /// The scans' totals, oldest first.
    pub points: Vec<Point>,
    /// What reclaims freed, oldest first.
    #[serde(default)]
    pub freed: Vec<Freed>,
    /// Start (milliseconds since the epoch) of the newest journal run already counted.
    #[serde(default)]
    pub runs_seen_ms: u64,
}

impl Default for Trend {
    fn default() -> Self {
        Trend {
            schema: TREND_SCHEMA.into(),
            points: Vec::new(),
            freed: Vec::new(),
            runs_seen_ms: 0,
        }
    }
}

/// The slot a time falls in, seen at `now`: `(0, hour)` within the week, `(1, day)` within the
/// year, `None` beyond it. A time after `now` (a clock set back) counts as now.
fn slot(at: u64, now: u64) -> Option<(u8, u64)> {
    match now.saturating_sub(at) {
        age if age < WEEK => Some((0, at / HOUR)),
        age if age < YEAR => Some((1, at / DAY)),
        _ => None,
    }
}

/// Keep one item per slot (merged by `merge`, the later one second), oldest first, at most
/// [`MAX_POINTS`] of the newest.
fn downsample<T>(items: &mut Vec<T>, now: u64, at: impl Fn(&T) -> u64, merge: impl Fn(&mut T, T)) {
    items.sort_by_key(&at);
    let mut out: Vec<(Option<(u8, u64)>, T)> = Vec::with_capacity(items.len());
    for it in items.drain(..) {
        let s = slot(at(&it), now);
        if s.is_none() {
            continue;
        }
        match out.last_mut() {
            Some((last, prev)) if *last == s => merge(prev, it),
            _ => out.push((s, it)),
        }
    }
    let skip = out.len().saturating_sub(MAX_POINTS);
    items.extend(out.into_iter().skip(skip).map(|(_, t)| t));
}

impl Trend {
    /// Add a scan's point (replacing an earlier one of its slot) and thin the history as seen
    /// at `now` (seconds).
    pub fn record(&mut self, point: Point, now: u64) {
        self.points.push(point);
        self.compact(now);
    }

    /// Count the finished runs of the journal not counted yet (those that freed something),
    /// each in the slot of its start.
    pub fn note_runs(&mut self, runs: &[RunSummary], now: u64) {
        let mut seen = self.runs_seen_ms;
        for r in runs.iter().filter(|r| r.started_at_ms > self.runs_seen_ms) {
            let Some(freed) = r.freed_bytes else { continue };
            seen = seen.max(r.started_at_ms);
            if freed > 0 {
                self.freed.push(Freed {
                    at: r.started_at_ms / 1000,
                    freed_bytes: freed,
                    runs: 1,
                });
            }
        }
        self.runs_seen_ms = seen;
        self.compact(now);
    }

    /// One point per hour within the week, one per day within the year, nothing older.
    pub fn compact(&mut self, now: u64) {
        downsample(&mut self.points, now, |p| p.at, |a, b| *a = b);
        downsample(
            &mut self.freed,
            now,
            |f| f.at,
            |a, b| {
                a.at = a.at.max(b.at);
                a.freed_bytes = a.freed_bytes.saturating_add(b.freed_bytes);
                a.runs = a.runs.saturating_add(b.runs);
            },
        );
    }

    /// The newest point.
    pub fn latest(&self) -> Option<&Point> {
        self.points.last()
    }

    /// Whether recording `point` would change more than the time of the newest point: a new
    /// slot, or other totals. A surface that scans often saves only then.
    pub fn would_change(&self, point: &Point) -> bool {
        self.latest()
            .is_none_or(|p| p.at / HOUR != point.at / HOUR || p.products != point.products)
    }
}

/// Why a history file was set aside and a fresh one started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} could not be read ({why})", crate::pathser::shown(path))]
pub struct Damaged {
    /// The history file.
    pub path: PathBuf,
    /// What was wrong with it.
    pub why: String,
}

/// What [`load`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Loaded {
    /// The history (empty when there was none, or it was damaged).
    pub trend: Trend,
    /// Set when a file was there but could not be used: the history starts afresh.
    pub damaged: Option<Damaged>,
}

/// Where the history is (whether or not it exists yet): beside the journal.
pub fn default_path() -> Option<PathBuf> {
    crate::journal::data_dir().map(|d| d.join(TREND_FILE))
}

/// Read the history at `path`. A missing file is an empty history; anything else that is not a
/// history Smolsweep wrote is an empty history with [`Loaded::damaged`] set. Never blocks on a
/// pipe, never follows a symlink, never reads more than [`MAX_TREND_BYTES`].
pub fn load(path: &Path) -> Loaded {
    let damaged = |why: String| Loaded {
        trend: Trend::default(),
        damaged: Some(Damaged {
            path: path.to_path_buf(),
            why,
        }),
    };
    let file = match crate::fsread::open_regular(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Loaded::default(),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return damaged("it is a symbolic link".into())
        }
        Err(e) if e.kind() == io::ErrorKind::InvalidInput => {
            let ft = std::fs::symlink_metadata(path).map(|m| m.file_type());
            return damaged(ft.map_or(e.to_string(), |ft| {
                format!("it is {}", crate::fsread::type_name(ft))
            }));
        }
        Err(e) => return damaged(e.to_string()),
    };
    let bytes = match crate::fsread::read_capped(file, path, MAX_TREND_BYTES, "a history") {
        Ok(b) => b,
        Err(crate::fsread::InputError::TooLarge { .. }) => {
            return damaged(format!("it is larger than {} kB", MAX_TREND_BYTES / 1000))
        }
        Err(e) => return damaged(e.to_string()),
    };
    match serde_json::from_slice::<Trend>(&bytes) {
        Ok(t) if t.schema == TREND_SCHEMA => Loaded {
            trend: t,
            damaged: None,
        },
        Ok(t) => damaged(format!("its schema is {:?}, not {TREND_SCHEMA}", t.schema)),
        Err(e) => damaged(format!("it is not a history Smolsweep wrote: {e}")),
    }
}

/// Write the history to `path` atomically: a new private file in the same directory, written
/// and fsynced, renamed over `path`, then the directory fsynced. The directory is created
/// private (0700) when needed.
pub fn save(path: &Path, trend: &Trend) -> io::Result<()> {
    let bytes = serde_json::to_vec(trend).map_err(io::Error::other)?;
    crate::atomic::write(path, &bytes, true)
}

/// What [`record`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    /// The history with the new point.
    pub trend: Trend,
    /// The file was damaged and started afresh (the caller shows it).
    pub damaged: Option<Damaged>,
    /// It could not be written (the point is in `trend`, not on disk).
    pub error: Option<String>,
}

/// Add `point` to the history at `path` with the freed bytes of the journal's new runs (the
/// journal at `journal`, only read), thinned as seen at `now` (seconds), and save it.
pub fn record(path: &Path, journal: Option<&Path>, point: Point, now: u64) -> Recorded {
    let Loaded { mut trend, damaged } = load(path);
    if let Some(j) = journal {
        // Only the runs not counted yet, read from the journal's end (every scan records).
        if let Ok(runs) = crate::journal::runs_started_after(j, trend.runs_seen_ms) {
            trend.note_runs(&runs, now);
        }
    }
    trend.record(point, now);
    let error = save(path, &trend)
        .err()
        .map(|e| format!("cannot write {}: {e}", crate::pathser::shown(path)));
    Recorded {
        trend,
        damaged,
        error,
    }
}

/// [`record`] at the default place (beside the journal), now. `None` without a data directory.
pub fn record_default(point: Point) -> Option<Recorded> {
    let path = default_path()?;
    let journal = crate::journal::default_path();
    Some(record(
        &path,
        journal.as_deref(),
        point,
        crate::basics::now_secs(),
    ))
}

#[cfg(test)]
mod tests;
