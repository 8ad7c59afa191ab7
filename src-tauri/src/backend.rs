//! What the shell asks of the core: scan, execute a reclaim plan, stop or reap a VM.
//!
//! The shell only talks to a [`Backend`], so the headless tests drive it with a fake one. The real
//! backend scans with `smolsweep::scan::scan`.
//!
//! Test hook (documented in src-tauri/README.md): when `SMOLSWEEP_REPORT_FILE` names a file, the
//! real backend reads the scan report from that JSON file (re-read on every scan) instead of
//! scanning. Display-server tests use it to give the app a known state.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use smolsweep::exec::reap::{reap, ProcessRef, ReapOptions, ReapOutcome};
use smolsweep::model::{Finding, Product, ScanReport, VmProcess};

/// Environment variable naming a saved scan report to use instead of a real scan.
pub const REPORT_FILE_ENV: &str = "SMOLSWEEP_REPORT_FILE";

/// One thing the plan will do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanStep {
    pub id: String,
    pub product: Product,
    pub kind: String,
    pub path: PathBuf,
    /// `delete file` or `delete directory`.
    pub action: String,
    pub allocated_bytes: u64,
    pub apparent_bytes: u64,
    pub reason: String,
}

/// A finding the user asked for that will not be touched, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refusal {
    pub id: String,
    pub path: Option<PathBuf>,
    pub reason: String,
}

/// Exactly what a reclaim will do, shown before it runs. Drawn from the core's plan for the
/// chosen findings — the plan the executor runs — so the confirmation and the execution follow
/// one set of rules.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Plan {
    pub steps: Vec<PlanStep>,
    pub refused: Vec<Refusal>,
    pub estimated_bytes: u64,
    /// Fingerprint of the core plan's actions and refusals. A reclaim confirmed against this view
    /// runs only if the plan made at that moment has the same fingerprint.
    #[serde(default)]
    pub digest: String,
    /// The core plan itself (what [`execute_plan`] runs).
    #[serde(skip)]
    pub core: Option<smolsweep::plan::Plan>,
}

/// The core plan for the chosen finding ids (duplicates dropped).
pub fn core_plan(report: &ScanReport, ids: &[String]) -> smolsweep::plan::Plan {
    let mut seen = std::collections::BTreeSet::new();
    let ids: Vec<String> = ids
        .iter()
        .filter(|i| seen.insert(i.as_str()))
        .cloned()
        .collect();
    smolsweep::plan::Plan::from_scan(
        report,
        &smolsweep::plan::Selection {
            ids,
            ..Default::default()
        },
    )
}

/// Build the plan for the chosen finding ids: protected, unknown and unknown-id findings are
/// refused by the core planner, with its reasons. Pure: looks at the report only.
pub fn plan(report: &ScanReport, ids: &[String]) -> Plan {
    use smolsweep::plan::Action;
    let core = core_plan(report, ids);
    let mut p = Plan {
        estimated_bytes: core.estimated_bytes,
        ..Default::default()
    };
    for a in &core.actions {
        match &a.action {
            Action::DeletePath {
                finding_id, is_dir, ..
            } => {
                if let Some(f) = report.finding(finding_id) {
                    let what = if *is_dir {
                        "delete directory"
                    } else {
                        "delete file"
                    };
                    p.steps.push(step(f, what));
                }
            }
            Action::DeleteMachine { product, name, .. } => {
                // A dead ephemeral machine: record and directory go together, through its CLI.
                if let Some(f) = report.findings.iter().find(|f| {
                    f.product == *product
                        && f.kind == "smolvm.dead_ephemeral_dir"
                        && f.owner.as_deref() == Some(name)
                }) {
                    p.estimated_bytes += f.allocated_bytes;
                    p.steps
                        .push(step(f, "delete machine (record and directory)"));
                }
            }
            Action::Detach { mountpoint } => p.steps.push(PlanStep {
                id: String::new(),
                product: Product::Smolvm,
                kind: "smolvm.mount_point".into(),
                path: mountpoint.clone(),
                action: "detach the disk image mounted here".into(),
                allocated_bytes: 0,
                apparent_bytes: 0,
                reason: a.summary.clone(),
            }),
            // Chosen findings never plan stops, reaps or uninstall steps.
            Action::StopMachine { .. }
            | Action::SignalProcess { .. }
            | Action::RemoveTree { .. }
            | Action::RemoveDirIfEmpty { .. }
            | Action::RemoveLauncher { .. }
            | Action::RemovePathBlock { .. } => {}
        }
    }
    p.refused = core
        .skipped_at_plan
        .iter()
        .map(|s| Refusal {
            id: s.id.clone(),
            path: report.finding(&s.id).map(|f| f.path.clone()),
            reason: s.why.clone(),
        })
        .collect();
    p.digest = core.action_digest();
    p.core = Some(core);
    p
}

