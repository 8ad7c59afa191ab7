//! What every surface shows: rows, groups, totals, estimates, labels and confirmation text,
//! derived from a scan or a plan here and nowhere else. The CLI prints it, the tray model and
//! the window draw it (the window receives it as JSON); none of them re-derives a number or a
//! label.

pub use crate::pathser::{escape_text, shown};
pub use localtime::{history_time, local_time};
pub use screen::{FirstScreen, Fold, TableLine};
use std::path::Path;
pub use trend::{
    trend_growth, trend_notice, trend_sentence, trend_view, FreedRow, TrendRow, TrendSeries,
    TrendView, TREND_COLUMNS,
};

use serde::Serialize;

use crate::filter::Hidden;
use crate::kind::{FindingKind, Risk};
use crate::model::*;
use crate::plan::{Action, FilteredPlan, Plan};

/// An automatic clean-up waiting for the user.
pub mod auto;
mod compact;
mod confirm;
/// Keep rules and filter controls as the window shows them.
pub mod keeps;
/// What the desktop app says before it has a window: its help, and why it cannot start.
pub mod launch;
/// The line a person reads for one planned action.
mod lines;
mod localtime;
/// Low-space alerts: when the file system holding SmolVM state is low, and their words.
pub mod lowspace;
/// Choices not yet acted on: the quit question, marks of a group, machine and process actions.
pub mod marks;
/// Notifications' words, and which orphans are new.
pub mod notes;
/// A run of a plan as a person sees it: the plan confirmed, its outcome, its progress, History.
pub mod runs;
mod screen;
mod treemap;
mod trend;
/// The guided uninstall's words: the preflight's lines, outcomes, flags, refusals.
pub mod uninstall;
mod vmcount;
/// `why`: how Smolsweep judges one finding, path, machine or process, and on what evidence.
pub mod why;
/// What only the desktop window and tray show: the compaction they confirm, "Why?" as labelled
/// sections, paths that fit, History's times.
pub mod window;
/// The window's fixed words (headings, labels, buttons, empty states), by key.
pub mod words;

pub use compact::{compact_view, disk_sentence, CompactView};
use confirm::vms;
pub use confirm::{
    closing_line, confirmation, estimate_bytes, freeing, not_planned_line, outcome_line,
    reclaim_label, run_note, skipped_target, Confirmation, NOT_PLANNED, RECLAIM,
};
pub(crate) use confirm::{fix_for_path, fix_for_process};
pub use lines::action_line;
pub use treemap::{treemap, Tile};
pub use vmcount::{VmCount, OTHER_HOMES, RUNNING_VMS};

/// Each product's name for a person (`Product::display_name`) by its serialised name, for the
/// window's lines.
pub fn product_names() -> std::collections::BTreeMap<&'static str, &'static str> {
    Product::ALL
        .into_iter()
        .map(|p| (p.as_str(), p.display_name()))
        .collect()
}

/// Bytes for a person (`1.5 GB`, decimal units, as the CLI, the tray and the window show them).
pub fn bytes(n: u64) -> String {
    human_bytes(n)
}

/// How long ago `then` was at `now` (seconds since the epoch), for a person: "just now",
/// "4 min ago", "3 h ago", "2 days ago"; "" when `then` is unknown (0).
pub fn ago(then: u64, now: u64) -> String {
    if then == 0 {
        return String::new();
    }
    match now.saturating_sub(then) {
        d if d < 60 => "just now".into(),
        d if d < 3_600 => format!("{} min ago", d / 60),
        d if d < 86_400 => format!("{} h ago", d / 3_600),
        d => plural((d / 86_400) as usize, "day ago", "days ago"),
    }
}

/// A scan interval for a person, in minutes rounded up: "1 minute", "90 minutes" (the
/// window's settings show it for an interval their list does not offer).
pub fn interval_minutes(secs: u64) -> String {
    plural(secs.div_ceil(60) as usize, "minute", "minutes")
}

/// The scan line, the tray's status and the window's findings while a scan runs.
pub const SCANNING: &str = "Scanning…";

/// What the window's scan line says: "Scanning…", "Scanned 4 min ago", or "" after a failed
/// first scan (the error is shown instead).
pub fn scan_state(scanning: bool, scanned_at: Option<u64>, failed: bool, now: u64) -> String {
    match (scanning, scanned_at) {
        (true, _) => SCANNING.into(),
        (false, Some(0)) => "Scan complete".into(),
        (false, Some(t)) => format!("Scanned {}", ago(t, now)),
        (false, None) if failed => String::new(),
        (false, None) => SCANNING.into(),
    }
}

