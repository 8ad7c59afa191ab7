//! The shell's state, managed by Tauri, and the names its parts share: the window's label, the
//! tray's id, the events the window listens to.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use smolsweep::model::ScanReport;
use smolsweep::tray::TrayModel;
use smolsweep::view::auto::AutoPreview;
use smolsweep::view::keeps::FilterInput;
use smolsweep::view::lowspace::LowSpaceWatch;

use crate::backend::{self, Backend, RealBackend};
use crate::desktop_notes::DesktopNotifier;
use crate::notes::{Clock, Notifier, OrphanWatch, SystemClock};
use crate::settings::Settings;

pub(crate) use smolsweep::lock;
pub(crate) use smolsweep::now_secs;
pub use smolsweep::view::runs::{NOTHING_TO_RECLAIM, NO_SCAN_YET, PLAN_CHANGED, VM_PLAN_CHANGED};

/// A window closed (hidden) this long without being shown again is destroyed, which ends its
/// webview processes; "Open Smolsweep" then builds a new one.
pub const RELEASE_HIDDEN_WINDOW_AFTER: Duration = Duration::from_secs(60);

/// Label of the one window.
pub const MAIN_WINDOW: &str = "main";

/// Id of the tray icon.
pub const TRAY_ID: &str = "smolsweep";

/// Event with a fresh [`Status`] after every scan.
pub const EV_STATUS: &str = "status-updated";

/// Event with a `backend::Progress` while a reclaim runs.
pub const EV_PROGRESS: &str = "reclaim-progress";

/// Event with an `uninstall::UninstallProgress` for each step of the uninstall as it finishes.
pub const EV_UNINSTALL_PROGRESS: &str = "uninstall-progress";
/// Event asking the window to show a view (`overview`, `findings`, `uninstall`, ...).
pub const EV_NAVIGATE: &str = "navigate";

/// The `review_view` of a notification whose action is the tray's reclaim (confirmed first).
pub(crate) const RECLAIM_ACTION: &str = "reclaim";

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

pub(crate) struct Dirs {
    pub(crate) config: PathBuf,
    pub(crate) data: PathBuf,
}

/// The shell's state, managed by Tauri.
pub struct AppState {
    pub(crate) backend: Arc<dyn Backend>,
    pub(crate) notifier: Arc<dyn Notifier>,
    pub(crate) dirs: OnceLock<Dirs>,
    pub(crate) report: Mutex<Option<ScanReport>>,
    pub(crate) scan_error: Mutex<Option<String>>,
    pub(crate) tray_model: Mutex<TrayModel>,
    /// The last scan's menu, saved by the run before, drawn until this run's first scan is in
    /// (`smolsweep::tray::TrayModel::from_last_scan`).
    pub(crate) last_menu: Mutex<Option<TrayModel>>,
    pub(crate) settings: Mutex<Settings>,
    pub(crate) orphans: Mutex<OrphanWatch>,
    /// Held for the whole of a scan or a reclaim: never two at once.
    pub(crate) scan_lock: tokio::sync::Mutex<()>,
    pub(crate) scanning: AtomicBool,
    pub(crate) scans: AtomicU64,
    /// Wakes the background loop (settings changed, roots changed).
    pub(crate) wake: tokio::sync::Notify,
    pub(crate) confirm_answer: bool,
    /// Counts window closes, so a release timer only acts on the latest close.
    pub(crate) closes: AtomicU64,
    /// The clock notifications are spaced by.
    pub(crate) clock: Mutex<Arc<dyn Clock>>,
    /// Counts held-back notification timers, so only the latest one acts.
    pub(crate) note_timers: AtomicU64,
    /// The window's filter (`smolsweep::Filter`): what the findings view shows and
    /// what its Reclaim can select.
    pub(crate) filter: Mutex<smolsweep::Filter>,
    pub(crate) filter_input: Mutex<FilterInput>,
    /// An automatic run waiting for the user (its first run, or above the cap).
    pub(crate) auto_pending: Mutex<Option<AutoPreview>>,
    /// Whether the current low-space episode was announced.
    pub(crate) low_space: Mutex<LowSpaceWatch>,
    /// The space history (`smolsweep::trend`), once a scan recorded into it, and what its
    /// file's damage said.
    pub(crate) trend: Mutex<Option<smolsweep::trend::Trend>>,
    pub(crate) trend_damaged: Mutex<Option<smolsweep::trend::Damaged>>,
    /// What a notification's "Reclaim N" action opens: the tray's reclaim confirmation (set
    /// when the app is built, so notifications need not know the tray).
    pub(crate) reclaim_review: OnceLock<Box<dyn Fn() + Send + Sync>>,
}

impl AppState {
    pub(crate) fn new(d: &Deps) -> AppState {
        AppState {
            backend: d.backend.clone(),
            notifier: d.notifier.clone(),
            dirs: OnceLock::new(),
            report: Mutex::new(None),
            scan_error: Mutex::new(None),
            tray_model: Mutex::new(TrayModel::scanning()),
            last_menu: Mutex::new(None),
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
            reclaim_review: OnceLock::new(),
        }
    }
    /// Set the directories and load what is saved there (once).
    pub(crate) fn init_dirs(&self, config: PathBuf, data: PathBuf) {
        let settings = Settings::load(&config.join("settings.json"));
        settings.apply_accept_newer();
        *lock(&self.settings) = settings;
        let notified = smolsweep::read_input(
            &data.join("notified.json"),
            smolsweep::MAX_REPORT_BYTES,
            "notification state Smolsweep wrote",
        );
        if let Ok(s) = notified {
            if let Ok(w) = serde_json::from_slice(&s) {
                *lock(&self.orphans) = w;
            }
        }
        // The tray is drawn at once with the last scan's numbers, marked as from when.
        let saved = smolsweep::tray::SavedMenu::load(&data.join(smolsweep::tray::SAVED_MENU_FILE));
        if let Some(saved) = saved {
            let menu = TrayModel::from_last_scan(&saved, now_secs());
            *lock(&self.tray_model) = menu.clone();
            *lock(&self.last_menu) = Some(menu);
        }
        let _ = self.dirs.set(Dirs { config, data });
    }
    pub(crate) fn settings_path(&self) -> Option<PathBuf> {
        self.dirs.get().map(|d| d.config.join("settings.json"))
    }
    /// The window's own history file of older versions (no longer written or imported).
    pub(crate) fn legacy_history_path(&self) -> Option<PathBuf> {
        self.dirs
            .get()
            .map(|d| d.data.join(backend::LEGACY_HISTORY_FILE))
    }
    /// The last scan's menu, for the next start ([`smolsweep::tray::SavedMenu`]).
    pub(crate) fn saved_menu_path(&self) -> Option<PathBuf> {
        self.dirs
            .get()
            .map(|d| d.data.join(smolsweep::tray::SAVED_MENU_FILE))
    }
    pub(crate) fn orphans_path(&self) -> Option<PathBuf> {
        self.dirs.get().map(|d| d.data.join("notified.json"))
    }
}
