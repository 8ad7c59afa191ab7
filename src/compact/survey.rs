//! Which disks a scan estimates: every disk of a machine or sandbox stopped by its product's
//! record (not running, paused or suspended there) whose VM is not alive and that no process
//! uses, and every saved disk no process uses, of both products.
//!
//! * Celesto: a sandbox's `disks/<id>.qcow2|.ext4` ([`FindingKind::CelestoSandboxDisk`]) when
//!   its sandbox's VM is not alive; a saved disk ([`FindingKind::CelestoSavedDisk`]).
//! * smolvm: `storage.*` and `overlay.*` (`raw`, `qcow2`, `ext4`) in the directory of a machine
//!   whose VM is not alive, when no process uses that directory.
//!
//! A disk a keep rule keeps is listed with its rule and never read: keep rules shape what is
//! estimated, counted, offered and planned for compaction exactly as for deletion ([`kept_by`],
//! the rule the executor's re-judge asks too). A Celesto disk the scan could not verify is no
//! candidate at all.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::model::{
    CompactReport, DiskEstimate, Finding, FindingKind, Machine, Product, ScanReport, Verdict,
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

/// The keep rule that keeps the disk at `path` of `owner`: its machine's or sandbox's, or a
/// rule on a finding that is the disk or holds it (a machine directory).
fn kept_by(r: &ScanReport, product: Product, owner: Option<&str>, path: &Path) -> Option<String> {
    let by_machine = r
        .machines
        .iter()
        .filter(|m| m.product == product && owner == Some(m.name.as_str()))
        .find_map(|m| m.kept.clone());
    by_machine.or_else(|| {
        r.findings
            .iter()
            // The cheap question first: a rescan's survey asked every finding's path.
            .filter(|f| f.kept.is_some() && (f.path == path || path.starts_with(&f.path)))
            .find_map(|f| f.kept.clone())
    })
}

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
    if used(&f.used_by) || f.is_dir || f.verdict == Verdict::Unknown {
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
        .any(|f| used(&f.used_by) && (f.path == dir || f.path.starts_with(dir)));
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

/// The estimate of one disk, as the report carries it: a kept one is not read. `cache` is the
/// scan's cache of tool versions.
fn estimate_of(
    (product, owner, saved, path): Candidate,
    kept: Option<String>,
    cache: &Path,
) -> DiskEstimate {
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
        kept,
    };
    if d.kept.is_some() {
        d.allocated_bytes = allocated(&d.path);
        return d;
    }
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

/// The compaction estimates of a scan's disks (after its keep rules were applied), made in the
/// environment `env` (whose data directory holds the scan's cache of tool versions).
pub(crate) fn survey(r: &ScanReport, env: &crate::env::EnvSnapshot) -> CompactReport {
    let cache = crate::keep::path_for(env, r.platform).with_file_name(super::tools::CACHE_FILE);
    let mut found: Vec<Candidate> = r.findings.iter().filter_map(|f| celesto(r, f)).collect();
    found.extend(r.machines.iter().flat_map(|m| smolvm(r, m)));
    let disks = found
        .into_iter()
        .map(|c| {
            let kept = kept_by(r, c.0, c.1.as_deref(), &c.3);
            estimate_of(c, kept, &cache)
        })
        .collect();
    CompactReport::of(disks)
}

/// The keep rules saved at `path` applied to a report that was scanned and estimated already
/// (the app's saved report, a window after "Keep"): what [`crate::keep::apply_at`] does, and a
/// disk a rule now keeps loses its estimate and counts nowhere (one no rule keeps any more is
/// estimated again); a keep file that cannot be read may keep every disk.
pub fn apply_keeps_at(r: &mut ScanReport, path: &Path) {
    let unreadable = crate::keep::Keeps::load(path).is_err();
    crate::keep::apply_at(r, path);
    apply_keeps(
        r,
        unreadable,
        &path.with_file_name(super::tools::CACHE_FILE),
    );
}

fn apply_keeps(r: &mut ScanReport, unreadable: bool, cache: &Path) {
    let disks = std::mem::take(&mut r.compact.disks);
    let disks = disks
        .into_iter()
        .map(|d| {
            let kept = match unreadable {
                true => Some(crate::keep::UNREADABLE.to_string()),
                false => kept_by(r, d.product, d.owner.as_deref(), &d.path),
            };
            match (&d.kept, kept) {
                (None, None) => d,
                (Some(_), None) => estimate_of((d.product, d.owner, d.saved, d.path), None, cache),
                (_, Some(rule)) => {
                    estimate_of((d.product, d.owner, d.saved, d.path), Some(rule), cache)
                }
            }
        })
        .collect();
    r.compact = CompactReport::of(disks);
}