fn step(f: &Finding, action: &str) -> PlanStep {
    PlanStep {
        id: f.id.clone(),
        product: f.product,
        kind: f.kind.clone(),
        path: f.path.clone(),
        action: action.into(),
        allocated_bytes: f.allocated_bytes,
        apparent_bytes: f.apparent_bytes,
        reason: f.reason.clone(),
    }
}

/// What happened to one step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    Removed,
    Skipped,
    Failed,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepResult {
    pub id: String,
    pub path: PathBuf,
    pub status: StepStatus,
    pub message: String,
    /// Allocated bytes measured just before removal.
    pub freed_bytes: u64,
}

/// The result of a reclaim, kept in the history.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ReclaimOutcome {
    /// Seconds since the Unix epoch.
    pub started_at: u64,
    pub finished_at: u64,
    pub estimated_bytes: u64,
    pub measured_bytes: u64,
    pub steps: Vec<StepResult>,
    pub refused: Vec<Refusal>,
}

impl ReclaimOutcome {
    /// Nothing of `plan` ran, for one reason.
    pub fn refused_all(plan: &Plan, why: &str) -> Self {
        ReclaimOutcome {
            started_at: now_secs(),
            finished_at: now_secs(),
            estimated_bytes: plan.estimated_bytes,
            refused: plan.refused.clone(),
            steps: plan
                .steps
                .iter()
                .map(|s| StepResult {
                    id: s.id.clone(),
                    path: s.path.clone(),
                    status: StepStatus::Skipped,
                    message: why.to_string(),
                    freed_bytes: 0,
                })
                .collect(),
            ..Default::default()
        }
    }

    pub fn count(&self, s: StepStatus) -> usize {
        self.steps.iter().filter(|r| r.status == s).count()
    }
}

/// Progress of a running reclaim, sent to the window as `reclaim-progress` events.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Progress {
    pub done: usize,
    pub total: usize,
    pub path: PathBuf,
    pub status: StepStatus,
}

/// Which signal a VM action sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VmAction {
    /// SIGTERM: let the VMM shut down.
    Stop,
    /// SIGKILL: an orphan that no inventory owns.
    Reap,
}

/// The core, as the shell sees it.
pub trait Backend: Send + Sync + 'static {
    fn scan(&self) -> anyhow::Result<ScanReport>;
    /// Run the core plan `plan` carries (the one the user confirmed).
    fn execute(&self, plan: &Plan, progress: &mut dyn FnMut(Progress)) -> ReclaimOutcome;
    /// Stop or reap a VM process of the latest scan; `Ok` only once its death is confirmed.
    fn vm_action(&self, p: &VmProcess, action: VmAction) -> anyhow::Result<()>;
    /// What the uninstall wizard works on (the live system unless a test says otherwise).
    fn uninstaller(&self) -> std::sync::Arc<dyn crate::uninstall::Uninstaller> {
        std::sync::Arc::new(crate::uninstall::RealUninstaller)
    }
}

/// The real core.
#[derive(Debug, Default)]
pub struct RealBackend;

impl Backend for RealBackend {
    fn scan(&self) -> anyhow::Result<ScanReport> {
        if let Some(path) = std::env::var_os(REPORT_FILE_ENV) {
            let text = std::fs::read_to_string(&path)?;
            let mut r: ScanReport = serde_json::from_str(&text)?;
            // A real scan does not find what is gone: drop findings whose path was removed.
            r.findings
                .retain(|f| std::fs::symlink_metadata(&f.path).is_ok());
            r.processes
                .retain(|p| process_start_time(p.pid) == Some(p.start_time) && !is_zombie(p.pid));
            r.compute_totals();
            return Ok(r);
        }
        let opts = smolsweep::scan::ScanOptions::from_env()?;
        Ok(smolsweep::scan::scan(&opts))
    }

