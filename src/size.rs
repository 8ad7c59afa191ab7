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
//! Trees are walked by one pool of threads per [`Sizer`] (one per available core, at most
//! [`MAX_THREADS`], started the first time a tree has two directories pending and kept until the
//! sizer is dropped: a scan asks for the core count and spawns its helpers once, not per
//! finding). The threads share one stack of pending directories, so the many medium trees of a
//! scan (80 `_shared` pack stores) and the subtrees of one large tree are spread alike. Each
//! directory (device, inode) is claimed exactly once through a sharded map kept by the sizer;
//! a file with several links goes through the same map, a file with one link is counted with
//! the directory it is in, so hard links are never counted twice whatever the order and the map
//! holds directories, not files (bounded memory at a million files). Directory descriptors stay
//! open only while subdirectories of them are pending, so open descriptors grow with depth, not
//! with breadth.

use crate::basics::lock;
use std::collections::{HashMap, HashSet};
use std::hash::BuildHasherDefault;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat, CWD};

use crate::model::FileIdentity;

mod listings;
mod memo;
mod space;
mod walk;
mod watches;

pub use memo::*;
pub use space::{space_of, Space};
use walk::*;

/// Upper bound on walker threads for one sizer.
pub const MAX_THREADS: usize = 8;

/// Shards of the set of counted inodes (a power of two).
const SHARDS: usize = 64;

/// Stack of each helper thread: the walk is iterative, so a small one is plenty.
const HELPER_STACK: usize = 256 * 1024;

/// What a walk of one path measured.
///
/// `apparent`, `allocated`, `files` and `dirs` count only objects not counted before by the same
/// [`Sizer`]: a second hard link, or a tree overlapping an earlier measurement, adds nothing and
/// is tallied in `already_counted` instead.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Measure {
    /// Bytes the files say they hold (`st_size`).
    pub apparent: u64,
    /// Bytes the file system allocates to them (`st_blocks` × 512).
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

type InodeSet = HashSet<(u64, u64), BuildHasherDefault<InodeHasher>>;

/// Measures paths, counting each (device, inode) once across all calls.
///
/// One sizer is one pool of walker threads, started the first time a tree has more than one
/// directory pending and kept until the sizer is dropped: a scan makes one sizer, so it starts
/// its threads (and asks for the number of cores) once, however many findings it measures.
pub struct Sizer {
    claims: Arc<Claims>,
    /// Non-directories that were measured as roots: met again inside a tree, they go through
    /// the claims even with a single link.
    file_roots: Arc<InodeSet>,
    /// Whether any directory has been walked (only then can a new root lie inside one).
    walked: bool,
    /// Walker threads; 0 = one per available core (at most [`MAX_THREADS`]), decided once.
    threads: usize,
    pool: Option<Pool>,
    buf: DirBuf,
    memo: Option<Arc<DirMemo>>,
    /// Directories holding a non-directory measured as a root: never taken from the memo,
    /// whose sums cannot tell that file apart.
    file_root_dirs: Arc<InodeSet>,
    /// `lstat` identities of the directories above measured roots, looked up once per sizer
    /// (`None`: not a directory): a scan's findings share most of their ancestors.
    dir_ids: HashMap<PathBuf, Option<(u64, u64)>>,
}

impl Default for Sizer {
    fn default() -> Self {
        Self::with_threads_raw(0)
    }
}

impl std::fmt::Debug for Sizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sizer")
            .field("threads", &self.threads)
            .field("pool", &self.pool.as_ref().map(|p| p.handles.len()))
            .finish_non_exhaustive()
    }
}

impl Sizer {
    /// A sizer with one walker thread per available core (at most `MAX_THREADS`, 8).
    pub fn new() -> Self {
        Self::default()
    }

    /// A sizer that walks with exactly `threads` threads (1 = on the calling thread only).
    pub fn with_threads(threads: usize) -> Self {
        Self::with_threads_raw(threads.max(1))
    }

