//! Notifications as a person reads them: which orphans of a scan are new and worth a word
//! (this HOME's orphaned VM processes and orphaned files, spaced out per kind), and the words
//! after a reclaim, a Stop / End process / Delete and an automatic run. The desktop shell only
//! delivers them.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::model::{human_bytes, ScanReport, Verdict};
use crate::view::runs::{ReclaimOutcome, StepStatus, VmAction, VmOutcome};

/// A notification to show.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Note {
    /// The first line (the notification's title).
    pub summary: String,
    /// The lines under it.
    pub body: String,
    /// Offer a "Review" action that opens the window.
    pub review: bool,
    /// The review action's label instead of "Review" (for example "Reclaim 3.2 GB").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
}

/// Remembers which orphans were already announced and spaces notifications out.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrphanWatch {
    /// Keys of orphans already announced (`proc:<pid>:<start>`, `finding:<id>`).
    pub seen: BTreeSet<String>,
    /// When the last notification about orphaned VM processes went out (seconds since the epoch).
    pub last_sent: Option<u64>,
    /// When the last notification about orphaned files went out.
    #[serde(default)]
    pub last_sent_files: Option<u64>,
}

/// Minimum seconds between two notifications of the same kind (orphaned VM processes, orphaned
/// files); orphans found in between are announced when the gap ends (the shell sets a timer for
/// [`OrphanWatch::held_back_until`]), not at the next scan. The two kinds are limited
/// separately so a burst of orphaned disks never delays news of a VM left running.
pub const MIN_GAP_SECS: u64 = 300;

/// Whether a finding counts as an orphan worth announcing (this HOME's, reclaimable).
fn is_orphan_finding(kind: crate::model::FindingKind, verdict: Verdict) -> bool {
    verdict == Verdict::Reclaimable && kind.is_orphan()
}

/// The orphans of a scan worth announcing: key → (label, bytes, is a process).
fn orphans_of(report: &ScanReport) -> BTreeMap<String, (String, u64, bool)> {
    let mut current: BTreeMap<String, (String, u64, bool)> = BTreeMap::new();
    {
        for p in &report.processes {
            if p.is_this_homes_orphan() {
                // "pid 3089" once: an orphan with no name is its VM process.
                let who = match &p.owner {
                    Some(o) => format!("{o} (pid {})", p.pid),
                    None => format!("VM process (pid {})", p.pid),
                };
                current.insert(
                    format!("proc:{}:{}", p.pid, p.start_time),
                    (
                        format!("{} {who}", p.product.display_name()),
                        p.held_deleted_bytes,
                        true,
                    ),
                );
            }
        }
        for f in &report.findings {
            if is_orphan_finding(f.kind, f.verdict) {
                current.insert(
                    format!("finding:{}", f.id),
                    (f.path.display().to_string(), f.allocated_bytes, false),
                );
            }
        }
    }
    current
}

impl OrphanWatch {
    /// When orphans of `report` that were held back by the rate limit may be announced: the end
    /// of the earliest gap that holds one back. `None` when nothing waits.
    pub fn held_back_until(&self, report: &ScanReport, now: u64) -> Option<u64> {
        let waiting = |procs: bool| {
            orphans_of(report)
                .iter()
                .any(|(k, v)| v.2 == procs && !self.seen.contains(k))
        };
        let end = |last: Option<u64>| last.map(|t| t + MIN_GAP_SECS).filter(|&t| t > now);
        [(true, self.last_sent), (false, self.last_sent_files)]
            .into_iter()
            .filter(|(procs, _)| waiting(*procs))
            .filter_map(|(_, last)| end(last))
            .min()
    }

