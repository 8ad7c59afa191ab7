//! Every tool Smolsweep runs dies with it: a killed Smolsweep never leaves an `e2fsck` or a
//! `qemu-io` working on a disk unsupervised.
//!
//! * Linux ([`Tie::DeathSignal`]): the child asks the kernel, between `fork` and `exec`, for a
//!   signal when its parent ends (`prctl(PR_SET_PDEATHSIG)`, kept across `exec`), then checks
//!   that parent is still the one that started it (it may have died before the request).
//!   The kernel sends it when the *thread* that started the child ends, so a tool is always
//!   started and waited for on one thread.
//! * Elsewhere ([`Tie::Pipe`]; macOS has no death signal): the child leads a process group of its
//!   own, and forks a watcher into it before `exec` that holds the read end of a pipe whose only
//!   write end Smolsweep keeps. When Smolsweep ends, however it ends, the kernel closes that end,
//!   the watcher reads end-of-file and signals the whole group. The watcher leaves quietly as
//!   soon as the tool is gone (it is re-parented then). Compiled everywhere and tested on Linux.
//!
//! A descriptor given as `keep` (the compaction's lock on the image) is inherited by the tool:
//! the lock lives as long as the tool does, even for the moment a tool outlives Smolsweep.
//! Only async-signal-safe calls run between `fork` and `exec`.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Output};

/// How a tool is tied to Smolsweep's life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tie {
    /// The kernel signals the tool when Smolsweep ends (Linux).
    DeathSignal,
    /// A watcher in the tool's own process group signals the group when a pipe from Smolsweep
    /// closes.
    Pipe,
}

/// This platform's tie.
pub(crate) const TIE: Tie = if cfg!(target_os = "linux") {
    Tie::DeathSignal
} else {
    Tie::Pipe
};

/// How often a watcher ([`Tie::Pipe`]) looks whether its tool is still there, in milliseconds.
const WATCH_MS: i32 = 100;

/// A tool started by [`spawn`].
pub(crate) struct Running {
    pub child: Child,
    /// The write end of the watcher's pipe ([`Tie::Pipe`]): closed once the tool was waited for.
    pipe: Option<OwnedFd>,
}

impl Running {
    /// Wait for the tool to end, with what it printed.
    pub(crate) fn wait_with_output(self) -> io::Result<Output> {
        let Running { child, pipe } = self;
        let out = child.wait_with_output();
        drop(pipe);
        out
    }

    /// Wait for the tool to end.
    pub(crate) fn wait(&mut self) -> io::Result<std::process::ExitStatus> {
        let status = self.child.wait();
        self.pipe = None;
        status
    }
}

/// Start `cmd` tied to this process by `tie`: it gets `signal` when this process ends. `keep`
/// is a descriptor it inherits (every other one of this process is closed at `exec`).
pub(crate) fn spawn(
    cmd: &mut Command,
    signal: i32,
    keep: Option<RawFd>,
    tie: Tie,
) -> io::Result<Running> {
    let pipe = match tie {
        Tie::DeathSignal => {
            death_signal(cmd, signal, keep);
            None
        }
        Tie::Pipe => Some(watched(cmd, signal, keep)?),
    };
    let child = cmd.spawn()?;
    // The read end went to the watcher; this process keeps the write end only.
    Ok(Running {
        child,
        pipe: pipe.map(|(_, w)| w),
    })
}

/// `cmd` run to its end by [`spawn`] with this platform's tie, with what it printed.
pub(crate) fn output(cmd: &mut Command, keep: Option<RawFd>) -> io::Result<Output> {
    use std::process::Stdio;
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    spawn(cmd, libc::SIGKILL, keep, TIE)?.wait_with_output()
}

