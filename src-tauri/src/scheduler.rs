//! The background loop: a scan on the interval (or when woken), then the automatic step.

use std::time::Duration;

use tauri::{AppHandle, Manager, Runtime};

use crate::auto;
use crate::scan::scan_now;
use crate::state::*;

/// A scheduled scan: scan, then the automatic clean-up step ([`auto::after_scan`]).
pub async fn scheduled_scan<R: Runtime>(app: &AppHandle<R>) -> Result<auto::AutoStep, String> {
    let r = scan_now(app).await?;
    let step = auto::after_scan(app, &r).await;
    if matches!(step, auto::AutoStep::Ran { .. }) {
        let _ = scan_now(app).await;
    }
    Ok(step)
}

pub(crate) async fn scan_loop<R: Runtime>(app: AppHandle<R>) {
    loop {
        let _ = scheduled_scan(&app).await;
        let st = app.state::<AppState>();
        let secs = lock(&st.settings).scan_interval_secs;
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(secs)) => {}
            _ = st.wake.notified() => {}
        }
    }
}
