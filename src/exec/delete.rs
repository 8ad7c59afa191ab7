//! The delete primitive, held to the standard of GNU `rm` and Rust's post-CVE-2022-21658
//! `remove_dir_all`.
//!
//! * Only strictly inside a root the scan resolved; never `/`, HOME, an ancestor of HOME, or a
//!   root directory itself.
//! * Every ancestor below the root is opened with `O_NOFOLLOW | O_DIRECTORY`, so a symlinked
//!   ancestor is never traversed; the target is `lstat`ed relative to its parent's descriptor and
//!   compared with the identity the scan recorded.
//! * Directories are removed by descriptor (`openat(O_NOFOLLOW | O_DIRECTORY)` + `unlinkat`), so a
//!   directory swapped for a symlink mid-delete is unlinked, never followed; a symlink inside is
//!   unlinked, never followed.
//! * A directory on another file system (or another mount of the same one) is a mount point: it
//!   is left in place and reported, never deleted through.
//!
//! Deleting needs a [`Confirmed`] token; the executor's dry run never has one, so it cannot reach
//! [`delete_path`]. [`precheck`] is the read-only half a dry run uses.

// `stat` field and `S_IF*` constant types differ between Linux and macOS (u32/u16, u64/i32):
// the casts below are no-ops on one platform and needed on the other.
#![allow(clippy::unnecessary_cast)]

use std::cell::Cell;
use std::ffi::{CStr, OsStr};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{self as rfs, AtFlags, Dir, FileType, Mode, OFlags, Stat};
use rustix::io::Errno;
use serde::{Deserialize, Serialize};

use super::confirm::Confirmed;
use crate::model::FileIdentity;
use crate::plan::{is_normal_absolute, strictly_inside};
use crate::record::Outcome;

/// How strictly the target's identity is re-checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IdentityCheck {
    /// Device, inode and type; for files also size and mtime; for directories also mtime (an
    /// entry added or removed directly inside since the scan).
    Full,
    /// Device, inode and type only (storage of a process reaped in the same run, whose size and
    /// mtime change while it runs).
    DevInoType,
}

/// One thing to delete.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Target<'a> {
    pub root: &'a Path,
    pub path: &'a Path,
    pub identity: &'a FileIdentity,
    pub check: IdentityCheck,
    /// HOME: never deleted, nor any ancestor of it.
    pub home: &'a Path,
    /// Every root directory: none is ever deleted itself.
    pub roots: &'a [PathBuf],
    /// When the scan ran (ns since the epoch): a directory inside the target modified later
    /// (entries added or removed since the scan) is left in place. `None` disables this.
    pub scanned_at_ns: Option<i128>,
}

/// What the primitive did. Expected situations are outcomes, not errors.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub(crate) enum DeleteOutcome {
    /// Removed; `entries` counts every name unlinked (the target included).
    Deleted { entries: u64 },
    /// Nothing at that path any more.
    AlreadyGone,
    /// Something at that path is not what the scan saw.
    Changed { why: String },
    /// Never deleted by policy (outside the root, a root itself, a mount point...).
    Refused { why: String },
    /// Deleted except what `left` names (mount points, entries that could not be removed).
    Partial {
        entries: u64,
        left: Vec<PathBuf>,
        why: String,
    },
    /// An error stopped it.
    Failed { error: String },
}

thread_local! {
    static PRIMITIVE_CALLS: Cell<u64> = const { Cell::new(0) };
}

/// How many times [`delete_path`] was entered on this thread (tests prove a dry run never does).
pub(crate) fn primitive_calls_on_this_thread() -> u64 {
    PRIMITIVE_CALLS.with(|c| c.get())
}

/// The identity of `path` itself (not following a symlink), as the scan records it.
pub(crate) fn identity_of(path: &Path) -> std::io::Result<FileIdentity> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::symlink_metadata(path)?;
    Ok(FileIdentity {
        dev: m.dev(),
        ino: m.ino(),
        file_type: m.mode() & libc::S_IFMT as u32,
        size: m.size(),
        mtime_ns: m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128,
    })
}

