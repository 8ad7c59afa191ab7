//! Carrying out an [`UninstallPlan`], step by step, with every outcome recorded.
//!
//! Machine, process and mount steps and path removals run as shared plans through
//! [`crate::exec::execute`] (journaled like prune); the machine, process and mount actions are
//! carried out by a [`StepRunner`] ([`SystemRunner`]: the shared CLI drivers, pidfd reaping and
//! `hdiutil`), removals by the fd-based delete primitive. PATH-block edits use
//! [`super::pathblock::remove`] (backup first, only the smolvm lines go); a launcher symlink and
//! an emptied `~/.smolvm` / `~/.celesto` are removed with [`super::remove`].

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::env::EnvSnapshot;
use crate::exec::detach::DetachOutcome;
use crate::exec::machines::{CelestoCli, MachineOutcome, SmolvmCli};
use crate::exec::reap::{ProcessRef, ReapOptions, ReapOutcome};
use crate::model::Product;

use crate::exec::delete::Confirmed;
use crate::exec::{ActionRunner, ExecContext, Judge, Outcome, RunMode};
use crate::journal::Journal;
use crate::model::Platform;
use crate::plan::{Action, Plan, PlannedAction, PLAN_SCHEMA};

use super::plan::{Step, UninstallPlan};

/// The outcome of one step. Expected situations (already gone, unticked) are outcomes, not
/// errors.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum StepOutcome {
    Done { detail: String },
    Skipped { why: String },
    Failed { error: String },
}

impl StepOutcome {
    pub fn done(d: impl Into<String>) -> Self {
        StepOutcome::Done { detail: d.into() }
    }
    pub fn skipped(w: impl Into<String>) -> Self {
        StepOutcome::Skipped { why: w.into() }
    }
    pub fn failed(e: impl Into<String>) -> Self {
        StepOutcome::Failed { error: e.into() }
    }
    pub fn is_failed(&self) -> bool {
        matches!(self, StepOutcome::Failed { .. })
    }
}

/// One step and what happened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepRecord {
    pub index: usize,
    pub summary: String,
    #[serde(flatten)]
    pub step: Step,
    pub result: StepOutcome,
}

/// What a run did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunReport {
    pub records: Vec<StepRecord>,
    pub freed_bytes: u64,
    /// Startup-file backups written before PATH-block edits.
    pub backups: Vec<PathBuf>,
}

impl RunReport {
    pub fn any_failed(&self) -> bool {
        self.records.iter().any(|r| r.result.is_failed())
    }
}

/// Machine, process and mount actions.
pub trait StepRunner {
    fn stop_machine(
        &self,
        product: Product,
        name: &str,
        cli: &Path,
        db: &Path,
        process: Option<&ProcessRef>,
    ) -> StepOutcome;
    fn delete_machine(
        &self,
        product: Product,
        name: &str,
        cli: &Path,
        db: &Path,
        process: Option<&ProcessRef>,
    ) -> StepOutcome;
    fn reap(&self, target: &ProcessRef) -> StepOutcome;
    fn detach(&self, mountpoint: &Path) -> StepOutcome;
}

/// Run every checked step of `plan` (no journal).
pub fn run(
    plan: &UninstallPlan,
    runner: &dyn StepRunner,
    judge: &mut dyn Judge,
    now_secs: u64,
) -> RunReport {
    run_with(plan, runner, judge, now_secs, None)
}

