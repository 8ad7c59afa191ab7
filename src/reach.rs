//! The reference graph: what holds what, marked from upstream's own records.
//!
//! Like a garbage collector (nix's store collector, `docker image prune`), a scan keeps
//! everything reachable from a root and offers only the rest. The roots are what stays: every
//! machine and sandbox record of both products, every path a live VM process uses (the one "in
//! use" rule), every keep rule, everything the scan cannot verify. The edges are the
//! references upstream itself records ([`Via`]): a qcow2 disk's backing chain, a machine's
//! `.pack-shared` lease, a shared extraction's digest keying its copy-on-write bases, the
//! records beside an extraction, a pause record beside its machine, a sandbox row's images and
//! drives. The scan declares them as [`Hold`]s on the finding they reach ([`attach`]); [`mark`]
//! then protects every reclaimable or opt-in finding that something staying reaches, down the
//! whole chain, with a sentence that names the holder. What nothing reaches keeps the verdict
//! its own judge gave it.
//!
//! [`mark`] is pure and idempotent: keep rules applied again (in the app, or at the moment of an
//! action) mark again on the report's own holds. The executor's re-judge scans afresh, so a
//! clone made, a pack leased or a sandbox created between the plan and the run holds what it
//! reaches when the action comes.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::model::{Finding, Hold, Holder, Product, ScanReport, Verdict, Via};

/// Put each declared hold on the finding its target is, or lies in (the nearest directory
/// finding holding it), and name on it every finding it goes only together with, after
/// (`needed_by`, see [`goes_after`]). A hold whose target is no finding reaches nothing
/// Smolsweep could delete and is dropped; a finding never holds itself.
pub(crate) fn attach(report: &mut ScanReport, holds: Vec<(PathBuf, Hold)>) {
    let by_path: HashMap<PathBuf, usize> = report
        .findings
        .iter()
        .enumerate()
        .map(|(i, f)| (f.path.clone(), i))
        .collect();
    let within = |p: &Path| p.ancestors().find_map(|a| by_path.get(a).copied());
    let mut needed: Vec<Vec<PathBuf>> = vec![Vec::new(); report.findings.len()];
    for (target, hold) in holds {
        let Some(i) = within(&target) else {
            continue;
        };
        let holder = match &hold.by {
            Holder::Path(p) => within(p),
            Holder::Record { .. } => None,
        };
        if holder == Some(i) {
            continue; // a finding never holds itself
        }
        if let Some(j) = holder.filter(|_| goes_after(hold.via)) {
            needed[i].push(report.findings[j].path.clone());
        }
        let f = &mut report.findings[i];
        if !f.held_by.contains(&hold) {
            f.held_by.push(hold);
        }
    }
    for (f, mut needs) in report.findings.iter_mut().zip(needed) {
        f.held_by.sort_by(|a, b| order(a).cmp(&order(b)));
        needs.sort();
        needs.dedup();
        f.needed_by = needs;
    }
}

/// Whether what a holder reaches this way goes only after the holder (`needed_by`): a disk's
/// backing file after the disk, a leased extraction after the machine directory leasing it
/// (upstream's own prune stops at a lease whose extraction is gone), a pause record after its
/// machine's directory. A shared extraction's records and bases are held while it stays, but
/// are members of its item or caches of their own, and may go before it.
fn goes_after(via: Via) -> bool {
    matches!(via, Via::Backing | Via::Lease | Via::Pause)
}

/// A stable order for a finding's holds: records first, then by path and kind of reference.
fn order(h: &Hold) -> (u8, String, &'static str) {
    match &h.by {
        Holder::Record { product, name } => {
            (0, format!("{}:{name}", product.as_str()), h.via.as_str())
        }
        Holder::Path(p) => (1, p.display().to_string(), h.via.as_str()),
    }
}

/// Whether `h`'s holder stays: a record always does; a path does unless it is (or lies in) a
/// finding that may go. A path in no finding is nothing Smolsweep deletes.
fn holder_stays(h: &Hold, findings: &[Finding], by_path: &HashMap<&Path, usize>) -> bool {
    match &h.by {
        Holder::Record { .. } => true,
        Holder::Path(p) => match p.ancestors().find_map(|a| by_path.get(a)) {
            Some(&i) => matches!(findings[i].verdict, Verdict::Protected | Verdict::Unknown),
            None => true,
        },
    }
}

/// Protect every reclaimable or opt-in finding something staying reaches, until nothing more
/// changes (a chain is followed to its end: a machine holds its lease, the lease its
/// extraction, the extraction its bases). Pure and idempotent.
pub(crate) fn mark(report: &mut ScanReport) {
    loop {
        let by_path = report.index_by_path();
        let held: Vec<(usize, String)> = report
            .findings
            .iter()
            .enumerate()
            .filter(|(_, f)| matches!(f.verdict, Verdict::Reclaimable | Verdict::OptIn))
            .filter_map(|(i, f)| {
                let h = f
                    .held_by
                    .iter()
                    .find(|h| holder_stays(h, &report.findings, &by_path))?;
                let holder = match &h.by {
                    Holder::Path(p) => p.ancestors().find_map(|a| by_path.get(a)),
                    Holder::Record { .. } => None,
                };
                Some((i, sentence(h, holder.map(|&j| &report.findings[j]))))
            })
            .collect();
        if held.is_empty() {
            return;
        }
        for (i, why) in held {
            let f = &mut report.findings[i];
            f.verdict = Verdict::Protected;
            f.opt_in_class = None;
            f.reason = format!("{why} {}", f.reason);
        }
    }
}

