//! VM processes of both products: Linux through `/proc`, macOS through a `ps` output parser.

use std::path::PathBuf;

pub mod exits;
#[cfg(target_os = "linux")]
pub mod linux;
pub mod macos;
#[cfg(not(target_os = "linux"))]
pub(crate) mod other;
pub mod shape;

// What the rest of the crate asks of this OS's process table: `/proc` on Linux, the few
// stand-ins of `other` elsewhere.
#[cfg(target_os = "linux")]
pub(crate) use linux as os;
#[cfg(not(target_os = "linux"))]
pub(crate) use other as os;

#[cfg(all(test, target_os = "linux"))]
pub(crate) use shape::{held_deleted_bytes, names_path_exactly};

/// A file a process holds open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenFile {
    /// The link target (without the ` (deleted)` suffix).
    pub path: PathBuf,
    /// The file was unlinked while held open (its blocks are freed only when it is closed).
    pub deleted: bool,
    /// Device of the open file (`st_dev`).
    pub dev: u64,
    /// Inode of the open file: with `dev`, its identity, also once deleted.
    pub ino: u64,
    /// `st_blocks`×512 of the open file.
    pub allocated: u64,
}

/// One process as read from the OS.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RawProcess {
    /// Process id: with `start_time`, its identity.
    pub pid: u32,
    /// Parent process id (1: re-parented to init, its starter gone).
    pub ppid: u32,
    /// Real user id owning it.
    pub uid: u32,
    /// Linux: `/proc/<pid>/stat` field 22 (clock ticks since boot). macOS: seconds since epoch.
    pub start_time: u64,
    /// The kernel's command name (Linux `/proc/<pid>/comm`; libkrun renames its VMM's).
    pub comm: String,
    /// The command line, one argument per element.
    pub argv: Vec<String>,
    /// `/proc/<pid>/exe` when readable. On Linux read only for a process shaped like a VMM
    /// (nothing else is decided by it).
    pub exe: Option<PathBuf>,
    /// `HOME` from `/proc/<pid>/environ` when readable. On Linux read only for a process
    /// shaped like a VMM: it decides whose VMM it is, and nothing else.
    pub env_home: Option<PathBuf>,
    /// `SMOLVM_DATA_DIR` from the environment when readable (like `env_home`).
    pub env_smolvm_data_dir: Option<PathBuf>,
    /// Open files (Linux `/proc/<pid>/fd`), when readable.
    pub open_files: Vec<OpenFile>,
    /// Whether its open files could be read (otherwise `open_files` is a lower bound).
    pub fds_readable: bool,
    /// Working directory and root directory (Linux `/proc/<pid>/{cwd,root}`), when readable.
    pub cwd: Option<PathBuf>,
    /// Its root directory (see `cwd`), when readable.
    pub root: Option<PathBuf>,
    /// Files mapped into memory (Linux `/proc/<pid>/maps`), each once, when readable.
    pub mapped: Vec<PathBuf>,
    /// Read from macOS `ps` text: argv boundaries were rebuilt from spaces (see
    /// [`macos::parse_ps_output`]) and `comm` is argv[0]'s basename (macOS has no comm rename).
    pub from_ps: bool,
    /// Linux: the inode number `/proc` listed for this process's directory when it was read (0
    /// when not known). `/proc` numbers each directory it makes afresh, and a directory is made
    /// again once its process has ended: the same number for the same pid later in a scan is
    /// the same process, without reading its `stat` again. Another number tells nothing (the
    /// directory may only have left the kernel's cache).
    pub proc_ino: u64,
}

/// Every process of this machine: `/proc` on Linux; `ps` plus `lsof +L1` on macOS (processes
/// only, plus the deleted files they hold); nothing elsewhere.
pub fn list() -> Vec<RawProcess> {
    os::list_processes()
}

/// What the kernel says of who holds a file open ([`holders`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Holders {
    /// No open description of it (of anything below a directory) exists anywhere.
    Nobody,
    /// One does: a process holds or maps it, whoever it is.
    Someone,
    /// The kernel was not asked or cannot say (another owner's file, no leases on that file
    /// system or platform, the budget spent, the file changed while asked).
    CannotTell,
}

/// Whether anything at `path` (a regular file, or any regular file below a directory) is open
/// anywhere, by the kernel's own count (Linux leases; "cannot tell" elsewhere), asking about at
/// most `budget` files. Nobody: no process holds or maps it, and the table's open files and
/// maps need not be read to know it. ([`held_below`] also names the files.)
pub(crate) fn holders(
    path: &std::path::Path,
    devino: Option<(u64, u64)>,
    budget: &mut usize,
) -> Holders {
    os::holders(path, devino, budget)
}

