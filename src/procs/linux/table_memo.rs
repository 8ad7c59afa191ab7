//! The process table of the tray app's rescans (issue 20): a process is read again in full
//! unless it provably has not run since it was last read, and then it is taken as it was.
//!
//! Used by `scan::memo` only (the app's long-lived memo). `smolsweep scan`, plans, the
//! executor's re-judge, `why`, and the uninstall's preflight and verification read a whole
//! fresh table ([`super::list_processes`]): **what deletes or stops never reads this memo.**
//!
//! **The rule.** A process is taken as remembered only when all of these are as they were
//! when it was last read (read *before* its files, so that whatever it did while they were
//! read counts as a change):
//!
//! * its pid and start time (a reused pid is a new process);
//! * the set of its threads (`/proc/<pid>/task`);
//! * for every thread, `/proc/<pid>/task/<tid>/schedstat`: nanoseconds run, nanoseconds
//!   waited, times switched in. Exact counters (unlike the tick-granular `utime`/`stime`): the
//!   kernel brings a thread's run time up to date whenever it leaves a CPU and at every
//!   scheduler tick while it runs (on a `nohz_full` CPU, through the 1 Hz remote tick), and
//!   counts each time it is switched in.
//!
//! A process none of whose threads ran cannot have opened, closed or mapped anything, nor
//! changed its working or root directory, its arguments, its user or its name (io_uring
//! workers and SQPOLL threads are threads of the process: they are in the set). Its `stat` is
//! read anyway (for the start time), so its parent pid and name are always current. New pids
//! are read in full; exited ones are dropped; a `schedstat` that cannot be read (a kernel
//! without it, reading `0 0 0`; a thread gone meanwhile; permission) means "read in full".
//! A process shaped like a VMM of either product is always read in full: it is what the report
//! describes in detail (the bytes of unlinked files it holds, its environment). A kernel thread
//! (the same one, by its start time) is kept without a fingerprint: it has no files, arguments
//! or user memory that could change.
//!
//! **What changes under a process that does not run**, and how each is met:
//!
//! * *A file it holds renamed* (or a directory above it): the kernel's link text changes, the
//!   remembered one does not. Open files are also matched by device and inode
//!   (`scan::procindex`), so a file finding is still seen in use; a directory finding, a mapped
//!   file and a working or root directory are matched by path only. `scan::memo` therefore
//!   trusts the remembered table only while the directory memo's inotify watches saw no name
//!   created, removed or moved in any walked directory, the walk met no directory it was not
//!   already watching, and the scan found no finding the scan before it did not: otherwise the
//!   whole table is read again (before the walk, or the scan is made again).
//! * *A file it holds unlinked*: its path stays in the index (a fresh read strips the
//!   ` (deleted)` suffix the same way), so nothing in use changes; only the `deleted` flag and
//!   the held bytes would be stale, and they are reported for VMMs only, which are always read.
//! * *Another process sharing its descriptor table, memory or working directory*
//!   (`CLONE_FILES`, `CLONE_VM`, `CLONE_FS` without `CLONE_THREAD`): the sharer that runs is
//!   read again and lists the same table, so whatever it opened is in use under its pid. If the
//!   sharer exits, the remembered parent of every process that exited (or whose pid was
//!   reused) is read again, which covers a sharer that is its child; one made with
//!   `CLONE_PARENT` (a sibling), or a chain of them whose middle exited, is seen at the next
//!   full read.
//! * *Its memory written from outside* (`ptrace`, `process_vm_writev`, `/proc/<pid>/mem`):
//!   its arguments as remembered stay until the next full read.
//!
//! `scan::memo` reads the whole table at least every `PROC_FULL_READ_EVERY` (60 s) and after
//! `ScanMemo::clear`, which bounds the two edges left.

use std::collections::HashSet;
use std::ffi::CStr;
use std::io::Write;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;

use rustix::fs::RawDir;

use super::{
    is_kernel_thread, open_dir, parse_stat, read_file, read_record, read_rest, read_table, Depth,
    Scratch,
};
use crate::procs::RawProcess;

/// What tells whether a process ran: its start time, and each thread (ascending) with its
/// `schedstat` (run ns, wait ns, times switched in).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Fingerprint {
    start_time: u64,
    threads: Vec<(u32, [u64; 3])>,
}

