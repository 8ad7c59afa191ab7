//! Read-only file system access that leaves no trace: directories and small files are opened
//! with `O_NOATIME` (where the kernel allows it), symlinks inside a tree are never followed.

use std::ffi::OsString;
use std::fs::Metadata;
use std::io::Read;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};

/// One directory entry with its `lstat` metadata.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub name: OsString,
    pub path: PathBuf,
    pub meta: Metadata,
}

impl Entry {
    pub(crate) fn name_str(&self) -> Option<&str> {
        self.name.to_str()
    }
    pub(crate) fn is_dir(&self) -> bool {
        self.meta.file_type().is_dir()
    }
    pub(crate) fn is_file(&self) -> bool {
        self.meta.file_type().is_file()
    }
    pub(crate) fn is_symlink(&self) -> bool {
        self.meta.file_type().is_symlink()
    }
}

/// `O_NOATIME`: reading changes no access time. Linux has it; macOS has no such flag.
#[cfg(target_os = "linux")]
pub(crate) const NOATIME: OFlags = OFlags::NOATIME;
#[cfg(not(target_os = "linux"))]
pub(crate) const NOATIME: OFlags = OFlags::empty();

pub(crate) fn open_noatime(path: &Path, flags: OFlags) -> std::io::Result<rustix::fd::OwnedFd> {
    let base = flags | OFlags::RDONLY | OFlags::CLOEXEC;
    match rustix::fs::open(path, base | NOATIME, Mode::empty()) {
        Ok(fd) => Ok(fd),
        Err(rustix::io::Errno::PERM) => Ok(rustix::fs::open(path, base, Mode::empty())?),
        Err(e) => Err(e.into()),
    }
}

/// List a directory without touching its atime; entries come with `lstat` metadata, sorted by
/// name. Entries that vanish while listing are left out. `path` itself may be a symlink to a
/// directory (a root configured that way); nothing inside is followed.
///
/// Within [`with_listings`], the listing comes from the memo given there.
pub(crate) fn read_dir(path: &Path) -> std::io::Result<Vec<Entry>> {
    let memo = LISTINGS.with(|l| l.borrow().clone());
    match memo {
        Some(memo) => memo.read_dir(path),
        None => read_dir_from(open_noatime(path, OFlags::DIRECTORY)?, path),
    }
}

