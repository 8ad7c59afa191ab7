//! Which files are locked right now, read from `/proc/locks` (Linux) without taking any lock.

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Mutex, OnceLock};
use std::thread::JoinHandle;

/// (device major, device minor, inode) of every file with a POSIX or flock lock.
///
/// Reading `/proc/locks` takes the kernel's lock-table semaphore for writing, which waits for
/// an RCU grace period: about 10 µs right after another read, but 5 to 40 ms of waiting (no
/// CPU) after the machine was idle. [`HeldLocks::start`] therefore reads it on a thread of its
/// own while the scan does other work, and a question waits for it only when it must: a lock
/// lives on an open file description, so a file that nothing anywhere has open is locked by
/// nobody, which the kernel tells at once ([`HeldLocks::asking`]; issue 40: the app's rescans
/// of a HOME full of machines' `vm.lock` files waited for the table every time). A scan that
/// never asks (no lock file anywhere) never waits.
#[derive(Debug, Default)]
pub(crate) struct HeldLocks {
    table: OnceLock<Table>,
    pending: Mutex<Option<JoinHandle<Table>>>,
    /// Whether any open description of the file at a path with this identity may exist (false:
    /// certainly none, by the kernel's own count), asked before the table.
    opened: Option<OpenedAnywhere>,
    /// `/proc/locks` could be opened (reading it then takes its wait).
    openable: bool,
}

/// Whether any open description of the file at `path`, with this device and inode, may exist
/// anywhere: `false` only when certainly none does.
pub(crate) type OpenedAnywhere = fn(&Path, (u64, u64)) -> bool;

#[derive(Debug, Default)]
struct Table {
    held: HashSet<(u32, u32, u64)>,
    /// Whether the lock table could be read at all.
    readable: bool,
}

impl HeldLocks {
    /// Read the system lock table now. On systems without `/proc/locks` nothing is readable.
    #[cfg(all(test, target_os = "linux"))]
    pub fn read() -> Self {
        Self::of(read_table())
    }

    /// Start reading the system lock table in the background; the first question waits for
    /// it (or reads it, if no thread could be started).
    pub(crate) fn start() -> Self {
        let pending = std::thread::Builder::new()
            .name("smolsweep-locks".into())
            .spawn(read_table)
            .ok();
        HeldLocks {
            table: OnceLock::new(),
            pending: Mutex::new(pending),
            opened: None,
            openable: std::fs::File::open(LOCKS).is_ok(),
        }
    }

    /// Ask `opened` first whether a file is open anywhere at all: one nothing has open is not
    /// locked, and the table is not waited for.
    pub(crate) fn asking(mut self, opened: OpenedAnywhere) -> Self {
        self.opened = Some(opened);
        self
    }

    #[cfg(test)]
    fn of(t: Table) -> Self {
        let table = OnceLock::new();
        let openable = t.readable;
        let _ = table.set(t);
        HeldLocks {
            table,
            pending: Mutex::new(None),
            opened: None,
            openable,
        }
    }

    fn table(&self) -> &Table {
        self.table.get_or_init(|| {
            let pending = crate::basics::lock(&self.pending).take();
            pending
                .and_then(|h| h.join().ok())
                .unwrap_or_else(read_table)
        })
    }

    /// Whether the lock table could be read at all (once read; before, whether it opens: a
    /// read then succeeds).
    pub(crate) fn readable(&self) -> bool {
        match self.table.get() {
            Some(t) => t.readable,
            None => self.openable,
        }
    }

    /// Parse `/proc/locks` text, e.g. `1: FLOCK  ADVISORY  WRITE 1234 fd:00:5678 0 EOF`
    /// (blocked waiters, lines with `->`, are skipped).
    #[cfg(test)]
    pub fn parse(text: &str) -> Self {
        Self::of(parse_table(text))
    }

    /// Whether the file at `path`, with this `st_dev` and inode, is locked.
    pub(crate) fn is_held(&self, path: &Path, dev: u64, ino: u64) -> bool {
        if self.opened.is_some_and(|opened| !opened(path, (dev, ino))) {
            return false;
        }
        let (maj, min) = linux_major_minor(dev);
        self.table().held.contains(&(maj, min, ino))
    }
}

