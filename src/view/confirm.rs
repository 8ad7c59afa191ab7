//! What a plan will do, in words: its confirmation (headline, estimate, lines, what is not
//! planned), the closing and outcome lines, and the smallest command that frees a path or
//! ends a process.

use serde::Serialize;

use crate::model::*;
use crate::plan::{Action, Plan};

use super::*;

/// Bytes a plan is expected to free: the plan's one estimate ([`Plan::estimate_of`]), the
/// number the confirmation, the journal, the result JSON, the tray and the window all show.
pub fn estimate_bytes(plan: &Plan) -> u64 {
    plan.estimated_bytes
}

/// What a confirmation says, on every surface, for one plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Confirmation {
    /// "Delete 12 items (3.4 GB) and end 2 VM processes"
    pub headline: String,
    /// The estimate in bytes and in words.
    pub estimate_bytes: u64,
    /// `estimate_bytes` in words.
    pub estimate: String,
    /// One line per action, in the order they run.
    pub lines: Vec<String>,
    /// What was selected but will not be done, and why.
    pub not_planned: Vec<String>,
    /// The Reclaim button's label for it ([`reclaim_label`]): "Reclaim 2.0 MB…".
    pub reclaim_label: String,
    /// How it runs, under the lines ([`run_note`]).
    pub note: String,
}

/// What a confirmation says of how its plan runs: each action checked again as it runs, or
/// that nothing will (a plan with no action).
pub fn run_note(has_actions: bool) -> String {
    match has_actions {
        true => "Each action is checked again against the system as it is when it runs; nothing else is touched.".into(),
        false => "Nothing can be done, so nothing will run.".into(),
    }
}

/// The Reclaim button's label when nothing is reclaimable (or nothing is selected).
pub const RECLAIM: &str = "Reclaim…";

/// The label of a Reclaim button or menu item that frees about `bytes`: "Reclaim 2.0 MB…";
/// "Reclaim…" when nothing is reclaimable.
pub fn reclaim_label(bytes: Option<u64>) -> String {
    match bytes {
        None => RECLAIM.to_string(),
        Some(b) => format!("Reclaim {}…", human_bytes(b)),
    }
}

impl Confirmation {
    /// "Delete 1 item; about 2.0 MB to free." as one sentence (the plan line); a plan that
    /// frees nothing (a stop) says only what it does.
    pub fn sentence(&self) -> String {
        if self.estimate_bytes > 0 {
            format!("{}; about {} to free.", self.headline, self.estimate)
        } else {
            format!("{}.", self.headline)
        }
    }

    /// The question asked before it runs, without the question mark: "Delete 3 items and end
    /// 1 VM process, freeing about 2.0 MB".
    pub fn question(&self) -> String {
        freeing(&self.headline, self.estimate_bytes)
    }
}

/// What a plan does and what it frees, as one clause: "Delete 3 items, freeing about 2.0 MB"
/// (the words of every confirmation, the uninstall's included); nothing is said of bytes when
/// it frees none.
pub fn freeing(what: &str, bytes: u64) -> String {
    if bytes > 0 {
        format!("{what}, freeing about {}", human_bytes(bytes))
    } else {
        what.to_string()
    }
}

/// The one closing line of a run or dry run, on every surface: "Dry run: nothing changed;
/// it would free about 2.0 MB.", "3 done, 1 skipped, 0 failed. Freed 1.9 MB (measured; about
/// 2.0 MB estimated)." A run that frees nothing (a stop) names no bytes.
pub fn closing_line(r: &crate::record::ExecReport) -> String {
    if r.dry_run {
        return match r.estimated_bytes {
            0 => "Dry run: nothing changed.".to_string(),
            b => format!(
                "Dry run: nothing changed; it would free about {}.",
                bytes(b)
            ),
        };
    }
    let counts = format!(
        "{} done, {} skipped, {} failed",
        r.done().count(),
        r.skipped().count(),
        r.failed().count()
    );
    if r.estimated_bytes == 0 && r.freed_bytes == 0 {
        return format!("{counts}.");
    }
    format!(
        "{counts}. Freed {} (measured; about {} estimated).",
        bytes(r.freed_bytes),
        bytes(r.estimated_bytes)
    )
}

