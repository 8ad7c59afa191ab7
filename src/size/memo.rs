//! The directory memo: what a walk read, remembered per directory and trusted while the kernel
//! reports no change in it (the app's rescans read only what changed).

use std::collections::{HashMap, HashSet};
use std::ffi::{CString, OsStr};
use std::hash::BuildHasherDefault;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rustix::fd::{AsFd, BorrowedFd};
use rustix::fs::{AtFlags, Stat, CWD};

use super::*;

/// Files at least this large are stat'ed again on every reuse of their directory's memo: a
/// disk written through `mmap` grows its allocation without any inotify event.
pub(super) const RESTAT_BYTES: i64 = 1 << 20;

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
    pub(super) inner: Mutex<MemoInner>,
}

#[derive(Default)]
pub(super) struct MemoInner {
    /// The inotify watches of the remembered directories ([`watches`]).
    pub(super) watches: watches::Watches,
    /// Remembered directories by (device, inode), with the scan that last used them.
    pub(super) nodes: HashMap<(u64, u64), Entry, BuildHasherDefault<InodeHasher>>,
    /// Whole measured trees nothing in has changed since, by the root's (device, inode).
    pub(super) roots: HashMap<(u64, u64), TreeRecord, BuildHasherDefault<InodeHasher>>,
    pub(super) generation: u64,
    pub(super) mountinfo: Vec<u8>,
    pub(super) stats: MemoStats,
    /// Every multiply linked file the walks have met. A new link to a file raises no event in
    /// the directory of its other name, whose memo then still sums it as a single-link file:
    /// a scan that meets a link not seen before, and reused anything, is not trusted.
    pub(super) links: HashSet<(u64, u64), BuildHasherDefault<InodeHasher>>,
    pub(super) new_link: bool,
    /// A name was created, removed or moved in a watched directory (or the memo was emptied)
    /// since the last [`DirMemo::begin_scan`]: reported by the next one.
    pub(super) names_moved: bool,
    /// The judges' listings of directories, kept while the watches prove them unchanged.
    pub(super) listings: listings::Listings,
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
    /// Directory listings of the scan's judges taken as kept ([`listings`]).
    pub listings_reused: u64,
    /// Directory listings read from the file system.
    pub listings_read: u64,
    /// Listings kept after the scan.
    pub listings_kept: u64,
    /// Since the scan before: a name was created, removed or moved in a watched directory,
    /// or the memo was emptied (then every directory is new to it). A file renamed into a
    /// walked tree raises this (the process table's memo, `scan::memo`, relies on it).
    pub names_moved: bool,
    /// Directories the walk read that were not watched before this scan (new to the memo, or
    /// beyond what it can watch): what was moved into one before its watch went unseen.
    pub new_dirs: u64,
}

/// A remembered directory, the scan that last used it, and the recorded tree it belongs to.
pub(super) struct Entry {
    pub(super) node: Arc<Node>,
    pub(super) generation: u64,
    pub(super) root: Option<(u64, u64)>,
}

/// A whole tree measured from the memo and the file system with nothing in it counted before
/// and every directory of it remembered: its [`Measure`] is the answer again for as long as
/// none of its directories changes, its re-stat'ed files are the same, and none of what it
/// claims has been claimed by an earlier measurement of the same scan.
pub(super) struct TreeRecord {
    pub(super) path: PathBuf,
    pub(super) measure: Measure,
    /// Its directories (the root excluded) and multiply linked files, as claimed.
    pub(super) claims: Vec<(u64, u64)>,
    /// Files re-stat'ed on every reuse, by directory, with what their `lstat` said.
    pub(super) restat: Vec<Restat>,
    pub(super) generation: u64,
}

/// Files of a recorded tree stat'ed again on every reuse, in one directory (its path relative
/// to the tree's root, empty for the root itself).
pub(super) struct Restat {
    pub(super) dir: PathBuf,
    pub(super) files: Vec<(CString, StatKey)>,
}

