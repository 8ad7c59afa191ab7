//! Stopping and deleting machines through the products' own CLIs, with every documented trap
//! handled.
//!
//! smol-machines smolvm (`machine stop|delete|resume --name N`):
//! * a name with no record is never passed to the CLI: `stop` on a ghost name creates
//!   `vms/<hash>/` and `.<name>.fork-operation.lock` (hazard 3), so the DB is read first
//!   (read-only) and the answer is [`MachineOutcome::NotFound`] without running anything;
//! * `delete` always gets `--force` (without it a non-TTY exits 1, or through v1.16 prints
//!   `Cancelled` and exits 0: hazard 12); `--cascade` only when asked;
//! * a paused machine refuses `stop` (`machine has saved execution; use resume or delete`);
//! * `is not running (state: S)` exits 0;
//! * `guest did not confirm filesystem synchronization` (hazard 22): reap, then delete;
//! * a missing, hanging (timeout: its process group is killed) or unexpected CLI.
//!
//! Celesto (`sandbox stop|delete <id> --json`): the id is validated with upstream's own rule
//! before any command is built (B6), the row is read first, and a running row whose pid no
//! longer belongs to the recorded process is refused, because Celesto would kill whatever now
//! has that pid (B7).

use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::env::EnvSnapshot;
use crate::exec::reap::{reap, ProcessRef, ReapOptions, ReapOutcome};

/// Default time a CLI call may take before its process group is killed.
pub(crate) const DEFAULT_CLI_TIMEOUT: Duration = Duration::from_secs(120);

/// What a stop, delete or resume did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub(crate) enum MachineOutcome {
    Stopped,
    Deleted,
    /// Resume succeeded (smolvm `machine resume`).
    Resumed,
    /// Stop on a machine that was not running (exit 0 upstream).
    NotRunning {
        state: String,
    },
    /// `stop` refused: the machine holds saved execution. Offer resume, or delete.
    Paused,
    /// No record with that name: the CLI was not run.
    NotFound,
    /// The CLI asked for confirmation (it never should: `--force` is always passed).
    NeedsConfirmation,
    /// The guest could not freeze its filesystem; the VMM is alive. Offer reap, then delete.
    FsSyncFailed,
    CliMissing,
    /// The CLI did not finish in time; its process group was killed.
    TimedOut,
    /// The name or id is not one upstream accepts: nothing was run (Celesto B6).
    InvalidName {
        name: String,
    },
    /// The record says running with a pid that now belongs to another process (or could not be
    /// verified): running the CLI would signal that process (Celesto B7). Nothing was run.
    PidNotVerified {
        pid: u32,
    },
    /// The inventory could not be read, so the name could not be checked: nothing was run.
    InventoryUnreadable {
        error: String,
    },
    Unexpected {
        code: Option<i32>,
        stdout: String,
        stderr: String,
    },
}

/// Output of one CLI run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CapturedRun {
    /// Exit code; `None` when killed by a signal.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// Why a CLI run produced no exit status.
#[derive(Debug)]
pub(crate) enum RunError {
    /// The program does not exist or cannot be executed.
    Missing(std::io::Error),
    /// It ran past the timeout; its process group was killed.
    TimedOut {
        stdout: String,
        stderr: String,
    },
    Io(std::io::Error),
}

