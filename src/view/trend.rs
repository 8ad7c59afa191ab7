//! Space over time as every surface shows it: the one sentence ("SmolVM uses 48 GB, 6 GB more
//! than a week ago"), the growth a low-space alert names, and the series (per product, each
//! point's numbers in words and its place in the overview's chart) that `smolsweep trend`
//! prints and the window draws.

use serde::Serialize;

use super::bytes;
use crate::env::Zone;
use crate::model::Product;
use crate::trend::{Damaged, Point, ProductTotals, Trend, WEEK};

const HOUR: u64 = 3_600;
const DAY: u64 = 86_400;

/// How long ago `secs` is, in words: "a week ago", "3 days ago", "5 hours ago".
fn ago(secs: u64) -> String {
    match secs {
        s if (WEEK..WEEK + DAY).contains(&s) => "a week ago".into(),
        s if s >= 2 * DAY => format!("{} days ago", s / DAY),
        s if s >= 2 * HOUR => format!("{} hours ago", s / HOUR),
        s if s >= HOUR => "an hour ago".into(),
        s if s >= 120 => format!("{} minutes ago", s / 60),
        _ => "a minute ago".into(),
    }
}

/// The point the newest one is compared with: the newest at least a week older, else the
/// oldest (the history is younger than a week); `None` with fewer than two points. The flag
/// says whether it is a week-old one.
fn reference(t: &Trend) -> Option<(&Point, &Point, bool)> {
    let latest = t.latest()?;
    if let Some(p) = t.points.iter().rev().find(|p| p.at + WEEK <= latest.at) {
        return Some((latest, p, true));
    }
    let first = t.points.first().filter(|p| p.at < latest.at)?;
    Some((latest, first, false))
}

/// The tray's sentence: "SmolVM uses 48 GB, 6 GB more than a week ago". Without a week-old
/// point it compares with the oldest and says so ("…, 2 GB more than 3 days ago, when its
/// history starts"); with one point it says the history starts there. `None` without points.
pub fn trend_sentence(t: &Trend) -> Option<String> {
    let latest = t.latest()?;
    let now = format!("SmolVM uses {}", bytes(latest.on_disk()));
    let Some((_, old, week)) = reference(t) else {
        return Some(format!("{now}; its history starts with this scan"));
    };
    let when = ago(latest.at - old.at);
    let (a, b) = (latest.on_disk(), old.on_disk());
    let change = if a == b {
        format!("as much as {when}")
    } else if a > b {
        format!("{} more than {when}", bytes(a - b))
    } else {
        format!("{} less than {when}", bytes(b - a))
    };
    Some(if week {
        format!("{now}, {change}")
    } else {
        format!("{now}, {change}, when its history starts")
    })
}

/// What a low-space alert says of the growth: "SmolVM grew by 6 GB in the last week" (or "in
/// the last 3 days" for a younger history). `None` when it did not grow.
pub fn trend_growth(t: &Trend) -> Option<String> {
    let (latest, old, week) = reference(t)?;
    let grew = latest
        .on_disk()
        .checked_sub(old.on_disk())
        .filter(|g| *g > 0)?;
    let span = match latest.at - old.at {
        _ if week => "the last week".to_string(),
        s if s >= 2 * DAY => format!("the last {} days", s / DAY),
        s if s >= 2 * HOUR => format!("the last {} hours", s / HOUR),
        s if s >= HOUR => "the last hour".into(),
        s if s >= 120 => format!("the last {} minutes", s / 60),
        _ => "the last minute".into(),
    };
    Some(format!("SmolVM grew by {} in {span}", bytes(grew)))
}

/// What a surface says when the history file was damaged and started afresh.
pub fn trend_notice(d: &Damaged) -> String {
    format!("The space history {d}; it starts afresh.")
}

/// A point's time for a person: `2026-12-02 14:00`, in `zone`.
fn time_text(at: u64, zone: &dyn Zone) -> String {
    match super::local_time(at as i64, zone) {
        Some(t) => t.format("%Y-%m-%d %H:%M").to_string(),
        None => format!("{at} s after the epoch"),
    }
}

/// The table's column titles, in the order of [`TrendRow::cells`].
pub const TREND_COLUMNS: [&str; 6] = [
    "Time",
    "On disk",
    "Reclaimable",
    "Opt-in",
    "Protected",
    "Held by orphaned VMs",
];

