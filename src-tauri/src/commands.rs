//! The window's commands (not `pub`: E0255 with the generated command macros).

use smolsweep::model::{Product, ScanReport};
use smolsweep::tray::TrayModel;
use smolsweep::view::window::{self as window_view, CompactAsk, SelectionView};
use tauri::{AppHandle, Emitter, Manager, Runtime};

use crate::backend::{
    self, History, MachineRef, PlanView, ReclaimOutcome, VmAction, VmOutcome, VmPlan, VmTarget,
};
use crate::menu::refresh;
use crate::runs::*;
use crate::scan::{scan_now, trend_path};
use crate::settings::Settings;
use crate::state::*;
use crate::status::*;
use crate::{auto, keeps};

#[tauri::command]
pub(crate) fn get_status(state: tauri::State<'_, AppState>) -> Status {
    status(&state)
}

/// The window's fixed words by key (`smolsweep::view::words`): its headings, labels, buttons
/// and empty states, asked once at start; the window holds none of its own.
#[tauri::command]
pub(crate) fn get_words() -> std::collections::BTreeMap<&'static str, &'static str> {
    smolsweep::view::words::window_words()
}

#[tauri::command]
pub(crate) fn get_report(state: tauri::State<'_, AppState>) -> Option<ScanReport> {
    lock(&state.report).clone()
}

#[tauri::command]
pub(crate) fn get_tray_model(state: tauri::State<'_, AppState>) -> TrayModel {
    lock(&state.tray_model).clone()
}

#[tauri::command]
pub(crate) fn get_settings(state: tauri::State<'_, AppState>) -> SettingsShown {
    lock(&state.settings).clone().into()
}

#[tauri::command]
pub(crate) fn set_settings<R: Runtime>(
    app: AppHandle<R>,
    settings: Settings,
) -> Result<SettingsShown, String> {
    apply_settings(&app, settings).map(SettingsShown::from)
}

#[tauri::command]
pub(crate) async fn rescan<R: Runtime>(app: AppHandle<R>) -> Result<Status, String> {
    scan_now(&app).await?;
    Ok(status(&app.state::<AppState>()))
}

/// The ids of `ids` the window's filter shows (the core's rule, [`window_view::in_view`]).
pub(crate) fn in_view(st: &AppState, ids: Vec<String>) -> Vec<String> {
    let Some(r) = lock(&st.report).clone() else {
        return ids;
    };
    window_view::in_view(&r, &keeps::filtered(st, &r), ids)
}

#[tauri::command]
pub(crate) fn plan_reclaim(
    state: tauri::State<'_, AppState>,
    ids: Vec<String>,
) -> Result<PlanView, String> {
    let ids = in_view(&state, ids);
    let report = lock(&state.report).clone().ok_or(NO_SCAN_YET)?;
    Ok(backend::plan(&report, &ids))
}

/// What the Reclaim button and the line beside it say for the current selection: the core's
/// count of it, and its estimate and confirmation of the plan for it.
#[tauri::command]
pub(crate) fn selection_estimate(
    state: tauri::State<'_, AppState>,
    ids: Vec<String>,
) -> Result<SelectionView, String> {
    let ids = in_view(&state, ids);
    let report = lock(&state.report).clone().ok_or(NO_SCAN_YET)?;
    Ok(backend::selection_estimate(&report, &ids))
}

#[tauri::command]
pub(crate) async fn execute_reclaim<R: Runtime>(
    app: AppHandle<R>,
    ids: Vec<String>,
    digest: Option<String>,
) -> Result<ReclaimOutcome, String> {
    let ids = in_view(&app.state::<AppState>(), ids);
    reclaim(&app, ids, digest, "window").await
}

/// The compaction the window asks about: every disk with something to give back, or the
/// disks of one machine or sandbox (`product`, `name`), with the core's words.
#[tauri::command]
pub(crate) fn plan_compact(
    state: tauri::State<'_, AppState>,
    machine: Option<MachineRef>,
) -> Result<CompactAsk, String> {
    let report = lock(&state.report).clone().ok_or(NO_SCAN_YET)?;
    let plan = backend::compact_plan(&report, &compact_targets(machine))?;
    Ok(window_view::compact_ask(plan))
}

/// Run the compaction the window showed (`digest`), through the one executor.
#[tauri::command]
pub(crate) async fn execute_compact<R: Runtime>(
    app: AppHandle<R>,
    machine: Option<MachineRef>,
    digest: Option<String>,
) -> Result<ReclaimOutcome, String> {
    compact(&app, compact_targets(machine), digest, "window").await
}

fn compact_targets(machine: Option<MachineRef>) -> Vec<String> {
    machine
        .map(|m| window_view::machine_target(m.product, &m.name))
        .into_iter()
        .collect()
}

/// Keep a finding, a machine or a kind (a core keep rule), then rescan.
#[tauri::command]
pub(crate) async fn keep_item<R: Runtime>(
    app: AppHandle<R>,
    request: keeps::KeepRequest,
    why: Option<String>,
) -> Result<Status, String> {
    keeps::add(&app, &request, why.as_deref().unwrap_or(""))?;
    scan_now(&app).await?;
    Ok(status(&app.state::<AppState>()))
}

/// Remove a keep rule, then rescan.
#[tauri::command]
pub(crate) async fn remove_keep<R: Runtime>(
    app: AppHandle<R>,
    id: String,
) -> Result<Status, String> {
    keeps::remove(&app, &id)?;
    scan_now(&app).await?;
    Ok(status(&app.state::<AppState>()))
}