fn identity_from_stat(st: &Stat) -> FileIdentity {
    FileIdentity {
        dev: st.st_dev as u64,
        ino: st.st_ino as u64,
        file_type: st.st_mode as u32 & libc::S_IFMT as u32,
        size: st.st_size as u64,
        mtime_ns: st.st_mtime as i128 * 1_000_000_000 + st.st_mtime_nsec as i128,
    }
}

/// Why `now` is not `then`, or `None` when it is the same object.
pub(crate) fn identity_mismatch(
    then: &FileIdentity,
    now: &FileIdentity,
    check: IdentityCheck,
) -> Option<String> {
    if then.file_type != now.file_type {
        return Some(format!(
            "changed since the scan: was a {}, now a {}",
            type_name(then.file_type),
            type_name(now.file_type)
        ));
    }
    if then.dev != now.dev || then.ino != now.ino {
        return Some("changed since the scan: replaced by another file".into());
    }
    if check == IdentityCheck::DevInoType {
        return None;
    }
    let is_dir = then.file_type == libc::S_IFDIR as u32;
    if !is_dir && then.size != now.size {
        return Some(format!(
            "changed since the scan: size {} → {}",
            then.size, now.size
        ));
    }
    if then.mtime_ns != now.mtime_ns {
        return Some(if is_dir {
            "changed since the scan: entries were added or removed".into()
        } else {
            "changed since the scan: modified".into()
        });
    }
    None
}

fn type_name(t: u32) -> &'static str {
    match t & libc::S_IFMT as u32 {
        x if x == libc::S_IFDIR as u32 => "directory",
        x if x == libc::S_IFREG as u32 => "file",
        x if x == libc::S_IFLNK as u32 => "symlink",
        x if x == libc::S_IFSOCK as u32 => "socket",
        x if x == libc::S_IFIFO as u32 => "fifo",
        _ => "special file",
    }
}

/// Where the target is: its parent directory, opened safely, and its current `lstat`.
struct Located {
    parent: OwnedFd,
    name: Vec<u8>,
    stat: Stat,
    root_mount: MountKey,
}

/// Policy checks that need no file system access.
pub(crate) fn refusal(t: &Target) -> Option<String> {
    if !is_normal_absolute(t.path) {
        return Some("not a normal absolute path".into());
    }
    if !is_normal_absolute(t.root) {
        return Some("the root is not a normal absolute path".into());
    }
    if t.root == Path::new("/") || t.home.starts_with(t.root) {
        return Some("refusing: the root is /, HOME or a directory that contains HOME".into());
    }
    if t.path == Path::new("/") {
        return Some("refusing to delete /".into());
    }
    if t.path == t.home || t.home.starts_with(t.path) {
        return Some("refusing to delete HOME or a directory that contains it".into());
    }
    if t.roots.iter().any(|r| r == t.path) || t.path == t.root {
        return Some("refusing to delete a root directory itself".into());
    }
    if !strictly_inside(t.path, t.root) {
        return Some(format!("not strictly inside its root {}", t.root.display()));
    }
    None
}

