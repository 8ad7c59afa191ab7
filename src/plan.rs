//! Plans: the exact list of actions a reclaim will take, made from a scan and a selection.
//!
//! A plan is what the user confirms, and executing runs **that plan** (never a rescan). Every
//! target carries the identity it had when scanned, so the executor can re-check it at the moment
//! it acts. The plan id is the SHA-256 of the plan's canonical JSON (everything but the id), so a
//! saved plan that was edited is refused by [`Plan::from_json`].

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

use crate::basics::now_secs;
use crate::kind::{FindingKind, ProcShape};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

mod planner;
pub use crate::model::find_machine;
pub(crate) use planner::branch_descendants;

use crate::model::{
    human_bytes, FileIdentity, Finding, OptInClass, OwnerRecheck, Platform, Product, ScanReport,
};

/// Schema name of a serialised plan.
pub const PLAN_SCHEMA: &str = "smolsweep.plan/1";

/// The most actions one plan may hold. A plan is one action per leftover (a leftover directory
/// is deleted as a whole), so a plan made from a scan stays far below it; a plan above it is
/// refused as a whole, before its first action (narrow it with `--kind`, `--older-than`,
/// `--product` or `--id`). It also bounds what a hand-edited plan can make Smolsweep check.
pub const MAX_ACTIONS: usize = 10_000;

/// What the user asked to reclaim.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Selection {
    /// Finding ids chosen one by one (only `reclaimable` or `opt_in` ones are ever planned).
    pub ids: Vec<String>,
    /// Every `reclaimable` finding.
    pub all_reclaimable: bool,
    /// Opt-in classes to include (saved disks, caches, residue).
    pub include: BTreeSet<OptInClass>,
    /// Signal every orphaned VM process of this HOME.
    pub reap_orphans: bool,
    /// Individual processes to reap (must be orphans of this HOME in the scan).
    #[serde(default)]
    pub reap_pids: Vec<u32>,
    /// Machines (smolvm names or Celesto sandbox ids) to stop.
    pub stop_machines: Vec<String>,
    /// Machines to delete through their product's CLI.
    #[serde(default)]
    pub delete_machines: Vec<String>,
    /// Delete a machine together with the machines branched from it (smolvm `--cascade`). Without
    /// it, a machine that has branches is not deleted.
    #[serde(default)]
    pub cascade: bool,
}

impl Selection {
    /// The default `prune` selection: everything reclaimable.
    pub fn reclaimable() -> Self {
        Selection {
            all_reclaimable: true,
            ..Default::default()
        }
    }
}