/// Run every checked step of `plan`, journaling what the shared executor carries out.
///
/// Three phases, each in plan order:
/// 1. machines, surviving processes and mounts, as a shared [`Plan`] run by
///    [`crate::exec::execute`] (journaled) with `runner` behind it;
/// 2. removals, as a second shared [`Plan`] of `DeletePath` actions built right then: each path
///    must still be what the uninstall plan saw (device, inode, type), the identity recorded is
///    the one found now, and the fd-based delete primitive re-checks it at deletion time. A path
///    holding a mount whose detach failed is not removed;
/// 3. what is not a deletion: empty-directory removal, launchers, PATH-block edits
///    ([`super::pathblock::remove`], backup first).
pub fn run_with(
    plan: &UninstallPlan,
    runner: &dyn StepRunner,
    judge: &mut dyn Judge,
    now_secs: u64,
    mut journal: Option<&mut Journal>,
) -> RunReport {
    let home = &plan.home;
    let mut report = RunReport::default();
    let mut results: Vec<Option<StepOutcome>> = vec![None; plan.steps.len()];
    let mut still_mounted: Vec<PathBuf> = Vec::new();
    for (i, ps) in plan.steps.iter().enumerate() {
        if !ps.checked {
            if let Step::Detach { mountpoint } = &ps.step {
                still_mounted.push(mountpoint.clone());
            }
            results[i] = Some(StepOutcome::skipped("unticked"));
        }
    }

    // Phase 1.
    let mut p1: Vec<(usize, PlannedAction)> = Vec::new();
    for (i, ps) in plan.steps.iter().enumerate().filter(|(_, s)| s.checked) {
        let action = match &ps.step {
            Step::StopMachine {
                product,
                name,
                process,
                ..
            } => Action::StopMachine {
                product: *product,
                name: name.clone(),
                pid: process.map(|p| p.pid),
                pid_start_time: process.map(|p| p.start_time),
                state: String::new(),
            },
            Step::DeleteMachine { product, name, .. } => Action::DeleteMachine {
                product: *product,
                name: name.clone(),
                cascade: false,
                children: Vec::new(),
                bytes: ps.bytes,
                ephemeral: false,
            },
            Step::Reap {
                product,
                pid,
                start_time,
                uid,
            } => Action::SignalProcess {
                pid: *pid,
                start_time: *start_time,
                product: *product,
                owner: None,
                uid: *uid,
                shape: String::new(),
                uninstall: true,
            },
            Step::Detach { mountpoint } => Action::Detach {
                mountpoint: mountpoint.clone(),
            },
            _ => continue,
        };
        p1.push((
            i,
            PlannedAction {
                action,
                summary: ps.summary.clone(),
            },
        ));
    }
    let adapter = Adapter {
        plan,
        inner: runner,
    };
    for (i, o) in execute_shared(
        plan,
        &p1,
        vec![],
        0,
        &adapter,
        judge,
        journal.as_deref_mut(),
    )
    .0
    {
        if let (Step::Detach { mountpoint }, true) = (&plan.steps[i].step, o.is_failed()) {
            still_mounted.push(mountpoint.clone());
        }
        results[i] = Some(o);
    }

    // Phase 2.
    let mut p2: Vec<(usize, PlannedAction)> = Vec::new();
    let mut roots: Vec<PathBuf> = Vec::new();
    for (i, ps) in plan.steps.iter().enumerate().filter(|(_, s)| s.checked) {
        let Step::RemovePath {
            product,
            path,
            root,
            identity,
        } = &ps.step
        else {
            continue;
        };
        if let Some(m) = still_mounted.iter().find(|m| m.starts_with(path)) {
            results[i] = Some(StepOutcome::failed(format!(
                "not removed: {} is still mounted inside it",
                m.display()
            )));
            continue;
        }
        let Ok(now) = crate::exec::delete::identity_of(path) else {
            results[i] = Some(StepOutcome::skipped("already gone"));
            continue;
        };
        if let Some(was) = identity {
            if (was.dev, was.ino, was.file_type) != (now.dev, now.ino, now.file_type) {
                results[i] = Some(StepOutcome::skipped(
                    "something else is at this path than when the plan was made; left alone",
                ));
                continue;
            }
        }
        // The primitive deletes strictly inside a root: a whole product root is bounded by the
        // directory that holds it.
        let bound = if path == root {
            match path.parent() {
                Some(p) => p.to_path_buf(),
                None => {
                    results[i] = Some(StepOutcome::failed("no parent directory"));
                    continue;
                }
            }
        } else {
            root.clone()
        };
        if !roots.contains(&bound) {
            roots.push(bound.clone());
        }
        #[allow(clippy::unnecessary_cast)] // `mode_t` is u16 on macOS
        let dir_type = libc::S_IFDIR as u32;
        let kind = format!("{}.uninstall", product.as_str());
        p2.push((
            i,
            PlannedAction {
                action: Action::DeletePath {
                    finding_id: crate::model::finding_id(*product, &kind, path),
                    product: *product,
                    kind,
                    path: path.clone(),
                    root: bound,
                    identity: now,
                    is_dir: now.file_type == dir_type,
                    expected_bytes: ps.bytes,
                    after_reap: Vec::new(),
                    mounts_inside: Vec::new(),
                    owner_recheck: None,
                },
                summary: ps.summary.clone(),
            },
        ));
    }
    // Anything changed inside a directory after this instant (rounded up to the next second,
    // the plan's resolution) is left in place.
    let scanned_at = now_secs_real() + 1;
    let (outcomes, freed) = execute_shared(plan, &p2, roots, scanned_at, &adapter, judge, journal);
    report.freed_bytes += freed;
    for (i, o) in outcomes {
        results[i] = Some(o);
    }

    // Phase 3.
    for (i, ps) in plan.steps.iter().enumerate() {
        if results[i].is_some() {
            continue;
        }
        let blocked = match &ps.step {
            Step::RemoveDirIfEmpty { path, .. } => {
                still_mounted.iter().find(|m| m.starts_with(path)).cloned()
            }
            _ => None,
        };
        let o = if let Some(m) = blocked {
            StepOutcome::failed(format!(
                "not removed: {} is still mounted inside it",
                m.display()
            ))
        } else {
            match &ps.step {
                Step::RemoveDirIfEmpty { path, .. } => {
                    match super::remove::remove_dir_if_empty(path, home) {
                        Ok(true) => StepOutcome::done("removed"),
                        Ok(false) if !super::remove::exists(path) => {
                            StepOutcome::skipped("already gone")
                        }
                        Ok(false) => StepOutcome::skipped("kept: other files are still in it"),
                        Err(e) => StepOutcome::failed(e.to_string()),
                    }
                }
                Step::RemoveLauncher { link, target, .. } => remove_launcher(link, target, home),
                Step::RemovePathBlock { file } => {
                    match super::pathblock::remove(file, home, now_secs) {
                        Ok(Some(backup)) => {
                            let d = format!("backed up to {}", backup.display());
                            report.backups.push(backup);
                            StepOutcome::done(d)
                        }
                        Ok(None) => StepOutcome::skipped("no PATH block left in the file"),
                        Err(e) => StepOutcome::failed(e.to_string()),
                    }
                }
                _ => StepOutcome::failed("not carried out"),
            }
        };
        results[i] = Some(o);
    }

    for (index, (ps, result)) in plan.steps.iter().zip(results).enumerate() {
        report.records.push(StepRecord {
            index,
            summary: ps.summary.clone(),
            step: ps.step.clone(),
            result: result.unwrap_or_else(|| StepOutcome::failed("not carried out")),
        });
    }
    report
}