    fn with_threads_raw(threads: usize) -> Self {
        Self {
            claims: Arc::new(Claims::default()),
            file_roots: Arc::new(InodeSet::default()),
            walked: false,
            threads,
            pool: None,
            buf: DirBuf::new(),
            memo: None,
            file_root_dirs: Arc::new(InodeSet::default()),
            dir_ids: HashMap::new(),
        }
    }

    /// A sizer that reuses, and adds to, what `memo` remembers of earlier walks (see
    /// [`DirMemo`] for what that trusts). Results are the same as a fresh walk's.
    pub fn with_memo(memo: Arc<DirMemo>) -> Self {
        Self {
            memo: Some(memo),
            ..Self::default()
        }
    }

    /// Whether this sizer reuses a [`DirMemo`] (an incremental rescan).
    pub(crate) fn has_memo(&self) -> bool {
        self.memo.is_some()
    }

    /// Whether this sizer has already counted the object with this identity.
    pub fn has_counted(&self, dev: u64, ino: u64) -> bool {
        self.claims.contains(dev, ino)
    }

    /// Measure a file or a directory tree. A symlink counts as itself.
    ///
    /// Fails only when the path itself cannot be `lstat`ed; anything unreadable below it is
    /// counted in [`Measure::errors`].
    #[allow(clippy::unnecessary_cast)]
    pub fn measure(&mut self, path: &Path) -> io::Result<Measure> {
        let st = rustix::fs::statat(CWD, path, AtFlags::SYMLINK_NOFOLLOW)?;
        let root_dev = st.st_dev as u64;
        let want = (root_dev, st.st_ino as u64);
        let m = Measure {
            identity: Some(identity_of(&st)),
            ..Measure::default()
        };
        self.claims.next_walk();
        let claim = self.claims.claim(want.0, want.1);
        // A root never counted itself may still lie inside a tree walked before.
        let inside_counted =
            matches!(claim, Claim::New) && self.walked && self.ancestor_counted(path);
        let mut acc = Acc::default();
        let is_dir = FileType::from_raw_mode(st.st_mode as _) == FileType::Directory;
        if !is_dir {
            acc.newest_mtime_ns = mtime_ns(&st);
            if matches!(claim, Claim::New) && !inside_counted {
                acc.count(&st, false);
            } else {
                acc.already_counted += 1;
            }
            Arc::make_mut(&mut self.file_roots).insert(want);
            if let (true, Some(memo)) = (st.st_nlink > 1, &self.memo) {
                memo.saw_link(want);
            }
            if self.memo.is_some() {
                if let Some(id) = path.parent().and_then(|p| self.dir_id(p)) {
                    Arc::make_mut(&mut self.file_root_dirs).insert(id);
                }
            }
        } else {
            self.walked = true;
            let fresh = matches!(claim, Claim::New) && !inside_counted;
            if let (true, Some(memo)) = (fresh, &self.memo) {
                if let Some(out) = memo.reuse_tree(want, path, &self.claims, &self.file_root_dirs) {
                    return Ok(Measure {
                        identity: m.identity,
                        ..out
                    });
                }
            }
            let root = match open_dir(CWD, path).and_then(|fd| verified(fd, want)) {
                Ok((fd, fst)) => Pending {
                    path: path.to_path_buf(),
                    open: Open::Ready(fd, Box::new(fst)),
                    want,
                    fresh,
                    lstat: None,
                },
                Err(_) => {
                    acc.dir_self(&st, fresh);
                    acc.errors += 1;
                    return Ok(m.with(acc));
                }
            };
            let cx = Arc::new(JobCtx {
                root_dev,
                claims: Arc::clone(&self.claims),
                file_roots: Arc::clone(&self.file_roots),
                memo: self.memo.clone(),
                file_root_dirs: Arc::clone(&self.file_root_dirs),
            });
            self.walk(root, &cx, &mut acc);
            let tree = std::mem::take(&mut acc.tree);
            let out = m.with(acc);
            if let (true, Some(memo)) = (fresh, &self.memo) {
                if !tree.before && out.errors == 0 {
                    memo.record_tree(want, path, &out, tree);
                }
            }
            return Ok(out);
        }
        Ok(m.with(acc))
    }