/// One action of a plan. Serialised with an `action` tag (`delete_path`, `stop_machine`, ...).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Action {
    /// Remove a file, symlink or directory tree strictly inside `root`.
    DeletePath {
        /// Id of the finding it deletes (as in the scan report).
        finding_id: String,
        /// The product whose state it is.
        product: Product,
        /// What the finding is.
        kind: FindingKind,
        /// The path removed.
        #[serde(with = "crate::pathser::one")]
        path: PathBuf,
        /// The product root it must lie strictly inside (never deleted itself).
        #[serde(with = "crate::pathser::one")]
        root: PathBuf,
        /// What the scan saw at `path` (device, inode, type, size, mtime): anything else found
        /// there when it runs is left alone.
        #[serde(with = "identity_repr")]
        identity: FileIdentity,
        /// Whether the scan saw a directory (then everything in it is deleted with it).
        is_dir: bool,
        /// Allocated bytes the scan measured.
        expected_bytes: u64,
        /// Processes reaped earlier in the same plan that held this path. The path is deleted only
        /// when every one of those reaps succeeded, and then only dev, inode and type are
        /// re-checked (a running VM changes its disk's size and mtime).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        after_reap: Vec<u32>,
        /// Mount points the scan found inside (left in place, never deleted through).
        #[serde(
            default,
            skip_serializing_if = "Vec::is_empty",
            with = "crate::pathser::many"
        )]
        mounts_inside: Vec<PathBuf>,
        /// For an orphan: the inventories re-read just before deleting it (a record that
        /// appeared since the scan keeps it).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        owner_recheck: Option<Box<OwnerRecheck>>,
        /// The principal of its item (its disk) when that stays: this member goes alone,
        /// since removing it changes nothing that stays (said in the line a person reads).
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            with = "crate::pathser::opt"
        )]
        beside: Option<PathBuf>,
    },
    /// Stop a machine through its product's CLI.
    StopMachine {
        /// The product whose CLI stops it.
        product: Product,
        /// The smolvm machine name or Celesto sandbox id.
        name: String,
        /// The VM process recorded for it, if any (Celesto is handed it only with `pid_start_time`,
        /// as proof it is still that process).
        pid: Option<u32>,
        /// Start time of that process (see [`VmProcess::start_time`]): with `pid`, its identity.
        pid_start_time: Option<u64>,
        /// The state the scan saw (shown in the confirmation).
        #[serde(default)]
        state: String,
    },
    /// Delete a machine through its product's CLI.
    DeleteMachine {
        /// The product whose CLI deletes it.
        product: Product,
        /// The smolvm machine name or Celesto sandbox id.
        name: String,
        /// Whether to delete the machines branched from it too (smolvm `--cascade`).
        cascade: bool,
        /// The machines branched from it, as planned: if the branches found when it runs are not
        /// exactly these, it is not deleted.
        children: Vec<String>,
        /// The VM process recorded for it (Celesto signals the recorded pid itself: it is
        /// passed to the CLI only while it is still this process).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pid: Option<u32>,
        /// Start time of that process: with `pid`, its identity.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pid_start_time: Option<u64>,
        /// Allocated bytes of its storage as scanned (shown in the confirmation).
        #[serde(default)]
        bytes: u64,
        /// An ephemeral machine whose VM is gone (smolvm removes those itself, the same way).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        ephemeral: bool,
    },
    /// Terminate an orphaned VM process (SIGTERM, wait, SIGKILL), proven by pid + start time.
    SignalProcess {
        /// Process id: with `start_time`, the process's identity.
        pid: u32,
        /// When the process started (Linux: clock ticks since boot; macOS: seconds since the
        /// epoch); a pid reused by another process does not match.
        start_time: u64,
        /// The product whose VMM it is.
        product: Product,
        /// The machine name or sandbox id it runs, when known (shown in the outcome).
        owner: Option<String>,
        /// User id owning the process: one not of the user running Smolsweep is never signalled.
        uid: u32,
        /// The VMM shape the scan recognised (shown in the confirmation).
        #[serde(default)]
        shape: String,
        /// Part of an uninstall, which ends every VM process of this HOME of the product, not
        /// only orphans.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        uninstall: bool,
        /// Allocated bytes of deleted files it held open when scanned: freed when it ends.
        #[serde(default)]
        held_bytes: u64,
    },
    /// Detach a mount (macOS `hdiutil detach`) before the directory holding it is deleted.
    Detach {
        /// The mount point to detach.
        #[serde(with = "crate::pathser::one")]
        mountpoint: PathBuf,
    },
    /// Uninstall: remove a product root, or an entry of one, as a whole. `root` bounds it (a
    /// whole root is bounded by the directory holding it). `identity` is what was there when
    /// the plan was made (absent: nothing was, and a machine command of the plan may create
    /// it); something else found at the path is left alone.
    RemoveTree {
        /// The product whose state it is.
        product: Product,
        /// The root or entry removed.
        #[serde(with = "crate::pathser::one")]
        path: PathBuf,
        /// What it must lie inside: the product root, or for a whole root the directory holding it.
        #[serde(with = "crate::pathser::one")]
        root: PathBuf,
        /// What was at `path` when the plan was made (absent: nothing was).
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            with = "opt_identity_repr"
        )]
        identity: Option<FileIdentity>,
        /// Allocated bytes measured there when the plan was made.
        expected_bytes: u64,
        /// Mounts inside it that the plan detaches first: while one is still mounted (its
        /// detach failed, or was not chosen) nothing is removed.
        #[serde(
            default,
            skip_serializing_if = "Vec::is_empty",
            with = "crate::pathser::many"
        )]
        mounts_inside: Vec<PathBuf>,
    },
    /// Uninstall: remove a directory if, and only if, it is empty by then.
    RemoveDirIfEmpty {
        /// The product whose directory it is.
        product: Product,
        /// The directory, removed only if it is empty.
        #[serde(with = "crate::pathser::one")]
        path: PathBuf,
    },
    /// Uninstall: remove a launcher symlink that still points into a removed install prefix.
    RemoveLauncher {
        /// The launcher symlink removed.
        #[serde(with = "crate::pathser::one")]
        link: PathBuf,
        /// Where it pointed when the plan was made: one that points elsewhere by then is left
        /// alone.
        #[serde(with = "crate::pathser::one")]
        target: PathBuf,
        /// The removed install prefix it points into: it must be, or lie inside, a root the
        /// uninstall removes.
        #[serde(with = "crate::pathser::one")]
        prefix: PathBuf,
    },
    /// Uninstall: take the `# smolvm` PATH block out of a shell startup file (backed up first).
    RemovePathBlock {
        /// The shell startup file (backed up before it is changed).
        #[serde(with = "crate::pathser::one")]
        file: PathBuf,
    },
    /// Compact a disk image of a stopped machine or a saved disk: release the blocks its guest's
    /// ext4 calls free, changing nothing the guest reads in its files (opt-in, never part of a
    /// reclaim).
    CompactDisk {
        /// The product whose disk it is.
        product: Product,
        /// The machine name or sandbox id it belongs to.
        owner: Option<String>,
        /// The disk image.
        #[serde(with = "crate::pathser::one")]
        path: PathBuf,
        /// `raw` or `qcow2`, as estimated.
        format: String,
        /// What the estimate read (device, inode, type, size, mtime): a disk changed since is
        /// not compacted.
        #[serde(with = "identity_repr")]
        identity: FileIdentity,
        /// Bytes the estimate expects compacting to give back.
        expected_bytes: u64,
    },
}

/// [`Action::describe`] of a machine deletion: a helper or ephemeral machine by why it goes,
/// any other by its size, with the machines `--cascade` takes along.
fn describe_delete_machine(
    product: Product,
    name: &str,
    children: &[String],
    bytes: u64,
    ephemeral: bool,
) -> String {
    let with = if children.is_empty() {
        String::new()
    } else {
        format!(
            ", with the machines branched from it (--cascade): {}",
            children.join(", ")
        )
    };
    if ephemeral && crate::upstream::is_helper_machine(name) {
        format!("delete helper machine '{name}' left by an interrupted build (smolvm machine delete --force){with}")
    } else if ephemeral {
        format!("delete ephemeral machine '{name}' whose VM is gone (smolvm machine delete --force){with}")
    } else {
        format!(
            "delete {} {name} ({}){with}",
            product.display_name(),
            human_bytes(bytes)
        )
    }
}

