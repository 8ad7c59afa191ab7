//! Smolsweep's desktop shell: a tray app over the core.
//!
//! Everything is generic over [`tauri::Runtime`] so the commands and the menu are tested under
//! the mock runtime. [`build_app`] wires state, commands and window behaviour into any builder;
//! [`run`] adds the real plugins (single instance, autostart, dialogs) and runs the app.
//!
//! The rooms, from the bottom up: `state` (what the app holds), `status` (what the window is
//! sent), `dialogs`, `window`, `menu` (the tray drawn), `notify`, `scan` (one scan at a time),
//! `runs` (a confirmed plan through the one executor), `auto`, `uninstall`, `why`, `tray` (what
//! a click does), `scheduler` (the background loop), `commands` (the window's), and this file,
//! which wires them. Every sentence they show is the core's (`smolsweep::view`).

use tauri::{Builder, Manager, Runtime};

pub mod auto;
pub mod backend;
mod commands;
mod desktop_notes;
mod dialogs;
pub mod keeps;
mod menu;
pub mod notes;
// Apple's UserNotifications through objc2 (notify-rust's macOS backend needs Apple's SDK).
#[cfg(target_os = "macos")]
mod notes_macos;
mod notify;
mod runs;
mod scan;
mod scheduler;
pub mod settings;
mod start;
mod state;
mod status;
mod tray;
pub mod uninstall;
pub mod uninstaller;
#[cfg(target_os = "linux")]
mod watch;
#[cfg(not(target_os = "linux"))]
#[path = "watch_notify.rs"]
mod watch;
mod watch_core;
mod watch_events;
pub mod why;
mod window;

pub use backend::{
    Backend, History, MachineRef, PlanView, RealBackend, ReclaimOutcome, VmAction, VmOutcome,
    VmPlan, VmTarget,
};
pub use commands::apply_settings;
pub use desktop_notes::DesktopNotifier;
pub use menu::{build_menu, refresh, tray_icon};
pub use notes::{Clock, Note, Notifier, OrphanWatch, SystemClock};
pub use notify::set_clock;
pub use runs::{compact, plan_vm, reclaim, run_target, run_vm};
pub use scan::{scan_now, watch_counts};
pub use scheduler::scheduled_scan;
pub use settings::Settings;
pub use smolsweep::view::lowspace;
pub use state::{
    AppState, Deps, EV_NAVIGATE, EV_PROGRESS, EV_STATUS, EV_UNINSTALL_PROGRESS, MAIN_WINDOW,
    PLAN_CHANGED, RELEASE_HIDDEN_WINDOW_AFTER, TRAY_ID, VM_PLAN_CHANGED,
};
pub use status::{SettingsShown, Status, TREEMAP_H, TREEMAP_W};
pub use tray::{handle_menu_id, tray_reclaim_text};
pub use window::show_window;

use state::lock;

