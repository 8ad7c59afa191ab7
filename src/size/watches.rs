//! The directory memo's inotify watches, on two descriptors so that busy VMs cannot overflow
//! them between scans.
//!
//! * **Names** (`names`): a lasting watch per remembered directory for entries created,
//!   deleted, moved or re-attributed, and the directory itself deleted or moved. Nothing a VM
//!   does while it writes its disk raises one of these.
//! * **Content** (`content`): a one-shot watch (`IN_ONESHOT`) per remembered directory for a
//!   file in it written or truncated (`IN_MODIFY`). Its first event drops the directory's memo,
//!   so later writes have nothing left to tell until the next scan reads the directory again,
//!   which arms it again (before reading, as every watch is added).
//!
//! Each descriptor is read only when a scan starts. With one descriptor reporting every write,
//! two VMs writing their disks in remembered directories alternate, the kernel merges an event
//! only with the last one queued, and after about 7 minutes the queue (16,384 events by
//! default) overflowed: the memo was then dropped whole and the next rescan walked everything.
//! Now writes queue at most two events per directory per scan (the event and the watch's
//! removal), however long the VMs write.

use std::collections::HashMap;

use rustix::fd::BorrowedFd;
#[cfg(any(target_os = "linux", target_os = "android"))]
use rustix::fd::OwnedFd;

/// A directory by (device, inode).
type Dir = (u64, u64);

/// What the queues held since the last drain.
#[cfg_attr(not(any(target_os = "linux", target_os = "android")), allow(dead_code))]
pub(super) enum Drained {
    /// An event was lost (a queue overflowed) or a queue could not be read: trust nothing.
    Lost,
    /// Each directory an event named, and whether a name moved in it (or it went).
    Changed(Vec<(Dir, bool)>),
}