/// [`Action::describe`] of ending a VM process: an orphan, or any VM process of an uninstall.
fn describe_signal(
    product: Product,
    pid: u32,
    owner: Option<&str>,
    shape: &str,
    uninstall: bool,
) -> String {
    let what = format!(
        "{} VM process {pid} ({}{})",
        product.display_name(),
        ProcShape::label_of(shape),
        owner.map(|o| format!(", {o}")).unwrap_or_default()
    );
    if uninstall {
        format!("end {what}, to uninstall")
    } else {
        format!("end orphaned {what}")
    }
}

impl Action {
    /// The `action` tag.
    pub fn name(&self) -> &'static str {
        match self {
            Action::DeletePath { .. } => "delete_path",
            Action::StopMachine { .. } => "stop_machine",
            Action::DeleteMachine { .. } => "delete_machine",
            Action::SignalProcess { .. } => "signal_process",
            Action::Detach { .. } => "detach",
            Action::RemoveTree { .. } => "remove_tree",
            Action::RemoveDirIfEmpty { .. } => "remove_dir_if_empty",
            Action::RemoveLauncher { .. } => "remove_launcher",
            Action::RemovePathBlock { .. } => "remove_path_block",
            Action::CompactDisk { .. } => "compact_disk",
        }
    }

    /// The line a person reads for this action. A plan's summaries are exactly these, so a
    /// saved plan whose text was edited to say something else is refused.
    pub fn describe(&self) -> String {
        match self {
            Action::DeletePath {
                path,
                is_dir,
                expected_bytes,
                after_reap,
                beside,
                ..
            } => format!(
                "delete {} {} ({}){}{}",
                if *is_dir { "directory" } else { "file" },
                crate::pathser::shown(path),
                human_bytes(*expected_bytes),
                if after_reap.is_empty() {
                    ""
                } else {
                    ", after its process is ended"
                },
                match beside {
                    Some(p) => format!(
                        "; {} stays, and removing this alone changes nothing about it",
                        crate::pathser::shown(p)
                    ),
                    None => String::new(),
                }
            ),
            Action::StopMachine {
                product,
                name,
                state,
                ..
            } => format!("stop {} {name} ({state})", product.display_name()),
            Action::DeleteMachine {
                product,
                name,
                children,
                bytes,
                ephemeral,
                ..
            } => describe_delete_machine(*product, name, children, *bytes, *ephemeral),
            Action::SignalProcess {
                pid,
                product,
                owner,
                shape,
                uninstall,
                ..
            } => describe_signal(*product, *pid, owner.as_deref(), shape, *uninstall),
            Action::Detach { mountpoint } => {
                format!("detach the mount at {}", crate::pathser::shown(mountpoint))
            }
            Action::RemoveTree {
                path,
                expected_bytes,
                ..
            } => format!(
                "remove {} ({})",
                crate::pathser::shown(path),
                human_bytes(*expected_bytes)
            ),
            Action::RemoveDirIfEmpty { path, .. } => {
                format!(
                    "remove {} if nothing is left in it",
                    crate::pathser::shown(path)
                )
            }
            Action::RemoveLauncher { link, .. } => {
                format!("remove launcher {}", crate::pathser::shown(link))
            }
            Action::RemovePathBlock { file } => {
                format!(
                    "remove the '# smolvm' PATH lines from {}",
                    crate::pathser::shown(file)
                )
            }
            Action::CompactDisk {
                product,
                owner,
                path,
                expected_bytes,
                ..
            } => format!(
                "compact {} disk {}{} (about {} free inside to give back)",
                product.display_name(),
                crate::pathser::shown(path),
                owner
                    .as_deref()
                    .map(|o| format!(" of {o}"))
                    .unwrap_or_default(),
                human_bytes(*expected_bytes)
            ),
        }
    }

    /// What the action acts on, as (what it does, which one). Two actions of one plan with the
    /// same key would do one thing twice: a path deleted (or removed as a tree), a machine
    /// stopped or deleted (product and name), a process ended (pid and start time), a mount
    /// detached, a directory, launcher or PATH block removed.
    fn target_key(&self) -> (&'static str, Vec<u8>) {
        use std::os::unix::ffi::OsStrExt;
        let path = |p: &Path| p.as_os_str().as_bytes().to_vec();
        let machine = |p: &Product, name: &str| format!("{}:{name}", p.as_str()).into_bytes();
        match self {
            Action::DeletePath { path: p, .. } | Action::RemoveTree { path: p, .. } => {
                ("delete", path(p))
            }
            Action::StopMachine { product, name, .. } => ("stop", machine(product, name)),
            Action::DeleteMachine { product, name, .. } => {
                ("delete_machine", machine(product, name))
            }
            Action::SignalProcess {
                pid, start_time, ..
            } => ("signal", format!("{pid}@{start_time}").into_bytes()),
            Action::Detach { mountpoint } => ("detach", path(mountpoint)),
            Action::RemoveDirIfEmpty { path: p, .. } => ("remove_dir", path(p)),
            Action::RemoveLauncher { link, .. } => ("remove_launcher", path(link)),
            Action::RemovePathBlock { file } => ("remove_path_block", path(file)),
            Action::CompactDisk { path: p, .. } => ("compact", path(p)),
        }
    }

    fn order(&self) -> u8 {
        match self {
            Action::StopMachine { .. } | Action::SignalProcess { .. } => 0,
            Action::Detach { .. } => 1,
            Action::DeleteMachine { .. } => 2,
            Action::DeletePath { .. } | Action::RemoveTree { .. } | Action::CompactDisk { .. } => 3,
            Action::RemoveDirIfEmpty { .. }
            | Action::RemoveLauncher { .. }
            | Action::RemovePathBlock { .. } => 4,
        }
    }
}

