//! Reaping orphaned VM processes: only this user's, only after proving identity (pid **and**
//! start time), SIGTERM, a grace period, SIGKILL, and a confirmed death before anything that
//! process held is removed.
//!
//! On Linux the process is opened as a pidfd *before* its identity is checked, and every signal
//! goes through that pidfd, so a pid recycled after the check can never receive the signal
//! (Celesto B7 kills by bare pid; smolvm #787 removed storage under a live VMM). Death is observed
//! by polling the pidfd, which becomes readable when the process exits (a zombie counts as dead:
//! it holds no files any more).
//!
//! Elsewhere (macOS, or a Linux kernel without pidfds) the same sequence runs through a
//! [`ProcessProbe`], re-checking the start time right before every signal.

use std::io;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// The process a plan means to reap, as it was when scanned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ProcessRef {
    /// Process id.
    pub pid: u32,
    /// Linux: `/proc/<pid>/stat` field 22 (clock ticks since boot). macOS: seconds since the
    /// epoch (microsecond values, as smolvm records them, are accepted too).
    pub start_time: u64,
    /// Real uid of the process when scanned.
    pub uid: u32,
}

impl ProcessRef {
    /// The identity the process with this pid has right now (`None` when there is none, or it
    /// is a zombie).
    pub fn current(pid: u32) -> Option<ProcessRef> {
        let probe = system_probe();
        match probe.probe(pid) {
            Ok(Some(p)) if !p.zombie => Some(ProcessRef {
                pid,
                start_time: p.start_time,
                uid: p.uid,
            }),
            _ => None,
        }
    }
}

/// How long to wait after each signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReapOptions {
    /// After SIGTERM, before SIGKILL (smolvm itself waits about 2 s).
    pub term_grace: Duration,
    /// After SIGKILL, before giving up with [`ReapOutcome::StillAlive`].
    pub kill_grace: Duration,
}

impl Default for ReapOptions {
    fn default() -> Self {
        ReapOptions {
            term_grace: Duration::from_secs(2),
            kill_grace: Duration::from_secs(5),
        }
    }
}

/// The signal that ended a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub(crate) enum KillSignal {
    #[serde(rename = "SIGTERM")]
    Term,
    #[serde(rename = "SIGKILL")]
    Kill,
}

impl KillSignal {
    // Named in the pidfd path's errors (Linux).
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            KillSignal::Term => "SIGTERM",
            KillSignal::Kill => "SIGKILL",
        }
    }
}

/// What reaping did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub(crate) enum ReapOutcome {
    /// No process with that pid (or only its zombie): nothing was signalled.
    AlreadyGone,
    /// The pid belongs to a different process now: nothing was signalled.
    IdentityMismatch {
        found_start_time: u64,
    },
    /// The process belongs to another user: nothing was signalled.
    NotOurs {
        uid: u32,
    },
    /// The process is confirmed dead.
    Terminated {
        by: KillSignal,
        after_ms: u64,
    },
    /// SIGKILL was sent and the process still had not exited after the grace period.
    StillAlive,
    Failed {
        error: String,
    },
}

impl ReapOutcome {
    /// Whether the recorded process is known to be dead, so the storage it held may go.
    pub(crate) fn death_confirmed(&self) -> bool {
        matches!(
            self,
            ReapOutcome::AlreadyGone | ReapOutcome::Terminated { .. }
        )
    }
}

/// Reap `target`: verify it, SIGTERM, wait `term_grace`, SIGKILL, wait `kill_grace`.
pub(crate) fn reap(target: &ProcessRef, opts: &ReapOptions) -> ReapOutcome {
    #[cfg(target_os = "linux")]
    {
        match linux::reap_pidfd(target, opts) {
            Ok(outcome) => outcome,
            // A kernel without pidfds (before 5.3): the re-checking path.
            Err(Unsupported) => reap_with(&ProcProbe, target, opts),
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        reap_with(&system_probe(), target, opts)
    }
}

/// Reap `target`, then run `after` only if its death is confirmed (for example: delete the
/// storage it held). `after` never runs while the process may still be alive.
#[cfg(test)]
pub(crate) fn reap_then<R>(
    target: &ProcessRef,
    opts: &ReapOptions,
    after: impl FnOnce() -> R,
) -> (ReapOutcome, Option<R>) {
    let outcome = reap(target, opts);
    if outcome.death_confirmed() {
        let r = after();
        (outcome, Some(r))
    } else {
        (outcome, None)
    }
}

/// The pidfd path is not available on this kernel.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
#[derive(Debug)]
pub(crate) struct Unsupported;

/// What a probe sees of one live pid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Probe {
    /// In the same unit as [`ProcessRef::start_time`] for this platform.
    pub start_time: u64,
    /// Real uid.
    pub uid: u32,
    /// Effective uid.
    pub euid: u32,
    /// Exited, not yet waited for (state `Z`/`X`).
    pub zombie: bool,
}

