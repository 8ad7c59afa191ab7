//! Filters a person narrows a scan or a reclaim with: age (by the newest change inside an item),
//! size, product and kind. The same filter serves `scan`, `prune`, `plan`, `auto` and the window.

use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::kind::FindingKind;
use crate::model::*;

/// What to keep in view. Empty fields do not filter.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Filter {
    /// Only items whose newest change is at least this old (seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub older_than_secs: Option<u64>,
    /// Only items at least this large (allocated bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_bytes: Option<u64>,
    /// Only items of these products.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub products: Vec<Product>,
    /// Only items of these kinds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kinds: Vec<FindingKind>,
}

impl Filter {
    /// Whether it filters nothing out (every field empty).
    pub fn is_empty(&self) -> bool {
        self == &Filter::default()
    }

    /// Whether `f` passes, at `now`, judged alone. An item whose age is unknown is never "old
    /// enough".
    pub fn matches(&self, f: &Finding, now: SystemTime) -> bool {
        self.passes(
            f.product,
            f.kind,
            f.allocated_bytes,
            f.newest_change_ns,
            now,
        )
    }

    /// Whether something of `product` and `kind`, this large and last changed then, passes.
    fn passes(
        &self,
        product: Product,
        kind: FindingKind,
        bytes: u64,
        newest_ns: i64,
        now: SystemTime,
    ) -> bool {
        if !self.products.is_empty() && !self.products.contains(&product) {
            return false;
        }
        if !self.kinds.is_empty() && !self.kinds.contains(&kind) {
            return false;
        }
        if self.min_bytes.is_some_and(|m| bytes < m) {
            return false;
        }
        if let Some(age) = self.older_than_secs {
            let now_ns = now
                .duration_since(SystemTime::UNIX_EPOCH)
                .map(|d| d.as_nanos() as i128)
                .unwrap_or(0);
            let newest = newest_ns as i128;
            if newest <= 0 || now_ns - newest < age as i128 * 1_000_000_000 {
                return false;
            }
        }
        true
    }

    /// Which findings pass, item by item: an item (a disk with its marker, companions and log;
    /// see `crate::items`) passes whole when its principal's kind and product pass, with its
    /// age the newest change of any member and its size all its members' bytes; a member that
    /// others are not judged by (a companion, a log, a lock) also passes alone when it matches
    /// by itself, and goes without the rest. Anything in no item is judged alone.
    pub(crate) fn selects(&self, findings: &[Finding], now: SystemTime) -> Vec<bool> {
        use crate::items::Role;
        let items = crate::items::Items::of(findings);
        let mut out: Vec<bool> = (0..findings.len())
            .map(|i| {
                let alone = items.role(i).is_none_or(|r| !r.others_depend_on_it());
                alone && self.matches(&findings[i], now)
            })
            .collect();
        for g in items.groups() {
            let newest = g
                .iter()
                .map(|&i| findings[i].newest_change_ns)
                .max()
                .unwrap_or(0);
            let bytes = g.iter().map(|&i| findings[i].allocated_bytes).sum();
            let whole = g.iter().any(|&i| {
                let p = &findings[i];
                items.role(i) == Some(Role::Principal)
                    && self.passes(p.product, p.kind, bytes, newest, now)
            });
            if whole {
                g.iter().for_each(|&i| out[i] = true);
            }
        }
        out
    }

    /// Drop the findings that do not pass ([`selects`](Self::selects): whole items), and the
    /// disk estimates of products it does not show, and recount.
    pub fn apply(&self, report: &mut ScanReport, now: SystemTime) {
        if self.is_empty() {
            return;
        }
        let keep = self.selects(&report.findings, now);
        let mut i = 0;
        report.findings.retain(|_| {
            i += 1;
            keep[i - 1]
        });
        report.compute_totals();
        // Disk estimates go with their product's machines: shown under a product filter, not
        // under one that picks items.
        let mut disks = std::mem::take(&mut report.compact.disks);
        disks.retain(|d| self.shows_machines_of(d.product));
        report.compact = crate::model::CompactReport::of(disks);
    }
}

/// What a filter hid, for the line that says so ("3 of 46 items match --older-than 7d.").
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hidden {
    /// Findings before the filter.
    pub items: usize,
    /// Findings it lets through.
    pub matching: usize,
    /// smolvm machines it hid.
    pub machines: usize,
    /// Celesto sandboxes it hid.
    pub sandboxes: usize,
    /// VM processes of this HOME it hid (other HOMEs' are not shown unfiltered either).
    pub processes: usize,
    /// The filter picks items by kind, age or size: no machine and no VM process is shown.
    pub items_only: bool,
    /// The filter as the flags that ask for it (`--older-than 7d --product smolvm`).
    pub flags: String,
    /// The filter in words, for the window ("older than 7 days, smol-machines smolvm").
    pub words: String,
}

impl Filter {
    /// Whether it picks findings by something machines and VM processes do not have (kind,
    /// age, size): then it shows no machine and no process, since none of them matches.
    pub fn picks_items(&self) -> bool {
        !self.kinds.is_empty() || self.older_than_secs.is_some() || self.min_bytes.is_some()
    }