/// [`FileIdentity`] with `mtime_ns` as an `i64`: actions are internally tagged (and flattened
/// into records), and serde's buffered path for those does not carry `i128`. Nanoseconds since
/// the epoch fit an `i64` until 2262.
mod identity_repr {
    use super::FileIdentity;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    struct Repr {
        dev: u64,
        ino: u64,
        file_type: u32,
        size: u64,
        mtime_ns: i64,
    }

    pub(crate) fn serialize<S: Serializer>(id: &FileIdentity, s: S) -> Result<S::Ok, S::Error> {
        Repr {
            dev: id.dev,
            ino: id.ino,
            file_type: id.file_type,
            size: id.size,
            mtime_ns: id.mtime_ns.clamp(i64::MIN as i128, i64::MAX as i128) as i64,
        }
        .serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<FileIdentity, D::Error> {
        let r = Repr::deserialize(d)?;
        Ok(FileIdentity {
            dev: r.dev,
            ino: r.ino,
            file_type: r.file_type,
            size: r.size,
            mtime_ns: r.mtime_ns as i128,
        })
    }
}

/// [`identity_repr`] for an optional identity.
mod opt_identity_repr {
    use super::FileIdentity;
    use serde::{Deserialize, Deserializer, Serializer};

    #[derive(serde::Serialize, Deserialize)]
    struct W(#[serde(with = "super::identity_repr")] FileIdentity);

    pub(crate) fn serialize<S: Serializer>(
        id: &Option<FileIdentity>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        use serde::Serialize;
        id.map(W).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<FileIdentity>, D::Error> {
        Ok(Option::<W>::deserialize(d)?.map(|w| w.0))
    }
}

/// The plan of everything reclaimable among what a filter selects at a time, with that filter
/// and time ([`Plan::reclaimable_of`] alone makes one): what a filtered view shows and narrows
/// by.
#[derive(Debug, Clone)]
pub struct FilteredPlan {
    filter: crate::filter::Filter,
    now: std::time::SystemTime,
    plan: Plan,
}

impl FilteredPlan {
    /// The filter the plan was made of.
    pub fn filter(&self) -> &crate::filter::Filter {
        &self.filter
    }

    /// The time the filter was applied at (ages are counted to it).
    pub fn now(&self) -> std::time::SystemTime {
        self.now
    }

    /// The plan.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }
}

/// An action with the line a person reads in the confirmation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedAction {
    /// The action (its fields are flattened into the JSON object, with its `action` tag).
    #[serde(flatten)]
    pub action: Action,
    /// The line a person reads in the confirmation: exactly [`Action::describe`], or the plan is
    /// refused.
    pub summary: String,
}

impl PlannedAction {
    /// An action with its description ([`Action::describe`]).
    pub fn of(action: Action) -> Self {
        PlannedAction {
            summary: action.describe(),
            action,
        }
    }
}

/// A finding (or process, or machine) that was selected but is not part of the plan, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedAtPlan {
    /// Finding id, `pid:<n>` or `machine:<name>`.
    pub id: String,
    /// Why it was left out, for a person.
    pub why: String,
}

/// The plan a user confirms and the executor runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// Schema name, [`PLAN_SCHEMA`].
    pub schema: String,
    /// Hex SHA-256 of the canonical JSON of the plan without its id.
    pub id: String,
    /// Seconds since the Unix epoch.
    pub created_at: u64,
    /// When the scan this plan was made from started (seconds since the epoch; 0 unknown).
    /// Directories inside a planned directory modified after it are left in place.
    #[serde(default)]
    pub scanned_at: u64,
    /// The same instant in nanoseconds (0 in plans written before it was recorded).
    #[serde(default)]
    pub scanned_at_ns: u64,
    /// The HOME the scan was made for.
    #[serde(with = "crate::pathser::one")]
    pub home: PathBuf,
    /// The platform the scan ran on.
    pub platform: Platform,
    /// Every root directory the scan resolved. None of them is ever deleted itself.
    #[serde(with = "crate::pathser::many")]
    pub roots: Vec<PathBuf>,
    /// What the plan does, in the order it runs (a reclaim stops and reaps first, then detaches,
    /// deletes machines, and deletes paths last).
    pub actions: Vec<PlannedAction>,
    /// What the plan is expected to free, the one estimate every surface shows
    /// ([`Plan::estimate_of`]): its path deletes (each inode counted once), the machines it
    /// deletes with everything they own, and the deleted files the processes it ends hold open.
    pub estimated_bytes: u64,
    /// Everything selected that is not planned, with why.
    pub skipped_at_plan: Vec<SkippedAtPlan>,
    /// Keep rules the user explicitly chose to override for this plan (an uninstall that
    /// removes kept items: `--remove-kept`, or ticking them). Any other rule that keeps a
    /// target when its action runs, including one added after the plan was made, wins.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keep_overrides: Vec<String>,
}

