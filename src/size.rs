//! Honest sizes: allocated (`st_blocks`×512) and apparent bytes, hard links once, symlinks never
//! followed, file systems never crossed, atime never touched.
//!
//! The walk opens each directory relative to its parent's descriptor (`openat` with
//! `O_NOFOLLOW | O_DIRECTORY`, plus `O_NOATIME` where the kernel allows it), reads it with
//! `getdents`, and `lstat`s every entry relative to that descriptor (`fstatat` with
//! `AT_SYMLINK_NOFOLLOW`). Nothing is ever read through a symlink, and on Linux reading a
//! directory does not update its atime (relatime would otherwise touch it on the first read after
//! a change; macOS has no `O_NOATIME`, so there the mount's atime policy applies). Regular files
//! are never opened. A subdirectory is entered only if the descriptor opened for it is the very inode
//! that was `lstat`ed, so a directory swapped for a symlink or a mount mid-walk is not followed.
//!
//! Large trees are walked by several threads (one per available core, at most
//! [`MAX_THREADS`]) sharing one stack of pending directories; each (device, inode) is claimed
//! exactly once through a sharded map kept by the [`Sizer`], so hard links are never counted
//! twice whatever the order. Directory descriptors stay open only while subdirectories of them
//! are pending, so open descriptors grow with depth, not with breadth.

use std::collections::HashMap;
use std::ffi::{CStr, CString, OsStr};
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};

use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
#[cfg(not(any(target_os = "linux", target_os = "android")))]
use rustix::fs::Dir;
use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat, CWD};

use crate::model::FileIdentity;

/// Upper bound on walker threads for one measurement.
pub const MAX_THREADS: usize = 8;

/// Directories walked on the calling thread before helpers are started: small trees (most
/// findings) never pay for spawning threads.
const INLINE_DIRS: usize = 64;

/// Shards of the set of counted inodes (a power of two).
const SHARDS: usize = 64;

/// What a walk of one path measured.
///
/// `apparent`, `allocated`, `files` and `dirs` count only objects not counted before by the same
/// [`Sizer`]: a second hard link, or a tree overlapping an earlier measurement, adds nothing and
/// is tallied in `already_counted` instead.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Measure {
    pub apparent: u64,
    pub allocated: u64,
    /// Non-directory objects counted (regular files, symlinks, sockets, fifos, devices).
    pub files: u64,
    /// Directories counted, the root included.
    pub dirs: u64,
    /// Entries below the path on another device (mount points): listed here, never entered, not
    /// counted. Sorted.
    pub mounts: Vec<PathBuf>,
    /// Entries that could not be read.
    pub errors: u64,
    /// Newest mtime (ns since epoch) of anything in the tree, the root included.
    pub newest_mtime_ns: i128,
    /// Identity of the path itself (`lstat`).
    pub identity: Option<FileIdentity>,
    /// Objects met again (hard links, or counted by an earlier measurement of this `Sizer`) and
    /// therefore not added to the totals.
    pub already_counted: u64,
}

/// Measures paths, counting each (device, inode) once across all calls.
#[derive(Debug, Default)]
pub struct Sizer {
    seen: Claims,
    /// Walker threads; 0 means one per available core (at most [`MAX_THREADS`]).
    threads: usize,
}

impl Sizer {
    pub fn new() -> Self {
        Self::default()
    }

    /// A sizer that walks with exactly `threads` threads (1 = on the calling thread only).
    pub fn with_threads(threads: usize) -> Self {
        Self {
            seen: Claims::default(),
            threads: threads.max(1),
        }
    }

    /// Whether this sizer has already counted the object with this identity.
    pub fn has_counted(&self, dev: u64, ino: u64) -> bool {
        self.seen.contains(dev, ino)
    }

    /// Measure a file or a directory tree. A symlink counts as itself.
    ///
    /// Fails only when the path itself cannot be `lstat`ed; anything unreadable below it is
    /// counted in [`Measure::errors`].
    pub fn measure(&mut self, path: &Path) -> io::Result<Measure> {
        let st = rustix::fs::statat(CWD, path, AtFlags::SYMLINK_NOFOLLOW)?;
        let root_dev = st.st_dev as u64;
        let mut m = Measure {
            identity: Some(identity_of(&st)),
            ..Measure::default()
        };
        self.seen.next_walk();
        let claims = &self.seen;
        let mut acc = Acc::default();
        acc.entry(claims, &st);
        let is_dir = FileType::from_raw_mode(st.st_mode as _) == FileType::Directory;
        if is_dir {
            let want = (root_dev, st.st_ino as u64);
            match open_dir(CWD, path).and_then(|fd| verified(fd, want)) {
                Ok(fd) => {
                    let root = Pending {
                        open: Open::Ready(fd),
                        path: path.to_path_buf(),
                    };
                    walk(root, root_dev, claims, self.thread_count(), &mut acc);
                }
                Err(_) => acc.errors += 1,
            }
        }
        m.apparent = acc.apparent;
        m.allocated = acc.allocated;
        m.files = acc.files;
        m.dirs = acc.dirs;
        m.errors = acc.errors;
        m.newest_mtime_ns = acc.newest_mtime_ns;
        m.already_counted = acc.already_counted;
        acc.mounts.sort();
        m.mounts = acc.mounts;
        Ok(m)
    }