/// Reading and signalling processes by pid (the path without pidfds).
pub(crate) trait ProcessProbe {
    /// `Ok(None)` when no process has this pid.
    fn probe(&self, pid: u32) -> io::Result<Option<Probe>>;
    fn signal(&self, pid: u32, sig: KillSignal) -> io::Result<()>;
    /// Our effective uid.
    fn euid(&self) -> u32;
    /// Whether a recorded start time and an observed one denote the same process.
    fn same_start(&self, recorded: u64, observed: u64) -> bool {
        recorded == observed
    }
}

/// How often the probe path polls for death.
const POLL_STEP: Duration = Duration::from_millis(20);

enum Check {
    Gone,
    Mismatch(u64),
    NotOurs(u32),
    Ours,
}

fn check(probe: &dyn ProcessProbe, target: &ProcessRef) -> io::Result<Check> {
    let Some(p) = probe.probe(target.pid)? else {
        return Ok(Check::Gone);
    };
    if !probe.same_start(target.start_time, p.start_time) {
        return Ok(Check::Mismatch(p.start_time));
    }
    if p.zombie {
        return Ok(Check::Gone);
    }
    let me = probe.euid();
    if p.uid != me {
        return Ok(Check::NotOurs(p.uid));
    }
    if p.euid != me {
        return Ok(Check::NotOurs(p.euid));
    }
    Ok(Check::Ours)
}

/// Whether `target` is ours to signal: `Err` is the outcome that ends the reap before any
/// signal (gone, another process under the pid now, another user's, or unreadable).
fn verify(probe: &dyn ProcessProbe, target: &ProcessRef) -> Result<(), ReapOutcome> {
    match check(probe, target) {
        Ok(Check::Ours) => Ok(()),
        Ok(Check::Gone) => Err(ReapOutcome::AlreadyGone),
        Ok(Check::Mismatch(found)) => Err(ReapOutcome::IdentityMismatch {
            found_start_time: found,
        }),
        Ok(Check::NotOurs(uid)) => Err(ReapOutcome::NotOurs { uid }),
        Err(e) => Err(failed(e)),
    }
}

fn failed(e: impl std::fmt::Display) -> ReapOutcome {
    ReapOutcome::Failed {
        error: e.to_string(),
    }
}

/// A verified process, as one reap path reaches it: through its pidfd, or by pid.
trait Verified {
    /// Send `sig`: `Ok(true)` sent, `Ok(false)` the process was gone already, `Err` the
    /// outcome that ends the reap.
    fn send(&self, sig: KillSignal) -> Result<bool, ReapOutcome>;
    /// Whether the process has exited within `grace`.
    fn exited_within(&self, grace: Duration) -> io::Result<bool>;
}

/// The escalation, one for both paths: SIGTERM, `term_grace`, SIGKILL, `kill_grace`, each death
/// observed through `p`. A process gone before SIGTERM was never signalled by us; one gone
/// before SIGKILL was ended by SIGTERM.
fn escalate(p: &dyn Verified, opts: &ReapOptions, started: Instant) -> ReapOutcome {
    let after_ms = || started.elapsed().as_millis() as u64;
    for (sig, grace) in [
        (KillSignal::Term, opts.term_grace),
        (KillSignal::Kill, opts.kill_grace),
    ] {
        match p.send(sig) {
            Ok(true) => {}
            Ok(false) if sig == KillSignal::Term => return ReapOutcome::AlreadyGone,
            Ok(false) => {
                return ReapOutcome::Terminated {
                    by: KillSignal::Term,
                    after_ms: after_ms(),
                }
            }
            Err(outcome) => return outcome,
        }
        match p.exited_within(grace) {
            Ok(true) => {
                return ReapOutcome::Terminated {
                    by: sig,
                    after_ms: after_ms(),
                }
            }
            Ok(false) => {}
            Err(e) => return failed(e),
        }
    }
    ReapOutcome::StillAlive
}

