//! What the shell asks of the core: scan, plan, and execute a plan through the one executor.
//!
//! The shell only talks to a [`Backend`], so the headless tests drive it with a fake one. The real
//! backend scans with `smolsweep::scan::scan` and executes with `smolsweep::exec::run`: every
//! action (a reclaim, stopping a machine, ending a process, deleting a machine) is a core plan,
//! re-judged on fresh facts at the moment it runs and journaled in the core journal with the
//! surface and command that made it.
//!
//! Test hook (documented in src-tauri/README.md): when `SMOLSWEEP_REPORT_FILE` names a file, the
//! real backend reads the scan report from that JSON file (re-read on every scan) instead of
//! scanning. Display-server tests use it to give the app a known state. The executor's re-judge
//! always looks at the real system.

use std::path::PathBuf;

use smolsweep::exec::{Confirmed, ExecReport, Origin, ProgressEvent};
use smolsweep::model::ScanReport;
use smolsweep::plan::Plan as CorePlan;

// The plan and its outcome as a person sees them are the core's (`smolsweep::view::runs`).
pub use smolsweep::view::runs::{
    outcome_heading, plan_of, progress_of, ActionResult, ActionStatus, History, HistoryRun,
    MachineRef, PlanStep, PlanView, Progress, ReclaimOutcome, Refusal, StepResult, StepStatus,
    VmAction, VmOutcome, VmPlan, VmTarget, LEGACY_HISTORY_FILE,
};
use smolsweep::view::{self, window::SelectionView};

// What the shell shows is planned by the core's planner and then worded by its view: these ask
// the one, then the other.

/// The core plan for the chosen finding ids (duplicates dropped, [`CorePlan::of_ids`]).
pub fn core_plan(report: &ScanReport, ids: &[String]) -> CorePlan {
    CorePlan::of_ids(report, ids)
}

/// What the Reclaim button and the line beside it say for a selection: the core's count of it
/// and confirmation of its plan.
pub fn selection_estimate(report: &ScanReport, ids: &[String]) -> SelectionView {
    SelectionView::of(ids, &core_plan(report, ids))
}

/// The plan for the chosen finding ids as the window confirms it: protected, unknown and
/// unknown-id findings are refused by the core planner, with its reasons.
pub fn plan(report: &ScanReport, ids: &[String]) -> PlanView {
    plan_of(report, core_plan(report, ids))
}

/// The plan for Stop / End process / Delete of one VM or machine ([`smolsweep::plan_for`]).
pub fn target_plan(
    report: &ScanReport,
    target: &VmTarget,
    action: VmAction,
    cascade: bool,
) -> VmPlan {
    VmPlan::of(
        &smolsweep::plan_for(report, target, action, cascade),
        cascade,
    )
}

/// The plan for Stop / End process / Delete of the VM process `pid` (with the start time the
/// user saw).
pub fn vm_plan(
    report: &ScanReport,
    pid: u32,
    start_time: u64,
    action: VmAction,
    cascade: bool,
) -> VmPlan {
    let target = VmTarget::Process { pid, start_time };
    target_plan(report, &target, action, cascade)
}

/// The plan for Stop / Delete of the machine or sandbox `name` of `product`, as the Running
/// VMs view lists it.
pub fn machine_plan(
    report: &ScanReport,
    product: smolsweep::model::Product,
    name: &str,
    action: VmAction,
    cascade: bool,
) -> VmPlan {
    let name = name.into();
    target_plan(
        report,
        &VmTarget::Machine { product, name },
        action,
        cascade,
    )
}

/// The compaction of `targets` (machines as `product:name`, or disk paths; every disk with
/// something to give back when empty), planned as `smolsweep compact` plans it, as the window
/// and the tray confirm it.
pub fn compact_plan(report: &ScanReport, targets: &[String]) -> Result<PlanView, String> {
    smolsweep::compact_plan(report, targets).map(|core| plan_of(report, core))
}

/// History: the newest runs of the core journal at `journal` (a missing file is an empty
/// history), and the window's old history file when it is still there.
pub fn history(journal: Option<&std::path::Path>, legacy: Option<&std::path::Path>) -> History {
    let read = journal.map(|p| {
        let newest = smolsweep::journal::read_newest(p, view::runs::HISTORY_RUNS);
        (p, newest)
    });
    view::runs::history(
        read,
        legacy.filter(|p| p.is_file()),
        &smolsweep::env::SystemZone,
    )
}

