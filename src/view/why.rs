//! `why`: how Smolsweep judges one thing, and on what evidence, in plain sentences.
//!
//! A person names a finding, a path, a machine or sandbox, or a process; [`explain`] gathers the
//! facts the scan judged it on (its kind and reason, the processes using it, the inventory row
//! that claims it, the keep rule that keeps it, the disks whose backing chain needs it, whether
//! the product's version is verified, and the smallest command that would free it) into a
//! [`Why`], and renders them as sentences ([`Why::lines`], [`Why::text`]). The CLI prints the
//! text or the facts as JSON; the window shows the same text. Nothing here acts.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::Serialize;

use crate::env::EnvSnapshot;
use crate::filter::Filter;
use crate::keep::Keeps;
use crate::model::*;
use crate::plan::{Action, Plan, Selection};
use crate::procs::RawProcess;
use crate::scan::ScanOptions;

use super::{bytes, class_label, confirmation, verdict_word};

/// Schema name of `why --json`.
pub const WHY_SCHEMA: &str = "smolsweep.why/1";

/// What a person asked about, as a surface resolved what they typed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "by", content = "value", rename_all = "snake_case")]
pub enum Asked {
    /// A finding, by its full id.
    Finding(String),
    /// A path (absolute).
    Path(#[serde(with = "crate::pathser::one")] PathBuf),
    /// A smolvm machine or a Celesto sandbox, recorded or not (its leftovers).
    Machine {
        /// Whose.
        product: Product,
        /// The machine name or sandbox id.
        name: String,
    },
    /// A process id.
    Process(u32),
}

/// What `why` reads: one scan, the process table that scan judged, the keep rules and the
/// product roots of this environment.
pub struct WhyFacts {
    report: ScanReport,
    processes: Vec<RawProcess>,
    keeps: Result<Keeps, String>,
    roots: Vec<Root>,
    now: SystemTime,
}

impl WhyFacts {
    /// Scan now (read-only), keeping the process table the scan judged on.
    pub fn gather(opts: &ScanOptions) -> WhyFacts {
        let processes = own_table();
        let report = crate::scan::scan_with(opts, processes.clone());
        let keeps = Keeps::load(&crate::keep::path_for(&opts.env, opts.platform))
            .map_err(|e| e.to_string());
        let roots = roots_of(&report, &opts.env, opts.platform);
        WhyFacts {
            report,
            processes,
            keeps,
            roots,
            now: opts.now,
        }
    }

    /// The facts of a scan a surface already holds (the window's rows): the process table read
    /// now for the command lines of what uses them, the keep rules at `keep_file` (the
    /// environment's keep file when `None`) and the roots of `env`.
    pub fn of_report(report: ScanReport, env: &EnvSnapshot, keep_file: Option<&Path>) -> WhyFacts {
        let platform = report.platform;
        let keep_file = keep_file
            .map(Path::to_path_buf)
            .unwrap_or_else(|| crate::keep::path_for(env, platform));
        WhyFacts {
            roots: roots_of(&report, env, platform),
            processes: own_table(),
            keeps: Keeps::load(&keep_file).map_err(|e| e.to_string()),
            report,
            now: SystemTime::now(),
        }
    }

    /// The scan the answers come from (what a surface resolves a typed target against).
    pub fn report(&self) -> &ScanReport {
        &self.report
    }

    /// Whether process `pid` was in the process table the scan judged (a VM process or not).
    pub fn has_process(&self, pid: u32) -> bool {
        self.processes.iter().any(|p| p.pid == pid)
            || self.report.processes.iter().any(|p| p.pid == pid)
    }
}

/// A directory where a product keeps state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Root {
    /// Whose (absent: both products use it).
    pub product: Option<Product>,
    /// What it is, in words ("data directory").
    pub what: &'static str,
    /// Where.
    #[serde(with = "crate::pathser::one")]
    pub path: PathBuf,
    /// Whether it exists now.
    pub exists: bool,
}

/// How a process uses a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Use {
    /// Holds it (or a file in it) open.
    HoldsOpen,
    /// Names it on its command line.
    Names,
    /// Has its working or root directory there.
    WorksIn,
    /// Maps it (or a file in it) into memory.
    Maps,
    /// Boots a VM from it.
    Boots,
    /// Uses it in a way the table does not break down further.
    Uses,
}

/// A VM process as the scan attributed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VmFacts {
    /// Whose VMM it is.
    pub product: Product,
    /// What VMM it is, in words ("Celesto QEMU VM").
    pub what: &'static str,
    /// The machine name or sandbox id it runs, when known.
    pub owner: Option<String>,
    /// No inventory record owns it.
    pub orphan: bool,
    /// It belongs to the HOME scanned.
    pub this_home: bool,
    /// Why the scan attributed it so.
    pub reason: String,
    /// Allocated bytes of deleted files it still holds open.
    pub held_deleted_bytes: u64,
}

/// A process, from the process table the scan judged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProcessFacts {
    /// Process id.
    pub pid: u32,
    /// Whether it was in the process table.
    pub exists: bool,
    /// Its command line, escaped for display.
    pub command: String,
    /// The user id it runs as.
    pub uid: Option<u32>,
    /// When it started (seconds since the epoch), where known.
    pub started_at: Option<u64>,
    /// How it uses the thing asked about (empty when asked about the process itself).
    pub uses: Vec<Use>,
    /// What the scan made of it, when it is a VM process.
    pub vm: Option<VmFacts>,
}

