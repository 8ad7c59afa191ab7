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

use std::collections::{HashMap, HashSet};
use std::ffi::{CStr, CString, OsStr};
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
#[cfg(not(any(target_os = "linux", target_os = "android")))]
use rustix::fs::Dir;
use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat, CWD};

use crate::model::FileIdentity;

mod watches;

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

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
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
    let v = rustix::fs::statvfs(path)?;
    Ok((v.f_bavail as u64).saturating_mul(v.f_frsize as u64))
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

/// Every directory (and multiply-linked or root non-directory) a sizer has counted, with the
/// number of the last walk that met it. Sharded so walker threads rarely wait for each other.
///
/// A non-directory with a single link is reachable through one name only, so it is met at most
/// once per walk of its directory; it is counted when its directory is new to the sizer, and
/// not recorded, which keeps the map as small as the number of directories (about 1 % of the
/// entries of a typical tree) instead of the number of files.
#[derive(Debug)]
struct Claims {
    shards: Vec<Mutex<InodeMap>>,
    walk: AtomicU32,
}

type InodeMap = HashMap<(u64, u64), u32, BuildHasherDefault<InodeHasher>>;

impl Default for Claims {
    fn default() -> Self {
        Self {
            shards: (0..SHARDS)
                .map(|_| Mutex::new(InodeMap::default()))
                .collect(),
            walk: AtomicU32::new(0),
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
    fn next_walk(&self) {
        let w = self.walk.load(Ordering::Relaxed).wrapping_add(1);
        if w == 0 {
            // Four billion walks later: forget which walk met what, keep what was counted.
            for s in &self.shards {
                for v in lock(s).values_mut() {
                    *v = 0;
                }
            }
            self.walk.store(1, Ordering::Relaxed);
        } else {
            self.walk.store(w, Ordering::Relaxed);
        }
    }

    fn shard(&self, dev: u64, ino: u64) -> &Mutex<InodeMap> {
        // Bits the maps' own bucket index and tag do not use, so each shard stays well spread.
        let h = BuildHasherDefault::<InodeHasher>::default().hash_one((dev, ino));
        &self.shards[(h >> 32) as usize & (SHARDS - 1)]
    }

    fn contains(&self, dev: u64, ino: u64) -> bool {
        lock(self.shard(dev, ino)).contains_key(&(dev, ino))
    }

    fn claim(&self, dev: u64, ino: u64) -> Claim {
        // Set between walks (by `measure`, which holds the sizer mutably).
        let walk = self.walk.load(Ordering::Relaxed);
        match lock(self.shard(dev, ino)).insert((dev, ino), walk) {
            None => Claim::New,
            Some(w) if w == walk => Claim::SeenThisWalk,
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
    /// What a [`TreeRecord`] of this walk needs (collected when a memo is used).
    tree: TreeAcc,
}

/// What a walk claimed and re-stat'ed, for its [`TreeRecord`].
#[derive(Default)]
struct TreeAcc {
    /// Something was counted by an earlier measurement of the scan (met again within this
    /// walk only is fine: the next walk meets it again the same way).
    before: bool,
    dirs: Vec<(u64, u64)>,
    links: Vec<(u64, u64)>,
    restat: Vec<(PathBuf, StatKey)>,
}

impl Acc {
    #[allow(clippy::unnecessary_cast)]
    fn count(&mut self, st: &Stat, is_dir: bool) {
        self.apparent += st.st_size.max(0) as u64;
        self.allocated += (st.st_blocks as u64).saturating_mul(512);
        if is_dir {
            self.dirs += 1;
        } else {
            self.files += 1;
        }
    }

    /// A directory's own entry: counted if new to the sizer, its mtime always seen.
    fn dir_self(&mut self, st: &Stat, fresh: bool) {
        self.newest_mtime_ns = self.newest_mtime_ns.max(mtime_ns(st));
        if fresh {
            self.count(st, true);
        } else {
            self.already_counted += 1;
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
        self.tree.before |= o.tree.before;
        self.tree.dirs.extend(o.tree.dirs);
        self.tree.links.extend(o.tree.links);
        self.tree.restat.extend(o.tree.restat);
    }
}

/// A directory still to be read. It has been claimed; it counts itself when read.
struct Pending {
    open: Open,
    path: PathBuf,
    /// (device, inode) it was `lstat`ed as: the descriptor opened must be that inode.
    want: (u64, u64),
    /// New to the sizer: count it and its single-link entries.
    fresh: bool,
    /// Its `lstat` from the parent's listing, counted if it cannot be opened.
    lstat: Option<Box<Stat>>,
}

enum Open {
    /// Already opened (the root), with its `fstat`.
    Ready(OwnedFd, Box<Stat>),
    /// To be opened relative to its parent.
    At { parent: Arc<OwnedFd>, name: CString },
    /// To be opened by its path (its parent was taken from the memo, not opened).
    Path,
}

/// Read one directory: account for it and its entries and return its subdirectories.
fn process(item: Pending, cx: &JobCtx, acc: &mut Acc, buf: &mut DirBuf) -> Vec<Pending> {
    if let Some(subdirs) = try_replay(&item, cx, acc) {
        return subdirs;
    }
    let Pending {
        open,
        path,
        want,
        fresh,
        lstat,
    } = item;
    let (fd, self_st) = match open_pending(open, &path, want) {
        Ok(x) => x,
        Err(e) => {
            if let Some(st) = &lstat {
                acc.dir_self(st, fresh);
            }
            if e.kind() != io::ErrorKind::NotFound {
                acc.errors += 1;
            }
            return Vec::new();
        }
    };
    acc.dir_self(&self_st, fresh);
    // Remembered only if watched before its entries are read, and read without errors.
    let node = watched_node(cx, fd.as_fd(), want, &self_st);
    let errors_before = acc.errors;
    // Shared with the subdirectories still to be opened relative to it.
    let fd = Arc::new(fd);
    let mut dir = DirRead {
        path: &path,
        fd: &fd,
        fresh,
        node,
        subdirs: Vec::new(),
    };
    let listed = for_each_name(fd.as_fd(), buf, |name| {
        match rustix::fs::statat(fd.as_fd(), name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => dir.entry(name, st, cx, acc),
            // Removed since the directory was read: nothing to count.
            Err(rustix::io::Errno::NOENT) => {}
            Err(_) => acc.errors += 1,
        }
    });
    if listed.is_err() {
        acc.errors += 1;
    }
    if let (Some(memo), Some(n)) = (&cx.memo, dir.node) {
        if acc.errors == errors_before {
            memo.remember(want, n);
        }
    }
    dir.subdirs
}

/// Account for `item` from the memo when it remembers it unchanged (and it is not a file
/// root's directory), tallying the memo's hit or miss. `None`: read it from the file system.
fn try_replay(item: &Pending, cx: &JobCtx, acc: &mut Acc) -> Option<Vec<Pending>> {
    let memo = cx.memo.as_ref()?;
    if !cx.file_root_dirs.contains(&item.want) {
        if let Some(node) = memo.get(item.want) {
            if let Some(subdirs) = replay(&node, item, cx, acc) {
                memo.counted(true);
                return Some(subdirs);
            }
            memo.forget(item.want);
        }
    }
    memo.counted(false);
    None
}

/// Open a pending directory, making sure the descriptor is the inode that was `lstat`ed.
fn open_pending(open: Open, path: &Path, want: (u64, u64)) -> io::Result<(OwnedFd, Stat)> {
    match open {
        Open::Ready(fd, st) => Ok((fd, *st)),
        Open::At { parent, name } => {
            open_dir(parent.as_fd(), name.as_c_str()).and_then(|fd| verified(fd, want))
        }
        Open::Path => open_dir(CWD, path).and_then(|fd| verified(fd, want)),
    }
}

/// A fresh memo node for a directory the memo now watches (`None` when there is no memo or it
/// would not watch this one).
#[allow(clippy::unnecessary_cast)]
fn watched_node(cx: &JobCtx, fd: BorrowedFd<'_>, want: (u64, u64), st: &Stat) -> Option<Node> {
    let memo = cx.memo.as_ref()?;
    if !memo.watch(fd, want) {
        return None;
    }
    Some(Node {
        own: (
            st.st_size as i64,
            (st.st_blocks as u64).saturating_mul(512),
            mtime_ns(st),
        ),
        apparent: 0,
        allocated: 0,
        files: 0,
        newest_mtime_ns: i128::MIN,
        restat: Vec::new(),
        subdirs: Vec::new(),
        mounts: Vec::new(),
    })
}

/// One directory being read by [`process`]: where its entries are accounted.
struct DirRead<'a> {
    path: &'a Path,
    /// Its descriptor, shared with the subdirectories still to be opened relative to it.
    fd: &'a Arc<OwnedFd>,
    /// New to the sizer: count its single-link entries.
    fresh: bool,
    /// Its memo node, when it is to be remembered.
    node: Option<Node>,
    subdirs: Vec<Pending>,
}

impl DirRead<'_> {
    /// Account for one entry, `lstat`ed as `st`: a mount point is noted, not entered; a
    /// directory is claimed and left pending; anything else is counted (once).
    #[allow(clippy::unnecessary_cast)]
    fn entry(&mut self, name: &CStr, st: Stat, cx: &JobCtx, acc: &mut Acc) {
        if st.st_dev as u64 != cx.root_dev {
            acc.mounts
                .push(self.path.join(OsStr::from_bytes(name.to_bytes())));
            if let Some(n) = &mut self.node {
                n.mounts.push(name.to_owned());
            }
            return;
        }
        let id = (st.st_dev as u64, st.st_ino as u64);
        let is_dir = FileType::from_raw_mode(st.st_mode as _) == FileType::Directory;
        let restat = !is_dir
            && (st.st_nlink > 1
                || st.st_size >= RESTAT_BYTES
                || (st.st_blocks as u64).saturating_mul(512) < st.st_size.max(0) as u64);
        if restat && cx.memo.is_some() {
            let p = self.path.join(OsStr::from_bytes(name.to_bytes()));
            acc.tree.restat.push((p, stat_key(&st)));
        }
        if let Some(n) = &mut self.node {
            if is_dir {
                n.subdirs.push((name.to_owned(), id));
            } else if restat {
                n.restat.push((name.to_owned(), id));
            } else {
                n.apparent += st.st_size.max(0) as u64;
                n.allocated += (st.st_blocks as u64).saturating_mul(512);
                n.files += 1;
                n.newest_mtime_ns = n.newest_mtime_ns.max(mtime_ns(&st));
            }
        }
        if is_dir {
            self.subdir(name, id, st, cx, acc);
            return;
        }
        acc.newest_mtime_ns = acc.newest_mtime_ns.max(mtime_ns(&st));
        if claim_file(cx, acc, &st, self.fresh) {
            acc.count(&st, false);
        } else {
            acc.already_counted += 1;
        }
    }

    /// A subdirectory: pending if this walk claims it, else only its mtime is seen.
    fn subdir(&mut self, name: &CStr, id: (u64, u64), st: Stat, cx: &JobCtx, acc: &mut Acc) {
        let Some(fresh) = claim_dir(cx, acc, id) else {
            acc.newest_mtime_ns = acc.newest_mtime_ns.max(mtime_ns(&st));
            return;
        };
        self.subdirs.push(Pending {
            path: self.path.join(OsStr::from_bytes(name.to_bytes())),
            open: Open::At {
                parent: Arc::clone(self.fd),
                name: name.to_owned(),
            },
            want: id,
            fresh,
            lstat: Some(Box::new(st)),
        });
    }
}

/// Account for a directory from its memo, exactly as [`process`] would from the file system,
/// and for every remembered directory below it on this thread (replaying costs no system call
/// but the `lstat`s of files stat'ed again, so handing it to other threads would cost more than
/// it saves). Returns the directories below that must be read. `None` (nothing accounted) when
/// a file stat'ed again in `item` itself is no longer the one remembered.
///
/// The walk below `item` is depth-first over the remembered nodes themselves: one path buffer
/// grown and cut back as it goes, so a replayed directory costs no allocation.
fn replay(node: &Arc<Node>, item: &Pending, cx: &JobCtx, acc: &mut Acc) -> Option<Vec<Pending>> {
    let memo = cx.memo.as_ref()?;
    // Per child of each open frame: `Some(fresh)` to visit, `None` met before in this walk.
    let mut kids: Vec<Option<bool>> = Vec::new();
    let mut restated = 0u64;
    if !replay_one(
        node,
        &item.path,
        item.fresh,
        cx,
        acc,
        &mut kids,
        &mut restated,
    ) {
        memo.counted_many(0, restated);
        return None;
    }
    let mut path = item.path.as_os_str().as_bytes().to_vec();
    let mut frames = vec![Frame {
        node: Arc::clone(node),
        next: 0,
        len: path.len(),
        base: 0,
    }];
    let (mut to_read, mut reused) = (Vec::new(), 0u64);
    while let Some(top) = frames.last_mut() {
        let Some((name, want)) = top.node.subdirs.get(top.next) else {
            kids.truncate(top.base);
            frames.pop();
            continue;
        };
        let (want, claim) = (*want, kids[top.base + top.next]);
        top.next += 1;
        path.truncate(top.len);
        if path.last() != Some(&b'/') {
            path.push(b'/');
        }
        path.extend_from_slice(name.to_bytes());
        let Some(fresh) = claim else { continue };
        let here = Path::new(OsStr::from_bytes(&path));
        if !cx.file_root_dirs.contains(&want) {
            if let Some(n) = memo.get(want) {
                let base = kids.len();
                if replay_one(&n, here, fresh, cx, acc, &mut kids, &mut restated) {
                    reused += 1;
                    let len = path.len();
                    frames.push(Frame {
                        node: n,
                        next: 0,
                        len,
                        base,
                    });
                    continue;
                }
                memo.forget(want);
            }
        }
        to_read.push(Pending {
            path: here.to_path_buf(),
            open: Open::Path,
            want,
            fresh,
            lstat: None,
        });
    }
    memo.counted_many(reused, restated);
    Some(to_read)
}

/// A remembered directory being replayed: its next child, the length of its path in the
/// buffer, and where its children's claims start in `kids`.
struct Frame {
    node: Arc<Node>,
    next: usize,
    len: usize,
    base: usize,
}

/// One remembered directory: its own entry, its files, and its subdirectories claimed (one
/// entry each pushed on `kids`). False (nothing accounted, nothing pushed) when a file
/// stat'ed again has changed.
#[allow(clippy::unnecessary_cast)]
fn replay_one(
    node: &Node,
    path: &Path,
    fresh: bool,
    cx: &JobCtx,
    acc: &mut Acc,
    kids: &mut Vec<Option<bool>>,
    restated: &mut u64,
) -> bool {
    *restated += node.restat.len() as u64;
    let mut again = Vec::with_capacity(node.restat.len());
    for (name, id) in &node.restat {
        let p = path.join(OsStr::from_bytes(name.to_bytes()));
        match rustix::fs::statat(CWD, &p, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) if (st.st_dev as u64, st.st_ino as u64) == *id => again.push((p, st)),
            _ => return false,
        }
    }
    let (size, bytes, mtime) = node.own;
    acc.newest_mtime_ns = acc.newest_mtime_ns.max(mtime);
    if fresh {
        acc.apparent += size.max(0) as u64;
        acc.allocated += bytes;
        acc.dirs += 1;
        acc.apparent += node.apparent;
        acc.allocated += node.allocated;
        acc.files += node.files;
    } else {
        acc.already_counted += 1 + node.files;
    }
    acc.newest_mtime_ns = acc.newest_mtime_ns.max(node.newest_mtime_ns);
    for (p, st) in again {
        acc.newest_mtime_ns = acc.newest_mtime_ns.max(mtime_ns(&st));
        if claim_file(cx, acc, &st, fresh) {
            acc.count(&st, false);
        } else {
            acc.already_counted += 1;
        }
        acc.tree.restat.push((p, stat_key(&st)));
    }
    for m in &node.mounts {
        acc.mounts.push(path.join(OsStr::from_bytes(m.to_bytes())));
    }
    for (_, id) in &node.subdirs {
        kids.push(claim_dir(cx, acc, *id));
    }
    true
}

/// Claim a subdirectory met in a walk: `Some(fresh)` to walk it (fresh: new to the sizer),
/// `None` when this walk met it already (tallied as counted). Notes the claim for the walk's
/// tree record.
fn claim_dir(cx: &JobCtx, acc: &mut Acc, id: (u64, u64)) -> Option<bool> {
    match cx.claims.claim(id.0, id.1) {
        Claim::New => {
            if cx.memo.is_some() {
                acc.tree.dirs.push(id);
            }
            Some(true)
        }
        Claim::CountedBefore => {
            acc.tree.before = true;
            Some(false)
        }
        Claim::SeenThisWalk => {
            acc.already_counted += 1;
            None
        }
    }
}

/// Whether a non-directory met in a walk is to be counted: one that may be met again (several
/// links, or itself a measured root) goes through the claims, any other is new exactly when its
/// directory is (`dir_fresh`). A multiply linked file is reported to the memo
/// ([`DirMemo::untrusted`]) and, when claimed, noted for the walk's tree record.
#[allow(clippy::unnecessary_cast)]
fn claim_file(cx: &JobCtx, acc: &mut Acc, st: &Stat, dir_fresh: bool) -> bool {
    let id = (st.st_dev as u64, st.st_ino as u64);
    if st.st_nlink > 1 {
        if let Some(memo) = &cx.memo {
            memo.saw_link(id);
        }
    } else if !cx.file_roots.contains(&id) {
        return dir_fresh;
    }
    let claim = cx.claims.claim(id.0, id.1);
    acc.tree.before |= matches!(claim, Claim::CountedBefore);
    let new = matches!(claim, Claim::New);
    if new && cx.memo.is_some() {
        acc.tree.links.push(id);
    }
    new
}

/// Buffer for directory entries, one per walking thread (`getdents` on Linux).
#[cfg_attr(not(any(target_os = "linux", target_os = "android")), allow(dead_code))]
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

// ---------------------------------------------------------------------------------------------
// The directory memo: what the last walks read, per directory, kept between scans.

/// Files at least this large are stat'ed again on every reuse of their directory's memo: a
/// disk written through `mmap` grows its allocation without any inotify event.
const RESTAT_BYTES: i64 = 1 << 20;

/// At most this many directories are remembered (one inotify watch each); beyond it, trees are
/// walked afresh every time.
#[cfg_attr(not(any(target_os = "linux", target_os = "android")), allow(dead_code))]
pub const MEMO_MAX_DIRS: usize = 65_536;

/// What the walks of earlier scans read in each directory, reused by later scans for the
/// directories nothing has changed in since.
///
/// **What it trusts.** A directory's memo is reused only while the kernel has reported no
/// change to it: every remembered directory carries an inotify watch (added on the open
/// descriptor *before* its entries are read, so no change can fall between the read and the
/// watch) for entries created, deleted, renamed, written, truncated or re-attributed, and for
/// the directory itself being changed, moved or deleted. Any such event drops that directory's
/// memo; a lost event (queue overflow) or a change of the mount table drops all of it. Content
/// written through `mmap` raises no inotify event, so files of at least 1 MiB, sparse files and
/// files with several links (whose writes may come through another directory's name) are
/// `lstat`ed again on every reuse, and a different inode there drops the memo. Directories
/// with read errors are never remembered. A new link to a file raises no event in the directory
/// of its other name: a scan that meets a multiply linked file not met before, having reused
/// anything, is thrown away and made again from the file system ([`DirMemo::untrusted`]); a
/// link made outside every walked tree is not seen until the next full read, which
/// [`crate::scan::memo::FULL_READ_EVERY`] bounds.
///
/// **Whole trees.** A measured tree nothing of which was counted by an earlier measurement of
/// its scan, with every directory remembered, keeps its [`Measure`] (a `TreeRecord`); the next
/// scan takes it as it is, after re-stat'ing its large, sparse and multiply linked files and
/// checking none of its directories has been claimed, while none of its directories has been
/// dropped. A rescan of a tree nothing changed in then costs one pass over a flat list instead
/// of a visit of every remembered directory.
///
/// The memo only ever feeds sizes shown to the user;
/// plans and the executor's re-judge measure on fresh facts and never see it.
///
/// On other platforms than Linux the memo remembers nothing (every walk is fresh).
pub struct DirMemo {
    inner: Mutex<MemoInner>,
}

#[derive(Default)]
struct MemoInner {
    /// The inotify watches of the remembered directories ([`watches`]).
    watches: watches::Watches,
    /// Remembered directories by (device, inode), with the scan that last used them.
    nodes: HashMap<(u64, u64), Entry, BuildHasherDefault<InodeHasher>>,
    /// Whole measured trees nothing in has changed since, by the root's (device, inode).
    roots: HashMap<(u64, u64), TreeRecord, BuildHasherDefault<InodeHasher>>,
    generation: u64,
    mountinfo: Vec<u8>,
    stats: MemoStats,
    /// Every multiply linked file the walks have met. A new link to a file raises no event in
    /// the directory of its other name, whose memo then still sums it as a single-link file:
    /// a scan that meets a link not seen before, and reused anything, is not trusted.
    links: HashSet<(u64, u64), BuildHasherDefault<InodeHasher>>,
    new_link: bool,
    /// A name was created, removed or moved in a watched directory (or the memo was emptied)
    /// since the last [`DirMemo::begin_scan`]: reported by the next one.
    names_moved: bool,
}

/// Counts of the last scan that used a [`DirMemo`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoStats {
    /// Directories taken from the memo.
    pub reused: u64,
    /// Directories read from the file system.
    pub read: u64,
    /// Memos dropped because of a change since the last scan.
    pub invalidated: u64,
    /// Directories remembered after the scan.
    pub remembered: u64,
    /// Files stat'ed again in remembered directories (large, sparse or multiply linked).
    pub restated: u64,
    /// Since the scan before: a name was created, removed or moved in a watched directory,
    /// or the memo was emptied (then every directory is new to it). A file renamed into a
    /// walked tree raises this (the process table's memo, `scan::memo`, relies on it).
    pub names_moved: bool,
    /// Directories the walk read that were not watched before this scan (new to the memo, or
    /// beyond what it can watch): what was moved into one before its watch went unseen.
    pub new_dirs: u64,
}

/// A remembered directory, the scan that last used it, and the recorded tree it belongs to.
struct Entry {
    node: Arc<Node>,
    generation: u64,
    root: Option<(u64, u64)>,
}

/// A whole tree measured from the memo and the file system with nothing in it counted before
/// and every directory of it remembered: its [`Measure`] is the answer again for as long as
/// none of its directories changes, its re-stat'ed files are the same, and none of what it
/// claims has been claimed by an earlier measurement of the same scan.
struct TreeRecord {
    path: PathBuf,
    measure: Measure,
    /// Its directories (the root excluded) and multiply linked files, as claimed.
    claims: Vec<(u64, u64)>,
    /// Files re-stat'ed on every reuse, by directory, with what their `lstat` said.
    restat: Vec<Restat>,
    generation: u64,
}

/// Files of a recorded tree stat'ed again on every reuse, in one directory (its path relative
/// to the tree's root, empty for the root itself).
struct Restat {
    dir: PathBuf,
    files: Vec<(CString, StatKey)>,
}

/// A directory with at least this many files to stat again is opened once and they are
/// stat'ed relative to it; fewer are stat'ed by their path relative to the tree's root. Either
/// way the path above the root is looked up once per tree, not once per file: a store whose
/// every tenth file is linked from elsewhere costs thousands of `lstat`s on every rescan, and
/// their path lookups were most of it.
const RESTAT_OPEN_DIR: usize = 4;

/// The files a tree's walk stat'ed to be stat'ed again (full paths below `root`), grouped by
/// directory relative to `root`; `None` if one is not below it.
fn restat_groups(root: &Path, mut files: Vec<(PathBuf, StatKey)>) -> Option<Vec<Restat>> {
    // By directory, then name: a directory's files are one group.
    files.sort_unstable_by(|a, b| {
        (a.0.parent(), a.0.file_name()).cmp(&(b.0.parent(), b.0.file_name()))
    });
    let mut out: Vec<Restat> = Vec::new();
    for (p, key) in files {
        let rel = p.strip_prefix(root).ok()?;
        let name = CString::new(rel.file_name()?.as_bytes()).ok()?;
        let dir = rel.parent().unwrap_or(Path::new(""));
        match out.last_mut() {
            Some(g) if g.dir == dir => g.files.push((name, key)),
            _ => out.push(Restat {
                dir: dir.to_path_buf(),
                files: vec![(name, key)],
            }),
        }
    }
    Some(out)
}

/// Whether every file of `groups` still `lstat`s as remembered, below the tree root open as
/// `root` (the directories on the way are watched: a change to one drops the record first).
fn restat_same(root: BorrowedFd<'_>, groups: &[Restat]) -> bool {
    let same = |at: BorrowedFd<'_>, p: &Path, key: &StatKey| {
        rustix::fs::statat(at, p, AtFlags::SYMLINK_NOFOLLOW).is_ok_and(|st| stat_key(&st) == *key)
    };
    let mut buf: Vec<u8> = Vec::new();
    for g in groups {
        let at_root = g.dir.as_os_str().is_empty();
        if !at_root && g.files.len() >= RESTAT_OPEN_DIR {
            let Ok(dir) = open_dir(root, &g.dir) else {
                return false;
            };
            for (name, key) in &g.files {
                let p = Path::new(OsStr::from_bytes(name.to_bytes()));
                if !same(dir.as_fd(), p, key) {
                    return false;
                }
            }
            continue;
        }
        for (name, key) in &g.files {
            buf.clear();
            if !at_root {
                buf.extend_from_slice(g.dir.as_os_str().as_bytes());
                buf.push(b'/');
            }
            buf.extend_from_slice(name.to_bytes());
            if !same(root, Path::new(OsStr::from_bytes(&buf)), key) {
                return false;
            }
        }
    }
    true
}