/// One action's result as a run lists it: `done`, `would`, `skipped` or `FAILED`, then the
/// action's summary (and why, for a skip or a failure; what it freed, for a measured delete).
pub fn outcome_line(summary: &str, outcome: &crate::record::Outcome, freed_bytes: u64) -> String {
    use crate::record::Outcome;
    match outcome {
        Outcome::Done { .. } if freed_bytes > 0 => format!(
            "done     {summary}: freed {} (measured)",
            bytes(freed_bytes)
        ),
        Outcome::Done { .. } => format!("done     {summary}"),
        Outcome::WouldDo { .. } => format!("would    {summary}"),
        Outcome::Skipped { why, .. } => {
            format!("skipped  {summary}: {}", crate::pathser::escape_text(why))
        }
        Outcome::Failed { error } => {
            format!("FAILED   {summary}: {}", crate::pathser::escape_text(error))
        }
    }
}

/// What a person reads for the id of something a plan left out: `celesto:x` for the key
/// `machine:celesto:x`, "pid 12" for `pid:12`, the disk's path for `disk:PATH`, a finding id as
/// it is.
pub fn skipped_target(id: &str) -> String {
    if let Some(m) = id.strip_prefix("machine:") {
        return m.to_string();
    }
    if let Some(d) = id.strip_prefix("disk:") {
        return d.to_string();
    }
    match id.strip_prefix("pid:") {
        Some(pid) => format!("pid {pid}"),
        None => id.to_string(),
    }
}

/// The heading of what a plan left out, on every surface (the CLI, the window's and the native
/// dialogs, `browse`).
pub const NOT_PLANNED: &str = "Not planned:";

/// One thing a plan left out, as every surface lists it under [`NOT_PLANNED`]: what it is (its
/// path when known, else [`skipped_target`]) and why: "/…/overlay.raw: cannot tell what
/// compacting would give back (not an ext4 file system)".
pub fn not_planned_line(id: &str, why: &str, path: Option<&std::path::Path>) -> String {
    let what = match path {
        Some(p) => crate::pathser::shown(p),
        None => skipped_target(id),
    };
    format!("{what}: {}", crate::pathser::escape_text(why))
}

/// "1 sandbox", "2 machines": the VMs of each product that `which` picks from the plan's
/// actions, each in its product's one noun.
pub(super) fn vms(plan: &Plan, which: impl Fn(&Action) -> Option<Product>) -> Vec<String> {
    Product::ALL
        .iter()
        .filter_map(|p| {
            let n = plan
                .actions
                .iter()
                .filter(|a| which(&a.action) == Some(*p))
                .count();
            (n > 0).then(|| p.count(n))
        })
        .collect()
}

/// The confirmation of `plan`.
pub fn confirmation(plan: &Plan) -> Confirmation {
    let count = |f: fn(&Action) -> bool| plan.actions.iter().filter(|a| f(&a.action)).count();
    let deletes = count(|a| matches!(a, Action::DeletePath { .. }));
    let machines = vms(plan, |a| match a {
        Action::DeleteMachine { product, .. } => Some(*product),
        _ => None,
    });
    let stops = vms(plan, |a| match a {
        Action::StopMachine { product, .. } => Some(*product),
        _ => None,
    });
    let ends = count(|a| matches!(a, Action::SignalProcess { .. }));
    let detaches = count(|a| matches!(a, Action::Detach { .. }));
    let compacts = count(|a| matches!(a, Action::CompactDisk { .. }));
    let removes = count(|a| {
        matches!(
            a,
            Action::RemoveTree { .. }
                | Action::RemoveDirIfEmpty { .. }
                | Action::RemoveLauncher { .. }
                | Action::RemovePathBlock { .. }
        )
    });
    let est = estimate_bytes(plan);
    let mut parts = Vec::new();
    let mut deleted: Vec<String> = Vec::new();
    if deletes > 0 {
        deleted.push(plural(deletes, "item", "items"));
    }
    deleted.extend(machines);
    if !deleted.is_empty() {
        parts.push(format!("delete {}", deleted.join(" and ")));
    }
    if !stops.is_empty() {
        parts.push(format!("stop {}", stops.join(" and ")));
    }
    if ends > 0 {
        parts.push(format!(
            "end {}",
            plural(ends, "VM process", "VM processes")
        ));
    }
    if detaches > 0 {
        parts.push(format!(
            "detach {}",
            plural(detaches, "disk image", "disk images")
        ));
    }
    if compacts > 0 {
        parts.push(format!("compact {}", plural(compacts, "disk", "disks")));
    }
    if removes > 0 {
        parts.push(format!(
            "remove {} of the installation",
            plural(removes, "entry", "entries")
        ));
    }
    let headline = match parts.len() {
        0 => "Nothing to do".to_string(),
        _ => {
            let last = parts.pop().unwrap_or_default();
            let s = if parts.is_empty() {
                last
            } else {
                format!("{} and {last}", parts.join(", "))
            };
            let mut c = s.chars();
            c.next()
                .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
                .unwrap_or_default()
        }
    };
    Confirmation {
        headline,
        estimate_bytes: est,
        estimate: bytes(est),
        reclaim_label: reclaim_label(Some(est)),
        note: run_note(!plan.actions.is_empty()),
        lines: plan.actions.iter().map(action_line).collect(),
        not_planned: plan
            .skipped_at_plan
            .iter()
            .map(|s| not_planned_line(&s.id, &s.why, None))
            .collect(),
    }
}

