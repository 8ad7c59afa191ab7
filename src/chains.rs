//! Backing chains as dependencies. A qcow2 disk names its backing file in its header (and that
//! one may name another): a disk whose chain runs through a file needs that file, whatever kind
//! of leftover the file is on its own.
//!
//! [`link`] reads the header of every disk once per scan and records, on each finding a chain
//! runs through (the backing file, or a directory holding it), the findings whose disks need it
//! (`Finding::needed_by`), and declares each link as a hold of the reference graph
//! (`crate::reach`), which protects whatever a surviving disk needs (alive, in use, kept,
//! recorded, unverifiable); what only disks that are themselves reclaimable need stays
//! reclaimable, and the planner deletes it only together with all of them, after them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::model::{Finding, Hold, Holder, ScanReport, Via};

/// The longest chain followed (QEMU's own limit is far larger; real chains are short).
const MAX_DEPTH: usize = 16;

/// Every link of every disk's backing chain, as a [`Via::Backing`] hold of the disk's finding
/// on the finding the link is (or lies in): edges of the reference graph (`crate::reach`,
/// which also fills `needed_by` from them). The disks read are every file finding and the disks inside directory
/// findings that hold some (a machine's `storage.qcow2`, its fork generations' frozen layers, a
/// pause record's pinned layers: `disks_of`). `memo` is the scan's own: a header the scan has
/// already read is not read again while its file is unchanged.
pub(crate) fn link(
    report: &ScanReport,
    memo: &mut crate::qcow2::ChainMemo,
) -> Vec<(PathBuf, Hold)> {
    let is_file = |f: &Finding| f.identity.is_some_and(|i| i.is_regular());
    let by_inode: HashMap<(u64, u64), usize> = report
        .findings
        .iter()
        .enumerate()
        .filter(|(_, f)| is_file(f))
        .filter_map(|(i, f)| f.identity.map(|id| ((id.dev, id.ino), i)))
        .collect();
    let by_path = report.index_by_path();
    let mut needed: Vec<Vec<usize>> = vec![Vec::new(); report.findings.len()];
    let mut holds: Vec<(PathBuf, Hold)> = Vec::new();
    for (d, owner) in report.findings.iter().enumerate() {
        for disk in disks_of(owner) {
            let (chain, ids) = crate::qcow2::chain_in(memo, &disk, MAX_DEPTH);
            for (link, id) in chain.links.iter().zip(ids) {
                for j in holders(link, id, &by_inode, &by_path) {
                    let holder = &report.findings[j].path;
                    if j != d && !disk.starts_with(holder) && !needed[j].contains(&d) {
                        needed[j].push(d);
                        holds.push((
                            holder.clone(),
                            Hold {
                                by: Holder::Path(owner.path.clone()),
                                via: Via::Backing,
                                through: Some(disk.clone()),
                            },
                        ));
                    }
                }
            }
        }
    }
    holds
}

/// The most disk files read inside one directory finding.
const MAX_DISKS_IN_DIR: usize = 64;

/// The disks a finding holds whose backing chains are read: a regular file is one; a machine
/// directory holds those the layout table says declare a backing file (its disks, and each fork
/// generation's frozen layers under `d/<gen>/`); a pause record's pinned layers are files in it.
/// Bounded ([`MAX_DISKS_IN_DIR`]); links are never followed.
fn disks_of(f: &Finding) -> Vec<PathBuf> {
    use crate::layout::{self, Declares, Place, Sub};
    if f.identity.is_some_and(|i| i.is_regular()) {
        return vec![f.path.clone()];
    }
    if !f.is_dir {
        return Vec::new();
    }
    let files_in = |dir: &Path| -> Vec<PathBuf> {
        crate::fsread::read_dir_or_empty(dir)
            .into_iter()
            .filter(|e| e.is_file())
            .map(|e| e.path)
            .collect()
    };
    let mut out = Vec::new();
    if layout::smolvm::MACHINE_DIR_KINDS.contains(&f.kind) {
        for r in layout::rows_at(Place::In(Sub::SmolvmMachine))
            .filter(|r| r.declares.contains(&Declares::QcowBacking))
        {
            let layout::Name::Exact(n) = r.name else {
                continue;
            };
            let p = f.path.join(n);
            match crate::fsread::lstat(&p) {
                Some(m) if m.is_file() => out.push(p),
                Some(m) if m.is_dir() => {
                    for g in crate::fsread::read_dir_or_empty(&p) {
                        if g.is_dir() {
                            out.extend(files_in(&g.path));
                        }
                    }
                }
                _ => {}
            }
        }
    } else if f.kind == crate::model::FindingKind::SmolvmPauseRecord {
        out = files_in(&f.path);
    }
    out.truncate(MAX_DISKS_IN_DIR);
    out
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
