//! Re-judging each action at the moment it runs, by the scanner's own rules on fresh facts.
//!
//! A plan records what the user confirmed; this module answers, immediately before each action,
//! "is this target still what was confirmed?" — whatever the plan file says:
//!
//! * the product roots are re-derived from the environment **now**; a path not strictly inside
//!   a root resolved now is refused;
//! * a path must still be found by a fresh scan as the same kind of leftover, reclaimable or
//!   opt-in, and no process may use it or anything under it (the one "in use" rule,
//!   [`ProcIndex::in_use`], on a process table no older than [`PROC_REFRESH`]);
//! * a process must still be the same process (pid + start time + uid), a VM process of this
//!   HOME by the scanner's shape rules, and still an orphan;
//! * a machine must still exist (its product's CLI is never called for a name that does not),
//!   with exactly the branches the user was shown.
//!
//! Facts are gathered once (a full scan) before the first action, again after any action that
//! changes processes, machines or mounts, and the process table is re-read whenever it is older
//! than [`PROC_REFRESH`].

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use crate::model::{Machine, NotReapable, ScanReport, Verdict};
use crate::plan::{strictly_inside, Action, Plan};
use crate::scan::{ProcIndex, ScanOptions};

/// The oldest process table a path deletion is judged on.
pub(crate) const PROC_REFRESH: Duration = Duration::from_millis(250);

/// A scan younger than this, made by the same process right before executing, counts as fresh.
pub(crate) const SEED_FRESH: Duration = Duration::from_secs(2);

/// Asked by the executor before each action.
pub trait Judge {
    /// `Ok(())` when `action` still judges as the user confirmed it; `Err(why)` otherwise.
    fn still_confirmed(&mut self, plan: &Plan, action: &Action) -> Result<(), String>;
    /// An action changed processes, machines or mounts: gather the facts anew before the next.
    fn changed(&mut self);
    /// A dry run would have removed `path` (nothing was): judge the later actions of the same
    /// dry run as if it were gone, as a real run would find it, so the preview says what the
    /// run will do (a base disk is deleted after the overlay that needed it).
    fn assume_removed(&mut self, _path: &Path) {}
    /// Forget every [`assume_removed`](Judge::assume_removed): a run starts from the facts.
    fn clear_assumed(&mut self) {}
}

/// The real judge: the scanner over the current environment.
pub struct Rejudge {
    opts: ScanOptions,
    facts: Option<Facts>,
    procs: Option<(Instant, ProcIndex)>,
    list: fn() -> Vec<crate::procs::RawProcess>,
    /// The uninstall's removal roots in this environment (derived from it alone).
    removal_roots: Option<Vec<PathBuf>>,
    /// Paths a dry run removed earlier in the same plan ([`Judge::assume_removed`]).
    dry_removed: Vec<PathBuf>,
    /// The keep file: a rule saved during the run applies from the next action.
    keeps: crate::keep::KeepWatch,
}

struct Facts {
    report: ScanReport,
    /// The report's findings grouped into items.
    items: crate::items::Items,
    roots: BTreeSet<PathBuf>,
    /// Index into `report.findings` by path.
    by_path: std::collections::HashMap<PathBuf, usize>,
}

impl Facts {
    fn new(report: ScanReport) -> Self {
        let mut roots: BTreeSet<PathBuf> = BTreeSet::new();
        for p in &report.products {
            roots.extend(p.roots.values().cloned());
        }
        roots.extend(report.findings.iter().filter_map(|f| f.root.clone()));
        let by_path = report
            .findings
            .iter()
            .enumerate()
            .map(|(i, f)| (f.path.clone(), i))
            .collect();
        Facts {
            items: crate::items::Items::of(&report.findings),
            report,
            roots,
            by_path,
        }
    }
}