/// Let the child inherit `fd` (clear its close-on-exec flag in the child only).
///
/// # Safety
/// Called between `fork` and `exec`: `fcntl` only.
unsafe fn inherit(fd: Option<RawFd>) -> io::Result<()> {
    if let Some(fd) = fd {
        if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(target_os = "linux")]
fn death_signal(cmd: &mut Command, signal: i32, keep: Option<RawFd>) {
    // SAFETY: `getpid` has no preconditions.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the closure makes only async-signal-safe system calls (prctl, getppid, fcntl).
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, signal as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            // Smolsweep ended before the request: nothing would signal the tool.
            if libc::getppid() != parent {
                return Err(io::Error::other("Smolsweep ended before the tool started"));
            }
            inherit(keep)
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn death_signal(cmd: &mut Command, _signal: i32, _keep: Option<RawFd>) {
    // SAFETY: the closure only returns an error.
    unsafe {
        cmd.pre_exec(|| Err(io::Error::from(io::ErrorKind::Unsupported)));
    }
}

/// Set up [`Tie::Pipe`] for `cmd`: the pipe (read end, write end).
fn watched(cmd: &mut Command, signal: i32, keep: Option<RawFd>) -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: `pipe` writes two descriptors into the array it is given.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just opened and are owned here alone.
    let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    for fd in [&r, &w] {
        rustix::io::fcntl_setfd(fd, rustix::io::FdFlags::CLOEXEC)?;
    }
    let rr = r.as_raw_fd();
    // SAFETY: the closure and the watcher make only async-signal-safe system calls (setpgid,
    // getpid, fork, close, poll, getppid, kill, _exit, fcntl).
    unsafe {
        cmd.pre_exec(move || {
            if libc::setpgid(0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            let tool = libc::getpid();
            match libc::fork() {
                -1 => return Err(io::Error::last_os_error()),
                0 => watch(rr, tool, signal),
                _ => {}
            }
            inherit(keep)
        });
    }
    Ok((r, w))
}

/// The watcher: signal the process group when the pipe's write end closes while `tool` is
/// still its parent; leave as soon as it is not.
///
/// # Safety
/// Runs in a forked child: async-signal-safe calls only, and it never returns.
unsafe fn watch(r: RawFd, tool: libc::pid_t, signal: i32) -> ! {
    // Nothing of the tool's but the read end: its output ends when the tool's does, the lock
    // lives with the tool alone, and the pipe that tells Smolsweep the tool was started closes
    // at the tool's `exec`.
    let open_max = libc::sysconf(libc::_SC_OPEN_MAX).clamp(256, 65_536) as RawFd;
    for fd in (0..open_max).filter(|fd| *fd != r) {
        libc::close(fd);
    }
    loop {
        let mut p = libc::pollfd {
            fd: r,
            events: libc::POLLIN,
            revents: 0,
        };
        let n = libc::poll(&mut p, 1, WATCH_MS);
        if libc::getppid() != tool {
            libc::_exit(0);
        }
        if n > 0 {
            libc::kill(0, signal);
            libc::kill(0, libc::SIGKILL);
            libc::_exit(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufRead;

    /// The state letter of process `pid` (`/proc/PID/stat`), `None` once it is gone.
    fn state(pid: u32) -> Option<char> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        stat.rsplit_once(") ")?.1.chars().next()
    }

    /// Whether `pid` has ended (gone, or a zombie nobody reaped yet) within 5 s.
    fn ends(pid: u32) -> bool {
        let start = std::time::Instant::now();
        while start.elapsed() < std::time::Duration::from_secs(5) {
            if matches!(state(pid), None | Some('Z') | Some('X')) {
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        false
    }

    /// Run as the parent ([`a_tool_dies_with_its_killed_parent_both_ways`]): start a long
    /// `sleep` tied as asked, print its pid and wait to be killed.
    fn be_the_parent(tie: &str) {
        let tie = if tie == "pipe" {
            Tie::Pipe
        } else {
            Tie::DeathSignal
        };
        let mut cmd = Command::new("sleep");
        cmd.arg("600").stdout(std::process::Stdio::null());
        let running = spawn(&mut cmd, libc::SIGKILL, None, tie).unwrap();
        println!("TOOL {}", running.child.id());
        std::thread::sleep(std::time::Duration::from_secs(600));
    }

    /// Hazard: a tool outlives a killed Smolsweep (SIGKILL leaves no chance to clean up). Both
    /// ties are tried on Linux: the death signal, and the pipe and process group macOS uses.
    #[test]
    fn a_tool_dies_with_its_killed_parent_both_ways() {
        if let Ok(tie) = std::env::var("SMOLSWEEP_TEST_BE_PARENT") {
            return be_the_parent(&tie);
        }
        for tie in ["death-signal", "pipe"] {
            let mut parent = Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "compact::child::tests::a_tool_dies_with_its_killed_parent_both_ways",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env("SMOLSWEEP_TEST_BE_PARENT", tie)
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            let out = std::io::BufReader::new(parent.stdout.take().unwrap());
            let tool: u32 = out
                .lines()
                .map_while(Result::ok)
                .find_map(|l| Some(l.split_once("TOOL ")?.1.trim().parse().unwrap()))
                .unwrap_or_else(|| panic!("{tie}: the parent started no tool"));
            assert_eq!(state(tool).map(|s| s != 'Z'), Some(true), "{tie}");
            rustix::process::kill_process(
                rustix::process::Pid::from_raw(parent.id() as i32).unwrap(),
                rustix::process::Signal::KILL,
            )
            .unwrap();
            parent.wait().unwrap();
            assert!(
                ends(tool),
                "{tie}: the tool {tool} outlived its killed parent"
            );
        }
    }

    #[test]
    fn a_tool_inherits_the_descriptor_it_is_given_and_no_other() {
        let t = tempfile::tempdir().unwrap();
        let kept = std::fs::File::create(t.path().join("kept")).unwrap();
        let other = std::fs::File::create(t.path().join("other")).unwrap();
        for tie in [TIE, Tie::Pipe] {
            let fd = kept.as_raw_fd();
            let mut cmd = Command::new("sh");
            cmd.args([
                "-c",
                &format!(
                    "readlink /proc/self/fd/{fd}; readlink /proc/self/fd/{}; true",
                    other.as_raw_fd()
                ),
            ]);
            cmd.stdout(std::process::Stdio::piped());
            let out = spawn(&mut cmd, libc::SIGKILL, Some(fd), tie)
                .unwrap()
                .wait_with_output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(text.contains("/kept"), "{tie:?}: {text}");
            assert!(!text.contains("/other"), "{tie:?}: {text}");
        }
    }
}