/// How a verdict is called on every surface: its [`verdict_word`], capitalised, with the opt-in
/// class in brackets ("Opt-in (caches)"): one word per verdict (issue 31); the flag that
/// includes a class is [`class_label`]'s.
pub(crate) fn verdict_label(v: Verdict, class: Option<OptInClass>) -> &'static str {
    match (v, class) {
        (Verdict::Reclaimable, _) => "Reclaimable",
        (Verdict::OptIn, Some(OptInClass::SavedDisks)) => "Opt-in (saved disks)",
        (Verdict::OptIn, Some(OptInClass::Caches)) => "Opt-in (caches)",
        (Verdict::OptIn, Some(OptInClass::Residue)) => "Opt-in (residue)",
        (Verdict::OptIn, None) => "Opt-in",
        (Verdict::Protected, _) => "Protected",
        (Verdict::Unknown, _) => "Unverifiable",
    }
}

/// The one word for a verdict wherever human text names one (the CLI, the window, the README):
/// reclaimable, opt-in, protected, unverifiable. "Kept" is said only of keep rules ("kept by
/// you"). The JSON strings stay `reclaimable`, `opt_in`, `protected`, `unknown`.
pub fn verdict_word(v: Verdict) -> &'static str {
    match v {
        Verdict::Reclaimable => "reclaimable",
        Verdict::OptIn => "opt-in",
        Verdict::Protected => "protected",
        Verdict::Unknown => "unverifiable",
    }
}

/// The opt-in class's name and the `prune` flag that includes it.
pub(crate) fn class_label(c: OptInClass) -> (&'static str, &'static str) {
    match c {
        OptInClass::SavedDisks => ("saved disks", "--include-saved"),
        OptInClass::Caches => ("caches", "--include-caches"),
        OptInClass::Residue => ("residue", "--include-residue"),
    }
}

/// What a product's status is called ("ok", "not found", "can't verify").
pub fn product_status(p: &ProductReport) -> &'static str {
    if !p.detected {
        "not found"
    } else if p.status == "ok" {
        "ok"
    } else {
        "can't verify"
    }
}

/// Products installed in a version newer than every version the rules were verified on: the
/// window offers "accept newer" for them.
pub fn newer_products(r: &ScanReport) -> Vec<Product> {
    r.products
        .iter()
        .filter(|p| p.newer.is_some())
        .map(|p| p.product)
        .collect()
}

/// `path` shortened from the middle to at most `max` characters (`/home/u/…/disks/x.qcow2`).
pub fn short_path(path: &Path, max: usize) -> String {
    let s = crate::pathser::shown(path);
    let chars: Vec<char> = s.chars().collect();
    if chars.len() <= max || max < 5 {
        return s;
    }
    let keep = max - 1;
    let tail = keep * 2 / 3;
    let head = keep - tail;
    let mut out: String = chars[..head].iter().collect();
    out.push('…');
    out.extend(&chars[chars.len() - tail..]);
    out
}

/// One finding as every surface shows it.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Finding id (what `--id` and a selection name it by).
    pub id: String,
    /// The path, escaped for display (control characters and invalid UTF-8 made visible).
    pub path: String,
    /// The path shortened from the middle (the full one is `path`).
    pub short_path: String,
    /// Why it has its verdict, one sentence, escaped for display.
    pub reason: String,
    /// Allocated bytes (`st_blocks` × 512, hard links once).
    pub bytes: u64,
    /// `bytes` in words (`1.5 GB`).
    pub size: String,
    /// Apparent size when it differs from the allocated one (sparse disks).
    pub apparent: Option<String>,
    /// What Smolsweep may do with it.
    pub verdict: Verdict,
    /// The verdict as every surface words it ("Reclaimable", "Opt-in (caches)",
    /// "Protected", "Unverifiable").
    pub verdict_label: &'static str,
    /// Whether a person may select it for deletion (reclaimable or opt-in).
    pub selectable: bool,
    /// Whether "Reclaim" includes it without asking for its class.
    pub selected_by_default: bool,
    /// What selecting it does, in words ("Deletes this file").
    pub effect: String,
}

/// One kind of finding: its label, meaning and rows.
#[derive(Debug, Clone, Serialize)]
pub struct Group {
    /// The kind every row of the group is.
    pub kind: FindingKind,
    /// The product whose state it is.
    pub product: Product,
    /// What the group is called ("Orphaned disks").
    pub label: &'static str,
    /// One sentence saying what these are.
    pub meaning: &'static str,
    /// What removing one costs its owner.
    pub risk: Risk,
    /// The risk in words ("nothing is lost").
    pub risk_label: &'static str,
    /// How many findings it holds.
    pub count: usize,
    /// Allocated bytes of all its findings.
    pub bytes: u64,
    /// `bytes` in words.
    pub size: String,
    /// `count` and `size` as the group's header says them: "3 · 1.5 GB".
    pub count_line: String,
    /// Allocated bytes of its reclaimable findings.
    pub reclaimable_bytes: u64,
    /// Allocated bytes of its opt-in findings.
    pub opt_in_bytes: u64,
    /// How many of its findings are reclaimable.
    pub reclaimable_count: usize,
    /// How many of its findings are opt-in.
    pub opt_in_count: usize,
    /// Its findings, largest first.
    pub rows: Vec<Row>,
}

