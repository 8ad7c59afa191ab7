//! The treemap of what a scan shows: a tile per group, laid out squarified.

use serde::Serialize;

use crate::model::*;

use super::*;

/// One item of the treemap: a finding's rectangle (product → kind → item, area = allocated
/// bytes), in the units of the `width` × `height` asked of [`treemap`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Tile {
    /// Finding id.
    pub id: String,
    /// The product whose state it is.
    pub product: Product,
    /// What the finding is.
    pub kind: FindingKind,
    /// The kind's label ("Orphaned disks").
    pub kind_label: &'static str,
    /// The path, escaped for display.
    pub path: String,
    /// What the tile is labelled: a machine's name for its directory (smolvm names it by a
    /// hash), else the file's name.
    pub name: String,
    /// The path shortened from the middle (the full one is `path`).
    pub short_path: String,
    /// Allocated bytes: the tile's area.
    pub bytes: u64,
    /// `bytes` in words.
    pub size: String,
    /// The apparent size, in words (shown on hover).
    pub apparent: String,
    /// What Smolsweep may do with it.
    pub verdict: Verdict,
    /// The verdict as every surface words it.
    pub verdict_label: &'static str,
    /// Distance of its left edge from the area's left.
    pub x: f64,
    /// Distance of its top edge from the area's top.
    pub y: f64,
    /// Its width.
    pub w: f64,
    /// Its height.
    pub h: f64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct TileRect {
    x: f64,
    y: f64,
    w: f64,
    h: f64,
}

/// Squarified layout (Bruls, Huizing, van Wijk) of `sizes` (any order) in `r`: one rectangle per
/// size, in the order given, areas proportional to the sizes.
fn squarify(sizes: &[f64], r: TileRect) -> Vec<TileRect> {
    let total: f64 = sizes.iter().sum();
    let zero = TileRect {
        x: r.x,
        y: r.y,
        w: 0.0,
        h: 0.0,
    };
    let mut out = vec![zero; sizes.len()];
    if total <= 0.0 || r.w <= 0.0 || r.h <= 0.0 {
        return out;
    }
    let mut order: Vec<usize> = (0..sizes.len()).filter(|&i| sizes[i] > 0.0).collect();
    order.sort_by(|&a, &b| sizes[b].total_cmp(&sizes[a]));
    let scale = r.w * r.h / total;
    let area = |i: usize| sizes[i] * scale;
    let worst = |row: &[usize], short: f64| {
        let s: f64 = row.iter().map(|&i| area(i)).sum();
        let mx = row.iter().map(|&i| area(i)).fold(0.0, f64::max);
        let mn = row.iter().map(|&i| area(i)).fold(f64::INFINITY, f64::min);
        f64::max(short * short * mx / (s * s), s * s / (short * short * mn))
    };
    let mut rect = r;
    let mut i = 0;
    while i < order.len() {
        let short = rect.w.min(rect.h);
        let mut j = i + 1;
        while j < order.len() && worst(&order[i..=j], short) <= worst(&order[i..j], short) {
            j += 1;
        }
        let row = &order[i..j];
        let s: f64 = row.iter().map(|&k| area(k)).sum();
        rect = lay_row(rect, row.iter().map(|&k| (k, area(k))), s, &mut out);
        i = j;
    }
    out
}

/// Lays one row of the squarified layout (`(index, area)`, areas summing to `s`) along the
/// shorter side of `rect` and returns what is left of it: a column at the left, top to bottom,
/// in a rectangle at least as wide as it is tall; in a taller one the same turned a quarter (a
/// row along the top, left to right).
fn lay_row(
    rect: TileRect,
    row: impl Iterator<Item = (usize, f64)>,
    s: f64,
    out: &mut [TileRect],
) -> TileRect {
    let wide = rect.w >= rect.h;
    let turn = |t: TileRect| match wide {
        true => t,
        false => TileRect {
            x: t.y,
            y: t.x,
            w: t.h,
            h: t.w,
        },
    };
    let r = turn(rect);
    let cw = s / r.h;
    let mut y = r.y;
    for (k, a) in row {
        let hh = a / cw;
        out[k] = turn(TileRect {
            x: r.x,
            y,
            w: cw,
            h: hh,
        });
        y += hh;
    }
    turn(TileRect {
        x: r.x + cw,
        w: (r.w - cw).max(0.0),
        ..r
    })
}

/// A tile's label: the name of the machine a directory named by its hash belongs to (smolvm's
/// `vms/<hash16>/`), else the file's name.
fn tile_name(f: &Finding) -> String {
    let file = f
        .path
        .file_name()
        .map(|n| crate::pathser::shown(std::path::Path::new(n)))
        .unwrap_or_default();
    let hashed = file.len() == 16 && file.chars().all(|c| c.is_ascii_hexdigit());
    match &f.owner {
        Some(o) if hashed => crate::pathser::escape_text(o),
        _ => file,
    }
}

