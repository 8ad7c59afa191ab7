//! The tray as drawn: the core's menu model as a native menu, and its icon.

use std::sync::OnceLock;

use smolsweep::tray::{IconState, TrayEntry, TrayModel};
use tauri::menu::{IsMenuItem, Menu, MenuItem, PredefinedMenuItem, Submenu};
use tauri::{AppHandle, Emitter, Manager, Runtime};

use crate::state::*;
use crate::status::status;

/// When `run` started (for the launch-to-first-menu figure in the log).
pub(crate) static STARTED: OnceLock<std::time::Instant> = OnceLock::new();

pub(crate) static FIRST_MENU: std::sync::Once = std::sync::Once::new();

/// The icon for a state (on macOS one template icon; the menu's status line tells the state).
pub fn tray_icon(state: IconState) -> tauri::image::Image<'static> {
    let bytes: &'static [u8] = if cfg!(target_os = "macos") {
        include_bytes!("../../icons/tray-template.png")
    } else {
        match state {
            IconState::Clean => include_bytes!("../../icons/tray-clean.png"),
            IconState::Reclaimable => include_bytes!("../../icons/tray-reclaimable.png"),
            IconState::Orphans => include_bytes!("../../icons/tray-orphans.png"),
        }
    };
    tauri::image::Image::from_bytes(bytes).expect("bundled tray icons are valid PNGs")
}

/// Draw a [`TrayModel`] as a native menu. Item ids are the model's ids.
pub fn build_menu<R: Runtime, M: Manager<R>>(m: &M, model: &TrayModel) -> tauri::Result<Menu<R>> {
    let menu = Menu::new(m)?;
    for e in &model.entries {
        match e {
            TrayEntry::Item(i) => {
                menu.append(&MenuItem::with_id(
                    m,
                    i.id.as_str(),
                    &i.label,
                    i.enabled,
                    None::<&str>,
                )?)?;
            }
            TrayEntry::Separator => menu.append(&PredefinedMenuItem::separator(m)?)?,
            TrayEntry::Submenu {
                id,
                label,
                enabled,
                items,
            } => {
                let children: Vec<MenuItem<R>> = items
                    .iter()
                    .map(|i| MenuItem::with_id(m, i.id.as_str(), &i.label, i.enabled, None::<&str>))
                    .collect::<tauri::Result<_>>()?;
                let refs: Vec<&dyn IsMenuItem<R>> =
                    children.iter().map(|c| c as &dyn IsMenuItem<R>).collect();
                menu.append(&Submenu::with_id_and_items(
                    m,
                    id.as_str(),
                    label,
                    *enabled,
                    &refs,
                )?)?;
            }
        }
    }
    Ok(menu)
}

/// Recompute the menu model and redraw the tray; tell the window.
pub fn refresh<R: Runtime>(app: &AppHandle<R>) {
    let st = app.state::<AppState>();
    let model = {
        let report = lock(&st.report);
        let err = lock(&st.scan_error);
        match (&*report, &*err) {
            (_, Some(e)) => TrayModel::scan_failed(e),
            (Some(r), None) => TrayModel::from_report(r, &lock(&st.settings).tray())
                .with_trend(lock(&st.trend).as_ref()),
            (None, None) => lock(&st.last_menu)
                .clone()
                .unwrap_or_else(TrayModel::scanning),
        }
    };
    // Redraw only what changed: a rebuilt menu gets new item ids, which closes a menu the user
    // holds open and turns a click in flight into a click on nothing.
    let changed = {
        let mut drawn = lock(&st.tray_model);
        let changed = *drawn != model;
        *drawn = model.clone();
        changed
    };
    if let (true, Some(tray)) = (changed, app.tray_by_id(TRAY_ID)) {
        match build_menu(app, &model) {
            Ok(menu) => {
                if let Err(e) = tray.set_menu(Some(menu)) {
                    tracing::warn!("tray menu: {e}");
                }
            }
            Err(e) => tracing::warn!("building the tray menu: {e}"),
        }
        if let (Some(t0), true) = (STARTED.get(), lock(&st.report).is_some()) {
            FIRST_MENU.call_once(|| {
                tracing::info!(
                    "first menu with scan results after {} ms",
                    t0.elapsed().as_millis()
                )
            });
        }
        let _ = tray.set_icon(Some(tray_icon(model.icon)));
        let _ = tray.set_tooltip(Some(&model.tooltip));
        #[cfg(target_os = "macos")]
        let _ = tray.set_icon_as_template(true);
    }
    let _ = app.emit(EV_STATUS, status(&st));
}