    fn thread_count(&self) -> usize {
        if self.threads > 0 {
            return self.threads;
        }
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .clamp(1, MAX_THREADS)
    }
}

/// `lstat` identity of a path.
pub fn identity(path: &Path) -> io::Result<FileIdentity> {
    let st = rustix::fs::statat(CWD, path, AtFlags::SYMLINK_NOFOLLOW)?;
    Ok(identity_of(&st))
}

/// Bytes available to an unprivileged user on the file system holding `path`
/// (`statvfs`: `f_bavail × f_frsize`).
pub fn fs_free_bytes(path: &Path) -> io::Result<u64> {
    let v = rustix::fs::statvfs(path)?;
    Ok((v.f_bavail as u64).saturating_mul(v.f_frsize as u64))
}

/// Whether two existing paths live on the same file system (same `st_dev` of their `lstat`).
/// False when either cannot be `lstat`ed.
pub fn same_filesystem(a: &Path, b: &Path) -> bool {
    match (std::fs::symlink_metadata(a), std::fs::symlink_metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev(),
        _ => false,
    }
}

// Stat fields differ in width between platforms; these casts are exact on Linux and macOS.
#[allow(clippy::unnecessary_cast)]
fn identity_of(st: &Stat) -> FileIdentity {
    FileIdentity {
        dev: st.st_dev as u64,
        ino: st.st_ino as u64,
        file_type: (st.st_mode as u32) & (libc::S_IFMT as u32),
        size: st.st_size.max(0) as u64,
        mtime_ns: mtime_ns(st),
    }
}

#[allow(clippy::unnecessary_cast)]
fn mtime_ns(st: &Stat) -> i128 {
    st.st_mtime as i128 * 1_000_000_000 + st.st_mtime_nsec as i128
}

#[cfg(any(target_os = "linux", target_os = "android"))]
const NOATIME: OFlags = OFlags::NOATIME;
#[cfg(not(any(target_os = "linux", target_os = "android")))]
const NOATIME: OFlags = OFlags::empty();

/// Open a directory for reading without following a symlink and, where permitted, without
/// updating its atime. `O_NOATIME` is refused (EPERM) on directories the caller does not own
/// unless it has CAP_FOWNER; then the directory is opened without it.
fn open_dir<P: rustix::path::Arg + Copy>(at: impl AsFd + Copy, name: P) -> io::Result<OwnedFd> {
    let base = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    if !NOATIME.is_empty() {
        match rustix::fs::openat(at, name, base | NOATIME, Mode::empty()) {
            Err(rustix::io::Errno::PERM) => {}
            other => return other.map_err(io::Error::from),
        }
    }
    Ok(rustix::fs::openat(at, name, base, Mode::empty())?)
}

/// Keep `fd` only if it is the directory that was `lstat`ed as `want` (device, inode).
#[allow(clippy::unnecessary_cast)]
fn verified(fd: OwnedFd, want: (u64, u64)) -> io::Result<OwnedFd> {
    let st = rustix::fs::fstat(&fd)?;
    if (st.st_dev as u64, st.st_ino as u64) == want {
        Ok(fd)
    } else {
        Err(io::Error::other("directory changed while being measured"))
    }
}

/// Every (device, inode) a sizer has counted, with the number of the last walk that met it.
/// Sharded so walker threads rarely wait for each other.
#[derive(Debug)]
struct Claims {
    shards: Vec<Mutex<InodeMap>>,
    walk: u32,
}

type InodeMap = HashMap<(u64, u64), u32, BuildHasherDefault<InodeHasher>>;

impl Default for Claims {
    fn default() -> Self {
        Self {
            shards: (0..SHARDS)
                .map(|_| Mutex::new(InodeMap::default()))
                .collect(),
            walk: 0,
        }
    }
}

