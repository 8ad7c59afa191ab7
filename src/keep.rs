//! Keep rules: what the user told Smolsweep to leave alone. A kept finding is protected in the
//! scan itself ("Kept by you since …"), so nothing downstream can plan, count, notify or
//! delete it: not `prune`, not the tray, not an automatic run, not the re-judge of a plan made
//! before the rule existed.
//!
//! Rules live in `keep.json` (schema `smolsweep.keep/1`) in Smolsweep's data directory, shared
//! by the CLI and the app, written atomically (a temporary file renamed over it).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::env::EnvSnapshot;
use crate::items::Role;
use crate::kind::FindingKind;
use crate::model::*;

pub(crate) const KEEP_SCHEMA: &str = "smolsweep.keep/1";
const KEEP_FILE: &str = "keep.json";
/// Largest keep file read: thousands of rules. A bigger one is damaged (nothing is reclaimable
/// until it is fixed, as for any unreadable keep file).
const MAX_KEEP_BYTES: u64 = crate::fsread::MAX_SETTINGS_BYTES;

/// What a kept VM process's reason starts with.
const KEPT_PROCESS: &str = "Kept by you: never ended while the rule stands.";

/// The rule id recorded on machines and processes while the keep file cannot be read: any of
/// them may be kept, so none is stopped, deleted or ended.
pub(crate) const UNREADABLE: &str = "unreadable";

/// What a rule keeps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "by", rename_all = "snake_case")]
pub enum Target {
    /// One file or directory, as it was when kept: a different object at the same path is not
    /// kept.
    Item {
        /// Where it was when kept (compared exactly).
        #[serde(with = "crate::pathser::one")]
        path: PathBuf,
        /// Device number of the kept object (`st_dev`).
        dev: u64,
        /// Inode number of the kept object: with `dev`, its identity.
        ino: u64,
        /// Birth time (ns since the epoch) where the file system records one: an inode number
        /// reused by a new file at the same path is not the kept object.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        born_ns: Option<i64>,
    },
    /// Everything that belongs to a sandbox or machine.
    Owner {
        /// The product it belongs to.
        product: Product,
        /// The sandbox id (Celesto) or machine name (smolvm), matched against a finding's owner.
        name: String,
    },
    /// A class of findings (for example every Celesto image cache).
    Kind {
        /// Every finding of this kind is kept.
        kind: FindingKind,
    },
}

/// One rule, with when and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rule {
    /// Short id, for `keep remove`.
    pub id: String,
    /// What it keeps (JSON: an object tagged `by`: `item`, `owner` or `kind`).
    pub target: Target,
    /// Seconds since the epoch.
    pub since: u64,
    /// Why the user kept it, in their words (may be empty).
    #[serde(default)]
    pub why: String,
}

impl Rule {
    /// A rule keeping `target` since `since` (seconds since the epoch); its id is the first 4 bytes
    /// of the SHA-256 of the target's JSON, in hex, so one target always gets the same id.
    pub fn new(target: Target, why: &str, since: u64) -> Rule {
        use sha2::{Digest, Sha256};
        let j = serde_json::to_string(&target).unwrap_or_default();
        let id = hex::encode(&Sha256::digest(j.as_bytes())[..4]);
        Rule {
            id,
            target,
            since,
            why: why.to_string(),
        }
    }

    fn matches(&self, f: &Finding) -> bool {
        match &self.target {
            Target::Item {
                path,
                dev,
                ino,
                born_ns,
            } => {
                &f.path == path
                    && f.identity.is_some_and(|i| i.dev == *dev && i.ino == *ino)
                    && (born_ns.is_none() || born(path) == *born_ns)
            }
            Target::Owner { product, name } => {
                f.product == *product && f.owner.as_deref() == Some(name.as_str())
            }
            Target::Kind { kind } => f.kind == *kind,
        }
    }

