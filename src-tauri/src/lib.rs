//! Smolsweep's desktop shell: a tray app over the core.
//!
//! Everything is generic over [`tauri::Runtime`] so the commands and the menu are tested under
//! the mock runtime. [`build_app`] wires state, commands and window behaviour into any builder;
//! [`run`] adds the real plugins (single instance, autostart, dialogs) and runs the app.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde::Serialize;
use smolsweep::exec::{Confirmed, How};
use smolsweep::model::{Product, ScanReport};
use smolsweep::tray::{IconState, TrayAction, TrayEntry, TrayModel};
use smolsweep::view::{Confirmation, ScanView};
use tauri::menu::{IsMenuItem, Menu, MenuItem, PredefinedMenuItem, Submenu};
use tauri::{AppHandle, Builder, Emitter, Manager, Runtime, WebviewUrl, WebviewWindowBuilder};

pub mod auto;
pub mod backend;
mod desktop_notes;
pub mod keeps;
pub mod lowspace;
pub mod notes;
// Apple's UserNotifications through objc2 (notify-rust's macOS backend needs Apple's SDK).
#[cfg(target_os = "macos")]
mod notes_macos;
pub mod settings;
pub mod uninstall;
#[cfg(target_os = "linux")]
mod watch;
#[cfg(not(target_os = "linux"))]
#[path = "watch_notify.rs"]
mod watch;
mod watch_events;
pub mod why;

pub use backend::{
    Backend, History, MachineRef, PlanView, RealBackend, ReclaimOutcome, VmAction, VmOutcome,
    VmPlan, VmTarget,
};
pub use desktop_notes::DesktopNotifier;
pub use notes::{Clock, Note, Notifier, OrphanWatch, SystemClock};
pub use settings::Settings;

/// A window closed (hidden) this long without being shown again is destroyed, which ends its
/// webview processes; "Open Smolsweep" then builds a new one.
pub const RELEASE_HIDDEN_WINDOW_AFTER: Duration = Duration::from_secs(60);

/// Label of the one window.
pub const MAIN_WINDOW: &str = "main";
/// Id of the tray icon.
pub const TRAY_ID: &str = "smolsweep";
/// Event with a fresh [`Status`] after every scan.
pub const EV_STATUS: &str = "status-updated";
/// Event with [`backend::Progress`] while a reclaim runs.
pub const EV_PROGRESS: &str = "reclaim-progress";
/// Event with [`uninstall::UninstallProgress`] while the uninstall wizard runs.
pub const EV_UNINSTALL_PROGRESS: &str = uninstall::EV_UNINSTALL_PROGRESS;
/// Event asking the window to show a view (`overview`, `findings`, `uninstall`, ...).
pub const EV_NAVIGATE: &str = "navigate";

/// What the shell is built with. Tests replace the backend and notifier and turn off the tray
/// and background work.
pub struct Deps {
    pub backend: Arc<dyn Backend>,
    pub notifier: Arc<dyn Notifier>,
    /// Settings directory; `None` means the platform's app config dir.
    pub config_dir: Option<PathBuf>,
    /// Notification state; `None` means the platform's app data dir. (Runs are journaled in
    /// the core journal, [`Backend::journal_path`].)
    pub data_dir: Option<PathBuf>,
    /// Create the tray icon.
    pub tray: bool,
    /// Scan at start and on the interval, and watch the SmolVM roots.
    pub background: bool,
    /// Answer to confirmation dialogs when no dialog plugin is registered (tests).
    pub confirm_answer: bool,
}

impl Deps {
    /// The real core, desktop notifications, the tray and background scanning.
    pub fn real() -> Deps {
        Deps {
            backend: Arc::new(RealBackend),
            notifier: Arc::new(DesktopNotifier),
            config_dir: None,
            data_dir: None,
            tray: true,
            background: true,
            confirm_answer: false,
        }
    }
}

struct Dirs {
    config: PathBuf,
    data: PathBuf,
}

