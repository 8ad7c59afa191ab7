//! The directory memo's listings: what the scan's judges list of the products' roots
//! (`crate::fsread::read_dir`: every entry with its `lstat`), kept for the app's next rescans
//! while the memo's watches prove it unchanged (issue 40, item 3: on the 100k-file HOME it was
//! about a sixth of a rescan with nothing changed).
//!
//! **What it trusts.** A listing is taken again only when all of these hold:
//!
//! * the path still leads to the directory it was read from (device and inode, one `stat`);
//! * that directory was watched (both of the memo's watches, [`super::watches`]) before it was
//!   read, has been ever since, and the kernel reported no event in it: no name created,
//!   deleted or moved, no entry's attributes changed (`IN_ATTRIB`: mode, owner, times, links
//!   made through this directory), no file written or truncated (`IN_MODIFY`);
//! * every subdirectory among its entries was watched when it was `lstat`ed and has been
//!   ever since with no event in it: a subdirectory's own times, size and link count change
//!   only with a name created, deleted or moved in it, or with its attributes (all events of
//!   its own watch). A subdirectory that was not watched then is `lstat`ed again at every reuse;
//! * nothing dropped the memo (a lost event, a change of the mount table, the full read every
//!   `scan::memo::FULL_READ_EVERY`).
//!
//! Files whose content may change without an event are `lstat`ed again at every reuse, as in
//! the walk's memo: files of at least 1 MiB, sparse files (written through `mmap`) and files
//! with several links (written through another directory's name). A listing whose entry is gone
//! at its re-`lstat` is read again. Directories that cannot be watched (the watch limit) are
//! read every time. What this leaves is the walk's memo's edge, bounded the same way: a small
//! file with one link that gains a second one outside the listed directory and is written
//! through it raises no event here until the next full read.
//!
//! Only the app's rescans list through it (`scan::memo`, on the scan's own thread, through
//! [`crate::fsread::with_listings`]); plans, the executor's re-judge and `smolsweep scan`
//! never do.

use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use rustix::fd::AsFd;
use rustix::fs::{AtFlags, OFlags};

use super::lock;
use super::memo::{DirMemo, MemoInner, RESTAT_BYTES};
use crate::fsread::{self, Entry};

/// Most listings kept (one watch each, beside the walk's).
const LISTINGS_MAX: usize = 4096;

/// One directory as the memo last listed it.
pub(super) struct Listing {
    /// The directory's device and inode, from the descriptor it was read through.
    id: (u64, u64),
    entries: Vec<Entry>,
    /// Its subdirectories that were watched when they were `lstat`ed: an event in one drops
    /// the listing.
    deps: Vec<(u64, u64)>,
    /// Entries `lstat`ed again at every reuse (by index).
    restat: Vec<usize>,
}

/// The listings kept, by the exact bytes of the path they were asked by.
#[derive(Default)]
pub(super) struct Listings {
    by_path: HashMap<Box<[u8]>, Listing>,
}

impl Listings {
    pub(super) fn clear(&mut self) {
        self.by_path.clear();
    }

    /// Drop every listing of, or depending on, one of `dirs` (an event named it, or its
    /// watch went).
    pub(super) fn drop_dirs(&mut self, dirs: &[(u64, u64)]) {
        if dirs.is_empty() || self.by_path.is_empty() {
            return;
        }
        self.by_path
            .retain(|_, l| !dirs.contains(&l.id) && !l.deps.iter().any(|d| dirs.contains(d)));
    }

    pub(super) fn len(&self) -> usize {
        self.by_path.len()
    }
}

/// Whether a file's content or allocation may change without an event in its directory.
fn restat(meta: &std::fs::Metadata) -> bool {
    meta.is_file()
        && (meta.nlink() > 1
            || meta.size() >= RESTAT_BYTES as u64
            || meta.blocks().saturating_mul(512) < meta.size())
}

impl MemoInner {
    /// A kept listing of `path`, now the directory `id`, with the entries to `lstat` again.
    fn listing(&mut self, path: &[u8], id: (u64, u64)) -> Option<(Vec<Entry>, Vec<usize>)> {
        let gone = self.watches.take_gone();
        self.listings.drop_dirs(&gone);
        let l = self.listings.by_path.get(path)?;
        let stands = l.id == id
            && self.watches.watched(id)
            && l.deps.iter().all(|d| self.watches.watched(*d));
        if !stands {
            self.listings.by_path.remove(path);
            return None;
        }
        Some((l.entries.clone(), l.restat.clone()))
    }
}

impl fsread::Listings for DirMemo {
    fn read_dir(&self, path: &Path) -> std::io::Result<Vec<Entry>> {
        let key = path.as_os_str().as_bytes();
        // The directory the path leads to now (following a symlink, as the listing does).
        if let Ok(st) = rustix::fs::stat(path) {
            let kept = lock(&self.inner).listing(key, dev_ino(&st));
            if let Some((mut entries, restat)) = kept {
                if restat_all(path, dev_ino(&st), &mut entries, &restat) {
                    lock(&self.inner).stats.listings_reused += 1;
                    return Ok(entries);
                }
            }
        }
        self.list_fresh(path)
    }
}