    /// The rule in words ("machine smolvm:web", "Old image caches", a path).
    pub fn describe(&self) -> String {
        match &self.target {
            Target::Item { path, .. } => crate::pathser::shown(path),
            Target::Owner { product, name } => format!("everything of {}:{name}", product.as_str()),
            Target::Kind { kind } => format!("every finding of the kind '{}'", kind.label()),
        }
    }
}

/// When `path` (not followed) was created, where the file system says.
pub fn born(path: &Path) -> Option<i64> {
    let t = std::fs::symlink_metadata(path).ok()?.created().ok()?;
    let d = t.duration_since(std::time::UNIX_EPOCH).ok()?;
    i64::try_from(d.as_nanos()).ok()
}

/// Why something a rule keeps (`rule`: its id, or [`UNREADABLE`]) is not acted on, for a
/// refusal or a skipped action.
pub(crate) fn kept_why(rule: &str) -> String {
    if rule == UNREADABLE {
        "your keep rules could not be read, so it may be kept; fix or remove the keep file first"
            .into()
    } else {
        format!("kept by you (keep rule {rule}; `smolsweep keep remove {rule}` releases it)")
    }
}

/// Why machine `m` is left alone, while a keep rule other than `overrides` (the rules a plan
/// explicitly overrides) keeps it: the one sentence the planner and the re-judge both give.
pub(crate) fn machine_kept(m: &Machine, overrides: &[String]) -> Option<String> {
    let rule = m.kept.as_ref().filter(|k| !overrides.contains(k))?;
    Some(format!("{} is {}", m.name, kept_why(rule)))
}

/// Every rule.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Keeps {
    /// Schema name, `smolsweep.keep/1`.
    pub schema: String,
    /// The rules, in the order they were added.
    pub rules: Vec<Rule>,
}

/// Why keep rules could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum KeepError {
    /// The keep file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The keep file (or its directory).
        path: PathBuf,
        /// The error the OS gave.
        source: std::io::Error,
    },
    /// The keep file is not one Smolsweep wrote (not JSON, another schema, or too large).
    #[error(
        "{path} is not a Smolsweep keep file ({why}); nothing is kept until it is fixed or removed"
    )]
    Damaged {
        /// The keep file.
        path: PathBuf,
        /// What is wrong with it (the JSON error, the schema found, the size limit).
        why: String,
    },
    /// The keep file read back did not hold the rules just written (a program changed it
    /// without taking the lock).
    #[error("{path} was changed by another program while the keep rules were saved; the change was not saved, try again")]
    Lost {
        /// The keep file.
        path: PathBuf,
    },
}

/// Hold the writers' lock of the keep file at `path` (an exclusive `flock` on `<file>.lock`
/// beside it, made when missing) until the returned file is dropped; waits for another writer.
fn lock(path: &Path) -> Result<std::fs::File, KeepError> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".lock");
    let at = path.with_file_name(name);
    let io = |source| KeepError::Io {
        path: at.clone(),
        source,
    };
    if let Some(dir) = at.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&at)
        .map_err(io)?;
    loop {
        match rustix::fs::flock(&f, rustix::fs::FlockOperation::LockExclusive) {
            Ok(()) => return Ok(f),
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(io(e.into())),
        }
    }
}