/// The shell's state, managed by Tauri.
pub struct AppState {
    backend: Arc<dyn Backend>,
    notifier: Arc<dyn Notifier>,
    dirs: OnceLock<Dirs>,
    report: Mutex<Option<ScanReport>>,
    scan_error: Mutex<Option<String>>,
    tray_model: Mutex<TrayModel>,
    settings: Mutex<Settings>,
    orphans: Mutex<OrphanWatch>,
    /// Held for the whole of a scan or a reclaim: never two at once.
    scan_lock: tokio::sync::Mutex<()>,
    scanning: AtomicBool,
    scans: AtomicU64,
    /// Wakes the background loop (settings changed, roots changed).
    wake: tokio::sync::Notify,
    confirm_answer: bool,
    /// Counts window closes, so a release timer only acts on the latest close.
    closes: AtomicU64,
    /// The clock notifications are spaced by.
    clock: Mutex<Arc<dyn Clock>>,
    /// Counts held-back notification timers, so only the latest one acts.
    note_timers: AtomicU64,
    /// The window's filter (`smolsweep::filter::Filter`): what the findings view shows and
    /// what its Reclaim can select.
    filter: Mutex<smolsweep::filter::Filter>,
    filter_input: Mutex<keeps::FilterInput>,
    /// An automatic run waiting for the user (its first run, or above the cap).
    auto_pending: Mutex<Option<auto::Pending>>,
    /// Whether the current low-space episode was announced.
    low_space: Mutex<lowspace::LowSpaceWatch>,
    /// The space history (`smolsweep::trend`), once a scan recorded into it, and what its
    /// file's damage said.
    trend: Mutex<Option<smolsweep::trend::Trend>>,
    trend_damaged: Mutex<Option<smolsweep::trend::Damaged>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl AppState {
    fn new(d: &Deps) -> AppState {
        AppState {
            backend: d.backend.clone(),
            notifier: d.notifier.clone(),
            dirs: OnceLock::new(),
            report: Mutex::new(None),
            scan_error: Mutex::new(None),
            tray_model: Mutex::new(TrayModel::scanning()),
            settings: Mutex::new(Settings::default()),
            orphans: Mutex::new(OrphanWatch::default()),
            scan_lock: tokio::sync::Mutex::new(()),
            scanning: AtomicBool::new(false),
            scans: AtomicU64::new(0),
            wake: tokio::sync::Notify::new(),
            confirm_answer: d.confirm_answer,
            closes: AtomicU64::new(0),
            clock: Mutex::new(Arc::new(SystemClock)),
            note_timers: AtomicU64::new(0),
            filter: Mutex::new(Default::default()),
            filter_input: Mutex::new(Default::default()),
            auto_pending: Mutex::new(None),
            low_space: Mutex::new(Default::default()),
            trend: Mutex::new(None),
            trend_damaged: Mutex::new(None),
        }
    }
    /// Set the directories and load what is saved there (once).
    fn init_dirs(&self, config: PathBuf, data: PathBuf) {
        let settings = Settings::load(&config.join("settings.json"));
        settings.apply_accept_newer();
        *lock(&self.settings) = settings;
        let notified = smolsweep::input::read_input(
            &data.join("notified.json"),
            smolsweep::input::MAX_REPORT_BYTES,
            "notification state Smolsweep wrote",
        );
        if let Ok(s) = notified {
            if let Ok(w) = serde_json::from_slice(&s) {
                *lock(&self.orphans) = w;
            }
        }
        let _ = self.dirs.set(Dirs { config, data });
    }
    fn settings_path(&self) -> Option<PathBuf> {
        self.dirs.get().map(|d| d.config.join("settings.json"))
    }
    /// The window's own history file of older versions (no longer written or imported).
    fn legacy_history_path(&self) -> Option<PathBuf> {
        self.dirs
            .get()
            .map(|d| d.data.join(backend::LEGACY_HISTORY_FILE))
    }
    fn orphans_path(&self) -> Option<PathBuf> {
        self.dirs.get().map(|d| d.data.join("notified.json"))
    }
}

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
    pub auto: Option<auto::AutoPreview>,
    /// The treemap of what the filter shows (`smolsweep::view::treemap`, in a
    /// [`TREEMAP_W`] × [`TREEMAP_H`] area).
    pub treemap: Vec<smolsweep::view::Tile>,
}

