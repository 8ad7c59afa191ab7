//! Notifications after a scan: new orphans (spaced out, held back ones sent when the gap ends)
//! and low space; their review action.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use smolsweep::model::ScanReport;
use tauri::{AppHandle, Manager, Runtime};

use crate::notes::{Clock, Note};
use crate::state::*;
use crate::window::show_window;

/// Use `clock` for spacing notifications (tests: a fake clock).
pub fn set_clock<R: Runtime>(app: &AppHandle<R>, clock: Arc<dyn Clock>) {
    *lock(&app.state::<AppState>().clock) = clock;
}

pub(crate) fn notify_orphans<R: Runtime>(app: &AppHandle<R>, r: &ScanReport) {
    let st = app.state::<AppState>();
    let clock = lock(&st.clock).clone();
    let now = clock.now();
    let (note, due) = {
        let mut w = lock(&st.orphans);
        let before = w.clone();
        let note = w.observe(r, now);
        let due = w.held_back_until(r, now);
        if *w != before {
            if let Some(p) = st.orphans_path() {
                let bytes = serde_json::to_vec(&*w).unwrap_or_default();
                let _ = smolsweep::write_atomic(&p, &bytes, true);
            }
        }
        (note, due)
    };
    // Orphans held back by the rate limit go out when the gap ends, from the latest scan then
    // (one that is gone by then is not announced).
    let timer = st.note_timers.fetch_add(1, Ordering::SeqCst) + 1;
    if let Some(t) = due {
        let app2 = app.clone();
        tauri::async_runtime::spawn(async move {
            clock.sleep_until(t).await;
            let st = app2.state::<AppState>();
            if st.note_timers.load(Ordering::SeqCst) != timer {
                return;
            }
            let latest = lock(&st.report).clone();
            if let Some(r) = latest {
                notify_orphans(&app2, &r);
            }
        });
    }
    // With notifications off, orphans are still marked as seen: turning them on later does not
    // announce old ones.
    if let Some(n) = note {
        if lock(&st.settings).notifications {
            send_note(app, n, Some("findings"));
        }
    }
}

/// One notification when the file system holding SmolVM state runs low and something can be
/// given back ([`lowspace`]); its "Reclaim N" action opens the tray's reclaim confirmation, and
/// without one (only orphaned VMs hold space) it opens the window's VM list.
pub(crate) fn notify_low_space<R: Runtime>(app: &AppHandle<R>, r: &ScanReport) {
    let st = app.state::<AppState>();
    let now = lock(&st.clock).now();
    let reclaim = lock(&st.tray_model).reclaim_bytes;
    let growth = lock(&st.trend)
        .as_ref()
        .and_then(smolsweep::view::trend_growth);
    let fs = smolsweep::space_of(r);
    let alert = lock(&st.low_space).check(fs, r, reclaim, growth, now);
    let on = lock(&st.settings).notifications;
    if let (Some(a), true) = (alert, on) {
        let note = a.note();
        let review = if note.action.is_some() {
            RECLAIM_ACTION
        } else {
            "vms"
        };
        send_note(app, note, Some(review));
    }
}

pub(crate) fn send_note<R: Runtime>(
    app: &AppHandle<R>,
    note: Note,
    review_view: Option<&'static str>,
) {
    let st = app.state::<AppState>();
    let notifier = st.notifier.clone();
    let app2 = app.clone();
    // notify-rust talks D-Bus synchronously: keep it off the async workers.
    std::thread::spawn(move || {
        let app3 = app2.clone();
        let on_review: Box<dyn FnOnce() + Send> = Box::new(move || {
            let app4 = app3.clone();
            let _ = app3.run_on_main_thread(move || {
                if review_view == Some(RECLAIM_ACTION) {
                    if let Some(review) = app4.state::<AppState>().reclaim_review.get() {
                        review()
                    }
                } else {
                    show_window(&app4, review_view)
                }
            });
        });
        if let Err(e) = notifier.notify(&note, on_review) {
            tracing::warn!("notification: {e:#}");
        }
    });
}