/// A directory with at least this many files to stat again is opened once and they are
/// stat'ed relative to it; fewer are stat'ed by their path relative to the tree's root. Either
/// way the path above the root is looked up once per tree, not once per file: a store whose
/// every tenth file is linked from elsewhere costs thousands of `lstat`s on every rescan, and
/// their path lookups were most of it.
pub(super) const RESTAT_OPEN_DIR: usize = 4;

/// The files a tree's walk stat'ed to be stat'ed again (full paths below `root`), grouped by
/// directory relative to `root`; `None` if one is not below it.
pub(super) fn restat_groups(
    root: &Path,
    mut files: Vec<(PathBuf, StatKey)>,
) -> Option<Vec<Restat>> {
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
pub(super) fn restat_same(root: BorrowedFd<'_>, groups: &[Restat]) -> bool {
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
pub(super) type StatKey = (u64, u64, u64, i64, u64, i128);

#[allow(clippy::unnecessary_cast)]
pub(super) fn stat_key(st: &Stat) -> StatKey {
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
pub(super) struct Node {
    /// Its own `fstat`: size, blocks, mtime.
    pub(super) own: (i64, u64, i128),
    /// Sums over its single-link, small, non-sparse non-directories.
    pub(super) apparent: u64,
    pub(super) allocated: u64,
    pub(super) files: u64,
    pub(super) newest_mtime_ns: i128,
    /// Non-directories stat'ed again on reuse (large, sparse or multiply linked), as
    /// (name, (device, inode)).
    pub(super) restat: Vec<(CString, (u64, u64))>,
    pub(super) subdirs: Vec<(CString, (u64, u64))>,
    pub(super) mounts: Vec<CString>,
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
        let gone = m.watches.take_gone();
        m.listings.drop_dirs(&gone);
        m.stats.listings_kept = m.listings.len() as u64;
    }

    pub(super) fn get(&self, id: (u64, u64)) -> Option<Arc<Node>> {
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

    pub(super) fn forget(&self, id: (u64, u64)) {
        let mut m = lock(&self.inner);
        m.drop_node(id);
        m.stats.invalidated += 1;
    }

    /// The measure of the tree at `path` (directory `want`, new to this sizer) from its
    /// record, its claims made, or `None` when the record cannot stand for it (see
    /// [`TreeRecord`]); nothing is claimed then.
    pub(super) fn reuse_tree(
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
    pub(super) fn record_tree(
        &self,
        want: (u64, u64),
        path: &Path,
        measure: &Measure,
        acc: TreeAcc,
    ) {
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
    pub(super) fn saw_link(&self, id: (u64, u64)) {
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

    pub(super) fn counted_many(&self, reused: u64, restated: u64) {
        let mut m = lock(&self.inner);
        m.stats.reused += reused;
        m.stats.restated += restated;
    }

    pub(super) fn counted(&self, reused: bool) {
        let mut m = lock(&self.inner);
        if reused {
            m.stats.reused += 1;
        } else {
            m.stats.read += 1;
        }
    }

    /// Watch the directory open as `fd` (before it is read); false when it cannot be
    /// remembered.
    pub(super) fn watch(&self, fd: BorrowedFd<'_>, id: (u64, u64)) -> bool {
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

    pub(super) fn remember(&self, id: (u64, u64), node: Node) {
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
    pub(super) fn drop_node(&mut self, id: (u64, u64)) -> bool {
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

    pub(super) fn clear(&mut self) {
        self.names_moved = true;
        self.links.clear();
        self.roots.clear();
        self.nodes.clear();
        self.watches.clear();
        self.listings.clear();
    }

    pub(super) fn unwatch(&mut self, id: (u64, u64)) {
        self.watches.remove(id);
    }

    /// Read every pending inotify event; drop the memo of each directory one names, and all of
    /// it when an event was lost.
    pub(super) fn drain(&mut self) {
        match self.watches.drain() {
            watches::Drained::Lost => {
                self.clear();
                self.stats.invalidated += 1;
            }
            watches::Drained::Changed(dirs) => {
                let ids: Vec<(u64, u64)> = dirs.iter().map(|(id, _)| *id).collect();
                self.listings.drop_dirs(&ids);
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