/// The treemap of a scan in a `width` × `height` area: products, then kinds, then items, each
/// squarified by allocated bytes; items of no allocated bytes are left out (no area to draw).
pub fn treemap(r: &ScanReport, width: f64, height: f64) -> Vec<Tile> {
    use std::collections::BTreeMap;
    let mut tree: BTreeMap<Product, BTreeMap<FindingKind, Vec<&Finding>>> = BTreeMap::new();
    for f in r.findings.iter().filter(|f| f.allocated_bytes > 0) {
        tree.entry(f.product)
            .or_default()
            .entry(f.kind)
            .or_default()
            .push(f);
    }
    let sum = |fs: &[&Finding]| fs.iter().map(|f| f.allocated_bytes as f64).sum::<f64>();
    let products: Vec<_> = tree.into_iter().collect();
    let p_sizes: Vec<f64> = products
        .iter()
        .map(|(_, kinds)| kinds.values().map(|v| sum(v)).sum())
        .collect();
    let whole = TileRect {
        x: 0.0,
        y: 0.0,
        w: width,
        h: height,
    };
    let mut tiles = Vec::new();
    for ((_, kinds), pr) in products.iter().zip(squarify(&p_sizes, whole)) {
        let kinds: Vec<_> = kinds.iter().collect();
        let k_sizes: Vec<f64> = kinds.iter().map(|(_, v)| sum(v)).collect();
        for ((_, items), kr) in kinds.iter().zip(squarify(&k_sizes, pr)) {
            let i_sizes: Vec<f64> = items.iter().map(|f| f.allocated_bytes as f64).collect();
            for (f, ir) in items.iter().zip(squarify(&i_sizes, kr)) {
                tiles.push(Tile {
                    id: f.id.clone(),
                    product: f.product,
                    kind: f.kind,
                    kind_label: f.kind.label(),
                    path: crate::pathser::shown(&f.path),
                    name: tile_name(f),
                    short_path: short_path(&f.path, 48),
                    bytes: f.allocated_bytes,
                    size: bytes(f.allocated_bytes),
                    apparent: bytes(f.apparent_bytes),
                    verdict: f.verdict,
                    verdict_label: verdict_label(f.verdict, f.opt_in_class),
                    x: ir.x,
                    y: ir.y,
                    w: ir.w,
                    h: ir.h,
                });
            }
        }
    }
    tiles
}

#[cfg(test)]
mod treemap_tests {
    use super::*;

    /// A finding of `kind` at `path`, 10 bytes, of smolvm.
    fn finding(path: &str, kind: FindingKind, verdict: Verdict) -> Finding {
        Finding {
            apparent_bytes: 10,
            allocated_bytes: 10,
            ..Finding::new(
                path,
                Product::Smolvm,
                kind,
                std::path::PathBuf::from(path),
                verdict,
            )
        }
    }

    fn rect_of(t: &Tile) -> TileRect {
        TileRect {
            x: t.x,
            y: t.y,
            w: t.w,
            h: t.h,
        }
    }

    #[test]
    fn squarified_areas_are_proportional_inside_and_disjoint() {
        let sizes = [6.0, 6.0, 4.0, 3.0, 2.0, 2.0, 1.0, 0.0];
        let r = TileRect {
            x: 0.0,
            y: 0.0,
            w: 6.0,
            h: 4.0,
        };
        let out = squarify(&sizes, r);
        assert_eq!(out.len(), sizes.len());
        for (s, t) in sizes.iter().zip(&out) {
            assert!((t.w * t.h - s).abs() < 1e-9, "{s} -> {t:?}");
            assert!(t.x >= -1e-9 && t.y >= -1e-9);
            assert!(t.x + t.w <= 6.0 + 1e-9 && t.y + t.h <= 4.0 + 1e-9, "{t:?}");
        }
        for (i, a) in out.iter().enumerate() {
            for b in &out[i + 1..] {
                let ox = (a.x + a.w).min(b.x + b.w) - a.x.max(b.x);
                let oy = (a.y + a.h).min(b.y + b.h) - a.y.max(b.y);
                assert!(ox <= 1e-9 || oy <= 1e-9, "{a:?} overlaps {b:?}");
            }
        }
        // Squarified: the big tiles are not slivers.
        assert!(out[0].w / out[0].h < 3.0 && out[0].h / out[0].w < 3.0);
        assert_eq!(squarify(&[0.0], r)[0].w, 0.0);
    }

