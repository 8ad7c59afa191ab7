//! The tray menu as data: what the desktop shell draws after every scan.
//!
//! The shell (src-tauri) turns a [`TrayModel`] into a native menu and maps clicks back through
//! [`TrayAction::from_id`]. Keeping the model here means the menu's wording, totals and which
//! entries are actionable are tested without a display.

use serde::{Deserialize, Serialize};

use crate::model::{human_bytes, Finding, OptInClass, ScanReport, Scope, Verdict, VmProcess};

/// Stable item ids (also the ids of the native menu items).
pub mod ids {
    pub(crate) const STATUS: &str = "status";
    pub(crate) const VMS_HEADER: &str = "vms";
    /// The heading of other HOMEs' VM processes, apart from this HOME's.
    pub(crate) const OTHER_HOMES_HEADER: &str = "vms.others";
    pub(crate) const RECLAIM: &str = "reclaim";
    /// "Compact 3 disks: 12 GB…" ([`super::TrayModel::compact`]).
    pub const COMPACT: &str = "compact";
    pub(crate) const RESCAN: &str = "rescan";
    pub(crate) const OPEN: &str = "open";
    pub(crate) const UNINSTALL: &str = "uninstall";
    pub(crate) const QUIT: &str = "quit";
    /// Prefix of a surviving VM's submenu: `vm:<pid>:<start_time>`.
    pub(crate) const VM_PREFIX: &str = "vm:";
    /// Prefix of a "Stop" entry: `vm.stop:<pid>:<start_time>`.
    pub(crate) const STOP_PREFIX: &str = "vm.stop:";
    /// Prefix of a "Reap" entry: `vm.reap:<pid>:<start_time>`.
    pub(crate) const REAP_PREFIX: &str = "vm.reap:";
    /// Prefix of a "Why?" entry: `vm.why:<pid>:<start_time>`.
    pub(crate) const WHY_PREFIX: &str = "vm.why:";
}

/// What the user chose that changes the menu.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TraySettings {
    /// Opt-in classes that "Reclaim" includes besides the reclaimable findings.
    #[serde(default)]
    pub include_opt_in: Vec<OptInClass>,
}

impl TraySettings {
    /// Whether "Reclaim" includes this finding.
    pub fn includes(&self, f: &Finding) -> bool {
        match f.verdict {
            Verdict::Reclaimable => true,
            Verdict::OptIn => f
                .opt_in_class
                .is_some_and(|c| self.include_opt_in.contains(&c)),
            Verdict::Protected | Verdict::Unknown => false,
        }
    }
}

/// Which icon the tray shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IconState {
    /// Nothing to reclaim, no orphaned VM.
    Clean,
    /// Space can be reclaimed.
    Reclaimable,
    /// An orphaned VM process of this HOME is running (takes precedence).
    Orphans,
}

impl IconState {
    /// Its stable name, as serialised: `clean`, `reclaimable` or `orphans`.
    pub fn as_str(self) -> &'static str {
        match self {
            IconState::Clean => "clean",
            IconState::Reclaimable => "reclaimable",
            IconState::Orphans => "orphans",
        }
    }
}

/// One clickable (or informational) entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrayItem {
    /// Stable id of the native menu item, mapped back by [`TrayAction::from_id`].
    pub id: String,
    /// The text shown.
    pub label: String,
    /// Whether it can be clicked (informational items, like the status line, cannot).
    pub enabled: bool,
}

impl TrayItem {
    fn new(id: impl Into<String>, label: impl Into<String>, enabled: bool) -> Self {
        TrayItem {
            id: id.into(),
            label: label.into(),
            enabled,
        }
    }
}

/// An entry of the menu, in display order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TrayEntry {
    /// A plain item (JSON `"type": "item"`, with the item's fields).
    Item(TrayItem),
    /// A separator line.
    Separator,
    /// A submenu: one surviving VM and what may be done to it.
    Submenu {
        /// Stable id (`vm:<pid>:<start_time>`).
        id: String,
        /// The VM's label: product, owner (or pid), whether it is orphaned, what deleted files it
        /// holds.
        label: String,
        /// Whether it can be opened.
        enabled: bool,
        /// Its entries: its one action ("End process" for an orphan, "Stop" for a VM its record
        /// owns) and "Why?".
        items: Vec<TrayItem>,
    },
}