/// Whether any open description of the file open at `fd` exists other than `fd`'s own, by the
/// kernel's count (Linux leases; "cannot tell" elsewhere): what the executor asks of a disk it
/// holds open itself.
pub(crate) fn holders_of_open(fd: std::os::fd::BorrowedFd<'_>) -> Holders {
    os::holders_of_open(fd)
}

/// A file a process holds open or maps, known by its identity alone: one kernel call per
/// descriptor (`stat` through `/proc/<pid>/fd/N`) or per mapping (`PROCMAP_QUERY` on
/// `/proc/<pid>/maps`, without the name). Its name is read only when a question needs it
/// ([`held_names`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct HeldRef {
    /// Inode of the file.
    pub ino: u64,
    /// Its device: `st_dev` for a descriptor, the file system's for a mapping (which can differ
    /// on file systems such as btrfs: mappings are matched by inode).
    pub dev: u64,
    /// The process holding it.
    pub pid: u32,
    /// The process's start time, to read the name from the same process.
    pub start_time: u64,
    /// How it holds it.
    pub how: HeldHow,
}

/// How a process holds a [`HeldRef`]. Only Linux's table is read by identity: elsewhere
/// nothing makes one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) enum HeldHow {
    /// Open as descriptor `fd`; `linked`: the file still has a name (an unlinked one is held by
    /// its identity alone).
    Fd { fd: u32, linked: bool },
    /// Mapped (at least) at address `addr`.
    Map { addr: u64 },
}

/// What the table holds besides the identities ([`list_identities`]): what naming the holders
/// of a held file needs ([`holdings`]).
#[derive(Debug, Default)]
pub(crate) struct Holdings {
    /// Processes read whole: those the identities did not list as they are now (started since,
    /// or their pid reused), and everything where descriptors cannot be read one by one.
    pub whole: Vec<RawProcess>,
    /// The regular files every other process holds open and the files it maps (each once),
    /// by identity, without names, sorted.
    pub held: Vec<HeldRef>,
    /// The mapped files of a process whose mappings could only be read as text (a kernel
    /// without `PROCMAP_QUERY`): its pid and the files, named.
    pub mapped: Vec<(u32, Vec<PathBuf>)>,
}

/// The rest of the table after `identities`: every process's open regular files and mapped
/// files by identity (not by name); a process `identities` does not have as it is now is
/// read whole. VMM-shaped processes and kernel threads are not read again (the identities hold
/// everything of them). Elsewhere than Linux: the whole table.
pub(crate) fn holdings(identities: &[RawProcess]) -> Holdings {
    os::holdings(identities)
}

/// The name of each of `held` (as the kernel writes it, without a ` (deleted)` suffix), read
/// now; `None` where the process, the descriptor or the mapping is gone or now holds another
/// file.
pub(crate) fn held_names(held: &[HeldRef]) -> Vec<Option<PathBuf>> {
    os::held_names(held)
}

/// The devices (`st_dev`) of every file whose name, as this process sees names, can be `path`
/// or lie below it: the file system holding `path` and every one mounted below it. `None` when
/// that cannot be told by device (a file system whose files need not have its device, such as
/// btrfs subvolumes or overlayfs; an unreadable mount table; a path that cannot be resolved).
pub(crate) fn devices_below(path: &std::path::Path) -> Option<Vec<u64>> {
    os::devices_below(path)
}

/// The regular files at or below a path that the kernel says are held ([`held_below`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct HeldBelow {
    /// Their identities (device, inode), sorted.
    pub files: Vec<(u64, u64)>,
    /// Every file there was asked about and answered (otherwise `files` is a lower bound).
    pub complete: bool,
}

impl HeldBelow {
    /// The kernel's answer for the whole path, as [`holders`] gives it.
    pub(crate) fn said(&self) -> Holders {
        if !self.files.is_empty() {
            Holders::Someone
        } else if self.complete {
            Holders::Nobody
        } else {
            Holders::CannotTell
        }
    }
}

/// [`holders`] of `path`, naming the files: the identity of every regular file at or below it
/// that an open description anywhere holds (asking about at most `budget` files and
/// directories), and whether every one was asked about.
pub(crate) fn held_below(
    path: &std::path::Path,
    devino: Option<(u64, u64)>,
    budget: &mut usize,
) -> HeldBelow {
    os::held_below(path, devino, budget)
}

/// Every process's identity and command line, and everything of the processes shaped like a
/// VMM: what a scan needs while it has no path to judge (the rest of the table is read by
/// [`list`] the first time it has one). macOS reads the same as [`list`] (`ps` is one read).
pub fn list_identities() -> Vec<RawProcess> {
    os::list_identities()
}