fn locate(t: &Target) -> Result<Located, DeleteOutcome> {
    if let Some(why) = refusal(t) {
        return Err(DeleteOutcome::Refused { why });
    }
    // `refusal` checked these; a path that still does not fit is refused, never a panic
    // halfway through a plan.
    let odd = || DeleteOutcome::Refused {
        why: format!("{} is not a plain path below its root", t.path.display()),
    };
    let rel = t.path.strip_prefix(t.root).map_err(|_| odd())?;
    let comps: Vec<&OsStr> = rel
        .components()
        .map(|c| match c {
            Component::Normal(s) => Ok(s),
            _ => Err(odd()),
        })
        .collect::<Result<_, _>>()?;
    // The root itself is opened as the scan resolved it (a symlinked prefix above it is allowed);
    // nothing below it is ever followed.
    let mut dir = match rfs::open(
        t.root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Err(DeleteOutcome::AlreadyGone),
        Err(e) => {
            return Err(DeleteOutcome::Failed {
                error: format!("cannot open the root {}: {e}", t.root.display()),
            })
        }
    };
    let root_mount = match mount_key(&dir) {
        Ok(k) => k,
        Err(e) => {
            return Err(DeleteOutcome::Failed {
                error: format!("cannot stat the root: {e}"),
            })
        }
    };
    let Some((last, ancestors)) = comps.split_last() else {
        return Err(odd());
    };
    for c in ancestors {
        dir = match rfs::openat(&dir, *c, dir_flags(), Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Err(DeleteOutcome::AlreadyGone),
            Err(Errno::LOOP) | Err(Errno::NOTDIR) => {
                return Err(DeleteOutcome::Changed {
                    why: format!(
                        "changed since the scan: ancestor {:?} is now a symlink or not a directory",
                        c
                    ),
                })
            }
            Err(e) => {
                return Err(DeleteOutcome::Failed {
                    error: format!("cannot open ancestor {c:?}: {e}"),
                })
            }
        };
        match mount_key(&dir) {
            Ok(k) if k == root_mount => {}
            Ok(_) => {
                return Err(DeleteOutcome::Refused {
                    why: format!("ancestor {c:?} is a mount point, not deleted through"),
                })
            }
            Err(e) => {
                return Err(DeleteOutcome::Failed {
                    error: format!("cannot stat ancestor {c:?}: {e}"),
                })
            }
        }
    }
    let stat = match rfs::statat(&dir, *last, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(s) => s,
        Err(Errno::NOENT) => return Err(DeleteOutcome::AlreadyGone),
        Err(e) => {
            return Err(DeleteOutcome::Failed {
                error: format!("cannot stat: {e}"),
            })
        }
    };
    if let Some(why) = identity_mismatch(t.identity, &identity_from_stat(&stat), t.check) {
        return Err(DeleteOutcome::Changed { why });
    }
    Ok(Located {
        parent: dir,
        name: last.as_bytes().to_vec(),
        stat,
        root_mount,
    })
}

/// The read-only half: `None` when [`delete_path`] would go ahead, else the outcome it would
/// report instead. Never unlinks anything.
pub(crate) fn precheck(t: &Target) -> Option<DeleteOutcome> {
    match locate(t) {
        Err(o) => Some(o),
        Ok(loc) => {
            if FileType::from_raw_mode(loc.stat.st_mode as _) == FileType::Directory {
                let name = OsStr::from_bytes(&loc.name);
                match rfs::openat(&loc.parent, name, dir_flags(), Mode::empty()) {
                    Ok(fd) => match mount_key(&fd) {
                        Ok(k) if k != loc.root_mount => Some(DeleteOutcome::Refused {
                            why: "mount point, not deleted through".into(),
                        }),
                        _ => None,
                    },
                    Err(e) => Some(DeleteOutcome::Failed {
                        error: format!("cannot open: {e}"),
                    }),
                }
            } else {
                None
            }
        }
    }
}

/// What the executor records for what the primitive did.
pub(crate) fn delete_outcome(o: DeleteOutcome) -> Outcome {
    match o {
        DeleteOutcome::Deleted { entries } => Outcome::done(format!(
            "deleted ({entries} entr{})",
            if entries == 1 { "y" } else { "ies" }
        )),
        DeleteOutcome::AlreadyGone => Outcome::skipped("already gone"),
        DeleteOutcome::Changed { why } => Outcome::skipped(why),
        DeleteOutcome::Refused { why } => Outcome::skipped(why),
        DeleteOutcome::Partial { left, why, .. } => Outcome::Skipped {
            why,
            partial: true,
            left,
        },
        DeleteOutcome::Failed { error } => Outcome::failed(error),
    }
}

/// Delete `t` if it is still what the scan saw. Requires a [`Confirmed`] token.
pub(crate) fn delete_path(token: &Confirmed, t: &Target) -> DeleteOutcome {
    let _ = token;
    PRIMITIVE_CALLS.with(|c| c.set(c.get() + 1));
    let loc = match locate(t) {
        Ok(l) => l,
        Err(o) => return o,
    };
    let name = OsStr::from_bytes(&loc.name);
    if FileType::from_raw_mode(loc.stat.st_mode as _) != FileType::Directory {
        return unlink_name(&loc.parent, name);
    }
    let fd = match open_target_dir(t, &loc, name) {
        Ok(fd) => fd,
        Err(o) => return o,
    };
    let mut walk = Walk {
        root_mount: loc.root_mount,
        newer_than_ns: match t.check {
            IdentityCheck::Full => t.scanned_at_ns,
            IdentityCheck::DevInoType => None,
        },
        entries: 0,
        mounts: Vec::new(),
        changed: Vec::new(),
        errors: Vec::new(),
    };
    let mut path = t.path.to_path_buf();
    walk.empty_and_remove(&loc.parent, name, fd, &mut path);
    walk_outcome(walk)
}

