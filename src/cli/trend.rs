//! `smolsweep trend [--json]`: space over time, headless. The sentence first, then a compact
//! table per product (time, on disk, reclaimable, opt-in, protected, held by orphaned VMs) and
//! what each reclaim freed; `--json` the same view as data. Read-only: the points come from
//! the history the app and `smolsweep auto` record ([`record_scan`]), the freed bytes from the
//! journal.

use smolsweep::model::ScanReport;
use smolsweep::now_secs;
use smolsweep::{journal, trend, view};

#[derive(Debug, clap::Args)]
pub struct TrendArgs {
    /// Print the series as one JSON object (schema smolsweep.trend-view/1).
    #[arg(long)]
    pub json: bool,
}

/// Record a point of `report` in the history beside the journal (what the timer's `auto`
/// does after its scan); a damaged history or one that cannot be written is said on stderr.
pub fn record_scan(report: &ScanReport) {
    let Some(r) = trend::record_default(trend::Point::of(report)) else {
        return;
    };
    if let Some(d) = &r.damaged {
        eprintln!("smolsweep: {}", view::trend_notice(d));
    }
    if let Some(e) = &r.error {
        eprintln!("smolsweep: {e}");
    }
}

/// Columns padded to their widest cell: the time left-aligned, the sizes right-aligned.
fn table(columns: &[&str], rows: &[Vec<String>]) -> String {
    let mut width: Vec<usize> = columns.iter().map(|c| c.chars().count()).collect();
    for r in rows {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let mut s = String::new();
        for (i, (c, w)) in cells.iter().zip(&width).enumerate() {
            let pad = " ".repeat(w - c.chars().count());
            match i {
                0 => s.push_str(&format!("{c}{pad}")),
                _ => s.push_str(&format!("  {pad}{c}")),
            }
        }
        s.trim_end().to_string()
    };
    let head: Vec<String> = columns.iter().map(|c| c.to_string()).collect();
    let mut out = line(&head);
    for r in rows {
        out.push('\n');
        out.push_str(&line(r));
    }
    out
}

fn print_text(v: &view::TrendView) {
    if let Some(e) = &v.empty {
        crate::outln!("{e}");
    }
    if let Some(s) = &v.sentence {
        crate::outln!("{s}.");
    }
    for series in v.products.iter().filter(|s| !s.rows.is_empty()) {
        let rows: Vec<Vec<String>> = series.rows.iter().map(|r| r.cells.to_vec()).collect();
        crate::outln!("\n{}", series.name);
        crate::outln!("{}", table(&v.columns, &rows));
    }
    if !v.freed.is_empty() {
        crate::outln!("\nReclaimed");
        for f in &v.freed {
            crate::outln!("{}", f.label);
        }
    }
}

pub fn run(a: TrendArgs) -> i32 {
    let Some(path) = trend::default_path() else {
        eprintln!("smolsweep: no data directory for the space history");
        return 1;
    };
    let loaded = trend::load(&path);
    let mut t = loaded.trend;
    if let Some(j) = journal::default_path() {
        // Only the runs the history has not counted yet, read from the journal's end.
        if let Ok(runs) = journal::runs_started_after(&j, t.runs_seen_ms) {
            t.note_runs(&runs, now_secs());
        }
    }
    let v = view::trend_view(&t, loaded.damaged.as_ref(), &smolsweep::env::SystemZone);
    if a.json {
        let mut j = serde_json::json!({
            "schema": "smolsweep.trend-view/1",
            "file": view::shown(&path),
        });
        if let (Some(o), Ok(serde_json::Value::Object(vo))) =
            (j.as_object_mut(), serde_json::to_value(&v))
        {
            o.extend(vo);
        }
        crate::cli::out::json(&j);
        return 0;
    }
    if let Some(n) = &v.notice {
        eprintln!("smolsweep: {n}");
    }
    print_text(&v);
    0
}