/// One product line (with its banners: drift, an inventory that cannot be trusted).
#[derive(Debug, Clone, Serialize)]
pub struct ProductLine {
    /// The product the line is about.
    pub product: Product,
    /// Its name for a person ("Celesto SmolVM").
    pub name: &'static str,
    /// Installed version, when it could be read without running anything.
    pub version: Option<String>,
    /// "ok", "not found" or "can't verify" ([`product_status`]).
    pub status: &'static str,
    /// What kept its state from being read, one sentence each.
    pub problems: Vec<String>,
}

/// One VM process.
#[derive(Debug, Clone, Serialize)]
pub struct ProcessRow {
    /// Process id: with `start_time`, its identity.
    pub pid: u32,
    /// When it started, as the scan read it (Linux: clock ticks since boot; macOS: seconds since
    /// the epoch).
    pub start_time: u64,
    /// The product whose VMM it is.
    pub product: Product,
    /// What VMM it is, for a person ("Celesto QEMU VM").
    pub what: &'static str,
    /// The machine name or sandbox id it runs, when known.
    pub owner: Option<String>,
    /// Whether it runs for the HOME scanned (another HOME's VM is shown, never acted on).
    pub this_home: bool,
    /// No inventory record owns it.
    pub orphan: bool,
    /// Allocated bytes of deleted files it still holds open, in words (absent when none).
    pub held_deleted: Option<String>,
    /// Why the scan attributed it the way it did, escaped for display.
    pub reason: String,
    /// Whether Smolsweep can end it (an orphan of this HOME that no keep rule keeps).
    pub can_end: bool,
    /// Why it is left alone because of a keep rule (the core's sentence).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kept: Option<String>,
}

/// One machine or sandbox, with what may be done to it.
#[derive(Debug, Clone, Serialize)]
pub struct MachineRow {
    /// The product the machine or sandbox belongs to.
    pub product: Product,
    /// The smolvm machine name or Celesto sandbox id.
    pub name: String,
    /// "sandbox" (Celesto) or "machine" (smolvm): [`Product::noun`], the one noun on every surface.
    pub noun: &'static str,
    /// The noun and the name, as a row and its buttons name it: "sandbox sb-live".
    pub label: String,
    /// The state a person should see (`running`, `stopped`,
    /// `stale: recorded running, process gone`, ...).
    pub state: String,
    /// The VM process recorded for it, if any.
    pub pid: Option<u32>,
    /// Allocated bytes of its storage, in words (absent when nothing was measured).
    pub size: Option<String>,
    /// Its VM is alive (pid and start time): one of the running VMs ([`VmCount`]).
    pub running: bool,
    /// Recorded as running while its process is gone.
    pub stale: bool,
    /// The state as its badge says it: `state`, or "running (stale: its VM process is gone)".
    pub state_label: String,
    /// What it is for, when it is not a machine of the user's own: "helper machine of an image
    /// build" (smolvm's `image-seed-…`, `init-bake-…`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<&'static str>,
    /// Whether Stop is offered: its VM is alive and no keep rule keeps it.
    pub can_stop: bool,
    /// Whether Delete is offered: no keep rule keeps it.
    pub can_delete: bool,
    /// The Stop button's name for a reader: "Stop sandbox sb-live".
    pub stop_label: String,
    /// The Delete button's name for a reader: "Delete sandbox sb-live".
    pub delete_label: String,
    /// Why it is left alone because of a keep rule (the core's sentence).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kept: Option<String>,
    /// What compacting its disks could give back, in words ("31 MB compactable"), when
    /// something could.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compactable: Option<String>,
    /// The compaction button's name for a reader ("Compact… sandbox sb-live"), when something
    /// is compactable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compact_label: Option<String>,
}

/// A slice of the overview's legend.
#[derive(Debug, Clone, Serialize)]
pub struct LegendEntry {
    /// What the slice is: a kind's label, or "Other".
    pub label: String,
    /// Allocated bytes it stands for.
    pub bytes: u64,
    /// `bytes` in words.
    pub size: String,
    /// The verdict holding most of its bytes: the slice is drawn in that verdict's colour, as
    /// the treemap's tiles and the findings' badges are.
    pub verdict: Verdict,
    /// `verdict` as tables word it ([`verdict_word`]).
    pub verdict_word: &'static str,
    /// Its slice of the bar's tooltip: "Orphaned disks: 1.5 GB, reclaimable".
    pub title: String,
    /// Its entry in the legend: "Orphaned disks 1.5 GB".
    pub line: String,
    /// Its share of the legend's bytes, in percent (the bar's layout).
    pub percent: f64,
}