/// Environment variable naming a saved scan report to use instead of a real scan.
pub const REPORT_FILE_ENV: &str = "SMOLSWEEP_REPORT_FILE";

// ---- The core, as the shell sees it -----------------------------------------------------------

/// The core, as the shell sees it.
pub trait Backend: Send + Sync + 'static {
    fn scan(&self) -> anyhow::Result<ScanReport>;
    /// Execute a confirmed core plan through `smolsweep::exec::run`: every action re-judged
    /// at the moment it runs, every outcome journaled in the core journal with `origin`. `Err`
    /// when nothing ran (the journal or the environment could not be opened, or `confirmed` was
    /// made for another plan).
    fn execute(
        &self,
        plan: &CorePlan,
        confirmed: Confirmed,
        origin: Origin,
        progress: &dyn Fn(&ProgressEvent),
    ) -> Result<ExecReport, String>;
    /// The core journal the runs are recorded in (the file `smolsweep history` reads).
    fn journal_path(&self) -> Option<PathBuf> {
        smolsweep::journal::default_path()
    }
    /// The keep rules (`smolsweep::keep::path_for`, the file `smolsweep keep` writes).
    fn keep_path(&self) -> Option<PathBuf> {
        let env = smolsweep::env::EnvSnapshot::capture().ok()?;
        Some(smolsweep::keep::path_for(
            &env,
            smolsweep::model::Platform::current(),
        ))
    }
    /// Where the automatic clean-up policy is saved for the systemd user timer
    /// (`smolsweep::policy_path`).
    fn auto_policy_path(&self) -> Option<PathBuf> {
        let env = smolsweep::env::EnvSnapshot::capture().ok()?;
        Some(smolsweep::policy_path(&env.home))
    }
    /// What the uninstall wizard works on (the live system unless a test says otherwise).
    fn uninstaller(&self) -> std::sync::Arc<dyn crate::uninstaller::Uninstaller> {
        std::sync::Arc::new(crate::uninstaller::RealUninstaller)
    }
}

/// The real core.
#[derive(Debug, Default)]
pub struct RealBackend;

impl Backend for RealBackend {
    fn scan(&self) -> anyhow::Result<ScanReport> {
        if let Some(path) = std::env::var_os(REPORT_FILE_ENV) {
            let text = smolsweep::read_input(
                std::path::Path::new(&path),
                smolsweep::MAX_REPORT_BYTES,
                "a scan report Smolsweep wrote",
            )?;
            let mut r: ScanReport = serde_json::from_slice(&text)?;
            // A real scan does not find what is gone: drop findings whose path was removed.
            r.findings
                .retain(|f| std::fs::symlink_metadata(&f.path).is_ok());
            r.processes.retain(|p| {
                smolsweep::exec::ProcessRef::current(p.pid)
                    .is_some_and(|now| now.start_time == p.start_time)
            });
            r.compute_totals();
            return Ok(r);
        }
        let opts = smolsweep::scan::ScanOptions::from_env()?;
        // Incremental: directories the kernel reported no change in since the last scan are
        // not read again (smolsweep::scan::memo); every reclaim is re-judged on fresh facts.
        static MEMO: std::sync::OnceLock<smolsweep::scan::memo::ScanMemo> =
            std::sync::OnceLock::new();
        Ok(smolsweep::scan::memo::scan_with_memo(
            &opts,
            MEMO.get_or_init(Default::default),
        ))
    }

    fn execute(
        &self,
        plan: &CorePlan,
        confirmed: Confirmed,
        origin: Origin,
        progress: &dyn Fn(&ProgressEvent),
    ) -> Result<ExecReport, String> {
        // The journal lives in the app's data directory (`SMOLSWEEP_DATA_DIR` overrides it), the
        // same file as the CLI's. Every action is re-judged on the facts of the moment it runs,
        // in this process's environment, and carried out by the real runner.
        let journal = self
            .journal_path()
            .ok_or("no data directory for the journal, so nothing was done")?;
        let road = smolsweep::exec::Road::from_env()
            .map_err(|e| format!("cannot read the environment, so nothing was done: {e:#}"))?;
        run_on(
            plan,
            confirmed,
            origin,
            road.journal_at(journal).sink(progress),
        )
    }
}