impl Rejudge {
    /// A path delete still judges as confirmed: the scan made now agrees (counting what this dry
    /// run removed earlier as gone) and no process uses the path.
    fn judge_delete(
        &mut self,
        home: &Path,
        path: &Path,
        (root, kind): (&Path, &crate::kind::FindingKind),
        later: &[&Path],
    ) -> Result<(), String> {
        let gone = std::mem::take(&mut self.dry_removed);
        let judged = judge_path(self.facts(), home, path, (root, kind), &gone)
            .and_then(|()| no_survivor_demoted(self.facts(), path, later, &gone));
        self.dry_removed = gone;
        judged?;
        self.not_in_use(path)
    }

    /// Judge on facts gathered from `opts` (the environment of the moment of execution).
    pub fn new(opts: ScanOptions) -> Self {
        let keeps = crate::keep::KeepWatch::new(crate::keep::path_for(&opts.env, opts.platform));
        Rejudge {
            keeps,
            opts,
            facts: None,
            procs: None,
            list: crate::procs::list,
            removal_roots: None,
            dry_removed: Vec::new(),
        }
    }

    /// The current environment of this process.
    pub fn from_env() -> anyhow::Result<Self> {
        Ok(Self::new(ScanOptions::from_env()?))
    }

    /// Start from `report` when it was made from the same environment less than
    /// [`SEED_FRESH`] ago (`prune` scans, plans and executes in one go); otherwise it is ignored.
    pub fn seeded(mut self, report: &ScanReport, taken: Instant) -> Self {
        if taken.elapsed() < SEED_FRESH && report.home == self.opts.env.home {
            self.facts = Some(Facts::new(report.clone()));
        }
        self
    }

    fn facts(&mut self) -> &Facts {
        let Rejudge {
            opts,
            facts,
            procs,
            list,
            ..
        } = self;
        facts.get_or_insert_with(|| {
            opts.now = SystemTime::now();
            let raw = list();
            let report = crate::scan::scan_with(opts, raw.clone());
            *procs = Some((Instant::now(), ProcIndex::build(raw, opts.env.euid)));
            Facts::new(report)
        })
    }

    fn removal_roots(&mut self) -> Vec<PathBuf> {
        let Rejudge {
            opts,
            removal_roots,
            ..
        } = self;
        removal_roots
            .get_or_insert_with(|| crate::roots::removal_roots(&opts.env, opts.platform))
            .clone()
    }

    /// The one "in use" rule on a process table no older than [`PROC_REFRESH`].
    fn not_in_use(&mut self, path: &Path) -> Result<(), String> {
        match self.users_of(path) {
            None => Ok(()),
            Some(who) => Err(format!("not deleted: {who}")),
        }
    }

    /// Who uses `path` by the one "in use" rule, in words ("process 42 (qemu) holds it open"),
    /// or `None`.
    fn users_of(&mut self, path: &Path) -> Option<String> {
        let devino = crate::fsread::lstat(path).map(|m| {
            use std::os::unix::fs::MetadataExt;
            (m.dev(), m.ino())
        });
        let users = self.procs().users(path, devino);
        (!users.is_empty()).then(|| {
            crate::scan::in_use_sentence(&users)
                .trim_start_matches("But ")
                .to_string()
        })
    }

    fn procs(&mut self) -> &ProcIndex {
        if self
            .procs
            .as_ref()
            .is_some_and(|(at, _)| at.elapsed() >= PROC_REFRESH)
        {
            self.procs = None;
        }
        let Rejudge {
            opts, procs, list, ..
        } = self;
        &procs
            .get_or_insert_with(|| (Instant::now(), ProcIndex::build(list(), opts.env.euid)))
            .1
    }
}

impl Rejudge {
    /// A machine delete: the machine and every branch it takes are not kept, and its branches
    /// are still the ones the plan showed.
    fn judge_delete_machine(
        &mut self,
        plan: &Plan,
        (product, name): (crate::model::Product, &str),
        children: &[String],
    ) -> Result<(), String> {
        let r = &self.facts().report;
        let m = machine(r, product, name)?;
        not_kept(m, &plan.keep_overrides)?;
        let branches = crate::plan::branch_descendants(r, m);
        for c in &branches {
            not_kept(c, &plan.keep_overrides)?;
        }
        let now: BTreeSet<String> = branches.iter().map(|c| c.name.clone()).collect();
        let shown: BTreeSet<String> = children.iter().cloned().collect();
        if now == shown {
            Ok(())
        } else {
            Err(format!(
                "the machines branched from '{name}' are not the ones shown ({}); not deleted",
                now.into_iter().collect::<Vec<_>>().join(", ")
            ))
        }
    }
}