/// [`read_dir`] of the directory open as `fd` (opened from `path`).
pub(crate) fn read_dir_from(fd: rustix::fd::OwnedFd, path: &Path) -> std::io::Result<Vec<Entry>> {
    let mut out = Vec::new();
    for name in names_in(&fd)? {
        let p = path.join(&name);
        match std::fs::symlink_metadata(&p) {
            Ok(meta) => out.push(Entry {
                name,
                path: p,
                meta,
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// The names in the directory open as `fd`, in the order the file system lists them, without
/// `.` and `..`: the one directory-reading loop of [`read_dir_from`] and [`read_dir_std`].
fn names_in(fd: &rustix::fd::OwnedFd) -> std::io::Result<Vec<OsString>> {
    let mut dir = rustix::fs::Dir::read_from(fd)?;
    let mut out = Vec::new();
    while let Some(ent) = dir.read() {
        let ent = ent?;
        let bytes = ent.file_name().to_bytes();
        if bytes != b"." && bytes != b".." {
            out.push(OsString::from_vec(bytes.to_vec()));
        }
    }
    Ok(out)
}

/// Where [`read_dir`] takes its listings from for a while (the app's rescans: a memo that
/// reads again only what its watches saw change).
pub(crate) trait Listings: Send + Sync {
    /// What [`read_dir`] of `path` gives now.
    fn read_dir(&self, path: &Path) -> std::io::Result<Vec<Entry>>;
}

thread_local! {
    static LISTINGS: std::cell::RefCell<Option<std::sync::Arc<dyn Listings>>> =
        const { std::cell::RefCell::new(None) };
}

/// Run `f` with [`read_dir`] on this thread listing through `memo`.
pub(crate) fn with_listings<T>(memo: std::sync::Arc<dyn Listings>, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<std::sync::Arc<dyn Listings>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let before = self.0.take();
            LISTINGS.with(|l| *l.borrow_mut() = before);
        }
    }
    let _restore = Restore(LISTINGS.with(|l| l.borrow_mut().replace(memo)));
    f()
}

/// A `std::fs::DirEntry` look-alike produced by [`read_dir_std`].
#[derive(Debug, Clone)]
pub(crate) struct DirEntryLite {
    name: OsString,
    path: PathBuf,
}

impl DirEntryLite {
    pub(crate) fn file_name(&self) -> OsString {
        self.name.clone()
    }
    pub(crate) fn path(&self) -> PathBuf {
        self.path.clone()
    }
}

/// Drop-in for `std::fs::read_dir` that lists without touching the directory's atime.
pub(crate) fn read_dir_std(
    path: impl AsRef<Path>,
) -> std::io::Result<std::vec::IntoIter<std::io::Result<DirEntryLite>>> {
    let path = path.as_ref();
    let fd = open_noatime(path, OFlags::DIRECTORY)?;
    let out: Vec<_> = names_in(&fd)?
        .into_iter()
        .map(|name| {
            Ok(DirEntryLite {
                path: path.join(&name),
                name,
            })
        })
        .collect();
    Ok(out.into_iter())
}

/// Like [`read_dir`], but a missing directory is an empty list.
pub(crate) fn read_dir_or_empty(path: &Path) -> Vec<Entry> {
    read_dir(path).unwrap_or_default()
}

/// What a file type is called in a message ("a named pipe").
pub(crate) fn type_name(ft: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if ft.is_fifo() {
        "a named pipe"
    } else if ft.is_socket() {
        "a socket"
    } else if ft.is_block_device() || ft.is_char_device() {
        "a device"
    } else if ft.is_dir() {
        "a directory"
    } else if ft.is_symlink() {
        "a symbolic link"
    } else {
        "a regular file"
    }
}

/// Open a file for reading only if it is a regular file: never blocks on a named pipe or a
/// device (`O_NONBLOCK`, then `fstat`), never follows a symlink, leaves the atime alone where
/// allowed. Anything else is an [`std::io::ErrorKind::InvalidInput`] error naming what it is.
pub(crate) fn open_regular(path: &Path) -> std::io::Result<std::fs::File> {
    let fd = open_noatime(path, OFlags::NOFOLLOW | OFlags::NONBLOCK)?;
    let f = std::fs::File::from(fd);
    let ft = f.metadata()?.file_type();
    if !ft.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{} is {}, not a file", path.display(), type_name(ft)),
        ));
    }
    Ok(f)
}

/// Read at most `max` bytes of a regular file without touching its atime or following a
/// symlink ([`open_regular`]).
pub(crate) fn read_small(path: &Path, max: usize) -> std::io::Result<Vec<u8>> {
    let mut f = open_regular(path)?;
    let mut buf = Vec::new();
    f.by_ref().take(max as u64).read_to_end(&mut buf)?;
    Ok(buf)
}

/// Largest plan Smolsweep reads (`apply FILE`, and what `plan --out` would overwrite). The
/// plans it writes are far smaller: [`crate::plan::MAX_ACTIONS`] actions of well under 4 KiB.
pub const MAX_PLAN_BYTES: u64 = 64 << 20;
/// Largest scan report Smolsweep reads (`--from-report`, the app's stand-in report), and the
/// app's notification state, which grows with the scan as a report does.
pub const MAX_REPORT_BYTES: u64 = 64 << 20;
/// Largest policy, keep file or desktop settings file Smolsweep reads.
pub const MAX_SETTINGS_BYTES: u64 = 1 << 20;

/// Why a file a user or a timer named was not read.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The file could not be opened or read.
    #[error("cannot read {}: {source}", crate::pathser::shown(path))]
    Io {
        /// The file named.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// It is a directory, a pipe, a device or a socket.
    #[error("{} is {kind}, not a file", crate::pathser::shown(path))]
    NotAFile {
        /// The file named.
        path: PathBuf,
        /// What it is instead ("a named pipe").
        kind: &'static str,
    },
    /// It is larger than the cap for what it should be.
    #[error("{} is larger than {}; not {what}", crate::pathser::shown(path), cap_text(*cap))]
    TooLarge {
        /// The file named.
        path: PathBuf,
        /// The cap in bytes.
        cap: u64,
        /// What it should have been ("a plan Smolsweep wrote").
        what: &'static str,
    },
    /// It is not UTF-8 text where text was expected.
    #[error(
        "{} is not text (not valid UTF-8); not {what}",
        crate::pathser::shown(path)
    )]
    NotText {
        /// The file named.
        path: PathBuf,
        /// What it should have been.
        what: &'static str,
    },
}