/// An inventory row: a machine or sandbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Record {
    /// Whose inventory.
    pub product: Product,
    /// "machine", "sandbox" or "computer", as the product says.
    pub noun: &'static str,
    /// Machine name or sandbox id.
    pub name: String,
    /// The state a person should see.
    pub state: String,
    /// The VM process the row names.
    pub pid: Option<u32>,
    /// The inventory file.
    #[serde(with = "crate::pathser::opt")]
    pub inventory: Option<PathBuf>,
    /// When it was created (seconds since the epoch), when recorded.
    pub created_at: Option<i64>,
    /// The machine it was branched from.
    pub branched_from: Option<String>,
    /// Allocated bytes of its storage, where measured.
    pub bytes: u64,
}

/// A finding as `why` describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Item {
    /// Finding id.
    pub id: String,
    /// Whose state.
    pub product: Product,
    /// What kind of leftover.
    pub kind: FindingKind,
    /// The kind's label.
    pub label: &'static str,
    /// Where.
    #[serde(with = "crate::pathser::one")]
    pub path: PathBuf,
    /// The verdict.
    pub verdict: Verdict,
    /// The verdict's word ("reclaimable", "opt-in", "protected", "unverifiable").
    pub verdict_word: &'static str,
    /// Allocated bytes.
    pub bytes: u64,
    /// Apparent bytes.
    pub apparent_bytes: u64,
}

/// The keep rule that keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeepFacts {
    /// The rule id ("unreadable" when the keep file cannot be read).
    pub rule: String,
    /// Whether the keep file could be read.
    pub readable: bool,
    /// Since when (seconds since the epoch).
    pub since: Option<u64>,
    /// What the rule keeps, in words.
    pub keeps: Option<String>,
    /// The reason given.
    pub reason: Option<String>,
}

/// Whether the installed version of the product is one Smolsweep's rules were verified on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VersionFacts {
    /// Which product.
    pub product: Product,
    /// The version installed, when one was found.
    pub installed: Option<String>,
    /// The newest versions the rules were verified on.
    pub verified_up_to: Vec<String>,
    /// No install is newer than those (or the risk was accepted).
    pub verified: bool,
    /// The scan's own sentence about a newer install, when there is one.
    pub note: Option<String>,
}

/// The smallest command that would free it, and what it would take with it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Free {
    /// The command (absent when none frees it as things stand).
    pub command: Option<String>,
    /// What the command's plan does, as its confirmation says it.
    pub plan: Option<String>,
    /// Bytes that plan is expected to free.
    pub estimated_bytes: u64,
    /// Everything else the command takes with it.
    pub also: Vec<String>,
    /// The commands that free only this one, when the command takes more.
    pub only_this: Option<String>,
    /// What stands in the way, one sentence each.
    pub blocked: Vec<String>,
}

/// Where a path that is no finding lies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "where", rename_all = "snake_case")]
pub enum Place {
    /// Under a product root.
    Under {
        /// The root.
        root: Root,
        /// Findings below it.
        findings: usize,
    },
    /// Outside every product root.
    Outside {
        /// Every root, for the person to compare.
        roots: Vec<Root>,
    },
}

/// One sentence of the answer, under its topic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Line {
    /// What it is about ("Verdict", "Processes", ...).
    pub topic: &'static str,
    /// The sentence.
    pub text: String,
}

/// Everything `why` says about one target: the facts and their sentences.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Why {
    /// [`WHY_SCHEMA`].
    pub schema: &'static str,
    /// What was asked.
    pub asked: Asked,
    /// Whether it was found (a surface fails when it was not).
    pub found: bool,
    /// The finding it is (or lies inside).
    pub finding: Option<Item>,
    /// The finding's kind in words and why it has its verdict.
    pub meaning: Option<&'static str>,
    /// The scan's reason for the verdict, escaped for display.
    pub reason: Option<String>,
    /// The opt-in class that includes it, for an opt-in finding.
    pub opt_in_class: Option<OptInClass>,
    /// The path asked lies inside the finding.
    pub inside: bool,
    /// Processes using it (or the process asked about).
    pub processes: Vec<ProcessFacts>,
    /// The inventory row claiming it, or the machine asked about.
    pub record: Option<Record>,
    /// For an orphan: the inventories that hold no row claiming it.
    #[serde(with = "crate::pathser::many")]
    pub unclaimed_in: Vec<PathBuf>,
    /// The keep rule that keeps it.
    pub keep_rule: Option<KeepFacts>,
    /// Disks whose backing chain runs through it.
    #[serde(with = "crate::pathser::many")]
    pub needed_by: Vec<PathBuf>,
    /// Files its own backing chain runs through.
    #[serde(with = "crate::pathser::many")]
    pub backs_onto: Vec<PathBuf>,
    /// What a machine owns, what a process uses, or a gone sandbox's leftovers.
    pub items: Vec<Item>,
    /// Machines branched from the machine.
    pub branches: Vec<String>,
    /// Whether the product's installed version is verified.
    pub version: Option<VersionFacts>,
    /// The smallest command that frees it.
    pub free: Option<Free>,
    /// Where a path that is no finding lies.
    pub place: Option<Place>,
    /// What compacting the disk, or the machine's disks, could give back.
    pub compact: Vec<crate::model::DiskEstimate>,
    /// The sentences, in order.
    pub lines: Vec<Line>,
}

impl Why {
    fn new(asked: Asked) -> Why {
        Why {
            schema: WHY_SCHEMA,
            asked,
            found: true,
            finding: None,
            meaning: None,
            reason: None,
            opt_in_class: None,
            inside: false,
            processes: Vec::new(),
            record: None,
            unclaimed_in: Vec::new(),
            keep_rule: None,
            needed_by: Vec::new(),
            backs_onto: Vec::new(),
            items: Vec::new(),
            branches: Vec::new(),
            version: None,
            free: None,
            place: None,
            compact: Vec::new(),
            lines: Vec::new(),
        }
    }

