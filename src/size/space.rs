//! The free space of the file systems holding SmolVM state (`statvfs`), for the low-space
//! alert (`view::lowspace`).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::model::ScanReport;

/// A file system's size and the bytes available to the user (`statvfs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Space {
    /// Bytes available to the user.
    pub avail: u64,
    /// The file system's size.
    pub total: u64,
}

impl Space {
    /// The file system holding `p` (`statvfs`: `f_bavail` and `f_blocks`, × `f_frsize`).
    pub(crate) fn of(p: &Path) -> std::io::Result<Space> {
        let v = rustix::fs::statvfs(p)?;
        let frsize = v.f_frsize;
        Ok(Space {
            avail: v.f_bavail.saturating_mul(frsize),
            total: v.f_blocks.saturating_mul(frsize),
        })
    }
}

/// The fullest file system holding SmolVM state: the products' roots and the findings' roots
/// that exist.
pub fn space_of(report: &ScanReport) -> Option<(PathBuf, Space)> {
    let mut paths: Vec<PathBuf> = report
        .products
        .iter()
        .flat_map(|p| p.roots.values().cloned())
        .chain(report.findings.iter().filter_map(|f| f.root.clone()))
        .collect();
    paths.sort();
    paths.dedup();
    paths
        .into_iter()
        .filter_map(|p| Space::of(&p).ok().map(|s| (p, s)))
        .min_by(|(_, a), (_, b)| {
            (a.avail as f64 / a.total.max(1) as f64)
                .total_cmp(&(b.avail as f64 / b.total.max(1) as f64))
        })
}
