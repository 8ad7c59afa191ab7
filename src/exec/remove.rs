//! Removal inside a resolved root, without following symlinks and without crossing into another
//! file system.
//!
//! Used for what is not a plan deletion (a launcher symlink, a directory emptied by the run);
//! product state goes through the shared delete primitive ([`super::delete`]). Every directory
//! is opened relative to its parent's descriptor with `O_NOFOLLOW | O_DIRECTORY`, every entry
//! is `lstat`ed through the descriptor (`fstatat(AT_SYMLINK_NOFOLLOW)`), a symlink is unlinked
//! as itself, and a directory on another device (a mount point) stops the removal of
//! everything above it.

use std::ffi::OsString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{AtFlags, FileType, Mode, OFlags};

/// What a removal did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Removed {
    pub files: u64,
    pub dirs: u64,
    /// Allocated bytes of what was unlinked (hard-linked files count where their last link goes).
    pub allocated_bytes: u64,
}

/// Why a path may not be removed at all, or `None` when it may.
///
/// The path must be absolute and normal (no `.`/`..`), equal to `root` or strictly inside it,
/// and `root` must not be `/`, `home`, or an ancestor of `home`.
pub(crate) fn refusal(path: &Path, root: &Path, home: &Path) -> Option<String> {
    let normal = |p: &Path| {
        p.is_absolute()
            && p.components()
                .all(|c| matches!(c, Component::RootDir | Component::Normal(_)))
    };
    if !normal(path) || !normal(root) {
        return Some(format!(
            "{} is not a normal absolute path inside {}",
            path.display(),
            root.display()
        ));
    }
    if root.parent().is_none() || home.starts_with(root) {
        return Some(format!(
            "{} is /, the home directory or one of its parents; Smolsweep never removes it",
            root.display()
        ));
    }
    if !path.starts_with(root) {
        return Some(format!(
            "{} is outside the root {}",
            path.display(),
            root.display()
        ));
    }
    None
}

