//! Backing chains as dependencies. A qcow2 disk names its backing file in its header (and that
//! one may name another): a disk whose chain runs through a file needs that file, whatever kind
//! of leftover the file is on its own.
//!
//! [`link`] reads the header of every file finding once per scan and records, on each finding
//! a chain runs through (the backing file, or a directory holding it), the disks that need it
//! (`Finding::needed_by`). [`protect`] then protects whatever a surviving disk needs (alive, in
//! use, kept, unverifiable); what only disks that are themselves reclaimable need stays
//! reclaimable, and the planner deletes it only together with all of them, after them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::model::{Finding, ScanReport, Verdict};

/// The longest chain followed (QEMU's own limit is far larger; real chains are short).
const MAX_DEPTH: usize = 16;

/// Fill `needed_by` on every finding a disk's backing chain runs through. `memo` is the scan's
/// own: a header the scan has already read is not read again while its file is unchanged.
pub(crate) fn link(report: &mut ScanReport, memo: &mut crate::qcow2::ChainMemo) {
    let is_file = |f: &Finding| f.identity.is_some_and(|i| i.is_regular());
    let by_inode: HashMap<(u64, u64), usize> = report
        .findings
        .iter()
        .enumerate()
        .filter(|(_, f)| is_file(f))
        .filter_map(|(i, f)| f.identity.map(|id| ((id.dev, id.ino), i)))
        .collect();
    let by_path: HashMap<&Path, usize> = report
        .findings
        .iter()
        .enumerate()
        .map(|(i, f)| (f.path.as_path(), i))
        .collect();
    let mut needed: Vec<Vec<usize>> = vec![Vec::new(); report.findings.len()];
    for (d, disk) in report
        .findings
        .iter()
        .enumerate()
        .filter(|(_, f)| is_file(f))
    {
        let (chain, ids) = crate::qcow2::chain_in(memo, &disk.path, MAX_DEPTH);
        for (link, id) in chain.links.iter().zip(ids) {
            for j in holders(link, id, &by_inode, &by_path) {
                let holder = &report.findings[j].path;
                if j != d && !disk.path.starts_with(holder) && !needed[j].contains(&d) {
                    needed[j].push(d);
                }
            }
        }
    }
    let paths: Vec<PathBuf> = report.findings.iter().map(|f| f.path.clone()).collect();
    for (f, needs) in report.findings.iter_mut().zip(needed) {
        f.needed_by = needs.into_iter().map(|d| paths[d].clone()).collect();
        f.needed_by.sort();
    }
}

/// The findings that are `link` (the same inode: `id`, as the chain `stat`ed it) or a
/// directory holding it (by path).
fn holders(
    link: &Path,
    id: (u64, u64),
    by_inode: &HashMap<(u64, u64), usize>,
    by_path: &HashMap<&Path, usize>,
) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    out.extend(by_inode.get(&id));
    for a in link.ancestors() {
        if let Some(i) = by_path.get(a) {
            if !out.contains(i) {
                out.push(*i);
            }
        }
    }
    out
}

/// Protect every finding that a surviving disk needs (one that is protected or cannot be
/// verified: alive, in use, kept). Pure and idempotent: applied again after keep rules change.
pub(crate) fn protect(report: &mut ScanReport) {
    let surviving: HashMap<PathBuf, bool> = report
        .findings
        .iter()
        .map(|f| {
            let survives = matches!(f.verdict, Verdict::Protected | Verdict::Unknown);
            (f.path.clone(), survives)
        })
        .collect();
    for f in &mut report.findings {
        if !matches!(f.verdict, Verdict::Reclaimable | Verdict::OptIn) {
            continue;
        }
        let Some(disk) = f
            .needed_by
            .iter()
            .find(|d| surviving.get(*d).copied().unwrap_or(true))
        else {
            continue;
        };
        f.verdict = Verdict::Protected;
        f.opt_in_class = None;
        f.reason = format!(
            "The disk {} backs onto it, and that disk stays: deleting this would break it. {}",
            crate::pathser::shown(disk),
            f.reason
        );
    }
}

/// Why `f` cannot be deleted now because a disk still needs it: one of its `needed_by` disks
/// still exists (it was not deleted first). `gone` names disks to count as deleted although
/// they are there: those a dry run deleted earlier in the same plan.
pub(crate) fn still_needed(f: &Finding, gone: &dyn Fn(&Path) -> bool) -> Option<String> {
    let disk = f
        .needed_by
        .iter()
        .find(|d| crate::fsread::lstat(d).is_some() && !gone(d))?;
    Some(format!(
        "the disk {} still backs onto it; deleting it would break that disk, so it is not deleted",
        crate::pathser::shown(disk)
    ))
}
