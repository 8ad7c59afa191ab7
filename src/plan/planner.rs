//! The planner: a scan and a selection in, the actions of a plan out, with what was selected
//! but refused and why. Named-target resolution (`smolvm:NAME`, `celesto:ID`), refusals,
//! cascades, items taken whole and backing files after their disks are decided here once, for
//! every surface; `super` holds the plan as data (actions, their sentences, the estimate, the
//! content hash).

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use super::{strictly_inside, Action, Plan, PlannedAction, Selection, SkippedAtPlan};
use crate::kind::Removal;
use crate::model::{
    find_machine, FileIdentity, Finding, Machine, NotReapable, Platform, ScanReport, Verdict,
    VmProcess,
};

/// What the planner made of a selection.
pub(super) struct Planned {
    /// Every root directory the scan resolved.
    pub(super) roots: BTreeSet<PathBuf>,
    /// The actions, in the order they run.
    pub(super) actions: Vec<PlannedAction>,
    /// Their one estimate ([`Plan::estimate_of`]).
    pub(super) estimated: u64,
    /// Everything selected that is not planned, with why.
    pub(super) skipped: Vec<SkippedAtPlan>,
}

/// Plan `selection` from `report`. Pure: touches no file system.
pub(super) fn plan(report: &ScanReport, selection: &Selection) -> Planned {
    let roots = plan_roots(report);
    let mut p = Planner {
        report,
        selection,
        skipped: Vec::new(),
        reaps: Vec::new(),
        machine_actions: Vec::new(),
        deleted_machine_dirs: Vec::new(),
    };
    p.plan_reaps();
    p.plan_stops();
    p.plan_machine_deletes();
    // Grouped once: a selection takes whole items, and a plan deletes them whole.
    let items = crate::items::Items::of(&report.findings);
    let chosen = p.choose_findings(&roots, &items);
    let kept = p.once_each(chosen);
    let kept = p.with_their_disks(kept);
    let kept = p.whole_items(&items, kept);
    let (actions, estimated) = p.actions(kept);
    Planned {
        roots,
        actions,
        estimated,
        skipped: p.skipped,
    }
}

/// `m`, unless a keep rule keeps it (then why it is left alone).
fn not_kept(m: &Machine) -> Result<&Machine, String> {
    crate::keep::machine_kept(m, &[]).map_or(Ok(m), Err)
}

/// Whether stopping `m` would do anything; if not, what is true instead and what would help.
fn stoppable<'r>(report: &ScanReport, m: &'r Machine) -> Result<&'r Machine, String> {
    if m.alive || matches!(m.state.as_str(), "paused" | "pausing") {
        return Ok(m);
    }
    let state = if m.effective_state.is_empty() {
        &m.state
    } else {
        &m.effective_state
    };
    let mut why = format!(
        "{} {} was not running ({state}); nothing to stop",
        m.product.noun(),
        m.name
    );
    for p in report
        .processes
        .iter()
        .filter(|p| p.product == m.product && p.owner.as_deref() == Some(m.name.as_str()))
    {
        if p.is_this_homes_orphan() {
            why.push_str(&format!(
                ". Its VM process {} is not the machine's: end it with `smolsweep reap {}`",
                p.pid, p.pid
            ));
        } else {
            why.push_str(&format!(". VM process {} is starting it right now", p.pid));
        }
    }
    Err(why)
}