/// A click mapped back from an item id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum TrayAction {
    /// "Reclaim…": confirm and reclaim what [`TrayModel::reclaim_ids`] names.
    Reclaim,
    /// "Compact 3 disks: 12 GB…": plan the compaction of every disk with something to give
    /// back (`target::compact_plan` with no target), confirm it and run it.
    Compact,
    /// "Rescan now": scan again.
    Rescan,
    /// "Open Smolsweep": show the window.
    Open,
    /// "Uninstall SmolVM…": show the window's uninstall guide.
    Uninstall,
    /// "Quit": end the app.
    Quit,
    /// Ask a VM process to stop (SIGTERM / the product's own stop).
    Stop {
        /// Process id: with `start_time`, the process's identity.
        pid: u32,
        /// Its start time as the scan reported it: a reused pid is another process.
        start_time: u64,
    },
    /// Kill an orphaned VM process (SIGKILL), after re-checking it is the same process.
    Reap {
        /// Process id: with `start_time`, the process's identity.
        pid: u32,
        /// Its start time as the scan reported it: a reused pid is another process.
        start_time: u64,
    },
    /// "Why?": show how Smolsweep judges a VM process ([`crate::view::why`]).
    Why {
        /// Process id.
        pid: u32,
        /// Its start time as the scan reported it.
        start_time: u64,
    },
}

impl TrayAction {
    /// Map an item id back to an action; `None` for informational items and unknown ids.
    pub fn from_id(id: &str) -> Option<TrayAction> {
        fn pid_start(rest: &str) -> Option<(u32, u64)> {
            let (p, s) = rest.split_once(':')?;
            Some((p.parse().ok()?, s.parse().ok()?))
        }
        Some(match id {
            ids::RECLAIM => TrayAction::Reclaim,
            ids::COMPACT => TrayAction::Compact,
            ids::RESCAN => TrayAction::Rescan,
            ids::OPEN => TrayAction::Open,
            ids::UNINSTALL => TrayAction::Uninstall,
            ids::QUIT => TrayAction::Quit,
            _ => {
                if let Some(rest) = id.strip_prefix(ids::STOP_PREFIX) {
                    let (pid, start_time) = pid_start(rest)?;
                    TrayAction::Stop { pid, start_time }
                } else if let Some(rest) = id.strip_prefix(ids::REAP_PREFIX) {
                    let (pid, start_time) = pid_start(rest)?;
                    TrayAction::Reap { pid, start_time }
                } else if let Some(rest) = id.strip_prefix(ids::WHY_PREFIX) {
                    let (pid, start_time) = pid_start(rest)?;
                    TrayAction::Why { pid, start_time }
                } else {
                    return None;
                }
            }
        })
    }
}

/// The whole tray menu and icon for one scan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrayModel {
    /// The first line of the menu: the reclaimable total, "Nothing to reclaim", "Scanning…", or
    /// "Can't verify: …" naming what could not be read.
    pub status: String,
    /// Whether `status` says what could not be verified ("Can't verify: …"): the window shows
    /// it as a warning.
    #[serde(default)]
    pub cannot_verify: bool,
    /// Which icon the tray shows.
    pub icon: IconState,
    /// Tooltip text (status plus orphan count).
    pub tooltip: String,
    /// What "Reclaim" would act on, with the current settings.
    pub reclaim_ids: Vec<String>,
    /// The planner's estimate for `reclaim_ids` (allocated bytes, hard links once), as the
    /// confirmation will say.
    pub reclaim_bytes: u64,
    /// Every entry of the menu, in display order.
    pub entries: Vec<TrayEntry>,
    /// "Compact 3 disks: 12 GB…" (id [`ids::COMPACT`]) when the disks of stopped machines and
    /// saved disks hold space their guests freed: also in `entries`, right after "Reclaim", to
    /// plan, confirm with the core's sentence and run a compaction of every such disk
    /// (`target::compact_plan` with no target), as `smolsweep compact` does. Its own figure,
    /// opt-in: never part of "Reclaim" or the status.
    #[serde(default)]
    pub compact: Option<TrayItem>,
}

/// Label of a surviving VM: product, owner (or pid), and what it holds.
fn vm_label(p: &VmProcess) -> String {
    let who = match &p.owner {
        Some(o) => o.clone(),
        None => format!("pid {}", p.pid),
    };
    let mut s = format!("{} · {}", p.product.display_name(), who);
    if p.orphan {
        s.push_str(" · orphaned");
    } else {
        s.push_str(" · running");
    }
    if p.held_deleted_bytes > 0 {
        s.push_str(&format!(
            " · holds {} deleted",
            human_bytes(p.held_deleted_bytes)
        ));
    }
    if p.scope == Scope::Foreign {
        s.push_str(" · another HOME");
    }
    s
}