/// One process as last read, with its fingerprint taken just before (`None`: it has none, it
/// is read in full next time).
#[derive(Debug)]
struct Remembered {
    fingerprint: Option<Fingerprint>,
    process: RawProcess,
    /// Taken as remembered by the last read (not read in full).
    kept: bool,
}

/// The process table as the last read left it, for the next.
#[derive(Debug, Default)]
pub(crate) struct TableMemo {
    /// By pid, ascending.
    procs: Vec<Remembered>,
}

impl TableMemo {
    /// Every process of `proc_root`, as [`super::list_processes_in`] lists them, by pid. A
    /// process that has not run since it was last read (the module's rule) is taken as it was,
    /// unless `whole`; every other one is read in full. Remembers the table for the next read.
    pub(crate) fn list(&mut self, proc_root: &Path, whole: bool) -> Vec<RawProcess> {
        let old = std::mem::take(&mut self.procs);
        let remembered = (!whole).then_some(old.as_slice());
        let mut now: Vec<Remembered> = read_table(proc_root, |root, pid, ino, s| {
            read_or_keep(root, pid, ino, s, remembered)
        })
        .into_iter()
        .map(|(_, r)| r)
        .collect();
        if !whole {
            wake_parents_of_gone(&old, &mut now, proc_root);
        }
        take_kept(old, &mut now);
        let out = now.iter().map(|r| r.process.clone()).collect();
        self.procs = now;
        out
    }

    /// How many processes the last [`TableMemo::list`] took as remembered.
    pub(crate) fn kept(&self) -> usize {
        self.procs.iter().filter(|r| r.kept).count()
    }

    /// Whether the last [`TableMemo::list`] took `pid` as remembered.
    #[cfg(test)]
    pub(crate) fn was_kept(&self, pid: u32) -> bool {
        find(&self.procs, pid).is_some_and(|r| r.kept)
    }

    /// The remembered content of `pid`, to change it (tests: a memo that says something else
    /// than the process table).
    #[cfg(test)]
    pub(crate) fn remembered_mut(&mut self, pid: u32) -> Option<&mut RawProcess> {
        let i = self
            .procs
            .binary_search_by_key(&pid, |r| r.process.pid)
            .ok()?;
        Some(&mut self.procs[i].process)
    }
}

fn find(procs: &[Remembered], pid: u32) -> Option<&Remembered> {
    let i = procs.binary_search_by_key(&pid, |r| r.process.pid).ok()?;
    Some(&procs[i])
}

/// One process: read in full, or, when `remembered` holds it with the same fingerprint as now
/// (and it is not shaped like a VMM), marked `kept` with only what its `stat` says now (the rest
/// is taken from the memo by [`take_kept`]). `None` when it is gone. `ino`: its directory's inode
/// number as `/proc` listed it (kept as the process's `proc_ino`).
fn read_or_keep(
    root: BorrowedFd<'_>,
    pid: u32,
    ino: u64,
    s: &mut Scratch,
    remembered: Option<&[Remembered]>,
) -> Option<Remembered> {
    let dir = open_dir(root, pid.to_string()).ok()?;
    let dir = dir.as_fd();
    read_record(dir, c"stat", &mut s.file).ok()?;
    let stat = parse_stat(&s.file)?;
    let before = remembered.and_then(|r| find(r, pid));
    // A kernel thread (the same one: same start time) never has files, arguments or a user
    // memory to change: no fingerprint is needed to keep it.
    let kernel_thread = before.is_some_and(|r| {
        r.process.start_time == stat.start_time && is_kernel_thread(pid, stat.ppid, &r.process.argv)
    });
    let fingerprint = match kernel_thread {
        true => None,
        false => fingerprint(dir, stat.start_time, s),
    };
    let same = before
        .filter(|r| kernel_thread || (fingerprint.is_some() && r.fingerprint == fingerprint))
        .filter(|r| !crate::procs::shape::may_be_vmm(&r.process));
    if same.is_some() {
        let process = RawProcess {
            pid,
            ppid: stat.ppid,
            start_time: stat.start_time,
            comm: stat.comm,
            proc_ino: ino,
            ..RawProcess::default()
        };
        return Some(Remembered {
            fingerprint,
            process,
            kept: true,
        });
    }
    Some(Remembered {
        process: RawProcess {
            proc_ino: ino,
            ..read_rest(dir, pid, stat, Depth::Whole, s)?
        },
        fingerprint,
        kept: false,
    })
}

