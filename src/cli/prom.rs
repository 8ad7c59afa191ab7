//! The scan as Prometheus text exposition (format 0.0.4), for node_exporter's textfile
//! collector: totals, bytes and counts per kind and verdict, orphaned VM processes, bytes held
//! by deleted files, each product's status and whether it is newer than verified, and what
//! compacting disks could give back. Every number is the JSON report's, but the space available
//! on the HOME's file system (`statvfs` when the export is written, for the low-space alert of
//! `packaging/prometheus/smolsweep.rules.yml`).

use std::collections::BTreeMap;
use std::fmt::Write;

use smolsweep::model::*;

fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The `home` label of every sample: the HOME itself, escaped once by the exposition format's
/// rules ([`label`]). A HOME that is not UTF-8 cannot be a label value as it is: it is written in
/// its lossless [`smolsweep::view::shown`] form (`\xff` for a byte) with a second label
/// `home_encoding="escaped"`, so no two HOMEs ever give the same label set.
fn home_labels(home: &std::path::Path) -> String {
    match home.to_str() {
        Some(h) => format!("home=\"{}\"", label(h)),
        None => format!(
            "home=\"{}\",home_encoding=\"escaped\"",
            label(&smolsweep::view::shown(home))
        ),
    }
}

fn gauge(s: &mut String, name: &str, help: &str, samples: &[(String, u64)]) {
    let _ = writeln!(s, "# HELP {name} {help}");
    let _ = writeln!(s, "# TYPE {name} gauge");
    for (labels, v) in samples {
        if labels.is_empty() {
            let _ = writeln!(s, "{name} {v}");
        } else {
            let _ = writeln!(s, "{name}{{{labels}}} {v}");
        }
    }
}

/// Render `r` for Prometheus.
pub fn render(r: &ScanReport) -> String {
    let t = &r.totals;
    let mut s = String::new();
    let home = home_labels(&r.home);
    let one = |v: u64| vec![(home.clone(), v)];
    let totals = [
        (
            "smolsweep_reclaimable_bytes",
            "Allocated bytes Smolsweep may reclaim without asking for a class.",
            t.reclaimable_allocated_bytes,
        ),
        (
            "smolsweep_opt_in_bytes",
            "Allocated bytes reclaimable when their class (saved disks, caches, residue) is included.",
            t.opt_in_allocated_bytes,
        ),
        (
            "smolsweep_protected_bytes",
            "Allocated bytes that are protected: alive, in use or kept by a keep rule.",
            t.protected_allocated_bytes,
        ),
        (
            "smolsweep_unknown_bytes",
            "Allocated bytes Smolsweep could not verify.",
            t.unknown_allocated_bytes,
        ),
        (
            "smolsweep_orphan_vm_processes",
            "VM processes of this HOME that no inventory record owns.",
            t.orphan_process_count,
        ),
        (
            "smolsweep_held_deleted_bytes",
            "Allocated bytes of deleted files VM processes still hold open.",
            t.held_deleted_bytes,
        ),
    ];
    for (name, help, v) in totals {
        gauge(&mut s, name, help, &one(v));
    }
    findings_gauges(&mut s, &home, &r.findings);
    compact_gauges(&mut s, &home, &r.compact);
    let status: Vec<(String, u64)> = r
        .products
        .iter()
        .map(|p| {
            (
                format!("{home},product=\"{}\"", p.product.as_str()),
                u64::from(smolsweep::view::product_status(p) == "ok"),
            )
        })
        .collect();
    gauge(
        &mut s,
        "smolsweep_product_verified",
        "1 when the product was found and its state could be verified, else 0.",
        &status,
    );
    let newer = smolsweep::view::newer_products(r);
    let drift: Vec<(String, u64)> = r
        .products
        .iter()
        .map(|p| {
            (
                format!("{home},product=\"{}\"", p.product.as_str()),
                u64::from(newer.contains(&p.product)),
            )
        })
        .collect();
    gauge(
        &mut s,
        "smolsweep_product_newer_than_verified",
        "1 when the product is installed in a version newer than every version Smolsweep's rules were verified on, else 0.",
        &drift,
    );
    if let Ok(st) = rustix::fs::statvfs(&r.home) {
        gauge(
            &mut s,
            "smolsweep_home_available_bytes",
            "Bytes available to unprivileged users on the file system holding the HOME, when the export was written.",
            &one(st.f_bavail.saturating_mul(st.f_frsize)),
        );
    }
    gauge(
        &mut s,
        "smolsweep_scan_timestamp_seconds",
        "When the scan started, in seconds since the Unix epoch.",
        &one(r.scanned_at),
    );
    s
}

