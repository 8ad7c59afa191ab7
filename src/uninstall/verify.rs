//! The proof: a native, read-only `verify-clean`.
//!
//! Like upstream's teardown `verify-clean.sh`, but:
//! * machines are read from the inventories (in-memory snapshots); `smolvm machine ls` is never
//!   run (it deletes ephemeral machines' directories);
//! * VM directories are looked for where smolvm really keeps them for every user root set,
//!   `SMOLVM_DATA_DIR` included (hazard 19: upstream looks in `$SMOLVM_DATA_DIR/vms`);
//! * the exclusions are complete (what the layout table says a `vms/` holds besides machines:
//!   `_shared`, `_restore-base`, `_restore-checkpoints`, `_cow-bases`, `checkpoint-unpack`,
//!   dotfiles and lock files), and empty directories are not state (hazard 29: `ls vms | wc -l`
//!   is not a leak check);
//! * VM processes are found by shape (comm `libkrun VM` / `VM:*`, argv `_boot-vm`, Celesto VMMs),
//!   never by `pgrep -f`, and tied to the audited HOME by their paths;
//! * the audited HOME is named in the output (hazard 28: a check run under another HOME proves
//!   nothing about this one).

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::env::EnvSnapshot;
use crate::model::{human_bytes, Platform, Product};
use crate::procs::RawProcess;
use crate::roots::{celesto_roots, is_system_path, smolvm_roots, user_smolvm_sets};

use super::plan::UninstallPlan;
use super::preflight::{read_celesto_rows, read_smolvm_machines};

/// Schema name of the proof.
pub(crate) const PROOF_SCHEMA: &str = "smolsweep.verify/1";

/// What to check.
#[derive(Debug, Clone, Default)]
pub struct VerifyOptions {
    /// Products to check (both when empty).
    pub products: Vec<Product>,
    /// Directories that must be gone (or hold nothing but empty directories).
    pub removed_roots: Vec<PathBuf>,
    /// `--protected DIR --since DATE`: nothing under DIR modified (mtime or ctime) after DATE.
    pub protected: Option<(PathBuf, SystemTime)>,
}

impl VerifyOptions {
    /// The proof after an uninstall of `plan`: its products, and its removed roots must be
    /// gone (no protected directory). Every surface takes the proof after a run with these.
    pub fn after(plan: &UninstallPlan) -> VerifyOptions {
        VerifyOptions {
            products: plan.products.clone(),
            removed_roots: plan.removed_roots.clone(),
            protected: None,
        }
    }
}

/// Something still there, and what removes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Remaining {
    /// What is left, as a person reads it.
    pub what: String,
    /// The command that removes it.
    pub fix: String,
}

/// One check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Check {
    /// The check's name in the `key=value` proof (`smolvm.launcher`).
    pub key: String,
    /// `none`, `clean`, `ok`, `not_checked`, or what was found.
    pub value: String,
    /// Whether the check passed.
    pub ok: bool,
    /// What is left.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remaining: Vec<Remaining>,
}

/// The proof.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proof {
    /// The proof's schema name.
    pub schema: String,
    /// The HOME the proof is about.
    pub audited_home: PathBuf,
    /// The products checked.
    pub products: Vec<Product>,
    /// Every check, clean or not.
    pub checks: Vec<Check>,
    /// Facts that do not fail the proof (`empty_vm_dirs`, `restore_cache`).
    pub info: Vec<(String, String)>,
    /// `clean` or `dirty`.
    pub result: String,
}

impl Proof {
    /// How many checks failed, in words, or "" when none did: "2 checks failed: each names
    /// what remains and what removes it.".
    pub fn failed_line(&self) -> String {
        match self.checks.iter().filter(|c| !c.ok).count() {
            0 => String::new(),
            1 => "1 check failed: it names what remains and what removes it.".into(),
            n => format!("{n} checks failed: each names what remains and what removes it."),
        }
    }

    /// Whether every check is clean.
    pub fn is_clean(&self) -> bool {
        self.result == "clean"
    }
}

