//! What every surface shows: rows, groups, totals, estimates, labels and confirmation text,
//! derived from a scan or a plan here and nowhere else. The CLI prints it, the tray model and
//! the window draw it (the window receives it as JSON); none of them re-derives a number or a
//! label.

pub use crate::pathser::{escape_text, shown};
pub use localtime::local_time;
pub use screen::{FirstScreen, Fold};
use std::path::Path;
pub use trend::{
    trend_growth, trend_notice, trend_sentence, trend_view, FreedRow, TrendRow, TrendSeries,
    TrendView, TREND_COLUMNS,
};

use serde::Serialize;

use crate::filter::{Filter, Hidden};
use crate::kind::{FindingKind, Risk};
use crate::model::*;
use crate::plan::{Action, Plan, Selection};

/// An automatic clean-up waiting for the user.
pub mod auto;
mod compact;
/// Keep rules and filter controls as the window shows them.
pub mod keeps;
mod localtime;
/// Low-space alerts: when the file system holding SmolVM state is low, and their words.
pub mod lowspace;
/// Notifications' words, and which orphans are new.
pub mod notes;
/// A run of a plan as a person sees it: the plan confirmed, its outcome, its progress, History.
pub mod runs;
mod screen;
mod trend;
/// `why`: how Smolsweep judges one finding, path, machine or process, and on what evidence.
pub mod why;
/// What only the desktop window and tray show: the compaction they confirm, "Why?" as labelled
/// sections, short badge words, paths that fit, History's times.
pub mod window;

pub use compact::{compact_view, disk_sentence, CompactView};

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

/// What the window's scan line says: "Scanning…", "Scanned 4 min ago", or "" after a failed
/// first scan (the error is shown instead).
pub fn scan_state(scanning: bool, scanned_at: Option<u64>, failed: bool, now: u64) -> String {
    match (scanning, scanned_at) {
        (true, _) => "Scanning…".into(),
        (false, Some(0)) => "Scan complete".into(),
        (false, Some(t)) => format!("Scanned {}", ago(t, now)),
        (false, None) if failed => String::new(),
        (false, None) => "Scanning…".into(),
    }
}

/// How a verdict is called on every surface: its [`verdict_word`], capitalised, with the opt-in
/// class and what includes it.
pub(crate) fn verdict_label(v: Verdict, class: Option<OptInClass>) -> &'static str {
    match (v, class) {
        (Verdict::Reclaimable, _) => "Reclaimable",
        (Verdict::OptIn, Some(OptInClass::SavedDisks)) => {
            "Saved disk: only if you include saved disks"
        }
        (Verdict::OptIn, Some(OptInClass::Caches)) => "Cache: only if you include caches",
        (Verdict::OptIn, Some(OptInClass::Residue)) => "Residue: only if you include residue",
        (Verdict::OptIn, None) => "Only if you include it",
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
    /// The verdict as every surface words it ("Reclaimable", "Cache: only if you include caches",
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
    /// "machine" (smolvm) or "computer"/"sandbox" (Celesto, as the installed version says).
    pub noun: &'static str,
    /// The state a person should see (`running`, `stopped`,
    /// `stale: recorded running, process gone`, ...).
    pub state: String,
    /// The VM process recorded for it, if any.
    pub pid: Option<u32>,
    /// Allocated bytes of its storage, in words (absent when nothing was measured).
    pub size: Option<String>,
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
    /// Why it is left alone because of a keep rule (the core's sentence).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kept: Option<String>,
    /// What compacting its disks could give back, in words ("31 MB compactable"), when
    /// something could.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compactable: Option<String>,
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
    /// How many items "Reclaim" deletes.
    pub reclaimable_count: usize,
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
    /// `reclaimable_count` in words: "3 items".
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
}

impl ScanView {
    /// The view of a scan (its totals from the planner, as "Reclaim" will free).
    pub fn of(r: &ScanReport) -> ScanView {
        ScanView::build(r, r, None)
    }

    /// The view of a scan narrowed by `filter` at `now`: only the findings that match, only
    /// the machines and VM processes it shows ([`Filter::shows_machines_of`]), totals and next
    /// steps of what is shown (the commands carrying the filter's flags, so they do what they
    /// say), and a line saying what it hid. The planner's totals are those `prune` with the
    /// same filter frees.
    pub fn filtered(r: &ScanReport, filter: &Filter, now: std::time::SystemTime) -> ScanView {
        let mut items = r.clone();
        filter.apply(&mut items, now);
        let mut shown = r.clone();
        let hidden = filter.narrow(&mut shown, now);
        ScanView::build(&shown, &items, hidden)
    }

