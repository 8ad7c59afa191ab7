//! The scan: roots → inventories → processes → findings with verdicts and reasons.
//!
//! A scan is read-only: it opens databases read-only, lists directories with `O_NOATIME`,
//! reads `/proc`, and never runs either product's CLI (`smolvm machine ls` deletes directories,
//! `celesto sandbox prune --dry-run` writes its database).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use crate::env::EnvSnapshot;
use crate::install::Install;
use crate::locks::HeldLocks;
use crate::model::*;

mod celesto;
pub mod memo;
pub(crate) mod procindex;
mod smolvm;
pub(crate) mod version;

/// Watching the VM processes a scan found, to hear the moment one exits (the app rescans then).
pub use crate::procs::exits::ExitWatch;
/// The walk a scan sizes paths with (hard links and overlaps counted once per sizer), for tools
/// that measure a tree the way the scan does.
pub use crate::size::{Measure, Sizer};
/// Whether a file name is an inventory database or a side file that changes with its content.
pub use crate::upstream::is_inventory_content;
pub(crate) use procindex::ProcIndex;

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
}

impl Ctx<'_> {
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
        let users = self.procs.in_use(&d.path, identity.map(|i| (i.dev, i.ino)));
        if matches!(verdict, Verdict::Reclaimable | Verdict::OptIn) && !users.is_empty() {
            verdict = Verdict::Protected;
            opt_in_class = None;
            reason = format!("{reason} {}", in_use_sentence(&users));
        }
        for m in &mounts {
            self.finding_paths.insert(m.clone());
            self.findings.push(Finding {
                id: finding_id(d.product, FindingKind::mount_point(d.product), m),
                product: d.product,
                kind: FindingKind::mount_point(d.product),
                path: m.clone(),
                owner: d.owner.clone(),
                apparent_bytes: 0,
                allocated_bytes: 0,
                verdict: Verdict::Protected,
                reason: "A file system is mounted here; Smolsweep never walks into or deletes through a mount point.".into(),
                opt_in_class: None,
                identity: crate::size::identity(m).ok(),
                is_dir: true,
                root: d.root.clone(),
                mounts_inside: Vec::new(),
                owner_recheck: None,
                refs: Vec::new(),
                kept: None,
                newest_change_ns: 0,
                used_by: Vec::new(),
                needed_by: Vec::new(),
            });
        }
        let (reason, refs) = crate::upstream::split_refs(&reason);
        self.findings.push(Finding {
            id: finding_id(d.product, d.kind, &d.path),
            product: d.product,
            kind: d.kind,
            path: d.path,
            owner: d.owner,
            apparent_bytes: apparent,
            allocated_bytes: allocated,
            verdict,
            reason,
            opt_in_class,
            identity,
            is_dir,
            root: d.root,
            mounts_inside: mounts,
            owner_recheck: d.owner_recheck,
            refs,
            kept: None,
            newest_change_ns: newest,
            used_by: users,
            needed_by: Vec::new(),
        });
    }

    pub fn now(&self) -> SystemTime {
        self.opts.now
    }
}