/// Where the keep file is for this environment: `$SMOLSWEEP_DATA_DIR`, else the platform's data
/// directory for Smolsweep (as the journal's).
pub fn path_for(env: &EnvSnapshot, platform: Platform) -> PathBuf {
    if let Some(d) = env.var("SMOLSWEEP_DATA_DIR") {
        return PathBuf::from(d).join(KEEP_FILE);
    }
    let base = match platform {
        Platform::Macos => env
            .home
            .join("Library/Application Support/org.Smolsweep.smolsweep"),
        Platform::Linux => env
            .var("XDG_DATA_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .unwrap_or_else(|| env.home.join(".local/share"))
            .join("smolsweep"),
    };
    base.join(KEEP_FILE)
}

impl Keeps {
    /// Read the rules; no file means no rules.
    pub fn load(path: &Path) -> Result<Keeps, KeepError> {
        let io = |source| KeepError::Io {
            path: path.to_path_buf(),
            source,
        };
        let f = match crate::fsread::open_regular(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Keeps::empty()),
            Err(e) => return Err(io(e)),
        };
        let what = "a keep file Smolsweep wrote";
        let bytes = match crate::fsread::read_capped(f, path, MAX_KEEP_BYTES, what) {
            Ok(b) => b,
            Err(crate::fsread::InputError::Io { source, .. }) => return Err(io(source)),
            Err(_) => {
                return Err(KeepError::Damaged {
                    path: path.to_path_buf(),
                    why: format!("larger than {} MiB", MAX_KEEP_BYTES >> 20),
                })
            }
        };
        let k: Keeps = serde_json::from_slice(&bytes).map_err(|e| KeepError::Damaged {
            path: path.to_path_buf(),
            why: e.to_string(),
        })?;
        if k.schema != KEEP_SCHEMA {
            return Err(KeepError::Damaged {
                path: path.to_path_buf(),
                why: format!("schema '{}', expected {KEEP_SCHEMA}", k.schema),
            });
        }
        Ok(k)
    }

    /// No rules (what a missing keep file reads as).
    pub fn empty() -> Keeps {
        Keeps {
            schema: KEEP_SCHEMA.into(),
            rules: Vec::new(),
        }
    }

    /// Change the rules saved at `path` as one writer among several (`keep add` and `keep
    /// remove`, the window, several of each at once): under an exclusive lock on the lock file
    /// beside it (`keep.json.lock`), the file is read again, `change` applied to what it holds
    /// now, the result written atomically and read back. An `Err` from `change` writes nothing.
    /// `Ok` means every rule `change` left is in the file; otherwise the error says what was not
    /// saved.
    pub fn update<T, E: From<KeepError>>(
        path: &Path,
        change: impl FnOnce(&mut Keeps) -> Result<T, E>,
    ) -> Result<T, E> {
        let _held = lock(path)?;
        let mut keeps = Keeps::load(path)?;
        let out = change(&mut keeps)?;
        keeps.save(path)?;
        if Keeps::load(path)? != keeps {
            return Err(KeepError::Lost {
                path: path.to_path_buf(),
            }
            .into());
        }
        Ok(out)
    }

    /// Write the rules atomically (temporary file in the same directory, fsync, rename). A
    /// program that changes rules others may be changing too uses [`Keeps::update`].
    pub fn save(&self, path: &Path) -> Result<(), KeepError> {
        let io = |source| KeepError::Io {
            path: path.to_path_buf(),
            source,
        };
        let text = serde_json::to_string_pretty(self).unwrap_or_default();
        crate::atomic::write(path, text.as_bytes(), false).map_err(io)
    }

    /// Add a rule (a rule with the same target replaces the old one).
    pub fn add(&mut self, rule: Rule) {
        self.rules.retain(|r| r.target != rule.target);
        self.rules.push(rule);
    }

    /// Remove the rule with this id; whether one was removed.
    pub fn remove(&mut self, id: &str) -> bool {
        let before = self.rules.len();
        self.rules.retain(|r| r.id != id);
        self.rules.len() != before
    }

    /// Protect every finding, machine and VM process a rule keeps (see [`Keeps::apply_owners`]).
    pub fn apply(&self, report: &mut ScanReport) {
        self.apply_findings(report);
        self.apply_owners(report);
        hold_together(report);
    }

    /// The rule that keeps machine or sandbox `name` of `product`: an owner rule naming it.
    fn owner_rule(&self, product: Product, name: &str) -> Option<&Rule> {
        self.rules.iter().find(|r| {
            matches!(&r.target, Target::Owner { product: p, name: n } if *p == product && n == name)
        })
    }

    /// Machines and VM processes: a machine is kept by an owner rule naming it, or by the rule
    /// that keeps its directory or anything it owns (deleting the machine would take that
    /// with it); a VM process is kept with its machine or sandbox, by an owner rule naming the
    /// sandbox it runs (its record may be gone), or when it uses a kept path.
    fn apply_owners(&self, report: &mut ScanReport) {
        let kept_paths: Vec<(PathBuf, Product, Option<String>, String)> = report
            .findings
            .iter()
            .filter_map(|f| {
                let id = f.kept.clone()?;
                Some((f.path.clone(), f.product, f.owner.clone(), id))
            })
            .collect();
        for m in &mut report.machines {
            let by_owner = self.owner_rule(m.product, &m.name).map(|r| r.id.clone());
            let by_path = || {
                kept_paths.iter().find_map(|(path, product, owner, id)| {
                    let owned = *product == m.product && owner.as_deref() == Some(&m.name);
                    let inside = m.dir.as_ref().is_some_and(|d| path.starts_with(d));
                    (owned || inside).then(|| id.clone())
                })
            };
            m.kept = by_owner.or_else(by_path);
        }
        let kept_machines: Vec<(Product, String, String)> = report
            .machines
            .iter()
            .filter_map(|m| Some((m.product, m.name.clone(), m.kept.clone()?)))
            .collect();
        for p in &mut report.processes {
            let owner = p.owner.as_deref();
            let by_machine = || {
                kept_machines
                    .iter()
                    .find(|(product, name, _)| *product == p.product && owner == Some(name))
                    .map(|(_, _, id)| id.clone())
            };
            let by_rule = || {
                owner
                    .and_then(|o| self.owner_rule(p.product, o))
                    .map(|r| r.id.clone())
            };
            let by_path = || {
                kept_paths
                    .iter()
                    .find(|(path, product, fowner, _)| {
                        let uses = p
                            .paths
                            .iter()
                            .any(|q| q.starts_with(path) || path.starts_with(q));
                        let same_owner =
                            *product == p.product && owner.is_some() && fowner.as_deref() == owner;
                        uses || same_owner
                    })
                    .map(|(.., id)| id.clone())
            };
            p.kept = by_machine().or_else(by_rule).or_else(by_path);
            if p.kept.is_some() && p.orphan && !p.reason.starts_with(KEPT_PROCESS) {
                p.reason = format!("{KEPT_PROCESS} {}", p.reason);
            }
        }
    }

    /// Protect every finding a rule keeps, item by item: a rule on an item's principal (the disk,
    /// the machine directory; by path, owner or kind) keeps every member of the item; a rule on
    /// a member judged by the item (a companion, the marker, the log) keeps that member, the
    /// principal and what the principal needs (its marker); a rule on a lock keeps the lock.
    fn apply_findings(&self, report: &mut ScanReport) {
        let direct: Vec<Option<&Rule>> = report
            .findings
            .iter()
            .map(|f| self.rules.iter().find(|r| r.matches(f)))
            .collect();
        let items = crate::items::Items::of(&report.findings);
        let mut with: Vec<Option<&Rule>> = vec![None; direct.len()];
        for g in items.groups() {
            let by = |pick: &dyn Fn(Role) -> bool| {
                g.iter()
                    .find_map(|&i| items.role(i).filter(|r| pick(*r)).and(direct[i]))
            };
            let whole = by(&|r| r == Role::Principal);
            let core = by(&|r| matches!(r, Role::Dependent | Role::Needs));
            for &i in g {
                with[i] = match items.role(i) {
                    Some(Role::Principal | Role::Needs) => whole.or(core),
                    _ => whole,
                };
            }
        }
        for (i, f) in report.findings.iter_mut().enumerate() {
            let (rule, along) = match (direct[i], with[i]) {
                (Some(r), _) => (r, ""),
                (None, Some(r)) => (r, " with the rest of its item"),
                (None, None) => continue,
            };
            f.kept = Some(rule.id.clone());
            if matches!(f.verdict, Verdict::Reclaimable | Verdict::OptIn) {
                f.verdict = Verdict::Protected;
                f.opt_in_class = None;
                f.reason = format!("{}{along}. {}", rule.kept_since(), f.reason);
            }
        }
    }
}