/// Narrow the findings view (and what its Reclaim selects) with the core's filter.
#[tauri::command]
pub(crate) fn set_filter<R: Runtime>(
    app: AppHandle<R>,
    filter: keeps::FilterInput,
) -> Result<Status, String> {
    let st = app.state::<AppState>();
    let f = filter.filter()?;
    *lock(&st.filter) = f;
    *lock(&st.filter_input) = filter;
    let s = status(&st);
    let _ = app.emit(EV_STATUS, s.clone());
    Ok(s)
}

/// Run the automatic clean-up the window previewed (its first run, or one above the cap).
#[tauri::command]
pub(crate) async fn confirm_auto<R: Runtime>(
    app: AppHandle<R>,
    digest: String,
) -> Result<ReclaimOutcome, String> {
    auto::confirm(&app, &digest).await
}

#[tauri::command]
pub(crate) fn get_history(state: tauri::State<'_, AppState>) -> History {
    let journal = state.backend.journal_path();
    backend::history(journal.as_deref(), state.legacy_history_path().as_deref())
}

/// What changes whenever any surface journals a run (`smolsweep::journal::stamp`): the window
/// reads History again when it does.
#[tauri::command]
pub(crate) fn get_history_stamp(state: tauri::State<'_, AppState>) -> String {
    smolsweep::journal::stamp(state.backend.journal_path().as_deref())
}

/// The space history as the core's view: the series per product, the freed runs, the
/// sentence, and a notice when its file was damaged.
#[tauri::command]
pub(crate) fn get_trend(state: tauri::State<'_, AppState>) -> smolsweep::view::TrendView {
    let cached = lock(&state.trend).clone();
    let (t, damaged) = match cached {
        Some(t) => (t, lock(&state.trend_damaged).clone()),
        None => match trend_path(&state) {
            Some(p) => {
                let l = smolsweep::trend::load(&p);
                (l.trend, l.damaged)
            }
            None => Default::default(),
        },
    };
    smolsweep::view::trend_view(&t, damaged.as_ref(), &smolsweep::env::SystemZone)
}

#[tauri::command]
pub(crate) async fn plan_vm_action<R: Runtime>(
    app: AppHandle<R>,
    pid: u32,
    start_time: u64,
    action: VmAction,
    cascade: Option<bool>,
) -> Result<VmPlan, String> {
    plan_vm(&app, pid, start_time, action, cascade.unwrap_or(false)).await
}

/// Stop / Delete of a machine or sandbox of either product (the Running VMs view's machine rows).
#[tauri::command]
pub(crate) async fn plan_machine_action<R: Runtime>(
    app: AppHandle<R>,
    product: Product,
    name: String,
    action: VmAction,
    cascade: Option<bool>,
) -> Result<VmPlan, String> {
    let report = scan_now(&app).await?;
    let target = VmTarget::Machine { product, name };
    Ok(backend::target_plan(
        &report,
        &target,
        action,
        cascade.unwrap_or(false),
    ))
}

#[tauri::command]
pub(crate) async fn execute_machine_action<R: Runtime>(
    app: AppHandle<R>,
    product: Product,
    name: String,
    action: VmAction,
    cascade: Option<bool>,
    digest: Option<String>,
) -> Result<VmOutcome, String> {
    let target = VmTarget::Machine { product, name };
    run_target(
        &app,
        "window",
        target,
        (action, cascade.unwrap_or(false)),
        digest,
    )
    .await
}

#[tauri::command]
pub(crate) async fn execute_vm_action<R: Runtime>(
    app: AppHandle<R>,
    pid: u32,
    start_time: u64,
    action: VmAction,
    cascade: Option<bool>,
    digest: Option<String>,
) -> Result<VmOutcome, String> {
    let vm = (pid, start_time, action, cascade.unwrap_or(false));
    run_vm(&app, "window", vm, digest).await
}

/// Save, apply (autostart, menu) and return the normalised settings.
pub fn apply_settings<R: Runtime>(app: &AppHandle<R>, s: Settings) -> Result<Settings, String> {
    let st = app.state::<AppState>();
    let mut s = s.normalised();
    s.auto.filter()?;
    s.auto.cap()?;
    {
        // Only a confirmed preview sets `auto_confirmed`; the core says when a change keeps it.
        let old = lock(&st.settings);
        s.auto_confirmed = old.auto_confirmed && s.auto.keeps_confirmation_of(&old.auto);
    }
    let old = std::mem::replace(&mut *lock(&st.settings), s.clone());
    if let Some(p) = st.settings_path() {
        s.save(&p).map_err(|e| format!("saving settings: {e}"))?;
    }
    if old.auto != s.auto {
        if let Some(p) = st.backend.auto_policy_path() {
            s.auto
                .save(&p)
                .map_err(|e| format!("saving the automatic clean-up policy: {e}"))?;
        }
        *lock(&st.auto_pending) = None;
    }
    if old.autostart != s.autostart {
        set_autostart(app, s.autostart)?;
    }
    if old.accept_newer != s.accept_newer {
        s.apply_accept_newer();
    }
    if old.scan_interval_secs != s.scan_interval_secs || old.accept_newer != s.accept_newer {
        st.wake.notify_one();
    }
    refresh(app);
    Ok(s)
}

pub(crate) fn set_autostart<R: Runtime>(app: &AppHandle<R>, on: bool) -> Result<(), String> {
    use tauri_plugin_autostart::ManagerExt;
    if app
        .try_state::<tauri_plugin_autostart::AutoLaunchManager>()
        .is_none()
    {
        // Not registered (headless tests): the setting is only saved.
        return Ok(());
    }
    let al = app.autolaunch();
    let r = if on { al.enable() } else { al.disable() };
    r.map_err(|e| format!("autostart: {e}"))
}