/// The first thing that keeps a product's state from being read, if any.
fn first_problem(report: &ScanReport) -> Option<String> {
    report
        .products
        .iter()
        .filter(|p| p.status != "ok")
        .flat_map(|p| {
            let name = p.product.display_name();
            let mut v: Vec<String> = p.problems.iter().map(|x| format!("{name}: {x}")).collect();
            if v.is_empty() {
                v.push(format!("{name} state could not be read"));
            }
            v
        })
        .next()
}

/// The surviving VMs: this HOME's under the one count's line ([`crate::view::VmCount`]: its
/// running machines and sandboxes and its orphaned VM processes), one entry each; other HOMEs'
/// apart, under their own count (nothing when no VM runs).
fn vm_entries(report: &ScanReport) -> Vec<TrayEntry> {
    let processes = &report.processes;
    let count = crate::view::VmCount::of(report);
    if processes.is_empty() && count.running() == 0 {
        return Vec::new();
    }
    let mut entries = vec![
        TrayEntry::Separator,
        TrayEntry::Item(TrayItem::new(ids::VMS_HEADER, count.line(), false)),
    ];
    let this_home = |p: &&VmProcess| p.scope == Scope::ThisHome;
    entries.extend(
        processes
            .iter()
            .filter(this_home)
            .filter(|p| p.orphan)
            .chain(processes.iter().filter(this_home).filter(|p| !p.orphan))
            .map(vm_entry),
    );
    if let Some(others) = count.other_homes_line() {
        entries.push(TrayEntry::Item(TrayItem::new(
            ids::OTHER_HOMES_HEADER,
            others,
            false,
        )));
        entries.extend(processes.iter().filter(|p| !this_home(p)).map(vm_entry));
    }
    entries
}

/// One surviving VM: a submenu of what may be done to it, or (another HOME's) a plain item. An
/// orphan is ended ("End process"), a VM its record owns is stopped ("Stop"): one action each.
fn vm_entry(p: &VmProcess) -> TrayEntry {
    let key = format!("{}:{}", p.pid, p.start_time);
    // Another HOME's VM is shown, without actions: every one would be refused.
    if p.scope != Scope::ThisHome {
        return TrayEntry::Item(TrayItem::new(
            format!("{}{key}", ids::VM_PREFIX),
            vm_label(p),
            false,
        ));
    }
    let act = match p.orphan {
        true => TrayItem::new(
            format!("{}{key}", ids::REAP_PREFIX),
            crate::view::words::Word::EndProcess.text(),
            true,
        ),
        false => TrayItem::new(
            format!("{}{key}", ids::STOP_PREFIX),
            crate::view::words::Word::Stop.text(),
            true,
        ),
    };
    let items = vec![
        act,
        TrayItem::new(
            format!("{}{key}", ids::WHY_PREFIX),
            crate::view::words::Word::Why.text(),
            true,
        ),
    ];
    TrayEntry::Submenu {
        id: format!("{}{key}", ids::VM_PREFIX),
        label: vm_label(p),
        enabled: true,
        items,
    }
}

/// The compaction entry, when something is compactable: the core's tray label with an
/// ellipsis (it asks before it runs).
fn compact_item(report: &ScanReport) -> Option<TrayItem> {
    let label = crate::view::compact_view(report).tray_label?;
    Some(TrayItem::new(ids::COMPACT, format!("{label}…"), true))
}

/// The menu's fixed tail: Reclaim (enabled, with its size, when something is reclaimable), the
/// compaction entry when there is one, Rescan, Open, Uninstall and Quit.
fn action_entries(reclaimable: Option<u64>, compact: Option<&TrayItem>) -> Vec<TrayEntry> {
    let reclaim_label = crate::view::reclaim_label(reclaimable);
    let mut v = vec![
        TrayEntry::Separator,
        TrayEntry::Item(TrayItem::new(
            ids::RECLAIM,
            reclaim_label,
            reclaimable.is_some(),
        )),
    ];
    v.extend(compact.cloned().map(TrayEntry::Item));
    v.extend([
        TrayEntry::Item(TrayItem::new(ids::RESCAN, "Rescan now", true)),
        TrayEntry::Item(TrayItem::new(ids::OPEN, "Open Smolsweep", true)),
        TrayEntry::Separator,
        TrayEntry::Item(TrayItem::new(ids::UNINSTALL, "Uninstall SmolVM…", true)),
        TrayEntry::Item(TrayItem::new(ids::QUIT, "Quit", true)),
    ]);
    v
}

