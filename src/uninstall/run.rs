//! Carrying out an [`UninstallPlan`], step by step, with every outcome recorded.
//!
//! Machine, process and mount steps go through a [`StepRunner`]; [`SystemRunner`] is the real
//! one (the products' CLIs, signals, `hdiutil`). Removals use [`super::remove`] (inside the
//! step's root, no symlink followed, no mount crossed); PATH-block edits use
//! [`super::pathblock::remove`] (backup first, only the smolvm lines go).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::model::Product;

use super::plan::{Step, UninstallPlan};
use super::preflight::{read_celesto_rows, read_smolvm_machines, MachineRecord};

/// The outcome of one step. Expected situations (already gone, unticked) are outcomes, not
/// errors.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum StepOutcome {
    Done { detail: String },
    Skipped { why: String },
    Failed { error: String },
}

impl StepOutcome {
    pub fn done(d: impl Into<String>) -> Self {
        StepOutcome::Done { detail: d.into() }
    }
    pub fn skipped(w: impl Into<String>) -> Self {
        StepOutcome::Skipped { why: w.into() }
    }
    pub fn failed(e: impl Into<String>) -> Self {
        StepOutcome::Failed { error: e.into() }
    }
    pub fn is_failed(&self) -> bool {
        matches!(self, StepOutcome::Failed { .. })
    }
}

/// One step and what happened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepRecord {
    pub index: usize,
    pub summary: String,
    #[serde(flatten)]
    pub step: Step,
    pub result: StepOutcome,
}

/// What a run did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunReport {
    pub records: Vec<StepRecord>,
    pub freed_bytes: u64,
    /// Startup-file backups written before PATH-block edits.
    pub backups: Vec<PathBuf>,
}

impl RunReport {
    pub fn any_failed(&self) -> bool {
        self.records.iter().any(|r| r.result.is_failed())
    }
}

/// Machine, process and mount actions.
pub trait StepRunner {
    fn stop_machine(&self, product: Product, name: &str, cli: &Path, db: &Path) -> StepOutcome;
    fn delete_machine(&self, product: Product, name: &str, cli: &Path, db: &Path) -> StepOutcome;
    fn reap(&self, pid: u32, start_time: u64, uid: u32) -> StepOutcome;
    fn detach(&self, mountpoint: &Path) -> StepOutcome;
}

/// Run every checked step of `plan` in order.
pub fn run(plan: &UninstallPlan, runner: &dyn StepRunner, now_secs: u64) -> RunReport {
    let home = &plan.home;
    let mut report = RunReport::default();
    // Mount points whose detach failed (or was unticked): nothing holding one is removed.
    let mut still_mounted: Vec<PathBuf> = Vec::new();
    for (index, ps) in plan.steps.iter().enumerate() {
        let blocked = match &ps.step {
            Step::RemovePath { path, .. } | Step::RemoveDirIfEmpty { path, .. } => {
                still_mounted.iter().find(|m| m.starts_with(path)).cloned()
            }
            _ => None,
        };
        let result = if !ps.checked {
            if let Step::Detach { mountpoint } = &ps.step {
                still_mounted.push(mountpoint.clone());
            }
            StepOutcome::skipped("unticked")
        } else if let Some(m) = blocked {
            StepOutcome::failed(format!(
                "not removed: {} is still mounted inside it",
                m.display()
            ))
        } else {
            match &ps.step {
                Step::StopMachine {
                    product,
                    name,
                    cli,
                    db,
                } => runner.stop_machine(*product, name, cli, db),
                Step::DeleteMachine {
                    product,
                    name,
                    cli,
                    db,
                } => runner.delete_machine(*product, name, cli, db),
                Step::Reap {
                    pid,
                    start_time,
                    uid,
                    ..
                } => runner.reap(*pid, *start_time, *uid),
                Step::Detach { mountpoint } => {
                    let o = runner.detach(mountpoint);
                    if o.is_failed() {
                        still_mounted.push(mountpoint.clone());
                    }
                    o
                }
                Step::RemovePath { path, root, .. } => {
                    if !super::remove::exists(path) {
                        StepOutcome::skipped("already gone")
                    } else {
                        match super::remove::remove_path(path, root, home) {
                            Ok(r) => {
                                report.freed_bytes += r.allocated_bytes;
                                StepOutcome::done(format!(
                                    "removed {} file(s), {} dir(s)",
                                    r.files, r.dirs
                                ))
                            }
                            Err(e) => StepOutcome::failed(e.to_string()),
                        }
                    }
                }
                Step::RemoveDirIfEmpty { path, .. } => {
                    match super::remove::remove_dir_if_empty(path, home) {
                        Ok(true) => StepOutcome::done("removed"),
                        Ok(false) if !super::remove::exists(path) => {
                            StepOutcome::skipped("already gone")
                        }
                        Ok(false) => StepOutcome::skipped("kept: other files are still in it"),
                        Err(e) => StepOutcome::failed(e.to_string()),
                    }
                }
                Step::RemoveLauncher { link, target, .. } => remove_launcher(link, target, home),
                Step::RemovePathBlock { file } => {
                    match super::pathblock::remove(file, home, now_secs) {
                        Ok(Some(backup)) => {
                            let d = format!("backed up to {}", backup.display());
                            report.backups.push(backup);
                            StepOutcome::done(d)
                        }
                        Ok(None) => StepOutcome::skipped("no PATH block left in the file"),
                        Err(e) => StepOutcome::failed(e.to_string()),
                    }
                }
            }
        };
        report.records.push(StepRecord {
            index,
            summary: ps.summary.clone(),
            step: ps.step.clone(),
            result,
        });
    }
    report
}

