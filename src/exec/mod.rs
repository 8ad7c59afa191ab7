//! Executing a confirmed plan: each action re-checked at the moment it is acted on, every outcome
//! journaled as it completes, freed space measured per file system.
//!
//! Paths are deleted here (through [`delete`]); stopping and deleting machines, reaping processes
//! and detaching mounts go through an [`ActionRunner`].
//!
//! Every surface runs a plan through [`run`] (the journal opened, the re-judge and the runner
//! built for the environment of the run). Underneath, a run is made one way:
//! [`ExecContext::confirmed`] with the [`Confirmed`] token of the plan the user saw (or
//! [`ExecContext::dry_run`]), then the journal, progress and origin added to it, then
//! [`execute`]. A dry run cannot reach the delete primitive: [`delete::delete_path`] needs a
//! [`Confirmed`] token, and only a confirmed context carries one; a token made for another plan
//! runs nothing.

mod compact;
mod confirm;
pub(crate) mod delete;
pub(crate) mod detach;
mod freed;
pub(crate) mod judge;
pub(crate) mod machines;
pub(crate) mod ownership;
pub(crate) mod rcfile;
pub(crate) mod reap;
pub(crate) mod remove;
mod road;
pub(crate) mod runner;
pub(crate) mod teardown;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::journal::Journal;
use crate::model::Product;
use crate::plan::{Action, Plan, PlanError, PlannedAction};
pub use crate::record::{
    ActionRecord, ExecReport, FsMeasure, Origin, Outcome, ProgressEvent, RESULT_SCHEMA,
};
pub use confirm::{Confirmed, How};
use delete::{delete_outcome, IdentityCheck, Target};
pub use judge::{Judge, Rejudge};
pub use reap::{ProcessRef, ReapOptions};
pub use road::{run, Road, RunError};
pub use runner::RealRunner;

/// How many times this thread has entered the delete primitive: lets a caller (and the tests)
/// prove that a dry run, a refusal or a cancelled confirmation deleted nothing.
pub fn delete_calls_on_this_thread() -> u64 {
    delete::primitive_calls_on_this_thread()
}

/// Whether actions are carried out.
#[derive(Debug)]
enum RunMode {
    /// Report what would happen; read-only.
    DryRun,
    /// Carry the plan out; the token proves it was confirmed.
    Execute(Confirmed),
}

impl RunMode {
    fn is_dry_run(&self) -> bool {
        matches!(self, RunMode::DryRun)
    }

    /// Refuses a token made for another plan than `plan` as it is now (a dry run needs none).
    fn may_run(&self, plan: &Plan) -> Result<(), ExecError> {
        match self {
            RunMode::Execute(token) if !token.is_for(plan) => Err(ExecError::WrongConfirmation {
                how: token.how(),
                confirmed: token.digest().into(),
                plan: plan.id.clone(),
            }),
            _ => Ok(()),
        }
    }
}

/// Carries out the actions that are not path deletions. The real implementation lives in
/// `crate::exec::{machines, reap, detach}`; tests use recording stand-ins.
pub trait ActionRunner {
    /// Stop machine `name` of `product` through its CLI (the recorded process is re-checked first).
    fn stop_machine(
        &self,
        product: Product,
        name: &str,
        pid: Option<u32>,
        pid_start_time: Option<u64>,
    ) -> Outcome;
    /// `process`: the recorded VM process (pid, start time), passed on only while it is still
    /// that process.
    fn delete_machine(
        &self,
        product: Product,
        name: &str,
        cascade: bool,
        children: &[String],
        process: Option<(u32, u64)>,
    ) -> Outcome;
    /// SIGTERM, wait, SIGKILL, confirm death; `Done` only once the process is proven gone.
    fn reap(
        &self,
        pid: u32,
        start_time: u64,
        product: Product,
        owner: Option<&str>,
        uid: u32,
    ) -> Outcome;
    /// Detach the disk-image mount at `mountpoint` (macOS `hdiutil detach`).
    fn detach(&self, mountpoint: &Path) -> Outcome;
}

