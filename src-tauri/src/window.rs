//! The one window: shown (built the first time) at a view, hidden on close, released when left
//! hidden.

use std::sync::atomic::Ordering;

use tauri::{
    AppHandle, Emitter, Manager, Runtime, WebviewUrl, WebviewWindowBuilder, Window, WindowEvent,
};

use crate::state::{AppState, EV_NAVIGATE, MAIN_WINDOW, RELEASE_HIDDEN_WINDOW_AFTER};

/// Show (creating it the first time) the window, optionally at a view.
pub fn show_window<R: Runtime>(app: &AppHandle<R>, view: Option<&str>) {
    if let Some(w) = app.get_webview_window(MAIN_WINDOW) {
        let _ = w.show();
        let _ = w.unminimize();
        let _ = w.set_focus();
        if let Some(v) = view {
            let _ = app.emit_to(MAIN_WINDOW, EV_NAVIGATE, v);
        }
        return;
    }
    let url = match view {
        Some(v) => format!("index.html#{v}"),
        None => "index.html".to_string(),
    };
    let r = WebviewWindowBuilder::new(app, MAIN_WINDOW, WebviewUrl::App(url.into()))
        .title("Smolsweep")
        .inner_size(960.0, 680.0)
        .min_inner_size(640.0, 480.0)
        .build();
    if let Err(e) = r {
        tracing::warn!("opening the window: {e}");
    }
}

/// The window's events: closing it hides it (the app lives in the tray until "Quit"); a window
/// left hidden is released after a while so the idle app does not keep a webview.
pub(crate) fn on_event<R: Runtime>(w: &Window<R>, e: &WindowEvent) {
    if let WindowEvent::CloseRequested { api, .. } = e {
        api.prevent_close();
        let _ = w.hide();
        let st = w.state::<AppState>();
        let closed = st.closes.fetch_add(1, Ordering::SeqCst) + 1;
        let w = w.clone();
        tauri::async_runtime::spawn(async move {
            tokio::time::sleep(RELEASE_HIDDEN_WINDOW_AFTER).await;
            let st = w.state::<AppState>();
            if st.closes.load(Ordering::SeqCst) == closed && !w.is_visible().unwrap_or(true) {
                tracing::debug!("releasing the hidden window");
                let _ = w.destroy();
            }
        });
    }
}