/// Why a serialised plan was refused.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// The text is not JSON, or not a plan's.
    #[error("not a plan: {0}")]
    Json(#[from] serde_json::Error),
    /// The plan names a schema other than [`PLAN_SCHEMA`] (the one it names).
    #[error("unsupported plan schema {0:?} (expected {PLAN_SCHEMA})")]
    Schema(String),
    /// The plan's id is not the hash of its content.
    #[error("plan id {claimed} does not match its content ({actual}): the plan was changed after it was made")]
    Tampered {
        /// The id the plan carries.
        claimed: String,
        /// The id its content hashes to.
        actual: String,
    },
    /// An action's summary is not what the action does.
    #[error("the plan says {claimed:?} for an action that would {actual:?}: the plan was edited")]
    Summary {
        /// The summary the plan shows.
        claimed: String,
        /// What the action really does ([`Action::describe`]).
        actual: String,
    },
    /// The text is a scan report, not a plan.
    #[error("this is a scan report (smolsweep.scan/1), not a plan: make one with `smolsweep plan --out FILE`")]
    ScanReport,
    /// The plan holds more than [`MAX_ACTIONS`] actions.
    #[error("the plan has {count} actions, more than the {MAX_ACTIONS} one plan may hold: nothing was done (narrow it with --kind, --older-than, --product or --id)")]
    TooManyActions {
        /// How many actions it holds.
        count: usize,
    },
    /// The plan names one target twice.
    #[error("the plan does one thing twice (action {first} and action {again}: {summary}); a plan Smolsweep makes does each thing once, so it was edited: nothing was done")]
    Duplicate {
        /// Position (from 1) of the first action on the target.
        first: usize,
        /// Position (from 1) of the action naming it again.
        again: usize,
        /// The repeated action's summary, as the plan shows it.
        summary: String,
    },
}

/// Whether `path` is absolute and has no `.`/`..` components (so prefix tests mean containment).
pub(crate) fn is_normal_absolute(path: &Path) -> bool {
    path.is_absolute()
        && path
            .components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_)))
}

/// Whether `path` lies strictly below `root` (both normal absolute paths).
pub(crate) fn strictly_inside(path: &Path, root: &Path) -> bool {
    is_normal_absolute(path) && is_normal_absolute(root) && path != root && path.starts_with(root)
}

impl Plan {
    /// What `actions` are expected to free, the one estimate: the allocated bytes of the paths
    /// they delete or remove (an inode deleted under two names counted once), of the machines
    /// they delete (everything the machine owns), and of the deleted files the processes they
    /// end hold open. Stopping a machine, detaching a mount or editing a file frees nothing.
    pub fn estimate_of(actions: &[PlannedAction]) -> u64 {
        let mut seen: BTreeSet<(u64, u64)> = BTreeSet::new();
        actions
            .iter()
            .map(|a| match &a.action {
                Action::DeletePath {
                    identity,
                    expected_bytes,
                    ..
                } if seen.insert((identity.dev, identity.ino)) => *expected_bytes,
                Action::RemoveTree { expected_bytes, .. } => *expected_bytes,
                Action::DeleteMachine { bytes, .. } => *bytes,
                Action::SignalProcess { held_bytes, .. } => *held_bytes,
                Action::CompactDisk { expected_bytes, .. } => *expected_bytes,
                _ => 0,
            })
            .sum()
    }

    /// Whether the plan takes `f` (of `report`, the scan it was made from): a path delete of it
    /// or of a directory holding it, or the delete of a machine whose directory holds it. The
    /// one answer to "does this plan cover that finding", for every surface.
    pub fn covers(&self, report: &ScanReport, f: &Finding) -> bool {
        self.actions.iter().any(|a| match &a.action {
            Action::DeletePath { path, .. } => f.path.starts_with(path),
            Action::DeleteMachine { product, name, .. } => report
                .machines
                .iter()
                .filter(|m| m.product == *product && &m.name == name)
                .filter_map(|m| m.dir.as_deref())
                .any(|d| f.path.starts_with(d)),
            _ => false,
        })
    }

    /// Build the plan for `selection` from a scan. Pure: touches no file system.
    pub fn from_scan(report: &ScanReport, selection: &Selection) -> Plan {
        Self::from_scan_at(report, selection, now_secs())
    }

    /// The plan for findings chosen one by one (the window's, the tray's and `browse`'s
    /// selection), duplicates dropped: what their Reclaim runs and its button estimates.
    pub fn of_ids(report: &ScanReport, ids: &[String]) -> Plan {
        let mut seen = BTreeSet::new();
        let ids = ids
            .iter()
            .filter(|i| seen.insert(i.as_str()))
            .cloned()
            .collect();
        Self::from_scan(
            report,
            &Selection {
                ids,
                ..Default::default()
            },
        )
    }

    /// The plan of everything reclaimable in `report` (what "Reclaim" frees: a scan view's
    /// totals and next steps).
    pub fn reclaimable(report: &ScanReport) -> Plan {
        Self::from_scan(report, &Selection::reclaimable())
    }