impl InputError {
    /// The file does not exist (callers that treat a missing file as empty).
    pub fn is_not_found(&self) -> bool {
        matches!(self, InputError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
    }
}

fn cap_text(cap: u64) -> String {
    if cap >= 1 << 20 && cap.is_multiple_of(1 << 20) {
        format!("{} MiB", cap >> 20)
    } else {
        format!("{cap} bytes")
    }
}

/// Read a file a user or a timer named (a plan, a report, a policy, settings), at most `cap`
/// bytes. Never blocks: a named pipe, a device, a socket or a directory is refused without
/// reading from it (`stat` first, then `O_NONBLOCK` and `fstat` of what was opened). A symlink
/// is followed, as a user who names `~/plan.json` means its target, but the target must be a
/// regular file. A file above `cap` is refused ("… is larger than 64 MiB; not {what}"), where
/// `what` says what it should have been ("a plan Smolsweep wrote").
pub fn read_input(path: &Path, cap: u64, what: &'static str) -> Result<Vec<u8>, InputError> {
    let io = |source| InputError::Io {
        path: path.to_path_buf(),
        source,
    };
    let not_a_file = |ft: std::fs::FileType| InputError::NotAFile {
        path: path.to_path_buf(),
        kind: type_name(ft),
    };
    let ft = std::fs::metadata(path).map_err(io)?.file_type();
    if !ft.is_file() {
        return Err(not_a_file(ft));
    }
    let f = std::fs::File::from(open_noatime(path, OFlags::NONBLOCK).map_err(io)?);
    let ft = f.metadata().map_err(io)?.file_type();
    if !ft.is_file() {
        return Err(not_a_file(ft));
    }
    read_capped(f, path, cap, what)
}

/// [`read_input`] of a text file (JSON): bytes that are not UTF-8 are refused too.
pub fn read_input_text(path: &Path, cap: u64, what: &'static str) -> Result<String, InputError> {
    String::from_utf8(read_input(path, cap, what)?).map_err(|_| InputError::NotText {
        path: path.to_path_buf(),
        what,
    })
}

/// Read at most `cap` bytes of an opened regular file; more is [`InputError::TooLarge`] (the
/// size `fstat` reports is checked first, then `cap + 1` bytes are read, as the file may grow).
pub(crate) fn read_capped(
    mut f: std::fs::File,
    path: &Path,
    cap: u64,
    what: &'static str,
) -> Result<Vec<u8>, InputError> {
    let too_large = || InputError::TooLarge {
        path: path.to_path_buf(),
        cap,
        what,
    };
    let io = |source| InputError::Io {
        path: path.to_path_buf(),
        source,
    };
    let len = f.metadata().map_err(io)?.len();
    if len > cap {
        return Err(too_large());
    }
    let mut buf = Vec::with_capacity(len as usize);
    f.by_ref()
        .take(cap.saturating_add(1))
        .read_to_end(&mut buf)
        .map_err(io)?;
    if buf.len() as u64 > cap {
        return Err(too_large());
    }
    Ok(buf)
}

/// `lstat`, `None` when the path does not exist.
pub(crate) fn lstat(path: &Path) -> Option<Metadata> {
    std::fs::symlink_metadata(path).ok()
}

/// Newest modification time (ns since the epoch) of `path` and everything below it, without
/// following symlinks or crossing into another file system.
pub(crate) fn newest_mtime(path: &Path) -> Option<i128> {
    use std::os::unix::fs::MetadataExt;
    let root = lstat(path)?;
    let dev = root.dev();
    let ns = |m: &Metadata| m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128;
    let mut newest = ns(&root);
    let mut stack = vec![path.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in read_dir_or_empty(&dir) {
            newest = newest.max(ns(&e.meta));
            if e.is_dir() && e.meta.dev() == dev {
                stack.push(e.path);
            }
        }
    }
    Some(newest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn read_dir_lists_sorted_without_following_links() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("b"), b"x").unwrap();
        std::fs::create_dir(t.path().join("a")).unwrap();
        std::os::unix::fs::symlink("/nonexistent", t.path().join("c")).unwrap();
        let names: Vec<_> = read_dir(t.path())
            .unwrap()
            .into_iter()
            .map(|e| {
                (
                    e.name.into_string().unwrap(),
                    e.meta.file_type().is_symlink(),
                )
            })
            .collect();
        assert_eq!(
            names,
            [("a".into(), false), ("b".into(), false), ("c".into(), true)]
        );
    }