/// A Linux `st_dev` split into the major and minor numbers `/proc/locks` prints (glibc's
/// `gnu_dev_major` / `gnu_dev_minor`): plain arithmetic, compiled the same everywhere.
fn linux_major_minor(dev: u64) -> (u32, u32) {
    let major = ((dev >> 32) & 0xffff_f000) | ((dev >> 8) & 0x0000_0fff);
    let minor = ((dev >> 12) & 0xffff_ff00) | (dev & 0x0000_00ff);
    (major as u32, minor as u32)
}

/// The system lock table (Linux).
const LOCKS: &str = "/proc/locks";

fn read_table() -> Table {
    match std::fs::read_to_string(LOCKS) {
        Ok(text) => Table {
            readable: true,
            ..parse_table(&text)
        },
        Err(_) => Table::default(),
    }
}

fn parse_table(text: &str) -> Table {
    let mut held = HashSet::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.get(1) == Some(&"->") {
            continue;
        }
        // The device triple is the first field with two colons after the pid.
        if let Some(dev) = fields.iter().skip(4).find(|f| f.matches(':').count() == 2) {
            let mut it = dev.split(':');
            let (Some(maj), Some(min), Some(ino)) = (it.next(), it.next(), it.next()) else {
                continue;
            };
            if let (Ok(maj), Ok(min), Ok(ino)) = (
                u32::from_str_radix(maj, 16),
                u32::from_str_radix(min, 16),
                ino.parse::<u64>(),
            ) {
                held.insert((maj, min, ino));
            }
        }
    }
    Table {
        held,
        readable: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_locks_lines() {
        let h = HeldLocks::parse(
            "1: FLOCK  ADVISORY  WRITE 4242 fd:01:123 0 EOF\n\
             1: -> FLOCK  ADVISORY  WRITE 4243 fd:01:999 0 EOF\n\
             2: POSIX  ADVISORY  READ 77 08:02:55 0 EOF\n",
        );
        assert!(h.table().held.contains(&(0xfd, 1, 123)));
        assert!(h.table().held.contains(&(8, 2, 55)));
        assert!(!h.table().held.contains(&(0xfd, 1, 999)));
    }

    #[test]
    fn splits_a_linux_dev_as_the_kernel_prints_it() {
        // makedev(0xfd, 1) and makedev(259, 0x12345) as glibc encodes them.
        assert_eq!(linux_major_minor(0xfd01), (0xfd, 1));
        assert_eq!(linux_major_minor(0x1231_0345), (259, 0x12345));
    }

    // `/proc/locks`: Linux only.
    #[cfg(target_os = "linux")]
    #[test]
    fn sees_a_real_flock_and_its_release() {
        use std::os::unix::fs::MetadataExt;
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("x.lock");
        let f = std::fs::File::create(&p).unwrap();
        let m = std::fs::metadata(&p).unwrap();
        rustix::fs::flock(&f, rustix::fs::FlockOperation::NonBlockingLockExclusive).unwrap();
        assert!(HeldLocks::read().is_held(&p, m.dev(), m.ino()));
        assert!(HeldLocks::start().is_held(&p, m.dev(), m.ino()));
        drop(f);
        assert!(!HeldLocks::read().is_held(&p, m.dev(), m.ino()));
        assert!(!HeldLocks::start().is_held(&p, m.dev(), m.ino()));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_lock_file_nothing_has_open_is_not_locked_and_the_table_is_not_waited_for() {
        use std::os::unix::fs::MetadataExt;
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("vm.lock");
        let f = std::fs::File::create(&p).unwrap();
        let m = std::fs::metadata(&p).unwrap();
        rustix::fs::flock(&f, rustix::fs::FlockOperation::NonBlockingLockExclusive).unwrap();
        // Nobody has it open, says the question: the table is not read.
        let closed = HeldLocks::parse("").asking(|_, _| false);
        assert!(!closed.is_held(&p, m.dev(), m.ino()));
        // Open somewhere: the table tells.
        let open = HeldLocks::read().asking(|_, _| true);
        assert!(open.is_held(&p, m.dev(), m.ino()));
        // Through the scan's question (the kernel's count): held while the lock's file is open,
        // not once it is closed.
        let asked = || HeldLocks::start().asking(crate::scan::lock_file_opened);
        assert!(asked().is_held(&p, m.dev(), m.ino()));
        assert!(asked().readable());
        drop(f);
        assert!(!asked().is_held(&p, m.dev(), m.ino()));
    }
}