impl TrayModel {
    /// Build the menu for a scan. `None` report means no scan has finished yet.
    pub fn from_report(report: &ScanReport, settings: &TraySettings) -> TrayModel {
        let reclaim_ids: Vec<String> = report
            .findings
            .iter()
            .filter(|f| settings.includes(f))
            .map(|f| f.id.clone())
            .collect();
        // The planner's number (hard links once), as the confirmation will say.
        let reclaim_bytes =
            crate::view::confirmation(&crate::plan::Plan::of_ids(report, &reclaim_ids))
                .estimate_bytes;
        let reclaimable = (!reclaim_ids.is_empty()).then_some(reclaim_bytes);
        let orphans = report
            .processes
            .iter()
            .filter(|p| p.is_this_homes_orphan())
            .count();

        let problem = first_problem(report);
        let cannot_verify = problem.is_some();
        let status = match problem {
            Some(problem) => format!("Can't verify: {problem}"),
            None => match reclaimable {
                None => "Nothing to reclaim".to_string(),
                Some(bytes) => format!("Reclaimable: {}", human_bytes(bytes)),
            },
        };
        let icon = if orphans > 0 {
            IconState::Orphans
        } else if reclaimable.is_some() {
            IconState::Reclaimable
        } else {
            IconState::Clean
        };
        let tooltip = match orphans {
            0 => format!("Smolsweep — {status}"),
            1 => format!("Smolsweep — {status} — 1 orphaned VM"),
            n => format!("Smolsweep — {status} — {n} orphaned VMs"),
        };

        let mut entries = vec![TrayEntry::Item(TrayItem::new(ids::STATUS, &status, false))];
        entries.extend(vm_entries(report));
        let compact = compact_item(report);
        entries.extend(action_entries(reclaimable, compact.as_ref()));

        TrayModel {
            status,
            cannot_verify,
            icon,
            tooltip,
            reclaim_ids,
            reclaim_bytes,
            entries,
            compact,
        }
    }

    /// The tooltip with the space history's sentence on its own line ("SmolVM uses 48 GB, 6 GB
    /// more than a week ago"), when there is a history.
    pub fn with_trend(mut self, trend: Option<&crate::trend::Trend>) -> TrayModel {
        if let Some(s) = trend.and_then(crate::view::trend_sentence) {
            self.tooltip = format!("{}\n{s}", self.tooltip);
        }
        self
    }

    /// The menu before the first scan has finished.
    pub fn scanning() -> TrayModel {
        let status = crate::view::SCANNING.to_string();
        let mut entries = vec![TrayEntry::Item(TrayItem::new(ids::STATUS, &status, false))];
        entries.extend(action_entries(None, None));
        TrayModel {
            tooltip: format!("Smolsweep — {status}"),
            icon: IconState::Clean,
            reclaim_ids: vec![],
            reclaim_bytes: 0,
            entries,
            compact: None,
            status,
            cannot_verify: false,
        }
    }

    /// The menu when the last scan failed: nothing is offered for reclaiming.
    pub fn scan_failed(problem: &str) -> TrayModel {
        let mut m = TrayModel::scanning();
        m.status = format!("Can't verify: {problem}");
        m.cannot_verify = true;
        m.tooltip = format!("Smolsweep — {}", m.status);
        if let Some(TrayEntry::Item(i)) = m.entries.first_mut() {
            i.label = m.status.clone();
        }
        m
    }

    /// Every item (including those inside submenus), in display order.
    pub fn items(&self) -> Vec<&TrayItem> {
        let mut v = Vec::new();
        for e in &self.entries {
            match e {
                TrayEntry::Item(i) => v.push(i),
                TrayEntry::Separator => {}
                TrayEntry::Submenu { items, .. } => v.extend(items.iter()),
            }
        }
        v
    }

    /// The item with this id, if present.
    pub fn item(&self, id: &str) -> Option<&TrayItem> {
        self.items().into_iter().find(|i| i.id == id)
    }
}

/// The file, in the app's data directory, holding the menu of the last scan for the next start
/// ([`SavedMenu`]).
pub const SAVED_MENU_FILE: &str = "tray-menu.json";

/// The menu of the last scan, saved when it finished, so that the next start shows its numbers
/// at once ([`TrayModel::from_last_scan`]) while the fresh scan runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedMenu {
    /// `smolsweep.tray-menu/1`.
    pub schema: String,
    /// When that scan was made (seconds since the epoch).
    pub scanned_at: u64,
    /// Its menu, as it was drawn.
    pub menu: TrayModel,
}

/// The schema of a [`SavedMenu`].
pub const SAVED_MENU_SCHEMA: &str = "smolsweep.tray-menu/1";