    /// Whether the machines and VM processes of `p` are in view.
    pub fn shows_machines_of(&self, p: Product) -> bool {
        !self.picks_items() && (self.products.is_empty() || self.products.contains(&p))
    }

    /// The filter as the command-line flags that ask for it, each with its unit
    /// (`--older-than 7d --min-size 1M --product smolvm --kind orphaned-disks`); empty when it
    /// filters nothing. A kind is named by its short name when that names it alone.
    pub fn flags(&self) -> String {
        let mut out = Vec::new();
        if let Some(a) = self.older_than_secs {
            out.push(format!("--older-than {}", age_words(a)));
        }
        if let Some(b) = self.min_bytes {
            out.push(format!("--min-size {}", size_words(b)));
        }
        for p in &self.products {
            out.push(format!("--product {}", p.as_str()));
        }
        // A short name for every kind it names alone, or for all the kinds it names together.
        let mut named: Vec<&str> = Vec::new();
        for k in &self.kinds {
            let all = FindingKind::named(k.short());
            let name = match all.iter().all(|a| self.kinds.contains(a)) {
                true => k.short(),
                false => k.as_str(),
            };
            if !named.contains(&name) {
                named.push(name);
                out.push(format!("--kind {name}"));
            }
        }
        out.join(" ")
    }

    /// The filter in words, as the window's controls say it ("older than 7 days, at least
    /// 2.5 MB, smol-machines smolvm, Orphaned disks"); empty when it filters nothing.
    pub fn words(&self) -> String {
        let mut out = Vec::new();
        if let Some(a) = self.older_than_secs {
            out.push(format!("older than {}", age_in_words(a)));
        }
        if let Some(b) = self.min_bytes {
            out.push(format!("at least {}", human_bytes(b)));
        }
        out.extend(self.products.iter().map(|p| p.display_name().to_string()));
        out.extend(self.kinds.iter().map(|k| k.label().to_string()));
        out.join(", ")
    }

    /// Narrow `report` for display at `now`: the findings that pass (totals recounted), and
    /// the machines and VM processes [`shows_machines_of`](Self::shows_machines_of) keeps.
    /// Returns what was hidden, or `None` for a filter that filters nothing. A plan is made
    /// from [`apply`](Self::apply)'s report, which keeps every machine.
    pub fn narrow(&self, report: &mut ScanReport, now: SystemTime) -> Option<Hidden> {
        if self.is_empty() {
            return None;
        }
        let items = report.findings.len();
        self.apply(report, now);
        let (mut machines, mut sandboxes) = (0, 0);
        report.machines.retain(|m| {
            let shown = self.shows_machines_of(m.product);
            match m.product {
                Product::Smolvm => machines += usize::from(!shown),
                Product::Celesto => sandboxes += usize::from(!shown),
            }
            shown
        });
        let mut processes = 0;
        report.processes.retain(|p| {
            let shown = self.shows_machines_of(p.product);
            processes += usize::from(!shown && p.scope == Scope::ThisHome);
            shown
        });
        report.compute_totals();
        Some(Hidden {
            items,
            matching: report.findings.len(),
            machines,
            sandboxes,
            processes,
            items_only: self.picks_items(),
            flags: self.flags(),
            words: self.words(),
        })
    }
}