/// Verify the live system.
pub fn verify(env: &EnvSnapshot, platform: Platform, opts: &VerifyOptions) -> Proof {
    verify_with(env, platform, &crate::procs::list(), opts)
}

/// [`verify`] with a given process table.
pub(crate) fn verify_with(
    env: &EnvSnapshot,
    platform: Platform,
    procs: &[RawProcess],
    opts: &VerifyOptions,
) -> Proof {
    let products = if opts.products.is_empty() {
        Product::ALL.to_vec()
    } else {
        opts.products.clone()
    };
    let audit = Audit::new(env, platform, procs, &products);
    let mut checks = Vec::new();
    let mut info = Vec::new();
    checks.push(audit.machines());
    if audit.wants(Product::Smolvm) {
        let (c, facts) = audit.vm_dirs();
        checks.push(c);
        info.extend(facts);
    }
    if audit.wants(Product::Celesto) {
        checks.push(audit.sandbox_disks());
    }
    checks.push(audit.vm_processes());
    checks.push(removed_roots_check(&opts.removed_roots));
    checks.push(protected_check(opts.protected.as_ref()));

    let clean = checks.iter().all(|c| c.ok);
    Proof {
        schema: PROOF_SCHEMA.to_string(),
        audited_home: env.home.clone(),
        products,
        checks,
        info,
        result: if clean { "clean" } else { "dirty" }.to_string(),
    }
}

/// What the checks of one HOME look at: its roots, the products asked for, and the scan's
/// judgement (for attribution and for fixes a Smolsweep command will accept).
struct Audit<'a> {
    home: &'a Path,
    products: &'a [Product],
    report: crate::model::ScanReport,
    smol: crate::roots::SmolvmRoots,
    cel: crate::roots::CelestoRoots,
}

impl<'a> Audit<'a> {
    fn new(
        env: &'a EnvSnapshot,
        platform: Platform,
        procs: &[RawProcess],
        products: &'a [Product],
    ) -> Self {
        let report = crate::scan::scan_with(
            &crate::scan::ScanOptions {
                env: env.clone(),
                platform,
                age_guard: std::time::Duration::from_secs(120),
                now: std::time::SystemTime::now(),
            },
            procs.to_vec(),
        );
        Audit {
            home: &env.home,
            products,
            report,
            smol: smolvm_roots(platform, env),
            cel: celesto_roots(platform, env),
        }
    }

    fn wants(&self, p: Product) -> bool {
        self.products.contains(&p)
    }

    /// The user's Celesto data directories (never a system one).
    fn celesto_data_dirs(&self) -> impl Iterator<Item = &Path> {
        self.cel
            .data_dirs
            .iter()
            .map(|d| d.path.as_path())
            .filter(|p| !is_system_path(p))
    }

    /// `machines`: rows left in any inventory, and inventories that could not be read.
    fn machines(&self) -> Check {
        let mut rem = Vec::new();
        let mut unreadable = Vec::new();
        if self.wants(Product::Smolvm) {
            for set in user_smolvm_sets(&self.smol, self.home) {
                if std::fs::symlink_metadata(&set.db_path).is_err() {
                    continue;
                }
                match read_smolvm_machines(&set.db_path) {
                    Ok(ms) => rem.extend(ms.into_iter().map(|m| Remaining {
                        what: format!(
                            "smolvm machine '{}' ({}) in {}",
                            m.name,
                            m.state,
                            set.db_path.display()
                        ),
                        fix: format!("smolsweep delete smolvm:{}", m.name),
                    })),
                    Err(e) => unreadable.push(e),
                }
            }
        }
        if self.wants(Product::Celesto) {
            for dir in self.celesto_data_dirs() {
                for p in crate::upstream::inventory_paths(Product::Celesto, dir) {
                    if std::fs::symlink_metadata(&p).is_err() {
                        continue;
                    }
                    match read_celesto_rows(&p) {
                        Ok(ms) => rem.extend(ms.into_iter().map(|m| Remaining {
                            what: format!("sandbox '{}' ({}) in {}", m.name, m.state, p.display()),
                            fix: format!("smolsweep delete celesto:{}", m.name),
                        })),
                        Err(e) => unreadable.push(e),
                    }
                }
            }
        }
        rem.extend(unreadable.into_iter().map(|e| Remaining {
            what: format!("an inventory that could not be read: {e}"),
            fix: "check it by hand; Smolsweep cannot prove it empty".into(),
        }));
        check("machines", rem, |n| format!("{n} remaining"))
    }

