//! The plan of `smolsweep compact [MACHINE|DISK…]`: one [`Action::CompactDisk`] per disk the
//! scan estimated with something to compact, run by the one executor (which judges each again).

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::model::{DiskEstimate, FileIdentity, Machine, ScanReport};
use crate::plan::{Action, Plan, PlannedAction, SkippedAtPlan, PLAN_SCHEMA};

/// Whether `d` is what `target` names: a disk by its path, or a machine or sandbox by its name
/// (`smolvm:NAME`, `celesto:ID`, or a bare name).
fn names(d: &DiskEstimate, target: &str) -> bool {
    if target.contains('/') {
        let canon = |p: &Path| std::fs::canonicalize(p).ok();
        return d.path == Path::new(target)
            || canon(Path::new(target)).is_some_and(|t| Some(t) == canon(&d.path));
    }
    let (product, name) = match target.split_once(':') {
        Some((p, n)) => (Some(p), n),
        None => (None, target),
    };
    d.owner.as_deref() == Some(name) && product.is_none_or(|p| p == d.product.as_str())
}

fn identity(path: &Path) -> Option<FileIdentity> {
    let m = std::fs::symlink_metadata(path).ok()?;
    m.is_file().then(|| FileIdentity {
        dev: m.dev(),
        ino: m.ino(),
        file_type: crate::size::file_type(libc::S_IFREG),
        size: m.size(),
        mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
    })
}

/// The machine or sandbox `target` names (`smolvm:NAME`, `celesto:ID`, or a bare name).
fn machine<'a>(report: &'a ScanReport, target: &str) -> Option<&'a Machine> {
    let (product, name) = match target.split_once(':') {
        Some((p, n)) => (Some(p), n),
        None => (None, target),
    };
    report
        .machines
        .iter()
        .find(|m| m.name == name && product.is_none_or(|p| p == m.product.as_str()))
}

/// Why `target` names no disk to compact: a machine that runs (and how to stop it), one that
/// is paused, or nothing the scan estimated.
fn not_compactable(report: &ScanReport, target: &str) -> String {
    let Some(m) = machine(report, target) else {
        return format!(
            "{target} is no disk of a stopped machine or sandbox, nor a saved disk, that the scan estimated"
        );
    };
    let who = format!("{}:{}", m.product.as_str(), m.name);
    let pid = m.pid.map(|p| format!(", pid {p}")).unwrap_or_default();
    let state = match m.effective_state.is_empty() {
        true => m.state.as_str(),
        false => m.effective_state.as_str(),
    };
    match (m.alive, state) {
        (true, _) | (_, "running") => format!(
            "{who} runs ({} {}{pid}): its disks are compacted only while it is stopped; \
             stop it with `smolsweep stop {who}`, then run `smolsweep compact {who}`",
            m.product.display_name(),
            m.product.noun()
        ),
        (_, s @ ("paused" | "suspended" | "starting" | "stopping" | "restoring")) => format!(
            "{who} is {s}: its disks are compacted only while it is stopped; \
             stop it with `smolsweep stop {who}`, then run `smolsweep compact {who}`"
        ),
        _ => format!("{who} has no disk that the scan estimated (nothing to compact)"),
    }
}

/// The compaction plan for `targets` (every disk with something to compact when empty); `Err`
/// names a target that matches no disk the scan estimated (a running machine: how to stop it),
/// or only disks a keep rule keeps: a kept disk is never planned.
pub fn compact_plan(report: &ScanReport, targets: &[String]) -> Result<Plan, String> {
    for t in targets {
        let named: Vec<&DiskEstimate> = report
            .compact
            .disks
            .iter()
            .filter(|d| names(d, t))
            .collect();
        if named.is_empty() {
            return Err(not_compactable(report, t));
        }
        if let Some(rule) = named.iter().find_map(|d| d.kept.as_deref()) {
            if named.iter().all(|d| d.kept.is_some()) {
                return Err(format!("{t} is {}", crate::keep::kept_why(rule)));
            }
        }
    }
    let chosen = report
        .compact
        .disks
        .iter()
        .filter(|d| d.kept.is_none())
        .filter(|d| targets.is_empty() || targets.iter().any(|t| names(d, t)));
    let mut actions = Vec::new();
    let mut skipped = Vec::new();
    for d in chosen {
        let shown = crate::pathser::shown(&d.path);
        let why = match (&d.cannot_tell, d.compactable_bytes, identity(&d.path)) {
            (Some(why), _, _) => Some(format!(
                "cannot tell what compacting would give back ({why})"
            )),
            (None, 0, _) => Some("nothing free inside to give back".to_string()),
            (None, _, _) if d.needs.is_some() => d.needs.clone(),
            (None, _, None) => Some("it cannot be read now".to_string()),
            (None, n, Some(identity)) => {
                actions.push(PlannedAction::of(Action::CompactDisk {
                    product: d.product,
                    owner: d.owner.clone(),
                    path: d.path.clone(),
                    format: d.format.clone().unwrap_or_default(),
                    identity,
                    expected_bytes: n,
                }));
                None
            }
        };
        if let Some(why) = why {
            skipped.push(SkippedAtPlan {
                id: format!("disk:{shown}"),
                why,
            });
        }
    }
    let mut plan = Plan {
        schema: PLAN_SCHEMA.into(),
        id: String::new(),
        created_at: crate::basics::now_secs(),
        scanned_at: report.scanned_at,
        scanned_at_ns: report.scanned_at_ns,
        home: report.home.clone(),
        platform: report.platform,
        roots: Vec::new(),
        estimated_bytes: Plan::estimate_of(&actions),
        actions,
        skipped_at_plan: skipped,
        keep_overrides: Vec::new(),
    };
    plan.id = plan.content_id();
    Ok(plan)
}