fn open_dir_at(dirfd: BorrowedFd<'_>, name: &Path) -> io::Result<OwnedFd> {
    Ok(rustix::fs::openat(
        dirfd,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// Open `path`'s parent directory. Each component below `root` is opened relative to the one
/// above with `O_NOFOLLOW`, so a component swapped for a symlink after planning stops the walk.
fn open_parent(path: &Path, root: &Path) -> io::Result<OwnedFd> {
    let parent = path.parent().ok_or_else(|| io::Error::other("no parent"))?;
    // The root's own parent may legitimately involve symlinks (a configured XDG directory,
    // macOS /var → /private/var); it is opened as given.
    let (mut fd, rest) = if parent.starts_with(root) && parent != root {
        let root_fd = rustix::fs::open(
            root,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        (root_fd, parent.strip_prefix(root).unwrap_or(Path::new("")))
    } else {
        let fd = rustix::fs::open(
            parent,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        (fd, Path::new(""))
    };
    for c in rest.components() {
        if let Component::Normal(n) = c {
            fd = open_dir_at(fd.as_fd(), Path::new(n))?;
        }
    }
    Ok(fd)
}

/// Whether `path` exists (as itself; a dangling symlink exists).
pub(crate) fn exists(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

/// Remove `path` (a file, symlink or directory tree) that lies inside `root`.
///
/// Refused (nothing touched) per [`refusal`]. A missing path is `Ok` with nothing removed. A
/// mount point inside the tree is left alone and the removal fails with the mount named, after
/// everything beside it has been removed. Directories the owner made read-only (extracted
/// root file systems) are made writable for the owner first, as `rm -rf` by the owner would need.
pub(crate) fn remove_path(path: &Path, root: &Path, home: &Path) -> io::Result<Removed> {
    if let Some(why) = refusal(path, root, home) {
        return Err(io::Error::new(io::ErrorKind::PermissionDenied, why));
    }
    if !exists(path) {
        return Ok(Removed::default());
    }
    let name: OsString = path
        .file_name()
        .ok_or_else(|| io::Error::other("no file name"))?
        .to_os_string();
    let parent = open_parent(path, root)?;
    let st = rustix::fs::statat(&parent, Path::new(&name), AtFlags::SYMLINK_NOFOLLOW)?;
    let mut out = Removed::default();
    let mut busy = Vec::new();
    remove_entry(
        parent.as_fd(),
        &name,
        st.st_dev as u64,
        path,
        &mut out,
        &mut busy,
    )?;
    if !busy.is_empty() {
        let list: Vec<String> = busy.iter().map(|p| p.display().to_string()).collect();
        return Err(io::Error::other(format!(
            "left in place: a file system is mounted at {}",
            list.join(", ")
        )));
    }
    Ok(out)
}

fn remove_entry(
    dirfd: BorrowedFd<'_>,
    name: &OsString,
    dev: u64,
    shown: &Path,
    out: &mut Removed,
    busy: &mut Vec<PathBuf>,
) -> io::Result<()> {
    let n = Path::new(name);
    let st = match rustix::fs::statat(dirfd, n, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(s) => s,
        Err(rustix::io::Errno::NOENT) => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    if FileType::from_raw_mode(st.st_mode) == FileType::Directory {
        if st.st_dev as u64 != dev {
            busy.push(shown.to_path_buf());
            return Ok(());
        }
        let fd = open_dir_at(dirfd, n)?;
        let fst = rustix::fs::fstat(&fd)?;
        if fst.st_ino != st.st_ino || fst.st_dev != st.st_dev {
            return Err(io::Error::other(format!(
                "{} changed while it was being removed",
                shown.display()
            )));
        }
        if st.st_mode & 0o700 != 0o700 {
            let _ = rustix::fs::fchmod(&fd, Mode::from_raw_mode(st.st_mode | 0o700));
        }
        let mut names = Vec::new();
        {
            let mut dir = rustix::fs::Dir::read_from(&fd)?;
            while let Some(ent) = dir.read() {
                let ent = ent?;
                let b = ent.file_name().to_bytes();
                if b == b"." || b == b".." {
                    continue;
                }
                names.push(OsString::from(std::ffi::OsStr::from_bytes(b)));
            }
        }
        let before = busy.len();
        for child in names {
            let shown_child = shown.join(&child);
            remove_entry(fd.as_fd(), &child, dev, &shown_child, out, busy)?;
        }
        if busy.len() > before {
            return Ok(()); // a mount below: this directory stays
        }
        drop(fd);
        rustix::fs::unlinkat(dirfd, n, AtFlags::REMOVEDIR)?;
        out.dirs += 1;
    } else {
        rustix::fs::unlinkat(dirfd, n, AtFlags::empty())?;
        out.files += 1;
        if st.st_nlink <= 1 {
            out.allocated_bytes += (st.st_blocks as u64) * 512;
        }
    }
    Ok(())
}

/// Remove `dir` only if it is an empty directory (not a symlink). `Ok(false)` when it is not
/// empty or does not exist.
pub(crate) fn remove_dir_if_empty(dir: &Path, home: &Path) -> io::Result<bool> {
    let Some(parent) = dir.parent() else {
        return Ok(false);
    };
    if let Some(why) = refusal(dir, dir, home) {
        return Err(io::Error::new(io::ErrorKind::PermissionDenied, why));
    }
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.file_type().is_dir() => {}
        _ => return Ok(false),
    }
    let pfd = rustix::fs::open(
        parent,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let name = dir.file_name().unwrap_or_default();
    match rustix::fs::unlinkat(&pfd, Path::new(name), AtFlags::REMOVEDIR) {
        Ok(()) => Ok(true),
        Err(rustix::io::Errno::NOTEMPTY) | Err(rustix::io::Errno::EXIST) => Ok(false),
        Err(rustix::io::Errno::NOENT) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn refuses_root_home_and_outside() {
        let home = Path::new("/home/u");
        assert!(refusal(Path::new("/"), Path::new("/"), home).is_some());
        assert!(refusal(home, home, home).is_some());
        assert!(refusal(Path::new("/home"), Path::new("/home"), home).is_some());
        assert!(refusal(
            Path::new("/home/u/.cache/x"),
            Path::new("/home/u/.cache/smolvm"),
            home
        )
        .is_some());
        assert!(refusal(
            Path::new("/home/u/.cache/smolvm/../x"),
            Path::new("/home/u/.cache/smolvm"),
            home
        )
        .is_some());
        assert!(refusal(
            Path::new("/home/u/.cache/smolvm/vms"),
            Path::new("/home/u/.cache/smolvm"),
            home
        )
        .is_none());
        assert!(refusal(
            Path::new("/home/u/.cache/smolvm"),
            Path::new("/home/u/.cache/smolvm"),
            home
        )
        .is_none());
    }

    #[test]
    fn removes_tree_without_following_symlinks() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("home");
        let outside = t.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("keep"), b"keep").unwrap();
        let root = home.join(".cache/smolvm");
        std::fs::create_dir_all(root.join("vms/abc/sub")).unwrap();
        std::fs::write(root.join("vms/abc/sub/f"), b"x").unwrap();
        symlink(&outside, root.join("vms/abc/link")).unwrap();
        std::fs::create_dir_all(root.join("ro/inner")).unwrap();
        std::fs::write(root.join("ro/inner/f"), b"x").unwrap();
        std::fs::set_permissions(
            root.join("ro/inner"),
            std::os::unix::fs::PermissionsExt::from_mode(0o555),
        )
        .unwrap();
        let r = remove_path(&root, &root, &home).unwrap();
        assert!(!root.exists());
        assert!(outside.join("keep").exists());
        assert!(r.files >= 3);
        // Missing: fine, nothing removed.
        assert_eq!(
            remove_path(&root, &root, &home).unwrap(),
            Removed::default()
        );
    }

    #[test]
    fn symlinked_root_entry_is_removed_as_a_link() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("home");
        let target = t.path().join("target");
        std::fs::create_dir_all(&target).unwrap();
        std::fs::write(target.join("f"), b"x").unwrap();
        let prefix = home.join(".smolvm");
        std::fs::create_dir_all(&prefix).unwrap();
        symlink(&target, prefix.join("lib")).unwrap();
        remove_path(&prefix.join("lib"), &prefix, &home).unwrap();
        assert!(!exists(&prefix.join("lib")));
        assert!(target.join("f").exists());
    }

    #[test]
    fn remove_dir_if_empty_keeps_non_empty() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("home");
        let d = home.join(".smolvm");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("keys"), b"k").unwrap();
        assert!(!remove_dir_if_empty(&d, &home).unwrap());
        std::fs::remove_file(d.join("keys")).unwrap();
        assert!(remove_dir_if_empty(&d, &home).unwrap());
        assert!(!d.exists());
    }
}