    /// `vm_dirs`: non-empty machine directories under every user `vms/`, with the facts that do
    /// not fail the proof (`empty_vm_dirs`, and `restore_cache` when there is one).
    fn vm_dirs(&self) -> (Check, Vec<(String, String)>) {
        let mut rem = Vec::new();
        let mut empty = 0u64;
        let mut restore: Option<u64> = None;
        for set in user_smolvm_sets(&self.smol, self.home) {
            for vms in &set.vms_dirs {
                let Ok(entries) = crate::fsread::read_dir(vms) else {
                    continue;
                };
                for e in entries {
                    let name = e.name.to_string_lossy().into_owned();
                    if !e.is_dir() || name.starts_with('.') {
                        continue; // lock files, policy files
                    }
                    if name.starts_with("_restore-") {
                        *restore.get_or_insert(0) += crate::size::Sizer::new()
                            .measure(&e.path)
                            .map(|m| m.allocated)
                            .unwrap_or(0);
                        continue;
                    }
                    if crate::layout::never_a_machine(&name) {
                        continue;
                    }
                    match crate::fsread::read_dir(&e.path) {
                        Ok(inner) if inner.is_empty() => empty += 1,
                        _ => rem.push(Remaining {
                            what: format!("machine directory {}", e.path.display()),
                            fix: crate::view::fix_for_path(&self.report, &e.path, e.path.is_dir()),
                        }),
                    }
                }
            }
        }
        let mut info = vec![("empty_vm_dirs".to_string(), empty.to_string())];
        if let Some(bytes) = restore {
            info.push((
                "restore_cache".to_string(),
                format!("present {}", human_bytes(bytes)),
            ));
        }
        (check("vm_dirs", rem, |n| format!("{n} remaining")), info)
    }

    /// `sandbox_disks`: files left in any user Celesto `disks/`.
    fn sandbox_disks(&self) -> Check {
        let mut rem = Vec::new();
        for dir in self.celesto_data_dirs() {
            let Ok(entries) = crate::fsread::read_dir(&dir.join("disks")) else {
                continue;
            };
            for e in entries.into_iter().filter(|e| !e.is_dir()) {
                rem.push(Remaining {
                    what: format!("sandbox disk {}", e.path.display()),
                    fix: crate::view::fix_for_path(&self.report, &e.path, e.path.is_dir()),
                });
            }
        }
        check("sandbox_disks", rem, |n| format!("{n} remaining"))
    }

    /// `vm_processes`: VM processes of this HOME, of the products asked for.
    fn vm_processes(&self) -> Check {
        let rem: Vec<Remaining> = self
            .report
            .processes
            .iter()
            .filter(|v| v.scope == crate::model::Scope::ThisHome && self.wants(v.product))
            .map(|v| Remaining {
                what: format!(
                    "{} VM process {} ({}, {})",
                    v.product.as_str(),
                    v.pid,
                    v.shape.label(),
                    v.reason
                ),
                fix: crate::view::fix_for_process(&self.report, v.pid),
            })
            .collect();
        check("vm_processes", rem, |n| format!("{n} running"))
    }
}

/// A check that was not asked for: it passes, and says so.
fn not_checked(key: &str) -> Check {
    Check {
        key: key.into(),
        value: "not_checked".into(),
        ok: true,
        remaining: Vec::new(),
    }
}