    /// The answer as text: each topic once, its sentences beside it.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let mut last = "";
        for l in &self.lines {
            if l.topic.is_empty() {
                out.push_str(&l.text);
            } else {
                let t = if l.topic == last { "" } else { l.topic };
                out.push_str(&format!("  {t:<10} {}", l.text));
            }
            out.push('\n');
            last = l.topic;
        }
        out
    }
}

/// How Smolsweep judges `asked`, on the facts of `facts`.
pub fn explain(facts: &WhyFacts, asked: &Asked) -> Why {
    let mut why = Why::new(asked.clone());
    match asked {
        Asked::Finding(id) => match facts.report.finding(id) {
            Some(f) => finding_why(facts, f, &mut why),
            None => why.found = false,
        },
        Asked::Path(p) => path_why(facts, p, &mut why),
        Asked::Machine { product, name } => machine_why(facts, *product, name, &mut why),
        Asked::Process(pid) => process_why(facts, *pid, &mut why),
    }
    why.lines = render(&why);
    why
}

// ---- Facts ------------------------------------------------------------------------------------

/// The process table, without the process asking: it names the target on its command line,
/// and is not a user of it.
fn own_table() -> Vec<RawProcess> {
    let mut processes = crate::scan::list_processes();
    processes.retain(|p| p.pid != std::process::id());
    processes
}

/// The roots of this environment: those the scan resolved and read, every state directory the
/// products may use here, and the roots of the findings.
fn roots_of(report: &ScanReport, env: &EnvSnapshot, platform: Platform) -> Vec<Root> {
    let mut out: Vec<Root> = Vec::new();
    let mut push = |product: Option<Product>, what: &'static str, path: PathBuf| {
        if !out.iter().any(|r| r.path == path) {
            let exists = crate::fsread::lstat(&path).is_some();
            out.push(Root {
                product,
                what,
                path,
                exists,
            });
        }
    };
    for p in &report.products {
        for (key, path) in &p.roots {
            push(Some(p.product), root_what(key), path.clone());
        }
    }
    for (product, key, path, _) in crate::roots::state_dir_candidates(env, platform) {
        push(Some(product), root_what(key), path);
    }
    push(None, "shared directory", env.home.join(".smolvm"));
    for f in &report.findings {
        if let Some(r) = &f.root {
            push(Some(f.product), "state directory", r.clone());
        }
    }
    out
}

/// A root's report name (`data_dir_2`, `cache_root`) in words.
fn root_what(key: &str) -> &'static str {
    let mut k = key;
    while let Some((head, tail)) = k.rsplit_once('_') {
        if tail.is_empty() || !tail.bytes().all(|b| b.is_ascii_digit()) {
            break;
        }
        k = head;
    }
    match k {
        "data_dir" | "data_root" => "data directory",
        "image_dir" => "image cache",
        "home_dir" | "celesto_home" => "home directory",
        "socket_dir" => "socket directory",
        "cache_root" => "cache directory",
        "pack_cache" => "pack cache",
        "libs_cache" => "library cache",
        "registry_cache" => "registry cache",
        "image_archives" => "image archives",
        "config_dir" => "configuration directory",
        "vms_dir" => "machine directories",
        _ => "state directory",
    }
}

fn item(f: &Finding) -> Item {
    Item {
        id: f.id.clone(),
        product: f.product,
        kind: f.kind,
        label: f.kind.label(),
        path: f.path.clone(),
        verdict: f.verdict,
        verdict_word: verdict_word(f.verdict),
        bytes: f.allocated_bytes,
        apparent_bytes: f.apparent_bytes,
    }
}

fn record(r: &ScanReport, m: &Machine) -> Record {
    let noun = match m.product {
        Product::Smolvm => "machine",
        Product::Celesto if super::celesto_says_computer(r) => "computer",
        Product::Celesto => "sandbox",
    };
    Record {
        product: m.product,
        noun,
        name: m.name.clone(),
        state: if m.effective_state.is_empty() {
            m.state.clone()
        } else {
            m.effective_state.clone()
        },
        pid: m.pid,
        inventory: m.db.clone(),
        created_at: m.created_at,
        branched_from: m.branched_from.clone(),
        bytes: m.allocated_bytes,
    }
}

fn keep_facts(facts: &WhyFacts, rule: &str) -> KeepFacts {
    let found = facts
        .keeps
        .as_ref()
        .ok()
        .and_then(|k| k.rules.iter().find(|r| r.id == rule));
    KeepFacts {
        rule: rule.to_string(),
        readable: facts.keeps.is_ok(),
        since: found.map(|r| r.since),
        keeps: found.map(|r| r.describe()),
        reason: found.map(|r| r.why.clone()).filter(|w| !w.is_empty()),
    }
}

fn version_facts(r: &ScanReport, product: Product) -> Option<VersionFacts> {
    let p = r.products.iter().find(|p| p.product == product)?;
    let note = p
        .problems
        .iter()
        .find(|s| s.contains("newer than the versions Smolsweep knows"))
        .cloned();
    Some(VersionFacts {
        product,
        installed: p.version.clone(),
        verified_up_to: crate::upstream::VERIFIED
            .iter()
            .filter(|(q, ..)| *q == product)
            .map(|(_, d, v)| format!("{d} {v}"))
            .collect(),
        verified: note
            .as_deref()
            .is_none_or(|n| n.contains("because you accepted the risk")),
        note,
    })
}

/// When a process started, in seconds since the epoch.
fn started_at(start_time: u64) -> Option<u64> {
    crate::procs::os::start_time_epoch_secs(start_time)
}