/// The probe path's process: signalled by pid, its identity re-checked right before each
/// signal, its death polled for.
struct ByPid<'a> {
    probe: &'a dyn ProcessProbe,
    target: &'a ProcessRef,
}

impl Verified for ByPid<'_> {
    fn send(&self, sig: KillSignal) -> Result<bool, ReapOutcome> {
        // It died since the last look if it is gone, or if a new process has the pid (which
        // is not ours to touch).
        match check(self.probe, self.target) {
            Ok(Check::Ours) => {}
            Ok(Check::Gone | Check::Mismatch(_)) => return Ok(false),
            Ok(Check::NotOurs(uid)) => return Err(ReapOutcome::NotOurs { uid }),
            Err(e) => return Err(failed(e)),
        }
        match self.probe.signal(self.target.pid, sig) {
            Ok(()) => Ok(true),
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => Ok(false),
            Err(e) => Err(failed(e)),
        }
    }

    fn exited_within(&self, grace: Duration) -> io::Result<bool> {
        let deadline = Instant::now() + grace;
        loop {
            if let Check::Gone | Check::Mismatch(_) = check(self.probe, self.target)? {
                return Ok(true);
            }
            if Instant::now() >= deadline {
                return Ok(false);
            }
            std::thread::sleep(POLL_STEP.min(deadline.saturating_duration_since(Instant::now())));
        }
    }
}

/// The probe path: verify, signal by pid with the start time re-checked right before each
/// signal, poll for death. A pid recycled between the re-check and the signal is a window of
/// microseconds here; the Linux pidfd path has none.
pub(crate) fn reap_with(
    probe: &dyn ProcessProbe,
    target: &ProcessRef,
    opts: &ReapOptions,
) -> ReapOutcome {
    let started = Instant::now();
    if let Err(outcome) = verify(probe, target) {
        return outcome;
    }
    escalate(&ByPid { probe, target }, opts, started)
}

/// Signal through the process table (no pidfd).
fn send_signal(pid: u32, sig: KillSignal) -> io::Result<()> {
    let pid = rustix::process::Pid::from_raw(pid as i32)
        .ok_or_else(|| io::Error::from_raw_os_error(libc::ESRCH))?;
    let sig = match sig {
        KillSignal::Term => rustix::process::Signal::TERM,
        KillSignal::Kill => rustix::process::Signal::KILL,
    };
    rustix::process::kill_process(pid, sig).map_err(io::Error::from)
}

fn my_euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// `/proc/<pid>/stat`: state (field 3) and start time (field 22).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) fn parse_proc_stat(text: &str) -> Option<(char, u64)> {
    // The comm (field 2) is in parentheses and may itself contain ") ".
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    // Fields 4..=21 come next; field 22 is the 20th after the comm.
    let start = fields.nth(18)?.parse().ok()?;
    Some((state, start))
}

/// `/proc/<pid>/status`: the real and effective uid from `Uid:`.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) fn parse_proc_status_uids(text: &str) -> Option<(u32, u32)> {
    let line = text.lines().find(|l| l.starts_with("Uid:"))?;
    let mut it = line["Uid:".len()..].split_whitespace();
    let real = it.next()?.parse().ok()?;
    let eff = it.next()?.parse().ok()?;
    Some((real, eff))
}

/// Linux `/proc` probe (used when pidfds are unavailable).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) struct ProcProbe;

impl ProcessProbe for ProcProbe {
    fn probe(&self, pid: u32) -> io::Result<Option<Probe>> {
        let stat = match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(s) => s,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => return Ok(None),
            Err(e) => return Err(e),
        };
        let (state, start_time) = parse_proc_stat(&stat)
            .ok_or_else(|| io::Error::other(format!("unreadable /proc/{pid}/stat")))?;
        let status = match std::fs::read_to_string(format!("/proc/{pid}/status")) {
            Ok(s) => s,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let (uid, euid) = parse_proc_status_uids(&status)
            .ok_or_else(|| io::Error::other(format!("no Uid line in /proc/{pid}/status")))?;
        Ok(Some(Probe {
            start_time,
            uid,
            euid,
            zombie: matches!(state, 'Z' | 'X' | 'x'),
        }))
    }
    fn signal(&self, pid: u32, sig: KillSignal) -> io::Result<()> {
        send_signal(pid, sig)
    }
    fn euid(&self) -> u32 {
        my_euid()
    }
}