    #[test]
    fn read_dir_keeps_directory_atime() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("d");
        std::fs::create_dir(&d).unwrap();
        std::fs::write(d.join("f"), b"x").unwrap();
        // atime well before mtime: a plain readdir on relatime would update it.
        let old = libc::timespec {
            tv_sec: 1_000_000,
            tv_nsec: 0,
        };
        let keep = libc::timespec {
            tv_sec: 0,
            tv_nsec: libc::UTIME_OMIT,
        };
        let c = std::ffi::CString::new(d.as_os_str().as_encoded_bytes()).unwrap();
        let times = [old, keep];
        assert_eq!(
            unsafe { libc::utimensat(libc::AT_FDCWD, c.as_ptr(), times.as_ptr(), 0) },
            0
        );
        let before = std::fs::metadata(&d).unwrap().atime();
        read_dir(&d).unwrap();
        read_small(&d.join("f"), 10).unwrap();
        assert_eq!(std::fs::metadata(&d).unwrap().atime(), before);
    }

    #[test]
    fn read_small_refuses_symlinks() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("f"), b"hello").unwrap();
        std::os::unix::fs::symlink(t.path().join("f"), t.path().join("l")).unwrap();
        assert_eq!(read_small(&t.path().join("f"), 3).unwrap(), b"hel");
        assert!(read_small(&t.path().join("l"), 3).is_err());
    }

    fn mkfifo(p: &Path) {
        let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }

    #[test]
    fn read_input_of_a_fifo_a_device_or_a_directory_is_refused_without_blocking() {
        let t = tempfile::tempdir().unwrap();
        let fifo = t.path().join("plan.json");
        mkfifo(&fifo);
        let link = t.path().join("link.json");
        std::os::unix::fs::symlink(&fifo, &link).unwrap();
        for (p, kind) in [
            (fifo.as_path(), "a named pipe"),
            (link.as_path(), "a named pipe"),
            (Path::new("/dev/zero"), "a device"),
            (t.path(), "a directory"),
        ] {
            let e = read_input(p, 10, "a plan Smolsweep wrote").unwrap_err();
            assert_eq!(
                e.to_string(),
                format!("{} is {kind}, not a file", p.display())
            );
        }
        let e = read_input(&t.path().join("absent"), 10, "x").unwrap_err();
        assert!(e.is_not_found(), "{e}");
    }

    #[test]
    fn read_input_follows_a_symlink_to_a_file_and_refuses_one_byte_over_the_cap() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("plan.json");
        std::fs::write(&f, b"0123456789").unwrap();
        let link = t.path().join("link.json");
        std::os::unix::fs::symlink(&f, &link).unwrap();
        assert_eq!(read_input(&link, 10, "x").unwrap(), b"0123456789");
        let e = read_input(&f, 9, "a plan Smolsweep wrote").unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "{} is larger than 9 bytes; not a plan Smolsweep wrote",
                f.display()
            )
        );
        let e = read_input(&f, 0, "x").unwrap_err();
        assert!(matches!(e, InputError::TooLarge { cap: 0, .. }), "{e}");
        assert_eq!(cap_text(MAX_PLAN_BYTES), "64 MiB");
        std::fs::write(&f, b"\xff").unwrap();
        assert!(matches!(
            read_input_text(&f, 10, "x"),
            Err(InputError::NotText { .. })
        ));
    }
}
