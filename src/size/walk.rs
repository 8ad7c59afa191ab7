//! The walk itself: each directory (device, inode) claimed once in a sharded map, its entries
//! accounted, read from the file system or replayed from the directory memo.

use std::collections::HashMap;
use std::ffi::{CStr, CString, OsStr};
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
#[cfg(not(any(target_os = "linux", target_os = "android")))]
use rustix::fs::Dir;
use rustix::fs::{AtFlags, FileType, Stat, CWD};

use super::*;

/// Every directory (and multiply-linked or root non-directory) a sizer has counted, with the
/// number of the last walk that met it. Sharded so walker threads rarely wait for each other.
///
/// A non-directory with a single link is reachable through one name only, so it is met at most
/// once per walk of its directory; it is counted when its directory is new to the sizer, and
/// not recorded, which keeps the map as small as the number of directories (about 1 % of the
/// entries of a typical tree) instead of the number of files.
#[derive(Debug)]
pub(super) struct Claims {
    pub(super) shards: Vec<Mutex<InodeMap>>,
    pub(super) walk: AtomicU32,
}

pub(super) type InodeMap = HashMap<(u64, u64), u32, BuildHasherDefault<InodeHasher>>;

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

pub(super) enum Claim {
    /// First time this sizer sees the object: count it.
    New,
    /// Counted by an earlier measurement, first time in this walk: walk it, do not count it.
    CountedBefore,
    /// Already met in this walk (a hard link, or a directory reached twice through a bind
    /// mount): neither count nor walk it again.
    SeenThisWalk,
}