/// The treemap's layout area (the window scales it to its width; the aspect is the window's).
pub const TREEMAP_W: f64 = 1000.0;
pub const TREEMAP_H: f64 = 260.0;

fn status(st: &AppState) -> Status {
    let report = lock(&st.report).clone();
    let shown = report.as_ref().map(|r| keeps::filtered(st, r));
    let (keep_lines, kept) = keeps::lines(st);
    let error = lock(&st.scan_error).clone();
    let filter = lock(&st.filter).clone();
    let now = keeps::time_of(lock(&st.clock).now());
    Status {
        keeps: keep_lines,
        kept,
        filter: lock(&st.filter_input).clone(),
        kinds: report.as_ref().map(keeps::kind_choices).unwrap_or_default(),
        shown: shown.as_ref().map(|r| r.findings.len()).unwrap_or(0),
        total: report.as_ref().map(|r| r.findings.len()).unwrap_or(0),
        auto: auto::pending(st),
        treemap: shown
            .as_ref()
            .map(|r| smolsweep::view::treemap(r, TREEMAP_W, TREEMAP_H))
            .unwrap_or_default(),
        view: report.as_ref().map(|r| ScanView::filtered(r, &filter, now)),
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
        product_names: uninstall::product_names(),
        report,
        error,
        scanning: st.scanning.load(Ordering::SeqCst),
        scans: st.scans.load(Ordering::SeqCst),
        tray: lock(&st.tray_model).clone(),
    }
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

// ---------------------------------------------------------------------------------------------
// Commands (not `pub`: E0255 with the generated command macros)

#[tauri::command]
fn get_status(state: tauri::State<'_, AppState>) -> Status {
    status(&state)
}

#[tauri::command]
fn get_report(state: tauri::State<'_, AppState>) -> Option<ScanReport> {
    lock(&state.report).clone()
}

#[tauri::command]
fn get_tray_model(state: tauri::State<'_, AppState>) -> TrayModel {
    lock(&state.tray_model).clone()
}

/// The settings as the window gets them: the settings (sent back as they are) and the scan
/// interval in words, for an interval the window's list does not offer.
#[derive(Debug, Clone, Serialize)]
pub struct SettingsShown {
    #[serde(flatten)]
    pub settings: Settings,
    /// "90 minutes".
    pub scan_interval_label: String,
}

impl From<Settings> for SettingsShown {
    fn from(settings: Settings) -> Self {
        let m = settings.scan_interval_secs.div_ceil(60);
        SettingsShown {
            scan_interval_label: format!("{m} minute{}", if m == 1 { "" } else { "s" }),
            settings,
        }
    }
}

#[tauri::command]
fn get_settings(state: tauri::State<'_, AppState>) -> SettingsShown {
    lock(&state.settings).clone().into()
}

#[tauri::command]
fn set_settings<R: Runtime>(
    app: AppHandle<R>,
    settings: Settings,
) -> Result<SettingsShown, String> {
    apply_settings(&app, settings).map(SettingsShown::from)
}

#[tauri::command]
async fn rescan<R: Runtime>(app: AppHandle<R>) -> Result<Status, String> {
    scan_now(&app).await?;
    Ok(status(&app.state::<AppState>()))
}

/// The ids of `ids` the window's filter shows (the window's Reclaim selects only from them).
fn in_view(st: &AppState, ids: Vec<String>) -> Vec<String> {
    let Some(r) = lock(&st.report).clone() else {
        return ids;
    };
    let shown = keeps::filtered(st, &r);
    ids.into_iter()
        .filter(|id| shown.finding(id).is_some() || r.finding(id).is_none())
        .collect()
}

#[tauri::command]
fn plan_reclaim(state: tauri::State<'_, AppState>, ids: Vec<String>) -> Result<PlanView, String> {
    let ids = in_view(&state, ids);
    let report = lock(&state.report)
        .clone()
        .ok_or("no scan has finished yet")?;
    Ok(backend::plan(&report, &ids))
}

/// What the Reclaim button says for the current selection: the core's estimate and
/// confirmation of the plan for it.
#[tauri::command]
fn selection_estimate(
    state: tauri::State<'_, AppState>,
    ids: Vec<String>,
) -> Result<Confirmation, String> {
    let ids = in_view(&state, ids);
    let report = lock(&state.report)
        .clone()
        .ok_or("no scan has finished yet")?;
    Ok(backend::selection_estimate(&report, &ids))
}

#[tauri::command]
async fn execute_reclaim<R: Runtime>(
    app: AppHandle<R>,
    ids: Vec<String>,
    digest: Option<String>,
) -> Result<ReclaimOutcome, String> {
    let ids = in_view(&app.state::<AppState>(), ids);
    reclaim(&app, ids, digest, "window").await
}

/// Keep a finding, a machine or a kind (a core keep rule), then rescan.
#[tauri::command]
async fn keep_item<R: Runtime>(
    app: AppHandle<R>,
    request: keeps::KeepRequest,
    why: Option<String>,
) -> Result<Status, String> {
    keeps::add(&app, &request, why.as_deref().unwrap_or(""))?;
    scan_now(&app).await?;
    Ok(status(&app.state::<AppState>()))
}

/// Remove a keep rule, then rescan.
#[tauri::command]
async fn remove_keep<R: Runtime>(app: AppHandle<R>, id: String) -> Result<Status, String> {
    keeps::remove(&app, &id)?;
    scan_now(&app).await?;
    Ok(status(&app.state::<AppState>()))
}

/// Narrow the findings view (and what its Reclaim selects) with the core's filter.
#[tauri::command]
fn set_filter<R: Runtime>(app: AppHandle<R>, filter: keeps::FilterInput) -> Result<Status, String> {
    let st = app.state::<AppState>();
    let f = filter.filter()?;
    *lock(&st.filter) = f;
    *lock(&st.filter_input) = filter;
    let s = status(&st);
    let _ = app.emit(EV_STATUS, s.clone());
    Ok(s)
}

/// Run the automatic clean-up the window previewed (its first run, or one above the cap).
#[tauri::command]
async fn confirm_auto<R: Runtime>(
    app: AppHandle<R>,
    digest: String,
) -> Result<ReclaimOutcome, String> {
    auto::confirm(&app, &digest).await
}

#[tauri::command]
fn get_history(state: tauri::State<'_, AppState>) -> History {
    let journal = state.backend.journal_path();
    backend::history(journal.as_deref(), state.legacy_history_path().as_deref())
}

/// The space history as the core's view: the series per product, the freed runs, the
/// sentence, and a notice when its file was damaged.
#[tauri::command]
fn get_trend(state: tauri::State<'_, AppState>) -> smolsweep::view::TrendView {
    let cached = lock(&state.trend).clone();
    let (t, damaged) = match cached {
        Some(t) => (t, lock(&state.trend_damaged).clone()),
        None => match trend_path(&state) {
            Some(p) => {
                let l = smolsweep::trend::load(&p);
                (l.trend, l.damaged)
            }
            None => Default::default(),
        },
    };
    smolsweep::view::trend_view(&t, damaged.as_ref())
}

/// The space history beside the core journal.
fn trend_path(st: &AppState) -> Option<PathBuf> {
    let j = st.backend.journal_path()?;
    Some(j.with_file_name(smolsweep::trend::TREND_FILE))
}

/// Record `r`'s point in the space history. Scans within one hour that change nothing are
/// kept in memory only, so the file is written at most once per hour while nothing changes.
async fn record_trend<R: Runtime>(app: &AppHandle<R>, r: &ScanReport) {
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

#[tauri::command]
async fn plan_vm_action<R: Runtime>(
    app: AppHandle<R>,
    pid: u32,
    start_time: u64,
    action: VmAction,
    cascade: Option<bool>,
) -> Result<VmPlan, String> {
    plan_vm(&app, pid, start_time, action, cascade.unwrap_or(false)).await
}

/// Stop / Delete of a machine or sandbox of either product (the Running VMs view's machine rows).
#[tauri::command]
async fn plan_machine_action<R: Runtime>(
    app: AppHandle<R>,
    product: Product,
    name: String,
    action: VmAction,
    cascade: Option<bool>,
) -> Result<VmPlan, String> {
    let report = scan_now(&app).await?;
    let target = VmTarget::Machine { product, name };
    Ok(VmPlan::of(
        &report,
        &target,
        action,
        cascade.unwrap_or(false),
    ))
}

#[tauri::command]
async fn execute_machine_action<R: Runtime>(
    app: AppHandle<R>,
    product: Product,
    name: String,
    action: VmAction,
    cascade: Option<bool>,
    digest: Option<String>,
) -> Result<VmOutcome, String> {
    let target = VmTarget::Machine { product, name };
    run_target(
        &app,
        "window",
        target,
        (action, cascade.unwrap_or(false)),
        digest,
    )
    .await
}

#[tauri::command]
async fn execute_vm_action<R: Runtime>(
    app: AppHandle<R>,
    pid: u32,
    start_time: u64,
    action: VmAction,
    cascade: Option<bool>,
    digest: Option<String>,
) -> Result<VmOutcome, String> {
    let vm = (pid, start_time, action, cascade.unwrap_or(false));
    run_vm(&app, "window", vm, digest).await
}

// ---------------------------------------------------------------------------------------------

/// Save, apply (autostart, menu) and return the normalised settings.
pub fn apply_settings<R: Runtime>(app: &AppHandle<R>, s: Settings) -> Result<Settings, String> {
    let st = app.state::<AppState>();
    let mut s = s.normalised();
    s.auto.filter()?;
    s.auto.cap()?;
    {
        // Only a confirmed preview sets `auto_confirmed`; turning the policy on again or
        // widening what it may take asks for a new preview.
        let old = lock(&st.settings);
        let same = old.auto.enabled == s.auto.enabled
            && s.auto.kinds.iter().all(|k| old.auto.kinds.contains(k))
            && s.auto.include.is_subset(&old.auto.include);
        s.auto_confirmed = old.auto_confirmed && same && s.auto.enabled;
    }
    let old = std::mem::replace(&mut *lock(&st.settings), s.clone());
    if let Some(p) = st.settings_path() {
        s.save(&p).map_err(|e| format!("saving settings: {e}"))?;
    }
    if old.auto != s.auto {
        if let Some(p) = st.backend.auto_policy_path() {
            s.auto
                .save(&p)
                .map_err(|e| format!("saving the automatic clean-up policy: {e}"))?;
        }
        *lock(&st.auto_pending) = None;
    }
    if old.autostart != s.autostart {
        set_autostart(app, s.autostart)?;
    }
    if old.accept_newer != s.accept_newer {
        s.apply_accept_newer();
    }
    if old.scan_interval_secs != s.scan_interval_secs || old.accept_newer != s.accept_newer {
        st.wake.notify_one();
    }
    refresh(app);
    Ok(s)
}

fn set_autostart<R: Runtime>(app: &AppHandle<R>, on: bool) -> Result<(), String> {
    use tauri_plugin_autostart::ManagerExt;
    if app
        .try_state::<tauri_plugin_autostart::AutoLaunchManager>()
        .is_none()
    {
        // Not registered (headless tests): the setting is only saved.
        return Ok(());
    }
    let al = app.autolaunch();
    let r = if on { al.enable() } else { al.disable() };
    r.map_err(|e| format!("autostart: {e}"))
}

/// Run one scan now (waiting for a running scan or reclaim to finish first) and update the
/// menu, the window and notifications.
pub async fn scan_now<R: Runtime>(app: &AppHandle<R>) -> Result<ScanReport, String> {
    let st = app.state::<AppState>();
    let res = {
        let _g = st.scan_lock.lock().await;
        st.scanning.store(true, Ordering::SeqCst);
        let b = st.backend.clone();
        let res = tauri::async_runtime::spawn_blocking(move || {
            b.scan().map(|mut r| {
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
        notify_orphans(app, r);
        notify_low_space(app, r);
        watch::update(app, r);
    }
    res
}

/// What the file watcher has read since the app started: (inotify events, reads that asked for
/// a rescan). `None` without background work. For tests and the idle bench's reasoning.
pub fn watch_counts<R: Runtime>(app: &AppHandle<R>) -> Option<(u64, u64)> {
    watch::counts(app)
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
            (None, None) => TrayModel::scanning(),
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

/// Why a confirmed reclaim did not run.
pub const PLAN_CHANGED: &str =
    "What would be reclaimed changed since it was shown (a scan ran in between); nothing was deleted. Review it again.";

/// When `run` started (for the launch-to-first-menu figure in the log).
static STARTED: OnceLock<std::time::Instant> = OnceLock::new();
static FIRST_MENU: std::sync::Once = std::sync::Once::new();

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
fn confirm_tray_vm<R: Runtime>(app: &AppHandle<R>, pid: u32, start_time: u64, action: VmAction) {
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        let plan = match plan_vm(&app, pid, start_time, action, false).await {
            Ok(p) => p,
            Err(e) => return tracing::warn!("{e}"),
        };
        let msg = format!("{}\n\n• {}", plan.question, plan.lines().join("\n• "));
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

/// Tell the user something with a native dialog (logged in tests).
fn tell<R: Runtime>(app: &AppHandle<R>, title: &str, msg: &str) {
    use tauri_plugin_dialog::{DialogExt, MessageDialogButtons, MessageDialogKind};
    if app.try_state::<tauri_plugin_dialog::Dialog<R>>().is_some() {
        app.dialog()
            .message(msg)
            .title(title)
            .kind(MessageDialogKind::Info)
            .buttons(MessageDialogButtons::Ok)
            .show(|_| {});
    } else {
        tracing::info!("{title}: {msg}");
    }
}

/// Ask a yes/no question with a native dialog (or the configured answer in tests).
fn confirm<R: Runtime>(
    app: &AppHandle<R>,
    title: &str,
    msg: &str,
    ok: &str,
    f: impl FnOnce(bool) + Send + 'static,
) {
    use tauri_plugin_dialog::{DialogExt, MessageDialogButtons, MessageDialogKind};
    if app.try_state::<tauri_plugin_dialog::Dialog<R>>().is_some() {
        app.dialog()
            .message(msg)
            .title(title)
            .kind(MessageDialogKind::Warning)
            .buttons(MessageDialogButtons::OkCancelCustom(
                ok.to_string(),
                "Cancel".to_string(),
            ))
            .show(f);
    } else {
        f(app.state::<AppState>().confirm_answer)
    }
}

/// The native confirmation for the tray's "Reclaim" item: names the count and the bytes.
fn confirm_tray_reclaim<R: Runtime>(app: &AppHandle<R>) {
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

/// The tray's native confirmation for a reclaim: the core's confirmation of the plan, as the CLI
/// and the window word it (headline, estimate, then the first action lines).
pub fn tray_reclaim_text(plan: &PlanView) -> (String, String) {
    let c = &plan.confirmation;
    let mut msg = format!("{}?\n", c.sentence());
    for l in c.lines.iter().take(8) {
        msg.push_str(&format!("\n• {l}"));
    }
    if c.lines.len() > 8 {
        msg.push_str(&format!("\n… and {} more", c.lines.len() - 8));
    }
    (format!("Reclaim {}", c.estimate), msg)
}

/// Execute the plan for `ids` against the latest scan through the core executor (journaled
/// with `surface` and `reclaim`), notify, and rescan.
///
/// `digest` is the fingerprint of the plan the user confirmed ([`backend::Plan::digest`]): when
/// a scan in between changed what the plan would do, nothing runs and the user reviews again.
pub async fn reclaim<R: Runtime>(
    app: &AppHandle<R>,
    ids: Vec<String>,
    digest: Option<String>,
    surface: &str,
) -> Result<ReclaimOutcome, String> {
    let st = app.state::<AppState>();
    let out = {
        let _g = st.scan_lock.lock().await;
        let report = lock(&st.report).clone().ok_or("no scan has finished yet")?;
        let plan = backend::plan(&report, &ids);
        if digest.is_some_and(|d| d != plan.digest) {
            return Err(PLAN_CHANGED.into());
        }
        let Some(core) = plan.core.clone().filter(|_| !plan.steps.is_empty()) else {
            return Err("nothing selected can be reclaimed".into());
        };
        let (b, app2, origin) = (
            st.backend.clone(),
            app.clone(),
            smolsweep::exec::Origin::new(surface, "reclaim"),
        );
        let started = now_secs();
        let confirmed = Confirmed::of(&core, How::Click);
        tauri::async_runtime::spawn_blocking(move || {
            let r = b.execute(&core, confirmed, origin, &|e| {
                if let Some(p) = backend::progress_of(&core, e) {
                    let _ = app2.emit(EV_PROGRESS, p);
                }
            });
            ReclaimOutcome::of(&plan, r, started)
        })
        .await
        .map_err(|e| format!("reclaim failed: {e}"))?
    };
    if lock(&st.settings).notifications {
        send_note(app, notes::reclaim_note(&out), None);
    }
    let _ = scan_now(app).await;
    Ok(out)
}

/// Why a confirmed Stop / End process / Delete did not run.
pub const VM_PLAN_CHANGED: &str =
    "What this would do changed since it was shown (a scan ran in between); nothing was done. Review it again.";

/// Plan Stop / End process / Delete of one VM from a fresh scan ([`backend::vm_plan`]).
pub async fn plan_vm<R: Runtime>(
    app: &AppHandle<R>,
    pid: u32,
    start_time: u64,
    action: VmAction,
    cascade: bool,
) -> Result<VmPlan, String> {
    let report = scan_now(app).await?;
    Ok(backend::vm_plan(&report, pid, start_time, action, cascade))
}

/// Run the confirmed plan for `(pid, start_time, action, cascade)` through the core executor,
/// journaled with `surface` and the plan's command, then rescan. Re-planned from the latest scan:
/// when it no longer has the `digest` that was shown, nothing runs; a plan that plans nothing
/// runs nothing and says why.
pub async fn run_vm<R: Runtime>(
    app: &AppHandle<R>,
    surface: &str,
    (pid, start_time, action, cascade): (u32, u64, VmAction, bool),
    digest: Option<String>,
) -> Result<VmOutcome, String> {
    let target = VmTarget::Process { pid, start_time };
    run_target(app, surface, target, (action, cascade), digest).await
}

/// Run the confirmed plan for `action` on `target`, re-planned from the latest scan (see
/// [`run_vm`]).
pub async fn run_target<R: Runtime>(
    app: &AppHandle<R>,
    surface: &str,
    target: VmTarget,
    (action, cascade): (VmAction, bool),
    digest: Option<String>,
) -> Result<VmOutcome, String> {
    let st = app.state::<AppState>();
    let out = {
        let _g = st.scan_lock.lock().await;
        let report = lock(&st.report).clone().ok_or("no scan has finished yet")?;
        let plan = VmPlan::of(&report, &target, action, cascade);
        if digest.is_some_and(|d| d != plan.digest) {
            return Err(VM_PLAN_CHANGED.into());
        }
        let Some(core) = plan.core.clone().filter(|_| !plan.steps.is_empty()) else {
            return Err(plan.lines().join("; "));
        };
        let (b, origin) = (
            st.backend.clone(),
            smolsweep::exec::Origin::new(surface, &plan.command),
        );
        let confirmed = Confirmed::of(&core, How::Click);
        tauri::async_runtime::spawn_blocking(move || {
            VmOutcome::of(&plan, b.execute(&core, confirmed, origin, &|_| {}))
        })
        .await
        .map_err(|e| e.to_string())?
    };
    let _ = scan_now(app).await;
    Ok(out)
}

/// Use `clock` for spacing notifications (tests: a fake clock).
pub fn set_clock<R: Runtime>(app: &AppHandle<R>, clock: Arc<dyn Clock>) {
    *lock(&app.state::<AppState>().clock) = clock;
}

fn notify_orphans<R: Runtime>(app: &AppHandle<R>, r: &ScanReport) {
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
                let _ = smolsweep::atomic::write(&p, &bytes, true);
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
fn notify_low_space<R: Runtime>(app: &AppHandle<R>, r: &ScanReport) {
    let st = app.state::<AppState>();
    let now = lock(&st.clock).now();
    let reclaim = lock(&st.tray_model).reclaim_bytes;
    let growth = lock(&st.trend)
        .as_ref()
        .and_then(smolsweep::view::trend_growth);
    let alert = lock(&st.low_space).check(r, reclaim, growth, now);
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

/// The `review_view` of a notification whose action is the tray's reclaim (confirmed first).
const RECLAIM_ACTION: &str = "reclaim";

fn send_note<R: Runtime>(app: &AppHandle<R>, note: Note, review_view: Option<&'static str>) {
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
                    confirm_tray_reclaim(&app4)
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

/// A scheduled scan: scan, then the automatic clean-up step ([`auto::after_scan`]).
pub async fn scheduled_scan<R: Runtime>(app: &AppHandle<R>) -> Result<auto::AutoStep, String> {
    let r = scan_now(app).await?;
    let step = auto::after_scan(app, &r).await;
    if matches!(step, auto::AutoStep::Ran { .. }) {
        let _ = scan_now(app).await;
    }
    Ok(step)
}

async fn scan_loop<R: Runtime>(app: AppHandle<R>) {
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
            get_status,
            get_report,
            get_tray_model,
            get_settings,
            set_settings,
            rescan,
            plan_reclaim,
            execute_reclaim,
            get_history,
            get_trend,
            selection_estimate,
            plan_vm_action,
            execute_vm_action,
            plan_machine_action,
            execute_machine_action,
            keep_item,
            remove_keep,
            set_filter,
            confirm_auto,
            uninstall::uninstall_preflight,
            uninstall::uninstall_plan,
            uninstall::uninstall_ticks,
            uninstall::uninstall_run,
            uninstall::uninstall_verify,
            why::why_of
        ])
        .on_window_event(|w, e| {
            // Closing the window hides it; the app lives in the tray until "Quit". A window left
            // hidden is released after a while so the idle app does not keep a webview.
            if let tauri::WindowEvent::CloseRequested { api, .. } = e {
                api.prevent_close();
                let _ = w.hide();
                let st = w.state::<AppState>();
                let closed = st.closes.fetch_add(1, Ordering::SeqCst) + 1;
                let w = w.clone();
                tauri::async_runtime::spawn(async move {
                    tokio::time::sleep(RELEASE_HIDDEN_WINDOW_AFTER).await;
                    let st = w.state::<AppState>();
                    if st.closes.load(Ordering::SeqCst) == closed && !w.is_visible().unwrap_or(true)
                    {
                        tracing::debug!("releasing the hidden window");
                        let _ = w.destroy();
                    }
                });
            }
        })
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
            }
            if background {
                watch::start(app.handle());
                tauri::async_runtime::spawn(scan_loop(app.handle().clone()));
            }
            if std::env::args().any(|a| a == "--show") {
                show_window(app.handle(), None);
            }
            Ok(())
        })
}

/// Build and run a real app from any builder (the real plugins are added by [`run`]).
pub fn run_app<R: Runtime>(builder: Builder<R>, context: tauri::Context<R>) {
    let app = build_app(builder, Deps::real())
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
    let _ = STARTED.set(std::time::Instant::now());
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
    run_app(builder, tauri::generate_context!());
}