fn now_secs_real() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Run `actions` (tagged with their step index) as one shared plan; outcomes per step index
/// and the bytes the file systems gained.
fn execute_shared(
    plan: &UninstallPlan,
    actions: &[(usize, PlannedAction)],
    roots: Vec<PathBuf>,
    scanned_at: u64,
    runner: &dyn ActionRunner,
    judge: &mut dyn Judge,
    journal: Option<&mut Journal>,
) -> (Vec<(usize, StepOutcome)>, u64) {
    if actions.is_empty() {
        return (Vec::new(), 0);
    }
    let mut shared = Plan {
        schema: PLAN_SCHEMA.to_string(),
        id: String::new(),
        created_at: now_secs_real(),
        scanned_at,
        home: plan.home.clone(),
        platform: Platform::current(),
        roots,
        actions: actions.iter().map(|(_, a)| a.clone()).collect(),
        estimated_bytes: actions
            .iter()
            .map(|(_, a)| match &a.action {
                Action::DeletePath { expected_bytes, .. } => *expected_bytes,
                _ => 0,
            })
            .sum(),
        skipped_at_plan: Vec::new(),
    };
    shared.id = shared.content_id();
    let token = Confirmed::for_plan(&shared);
    match crate::exec::execute(
        &shared,
        ExecContext {
            mode: RunMode::Execute(token),
            journal,
            progress: None,
            runner,
            judge,
            origin: crate::exec::Origin::new("cli", "uninstall"),
        },
    ) {
        Ok(r) => (
            r.records
                .iter()
                .map(|rec| (actions[rec.index].0, from_shared(&rec.outcome)))
                .collect(),
            r.freed_bytes,
        ),
        Err(e) => (
            actions
                .iter()
                .map(|(i, _)| (*i, StepOutcome::failed(format!("not carried out: {e}"))))
                .collect(),
            0,
        ),
    }
}