/// A product directory removed if empty is still one of this environment's removal roots.
fn product_dir_now(roots: &[PathBuf], path: &Path) -> Result<(), String> {
    if roots.iter().any(|r| r == path) {
        Ok(())
    } else {
        Err(format!(
            "{} is not a product directory in this environment now; not removed",
            path.display()
        ))
    }
}

/// A launcher is removed only inside HOME, and only when its install prefix is removed too.
fn launcher_prefix_now(
    roots: &[PathBuf],
    home: &Path,
    link: &Path,
    prefix: &Path,
) -> Result<(), String> {
    if !strictly_inside(link, home) {
        Err("the launcher is not inside HOME; not removed".into())
    } else if !roots
        .iter()
        .any(|r| r == prefix || strictly_inside(prefix, r))
    {
        Err(format!(
            "{} is not an install prefix removed in this environment now; the launcher is kept",
            prefix.display()
        ))
    } else {
        Ok(())
    }
}

impl Judge for Rejudge {
    fn still_confirmed(&mut self, plan: &Plan, action: &Action) -> Result<(), String> {
        self.keeps
            .refresh(self.facts.as_mut().map(|f| &mut f.report));
        let home = self.opts.env.home.clone();
        if plan.home != home {
            return Err(format!(
                "the plan was made for HOME {}, this is {}",
                plan.home.display(),
                home.display()
            ));
        }
        match action {
            Action::DeletePath {
                path, root, kind, ..
            } => {
                let later = later_deletes(plan, action);
                self.judge_delete(&home, path, (root, kind), &later)
            }
            Action::SignalProcess {
                pid,
                start_time,
                uid,
                product,
                uninstall,
                ..
            } => judge_process(
                &self.facts().report,
                (*pid, *start_time, *uid, *product),
                *uninstall,
                &plan.keep_overrides,
            ),
            Action::StopMachine { product, name, .. } => {
                let m = machine(&self.facts().report, *product, name)?;
                not_kept(m, &plan.keep_overrides)
            }
            Action::DeleteMachine {
                product,
                name,
                children,
                ..
            } => self.judge_delete_machine(plan, (*product, name), children),
            Action::Detach { mountpoint } => judge_mount(self.facts(), mountpoint),
            Action::RemoveTree { path, root, .. } => {
                let roots = self.removal_roots();
                inside_removal_roots(&roots, &home, path, root)?;
                holds_nothing_kept(&self.facts().report, path, &plan.keep_overrides)?;
                self.not_in_use(path)
            }
            Action::RemoveDirIfEmpty { path, .. } => product_dir_now(&self.removal_roots(), path),
            Action::RemoveLauncher { link, prefix, .. } => {
                launcher_prefix_now(&self.removal_roots(), &home, link, prefix)
            }
            Action::RemovePathBlock { file } => {
                if strictly_inside(file, &home) {
                    Ok(())
                } else {
                    Err("the startup file is not inside HOME; not edited".into())
                }
            }
            Action::CompactDisk {
                product,
                path,
                identity,
                ..
            } => {
                super::compact::judge(
                    &self.facts().report,
                    &plan.keep_overrides,
                    (*product, path, identity),
                )?;
                match self.users_of(path) {
                    None => Ok(()),
                    Some(who) => Err(format!("not compacted: {who}")),
                }
            }
        }
    }

    fn assume_removed(&mut self, path: &Path) {
        self.dry_removed.push(path.to_path_buf());
    }

    fn clear_assumed(&mut self) {
        self.dry_removed.clear();
    }

    fn changed(&mut self) {
        self.facts = None;
        self.procs = None;
    }
}