    fn execute(&self, plan: &Plan, progress: &mut dyn FnMut(Progress)) -> ReclaimOutcome {
        // The journal lives in the app's data directory (`SMOLSWEEP_DATA_DIR` overrides it).
        // Nothing runs without the journal, as in the CLI; every action is re-judged on the
        // facts of the moment it runs, in this process's environment.
        let mut journal = match smolsweep::journal::Journal::open_default() {
            Ok(j) => j,
            Err(e) => {
                return ReclaimOutcome::refused_all(
                    plan,
                    &format!("cannot open the journal, so nothing was done: {e}"),
                )
            }
        };
        let mut judge = match smolsweep::exec::Rejudge::from_env() {
            Ok(j) => j,
            Err(e) => {
                return ReclaimOutcome::refused_all(
                    plan,
                    &format!("cannot read the environment: {e}"),
                )
            }
        };
        execute_plan(plan, Some(&mut journal), &mut judge, progress)
    }

    fn vm_action(&self, p: &VmProcess, action: VmAction) -> anyhow::Result<()> {
        end_vm(p, action)
    }
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Execute a plan through the core: the chosen findings become a `smolsweep::plan::Plan`
/// (content-hashed, identities recorded at scan time), run by `smolsweep::exec::execute` with
/// the hardened delete primitive, ownership re-checked at the moment of deletion, machines and
/// processes through the real runner, every action journaled in the core's journal. Freed bytes
/// are measured (free space before and after), not estimated.
pub fn execute_plan(
    plan: &Plan,
    journal: Option<&mut smolsweep::journal::Journal>,
    judge: &mut dyn smolsweep::exec::Judge,
    progress: &mut dyn FnMut(Progress),
) -> ReclaimOutcome {
    use smolsweep::exec::delete::Confirmed;
    use smolsweep::exec::{self, ExecContext, Outcome, ProgressEvent, RunMode};
    use smolsweep::plan::Action;

    let mut out = ReclaimOutcome {
        started_at: now_secs(),
        estimated_bytes: plan.estimated_bytes,
        refused: plan.refused.clone(),
        ..Default::default()
    };
    // Only the plan that was shown runs; a view without one (deserialised) runs nothing.
    let Some(core) = plan.core.clone() else {
        return ReclaimOutcome::refused_all(plan, "not run: no confirmed plan");
    };
    let runner: Box<dyn exec::ActionRunner> = match smolsweep::env::EnvSnapshot::capture() {
        Ok(env) => Box::new(exec::runner::RealRunner::new(
            env,
            smolsweep::model::Platform::current(),
        )),
        Err(_) => Box::new(exec::UnwiredRunner),
    };
    let total = core.actions.len();
    let path_of = |a: &Action| match a {
        Action::DeletePath { path, .. } => path.clone(),
        Action::Detach { mountpoint } => mountpoint.clone(),
        _ => PathBuf::new(),
    };
    let progress = std::cell::RefCell::new(progress);
    let on_progress = |e: &ProgressEvent| {
        if let ProgressEvent::Finished { index, outcome, .. } = e {
            (progress.borrow_mut())(Progress {
                done: index + 1,
                total,
                path: core
                    .actions
                    .get(*index)
                    .map(|a| path_of(&a.action))
                    .unwrap_or_default(),
                status: status_of(outcome),
            });
        }
    };
    let result = exec::execute(
        &core,
        ExecContext {
            mode: RunMode::Execute(Confirmed::for_plan(&core)),
            journal,
            progress: Some(&on_progress),
            runner: runner.as_ref(),
            judge,
            origin: exec::Origin::new("window", "reclaim"),
        },
    );
    match result {
        Ok(r) => {
            out.measured_bytes = r.freed_bytes;
            for rec in &r.records {
                let id = match &rec.action {
                    Action::DeletePath { finding_id, .. } => finding_id.clone(),
                    _ => String::new(),
                };
                let (message, freed) = match &rec.outcome {
                    Outcome::Done { detail } | Outcome::WouldDo { detail } => {
                        let freed = match &rec.action {
                            Action::DeletePath { expected_bytes, .. } => *expected_bytes,
                            _ => 0,
                        };
                        (detail.clone(), freed)
                    }
                    Outcome::Skipped { why, .. } => (why.clone(), 0),
                    Outcome::Failed { error } => (error.clone(), 0),
                };
                out.steps.push(StepResult {
                    id,
                    path: path_of(&rec.action),
                    status: status_of(&rec.outcome),
                    message,
                    freed_bytes: freed,
                });
            }
        }
        Err(e) => {
            for s in &plan.steps {
                out.steps.push(StepResult {
                    id: s.id.clone(),
                    path: s.path.clone(),
                    status: StepStatus::Failed,
                    message: format!("not run: {e}"),
                    freed_bytes: 0,
                });
            }
        }
    }
    out.finished_at = now_secs();
    out
}

fn status_of(o: &smolsweep::exec::Outcome) -> StepStatus {
    use smolsweep::exec::Outcome;
    match o {
        Outcome::Done { .. } | Outcome::WouldDo { .. } => StepStatus::Removed,
        Outcome::Skipped { .. } => StepStatus::Skipped,
        Outcome::Failed { .. } => StepStatus::Failed,
    }
}

/// Start time of a process (Linux: `/proc/<pid>/stat` field 22).
pub fn process_start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Whether a process has exited but was not waited for yet (state `Z`).
fn is_zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            let rest = &s[s.rfind(')')? + 1..];
            rest.split_whitespace().next().map(|st| st == "Z")
        })
        .unwrap_or(false)
}

