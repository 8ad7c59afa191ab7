//! The scan's vocabulary: products, verdicts, findings, machines, processes and the report.
//!
//! Everything here serialises to the `smolsweep.scan/1` JSON contract. Extra fields are allowed
//! by the contract; the required ones keep their names.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use crate::kind::{FindingKind, ProcShape, Risk};
pub use crate::product::Product;

/// Schema name of the scan report.
pub const SCAN_SCHEMA: &str = "smolsweep.scan/1";

/// The desktop platforms whose layouts Smolsweep knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Platform {
    /// Linux: XDG directories, `/proc`, `/proc/self/mountinfo`.
    Linux,
    /// macOS: `~/Library` directories, `ps`, `mount` and `hdiutil`.
    Macos,
}

impl Platform {
    /// The platform this binary runs on (Linux for anything that is not macOS).
    pub fn current() -> Platform {
        if cfg!(target_os = "macos") {
            Platform::Macos
        } else {
            Platform::Linux
        }
    }
    /// The name in JSON and on the command line (`linux`, `macos`).
    pub fn as_str(self) -> &'static str {
        match self {
            Platform::Linux => "linux",
            Platform::Macos => "macos",
        }
    }
}

/// What Smolsweep may do with a finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Safe to delete; included in "Reclaim" by default.
    Reclaimable,
    /// Safe to delete, but only when the user asks for that class (saved disks, caches, ...).
    OptIn,
    /// Alive, in use or kept: never deleted.
    Protected,
    /// The scanner could not verify it: shown, never acted on.
    Unknown,
}

impl Verdict {
    /// The name in JSON (`reclaimable`, `opt_in`, `protected`, `unknown`).
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Reclaimable => "reclaimable",
            Verdict::OptIn => "opt_in",
            Verdict::Protected => "protected",
            Verdict::Unknown => "unknown",
        }
    }
}

/// Classes of opt-in findings a user can include in a reclaim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OptInClass {
    /// Celesto disks with a `.retained` marker, their companions and logs.
    SavedDisks,
    /// Rebuildable caches (image caches, pack caches, registry blobs, restore caches, ...).
    Caches,
    /// Residue that may still carry user data (firmware NVRAM, snapshots of deleted sandboxes).
    Residue,
}

/// The record that would make an orphan someone's again, and the inventories the scan read to
/// find none: re-read at the moment of deletion, so a sandbox or machine created since the scan
/// keeps its files.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct OwnerRecheck {
    /// The inventories (as the scan found them under this environment's roots); one that does
    /// not exist at deletion holds no record.
    #[serde(with = "crate::pathser::many")]
    pub inventories: Vec<PathBuf>,
    /// How a record there would claim it.
    pub record: OwnerRecord,
}

/// How a record in one of [`OwnerRecheck::inventories`] would claim the item.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "by", content = "value", rename_all = "snake_case")]
pub enum OwnerRecord {
    /// A live Celesto sandbox with this id.
    SandboxId(String),
    /// A smolvm machine with this name.
    MachineName(String),
    /// A smolvm machine whose name hashes to this directory name (`vms/<hash16>`).
    MachineDirHash(String),
}

/// Identity of a file system object when it was scanned; re-checked before any action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FileIdentity {
    /// `st_dev` of the file system holding it.
    pub dev: u64,
    /// `st_ino`.
    pub ino: u64,
    /// `S_IFMT` bits of `st_mode` (file, directory, socket, symlink...).
    pub file_type: u32,
    /// `st_size` (apparent bytes).
    pub size: u64,
    /// Modification time in nanoseconds since the Unix epoch.
    pub mtime_ns: i128,
}