    /// [`Plan::reclaimable`] of what `filter` selects at `now` (every machine kept for the
    /// planner): the totals of a filtered view, what `prune` with the same filter frees. Handed
    /// over with the filter and the time it was made for ([`FilteredPlan`]), so a view narrows
    /// the scan by exactly what the plan was made of.
    pub fn reclaimable_of(
        report: &ScanReport,
        filter: &crate::filter::Filter,
        now: std::time::SystemTime,
    ) -> FilteredPlan {
        let mut items = report.clone();
        filter.apply(&mut items, now);
        FilteredPlan {
            filter: filter.clone(),
            now,
            plan: Self::reclaimable(&items),
        }
    }

    /// [`Plan::from_scan`] with an explicit creation time (tests, reproducible ids).
    pub(crate) fn from_scan_at(
        report: &ScanReport,
        selection: &Selection,
        created_at: u64,
    ) -> Plan {
        let planned = planner::plan(report, selection);
        let mut plan = Plan {
            schema: PLAN_SCHEMA.into(),
            id: String::new(),
            created_at,
            scanned_at: report.scanned_at,
            scanned_at_ns: report.scanned_at_ns,
            home: report.home.clone(),
            platform: report.platform,
            roots: planned.roots.into_iter().collect(),
            actions: planned.actions,
            estimated_bytes: planned.estimated,
            skipped_at_plan: planned.skipped,
            keep_overrides: Vec::new(),
        };
        plan.id = plan.content_id();
        plan
    }

    /// Hex SHA-256 of the canonical JSON (sorted keys) of the plan without its id.
    pub fn content_id(&self) -> String {
        let mut copy = self.clone();
        copy.id = String::new();
        let value = serde_json::to_value(&copy).expect("a plan always serialises");
        // serde_json's map is ordered by key, so this text is canonical.
        let text = serde_json::to_string(&value).expect("a value always serialises");
        hex::encode(Sha256::digest(text.as_bytes()))
    }

    /// What the plan does, without when it was made: SHA-256 over the canonical JSON of its
    /// actions, refusals and estimate. Two plans made from different scans of the same state
    /// have the same digest; a confirmation can be checked against it at execution time.
    pub fn action_digest(&self) -> String {
        let value = serde_json::json!({
            "actions": self.actions,
            "skipped_at_plan": self.skipped_at_plan,
            "estimated_bytes": self.estimated_bytes,
        });
        hex::encode(Sha256::digest(value.to_string().as_bytes()))
    }