/// A file, symlink, socket...: unlink the name (a symlink is never followed).
fn unlink_name(parent: &OwnedFd, name: &OsStr) -> DeleteOutcome {
    match rfs::unlinkat(parent, name, AtFlags::empty()) {
        Ok(()) => DeleteOutcome::Deleted { entries: 1 },
        Err(Errno::NOENT) => DeleteOutcome::AlreadyGone,
        Err(e) => DeleteOutcome::Failed {
            error: format!("unlink: {e}"),
        },
    }
}

/// Opens the target directory without following, or the outcome instead when it is gone, no
/// longer the directory the scan saw, or a mount point.
fn open_target_dir(t: &Target, loc: &Located, name: &OsStr) -> Result<OwnedFd, DeleteOutcome> {
    let fd = match rfs::openat(&loc.parent, name, dir_flags(), Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Err(DeleteOutcome::AlreadyGone),
        Err(Errno::LOOP) | Err(Errno::NOTDIR) => {
            return Err(DeleteOutcome::Changed {
                why: "changed since the scan: no longer a directory".into(),
            })
        }
        Err(e) => {
            return Err(DeleteOutcome::Failed {
                error: format!("open: {e}"),
            })
        }
    };
    // The name may have been swapped between lstat and open: check the opened directory too.
    match rfs::fstat(&fd) {
        Ok(st) if st.st_dev as u64 == t.identity.dev && st.st_ino as u64 == t.identity.ino => {}
        Ok(_) => {
            return Err(DeleteOutcome::Changed {
                why: "changed since the scan: replaced by another directory".into(),
            })
        }
        Err(e) => {
            return Err(DeleteOutcome::Failed {
                error: format!("fstat: {e}"),
            })
        }
    }
    match mount_key(&fd) {
        Ok(k) if k == loc.root_mount => Ok(fd),
        Ok(_) => Err(DeleteOutcome::Refused {
            why: "mount point, not deleted through".into(),
        }),
        Err(e) => Err(DeleteOutcome::Failed {
            error: format!("statx: {e}"),
        }),
    }
}

/// What a finished walk amounts to: deleted when nothing was left, failed when an entry could
/// not be removed, else partial (mount points or changed directories left in place).
fn walk_outcome(walk: Walk) -> DeleteOutcome {
    if walk.kept() == 0 {
        return DeleteOutcome::Deleted {
            entries: walk.entries,
        };
    }
    let mut why = Vec::new();
    if !walk.mounts.is_empty() {
        why.push(format!(
            "mount point inside, not deleted through: {}",
            join(&walk.mounts)
        ));
    }
    if !walk.changed.is_empty() {
        why.push(format!(
            "changed since the scan, left in place: {}",
            join(&walk.changed)
        ));
    }
    let has_errors = !walk.errors.is_empty();
    let mut left = walk.mounts;
    left.extend(walk.changed);
    if !walk.errors.is_empty() {
        let shown: Vec<String> = walk
            .errors
            .iter()
            .take(5)
            .map(|(p, e)| format!("{}: {e}", p.display()))
            .collect();
        why.push(format!(
            "{} entr{} could not be removed ({})",
            walk.errors.len(),
            if walk.errors.len() == 1 { "y" } else { "ies" },
            shown.join("; ")
        ));
        left.extend(walk.errors.into_iter().map(|(p, _)| p));
    }
    if has_errors {
        return DeleteOutcome::Failed {
            error: format!(
                "partly deleted ({} entries); {}",
                walk.entries,
                why.join("; ")
            ),
        };
    }
    DeleteOutcome::Partial {
        entries: walk.entries,
        left,
        why: why.join("; "),
    }
}