/// `pid` as the process table and the scan saw it, and how it uses `path` (when given).
fn process_facts(facts: &WhyFacts, pid: u32, path: Option<&Finding>) -> ProcessFacts {
    let raw = facts.processes.iter().find(|p| p.pid == pid);
    let vm = facts.report.processes.iter().find(|p| p.pid == pid);
    ProcessFacts {
        pid,
        exists: raw.is_some() || vm.is_some(),
        command: crate::pathser::escape_text(
            &raw.map(|p| p.argv.clone())
                .or_else(|| vm.map(|v| v.argv.clone()))
                .unwrap_or_default()
                .join(" "),
        ),
        uid: raw.map(|p| p.uid).or(vm.map(|v| v.uid)),
        started_at: raw
            .map(|p| p.start_time)
            .or(vm.map(|v| v.start_time))
            .and_then(started_at),
        uses: path.map(|f| uses(raw, vm, f)).unwrap_or_default(),
        vm: vm.map(|v| VmFacts {
            product: v.product,
            what: v.shape.label(),
            owner: v.owner.clone(),
            orphan: v.orphan,
            this_home: v.scope == Scope::ThisHome,
            reason: crate::pathser::escape_text(&v.reason),
            held_deleted_bytes: v.held_deleted_bytes,
        }),
    }
}

/// How a process uses finding `f`: the facets of the one "in use" rule, asked of the index's
/// own enumeration (`scan::procindex::how_used`); a VM process whose table entry is gone boots
/// from it when its recorded paths say so.
fn uses(raw: Option<&RawProcess>, vm: Option<&VmProcess>, f: &Finding) -> Vec<Use> {
    use crate::scan::procindex::{how_used, Usage};
    let p = f.path.as_path();
    let devino = f.identity.map(|i| (i.dev, i.ino));
    let mut out: Vec<Use> = raw
        .map(|r| how_used(r, p, devino))
        .unwrap_or_default()
        .into_iter()
        .map(|u| match u {
            Usage::HoldsOpen => Use::HoldsOpen,
            Usage::Names => Use::Names,
            Usage::WorksIn => Use::WorksIn,
            Usage::Maps => Use::Maps,
            Usage::Boots => Use::Boots,
        })
        .collect();
    if out.is_empty() && vm.is_some_and(|v| v.paths.iter().any(|q| q.starts_with(p))) {
        out.push(Use::Boots);
    }
    if out.is_empty() {
        out.push(Use::Uses);
    }
    out
}

fn finding_why(facts: &WhyFacts, f: &Finding, why: &mut Why) {
    let r = &facts.report;
    why.finding = Some(item(f));
    why.meaning = Some(f.kind.meaning());
    why.reason = Some(crate::pathser::escape_text(&f.reason));
    why.opt_in_class = f.opt_in_class;
    why.processes = f
        .used_by
        .iter()
        .map(|pid| process_facts(facts, *pid, Some(f)))
        .collect();
    let owner = f.owner.as_deref();
    why.record = r
        .machines
        .iter()
        .find(|m| m.product == f.product && Some(m.name.as_str()) == owner)
        .map(|m| record(r, m));
    if why.record.is_none() {
        if let Some(rc) = &f.owner_recheck {
            why.unclaimed_in = rc.inventories.clone();
        }
    }
    why.keep_rule = f.kept.as_deref().map(|k| keep_facts(facts, k));
    why.needed_by = f.needed_by.clone();
    if f.identity.is_some_and(|i| i.is_regular()) {
        why.backs_onto = crate::qcow2::backing_chain(&f.path, 16);
    }
    why.version = version_facts(r, f.product);
    why.free = Some(free_finding(facts, f));
    why.compact = r
        .compact
        .disks
        .iter()
        .filter(|d| d.path == f.path)
        .cloned()
        .collect();
}

/// The smallest `prune` that deletes `f` (by its kind, then without a filter), the plan it
/// makes, and what else it takes; or what stands in the way.
fn free_finding(facts: &WhyFacts, f: &Finding) -> Free {
    let r = &facts.report;
    let mut free = Free::default();
    if !matches!(f.verdict, Verdict::Reclaimable | Verdict::OptIn) {
        free.blocked = blocked(facts, f);
        return free;
    }
    let include: Vec<OptInClass> = f.opt_in_class.into_iter().collect();
    let flag = include
        .first()
        .map(|c| format!(" {}", class_label(*c).1))
        .unwrap_or_default();
    let sel = Selection {
        all_reclaimable: true,
        include: include.iter().copied().collect(),
        ..Default::default()
    };
    let by_kind = Filter {
        kinds: vec![f.kind],
        ..Default::default()
    };
    let mut last_refusal = None;
    for filter in [by_kind, Filter::default()] {
        let mut narrowed = r.clone();
        filter.apply(&mut narrowed, facts.now);
        let plan = Plan::from_scan(&narrowed, &sel);
        if !plan.covers(&narrowed, f) {
            last_refusal = plan
                .skipped_at_plan
                .iter()
                .find(|s| s.id == f.id)
                .map(|s| crate::pathser::escape_text(&s.why));
            continue;
        }
        let flags = filter.flags();
        let sp = if flags.is_empty() { "" } else { " " };
        free.command = Some(format!("smolsweep prune{sp}{flags}{flag}"));
        free.plan = Some(confirmation(&plan).sentence());
        free.estimated_bytes = plan.estimated_bytes;
        free.also = plan
            .actions
            .iter()
            .filter(|a| !matches!(&a.action, Action::DeletePath { path, .. } if path == &f.path))
            .map(|a| crate::pathser::escape_text(&a.summary))
            .collect();
        if !free.also.is_empty() {
            free.only_this = only_this(r, f);
        }
        return free;
    }
    free.blocked.extend(last_refusal);
    free
}

