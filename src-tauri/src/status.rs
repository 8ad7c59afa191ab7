//! What the window is sent: the core's view of the latest scan with the shell's state beside it.

use std::sync::atomic::Ordering;

use serde::Serialize;
use smolsweep::model::{Product, ScanReport};
use smolsweep::plan::Plan;
use smolsweep::tray::TrayModel;
use smolsweep::view::window::WindowView;
use smolsweep::view::ScanView;

use crate::keeps;
use crate::settings::Settings;
use crate::state::*;

/// What the window shows: the core's view of the latest scan (`smolsweep::view::ScanView`,
/// which the window only renders), the report it was made from, the menu model and whether a
/// scan runs.
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    pub view: Option<ScanView>,
    /// Products installed in a version newer than the versions Smolsweep knows
    /// (`smolsweep::view::newer_products`): the window offers "accept newer" for them.
    pub newer: Vec<Product>,
    pub report: Option<ScanReport>,
    pub error: Option<String>,
    pub scanning: bool,
    /// The scan line: "Scanning…", "Scanned 4 min ago" (`smolsweep::view::scan_state`).
    pub scan_state: String,
    /// Each product's name for a person, by its JSON name (the page fills them in).
    pub product_names: std::collections::BTreeMap<&'static str, &'static str>,
    pub scans: u64,
    pub tray: TrayModel,
    /// Every keep rule, and the rule that keeps each kept finding (by finding id).
    pub keeps: Vec<keeps::KeepLine>,
    pub kept: std::collections::BTreeMap<String, keeps::KeepLine>,
    /// The window's filter controls as set, the kinds it can choose, and how many findings the
    /// filter shows of how many.
    pub filter: keeps::FilterInput,
    pub kinds: Vec<keeps::KindChoice>,
    pub shown: usize,
    pub total: usize,
    /// An automatic run waiting for the user.
    pub auto: Option<smolsweep::view::auto::AutoPreview>,
    /// The treemap of what the filter shows (`smolsweep::view::treemap`, in a
    /// [`TREEMAP_W`] × [`TREEMAP_H`] area).
    pub treemap: Vec<smolsweep::view::Tile>,
    /// What only the window shows beside `view`: the compaction's labels and paths that fit
    /// (`smolsweep::view::window::WindowView`).
    pub window: Option<WindowView>,
}

/// The treemap's layout area (the window scales it to its width; the aspect is the window's).
pub const TREEMAP_W: f64 = 1000.0;

pub const TREEMAP_H: f64 = 260.0;

pub(crate) fn status(st: &AppState) -> Status {
    let report = lock(&st.report).clone();
    let shown = report.as_ref().map(|r| keeps::filtered(st, r));
    let (keep_lines, kept) = keeps::lines(st);
    let error = lock(&st.scan_error).clone();
    let filter = lock(&st.filter).clone();
    let now = keeps::time_of(lock(&st.clock).now());
    let view = report
        .as_ref()
        .map(|r| ScanView::filtered(r, &Plan::reclaimable_of(r, &filter, now)));
    Status {
        window: report
            .as_ref()
            .zip(view.as_ref())
            .map(|(r, v)| WindowView::of(r, v)),
        keeps: keep_lines,
        kept,
        filter: lock(&st.filter_input).clone(),
        kinds: report.as_ref().map(keeps::kind_choices).unwrap_or_default(),
        shown: shown.as_ref().map(|r| r.findings.len()).unwrap_or(0),
        total: report.as_ref().map(|r| r.findings.len()).unwrap_or(0),
        auto: lock(&st.auto_pending).clone(),
        treemap: shown
            .as_ref()
            .map(|r| smolsweep::view::treemap(r, TREEMAP_W, TREEMAP_H))
            .unwrap_or_default(),
        view,
        newer: report
            .as_ref()
            .map(smolsweep::view::newer_products)
            .unwrap_or_default(),
        scan_state: smolsweep::view::scan_state(
            st.scanning.load(Ordering::SeqCst),
            report.as_ref().map(|r| r.scanned_at),
            error.is_some(),
            now_secs(),
        ),
        product_names: smolsweep::view::product_names(),
        report,
        error,
        scanning: st.scanning.load(Ordering::SeqCst),
        scans: st.scans.load(Ordering::SeqCst),
        tray: lock(&st.tray_model).clone(),
    }
}

/// The settings as the window gets them: the settings (sent back as they are) and the scan
/// interval in words, for an interval the window's list does not offer.
#[derive(Debug, Clone, Serialize)]
pub struct SettingsShown {
    #[serde(flatten)]
    pub settings: Settings,
    /// "90 minutes" (`smolsweep::view::interval_minutes`).
    pub scan_interval_label: String,
}

impl From<Settings> for SettingsShown {
    fn from(settings: Settings) -> Self {
        SettingsShown {
            scan_interval_label: smolsweep::view::interval_minutes(settings.scan_interval_secs),
            settings,
        }
    }
}