/// `ps -o uid=,stat=,lstart= -p <pid>` probe (macOS; procps accepts the same columns), run with
/// `LC_ALL=C TZ=UTC` so `lstart` reads as UTC seconds since the epoch, the unit the macOS
/// process scanner records ([`crate::procs::macos::parse_lstart`]).
#[cfg_attr(target_os = "linux", allow(dead_code))] // the macOS probe
pub(crate) struct PsProbe;

/// Parse one `ps -o uid=,stat=,lstart=` line (`501 Ss Mon Nov 30 03:10:04 2026`).
/// `ps` shows one uid (the effective one).
#[cfg_attr(target_os = "linux", allow(dead_code))] // the macOS probe
pub(crate) fn parse_ps_probe_line(line: &str) -> Option<Probe> {
    let mut it = line.split_whitespace();
    let uid: u32 = it.next()?.parse().ok()?;
    let stat = it.next()?;
    let lstart: Vec<&str> = it.collect();
    if lstart.len() != 5 {
        return None;
    }
    Some(Probe {
        start_time: crate::procs::macos::parse_lstart(&lstart.join(" "))?,
        uid,
        euid: uid,
        zombie: stat.starts_with('Z'),
    })
}

/// Normalise a macOS start time to seconds (smolvm records microseconds; old records seconds).
#[cfg_attr(target_os = "linux", allow(dead_code))] // the macOS probe
pub(crate) fn macos_start_secs(v: u64) -> u64 {
    if v >= 100_000_000_000 {
        v / 1_000_000
    } else {
        v
    }
}

impl ProcessProbe for PsProbe {
    fn probe(&self, pid: u32) -> io::Result<Option<Probe>> {
        let out = std::process::Command::new("ps")
            .args(["-o", "uid=,stat=,lstart=", "-p", &pid.to_string()])
            .env("LC_ALL", "C")
            .env("TZ", "UTC")
            .stdin(std::process::Stdio::null())
            .output()?;
        let text = String::from_utf8_lossy(&out.stdout);
        match text.lines().find(|l| !l.trim().is_empty()) {
            // `ps -p` exits 1 with no line when the pid does not exist.
            None => Ok(None),
            Some(line) => parse_ps_probe_line(line)
                .map(Some)
                .ok_or_else(|| io::Error::other(format!("unexpected ps output: {line:?}"))),
        }
    }
    fn signal(&self, pid: u32, sig: KillSignal) -> io::Result<()> {
        send_signal(pid, sig)
    }
    fn euid(&self) -> u32 {
        my_euid()
    }
    fn same_start(&self, recorded: u64, observed: u64) -> bool {
        macos_start_secs(recorded) == observed
    }
}

#[cfg(target_os = "linux")]
fn system_probe() -> ProcProbe {
    ProcProbe
}

#[cfg(not(target_os = "linux"))]
fn system_probe() -> PsProbe {
    PsProbe
}

#[cfg(target_os = "linux")]
mod linux {
    use super::*;
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    use rustix::fd::OwnedFd;
    use rustix::io::Errno;
    use rustix::process::{pidfd_open, pidfd_send_signal, Pid, PidfdFlags, Signal};