/// A runner for builds where machine, process and mount actions are not wired in: every such
/// action fails with a clear message, nothing is touched.
#[derive(Debug, Default, Clone, Copy)]
pub struct UnwiredRunner;

impl ActionRunner for UnwiredRunner {
    fn stop_machine(&self, _: Product, name: &str, _: Option<u32>, _: Option<u64>) -> Outcome {
        Outcome::failed(format!(
            "stopping machines is not available in this build ({name})"
        ))
    }
    fn delete_machine(
        &self,
        _: Product,
        name: &str,
        _: bool,
        _: &[String],
        _: Option<(u32, u64)>,
    ) -> Outcome {
        Outcome::failed(format!(
            "deleting machines is not available in this build ({name})"
        ))
    }
    fn reap(&self, pid: u32, _: u64, _: Product, _: Option<&str>, _: u32) -> Outcome {
        Outcome::failed(format!(
            "reaping is not available in this build (pid {pid})"
        ))
    }
    fn detach(&self, m: &Path) -> Outcome {
        Outcome::failed(format!(
            "detaching mounts is not available in this build ({})",
            m.display()
        ))
    }
}

/// Everything [`execute`] needs besides the plan, made only by [`ExecContext::confirmed`] or
/// [`ExecContext::dry_run`]; a journal, progress events and the origin are added to it.
pub(crate) struct ExecContext<'a> {
    mode: RunMode,
    /// Appended to as the plan runs (never in a dry run).
    journal: Option<&'a mut Journal>,
    progress: Option<&'a dyn Fn(&ProgressEvent)>,
    runner: &'a dyn ActionRunner,
    /// Asked before each action whether it still judges as confirmed ([`Rejudge`] in every
    /// product surface).
    judge: &'a mut dyn Judge,
    origin: Origin,
}

impl<'a> ExecContext<'a> {
    /// Carry out the plan `confirmed` was made for (any other plan is refused whole), without a
    /// journal or progress events until they are added.
    pub(crate) fn confirmed(
        confirmed: Confirmed,
        runner: &'a dyn ActionRunner,
        judge: &'a mut dyn Judge,
    ) -> Self {
        ExecContext {
            mode: RunMode::Execute(confirmed),
            journal: None,
            progress: None,
            runner,
            judge,
            origin: Origin::new("cli", "apply"),
        }
    }

    /// A dry run: read-only checks, nothing journaled.
    pub(crate) fn dry_run(runner: &'a dyn ActionRunner, judge: &'a mut dyn Judge) -> Self {
        ExecContext {
            mode: RunMode::DryRun,
            journal: None,
            progress: None,
            runner,
            judge,
            origin: Origin::new("cli", "dry run"),
        }
    }

    /// Journal the run in `journal` (a dry run writes nothing to it).
    pub(crate) fn journal(self, journal: &'a mut Journal) -> Self {
        ExecContext {
            journal: Some(journal),
            ..self
        }
    }

    /// Tell `listen` as each action starts and finishes.
    pub(crate) fn progress(self, listen: &'a dyn Fn(&ProgressEvent)) -> Self {
        ExecContext {
            progress: Some(listen),
            ..self
        }
    }

    /// Which surface and command asked (recorded in the journal).
    pub(crate) fn origin(self, origin: Origin) -> Self {
        ExecContext { origin, ..self }
    }
}

/// Why a plan was not run at all.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// The plan itself is refused (schema, size, an action outside every root).
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// The confirmation was made for another plan than the one given.
    #[error("the confirmation ({how}) was given for plan {confirmed}, not for plan {plan}: nothing was done")]
    WrongConfirmation {
        /// How that confirmation was given.
        how: How,
        /// Hash of the plan that was confirmed.
        confirmed: String,
        /// Hash of the plan given.
        plan: String,
    },
    /// The journal could not be written before the first action, so nothing ran.
    #[error("the journal could not be written, so nothing was done: {0}")]
    Journal(std::io::Error),
}