/// Totals a person sees.
#[derive(Debug, Clone, Serialize)]
pub struct TotalsView {
    /// What "Reclaim" frees: the planner's estimate for everything reclaimable.
    pub reclaimable_bytes: u64,
    /// `reclaimable_bytes` in words.
    pub reclaimable: String,
    /// How many items "Reclaim" deletes (paths; machines deleted through their product's CLI
    /// are counted in `reclaimable_machines`).
    pub reclaimable_count: usize,
    /// How many machines "Reclaim" deletes through their product's CLI (an ended one-off
    /// machine): each is one reclaimable item row of the scan, as each path is.
    pub reclaimable_machines: usize,
    /// Allocated bytes of the opt-in findings (freed only when their class is included).
    pub opt_in_bytes: u64,
    /// `opt_in_bytes` in words.
    pub opt_in: String,
    /// How many opt-in findings there are.
    pub opt_in_count: usize,
    /// Orphaned VM processes of this HOME (`smolsweep reap` ends them).
    pub orphan_processes: usize,
    /// Allocated bytes of deleted files VM processes still hold open, in words.
    pub held_deleted: String,
    /// How many findings are shown, in every group.
    pub findings: usize,
    /// `reclaimable_count` and `reclaimable_machines` in words: "3 items", "3 items and 1
    /// machine".
    pub reclaimable_items: String,
    /// `opt_in_count` in words: "1 item".
    pub opt_in_items: String,
    /// "holding 1.2 GB of deleted files", or "" when VM processes hold none.
    pub held_line: String,
}

/// The whole scan as every surface shows it.
#[derive(Debug, Clone, Serialize)]
pub struct ScanView {
    /// The HOME scanned, escaped for display.
    pub home: String,
    /// The platform scanned on (`linux` or `macos`).
    pub platform: &'static str,
    /// Each product's line: version, status, problems.
    pub products: Vec<ProductLine>,
    /// Groups ordered by what they free (reclaimable, then opt-in bytes), then by risk.
    pub groups: Vec<Group>,
    /// What "Reclaim" frees, what the opt-in classes hold, orphaned VMs and deleted bytes held
    /// open.
    pub totals: TotalsView,
    /// Every machine and sandbox of the inventories, with what may be done to it.
    pub machines: Vec<MachineRow>,
    /// Space inside the disks of stopped machines and saved disks that compacting could give
    /// back (opt-in, never in `totals`' reclaimable figure).
    pub compact: CompactView,
    /// Every VM process of either product.
    pub processes: Vec<ProcessRow>,
    /// How many VMs run: the one count every surface shows ([`VmCount`]).
    pub vms: VmCount,
    /// `vms` in words: "Running VMs: 4 (1 sandbox, 2 machines, 1 orphaned)".
    pub vms_line: String,
    /// Other HOMEs' VM processes in words, apart: "VM processes of other HOMEs: 2" (absent when
    /// there are none).
    pub other_homes_count: Option<String>,
    /// The overview's legend: kinds holding bytes, the rest folded into "Other".
    pub legend: Vec<LegendEntry>,
    /// What to do next, as commands (CLI) or buttons (window); under a filter, the commands
    /// carry its flags.
    pub next_steps: Vec<String>,
    /// What a filter hid (absent when nothing is filtered).
    pub hidden: Option<Hidden>,
    /// The filter's line: "3 of 46 items match --older-than 7d; not shown: 17 machines."
    /// (absent when nothing is filtered).
    pub filter_note: Option<String>,
    /// The same for the window, the filter in words: "3 of 46 items match the filter (older
    /// than 7 days)." (absent when nothing is filtered).
    pub filter_line: Option<String>,
    /// What the machine rows are called together, in each product's one noun ("Sandboxes and
    /// machines"; [`ScanView::machines_heading`]).
    pub machines_heading: &'static str,
    /// The one line that stands for the VM processes of other HOMEs, folded ("VM processes of
    /// other HOMEs: 2 (shown, never acted on)."; absent when there are none).
    pub other_homes_line: Option<String>,
}

impl ScanView {
    /// The view of a scan, its totals those of `reclaim`, the planner's plan of everything
    /// reclaimable in it ([`Plan::reclaimable`]), as "Reclaim" will free.
    pub fn of(r: &ScanReport, reclaim: &Plan) -> ScanView {
        ScanView::build(r, reclaim, None)
    }

    /// The view of a scan narrowed by the filter `reclaim` was made of, at its time: only the
    /// findings that match, only the machines and VM processes it shows
    /// ([`Filter::shows_machines_of`]), totals and next steps of what is shown (the commands
    /// carrying the filter's flags, so they do what they say), and a line saying what it hid.
    /// The planner's totals are those `prune` with the same filter frees: `reclaim`'s plan
    /// ([`Plan::reclaimable_of`]).
    pub fn filtered(r: &ScanReport, reclaim: &FilteredPlan) -> ScanView {
        let filter = reclaim.filter();
        let mut shown = r.clone();
        let hidden = filter.narrow(&mut shown, reclaim.now());
        let mut v = ScanView::build(&shown, reclaim.plan(), hidden);
        // A product filter says nothing of the other product (issue 39, item 7).
        if !filter.products.is_empty() {
            v.products.retain(|p| filter.products.contains(&p.product));
        }
        v
    }