    #[test]
    fn a_scan_s_treemap_nests_products_and_kinds_and_keeps_every_byte() {
        let mk = |product, kind, name: &str, bytes: u64, verdict| {
            let mut f = finding(&format!("/h/{name}"), kind, verdict);
            (f.id, f.product, f.apparent_bytes, f.allocated_bytes) =
                (name.into(), product, bytes * 2, bytes);
            f
        };
        let findings = vec![
            mk(
                Product::Celesto,
                FindingKind::CelestoOrphanDisk,
                "a",
                600,
                Verdict::Reclaimable,
            ),
            mk(
                Product::Celesto,
                FindingKind::CelestoOrphanDisk,
                "b",
                200,
                Verdict::Reclaimable,
            ),
            mk(
                Product::Celesto,
                FindingKind::CelestoOrphanLog,
                "c",
                100,
                Verdict::Reclaimable,
            ),
            mk(
                Product::Smolvm,
                FindingKind::SmolvmPackCache,
                "d",
                100,
                Verdict::OptIn,
            ),
            mk(
                Product::Smolvm,
                FindingKind::SmolvmPackCache,
                "z",
                0,
                Verdict::OptIn,
            ),
        ];
        let r = ScanReport {
            schema: SCAN_SCHEMA.into(),
            home: "/h".into(),
            platform: Platform::Linux,
            products: vec![],
            findings,
            machines: vec![],
            processes: vec![],
            totals: Totals::default(),
            scanned_at: 0,
            scanned_at_ns: 0,
            duration_ms: 0,
            compact: Default::default(),
        };
        let t = treemap(&r, 100.0, 10.0);
        assert_eq!(t.len(), 4, "no tile for nothing");
        let total: f64 = t.iter().map(|t| t.w * t.h).sum();
        assert!((total - 1000.0).abs() < 1e-6);
        let a = t.iter().find(|t| t.id == "a").unwrap();
        assert!((a.w * a.h - 600.0).abs() < 1e-6);
        assert_eq!(a.apparent, bytes(1200));
        assert_eq!(a.kind_label, FindingKind::CelestoOrphanDisk.label());
        // The Celesto product occupies one block: its tiles' bounding box has its area.
        let cel: Vec<TileRect> = t
            .iter()
            .filter(|t| t.product == Product::Celesto)
            .map(rect_of)
            .collect();
        let x0 = cel.iter().map(|r| r.x).fold(f64::INFINITY, f64::min);
        let x1 = cel.iter().map(|r| r.x + r.w).fold(0.0, f64::max);
        let y0 = cel.iter().map(|r| r.y).fold(f64::INFINITY, f64::min);
        let y1 = cel.iter().map(|r| r.y + r.h).fold(0.0, f64::max);
        assert!(((x1 - x0) * (y1 - y0) - 900.0).abs() < 1e-6);
    }

    /// Hazard (issue 39, item 7): the treemap labelled a smolvm machine's directory by its hash
    /// ("4b5e57f6eb2f42b9"). A machine's tile says its name; a file's tile its file name.
    #[test]
    fn the_treemap_labels_machines_by_name_not_hash() {
        let f = |path: &str, owner: Option<&str>| {
            let mut f = finding(path, FindingKind::SmolvmMachineDir, Verdict::Protected);
            f.owner = owner.map(String::from);
            f
        };
        assert_eq!(
            tile_name(&f("/h/.cache/smolvm/vms/4b5e57f6eb2f42b9", Some("web"))),
            "web"
        );
        assert_eq!(
            tile_name(&f("/h/.cache/smolvm/vms/4b5e57f6eb2f42b9", None)),
            "4b5e57f6eb2f42b9",
            "no record: the hash is all there is"
        );
        assert_eq!(
            tile_name(&f("/h/disks/orph1.ext4", Some("orph1"))),
            "orph1.ext4"
        );
    }

    /// Issue 17: a kept machine or VM process offers no Stop, Delete or End process in the
    /// window, and says why in the core's words.
    #[test]
    fn kept_machines_and_processes_offer_no_action_and_say_why() {
        let m: Machine = serde_json::from_value(serde_json::json!({
            "product": "smolvm", "name": "m2", "state": "running", "pid": 7,
            "alive": true, "kept": "ab12cd34"
        }))
        .unwrap();
        let p: VmProcess = serde_json::from_value(serde_json::json!({
            "pid": 8, "start_time": 1, "product": "smolvm", "shape": "smolvm.boot_vm",
            "owner": "m2", "orphan": true, "scope": "this_home", "held_deleted_bytes": 0,
            "kept": "ab12cd34"
        }))
        .unwrap();
        let r: ScanReport = serde_json::from_value(serde_json::json!({
            "schema": SCAN_SCHEMA, "home": "/h", "platform": "linux", "products": [],
            "findings": [], "machines": [m.clone()], "processes": [p.clone()],
            "totals": Totals::default(), "scanned_at": 0, "duration_ms": 0
        }))
        .unwrap();
        let row = machine_row(&r, &m);
        assert!(!row.can_stop && !row.can_delete, "{row:?}");
        assert!(row
            .kept
            .as_deref()
            .unwrap()
            .starts_with("Kept by you (keep rule ab12cd34"));
        let row = process_row(&p);
        assert!(!row.can_end, "{row:?}");
        assert!(row.kept.is_some());
        let free = VmProcess { kept: None, ..p };
        assert!(
            process_row(&free).can_end,
            "the same orphan without a rule can be ended"
        );
        let free = Machine { kept: None, ..m };
        assert!(machine_row(&r, &free).can_delete);
    }
}