/// Run `program args` with exactly `env` (nothing inherited), stdin from /dev/null, in its own
/// process group, capturing output. Past `timeout` the whole group gets SIGTERM, then SIGKILL.
pub(crate) fn run_captured(
    program: &Path,
    args: &[OsString],
    env: &[(OsString, OsString)],
    timeout: Duration,
) -> Result<CapturedRun, RunError> {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(program);
    cmd.args(args)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied
            ) =>
        {
            return Err(RunError::Missing(e))
        }
        Err(e) => return Err(RunError::Io(e)),
    };
    let pgid = child.id();
    let (tx, rx) = mpsc::channel::<(u8, Vec<u8>)>();
    for (tag, pipe) in [
        (
            1u8,
            child
                .stdout
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        ),
        (
            2u8,
            child
                .stderr
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        ),
    ] {
        if let Some(mut p) = pipe {
            let tx = tx.clone();
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                let _ = p.read_to_end(&mut buf);
                let _ = tx.send((tag, buf));
            });
        }
    }
    drop(tx);
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) => {}
            Err(e) => return Err(RunError::Io(e)),
        }
        if Instant::now() >= deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let timed_out = status.is_none();
    if timed_out {
        kill_group(pgid);
        let _ = child.wait();
    }
    // Collect output; a grandchild that kept a pipe open must not hang us.
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let collect_until = Instant::now() + Duration::from_secs(2);
    for _ in 0..2 {
        let left = collect_until.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok((1, b)) => out = b,
            Ok((_, b)) => err = b,
            Err(_) => break,
        }
    }
    let stdout = String::from_utf8_lossy(&out).into_owned();
    let stderr = String::from_utf8_lossy(&err).into_owned();
    let Some(st) = status else {
        return Err(RunError::TimedOut { stdout, stderr });
    };
    Ok(CapturedRun {
        code: st.code(),
        stdout,
        stderr,
    })
}