impl SavedMenu {
    /// Save `menu`, drawn for the scan made at `scanned_at`, to `path` (atomically, private).
    pub fn save(path: &std::path::Path, menu: &TrayModel, scanned_at: u64) -> std::io::Result<()> {
        let saved = SavedMenu {
            schema: SAVED_MENU_SCHEMA.into(),
            scanned_at,
            menu: menu.clone(),
        };
        let bytes = serde_json::to_vec(&saved).map_err(std::io::Error::other)?;
        crate::atomic::write(path, &bytes, true)
    }

    /// The menu saved at `path`, if one is there and whole (anything else, an older schema
    /// included, is no menu: the start shows "Scanning…" as without one).
    pub fn load(path: &std::path::Path) -> Option<SavedMenu> {
        let bytes = crate::input::read_input(
            path,
            crate::input::MAX_SETTINGS_BYTES,
            "the tray menu Smolsweep saved",
        )
        .ok()?;
        let saved: SavedMenu = serde_json::from_slice(&bytes).ok()?;
        (saved.schema == SAVED_MENU_SCHEMA).then_some(saved)
    }
}

impl TrayModel {
    /// The menu at start, before this run's first scan has finished: the last scan's numbers
    /// (`saved`), marked as from when ("Reclaimable: 290 MB (last scan 12 min ago)"), with
    /// nothing in it that acts on what it shows: Reclaim, the compaction and every VM's entry
    /// wait for the fresh scan (their plans are made from it); Rescan, Open, Uninstall and
    /// Quit work.
    pub fn from_last_scan(saved: &SavedMenu, now: u64) -> TrayModel {
        let mut m = saved.menu.clone();
        let when = match crate::view::ago(saved.scanned_at, now) {
            ago if ago.is_empty() => "last scan".to_string(),
            ago => format!("last scan {ago}"),
        };
        m.status = format!("{} ({when})", m.status);
        m.tooltip = format!("Smolsweep — {} — {}", m.status, crate::view::SCANNING);
        m.reclaim_ids.clear();
        let acts = |id: &str| ![ids::RECLAIM, ids::COMPACT].contains(&id);
        for e in &mut m.entries {
            match e {
                TrayEntry::Item(i) if i.id == ids::STATUS => i.label = m.status.clone(),
                TrayEntry::Item(i) => i.enabled &= acts(&i.id),
                TrayEntry::Separator => {}
                TrayEntry::Submenu { enabled, items, .. } => {
                    *enabled = false;
                    items.iter_mut().for_each(|i| i.enabled = false);
                }
            }
        }
        if let Some(c) = &mut m.compact {
            c.enabled = false;
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::model::{finding_id, Platform, Product, ProductReport, Totals, SCAN_SCHEMA};

    fn finding(path: &str, verdict: Verdict, bytes: u64, class: Option<OptInClass>) -> Finding {
        let kind = crate::model::FindingKind::CelestoOrphanDisk;
        let path = format!("/data{path}");
        Finding {
            apparent_bytes: bytes,
            allocated_bytes: bytes,
            reason: "test".into(),
            opt_in_class: class,
            identity: Some(crate::model::FileIdentity {
                dev: 1,
                ino: path.bytes().map(u64::from).sum(),
                file_type: crate::size::file_type(libc::S_IFREG),
                size: bytes,
                mtime_ns: 0,
            }),
            root: Some(PathBuf::from("/data")),
            ..Finding::new(
                finding_id(Product::Celesto, kind, path.as_ref()),
                Product::Celesto,
                kind,
                PathBuf::from(&path),
                verdict,
            )
        }
    }

    fn process(pid: u32, orphan: bool, scope: Scope, held: u64) -> VmProcess {
        VmProcess {
            pid,
            start_time: 4242,
            product: Product::Smolvm,
            shape: crate::model::ProcShape::SmolvmBootVm,
            owner: Some(format!("m{pid}")),
            orphan,
            scope,
            held_deleted_bytes: held,
            uid: 1000,
            comm: "smolvm".into(),
            argv: vec![],
            paths: vec![],
            reason: String::new(),
            fds_readable: true,
            kept: None,
        }
    }

    fn report(findings: Vec<Finding>, processes: Vec<VmProcess>) -> ScanReport {
        let mut r = ScanReport {
            schema: SCAN_SCHEMA.into(),
            home: "/home/u".into(),
            platform: Platform::Linux,
            products: vec![ProductReport {
                product: Product::Celesto,
                detected: true,
                status: "ok".into(),
                roots: Default::default(),
                problems: vec![],
                version: None,
                newer: None,
            }],
            findings,
            machines: vec![],
            processes,
            totals: Totals::default(),
            scanned_at: 0,
            scanned_at_ns: 0,
            duration_ms: 0,
            compact: Default::default(),
        };
        r.compute_totals();
        r
    }

    fn labels(m: &TrayModel) -> Vec<String> {
        m.items().iter().map(|i| i.label.clone()).collect()
    }

    #[test]
    fn the_first_menu_shows_the_last_scans_numbers_marked_as_from_when_and_acts_on_nothing() {
        let rep = report(
            vec![finding("/a", Verdict::Reclaimable, 1_000_000_000, None)],
            vec![process(7, true, Scope::ThisHome, 0)],
        );
        let fresh = TrayModel::from_report(&rep, &TraySettings::default());
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join(SAVED_MENU_FILE);
        assert_eq!(SavedMenu::load(&path), None, "nothing saved yet");
        SavedMenu::save(&path, &fresh, 1_000).unwrap();
        let saved = SavedMenu::load(&path).expect("saved");
        let m = TrayModel::from_last_scan(&saved, 1_000 + 12 * 60);
        assert_eq!(m.status, "Reclaimable: 1.0 GB (last scan 12 min ago)");
        assert_eq!(m.item(ids::STATUS).unwrap().label, m.status);
        assert!(m.tooltip.ends_with("— Scanning…"), "{}", m.tooltip);
        assert_eq!(m.icon, fresh.icon);
        assert!(m.reclaim_ids.is_empty());
        assert!(
            !m.item(ids::RECLAIM).unwrap().enabled,
            "plans wait for the fresh scan"
        );
        assert!(m
            .items()
            .iter()
            .filter(|i| i.id.starts_with("vm."))
            .all(|i| !i.enabled));
        for id in [ids::RESCAN, ids::OPEN, ids::UNINSTALL, ids::QUIT] {
            assert!(m.item(id).unwrap().enabled, "{id}");
        }
        // A damaged or older file is no menu.
        std::fs::write(&path, b"{\"schema\": \"smolsweep.tray-menu/0\"}").unwrap();
        assert_eq!(SavedMenu::load(&path), None);
        std::fs::write(&path, b"{").unwrap();
        assert_eq!(SavedMenu::load(&path), None);
    }

    #[test]
    fn empty_report_says_nothing_to_reclaim_and_disables_reclaim() {
        let m = TrayModel::from_report(&report(vec![], vec![]), &TraySettings::default());
        assert_eq!(m.status, "Nothing to reclaim");
        assert_eq!(m.icon, IconState::Clean);
        let r = m.item(ids::RECLAIM).unwrap();
        assert!(!r.enabled);
        assert_eq!(r.label, "Reclaim…");
        assert_eq!(
            labels(&m),
            [
                "Nothing to reclaim",
                "Reclaim…",
                "Rescan now",
                "Open Smolsweep",
                "Uninstall SmolVM…",
                "Quit"
            ]
        );
        assert!(!m.item(ids::STATUS).unwrap().enabled);
    }

    #[test]
    fn reclaimable_total_counts_reclaimable_and_chosen_opt_in_only() {
        let rep = report(
            vec![
                finding("/a", Verdict::Reclaimable, 1_000_000_000, None),
                finding("/b", Verdict::Reclaimable, 200_000_000, None),
                finding(
                    "/c",
                    Verdict::OptIn,
                    5_000_000_000,
                    Some(OptInClass::Caches),
                ),
                finding(
                    "/d",
                    Verdict::OptIn,
                    7_000_000_000,
                    Some(OptInClass::SavedDisks),
                ),
                finding("/e", Verdict::Protected, 9_000_000_000, None),
                finding("/f", Verdict::Unknown, 9_000_000_000, None),
            ],
            vec![],
        );
        let m = TrayModel::from_report(&rep, &TraySettings::default());
        assert_eq!(m.status, "Reclaimable: 1.2 GB");
        assert_eq!(m.icon, IconState::Reclaimable);
        assert_eq!(m.reclaim_bytes, 1_200_000_000);
        assert_eq!(m.reclaim_ids.len(), 2);
        let r = m.item(ids::RECLAIM).unwrap();
        assert!(r.enabled);
        assert_eq!(r.label, "Reclaim 1.2 GB…");

        let with_caches = TraySettings {
            include_opt_in: vec![OptInClass::Caches],
        };
        let m = TrayModel::from_report(&rep, &with_caches);
        assert_eq!(m.reclaim_bytes, 6_200_000_000);
        assert_eq!(m.item(ids::RECLAIM).unwrap().label, "Reclaim 6.2 GB…");
        assert!(
            !m.reclaim_ids.contains(&rep.findings[3].id),
            "saved disks not chosen"
        );
        assert!(
            !m.reclaim_ids.contains(&rep.findings[4].id),
            "protected never"
        );
        assert!(
            !m.reclaim_ids.contains(&rep.findings[5].id),
            "unknown never"
        );
    }

    #[test]
    fn unreadable_inventory_says_cant_verify() {
        let mut rep = report(vec![finding("/a", Verdict::Reclaimable, 10, None)], vec![]);
        rep.products[0].status = "unknown".into();
        rep.products[0].problems = vec!["sandboxes.db is locked".into()];
        let m = TrayModel::from_report(&rep, &TraySettings::default());
        assert_eq!(
            m.status,
            "Can't verify: Celesto SmolVM: sandboxes.db is locked"
        );
        assert_eq!(m.item(ids::STATUS).unwrap().label, m.status);
        // The findings that were verified stay reclaimable.
        assert!(m.item(ids::RECLAIM).unwrap().enabled);
    }

    /// Hazard (issue 39, item 7): an orphan was offered "Stop" and "End the orphaned VM
    /// process", two names for one thing. An orphan has one action, "End process" (the
    /// window's and browse's word); a VM its record owns has "Stop". The header is the one
    /// count of running VMs.
    #[test]
    fn an_orphan_has_one_action_name_end_process_not_stop_and_end() {
        let rep = report(
            vec![],
            vec![
                process(100, true, Scope::ThisHome, 3_000_000_000),
                process(200, false, Scope::ThisHome, 0),
            ],
        );
        let m = TrayModel::from_report(&rep, &TraySettings::default());
        assert_eq!(m.icon, IconState::Orphans);
        assert!(m.tooltip.contains("1 orphaned VM"));
        assert_eq!(
            m.item(ids::VMS_HEADER).unwrap().label,
            crate::view::VmCount::of(&rep).line()
        );
        let sub = |want: &str| {
            m.entries
                .iter()
                .find_map(|e| match e {
                    TrayEntry::Submenu {
                        id, label, items, ..
                    } if id == want => Some((label.clone(), items.clone())),
                    _ => None,
                })
                .unwrap()
        };
        let (label, items) = sub("vm:100:4242");
        assert_eq!(
            label,
            "smol-machines smolvm · m100 · orphaned · holds 3.0 GB deleted"
        );
        // One action, and "Why?" (issue 21).
        let labels: Vec<&str> = items.iter().map(|i| i.label.as_str()).collect();
        assert_eq!(labels, ["End process", "Why?"]);
        assert!(items.iter().all(|i| i.enabled));
        assert_eq!(
            TrayAction::from_id(&items[0].id),
            Some(TrayAction::Reap {
                pid: 100,
                start_time: 4242
            })
        );
        assert!(m.item("vm.stop:100:4242").is_none(), "no Stop of an orphan");
        // A VM with an owner in the inventory is stopped, not ended.
        let (_, items) = sub("vm:200:4242");
        let labels: Vec<&str> = items.iter().map(|i| i.label.as_str()).collect();
        assert_eq!(labels, ["Stop", "Why?"]);
        assert!(m.item("vm.reap:200:4242").is_none());
    }

    #[test]
    fn foreign_home_vms_are_listed_but_not_actionable() {
        let rep = report(vec![], vec![process(300, true, Scope::Foreign, 0)]);
        let m = TrayModel::from_report(&rep, &TraySettings::default());
        // Another HOME's orphan does not turn this user's icon red.
        assert_eq!(m.icon, IconState::Clean);
        let shown = m.item("vm:300:4242").expect("the VM is listed");
        assert!(!shown.enabled, "and offers nothing");
        assert!(
            m.item("vm.stop:300:4242").is_none(),
            "no Stop it would refuse"
        );
        assert!(m.item("vm.reap:300:4242").is_none());
    }

    #[test]
    fn every_action_id_round_trips() {
        for (id, a) in [
            (ids::RECLAIM, TrayAction::Reclaim),
            (ids::COMPACT, TrayAction::Compact),
            (ids::RESCAN, TrayAction::Rescan),
            (ids::OPEN, TrayAction::Open),
            (ids::UNINSTALL, TrayAction::Uninstall),
            (ids::QUIT, TrayAction::Quit),
        ] {
            assert_eq!(TrayAction::from_id(id), Some(a));
        }
        assert_eq!(
            TrayAction::from_id("vm.stop:12:34"),
            Some(TrayAction::Stop {
                pid: 12,
                start_time: 34
            })
        );
        assert_eq!(
            TrayAction::from_id("vm.why:12:34"),
            Some(TrayAction::Why {
                pid: 12,
                start_time: 34
            })
        );
        assert_eq!(TrayAction::from_id(ids::STATUS), None);
        assert_eq!(TrayAction::from_id("vm.reap:x:1"), None);
        assert_eq!(TrayAction::from_id("vm.reap:1"), None);
    }

    #[test]
    fn ids_are_unique() {
        let rep = report(
            vec![finding("/a", Verdict::Reclaimable, 10, None)],
            vec![
                process(1, true, Scope::ThisHome, 0),
                process(2, true, Scope::ThisHome, 0),
            ],
        );
        let m = TrayModel::from_report(&rep, &TraySettings::default());
        let mut all: Vec<&str> = m.items().iter().map(|i| i.id.as_str()).collect();
        all.extend(m.entries.iter().filter_map(|e| match e {
            TrayEntry::Submenu { id, .. } => Some(id.as_str()),
            _ => None,
        }));
        let n = all.len();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), n);
    }