fn remove_launcher(link: &Path, target: &Path, home: &Path) -> StepOutcome {
    match std::fs::symlink_metadata(link) {
        Err(_) => return StepOutcome::skipped("already gone"),
        Ok(m) if !m.file_type().is_symlink() => {
            return StepOutcome::skipped("no longer a symlink; left alone")
        }
        Ok(_) => {}
    }
    match std::fs::read_link(link) {
        Ok(t) if t == target => {}
        _ => return StepOutcome::skipped("points somewhere else now; left alone"),
    }
    let Some(dir) = link.parent() else {
        return StepOutcome::failed("no parent directory");
    };
    match super::remove::remove_path(link, dir, home) {
        Ok(_) => StepOutcome::done("removed"),
        Err(e) => StepOutcome::failed(e.to_string()),
    }
}

/// The real runner: the products' own CLIs, signals to verified processes, `hdiutil`.
#[derive(Debug, Clone)]
pub struct SystemRunner {
    pub cli_timeout: Duration,
    /// Time between SIGTERM and SIGKILL.
    pub grace: Duration,
    /// The exact environment commands run with (`None`: this process's own).
    pub env: Option<Vec<(String, String)>>,
}

impl Default for SystemRunner {
    fn default() -> Self {
        SystemRunner {
            cli_timeout: Duration::from_secs(120),
            grace: Duration::from_secs(2),
            env: None,
        }
    }
}

impl SystemRunner {
    /// A runner whose commands see exactly the audited environment (its HOME, PATH, XDG and
    /// product variables), so a CLI never acts on another HOME's state.
    pub fn for_env(env: &crate::env::EnvSnapshot) -> Self {
        let mut vars: Vec<(String, String)> = env
            .vars
            .iter()
            .filter(|(k, _)| k.as_str() != "HOME")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        vars.push(("HOME".into(), env.home.display().to_string()));
        SystemRunner {
            env: Some(vars),
            ..SystemRunner::default()
        }
    }
}

/// A finished command.
#[derive(Debug, Clone, Default)]
pub struct Captured {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub timed_out: bool,
}

