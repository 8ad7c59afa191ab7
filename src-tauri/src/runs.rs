//! The desktop's runs: a confirmed core plan through the one executor, under the scan lock,
//! then a rescan. Every run of the app (the window's and the tray's reclaim, Stop / End process /
//! Delete, the automatic run) takes [`execute`].

use smolsweep::exec::{Confirmed, ExecReport, How, Origin, ProgressEvent};
use smolsweep::plan::Plan as CorePlan;
use smolsweep::view::window as window_view;
use tauri::{AppHandle, Emitter, Manager, Runtime};

use crate::backend::{self, ReclaimOutcome, VmAction, VmOutcome, VmPlan, VmTarget};
use crate::notes;
use crate::notify::send_note;
use crate::scan::scan_now;
use crate::state::*;

/// What a run tells as each action finishes (the window's progress bar, or nothing).
pub(crate) type OnFinished = Box<dyn Fn(&CorePlan, &ProgressEvent) + Send>;

/// The one road a run of the app takes: `core`, confirmed `how`, through the backend's executor
/// (the core's `exec::run`: every action re-judged as it runs, journaled with `origin`), each
/// finished action passed to `progress`. The caller holds the scan lock (`_held`), under which it
/// made the plan from the latest scan, so no scan or other run comes between.
pub(crate) async fn execute(
    st: &AppState,
    _held: &tokio::sync::MutexGuard<'_, ()>,
    core: CorePlan,
    (how, origin): (How, Origin),
    progress: OnFinished,
) -> Result<ExecReport, String> {
    let b = st.backend.clone();
    let confirmed = Confirmed::of(&core, how);
    tauri::async_runtime::spawn_blocking(move || {
        b.execute(&core, confirmed, origin, &|e| progress(&core, e))
    })
    .await
    .unwrap_or_else(|e| Err(format!("the run failed: {e}")))
}

/// What the executor returned, or why nothing ran.
type Ran = Result<ExecReport, String>;

/// What one kind of confirmed run asks of its plan: what a changed plan says, whether the
/// window follows its progress, the journal's command, the fingerprint shown, the core plan to
/// execute (or why nothing runs), the outcome and the notification it sends (when notifications
/// are on).
trait RunKind {
    type Plan: Send + 'static;
    type Outcome;
    const CHANGED: &'static str;
    const PROGRESS: bool;
    fn command(plan: &Self::Plan) -> &str;
    fn digest(plan: &Self::Plan) -> &str;
    fn core(plan: &Self::Plan) -> Result<CorePlan, String>;
    /// The outcome of `r`, which ran between `times` (Unix seconds).
    fn outcome(plan: &Self::Plan, r: Ran, times: (u64, u64)) -> Self::Outcome;
    fn note(_: &Self::Outcome) -> Option<notes::Note> {
        None
    }
}

/// A reclaim of findings (the window's and the tray's).
struct Reclaim;
impl RunKind for Reclaim {
    type Plan = backend::PlanView;
    type Outcome = ReclaimOutcome;
    const CHANGED: &'static str = PLAN_CHANGED;
    const PROGRESS: bool = true;
    fn command(_: &Self::Plan) -> &str {
        "reclaim"
    }
    fn digest(plan: &Self::Plan) -> &str {
        &plan.digest
    }
    fn core(plan: &Self::Plan) -> Result<CorePlan, String> {
        let core = plan.core.clone().filter(|_| !plan.steps.is_empty());
        core.ok_or_else(|| NOTHING_TO_RECLAIM.into())
    }
    fn outcome(plan: &Self::Plan, r: Ran, times: (u64, u64)) -> ReclaimOutcome {
        ReclaimOutcome::of(plan, r, times)
    }
    fn note(out: &ReclaimOutcome) -> Option<notes::Note> {
        Some(notes::reclaim_note(out))
    }
}

/// A compaction of disks.
struct Compact;
impl RunKind for Compact {
    type Plan = backend::PlanView;
    type Outcome = ReclaimOutcome;
    const CHANGED: &'static str = window_view::COMPACT_PLAN_CHANGED;
    const PROGRESS: bool = true;
    fn command(_: &Self::Plan) -> &str {
        "compact"
    }
    fn digest(plan: &Self::Plan) -> &str {
        &plan.digest
    }
    fn core(plan: &Self::Plan) -> Result<CorePlan, String> {
        let core = plan.core.clone().filter(|_| !plan.steps.is_empty());
        core.ok_or_else(|| window_view::compact_ask(plan.clone()).message)
    }
    fn outcome(plan: &Self::Plan, r: Ran, times: (u64, u64)) -> ReclaimOutcome {
        window_view::compact_outcome(plan, r, times)
    }
    fn note(out: &ReclaimOutcome) -> Option<notes::Note> {
        Some(window_view::compact_note(out))
    }
}

/// Stop / End process / Delete of one VM or machine.
struct Vm;
impl RunKind for Vm {
    type Plan = VmPlan;
    type Outcome = VmOutcome;
    const CHANGED: &'static str = VM_PLAN_CHANGED;
    const PROGRESS: bool = false;
    fn command(plan: &VmPlan) -> &str {
        &plan.command
    }
    fn digest(plan: &VmPlan) -> &str {
        &plan.digest
    }
    fn core(plan: &VmPlan) -> Result<CorePlan, String> {
        let core = plan.core.clone().filter(|_| !plan.steps.is_empty());
        core.ok_or_else(|| plan.lines().join("; "))
    }
    fn outcome(plan: &VmPlan, r: Ran, _: (u64, u64)) -> VmOutcome {
        VmOutcome::of(plan, r)
    }
}