enum Claim {
    /// First time this sizer sees the object: count it.
    New,
    /// Counted by an earlier measurement, first time in this walk: walk it, do not count it.
    CountedBefore,
    /// Already met in this walk (a hard link, or a directory reached twice through a bind
    /// mount): neither count nor walk it again.
    SeenThisWalk,
}

impl Claims {
    fn next_walk(&mut self) {
        self.walk = self.walk.wrapping_add(1);
        if self.walk == 0 {
            // Four billion walks later: forget which walk met what, keep what was counted.
            for s in &mut self.shards {
                for w in s.get_mut().unwrap_or_else(|e| e.into_inner()).values_mut() {
                    *w = 0;
                }
            }
            self.walk = 1;
        }
    }

    fn shard(&self, dev: u64, ino: u64) -> &Mutex<InodeMap> {
        // Bits the maps' own bucket index and tag do not use, so each shard stays well spread.
        let h = BuildHasherDefault::<InodeHasher>::default().hash_one((dev, ino));
        &self.shards[(h >> 32) as usize & (SHARDS - 1)]
    }

    fn contains(&self, dev: u64, ino: u64) -> bool {
        self.shard(dev, ino)
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains_key(&(dev, ino))
    }

    fn claim(&self, dev: u64, ino: u64) -> Claim {
        let mut map = self
            .shard(dev, ino)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        match map.insert((dev, ino), self.walk) {
            None => Claim::New,
            Some(w) if w == self.walk => Claim::SeenThisWalk,
            Some(_) => Claim::CountedBefore,
        }
    }
}

/// A fast hash for (device, inode) keys: multiply-xor while writing, a full 64-bit avalanche
/// (MurmurHash3's finaliser) at the end, so both the low bits (bucket index) and the high bits
/// (tag) depend on every input bit. Inode numbers are not attacker-chosen, so no keyed hash is
/// needed.
#[derive(Default)]
struct InodeHasher(u64);

impl Hasher for InodeHasher {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(u64::from(*b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = self.0.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ n;
    }

    fn finish(&self) -> u64 {
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
        h ^= h >> 33;
        h = h.wrapping_mul(0xC4CE_B9FE_1A85_EC53);
        h ^ (h >> 33)
    }
}

/// Totals of one thread.
#[derive(Default)]
struct Acc {
    apparent: u64,
    allocated: u64,
    files: u64,
    dirs: u64,
    errors: u64,
    newest_mtime_ns: i128,
    already_counted: u64,
    mounts: Vec<PathBuf>,
}

impl Acc {
    /// Account for one object (already known to be on the root's device). Returns whether a
    /// directory should be walked.
    #[allow(clippy::unnecessary_cast)]
    fn entry(&mut self, claims: &Claims, st: &Stat) -> bool {
        self.newest_mtime_ns = self.newest_mtime_ns.max(mtime_ns(st));
        let is_dir = FileType::from_raw_mode(st.st_mode as _) == FileType::Directory;
        match claims.claim(st.st_dev as u64, st.st_ino as u64) {
            Claim::New => {
                self.apparent += st.st_size.max(0) as u64;
                self.allocated += (st.st_blocks as u64).saturating_mul(512);
                if is_dir {
                    self.dirs += 1;
                } else {
                    self.files += 1;
                }
                is_dir
            }
            Claim::CountedBefore => {
                self.already_counted += 1;
                is_dir
            }
            Claim::SeenThisWalk => {
                self.already_counted += 1;
                false
            }
        }
    }