    /// `r` is what is shown; `reclaim` the planner's plan of the same findings with every
    /// machine.
    fn build(r: &ScanReport, reclaim: &Plan, hidden: Option<Hidden>) -> ScanView {
        let mut v = ScanView::build_rows(r, reclaim, hidden);
        v.machines_heading = v.machines_heading();
        v
    }

    fn build_rows(r: &ScanReport, reclaim: &Plan, hidden: Option<Hidden>) -> ScanView {
        let groups = groups(r);
        ScanView {
            home: crate::pathser::shown(&r.home),
            platform: r.platform.as_str(),
            products: r.products.iter().map(product_line).collect(),
            legend: legend(&groups),
            totals: TotalsView {
                reclaimable_bytes: estimate_bytes(reclaim),
                reclaimable: bytes(estimate_bytes(reclaim)),
                reclaimable_count: reclaim.delete_count(),
                reclaimable_machines: machine_deletes(reclaim),
                opt_in_bytes: r.totals.opt_in_allocated_bytes,
                opt_in: bytes(r.totals.opt_in_allocated_bytes),
                opt_in_count: r.totals.opt_in_count as usize,
                orphan_processes: orphans(r),
                held_deleted: bytes(r.totals.held_deleted_bytes),
                findings: groups.iter().map(|g| g.count).sum(),
                reclaimable_items: items_and_machines(reclaim),
                opt_in_items: plural(r.totals.opt_in_count as usize, "item", "items"),
                held_line: match r.totals.held_deleted_bytes {
                    0 => String::new(),
                    b => format!("holding {} of deleted files", bytes(b)),
                },
            },
            next_steps: next_steps(r, reclaim, hidden.as_ref()),
            machines: r.machines.iter().map(|m| machine_row(r, m)).collect(),
            compact: compact_view(r),
            processes: r.processes.iter().map(process_row).collect(),
            vms: VmCount::of(r),
            vms_line: VmCount::of(r).line(),
            other_homes_count: VmCount::of(r).other_homes_line(),
            groups,
            filter_note: hidden.as_ref().map(screen::filter_note),
            filter_line: hidden.as_ref().map(screen::filter_line),
            machines_heading: "",
            other_homes_line: screen::other_homes_line(r),
            hidden,
        }
    }
}

/// Machines and sandboxes a plan deletes through their product's CLI.
fn machine_deletes(plan: &Plan) -> usize {
    plan.actions
        .iter()
        .filter(|a| matches!(a.action, Action::DeleteMachine { .. }))
        .count()
}

/// "42 items", "42 items and 1 machine": what a plan deletes, counted as its lines are.
pub(crate) fn items_and_machines(plan: &Plan) -> String {
    let mut parts = vec![plural(plan.delete_count(), "item", "items")];
    parts.extend(vms(plan, |a| match a {
        Action::DeleteMachine { product, .. } => Some(*product),
        _ => None,
    }));
    parts.join(" and ")
}

fn orphans(r: &ScanReport) -> usize {
    r.processes
        .iter()
        .filter(|p| p.is_this_homes_orphan())
        .count()
}

fn product_line(p: &ProductReport) -> ProductLine {
    ProductLine {
        product: p.product,
        name: p.product.display_name(),
        version: p.version.clone(),
        status: product_status(p),
        problems: p.problems.clone(),
    }
}

fn row(f: &Finding) -> Row {
    let selectable = matches!(f.verdict, Verdict::Reclaimable | Verdict::OptIn);
    let effect = match (selectable, f.kind.removal(), f.is_dir) {
        (false, ..) => "Nothing: Smolsweep leaves it alone".to_string(),
        (true, crate::kind::Removal::Unlink, _) => "Removes the link; its target stays".into(),
        (true, crate::kind::Removal::ProductCli, _) => format!(
            "Deletes machine '{}' through smolvm",
            f.owner.as_deref().unwrap_or("?")
        ),
        (true, _, true) => "Deletes this directory and everything in it".into(),
        (true, _, false) => "Deletes this file".into(),
    };
    Row {
        id: f.id.clone(),
        path: crate::pathser::shown(&f.path),
        short_path: short_path(&f.path, 64),
        reason: crate::pathser::escape_text(&f.reason),
        bytes: f.allocated_bytes,
        size: bytes(f.allocated_bytes),
        apparent: (f.apparent_bytes != f.allocated_bytes).then(|| bytes(f.apparent_bytes)),
        verdict: f.verdict,
        verdict_label: verdict_label(f.verdict, f.opt_in_class),
        selectable,
        selected_by_default: f.verdict == Verdict::Reclaimable,
        effect,
    }
}