/// The one confirmed run: under the scan lock, `plan_of` the latest scan; when it no longer has
/// the `digest` that was shown nothing runs (the user reviews again), nor when it plans nothing
/// (it says why); otherwise it runs through [`execute`], journaled with `surface` and the kind's
/// command, its progress sent to the window when the kind has it; then the kind's notification
/// (when notifications are on) and a rescan.
async fn run_confirmed<R: Runtime, K: RunKind>(
    app: &AppHandle<R>,
    plan_of: impl FnOnce(&smolsweep::model::ScanReport) -> Result<K::Plan, String>,
    digest: Option<String>,
    surface: &str,
) -> Result<K::Outcome, String> {
    let out = run_locked::<R, K>(app, plan_of, digest, surface).await?;
    let st = app.state::<AppState>();
    if let Some(note) = K::note(&out).filter(|_| lock(&st.settings).notifications) {
        send_note(app, note, None);
    }
    let _ = scan_now(app).await;
    Ok(out)
}

/// [`run_confirmed`] up to the outcome, under the scan lock.
async fn run_locked<R: Runtime, K: RunKind>(
    app: &AppHandle<R>,
    plan_of: impl FnOnce(&smolsweep::model::ScanReport) -> Result<K::Plan, String>,
    digest: Option<String>,
    surface: &str,
) -> Result<K::Outcome, String> {
    let st = app.state::<AppState>();
    let _g = st.scan_lock.lock().await;
    let report = lock(&st.report).clone().ok_or(NO_SCAN_YET)?;
    let plan = plan_of(&report)?;
    if digest.is_some_and(|d| d != K::digest(&plan)) {
        return Err(K::CHANGED.into());
    }
    let core = K::core(&plan)?;
    let origin = Origin::new(surface, K::command(&plan));
    let started = now_secs();
    let app2 = app.clone();
    let progress: OnFinished = match K::PROGRESS {
        true => Box::new(move |core: &CorePlan, e: &ProgressEvent| {
            if let Some(p) = backend::progress_of(core, e) {
                let _ = app2.emit(EV_PROGRESS, p);
            }
        }),
        false => Box::new(|_, _| {}),
    };
    let r = execute(&st, &_g, core, (How::Click, origin), progress).await;
    Ok(K::outcome(&plan, r, (started, now_secs())))
}

/// Execute the plan for `ids` against the latest scan through the core executor (journaled
/// with `surface` and `reclaim`), notify, and rescan.
///
/// `digest` is the fingerprint of the plan the user confirmed ([`backend::PlanView::digest`]): when
/// a scan in between changed what the plan would do, nothing runs and the user reviews again.
pub async fn reclaim<R: Runtime>(
    app: &AppHandle<R>,
    ids: Vec<String>,
    digest: Option<String>,
    surface: &str,
) -> Result<ReclaimOutcome, String> {
    let plan_of = |report: &_| Ok(backend::plan(report, &ids));
    run_confirmed::<R, Reclaim>(app, plan_of, digest, surface).await
}

/// Compact the disks `targets` names (every disk with something to give back when empty),
/// planned from the latest scan as `smolsweep compact` plans it, through the core executor
/// (journaled with `surface` and `compact`), notify, and rescan. `digest` is the fingerprint of
/// the plan the user confirmed: when a scan in between changed it, nothing runs.
pub async fn compact<R: Runtime>(
    app: &AppHandle<R>,
    targets: Vec<String>,
    digest: Option<String>,
    surface: &str,
) -> Result<ReclaimOutcome, String> {
    let plan_of = |report: &_| backend::compact_plan(report, &targets);
    run_confirmed::<R, Compact>(app, plan_of, digest, surface).await
}

/// Plan Stop / End process / Delete of one VM from a fresh scan ([`backend::vm_plan`]).
pub async fn plan_vm<R: Runtime>(
    app: &AppHandle<R>,
    pid: u32,
    start_time: u64,
    action: VmAction,
    cascade: bool,
) -> Result<VmPlan, String> {
    let report = scan_now(app).await?;
    Ok(backend::vm_plan(&report, pid, start_time, action, cascade))
}

/// Run the confirmed plan for `(pid, start_time, action, cascade)` through the core executor,
/// journaled with `surface` and the plan's command, then rescan. Re-planned from the latest scan:
/// when it no longer has the `digest` that was shown, nothing runs; a plan that plans nothing
/// runs nothing and says why.
pub async fn run_vm<R: Runtime>(
    app: &AppHandle<R>,
    surface: &str,
    (pid, start_time, action, cascade): (u32, u64, VmAction, bool),
    digest: Option<String>,
) -> Result<VmOutcome, String> {
    let target = VmTarget::Process { pid, start_time };
    run_target(app, surface, target, (action, cascade), digest).await
}

/// Run the confirmed plan for `action` on `target`, re-planned from the latest scan (see
/// [`run_vm`]).
pub async fn run_target<R: Runtime>(
    app: &AppHandle<R>,
    surface: &str,
    target: VmTarget,
    (action, cascade): (VmAction, bool),
    digest: Option<String>,
) -> Result<VmOutcome, String> {
    let plan_of = |report: &_| Ok(backend::target_plan(report, &target, action, cascade));
    run_confirmed::<R, Vm>(app, plan_of, digest, surface).await
}
