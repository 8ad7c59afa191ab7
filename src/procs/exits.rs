//! Knowing, without polling the process table, when a VM process ends: each one is held as a
//! pidfd, which becomes readable when the process exits, and one thread waits on all of them.
//!
//! The tray app holds one [`ExitWatch`] over the VM processes of its latest scan; an exit wakes
//! its rescan, which with the directory memo re-reads the process table (and what the kernel
//! reported changed) but walks nothing again. A process is watched only if, once its pidfd is
//! open, it still has the start time the scan saw; one that is already gone (or whose pid was
//! reused) counts as having exited.
//!
//! Linux only (pidfds, 5.3 and later); elsewhere, or on an older kernel, nothing is watched and
//! the app's interval and file events are what rescan.

/// Waits for the processes given to [`ExitWatch::start`] to exit, calling back once per exit.
/// Dropping it stops the waiting thread.
pub struct ExitWatch {
    /// Its peer is polled by the thread: dropping this end wakes it to stop.
    #[cfg(target_os = "linux")]
    _stop: Option<std::os::unix::net::UnixStream>,
    watched: usize,
}

impl std::fmt::Debug for ExitWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExitWatch")
            .field("watched", &self.watched)
            .finish()
    }
}

impl ExitWatch {
    /// Watch `(pid, start_time)` processes; `on_exit(pid)` runs on the watcher's thread for
    /// each that exits (at once for one already gone).
    pub fn start(processes: &[(u32, u64)], on_exit: impl Fn(u32) + Send + 'static) -> ExitWatch {
        imp::start(processes, Box::new(on_exit))
    }

    /// How many processes are being waited for (0 where pidfds are unavailable).
    pub fn watched(&self) -> usize {
        self.watched
    }
}

#[cfg(target_os = "linux")]
mod imp {
    use std::os::fd::OwnedFd;
    use std::os::unix::net::UnixStream;

    use rustix::event::{poll, PollFd, PollFlags};
    use rustix::process::{pidfd_open, Pid, PidfdFlags};

    use super::ExitWatch;

    pub(super) fn start(procs: &[(u32, u64)], on_exit: Box<dyn Fn(u32) + Send>) -> ExitWatch {
        let mut fds: Vec<(u32, OwnedFd)> = Vec::new();
        let mut gone = Vec::new();
        for &(pid, start) in procs {
            let Some(p) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
                continue;
            };
            match pidfd_open(p, PidfdFlags::empty()) {
                // Opened first, checked second: the pidfd is of the very process checked.
                Ok(fd) if crate::procs::linux::process_start_time(pid) == Some(start) => {
                    fds.push((pid, fd))
                }
                Ok(_) | Err(rustix::io::Errno::SRCH) => gone.push(pid),
                // No pidfds on this kernel, or not allowed: not watched.
                Err(_) => {}
            }
        }
        for pid in &gone {
            on_exit(*pid);
        }
        let watched = fds.len();
        if fds.is_empty() {
            return ExitWatch {
                _stop: None,
                watched,
            };
        }
        let Ok((stop, peer)) = UnixStream::pair() else {
            return ExitWatch {
                _stop: None,
                watched: 0,
            };
        };
        let spawned = std::thread::Builder::new()
            .name("smolsweep-vm-exits".into())
            .stack_size(64 * 1024)
            .spawn(move || wait(peer, fds, on_exit));
        ExitWatch {
            _stop: Some(stop),
            watched: if spawned.is_ok() { watched } else { 0 },
        }
    }

    fn wait(peer: UnixStream, mut fds: Vec<(u32, OwnedFd)>, on_exit: Box<dyn Fn(u32) + Send>) {
        while !fds.is_empty() {
            let mut polled: Vec<PollFd<'_>> = Vec::with_capacity(fds.len() + 1);
            polled.push(PollFd::new(&peer, PollFlags::IN));
            polled.extend(fds.iter().map(|(_, fd)| PollFd::new(fd, PollFlags::IN)));
            match poll(&mut polled, None) {
                Ok(_) => {}
                Err(rustix::io::Errno::INTR) => continue,
                Err(_) => return,
            }
            if !polled[0].revents().is_empty() {
                return; // the watch was dropped
            }
            let exited: Vec<usize> = polled[1..]
                .iter()
                .enumerate()
                .filter(|(_, p)| !p.revents().is_empty())
                .map(|(i, _)| i)
                .collect();
            drop(polled);
            for i in exited.into_iter().rev() {
                let (pid, fd) = fds.swap_remove(i);
                drop(fd);
                on_exit(pid);
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::ExitWatch;

    pub(super) fn start(_procs: &[(u32, u64)], _on_exit: Box<dyn Fn(u32) + Send>) -> ExitWatch {
        ExitWatch { watched: 0 }
    }
}

// pidfds: Linux only.
#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    fn child() -> (std::process::Child, (u32, u64)) {
        let c = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = c.id();
        let start = crate::procs::linux::process_start_time(pid).unwrap();
        (c, (pid, start))
    }

    #[test]
    fn a_vm_process_exit_is_reported_without_polling_the_process_table() {
        let (mut a, ida) = child();
        let (mut b, idb) = child();
        let (tx, rx) = mpsc::channel();
        let w = ExitWatch::start(&[ida, idb], move |pid| tx.send(pid).unwrap());
        assert_eq!(w.watched(), 2);
        assert!(
            rx.recv_timeout(Duration::from_millis(200)).is_err(),
            "nothing exited yet"
        );
        b.kill().unwrap();
        b.wait().unwrap();
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), idb.0);
        a.kill().unwrap();
        a.wait().unwrap();
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), ida.0);
    }

    #[test]
    fn a_process_gone_or_reused_before_the_watch_counts_as_exited() {
        let (mut a, (pid, start)) = child();
        let (tx, rx) = mpsc::channel();
        // Same pid, another start time: not the process the scan saw.
        let w = ExitWatch::start(&[(pid, start + 1)], move |p| tx.send(p).unwrap());
        assert_eq!(w.watched(), 0);
        assert_eq!(rx.recv_timeout(Duration::from_secs(1)).unwrap(), pid);
        a.kill().unwrap();
        a.wait().unwrap();
    }

    #[test]
    fn a_dropped_watch_reports_nothing_more() {
        let (mut a, id) = child();
        let (tx, rx) = mpsc::channel();
        let w = ExitWatch::start(&[id], move |p| tx.send(p).unwrap());
        assert_eq!(w.watched(), 1);
        drop(w);
        std::thread::sleep(Duration::from_millis(100));
        a.kill().unwrap();
        a.wait().unwrap();
        assert!(rx.recv_timeout(Duration::from_millis(500)).is_err());
    }
}