/// Run `plan`. Each path is re-checked against its recorded identity when it is acted on.
pub(crate) fn execute(plan: &Plan, ctx: ExecContext<'_>) -> Result<ExecReport, ExecError> {
    plan.verify()?;
    let ExecContext {
        mode,
        journal,
        progress,
        runner,
        judge,
        origin,
    } = ctx;
    mode.may_run(plan)?;
    let dry_run = mode.is_dry_run();
    let before = if dry_run { Vec::new() } else { measure(plan) };
    let mut run = Run {
        plan,
        mode,
        journal,
        progress,
        runner,
        judge,
        reaped: BTreeSet::new(),
        detached: BTreeSet::new(),
        journal_broken: None,
    };
    if !dry_run {
        if let Some(j) = run.journal.as_deref_mut() {
            j.plan_started(plan, &origin).map_err(ExecError::Journal)?;
        }
    }
    let mut records = Vec::with_capacity(plan.actions.len());
    // What a dry run assumes removed holds within that dry run only; a real run judges facts.
    run.judge.clear_assumed();
    for (index, pa) in plan.actions.iter().enumerate() {
        records.push(run.step(index, pa));
    }
    run.judge.clear_assumed();
    Ok(run.finish(before, records))
}

/// What [`execute`] carries from one action to the next.
struct Run<'p, 'a> {
    plan: &'p Plan,
    mode: RunMode,
    journal: Option<&'a mut Journal>,
    progress: Option<&'a dyn Fn(&ProgressEvent)>,
    runner: &'a dyn ActionRunner,
    judge: &'a mut dyn Judge,
    /// Pids of processes ended so far.
    reaped: BTreeSet<u32>,
    /// Mount points detached so far.
    detached: BTreeSet<PathBuf>,
    /// Why the journal could not be written, once it could not (nothing more is attempted).
    journal_broken: Option<String>,
}

impl Run<'_, '_> {
    fn dry_run(&self) -> bool {
        self.mode.is_dry_run()
    }

    /// Carries out (or dry-runs) action `index` of the plan and journals it, with its progress
    /// events around it.
    fn step(&mut self, index: usize, pa: &PlannedAction) -> ActionRecord {
        let total = self.plan.actions.len();
        if let Some(p) = self.progress {
            p(&ProgressEvent::Started {
                index,
                total,
                summary: pa.summary.clone(),
            });
        }
        let (outcome, freed) = self.outcome(&pa.action);
        self.note_changes(&pa.action, &outcome);
        let record = ActionRecord {
            index,
            summary: pa.summary.clone(),
            action: pa.action.clone(),
            outcome,
            freed_bytes: freed,
        };
        self.journal_action(&record);
        if let Some(p) = self.progress {
            p(&ProgressEvent::Finished {
                index,
                total,
                summary: record.summary.clone(),
                outcome: record.outcome.clone(),
                freed_bytes: record.freed_bytes,
            });
        }
        record
    }

    /// What became of one action, and the bytes it freed: skipped once the journal broke or when
    /// it no longer judges as confirmed, otherwise dry-run or carried out.
    fn outcome(&mut self, action: &Action) -> (Outcome, u64) {
        if let Some(e) = &self.journal_broken {
            let o = Outcome::skipped(format!(
                "not attempted: the journal could not be written ({e})"
            ));
            return (o, 0);
        }
        if let Err(why) = self.judge.still_confirmed(self.plan, action) {
            return (Outcome::skipped(why), 0);
        }
        match &self.mode {
            RunMode::DryRun => {
                let o = dry_outcome(self.plan, action);
                if let (Outcome::WouldDo { .. }, Action::DeletePath { path, .. })
                | (Outcome::WouldDo { .. }, Action::RemoveTree { path, .. }) = (&o, action)
                {
                    self.judge.assume_removed(path);
                }
                (o, 0)
            }
            RunMode::Execute(token) => {
                let before = freed::before(self.plan, action);
                let o = run_action(
                    self.plan,
                    action,
                    token,
                    self.runner,
                    (&self.reaped, &self.detached),
                );
                let freed = freed::after(before, &o);
                (o, freed)
            }
        }
    }