fn join(p: &[PathBuf]) -> String {
    p.iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn dir_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

#[cfg(target_os = "linux")]
fn dir_flags_noatime() -> OFlags {
    dir_flags() | OFlags::NOATIME
}

#[cfg(not(target_os = "linux"))]
fn dir_flags_noatime() -> OFlags {
    dir_flags()
}

/// Identifies the mount a directory is on: device, and on Linux the mount id (so a bind mount of
/// the same file system is a boundary too).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct MountKey {
    dev: u64,
    mnt_id: u64,
}

#[cfg(target_os = "linux")]
fn dir_info(fd: impl AsFd) -> rustix::io::Result<DirInfo> {
    use rustix::fs::{statx, StatxFlags};
    match statx(
        &fd,
        c"",
        AtFlags::EMPTY_PATH,
        StatxFlags::TYPE | StatxFlags::INO | StatxFlags::MTIME | StatxFlags::MNT_ID,
    ) {
        Ok(x) => {
            let dev = rustix::fs::makedev(x.stx_dev_major, x.stx_dev_minor);
            let mnt_id = if StatxFlags::from_bits_retain(x.stx_mask).contains(StatxFlags::MNT_ID) {
                x.stx_mnt_id
            } else {
                0
            };
            Ok(DirInfo {
                key: MountKey {
                    dev: dev as u64,
                    mnt_id,
                },
                mtime_ns: x.stx_mtime.tv_sec as i128 * 1_000_000_000 + x.stx_mtime.tv_nsec as i128,
            })
        }
        Err(Errno::NOSYS) => fstat_info(fd),
        Err(e) => Err(e),
    }
}

#[cfg(not(target_os = "linux"))]
fn dir_info(fd: impl AsFd) -> rustix::io::Result<DirInfo> {
    fstat_info(fd)
}

#[cfg_attr(target_os = "linux", allow(dead_code))]
fn fstat_info(fd: impl AsFd) -> rustix::io::Result<DirInfo> {
    let st = rfs::fstat(&fd)?;
    Ok(DirInfo {
        key: MountKey {
            dev: st.st_dev as u64,
            mnt_id: 0,
        },
        mtime_ns: st.st_mtime as i128 * 1_000_000_000 + st.st_mtime_nsec as i128,
    })
}

fn mount_key(fd: impl AsFd) -> rustix::io::Result<MountKey> {
    dir_info(fd).map(|i| i.key)
}

struct DirInfo {
    key: MountKey,
    mtime_ns: i128,
}

struct Walk {
    root_mount: MountKey,
    /// Directories modified after this time (the scan) are left in place.
    newer_than_ns: Option<i128>,
    entries: u64,
    mounts: Vec<PathBuf>,
    changed: Vec<PathBuf>,
    errors: Vec<(PathBuf, Errno)>,
}

impl Walk {
    fn kept(&self) -> usize {
        self.mounts.len() + self.changed.len() + self.errors.len()
    }