    /// Whether the plan may run at all, checked whole before its first action: its schema, at
    /// most [`MAX_ACTIONS`] actions, an id that still matches the content, and no action twice
    /// ([`Action::target_key`]).
    pub fn verify(&self) -> Result<(), PlanError> {
        if self.schema != PLAN_SCHEMA {
            return Err(PlanError::Schema(self.schema.clone()));
        }
        if self.actions.len() > MAX_ACTIONS {
            return Err(PlanError::TooManyActions {
                count: self.actions.len(),
            });
        }
        let actual = self.content_id();
        if actual != self.id {
            return Err(PlanError::Tampered {
                claimed: self.id.clone(),
                actual,
            });
        }
        let mut seen: BTreeMap<(&'static str, Vec<u8>), usize> = BTreeMap::new();
        for (i, a) in self.actions.iter().enumerate() {
            if let Some(first) = seen.insert(a.action.target_key(), i) {
                return Err(PlanError::Duplicate {
                    first: first + 1,
                    again: i + 1,
                    summary: crate::pathser::escape_text(&a.summary),
                });
            }
        }
        Ok(())
    }

    /// The plan as indented JSON, as saved with `--out`.
    pub fn to_json_pretty(&self) -> String {
        serde_json::to_string_pretty(self).expect("a plan always serialises")
    }

    /// Read a saved plan and refuse it unless its id matches its content and every line it
    /// would show says what its action does.
    ///
    /// The id proves only that the file is self-consistent (anyone can recompute it); what
    /// protects the user is that every action is judged again when it runs.
    pub fn from_json(text: &str) -> Result<Plan, PlanError> {
        let value: serde_json::Value = serde_json::from_str(text)?;
        if value.get("schema").and_then(|s| s.as_str()) == Some(crate::model::SCAN_SCHEMA) {
            return Err(PlanError::ScanReport);
        }
        let plan: Plan = serde_json::from_value(value)?;
        plan.verify()?;
        for a in &plan.actions {
            let said = a.action.describe();
            if a.summary != said {
                return Err(PlanError::Summary {
                    claimed: a.summary.clone(),
                    actual: said,
                });
            }
        }
        Ok(plan)
    }

    /// Number of delete actions.
    pub fn delete_count(&self) -> usize {
        self.actions
            .iter()
            .filter(|a| matches!(a.action, Action::DeletePath { .. }))
            .count()
    }

    /// Whether the plan has no action at all.
    pub fn is_empty(&self) -> bool {
        self.actions.is_empty()
    }

    /// Count of actions per tag (for summaries).
    pub fn counts(&self) -> BTreeMap<&'static str, usize> {
        let mut m = BTreeMap::new();
        for a in &self.actions {
            *m.entry(a.action.name()).or_insert(0) += 1;
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Machine, ProductReport, Scope, Totals, Verdict, VmProcess};

    fn f(id: &str, path: &str, verdict: Verdict, class: Option<OptInClass>) -> Finding {
        Finding {
            apparent_bytes: 10,
            allocated_bytes: 100,
            reason: "r".into(),
            opt_in_class: class,
            identity: Some(FileIdentity {
                dev: 1,
                ino: path.len() as u64 + id.len() as u64 * 1000,
                file_type: 0o040000,
                size: 0,
                mtime_ns: 0,
            }),
            is_dir: true,
            root: Some("/h/.cache/smolvm".into()),
            ..Finding::new(
                id,
                Product::Smolvm,
                crate::model::FindingKind::SmolvmDanglingDir,
                path,
                verdict,
            )
        }
    }

    fn proc_(pid: u32, orphan: bool, scope: Scope, paths: Vec<PathBuf>) -> VmProcess {
        VmProcess {
            pid,
            start_time: 5,
            product: Product::Smolvm,
            shape: ProcShape::SmolvmBootVm,
            owner: Some("m".into()),
            orphan,
            scope,
            held_deleted_bytes: 0,
            uid: 1000,
            comm: String::new(),
            argv: vec![],
            paths,
            reason: String::new(),
            fds_readable: true,
            kept: None,
        }
    }

    fn report(findings: Vec<Finding>) -> ScanReport {
        ScanReport {
            schema: crate::model::SCAN_SCHEMA.into(),
            home: "/h".into(),
            platform: Platform::Linux,
            products: vec![ProductReport {
                product: Product::Smolvm,
                detected: true,
                status: "ok".into(),
                roots: [("cache_root".to_string(), PathBuf::from("/h/.cache/smolvm"))].into(),
                problems: vec![],
                version: None,
                newer: None,
            }],
            findings,
            machines: vec![],
            processes: vec![],
            totals: Totals::default(),
            scanned_at: 1,
            scanned_at_ns: 0,
            duration_ms: 0,
            compact: Default::default(),
        }
    }

    fn paths(p: &Plan) -> Vec<String> {
        p.actions
            .iter()
            .filter_map(|a| match &a.action {
                Action::DeletePath { path, .. } => Some(path.display().to_string()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn only_reclaimable_and_included_opt_in_are_planned() {
        let r = report(vec![
            f("a", "/h/.cache/smolvm/vms/a", Verdict::Reclaimable, None),
            f(
                "c",
                "/h/.cache/smolvm/pack",
                Verdict::OptIn,
                Some(OptInClass::Caches),
            ),
            f(
                "s",
                "/h/.cache/smolvm/saved",
                Verdict::OptIn,
                Some(OptInClass::SavedDisks),
            ),
            f("p", "/h/.cache/smolvm/vms/live", Verdict::Protected, None),
            f("u", "/h/.cache/smolvm/vms/odd", Verdict::Unknown, None),
        ]);
        let p = Plan::from_scan_at(&r, &Selection::reclaimable(), 1);
        assert_eq!(paths(&p), ["/h/.cache/smolvm/vms/a"]);
        assert!(
            p.skipped_at_plan.is_empty(),
            "unselected findings are not 'skipped'"
        );
        let mut sel = Selection::reclaimable();
        sel.include.insert(OptInClass::Caches);
        let p = Plan::from_scan_at(&r, &sel, 1);
        assert_eq!(
            paths(&p),
            ["/h/.cache/smolvm/pack", "/h/.cache/smolvm/vms/a"]
        );
        assert_eq!(p.estimated_bytes, 200);
        // Explicit ids: opt-in ones are allowed, protected and unknown never.
        let sel = Selection {
            ids: vec!["s".into(), "p".into(), "u".into(), "nope".into()],
            ..Default::default()
        };
        let p = Plan::from_scan_at(&r, &sel, 1);
        assert_eq!(paths(&p), ["/h/.cache/smolvm/saved"]);
        let why: BTreeMap<_, _> = p
            .skipped_at_plan
            .iter()
            .map(|s| (s.id.as_str(), s.why.as_str()))
            .collect();
        assert!(why["p"].starts_with("protected"));
        assert!(why["u"].starts_with("could not be verified"));
        assert!(why["nope"].contains("no finding"));
    }

    #[test]
    fn actions_are_ordered_and_ids_are_content_hashes() {
        let mut r = report(vec![f(
            "a",
            "/h/.cache/smolvm/vms/a",
            Verdict::Reclaimable,
            None,
        )]);
        r.processes = vec![
            proc_(
                10,
                true,
                Scope::ThisHome,
                vec!["/h/.cache/smolvm/vms/a/disk".into()],
            ),
            proc_(11, true, Scope::Foreign, vec![]),
            proc_(12, false, Scope::ThisHome, vec![]),
        ];
        r.machines = vec![Machine {
            pid: Some(12),
            alive: true,
            effective_state: "running".into(),
            pid_start_time: Some(5),
            ..Machine::new(Product::Smolvm, "m", "running")
        }];
        let sel = Selection {
            all_reclaimable: true,
            reap_orphans: true,
            reap_pids: vec![11, 12],
            stop_machines: vec!["m".into(), "ghost".into()],
            ..Default::default()
        };
        let p = Plan::from_scan_at(&r, &sel, 1);
        let names: Vec<_> = p.actions.iter().map(|a| a.action.name()).collect();
        assert_eq!(names, ["signal_process", "stop_machine", "delete_path"]);
        assert!(
            matches!(&p.actions[2].action, Action::DeletePath { after_reap, .. } if after_reap == &vec![10])
        );
        let ids: Vec<_> = p.skipped_at_plan.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["pid:11", "pid:12", "machine:ghost"]);
        assert_eq!(p.id, p.content_id());
        assert_eq!(
            p.id,
            Plan::from_scan_at(&r, &sel, 1).id,
            "same content, same id"
        );
        assert_ne!(p.id, Plan::from_scan_at(&r, &sel, 2).id);
    }

    #[test]
    fn macos_layers_cs_mounts_are_detached_first() {
        let mut a = f("a", "/h/.cache/smolvm/vms/a", Verdict::Reclaimable, None);
        a.mounts_inside = vec!["/h/.cache/smolvm/vms/a/pack/layers-cs".into()];
        let mut r = report(vec![a]);
        let p = Plan::from_scan_at(&r, &Selection::reclaimable(), 1);
        assert_eq!(p.actions.len(), 1, "Linux: reported, never detached");
        r.platform = Platform::Macos;
        let p = Plan::from_scan_at(&r, &Selection::reclaimable(), 1);
        let names: Vec<_> = p.actions.iter().map(|a| a.action.name()).collect();
        assert_eq!(names, ["detach", "delete_path"]);
    }

    #[test]
    fn paths_must_be_normal_and_strictly_inside() {
        assert!(strictly_inside(Path::new("/a/b/c"), Path::new("/a/b")));
        assert!(!strictly_inside(Path::new("/a/b"), Path::new("/a/b")));
        assert!(!strictly_inside(Path::new("/a/bc"), Path::new("/a/b")));
        assert!(!strictly_inside(Path::new("/a/b/../c"), Path::new("/a/b")));
        assert!(!strictly_inside(Path::new("a/b/c"), Path::new("a/b")));
        let r = report(vec![f(
            "x",
            "/h/.cache/smolvm/../../etc",
            Verdict::Reclaimable,
            None,
        )]);
        let p = Plan::from_scan_at(&r, &Selection::reclaimable(), 1);
        assert!(p.actions.is_empty());
        assert_eq!(p.skipped_at_plan.len(), 1);
    }

    fn machine(name: &str, branched_from: Option<&str>) -> Machine {
        Machine {
            effective_state: "stopped".into(),
            dir: Some(format!("/h/.cache/smolvm/vms/{name}").into()),
            allocated_bytes: 4096,
            db: Some("/h/.local/share/smolvm/server/smolvm.db".into()),
            branched_from: branched_from.map(String::from),
            ..Machine::new(Product::Smolvm, name, "stopped")
        }
    }

    #[test]
    fn a_machine_with_branches_is_deleted_only_with_cascade_and_names_them() {
        let mut r = report(vec![f(
            "kid-file",
            "/h/.cache/smolvm/vms/kid/leftover",
            Verdict::Reclaimable,
            None,
        )]);
        r.machines = vec![
            machine("base", None),
            machine("kid", Some("base")),
            machine("grandkid", Some("kid")),
            machine("other", None),
        ];
        let mut other_db = machine("stranger", Some("base"));
        other_db.db = Some("/elsewhere/smolvm.db".into());
        r.machines.push(other_db);
        let sel = |cascade| Selection {
            delete_machines: vec!["base".into(), "other".into()],
            cascade,
            ..Default::default()
        };

        let p = Plan::from_scan_at(&r, &sel(false), 1);
        let names: Vec<&str> = p
            .actions
            .iter()
            .filter_map(|a| match &a.action {
                Action::DeleteMachine { name, cascade, .. } => {
                    assert!(!cascade);
                    Some(name.as_str())
                }
                _ => None,
            })
            .collect();
        assert_eq!(names, ["other"]);
        let why = &p
            .skipped_at_plan
            .iter()
            .find(|s| s.id == "machine:base")
            .unwrap()
            .why;
        assert!(why.contains("grandkid, kid"), "{why}");

        let p = Plan::from_scan_at(&r, &sel(true), 1);
        let base = p
            .actions
            .iter()
            .find_map(|a| match &a.action {
                Action::DeleteMachine {
                    name,
                    cascade,
                    children,
                    ..
                } if name == "base" => Some((*cascade, children.clone())),
                _ => None,
            })
            .unwrap();
        // Only branches of the same inventory, transitively; sorted.
        assert_eq!(
            base,
            (true, vec!["grandkid".to_string(), "kid".to_string()])
        );
        // A file inside a branch's directory goes with the branch, not on its own.
        assert!(paths(&p).is_empty(), "{:?}", paths(&p));
        let other = p
            .actions
            .iter()
            .find_map(|a| match &a.action {
                Action::DeleteMachine { name, cascade, .. } if name == "other" => Some(*cascade),
                _ => None,
            })
            .unwrap();
        assert!(!other, "--cascade only for a machine that has branches");
    }

    /// `web` and `smolvm:web` name one machine: it is stopped and deleted once, and the plan
    /// passes the check that refuses an action twice.
    #[test]
    fn one_machine_named_twice_is_planned_once() {
        let mut r = report(vec![]);
        let mut web = machine("web", None);
        web.state = "paused".into();
        r.machines = vec![web];
        let sel = Selection {
            stop_machines: vec!["web".into(), "smolvm:web".into()],
            delete_machines: vec!["smolvm:web".into(), "web".into()],
            ..Default::default()
        };
        let p = Plan::from_scan_at(&r, &sel, 1);
        assert_eq!(
            p.counts(),
            [("delete_machine", 1), ("stop_machine", 1)].into()
        );
        assert!(p.skipped_at_plan.is_empty(), "{:?}", p.skipped_at_plan);
        p.verify().unwrap();
    }
}