/// What stays keeps what it needs: a surviving disk its backing files, a surviving member of an
/// item the disk it is judged by (and that disk, in turn, its backing files).
fn hold_together(report: &mut ScanReport) {
    crate::chains::protect(report);
    crate::items::hold_together(report);
    crate::chains::protect(report);
}

/// `YYYY-MM-DD` (UTC) of a time in seconds since the epoch.
fn day(secs: u64) -> String {
    i64::try_from(secs)
        .ok()
        .and_then(|s| chrono::DateTime::from_timestamp(s, 0))
        .map(|t| t.format("%Y-%m-%d").to_string())
        .unwrap_or_else(|| "an unknown day".into())
}

/// Apply this environment's keep rules to a scan (see [`apply_at`]).
pub(crate) fn apply_for(report: &mut ScanReport, env: &EnvSnapshot) {
    apply_at(report, &path_for(env, report.platform));
}

/// Apply the keep rules saved at `path` to a report: what a rule keeps is protected. A damaged
/// keep file is a problem of the scan (shown), and nothing is reclaimable until it is fixed:
/// unreadable rules may have kept anything. Applying twice changes nothing more (a report the
/// scan already judged, then shown by the app, gets the same verdicts and one problem line).
pub fn apply_at(report: &mut ScanReport, path: &Path) {
    match Keeps::load(path) {
        Ok(k) => k.apply(report),
        Err(e) => {
            let problem = format!("Keep rules could not be read: {e}");
            for p in &mut report.products {
                if !p.problems.contains(&problem) {
                    p.problems.push(problem.clone());
                }
            }
            for m in &mut report.machines {
                m.kept.get_or_insert_with(|| UNREADABLE.into());
            }
            for p in &mut report.processes {
                p.kept.get_or_insert_with(|| UNREADABLE.into());
            }
            for f in &mut report.findings {
                if matches!(f.verdict, Verdict::Reclaimable | Verdict::OptIn) {
                    f.verdict = Verdict::Unknown;
                    f.opt_in_class = None;
                    f.reason = format!("{} Your keep rules could not be read: {e}", f.reason);
                }
            }
            hold_together(report);
        }
    }
}