    /// Open `name` in `parent` as a directory without following, and remove it with its contents.
    /// A name that is no longer a directory is unlinked as what it is now.
    fn remove_dir_entry(&mut self, parent: &OwnedFd, name: &CStr, path: &mut PathBuf) {
        let fd = match open_dir_noatime(parent, name) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return,
            // Swapped for a symlink or a file since it was read: unlink that name, follow nothing.
            Err(Errno::LOOP) | Err(Errno::NOTDIR) => {
                self.unlink_file(parent, name, path, false);
                return;
            }
            Err(e) => {
                self.errors.push((path.clone(), e));
                return;
            }
        };
        match dir_info(&fd) {
            Ok(i) if i.key != self.root_mount => {
                self.mounts.push(path.clone());
                return;
            }
            Ok(i) if self.newer_than_ns.is_some_and(|t| i.mtime_ns > t) => {
                self.changed.push(path.clone());
                return;
            }
            Ok(_) => {}
            Err(e) => {
                self.errors.push((path.clone(), e));
                return;
            }
        }
        self.empty_and_remove(parent, name, fd, path);
    }

    /// Remove everything in the directory `fd` (which is `name` in `parent`), then `name` itself.
    fn empty_and_remove(
        &mut self,
        parent: &OwnedFd,
        name: impl rustix::path::Arg + Copy,
        fd: OwnedFd,
        path: &mut PathBuf,
    ) {
        let mut dir = match Dir::new(fd) {
            Ok(d) => d,
            Err(e) => {
                self.errors.push((path.clone(), e));
                return;
            }
        };
        let kept0 = self.mounts.len() + self.changed.len() + self.errors.len();
        // Entries created while we delete make rmdir fail with ENOTEMPTY: a few more passes.
        for pass in 0..4 {
            if pass > 0 {
                dir.rewind();
            }
            self.empty(&mut dir, path);
            match rfs::unlinkat(parent, name, AtFlags::REMOVEDIR) {
                Ok(()) => {
                    self.entries += 1;
                    return;
                }
                Err(Errno::NOENT) => return,
                Err(Errno::NOTEMPTY) | Err(Errno::EXIST) if self.kept() == kept0 => continue,
                Err(e) => {
                    if self.kept() == kept0 {
                        self.errors.push((path.clone(), e));
                    }
                    return;
                }
            }
        }
        self.errors.push((path.clone(), Errno::NOTEMPTY));
    }

    fn empty(&mut self, dir: &mut Dir, path: &mut PathBuf) {
        let Ok(dirfd) = dir.fd() else { return };
        // Dir borrows its descriptor; keep an owned duplicate for the *at calls below.
        let dirfd: OwnedFd = match rustix::io::fcntl_dupfd_cloexec(dirfd, 0) {
            Ok(fd) => fd,
            Err(e) => {
                self.errors.push((path.clone(), e));
                return;
            }
        };
        while let Some(entry) = dir.read() {
            let entry = match entry {
                Ok(e) => e,
                Err(e) => {
                    self.errors.push((path.clone(), e));
                    return;
                }
            };
            let name = entry.file_name();
            let b = name.to_bytes();
            if b == b"." || b == b".." {
                continue;
            }
            path.push(OsStr::from_bytes(b));
            if entry.file_type() == FileType::Directory {
                self.remove_dir_entry(&dirfd, name, path);
            } else {
                self.unlink_file(&dirfd, name, path, true);
            }
            path.pop();
        }
    }

    fn unlink_file(&mut self, parent: &OwnedFd, name: &CStr, path: &mut PathBuf, retry_dir: bool) {
        match rfs::unlinkat(parent, name, AtFlags::empty()) {
            Ok(()) => self.entries += 1,
            Err(Errno::NOENT) => {}
            // It is (now) a directory: Linux says EISDIR, macOS EPERM.
            Err(Errno::ISDIR) | Err(Errno::PERM) if retry_dir => {
                self.remove_dir_entry(parent, name, path)
            }
            Err(e) => self.errors.push((path.clone(), e)),
        }
    }
}