/// One point of one product.
#[derive(Debug, Clone, Serialize)]
pub struct TrendRow {
    /// When the scan ran (seconds since the epoch).
    pub at: u64,
    /// The product's totals at that scan, in bytes.
    pub totals: ProductTotals,
    /// The row as the table shows it, one text per [`TREND_COLUMNS`] entry.
    pub cells: [String; 6],
    /// What hovering its point shows: "2026-12-02 14:00 · Celesto SmolVM: 46.0 GB on disk,
    /// 1.2 GB reclaimable".
    pub label: String,
    /// The chart's layout: the point's place across (0 oldest, 1 newest)...
    pub x: f64,
    /// ...and the bottom and top of this product's band (0 to 1 of the chart's height; the
    /// products stack in the order of [`TrendView::products`]).
    pub y0: f64,
    /// The top of the band.
    pub y1: f64,
}

/// One product's series.
#[derive(Debug, Clone, Serialize)]
pub struct TrendSeries {
    /// The product.
    pub product: Product,
    /// Its name for a person.
    pub name: &'static str,
    /// Its points, oldest first.
    pub rows: Vec<TrendRow>,
}

/// What reclaims freed in one slot: a marker on the chart, a line in the table.
#[derive(Debug, Clone, Serialize)]
pub struct FreedRow {
    /// When the (latest) run started (seconds since the epoch).
    pub at: u64,
    /// Bytes measured freed.
    pub freed_bytes: u64,
    /// How many runs.
    pub runs: u64,
    /// "2026-11-30 10:00: freed 1.2 GB (1 run)".
    pub label: String,
    /// Its place across the chart (0 to 1; outside when before the first point).
    pub x: f64,
}