    fn merge(&mut self, o: Acc) {
        self.apparent += o.apparent;
        self.allocated += o.allocated;
        self.files += o.files;
        self.dirs += o.dirs;
        self.errors += o.errors;
        self.newest_mtime_ns = self.newest_mtime_ns.max(o.newest_mtime_ns);
        self.already_counted += o.already_counted;
        self.mounts.extend(o.mounts);
    }
}

/// A directory still to be read.
struct Pending {
    open: Open,
    path: PathBuf,
}

enum Open {
    /// Already opened (the root).
    Ready(OwnedFd),
    /// To be opened relative to its parent, and checked against its `lstat` identity.
    At {
        parent: Arc<OwnedFd>,
        name: CString,
        want: (u64, u64),
    },
}

/// Read one directory: account for its entries and return its subdirectories.
#[allow(clippy::unnecessary_cast)]
fn read_dir(
    item: Pending,
    root_dev: u64,
    claims: &Claims,
    acc: &mut Acc,
    buf: &mut DirBuf,
) -> Vec<Pending> {
    let fd = match item.open {
        Open::Ready(fd) => fd,
        Open::At { parent, name, want } => {
            match open_dir(parent.as_fd(), name.as_c_str()).and_then(|fd| verified(fd, want)) {
                Ok(fd) => fd,
                Err(e) => {
                    if e.kind() != io::ErrorKind::NotFound {
                        acc.errors += 1;
                    }
                    return Vec::new();
                }
            }
        }
    };
    // Shared with the subdirectories still to be opened relative to it.
    let fd = Arc::new(fd);
    let mut subdirs = Vec::new();
    let listed = for_each_name(fd.as_fd(), buf, |name| {
        let st = match rustix::fs::statat(fd.as_fd(), name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => st,
            // Removed since the directory was read: nothing to count.
            Err(rustix::io::Errno::NOENT) => return,
            Err(_) => {
                acc.errors += 1;
                return;
            }
        };
        if st.st_dev as u64 != root_dev {
            acc.mounts
                .push(item.path.join(OsStr::from_bytes(name.to_bytes())));
            return;
        }
        if acc.entry(claims, &st) {
            subdirs.push(Pending {
                path: item.path.join(OsStr::from_bytes(name.to_bytes())),
                open: Open::At {
                    parent: Arc::clone(&fd),
                    name: name.to_owned(),
                    want: (st.st_dev as u64, st.st_ino as u64),
                },
            });
        }
    });
    if listed.is_err() {
        acc.errors += 1;
    }
    subdirs
}

/// Buffer for directory entries, one per walking thread.
struct DirBuf(Vec<std::mem::MaybeUninit<u8>>);

impl DirBuf {
    fn new() -> Self {
        // As large as glibc's readdir buffer: one getdents call for most directories.
        Self(vec![std::mem::MaybeUninit::uninit(); 32 * 1024])
    }
}

/// Call `f` with each entry name of the directory open as `fd` ("." and ".." left out), reading
/// through `fd` itself so its `O_NOATIME` applies.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn for_each_name(fd: BorrowedFd<'_>, buf: &mut DirBuf, mut f: impl FnMut(&CStr)) -> io::Result<()> {
    let mut dir = rustix::fs::RawDir::new(fd, &mut buf.0);
    while let Some(entry) = dir.next() {
        let entry = entry?;
        let name = entry.file_name();
        if !is_dot(name) {
            f(name);
        }
    }
    Ok(())
}

/// Call `f` with each entry name of the directory open as `fd` ("." and ".." left out).
#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn for_each_name(
    fd: BorrowedFd<'_>,
    _buf: &mut DirBuf,
    mut f: impl FnMut(&CStr),
) -> io::Result<()> {
    let mut dir = Dir::read_from(fd)?;
    while let Some(entry) = dir.read() {
        let entry = entry?;
        let name = entry.file_name();
        if !is_dot(name) {
            f(name);
        }
    }
    Ok(())
}

fn is_dot(name: &CStr) -> bool {
    matches!(name.to_bytes(), b"." | b"..")
}

/// Walk from `root`: on this thread first, then with helpers if the tree turns out large.
fn walk(root: Pending, root_dev: u64, claims: &Claims, threads: usize, acc: &mut Acc) {
    let mut stack = vec![root];
    let mut done = 0usize;
    let mut buf = DirBuf::new();
    while let Some(item) = stack.pop() {
        let subdirs = read_dir(item, root_dev, claims, acc, &mut buf);
        stack.extend(subdirs);
        done += 1;
        if threads > 1 && done >= INLINE_DIRS && stack.len() > 1 {
            break;
        }
    }
    if stack.is_empty() {
        return;
    }
    let queue = Queue {
        state: Mutex::new(QueueState { stack, busy: 0 }),
        ready: Condvar::new(),
    };
    let results: Vec<Acc> = std::thread::scope(|s| {
        let helpers: Vec<_> = (1..threads)
            .map(|_| s.spawn(|| queue.work(root_dev, claims)))
            .collect();
        let mut mine = vec![queue.work(root_dev, claims)];
        for h in helpers {
            match h.join() {
                Ok(a) => mine.push(a),
                Err(p) => std::panic::resume_unwind(p),
            }
        }
        mine
    });
    for r in results {
        acc.merge(r);
    }
}

struct QueueState {
    stack: Vec<Pending>,
    /// Threads reading a directory (which may yield more work).
    busy: usize,
}

struct Queue {
    state: Mutex<QueueState>,
    ready: Condvar,
}

