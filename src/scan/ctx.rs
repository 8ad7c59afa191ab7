//! What every part of one scan shares: its options, its context (sizer, process index, locks,
//! what it found so far), findings before they are measured, and the few words both products'
//! scans say alike.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::env::EnvSnapshot;
use crate::install::Install;
use crate::locks::HeldLocks;
use crate::model::*;
use crate::size::Sizer;

use super::procindex::{ProcIndex, Users};

/// What a scan looks at.
#[derive(Debug, Clone)]
pub struct ScanOptions {
    /// The environment the roots are resolved from (HOME, XDG and product variables).
    pub env: EnvSnapshot,
    /// Which product layouts apply (Linux or macOS paths).
    pub platform: Platform,
    /// A machine directory younger than this is never called dangling (a create may be under way).
    pub age_guard: Duration,
    /// The instant the scan judges ages against (and records as `scanned_at`).
    pub now: SystemTime,
}

impl ScanOptions {
    /// Options for this process's own environment and platform.
    pub fn from_env() -> anyhow::Result<Self> {
        Ok(ScanOptions {
            env: EnvSnapshot::capture()?,
            platform: Platform::current(),
            age_guard: Duration::from_secs(120),
            now: SystemTime::now(),
        })
    }
}

/// Shared state of one scan.
pub(crate) struct Ctx<'a> {
    pub opts: &'a ScanOptions,
    pub sizer: Sizer,
    pub procs: ProcIndex,
    pub locks: HeldLocks,
    pub installs: Vec<Install>,
    pub findings: Vec<Finding>,
    /// The paths of `findings`, for "one finding per path".
    pub finding_paths: HashSet<PathBuf>,
    pub machines: Vec<Machine>,
    pub products: Vec<ProductReport>,
    /// The qcow2 headers and backing files this scan has read (each read once per scan).
    pub chains: crate::qcow2::ChainMemo,
    /// References upstream's records declare (a lease, a digest, a pause, a row's drive), by
    /// the path they reach: the reference graph's edges besides backing chains (`crate::reach`).
    pub holds: Vec<(PathBuf, Hold)>,
}

impl Ctx<'_> {
    /// Declare that `by` holds `target` (`via`, declared in `through`).
    pub(crate) fn hold(&mut self, target: &Path, by: Holder, via: Via, through: Option<&Path>) {
        self.holds.push((
            target.to_path_buf(),
            Hold {
                by,
                via,
                through: through.map(Path::to_path_buf),
            },
        ));
    }

    /// An inventory read afresh (`fresh`), or, in an incremental rescan, its last reading
    /// while its files are unchanged (`reuse`, from [`crate::inventory::cache`]).
    pub(crate) fn read_inventory<T>(
        &self,
        db: &Path,
        fresh: fn(&Path) -> Result<T, crate::inventory::InventoryError>,
        reuse: fn(&Path) -> Result<T, crate::inventory::InventoryError>,
    ) -> Result<T, crate::inventory::InventoryError> {
        if self.sizer.has_memo() {
            reuse(db)
        } else {
            fresh(db)
        }
    }
}

/// A finding before it is measured.
pub(crate) struct Draft {
    pub product: Product,
    pub kind: FindingKind,
    pub path: PathBuf,
    pub owner: Option<String>,
    pub verdict: Verdict,
    pub reason: String,
    pub opt_in_class: Option<OptInClass>,
    pub root: Option<PathBuf>,
    pub owner_recheck: Option<OwnerRecheck>,
}

impl Draft {
    pub fn new(product: Product, kind: FindingKind, path: impl Into<PathBuf>) -> Self {
        Draft {
            product,
            kind,
            path: path.into(),
            owner: None,
            verdict: Verdict::Unknown,
            reason: String::new(),
            opt_in_class: None,
            root: None,
            owner_recheck: None,
        }
    }
    /// Re-read `inventories` before deleting this, and keep it if `record` appears in one.
    pub(crate) fn recheck(mut self, inventories: &[PathBuf], record: OwnerRecord) -> Self {
        self.owner_recheck = Some(OwnerRecheck {
            inventories: inventories.to_vec(),
            record,
        });
        self
    }
    pub fn owner(mut self, o: impl Into<String>) -> Self {
        self.owner = Some(o.into());
        self
    }
    pub(crate) fn owner_opt(mut self, o: Option<String>) -> Self {
        self.owner = o;
        self
    }
    pub fn verdict(mut self, v: Verdict, reason: impl Into<String>) -> Self {
        self.verdict = v;
        self.reason = reason.into();
        self
    }
    pub fn opt_in(mut self, class: OptInClass, reason: impl Into<String>) -> Self {
        self.verdict = Verdict::OptIn;
        self.opt_in_class = Some(class);
        self.reason = reason.into();
        self
    }
    pub fn root(mut self, r: &Path) -> Self {
        self.root = Some(r.to_path_buf());
        self
    }
}