    /// Compare a scan with what was announced. Returns the notification to show, if any, and
    /// records it. Orphans that disappear are forgotten (a new one at the same place is new).
    pub fn observe(&mut self, report: &ScanReport, now: u64) -> Option<Note> {
        let current = orphans_of(report);
        self.seen.retain(|k| current.contains_key(k));
        let allowed =
            |last: Option<u64>| last.is_none_or(|t| now.saturating_sub(t) >= MIN_GAP_SECS);
        let (procs_ok, files_ok) = (allowed(self.last_sent), allowed(self.last_sent_files));
        let new: Vec<(&String, &(String, u64, bool))> = current
            .iter()
            .filter(|(k, v)| !self.seen.contains(*k) && if v.2 { procs_ok } else { files_ok })
            .collect();
        if new.is_empty() {
            return None;
        }
        let procs: Vec<_> = new.iter().filter(|(_, v)| v.2).collect();
        let files: Vec<_> = new.iter().filter(|(_, v)| !v.2).collect();
        let file_bytes: u64 = files.iter().map(|(_, v)| v.1).sum();
        let summary = match (procs.len(), files.len()) {
            (1, 0) => "Orphaned VM still running".to_string(),
            (n, 0) => format!("{n} orphaned VMs still running"),
            (0, 1) => format!("Orphaned VM disk: {} reclaimable", human_bytes(file_bytes)),
            (0, n) => format!(
                "{n} orphaned VM files: {} reclaimable",
                human_bytes(file_bytes)
            ),
            (p, f) => format!(
                "{p} orphaned VM{} and {f} orphaned file{}",
                if p == 1 { "" } else { "s" },
                if f == 1 { "" } else { "s" }
            ),
        };
        let mut lines: Vec<String> = Vec::new();
        for (_, (label, bytes, _)) in &procs {
            if *bytes > 0 {
                lines.push(format!(
                    "{label}, holding {} of deleted files",
                    human_bytes(*bytes)
                ));
            } else {
                lines.push(format!("{label}, owned by no inventory"));
            }
        }
        if !files.is_empty() {
            lines.push(format!(
                "{} in {} orphaned file{}",
                human_bytes(file_bytes),
                files.len(),
                if files.len() == 1 { "" } else { "s" }
            ));
        }
        for (k, _) in &new {
            self.seen.insert((*k).clone());
        }
        if !procs.is_empty() {
            self.last_sent = Some(now);
        }
        if !files.is_empty() {
            self.last_sent_files = Some(now);
        }
        Some(Note {
            summary,
            body: lines.join("\n"),
            review: true,
            action: None,
        })
    }
}

/// The notification after a reclaim.
pub fn reclaim_note(out: &ReclaimOutcome) -> Note {
    let removed = out.count(StepStatus::Removed);
    let skipped = out.count(StepStatus::Skipped);
    let failed = out.count(StepStatus::Failed);
    let mut body = format!(
        "Removed {removed} item{} (estimated {}).",
        if removed == 1 { "" } else { "s" },
        human_bytes(out.estimated_bytes)
    );
    if skipped + failed > 0 {
        body.push_str(&format!(" Skipped {skipped}, failed {failed}."));
    }
    Note {
        summary: format!("Freed {}", human_bytes(out.measured_bytes)),
        body,
        review: false,
        action: None,
    }
}

/// The notification after a Stop / End process / Delete from the tray.
pub fn vm_note(out: &VmOutcome) -> Note {
    let summary = match (out.all_done(), out.action) {
        (true, VmAction::Stop) => format!("Stopped {}", out.target),
        (true, VmAction::Delete) => format!("Deleted {}", out.target),
        (true, VmAction::Reap) => format!("Ended {}", out.target),
        (false, _) => format!("Not done: {} {}", out.command, out.target),
    };
    let mut lines: Vec<String> = out
        .steps
        .iter()
        .map(|s| format!("{}: {}", s.summary, s.message))
        .collect();
    lines.extend(out.journal_error.clone());
    Note {
        summary,
        body: lines.join("\n"),
        review: false,
        action: None,
    }
}