impl Queue {
    fn work(&self, root_dev: u64, claims: &Claims) -> Acc {
        let mut acc = Acc::default();
        let mut buf = DirBuf::new();
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(item) = st.stack.pop() {
                st.busy += 1;
                drop(st);
                let subdirs = read_dir(item, root_dev, claims, &mut acc, &mut buf);
                st = self.state.lock().unwrap_or_else(|e| e.into_inner());
                st.busy -= 1;
                // Wake the others for new work, or to let them finish when none is left.
                let finished = st.busy == 0 && st.stack.is_empty() && subdirs.is_empty();
                if !subdirs.is_empty() || finished {
                    st.stack.extend(subdirs);
                    self.ready.notify_all();
                }
            } else if st.busy == 0 {
                return acc;
            } else {
                st = self.ready.wait(st).unwrap_or_else(|e| e.into_inner());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn sizes_of(p: &Path) -> (u64, u64) {
        let m = fs::symlink_metadata(p).unwrap();
        (m.size(), m.blocks() * 512)
    }

    #[test]
    fn single_file_counts_itself() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("f");
        fs::write(&f, vec![7u8; 10_000]).unwrap();
        let m = Sizer::new().measure(&f).unwrap();
        let (app, alloc) = sizes_of(&f);
        assert_eq!(
            (m.apparent, m.allocated, m.files, m.dirs),
            (app, alloc, 1, 0)
        );
        assert_eq!(m.identity.unwrap().file_type, libc::S_IFREG);
        assert!(m.mounts.is_empty());
    }

    #[test]
    fn missing_path_is_an_error() {
        let d = tempfile::tempdir().unwrap();
        assert!(Sizer::new().measure(&d.path().join("nope")).is_err());
    }

    #[test]
    fn directory_own_blocks_are_counted() {
        let d = tempfile::tempdir().unwrap();
        fs::create_dir(d.path().join("a")).unwrap();
        let m = Sizer::new().measure(d.path()).unwrap();
        let (a0, b0) = sizes_of(d.path());
        let (a1, b1) = sizes_of(&d.path().join("a"));
        assert_eq!((m.apparent, m.allocated), (a0 + a1, b0 + b1));
        assert_eq!((m.files, m.dirs), (0, 2));
    }

    #[test]
    fn threaded_walk_matches_single_threaded() {
        let d = tempfile::tempdir().unwrap();
        for i in 0..150 {
            let sub = d.path().join(format!("d{i}")).join("x");
            fs::create_dir_all(&sub).unwrap();
            fs::write(sub.join("f"), vec![1u8; i * 100]).unwrap();
            // Hard links across directories that different threads read.
            fs::hard_link(sub.join("f"), d.path().join(format!("link{i}"))).unwrap();
        }
        let one = Sizer::with_threads(1).measure(d.path()).unwrap();
        for threads in [2, 4, 8] {
            let many = Sizer::with_threads(threads).measure(d.path()).unwrap();
            assert_eq!(one, many, "threads={threads}");
        }
        assert_eq!(one.files, 150);
        assert_eq!(one.already_counted, 150);
        assert_eq!(one.dirs, 301);
    }

    #[test]
    fn identity_is_lstat() {
        let d = tempfile::tempdir().unwrap();
        let t = d.path().join("t");
        fs::write(&t, b"12345").unwrap();
        let l = d.path().join("l");
        std::os::unix::fs::symlink(&t, &l).unwrap();
        let id = identity(&l).unwrap();
        let md = fs::symlink_metadata(&l).unwrap();
        assert_eq!(id.ino, md.ino());
        assert_eq!(id.file_type, libc::S_IFLNK);
        assert_eq!(id.size, md.size());
        let id = identity(&t).unwrap();
        assert_eq!(id.size, 5);
        assert_eq!(
            id.mtime_ns,
            fs::metadata(&t).unwrap().mtime() as i128 * 1_000_000_000
                + fs::metadata(&t).unwrap().mtime_nsec() as i128
        );
    }

    #[test]
    fn free_bytes_and_same_filesystem() {
        let d = tempfile::tempdir().unwrap();
        let free = fs_free_bytes(d.path()).unwrap();
        let v = rustix::fs::statvfs(d.path()).unwrap();
        assert_eq!(free, v.f_bavail * v.f_frsize);
        assert!(free > 0);
        let f = d.path().join("f");
        fs::write(&f, b"x").unwrap();
        assert!(same_filesystem(d.path(), &f));
        assert!(!same_filesystem(d.path(), &d.path().join("missing")));
        // /proc is always its own file system on Linux.
        if Path::new("/proc/self").exists() {
            assert!(!same_filesystem(d.path(), Path::new("/proc/self")));
        }
    }
}