/// `lstat` the entries at `restat` of the directory `id` at `path` again; false when one is
/// gone or cannot be. Each is asked relative to the directory (its path is looked up once), and
/// an entry whose `lstat` says what the kept one does keeps it; one that changed is read anew.
fn restat_all(path: &Path, id: (u64, u64), entries: &mut [Entry], restat: &[usize]) -> bool {
    if restat.is_empty() {
        return true;
    }
    let Ok(dir) = fsread::open_noatime(path, OFlags::DIRECTORY) else {
        return false;
    };
    if rustix::fs::fstat(&dir).map(|st| dev_ino(&st)).ok() != Some(id) {
        return false;
    }
    for &i in restat {
        let Some(e) = entries.get_mut(i) else {
            return false;
        };
        let now = rustix::fs::statat(&dir, e.name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW);
        match now {
            Ok(st) if same(&st, &e.meta) => {}
            Ok(_) => match std::fs::symlink_metadata(&e.path) {
                Ok(m) => e.meta = m,
                Err(_) => return false,
            },
            Err(_) => return false,
        }
    }
    true
}

/// Whether a fresh `lstat` says of a file all a kept one says that a judge may read: what it
/// is, its owner and mode, links, size, allocation and times of change.
#[allow(clippy::unnecessary_cast)] // the `stat` fields' widths differ between platforms
fn same(st: &rustix::fs::Stat, m: &std::fs::Metadata) -> bool {
    let now = [
        st.st_dev as i128,
        st.st_ino as i128,
        st.st_mode as i128,
        st.st_nlink as i128,
        st.st_uid as i128,
        st.st_gid as i128,
        st.st_size as i128,
        st.st_blocks as i128,
        st.st_mtime as i128,
        st.st_mtime_nsec as i128,
        st.st_ctime as i128,
        st.st_ctime_nsec as i128,
    ];
    let kept = [
        m.dev() as i128,
        m.ino() as i128,
        m.mode() as i128,
        m.nlink() as i128,
        m.uid() as i128,
        m.gid() as i128,
        m.size() as i128,
        m.blocks() as i128,
        m.mtime() as i128,
        m.mtime_nsec() as i128,
        m.ctime() as i128,
        m.ctime_nsec() as i128,
    ];
    now == kept
}

/// A `stat`'s device and inode.
#[allow(clippy::unnecessary_cast)] // `st_dev` is narrower on macOS
fn dev_ino(st: &rustix::fs::Stat) -> (u64, u64) {
    (st.st_dev as u64, st.st_ino as u64)
}

impl DirMemo {
    /// List `path` from the file system, watched before it is read, and keep the listing.
    fn list_fresh(&self, path: &Path) -> std::io::Result<Vec<Entry>> {
        let fd = fsread::open_noatime(path, OFlags::DIRECTORY)?;
        let id = dev_ino(&rustix::fs::fstat(&fd)?);
        let watched = {
            let mut m = lock(&self.inner);
            m.stats.listings_read += 1;
            m.listings.by_path.remove(path.as_os_str().as_bytes());
            if m.listings.len() >= LISTINGS_MAX {
                return fsread::read_dir_from(fd, path);
            }
            // As for the walk's directories: until this watch stands, a name moved in is seen
            // by no event (the process table's memo, `scan::memo`, counts on this).
            if !m.watches.watched(id) {
                m.stats.new_dirs += 1;
            }
            match m.watches.add(fd.as_fd(), id) {
                Ok(replaced) => {
                    if let Some(old) = replaced {
                        m.drop_node(old);
                    }
                    true
                }
                Err(()) => false,
            }
        };
        let entries = fsread::read_dir_from(fd, path)?;
        if !watched {
            return Ok(entries);
        }
        let mut m = lock(&self.inner);
        let (mut deps, mut again) = (Vec::new(), Vec::new());
        for (i, e) in entries.iter().enumerate() {
            if e.is_dir() {
                let sub = (e.meta.dev(), e.meta.ino());
                // Nothing else ran on the memo since the `lstat`: watched then as now.
                if m.watches.watched(sub) {
                    deps.push(sub);
                } else {
                    again.push(i);
                }
            } else if restat(&e.meta) {
                again.push(i);
            }
        }
        let gone = m.watches.take_gone();
        m.listings.drop_dirs(&gone);
        if m.watches.watched(id) && !gone.contains(&id) {
            m.listings.by_path.insert(
                path.as_os_str().as_bytes().into(),
                Listing {
                    id,
                    entries: entries.clone(),
                    deps,
                    restat: again,
                },
            );
        }
        Ok(entries)
    }
}