fn groups(r: &ScanReport) -> Vec<Group> {
    let mut out: Vec<Group> = Vec::new();
    for f in &r.findings {
        let i = match out.iter().position(|g| g.kind == f.kind) {
            Some(i) => i,
            None => {
                out.push(Group {
                    kind: f.kind,
                    product: f.product,
                    label: f.kind.label(),
                    meaning: f.kind.meaning(),
                    risk: f.kind.risk(),
                    risk_label: match f.kind.risk() {
                        Risk::Live => LIVE_NOT_IN_USE,
                        r => r.label(),
                    },
                    count: 0,
                    bytes: 0,
                    size: String::new(),
                    count_line: String::new(),
                    reclaimable_bytes: 0,
                    opt_in_bytes: 0,
                    reclaimable_count: 0,
                    opt_in_count: 0,
                    rows: Vec::new(),
                });
                out.len() - 1
            }
        };
        let g = &mut out[i];
        // "in use" is said only of a group where a process uses something (issue 39, item 7).
        if g.risk == Risk::Live && !f.used_by.is_empty() {
            g.risk_label = g.risk.label();
        }
        g.count += 1;
        g.bytes += f.allocated_bytes;
        match f.verdict {
            Verdict::Reclaimable => {
                g.reclaimable_bytes += f.allocated_bytes;
                g.reclaimable_count += 1;
            }
            Verdict::OptIn => {
                g.opt_in_bytes += f.allocated_bytes;
                g.opt_in_count += 1;
            }
            _ => {}
        }
        g.rows.push(row(f));
    }
    for g in &mut out {
        g.size = bytes(g.bytes);
        g.count_line = format!("{} · {}", g.count, g.size);
        g.rows
            .sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.path.cmp(&b.path)));
    }
    out.sort_by(|a, b| {
        (b.reclaimable_bytes, b.opt_in_bytes, b.bytes)
            .cmp(&(a.reclaimable_bytes, a.opt_in_bytes, a.bytes))
            .then(a.risk.cmp(&b.risk))
            .then(a.kind.cmp(&b.kind))
    });
    out
}

/// At most six slices: the largest kinds by bytes, everything else (and every empty kind) in
/// "Other".
fn legend(groups: &[Group]) -> Vec<LegendEntry> {
    let mut by_bytes: Vec<&Group> = groups.iter().filter(|g| g.bytes > 0).collect();
    by_bytes.sort_by_key(|g| std::cmp::Reverse(g.bytes));
    let slice = |label: String, gs: &[&Group]| {
        let b: u64 = gs.iter().map(|g| g.bytes).sum();
        let verdict = main_verdict(gs.iter().flat_map(|g| g.rows.iter()));
        let size = bytes(b);
        LegendEntry {
            title: format!("{label}: {size}, {}", verdict_word(verdict)),
            line: format!("{label} {size}"),
            label,
            bytes: b,
            size,
            verdict,
            verdict_word: verdict_word(verdict),
            percent: 0.0,
        }
    };
    let mut out: Vec<LegendEntry> = by_bytes
        .iter()
        .take(5)
        .map(|g| slice(g.label.to_string(), std::slice::from_ref(g)))
        .collect();
    if by_bytes.len() > 5 {
        out.push(slice("Other".into(), &by_bytes[5..]));
    }
    let total: u64 = out.iter().map(|e| e.bytes).sum();
    for e in &mut out {
        e.percent = e.bytes as f64 * 100.0 / total.max(1) as f64;
    }
    out
}

/// The verdict of the most bytes among `rows` (the safer one on a tie).
fn main_verdict<'a>(rows: impl Iterator<Item = &'a Row>) -> Verdict {
    let mut by = std::collections::BTreeMap::<Verdict, u64>::new();
    for r in rows {
        *by.entry(r.verdict).or_default() += r.bytes;
    }
    by.into_iter()
        .max_by_key(|(_, b)| *b)
        .map(|(v, _)| v)
        .unwrap_or(Verdict::Unknown)
}

/// "Kept by you …": what a machine or process row says while a keep rule keeps it.
fn kept_sentence(rule: &str) -> String {
    let why = crate::keep::kept_why(rule);
    let mut c = why.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect::<String>() + ".",
        None => why,
    }
}

fn process_row(p: &VmProcess) -> ProcessRow {
    let this_home = p.scope == Scope::ThisHome;
    ProcessRow {
        pid: p.pid,
        start_time: p.start_time,
        product: p.product,
        what: p.shape.label(),
        owner: p.owner.clone(),
        this_home,
        orphan: p.orphan,
        held_deleted: (p.held_deleted_bytes > 0).then(|| bytes(p.held_deleted_bytes)),
        reason: crate::pathser::escape_text(&p.reason),
        can_end: p.is_this_homes_orphan(),
        kept: p.kept.as_deref().map(kept_sentence),
    }
}