impl Ctx<'_> {
    /// Measure and record a finding; mount points inside it become findings of their own.
    pub fn add(&mut self, d: Draft) {
        if !self.finding_paths.insert(d.path.clone()) {
            return; // one finding per path
        }
        let (apparent, allocated, identity, is_dir, mounts, newest) =
            match self.sizer.measure(&d.path) {
                Ok(m) => {
                    let is_dir = m.identity.map(|i| i.is_dir()).unwrap_or(false);
                    let newest = i64::try_from(m.newest_mtime_ns.max(0)).unwrap_or(i64::MAX);
                    (
                        m.apparent,
                        m.allocated,
                        m.identity,
                        is_dir,
                        m.mounts,
                        newest,
                    )
                }
                Err(_) => (0, 0, None, false, Vec::new(), 0),
            };
        let mut verdict = d.verdict;
        let mut reason = d.reason;
        let mut opt_in_class = d.opt_in_class;
        if identity.is_none() && matches!(verdict, Verdict::Reclaimable | Verdict::OptIn) {
            verdict = Verdict::Unknown;
            opt_in_class = None;
            reason = format!("{reason} It could not be examined, so it is left alone.");
        }
        // The one "in use" rule, over every kind: whatever a process uses is never reclaimed.
        let devino = identity.map(|i| (i.dev, i.ino));
        let deletable = matches!(verdict, Verdict::Reclaimable | Verdict::OptIn);
        // Only what would otherwise be deleted asks the kernel about holders it cannot see.
        let users = match deletable {
            true => self.procs.users(&d.path, devino),
            false => Users {
                pids: self.procs.in_use(&d.path, devino),
                unseen: false,
            },
        };
        if deletable && !users.is_empty() {
            verdict = Verdict::Protected;
            opt_in_class = None;
            reason = format!("{reason} {}", in_use_sentence(&users));
        }
        for m in &mounts {
            self.finding_paths.insert(m.clone());
            self.findings.push(Finding {
                owner: d.owner.clone(),
                reason: "A file system is mounted here; Smolsweep never walks into or deletes through a mount point.".into(),
                identity: crate::size::identity(m).ok(),
                is_dir: true,
                root: d.root.clone(),
                ..Finding::new(finding_id(d.product, FindingKind::mount_point(d.product), m), d.product, FindingKind::mount_point(d.product), m.clone(), Verdict::Protected)
            });
        }
        let (reason, refs) = crate::upstream::split_refs(&reason);
        self.findings.push(Finding {
            owner: d.owner,
            apparent_bytes: apparent,
            allocated_bytes: allocated,
            reason,
            opt_in_class,
            identity,
            is_dir,
            root: d.root,
            mounts_inside: mounts,
            owner_recheck: d.owner_recheck,
            refs,
            newest_change_ns: newest,
            used_by: users.pids,
            ..Finding::new(
                finding_id(d.product, d.kind, &d.path),
                d.product,
                d.kind,
                d.path,
                verdict,
            )
        });
    }

    pub fn now(&self) -> SystemTime {
        self.opts.now
    }
}

/// Why something `users` use is left alone (one sentence, for every surface).
pub(crate) fn in_use_sentence(users: &Users) -> String {
    if users.pids.is_empty() {
        return "But a process Smolsweep cannot see (another user's, or one in another container) has it open right now, so it is left alone.".to_string();
    }
    let pids = &users.pids;
    let list = pid_list(pids);
    let (s, is) = if pids.len() == 1 {
        ("", "is")
    } else {
        ("es", "are")
    };
    format!("But process{s} {list} {is} using it right now, so it is left alone.")
}

/// Modification time in ns since the epoch.
pub(crate) fn mtime_ns(meta: &std::fs::Metadata) -> i128 {
    use std::os::unix::fs::MetadataExt;
    meta.mtime() as i128 * 1_000_000_000 + meta.mtime_nsec() as i128
}

/// `a named pipe` → `A named pipe`.
pub(crate) fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

pub(crate) fn pid_list(pids: &[u32]) -> String {
    pids.iter()
        .map(|p| p.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