    /// Whether a directory above `path` was counted by an earlier walk of this sizer.
    fn ancestor_counted(&mut self, path: &Path) -> bool {
        path.ancestors()
            .skip(1)
            .filter(|a| !a.as_os_str().is_empty())
            .any(|a| {
                self.dir_id(a)
                    .is_some_and(|(dev, ino)| self.claims.contains(dev, ino))
            })
    }

    /// The (device, inode) of the directory at `path` (not following a symlink), or `None`.
    fn dir_id(&mut self, path: &Path) -> Option<(u64, u64)> {
        if let Some(id) = self.dir_ids.get(path) {
            return *id;
        }
        let id = std::fs::symlink_metadata(path)
            .ok()
            .filter(|md| md.is_dir())
            .map(|md| (md.dev(), md.ino()));
        self.dir_ids.insert(path.to_path_buf(), id);
        id
    }

    fn thread_count(&mut self) -> usize {
        if self.threads == 0 {
            self.threads = std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
                .clamp(1, MAX_THREADS);
        }
        self.threads
    }

    /// Walk from `root`: on this thread while there is a single directory pending, then
    /// together with the pool's helpers.
    fn walk(&mut self, root: Pending, cx: &Arc<JobCtx>, acc: &mut Acc) {
        let threads = self.thread_count();
        let mut stack = vec![root];
        while let Some(item) = stack.pop() {
            let subdirs = process(item, cx, acc, &mut self.buf);
            stack.extend(subdirs);
            if threads > 1 && stack.len() > 1 {
                break;
            }
        }
        if stack.is_empty() {
            return;
        }
        let pool = self.pool.get_or_insert_with(|| Pool::start(threads - 1));
        let sh = Arc::clone(&pool.shared);
        let mut st = lock(&sh.state);
        st.stack = stack;
        st.ctx = Some(Arc::clone(cx));
        st.acc = Acc::default();
        sh.cv.notify_all();
        loop {
            if let Some(item) = st.stack.pop() {
                st = run_one(&sh, st, item, cx, &mut self.buf);
            } else if st.busy == 0 {
                break;
            } else {
                st = sh.cv.wait(st).unwrap_or_else(|e| e.into_inner());
            }
        }
        st.ctx = None;
        acc.merge(std::mem::take(&mut st.acc));
    }
}

impl Measure {
    fn with(mut self, mut acc: Acc) -> Self {
        self.apparent = acc.apparent;
        self.allocated = acc.allocated;
        self.files = acc.files;
        self.dirs = acc.dirs;
        self.errors = acc.errors;
        self.newest_mtime_ns = acc.newest_mtime_ns;
        self.already_counted = acc.already_counted;
        acc.mounts.sort();
        self.mounts = acc.mounts;
        self
    }
}

/// What every thread of one measurement shares.
struct JobCtx {
    root_dev: u64,
    claims: Arc<Claims>,
    file_roots: Arc<InodeSet>,
    memo: Option<Arc<DirMemo>>,
    file_root_dirs: Arc<InodeSet>,
}

/// The helper threads of one sizer and the stack of directories they share.
struct Pool {
    shared: Arc<PoolShared>,
    handles: Vec<std::thread::JoinHandle<()>>,
}

struct PoolShared {
    state: Mutex<PoolState>,
    /// Signalled when work is pushed and when the last busy thread finds none left.
    cv: Condvar,
}

#[derive(Default)]
struct PoolState {
    stack: Vec<Pending>,
    /// Threads reading a directory (which may yield more work).
    busy: usize,
    /// Totals of the running measurement.
    acc: Acc,
    /// The running measurement, if any.
    ctx: Option<Arc<JobCtx>>,
    shutdown: bool,
}