/// The plan that deletes `f` and nothing it need not: `f` with the disks that back onto it.
fn only_this(r: &ScanReport, f: &Finding) -> Option<String> {
    let mut ids = vec![f.id.clone()];
    ids.extend(
        r.findings
            .iter()
            .filter(|g| f.needed_by.contains(&g.path))
            .map(|g| g.id.clone()),
    );
    let sel = Selection {
        ids: ids.clone(),
        include: f.opt_in_class.into_iter().collect(),
        ..Default::default()
    };
    if !Plan::from_scan(r, &sel).covers(r, f) {
        return None;
    }
    let ids: String = ids.iter().map(|i| format!(" --id {i}")).collect();
    Some(format!(
        "smolsweep plan{ids} --out plan.json && smolsweep apply plan.json"
    ))
}

/// What keeps a protected or unverifiable finding, and what would release it.
fn blocked(facts: &WhyFacts, f: &Finding) -> Vec<String> {
    let r = &facts.report;
    let mut out = Vec::new();
    if let Some(k) = &f.kept {
        out.push(format!(
            "It is {}.",
            crate::keep::kept_why(k).replace("; `", ": `")
        ));
    }
    for pid in &f.used_by {
        let fix = super::fix_for_process(r, *pid);
        out.push(match fix.strip_prefix("smolsweep ") {
            Some(_) => format!("Process {pid} uses it: `{fix}` would end that first."),
            None => format!("Process {pid} uses it: {fix}."),
        });
    }
    let stays: Vec<&PathBuf> = f
        .needed_by
        .iter()
        .filter(|d| {
            r.findings
                .iter()
                .find(|g| &g.path == *d)
                .is_none_or(|g| matches!(g.verdict, Verdict::Protected | Verdict::Unknown))
        })
        .collect();
    for d in stays {
        out.push(format!(
            "The disk {} backs onto it and stays, so it stays too.",
            crate::pathser::shown(d)
        ));
    }
    let owner = r
        .machines
        .iter()
        .find(|m| m.product == f.product && Some(m.name.as_str()) == f.owner.as_deref());
    if let Some(m) = owner {
        out.push(format!(
            "It belongs to {} {}, which exists: `smolsweep delete {}:{}` deletes it with everything of it.",
            record(r, m).noun,
            m.name,
            m.product.as_str(),
            m.name
        ));
    }
    let newer = version_facts(r, f.product).is_some_and(|v| !v.verified);
    if f.verdict == Verdict::Unknown && out.is_empty() && newer {
        out.push(format!(
            "It is judged again once Smolsweep knows the installed version; `--accept-newer {}` accepts the risk now.",
            f.product.as_str()
        ));
    }
    if f.verdict == Verdict::Unknown && out.is_empty() {
        out.push("Smolsweep never acts on what it cannot verify: check it by hand.".into());
    }
    if out.is_empty() {
        out.push(match f.kind.removal() {
            crate::kind::Removal::Never => "Smolsweep never removes this kind of item.".into(),
            _ => "Nothing Smolsweep runs deletes it while it is protected.".into(),
        });
    }
    out
}

fn path_why(facts: &WhyFacts, p: &Path, why: &mut Why) {
    let r = &facts.report;
    if let Some(f) = r.findings.iter().find(|f| f.path == p) {
        return finding_why(facts, f, why);
    }
    // The innermost finding holding it.
    let holder = r
        .findings
        .iter()
        .filter(|f| f.is_dir && p.starts_with(&f.path))
        .max_by_key(|f| f.path.components().count());
    if let Some(f) = holder {
        why.inside = true;
        return finding_why(facts, f, why);
    }
    if crate::fsread::lstat(p).is_none() {
        why.found = false;
    }
    let root = facts
        .roots
        .iter()
        .filter(|root| p.starts_with(&root.path))
        .max_by_key(|root| root.path.components().count());
    why.place = Some(match root {
        Some(root) => Place::Under {
            root: root.clone(),
            findings: r.findings.iter().filter(|f| f.path.starts_with(p)).count(),
        },
        None => Place::Outside {
            roots: facts.roots.iter().filter(|r| r.exists).cloned().collect(),
        },
    });
}

fn machine_why(facts: &WhyFacts, product: Product, name: &str, why: &mut Why) {
    let r = &facts.report;
    let m = r
        .machines
        .iter()
        .find(|m| m.product == product && m.name == name);
    let owned = |f: &&Finding| {
        (f.product == product && f.owner.as_deref() == Some(name))
            || m.and_then(|m| m.dir.as_deref())
                .is_some_and(|d| f.path.starts_with(d))
    };
    why.items = r.findings.iter().filter(owned).map(item).collect();
    why.version = version_facts(r, product);
    let Some(m) = m else {
        why.found = !why.items.is_empty();
        return;
    };
    why.record = Some(record(r, m));
    why.compact = r
        .compact
        .disks
        .iter()
        .filter(|d| d.product == product && d.owner.as_deref() == Some(name))
        .cloned()
        .collect();
    why.processes = r
        .processes
        .iter()
        .filter(|p| p.product == product && p.owner.as_deref() == Some(name))
        .map(|p| process_facts(facts, p.pid, None))
        .collect();
    why.keep_rule = m.kept.as_deref().map(|k| keep_facts(facts, k));
    let branches = crate::plan::branch_descendants(r, m);
    why.branches = branches.iter().map(|b| b.name.clone()).collect();
    let target = format!("{}:{name}", product.as_str());
    let sel = Selection {
        delete_machines: vec![target.clone()],
        cascade: !branches.is_empty(),
        ..Default::default()
    };
    let plan = Plan::from_scan(r, &sel);
    let cascade = if branches.is_empty() {
        ""
    } else {
        " --cascade"
    };
    why.free = Some(Free {
        command: Some(format!("smolsweep delete {target}{cascade}")),
        plan: (!plan.is_empty()).then(|| confirmation(&plan).sentence()),
        estimated_bytes: plan.estimated_bytes,
        also: plan
            .actions
            .iter()
            .map(|a| crate::pathser::escape_text(&a.summary))
            .collect(),
        only_this: None,
        blocked: plan
            .skipped_at_plan
            .iter()
            .map(|s| crate::pathser::escape_text(&s.why))
            .collect(),
    });
}