/// The command that would remove what is left at `path`, judged by the scan `r`: one that
/// will accept it, or the command to run by hand when no Smolsweep command would. Always a fix,
/// never the scan's reason (issue 39, item 7). `is_dir`: whether `path` is a directory, for
/// the command to run by hand.
pub(crate) fn fix_for_path(r: &ScanReport, path: &Path, is_dir: bool) -> String {
    let by_hand = |dir: bool, why: &str| {
        format!(
            "rm {}-- {} ({why})",
            if dir { "-r " } else { "" },
            shell_word(&crate::pathser::shown(path))
        )
    };
    let Some(f) = r.findings.iter().find(|f| f.path == path) else {
        return by_hand(is_dir, "by hand: the scan does not judge it");
    };
    match f.verdict {
        Verdict::Reclaimable => "smolsweep prune".into(),
        Verdict::OptIn => {
            let flag = f.opt_in_class.map(|c| class_label(c).1).unwrap_or("");
            format!("smolsweep prune {flag}").trim_end().to_string()
        }
        // What a keep rule keeps goes once the rule does.
        _ if f.kept.is_some() => format!(
            "smolsweep keep remove {}, then smolsweep prune",
            f.kept.as_deref().unwrap_or_default()
        ),
        // A machine's or sandbox's own storage goes with it: `delete` (which stops a running
        // one first) removes it, `stop` would not (issue 31).
        _ if owning_machine(r, f).is_some() => match owning_machine(r, f) {
            Some(m) => format!("smolsweep delete {}:{}", m.product.as_str(), m.name),
            None => String::new(),
        },
        // The scan's own "in use" judgement of it, not a second one.
        _ if !f.used_by.is_empty() => f
            .used_by
            .iter()
            .map(|pid| fix_for_process(r, *pid))
            .collect::<Vec<_>>()
            .join("; "),
        // Named by a record Smolsweep does not list as a machine (a browser session): its
        // product removes the record, then the scan frees what is left.
        Verdict::Protected if f.owner.is_some() => format!(
            "remove '{}' with {}'s own CLI, then smolsweep prune",
            crate::pathser::escape_text(f.owner.as_deref().unwrap_or_default()),
            f.product.display_name()
        ),
        Verdict::Protected => "smolsweep prune, once the scan no longer protects it".into(),
        Verdict::Unknown => by_hand(
            f.is_dir,
            "by hand, once you know it is not needed: Smolsweep cannot verify it",
        ),
    }
}

/// `s` as one word of a shell command: as it is when it needs no quoting, else single-quoted.
pub(crate) fn shell_word(s: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+:@%,".contains(c);
    match !s.is_empty() && s.chars().all(plain) {
        true => s.to_string(),
        false => format!("'{}'", s.replace('\'', r"'\''")),
    }
}

/// The recorded machine or sandbox of `f`'s product that `f` belongs to.
pub(super) fn owning_machine<'r>(r: &'r ScanReport, f: &Finding) -> Option<&'r Machine> {
    let owner = f.owner.as_ref()?;
    r.machines
        .iter()
        .find(|m| m.product == f.product && &m.name == owner)
}

/// The command that would end VM process `pid`, judged by the scan `r`.
pub(crate) fn fix_for_process(r: &ScanReport, pid: u32) -> String {
    match r.processes.iter().find(|p| p.pid == pid) {
        Some(p) if p.is_this_homes_orphan() => format!("smolsweep reap {pid}"),
        // Whether it runs as another user or as this one under another HOME, the one thing
        // that is true: only a Smolsweep run for its HOME acts on it (issue 31).
        Some(p) if p.scope != Scope::ThisHome => format!(
            "not this HOME's: Smolsweep acts on it only when run for the HOME it belongs to \
(as its user, uid {})",
            p.uid
        ),
        Some(p) => match &p.owner {
            Some(o) => format!("smolsweep stop {}:{o}", p.product.as_str()),
            None => format!("kill {pid} (Smolsweep cannot prove whose VM it is)"),
        },
        None => format!("kill {pid} (it is not a VM process the scan knows)"),
    }
}