/// Every machine branched from `m`, directly or through another branch, in the same inventory
/// (smolvm's `golden`): `machine delete --cascade` removes them with it.
pub(crate) fn branch_descendants<'r>(report: &'r ScanReport, m: &Machine) -> Vec<&'r Machine> {
    let mut out: Vec<&Machine> = Vec::new();
    let mut parents = vec![m.name.clone()];
    while let Some(parent) = parents.pop() {
        for c in report.machines.iter().filter(|c| {
            c.product == m.product
                && c.db == m.db
                && c.branched_from.as_deref() == Some(parent.as_str())
                && c.name != m.name
        }) {
            if !out.iter().any(|o| o.name == c.name) {
                out.push(c);
                parents.push(c.name.clone());
            }
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

fn needs_cascade(children: &[&Machine]) -> String {
    format!(
        "machines are branched from it ({}), and deleting it deletes them too; it is deleted only when cascade is chosen",
        names(children)
    )
}

fn names(ms: &[&Machine]) -> String {
    ms.iter()
        .map(|m| m.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Roots: every named product root plus every finding's root.
fn plan_roots(report: &ScanReport) -> BTreeSet<PathBuf> {
    let mut roots: BTreeSet<PathBuf> = BTreeSet::new();
    for p in &report.products {
        roots.extend(p.roots.values().cloned());
    }
    roots.extend(report.findings.iter().filter_map(|f| f.root.clone()));
    roots
}

/// What [`Plan::from_scan_at`] gathers while it decides, refusals in the order they are made.
struct Planner<'r> {
    report: &'r ScanReport,
    selection: &'r Selection,
    skipped: Vec<SkippedAtPlan>,
    reaps: Vec<&'r VmProcess>,
    machine_actions: Vec<PlannedAction>,
    /// Directories removed with a machine: nothing inside them is deleted on its own.
    deleted_machine_dirs: Vec<PathBuf>,
}

impl<'r> Planner<'r> {
    fn skip(&mut self, id: &str, why: String) {
        self.skipped.push(SkippedAtPlan { id: id.into(), why });
    }

    /// The orphaned VM processes of this HOME that were asked for, by pid or as orphans.
    fn plan_reaps(&mut self) {
        let mut reap_pids: BTreeSet<u32> = BTreeSet::new();
        for p in &self.report.processes {
            let asked = self.selection.reap_pids.contains(&p.pid);
            if !(asked || self.selection.reap_orphans && p.orphan) {
                continue;
            }
            match reapable(p, asked) {
                Err(Some(why)) => self.skip(&format!("pid:{}", p.pid), why),
                Err(None) => {}
                Ok(()) => {
                    if reap_pids.insert(p.pid) {
                        self.reaps.push(p);
                    }
                }
            }
        }
        for pid in &self.selection.reap_pids {
            if !self.report.processes.iter().any(|p| p.pid == *pid) {
                self.skip(
                    &format!("pid:{pid}"),
                    "no such VM process in the scan".into(),
                );
            }
        }
    }

    /// Machines to stop, each once (also when two names given name one machine, as `web` and
    /// `smolvm:web`), if stopping would do anything.
    fn plan_stops(&mut self) {
        let report = self.report;
        let mut seen = BTreeSet::new();
        let mut planned = BTreeSet::new();
        for name in &self.selection.stop_machines {
            if !seen.insert(name) {
                continue;
            }
            match find_machine(report, name)
                .and_then(not_kept)
                .and_then(|m| stoppable(report, m))
            {
                Err(why) => self.skip(&format!("machine:{name}"), why),
                Ok(m) if !planned.insert((m.product, &m.name)) => {}
                Ok(m) => self
                    .machine_actions
                    .push(PlannedAction::of(Action::StopMachine {
                        product: m.product,
                        name: m.name.clone(),
                        pid: m.pid,
                        pid_start_time: m.pid_start_time,
                        state: if m.effective_state.is_empty() {
                            m.state.clone()
                        } else {
                            m.effective_state.clone()
                        },
                    })),
            }
        }
    }

    /// Machines to delete, each once (also when two names given name one machine); one with
    /// branches only with cascade.
    fn plan_machine_deletes(&mut self) {
        let report = self.report;
        let mut seen = BTreeSet::new();
        let mut planned = BTreeSet::new();
        for name in &self.selection.delete_machines {
            if !seen.insert(name) {
                continue;
            }
            let m = match find_machine(report, name).and_then(not_kept) {
                Err(why) => {
                    self.skip(&format!("machine:{name}"), why);
                    continue;
                }
                Ok(m) if !planned.insert((m.product, &m.name)) => continue,
                Ok(m) => m,
            };
            let Some(children) = self.cascade_or_skip(&format!("machine:{name}"), m) else {
                continue;
            };
            self.deleted_machine_dirs.extend(m.dir.clone());
            self.deleted_machine_dirs
                .extend(children.iter().filter_map(|c| c.dir.clone()));
            self.machine_actions
                .push(PlannedAction::of(Action::DeleteMachine {
                    product: m.product,
                    name: m.name.clone(),
                    cascade: !children.is_empty(),
                    children: children.iter().map(|c| c.name.clone()).collect(),
                    bytes: m.allocated_bytes,
                    ephemeral: false,
                    pid: m.pid.filter(|_| m.alive),
                    pid_start_time: m.pid_start_time.filter(|_| m.alive),
                }));
        }
    }

    /// The machines branched from `m`, or `None` (refused under `id`) when there are some and
    /// cascade was not chosen.
    fn cascade_or_skip(&mut self, id: &str, m: &Machine) -> Option<Vec<&'r Machine>> {
        let children = branch_descendants(self.report, m);
        if let Some(c) = children.iter().find(|c| c.kept.is_some()) {
            let rule = c.kept.as_deref().unwrap_or_default();
            let why = format!(
                "deleting it would delete {}, which is branched from it and {}",
                c.name,
                crate::keep::kept_why(rule)
            );
            self.skip(id, why);
            return None;
        }
        if !children.is_empty() && !self.selection.cascade {
            self.skip(id, needs_cascade(&children));
            return None;
        }
        Some(children)
    }

    /// The selected findings that may be deleted as paths; the rest are refused or planned as
    /// machine deletes.
    fn choose_findings(
        &mut self,
        roots: &BTreeSet<PathBuf>,
        items: &crate::items::Items,
    ) -> Vec<&'r Finding> {
        let report = self.report;
        for id in &self.selection.ids {
            if report.finding(id).is_none() {
                self.skip(id, "no finding with this id in the scan".into());
            }
        }
        let with_item = self.chosen_with_their_items(items);
        let mut chosen: Vec<&Finding> = Vec::new();
        for f in &report.findings {
            if !self.selected(f) && !with_item.contains(f.id.as_str()) {
                continue;
            }
            if let Some(why) = refusal(report, roots, f) {
                self.skip(&f.id, why);
            } else if !self.through_product_cli(f) {
                chosen.push(f);
            }
        }
        chosen
    }

    /// The members of the items whose principal (a disk, a machine directory) was chosen by id:
    /// a selection in the window or in `browse` takes an item whole.
    fn chosen_with_their_items(&self, items: &crate::items::Items) -> BTreeSet<&'r str> {
        let findings = &self.report.findings;
        let mut out = BTreeSet::new();
        for (i, f) in findings.iter().enumerate() {
            if items.role(i) == Some(crate::items::Role::Principal)
                && self.selection.ids.iter().any(|id| id == &f.id)
            {
                out.extend(items.members(i).iter().map(|&j| findings[j].id.as_str()));
            }
        }
        out
    }

    /// Asked for by id, or by its verdict and opt-in class.
    fn selected(&self, f: &Finding) -> bool {
        let explicit = self.selection.ids.iter().any(|i| i == &f.id);
        let by_class = match f.verdict {
            Verdict::Reclaimable => self.selection.all_reclaimable,
            Verdict::OptIn => f
                .opt_in_class
                .is_some_and(|c| self.selection.include.contains(&c)),
            Verdict::Protected | Verdict::Unknown => false,
        };
        explicit || by_class
    }

    /// A dead ephemeral machine is removed the way smolvm removes it: record and directory
    /// together, through `machine delete --force`. Whether `f` was taken care of so (planned,
    /// or refused for want of cascade).
    fn through_product_cli(&mut self, f: &Finding) -> bool {
        if f.kind.removal() != Removal::ProductCli {
            return false;
        }
        let Some(name) = &f.owner else {
            return false;
        };
        let report = self.report;
        let children = match report
            .machines
            .iter()
            .find(|m| m.product == f.product && &m.name == name)
        {
            Some(m) if m.kept.is_some() => {
                let why = crate::keep::kept_why(m.kept.as_deref().unwrap_or_default());
                self.skip(&f.id, format!("its machine {} is {why}", m.name));
                return true;
            }
            Some(m) => match self.cascade_or_skip(&f.id, m) {
                Some(children) => children,
                None => return true,
            },
            None => Vec::new(),
        };
        self.deleted_machine_dirs.push(f.path.clone());
        self.deleted_machine_dirs
            .extend(children.iter().filter_map(|c| c.dir.clone()));
        self.machine_actions
            .push(PlannedAction::of(Action::DeleteMachine {
                product: f.product,
                name: name.clone(),
                cascade: !children.is_empty(),
                children: children.iter().map(|c| c.name.clone()).collect(),
                bytes: f.allocated_bytes,
                ephemeral: true,
                pid: None,
                pid_start_time: None,
            }));
        true
    }

    /// De-duplicate (B11) and drop paths covered by another planned directory or a deleted
    /// machine.
    fn once_each(&mut self, mut chosen: Vec<&'r Finding>) -> Vec<&'r Finding> {
        chosen.sort_by(|a, b| a.path.cmp(&b.path));
        let mut kept: Vec<&Finding> = Vec::new();
        for f in chosen {
            if let Some(prev) = kept.iter().find(|k| k.path == f.path) {
                if prev.id != f.id {
                    let why = format!("same path as {} (planned once)", prev.id);
                    self.skip(&f.id, why);
                }
                continue;
            }
            let why = if let Some(parent) = kept
                .iter()
                .find(|k| k.is_dir && f.path.starts_with(&k.path))
            {
                format!(
                    "inside {}, which is deleted as a whole",
                    parent.path.display()
                )
            } else if let Some(d) = self
                .deleted_machine_dirs
                .iter()
                .find(|d| f.path.starts_with(d))
            {
                format!("removed with its machine ({})", d.display())
            } else {
                kept.push(f);
                continue;
            };
            self.skip(&f.id, why);
        }
        kept
    }

    /// Backing files only together with every disk whose chain runs through them, and after
    /// those disks (a link's `needed_by` holds every disk above it, so fewer comes first).
    fn with_their_disks(&mut self, kept: Vec<&'r Finding>) -> Vec<&'r Finding> {
        let planned = |d: &Path, kept: &[&Finding], dirs: &[PathBuf]| {
            kept.iter()
                .any(|k| d == k.path || (k.is_dir && d.starts_with(&k.path)))
                || dirs.iter().any(|m| d.starts_with(m))
        };
        let mut out: Vec<&Finding> = Vec::new();
        for f in &kept {
            match f
                .needed_by
                .iter()
                .find(|d| !planned(d, &kept, &self.deleted_machine_dirs))
            {
                Some(d) => {
                    let why = format!(
                        "the disk {} backs onto it and is not deleted with it; deleting it alone would break that disk",
                        crate::pathser::shown(d)
                    );
                    self.skip(&f.id, why);
                }
                None => out.push(f),
            }
        }
        // A backing file left out leaves out what depends on it only through the disks above
        // it, which `needed_by` already names: one pass is enough.
        out.sort_by_key(|f| f.needed_by.len());
        out
    }

    /// Items go whole, or only the members whose removal changes nothing that stays: a disk
    /// (or its marker) is not deleted while a member judged by it stays (kept, in use, not
    /// selected); a companion, log or lock deleted while its disk stays says so (`beside`).
    /// Members that others are judged by go last: companions and logs, then the disk, then its
    /// marker (and backing files after every disk above them, as before).
    fn whole_items(
        &mut self,
        items: &crate::items::Items,
        kept: Vec<&'r Finding>,
    ) -> Vec<(&'r Finding, Option<&'r Finding>)> {
        let report = self.report;
        let findings = &report.findings;
        let index: HashMap<&str, usize> = findings
            .iter()
            .enumerate()
            .map(|(i, f)| (f.id.as_str(), i))
            .collect();
        let at = |f: &Finding| index.get(f.id.as_str()).copied();
        let mut going: BTreeSet<&str> = kept.iter().map(|f| f.id.as_str()).collect();
        // Leaving one out can leave out another (a marker whose disk stays): until nothing changes.
        loop {
            let before = going.len();
            for f in &kept {
                let Some(i) = at(f).filter(|_| going.contains(f.id.as_str())) else {
                    continue;
                };
                let goes = |m: &Finding| going.contains(m.id.as_str());
                if let Some(s) = items.survivor_of(findings, i, &goes) {
                    let why = crate::items::survivor_why(f, s);
                    going.remove(f.id.as_str());
                    self.skip(&f.id, why);
                }
            }
            if going.len() == before {
                break;
            }
        }
        let rank = |f: &Finding| match at(f).and_then(|i| items.role(i)) {
            Some(crate::items::Role::Principal) => 1,
            Some(crate::items::Role::Needs) => 2,
            _ => 0,
        };
        let mut out: Vec<&Finding> = kept
            .into_iter()
            .filter(|f| going.contains(f.id.as_str()))
            .collect();
        out.sort_by_key(|f| (f.needed_by.len(), rank(f)));
        out.into_iter()
            .map(|f| {
                let principal = at(f).and_then(|i| items.principal_of(findings, i));
                (f, principal.filter(|p| !going.contains(p.id.as_str())))
            })
            .collect()
    }

    /// Reap actions, then machine actions, detaches and deletes (stable-sorted by order), and
    /// what they free ([`Plan::estimate_of`]).
    fn actions(&mut self, kept: Vec<(&Finding, Option<&Finding>)>) -> (Vec<PlannedAction>, u64) {
        let mut actions: Vec<PlannedAction> = self.reaps.iter().map(|p| reap_action(p)).collect();
        actions.append(&mut self.machine_actions);
        let mut detach: BTreeSet<PathBuf> = BTreeSet::new();
        let mut deletes: Vec<PlannedAction> = Vec::new();
        for (f, beside) in kept {
            let Some((_, action)) = delete_action(f, &self.reaps, beside) else {
                continue;
            };
            if self.report.platform == Platform::Macos {
                detach.extend(
                    f.mounts_inside
                        .iter()
                        .filter(|m| m.file_name().is_some_and(|n| n == "layers-cs"))
                        .cloned(),
                );
            }
            deletes.push(action);
        }
        actions.extend(
            detach
                .into_iter()
                .map(|m| PlannedAction::of(Action::Detach { mountpoint: m })),
        );
        actions.extend(deletes);
        // Stable sort keeps the order within each group.
        actions.sort_by_key(|a| a.action.order());
        let estimated = Plan::estimate_of(&actions);
        (actions, estimated)
    }
}

/// Whether an asked-for process may be reaped: `Err(Some(why))` when it is refused,
/// `Err(None)` when it is passed over silently (another HOME's, not asked for by pid).
fn reapable(p: &VmProcess, asked: bool) -> Result<(), Option<String>> {
    match p.reap_refusal(&[], false) {
        None => Ok(()),
        Some(NotReapable::OtherHome) => {
            Err(asked.then(|| "belongs to another HOME; never signalled".into()))
        }
        Some(NotReapable::Kept(rule)) => Err(Some(crate::keep::kept_why(&rule))),
        Some(NotReapable::Owned(Some(o))) => Err(Some(format!(
            "the VM of {o}, which its record owns: stop it with `smolsweep stop {o}`"
        ))),
        Some(NotReapable::Owned(None)) => Err(Some(
            "owned by a recorded machine; stop that machine instead".into(),
        )),
    }
}

/// Why a selected finding is never deleted, if it is not.
fn refusal(report: &ScanReport, roots: &BTreeSet<PathBuf>, f: &Finding) -> Option<String> {
    match f.verdict {
        Verdict::Protected => return Some(format!("protected, never deleted: {}", f.reason)),
        Verdict::Unknown => {
            return Some(format!(
                "could not be verified, never deleted: {}",
                f.reason
            ))
        }
        _ => {}
    }
    let Some(root) = &f.root else {
        return Some("the scan recorded no root for it".into());
    };
    if f.identity.is_none() {
        return Some("the scan could not record its identity".into());
    }
    if root == Path::new("/") || report.home.starts_with(root) {
        return Some("its root is /, HOME or contains HOME; never deleted from".into());
    }
    if !strictly_inside(&f.path, root) {
        return Some(format!("not strictly inside its root {}", root.display()));
    }
    if roots.contains(&f.path) || f.path == report.home || report.home.starts_with(&f.path) {
        return Some("a root directory or HOME itself is never deleted".into());
    }
    None
}

fn reap_action(p: &VmProcess) -> PlannedAction {
    PlannedAction::of(Action::SignalProcess {
        pid: p.pid,
        start_time: p.start_time,
        product: p.product,
        owner: p.owner.clone(),
        uid: p.uid,
        shape: p.shape.as_str().to_string(),
        uninstall: false,
        held_bytes: p.held_deleted_bytes,
    })
}

/// The delete of a kept finding (with its identity), after the reaps of the processes whose
/// paths overlap it. `None` without an identity or a root (`refusal` has ruled that out).
fn delete_action(
    f: &Finding,
    reaps: &[&VmProcess],
    beside: Option<&Finding>,
) -> Option<(FileIdentity, PlannedAction)> {
    let (Some(identity), Some(root)) = (f.identity, f.root.clone()) else {
        return None;
    };
    let after_reap: Vec<u32> = reaps
        .iter()
        .filter(|p| {
            p.paths
                .iter()
                .any(|q| q.starts_with(&f.path) || f.path.starts_with(q))
        })
        .map(|p| p.pid)
        .collect();
    let action = PlannedAction::of(Action::DeletePath {
        finding_id: f.id.clone(),
        product: f.product,
        kind: f.kind,
        path: f.path.clone(),
        root,
        identity,
        is_dir: f.is_dir,
        expected_bytes: f.allocated_bytes,
        after_reap,
        mounts_inside: f.mounts_inside.clone(),
        owner_recheck: f.owner_recheck.clone().map(Box::new),
        beside: beside.map(|b| b.path.clone()),
    });
    Some((identity, action))
}