/// Grace periods: a stop lets the VMM shut down cleanly for longer than a reap does.
pub fn reap_options(action: VmAction) -> ReapOptions {
    match action {
        VmAction::Stop => ReapOptions {
            term_grace: std::time::Duration::from_secs(10),
            ..ReapOptions::default()
        },
        VmAction::Reap => ReapOptions::default(),
    }
}

/// End a VM process through the core's reaper: identity (pid, start time, uid) proven on a
/// pidfd first, SIGTERM, a grace period, SIGKILL, and death confirmed.
///
/// "Stop" on a VM that an inventory owns goes through its product's own CLI instead
/// (`smolvm machine stop`, `celesto sandbox stop`), so the inventory records the stop; a
/// foreign VM is never touched.
pub fn end_vm(p: &VmProcess, action: VmAction) -> anyhow::Result<()> {
    use smolsweep::exec::{ActionRunner, Outcome};
    if p.scope != smolsweep::model::Scope::ThisHome {
        anyhow::bail!(
            "process {} is not this HOME's: nothing was signalled",
            p.pid
        );
    }
    if let (VmAction::Stop, false, Some(owner)) = (action, p.orphan, p.owner.as_deref()) {
        let env = smolsweep::env::EnvSnapshot::capture()?;
        let runner =
            smolsweep::exec::runner::RealRunner::new(env, smolsweep::model::Platform::current());
        return match runner.stop_machine(p.product, owner, Some(p.pid), Some(p.start_time)) {
            Outcome::Done { .. } => Ok(()),
            Outcome::WouldDo { detail } => anyhow::bail!("{detail}"),
            Outcome::Skipped { why, .. } => anyhow::bail!("{why}"),
            Outcome::Failed { error } => anyhow::bail!("{error}"),
        };
    }
    let target = ProcessRef {
        pid: p.pid,
        start_time: p.start_time,
        uid: p.uid,
    };
    match reap(&target, &reap_options(action)) {
        ReapOutcome::Terminated { .. } => Ok(()),
        ReapOutcome::AlreadyGone => Ok(()),
        ReapOutcome::IdentityMismatch { .. } => {
            anyhow::bail!(
                "process {} was replaced since the scan: nothing was signalled",
                p.pid
            )
        }
        ReapOutcome::NotOurs { uid } => {
            anyhow::bail!(
                "process {} belongs to uid {uid}: nothing was signalled",
                p.pid
            )
        }
        ReapOutcome::StillAlive => anyhow::bail!("process {} survived SIGKILL", p.pid),
        ReapOutcome::Failed { error } => anyhow::bail!("process {}: {error}", p.pid),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The executor's mechanics on hand-built findings: the re-judge answers "as planned".
    struct AsPlanned;
    impl smolsweep::exec::Judge for AsPlanned {
        fn still_confirmed(
            &mut self,
            _: &smolsweep::plan::Plan,
            _: &smolsweep::plan::Action,
        ) -> Result<(), String> {
            Ok(())
        }
        fn changed(&mut self) {}
    }
    use smolsweep::model::{finding_id, Platform, Totals, Verdict, SCAN_SCHEMA};
    use std::os::unix::process::ExitStatusExt;
    use std::path::Path;

    fn finding(path: &Path, root: &Path, verdict: Verdict) -> Finding {
        let md = std::fs::symlink_metadata(path).ok();
        let kind = "celesto.orphan_disk";
        Finding {
            id: finding_id(Product::Celesto, kind, path),
            product: Product::Celesto,
            kind: kind.into(),
            path: path.to_path_buf(),
            owner: None,
            apparent_bytes: 4096,
            allocated_bytes: 4096,
            verdict,
            reason: "no sandbox owns it".into(),
            opt_in_class: None,
            identity: md.and_then(|_| smolsweep::exec::delete::identity_of(path).ok()),
            is_dir: path.is_dir(),
            root: Some(root.to_path_buf()),
            mounts_inside: vec![],
            owner_recheck: None,
        }
    }

    /// A directory path with the `tempdir().path()` shape the tests use.
    struct StdPath(std::path::PathBuf);
    impl StdPath {
        fn path(&self) -> &Path {
            &self.0
        }
    }

    fn report(home: &Path, findings: Vec<Finding>) -> ScanReport {
        ScanReport {
            schema: SCAN_SCHEMA.into(),
            home: home.into(),
            platform: Platform::Linux,
            products: vec![],
            findings,
            machines: vec![],
            processes: vec![],
            totals: Totals::default(),
            scanned_at: 0,
            duration_ms: 0,
        }
    }

    #[test]
    fn plan_refuses_protected_unknown_and_unlisted_ids() {
        let home = tempfile::tempdir().unwrap();
        let d = home.path().join("state");
        std::fs::create_dir(&d).unwrap();
        let a = d.join("a");
        std::fs::write(&a, b"x").unwrap();
        let r = report(
            home.path(),
            vec![
                finding(&a, &d, Verdict::Reclaimable),
                finding(&d.join("p"), &d, Verdict::Protected),
                finding(&d.join("u"), &d, Verdict::Unknown),
            ],
        );
        let ids: Vec<String> = r.findings.iter().map(|f| f.id.clone()).collect();
        let mut asked = ids.clone();
        asked.push("nope".into());
        asked.push(ids[0].clone());
        let p = plan(&r, &asked);
        assert_eq!(p.steps.len(), 1);
        assert_eq!(p.steps[0].path, a);
        assert_eq!(p.estimated_bytes, 4096);
        let why = |id: &str| {
            p.refused
                .iter()
                .find(|x| x.id == id)
                .map(|x| x.reason.clone())
                .unwrap_or_default()
        };
        assert_eq!(p.refused.len(), 3, "{:?}", p.refused);
        assert!(why(&ids[1]).starts_with("protected"), "{}", why(&ids[1]));
        assert!(why(&ids[2]).starts_with("could not be verified"));
        assert!(why("nope").contains("no finding"));
        // The view is the core plan: the same fingerprint, and the core is what runs.
        assert_eq!(p.core.as_ref().unwrap().delete_count(), 1);
        assert_eq!(p.digest, core_plan(&r, &asked).action_digest());
    }

    /// What the window shows is what runs: a finding the core planner refuses (its root holds
    /// HOME) is listed as refused in the confirmation, not as a step.
    #[test]
    fn confirmation_lists_what_the_core_planner_refuses() {
        let home = tempfile::tempdir().unwrap();
        let a = home.path().join("a");
        std::fs::write(&a, b"x").unwrap();
        let r = report(
            home.path(),
            vec![finding(&a, home.path(), Verdict::Reclaimable)],
        );
        let p = plan(&r, &[r.findings[0].id.clone()]);
        assert!(p.steps.is_empty(), "{:?}", p.steps);
        assert_eq!(p.estimated_bytes, 0);
        assert!(p.refused[0].reason.contains("HOME"), "{:?}", p.refused);
    }

    #[test]
    fn execute_removes_exactly_the_planned_paths() {
        let home = tempfile::tempdir().unwrap();
        let d = home.path().join("state");
        std::fs::create_dir(&d).unwrap();
        let d = StdPath(d);
        let a = d.path().join("a.qcow2");
        let b = d.path().join("b.qcow2");
        let dir = d.path().join("vmdir");
        std::fs::write(&a, vec![1u8; 10_000]).unwrap();
        std::fs::write(&b, vec![1u8; 10_000]).unwrap();
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("log"), b"x").unwrap();
        let r = report(
            home.path(),
            vec![
                finding(&a, d.path(), Verdict::Reclaimable),
                finding(&b, d.path(), Verdict::Reclaimable),
                finding(&dir, d.path(), Verdict::OptIn),
            ],
        );
        let p = plan(&r, &[r.findings[0].id.clone(), r.findings[2].id.clone()]);
        // A view that carries no confirmed plan (as deserialised) runs nothing.
        let shown_only = Plan {
            core: None,
            ..p.clone()
        };
        let none = execute_plan(&shown_only, None, &mut AsPlanned, &mut |_| {});
        assert!(a.exists() && dir.exists());
        assert_eq!(none.count(StepStatus::Skipped), 2);
        let mut events = vec![];
        let out = execute_plan(&p, None, &mut AsPlanned, &mut |e| events.push(e));
        assert!(!a.exists());
        assert!(!dir.exists());
        assert!(b.exists(), "an unselected file stays");
        assert_eq!(out.count(StepStatus::Removed), 2);
        assert!(out.steps.iter().all(|s| s.freed_bytes > 0));
        assert_eq!(events.len(), 2);
        assert_eq!(events[1].done, 2);
    }

    #[test]
    fn execute_skips_a_path_replaced_since_the_scan() {
        let home = tempfile::tempdir().unwrap();
        let d = StdPath(home.path().join("state"));
        std::fs::create_dir(d.path()).unwrap();
        let a = d.path().join("a");
        std::fs::write(&a, b"old").unwrap();
        let r = report(
            home.path(),
            vec![finding(&a, d.path(), Verdict::Reclaimable)],
        );
        // A different file (a different inode: both exist at once) takes the path.
        let b = d.path().join("b");
        std::fs::write(&b, b"new user data").unwrap();
        std::fs::rename(&b, &a).unwrap();
        let p = plan(&r, &[r.findings[0].id.clone()]);
        let out = execute_plan(&p, None, &mut AsPlanned, &mut |_| {});
        assert_eq!(std::fs::read(&a).unwrap(), b"new user data");
        assert_eq!(out.steps[0].status, StepStatus::Skipped);
        assert!(
            out.steps[0].message.contains("changed"),
            "{}",
            out.steps[0].message
        );
        assert_eq!(out.steps[0].freed_bytes, 0);
    }

    #[test]
    fn execute_refuses_paths_outside_their_root() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("root");
        std::fs::create_dir(&root).unwrap();
        let outside = d.path().join("outside");
        std::fs::write(&outside, b"x").unwrap();
        let mut f = finding(&outside, &root, Verdict::Reclaimable);
        f.root = Some(root.clone());
        let r = report(d.path(), vec![f]);
        let out = execute_plan(
            &plan(&r, &[r.findings[0].id.clone()]),
            None,
            &mut AsPlanned,
            &mut |_| {},
        );
        assert!(outside.exists());
        // The core never plans it: it is refused before anything runs.
        assert!(out.steps.is_empty());
        assert!(
            out.refused.iter().any(|x| x.reason.contains("root")),
            "{:?}",
            out.refused
        );
    }

    fn vm_of(child: &std::process::Child, start_time: u64) -> VmProcess {
        VmProcess {
            pid: child.id(),
            start_time,
            product: Product::Smolvm,
            shape: "smolvm.boot_vm".into(),
            owner: None,
            orphan: true,
            scope: smolsweep::model::Scope::ThisHome,
            held_deleted_bytes: 0,
            uid: rustix::process::getuid().as_raw(),
            comm: String::new(),
            argv: vec![],
            paths: vec![],
            reason: String::new(),
            fds_readable: true,
        }
    }

    #[test]
    fn b7_recycled_pid_is_never_signalled() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let st = process_start_time(child.id()).unwrap();
        // The scan saw another process under this pid (a different start time).
        let e = end_vm(&vm_of(&child, st + 1), VmAction::Reap).unwrap_err();
        assert!(e.to_string().contains("replaced"), "{e}");
        assert_eq!(child.try_wait().unwrap(), None, "still running");
        end_vm(&vm_of(&child, st), VmAction::Reap).unwrap();
        assert!(
            child.wait().unwrap().signal().is_some(),
            "ended by a signal"
        );
    }

    #[test]
    fn report_file_hook_feeds_the_real_backend() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("a");
        std::fs::write(&a, b"x").unwrap();
        let r = report(d.path(), vec![finding(&a, d.path(), Verdict::Reclaimable)]);
        let file = d.path().join("report.json");
        std::fs::write(&file, serde_json::to_string(&r).unwrap()).unwrap();
        // Only this test sets the variable in this test binary.
        std::env::set_var(REPORT_FILE_ENV, &file);
        let got = RealBackend.scan().unwrap();
        std::env::remove_var(REPORT_FILE_ENV);
        assert_eq!(got.findings, r.findings);
        assert_eq!(got.totals.reclaimable_count, 1, "totals are recomputed");
        std::fs::remove_file(&a).unwrap();
        std::env::set_var(REPORT_FILE_ENV, &file);
        let got = RealBackend.scan().unwrap();
        std::env::remove_var(REPORT_FILE_ENV);
        assert!(got.findings.is_empty(), "a removed file is not found again");
    }
}
