//! The scan: roots → inventories → processes → findings with verdicts and reasons.
//!
//! A scan is read-only: it opens databases read-only, lists directories with `O_NOATIME`,
//! reads `/proc`, and never runs either product's CLI (`smolvm machine ls` deletes directories,
//! `celesto sandbox prune --dry-run` writes its database).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime};

use crate::env::EnvSnapshot;
use crate::install::Install;
use crate::locks::HeldLocks;
use crate::model::*;

mod attribute;
mod celesto;
pub(crate) mod ctx;
pub mod memo;
pub(crate) mod procindex;
mod smolvm;
mod story;
pub(crate) mod version;

/// Watching the VM processes a scan found, to hear the moment one exits (the app rescans then).
pub use crate::procs::exits::ExitWatch;
/// The walk a scan sizes paths with (hard links and overlaps counted once per sizer), for tools
/// that measure a tree the way the scan does.
pub use crate::size::{Measure, Sizer};
/// Whether a file name is an inventory database or a side file that changes with its content.
pub use crate::upstream::is_inventory_content;
pub use ctx::ScanOptions;
pub(crate) use ctx::{in_use_sentence, Ctx};
pub(crate) use procindex::ProcIndex;

/// The processes of this machine, read the way this platform allows.
pub(crate) fn list_processes() -> Vec<crate::procs::RawProcess> {
    crate::procs::list()
}

/// Scan everything both products leave behind. Read-only: writes nothing, changes no timestamp.
///
/// The process table is read in two steps: every process's identity, command line and working
/// directories first (and everything of the VMM-shaped ones), the rest of it (open files by
/// identity, maps) the first time the kernel says something the scan asks about is held; a
/// descriptor's name only when a question needs it. A HOME with nothing of SmolVM asks no
/// such question and never pays for the rest.
pub fn scan(opts: &ScanOptions) -> ScanReport {
    scan_sized(
        opts,
        || ProcIndex::deferred(crate::procs::list_identities(), crate::procs::holdings),
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
    let locks = HeldLocks::start().asking(lock_file_opened);
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
        holds: Vec::new(),
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
    let mut processes = attribute::attribute(&ctx, &cel, &smol);
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
    let mut holds = std::mem::take(&mut ctx.holds);
    holds.extend(crate::chains::link(&report, &mut ctx.chains));
    crate::reach::attach(&mut report, holds);
    crate::reach::hard_links(&mut report);
    crate::keep::apply_for(&mut report, &opts.env);
    story::tell(&mut report);
    report.compact = crate::compact::survey(&report, &opts.env);
    report.compute_totals();
    report
}

/// Whether any open description of the lock file at `path` (with this identity) may exist
/// anywhere, by the kernel's own count ([`crate::procs::holders`]): a file nothing has open
/// holds no lock, and the lock table need not be read (and waited for) to know it.
pub(crate) fn lock_file_opened(path: &Path, devino: (u64, u64)) -> bool {
    let mut one = 1;
    crate::procs::holders(path, Some(devino), &mut one) != crate::procs::Holders::Nobody
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