/// A path is deleted only when a scan made now finds it, inside a root resolved now, as the same
/// kind of leftover, and judges it reclaimable or opt-in.
fn judge_path(
    facts: &Facts,
    home: &Path,
    path: &Path,
    (root, kind): (&Path, &crate::kind::FindingKind),
    dry_removed: &[PathBuf],
) -> Result<(), String> {
    if path == home || home.starts_with(path) || root == Path::new("/") {
        return Err("HOME, a directory holding it, or / is never deleted".into());
    }
    if !facts.roots.contains(root) {
        return Err(format!(
            "its root {} is not one this environment resolves now; not deleted",
            root.display()
        ));
    }
    if !strictly_inside(path, root) || facts.roots.contains(path) {
        return Err(format!(
            "not strictly inside its root {}; not deleted",
            root.display()
        ));
    }
    if crate::fsread::lstat(path).is_none() {
        return Ok(()); // the delete reports it as already gone
    }
    let Some(f) = facts.by_path.get(path).map(|i| &facts.report.findings[*i]) else {
        return Err("a scan made now does not find it as a leftover; not deleted".into());
    };
    if f.root.as_deref() != Some(root) {
        return Err("a scan made now places it under another root; not deleted".into());
    }
    match f.verdict {
        Verdict::Protected => Err(format!("protected now: {}", f.reason)),
        Verdict::Unknown => Err(format!("cannot be verified now: {}", f.reason)),
        Verdict::Reclaimable | Verdict::OptIn if f.kind != *kind => Err(format!(
            "it is no longer what was confirmed ({}); a scan made now finds: {}",
            kind.label(),
            f.reason
        )),
        Verdict::Reclaimable | Verdict::OptIn => {
            match crate::chains::still_needed(f, &|d| dry_removed.iter().any(|g| d.starts_with(g)))
            {
                Some(why) => Err(why),
                None => Ok(()),
            }
        }
    }
}

/// The paths `plan` deletes after `action` (what still goes with it, as the run stands now).
fn later_deletes<'p>(plan: &'p Plan, action: &Action) -> Vec<&'p Path> {
    let at = plan
        .actions
        .iter()
        .position(|a| std::ptr::eq(&a.action, action) || a.action == *action);
    plan.actions[at.map_or(plan.actions.len(), |i| i + 1)..]
        .iter()
        .filter_map(|a| match &a.action {
            Action::DeletePath { path, .. } => Some(path.as_path()),
            _ => None,
        })
        .collect()
}

/// No run makes a survivor more deletable: a disk (or its marker) is deleted only while every
/// member of its item judged by it is gone, or deleted later in the same run (`later`; for a
/// dry run, `dry_removed` counts as gone). A companion, log or lock may always go alone.
fn no_survivor_demoted(
    facts: &Facts,
    path: &Path,
    later: &[&Path],
    dry_removed: &[PathBuf],
) -> Result<(), String> {
    let Some(&i) = facts.by_path.get(path) else {
        return Ok(());
    };
    if crate::fsread::lstat(path).is_none() {
        return Ok(()); // the delete reports it as already gone
    }
    let findings = &facts.report.findings;
    let goes = |m: &crate::model::Finding| {
        later.contains(&m.path.as_path())
            || dry_removed.iter().any(|g| m.path.starts_with(g))
            || crate::fsread::lstat(&m.path).is_none()
    };
    match facts.items.survivor_of(findings, i, &goes) {
        Some(s) => Err(crate::items::survivor_why(&findings[i], s)),
        None => Ok(()),
    }
}