/// Each process of `now` marked kept gets what `old` remembers of it, with its parent and name
/// as read now.
fn take_kept(mut old: Vec<Remembered>, now: &mut [Remembered]) {
    // Both by pid: one pass (a taken entry is left behind, never compared again).
    let mut j = 0;
    for r in now.iter_mut().filter(|r| r.kept) {
        while old.get(j).is_some_and(|o| o.process.pid < r.process.pid) {
            j += 1;
        }
        if let Some(o) = old.get_mut(j).filter(|o| o.process.pid == r.process.pid) {
            let stat = std::mem::replace(&mut r.process, std::mem::take(&mut o.process));
            r.process.ppid = stat.ppid;
            r.process.comm = stat.comm;
            r.process.proc_ino = stat.proc_ino;
            j += 1;
        }
    }
}

/// A process that exited (or whose pid now names another) may have shared its parent's
/// descriptor table, memory or working directory and left it changed: the parent, if it was
/// kept, is read again in full (dropped if it is gone too).
fn wake_parents_of_gone(old: &[Remembered], now: &mut Vec<Remembered>, proc_root: &Path) {
    let parents: HashSet<u32> = old
        .iter()
        .filter(|r| {
            find(now, r.process.pid).is_none_or(|n| n.process.start_time != r.process.start_time)
        })
        .map(|r| r.process.ppid)
        .collect();
    if !now
        .iter()
        .any(|r| r.kept && parents.contains(&r.process.pid))
    {
        return;
    }
    let Ok(root) = open_dir(rustix::fs::CWD, proc_root) else {
        return;
    };
    let mut s = Scratch::new();
    now.retain_mut(|r| {
        if !r.kept || !parents.contains(&r.process.pid) {
            return true;
        }
        match read_or_keep(
            root.as_fd(),
            r.process.pid,
            r.process.proc_ino,
            &mut s,
            None,
        ) {
            Some(again) => {
                *r = again;
                true
            }
            None => false,
        }
    });
}

/// The fingerprint of the process whose `/proc/<pid>` is open as `dir`; `None` when a thread's
/// `schedstat` cannot be read or tells nothing.
fn fingerprint(dir: BorrowedFd<'_>, start_time: u64, s: &mut Scratch) -> Option<Fingerprint> {
    let task = open_dir(dir, c"task").ok()?;
    let mut tids: Vec<u32> = Vec::new();
    {
        let mut entries = RawDir::new(&task, &mut s.dents);
        while let Some(entry) = entries.next() {
            let entry = entry.ok()?;
            if let Some(tid) = entry.file_name().to_str().ok().and_then(|n| n.parse().ok()) {
                tids.push(tid);
            }
        }
    }
    tids.sort_unstable();
    let mut threads = Vec::with_capacity(tids.len());
    for tid in tids {
        s.name.clear();
        write!(s.name, "{tid}/schedstat\0").ok()?;
        let name = CStr::from_bytes_with_nul(&s.name).ok()?;
        read_file(task.as_fd(), name, &mut s.file).ok()?;
        threads.push((tid, parse_schedstat(&s.file)?));
    }
    (!threads.is_empty()).then_some(Fingerprint {
        start_time,
        threads,
    })
}

/// `/proc/<pid>/task/<tid>/schedstat`: run ns, wait ns, times switched in. `None` when
/// malformed, or all zero (the kernel keeps no such statistics; or a thread that never ran).
fn parse_schedstat(bytes: &[u8]) -> Option<[u64; 3]> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut fields = text.split_ascii_whitespace().map(|v| v.parse::<u64>().ok());
    let v = [fields.next()??, fields.next()??, fields.next()??];
    (v != [0, 0, 0]).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::parse_schedstat;

    #[test]
    fn schedstat_fields_and_a_kernel_without_them() {
        assert_eq!(parse_schedstat(b"123456 789 42\n"), Some([123456, 789, 42]));
        assert_eq!(parse_schedstat(b"0 0 0\n"), None);
        assert_eq!(parse_schedstat(b"12 x 3\n"), None);
        assert_eq!(parse_schedstat(b"12 3\n"), None);
    }
}