fn from_shared(o: &Outcome) -> StepOutcome {
    match o {
        Outcome::Done { detail } | Outcome::WouldDo { detail } => StepOutcome::done(detail),
        Outcome::Skipped {
            why, partial, left, ..
        } if *partial || !left.is_empty() => {
            let left: Vec<String> = left.iter().map(|p| p.display().to_string()).collect();
            StepOutcome::failed(format!("{why} (left: {})", left.join(", ")))
        }
        Outcome::Skipped { why, .. } => StepOutcome::skipped(why),
        Outcome::Failed { error } => StepOutcome::failed(error),
    }
}

fn to_shared(o: StepOutcome) -> Outcome {
    match o {
        StepOutcome::Done { detail } => Outcome::done(detail),
        StepOutcome::Skipped { why } => Outcome::skipped(why),
        StepOutcome::Failed { error } => Outcome::failed(error),
    }
}

/// The shared executor's machine, process and mount actions, carried out by a [`StepRunner`]
/// with the CLI and inventory each uninstall step names.
struct Adapter<'a> {
    plan: &'a UninstallPlan,
    inner: &'a dyn StepRunner,
}

impl Adapter<'_> {
    fn machine_step(&self, product: Product, name: &str, delete: bool) -> Option<&Step> {
        self.plan.steps.iter().map(|s| &s.step).find(|s| match s {
            Step::StopMachine {
                product: p,
                name: n,
                ..
            } => !delete && *p == product && n == name,
            Step::DeleteMachine {
                product: p,
                name: n,
                ..
            } => delete && *p == product && n == name,
            _ => false,
        })
    }
}

impl ActionRunner for Adapter<'_> {
    fn stop_machine(
        &self,
        product: Product,
        name: &str,
        _pid: Option<u32>,
        _pid_start_time: Option<u64>,
    ) -> Outcome {
        match self.machine_step(product, name, false) {
            Some(Step::StopMachine {
                cli, db, process, ..
            }) => to_shared(
                self.inner
                    .stop_machine(product, name, cli, db, process.as_ref()),
            ),
            _ => Outcome::failed("no such step"),
        }
    }
    fn delete_machine(
        &self,
        product: Product,
        name: &str,
        _cascade: bool,
        _children: &[String],
    ) -> Outcome {
        match self.machine_step(product, name, true) {
            Some(Step::DeleteMachine {
                cli, db, process, ..
            }) => to_shared(
                self.inner
                    .delete_machine(product, name, cli, db, process.as_ref()),
            ),
            _ => Outcome::failed("no such step"),
        }
    }
    fn reap(
        &self,
        pid: u32,
        start_time: u64,
        _product: Product,
        _owner: Option<&str>,
        uid: u32,
    ) -> Outcome {
        to_shared(self.inner.reap(&ProcessRef {
            pid,
            start_time,
            uid,
        }))
    }
    fn detach(&self, mountpoint: &Path) -> Outcome {
        to_shared(self.inner.detach(mountpoint))
    }
}

fn remove_launcher(link: &Path, target: &Path, home: &Path) -> StepOutcome {
    match std::fs::symlink_metadata(link) {
        Err(_) => return StepOutcome::skipped("already gone"),
        Ok(m) if !m.file_type().is_symlink() => {
            return StepOutcome::skipped("no longer a symlink; left alone")
        }
        Ok(_) => {}
    }
    match std::fs::read_link(link) {
        Ok(t) if t == target => {}
        _ => return StepOutcome::skipped("points somewhere else now; left alone"),
    }
    let Some(dir) = link.parent() else {
        return StepOutcome::failed("no parent directory");
    };
    match super::remove::remove_path(link, dir, home) {
        Ok(_) => StepOutcome::done("removed"),
        Err(e) => StepOutcome::failed(e.to_string()),
    }
}

/// The real runner, on the shared executors: the products' CLIs through
/// [`crate::exec::machines`] (never a name without a record, `delete` always forced, paused and
/// failed-freeze machines handled), pidfd reaping through [`crate::exec::reap`] (pid + start time
/// + uid verified), `hdiutil detach` then `-force` through [`crate::exec::detach`].
#[derive(Debug, Clone)]
pub struct SystemRunner {
    pub cli_timeout: Duration,
    pub reap: ReapOptions,
    /// The audited environment: commands run with exactly it (nothing else is inherited).
    pub env: Option<EnvSnapshot>,
}