/// The one road every action of the app takes ([`smolsweep::exec::run`]): `plan`, which
/// `confirmed` was made for, run on `road` (its journal opened first: nothing runs without it);
/// a plan the executor refuses whole is said "not run".
fn run_on(
    plan: &CorePlan,
    confirmed: Confirmed,
    origin: Origin,
    road: smolsweep::exec::Road<'_>,
) -> Result<ExecReport, String> {
    smolsweep::exec::run(plan, Some(confirmed), origin, road).map_err(|e| match e {
        smolsweep::exec::RunError::Exec(e) => format!("not run: {e}"),
        e => e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use smolsweep::exec::{ActionRunner, How};
    use smolsweep::model::Product;
    use smolsweep::model::Scope;
    use smolsweep::plan::Action;

    /// `plan` on the app's road with `judge` and `runner` of the test's own, journaled at
    /// `journal`.
    fn run_plan(
        plan: &CorePlan,
        confirmed: Confirmed,
        journal: &Path,
        judge: &mut dyn smolsweep::exec::Judge,
        runner: &dyn ActionRunner,
        origin: Origin,
        progress: &dyn Fn(&ProgressEvent),
    ) -> Result<ExecReport, String> {
        let road = smolsweep::exec::Road::given(judge, runner)
            .journal_at(journal.to_path_buf())
            .sink(progress);
        run_on(plan, confirmed, origin, road)
    }

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
    use smolsweep::model::{
        finding_id, Finding, Platform, Totals, Verdict, VmProcess, SCAN_SCHEMA,
    };
    use std::os::unix::process::ExitStatusExt;
    use std::path::Path;

    fn finding(path: &Path, root: &Path, verdict: Verdict) -> Finding {
        let md = std::fs::symlink_metadata(path).ok();
        let kind = smolsweep::model::FindingKind::CelestoOrphanDisk;
        Finding {
            apparent_bytes: 4096,
            allocated_bytes: 4096,
            reason: "no sandbox owns it".into(),
            identity: md.and_then(|_| smolsweep::model::FileIdentity::of(path).ok()),
            is_dir: path.is_dir(),
            root: Some(root.to_path_buf()),
            ..Finding::new(
                finding_id(Product::Celesto, kind, path),
                Product::Celesto,
                kind,
                path.to_path_buf(),
                verdict,
            )
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
            scanned_at_ns: 0,
            duration_ms: 0,
            compact: Default::default(),
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

    /// A reclaim view run as the shell runs it: the core executor, journaled at `journal`.
    fn run_view(p: &PlanView, journal: &Path) -> (ReclaimOutcome, Vec<Progress>) {
        let core = p
            .core
            .clone()
            .expect("a planned view carries its core plan");
        let events = std::cell::RefCell::new(vec![]);
        let r = run_plan(
            &core,
            Confirmed::of(&core, How::Click),
            journal,
            &mut AsPlanned,
            &smolsweep::exec::UnwiredRunner,
            Origin::new("window", "reclaim"),
            &|e| events.borrow_mut().extend(progress_of(&core, e)),
        );
        (ReclaimOutcome::of(p, r, (0, 0)), events.into_inner())
    }

    #[test]
    fn execute_removes_exactly_the_planned_paths_and_journals_the_run() {
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
        let journal = home.path().join("data/journal.jsonl");
        let (out, events) = run_view(&p, &journal);
        assert!(!a.exists());
        assert!(!dir.exists());
        assert!(b.exists(), "an unselected file stays");
        assert_eq!(out.count(StepStatus::Removed), 2);
        assert!(out.steps.iter().all(|s| s.freed_bytes > 0));
        assert_eq!(events.len(), 2);
        assert_eq!(events[1].done, 2);
        // The run is in the core journal, with the surface and command that made it.
        let h = history(Some(&journal), None);
        assert_eq!(h.runs.len(), 1, "{h:?}");
        assert_eq!(h.runs[0].run.origin, Some(Origin::new("window", "reclaim")));
        assert_eq!(h.runs[0].run.done, 2);
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
        let (out, _) = run_view(&p, &home.path().join("journal.jsonl"));
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
        let (out, _) = run_view(
            &plan(&r, &[r.findings[0].id.clone()]),
            &d.path().join("journal.jsonl"),
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

    #[test]
    fn nothing_runs_without_the_journal() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("state");
        std::fs::create_dir(&root).unwrap();
        let a = root.join("a");
        std::fs::write(&a, b"x").unwrap();
        let r = report(d.path(), vec![finding(&a, &root, Verdict::Reclaimable)]);
        let p = plan(&r, &[r.findings[0].id.clone()]);
        // The journal's directory is a file: the journal cannot be opened.
        std::fs::write(d.path().join("data"), b"").unwrap();
        let (out, _) = run_view(&p, &d.path().join("data/journal.jsonl"));
        assert!(a.exists());
        assert_eq!(out.count(StepStatus::Skipped), 1);
        assert!(out.steps[0].message.contains("journal"), "{:?}", out.steps);
    }

    fn vm(pid: u32, start_time: u64, owner: Option<&str>, orphan: bool, scope: Scope) -> VmProcess {
        VmProcess {
            pid,
            start_time,
            product: Product::Smolvm,
            shape: smolsweep::model::ProcShape::SmolvmBootVm,
            owner: owner.map(String::from),
            orphan,
            scope,
            held_deleted_bytes: 0,
            uid: rustix::process::geteuid().as_raw(),
            comm: String::new(),
            argv: vec![],
            paths: vec![],
            reason: String::new(),
            fds_readable: true,
            kept: None,
        }
    }

    fn machine(name: &str, branched_from: Option<&str>) -> smolsweep::model::Machine {
        smolsweep::model::Machine {
            alive: true,
            effective_state: "running".into(),
            allocated_bytes: 2_000_000,
            branched_from: branched_from.map(String::from),
            ..smolsweep::model::Machine::new(Product::Smolvm, name, "running")
        }
    }

    #[test]
    fn vm_plan_stops_or_deletes_an_owned_vm_as_its_machine_and_ends_an_orphan() {
        let home = tempfile::tempdir().unwrap();
        let mut r = report(home.path(), vec![]);
        r.machines.push(machine("web", None));
        r.processes
            .push(vm(10, 1, Some("web"), false, Scope::ThisHome));
        r.processes
            .push(vm(11, 1, Some("lost"), true, Scope::ThisHome));

        let stop = vm_plan(&r, 10, 1, VmAction::Stop, false);
        assert_eq!(stop.command, "stop");
        assert_eq!(
            stop.steps,
            ["stop smol-machines smolvm machine 'web' (running)"]
        );
        assert!(stop.refused.is_empty());
        assert_eq!(stop.digest, stop.core.as_ref().unwrap().action_digest());

        let del = vm_plan(&r, 10, 1, VmAction::Delete, false);
        assert_eq!(del.command, "delete");
        assert_eq!(
            del.steps,
            ["delete smol-machines smolvm machine 'web' (2.0 MB)"]
        );

        // Stop of an orphan ends its process; an owned VM's process is never reaped.
        let end = vm_plan(&r, 11, 1, VmAction::Stop, false);
        assert_eq!(end.command, "end process");
        assert!(
            end.steps[0].starts_with("end orphaned smol-machines smolvm")
                && end.steps[0].contains(" 11 "),
            "{:?}",
            end.steps
        );
        assert_eq!(vm_plan(&r, 11, 1, VmAction::Reap, false).digest, end.digest);
        let reap_owned = vm_plan(&r, 10, 1, VmAction::Reap, false);
        assert!(reap_owned.steps.is_empty());
        assert!(
            reap_owned.refused[0].reason.contains("stop"),
            "{:?}",
            reap_owned.refused
        );
        let del_orphan = vm_plan(&r, 11, 1, VmAction::Delete, false);
        assert!(del_orphan.steps.is_empty() && del_orphan.core.is_none());
    }

    /// A foreign VM (another HOME's) plans nothing, with the planner's reason; so does a VM whose
    /// pid now belongs to another process.
    #[test]
    fn vm_plan_refuses_a_foreign_vm_and_a_replaced_pid() {
        let home = tempfile::tempdir().unwrap();
        let mut r = report(home.path(), vec![]);
        r.machines.push(machine("web", None));
        // Another HOME's VM whose machine has the same name as one of this HOME's.
        r.processes
            .push(vm(20, 1, Some("web"), false, Scope::Foreign));
        for (action, command) in [(VmAction::Stop, "stop"), (VmAction::Reap, "end process")] {
            let p = vm_plan(&r, 20, 1, action, false);
            assert_eq!(p.command, command);
            assert!(p.steps.is_empty(), "{:?}", p.steps);
            assert!(p.core.as_ref().unwrap().actions.is_empty());
            assert_eq!(
                p.refused[0].reason, "belongs to another HOME; never signalled",
                "{:?}",
                p.refused
            );
        }
        assert!(vm_plan(&r, 20, 1, VmAction::Delete, false).steps.is_empty());
        let gone = vm_plan(&r, 20, 2, VmAction::Stop, false);
        assert!(gone.core.is_none());
        assert!(gone.refused[0].reason.contains("not in the latest scan"));
    }

    /// A machine row of one product whose name a sandbox of the other product also has: the
    /// core plans exactly that product's machine (it used to be refused as ambiguous), and a VM
    /// owned by it stops that machine, never its namesake.
    #[test]
    fn a_machine_row_beside_a_namesake_of_the_other_product_plans_its_own() {
        let home = tempfile::tempdir().unwrap();
        let mut r = report(home.path(), vec![]);
        r.machines.push(machine("web", None));
        let mut sandbox = machine("web", None);
        sandbox.product = Product::Celesto;
        r.machines.push(sandbox);
        r.processes
            .push(vm(10, 1, Some("web"), false, Scope::ThisHome));
        for p in [
            machine_plan(&r, Product::Smolvm, "web", VmAction::Stop, false),
            vm_plan(&r, 10, 1, VmAction::Stop, false),
        ] {
            let core = p.core.as_ref().unwrap();
            assert!(p.refused.is_empty(), "{:?}", p.refused);
            assert!(
                matches!(
                    &core.actions[..],
                    [a] if matches!(&a.action, Action::StopMachine { product: Product::Smolvm, name, .. } if name == "web")
                ),
                "{:?}",
                core.actions
            );
        }
        let celesto = machine_plan(&r, Product::Celesto, "web", VmAction::Delete, false);
        assert!(matches!(
            &celesto.core.as_ref().unwrap().actions[..],
            [a] if matches!(&a.action, Action::DeleteMachine { product: Product::Celesto, .. })
        ));
    }

    #[test]
    fn deleting_a_machine_with_branches_is_offered_with_cascade_only() {
        let home = tempfile::tempdir().unwrap();
        let mut r = report(home.path(), vec![]);
        r.machines.push(machine("base", None));
        r.machines.push(machine("kid", Some("base")));
        r.processes
            .push(vm(30, 1, Some("base"), false, Scope::ThisHome));
        let plain = vm_plan(&r, 30, 1, VmAction::Delete, false);
        assert!(plain.steps.is_empty());
        assert!(plain.cascade_available);
        assert!(
            plain.refused[0].reason.contains("kid"),
            "{:?}",
            plain.refused
        );
        let cascade = vm_plan(&r, 30, 1, VmAction::Delete, true);
        assert_eq!(cascade.steps.len(), 1);
        assert!(
            cascade.steps[0].contains("--cascade): kid"),
            "{:?}",
            cascade.steps
        );
        assert!(!cascade.cascade_available);
    }

    /// Celesto B7: a pid reused by another process is never signalled — the plan carries the
    /// start time the scan saw, and the real runner proves it on a pidfd before signalling.
    #[test]
    fn b7_recycled_pid_is_never_signalled() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id();
        let st = smolsweep::exec::ProcessRef::current(pid)
            .unwrap()
            .start_time;
        let home = tempfile::tempdir().unwrap();
        let journal = home.path().join("journal.jsonl");
        let runner = smolsweep::exec::RealRunner::new(
            smolsweep::env::EnvSnapshot::capture().unwrap(),
            Platform::current(),
        );
        let run = |start_time: u64| {
            let mut r = report(home.path(), vec![]);
            r.processes
                .push(vm(pid, start_time, None, true, Scope::ThisHome));
            let p = vm_plan(&r, pid, start_time, VmAction::Reap, false);
            assert_eq!(p.steps.len(), 1, "{p:?}");
            let core = p.core.as_ref().unwrap();
            let res = run_plan(
                core,
                Confirmed::of(core, How::Click),
                &journal,
                &mut AsPlanned,
                &runner,
                Origin::new("window", "end process"),
                &|_| {},
            );
            VmOutcome::of(&p, res)
        };
        // The scan saw another process under this pid (a different start time).
        let out = run(st + 1);
        assert_eq!(out.steps[0].status, ActionStatus::Skipped, "{out:?}");
        assert!(out.steps[0].message.contains("nothing was signalled"));
        assert_eq!(child.try_wait().unwrap(), None, "still running");
        let out = run(st);
        assert!(out.all_done(), "{out:?}");
        assert!(
            child.wait().unwrap().signal().is_some(),
            "ended by a signal"
        );
        let h = history(Some(&journal), None);
        assert_eq!(h.runs.len(), 2);
        assert_eq!(
            h.runs[0].run.origin,
            Some(Origin::new("window", "end process"))
        );
        assert_eq!((h.runs[0].run.done, h.runs[1].run.skipped), (1, 1));
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