fn process_why(facts: &WhyFacts, pid: u32, why: &mut Why) {
    let r = &facts.report;
    let p = process_facts(facts, pid, None);
    why.found = p.exists;
    why.items = r
        .findings
        .iter()
        .filter(|f| f.used_by.contains(&pid))
        .map(item)
        .collect();
    let vm = r.processes.iter().find(|v| v.pid == pid);
    if let Some(v) = vm {
        why.version = version_facts(r, v.product);
        why.keep_rule = v.kept.as_deref().map(|k| keep_facts(facts, k));
        why.record = r
            .machines
            .iter()
            .find(|m| m.product == v.product && Some(m.name.as_str()) == v.owner.as_deref())
            .map(|m| record(r, m));
        let mut free = Free::default();
        if v.is_this_homes_orphan() {
            let plan = Plan::from_scan(
                r,
                &Selection {
                    reap_pids: vec![pid],
                    ..Default::default()
                },
            );
            free.command = Some(format!("smolsweep reap {pid}"));
            free.plan = Some(confirmation(&plan).sentence());
            free.estimated_bytes = plan.estimated_bytes;
        } else {
            free.blocked.push(super::fix_for_process(r, pid));
        }
        why.free = Some(free);
    }
    why.processes = vec![p];
}

// ---- Sentences --------------------------------------------------------------------------------

fn line(topic: &'static str, text: impl Into<String>) -> Line {
    Line {
        topic,
        text: text.into(),
    }
}

/// `secs` since the epoch as a UTC time a person reads.
fn when(secs: u64) -> String {
    i64::try_from(secs)
        .ok()
        .and_then(|s| chrono::DateTime::from_timestamp(s, 0))
        .map(|t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string())
        .unwrap_or_else(|| "an unknown time".into())
}

fn day(secs: u64) -> String {
    when(secs).get(..10).unwrap_or_default().to_string()
}

fn capital(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

fn render(why: &Why) -> Vec<Line> {
    let mut out = Vec::new();
    match &why.asked {
        Asked::Machine { product, name } => render_machine(why, *product, name, &mut out),
        Asked::Process(pid) => render_process(why, *pid, &mut out),
        _ if why.finding.is_some() => render_finding(why, &mut out),
        Asked::Path(p) => render_place(why, p, &mut out),
        Asked::Finding(id) => out.push(line(
            "",
            format!("No finding has the id {id} (`smolsweep scan -v` lists them)."),
        )),
    }
    out
}

fn render_finding(why: &Why, out: &mut Vec<Line>) {
    let Some(f) = &why.finding else { return };
    if let Asked::Path(p) = &why.asked {
        if why.inside {
            out.push(line(
                "",
                format!(
                    "{} lies inside {}, which Smolsweep judges as a whole (id {}):",
                    crate::pathser::shown(p),
                    crate::pathser::shown(&f.path),
                    f.id
                ),
            ));
        }
    }
    if !why.inside {
        out.push(line(
            "",
            format!("{} (id {})", crate::pathser::shown(&f.path), f.id),
        ));
    }
    out.push(line(
        "Kind",
        format!(
            "{}, {}: {}",
            f.label,
            f.product.display_name(),
            why.meaning.unwrap_or_default()
        ),
    ));
    let word = match why.opt_in_class {
        Some(c) => format!("{} (only with {})", f.verdict_word, class_label(c).1),
        None => f.verdict_word.to_string(),
    };
    out.push(line(
        "Verdict",
        format!("{word}: {}", why.reason.clone().unwrap_or_default()),
    ));
    let apparent = if f.apparent_bytes != f.bytes {
        format!(" ({} apparent)", bytes(f.apparent_bytes))
    } else {
        String::new()
    };
    out.push(line(
        "Size",
        format!("{} on disk{apparent}.", bytes(f.bytes)),
    ));
    render_processes(why, out);
    render_record(why, out);
    render_keep(why, out);
    render_chain(why, out);
    render_version(why, out);
    render_free(why, out);
    render_compact(why, out);
}

/// "Compact": one sentence per disk estimated (opt-in, never in the reclaimable total).
fn render_compact(why: &Why, out: &mut Vec<Line>) {
    for d in &why.compact {
        out.push(line("Compact", super::disk_sentence(d)));
    }
}

fn use_words(u: Use) -> &'static str {
    match u {
        Use::HoldsOpen => "holds it open",
        Use::Names => "names it on its command line",
        Use::WorksIn => "works in it",
        Use::Maps => "maps it into memory",
        Use::Boots => "boots a VM from it",
        Use::Uses => "uses it",
    }
}

/// "Process 42 (`sleep 600`, user 1000, running since …)".
fn process_words(p: &ProcessFacts) -> String {
    let mut parts = Vec::new();
    if !p.command.is_empty() {
        parts.push(format!("`{}`", p.command));
    }
    if let Some(u) = p.uid {
        parts.push(format!("user {u}"));
    }
    if let Some(s) = p.started_at {
        parts.push(format!("running since {}", when(s)));
    }
    let mut s = format!("Process {}", p.pid);
    if !parts.is_empty() {
        s.push_str(&format!(" ({})", parts.join(", ")));
    }
    s
}

/// "a smolvm machine VM of web", for a VM process.
fn vm_words(vm: &VmFacts) -> String {
    match &vm.owner {
        Some(o) => format!("a {} of {o}", vm.what),
        None => format!("a {}", vm.what),
    }
}