impl Default for SystemRunner {
    fn default() -> Self {
        SystemRunner {
            cli_timeout: crate::exec::machines::DEFAULT_CLI_TIMEOUT,
            reap: ReapOptions::default(),
            env: None,
        }
    }
}

impl SystemRunner {
    /// A runner whose commands see the audited environment (its HOME, PATH, XDG and product
    /// variables), so a CLI never acts on another HOME's state.
    pub fn for_env(env: &EnvSnapshot) -> Self {
        SystemRunner {
            env: Some(env.clone()),
            ..SystemRunner::default()
        }
    }

    fn env(&self) -> EnvSnapshot {
        match &self.env {
            Some(e) => e.clone(),
            None => EnvSnapshot::capture()
                .unwrap_or_else(|_| EnvSnapshot::from_pairs("/", Vec::<(String, String)>::new())),
        }
    }

    /// Every variable of the audited environment, HOME included.
    fn full_env(&self) -> Vec<(OsString, OsString)> {
        let e = self.env();
        let mut v: Vec<(OsString, OsString)> = e
            .vars
            .iter()
            .filter(|(k, _)| k.as_str() != "HOME" && !k.is_empty())
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect();
        v.push(("HOME".into(), e.home.into_os_string()));
        v
    }

    fn smolvm_cli(&self, cli: &Path, db: &Path) -> SmolvmCli {
        let env = self.env();
        let mut c = SmolvmCli::locate(&env, db).unwrap_or(SmolvmCli {
            program: cli.to_path_buf(),
            env: self.full_env(),
            timeout: self.cli_timeout,
            db: db.to_path_buf(),
        });
        c.program = cli.to_path_buf();
        c.timeout = self.cli_timeout;
        c
    }

    fn celesto_cli(&self, cli: &Path, db: &Path) -> CelestoCli {
        let env = self.env();
        let mut c = CelestoCli::locate(&env, db).unwrap_or(CelestoCli {
            program: cli.to_path_buf(),
            env: self.full_env(),
            timeout: self.cli_timeout,
            db: db.to_path_buf(),
        });
        c.program = cli.to_path_buf();
        c.timeout = self.cli_timeout;
        c
    }

    /// VMM processes booting the smolvm machine `name` (by its machine directory hash).
    fn vmms_of_machine(&self, name: &str) -> Vec<ProcessRef> {
        let hash = crate::inventory::smolvm::vm_dir_hash(name);
        let procs = crate::procs::list();
        crate::procs::shape::detect_all(&procs)
            .into_iter()
            .filter(|(_, s)| match s {
                crate::procs::shape::VmmShape::SmolvmBootVm { vm_dir, .. } => {
                    vm_dir.file_name().and_then(|n| n.to_str()) == Some(hash.as_str())
                }
                _ => false,
            })
            .map(|(p, _)| ProcessRef {
                pid: p.pid,
                start_time: p.start_time,
                uid: p.uid,
            })
            .collect()
    }
}

/// A machine outcome as a step outcome.
fn machine_outcome(name: &str, o: MachineOutcome) -> StepOutcome {
    match o {
        MachineOutcome::Stopped => StepOutcome::done("stopped"),
        MachineOutcome::Deleted => StepOutcome::done(format!("Deleted machine: {name}")),
        MachineOutcome::Resumed => StepOutcome::done("resumed"),
        MachineOutcome::NotRunning { state } => {
            StepOutcome::done(format!("not running (state: {state})"))
        }
        MachineOutcome::Paused => StepOutcome::skipped(
            "paused: the CLI refuses to stop it; it is deleted with --force instead",
        ),
        MachineOutcome::NotFound => {
            StepOutcome::skipped("no longer recorded; not passed to the CLI")
        }
        MachineOutcome::FsSyncFailed => StepOutcome::skipped(
            "the guest could not sync its file system; the delete step ends its VM process and \
             deletes it",
        ),
        MachineOutcome::NeedsConfirmation => {
            StepOutcome::failed("the CLI asked for a confirmation")
        }
        MachineOutcome::CliMissing => StepOutcome::failed("the CLI is missing"),
        MachineOutcome::TimedOut => StepOutcome::failed("the CLI did not finish in time"),
        MachineOutcome::InvalidName { name } => {
            StepOutcome::failed(format!("'{name}' is not a name upstream accepts; refused"))
        }
        MachineOutcome::PidNotVerified { pid } => StepOutcome::failed(format!(
            "pid {pid} no longer belongs to the recorded VM; the CLI would signal another process"
        )),
        MachineOutcome::InventoryUnreadable { error } => StepOutcome::failed(error),
        MachineOutcome::Unexpected {
            code,
            stdout,
            stderr,
        } => StepOutcome::failed(format!(
            "exit {code:?}: {} {}",
            stdout.trim(),
            stderr.trim()
        )),
    }
}

