//! What `why` says about one target, as data: the facts and their sentences.

use std::path::PathBuf;

use serde::Serialize;

use crate::model::*;

use super::{Asked, WHY_SCHEMA};

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
    /// "sandbox" or "machine": [`Product::noun`].
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

/// What the layout table says a path is: what its product writes there, and how upstream cleans it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Upstream {
    /// What it is, in words.
    pub what: &'static str,
    /// How upstream itself cleans it.
    pub cleans: &'static str,
    /// The first verified version that writes it.
    pub since: &'static str,
    /// Why it is never a finding of its own, when it is not.
    pub never: Option<&'static str>,
    /// The references it declares, in words.
    pub declares: Vec<&'static str>,
    /// The directory of entries it holds, each judged on its own, when it holds one.
    pub holds: Option<&'static str>,
    /// Whether the path is that entry itself, not something inside it.
    pub exact: bool,
}

/// One step of the chain that holds a finding, nearest first (like `nix why-depends`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HeldStep {
    /// How the holder holds what came before.
    pub via: Via,
    /// That, in words ("backs onto it").
    pub how: &'static str,
    /// The holder: a finding's path, or absent for a record.
    #[serde(with = "crate::pathser::opt")]
    pub by: Option<PathBuf>,
    /// The step in words.
    pub text: String,
}

/// What the reference graph says of a finding (`crate::reach`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reach {
    /// Held: the chain from what holds it to the root that stays.
    Held {
        /// The steps, nearest first.
        chain: Vec<HeldStep>,
        /// Why the last holder stays (a record, or the holder's own verdict).
        root: String,
    },
    /// Nothing that stays reaches it, and what was read to know that.
    Nothing {
        /// Machine and sandbox records read.
        records: usize,
        /// Leases (`.pack-shared`) read.
        leases: usize,
    },
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
    /// What holds it in the reference graph, or that nothing does.
    pub reach: Option<Reach>,
    /// What its product writes there, from the layout table.
    pub upstream: Option<Upstream>,
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
    pub(crate) fn new(asked: Asked) -> Why {
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
            reach: None,
            upstream: None,
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