    /// Whether the pidfd's process has exited, waiting at most `wait`.
    fn exited_within(fd: &OwnedFd, wait: Duration) -> io::Result<bool> {
        let deadline = Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let ts = Timespec::try_from(left).unwrap_or(Timespec {
                tv_sec: i64::MAX,
                tv_nsec: 0,
            });
            let mut fds = [PollFd::new(fd, PollFlags::IN)];
            match poll(&mut fds, Some(&ts)) {
                Ok(0) => return Ok(false),
                Ok(_) => return Ok(true),
                Err(Errno::INTR) => {
                    if Instant::now() >= deadline {
                        return Ok(false);
                    }
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    pub(super) fn reap_pidfd(
        target: &ProcessRef,
        opts: &ReapOptions,
    ) -> Result<ReapOutcome, Unsupported> {
        let started = Instant::now();
        let Some(pid) = Pid::from_raw(target.pid as i32) else {
            return Ok(ReapOutcome::Failed {
                error: format!("invalid pid {}", target.pid),
            });
        };
        // 1. Pin the process first: whatever we verify below is what this fd refers to.
        let fd = match pidfd_open(pid, PidfdFlags::empty()) {
            Ok(fd) => fd,
            Err(Errno::SRCH) => return Ok(ReapOutcome::AlreadyGone),
            Err(Errno::NOSYS) => return Err(Unsupported),
            Err(e) => {
                return Ok(ReapOutcome::Failed {
                    error: format!("pidfd_open({}): {e}", target.pid),
                })
            }
        };
        // 2. Verify identity and owner through /proc.
        if let Err(outcome) = verify(&ProcProbe, target) {
            return Ok(outcome);
        }
        // 3. If the pinned process had already exited, /proc may have shown a successor:
        //    only a still-running pidfd proves that what we verified is what we will signal.
        match exited_within(&fd, Duration::ZERO) {
            Ok(true) => return Ok(ReapOutcome::AlreadyGone),
            Ok(false) => {}
            Err(e) => return Ok(failed(e)),
        }
        // 4. SIGTERM, grace, SIGKILL, grace — always through the pidfd.
        let pinned = ByPidfd {
            fd: &fd,
            pid: target.pid,
        };
        Ok(escalate(&pinned, opts, started))
    }

    /// The pidfd path's process: every signal through the pidfd, death seen on it.
    struct ByPidfd<'a> {
        fd: &'a OwnedFd,
        pid: u32,
    }

    impl Verified for ByPidfd<'_> {
        fn send(&self, sig: KillSignal) -> Result<bool, ReapOutcome> {
            let rsig = match sig {
                KillSignal::Term => Signal::TERM,
                KillSignal::Kill => Signal::KILL,
            };
            match pidfd_send_signal(self.fd, rsig) {
                Ok(()) => Ok(true),
                // Already exited (a zombie still accepts signals; a reaped one gives ESRCH).
                Err(Errno::SRCH) => Ok(false),
                Err(e) => Err(ReapOutcome::Failed {
                    error: format!("pidfd_send_signal({}, {}): {e}", self.pid, sig.as_str()),
                }),
            }
        }

        fn exited_within(&self, grace: Duration) -> io::Result<bool> {
            exited_within(self.fd, grace)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    #[test]
    fn proc_stat_fields_survive_odd_comms() {
        let line = "4242 (we)ird ) name) S 1 4242 4242 0 -1 4194304 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10";
        assert_eq!(parse_proc_stat(line), Some(('S', 987654)));
        assert_eq!(parse_proc_stat("1 (x) Z"), None);
    }

    #[test]
    fn status_uids() {
        let s = "Name:\tsleep\nUid:\t1000\t1001\t1000\t1000\nGid:\t1\t1\t1\t1\n";
        assert_eq!(parse_proc_status_uids(s), Some((1000, 1001)));
    }

    #[test]
    fn ps_probe_lines() {
        let p = parse_ps_probe_line("  501 Ss   Mon Nov 30 03:10:04 2026").unwrap();
        assert_eq!((p.uid, p.zombie), (501, false));
        assert_eq!(
            p.start_time,
            crate::procs::macos::parse_lstart("Mon Nov 30 03:10:04 2026").unwrap()
        );
        assert!(
            parse_ps_probe_line("501 Z+ Thu Jan  1 00:00:01 1970")
                .unwrap()
                .zombie
        );
        assert_eq!(parse_ps_probe_line("501 S 01:40"), None);
    }

    #[test]
    fn macos_start_units() {
        assert_eq!(macos_start_secs(1_796_004_250_123_456), 1_796_004_250);
        assert_eq!(macos_start_secs(1_796_004_250), 1_796_004_250);
        assert!(PsProbe.same_start(1_796_004_250_123_456, 1_796_004_250));
        assert!(PsProbe.same_start(1_796_004_250, 1_796_004_250));
        assert!(!PsProbe.same_start(1_796_004_250, 1_796_004_251));
    }

    /// A scripted process table: what each probe returns, and the signals received.
    struct Fake {
        euid: u32,
        /// Identity of the current holder of the pid; `None` = no process.
        holder: RefCell<Option<Probe>>,
        ignores_term: bool,
        /// After this many probes, the pid is recycled by an unrelated process.
        recycle_after: Option<usize>,
        probes: RefCell<usize>,
        signals: RefCell<Vec<KillSignal>>,
    }

    impl Fake {
        fn new(p: Option<Probe>) -> Fake {
            Fake {
                euid: 501,
                holder: RefCell::new(p),
                ignores_term: false,
                recycle_after: None,
                probes: RefCell::new(0),
                signals: RefCell::new(vec![]),
            }
        }
    }

    impl ProcessProbe for Fake {
        fn probe(&self, _pid: u32) -> io::Result<Option<Probe>> {
            *self.probes.borrow_mut() += 1;
            if let Some(n) = self.recycle_after {
                if *self.probes.borrow() > n {
                    *self.holder.borrow_mut() = Some(Probe {
                        start_time: 999,
                        uid: self.euid,
                        euid: self.euid,
                        zombie: false,
                    });
                }
            }
            Ok(*self.holder.borrow())
        }
        fn signal(&self, _pid: u32, sig: KillSignal) -> io::Result<()> {
            self.signals.borrow_mut().push(sig);
            if sig == KillSignal::Kill || !self.ignores_term {
                *self.holder.borrow_mut() = None;
            }
            Ok(())
        }
        fn euid(&self) -> u32 {
            self.euid
        }
    }

    fn live(start: u64, uid: u32) -> Option<Probe> {
        Some(Probe {
            start_time: start,
            uid,
            euid: uid,
            zombie: false,
        })
    }

    const FAST: ReapOptions = ReapOptions {
        term_grace: Duration::from_millis(60),
        kill_grace: Duration::from_millis(60),
    };

    #[test]
    fn probe_path_term_then_kill() {
        let target = ProcessRef {
            pid: 7,
            start_time: 100,
            uid: 501,
        };
        let f = Fake::new(live(100, 501));
        assert!(matches!(
            reap_with(&f, &target, &FAST),
            ReapOutcome::Terminated {
                by: KillSignal::Term,
                ..
            }
        ));
        let mut f = Fake::new(live(100, 501));
        f.ignores_term = true;
        assert!(matches!(
            reap_with(&f, &target, &FAST),
            ReapOutcome::Terminated {
                by: KillSignal::Kill,
                ..
            }
        ));
        assert_eq!(*f.signals.borrow(), [KillSignal::Term, KillSignal::Kill]);
    }

    #[test]
    fn b7_probe_path_never_signals_a_recycled_pid() {
        let target = ProcessRef {
            pid: 7,
            start_time: 100,
            uid: 501,
        };
        let f = Fake::new(live(555, 501));
        assert_eq!(
            reap_with(&f, &target, &FAST),
            ReapOutcome::IdentityMismatch {
                found_start_time: 555
            }
        );
        assert!(f.signals.borrow().is_empty());
        // Recycled between SIGTERM's grace and SIGKILL: the re-check stops the SIGKILL.
        let mut f = Fake::new(live(100, 501));
        f.ignores_term = true;
        f.recycle_after = Some(2);
        let out = reap_with(&f, &target, &FAST);
        assert_eq!(*f.signals.borrow(), [KillSignal::Term]);
        assert!(out.death_confirmed(), "{out:?}");
    }

    #[test]
    fn probe_path_refuses_other_users_and_zombies_are_dead() {
        let target = ProcessRef {
            pid: 7,
            start_time: 100,
            uid: 0,
        };
        let f = Fake::new(live(100, 0));
        assert_eq!(
            reap_with(&f, &target, &FAST),
            ReapOutcome::NotOurs { uid: 0 }
        );
        assert!(f.signals.borrow().is_empty());
        let f = Fake::new(Some(Probe {
            start_time: 100,
            uid: 501,
            euid: 501,
            zombie: true,
        }));
        assert_eq!(reap_with(&f, &target, &FAST), ReapOutcome::AlreadyGone);
        let f = Fake::new(None);
        assert_eq!(reap_with(&f, &target, &FAST), ReapOutcome::AlreadyGone);
    }

    #[test]
    fn outcomes_serialise_with_a_tag() {
        let v = serde_json::to_value(ReapOutcome::Terminated {
            by: KillSignal::Kill,
            after_ms: 2001,
        })
        .unwrap();
        assert_eq!(
            v,
            serde_json::json!({"outcome": "terminated", "by": "SIGKILL", "after_ms": 2001})
        );
        let v = serde_json::to_value(ReapOutcome::IdentityMismatch {
            found_start_time: 5,
        })
        .unwrap();
        assert_eq!(v["outcome"], "identity_mismatch");
    }
}