impl Claims {
    pub(super) fn next_walk(&self) {
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

    pub(super) fn shard(&self, dev: u64, ino: u64) -> &Mutex<InodeMap> {
        // Bits the maps' own bucket index and tag do not use, so each shard stays well spread.
        let h = BuildHasherDefault::<InodeHasher>::default().hash_one((dev, ino));
        &self.shards[(h >> 32) as usize & (SHARDS - 1)]
    }

    pub(super) fn contains(&self, dev: u64, ino: u64) -> bool {
        lock(self.shard(dev, ino)).contains_key(&(dev, ino))
    }

    pub(super) fn claim(&self, dev: u64, ino: u64) -> Claim {
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
pub(super) struct InodeHasher(u64);

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
pub(super) struct Acc {
    pub(super) apparent: u64,
    pub(super) allocated: u64,
    pub(super) files: u64,
    pub(super) dirs: u64,
    pub(super) errors: u64,
    pub(super) newest_mtime_ns: i128,
    pub(super) already_counted: u64,
    pub(super) mounts: Vec<PathBuf>,
    /// What a [`TreeRecord`] of this walk needs (collected when a memo is used).
    pub(super) tree: TreeAcc,
}

/// What a walk claimed and re-stat'ed, for its [`TreeRecord`].
#[derive(Default)]
pub(super) struct TreeAcc {
    /// Something was counted by an earlier measurement of the scan (met again within this
    /// walk only is fine: the next walk meets it again the same way).
    pub(super) before: bool,
    pub(super) dirs: Vec<(u64, u64)>,
    pub(super) links: Vec<(u64, u64)>,
    pub(super) restat: Vec<(PathBuf, StatKey)>,
}

impl Acc {
    #[allow(clippy::unnecessary_cast)]
    pub(super) fn count(&mut self, st: &Stat, is_dir: bool) {
        self.apparent += st.st_size.max(0) as u64;
        self.allocated += (st.st_blocks as u64).saturating_mul(512);
        if is_dir {
            self.dirs += 1;
        } else {
            self.files += 1;
        }
    }

    /// A directory's own entry: counted if new to the sizer, its mtime always seen.
    pub(super) fn dir_self(&mut self, st: &Stat, fresh: bool) {
        self.newest_mtime_ns = self.newest_mtime_ns.max(mtime_ns(st));
        if fresh {
            self.count(st, true);
        } else {
            self.already_counted += 1;
        }
    }

    pub(super) fn merge(&mut self, o: Acc) {
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
pub(super) struct Pending {
    pub(super) open: Open,
    pub(super) path: PathBuf,
    /// (device, inode) it was `lstat`ed as: the descriptor opened must be that inode.
    pub(super) want: (u64, u64),
    /// New to the sizer: count it and its single-link entries.
    pub(super) fresh: bool,
    /// Its `lstat` from the parent's listing, counted if it cannot be opened.
    pub(super) lstat: Option<Box<Stat>>,
}

pub(super) enum Open {
    /// Already opened (the root), with its `fstat`.
    Ready(OwnedFd, Box<Stat>),
    /// To be opened relative to its parent.
    At { parent: Arc<OwnedFd>, name: CString },
    /// To be opened by its path (its parent was taken from the memo, not opened).
    Path,
}

/// Read one directory: account for it and its entries and return its subdirectories.
pub(super) fn process(item: Pending, cx: &JobCtx, acc: &mut Acc, buf: &mut DirBuf) -> Vec<Pending> {
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
pub(super) fn try_replay(item: &Pending, cx: &JobCtx, acc: &mut Acc) -> Option<Vec<Pending>> {
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
pub(super) fn open_pending(
    open: Open,
    path: &Path,
    want: (u64, u64),
) -> io::Result<(OwnedFd, Stat)> {
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
pub(super) fn watched_node(
    cx: &JobCtx,
    fd: BorrowedFd<'_>,
    want: (u64, u64),
    st: &Stat,
) -> Option<Node> {
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
pub(super) struct DirRead<'a> {
    pub(super) path: &'a Path,
    /// Its descriptor, shared with the subdirectories still to be opened relative to it.
    pub(super) fd: &'a Arc<OwnedFd>,
    /// New to the sizer: count its single-link entries.
    pub(super) fresh: bool,
    /// Its memo node, when it is to be remembered.
    pub(super) node: Option<Node>,
    pub(super) subdirs: Vec<Pending>,
}

impl DirRead<'_> {
    /// Account for one entry, `lstat`ed as `st`: a mount point is noted, not entered; a
    /// directory is claimed and left pending; anything else is counted (once).
    #[allow(clippy::unnecessary_cast)]
    pub(super) fn entry(&mut self, name: &CStr, st: Stat, cx: &JobCtx, acc: &mut Acc) {
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
    pub(super) fn subdir(
        &mut self,
        name: &CStr,
        id: (u64, u64),
        st: Stat,
        cx: &JobCtx,
        acc: &mut Acc,
    ) {
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
pub(super) fn replay(
    node: &Arc<Node>,
    item: &Pending,
    cx: &JobCtx,
    acc: &mut Acc,
) -> Option<Vec<Pending>> {
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
pub(super) struct Frame {
    pub(super) node: Arc<Node>,
    pub(super) next: usize,
    pub(super) len: usize,
    pub(super) base: usize,
}

/// One remembered directory: its own entry, its files, and its subdirectories claimed (one
/// entry each pushed on `kids`). False (nothing accounted, nothing pushed) when a file
/// stat'ed again has changed.
#[allow(clippy::unnecessary_cast)]
pub(super) fn replay_one(
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
pub(super) fn claim_dir(cx: &JobCtx, acc: &mut Acc, id: (u64, u64)) -> Option<bool> {
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
pub(super) fn claim_file(cx: &JobCtx, acc: &mut Acc, st: &Stat, dir_fresh: bool) -> bool {
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
pub(super) struct DirBuf(Vec<std::mem::MaybeUninit<u8>>);

impl DirBuf {
    pub(super) fn new() -> Self {
        // As large as glibc's readdir buffer: one getdents call for most directories.
        Self(vec![std::mem::MaybeUninit::uninit(); 32 * 1024])
    }
}

/// Call `f` with each entry name of the directory open as `fd` ("." and ".." left out), reading
/// through `fd` itself so its `O_NOATIME` applies.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(super) fn for_each_name(
    fd: BorrowedFd<'_>,
    buf: &mut DirBuf,
    mut f: impl FnMut(&CStr),
) -> io::Result<()> {
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
pub(super) fn for_each_name(
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

pub(super) fn is_dot(name: &CStr) -> bool {
    matches!(name.to_bytes(), b"." | b"..")
}
