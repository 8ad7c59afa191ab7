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

    /// Whether `f` passes, at `now`. An item whose age is unknown is never "old enough".
    pub fn matches(&self, f: &Finding, now: SystemTime) -> bool {
        if !self.products.is_empty() && !self.products.contains(&f.product) {
            return false;
        }
        if !self.kinds.is_empty() && !self.kinds.contains(&f.kind) {
            return false;
        }
        if self.min_bytes.is_some_and(|m| f.allocated_bytes < m) {
            return false;
        }
        if let Some(age) = self.older_than_secs {
            let now_ns = now
                .duration_since(SystemTime::UNIX_EPOCH)
                .map(|d| d.as_nanos() as i128)
                .unwrap_or(0);
            let newest = f.newest_change_ns as i128;
            if newest <= 0 || now_ns - newest < age as i128 * 1_000_000_000 {
                return false;
            }
        }
        true
    }

    /// Drop the findings that do not pass, and recount.
    pub fn apply(&self, report: &mut ScanReport, now: SystemTime) {
        if self.is_empty() {
            return;
        }
        report.findings.retain(|f| self.matches(f, now));
        report.compute_totals();
    }
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
