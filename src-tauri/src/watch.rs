//! Rescan soon after the SmolVM roots change: file watching with a debounce.
//!
//! Events are coalesced: after the first change the watcher waits for [`QUIET`] without further
//! changes (at most [`MAX_WAIT`]), wakes the scan loop once, then ignores changes for
//! [`MIN_SPACING`] so a VM busy writing its disk does not keep the scanner running.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use notify::{EventKind, RecursiveMode, Watcher};
use smolsweep::model::ScanReport;
use tauri::{AppHandle, Manager, Runtime};
use tokio::sync::mpsc;

use crate::AppState;

pub const QUIET: Duration = Duration::from_secs(2);
pub const MAX_WAIT: Duration = Duration::from_secs(10);
pub const MIN_SPACING: Duration = Duration::from_secs(20);

pub(crate) struct WatchState {
    tx: mpsc::UnboundedSender<()>,
    current: Mutex<Option<(BTreeSet<PathBuf>, notify::RecommendedWatcher)>>,
}

/// The directories worth watching: the products' roots that exist, outermost only.
pub fn roots_to_watch(r: &ScanReport) -> BTreeSet<PathBuf> {
    let all: BTreeSet<PathBuf> = r
        .products
        .iter()
        .flat_map(|p| p.roots.values().cloned())
        .filter(|p| p.is_dir())
        .collect();
    all.iter()
        .filter(|p| !all.iter().any(|q| q != *p && p.starts_with(q)))
        .cloned()
        .collect()
}

/// Whether a file system event can change what a scan finds (reads and atime updates cannot).
pub fn relevant(kind: &EventKind) -> bool {
    use notify::event::{MetadataKind, ModifyKind};
    !matches!(
        kind,
        EventKind::Access(_) | EventKind::Modify(ModifyKind::Metadata(MetadataKind::AccessTime))
    )
}

/// Start the debounce task. The watcher itself is (re)built by [`update`] after each scan.
pub(crate) fn start<R: Runtime>(app: &AppHandle<R>) {
    let (tx, mut rx) = mpsc::unbounded_channel::<()>();
    app.manage(WatchState {
        tx,
        current: Mutex::new(None),
    });
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        while rx.recv().await.is_some() {
            let started = tokio::time::Instant::now();
            loop {
                let left = MAX_WAIT.saturating_sub(started.elapsed());
                if left.is_zero() {
                    break;
                }
                match tokio::time::timeout(QUIET.min(left), rx.recv()).await {
                    Ok(Some(())) => continue,
                    Ok(None) => return,
                    Err(_) => break,
                }
            }
            tracing::debug!("SmolVM roots changed: rescanning");
            app.state::<AppState>().wake.notify_one();
            tokio::time::sleep(MIN_SPACING).await;
            while rx.try_recv().is_ok() {}
        }
    });
}

/// Watch the roots of the latest report (only rebuilt when they change).
pub(crate) fn update<R: Runtime>(app: &AppHandle<R>, r: &ScanReport) {
    let Some(ws) = app.try_state::<WatchState>() else {
        return;
    };
    let roots = roots_to_watch(r);
    let mut cur = ws.current.lock().unwrap_or_else(|e| e.into_inner());
    if cur.as_ref().map(|(r, _)| r) == Some(&roots) {
        return;
    }
    let tx = ws.tx.clone();
    let w = notify::recommended_watcher(move |ev: notify::Result<notify::Event>| {
        if let Ok(ev) = ev {
            if relevant(&ev.kind) {
                let _ = tx.send(());
            }
        }
    });
    let mut w = match w {
        Ok(w) => w,
        Err(e) => {
            tracing::warn!("file watching unavailable: {e}");
            return;
        }
    };
    for root in &roots {
        if let Err(e) = w.watch(root, RecursiveMode::Recursive) {
            tracing::warn!("watching {}: {e}", root.display());
        }
    }
    *cur = Some((roots, w));
}

#[cfg(test)]
mod tests {
    use super::*;
    use smolsweep::model::{Platform, Product, ProductReport, Totals, SCAN_SCHEMA};

    #[test]
    fn watches_existing_outermost_roots_only() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("data");
        let b = a.join("images");
        std::fs::create_dir_all(&b).unwrap();
        let r = ScanReport {
            schema: SCAN_SCHEMA.into(),
            home: d.path().into(),
            platform: Platform::Linux,
            products: vec![ProductReport {
                product: Product::Celesto,
                detected: true,
                status: "ok".into(),
                roots: [
                    ("data_dir".to_string(), a.clone()),
                    ("image_dir".to_string(), b),
                    ("cache_root".to_string(), d.path().join("missing")),
                ]
                .into_iter()
                .collect(),
                problems: vec![],
                version: None,
            }],
            findings: vec![],
            machines: vec![],
            processes: vec![],
            totals: Totals::default(),
            scanned_at: 0,
            duration_ms: 0,
        };
        assert_eq!(roots_to_watch(&r), [a].into_iter().collect());
    }

    #[test]
    fn reads_do_not_trigger_a_rescan() {
        use notify::event::{AccessKind, CreateKind, MetadataKind, ModifyKind};
        assert!(!relevant(&EventKind::Access(AccessKind::Any)));
        assert!(!relevant(&EventKind::Modify(ModifyKind::Metadata(
            MetadataKind::AccessTime
        ))));
        assert!(relevant(&EventKind::Create(CreateKind::File)));
        assert!(relevant(&EventKind::Modify(ModifyKind::Any)));
    }
}