/// `removed_roots`: each directory that must be gone holds nothing but empty directories.
fn removed_roots_check(roots: &[PathBuf]) -> Check {
    if roots.is_empty() {
        return not_checked("removed_roots");
    }
    let mut rem = Vec::new();
    for r in roots {
        let mut found = Vec::new();
        non_dirs_under(r, &mut found, 5);
        for f in found {
            rem.push(Remaining {
                what: format!("{} is still there", f.display()),
                fix: format!("smolsweep uninstall (or remove {})", r.display()),
            });
        }
    }
    check("removed_roots", rem, |n| format!("{n}+ entries left"))
}

/// `protected_untouched_since_<secs>`: the protected directory exists and nothing under it was
/// modified after the given time.
fn protected_check(protected: Option<&(PathBuf, SystemTime)>) -> Check {
    let Some((dir, since)) = protected else {
        return not_checked("protected");
    };
    let mut changed = Vec::new();
    let exists = std::fs::symlink_metadata(dir).is_ok();
    changed_since(dir, *since, &mut changed, 10);
    let secs = since
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let key = format!("protected_untouched_since_{secs}");
    let mut rem: Vec<Remaining> = changed
        .into_iter()
        .map(|p| Remaining {
            what: format!("{} was modified after {secs}", p.display()),
            fix: "find out what touched it; Smolsweep must never write there".into(),
        })
        .collect();
    if !exists {
        rem.push(Remaining {
            what: format!("{} does not exist", dir.display()),
            fix: "the protected directory is gone".into(),
        });
    }
    let mut c = check(&key, rem, |n| format!("{n} changed"));
    if c.ok {
        c.value = format!("ok {}", dir.display());
    }
    c
}

fn check(key: &str, remaining: Vec<Remaining>, bad: impl Fn(usize) -> String) -> Check {
    if remaining.is_empty() {
        Check {
            key: key.to_string(),
            value: "none".into(),
            ok: true,
            remaining,
        }
    } else {
        Check {
            key: key.to_string(),
            value: bad(remaining.len()),
            ok: false,
            remaining,
        }
    }
}

/// Up to `limit` non-directory entries (or the root itself if it is not a directory) under
/// `root`, without following symlinks. Empty directories are not state.
fn non_dirs_under(root: &Path, out: &mut Vec<PathBuf>, limit: usize) {
    let Ok(m) = std::fs::symlink_metadata(root) else {
        return;
    };
    if !m.file_type().is_dir() {
        out.push(root.to_path_buf());
        return;
    }
    let Ok(entries) = crate::fsread::read_dir(root) else {
        out.push(root.to_path_buf());
        return;
    };
    for e in entries {
        if out.len() >= limit {
            return;
        }
        if e.is_dir() {
            non_dirs_under(&e.path, out, limit);
        } else {
            out.push(e.path);
        }
    }
}

fn time_of(secs: i64, nsecs: i64) -> SystemTime {
    if secs >= 0 {
        UNIX_EPOCH + Duration::new(secs as u64, nsecs.clamp(0, 999_999_999) as u32)
    } else {
        UNIX_EPOCH
    }
}

/// Entries under `dir` (itself included) whose mtime or ctime is after `since`.
fn changed_since(dir: &Path, since: SystemTime, out: &mut Vec<PathBuf>, limit: usize) {
    use std::os::unix::fs::MetadataExt;
    let Ok(m) = std::fs::symlink_metadata(dir) else {
        return;
    };
    let newer = |m: &std::fs::Metadata| {
        time_of(m.mtime(), m.mtime_nsec()) > since || time_of(m.ctime(), m.ctime_nsec()) > since
    };
    if newer(&m) {
        out.push(dir.to_path_buf());
    }
    if !m.file_type().is_dir() {
        return;
    }
    let Ok(entries) = crate::fsread::read_dir(dir) else {
        return;
    };
    for e in entries {
        if out.len() >= limit {
            return;
        }
        if e.is_dir() {
            changed_since(&e.path, since, out, limit);
        } else if newer(&e.meta) {
            out.push(e.path);
        }
    }
}