/// The history as `smolsweep trend` prints it and the window's overview draws it.
#[derive(Debug, Clone, Serialize)]
pub struct TrendView {
    /// [`trend_sentence`] (absent without points).
    pub sentence: Option<String>,
    /// [`trend_growth`] (absent when it did not grow).
    pub growth: Option<String>,
    /// "No space history yet…" when there are no points.
    pub empty: Option<String>,
    /// [`trend_notice`] when the history file was damaged and started afresh.
    pub notice: Option<String>,
    /// The table's column titles.
    pub columns: [&'static str; 6],
    /// Each product's series, in stacking order.
    pub products: Vec<TrendSeries>,
    /// The reclaims, oldest first.
    pub freed: Vec<FreedRow>,
    /// The chart's scale: the largest total on disk, in words (its top line's label).
    pub scale: String,
    /// The first and last point's times (the chart's axis labels).
    pub span: Option<(String, String)>,
    /// The chart's caption: "2026-11-23 12:00 to 2026-12-02 14:00; the top line is 48.0 GB".
    pub axis: Option<String>,
}

fn cells(at: u64, t: &ProductTotals, zone: &dyn Zone) -> [String; 6] {
    [
        time_text(at, zone),
        bytes(t.on_disk),
        bytes(t.reclaimable),
        bytes(t.opt_in),
        bytes(t.protected),
        bytes(t.held_by_orphans),
    ]
}

/// The view of a history (`damaged`: what [`crate::trend::load`] said of its file), its times
/// in `zone`.
pub fn trend_view(t: &Trend, damaged: Option<&Damaged>, zone: &dyn Zone) -> TrendView {
    let (first, last) = match (t.points.first(), t.points.last()) {
        (Some(f), Some(l)) => (f.at, l.at),
        _ => (0, 0),
    };
    let x = |at: u64| {
        if last > first {
            (at as f64 - first as f64) / (last - first) as f64
        } else {
            1.0
        }
    };
    let top = t
        .points
        .iter()
        .map(Point::on_disk)
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let mut products: Vec<TrendSeries> = Product::ALL
        .into_iter()
        .map(|p| TrendSeries {
            product: p,
            name: p.display_name(),
            rows: Vec::new(),
        })
        .collect();
    for pt in &t.points {
        let mut base = 0u64;
        for s in &mut products {
            let totals = pt.products.get(&s.product).copied().unwrap_or_default();
            let y0 = base as f64 / top;
            base += totals.on_disk;
            let cells = cells(pt.at, &totals, zone);
            s.rows.push(TrendRow {
                at: pt.at,
                label: format!(
                    "{} · {}: {} on disk, {} reclaimable",
                    cells[0], s.name, cells[1], cells[2]
                ),
                cells,
                totals,
                x: x(pt.at),
                y0,
                y1: base as f64 / top,
            });
        }
    }
    let freed = t
        .freed
        .iter()
        .map(|f| FreedRow {
            at: f.at,
            freed_bytes: f.freed_bytes,
            runs: f.runs,
            label: format!(
                "{}: freed {} ({} run{})",
                time_text(f.at, zone),
                bytes(f.freed_bytes),
                f.runs,
                if f.runs == 1 { "" } else { "s" }
            ),
            x: x(f.at),
        })
        .collect();
    TrendView {
        sentence: trend_sentence(t),
        growth: trend_growth(t),
        empty: t.points.is_empty().then(|| {
            "No space history yet: the app records one point per scan, the timer's `smolsweep \
auto` one per run, and `smolsweep scan --record` one each time you run it."
                .to_string()
        }),
        notice: damaged.map(trend_notice),
        columns: TREND_COLUMNS,
        products,
        freed,
        scale: bytes(top as u64),
        span: (!t.points.is_empty()).then(|| (time_text(first, zone), time_text(last, zone))),
        axis: (!t.points.is_empty()).then(|| {
            format!(
                "{} to {}; the top line is {}",
                time_text(first, zone),
                time_text(last, zone),
                bytes(top as u64)
            )
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const UTC: chrono::FixedOffset = chrono::FixedOffset::east_opt(0).unwrap();

    fn pt(at: u64, celesto: u64, smolvm: u64) -> Point {
        let t = |b| ProductTotals {
            on_disk: b,
            ..Default::default()
        };
        Point {
            at,
            products: [(Product::Celesto, t(celesto)), (Product::Smolvm, t(smolvm))].into(),
        }
    }

    fn trend(points: Vec<Point>) -> Trend {
        Trend {
            points,
            ..Default::default()
        }
    }

    const T: u64 = 1_800_000_000;
    const GB: u64 = 1_000_000_000;

    #[test]
    fn the_sentence_compares_with_a_week_ago() {
        let t = trend(vec![
            pt(T - 8 * DAY, 40 * GB, 0),
            pt(T - WEEK, 30 * GB, 12 * GB),
            pt(T - DAY, 1, 1),
            pt(T, 40 * GB, 8 * GB),
        ]);
        assert_eq!(
            trend_sentence(&t).unwrap(),
            "SmolVM uses 48.0 GB, 6.0 GB more than a week ago"
        );
        assert_eq!(
            trend_growth(&t).unwrap(),
            "SmolVM grew by 6.0 GB in the last week"
        );
    }

    #[test]
    fn without_a_week_old_point_the_sentence_says_since_when() {
        let t = trend(vec![pt(T - 3 * DAY, 50 * GB, 0), pt(T, 48 * GB, 0)]);
        assert_eq!(
            trend_sentence(&t).unwrap(),
            "SmolVM uses 48.0 GB, 2.0 GB less than 3 days ago, when its history starts"
        );
        assert_eq!(trend_growth(&t), None);
        let t = trend(vec![pt(T - 5 * HOUR, GB, 0), pt(T, 2 * GB, 0)]);
        assert_eq!(
            trend_growth(&t).unwrap(),
            "SmolVM grew by 1.0 GB in the last 5 hours"
        );
        let t = trend(vec![pt(T, 48 * GB, 0)]);
        assert_eq!(
            trend_sentence(&t).unwrap(),
            "SmolVM uses 48.0 GB; its history starts with this scan"
        );
        assert_eq!(trend_sentence(&trend(vec![])), None);
        let t = trend(vec![pt(T - 9 * DAY, 5 * GB, 0), pt(T, 5 * GB, 0)]);
        assert_eq!(
            trend_sentence(&t).unwrap(),
            "SmolVM uses 5.0 GB, as much as 9 days ago"
        );
    }

    #[test]
    fn the_view_stacks_products_and_places_points_and_runs() {
        let mut t = trend(vec![pt(T - DAY, 2, 2), pt(T, 1, 3)]);
        t.freed.push(crate::trend::Freed {
            at: T - DAY / 2,
            freed_bytes: 1_500_000_000,
            runs: 2,
        });
        let v = trend_view(&t, None, &UTC);
        assert_eq!(v.products.len(), 2);
        let (c, s) = (&v.products[0].rows, &v.products[1].rows);
        assert_eq!((c[0].x, c[1].x), (0.0, 1.0));
        assert_eq!((c[1].y0, c[1].y1, s[1].y0, s[1].y1), (0.0, 0.25, 0.25, 1.0));
        assert_eq!(c[1].cells[1], "1 B");
        assert!(
            c[1].label
                .ends_with(" · Celesto SmolVM: 1 B on disk, 0 B reclaimable"),
            "{}",
            c[1].label
        );
        assert!(v.axis.unwrap().ends_with("; the top line is 4 B"));
        assert_eq!(v.freed[0].x, 0.5);
        assert!(
            v.freed[0].label.ends_with(": freed 1.5 GB (2 runs)"),
            "{}",
            v.freed[0].label
        );
        assert_eq!(v.scale, "4 B");
        assert!(v.empty.is_none());
        assert!(trend_view(&Trend::default(), None, &UTC).empty.is_some());
    }
}