    /// `r` is what is shown; `planned` the same findings with every machine, for the planner.
    fn build(r: &ScanReport, planned: &ScanReport, hidden: Option<Hidden>) -> ScanView {
        let reclaim = Plan::from_scan(planned, &Selection::reclaimable());
        let groups = groups(r);
        ScanView {
            home: crate::pathser::shown(&r.home),
            platform: r.platform.as_str(),
            products: r.products.iter().map(product_line).collect(),
            legend: legend(&groups),
            totals: TotalsView {
                reclaimable_bytes: estimate_bytes(&reclaim),
                reclaimable: bytes(estimate_bytes(&reclaim)),
                reclaimable_count: reclaim.delete_count(),
                opt_in_bytes: r.totals.opt_in_allocated_bytes,
                opt_in: bytes(r.totals.opt_in_allocated_bytes),
                opt_in_count: r.totals.opt_in_count as usize,
                orphan_processes: orphans(r),
                held_deleted: bytes(r.totals.held_deleted_bytes),
                findings: groups.iter().map(|g| g.count).sum(),
                reclaimable_items: plural(reclaim.delete_count(), "item", "items"),
                opt_in_items: plural(r.totals.opt_in_count as usize, "item", "items"),
                held_line: match r.totals.held_deleted_bytes {
                    0 => String::new(),
                    b => format!("holding {} of deleted files", bytes(b)),
                },
            },
            next_steps: next_steps(r, &reclaim, hidden.as_ref()),
            machines: r.machines.iter().map(|m| machine_row(r, m)).collect(),
            compact: compact_view(r),
            processes: r.processes.iter().map(process_row).collect(),
            groups,
            filter_note: hidden.as_ref().map(screen::filter_note),
            filter_line: hidden.as_ref().map(screen::filter_line),
            hidden,
        }
    }
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
                    risk_label: f.kind.risk().label(),
                    count: 0,
                    bytes: 0,
                    size: String::new(),
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
        LegendEntry {
            label,
            bytes: b,
            size: bytes(b),
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
    let noun = match m.product {
        Product::Smolvm => "machine",
        Product::Celesto if celesto_says_computer(r) => "computer",
        Product::Celesto => "sandbox",
    };
    let stale = m.state == "running" && !m.alive;
    MachineRow {
        product: m.product,
        name: m.name.clone(),
        noun,
        stale,
        state_label: match stale {
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
        compactable: match r.compact.of_machine(m.product, &m.name) {
            0 => None,
            b => Some(format!("{} compactable", bytes(b))),
        },
    }
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

/// What a smolvm helper machine is, on every surface that lists machines.
const HELPER_ROLE: &str = "helper machine of an image build";

/// Whether the installed Celesto calls its sandboxes "computers" (0.1.10 and later).
pub(crate) fn celesto_says_computer(r: &ScanReport) -> bool {
    r.products
        .iter()
        .find(|p| p.product == Product::Celesto)
        .and_then(|p| p.version.as_deref())
        .is_some_and(crate::upstream::celesto_uses_computer_noun)
}

fn next_steps(r: &ScanReport, reclaim: &Plan, hidden: Option<&Hidden>) -> Vec<String> {
    let mut out = Vec::new();
    let flags = match hidden {
        Some(h) if !h.flags.is_empty() => format!(" {}", h.flags),
        _ => String::new(),
    };
    if !reclaim.is_empty() {
        let n = reclaim.delete_count();
        out.push(format!(
            "`smolsweep prune{flags}` frees {} ({n} item{}).",
            bytes(estimate_bytes(reclaim)),
            if n == 1 { "" } else { "s" }
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
            out.push(format!(
                "`smolsweep prune{flags} {flag}` also frees {} of {name}.",
                bytes(n)
            ));
        }
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

/// Bytes a plan is expected to free: the plan's one estimate ([`Plan::estimate_of`]), the
/// number the confirmation, the journal, the result JSON, the tray and the window all show.
pub fn estimate_bytes(plan: &Plan) -> u64 {
    plan.estimated_bytes
}

/// The confirmation for findings chosen one by one (the window's and the tray's selection).
pub fn selection_estimate(report: &ScanReport, ids: &[String]) -> Confirmation {
    let sel = Selection {
        ids: ids.to_vec(),
        ..Default::default()
    };
    confirmation(&Plan::from_scan(report, &sel))
}

/// What a confirmation says, on every surface, for one plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Confirmation {
    /// "Delete 12 items (3.4 GB) and end 2 VM processes"
    pub headline: String,
    /// The estimate in bytes and in words.
    pub estimate_bytes: u64,
    /// `estimate_bytes` in words.
    pub estimate: String,
    /// One line per action, in the order they run.
    pub lines: Vec<String>,
    /// What was selected but will not be done, and why.
    pub not_planned: Vec<String>,
    /// The Reclaim button's label for it ([`reclaim_label`]): "Reclaim 2.0 MB…".
    pub reclaim_label: String,
}

/// The label of a Reclaim button or menu item that frees about `bytes`: "Reclaim 2.0 MB…";
/// "Reclaim…" when nothing is reclaimable.
pub fn reclaim_label(bytes: Option<u64>) -> String {
    match bytes {
        None => "Reclaim…".to_string(),
        Some(b) => format!("Reclaim {}…", human_bytes(b)),
    }
}

impl Confirmation {
    /// "Delete 1 item; about 2.0 MB to free." as one sentence (the plan line); a plan that
    /// frees nothing (a stop) says only what it does.
    pub fn sentence(&self) -> String {
        if self.estimate_bytes > 0 {
            format!("{}; about {} to free.", self.headline, self.estimate)
        } else {
            format!("{}.", self.headline)
        }
    }

    /// The question asked before it runs, without the question mark: "Delete 3 items and end
    /// 1 VM process, freeing about 2.0 MB".
    pub fn question(&self) -> String {
        freeing(&self.headline, self.estimate_bytes)
    }
}

/// What a plan does and what it frees, as one clause: "Delete 3 items, freeing about 2.0 MB"
/// (the words of every confirmation, the uninstall's included); nothing is said of bytes when
/// it frees none.
pub fn freeing(what: &str, bytes: u64) -> String {
    if bytes > 0 {
        format!("{what}, freeing about {}", human_bytes(bytes))
    } else {
        what.to_string()
    }
}

/// The one closing line of a run or dry run, on every surface: "Dry run: nothing changed;
/// it would free about 2.0 MB.", "3 done, 1 skipped, 0 failed. Freed 1.9 MB (measured; about
/// 2.0 MB estimated)." A run that frees nothing (a stop) names no bytes.
pub fn closing_line(r: &crate::exec::ExecReport) -> String {
    if r.dry_run {
        return match r.estimated_bytes {
            0 => "Dry run: nothing changed.".to_string(),
            b => format!(
                "Dry run: nothing changed; it would free about {}.",
                bytes(b)
            ),
        };
    }
    let counts = format!(
        "{} done, {} skipped, {} failed",
        r.done().count(),
        r.skipped().count(),
        r.failed().count()
    );
    if r.estimated_bytes == 0 && r.freed_bytes == 0 {
        return format!("{counts}.");
    }
    format!(
        "{counts}. Freed {} (measured; about {} estimated).",
        bytes(r.freed_bytes),
        bytes(r.estimated_bytes)
    )
}

/// One action's result as a run lists it: `done`, `would`, `skipped` or `FAILED`, then the
/// action's summary (and why, for a skip or a failure; what it freed, for a measured delete).
pub fn outcome_line(summary: &str, outcome: &crate::exec::Outcome, freed_bytes: u64) -> String {
    use crate::exec::Outcome;
    match outcome {
        Outcome::Done { .. } if freed_bytes > 0 => format!(
            "done     {summary}: freed {} (measured)",
            bytes(freed_bytes)
        ),
        Outcome::Done { .. } => format!("done     {summary}"),
        Outcome::WouldDo { .. } => format!("would    {summary}"),
        Outcome::Skipped { why, .. } => {
            format!("skipped  {summary}: {}", crate::pathser::escape_text(why))
        }
        Outcome::Failed { error } => {
            format!("FAILED   {summary}: {}", crate::pathser::escape_text(error))
        }
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The confirmation of `plan`.
pub fn confirmation(plan: &Plan) -> Confirmation {
    let count = |f: fn(&Action) -> bool| plan.actions.iter().filter(|a| f(&a.action)).count();
    let deletes = count(|a| matches!(a, Action::DeletePath { .. }));
    let machines = count(|a| matches!(a, Action::DeleteMachine { .. }));
    let stops = count(|a| matches!(a, Action::StopMachine { .. }));
    let ends = count(|a| matches!(a, Action::SignalProcess { .. }));
    let detaches = count(|a| matches!(a, Action::Detach { .. }));
    let compacts = count(|a| matches!(a, Action::CompactDisk { .. }));
    let removes = count(|a| {
        matches!(
            a,
            Action::RemoveTree { .. }
                | Action::RemoveDirIfEmpty { .. }
                | Action::RemoveLauncher { .. }
                | Action::RemovePathBlock { .. }
        )
    });
    let est = estimate_bytes(plan);
    let mut parts = Vec::new();
    match (deletes, machines) {
        (0, 0) => {}
        (d, 0) => parts.push(format!("delete {}", plural(d, "item", "items"))),
        (0, m) => parts.push(format!("delete {}", plural(m, "machine", "machines"))),
        (d, m) => parts.push(format!(
            "delete {} and {}",
            plural(d, "item", "items"),
            plural(m, "machine", "machines")
        )),
    }
    if stops > 0 {
        parts.push(format!("stop {}", plural(stops, "machine", "machines")));
    }
    if ends > 0 {
        parts.push(format!(
            "end {}",
            plural(ends, "VM process", "VM processes")
        ));
    }
    if detaches > 0 {
        parts.push(format!(
            "detach {}",
            plural(detaches, "disk image", "disk images")
        ));
    }
    if compacts > 0 {
        parts.push(format!("compact {}", plural(compacts, "disk", "disks")));
    }
    if removes > 0 {
        parts.push(format!(
            "remove {} of the installation",
            plural(removes, "entry", "entries")
        ));
    }
    let headline = match parts.len() {
        0 => "Nothing to do".to_string(),
        _ => {
            let last = parts.pop().unwrap_or_default();
            let s = if parts.is_empty() {
                last
            } else {
                format!("{} and {last}", parts.join(", "))
            };
            let mut c = s.chars();
            c.next()
                .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
                .unwrap_or_default()
        }
    };
    Confirmation {
        headline,
        estimate_bytes: est,
        estimate: bytes(est),
        reclaim_label: reclaim_label(Some(est)),
        lines: plan.actions.iter().map(|a| a.summary.clone()).collect(),
        not_planned: plan
            .skipped_at_plan
            .iter()
            .map(|s| crate::pathser::escape_text(&s.why))
            .collect(),
    }
}

/// The command that would remove what is left at `path`, judged by the scan `r`: one that
/// will accept it, or what to do by hand when no Smolsweep command would.
pub(crate) fn fix_for_path(r: &ScanReport, path: &Path) -> String {
    let Some(f) = r.findings.iter().find(|f| f.path == path) else {
        return format!(
            "check {} by hand: the scan does not judge it",
            crate::pathser::shown(path)
        );
    };
    match f.verdict {
        Verdict::Reclaimable => "smolsweep prune".into(),
        Verdict::OptIn => {
            let flag = f.opt_in_class.map(|c| class_label(c).1).unwrap_or("");
            format!("smolsweep prune {flag}").trim_end().to_string()
        }
        // The scan's own "in use" judgement of it, not a second one.
        _ if !f.used_by.is_empty() => f
            .used_by
            .iter()
            .map(|pid| fix_for_process(r, *pid))
            .collect::<Vec<_>>()
            .join("; "),
        _ => match (
            &f.owner,
            r.machines
                .iter()
                .find(|m| Some(&m.name) == f.owner.as_ref()),
        ) {
            (Some(o), Some(m)) => format!("smolsweep delete {}:{o}", m.product.as_str()),
            _ => format!("check by hand: {}", crate::pathser::escape_text(&f.reason)),
        },
    }
}

/// The command that would end VM process `pid`, judged by the scan `r`.
pub(crate) fn fix_for_process(r: &ScanReport, pid: u32) -> String {
    match r.processes.iter().find(|p| p.pid == pid) {
        Some(p) if p.is_this_homes_orphan() => format!("smolsweep reap {pid}"),
        Some(p) if p.scope != Scope::ThisHome => {
            format!("not this HOME's: ask its owner (kill {pid} as that user)")
        }
        Some(p) => match &p.owner {
            Some(o) => format!("smolsweep stop {}:{o}", p.product.as_str()),
            None => format!("kill {pid} (Smolsweep cannot prove whose VM it is)"),
        },
        None => format!("kill {pid} (it is not a VM process the scan knows)"),
    }
}

/// `s` with the typographic characters this project prints replaced by ASCII, for terminals
/// whose locale is not UTF-8.
pub fn ascii(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '—' | '–' => out.push('-'),
            '→' => out.push_str("->"),
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

// ---- Treemap ----------------------------------------------------------------------------------

/// One item of the treemap: a finding's rectangle (product → kind → item, area = allocated
/// bytes), in the units of the `width` × `height` asked of [`treemap`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Tile {
    /// Finding id.
    pub id: String,
    /// The product whose state it is.
    pub product: Product,
    /// What the finding is.
    pub kind: FindingKind,
    /// The kind's label ("Orphaned disks").
    pub kind_label: &'static str,
    /// The path, escaped for display.
    pub path: String,
    /// The path shortened from the middle (the full one is `path`).
    pub short_path: String,
    /// Allocated bytes: the tile's area.
    pub bytes: u64,
    /// `bytes` in words.
    pub size: String,
    /// The apparent size, in words (shown on hover).
    pub apparent: String,
    /// What Smolsweep may do with it.
    pub verdict: Verdict,
    /// The verdict as every surface words it.
    pub verdict_label: &'static str,
    /// Distance of its left edge from the area's left.
    pub x: f64,
    /// Distance of its top edge from the area's top.
    pub y: f64,
    /// Its width.
    pub w: f64,
    /// Its height.
    pub h: f64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct TileRect {
    x: f64,
    y: f64,
    w: f64,
    h: f64,
}

/// Squarified layout (Bruls, Huizing, van Wijk) of `sizes` (any order) in `r`: one rectangle per
/// size, in the order given, areas proportional to the sizes.
fn squarify(sizes: &[f64], r: TileRect) -> Vec<TileRect> {
    let total: f64 = sizes.iter().sum();
    let zero = TileRect {
        x: r.x,
        y: r.y,
        w: 0.0,
        h: 0.0,
    };
    let mut out = vec![zero; sizes.len()];
    if total <= 0.0 || r.w <= 0.0 || r.h <= 0.0 {
        return out;
    }
    let mut order: Vec<usize> = (0..sizes.len()).filter(|&i| sizes[i] > 0.0).collect();
    order.sort_by(|&a, &b| sizes[b].total_cmp(&sizes[a]));
    let scale = r.w * r.h / total;
    let area = |i: usize| sizes[i] * scale;
    let worst = |row: &[usize], short: f64| {
        let s: f64 = row.iter().map(|&i| area(i)).sum();
        let mx = row.iter().map(|&i| area(i)).fold(0.0, f64::max);
        let mn = row.iter().map(|&i| area(i)).fold(f64::INFINITY, f64::min);
        f64::max(short * short * mx / (s * s), s * s / (short * short * mn))
    };
    let mut rect = r;
    let mut i = 0;
    while i < order.len() {
        let short = rect.w.min(rect.h);
        let mut j = i + 1;
        while j < order.len() && worst(&order[i..=j], short) <= worst(&order[i..j], short) {
            j += 1;
        }
        let row = &order[i..j];
        let s: f64 = row.iter().map(|&k| area(k)).sum();
        if rect.w >= rect.h {
            let cw = s / rect.h;
            let mut y = rect.y;
            for &k in row {
                let hh = area(k) / cw;
                out[k] = TileRect {
                    x: rect.x,
                    y,
                    w: cw,
                    h: hh,
                };
                y += hh;
            }
            rect = TileRect {
                x: rect.x + cw,
                w: (rect.w - cw).max(0.0),
                ..rect
            };
        } else {
            let rh = s / rect.w;
            let mut x = rect.x;
            for &k in row {
                let ww = area(k) / rh;
                out[k] = TileRect {
                    x,
                    y: rect.y,
                    w: ww,
                    h: rh,
                };
                x += ww;
            }
            rect = TileRect {
                y: rect.y + rh,
                h: (rect.h - rh).max(0.0),
                ..rect
            };
        }
        i = j;
    }
    out
}

/// The treemap of a scan in a `width` × `height` area: products, then kinds, then items, each
/// squarified by allocated bytes; items of no allocated bytes are left out (no area to draw).
pub fn treemap(r: &ScanReport, width: f64, height: f64) -> Vec<Tile> {
    use std::collections::BTreeMap;
    let mut tree: BTreeMap<Product, BTreeMap<FindingKind, Vec<&Finding>>> = BTreeMap::new();
    for f in r.findings.iter().filter(|f| f.allocated_bytes > 0) {
        tree.entry(f.product)
            .or_default()
            .entry(f.kind)
            .or_default()
            .push(f);
    }
    let sum = |fs: &[&Finding]| fs.iter().map(|f| f.allocated_bytes as f64).sum::<f64>();
    let products: Vec<_> = tree.into_iter().collect();
    let p_sizes: Vec<f64> = products
        .iter()
        .map(|(_, kinds)| kinds.values().map(|v| sum(v)).sum())
        .collect();
    let whole = TileRect {
        x: 0.0,
        y: 0.0,
        w: width,
        h: height,
    };
    let mut tiles = Vec::new();
    for ((_, kinds), pr) in products.iter().zip(squarify(&p_sizes, whole)) {
        let kinds: Vec<_> = kinds.iter().collect();
        let k_sizes: Vec<f64> = kinds.iter().map(|(_, v)| sum(v)).collect();
        for ((_, items), kr) in kinds.iter().zip(squarify(&k_sizes, pr)) {
            let i_sizes: Vec<f64> = items.iter().map(|f| f.allocated_bytes as f64).collect();
            for (f, ir) in items.iter().zip(squarify(&i_sizes, kr)) {
                tiles.push(Tile {
                    id: f.id.clone(),
                    product: f.product,
                    kind: f.kind,
                    kind_label: f.kind.label(),
                    path: crate::pathser::shown(&f.path),
                    short_path: short_path(&f.path, 48),
                    bytes: f.allocated_bytes,
                    size: bytes(f.allocated_bytes),
                    apparent: bytes(f.apparent_bytes),
                    verdict: f.verdict,
                    verdict_label: verdict_label(f.verdict, f.opt_in_class),
                    x: ir.x,
                    y: ir.y,
                    w: ir.w,
                    h: ir.h,
                });
            }
        }
    }
    tiles
}

#[cfg(test)]
mod treemap_tests {
    use super::*;

    fn rect_of(t: &Tile) -> TileRect {
        TileRect {
            x: t.x,
            y: t.y,
            w: t.w,
            h: t.h,
        }
    }

    #[test]
    fn squarified_areas_are_proportional_inside_and_disjoint() {
        let sizes = [6.0, 6.0, 4.0, 3.0, 2.0, 2.0, 1.0, 0.0];
        let r = TileRect {
            x: 0.0,
            y: 0.0,
            w: 6.0,
            h: 4.0,
        };
        let out = squarify(&sizes, r);
        assert_eq!(out.len(), sizes.len());
        for (s, t) in sizes.iter().zip(&out) {
            assert!((t.w * t.h - s).abs() < 1e-9, "{s} -> {t:?}");
            assert!(t.x >= -1e-9 && t.y >= -1e-9);
            assert!(t.x + t.w <= 6.0 + 1e-9 && t.y + t.h <= 4.0 + 1e-9, "{t:?}");
        }
        for (i, a) in out.iter().enumerate() {
            for b in &out[i + 1..] {
                let ox = (a.x + a.w).min(b.x + b.w) - a.x.max(b.x);
                let oy = (a.y + a.h).min(b.y + b.h) - a.y.max(b.y);
                assert!(ox <= 1e-9 || oy <= 1e-9, "{a:?} overlaps {b:?}");
            }
        }
        // Squarified: the big tiles are not slivers.
        assert!(out[0].w / out[0].h < 3.0 && out[0].h / out[0].w < 3.0);
        assert_eq!(squarify(&[0.0], r)[0].w, 0.0);
    }

    #[test]
    fn a_scan_s_treemap_nests_products_and_kinds_and_keeps_every_byte() {
        let mk = |product, kind, name: &str, bytes: u64, verdict| Finding {
            id: name.into(),
            product,
            kind,
            path: std::path::PathBuf::from(format!("/h/{name}")),
            owner: None,
            apparent_bytes: bytes * 2,
            allocated_bytes: bytes,
            verdict,
            reason: String::new(),
            opt_in_class: None,
            identity: None,
            is_dir: false,
            root: None,
            mounts_inside: vec![],
            owner_recheck: None,
            refs: vec![],
            kept: None,
            newest_change_ns: 0,
            used_by: Vec::new(),
            needed_by: Vec::new(),
        };
        let findings = vec![
            mk(
                Product::Celesto,
                FindingKind::CelestoOrphanDisk,
                "a",
                600,
                Verdict::Reclaimable,
            ),
            mk(
                Product::Celesto,
                FindingKind::CelestoOrphanDisk,
                "b",
                200,
                Verdict::Reclaimable,
            ),
            mk(
                Product::Celesto,
                FindingKind::CelestoOrphanLog,
                "c",
                100,
                Verdict::Reclaimable,
            ),
            mk(
                Product::Smolvm,
                FindingKind::SmolvmPackCache,
                "d",
                100,
                Verdict::OptIn,
            ),
            mk(
                Product::Smolvm,
                FindingKind::SmolvmPackCache,
                "z",
                0,
                Verdict::OptIn,
            ),
        ];
        let r = ScanReport {
            schema: SCAN_SCHEMA.into(),
            home: "/h".into(),
            platform: Platform::Linux,
            products: vec![],
            findings,
            machines: vec![],
            processes: vec![],
            totals: Totals::default(),
            scanned_at: 0,
            scanned_at_ns: 0,
            duration_ms: 0,
            compact: Default::default(),
        };
        let t = treemap(&r, 100.0, 10.0);
        assert_eq!(t.len(), 4, "no tile for nothing");
        let total: f64 = t.iter().map(|t| t.w * t.h).sum();
        assert!((total - 1000.0).abs() < 1e-6);
        let a = t.iter().find(|t| t.id == "a").unwrap();
        assert!((a.w * a.h - 600.0).abs() < 1e-6);
        assert_eq!(a.apparent, bytes(1200));
        assert_eq!(a.kind_label, FindingKind::CelestoOrphanDisk.label());
        // The Celesto product occupies one block: its tiles' bounding box has its area.
        let cel: Vec<TileRect> = t
            .iter()
            .filter(|t| t.product == Product::Celesto)
            .map(rect_of)
            .collect();
        let x0 = cel.iter().map(|r| r.x).fold(f64::INFINITY, f64::min);
        let x1 = cel.iter().map(|r| r.x + r.w).fold(0.0, f64::max);
        let y0 = cel.iter().map(|r| r.y).fold(f64::INFINITY, f64::min);
        let y1 = cel.iter().map(|r| r.y + r.h).fold(0.0, f64::max);
        assert!(((x1 - x0) * (y1 - y0) - 900.0).abs() < 1e-6);
    }

    /// Issue 17: a kept machine or VM process offers no Stop, Delete or End process in the
    /// window, and says why in the core's words.
    #[test]
    fn kept_machines_and_processes_offer_no_action_and_say_why() {
        let m: Machine = serde_json::from_value(serde_json::json!({
            "product": "smolvm", "name": "m2", "state": "running", "pid": 7,
            "alive": true, "kept": "ab12cd34"
        }))
        .unwrap();
        let p: VmProcess = serde_json::from_value(serde_json::json!({
            "pid": 8, "start_time": 1, "product": "smolvm", "shape": "smolvm.boot_vm",
            "owner": "m2", "orphan": true, "scope": "this_home", "held_deleted_bytes": 0,
            "kept": "ab12cd34"
        }))
        .unwrap();
        let r: ScanReport = serde_json::from_value(serde_json::json!({
            "schema": SCAN_SCHEMA, "home": "/h", "platform": "linux", "products": [],
            "findings": [], "machines": [m.clone()], "processes": [p.clone()],
            "totals": Totals::default(), "scanned_at": 0, "duration_ms": 0
        }))
        .unwrap();
        let row = machine_row(&r, &m);
        assert!(!row.can_stop && !row.can_delete, "{row:?}");
        assert!(row
            .kept
            .as_deref()
            .unwrap()
            .starts_with("Kept by you (keep rule ab12cd34"));
        let row = process_row(&p);
        assert!(!row.can_end, "{row:?}");
        assert!(row.kept.is_some());
        let free = VmProcess { kept: None, ..p };
        assert!(
            process_row(&free).can_end,
            "the same orphan without a rule can be ended"
        );
        let free = Machine { kept: None, ..m };
        assert!(machine_row(&r, &free).can_delete);
    }
}
