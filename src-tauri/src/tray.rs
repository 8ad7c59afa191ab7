//! What a click on the tray menu does: rescan, open the window, and the native confirmations of
//! Reclaim, Stop and End process.

use smolsweep::tray::TrayAction;
use tauri::{AppHandle, Manager, Runtime};

use crate::backend::{self, PlanView, VmAction};
use crate::dialogs::{confirm, tell};
use crate::notes::{self};
use crate::notify::send_note;
use crate::runs::*;
use crate::scan::scan_now;
use crate::state::*;
use crate::why;
use crate::window::show_window;

/// What a click on a menu item does.
pub fn handle_menu_id<R: Runtime>(app: &AppHandle<R>, id: &str) {
    let Some(action) = TrayAction::from_id(id) else {
        return;
    };
    match action {
        TrayAction::Rescan => {
            let app = app.clone();
            tauri::async_runtime::spawn(async move {
                let _ = scan_now(&app).await;
            });
        }
        TrayAction::Open => show_window(app, None),
        TrayAction::Uninstall => show_window(app, Some("uninstall")),
        TrayAction::Quit => app.exit(0),
        TrayAction::Reclaim => confirm_tray_reclaim(app),
        TrayAction::Compact => confirm_tray_compact(app),
        TrayAction::Stop { pid, start_time } => {
            confirm_tray_vm(app, pid, start_time, VmAction::Stop)
        }
        TrayAction::Reap { pid, start_time } => {
            confirm_tray_vm(app, pid, start_time, VmAction::Reap)
        }
        TrayAction::Why { pid, .. } => why::tell_why(app, pid),
    }
}

/// The native confirmation for the tray's "Stop" and "Reap": the core plan for that VM, made
/// from a fresh scan, names what will happen; "yes" runs exactly that plan. A plan that plans
/// nothing is shown with the planner's reason, and nothing runs.
pub(crate) fn confirm_tray_vm<R: Runtime>(
    app: &AppHandle<R>,
    pid: u32,
    start_time: u64,
    action: VmAction,
) {
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        let plan = match plan_vm(&app, pid, start_time, action, false).await {
            Ok(p) => p,
            Err(e) => return tracing::warn!("{e}"),
        };
        let msg = plan.native_message();
        if plan.steps.is_empty() {
            return tell(&app, &plan.title, &msg);
        }
        let (app2, digest) = (app.clone(), plan.digest.clone());
        confirm(&app, &plan.title, &msg, &plan.ok, move |yes| {
            if yes {
                tauri::async_runtime::spawn(async move {
                    let vm = (pid, start_time, action, false);
                    match run_vm(&app2, "tray", vm, Some(digest)).await {
                        Ok(out) => {
                            if lock(&app2.state::<AppState>().settings).notifications {
                                send_note(&app2, notes::vm_note(&out), None);
                            }
                        }
                        Err(e) => tracing::warn!("{e}"),
                    }
                });
            }
        });
    });
}

/// The native confirmation for the tray's "Reclaim" item: names the count and the bytes.
pub(crate) fn confirm_tray_reclaim<R: Runtime>(app: &AppHandle<R>) {
    let st = app.state::<AppState>();
    let ids = lock(&st.tray_model).reclaim_ids.clone();
    let Some(report) = lock(&st.report).clone() else {
        return;
    };
    let plan = backend::plan(&report, &ids);
    if plan.steps.is_empty() {
        return;
    }
    let (title, msg) = tray_reclaim_text(&plan);
    let app2 = app.clone();
    let digest = plan.digest.clone();
    confirm(app, &title, &msg, "Reclaim", move |yes| {
        if yes {
            tauri::async_runtime::spawn(async move {
                if let Err(e) = reclaim(&app2, ids, Some(digest), "tray").await {
                    tracing::warn!("reclaim: {e}");
                }
            });
        }
    });
}

/// The native confirmation for the tray's "Compact 3 disks: 12 GB…": the compaction of every
/// disk with something to give back, planned from the latest scan, asked with the core's
/// sentence; "yes" runs exactly that plan (a notification tells what it gave back). A plan of
/// nothing is told with the planner's reasons, and nothing runs.
pub(crate) fn confirm_tray_compact<R: Runtime>(app: &AppHandle<R>) {
    let Some(report) = lock(&app.state::<AppState>().report).clone() else {
        return;
    };
    let ask = match crate::backend::compact_plan(&report, &[]) {
        Ok(plan) => smolsweep::view::window::compact_ask(plan),
        Err(e) => return tracing::warn!("compact: {e}"),
    };
    if ask.plan.steps.is_empty() {
        return tell(app, &ask.title, &ask.message);
    }
    let (app2, digest) = (app.clone(), ask.plan.digest.clone());
    confirm(app, &ask.title, &ask.message, ask.ok, move |yes| {
        if yes {
            tauri::async_runtime::spawn(async move {
                if let Err(e) = compact(&app2, vec![], Some(digest), "tray").await {
                    tracing::warn!("compact: {e}");
                }
            });
        }
    });
}

/// The tray's native confirmation for a reclaim: the core's words ([`PlanView::native_dialog`]).
pub fn tray_reclaim_text(plan: &PlanView) -> (String, String) {
    plan.native_dialog()
}
