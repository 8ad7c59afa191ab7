//! One scan at a time: scan, keep the report, record the space history, redraw the tray, tell the
//! window, notify, and watch the roots the scan found.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use smolsweep::model::ScanReport;
use tauri::{AppHandle, Manager, Runtime};

use crate::backend::Backend;
use crate::menu::refresh;
use crate::notify::{notify_low_space, notify_orphans};
use crate::state::*;
use crate::{keeps, watch};

/// Run one scan now (waiting for a running scan or reclaim to finish first) and update the
/// menu, the window and notifications.
pub async fn scan_now<R: Runtime>(app: &AppHandle<R>) -> Result<ScanReport, String> {
    let st = app.state::<AppState>();
    let res = {
        let _g = st.scan_lock.lock().await;
        st.scanning.store(true, Ordering::SeqCst);
        let b = st.backend.clone();
        let first = take_first_scan(&st);
        let res = tauri::async_runtime::spawn_blocking(move || {
            first.unwrap_or_else(|| b.scan()).map(|mut r| {
                keeps::apply_keeps(&*b, &mut r);
                r
            })
        })
        .await;
        st.scanning.store(false, Ordering::SeqCst);
        let res = match res {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(e)) => Err(format!("scan failed: {e:#}")),
            Err(e) => Err(format!("scan failed: {e}")),
        };
        match &res {
            Ok(r) => {
                *lock(&st.report) = Some(r.clone());
                *lock(&st.scan_error) = None;
            }
            Err(e) => {
                tracing::warn!("{e}");
                *lock(&st.scan_error) = Some(e.clone());
            }
        }
        st.scans.fetch_add(1, Ordering::SeqCst);
        res
    };
    if let Ok(r) = &res {
        record_trend(app, r).await;
    }
    refresh(app);
    if let Ok(r) = &res {
        save_menu(app, r.scanned_at).await;
    }
    if let Ok(r) = &res {
        notify_orphans(app, r);
        notify_low_space(app, r);
        watch::update(app, r);
    }
    res
}

/// The first scan, started before the shell's window system and tray are up
/// ([`prefetch_first_scan`]), for the first [`scan_now`] to take instead of scanning again.
static FIRST_SCAN: Mutex<Option<std::thread::JoinHandle<anyhow::Result<ScanReport>>>> =
    Mutex::new(None);

/// Start the first scan now, beside the start of the window system and the tray, so that the
/// first menu with fresh numbers comes as soon as both are done, not one after the other.
pub(crate) fn prefetch_first_scan(backend: Arc<dyn Backend>) {
    let started = std::thread::Builder::new()
        .name("smolsweep-first-scan".into())
        .spawn(move || backend.scan());
    if let Ok(h) = started {
        *lock(&FIRST_SCAN) = Some(h);
    }
}

/// The first scan started by [`prefetch_first_scan`], when there is one and it still scans as
/// a scan now would (no product's newer version accepted in the settings, which were read
/// after it started).
fn take_first_scan(st: &AppState) -> Option<anyhow::Result<ScanReport>> {
    let first = lock(&FIRST_SCAN).take()?;
    let same = lock(&st.settings).accept_newer.is_empty();
    let r = first.join().ok()?;
    same.then_some(r)
}

/// Save the menu just drawn for the next start (`smolsweep::tray::SavedMenu`).
async fn save_menu<R: Runtime>(app: &AppHandle<R>, scanned_at: u64) {
    let st = app.state::<AppState>();
    let (Some(path), menu) = (st.saved_menu_path(), lock(&st.tray_model).clone()) else {
        return;
    };
    let _ = tauri::async_runtime::spawn_blocking(move || {
        if let Err(e) = smolsweep::tray::SavedMenu::save(&path, &menu, scanned_at) {
            tracing::warn!("saving the tray menu for the next start: {e}");
        }
    })
    .await;
}

/// What the file watcher has read since the app started: (inotify events, reads that asked for
/// a rescan). `None` without background work. For tests and the idle bench's reasoning.
pub fn watch_counts<R: Runtime>(app: &AppHandle<R>) -> Option<(u64, u64)> {
    watch::counts(app)
}

/// The space history beside the core journal.
pub(crate) fn trend_path(st: &AppState) -> Option<PathBuf> {
    let j = st.backend.journal_path()?;
    Some(j.with_file_name(smolsweep::trend::TREND_FILE))
}

/// Record `r`'s point in the space history. Scans within one hour that change nothing are
/// kept in memory only, so the file is written at most once per hour while nothing changes.
pub(crate) async fn record_trend<R: Runtime>(app: &AppHandle<R>, r: &ScanReport) {
    let r = r.clone();
    let app2 = app.clone();
    let _ = tauri::async_runtime::spawn_blocking(move || {
        let st = app2.state::<AppState>();
        let Some(path) = trend_path(&st) else { return };
        let point = smolsweep::trend::Point::of(&r);
        let now = now_secs();
        if let Some(t) = lock(&st.trend).as_mut() {
            if !t.would_change(&point) {
                t.record(point, now);
                return;
            }
        }
        let journal = st.backend.journal_path();
        let rec = smolsweep::trend::record(&path, journal.as_deref(), point, now);
        if let Some(e) = &rec.error {
            tracing::warn!("{e}");
        }
        if let Some(d) = rec.damaged {
            tracing::warn!("{}", smolsweep::view::trend_notice(&d));
            *lock(&st.trend_damaged) = Some(d);
        }
        *lock(&st.trend) = Some(rec.trend);
    })
    .await;
}