/// A process is signalled only when a scan made now finds it as the same process (pid, start
/// time, uid, product), a VM process of this HOME by the shape rules, and an orphan (for an
/// uninstall: any VM process of this HOME).
fn judge_process(
    r: &ScanReport,
    (pid, start_time, uid, product): (u32, u64, u32, crate::model::Product),
    uninstall: bool,
    overrides: &[String],
) -> Result<(), String> {
    if crate::exec::reap::ProcessRef::current(pid).is_none_or(|p| p.start_time != start_time) {
        return Err(format!("process {pid} has already exited"));
    }
    let Some(p) = r.processes.iter().find(|p| p.pid == pid) else {
        return Err(format!(
            "process {pid} is not a VM process now (gone, or not VMM-shaped); nothing signalled"
        ));
    };
    if p.start_time != start_time || p.uid != uid || p.product != product {
        return Err(format!(
            "process {pid} is another process than the one planned; nothing signalled"
        ));
    }
    match p.reap_refusal(overrides, uninstall) {
        None => {}
        Some(NotReapable::OtherHome) => {
            return Err(format!(
                "process {pid} is not this HOME's VM process now; nothing signalled"
            ))
        }
        Some(NotReapable::Kept(rule)) => {
            return Err(format!(
                "process {pid} is {}; nothing signalled",
                crate::keep::kept_why(&rule)
            ))
        }
        Some(NotReapable::Owned(owner)) => {
            let owner = owner.as_deref().unwrap_or("a recorded machine");
            return Err(format!(
                "process {pid} is no longer an orphan: it belongs to {owner} now; nothing signalled"
            ));
        }
    }
    Ok(())
}

fn machine<'r>(
    r: &'r ScanReport,
    product: crate::model::Product,
    name: &str,
) -> Result<&'r Machine, String> {
    r.machines
        .iter()
        .find(|m| m.product == product && m.name == name)
        .ok_or_else(|| {
            format!(
                "no {} machine '{name}' exists now; the name is not passed to the CLI (that would create state for it)",
                product.display_name()
            )
        })
}

/// A machine is stopped or deleted only while no keep rule keeps it (or the rule is one the
/// plan overrides explicitly).
fn not_kept(m: &Machine, overrides: &[String]) -> Result<(), String> {
    match crate::keep::machine_kept(m, overrides) {
        Some(why) => Err(format!("{why}; left alone")),
        None => Ok(()),
    }
}

/// A removal takes nothing a keep rule keeps: no kept finding and no kept machine's directory
/// inside it (or holding it), unless the plan overrides that rule explicitly.
fn holds_nothing_kept(r: &ScanReport, path: &Path, overrides: &[String]) -> Result<(), String> {
    let overlaps = |p: &Path| p.starts_with(path) || path.starts_with(p);
    let kept = r
        .findings
        .iter()
        .filter(|f| overlaps(&f.path))
        .filter_map(|f| Some((f.path.as_path(), f.kept.as_deref()?)))
        .chain(r.machines.iter().filter_map(|m| {
            // A machine's directory, or the inventory holding its record.
            let at = m.dir.iter().chain(&m.db).find(|d| overlaps(d))?;
            Some((at.as_path(), m.kept.as_deref()?))
        }))
        .find(|(_, rule)| !overrides.iter().any(|o| o == rule));
    match kept {
        Some((p, rule)) => Err(format!(
            "it holds {}, which is {}; not removed",
            crate::pathser::shown(p),
            crate::keep::kept_why(rule)
        )),
        None => Ok(()),
    }
}

/// An uninstall removes only a product root resolved now, or something inside one.
fn inside_removal_roots(
    roots: &[PathBuf],
    home: &Path,
    path: &Path,
    root: &Path,
) -> Result<(), String> {
    if path == home || home.starts_with(path) || root == Path::new("/") {
        return Err("HOME, a directory holding it, or / is never removed".into());
    }
    let root_ok = roots.iter().any(|r| r == root);
    let path_ok = path == root || strictly_inside(path, root);
    if root_ok && path_ok {
        Ok(())
    } else {
        Err(format!(
            "{} is not a product directory, nor inside one, in this environment now; not removed",
            path.display()
        ))
    }
}

/// Smolsweep detaches only macOS `layers-cs` disk images, inside a product root resolved now.
fn judge_mount(facts: &Facts, mountpoint: &Path) -> Result<(), String> {
    let inside = facts.roots.iter().any(|r| strictly_inside(mountpoint, r))
        || facts
            .report
            .products
            .iter()
            .flat_map(|p| p.roots.values())
            .any(|r| strictly_inside(mountpoint, r));
    if inside && mountpoint.file_name().is_some_and(|n| n == "layers-cs") {
        Ok(())
    } else {
        Err(format!(
            "{} is not a smolvm disk-image mount inside a product root resolved now; not detached",
            mountpoint.display()
        ))
    }
}
