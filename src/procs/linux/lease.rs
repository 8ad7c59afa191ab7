//! Whether any open file description anywhere holds a file, asked of the kernel itself: a write
//! lease (`fcntl(F_SETLEASE, F_WRLCK)`) is granted only when the file has no open description
//! but the one asking (`fs/locks.c`, `check_conflicting_open`: the inode's read and write
//! counts). Every holder counts, whoever it is: a process of another user or mount namespace
//! whose `/proc/<pid>/fd` cannot be read, a file mapped after its descriptor was closed, a
//! running executable, a loop device's backing file. The lease is released at once; it is
//! only ever asked of regular files this user owns (the kernel's rule for leases).
//!
//! It answers "nobody", "someone" or "cannot tell", never who: when a file is held (or the
//! kernel cannot say), the caller reads the whole process table to name the holders; a holder
//! the table does not show is one Smolsweep cannot see, and what it holds is left alone. What it does not see
//! is a descriptor opened with `O_PATH` (it can neither read nor write).
//!
//! While the lease is held (two system calls), another process opening the file waits for it
//! to be released (`O_NONBLOCK` opens fail with `EWOULDBLOCK` instead), and the kernel sends
//! this process `SIGIO`; its default action ends a process, so it is ignored first when nothing
//! else handles it.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::sync::Once;

use rustix::fs::{fstat, openat, statat, AtFlags, FileType, Mode, OFlags, RawDir};
use rustix::io::Errno;

use crate::procs::Holders;

/// Whether anything at `path` (a regular file, or any regular file below a directory) is open
/// anywhere, by the kernel's own count. `devino`, when given, is the identity the file must
/// still have. `budget` is how many files may still be asked about (it is spent as they are).
pub(crate) fn holders(path: &Path, devino: Option<(u64, u64)>, budget: &mut usize) -> Holders {
    ignore_sigio();
    match free_at(rustix::fs::CWD, path, devino, budget, 0) {
        Ok(h) => h,
        // Nothing is there to hold, unless an identity was asked about: that file may be held
        // under another name.
        Err(Errno::NOENT) if devino.is_none() => Holders::Nobody,
        Err(_) => Holders::CannotTell,
    }
}

/// Deeper than this, a tree is left to the process table.
const MAX_DEPTH: usize = 64;

/// Who holds `name` in `dir` ([`holders`]), looked at without following a
/// link. Only regular files and directories are opened: a link, a pipe, a socket or a device
/// is never what a process holds open as a file (the table's open files are regular files
/// only), and opening a device could do something.
fn free_at<P: rustix::path::Arg + Copy>(
    dir: BorrowedFd<'_>,
    name: P,
    devino: Option<(u64, u64)>,
    budget: &mut usize,
    depth: usize,
) -> Result<Holders, Errno> {
    let st = statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)?;
    let kind = FileType::from_raw_mode(st.st_mode);
    if !matches!(kind, FileType::RegularFile | FileType::Directory) {
        return Ok(Holders::Nobody);
    }
    // Every file or directory opened spends the budget: a tree of many empty directories is
    // bounded too.
    if !take(budget) {
        return Ok(Holders::CannotTell);
    }
    let mut flags =
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    if kind == FileType::Directory {
        flags |= OFlags::DIRECTORY;
    }
    // A scan changes no timestamp: no access time either (refused on what another user owns).
    let fd = match openat(dir, name, flags | OFlags::NOATIME, Mode::empty()) {
        Err(Errno::PERM) => openat(dir, name, flags, Mode::empty())?,
        opened => opened?,
    };
    // The same file as looked at (and as asked about), or it changed meanwhile: cannot tell.
    let now = fstat(&fd)?;
    let same = (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino);
    if !same || devino.is_some_and(|k| k != (now.st_dev, now.st_ino)) {
        return Ok(Holders::CannotTell);
    }
    Ok(match kind {
        FileType::Directory => dir_holders(fd, budget, depth),
        _ => lease(fd.as_fd()),
    })
}

/// Whether any regular file below the open directory `dir` is held ([`holders`]): the first
/// answer other than "nobody" is the directory's.
fn dir_holders(dir: OwnedFd, budget: &mut usize, depth: usize) -> Holders {
    if depth > MAX_DEPTH {
        return Holders::CannotTell;
    }
    let mut buf = vec![std::mem::MaybeUninit::uninit(); 8192];
    let mut entries = RawDir::new(&dir, &mut buf);
    while let Some(entry) = entries.next() {
        let Ok(entry) = entry else {
            return Holders::CannotTell;
        };
        let name = entry.file_name();
        if matches!(name.to_bytes(), b"." | b"..") {
            continue;
        }
        let h = match free_at(dir.as_fd(), name, None, budget, depth + 1) {
            Ok(h) => h,
            // Removed meanwhile: nothing to hold.
            Err(Errno::NOENT) => Holders::Nobody,
            Err(_) => Holders::CannotTell,
        };
        if h != Holders::Nobody {
            return h;
        }
    }
    Holders::Nobody
}