/// The two descriptors and which directory each watch is on.
#[derive(Default)]
pub(super) struct Watches {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    names: Option<OwnedFd>,
    #[cfg(any(target_os = "linux", target_os = "android"))]
    content: Option<OwnedFd>,
    /// Names watch descriptor → directory, and back.
    wds: HashMap<i32, Dir>,
    by_dir: HashMap<Dir, i32>,
    /// Content watch descriptor → directory (armed, not fired yet), and back.
    content_wds: HashMap<i32, Dir>,
    content_by_dir: HashMap<Dir, i32>,
    /// Directories whose names watch went since [`Watches::take_gone`] (removed, or its
    /// descriptor now another directory's): whatever relied on it stands no more.
    gone: Vec<Dir>,
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn names_flags() -> rustix::fs::inotify::WatchFlags {
    use rustix::fs::inotify::WatchFlags as W;
    W::CREATE
        | W::DELETE
        | W::DELETE_SELF
        | W::MOVE_SELF
        | W::MOVED_FROM
        | W::MOVED_TO
        | W::ATTRIB
        | W::ONLYDIR
        | W::EXCL_UNLINK
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn content_flags() -> rustix::fs::inotify::WatchFlags {
    use rustix::fs::inotify::WatchFlags as W;
    W::MODIFY | W::ONESHOT | W::ONLYDIR | W::EXCL_UNLINK
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn init() -> Option<OwnedFd> {
    use rustix::fs::inotify::CreateFlags;
    rustix::fs::inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK).ok()
}

impl Watches {
    /// Whether directory `id` has its names watch.
    pub(super) fn watched(&self, id: Dir) -> bool {
        self.by_dir.contains_key(&id)
    }

    /// Watch the directory open as `fd` (before it is read) on both descriptors. `Ok` with the
    /// directory a reused watch descriptor named before (its memo is stale), `Err` when it
    /// cannot be watched.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    pub(super) fn add(&mut self, fd: BorrowedFd<'_>, id: Dir) -> Result<Option<Dir>, ()> {
        use std::os::fd::AsRawFd;
        if self.names.is_none() {
            self.names = init();
        }
        if self.content.is_none() {
            self.content = init();
        }
        let (Some(names), Some(content)) = (self.names.as_ref(), self.content.as_ref()) else {
            return Err(());
        };
        // The descriptor's own inode, whatever its path has become.
        let path = format!("/proc/self/fd/{}", fd.as_raw_fd());
        let wd =
            rustix::fs::inotify::add_watch(names, path.as_str(), names_flags()).map_err(|_| ())?;
        let cwd = match rustix::fs::inotify::add_watch(content, path.as_str(), content_flags()) {
            Ok(c) => c,
            Err(_) => {
                let _ = rustix::fs::inotify::remove_watch(names, wd);
                self.forget_names(wd);
                return Err(());
            }
        };
        if let Some(old) = self.content_wds.insert(cwd, id) {
            if old != id {
                self.content_by_dir.remove(&old);
            }
        }
        self.content_by_dir.insert(id, cwd);
        let replaced = self.wds.insert(wd, id).filter(|old| *old != id);
        if let Some(old) = replaced {
            self.by_dir.remove(&old);
            self.gone.push(old);
        }
        self.by_dir.insert(id, wd);
        Ok(replaced)
    }

    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    pub(super) fn add(&mut self, _fd: BorrowedFd<'_>, _id: Dir) -> Result<Option<Dir>, ()> {
        Err(())
    }

    #[cfg(any(target_os = "linux", target_os = "android"))]
    fn forget_names(&mut self, wd: i32) {
        if let Some(id) = self.wds.remove(&wd) {
            self.by_dir.remove(&id);
            self.gone.push(id);
        }
    }

    /// Stop watching directory `id`.
    pub(super) fn remove(&mut self, id: Dir) {
        if let Some(wd) = self.by_dir.remove(&id) {
            self.gone.push(id);
            self.wds.remove(&wd);
            #[cfg(any(target_os = "linux", target_os = "android"))]
            if let Some(ino) = &self.names {
                let _ = rustix::fs::inotify::remove_watch(ino, wd);
            }
        }
        if let Some(wd) = self.content_by_dir.remove(&id) {
            self.content_wds.remove(&wd);
            #[cfg(any(target_os = "linux", target_os = "android"))]
            if let Some(ino) = &self.content {
                let _ = rustix::fs::inotify::remove_watch(ino, wd);
            }
        }
    }

    /// The directories whose names watch went since the last call.
    pub(super) fn take_gone(&mut self) -> Vec<Dir> {
        std::mem::take(&mut self.gone)
    }

    /// Drop every watch (closing the descriptors drops them at once).
    pub(super) fn clear(&mut self) {
        *self = Watches::default();
    }

    /// Read every pending event of both descriptors.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    pub(super) fn drain(&mut self) -> Drained {
        use rustix::fs::inotify::ReadFlags;
        // Events that change which names a watched tree holds (content and attributes aside).
        let moved = ReadFlags::CREATE
            | ReadFlags::DELETE
            | ReadFlags::DELETE_SELF
            | ReadFlags::MOVE_SELF
            | ReadFlags::MOVED_FROM
            | ReadFlags::MOVED_TO
            | ReadFlags::IGNORED
            | ReadFlags::UNMOUNT;
        let Ok(names) = read(self.names.as_ref()) else {
            return Drained::Lost;
        };
        let Ok(content) = read(self.content.as_ref()) else {
            return Drained::Lost;
        };
        let mut out = Vec::new();
        for (wd, f) in names {
            let Some(&id) = self.wds.get(&wd) else {
                continue;
            };
            if f.contains(ReadFlags::IGNORED) {
                // The directory was deleted or its file system unmounted.
                self.forget_names(wd);
            }
            out.push((id, f.intersects(moved)));
        }
        for (wd, _) in content {
            // One event, then the kernel removes the one-shot watch (`IN_IGNORED`).
            if let Some(id) = self.content_wds.remove(&wd) {
                if self.content_by_dir.get(&id) == Some(&wd) {
                    self.content_by_dir.remove(&id);
                }
                out.push((id, false));
            }
        }
        Drained::Changed(out)
    }

    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    pub(super) fn drain(&mut self) -> Drained {
        Drained::Changed(Vec::new())
    }
}

/// Every pending event of `ino` (watch descriptor, flags); `Err` when one was lost or the
/// queue could not be read.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn read(ino: Option<&OwnedFd>) -> Result<Vec<(i32, rustix::fs::inotify::ReadFlags)>, ()> {
    use rustix::fs::inotify::ReadFlags;
    let Some(ino) = ino else {
        return Ok(Vec::new());
    };
    let mut buf = vec![std::mem::MaybeUninit::<u8>::uninit(); 64 * 1024];
    let mut r = rustix::fs::inotify::Reader::new(ino, &mut buf);
    let mut out = Vec::new();
    loop {
        match r.next() {
            Ok(ev) => {
                if ev.events().contains(ReadFlags::QUEUE_OVERFLOW) {
                    return Err(());
                }
                out.push((ev.wd(), ev.events()));
            }
            Err(rustix::io::Errno::AGAIN) => return Ok(out),
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => return Err(()),
        }
    }
}