fn render_processes(why: &Why, out: &mut Vec<Line>) {
    if why.processes.is_empty() {
        out.push(line(
            "Processes",
            "No process holds it open, names it, works in it, maps it or boots from it.",
        ));
    }
    for p in &why.processes {
        let how: Vec<&str> = p.uses.iter().map(|u| use_words(*u)).collect();
        let vm =
            p.vm.as_ref()
                .map(|v| format!(", {},", vm_words(v)))
                .unwrap_or_default();
        out.push(line(
            "Processes",
            format!("{}{vm} {}.", process_words(p), join_and(&how)),
        ));
    }
}

fn join_and(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => one.to_string(),
        [head @ .., last] => format!("{} and {last}", head.join(", ")),
    }
}

fn record_words(rec: &Record) -> String {
    let mut s = format!("{} {} is {}", rec.noun, rec.name, rec.state);
    if let Some(pid) = rec.pid {
        s.push_str(&format!(" (recorded VM process {pid})"));
    }
    if let Some(c) = rec.created_at.and_then(|c| u64::try_from(c).ok()) {
        s.push_str(&format!(", created {}", day(c)));
    }
    if let Some(b) = &rec.branched_from {
        s.push_str(&format!(", branched from {b}"));
    }
    match &rec.inventory {
        Some(db) => format!(
            "{}'s inventory {} records it: {s}.",
            rec.product.display_name(),
            crate::pathser::shown(db)
        ),
        None => format!(
            "{}'s inventory records it: {s}.",
            rec.product.display_name()
        ),
    }
}

fn render_record(why: &Why, out: &mut Vec<Line>) {
    let text = match (&why.record, why.unclaimed_in.as_slice()) {
        (Some(rec), _) => record_words(rec),
        (None, []) => "No inventory row claims it.".to_string(),
        (None, dbs) => format!(
            "No inventory row claims it: {} hold{} none (read again just before deleting).",
            dbs.iter()
                .map(|d| crate::pathser::shown(d))
                .collect::<Vec<_>>()
                .join(", "),
            if dbs.len() == 1 { "s" } else { "" }
        ),
    };
    out.push(line("Record", text));
}

fn render_keep(why: &Why, out: &mut Vec<Line>) {
    let text = match &why.keep_rule {
        None => "No keep rule keeps it.".to_string(),
        Some(k) if !k.readable => {
            "Your keep rules could not be read, so it may be kept: fix or remove the keep file first."
                .to_string()
        }
        Some(k) => {
            let mut s = format!("Keep rule {}", k.rule);
            if let Some(since) = k.since {
                s.push_str(&format!(" (since {})", day(since)));
            }
            if let Some(what) = &k.keeps {
                s.push_str(&format!(" keeps {what}"));
            } else {
                s.push_str(" keeps it");
            }
            if let Some(r) = &k.reason {
                s.push_str(&format!(": \"{}\"", crate::pathser::escape_text(r)));
            }
            format!(
                "{s}. `smolsweep keep remove {}` releases it.",
                k.rule
            )
        }
    };
    out.push(line("Keep rule", text));
}