/// SIGTERM the process group, give it a moment, then SIGKILL it.
fn kill_group(pgid: u32) {
    use rustix::process::{kill_process_group, test_kill_process_group, Pid, Signal};
    let Some(pg) = Pid::from_raw(pgid as i32) else {
        return;
    };
    let _ = kill_process_group(pg, Signal::TERM);
    let until = Instant::now() + Duration::from_millis(500);
    while Instant::now() < until {
        if test_kill_process_group(pg).is_err() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = kill_process_group(pg, Signal::KILL);
}

/// Environment variables passed through to a product CLI (everything else is dropped, so the
/// CLI resolves the same state the scan saw and nothing more).
fn passthrough_env(env: &EnvSnapshot, prefixes: &[&str]) -> Vec<(OsString, OsString)> {
    const KEEP: &[&str] = &[
        "PATH",
        "USER",
        "LOGNAME",
        "LANG",
        "LC_ALL",
        "TMPDIR",
        "XDG_DATA_HOME",
        "XDG_CACHE_HOME",
        "XDG_CONFIG_HOME",
        "XDG_STATE_HOME",
        "XDG_RUNTIME_DIR",
        "SUDO_USER",
        "SUDO_UID",
    ];
    let mut out: Vec<(OsString, OsString)> =
        vec![("HOME".into(), env.home.clone().into_os_string())];
    if env.var("PATH").is_none() {
        // Launchers are scripts (`#!/usr/bin/env bash`, Python entry points).
        out.push(("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()));
    }
    for (k, v) in &env.vars {
        if k == "HOME" || v.trim().is_empty() {
            continue;
        }
        if KEEP.contains(&k.as_str()) || prefixes.iter().any(|p| k.starts_with(p)) {
            out.push((k.into(), v.into()));
        }
    }
    out
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// A Python entry-point script (`#!…python…`): Celesto's or PyPI smolvm's `smolvm`, not
/// smol-machines'.
fn is_python_script(p: &Path) -> bool {
    let mut head = [0u8; 256];
    let n = std::fs::File::open(p)
        .and_then(|mut f| f.read(&mut head))
        .unwrap_or(0);
    let first = head[..n].split(|b| *b == b'\n').next().unwrap_or(&[]);
    first.starts_with(b"#!") && first.windows(6).any(|w| w == b"python")
}

fn path_dirs(env: &EnvSnapshot) -> Vec<PathBuf> {
    env.var("PATH")
        .map(|p| std::env::split_paths(OsStr::new(p)).collect())
        .unwrap_or_default()
}

/// smol-machines smolvm's CLI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SmolvmCli {
    pub program: PathBuf,
    /// The complete environment of every call (nothing else is inherited).
    pub env: Vec<(OsString, OsString)>,
    pub timeout: Duration,
    /// `server/smolvm.db` of the state this CLI acts on: read (read-only) before every call.
    pub db: PathBuf,
}

impl SmolvmCli {
    /// Find the CLI for this environment: `~/.smolvm/smolvm`, `~/.local/bin/smolvm`, `smolvm`
    /// on `PATH` (skipping Python entry points, which are the other SmolVM), `/opt/smolvm`,
    /// `/usr/local/bin`, `/usr/bin`, Homebrew, then `smol-vmm` (the PyPI wheel's copy) on `PATH`.
    pub(crate) fn locate(env: &EnvSnapshot, db: impl Into<PathBuf>) -> Option<SmolvmCli> {
        let home = &env.home;
        let mut candidates = vec![home.join(".smolvm/smolvm"), home.join(".local/bin/smolvm")];
        candidates.extend(path_dirs(env).into_iter().map(|d| d.join("smolvm")));
        candidates.extend(
            [
                "/opt/smolvm/smolvm",
                "/usr/local/bin/smolvm",
                "/usr/bin/smolvm",
                "/opt/homebrew/bin/smolvm",
            ]
            .iter()
            .map(PathBuf::from),
        );
        candidates.extend(path_dirs(env).into_iter().map(|d| d.join("smol-vmm")));
        let program = candidates
            .into_iter()
            .find(|p| is_executable(p) && !is_python_script(p))?;
        Some(SmolvmCli {
            program,
            env: passthrough_env(env, &["SMOLVM_"]),
            timeout: DEFAULT_CLI_TIMEOUT,
            db: db.into(),
        })
    }

    /// `smolvm machine stop --name N`.
    pub(crate) fn stop(&self, name: &str) -> MachineOutcome {
        self.call(name, Verb::Stop, &["machine", "stop", "--name", name])
    }

    /// `smolvm machine delete --name N --force [--cascade]`.
    pub(crate) fn delete(&self, name: &str, cascade: bool) -> MachineOutcome {
        let mut args = vec!["machine", "delete", "--name", name, "--force"];
        if cascade {
            args.push("--cascade");
        }
        self.call(name, Verb::Delete, &args)
    }

    /// The way out of [`MachineOutcome::FsSyncFailed`] (hazard 22): reap the machine's VMM
    /// (verified pid + start time), and only once its death is confirmed run
    /// `machine delete --force` again. Nothing is deleted while the VMM may still be alive (#787).
    pub(crate) fn delete_after_reap(
        &self,
        name: &str,
        vmm: &ProcessRef,
        cascade: bool,
        opts: &ReapOptions,
    ) -> (ReapOutcome, Option<MachineOutcome>) {
        if let Err(o) = self.precheck(name) {
            // Nothing is signalled for a machine that cannot be checked (or does not exist).
            let error = "not attempted: the machine record could not be confirmed".to_string();
            return (ReapOutcome::Failed { error }, Some(o));
        }
        let outcome = reap(vmm, opts);
        if outcome.death_confirmed() {
            let deleted = self.delete(name, cascade);
            (outcome, Some(deleted))
        } else {
            (outcome, None)
        }
    }

    /// `smolvm machine resume --name N` (the way out of a paused machine besides delete).
    #[cfg(test)]
    pub fn resume(&self, name: &str) -> MachineOutcome {
        self.call(name, Verb::Resume, &["machine", "resume", "--name", name])
    }

    /// The name is acceptable and has a record (read-only).
    fn precheck(&self, name: &str) -> Result<String, MachineOutcome> {
        if !valid_smolvm_name(name) {
            return Err(MachineOutcome::InvalidName { name: name.into() });
        }
        match smolvm_record_state(&self.db, name) {
            Ok(Some(state)) => Ok(state),
            Ok(None) => Err(MachineOutcome::NotFound),
            Err(error) => Err(MachineOutcome::InventoryUnreadable { error }),
        }
    }

    fn call(&self, name: &str, verb: Verb, args: &[&str]) -> MachineOutcome {
        if let Err(o) = self.precheck(name) {
            return o;
        }
        let run = run_cli(&self.program, args, &self.env, self.timeout);
        outcome_of(run, |run| classify_smolvm(verb, name, run))
    }
}

/// Runs a product's CLI with `args`, as [`run_captured`] does.
fn run_cli(
    program: &Path,
    args: &[&str],
    env: &[(OsString, OsString)],
    timeout: Duration,
) -> Result<CapturedRun, RunError> {
    let args: Vec<OsString> = args.iter().map(OsString::from).collect();
    run_captured(program, &args, env, timeout)
}

/// What a product CLI's run came to: its output as `classify` reads it, or the CLI missing,
/// timed out or not started, the same way for both products.
fn outcome_of(
    run: Result<CapturedRun, RunError>,
    classify: impl FnOnce(&CapturedRun) -> MachineOutcome,
) -> MachineOutcome {
    match run {
        Ok(run) => classify(&run),
        Err(RunError::Missing(_)) => MachineOutcome::CliMissing,
        Err(RunError::TimedOut { .. }) => MachineOutcome::TimedOut,
        Err(RunError::Io(e)) => MachineOutcome::Unexpected {
            code: None,
            stdout: String::new(),
            stderr: e.to_string(),
        },
    }
}

/// Which smolvm subcommand produced an output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verb {
    Stop,
    Delete,
    /// Reached from the tests only (`SmolvmCli::resume`).
    #[cfg_attr(not(test), allow(dead_code))]
    Resume,
}

/// A name that can only ever be one CLI argument: not empty, no control characters, and not
/// starting with `-` (which the CLI would read as an option).
fn valid_smolvm_name(name: &str) -> bool {
    !name.is_empty() && !name.starts_with('-') && !name.chars().any(|c| c.is_control())
}

/// Map a smolvm CLI run to an outcome (1.32.2 messages, and the documented earlier ones).
pub(crate) fn classify_smolvm(verb: Verb, name: &str, run: &CapturedRun) -> MachineOutcome {
    let both = format!("{}\n{}", run.stdout, run.stderr);
    let unexpected = || MachineOutcome::Unexpected {
        code: run.code,
        stdout: run.stdout.clone(),
        stderr: run.stderr.clone(),
    };
    if both.contains("did not confirm filesystem synchronization") {
        return MachineOutcome::FsSyncFailed;
    }
    if both.contains("machine has saved execution") {
        return MachineOutcome::Paused;
    }
    if both.contains("needs confirmation") || both.contains("Cancelled") {
        return MachineOutcome::NeedsConfirmation;
    }
    if run.code != Some(0) {
        if both.contains(&format!("vm not found: {name}"))
            || both.contains("\"code\":\"NOT_FOUND\"")
        {
            return MachineOutcome::NotFound;
        }
        return unexpected();
    }
    match verb {
        Verb::Stop => {
            if let Some(state) = not_running_state(&both, name) {
                MachineOutcome::NotRunning { state }
            } else if has_line(&run.stdout, &format!("Stopped machine: {name}")) {
                MachineOutcome::Stopped
            } else {
                unexpected()
            }
        }
        Verb::Delete => {
            if has_line(&run.stdout, &format!("Deleted machine: {name}")) {
                MachineOutcome::Deleted
            } else {
                unexpected()
            }
        }
        Verb::Resume => MachineOutcome::Resumed,
    }
}

fn has_line(text: &str, wanted: &str) -> bool {
    text.lines().any(|l| l.trim() == wanted)
}

/// `Machine 'N' is not running (state: S)` (1.32.2) or `Machine 'N' is not running` (earlier).
fn not_running_state(text: &str, name: &str) -> Option<String> {
    let prefix = format!("Machine '{name}' is not running");
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with(&prefix))?;
    let rest = line[prefix.len()..].trim();
    let state = rest
        .strip_prefix("(state:")
        .and_then(|r| r.strip_suffix(')'))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    Some(state)
}

fn open_ro(db: &Path) -> Result<Option<rusqlite::Connection>, String> {
    // The same side-effect-free snapshot the scan reads (never opened by SQLite in place).
    match crate::inventory::snapshot::open_snapshot(db, crate::inventory::snapshot::BUSY_TIMEOUT) {
        Ok(c) => Ok(Some(c)),
        Err(crate::inventory::InventoryError::Missing(_)) => Ok(None),
        Err(e) => Err(e.to_string()),
    }
}

/// The recorded state of one smolvm machine (read-only, one short statement), `None` when no
/// record has that name or there is no DB.
pub(crate) fn smolvm_record_state(db: &Path, name: &str) -> Result<Option<String>, String> {
    let Some(conn) = open_ro(db)? else {
        return Ok(None);
    };
    let data: Option<Vec<u8>> = match conn.query_row(
        "SELECT CAST(data AS BLOB) FROM vms WHERE name = ?1",
        [name],
        |r| r.get(0),
    ) {
        Ok(d) => Some(d),
        Err(rusqlite::Error::QueryReturnedNoRows) => None,
        Err(e) => return Err(format!("{}: {e}", db.display())),
    };
    let Some(data) = data else {
        return Ok(None);
    };
    let v: serde_json::Value = serde_json::from_slice(&data)
        .map_err(|e| format!("{}: record {name:?}: {e}", db.display()))?;
    Ok(Some(
        v.get("state")
            .and_then(|s| s.as_str())
            .unwrap_or("unknown")
            .to_string(),
    ))
}

/// Celesto's own id rule (`_validate_cleanup_id`):
/// `[a-z0-9](?:[a-z0-9_-]{0,62}[a-z0-9])?`.
pub(crate) fn valid_celesto_id(id: &str) -> bool {
    let b = id.as_bytes();
    let end = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    let mid = |c: &u8| end(c) || *c == b'_' || *c == b'-';
    match b.len() {
        0 => false,
        1 => end(&b[0]),
        2..=64 => end(&b[0]) && end(&b[b.len() - 1]) && b[1..b.len() - 1].iter().all(mid),
        _ => false,
    }
}

/// A Celesto `vms` row as far as stop/delete care.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CelestoRow {
    pub status: String,
    pub pid: Option<i64>,
}