/// One path Smolsweep found, with what it is and what may be done with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// Stable across scans of the same state (derived from product, kind and path).
    pub id: String,
    /// Which SmolVM left it.
    pub product: Product,
    /// `<product>.<what>`, for example `celesto.orphan_disk`.
    pub kind: FindingKind,
    /// Where it is (serialised losslessly, bytes that are not UTF-8 escaped).
    #[serde(with = "crate::pathser::one")]
    pub path: PathBuf,
    /// The sandbox id or machine name this belongs to, when known.
    pub owner: Option<String>,
    /// Bytes it reads as (`st_size`, summed over a tree).
    pub apparent_bytes: u64,
    /// Bytes the file system allocates to it (`st_blocks` × 512 over a tree, hard links once): what deleting it can free.
    pub allocated_bytes: u64,
    /// What Smolsweep may do with it.
    pub verdict: Verdict,
    /// One sentence a person understands.
    pub reason: String,
    /// Which opt-in class includes it, for `opt_in` findings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opt_in_class: Option<OptInClass>,
    /// Identity at scan time (absent when the path could not be stat'ed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<FileIdentity>,
    /// Whether the path is a directory (deleted recursively) rather than a single file.
    #[serde(default)]
    pub is_dir: bool,
    /// The root directory this finding lies under (deletion never leaves it).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::pathser::opt"
    )]
    pub root: Option<PathBuf>,
    /// Mount points found inside a directory finding (never walked into, never deleted through).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        with = "crate::pathser::many"
    )]
    pub mounts_inside: Vec<PathBuf>,
    /// For an orphan: what to re-read before deleting it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_recheck: Option<OwnerRecheck>,
    /// Upstream bugs this verdict guards against (`B10`: see the docs); never in the sentence.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refs: Vec<String>,
    /// The keep rule that protects it (`smolsweep keep list`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept: Option<String>,
    /// Newest modification time of anything in it (ns since the epoch; 0 unknown): what
    /// `--older-than` compares.
    #[serde(default)]
    pub newest_change_ns: i64,
    /// Processes using it right now, by the scan's one "in use" rule (`ProcIndex::in_use`);
    /// whatever its verdict, what `verify` names to end first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub used_by: Vec<u32>,
    /// Disks whose backing chain runs through it (a qcow2 overlay names it, directly or down
    /// the chain): it is deleted only after, or together with, every one of them.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        with = "crate::pathser::many"
    )]
    pub needed_by: Vec<PathBuf>,
    /// What reaches it from upstream's own records (a record, a lease, a disk's backing chain,
    /// a pause, a row's drive): while any of these holds, it is in no plan, whatever the flags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub held_by: Vec<Hold>,
}

impl Finding {
    /// A finding of `kind` at `path` with `verdict` and nothing else known: no owner, no
    /// bytes, no reason, no identity, a file not a directory, under no root, held by nothing.
    /// The rest is set with struct update syntax (`Finding { is_dir: true, ..Finding::new(…) }`).
    pub fn new(
        id: impl Into<String>,
        product: Product,
        kind: FindingKind,
        path: impl Into<PathBuf>,
        verdict: Verdict,
    ) -> Finding {
        Finding {
            id: id.into(),
            product,
            kind,
            path: path.into(),
            owner: None,
            apparent_bytes: 0,
            allocated_bytes: 0,
            verdict,
            reason: String::new(),
            opt_in_class: None,
            identity: None,
            is_dir: false,
            root: None,
            mounts_inside: Vec::new(),
            owner_recheck: None,
            refs: Vec::new(),
            kept: None,
            newest_change_ns: 0,
            used_by: Vec::new(),
            needed_by: Vec::new(),
            held_by: Vec::new(),
        }
    }
}

crate::table::closed_table! {
    /// How one thing holds another in the reference graph.
    pub enum Via ("reference") -> (&'static str,) {
        /// A qcow2 disk names it in its backing chain.
        Backing => "backing", ("backs onto it");
        /// A machine's `.pack-shared` leases this shared extraction.
        Lease => "lease", ("leases it");
        /// A shared extraction's artifact digest keys these copy-on-write bases.
        Digest => "digest", ("keeps its copy-on-write bases under its digest");
        /// A record of a shared extraction (`<crc8>.*`) belongs to the extraction.
        Sidecar => "sidecar", ("is the extraction this record belongs to");
        /// A pause record belongs to the paused machine's directory.
        Pause => "pause", ("is the paused machine this belongs to");
        /// A sandbox's inventory row names it as its root file system, kernel, initrd or drive.
        Drive => "drive", ("boots from it or attaches it");
    }
}

impl Via {
    /// The reference in words ("backs onto it").
    pub const fn what(self) -> &'static str {
        self.row().0
    }
}

/// What holds a path, and how (see [`Finding::held_by`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Hold {
    /// What holds it.
    pub by: Holder,
    /// How.
    pub via: Via,
    /// The file that declares the reference (the disk whose header names it, the `.pack-shared`
    /// file, the inventory), when it is not the holder itself.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::pathser::opt"
    )]
    pub through: Option<PathBuf>,
}