fn take(budget: &mut usize) -> bool {
    match budget.checked_sub(1) {
        Some(left) => {
            *budget = left;
            true
        }
        None => false,
    }
}

/// Whether any other open description than the one of `fd` (an open regular file this user
/// owns) exists anywhere: the executor asks it of the image it holds open itself, immediately
/// before each writing step of a compaction.
pub(crate) fn holders_of_open(fd: BorrowedFd<'_>) -> Holders {
    ignore_sigio();
    lease(fd)
}

/// Whether a write lease on the open regular file `fd` is granted (no other open description),
/// refused because another description exists (`EAGAIN`: held), or cannot be asked (another
/// owner, no leases on this file system); a granted one is released at once.
fn lease(fd: BorrowedFd<'_>) -> Holders {
    lease_asked(fd, || {})
}

/// [`lease`], running `during` while the lease is held.
///
/// An open by anyone else while the lease is held breaks it: the opener waits, and the kernel
/// reports the lease as the type it is being broken to (`F_UNLCK` for an open for writing,
/// `F_RDLCK` for one for reading) or, once the break time has passed (this process was stopped
/// meanwhile), as gone. Either way someone opened the file during the question: it is held.
/// Only a lease still whole when it is given back means nobody.
fn lease_asked(fd: BorrowedFd<'_>, during: impl FnOnce()) -> Holders {
    let raw = fd.as_raw_fd();
    // SAFETY: `fcntl` on a descriptor this function borrows, with integer arguments only.
    if unsafe { libc::fcntl(raw, libc::F_SETLEASE, libc::F_WRLCK) } != 0 {
        return match Errno::from_io_error(&std::io::Error::last_os_error()) {
            Some(Errno::AGAIN) => Holders::Someone,
            _ => Holders::CannotTell,
        };
    }
    during();
    // SAFETY: as above.
    let still = unsafe { libc::fcntl(raw, libc::F_GETLEASE) };
    // SAFETY: as above. Closing the descriptor would release it too; this does it at once.
    unsafe { libc::fcntl(raw, libc::F_SETLEASE, libc::F_UNLCK) };
    if still == libc::F_WRLCK {
        Holders::Nobody
    } else {
        Holders::Someone
    }
}

/// A lease broken while held sends `SIGIO`, whose default action ends the process: ignored,
/// unless something already handles it.
fn ignore_sigio() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: reads the current action into a zeroed struct, and replaces it only when it
        // is the default one; no handler of this crate is installed.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGIO, std::ptr::null(), &mut old) == 0
                && old.sa_sigaction == libc::SIG_DFL
            {
                let mut ign: libc::sigaction = std::mem::zeroed();
                ign.sa_sigaction = libc::SIG_IGN;
                libc::sigaction(libc::SIGIO, &ign, std::ptr::null_mut());
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::OpenOptionsExt;

    /// Hazard: a lease broken during the question is not heard. A VMM opens the disk while the
    /// scan holds its lease (the scan stopped, say): the open breaks the lease, and the answer
    /// is "someone", never "nobody".
    #[test]
    fn a_lease_broken_during_the_question_is_heard() {
        ignore_sigio();
        let t = tempfile::tempdir().unwrap();
        let disk = t.path().join("disk.raw");
        std::fs::write(&disk, vec![0u8; 4096]).unwrap();
        let open = || {
            std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&disk)
                .unwrap()
        };
        // Nobody: the lease stays whole.
        let f = open();
        assert_eq!(lease_asked(f.as_fd(), || {}), Holders::Nobody);
        // A process opens it while the lease is held: it waits for the lease, and is heard.
        let mut opener = None;
        let said = lease_asked(f.as_fd(), || {
            opener = Some(
                std::process::Command::new("sh")
                    .args(["-c", "exec 3<\"$1\"", "sh"])
                    .arg(&disk)
                    .spawn()
                    .unwrap(),
            );
            let start = std::time::Instant::now();
            // SAFETY: `fcntl` on a descriptor borrowed from `f`.
            while unsafe { libc::fcntl(f.as_raw_fd(), libc::F_GETLEASE) } == libc::F_WRLCK {
                assert!(
                    start.elapsed() < std::time::Duration::from_secs(10),
                    "the open never broke the lease"
                );
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        });
        assert_eq!(said, Holders::Someone);
        // The opener went through once the lease was given back.
        assert!(opener.unwrap().wait().unwrap().success());
        assert_eq!(lease_asked(f.as_fd(), || {}), Holders::Nobody);
    }
}