/// An age in the largest unit that says it exactly (`7d`, `36h`, `2w` is `14d`).
fn age_words(secs: u64) -> String {
    match secs {
        0 => "0s".into(),
        s if s % 86_400 == 0 => format!("{}d", s / 86_400),
        s if s % 3_600 == 0 => format!("{}h", s / 3_600),
        s if s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

/// An age in words in the largest unit that says it exactly ("7 days", "36 hours").
fn age_in_words(secs: u64) -> String {
    let (n, unit) = match secs {
        s if s > 0 && s % 86_400 == 0 => (s / 86_400, "day"),
        s if s > 0 && s % 3_600 == 0 => (s / 3_600, "hour"),
        s if s > 0 && s % 60 == 0 => (s / 60, "minute"),
        s => (s, "second"),
    };
    format!("{n} {unit}{}", if n == 1 { "" } else { "s" })
}

/// A size in the largest unit that says it exactly (`100M`, `1500k`, `1Gi`, `4096B`).
fn size_words(b: u64) -> String {
    let units: [(u64, &str); 8] = [
        (1_000_000_000_000, "T"),
        (1 << 40, "Ti"),
        (1_000_000_000, "G"),
        (1 << 30, "Gi"),
        (1_000_000, "M"),
        (1 << 20, "Mi"),
        (1_000, "k"),
        (1 << 10, "Ki"),
    ];
    units
        .iter()
        .find(|(m, _)| b > 0 && b.is_multiple_of(*m))
        .map_or(format!("{b}B"), |(m, u)| format!("{}{u}", b / m))
}

/// An age as a flag takes it: like [`parse_age`], but the unit is required, so `7` is refused
/// rather than read as days.
pub fn parse_age_flag(s: &str) -> Result<u64, String> {
    let t = s.trim();
    if !t.is_empty() && t.chars().all(|c| c.is_ascii_digit()) {
        return Err(format!(
            "'{t}' has no unit: write {t}d for days (the unit is one of s, m, h, d, w)"
        ));
    }
    parse_age(t)
}

/// A size as a flag takes it: like [`parse_size`], but the unit is required (`B` for bytes),
/// so `100` is refused rather than read as 100 bytes.
pub fn parse_size_flag(s: &str) -> Result<u64, String> {
    let t = s.trim();
    if !t.is_empty() && t.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(format!(
            "'{t}' has no unit: write {t}M for megabytes (the unit is one of B, k, M, G, T, \
             or Ki, Mi, Gi, Ti)"
        ));
    }
    parse_size(t)
}

/// `7d`, `12h`, `30m`, `90s`, `2w` (a bare number is days).
pub fn parse_age(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: u64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not an age like 7d, 12h or 30m"))?;
    let mult = match unit {
        "" | "d" => 86_400,
        "w" => 7 * 86_400,
        "h" => 3_600,
        "m" => 60,
        "s" => 1,
        _ => return Err(format!("'{s}': the unit is one of s, m, h, d, w")),
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("'{s}' is too long"))
}

/// `100M`, `1.5G`, `512k`, `2T`, `4096` (decimal units, as Smolsweep prints sizes; `Ki`/`Mi`/
/// `Gi` binary).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a size like 100M or 1.5G"))?;
    let unit = unit.trim_end_matches(['B', 'b']);
    let mult: f64 = match unit.to_ascii_lowercase().as_str() {
        "" => 1.0,
        "k" => 1e3,
        "m" => 1e6,
        "g" => 1e9,
        "t" => 1e12,
        "ki" => 1024.0,
        "mi" => 1024.0 * 1024.0,
        "gi" => 1024.0 * 1024.0 * 1024.0,
        "ti" => 1024f64.powi(4),
        _ => {
            return Err(format!(
                "'{s}': the unit is one of k, M, G, T (or Ki, Mi, Gi, Ti)"
            ))
        }
    };
    let v = n * mult;
    if !v.is_finite() || v < 0.0 || v > u64::MAX as f64 {
        return Err(format!("'{s}' is out of range"));
    }
    Ok(v as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn older_than_without_a_unit_is_refused_and_names_the_units() {
        let e = parse_age_flag("7").unwrap_err();
        assert!(e.contains("no unit") && e.contains("s, m, h, d, w"), "{e}");
        assert_eq!(parse_age_flag("7d"), Ok(7 * 86_400));
        let e = parse_size_flag("100").unwrap_err();
        assert!(e.contains("no unit") && e.contains("B, k, M, G, T"), "{e}");
        assert_eq!(parse_size_flag("100B"), Ok(100));
        assert_eq!(parse_size_flag("1.5G"), Ok(1_500_000_000));
    }

    #[test]
    fn a_filter_reads_back_as_the_flags_that_ask_for_it() {
        let f = Filter {
            older_than_secs: Some(14 * 86_400),
            min_bytes: Some(1 << 30),
            products: vec![Product::Smolvm],
            kinds: vec![
                FindingKind::CelestoOrphanDisk,
                FindingKind::SmolvmMountPoint,
            ],
        };
        assert_eq!(
            f.flags(),
            "--older-than 14d --min-size 1Gi --product smolvm --kind orphaned-disks \
             --kind smolvm.mount_point"
        );
        for (secs, words) in [(36 * 3600, "36h"), (90, "90s"), (120, "2m")] {
            assert_eq!(age_words(secs), words);
            assert_eq!(parse_age_flag(words), Ok(secs));
        }
        for (b, words) in [(100_000_000, "100M"), (1_500_000, "1500k"), (4097, "4097B")] {
            assert_eq!(size_words(b), words);
            assert_eq!(parse_size_flag(words), Ok(b));
        }
        assert_eq!(Filter::default().flags(), "");
        let both = Filter {
            kinds: FindingKind::named("mount-points"),
            ..Filter::default()
        };
        assert_eq!(both.flags(), "--kind mount-points");
    }

    #[test]
    fn ages_and_sizes_parse_as_people_write_them() {
        assert_eq!(parse_age("7d"), Ok(7 * 86_400));
        assert_eq!(parse_age("12h"), Ok(12 * 3_600));
        assert_eq!(parse_age("2w"), Ok(14 * 86_400));
        assert_eq!(parse_age("3"), Ok(3 * 86_400));
        assert!(parse_age("7y").is_err());
        assert!(parse_age("d").is_err());
        assert_eq!(parse_size("100M"), Ok(100_000_000));
        assert_eq!(parse_size("1.5G"), Ok(1_500_000_000));
        assert_eq!(parse_size("512k"), Ok(512_000));
        assert_eq!(parse_size("1Gi"), Ok(1 << 30));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("20GB"), Ok(20_000_000_000));
        assert!(parse_size("lots").is_err());
        assert!(parse_size("1X").is_err());
    }
}