/// One Celesto row (read-only), `None` when there is no such row or no DB.
pub(crate) fn celesto_row(db: &Path, id: &str) -> Result<Option<CelestoRow>, String> {
    let Some(conn) = open_ro(db)? else {
        return Ok(None);
    };
    match conn.query_row("SELECT status, pid FROM vms WHERE id = ?1", [id], |r| {
        Ok(CelestoRow {
            status: r.get(0)?,
            pid: r.get(1)?,
        })
    }) {
        Ok(row) => Ok(Some(row)),
        Err(rusqlite::Error::QueryReturnedNoRows) => Ok(None),
        Err(e) => Err(format!("{}: {e}", db.display())),
    }
}

/// Celesto's CLI (`celesto sandbox …`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CelestoCli {
    pub program: PathBuf,
    pub env: Vec<(OsString, OsString)>,
    pub timeout: Duration,
    /// `celesto.db` of the data directory this CLI acts on.
    pub db: PathBuf,
}

impl CelestoCli {
    /// `celesto` on `PATH`, with the environment that keeps it quiet and pointed at the same
    /// data directory (`CELESTO_*`, no telemetry, no version check, no `sg kvm` re-exec).
    pub(crate) fn locate(env: &EnvSnapshot, db: impl Into<PathBuf>) -> Option<CelestoCli> {
        let program = path_dirs(env)
            .into_iter()
            .map(|d| d.join("celesto"))
            .chain([env.home.join(".local/bin/celesto")])
            .find(|p| is_executable(p))?;
        let mut e = passthrough_env(env, &["CELESTO_"]);
        for (k, v) in [
            ("CELESTO_NO_TELEMETRY", "1"),
            ("DO_NOT_TRACK", "1"),
            ("CELESTO_DISABLE_VERSION_CHECK", "1"),
            ("CELESTO_NO_KVM_REEXEC", "1"),
        ] {
            if !e.iter().any(|(ek, _)| ek == k) {
                e.push((k.into(), v.into()));
            }
        }
        Some(CelestoCli {
            program,
            env: e,
            timeout: DEFAULT_CLI_TIMEOUT,
            db: db.into(),
        })
    }