/// Wire the shell's state, commands and window behaviour into `builder`.
pub fn build_app<R: Runtime>(builder: Builder<R>, deps: Deps) -> Builder<R> {
    let state = AppState::new(&deps);
    if let (Some(c), Some(d)) = (&deps.config_dir, &deps.data_dir) {
        // Known directories (tests): ready before the event loop runs `setup`.
        state.init_dirs(c.clone(), d.clone());
    }
    let Deps {
        config_dir,
        data_dir,
        tray,
        background,
        ..
    } = deps;
    builder
        .manage(state)
        .manage(uninstall::WizardState::default())
        .invoke_handler(tauri::generate_handler![
            commands::get_status,
            commands::get_words,
            commands::get_report,
            commands::get_tray_model,
            commands::get_settings,
            commands::set_settings,
            commands::rescan,
            commands::plan_reclaim,
            commands::execute_reclaim,
            commands::plan_compact,
            commands::execute_compact,
            commands::get_history,
            commands::get_history_stamp,
            commands::get_trend,
            commands::selection_estimate,
            commands::plan_vm_action,
            commands::execute_vm_action,
            commands::plan_machine_action,
            commands::execute_machine_action,
            commands::keep_item,
            commands::remove_keep,
            commands::set_filter,
            commands::confirm_auto,
            uninstall::uninstall_preflight,
            uninstall::uninstall_plan,
            uninstall::uninstall_ticks,
            uninstall::uninstall_run,
            uninstall::uninstall_verify,
            why::why_of
        ])
        .on_window_event(window::on_event)
        .setup(move |app| {
            // No Dock icon: a menu-bar app (before the state is borrowed: this takes `app`
            // mutably).
            #[cfg(target_os = "macos")]
            app.set_activation_policy(tauri::ActivationPolicy::Accessory);
            let st = app.state::<AppState>();
            if st.dirs.get().is_none() {
                let config = match config_dir {
                    Some(d) => d,
                    None => app.path().app_config_dir()?,
                };
                let data = match data_dir {
                    Some(d) => d,
                    None => app.path().app_data_dir()?,
                };
                st.init_dirs(config, data);
            }

            let handle = app.handle().clone();
            let _ = st
                .reclaim_review
                .set(Box::new(move || tray::confirm_tray_reclaim(&handle)));
            if tray {
                let model = lock(&st.tray_model).clone();
                let menu = build_menu(app, &model)?;
                tauri::tray::TrayIconBuilder::with_id(TRAY_ID)
                    .icon(tray_icon(model.icon))
                    .icon_as_template(cfg!(target_os = "macos"))
                    .tooltip(&model.tooltip)
                    .menu(&menu)
                    .show_menu_on_left_click(true)
                    .on_menu_event(|app, ev| handle_menu_id(app, ev.id().as_ref()))
                    .build(app)?;
                if let (true, Some(t0)) = (lock(&st.last_menu).is_some(), menu::STARTED.get()) {
                    tracing::info!(
                        "first menu with the last scan's numbers after {} ms",
                        t0.elapsed().as_millis()
                    );
                }
            }
            if background {
                watch::start(app.handle());
                tauri::async_runtime::spawn(scheduler::scan_loop(app.handle().clone()));
            }
            if std::env::args().any(|a| a == "--show") {
                show_window(app.handle(), None);
            }
            Ok(())
        })
}

/// Build and run a real app from any builder (the real plugins are added by [`run`]).
pub fn run_app<R: Runtime>(builder: Builder<R>, context: tauri::Context<R>) {
    run_app_with(builder, context, Deps::real())
}

/// [`run_app`] with the given dependencies.
fn run_app_with<R: Runtime>(builder: Builder<R>, context: tauri::Context<R>, deps: Deps) {
    let app = build_app(builder, deps)
        .build(context)
        .expect("starting Smolsweep");
    app.run(|_app, event| {
        // No window is not a reason to exit: the app lives in the tray until "Quit".
        if let tauri::RunEvent::ExitRequested {
            code: None, api, ..
        } = event
        {
            api.prevent_exit();
        }
    });
}

/// The desktop app's entry point.
pub fn run() {
    start::before_gui();
    let _ = menu::STARTED.set(std::time::Instant::now());
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "smolsweep=info,smolsweep_desktop=info".into()),
        )
        .with_writer(std::io::stderr)
        .try_init();
    let builder = tauri::Builder::default()
        // A second launch opens the first instance's window instead.
        .plugin(tauri_plugin_single_instance::init(|app, _argv, _cwd| {
            show_window(app, None)
        }))
        .plugin(tauri_plugin_autostart::init(
            tauri_plugin_autostart::MacosLauncher::LaunchAgent,
            None,
        ))
        .plugin(tauri_plugin_dialog::init());
    let deps = Deps::real();
    scan::prefetch_first_scan(deps.backend.clone());
    run_app_with(builder, tauri::generate_context!(), deps);
}