/// What compacting the disks of stopped machines and saved disks could give back (opt-in,
/// never in `smolsweep_reclaimable_bytes`): in total, per disk count, and per product.
fn compact_gauges(s: &mut String, home: &str, c: &CompactReport) {
    let one = |v: u64| vec![(home.to_string(), v)];
    gauge(
        s,
        "smolsweep_compactable_bytes",
        "Allocated bytes inside the disks of stopped machines and saved disks that the guest's file system calls free (opt-in, not in the reclaimable bytes).",
        &one(c.compactable_bytes),
    );
    gauge(
        s,
        "smolsweep_compactable_disks",
        "Disks of stopped machines and saved disks with something to compact.",
        &one(c.compactable_disks),
    );
    gauge(
        s,
        "smolsweep_compact_cannot_tell_disks",
        "Disks whose free space inside could not be read exactly (not ext4, journal needs recovery, unknown features, ...).",
        &one(c.cannot_tell_disks),
    );
    let mut per: BTreeMap<Product, u64> = BTreeMap::new();
    for d in &c.disks {
        *per.entry(d.product).or_default() += d.compactable_bytes;
    }
    let per: Vec<(String, u64)> = per
        .into_iter()
        .map(|(p, b)| (format!("{home},product=\"{}\"", p.as_str()), b))
        .collect();
    gauge(
        s,
        "smolsweep_product_compactable_bytes",
        "Compactable bytes of one product's disks.",
        &per,
    );
}

/// Bytes and counts of the findings per product, kind and verdict.
fn findings_gauges(s: &mut String, home: &str, findings: &[Finding]) {
    let mut bytes: BTreeMap<(Product, &str, &str), (u64, u64)> = BTreeMap::new();
    for f in findings {
        let e = bytes
            .entry((f.product, f.kind.as_str(), f.verdict.as_str()))
            .or_default();
        e.0 += f.allocated_bytes;
        e.1 += 1;
    }
    let per = |pick: fn(&(u64, u64)) -> u64| -> Vec<(String, u64)> {
        bytes
            .iter()
            .map(|((p, k, v), n)| {
                (
                    format!(
                        "{home},product=\"{}\",kind=\"{}\",verdict=\"{}\"",
                        p.as_str(),
                        label(k),
                        v
                    ),
                    pick(n),
                )
            })
            .collect()
    };
    gauge(
        s,
        "smolsweep_findings_bytes",
        "Allocated bytes of the findings of one kind and verdict.",
        &per(|n| n.0),
    );
    gauge(
        s,
        "smolsweep_findings",
        "Number of findings of one kind and verdict.",
        &per(|n| n.1),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;
    use std::os::unix::ffi::OsStringExt;
    use std::path::PathBuf;

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(super::label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }

    /// The labels of the first sample of `text`, unescaped by the exposition format's rules
    /// (`\\`, `\"`, `\n`), as Prometheus reads them.
    fn parsed_labels(text: &str) -> Vec<(String, String)> {
        let line = text
            .lines()
            .find(|l| l.starts_with("smolsweep_reclaimable_bytes{"))
            .expect("a sample");
        let mut chars = line[line.find('{').unwrap() + 1..].chars();
        let mut out = Vec::new();
        loop {
            let name: String = chars.by_ref().take_while(|c| *c != '=').collect();
            assert_eq!(chars.next(), Some('"'), "{line}");
            let mut value = String::new();
            while let Some(c) = chars.next() {
                match c {
                    '"' => break,
                    '\\' => match chars.next() {
                        Some('\\') => value.push('\\'),
                        Some('"') => value.push('"'),
                        Some('n') => value.push('\n'),
                        other => panic!("invalid escape {other:?} in {line}"),
                    },
                    '\n' => panic!("raw newline in {line}"),
                    c => value.push(c),
                }
            }
            out.push((name, value));
            match chars.next() {
                Some(',') => continue,
                Some('}') => return out,
                other => panic!("unexpected {other:?} in {line}"),
            }
        }
    }

    fn report_of(home: PathBuf) -> ScanReport {
        ScanReport {
            schema: SCAN_SCHEMA.into(),
            home,
            platform: Platform::Linux,
            products: vec![],
            findings: vec![],
            machines: vec![],
            processes: vec![],
            totals: Totals::default(),
            scanned_at: 0,
            scanned_at_ns: 0,
            duration_ms: 0,
            compact: Default::default(),
        }
    }

    #[test]
    fn prometheus_home_label_is_escaped_once_and_distinct_homes_stay_distinct() {
        let odd = |b: &[u8]| PathBuf::from(OsString::from_vec(b.to_vec()));
        let homes = [
            PathBuf::from("/home/a\\b"),
            PathBuf::from("/home/say \"hi\""),
            PathBuf::from("/home/two\nlines"),
            PathBuf::from("/home/x\\xff"),
            odd(b"/home/x\xff"),
            PathBuf::from("/home/plain"),
        ];
        let mut sets = std::collections::BTreeSet::new();
        for h in &homes {
            let labels = parsed_labels(&render(&report_of(h.clone())));
            match h.to_str() {
                // A UTF-8 HOME is the label value itself, and the only label.
                Some(s) => assert_eq!(labels, [("home".to_string(), s.to_string())]),
                None => assert_eq!(
                    labels,
                    [
                        ("home".to_string(), "/home/x\\xff".to_string()),
                        ("home_encoding".to_string(), "escaped".to_string())
                    ]
                ),
            }
            assert!(
                sets.insert(labels),
                "{h:?} shares its labels with another HOME"
            );
        }
    }
}