/// What a re-stat'ed file must still be: identity, links, size, allocation, mtime.
type StatKey = (u64, u64, u64, i64, u64, i128);

#[allow(clippy::unnecessary_cast)]
fn stat_key(st: &Stat) -> StatKey {
    (
        st.st_dev as u64,
        st.st_ino as u64,
        st.st_nlink as u64,
        st.st_size as i64,
        st.st_blocks as u64,
        mtime_ns(st),
    )
}

/// One directory as it was read.
struct Node {
    /// Its own `fstat`: size, blocks, mtime.
    own: (i64, u64, i128),
    /// Sums over its single-link, small, non-sparse non-directories.
    apparent: u64,
    allocated: u64,
    files: u64,
    newest_mtime_ns: i128,
    /// Non-directories stat'ed again on reuse (large, sparse or multiply linked), as
    /// (name, (device, inode)).
    restat: Vec<(CString, (u64, u64))>,
    subdirs: Vec<(CString, (u64, u64))>,
    mounts: Vec<CString>,
}

impl Default for DirMemo {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for DirMemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirMemo")
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl DirMemo {
    pub fn new() -> Self {
        DirMemo {
            inner: Mutex::new(MemoInner::default()),
        }
    }

    /// Counts of the last scan.
    pub fn stats(&self) -> MemoStats {
        lock(&self.inner).stats
    }

    /// Forget everything (the next walk reads every directory).
    pub fn clear(&self) {
        lock(&self.inner).clear();
    }

    /// Before a scan: take in the changes the kernel reported since the last one.
    pub fn begin_scan(&self) {
        let mut m = lock(&self.inner);
        m.generation += 1;
        m.stats = MemoStats::default();
        m.new_link = false;
        // A mount or unmount anywhere can put a file system over a remembered directory
        // without an event in it: then nothing is trusted.
        let mi = std::fs::read("/proc/self/mountinfo").unwrap_or_default();
        if mi != m.mountinfo {
            m.clear();
            m.mountinfo = mi;
        }
        m.drain();
        m.stats.names_moved = std::mem::take(&mut m.names_moved);
    }

    /// After a scan: forget the directories it did not meet (no longer part of any finding).
    pub fn end_scan(&self) {
        let mut m = lock(&self.inner);
        let generation = m.generation;
        m.roots.retain(|_, r| r.generation == generation);
        let roots = &m.roots;
        let stale: Vec<(u64, u64)> = m
            .nodes
            .iter()
            .filter(|(_, e)| {
                e.generation != generation && !e.root.is_some_and(|r| roots.contains_key(&r))
            })
            .map(|(k, _)| *k)
            .collect();
        for id in stale {
            m.drop_node(id);
            m.unwatch(id);
        }
        m.stats.remembered = m.nodes.len() as u64;
    }

    fn get(&self, id: (u64, u64)) -> Option<Arc<Node>> {
        let mut m = lock(&self.inner);
        let generation = m.generation;
        match m.nodes.get_mut(&id) {
            Some(e) => {
                e.generation = generation;
                Some(Arc::clone(&e.node))
            }
            None => None,
        }
    }

    fn forget(&self, id: (u64, u64)) {
        let mut m = lock(&self.inner);
        m.drop_node(id);
        m.stats.invalidated += 1;
    }

    /// The measure of the tree at `path` (directory `want`, new to this sizer) from its
    /// record, its claims made, or `None` when the record cannot stand for it (see
    /// [`TreeRecord`]); nothing is claimed then.
    fn reuse_tree(
        &self,
        want: (u64, u64),
        path: &Path,
        claims: &Claims,
        file_root_dirs: &InodeSet,
    ) -> Option<Measure> {
        let mut m = lock(&self.inner);
        let generation = m.generation;
        let rec = m.roots.get_mut(&want)?;
        if rec.path != path
            || file_root_dirs.contains(&want)
            || rec.claims.iter().any(|id| file_root_dirs.contains(id))
        {
            return None;
        }
        if rec.claims.iter().any(|&(d, i)| claims.contains(d, i)) {
            return None;
        }
        if !rec.restat.is_empty() {
            let (root, _) = open_dir(CWD, path).and_then(|fd| verified(fd, want)).ok()?;
            if !restat_same(root.as_fd(), &rec.restat) {
                return None;
            }
        }
        for &(d, i) in &rec.claims {
            claims.claim(d, i);
        }
        rec.generation = generation;
        let out = rec.measure.clone();
        let dirs = out.dirs;
        let restated = rec.restat.iter().map(|g| g.files.len() as u64).sum::<u64>();
        m.stats.reused += dirs;
        m.stats.restated += restated;
        Some(out)
    }

    /// Keep `measure` of the tree at `path` for the next scans, if every directory it claimed
    /// is remembered (and so watched).
    fn record_tree(&self, want: (u64, u64), path: &Path, measure: &Measure, acc: TreeAcc) {
        let Some(restat) = restat_groups(path, acc.restat) else {
            return;
        };
        let mut m = lock(&self.inner);
        let generation = m.generation;
        let dirs = std::iter::once(&want).chain(acc.dirs.iter());
        let mut ok = true;
        for id in dirs.clone() {
            ok &= m.nodes.contains_key(id);
        }
        if !ok {
            return;
        }
        for id in dirs {
            let old = m.nodes.get_mut(id).and_then(|e| e.root.replace(want));
            if let Some(old) = old.filter(|o| *o != want) {
                m.roots.remove(&old);
            }
        }
        let mut claims = acc.dirs;
        claims.extend(acc.links);
        m.roots.insert(
            want,
            TreeRecord {
                path: path.to_path_buf(),
                measure: measure.clone(),
                claims,
                restat,
                generation,
            },
        );
    }

    /// A file with several links was met (see [`MemoInner::links`]).
    fn saw_link(&self, id: (u64, u64)) {
        let mut m = lock(&self.inner);
        if m.links.insert(id) {
            m.new_link = true;
        }
    }

    /// After a scan: whether it met a file linked again since the memo's directories were
    /// read while it reused some of them, so that its sizes may count that file twice. The
    /// caller then forgets everything and scans again.
    pub fn untrusted(&self) -> bool {
        let m = lock(&self.inner);
        m.new_link && m.stats.reused > 0
    }

    fn counted_many(&self, reused: u64, restated: u64) {
        let mut m = lock(&self.inner);
        m.stats.reused += reused;
        m.stats.restated += restated;
    }

    fn counted(&self, reused: bool) {
        let mut m = lock(&self.inner);
        if reused {
            m.stats.reused += 1;
        } else {
            m.stats.read += 1;
        }
    }

    /// Watch the directory open as `fd` (before it is read); false when it cannot be
    /// remembered.
    fn watch(&self, fd: BorrowedFd<'_>, id: (u64, u64)) -> bool {
        let mut m = lock(&self.inner);
        // Until the watch below stands, a name moved into it is seen by no event.
        if !m.watches.watched(id) {
            m.stats.new_dirs += 1;
        }
        if m.nodes.len() >= MEMO_MAX_DIRS {
            return false;
        }
        match m.watches.add(fd, id) {
            Ok(replaced) => {
                if let Some(old) = replaced {
                    m.drop_node(old);
                }
                true
            }
            Err(()) => false,
        }
    }

    fn remember(&self, id: (u64, u64), node: Node) {
        let mut m = lock(&self.inner);
        let generation = m.generation;
        if m.watches.watched(id) {
            m.drop_node(id);
            let node = Arc::new(node);
            m.nodes.insert(
                id,
                Entry {
                    node,
                    generation,
                    root: None,
                },
            );
        }
    }
}

impl MemoInner {
    /// Forget a directory, and the recorded tree it is part of.
    fn drop_node(&mut self, id: (u64, u64)) -> bool {
        match self.nodes.remove(&id) {
            Some(e) => {
                if let Some(r) = e.root {
                    self.roots.remove(&r);
                }
                true
            }
            None => false,
        }
    }

    fn clear(&mut self) {
        self.names_moved = true;
        self.links.clear();
        self.roots.clear();
        self.nodes.clear();
        self.watches.clear();
    }

    fn unwatch(&mut self, id: (u64, u64)) {
        self.watches.remove(id);
    }

    /// Read every pending inotify event; drop the memo of each directory one names, and all of
    /// it when an event was lost.
    fn drain(&mut self) {
        match self.watches.drain() {
            watches::Drained::Lost => {
                self.clear();
                self.stats.invalidated += 1;
            }
            watches::Drained::Changed(dirs) => {
                for (id, moved) in dirs {
                    self.names_moved |= moved;
                    if self.drop_node(id) {
                        self.stats.invalidated += 1;
                    }
                }
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
