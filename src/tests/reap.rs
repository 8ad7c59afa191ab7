//! Reaping real processes this test spawns itself (and only those).

use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::exec::reap::{
    parse_proc_stat, reap, reap_then, reap_with, KillSignal, ProcProbe, ProcessProbe, ProcessRef,
    PsProbe, ReapOptions, ReapOutcome,
};

/// Kills its child on drop, so a failing assertion never leaves a process behind.
struct Spawned(Child);

impl Spawned {
    fn pid(&self) -> u32 {
        self.0.id()
    }
    fn alive(&mut self) -> bool {
        self.0.try_wait().expect("try_wait").is_none()
    }
    /// Wait for the exit and return the signal that ended it.
    fn wait_signal(&mut self) -> Option<i32> {
        self.0.wait().expect("wait").signal()
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn(cmd: &mut Command) -> Spawned {
    Spawned(
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("spawn"),
    )
}

fn sleeper() -> Spawned {
    spawn(Command::new("sleep").arg("600"))
}

fn wait_for(mut cond: impl FnMut() -> bool, what: &str) {
    let until = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn identify(pid: u32) -> ProcessRef {
    ProcessRef::current(pid).expect("live process")
}

/// `/proc/<pid>/stat` state, `None` when the pid is gone.
fn proc_state(pid: u32) -> Option<char> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_proc_stat(&s).map(|(state, _)| state)
}

fn fast() -> ReapOptions {
    ReapOptions {
        term_grace: Duration::from_millis(600),
        kill_grace: Duration::from_secs(5),
    }
}

#[test]
fn identity_is_read_from_proc() {
    let c = sleeper();
    let r = identify(c.pid());
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", c.pid())).unwrap();
    assert_eq!(parse_proc_stat(&stat).unwrap().1, r.start_time);
    assert_eq!(r.uid, rustix::process::geteuid().as_raw());
}

#[test]
fn normal_child_dies_by_sigterm() {
    let mut c = sleeper();
    let target = identify(c.pid());
    let out = reap(&target, &ReapOptions::default());
    match out {
        ReapOutcome::Terminated {
            by: KillSignal::Term,
            after_ms,
        } => assert!(after_ms < 2000, "{after_ms}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(c.wait_signal(), Some(libc::SIGTERM));
}

#[test]
fn smolvm_787_sigterm_ignored_dies_by_sigkill_and_storage_is_removed_only_after() {
    let dir = tempfile::tempdir().unwrap();
    let storage = dir.path().join("storage.raw");
    let ready = dir.path().join("ready");
    std::fs::write(&storage, vec![7u8; 4096]).unwrap();
    // Ignore SIGTERM (inherited through exec), hold the storage open, then say so.
    let mut c = spawn(
        Command::new("bash")
            .arg("-c")
            .arg("trap '' TERM; exec 3<>\"$1\"; touch \"$2\"; exec sleep 600")
            .arg("bash")
            .arg(&storage)
            .arg(&ready),
    );
    wait_for(|| ready.exists(), "the SIGTERM trap");
    // `exec sleep` must have happened (the trap is inherited); wait until comm is sleep.
    let pid = c.pid();
    wait_for(
        || {
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .map(|s| s.trim() == "sleep")
                .unwrap_or(false)
        },
        "exec sleep",
    );
    let target = identify(pid);
    let opts = ReapOptions {
        term_grace: Duration::from_millis(800),
        kill_grace: Duration::from_secs(5),
    };
    let (out, seen) = reap_then(&target, &opts, || {
        // What the caller sees at the moment it may delete: the process is no longer running
        // (a zombie of ours, or gone) and holds no files.
        let state = proc_state(pid);
        let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
            .map(|d| d.count())
            .unwrap_or(0);
        std::fs::remove_file(&storage).unwrap();
        (state, fds)
    });
    match out {
        ReapOutcome::Terminated {
            by: KillSignal::Kill,
            after_ms,
        } => assert!(after_ms >= 800, "SIGKILL came before the grace: {after_ms}"),
        other => panic!("{other:?}"),
    }
    let (state, fds) = seen.expect("storage step ran");
    assert!(
        matches!(state, None | Some('Z') | Some('X')),
        "storage removed while the process was {state:?}"
    );
    assert_eq!(fds, 0, "storage removed while the process held files");
    assert!(!storage.exists());
    assert_eq!(c.wait_signal(), Some(libc::SIGKILL));
}

#[test]
fn storage_step_does_not_run_when_the_process_survives() {
    let mut c = sleeper();
    let mut target = identify(c.pid());
    target.start_time += 1;
    let (out, ran) = reap_then(&target, &fast(), || panic!("must not run"));
    assert!(matches!(out, ReapOutcome::IdentityMismatch { .. }));
    assert!(ran.is_none());
    assert!(c.alive());
}

#[test]
fn recorded_start_time_mismatch_survives() {
    let mut c = sleeper();
    let real = identify(c.pid());
    let recorded = ProcessRef {
        start_time: real.start_time.saturating_sub(500),
        ..real
    };
    let out = reap(&recorded, &fast());
    assert_eq!(
        out,
        ReapOutcome::IdentityMismatch {
            found_start_time: real.start_time
        }
    );
    std::thread::sleep(Duration::from_millis(200));
    assert!(c.alive(), "a process with another start time was signalled");
}

/// Celesto B7: a stored pid now held by an unrelated process. The recorded identity is that of
/// an earlier process; the pid's current holder must never receive a signal.
#[test]
fn b7_pid_reuse_never_signalled() {
    let mut earlier = sleeper();
    let recorded_start = identify(earlier.pid()).start_time;
    // Clock ticks are 10 ms: make sure the next process starts in a later tick.
    std::thread::sleep(Duration::from_millis(50));
    let mut unrelated = sleeper();
    let now = identify(unrelated.pid());
    assert_ne!(now.start_time, recorded_start);
    let stale = ProcessRef {
        pid: unrelated.pid(),
        start_time: recorded_start,
        uid: now.uid,
    };
    for opts in [fast(), ReapOptions::default()] {
        let out = reap(&stale, &opts);
        assert!(
            matches!(out, ReapOutcome::IdentityMismatch { found_start_time } if found_start_time == now.start_time),
            "{out:?}"
        );
    }
    // The no-pidfd path refuses it too.
    assert!(matches!(
        reap_with(&ProcProbe, &stale, &fast()),
        ReapOutcome::IdentityMismatch { .. }
    ));
    std::thread::sleep(Duration::from_millis(200));
    assert!(unrelated.alive());
    assert!(earlier.alive());
}

#[test]
fn already_gone() {
    let mut c = sleeper();
    let target = identify(c.pid());
    c.0.kill().unwrap();
    c.0.wait().unwrap();
    assert_eq!(reap(&target, &fast()), ReapOutcome::AlreadyGone);
    assert_eq!(
        reap_with(&ProcProbe, &target, &fast()),
        ReapOutcome::AlreadyGone
    );
}

#[test]
fn zombie_counts_as_dead() {
    let mut c = sleeper();
    let target = identify(c.pid());
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(c.pid() as i32).unwrap(),
        rustix::process::Signal::KILL,
    )
    .unwrap();
    let pid = c.pid();
    wait_for(|| proc_state(pid) == Some('Z'), "the zombie");
    assert_eq!(reap(&target, &fast()), ReapOutcome::AlreadyGone);
    let (out, ran) = reap_then(&target, &fast(), || true);
    assert!(out.death_confirmed());
    assert_eq!(ran, Some(true));
    assert_eq!(c.wait_signal(), Some(libc::SIGKILL));
}

/// A process of another user is refused without a signal: as root, a `sleep` run as `nobody`
/// (setpriv); otherwise pid 1, which belongs to root.
#[test]
fn another_users_process_is_not_ours_and_survives() {
    let me = rustix::process::geteuid().as_raw();
    if me == 0 {
        let mut c = spawn(Command::new("setpriv").args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "sleep",
            "600",
        ]));
        let pid = c.pid();
        wait_for(
            || {
                std::fs::read_to_string(format!("/proc/{pid}/comm"))
                    .map(|s| s.trim() == "sleep")
                    .unwrap_or(false)
            },
            "setpriv to exec sleep",
        );
        let target = identify(pid);
        assert_eq!(target.uid, 65534);
        assert_eq!(reap(&target, &fast()), ReapOutcome::NotOurs { uid: 65534 });
        assert_eq!(
            reap_with(&ProcProbe, &target, &fast()),
            ReapOutcome::NotOurs { uid: 65534 }
        );
        std::thread::sleep(Duration::from_millis(200));
        assert!(c.alive(), "another user's process was signalled");
    } else {
        let init = identify(1);
        assert_eq!(reap(&init, &fast()), ReapOutcome::NotOurs { uid: init.uid });
    }
}

#[test]
fn proc_probe_path_terminates_and_kills() {
    let mut c = sleeper();
    let t = identify(c.pid());
    assert!(matches!(
        reap_with(&ProcProbe, &t, &fast()),
        ReapOutcome::Terminated {
            by: KillSignal::Term,
            ..
        }
    ));
    assert_eq!(c.wait_signal(), Some(libc::SIGTERM));
}

/// The macOS probe (`ps -o uid=,stat=,lstart=`, UTC) works against procps `ps` too.
#[test]
fn ps_probe_path_reaps_a_real_process() {
    let mut c = sleeper();
    let p = PsProbe.probe(c.pid()).unwrap().expect("ps sees the child");
    let t = ProcessRef {
        pid: c.pid(),
        start_time: p.start_time,
        uid: p.uid,
    };
    // Ten minutes off: a different process.
    let wrong = ProcessRef {
        start_time: p.start_time - 600,
        ..t
    };
    assert!(matches!(
        reap_with(&PsProbe, &wrong, &fast()),
        ReapOutcome::IdentityMismatch { .. }
    ));
    assert!(c.alive());
    assert!(matches!(
        reap_with(&PsProbe, &t, &fast()),
        ReapOutcome::Terminated { .. }
    ));
    assert_eq!(c.wait_signal(), Some(libc::SIGTERM));
    assert!(PsProbe.probe(u32::MAX / 2).unwrap().is_none());
}

#[test]
fn outcome_json_is_tagged() {
    let v = serde_json::to_value(ReapOutcome::NotOurs { uid: 65534 }).unwrap();
    assert_eq!(v, serde_json::json!({"outcome": "not_ours", "uid": 65534}));
}