    /// Remembers ended processes and detached mounts, and tells the judge when processes,
    /// machines or mounts changed (the next action is judged on new facts).
    fn note_changes(&mut self, action: &Action, outcome: &Outcome) {
        match (action, outcome) {
            (Action::SignalProcess { pid, .. }, Outcome::Done { .. }) => {
                self.reaped.insert(*pid);
            }
            (Action::Detach { mountpoint }, Outcome::Done { .. }) => {
                self.detached.insert(mountpoint.clone());
            }
            _ => {}
        }
        let changes_facts = matches!(
            action,
            Action::StopMachine { .. }
                | Action::DeleteMachine { .. }
                | Action::SignalProcess { .. }
                | Action::Detach { .. }
        );
        if !self.dry_run() && outcome.is_done() && changes_facts {
            self.judge.changed();
        }
    }

    /// Appends `record` to the journal (not in a dry run, nor once the journal broke); a failure
    /// is remembered as the journal breaking.
    fn journal_action(&mut self, record: &ActionRecord) {
        if self.dry_run() || self.journal_broken.is_some() {
            return;
        }
        if let Some(j) = self.journal.as_deref_mut() {
            if let Err(e) = j.action(&self.plan.id, record) {
                self.journal_broken = Some(e.to_string());
            }
        }
    }

    /// The report of the run, with the file systems' free space before and after, and the end
    /// of the run journaled when the journal still works.
    fn finish(self, before: Vec<(u64, PathBuf, u64)>, records: Vec<ActionRecord>) -> ExecReport {
        let dry_run = self.dry_run();
        let filesystems = if dry_run {
            Vec::new()
        } else {
            fs_measures(before, &measure(self.plan))
        };
        let freed_bytes = records.iter().map(|r| r.freed_bytes).sum();
        let estimated_bytes = match dry_run {
            true => would_free(self.plan, &records),
            false => self.plan.estimated_bytes,
        };
        let mut report = ExecReport {
            plan_id: self.plan.id.clone(),
            dry_run,
            records,
            estimated_bytes,
            freed_bytes,
            filesystems,
            journal_error: self.journal_broken,
        };
        if !dry_run && report.journal_error.is_none() {
            if let Some(j) = self.journal {
                // The actions are done and journaled; the record stays readable without the
                // summary, but the run reports the failure (exit code 1).
                if let Err(e) = j.plan_finished(&report) {
                    report.journal_error =
                        Some(format!("could not record the end of the run: {e}"));
                }
            }
        }
        report
    }
}

/// What a dry run would free: the plan's estimate ([`Plan::estimate_of`]) of the actions the
/// re-judge let through, so an item the dry run skips is not counted.
fn would_free(plan: &Plan, records: &[ActionRecord]) -> u64 {
    let would: Vec<PlannedAction> = records
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::WouldDo { .. }))
        .filter_map(|r| plan.actions.get(r.index).cloned())
        .collect();
    Plan::estimate_of(&would)
}

/// The file systems measured both before and after the run, with their free bytes then and now.
fn fs_measures(before: Vec<(u64, PathBuf, u64)>, after: &[(u64, PathBuf, u64)]) -> Vec<FsMeasure> {
    before
        .into_iter()
        .filter_map(|(dev, path, free_before)| {
            after
                .iter()
                .find(|(d, _, _)| *d == dev)
                .map(|(_, _, free_after)| FsMeasure {
                    dev,
                    path,
                    free_before,
                    free_after: *free_after,
                })
        })
        .collect()
}

fn target<'a>(plan: &'a Plan, a: &'a Action) -> Option<Target<'a>> {
    match a {
        Action::DeletePath {
            path,
            root,
            identity,
            after_reap,
            ..
        } => Some(Target {
            root,
            path,
            identity,
            check: if after_reap.is_empty() {
                IdentityCheck::Full
            } else {
                IdentityCheck::DevInoType
            },
            home: &plan.home,
            roots: &plan.roots,
            scanned_at_ns: if plan.scanned_at_ns > 0 {
                Some(plan.scanned_at_ns as i128)
            } else {
                (plan.scanned_at > 0).then(|| plan.scanned_at as i128 * 1_000_000_000)
            },
        }),
        _ => None,
    }
}