fn reap_outcome(o: ReapOutcome) -> StepOutcome {
    match o {
        ReapOutcome::AlreadyGone => StepOutcome::skipped("already gone"),
        ReapOutcome::IdentityMismatch { .. } => {
            StepOutcome::skipped("the pid now belongs to another process; nothing was signalled")
        }
        ReapOutcome::NotOurs { uid } => {
            StepOutcome::failed(format!("the process belongs to uid {uid}; not signalled"))
        }
        ReapOutcome::Terminated { by, after_ms } => {
            StepOutcome::done(format!("ended by {} after {after_ms} ms", by.as_str()))
        }
        ReapOutcome::StillAlive => StepOutcome::failed("still alive after SIGKILL"),
        ReapOutcome::Failed { error } => StepOutcome::failed(error),
    }
}

impl StepRunner for SystemRunner {
    fn stop_machine(
        &self,
        product: Product,
        name: &str,
        cli: &Path,
        db: &Path,
        process: Option<&ProcessRef>,
    ) -> StepOutcome {
        let o = match product {
            Product::Smolvm => self.smolvm_cli(cli, db).stop(name),
            Product::Celesto => self.celesto_cli(cli, db).stop(name, process),
        };
        machine_outcome(name, o)
    }

    fn delete_machine(
        &self,
        product: Product,
        name: &str,
        cli: &Path,
        db: &Path,
        process: Option<&ProcessRef>,
    ) -> StepOutcome {
        match product {
            Product::Smolvm => {
                let c = self.smolvm_cli(cli, db);
                // Never --cascade: the plan deletes branches before the machine they were
                // branched from (preflight order), so a branch it does not show (made since, or
                // its step unchecked) makes this delete fail instead of vanishing with it.
                match c.delete(name, false) {
                    MachineOutcome::FsSyncFailed => {
                        // Hazard 22: end the VMM (death confirmed), then delete again.
                        let vmms = self.vmms_of_machine(name);
                        let Some(vmm) = vmms.first() else {
                            return StepOutcome::failed(
                                "the guest could not sync its file system and no VM process of \
                                 this machine was found to end",
                            );
                        };
                        match c.delete_after_reap(name, vmm, false, &self.reap) {
                            (_, Some(o)) => machine_outcome(name, o),
                            (r, None) => match reap_outcome(r) {
                                StepOutcome::Failed { error } => StepOutcome::failed(format!(
                                    "the guest could not sync its file system and its VM process \
                                     could not be ended: {error}"
                                )),
                                other => other,
                            },
                        }
                    }
                    o => machine_outcome(name, o),
                }
            }
            Product::Celesto => {
                machine_outcome(name, self.celesto_cli(cli, db).delete(name, process))
            }
        }
    }

    fn reap(&self, target: &ProcessRef) -> StepOutcome {
        reap_outcome(crate::exec::reap::reap(target, &self.reap))
    }

    fn detach(&self, mountpoint: &Path) -> StepOutcome {
        let env = self.env();
        let runner = crate::exec::detach::SystemRunner {
            path: env.var("PATH").map(OsString::from),
            env: self.full_env(),
            timeout: self.cli_timeout,
        };
        match crate::exec::detach::detach(mountpoint, &runner) {
            DetachOutcome::Detached { forced: false, .. } => StepOutcome::done("detached"),
            DetachOutcome::Detached {
                forced: true,
                first_error,
            } => StepOutcome::done(format!(
                "detached with -force (first: {})",
                first_error.unwrap_or_default()
            )),
            DetachOutcome::Failed { error } => StepOutcome::failed(error),
        }
    }
}