/// What holds a path: a path (a finding's, or one outside every finding, which nothing deletes),
/// or a record in an inventory.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Holder {
    /// A path.
    Path(#[serde(with = "crate::pathser::one")] PathBuf),
    /// A machine's or sandbox's record.
    Record {
        /// Whose inventory.
        product: Product,
        /// The machine name or sandbox id.
        name: String,
    },
}

/// Stable finding id: 16 hex characters of SHA-256 over product, kind and path.
pub fn finding_id(product: Product, kind: FindingKind, path: &std::path::Path) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(product.as_str().as_bytes());
    h.update([0]);
    h.update(kind.as_str().as_bytes());
    h.update([0]);
    h.update(path.as_os_str().as_encoded_bytes());
    let d = h.finalize();
    hex::encode(&d[..8])
}

/// A machine (smolvm) or sandbox (Celesto) from an inventory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Machine {
    /// Which product's inventory holds it.
    pub product: Product,
    /// The smolvm machine name or the Celesto sandbox id.
    pub name: String,
    /// The state as recorded (`running`, `stopped`, `created`, `paused`, ...).
    pub state: String,
    /// The VM process the record names, when it names one.
    pub pid: Option<u32>,
    /// Whether the recorded process is alive and is the same process (pid + start time).
    pub alive: bool,
    /// The state a person should see (`running`, `stopped`, `stale: recorded running, process gone`, ...).
    #[serde(default)]
    pub effective_state: String,
    /// The start time the record gives for `pid` (smolvm), so a reused pid is not taken for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid_start_time: Option<u64>,
    /// smolvm: an ephemeral machine (`machine run`), which its CLI deletes when it stops.
    #[serde(default)]
    pub ephemeral: bool,
    /// When it was created (seconds since the Unix epoch), when the record says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<i64>,
    /// The machine/sandbox directory or disk, when it exists.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::pathser::opt"
    )]
    pub dir: Option<PathBuf>,
    /// Bytes allocated to its directory or disk, where the scan measured them (0 otherwise).
    #[serde(default)]
    pub allocated_bytes: u64,
    /// Inventory this record came from.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::pathser::opt"
    )]
    pub db: Option<PathBuf>,
    /// The machine this one was branched from (smolvm's `golden`; `ls --json` calls it
    /// `parent_machine`). Deleting that machine takes this one with it (`--cascade`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branched_from: Option<String>,
    /// The keep rule that keeps it (an owner rule naming it, or a rule keeping something it
    /// owns): it is never stopped or deleted while the rule stands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept: Option<String>,
}

impl Machine {
    /// A record of `product` named `name` in `state` and nothing else known: no process, not
    /// alive, no shown state, not ephemeral, no creation time, directory, bytes, inventory,
    /// branch or keep rule. The rest is set with struct update syntax, as for
    /// [`Finding::new`].
    pub fn new(product: Product, name: impl Into<String>, state: impl Into<String>) -> Machine {
        Machine {
            product,
            name: name.into(),
            state: state.into(),
            pid: None,
            alive: false,
            effective_state: String::new(),
            pid_start_time: None,
            ephemeral: false,
            created_at: None,
            dir: None,
            allocated_bytes: 0,
            db: None,
            branched_from: None,
            kept: None,
        }
    }
}

/// Whether a VM process belongs to the HOME being scanned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// It uses this HOME's machine directories, disks or sockets.
    ThisHome,
    /// It belongs to another HOME (or none Smolsweep can tell): shown, never acted on.
    Foreign,
}

/// A VMM process of either product.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmProcess {
    /// Process id; with `start_time`, its identity.
    pub pid: u32,
    /// Linux: `/proc/<pid>/stat` field 22 (clock ticks since boot). macOS: seconds since epoch.
    pub start_time: u64,
    /// Which product's VMM it is.
    pub product: Product,
    /// What VMM it is (serialised as `smolvm.boot_vm`, `celesto.qemu`, ...).
    pub shape: ProcShape,
    /// Machine name or sandbox id.
    pub owner: Option<String>,
    /// No inventory record owns it.
    pub orphan: bool,
    /// Whether it belongs to the HOME being scanned.
    pub scope: Scope,
    /// Allocated bytes of deleted files it still holds open (0 where unreadable).
    pub held_deleted_bytes: u64,
    /// The user id it runs as.
    #[serde(default)]
    pub uid: u32,
    /// Its command name (`/proc/<pid>/comm`, `ps -o comm`).
    #[serde(default)]
    pub comm: String,
    /// Its command line, one element per argument.
    #[serde(default)]
    pub argv: Vec<String>,
    /// Paths this process names or holds open that matter for in-use checks
    /// (machine dir, disks, sockets, configs).
    #[serde(default, with = "crate::pathser::many")]
    pub paths: Vec<PathBuf>,
    /// Why the scanner attributed it the way it did.
    #[serde(default)]
    pub reason: String,
    /// Whether `/proc/<pid>/fd` could be read (held bytes are a lower bound otherwise).
    #[serde(default)]
    pub fds_readable: bool,
    /// The keep rule that keeps it (the VM of a kept machine or sandbox, or one using a kept
    /// path): never ended while the rule stands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept: Option<String>,
}