/// What a [`KeepWatch`] saw of the keep file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seen {
    /// No keep file: no rules.
    Missing,
    /// The file's identity (device, inode), size and modification and change times (ns): a
    /// rewrite (a new file renamed over it) or an edit in place changes at least one.
    File([i128; 6]),
    /// It could not be examined: never taken as unchanged.
    Unknown,
}

/// The keep rules as they are now, for a run that acts over time: the executor asks before each
/// action, and the rules are read again only when the keep file changed since it last asked
/// (one `lstat` otherwise), so a rule saved while a run is under way holds from the next action.
#[derive(Debug)]
pub(crate) struct KeepWatch {
    path: PathBuf,
    seen: Option<Seen>,
}

impl KeepWatch {
    /// Watch the keep file at `path` (see [`path_for`]); nothing is read yet.
    pub(crate) fn new(path: PathBuf) -> Self {
        KeepWatch { path, seen: None }
    }

    fn look(&self) -> Seen {
        use std::os::unix::fs::MetadataExt;
        match std::fs::symlink_metadata(&self.path) {
            Ok(m) => Seen::File([
                m.dev().into(),
                m.ino().into(),
                m.size().into(),
                i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
                i128::from(m.ctime()) * 1_000_000_000 + i128::from(m.ctime_nsec()),
                m.mode().into(),
            ]),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Seen::Missing,
            Err(_) => Seen::Unknown,
        }
    }

    /// Whether the keep file changed since the last call (the first call: yes). Called before
    /// the rules are read, so a change made while they are read shows at the next call.
    pub(crate) fn changed(&mut self) -> bool {
        let now = self.look();
        let changed = self.seen != Some(now) || now == Seen::Unknown;
        self.seen = Some(now);
        changed
    }

