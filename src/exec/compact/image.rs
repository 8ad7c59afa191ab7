//! The disk image a compaction works on, opened once and held for the whole compaction:
//! exactly the file that was judged, under the locks a VM respects.
//!
//! * **The judged file, by an absolute canonical name.** The name the scan gave is resolved
//!   (`realpath`) to an absolute path with no link, `.` or `..` in it; that file is opened
//!   without following a link and must have the identity the plan recorded (device, inode,
//!   size, mtime) and one name (a hard-linked file changes under its other names too). Every
//!   tool is handed that absolute path (never read as an option, since it starts with `/`; QEMU
//!   gets it as `filename=` of its `file` driver, never through its protocol prefixes such as
//!   `file:` or `nbd:`), and before each tool the name still leads to the held file.
//! * **QEMU's own image lock.** QEMU marks its use of an image with `fcntl` byte-range locks
//!   (open file description locks where the kernel has them, POSIX ones elsewhere): a shared
//!   lock on byte 100 + N for each permission N it takes (consistent read, write, write
//!   unchanged, resize, graph change) and on byte 200 + N for each it does not share with
//!   others; before it opens an image it tests, for every permission it wants, that nobody
//!   refuses to share it, and for every one it refuses to share, that nobody holds it
//!   (`block/file-posix.c`, `raw_apply_lock_bytes`, `raw_check_lock_bytes`). The compaction
//!   takes all of them, as one that holds every permission and shares none: a QEMU (a VM,
//!   `qemu-img`, `qemu-io`) started meanwhile refuses to open the image, and an image a QEMU
//!   already holds is refused. The lock is the held descriptor's, which every tool inherits: it
//!   lives as long as the compaction or its last tool, whichever ends later. The tools
//!   themselves are told not to lock (`locking=off`): the image is locked for them.
//! * **Nobody else, before each write.** Immediately before each writing step the kernel is
//!   asked whether any other open description of the file exists (a write lease on the held
//!   descriptor: [`crate::procs::holders_of_open`]) and the process table whether a process
//!   names it, works in it or holds it (the one "in use" rule, Smolsweep itself left out).
//! * **Its timestamps, given back.** Compacting changes no byte a guest reads; the file's
//!   access and modification times are set back to what they were, so the next scan says of
//!   it what it said before (kind, verdict, age).

use std::fs::File;
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::model::FileIdentity;
use crate::procs::Holders;

/// QEMU's lock bytes: 100 + N for a permission taken, 200 + N for one not shared
/// (`RAW_LOCK_PERM_BASE`, `RAW_LOCK_SHARED_BASE`), N below [`QEMU_PERMS`].
pub(crate) const QEMU_PERM_BASE: i64 = 100;
pub(crate) const QEMU_SHARED_BASE: i64 = 200;
/// Permissions QEMU has locked bytes for (consistent read, write, write unchanged, resize, and
/// graph change in QEMU before 7.0).
pub(crate) const QEMU_PERMS: i64 = 5;

/// The lock commands: open file description locks where the kernel has them (QEMU prefers
/// them too), POSIX record locks elsewhere.
#[cfg(target_os = "linux")]
const SETLK: i32 = libc::F_OFD_SETLK;
#[cfg(target_os = "linux")]
const GETLK: i32 = libc::F_OFD_GETLK;
#[cfg(not(target_os = "linux"))]
const SETLK: i32 = libc::F_SETLK;
#[cfg(not(target_os = "linux"))]
const GETLK: i32 = libc::F_GETLK;

/// The lock types, as `fcntl` takes them (`c_int` on Linux, `c_short` on macOS).
#[allow(clippy::unnecessary_cast)]
const RDLCK: i32 = libc::F_RDLCK as i32;
#[allow(clippy::unnecessary_cast)]
const WRLCK: i32 = libc::F_WRLCK as i32;
#[allow(clippy::unnecessary_cast)]
const UNLCK: i32 = libc::F_UNLCK as i32;

/// The image, held for a compaction.
pub(super) struct Image {
    /// The absolute canonical path every tool is handed.
    path: PathBuf,
    /// Open for reading and writing: QEMU's locks are this descriptor's.
    file: File,
    /// Device and inode of the held file.
    devino: (u64, u64),
    /// Access and modification times before the compaction.
    times: rustix::fs::Timestamps,
}

fn shown(p: &Path) -> String {
    crate::pathser::shown(p)
}

impl Image {
    /// Open the image judged at `path` with `identity` and take QEMU's lock on it; `Err` says
    /// why it is not compacted.
    pub(super) fn open(path: &Path, identity: &FileIdentity) -> Result<Image, String> {
        let canon = std::fs::canonicalize(path)
            .map_err(|e| format!("{} cannot be resolved ({e}); not compacted", shown(path)))?;
        if !canon.is_absolute() {
            return Err(format!(
                "{} has no absolute name; not compacted",
                shown(path)
            ));
        }
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(&canon)
            .map_err(|e| format!("{} cannot be opened ({e}); not compacted", shown(path)))?;
        let m = file
            .metadata()
            .map_err(|e| format!("{} cannot be read ({e}); not compacted", shown(path)))?;
        let now = (
            m.dev(),
            m.ino(),
            m.size(),
            i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
        );
        if !m.is_file() || now != (identity.dev, identity.ino, identity.size, identity.mtime_ns) {
            return Err(format!(
                "{} changed since the plan; not compacted",
                shown(path)
            ));
        }
        let image = Image {
            path: canon,
            devino: (m.dev(), m.ino()),
            times: rustix::fs::Timestamps {
                last_access: st_time(m.atime(), m.atime_nsec()),
                last_modification: st_time(m.mtime(), m.mtime_nsec()),
            },
            file,
        };
        // The judged name leads to the held file, with one name.
        image.still_judged(path)?;
        image.lock_as_qemu()?;
        Ok(image)
    }