impl VmProcess {
    /// An orphan of this HOME: what `reap` ends, counts and notifies. The one rule every
    /// surface uses (another HOME's orphans are shown, never acted on).
    pub fn is_this_homes_orphan(&self) -> bool {
        self.reap_refusal(&[], false).is_none()
    }

    /// Why this HOME may not end the process (`None`: it may): the one rule the planner, the
    /// re-judge and every surface ask. Another HOME's is never signalled; a keep rule keeps it
    /// unless the plan overrides that rule; a process its record owns is stopped through its
    /// machine, unless `any_of_this_home` (an uninstall ends every VM process of this HOME).
    pub fn reap_refusal(
        &self,
        overrides: &[String],
        any_of_this_home: bool,
    ) -> Option<NotReapable> {
        if self.scope != Scope::ThisHome {
            return Some(NotReapable::OtherHome);
        }
        if let Some(rule) = self.kept.as_ref().filter(|k| !overrides.contains(k)) {
            return Some(NotReapable::Kept(rule.clone()));
        }
        (!self.orphan && !any_of_this_home).then(|| NotReapable::Owned(self.owner.clone()))
    }
}

/// Why a VM process may not be ended ([`VmProcess::reap_refusal`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotReapable {
    /// It runs for another HOME.
    OtherHome,
    /// A keep rule (its id) keeps it.
    Kept(String),
    /// Its record (the machine named, when known) owns it.
    Owned(Option<String>),
}

/// Per-product status in a report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProductReport {
    /// Which product.
    pub product: Product,
    /// Whether anything of it was found (an install, a state directory or an inventory).
    pub detected: bool,
    /// `ok` or `unknown` (an inventory could not be read).
    pub status: String,
    /// Named roots, for example `data_dir`, `image_dir`, `cache_root`.
    #[serde(with = "crate::pathser::map")]
    pub roots: std::collections::BTreeMap<String, PathBuf>,
    /// What kept the scan from reading it fully, one sentence each.
    pub problems: Vec<String>,
    /// Installed version, when it could be read without running anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The newest install found (every install counts: `PATH`, virtualenvs, pipx, uv tools,
    /// `~/.smolvm`, Homebrew) when it is newer than every version the rules were verified
    /// against: the scan's drift guard decided it, and every surface reads it from here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub newer: Option<String>,
}

/// The report's sums, recomputed from findings and processes ([`ScanReport::compute_totals`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    /// Allocated bytes of the reclaimable findings: what `prune` frees by default.
    pub reclaimable_allocated_bytes: u64,
    /// Allocated bytes of the opt-in findings (freed only when their class is asked for).
    pub opt_in_allocated_bytes: u64,
    /// Apparent bytes of the reclaimable findings.
    #[serde(default)]
    pub reclaimable_apparent_bytes: u64,
    /// Allocated bytes of what is protected (alive, in use or kept).
    #[serde(default)]
    pub protected_allocated_bytes: u64,
    /// Allocated bytes of what the scanner could not verify.
    #[serde(default)]
    pub unknown_allocated_bytes: u64,
    /// How many findings are reclaimable.
    #[serde(default)]
    pub reclaimable_count: u64,
    /// How many findings are opt-in.
    #[serde(default)]
    pub opt_in_count: u64,
    /// How many VM processes are this HOME's orphans (what `reap` ends).
    #[serde(default)]
    pub orphan_process_count: u64,
    /// Allocated bytes of deleted files those orphans still hold open (freed when they end).
    #[serde(default)]
    pub held_deleted_bytes: u64,
}