fn machine_row(r: &ScanReport, m: &Machine) -> MachineRow {
    let state = if m.effective_state.is_empty() {
        m.state.clone()
    } else {
        m.effective_state.clone()
    };
    let noun = m.product.noun();
    let stale = stale_record(m);
    let label = format!("{noun} {}", m.name);
    let compactable = r.compact.of_machine(m.product, &m.name);
    MachineRow {
        product: m.product,
        name: m.name.clone(),
        noun,
        stop_label: format!("{STOP} {label}"),
        delete_label: format!("{DELETE} {label}"),
        compact_label: (compactable > 0).then(|| format!("{} {label}", window::COMPACT_MACHINE)),
        label,
        running: m.alive,
        stale,
        // Said once: the scan's state may say it already ("stale: recorded running, …").
        state_label: match stale && !state.starts_with("stale") {
            true => format!("{state} (stale: its VM process is gone)"),
            false => state.clone(),
        },
        role: (m.product == Product::Smolvm && crate::upstream::is_helper_machine(&m.name))
            .then_some(HELPER_ROLE),
        can_stop: m.alive && m.kept.is_none(),
        can_delete: m.kept.is_none(),
        kept: m.kept.as_deref().map(kept_sentence),
        state,
        pid: m.pid,
        size: (m.allocated_bytes > 0).then(|| bytes(m.allocated_bytes)),
        compactable: match compactable {
            0 => None,
            b => Some(format!("{} compactable", bytes(b))),
        },
    }
}

/// Whether `m`'s record says its VM runs while that VM is gone: recorded running, or (a Celesto
/// sandbox, whose paused guest stays a live QEMU or Firecracker process) recorded paused with a
/// pid that is dead. A smolvm machine pauses to a checkpoint on disk: no process is expected.
fn stale_record(m: &Machine) -> bool {
    let expects_process = match m.state.as_str() {
        "running" => true,
        "paused" => m.product == Product::Celesto && m.pid.is_some(),
        _ => false,
    };
    expects_process && !m.alive
}

/// The scan report as JSON, with what the text surfaces say about each machine beside its
/// record: its role ("helper machine of an image build"), the state they show (stale or not)
/// and the noun they call it by. `smolsweep scan --json` prints this, so the JSON never knows
/// less than the screen.
pub fn report_json(r: &ScanReport) -> serde_json::Value {
    let mut v = serde_json::to_value(r).unwrap_or_default();
    if let Some(ms) = v.get_mut("machines").and_then(|m| m.as_array_mut()) {
        for (j, m) in ms.iter_mut().zip(&r.machines) {
            let row = machine_row(r, m);
            if let Some(o) = j.as_object_mut() {
                if let Some(role) = row.role {
                    o.insert("role".into(), role.into());
                }
                o.insert("state_label".into(), row.state_label.into());
                o.insert("noun".into(), row.noun.into());
            }
        }
    }
    v
}

/// Which caches a plain `prune` takes, and why (issue 31, item 2): said where the scan offers
/// `--include-caches`, as `prune --help` says it.
pub const CACHES_BY_DEFAULT: &str = " (without it, only image caches of versions the installed \
Celesto no longer uses go, as with its own `image prune`)";

/// The risk of a group of what belongs to something that exists, when no process uses any of
/// it ("in use" is said only where one does).
pub const LIVE_NOT_IN_USE: &str = "belongs to what exists";

/// A machine's Stop button, on every surface that offers it (the window's `stop` word, which
/// also names the button of its confirmation).
pub(crate) const STOP: &str = "Stop";

/// A machine's Delete button, likewise.
pub(crate) const DELETE: &str = "Delete";

/// What a smolvm helper machine is, on every surface that lists machines.
const HELPER_ROLE: &str = "helper machine of an image build";

