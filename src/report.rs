//! Human-readable scan output: a `docker system df`-style summary, then findings grouped by
//! product and kind.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::model::*;

/// Render the whole report for a terminal.
pub fn render(r: &ScanReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Smolsweep scan of {} ({})",
        crate::pathser::shown(&r.home),
        r.platform.as_str()
    );
    for p in &r.products {
        let status = if !p.detected {
            "not found".to_string()
        } else if p.status == "ok" {
            "ok".to_string()
        } else {
            "can't verify".to_string()
        };
        let ver = p
            .version
            .as_deref()
            .map(|v| format!(" {v}"))
            .unwrap_or_default();
        let _ = writeln!(s, "  {}{ver}: {status}", p.product.display_name());
        for pr in &p.problems {
            let _ = writeln!(s, "    ! {}", crate::pathser::escape_text(pr));
        }
    }
    s.push('\n');

    // Summary table.
    #[derive(Default)]
    struct Row {
        count: u64,
        size: u64,
        reclaimable: u64,
        opt_in: u64,
    }
    let mut rows: BTreeMap<(Product, String), Row> = BTreeMap::new();
    for f in &r.findings {
        let row = rows
            .entry((f.product, f.kind.as_str().to_string()))
            .or_default();
        row.count += 1;
        row.size += f.allocated_bytes;
        match f.verdict {
            Verdict::Reclaimable => row.reclaimable += f.allocated_bytes,
            Verdict::OptIn => row.opt_in += f.allocated_bytes,
            _ => {}
        }
    }
    let _ = writeln!(
        s,
        "{:<10} {:<32} {:>6} {:>10} {:>12} {:>10}",
        "PRODUCT", "KIND", "COUNT", "SIZE", "RECLAIMABLE", "OPT-IN"
    );
    for ((p, k), row) in &rows {
        let _ = writeln!(
            s,
            "{:<10} {:<32} {:>6} {:>10} {:>12} {:>10}",
            p.as_str(),
            k.split_once('.').map(|x| x.1).unwrap_or(k),
            row.count,
            human_bytes(row.size),
            human_bytes(row.reclaimable),
            human_bytes(row.opt_in)
        );
    }
    if rows.is_empty() {
        let _ = writeln!(s, "(nothing found)");
    }
    let t = &r.totals;
    let _ = writeln!(
        s,
        "\nReclaimable: {} in {} item(s); opt-in: {} in {} item(s).",
        human_bytes(t.reclaimable_allocated_bytes),
        t.reclaimable_count,
        human_bytes(t.opt_in_allocated_bytes),
        t.opt_in_count
    );

    if !r.machines.is_empty() {
        let _ = writeln!(s, "\nMachines");
        for m in &r.machines {
            let pid = m.pid.map(|p| format!(" pid {p}")).unwrap_or_default();
            let _ = writeln!(
                s,
                "  {:<8} {:<24} {}{}{}",
                m.product.as_str(),
                m.name,
                if m.effective_state.is_empty() {
                    &m.state
                } else {
                    &m.effective_state
                },
                pid,
                if m.allocated_bytes > 0 {
                    format!(", {}", human_bytes(m.allocated_bytes))
                } else {
                    String::new()
                }
            );
        }
    }
    if !r.processes.is_empty() {
        let _ = writeln!(s, "\nVM processes");
        for p in &r.processes {
            let _ = writeln!(
                s,
                "  pid {:<7} {:<20} {:<16} {}{}{} — {}",
                p.pid,
                p.shape,
                p.owner.as_deref().unwrap_or("-"),
                match p.scope {
                    Scope::ThisHome => "this HOME",
                    Scope::Foreign => "foreign",
                },
                if p.orphan { ", ORPHAN" } else { "" },
                if p.held_deleted_bytes > 0 {
                    format!(
                        ", holds {} of deleted files",
                        human_bytes(p.held_deleted_bytes)
                    )
                } else {
                    String::new()
                },
                crate::pathser::escape_text(&p.reason)
            );
        }
    }

    // Findings grouped by product and kind.
    let mut last: Option<(Product, &str)> = None;
    for f in &r.findings {
        if last != Some((f.product, f.kind.as_str())) {
            let _ = writeln!(s, "\n{} — {}", f.product.display_name(), f.kind);
            last = Some((f.product, f.kind.as_str()));
        }
        let size = if f.apparent_bytes != f.allocated_bytes {
            format!(
                "{} (apparent {})",
                human_bytes(f.allocated_bytes),
                human_bytes(f.apparent_bytes)
            )
        } else {
            human_bytes(f.allocated_bytes)
        };
        let _ = writeln!(
            s,
            "  [{:<11}] {}  {}\n                {}",
            f.verdict.as_str(),
            crate::pathser::shown(&f.path),
            size,
            crate::pathser::escape_text(&f.reason)
        );
    }
    s
}