/// The one notification after an automatic run ("Freed 3.2 GB: 12 items").
pub fn auto_note(out: &ReclaimOutcome) -> Note {
    let removed = out.count(StepStatus::Removed);
    let not_done = out.count(StepStatus::Skipped) + out.count(StepStatus::Failed);
    let mut body = "Automatic clean-up by your policy. Details in History.".to_string();
    if not_done > 0 {
        body = format!("{not_done} not done (see History). {body}");
    }
    Note {
        summary: format!(
            "Freed {}: {removed} item{}",
            human_bytes(out.measured_bytes),
            if removed == 1 { "" } else { "s" }
        ),
        body,
        review: true,
        action: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Platform, Product, Scope, Totals, VmProcess, SCAN_SCHEMA};

    fn proc_(pid: u32, orphan: bool, scope: Scope) -> VmProcess {
        VmProcess {
            pid,
            start_time: 77,
            product: Product::Smolvm,
            shape: crate::model::ProcShape::SmolvmBootVm,
            owner: Some("box".into()),
            orphan,
            scope,
            held_deleted_bytes: 2_000_000_000,
            uid: 0,
            comm: String::new(),
            argv: vec![],
            paths: vec![],
            reason: String::new(),
            fds_readable: true,
            kept: None,
        }
    }

    fn report(processes: Vec<VmProcess>) -> ScanReport {
        ScanReport {
            schema: SCAN_SCHEMA.into(),
            home: "/h".into(),
            platform: Platform::Linux,
            products: vec![],
            findings: vec![],
            machines: vec![],
            processes,
            totals: Totals::default(),
            scanned_at: 0,
            scanned_at_ns: 0,
            duration_ms: 0,
            compact: Default::default(),
        }
    }

    #[test]
    fn a_new_orphan_is_announced_once_with_its_size() {
        let mut w = OrphanWatch::default();
        let r = report(vec![proc_(10, true, Scope::ThisHome)]);
        let n = w.observe(&r, 1000).unwrap();
        assert_eq!(n.summary, "Orphaned VM still running");
        assert!(n.body.contains("2.0 GB"), "{}", n.body);
        assert!(n.review);
        assert_eq!(w.observe(&r, 5000), None, "second scan does not repeat it");
    }

    /// Hazard (issue 39, item 7): an orphan with no name was announced as "smol-machines
    /// smolvm pid 3089 (pid 3089)". A notification says "pid 3089" once, named or not.
    #[test]
    fn a_notification_says_the_pid_once() {
        for owner in [None, Some("box")] {
            let mut p = proc_(3089, true, Scope::ThisHome);
            p.owner = owner.map(String::from);
            p.held_deleted_bytes = 0;
            let n = OrphanWatch::default()
                .observe(&report(vec![p]), 1000)
                .unwrap();
            let text = format!("{}\n{}", n.summary, n.body);
            assert_eq!(text.matches("3089").count(), 1, "{text}");
            assert!(text.contains("(pid 3089)"), "{text}");
        }
    }

    #[test]
    fn owned_and_foreign_processes_are_not_announced() {
        let mut w = OrphanWatch::default();
        let r = report(vec![
            proc_(10, false, Scope::ThisHome),
            proc_(11, true, Scope::Foreign),
        ]);
        assert_eq!(w.observe(&r, 1000), None);
    }

    #[test]
    fn orphans_found_within_the_gap_wait_for_the_next_allowed_scan() {
        let mut w = OrphanWatch::default();
        assert!(w
            .observe(&report(vec![proc_(10, true, Scope::ThisHome)]), 1000)
            .is_some());
        let both = report(vec![
            proc_(10, true, Scope::ThisHome),
            proc_(12, true, Scope::ThisHome),
        ]);
        assert_eq!(w.observe(&both, 1010), None, "rate limited");
        let n = w.observe(&both, 1000 + MIN_GAP_SECS).unwrap();
        assert!(n.body.contains("pid 12"));
        assert!(!n.body.contains("pid 10"), "only the new one: {}", n.body);
    }

    #[test]
    fn a_held_back_orphan_is_due_when_the_gap_ends() {
        let mut w = OrphanWatch::default();
        let one = report(vec![proc_(10, true, Scope::ThisHome)]);
        assert!(w.observe(&one, 1000).is_some());
        assert_eq!(w.held_back_until(&one, 1001), None, "nothing waits");
        let both = report(vec![
            proc_(10, true, Scope::ThisHome),
            proc_(12, true, Scope::ThisHome),
        ]);
        assert_eq!(w.observe(&both, 1010), None);
        assert_eq!(w.held_back_until(&both, 1010), Some(1000 + MIN_GAP_SECS));
        assert!(w.observe(&both, 1000 + MIN_GAP_SECS).is_some());
        assert_eq!(w.held_back_until(&both, 1000 + MIN_GAP_SECS), None);
    }

    #[test]
    fn orphaned_files_do_not_delay_news_of_an_orphaned_vm() {
        let mut w = OrphanWatch::default();
        let mut r = report(vec![]);
        r.findings.push(crate::model::Finding {
            apparent_bytes: 5,
            allocated_bytes: 5,
            ..crate::model::Finding::new(
                "f1",
                Product::Celesto,
                crate::model::FindingKind::CelestoOrphanDisk,
                "/h/d.qcow2",
                Verdict::Reclaimable,
            )
        });
        assert!(w
            .observe(&r, 1000)
            .unwrap()
            .summary
            .starts_with("Orphaned VM disk"));
        r.processes.push(proc_(10, true, Scope::ThisHome));
        let n = w.observe(&r, 1001).unwrap();
        assert_eq!(n.summary, "Orphaned VM still running");
        assert!(!n.body.contains("orphaned file"), "{}", n.body);
    }

    #[test]
    fn an_orphan_that_goes_away_and_comes_back_is_new_again() {
        let mut w = OrphanWatch::default();
        let r = report(vec![proc_(10, true, Scope::ThisHome)]);
        assert!(w.observe(&r, 0).is_some());
        assert_eq!(w.observe(&report(vec![]), 1000), None);
        assert!(w.observe(&r, 2000).is_some());
    }
}