/// Why something used by `pids` is left alone (one sentence, for every surface).
pub(crate) fn in_use_sentence(pids: &[u32]) -> String {
    let list = pids
        .iter()
        .map(|p| p.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let (s, is) = if pids.len() == 1 {
        ("", "is")
    } else {
        ("es", "are")
    };
    format!("But process{s} {list} {is} using it right now, so it is left alone.")
}

/// The processes of this machine, read the way this platform allows.
pub(crate) fn list_processes() -> Vec<crate::procs::RawProcess> {
    crate::procs::list()
}

/// Scan everything both products leave behind. Read-only: writes nothing, changes no timestamp.
///
/// The process table is read in two steps: every process's identity and command line first
/// (and everything of the VMM-shaped ones), the rest of it (open files, maps, working
/// directories of every process) the first time the scan asks whether a path is in use. A HOME
/// with nothing of SmolVM asks no such question and never pays for the rest.
pub fn scan(opts: &ScanOptions) -> ScanReport {
    scan_sized(
        opts,
        || ProcIndex::deferred(crate::procs::list_identities(), crate::procs::list),
        Sizer::new(),
    )
}

/// [`scan`] with a given process list (tests, and macOS `ps` fixtures).
pub fn scan_with(opts: &ScanOptions, processes: Vec<crate::procs::RawProcess>) -> ScanReport {
    let euid = opts.env.euid;
    scan_sized(opts, || ProcIndex::build(processes, euid), Sizer::new())
}

/// [`scan_with`] measuring with `sizer` (a fresh one, or one reusing a [`memo::ScanMemo`]).
pub(crate) fn scan_sized(
    opts: &ScanOptions,
    processes: impl FnOnce() -> ProcIndex,
    sizer: Sizer,
) -> ScanReport {
    let started = Instant::now();
    // First, so the lock table's wait overlaps reading the process table.
    let locks = HeldLocks::start();
    let procs = processes();
    let mut ctx = Ctx {
        opts,
        sizer,
        procs,
        locks,
        installs: crate::install::detect_installs(opts.platform, &opts.env),
        findings: Vec::new(),
        finding_paths: HashSet::new(),
        machines: Vec::new(),
        products: Vec::new(),
        chains: crate::qcow2::ChainMemo::default(),
    };
    let cel = celesto::scan(&mut ctx);
    let smol = smolvm::scan(&mut ctx);
    if ctx
        .products
        .iter()
        .any(|p| p.product == Product::Smolvm && p.detected)
    {
        smolvm::scan_tmp_trees(&mut ctx);
    }
    if ctx
        .products
        .iter()
        .any(|p| p.product == Product::Celesto && p.detected)
    {
        celesto::scan_tmp_restore_image(&mut ctx);
    }
    let mut processes = procindex::attribute(&ctx, &cel, &smol);
    for p in &mut processes {
        p.reason = crate::upstream::split_refs(&p.reason).0;
    }

    let mut findings = std::mem::take(&mut ctx.findings);
    findings.sort_by(|a, b| (a.product, &a.kind, &a.path).cmp(&(b.product, &b.kind, &b.path)));
    let mut report = ScanReport {
        schema: SCAN_SCHEMA.to_string(),
        home: opts.env.home.clone(),
        platform: opts.platform,
        products: std::mem::take(&mut ctx.products),
        findings,
        machines: std::mem::take(&mut ctx.machines),
        processes,
        totals: Totals::default(),
        scanned_at: opts
            .now
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        scanned_at_ns: opts
            .now
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0),
        duration_ms: started.elapsed().as_millis() as u64,
        compact: Default::default(),
    };
    report.products.sort_by_key(|p| p.product);
    celesto_machine_bytes(&mut report);
    drift_guard(&mut report, &opts.env, &ctx.installs);
    crate::chains::link(&mut report, &mut ctx.chains);
    crate::keep::apply_for(&mut report, &opts.env);
    report.compact = crate::compact::survey(&report);
    report.compute_totals();
    report
}

/// A Celesto sandbox's size is what `celesto sandbox delete` removes with it: its disk, the
/// disk's companion files and its log (found as its findings in its own data directory).
fn celesto_machine_bytes(report: &mut ScanReport) {
    const OWNED: [FindingKind; 3] = [
        FindingKind::CelestoSandboxDisk,
        FindingKind::CelestoSandboxDiskCompanion,
        FindingKind::CelestoSandboxLog,
    ];
    let findings = &report.findings;
    for m in report
        .machines
        .iter_mut()
        .filter(|m| m.product == Product::Celesto)
    {
        let data_dir = m.db.as_deref().and_then(Path::parent);
        m.allocated_bytes = findings
            .iter()
            .filter(|f| OWNED.contains(&f.kind) && f.owner.as_deref() == Some(m.name.as_str()))
            .filter(|f| data_dir.is_none_or(|d| f.path.starts_with(d)))
            .map(|f| f.allocated_bytes)
            .sum();
    }
}

/// The variable that accepts, per product, the risk of acting on a version newer than the ones
/// the rules were verified against: `SMOLSWEEP_ACCEPT_NEWER=celesto,smolvm`.
pub(crate) const ACCEPT_NEWER_VAR: &str = "SMOLSWEEP_ACCEPT_NEWER";

/// Products accepted by the `--accept-newer` flag or the app's setting, for every scan and
/// re-judge of this process (in addition to [`ACCEPT_NEWER_VAR`]).
static ACCEPTED_NEWER: std::sync::RwLock<Vec<String>> = std::sync::RwLock::new(Vec::new());

