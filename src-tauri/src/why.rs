//! "Why?" on a finding row, a machine row or a VM process row: the core's answer
//! (`smolsweep::view::why`) for the scan the window shows: the sentences `smolsweep why` prints,
//! under their labels in the window (`smolsweep::view::window::WhyPanel`), as text in the tray's
//! native dialog.

use serde::{Deserialize, Serialize};
use smolsweep::model::Product;
use smolsweep::view::why::{Asked, Why};
use smolsweep::view::window::WhyPanel;
use smolsweep::WhyFacts;

/// What a row asks about.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "by", rename_all = "snake_case")]
pub enum WhyTarget {
    /// A finding row, by its id.
    Finding { id: String },
    /// A machine or sandbox row.
    Machine { product: Product, name: String },
    /// A VM process row.
    Process { pid: u32 },
}

impl WhyTarget {
    fn asked(self) -> Asked {
        match self {
            WhyTarget::Finding { id } => Asked::Finding(id),
            WhyTarget::Machine { product, name } => Asked::Machine { product, name },
            WhyTarget::Process { pid } => Asked::Process(pid),
        }
    }
}

/// The answer: the core's text, the same as labelled sections for the window's dialog, and its
/// facts.
#[derive(Debug, Clone, Serialize)]
pub struct WhyShown {
    /// `Why::text`: what `smolsweep why` prints (the tray's native dialog shows it).
    pub text: String,
    /// The window's dialog: the same sentences under their labels, and the command to copy.
    pub panel: WhyPanel,
    /// The facts behind it.
    pub why: Why,
}

/// The core's "why" for `target`, on `report` (the scan the window shows), with the keep rules
/// at `keep_file`.
pub fn why_of_report(
    report: smolsweep::model::ScanReport,
    keep_file: Option<&std::path::Path>,
    target: WhyTarget,
) -> Result<WhyShown, String> {
    let env = smolsweep::env::EnvSnapshot::capture().map_err(|e| format!("{e:#}"))?;
    let facts = WhyFacts::of_report(report, &env, keep_file);
    let why = facts.explain(&target.asked());
    if !why.found {
        return Err(why.text().trim_end().to_string());
    }
    Ok(WhyShown {
        text: why.text(),
        panel: WhyPanel::of(&why),
        why,
    })
}

/// The tray's "Why?" on a VM: the core's text for that process, in a native dialog.
pub(crate) fn tell_why<R: tauri::Runtime>(app: &tauri::AppHandle<R>, pid: u32) {
    use tauri::Manager;
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        let st = app.state::<crate::state::AppState>();
        let Some(report) = crate::state::lock(&st.report).clone() else {
            return;
        };
        let keep_file = st.backend.keep_path();
        let target = WhyTarget::Process { pid };
        let shown = tauri::async_runtime::spawn_blocking(move || {
            why_of_report(report, keep_file.as_deref(), target)
        })
        .await;
        match shown {
            Ok(Ok(w)) => crate::dialogs::tell(&app, "Why?", &w.text),
            Ok(Err(e)) => crate::dialogs::tell(&app, "Why?", &e),
            Err(e) => tracing::warn!("{e}"),
        }
    });
}

// ---------------------------------------------------------------------------------------------
// Commands (registered in lib.rs)

#[tauri::command]
pub(crate) async fn why_of<R: tauri::Runtime>(
    app: tauri::AppHandle<R>,
    target: WhyTarget,
) -> Result<WhyShown, String> {
    use tauri::Manager;
    let st = app.state::<crate::state::AppState>();
    let report = crate::state::lock(&st.report)
        .clone()
        .ok_or(crate::state::NO_SCAN_YET)?;
    let keep_file = st.backend.keep_path();
    tauri::async_runtime::spawn_blocking(move || {
        why_of_report(report, keep_file.as_deref(), target)
    })
    .await
    .map_err(|e| format!("{e}"))?
}