/// Who a holding finding is, for a person: "machine 'web'", "sandbox 'vm-1'", or its path.
fn who(f: &Finding) -> String {
    match (&f.owner, f.product) {
        (Some(o), Product::Smolvm) => format!("machine '{o}'"),
        (Some(o), Product::Celesto) => format!("sandbox '{o}'"),
        (None, _) => crate::pathser::shown(&f.path),
    }
}

/// The sentence that says why a finding stays: what holds it, and how.
pub(crate) fn sentence(h: &Hold, holder: Option<&Finding>) -> String {
    let by = match (&h.by, holder) {
        (Holder::Record { product, name }, _) => match product {
            Product::Smolvm => format!("smolvm machine '{name}'"),
            Product::Celesto => format!("sandbox '{name}'"),
        },
        (Holder::Path(_), Some(f)) => who(f),
        (Holder::Path(p), None) => crate::pathser::shown(p),
    };
    let through = h
        .through
        .as_deref()
        .map(crate::pathser::shown)
        .unwrap_or_default();
    match h.via {
        Via::Backing => format!(
            "The disk {through} of {by} backs onto it, and it stays: deleting this would break that disk."
        ),
        Via::Lease => format!(
            "{} leases it ({through}), and the machine stays: smolvm needs it to start or branch that machine.",
            capital(&by)
        ),
        Via::Digest => format!(
            "The shared extraction {by}, which stays, keeps its copy-on-write bases here (smolvm does not rebuild a missing base)."
        ),
        Via::Sidecar => format!(
            "It belongs to the shared extraction {by}, which stays: smolvm reads it for every lease."
        ),
        Via::Pause => format!(
            "It belongs to the paused machine directory {by}, which stays: the machine cannot resume without it."
        ),
        Via::Drive => format!(
            "{} boots from it or attaches it ({}), and stays: deleting this would break it.",
            capital(&by),
            if through.is_empty() { "its inventory row names it".to_string() } else { format!("its inventory row in {through} names it") }
        ),
    }
}

fn capital(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

/// Every finding that reaches `f` and stays, nearest first, up to the root that holds it: the
/// chain `why` prints (like `nix why-depends`). Each step is a hold and the finding it names
/// (none for a record, or a path in no finding). Bounded by the number of findings; a cycle
/// ends the chain.
pub(crate) fn chain<'r>(
    report: &'r ScanReport,
    f: &'r Finding,
) -> Vec<(&'r Hold, Option<&'r Finding>)> {
    let by_path = report.index_by_path();
    let mut out = Vec::new();
    let mut seen = vec![false; report.findings.len()];
    let mut at = f;
    while let Some(h) = at
        .held_by
        .iter()
        .find(|h| holder_stays(h, &report.findings, &by_path))
    {
        let next = match &h.by {
            Holder::Path(p) => p.ancestors().find_map(|a| by_path.get(a)).copied(),
            Holder::Record { .. } => None,
        };
        out.push((h, next.map(|j| &report.findings[j])));
        match next {
            Some(j) if !seen[j] => {
                seen[j] = true;
                at = &report.findings[j];
            }
            _ => break,
        }
    }
    out
}

/// A file with another name (a hard link) that stays frees nothing when this name goes: its
/// bytes are counted where every one of its names is a finding, and nowhere else. A regular
/// file finding whose link count is higher than the number of findings naming its inode
/// frees nothing, and says so (a prepared checkpoint linked to a capture kept elsewhere).
pub(crate) fn hard_links(report: &mut ScanReport) {
    use std::os::unix::fs::MetadataExt;
    let mut names: HashMap<(u64, u64), u64> = HashMap::new();
    for f in &report.findings {
        if let Some(id) = f.identity.filter(|i| i.is_regular()) {
            *names.entry((id.dev, id.ino)).or_default() += 1;
        }
    }
    for f in &mut report.findings {
        let Some(id) = f.identity.filter(|i| i.is_regular()) else {
            continue;
        };
        let Some(m) = crate::fsread::lstat(&f.path) else {
            continue;
        };
        if m.dev() != id.dev || m.ino() != id.ino || m.nlink() <= names[&(id.dev, id.ino)] {
            continue;
        }
        if f.allocated_bytes > 0 {
            f.allocated_bytes = 0;
            f.reason = format!(
                "{} It has another name (a hard link) that stays, which keeps its bytes: deleting it frees nothing.",
                f.reason
            );
        }
    }
}