/// The whole scan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScanReport {
    /// `smolsweep.scan/1` ([`SCAN_SCHEMA`]).
    pub schema: String,
    /// The HOME scanned.
    #[serde(with = "crate::pathser::one")]
    pub home: PathBuf,
    /// The platform whose layouts were used.
    pub platform: Platform,
    /// Each product's status, roots and version.
    pub products: Vec<ProductReport>,
    /// Every path found, with its verdict and reason.
    pub findings: Vec<Finding>,
    /// Every machine and sandbox the inventories record.
    pub machines: Vec<Machine>,
    /// Every VMM process of either product on the machine.
    pub processes: Vec<VmProcess>,
    /// The sums.
    pub totals: Totals,
    /// Seconds since the Unix epoch when the scan started.
    #[serde(default)]
    pub scanned_at: u64,
    /// The same instant in nanoseconds (what "changed since the scan" is compared with).
    #[serde(default)]
    pub scanned_at_ns: u64,
    /// How long the scan took, in milliseconds.
    #[serde(default)]
    pub duration_ms: u64,
    /// Space inside the disks of stopped machines and saved disks that compacting could give
    /// back: its own figure, opt-in, never in the reclaimable total.
    #[serde(default)]
    pub compact: CompactReport,
}

/// What compacting one disk could give back: bytes allocated to the image on the host that
/// the guest's file system calls free. Read-only; estimated for the disks of machines and
/// sandboxes that are not running and for saved disks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiskEstimate {
    /// Which product's disk it is.
    pub product: Product,
    /// The machine name or sandbox id it belongs to (a saved disk: the deleted sandbox's id).
    pub owner: Option<String>,
    /// A saved disk (Celesto's `.retained`), rather than the disk of a machine that exists.
    #[serde(default)]
    pub saved: bool,
    /// The disk image.
    #[serde(with = "crate::pathser::one")]
    pub path: PathBuf,
    /// `raw` or `qcow2`, when the file could be opened.
    pub format: Option<String>,
    /// Bytes allocated to the image on the host (`st_blocks` × 512; 0 when unreadable).
    pub allocated_bytes: u64,
    /// Of those, bytes free in the guest's file system that compacting would release (0 when
    /// it cannot tell).
    pub compactable_bytes: u64,
    /// Free bytes of the guest's file system.
    #[serde(default)]
    pub guest_free_bytes: u64,
    /// Bytes the estimate read from the image and its backing chain (an estimate reused from
    /// an earlier scan of the same files in this process gives what that scan read; 0 when it
    /// cannot tell).
    #[serde(default)]
    pub read_bytes: u64,
    /// Why it cannot tell, one sentence completing "cannot tell: …" (absent when it can).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cannot_tell: Option<String>,
    /// What compacting it needs that is not installed, one sentence naming the tools and what
    /// to install ("qemu-io is not installed: install QEMU's tools (…)"); absent when every
    /// tool is there. The estimate is shown all the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needs: Option<String>,
    /// The keep rule that keeps it (its machine's or sandbox's, or one on the disk or what
    /// holds it): a kept disk is never estimated, counted, offered or planned for compaction,
    /// exactly as a kept item is never deleted (absent when no rule keeps it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept: Option<String>,
}

/// Every disk estimate of a scan, with their sums.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactReport {
    /// One per disk estimated.
    pub disks: Vec<DiskEstimate>,
    /// Sum of their compactable bytes.
    pub compactable_bytes: u64,
    /// How many disks have some compactable bytes.
    pub compactable_disks: u64,
    /// How many disks it cannot tell for.
    pub cannot_tell_disks: u64,
}

impl CompactReport {
    /// The report of `disks`, with their sums.
    pub fn of(disks: Vec<DiskEstimate>) -> Self {
        // A kept disk counts nowhere (it is never estimated: its figures are 0 anyway).
        let open = || disks.iter().filter(|d| d.kept.is_none());
        CompactReport {
            compactable_bytes: open().map(|d| d.compactable_bytes).sum(),
            compactable_disks: open().filter(|d| d.compactable_bytes > 0).count() as u64,
            cannot_tell_disks: open().filter(|d| d.cannot_tell.is_some()).count() as u64,
            disks,
        }
    }

    /// Compactable bytes of the disks of one machine or sandbox.
    pub fn of_machine(&self, product: Product, name: &str) -> u64 {
        self.disks
            .iter()
            .filter(|d| d.kept.is_none())
            .filter(|d| d.product == product && d.owner.as_deref() == Some(name))
            .map(|d| d.compactable_bytes)
            .sum()
    }
}