/// What a dry run reports: read-only checks only; never the delete primitive, never the runner.
fn dry_outcome(plan: &Plan, a: &Action) -> Outcome {
    match target(plan, a) {
        Some(t) => match delete::precheck(&t) {
            None => Outcome::WouldDo {
                detail: "would delete".into(),
            },
            Some(o) => delete_outcome(o),
        },
        None => Outcome::WouldDo {
            detail: format!("would {}", a.name().replace('_', " ")),
        },
    }
}

fn run_action(
    plan: &Plan,
    a: &Action,
    token: &Confirmed,
    runner: &dyn ActionRunner,
    (reaped, detached): (&BTreeSet<u32>, &BTreeSet<PathBuf>),
) -> Outcome {
    match a {
        Action::DeletePath { after_reap, .. } => {
            if let Some(pid) = after_reap.iter().find(|p| !reaped.contains(p)) {
                return Outcome::skipped(format!(
                    "held by process {pid}, which was not ended; not deleted"
                ));
            }
            if let Action::DeletePath {
                owner_recheck: Some(check),
                ..
            } = a
            {
                if let Err(why) = ownership::still_orphaned(check) {
                    return Outcome::skipped(why);
                }
            }
            match target(plan, a) {
                Some(t) => delete_outcome(delete::delete_path(token, &t)),
                None => Outcome::failed("not a path deletion"),
            }
        }
        Action::StopMachine {
            product,
            name,
            pid,
            pid_start_time,
            ..
        } => runner.stop_machine(*product, name, *pid, *pid_start_time),
        Action::DeleteMachine {
            product,
            name,
            cascade,
            children,
            pid,
            pid_start_time,
            ..
        } => runner.delete_machine(*product, name, *cascade, children, pid.zip(*pid_start_time)),
        Action::SignalProcess {
            pid,
            start_time,
            product,
            owner,
            uid,
            ..
        } => runner.reap(*pid, *start_time, *product, owner.as_deref(), *uid),
        Action::Detach { mountpoint } => runner.detach(mountpoint),
        Action::RemoveTree {
            path,
            root,
            identity,
            mounts_inside,
            ..
        } => match mounts_inside.iter().find(|m| !detached.contains(*m)) {
            Some(m) => Outcome::failed(format!(
                "not removed: {} is still mounted inside it",
                m.display()
            )),
            None => teardown::remove_tree(token, plan, path, root, identity.as_ref()),
        },
        Action::RemoveDirIfEmpty { path, .. } => teardown::remove_dir_if_empty(path, &plan.home),
        Action::RemoveLauncher { link, target, .. } => {
            teardown::remove_launcher(link, target, &plan.home)
        }
        Action::RemovePathBlock { file } => teardown::remove_path_block(file, &plan.home),
        Action::CompactDisk {
            product,
            path,
            format,
            identity,
            ..
        } => compact::run(*product, path, format, identity),
    }
}

/// Free bytes per file system holding one of the plan's delete roots: (dev, a path, free).
fn measure(plan: &Plan) -> Vec<(u64, PathBuf, u64)> {
    let mut seen: BTreeMap<u64, (PathBuf, u64)> = BTreeMap::new();
    for a in &plan.actions {
        // A whole root being removed is measured on the directory holding it.
        let root: Option<&Path> = match &a.action {
            Action::DeletePath { root, .. } => Some(root),
            Action::RemoveTree { root, path, .. } if root == path => path.parent(),
            Action::RemoveTree { root, .. } => Some(root),
            _ => None,
        };
        if let Some(root) = root {
            let Ok(st) = rustix::fs::stat(root) else {
                continue;
            };
            #[allow(clippy::unnecessary_cast)] // i32 on macOS
            let dev = st.st_dev as u64;
            if seen.contains_key(&dev) {
                continue;
            }
            if let Ok(v) = rustix::fs::statvfs(root) {
                seen.insert(
                    dev,
                    (root.to_path_buf(), v.f_bfree.saturating_mul(v.f_frsize)),
                );
            }
        }
    }
    seen.into_iter().map(|(d, (p, f))| (d, p, f)).collect()
}