fn open_dir_noatime(parent: &OwnedFd, name: &CStr) -> rustix::io::Result<OwnedFd> {
    match rfs::openat(parent, name, dir_flags_noatime(), Mode::empty()) {
        // O_NOATIME needs ownership (or CAP_FOWNER).
        Err(Errno::PERM) => rfs::openat(parent, name, dir_flags(), Mode::empty()),
        r => r,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::How;
    use crate::plan::Plan;
    use std::fs;

    fn plan_stub() -> Plan {
        Plan {
            schema: crate::plan::PLAN_SCHEMA.into(),
            id: "x".into(),
            created_at: 0,
            scanned_at: 0,
            scanned_at_ns: 0,
            home: "/nonexistent-home".into(),
            platform: crate::model::Platform::Linux,
            roots: vec![],
            actions: vec![],
            estimated_bytes: 0,
            skipped_at_plan: vec![],
            keep_overrides: Vec::new(),
        }
    }

    fn target<'a>(root: &'a Path, path: &'a Path, id: &'a FileIdentity) -> Target<'a> {
        Target {
            root,
            path,
            identity: id,
            check: IdentityCheck::Full,
            home: Path::new("/nonexistent-home"),
            roots: &[],
            scanned_at_ns: None,
        }
    }

    #[test]
    fn deletes_a_tree_with_symlinks_and_keeps_their_targets() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("root");
        let outside = t.path().join("outside");
        fs::create_dir_all(root.join("d/a/b")).unwrap();
        fs::create_dir_all(&outside).unwrap();
        fs::write(outside.join("keep"), b"k").unwrap();
        fs::write(root.join("d/a/b/f"), b"x").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("d/a/link")).unwrap();
        std::os::unix::fs::symlink(outside.join("keep"), root.join("d/flink")).unwrap();
        let id = identity_of(&root.join("d")).unwrap();
        let p = root.join("d");
        let o = delete_path(
            &Confirmed::of(&plan_stub(), How::YesFlag),
            &target(&root, &p, &id),
        );
        assert_eq!(o, DeleteOutcome::Deleted { entries: 6 });
        assert!(!p.exists());
        assert!(outside.join("keep").exists());
        assert!(root.exists());
    }

    #[test]
    fn symlinked_ancestor_is_not_traversed() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("root");
        let real = t.path().join("real");
        fs::create_dir_all(&root).unwrap();
        fs::create_dir_all(real.join("sub")).unwrap();
        fs::write(real.join("sub/f"), b"x").unwrap();
        let id = identity_of(&real.join("sub")).unwrap();
        std::os::unix::fs::symlink(&real, root.join("a")).unwrap();
        let p = root.join("a/sub");
        let o = delete_path(
            &Confirmed::of(&plan_stub(), How::YesFlag),
            &target(&root, &p, &id),
        );
        assert!(matches!(o, DeleteOutcome::Changed { .. }), "{o:?}");
        assert!(real.join("sub/f").exists());
    }

    #[test]
    fn changed_file_is_skipped_and_missing_is_already_gone() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        let f = root.join("f");
        fs::write(&f, b"one").unwrap();
        let id = identity_of(&f).unwrap();
        fs::write(&f, b"grown!").unwrap();
        let tok = Confirmed::of(&plan_stub(), How::YesFlag);
        let o = delete_path(&tok, &target(root, &f, &id));
        assert!(matches!(o, DeleteOutcome::Changed { .. }), "{o:?}");
        assert!(f.exists());
        // Same inode, size and type only: allowed with the relaxed check.
        let mut tg = target(root, &f, &id);
        tg.check = IdentityCheck::DevInoType;
        assert_eq!(
            delete_path(&tok, &tg),
            DeleteOutcome::Deleted { entries: 1 }
        );
        assert_eq!(
            delete_path(&tok, &target(root, &f, &id)),
            DeleteOutcome::AlreadyGone
        );
    }

    #[test]
    fn policy_refusals() {
        let id = FileIdentity {
            dev: 0,
            ino: 0,
            file_type: 0,
            size: 0,
            mtime_ns: 0,
        };
        let home = Path::new("/h/me");
        let roots = [PathBuf::from("/h/me/.cache/smolvm")];
        let mk = |root: &'static str, path: &'static str| Target {
            root: Path::new(root),
            path: Path::new(path),
            identity: &id,
            check: IdentityCheck::Full,
            home,
            roots: &roots,
            scanned_at_ns: None,
        };
        assert!(refusal(&mk("/", "/")).is_some());
        assert!(refusal(&mk("/", "/h")).is_some());
        assert!(refusal(&mk("/h", "/h/me")).is_some());
        assert!(refusal(&mk("/h/me/.cache", "/h/me/.cache/smolvm")).is_some());
        assert!(refusal(&mk("/h/me/.cache/smolvm", "/h/me/.cache/smolvm")).is_some());
        assert!(refusal(&mk("/h/me/.cache/smolvm", "/h/me/.cache/smolvm/../x")).is_some());
        assert!(refusal(&mk("/h/me/.cache/smolvm", "/h/me/.cache/other/x")).is_some());
        assert!(refusal(&mk("/h/me/.cache/smolvm", "relative/x")).is_some());
        assert!(refusal(&mk("/h/me/.cache/smolvm", "/h/me/.cache/smolvm/vms/x")).is_none());
    }
}
