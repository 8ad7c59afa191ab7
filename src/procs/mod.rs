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
/// maps need not be read to know it.
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

/// Every process's identity and command line, and everything of the processes shaped like a
/// VMM: what a scan needs while it has no path to judge (the rest of the table is read by
/// [`list`] the first time it has one). macOS reads the same as [`list`] (`ps` is one read).
pub fn list_identities() -> Vec<RawProcess> {
    os::list_identities()
}