    #[test]
    fn failed_scan_offers_no_reclaim() {
        let m = TrayModel::scan_failed("scan failed: permission denied");
        assert_eq!(m.status, "Can't verify: scan failed: permission denied");
        assert_eq!(m.item(ids::STATUS).unwrap().label, m.status);
        assert!(!m.item(ids::RECLAIM).unwrap().enabled);
        assert!(m.item(ids::RESCAN).unwrap().enabled);
    }

    #[test]
    fn scanning_menu_has_every_action() {
        let m = TrayModel::scanning();
        for id in [
            ids::RECLAIM,
            ids::RESCAN,
            ids::OPEN,
            ids::UNINSTALL,
            ids::QUIT,
        ] {
            assert!(m.item(id).is_some(), "{id}");
        }
        assert!(!m.item(ids::RECLAIM).unwrap().enabled);
    }

    fn disk(
        owner: &str,
        compactable: u64,
        cannot_tell: Option<&str>,
    ) -> crate::model::DiskEstimate {
        crate::model::DiskEstimate {
            product: Product::Smolvm,
            owner: Some(owner.into()),
            saved: false,
            path: PathBuf::from(format!("/data/{owner}/storage.raw")),
            format: Some("raw".into()),
            allocated_bytes: compactable * 2,
            compactable_bytes: compactable,
            guest_free_bytes: compactable,
            read_bytes: 4096,
            cannot_tell: cannot_tell.map(String::from),
            needs: None,
            kept: None,
        }
    }