impl ScanReport {
    /// Each finding's index by its path.
    pub(crate) fn index_by_path(&self) -> std::collections::HashMap<&std::path::Path, usize> {
        self.findings
            .iter()
            .enumerate()
            .map(|(i, f)| (f.path.as_path(), i))
            .collect()
    }

    /// Recompute the totals from findings and processes.
    pub fn compute_totals(&mut self) {
        let mut t = Totals::default();
        for f in &self.findings {
            match f.verdict {
                Verdict::Reclaimable => {
                    t.reclaimable_allocated_bytes += f.allocated_bytes;
                    t.reclaimable_apparent_bytes += f.apparent_bytes;
                    t.reclaimable_count += 1;
                }
                Verdict::OptIn => {
                    t.opt_in_allocated_bytes += f.allocated_bytes;
                    t.opt_in_count += 1;
                }
                Verdict::Protected => t.protected_allocated_bytes += f.allocated_bytes,
                Verdict::Unknown => t.unknown_allocated_bytes += f.allocated_bytes,
            }
        }
        for p in &self.processes {
            if p.is_this_homes_orphan() {
                t.orphan_process_count += 1;
            }
            t.held_deleted_bytes += p.held_deleted_bytes;
        }
        self.totals = t;
    }

    /// The finding with this id.
    pub fn finding(&self, id: &str) -> Option<&Finding> {
        self.findings.iter().find(|f| f.id == id)
    }
}

/// Human byte count: `1.5 GB` style, decimal units as desktop file managers show them.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["B", "kB", "MB", "GB", "TB", "PB"];
    if n < 1000 {
        return format!("{n} B");
    }
    let mut v = n as f64;
    let mut i = 0;
    while v >= 1000.0 && i < UNITS.len() - 1 {
        v /= 1000.0;
        i += 1;
    }
    if v >= 100.0 {
        format!("{v:.0} {}", UNITS[i])
    } else {
        format!("{v:.1} {}", UNITS[i])
    }
}

/// The machine or sandbox `name` names: `smolvm:NAME` or `celesto:ID`, or a bare name that
/// only one product has.
pub fn find_machine<'r>(report: &'r ScanReport, name: &str) -> Result<&'r Machine, String> {
    let (product, bare) = match name.split_once(':') {
        Some(("smolvm", n)) => (Some(Product::Smolvm), n),
        Some(("celesto", n)) => (Some(Product::Celesto), n),
        _ => (None, name),
    };
    let hits: Vec<&Machine> = report
        .machines
        .iter()
        .filter(|m| m.name == bare && product.is_none_or(|p| m.product == p))
        .collect();
    match hits.as_slice() {
        [m] => Ok(m),
        [] => Err("no machine or sandbox with that name in the scan".into()),
        _ => Err(format!(
            "both a Celesto sandbox and a smolvm machine are called '{bare}': name it celesto:{bare} or smolvm:{bare}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_serialise_to_the_contract_names() {
        let v: Vec<String> = [
            Verdict::Reclaimable,
            Verdict::OptIn,
            Verdict::Protected,
            Verdict::Unknown,
        ]
        .iter()
        .map(|v| serde_json::to_string(v).unwrap())
        .collect();
        assert_eq!(
            v,
            [
                "\"reclaimable\"",
                "\"opt_in\"",
                "\"protected\"",
                "\"unknown\""
            ]
        );
        assert_eq!(
            serde_json::to_string(&Scope::ThisHome).unwrap(),
            "\"this_home\""
        );
    }

    #[test]
    fn finding_ids_are_stable_and_distinct() {
        let a = finding_id(
            Product::Celesto,
            crate::model::FindingKind::CelestoOrphanDisk,
            "/x/a".as_ref(),
        );
        assert_eq!(
            a,
            finding_id(
                Product::Celesto,
                crate::model::FindingKind::CelestoOrphanDisk,
                "/x/a".as_ref()
            )
        );
        assert_ne!(
            a,
            finding_id(
                Product::Celesto,
                crate::model::FindingKind::CelestoOrphanLog,
                "/x/a".as_ref()
            )
        );
        assert_eq!(a.len(), 16);
    }

    #[test]
    fn human_bytes_reads_well() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(999), "999 B");
        assert_eq!(human_bytes(1_500), "1.5 kB");
        assert_eq!(human_bytes(2_000_000_000), "2.0 GB");
        assert_eq!(human_bytes(123_456_789), "123 MB");
    }
}