fn next_steps(r: &ScanReport, reclaim: &Plan, hidden: Option<&Hidden>) -> Vec<String> {
    let mut out = Vec::new();
    let flags = match hidden {
        Some(h) if !h.flags.is_empty() => format!(" {}", h.flags),
        _ => String::new(),
    };
    if !reclaim.is_empty() {
        out.push(format!(
            "`smolsweep prune{flags}` frees {} ({}).",
            bytes(estimate_bytes(reclaim)),
            items_and_machines(reclaim)
        ));
    }
    for class in [
        OptInClass::SavedDisks,
        OptInClass::Caches,
        OptInClass::Residue,
    ] {
        let n: u64 = r
            .findings
            .iter()
            .filter(|f| f.verdict == Verdict::OptIn && f.opt_in_class == Some(class))
            .map(|f| f.allocated_bytes)
            .sum();
        if n > 0 {
            let (name, flag) = class_label(class);
            // What a plain prune takes of Celesto's image caches is said only where they are.
            let celesto_caches = r.findings.iter().any(|f| {
                f.product == Product::Celesto
                    && f.verdict == Verdict::OptIn
                    && f.opt_in_class == Some(OptInClass::Caches)
            });
            out.push(format!(
                "`smolsweep prune{flags} {flag}` also frees {} of {name}{}.",
                bytes(n),
                match class {
                    OptInClass::Caches if celesto_caches => CACHES_BY_DEFAULT,
                    _ => "",
                }
            ));
        }
    }
    if let Some(step) = compact_step(r, hidden) {
        out.push(step);
    }
    let n = orphans(r);
    if n > 0 {
        // `reap` takes no filter: under one, it is told the pids of the orphans shown.
        let pids: String = match hidden {
            Some(_) => r
                .processes
                .iter()
                .filter(|p| p.is_this_homes_orphan())
                .map(|p| format!(" {}", p.pid))
                .collect(),
            None => String::new(),
        };
        out.push(format!(
            "`smolsweep reap{pids}` ends {n} orphaned VM process{}.",
            if n == 1 { "" } else { "es" }
        ));
    }
    out
}

/// "`smolsweep compact` gives back 25.2 MB inside 2 disks (opt-in, not in the reclaimable
/// total)." when something is compactable (issue 39, item 4). `compact` takes no filter: under
/// one, it is told the machines and sandboxes whose disks are shown.
fn compact_step(r: &ScanReport, hidden: Option<&Hidden>) -> Option<String> {
    let c = &r.compact;
    if c.compactable_bytes == 0 || hidden.is_some_and(|h| h.items_only) {
        return None;
    }
    let mut targets: Vec<String> = Vec::new();
    if hidden.is_some() {
        for d in c
            .disks
            .iter()
            .filter(|d| d.kept.is_none() && d.compactable_bytes > 0)
        {
            let t = match &d.owner {
                Some(o) => window::machine_target(d.product, o),
                None => crate::pathser::shown(&d.path),
            };
            if !targets.contains(&t) {
                targets.push(t);
            }
        }
    }
    let args: String = targets.iter().map(|t| format!(" {t}")).collect();
    Some(format!(
        "`smolsweep compact{args}` gives back {} inside {} (opt-in, not in the reclaimable total).",
        bytes(c.compactable_bytes),
        plural(c.compactable_disks as usize, "disk", "disks")
    ))
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `s` with the typographic characters this project prints replaced by ASCII, for terminals
/// whose locale is not UTF-8.
pub fn ascii(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '—' | '–' | '−' | '─' => out.push('-'),
            '→' => out.push_str("->"),
            '←' => out.push_str("<-"),
            '↑' => out.push_str("Up"),
            '↓' => out.push_str("Down"),
            '·' => out.push('-'),
            '•' => out.push('*'),
            '≥' => out.push_str(">="),
            '▾' => out.push('-'),
            '▸' => out.push('+'),
            '…' => out.push_str("..."),
            '‘' | '’' => out.push('\''),
            '“' | '”' => out.push('"'),
            '×' => out.push('x'),
            c if c.is_ascii() => out.push(c),
            _ => out.push('?'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_shorten_from_the_middle() {
        let p = Path::new("/home/someone/.local/state/celesto/disks/0123456789abcdef.qcow2");
        let s = short_path(p, 30);
        assert_eq!(s.chars().count(), 30);
        assert!(s.starts_with("/home/"), "{s}");
        assert!(s.ends_with("abcdef.qcow2"), "{s}");
        assert!(s.contains('…'));
        assert_eq!(short_path(Path::new("/a/b"), 30), "/a/b");
    }

    #[test]
    fn the_scan_line_says_how_long_ago_from_the_core() {
        assert_eq!(ago(0, 1_000), "");
        assert_eq!(ago(1_000, 1_030), "just now");
        assert_eq!(ago(1_000, 1_000 + 4 * 60 + 5), "4 min ago");
        assert_eq!(ago(1_000, 1_000 + 3 * 3_600), "3 h ago");
        assert_eq!(ago(1_000, 1_000 + 86_400), "1 day ago");
        assert_eq!(ago(1_000, 1_000 + 2 * 86_400), "2 days ago");
        assert_eq!(
            ago(2_000, 1_000),
            "just now",
            "a clock set back is not the future"
        );
        assert_eq!(scan_state(true, Some(5), false, 9), "Scanning…");
        assert_eq!(scan_state(false, Some(0), false, 9), "Scan complete");
        assert_eq!(
            scan_state(false, Some(1_000), false, 1_120),
            "Scanned 2 min ago"
        );
        assert_eq!(scan_state(false, None, true, 9), "");
        assert_eq!(scan_state(false, None, false, 9), "Scanning…");
    }

    #[test]
    fn ascii_folds_what_this_project_prints() {
        assert_eq!(ascii("a — b → c…"), "a - b -> c...");
    }
}