    /// Hazard: space inside disks counted as reclaimable, or offered with nothing to give back.
    #[test]
    fn compact_tray_entry_says_how_many_disks_and_bytes_and_is_never_in_reclaim() {
        let mut r = report(vec![], vec![]);
        r.compact = crate::model::CompactReport::of(vec![
            disk("a", 4_000_000_000, None),
            disk("b", 5_000_000_000, None),
            disk("c", 3_000_000_000, None),
            disk("d", 0, Some("not an ext4 file system")),
        ]);
        let m = TrayModel::from_report(&r, &TraySettings::default());
        let item = m.compact.clone().expect("a compaction entry");
        assert_eq!(item.id, ids::COMPACT);
        assert_eq!(item.label, "Compact 3 disks: 12.0 GB…");
        assert!(item.enabled);
        assert_eq!(m.status, "Nothing to reclaim");
        assert_eq!(m.reclaim_bytes, 0);
        assert!(!m.item(ids::RECLAIM).unwrap().enabled);
        // In the menu right after "Reclaim", and a click on it maps back to the compaction.
        let ids: Vec<&str> = m.items().iter().map(|i| i.id.as_str()).collect();
        let at = ids.iter().position(|i| *i == ids::RECLAIM).unwrap();
        assert_eq!(ids[at + 1], ids::COMPACT, "{ids:?}");
        assert_eq!(m.item(ids::COMPACT), Some(&item));
        assert_eq!(TrayAction::from_id(&item.id), Some(TrayAction::Compact));
        // Nothing compactable: no entry.
        r.compact = crate::model::CompactReport::of(vec![disk("d", 0, Some("x"))]);
        assert_eq!(
            TrayModel::from_report(&r, &TraySettings::default()).compact,
            None
        );
        assert_eq!(TrayModel::scanning().compact, None);
    }
}