    /// The absolute canonical path the tools are handed.
    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// The held descriptor, which every tool inherits (and QEMU's lock with it).
    pub(super) fn fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }

    /// The file at `name` (and at the canonical path) is still the held one, and it has one
    /// name.
    pub(super) fn still_judged(&self, name: &Path) -> Result<(), String> {
        for p in [name, self.path.as_path()] {
            let same =
                std::fs::symlink_metadata(p).is_ok_and(|m| (m.dev(), m.ino()) == self.devino);
            if !same {
                return Err(format!(
                    "{} is no longer the file that was judged; not compacted",
                    shown(name)
                ));
            }
        }
        let links = self.file.metadata().map_or(0, |m| m.nlink());
        if links != 1 {
            return Err(format!(
                "{}: {}; not compacted",
                shown(name),
                crate::compact::other_names(links)
            ));
        }
        Ok(())
    }

    /// Take QEMU's lock as one that holds every permission and shares none; `Err` when a QEMU
    /// (or anyone else locking those bytes) already holds the image.
    fn lock_as_qemu(&self) -> Result<(), String> {
        for base in [QEMU_PERM_BASE, QEMU_SHARED_BASE] {
            fcntl_lock(self.fd(), SETLK, RDLCK, base).map_err(|e| {
                format!(
                    "QEMU's image lock on {} cannot be taken ({e}): a QEMU holds it; not compacted",
                    shown(&self.path)
                )
            })?;
        }
        // Taken first, tested after (as QEMU does): of two opening at once, one sees the other.
        for base in [QEMU_PERM_BASE, QEMU_SHARED_BASE] {
            if let Some(pid) = lock_holder(self.fd(), base) {
                let who = pid.map_or(String::new(), |p| format!(" (process {p})"));
                return Err(format!(
                    "a QEMU has {} open{who}: it holds QEMU's image lock; not compacted",
                    shown(&self.path)
                ));
            }
        }
        Ok(())
    }

    /// Immediately before a writing step: the file is still the judged one, no other open
    /// description of it exists (the kernel's count, asked through the held descriptor), and no
    /// process but Smolsweep uses it by the one "in use" rule.
    pub(super) fn nobody_else(&self, name: &Path) -> Result<(), String> {
        self.still_judged(name)?;
        if crate::procs::holders_of_open(self.file.as_fd()) == Holders::Someone {
            return Err(format!(
                "{} was opened by another process during the compaction; not compacted",
                shown(name)
            ));
        }
        let index = crate::scan::ProcIndex::build(crate::procs::list(), 0);
        let pids = index.in_use(&self.path, Some(self.devino));
        if pids.is_empty() {
            return Ok(());
        }
        let users = crate::scan::procindex::Users {
            pids,
            unseen: false,
        };
        Err(format!(
            "not compacted: {}",
            crate::scan::in_use_sentence(&users).trim_start_matches("But ")
        ))
    }

    /// Give the file back the access and modification times it had.
    pub(super) fn restore_times(&self) {
        // A time that cannot be set back leaves the disk looking new; nothing else changes.
        let _ = rustix::fs::futimens(&self.file, &self.times);
    }
}

fn st_time(sec: i64, nsec: i64) -> rustix::fs::Timespec {
    rustix::fs::Timespec {
        tv_sec: sec as _,
        tv_nsec: nsec as _,
    }
}

/// `fcntl(fd, cmd)` with a lock of `kind` on QEMU's [`QEMU_PERMS`] bytes from `base`.
fn fcntl_lock(fd: RawFd, cmd: i32, kind: i32, base: i64) -> std::io::Result<libc::flock> {
    // SAFETY: a plain C struct, all-zero is a valid value; every field used is set below.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = kind as _;
    fl.l_whence = libc::SEEK_SET as _;
    fl.l_start = base as _;
    fl.l_len = QEMU_PERMS as _;
    // SAFETY: `fcntl` with a lock command and a pointer to a `flock` that outlives the call.
    if unsafe { libc::fcntl(fd, cmd, &mut fl) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(fl)
}

/// Whether another lock than this descriptor's is on QEMU's bytes from `base` (with the pid the
/// kernel names, when it names one); a test that fails counts as held.
fn lock_holder(fd: RawFd, base: i64) -> Option<Option<i64>> {
    match fcntl_lock(fd, GETLK, WRLCK, base) {
        Ok(fl) if i32::from(fl.l_type) == UNLCK => None,
        Ok(fl) => Some((fl.l_pid > 0).then_some(i64::from(fl.l_pid))),
        Err(_) => Some(None),
    }
}