impl Pool {
    fn start(helpers: usize) -> Self {
        let shared = Arc::new(PoolShared {
            state: Mutex::new(PoolState::default()),
            cv: Condvar::new(),
        });
        let handles = (0..helpers)
            .filter_map(|_| {
                let sh = Arc::clone(&shared);
                std::thread::Builder::new()
                    .name("smolsweep-size".into())
                    .stack_size(HELPER_STACK)
                    .spawn(move || helper(&sh))
                    .ok()
            })
            .collect();
        Pool { shared, handles }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        lock(&self.shared.state).shutdown = true;
        self.shared.cv.notify_all();
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

fn helper(sh: &PoolShared) {
    let mut buf = DirBuf::new();
    let mut st = lock(&sh.state);
    loop {
        if st.shutdown {
            return;
        }
        let cx = st.ctx.clone();
        match cx {
            Some(cx) if !st.stack.is_empty() => {
                let item = st.stack.pop().expect("stack is not empty");
                st = run_one(sh, st, item, &cx, &mut buf);
            }
            _ => st = sh.cv.wait(st).unwrap_or_else(|e| e.into_inner()),
        }
    }
}

/// Read one directory of the shared stack outside the lock, then hand back what it found.
fn run_one<'a>(
    sh: &'a PoolShared,
    mut st: MutexGuard<'a, PoolState>,
    item: Pending,
    cx: &JobCtx,
    buf: &mut DirBuf,
) -> MutexGuard<'a, PoolState> {
    st.busy += 1;
    drop(st);
    let mut acc = Acc::default();
    let subdirs = process(item, cx, &mut acc, buf);
    let mut st = lock(&sh.state);
    st.busy -= 1;
    st.acc.merge(acc);
    let more = subdirs.len() > 1;
    st.stack.extend(subdirs);
    // Wake the others for new work (one new directory this thread takes itself), or to let
    // the measurement finish when none is left.
    if more || (st.busy == 0 && st.stack.is_empty()) {
        sh.cv.notify_all();
    }
    st
}

/// `lstat` identity of a path.
pub fn identity(path: &Path) -> io::Result<FileIdentity> {
    let st = rustix::fs::statat(CWD, path, AtFlags::SYMLINK_NOFOLLOW)?;
    Ok(identity_of(&st))
}

impl FileIdentity {
    /// The identity of `path` itself (`lstat`: a symlink is not followed), as the scan records
    /// it: what a keep rule by identity and a re-judge compare.
    pub fn of(path: &std::path::Path) -> std::io::Result<FileIdentity> {
        identity(path)
    }

    /// Whether it is a directory.
    pub(crate) fn is_dir(&self) -> bool {
        self.file_type == S_IFDIR
    }

    /// Whether it is a regular file.
    pub(crate) fn is_regular(&self) -> bool {
        self.file_type == S_IFREG
    }
}

/// An `S_IF*` constant as [`FileIdentity::file_type`] holds it: libc's are `mode_t`, u32 on
/// Linux and u16 on macOS.
#[allow(clippy::unnecessary_cast)]
pub(crate) const fn file_type(s_if: libc::mode_t) -> u32 {
    s_if as u32
}
const S_IFDIR: u32 = file_type(libc::S_IFDIR);
const S_IFREG: u32 = file_type(libc::S_IFREG);

/// Bytes available to an unprivileged user on the file system holding `path`
/// (`statvfs`: `f_bavail × f_frsize`).
pub fn fs_free_bytes(path: &Path) -> io::Result<u64> {
    Space::of(path).map(|s| s.avail)
}

/// Whether two existing paths live on the same file system (same `st_dev` of their `lstat`).
/// False when either cannot be `lstat`ed.
#[cfg(test)]
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

/// Keep `fd` only if it is the directory that was `lstat`ed as `want` (device, inode); returns
/// its `fstat` too.
#[allow(clippy::unnecessary_cast)]
fn verified(fd: OwnedFd, want: (u64, u64)) -> io::Result<(OwnedFd, Stat)> {
    let st = rustix::fs::fstat(&fd)?;
    if (st.st_dev as u64, st.st_ino as u64) == want {
        Ok((fd, st))
    } else {
        Err(io::Error::other("directory changed while being measured"))
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
        assert_eq!(m.identity.unwrap().file_type, S_IFREG);
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
        assert_eq!(id.file_type, file_type(libc::S_IFLNK));
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