/// Accept, for this process, the risk of judging these products (`celesto`, `smolvm`, `all`)
/// with the newest rules Smolsweep knows although their installed version is newer. Replaces
/// what was accepted before.
pub fn accept_newer(products: &[String]) {
    if let Ok(mut a) = ACCEPTED_NEWER.write() {
        *a = products.iter().map(|p| p.to_ascii_lowercase()).collect();
    }
}

/// A product installed in a version newer than every verified one is shown, but nothing of it
/// is reclaimable and none of its processes is an orphan to end, unless the user accepted the
/// risk for that product: its layout or inventory may have changed under the rules.
fn drift_guard(report: &mut ScanReport, env: &EnvSnapshot, installs: &[Install]) {
    let mut accepted: Vec<String> = env
        .var(ACCEPT_NEWER_VAR)
        .map(|v| {
            v.split(',')
                .map(|p| p.trim().to_ascii_lowercase())
                .collect()
        })
        .unwrap_or_default();
    if let Ok(more) = ACCEPTED_NEWER.read() {
        accepted.extend(more.iter().cloned());
    }
    for pr in &mut report.products {
        let Some((v, newest, at)) = newest_drift(pr, installs) else {
            continue;
        };
        pr.newer = Some(v.clone());
        let v = match at {
            Some(at) => format!("{v} (at {})", crate::pathser::shown(&at)),
            None => v,
        };
        if accepted
            .iter()
            .any(|a| a == pr.product.as_str() || a == "all")
        {
            pr.problems.push(format!(
                "{} {v} is newer than the versions Smolsweep knows ({newest}); judged with the rules for {newest} because you accepted the risk.",
                pr.product.display_name()
            ));
            continue;
        }
        let banner = format!(
            "{} {v} is newer than the versions Smolsweep knows (up to {newest}); its leftovers are shown, nothing of it is reclaimable until Smolsweep is updated (--accept-newer {} accepts the risk).",
            pr.product.display_name(),
            pr.product.as_str()
        );
        pr.status = "unknown".into();
        pr.problems.push(banner.clone());
        for f in report
            .findings
            .iter_mut()
            .filter(|f| f.product == pr.product)
        {
            if matches!(f.verdict, Verdict::Reclaimable | Verdict::OptIn) {
                f.verdict = Verdict::Unknown;
                f.opt_in_class = None;
                f.reason = format!("{} {banner}", f.reason);
            }
        }
        for p in report
            .processes
            .iter_mut()
            .filter(|p| p.product == pr.product)
        {
            if p.orphan {
                p.orphan = false;
                p.reason = format!("{} {banner}", p.reason);
            }
        }
    }
}

/// The newest install of `pr`'s product that is newer than every verified version: its
/// version, the newest verified one, and where it is installed. Every install counts (PATH,
/// virtualenvs, pipx, uv tools, `~/.smolvm`, Homebrew), not only the first one found, and the
/// version the report shows too (an install found without a path).
fn newest_drift(
    pr: &ProductReport,
    installs: &[Install],
) -> Option<(String, &'static str, Option<PathBuf>)> {
    let mut found: Vec<(String, &'static str, Option<PathBuf>)> = installs
        .iter()
        .filter(|i| i.product == pr.product)
        .filter_map(|i| {
            let v = i.version.clone()?;
            let newest = crate::upstream::drift_of(pr.product, i.distribution.as_deref(), &v)?;
            Some((
                v,
                newest,
                Some(i.executable.clone().unwrap_or_else(|| i.path.clone())),
            ))
        })
        .collect();
    if let Some(v) = &pr.version {
        if let Some(newest) = crate::upstream::drift(pr.product, v) {
            if !found.iter().any(|(fv, ..)| fv == v) {
                found.push((v.clone(), newest, None));
            }
        }
    }
    found
        .into_iter()
        .max_by(|a, b| crate::upstream::compare(&a.0, &b.0))
}

/// Modification time in ns since the epoch.
pub(crate) fn mtime_ns(meta: &std::fs::Metadata) -> i128 {
    use std::os::unix::fs::MetadataExt;
    meta.mtime() as i128 * 1_000_000_000 + meta.mtime_nsec() as i128
}