/// Parse `--since`: Unix seconds (`1700000000` or `@1700000000`), `YYYY-MM-DD` (UTC midnight)
/// or `YYYY-MM-DDTHH:MM:SS[Z]` (UTC).
pub fn parse_since(s: &str) -> Option<SystemTime> {
    let s = s.trim();
    let digits = s.strip_prefix('@').unwrap_or(s);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        return Some(UNIX_EPOCH + Duration::from_secs(digits.parse().ok()?));
    }
    let (date, time) = match s.split_once(['T', ' ']) {
        Some((d, t)) => (d, Some(t.trim_end_matches('Z'))),
        None => (s, None),
    };
    let mut dp = date.split('-');
    let y: i64 = dp.next()?.parse().ok()?;
    let mo: i64 = dp.next()?.parse().ok()?;
    let d: i64 = dp.next()?.parse().ok()?;
    if dp.next().is_some() || !(1..=12).contains(&mo) || !(1..=31).contains(&d) {
        return None;
    }
    let (mut h, mut mi, mut se) = (0i64, 0i64, 0i64);
    if let Some(t) = time {
        let mut tp = t.split(':');
        h = tp.next()?.parse().ok()?;
        mi = tp.next()?.parse().ok()?;
        se = tp.next().map(|x| x.parse().ok()).unwrap_or(Some(0))?;
        if h > 23 || mi > 59 || se > 60 {
            return None;
        }
    }
    // Days from civil (Howard Hinnant).
    let y2 = if mo <= 2 { y - 1 } else { y };
    let era = if y2 >= 0 { y2 } else { y2 - 399 } / 400;
    let yoe = y2 - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146097 + doe - 719468;
    let secs = days * 86400 + h * 3600 + mi * 60 + se;
    if secs < 0 {
        return None;
    }
    Some(UNIX_EPOCH + Duration::from_secs(secs as u64))
}

/// `key=value` lines, then `result=clean|dirty`.
pub fn render_kv(p: &Proof) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(s, "audited_home={}", p.audited_home.display());
    let names: Vec<&str> = p.products.iter().map(|p| p.as_str()).collect();
    let _ = writeln!(s, "products={}", names.join(","));
    for c in &p.checks {
        if c.ok {
            let _ = writeln!(s, "{}={}", c.key, c.value);
        } else {
            let _ = writeln!(s, "{}=FAIL expected=none actual={}", c.key, c.value);
            for r in &c.remaining {
                let _ = writeln!(s, "remains={} fix={}", r.what, r.fix);
            }
        }
    }
    for (k, v) in &p.info {
        let _ = writeln!(s, "{k}={v}");
    }
    let _ = writeln!(s, "result={}", p.result);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_proof_after_a_plan_checks_its_products_and_roots() {
        let plan = UninstallPlan {
            schema: super::super::plan::UNINSTALL_PLAN_SCHEMA.into(),
            home: "/home/u".into(),
            products: vec![Product::Smolvm],
            options: Default::default(),
            steps: vec![],
            kept: vec![],
            user_commands: vec![],
            removed_roots: vec!["/home/u/.smolvm".into()],
            notes: vec![],
            clis: vec![],
            platform: Platform::Linux,
        };
        let o = VerifyOptions::after(&plan);
        assert_eq!(o.products, [Product::Smolvm]);
        assert_eq!(o.removed_roots, [PathBuf::from("/home/u/.smolvm")]);
        assert!(o.protected.is_none());
    }

    #[test]
    fn since_parses_the_usual_forms() {
        let t = |s| parse_since(s).map(|t| t.duration_since(UNIX_EPOCH).unwrap().as_secs());
        assert_eq!(t("1700000000"), Some(1_700_000_000));
        assert_eq!(t("@1700000000"), Some(1_700_000_000));
        assert_eq!(t("2023-11-14T22:13:20Z"), Some(1_700_000_000));
        assert_eq!(t("1970-01-02"), Some(86_400));
        assert_eq!(t("2024-02-30x"), None);
        assert_eq!(t("yesterday"), None);
    }
}