fn render_chain(why: &Why, out: &mut Vec<Line>) {
    let shown = |v: &[PathBuf]| {
        v.iter()
            .map(|p| crate::pathser::shown(p))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if why.needed_by.is_empty() && why.backs_onto.is_empty() {
        out.push(line("Backing", "No disk's backing chain runs through it."));
    }
    if !why.needed_by.is_empty() {
        out.push(line(
            "Backing",
            format!(
                "{} back{} onto it (directly or down the chain): it goes only with {}, after {}.",
                shown(&why.needed_by),
                if why.needed_by.len() == 1 { "s" } else { "" },
                if why.needed_by.len() == 1 {
                    "it"
                } else {
                    "them"
                },
                if why.needed_by.len() == 1 {
                    "it"
                } else {
                    "them"
                },
            ),
        ));
    }
    if !why.backs_onto.is_empty() {
        out.push(line(
            "Backing",
            format!("It backs onto {}.", shown(&why.backs_onto)),
        ));
    }
}

fn render_version(why: &Why, out: &mut Vec<Line>) {
    let Some(v) = &why.version else { return };
    let upto = v.verified_up_to.join(", ");
    let text = match (&v.note, &v.installed) {
        (Some(note), _) => crate::pathser::escape_text(note),
        (None, Some(i)) => format!(
            "{} {i} is installed: a version Smolsweep's rules are verified on (up to {upto}).",
            v.product.display_name()
        ),
        (None, None) => format!(
            "No installed {} was found to check; the rules are those verified up to {upto}.",
            v.product.display_name()
        ),
    };
    out.push(line("Version", text));
}

/// The most actions of a plan listed beside its command.
const MAX_ALSO: usize = 8;

fn render_free(why: &Why, out: &mut Vec<Line>) {
    let Some(free) = &why.free else { return };
    if let Some(cmd) = &free.command {
        let plan = free.plan.as_deref().unwrap_or("");
        out.push(line("To free", format!("`{cmd}`: {plan}")));
        let n = free.also.len();
        if n > 0 {
            let what = match why.asked {
                Asked::Machine { .. } => "Its plan:",
                _ if n == 1 => "It also does this:",
                _ => "It also does these:",
            };
            out.push(line("To free", what));
            for a in free.also.iter().take(MAX_ALSO) {
                out.push(line("To free", format!("  {a}")));
            }
            if n > MAX_ALSO {
                out.push(line(
                    "To free",
                    format!("  … and {} more (`{cmd} -n` lists them).", n - MAX_ALSO),
                ));
            }
        }
        if let Some(only) = &free.only_this {
            out.push(line("To free", format!("Only this one: `{only}`.")));
        }
    }
    for b in &free.blocked {
        let b = match free.command {
            Some(_) => format!("It is not deleted now: {}", b.trim_end_matches('.')),
            None if b.starts_with("smolsweep ") => format!("What would end it: `{b}`."),
            None => capital(b),
        };
        let b = if b.ends_with('.') { b } else { format!("{b}.") };
        out.push(line("To free", b));
    }
}

fn render_machine(why: &Why, product: Product, name: &str, out: &mut Vec<Line>) {
    let shown = format!("{}:{name}", product.as_str());
    let Some(rec) = &why.record else {
        if why.items.is_empty() {
            out.push(line(
                "",
                format!(
                    "No {} {} {shown} is recorded, and the scan found nothing of it.",
                    product.display_name(),
                    match product {
                        Product::Smolvm => "machine",
                        Product::Celesto => "sandbox",
                    }
                ),
            ));
            return;
        }
        out.push(line(
            "",
            format!(
                "{shown}: no {} inventory records it any more; the scan found what it left behind.",
                product.display_name()
            ),
        ));
        render_items("Leftovers", why, out);
        render_version(why, out);
        out.push(line(
            "To free",
            "`smolsweep why PATH` explains each; `smolsweep prune` frees those that are reclaimable.",
        ));
        return;
    };
    out.push(line("", format!("{} {shown}", rec.noun)));
    out.push(line("Record", record_words(rec)));
    if why.processes.is_empty() {
        out.push(line("Processes", "No VM process runs it."));
    }
    for p in &why.processes {
        let vm = p.vm.as_ref().map(vm_words).unwrap_or_default();
        out.push(line(
            "Processes",
            format!("{}, {vm}, runs it.", process_words(p)),
        ));
    }
    render_items("Owns", why, out);
    if !why.branches.is_empty() {
        out.push(line(
            "Branches",
            format!(
                "Branched from it: {}; deleting it deletes them too (--cascade).",
                why.branches.join(", ")
            ),
        ));
    }
    render_keep(why, out);
    render_version(why, out);
    render_free(why, out);
    render_compact(why, out);
}

fn render_items(topic: &'static str, why: &Why, out: &mut Vec<Line>) {
    if why.items.is_empty() {
        out.push(line(topic, "Nothing the scan found."));
    }
    for i in &why.items {
        out.push(line(
            topic,
            format!(
                "{}: {}, {}, {}.",
                crate::pathser::shown(&i.path),
                i.label,
                i.verdict_word,
                bytes(i.bytes)
            ),
        ));
    }
}

fn render_process(why: &Why, pid: u32, out: &mut Vec<Line>) {
    let Some(p) = why.processes.first().filter(|p| p.exists) else {
        out.push(line("", format!("No process {pid} is running.")));
        return;
    };
    out.push(line("", format!("process {pid}")));
    let Some(vm) = &p.vm else {
        out.push(line(
            "Process",
            format!("{} is not a VM process of either SmolVM.", process_words(p)),
        ));
        render_items("Uses", why, out);
        out.push(line(
            "To free",
            "Smolsweep never ends a process that is not an orphaned VM of this HOME; what it uses stays protected while it runs.",
        ));
        return;
    };
    out.push(line(
        "Process",
        format!(
            "{} is {}, a VM process of {}.",
            process_words(p),
            vm_words(vm),
            vm.product.display_name()
        ),
    ));
    let whose = match (vm.orphan, vm.this_home) {
        (_, false) => "It belongs to another HOME: shown, never acted on.",
        (true, true) => "No inventory record owns it: it is an orphan of this HOME.",
        (false, true) => "It is this HOME's, and a record owns it.",
    };
    out.push(line("Whose", format!("{whose} {}", vm.reason)));
    if let Some(rec) = &why.record {
        out.push(line("Record", record_words(rec)));
    }
    if vm.held_deleted_bytes > 0 {
        out.push(line(
            "Holds",
            format!(
                "{} of deleted files, freed when it ends.",
                bytes(vm.held_deleted_bytes)
            ),
        ));
    }
    render_items("Uses", why, out);
    render_keep(why, out);
    render_version(why, out);
    render_free(why, out);
}

fn render_place(why: &Why, p: &Path, out: &mut Vec<Line>) {
    let shown = crate::pathser::shown(p);
    if !why.found {
        out.push(line("", format!("Nothing is at {shown}.")));
    }
    match &why.place {
        Some(Place::Under { root, findings }) if root.path == p => {
            let whose = root
                .product
                .map(|p| format!("{}'s", p.display_name()))
                .unwrap_or_else(|| "both SmolVMs'".into());
            out.push(line(
                "",
                format!(
                    "{shown} is {whose} {}: Smolsweep judges what is in it one by one ({findings} item{}; `smolsweep scan -v` lists them), never the directory itself.",
                    root.what,
                    if *findings == 1 { "" } else { "s" }
                ),
            ));
        }
        Some(Place::Under { root, findings }) => {
            let whose = root
                .product
                .map(|p| format!("{}'s", p.display_name()))
                .unwrap_or_else(|| "both SmolVMs'".into());
            let mut s = format!(
                "{shown} lies in {}, {whose} {}, but it is no leftover the scan recognises: Smolsweep neither counts nor deletes it.",
                crate::pathser::shown(&root.path),
                root.what
            );
            if *findings > 0 {
                s.push_str(&format!(
                    " It holds {findings} item{} the scan judges one by one (`smolsweep scan -v` lists them).",
                    if *findings == 1 { "" } else { "s" }
                ));
            }
            out.push(line("", s));
        }
        Some(Place::Outside { roots }) => {
            out.push(line(
                "",
                format!("{shown} is not SmolVM's: it lies outside every directory where Celesto SmolVM or smol-machines smolvm keep their state, so Smolsweep never judges or touches it. Those directories are:"),
            ));
            for r in roots {
                let whose = r
                    .product
                    .map(|p| p.display_name())
                    .unwrap_or("both SmolVMs");
                out.push(line(
                    "Roots",
                    format!("{} ({whose}, {})", crate::pathser::shown(&r.path), r.what),
                ));
            }
        }
        None => {}
    }
}