    /// Apply the rules to `facts` (a scan made earlier, which applied the rules of its moment)
    /// when the keep file changed since the last call: what a rule saved since keeps is
    /// protected from now on. Without facts the next scan reads the rules itself.
    pub(crate) fn refresh(&mut self, facts: Option<&mut ScanReport>) {
        if self.changed() {
            if let Some(report) = facts {
                apply_at(report, &self.path);
            }
        }
    }
}

/// What a person named to keep: by the window's click or typed on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Named<'a> {
    /// Typed: a finding id or path, a path, `celesto:ID` / `smolvm:NAME` or a machine or
    /// sandbox name, then a prefix (at least 4 characters) only one finding id starts with.
    Typed(&'a str),
    /// A finding of the report, by its full id (kept as that very file, identity-checked).
    Finding(&'a str),
    /// A machine or sandbox: everything that belongs to it (recorded, or with leftovers).
    Machine(Product, &'a str),
    /// A whole kind.
    Kind(FindingKind),
}

/// The rule target for what a person named, resolved against `report`: the one resolution the
/// CLI's `keep add` and the window's Keep both use.
pub fn target_in(report: &ScanReport, named: &Named) -> Result<Target, String> {
    match named {
        Named::Kind(kind) => Ok(Target::Kind { kind: *kind }),
        Named::Finding(id) => match report.finding(id) {
            Some(f) => item_target(f),
            None => Err("that finding is not in the latest scan; rescan and try again".into()),
        },
        Named::Machine(product, name) => match is_owner(report, *product, name) {
            true => Ok(Target::Owner {
                product: *product,
                name: name.to_string(),
            }),
            false => Err(format!("no machine or sandbox {name} in the latest scan")),
        },
        Named::Typed(text) => typed_target(report, text),
    }
}

fn item_target(f: &Finding) -> Result<Target, String> {
    let id = f.identity.ok_or_else(|| {
        format!(
            "{} could not be examined, so it cannot be kept",
            crate::pathser::shown(&f.path)
        )
    })?;
    Ok(Target::Item {
        path: f.path.clone(),
        dev: id.dev,
        ino: id.ino,
        born_ns: born(&f.path),
    })
}

/// A recorded machine or sandbox, or one whose leftovers the scan found.
fn is_owner(report: &ScanReport, product: Product, name: &str) -> bool {
    report
        .machines
        .iter()
        .any(|m| m.product == product && m.name == name)
        || report
            .findings
            .iter()
            .any(|f| f.product == product && f.owner.as_deref() == Some(name))
}

fn typed_target(report: &ScanReport, text: &str) -> Result<Target, String> {
    let by_path = Path::new(text);
    if let Some(f) = report
        .findings
        .iter()
        .find(|f| f.id == text || f.path == by_path)
    {
        return item_target(f);
    }
    if text.contains('/') {
        let id = FileIdentity::of(by_path).map_err(|e| format!("{text}: {e}"))?;
        return Ok(Target::Item {
            path: by_path.to_path_buf(),
            dev: id.dev,
            ino: id.ino,
            born_ns: born(by_path),
        });
    }
    // `celesto:ID` / `smolvm:NAME` also names a deleted sandbox's or machine's leftovers.
    for product in Product::ALL {
        let prefix = format!("{}:", product.as_str());
        if let Some(name) = text.strip_prefix(&prefix) {
            if is_owner(report, product, name) {
                return Ok(Target::Owner {
                    product,
                    name: name.to_string(),
                });
            }
        }
    }
    let e = match crate::model::find_machine(report, text) {
        Ok(m) => {
            return Ok(Target::Owner {
                product: m.product,
                name: m.name.clone(),
            })
        }
        Err(e) => e,
    };
    // Full names first (as `why`): then a prefix of at least four characters that only one
    // finding id starts with.
    match crate::prefix::find_to_remove(&report.findings, text, "finding id", |f| &f.id)? {
        Some(f) => item_target(f),
        None => Err(format!(
            "{text}: not a finding id, a path or a machine ({e})"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_keep_file_larger_than_the_cap_is_damaged_and_not_read() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join(KEEP_FILE);
        let f = std::fs::File::create(&p).unwrap();
        f.set_len(MAX_KEEP_BYTES + 1).unwrap();
        let e = Keeps::load(&p).unwrap_err();
        assert!(matches!(e, KeepError::Damaged { .. }), "{e}");
        assert!(e.to_string().contains("larger than 1 MiB"), "{e}");
        Keeps::empty().save(&p).unwrap();
        assert_eq!(Keeps::load(&p).unwrap(), Keeps::empty());
    }

    #[test]
    fn a_keep_file_that_is_a_named_pipe_is_refused_without_hanging() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join(KEEP_FILE);
        let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = Keeps::load(&p).unwrap_err();
        assert!(e.to_string().contains("is a named pipe, not a file"), "{e}");
    }

    fn kind_rule(kind: FindingKind) -> Rule {
        Rule::new(Target::Kind { kind }, "", 1_796_083_200)
    }

    #[test]
    fn updates_from_many_writers_at_once_all_land() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("data").join(KEEP_FILE);
        let kinds = [
            FindingKind::CelestoOrphanLog,
            FindingKind::CelestoOrphanDisk,
            FindingKind::SmolvmDanglingDir,
            FindingKind::CelestoSocketResidue,
        ];
        std::thread::scope(|s| {
            for k in kinds {
                let p = &p;
                s.spawn(move || {
                    Keeps::update(p, |keeps| {
                        keeps.add(kind_rule(k));
                        Ok::<_, KeepError>(())
                    })
                    .unwrap()
                });
            }
        });
        let saved = Keeps::load(&p).unwrap();
        for k in kinds {
            assert!(saved.rules.contains(&kind_rule(k)), "{k:?}: {saved:?}");
        }
        assert!(t.path().join("data/keep.json.lock").is_file());
    }

    #[test]
    fn a_watch_sees_every_save_and_nothing_else() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join(KEEP_FILE);
        let mut w = KeepWatch::new(p.clone());
        assert!(w.changed(), "the first look reads the rules");
        assert!(!w.changed());
        Keeps::empty().save(&p).unwrap();
        assert!(w.changed(), "a keep file appeared");
        assert!(!w.changed());
        // The same bytes saved again are a new file (renamed over it): read again.
        Keeps::empty().save(&p).unwrap();
        assert!(w.changed());
        std::fs::remove_file(&p).unwrap();
        assert!(w.changed(), "the keep file went away");
        assert!(!w.changed());
    }

    #[test]
    fn an_update_that_fails_writes_nothing() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join(KEEP_FILE);
        let r = Keeps::update(&p, |keeps| {
            keeps.add(kind_rule(FindingKind::CelestoOrphanLog));
            Err::<(), _>(KeepError::Lost { path: p.clone() })
        });
        assert!(r.is_err());
        assert!(!p.exists());
    }

    #[test]
    fn days_are_civil_dates() {
        assert_eq!(day(0), "1970-01-01");
        assert_eq!(day(1_796_083_200), "2026-12-01");
        assert_eq!(day(951_782_400), "2000-02-29");
    }
}

impl Rule {
    /// The day the rule was made (`YYYY-MM-DD`, UTC), as the scan's "Kept by you since …" says.
    pub fn since_day(&self) -> String {
        day(self.since)
    }

    /// "Kept by you since 2026-11-30 (debugging)": what every surface says of what it keeps.
    pub fn kept_since(&self) -> String {
        match self.why.is_empty() {
            true => format!("Kept by you since {}", self.since_day()),
            false => format!("Kept by you since {} ({})", self.since_day(), self.why),
        }
    }
}

#[cfg(test)]
mod app_helper_tests {
    use super::*;

    #[test]
    fn a_rule_says_the_day_it_was_made() {
        let r = Rule::new(
            Target::Kind {
                kind: FindingKind::CelestoOrphanLog,
            },
            "",
            1_796_083_200,
        );
        assert_eq!(r.since_day(), "2026-12-01");
    }
}
