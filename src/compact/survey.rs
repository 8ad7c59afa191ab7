//! Which disks a scan estimates: every disk of a machine or sandbox stopped by its product's
//! record (not running, paused or suspended there) whose VM is not alive and that no process
//! uses, and every saved disk no process uses, of both products.
//!
//! * Celesto: a sandbox's `disks/<id>.qcow2|.ext4` ([`FindingKind::CelestoSandboxDisk`]) when
//!   its sandbox's VM is not alive; a saved disk ([`FindingKind::CelestoSavedDisk`]).
//! * smolvm: `storage.*` and `overlay.*` (`raw`, `qcow2`, `ext4`) in the directory of a machine
//!   whose VM is not alive, when no process uses that directory.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::model::{
    CompactReport, DiskEstimate, Finding, FindingKind, Machine, Product, ScanReport,
};

/// smolvm's disk file names in a machine directory.
const SMOLVM_DISKS: [&str; 6] = [
    "storage.raw",
    "storage.qcow2",
    "storage.ext4",
    "overlay.raw",
    "overlay.qcow2",
    "overlay.ext4",
];

/// A disk to estimate: product, owner, saved, path.
type Candidate = (Product, Option<String>, bool, PathBuf);

fn machine<'a>(r: &'a ScanReport, product: Product, name: &str) -> Option<&'a Machine> {
    r.machines
        .iter()
        .find(|m| m.product == product && m.name == name)
}

/// States whose disk is not at rest, whatever the process table says: a record that says
/// running (stale or not), and a paused or suspended guest, whose saved memory may still hold
/// blocks its file system's bitmaps do not show yet.
const NOT_AT_REST: [&str; 6] = [
    "running",
    "paused",
    "starting",
    "stopping",
    "suspended",
    "restoring",
];

/// Stopped by its product's record, and no VM of it alive.
fn stopped(m: &Machine) -> bool {
    !m.alive && !NOT_AT_REST.contains(&m.state.as_str())
}

/// Whether a process uses it (Smolsweep's own process never counts: the scan leaves it out).
fn used(pids: &[u32]) -> bool {
    !pids.is_empty()
}

fn celesto(r: &ScanReport, f: &Finding) -> Option<Candidate> {
    if used(&f.used_by) || f.is_dir {
        return None;
    }
    let saved = match f.kind {
        FindingKind::CelestoSavedDisk => true,
        FindingKind::CelestoSandboxDisk => false,
        _ => return None,
    };
    if !saved {
        let m = machine(r, Product::Celesto, f.owner.as_deref()?)?;
        if !stopped(m) {
            return None;
        }
    }
    Some((Product::Celesto, f.owner.clone(), saved, f.path.clone()))
}

fn smolvm(r: &ScanReport, m: &Machine) -> Vec<Candidate> {
    let Some(dir) = m.dir.as_deref() else {
        return Vec::new();
    };
    let in_use = r
        .findings
        .iter()
        .any(|f| (f.path == dir || f.path.starts_with(dir)) && used(&f.used_by));
    if m.product != Product::Smolvm || !stopped(m) || in_use {
        return Vec::new();
    }
    SMOLVM_DISKS
        .iter()
        .map(|n| dir.join(n))
        .filter(|p| std::fs::symlink_metadata(p).is_ok_and(|md| md.is_file()))
        .map(|p| (Product::Smolvm, Some(m.name.clone()), false, p))
        .collect()
}

/// Why a disk with more than one name is not compacted: compacting it in place changes what
/// every other name reads too (an image hard-linked from outside SmolVM's state, say).
pub(crate) fn other_names(links: u64) -> String {
    format!(
        "give it one name: it has {links} (hard links), and compacting it would change the \
         file behind every other name too"
    )
}

/// The estimate of one disk, as the report carries it; `cache` is the scan's cache of tool
/// versions.
fn estimate_of((product, owner, saved, path): Candidate, cache: &Path) -> DiskEstimate {
    let mut d = DiskEstimate {
        product,
        owner,
        saved,
        format: None,
        allocated_bytes: 0,
        compactable_bytes: 0,
        guest_free_bytes: 0,
        read_bytes: 0,
        cannot_tell: None,
        needs: None,
        path,
    };
    match super::estimate_cached(&d.path) {
        Ok(e) => {
            d.format = Some(e.format.as_str().to_string());
            d.allocated_bytes = e.allocated_bytes;
            d.compactable_bytes = e.compactable_bytes;
            d.guest_free_bytes = e.guest_free_bytes;
            d.read_bytes = e.read_bytes;
            let links = std::fs::symlink_metadata(&d.path).map_or(1, |m| m.nlink());
            // The tools matter only where there is something to compact.
            if e.compactable_bytes > 0 && links > 1 {
                d.needs = Some(other_names(links));
            } else if e.compactable_bytes > 0 {
                match super::tools::check(e.format, Some(cache)) {
                    Ok(needs) => d.needs = needs,
                    Err(why) => {
                        d.compactable_bytes = 0;
                        d.cannot_tell = Some(why);
                    }
                }
            }
        }
        Err((format, why)) => {
            d.format = format.map(|f| f.as_str().to_string());
            d.allocated_bytes = allocated(&d.path);
            d.cannot_tell = Some(why.0);
        }
    }
    d
}

fn allocated(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.blocks() * 512)
}

/// The compaction estimates of a scan's disks, made in the environment `env` (whose data
/// directory holds the scan's cache of tool versions).
pub(crate) fn survey(r: &ScanReport, env: &crate::env::EnvSnapshot) -> CompactReport {
    let cache = crate::keep::path_for(env, r.platform).with_file_name(super::tools::CACHE_FILE);
    let mut found: Vec<Candidate> = r.findings.iter().filter_map(|f| celesto(r, f)).collect();
    found.extend(r.machines.iter().flat_map(|m| smolvm(r, m)));
    CompactReport::of(found.into_iter().map(|c| estimate_of(c, &cache)).collect())
}