    /// `celesto sandbox stop <id> --json`. `process` is the VMM identity from the scan: a row
    /// that says running with a live pid is stopped only when that pid is still this process.
    pub(crate) fn stop(&self, id: &str, process: Option<&ProcessRef>) -> MachineOutcome {
        let row = match self.precheck(id, process) {
            Ok(row) => row,
            Err(o) => return o,
        };
        if !matches!(row.status.as_str(), "running" | "paused") {
            return MachineOutcome::NotRunning { state: row.status };
        }
        self.run_json(id, &[self.noun(), "stop", id, "--json"], CelestoVerb::Stop)
    }

    /// `celesto sandbox delete <id> --json` (it stops a running sandbox first, by pid: the same
    /// identity rule as [`CelestoCli::stop`] applies).
    pub(crate) fn delete(&self, id: &str, process: Option<&ProcessRef>) -> MachineOutcome {
        if let Err(o) = self.precheck(id, process) {
            return o;
        }
        self.run_json(
            id,
            &[self.noun(), "delete", id, "--json"],
            CelestoVerb::Delete,
        )
    }

    fn precheck(
        &self,
        id: &str,
        process: Option<&ProcessRef>,
    ) -> Result<CelestoRow, MachineOutcome> {
        if !valid_celesto_id(id) {
            return Err(MachineOutcome::InvalidName { name: id.into() });
        }
        let row = match celesto_row(&self.db, id) {
            Ok(Some(row)) => row,
            Ok(None) => return Err(MachineOutcome::NotFound),
            Err(error) => return Err(MachineOutcome::InventoryUnreadable { error }),
        };
        if matches!(row.status.as_str(), "running" | "paused") {
            if let Some(pid) = row.pid.filter(|p| *p > 0) {
                let pid = u32::try_from(pid).unwrap_or(u32::MAX);
                if let Some(now) = ProcessRef::current(pid) {
                    // A live process holds the pid: Celesto will SIGTERM/SIGKILL it.
                    let verified =
                        process.is_some_and(|p| p.pid == pid && p.start_time == now.start_time);
                    if !verified {
                        return Err(MachineOutcome::PidNotVerified { pid });
                    }
                }
            }
        }
        Ok(row)
    }

