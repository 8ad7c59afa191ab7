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

/// Execute the plan for `ids` against the latest scan through the core executor (journaled
/// with `surface` and `reclaim`), notify, and rescan.
///
/// `digest` is the fingerprint of the plan the user confirmed ([`backend::Plan::digest`]): when
/// a scan in between changed what the plan would do, nothing runs and the user reviews again.
pub async fn reclaim<R: Runtime>(
    app: &AppHandle<R>,
    ids: Vec<String>,
    digest: Option<String>,
    surface: &str,
) -> Result<ReclaimOutcome, String> {
    let st = app.state::<AppState>();
    let out = {
        let _g = st.scan_lock.lock().await;
        let report = lock(&st.report).clone().ok_or(NO_SCAN_YET)?;
        let plan = backend::plan(&report, &ids);
        if digest.is_some_and(|d| d != plan.digest) {
            return Err(PLAN_CHANGED.into());
        }
        let Some(core) = plan.core.clone().filter(|_| !plan.steps.is_empty()) else {
            return Err(NOTHING_TO_RECLAIM.into());
        };
        let (app2, origin) = (app.clone(), Origin::new(surface, "reclaim"));
        let started = now_secs();
        let progress = Box::new(move |core: &CorePlan, e: &ProgressEvent| {
            if let Some(p) = backend::progress_of(core, e) {
                let _ = app2.emit(EV_PROGRESS, p);
            }
        });
        let r = execute(&st, &_g, core, (How::Click, origin), progress).await;
        ReclaimOutcome::of(&plan, r, started)
    };
    if lock(&st.settings).notifications {
        send_note(app, notes::reclaim_note(&out), None);
    }
    let _ = scan_now(app).await;
    Ok(out)
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
    let st = app.state::<AppState>();
    let out = {
        let _g = st.scan_lock.lock().await;
        let report = lock(&st.report).clone().ok_or("no scan has finished yet")?;
        let plan = window_view::compact_plan(&report, &targets)?;
        if digest.is_some_and(|d| d != plan.digest) {
            return Err(window_view::COMPACT_PLAN_CHANGED.into());
        }
        let Some(core) = plan.core.clone().filter(|_| !plan.steps.is_empty()) else {
            return Err(window_view::compact_ask(plan).message);
        };
        let (app2, origin) = (app.clone(), Origin::new(surface, "compact"));
        let started = now_secs();
        let progress = Box::new(move |core: &CorePlan, e: &ProgressEvent| {
            if let Some(p) = backend::progress_of(core, e) {
                let _ = app2.emit(EV_PROGRESS, p);
            }
        });
        let r = execute(&st, &_g, core, (How::Click, origin), progress).await;
        window_view::compact_outcome(&plan, r, started)
    };
    if lock(&st.settings).notifications {
        send_note(app, window_view::compact_note(&out), None);
    }
    let _ = scan_now(app).await;
    Ok(out)
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
    let st = app.state::<AppState>();
    let out = {
        let _g = st.scan_lock.lock().await;
        let report = lock(&st.report).clone().ok_or(NO_SCAN_YET)?;
        let plan = VmPlan::of(&report, &target, action, cascade);
        if digest.is_some_and(|d| d != plan.digest) {
            return Err(VM_PLAN_CHANGED.into());
        }
        let Some(core) = plan.core.clone().filter(|_| !plan.steps.is_empty()) else {
            return Err(plan.lines().join("; "));
        };
        let origin = Origin::new(surface, &plan.command);
        let r = execute(&st, &_g, core, (How::Click, origin), Box::new(|_, _| {})).await;
        VmOutcome::of(&plan, r)
    };
    let _ = scan_now(app).await;
    Ok(out)
}