impl Captured {
    pub fn text(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
    pub fn ok(&self) -> bool {
        self.code == Some(0)
    }
}

/// Run `program args…` with stdin closed, output captured, killed after `timeout`; with
/// `env`, in exactly that environment.
pub fn run_captured(
    program: &Path,
    args: &[&str],
    env: Option<&[(String, String)]>,
    timeout: Duration,
) -> std::io::Result<Captured> {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(vars) = env {
        cmd.env_clear();
        cmd.envs(vars.iter().map(|(k, v)| (k, v)));
    }
    let mut child = cmd.spawn()?;
    let mut out = child.stdout.take();
    let mut err = child.stderr.take();
    let t_out = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(o) = out.as_mut() {
            let _ = o.read_to_string(&mut s);
        }
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(e) = err.as_mut() {
            let _ = e.read_to_string(&mut s);
        }
        s
    });
    let start = Instant::now();
    let mut timed_out = false;
    let status = loop {
        if let Some(st) = child.try_wait()? {
            break Some(st);
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            timed_out = true;
            break child.wait().ok();
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Ok(Captured {
        code: status.and_then(|s| s.code()),
        stdout: t_out.join().unwrap_or_default(),
        stderr: t_err.join().unwrap_or_default(),
        timed_out,
    })
}

/// Upstream Celesto's sandbox id rule (`_validate_cleanup_id`): checked before any command is
/// built, so a crafted id never reaches the CLI.
pub fn valid_celesto_id(id: &str) -> bool {
    let b = id.as_bytes();
    let ok = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    match b.len() {
        0 => false,
        1 => ok(b[0]),
        n if n <= 64 => {
            ok(b[0]) && ok(b[n - 1]) && b[1..n - 1].iter().all(|&c| ok(c) || c == b'_' || c == b'-')
        }
        _ => false,
    }
}

fn current_record(
    product: Product,
    name: &str,
    db: &Path,
) -> Result<Option<MachineRecord>, String> {
    if std::fs::symlink_metadata(db).is_err() {
        return Ok(None);
    }
    let rows = match product {
        Product::Smolvm => read_smolvm_machines(db)?,
        Product::Celesto => read_celesto_rows(db)?,
    };
    Ok(rows.into_iter().find(|m| m.name == name))
}

/// What smolvm prints when a guest cannot freeze its file system (hazard 22).
const FS_SYNC_FAILURE: &str = "guest did not confirm filesystem synchronization";

impl SystemRunner {
    fn smolvm(&self, cli: &Path, args: &[&str]) -> Result<Captured, StepOutcome> {
        match run_captured(cli, args, self.env.as_deref(), self.cli_timeout) {
            Ok(c) if c.timed_out => Err(StepOutcome::failed(format!(
                "{} {} did not finish within {} s",
                cli.display(),
                args.join(" "),
                self.cli_timeout.as_secs()
            ))),
            Ok(c) => Ok(c),
            Err(e) => Err(StepOutcome::failed(format!(
                "could not run {}: {e}",
                cli.display()
            ))),
        }
    }

    /// VMM processes booting the smolvm machine `name` (by its machine directory hash).
    fn vmms_of_machine(&self, name: &str) -> Vec<(u32, u64, u32)> {
        let hash = crate::inventory::smolvm::vm_dir_hash(name);
        let procs = crate::procs::list();
        crate::procs::shape::detect_all(&procs)
            .into_iter()
            .filter(|(_, s)| match s {
                crate::procs::shape::VmmShape::SmolvmBootVm { vm_dir, .. } => {
                    vm_dir.file_name().and_then(|n| n.to_str()) == Some(hash.as_str())
                }
                _ => false,
            })
            .map(|(p, _)| (p.pid, p.start_time, p.uid))
            .collect()
    }
}

impl StepRunner for SystemRunner {
    fn stop_machine(&self, product: Product, name: &str, cli: &Path, db: &Path) -> StepOutcome {
        let rec = match current_record(product, name, db) {
            Ok(Some(r)) => r,
            // Never pass a name with no record: `stop` on a ghost name creates state (hazard 3).
            Ok(None) => return StepOutcome::skipped("no longer recorded; not passed to the CLI"),
            Err(e) => return StepOutcome::failed(e),
        };
        if rec.state == "paused" {
            return StepOutcome::skipped(
                "paused: smolvm refuses to stop it; it is deleted with --force instead",
            );
        }
        let c = match product {
            Product::Smolvm => self.smolvm(cli, &["machine", "stop", "--name", name]),
            Product::Celesto => {
                if !valid_celesto_id(name) {
                    return StepOutcome::failed("not a valid Celesto sandbox id; refused");
                }
                self.smolvm(cli, &["sandbox", "stop", name, "--json"])
            }
        };
        let c = match c {
            Ok(c) => c,
            Err(o) => return o,
        };
        let text = c.text();
        if c.ok() {
            StepOutcome::done(text.lines().last().unwrap_or("stopped").trim().to_string())
        } else if text.contains("saved execution") {
            StepOutcome::skipped("paused: deleted with --force instead")
        } else if product == Product::Smolvm && text.contains(FS_SYNC_FAILURE) {
            StepOutcome::skipped(
                "the guest could not sync its file system; the delete step ends its VM process \
                 and deletes it",
            )
        } else {
            StepOutcome::failed(format!("exit {:?}: {}", c.code, text.trim()))
        }
    }

    fn delete_machine(&self, product: Product, name: &str, cli: &Path, db: &Path) -> StepOutcome {
        match current_record(product, name, db) {
            Ok(Some(_)) => {}
            Ok(None) => return StepOutcome::skipped("no longer recorded; not passed to the CLI"),
            Err(e) => return StepOutcome::failed(e),
        }
        let args: Vec<&str> = match product {
            // Never without --force: a non-TTY exits 1 (v1.17+) or prints `Cancelled` and
            // exits 0 with the machine left in place (hazard 12).
            Product::Smolvm => vec!["machine", "delete", "--name", name, "--force"],
            Product::Celesto => {
                if !valid_celesto_id(name) {
                    return StepOutcome::failed("not a valid Celesto sandbox id; refused");
                }
                vec!["sandbox", "delete", name, "--json"]
            }
        };
        let mut c = match self.smolvm(cli, &args) {
            Ok(c) => c,
            Err(o) => return o,
        };
        if product == Product::Smolvm && !c.ok() && c.text().contains(FS_SYNC_FAILURE) {
            // Hazard 22: the VM was left alive for retry; end its VMM, then delete again.
            for (pid, st, uid) in self.vmms_of_machine(name) {
                if let StepOutcome::Failed { error } = self.reap(pid, st, uid) {
                    return StepOutcome::failed(format!(
                        "the guest could not sync its file system and its VM process could not \
                         be ended: {error}"
                    ));
                }
            }
            c = match self.smolvm(cli, &args) {
                Ok(c) => c,
                Err(o) => return o,
            };
        }
        match current_record(product, name, db) {
            Ok(None) => StepOutcome::done(match product {
                Product::Smolvm => c
                    .text()
                    .lines()
                    .rfind(|l| !l.trim().is_empty())
                    .unwrap_or("deleted")
                    .trim()
                    .to_string(),
                Product::Celesto => format!("deleted through {}", cli.display()),
            }),
            Ok(Some(_)) => StepOutcome::failed(format!(
                "still recorded after delete (exit {:?}): {}",
                c.code,
                c.text().trim()
            )),
            Err(e) => StepOutcome::failed(e),
        }
    }

    fn reap(&self, pid: u32, start_time: u64, uid: u32) -> StepOutcome {
        reap_verified(pid, start_time, uid, self.grace)
    }

    fn detach(&self, mountpoint: &Path) -> StepOutcome {
        let hdiutil = Path::new("hdiutil");
        let mp = mountpoint.to_string_lossy();
        let env = self.env.as_deref();
        let first = run_captured(hdiutil, &["detach", &mp], env, self.cli_timeout);
        match first {
            Ok(c) if c.ok() => StepOutcome::done("detached"),
            Ok(_) => match run_captured(hdiutil, &["detach", &mp, "-force"], env, self.cli_timeout)
            {
                Ok(c) if c.ok() => StepOutcome::done("detached with -force"),
                Ok(c) => StepOutcome::failed(format!(
                    "hdiutil detach -force failed: {}",
                    c.text().trim()
                )),
                Err(e) => StepOutcome::failed(format!("could not run hdiutil: {e}")),
            },
            Err(e) => StepOutcome::failed(format!("could not run hdiutil: {e}")),
        }
    }
}

/// SIGTERM, wait up to `grace`, SIGKILL; every signal only while `pid` is still the process
/// with `start_time` and `uid` (Linux `/proc`).
pub fn reap_verified(pid: u32, start_time: u64, uid: u32, grace: Duration) -> StepOutcome {
    #[cfg(target_os = "linux")]
    {
        use rustix::process::{kill_process, Pid, Signal};
        let same = || {
            crate::procs::linux::is_same_process(pid, start_time)
                && std::fs::read(format!("/proc/{pid}/status"))
                    .ok()
                    .and_then(|b| crate::procs::linux::parse_status_uid(&b))
                    == Some(uid)
        };
        let alive = || {
            // A zombie child of ours counts as gone.
            std::fs::read(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|b| {
                    let st = crate::procs::linux::parse_stat(&b)?;
                    let close = b.iter().rposition(|&c| c == b')')?;
                    let state = b.get(close + 2).copied()?;
                    Some(st.start_time == start_time && state != b'Z')
                })
                .unwrap_or(false)
        };
        if !same() {
            return StepOutcome::skipped(
                "already gone (or the pid now belongs to another process)",
            );
        }
        let Some(p) = Pid::from_raw(pid as i32) else {
            return StepOutcome::failed("invalid pid");
        };
        if let Err(e) = kill_process(p, Signal::TERM) {
            return StepOutcome::failed(format!("SIGTERM: {e}"));
        }
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if !alive() {
                return StepOutcome::done("ended with SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        if same() {
            let _ = kill_process(p, Signal::KILL);
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if !alive() {
                return StepOutcome::done("ended with SIGKILL");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        StepOutcome::failed("still alive after SIGKILL")
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (pid, start_time, uid, grace);
        StepOutcome::failed("ending VM processes is not wired in on this platform yet")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn celesto_ids_are_validated_like_upstream() {
        assert!(valid_celesto_id("real1"));
        assert!(valid_celesto_id("a"));
        assert!(valid_celesto_id("a-b_c"));
        assert!(!valid_celesto_id("-a"));
        assert!(!valid_celesto_id("a-"));
        assert!(!valid_celesto_id("../x"));
        assert!(!valid_celesto_id("A"));
        assert!(!valid_celesto_id(""));
        assert!(!valid_celesto_id(&"a".repeat(65)));
    }
}