    /// `computer`, Celesto's public noun from 0.1.10 (`sandbox` stays an alias), when the
    /// installed version is known to have it; `sandbox` otherwise.
    pub(crate) fn noun(&self) -> &'static str {
        match celesto_version_of(&self.program) {
            Some(v) if crate::upstream::celesto_uses_computer_noun(&v) => "computer",
            _ => "sandbox",
        }
    }

    fn run_json(&self, id: &str, args: &[&str], verb: CelestoVerb) -> MachineOutcome {
        let run = run_cli(&self.program, args, &self.env, self.timeout);
        outcome_of(run, |run| classify_celesto(verb, id, run))
    }
}

/// The version of the `celesto` distribution a CLI belongs to: `<venv>/bin/celesto` (a launcher
/// symlink resolved) next to `<venv>/lib/python*/site-packages/celesto-<v>.dist-info`.
fn celesto_version_of(program: &Path) -> Option<String> {
    let real = std::fs::canonicalize(program).ok()?;
    let venv = real.parent()?.parent()?;
    crate::install::site_dirs(venv)
        .iter()
        .find_map(|site| crate::install::dist_info_version(site, "celesto"))
}

/// Which Celesto subcommand produced an envelope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CelestoVerb {
    Stop,
    Delete,
}

/// Map a `--json` envelope (`{ok, command, exit_code, data, error}`) to an outcome.
pub(crate) fn classify_celesto(verb: CelestoVerb, id: &str, run: &CapturedRun) -> MachineOutcome {
    let unexpected = || MachineOutcome::Unexpected {
        code: run.code,
        stdout: run.stdout.clone(),
        stderr: run.stderr.clone(),
    };
    let Ok(env) = serde_json::from_str::<serde_json::Value>(run.stdout.trim()) else {
        return unexpected();
    };
    let expected = match verb {
        CelestoVerb::Stop => ["sandbox.stop", "computer.stop"],
        CelestoVerb::Delete => ["sandbox.delete", "computer.delete"],
    };
    if !env
        .get("command")
        .and_then(|c| c.as_str())
        .is_some_and(|c| expected.contains(&c))
    {
        return unexpected();
    }
    let ok = env.get("ok").and_then(|v| v.as_bool()) == Some(true) && run.code == Some(0);
    let not_found = |msg: &str| msg.contains("was not found");
    match verb {
        CelestoVerb::Stop => {
            if ok {
                let status = env
                    .pointer("/data/vm/status")
                    .and_then(|s| s.as_str())
                    .unwrap_or("");
                return if status == "stopped" {
                    MachineOutcome::Stopped
                } else {
                    unexpected()
                };
            }
            let msg = env
                .pointer("/error/message")
                .and_then(|m| m.as_str())
                .unwrap_or("");
            if not_found(msg) {
                MachineOutcome::NotFound
            } else {
                unexpected()
            }
        }
        CelestoVerb::Delete => {
            let deleted = env
                .pointer("/data/deleted")
                .and_then(|d| d.as_array())
                .is_some_and(|a| a.iter().any(|v| v.as_str() == Some(id)));
            if ok && deleted {
                return MachineOutcome::Deleted;
            }
            let failed_msg = env
                .pointer("/data/failed")
                .and_then(|d| d.as_array())
                .and_then(|a| {
                    a.iter()
                        .find(|f| f.get("vm_id").and_then(|v| v.as_str()) == Some(id))
                })
                .and_then(|f| f.get("error").and_then(|e| e.as_str()))
                .unwrap_or("");
            if not_found(failed_msg) {
                MachineOutcome::NotFound
            } else {
                unexpected()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(code: i32, out: &str, err: &str) -> CapturedRun {
        CapturedRun {
            code: Some(code),
            stdout: out.into(),
            stderr: err.into(),
        }
    }

    #[test]
    fn smolvm_messages_map_to_outcomes() {
        use MachineOutcome::*;
        let c = |v, r: CapturedRun| classify_smolvm(v, "demo", &r);
        assert_eq!(
            c(
                Verb::Stop,
                run(0, "Machine 'demo' is not running (state: created)\n", "")
            ),
            NotRunning {
                state: "created".into()
            }
        );
        assert_eq!(
            c(Verb::Stop, run(0, "Machine 'demo' is not running\n", "")),
            NotRunning {
                state: "unknown".into()
            }
        );
        assert_eq!(
            c(
                Verb::Stop,
                run(0, "Stopping machine 'demo'...\nStopped machine: demo\n", "")
            ),
            Stopped
        );
        assert_eq!(
            c(
                Verb::Stop,
                run(1, "", "Error: agent operation failed: stop: machine has saved execution; use resume or delete\n")
            ),
            Paused
        );
        assert_eq!(
            c(
                Verb::Stop,
                run(
                    1,
                    "",
                    "stop: machine has saved execution; use resume or delete"
                )
            ),
            Paused
        );
        assert_eq!(
            c(Verb::Delete, run(1, "", "Error: agent operation failed: delete: machine 'demo' needs confirmation but stdin is not a terminal; pass --force to delete it, or --cascade to remove it together with any machines branched from it\n")),
            NeedsConfirmation
        );
        assert_eq!(
            c(
                Verb::Delete,
                run(0, "Delete machine 'demo'? [y/N] Cancelled\n", "")
            ),
            NeedsConfirmation
        );
        assert_eq!(
            c(Verb::Delete, run(1, "", "Error: agent operation failed: stop agent: guest did not confirm filesystem synchronization; left the VM alive for retry: agent operation failed: shutdown ack: freeze /oldroot/mnt/overlay: I/O error (os error 5)\n")),
            FsSyncFailed
        );
        assert_eq!(
            c(
                Verb::Delete,
                run(
                    0,
                    "Cleaning up data directory for vm: demo\nDeleted machine: demo\n",
                    "WARN unable to lock UID registry; retaining assignment\n"
                )
            ),
            Deleted
        );
        assert_eq!(
            c(Verb::Delete, run(1, "", "Error: vm not found: demo\n")),
            NotFound
        );
        // Success exit with words we do not know is not taken as success.
        assert!(matches!(
            c(Verb::Delete, run(0, "Deleted machine: other\n", "")),
            Unexpected { .. }
        ));
        assert!(matches!(
            c(Verb::Stop, run(0, "all good\n", "")),
            Unexpected { .. }
        ));
        assert!(matches!(
            c(
                Verb::Stop,
                run(2, "", "error: unexpected argument '--name'")
            ),
            Unexpected { code: Some(2), .. }
        ));
    }

    #[test]
    fn b6_celesto_id_rule() {
        for ok in ["a", "real1", "a-b_c9", &"a".repeat(64)] {
            assert!(valid_celesto_id(ok), "{ok}");
        }
        for bad in [
            "",
            "../../outside",
            "A",
            "a.b",
            "-a",
            "a-",
            "_a",
            &"a".repeat(65),
            "a b",
            "a/b",
        ] {
            assert!(!valid_celesto_id(bad), "{bad}");
        }
    }

    #[test]
    fn celesto_envelopes_map_to_outcomes() {
        use MachineOutcome::*;
        let stop_ok = r#"{"ok": true, "command": "sandbox.stop", "exit_code": 0,
            "data": {"vm": {"name": "c1", "status": "stopped"}}, "error": null}"#;
        assert_eq!(
            classify_celesto(CelestoVerb::Stop, "c1", &run(0, stop_ok, "")),
            Stopped
        );
        let stop_nf = r#"{"ok": false, "command": "sandbox.stop", "exit_code": 1, "data": null,
            "error": {"code": "runtime_error", "message": "Computer 'c1' was not found; run 'celesto computer list --all' to choose one."}}"#;
        assert_eq!(
            classify_celesto(CelestoVerb::Stop, "c1", &run(1, stop_nf, "")),
            NotFound
        );
        let del_ok = r#"{"ok": true, "command": "sandbox.delete", "exit_code": 0, "data": {"targets": ["c1"],
            "deleted": ["c1"], "failed": [], "summary": {"target_count": 1, "deleted_count": 1, "failed_count": 0},
            "dry_run": false, "reconciled_stale_ids": null}, "error": null}"#;
        assert_eq!(
            classify_celesto(CelestoVerb::Delete, "c1", &run(0, del_ok, "")),
            Deleted
        );
        let del_fail = r#"{"ok": false, "command": "sandbox.delete", "exit_code": 1, "data": {"targets": ["c1"],
            "deleted": [], "failed": [{"vm_id": "c1", "error": "boom"}]}, "error": null}"#;
        assert!(matches!(
            classify_celesto(CelestoVerb::Delete, "c1", &run(1, del_fail, "")),
            Unexpected { code: Some(1), .. }
        ));
        assert!(matches!(
            classify_celesto(CelestoVerb::Delete, "c1", &run(0, "Deleted.", "")),
            Unexpected { .. }
        ));
        // An envelope for another command is not trusted.
        assert!(matches!(
            classify_celesto(CelestoVerb::Delete, "c1", &run(0, stop_ok, "")),
            Unexpected { .. }
        ));
    }

    #[test]
    fn outcomes_serialise_with_a_tag() {
        let v = serde_json::to_value(MachineOutcome::NotRunning {
            state: "created".into(),
        })
        .unwrap();
        assert_eq!(
            v,
            serde_json::json!({"outcome": "not_running", "state": "created"})
        );
        let v = serde_json::to_value(MachineOutcome::FsSyncFailed).unwrap();
        assert_eq!(v, serde_json::json!({"outcome": "fs_sync_failed"}));
    }
}
