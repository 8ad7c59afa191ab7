//! VM processes of both products: Linux through `/proc`, macOS through a `ps` output parser.

use std::path::PathBuf;

pub mod linux;
pub mod macos;
pub mod shape;

/// A file a process holds open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenFile {
    /// The link target (without the ` (deleted)` suffix).
    pub path: PathBuf,
    pub deleted: bool,
    pub dev: u64,
    pub ino: u64,
    /// `st_blocks`×512 of the open file.
    pub allocated: u64,
}

/// One process as read from the OS.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RawProcess {
    pub pid: u32,
    pub ppid: u32,
    pub uid: u32,
    /// Linux: `/proc/<pid>/stat` field 22 (clock ticks since boot). macOS: seconds since epoch.
    pub start_time: u64,
    pub comm: String,
    pub argv: Vec<String>,
    /// `/proc/<pid>/exe` when readable.
    pub exe: Option<PathBuf>,
    /// `HOME` from `/proc/<pid>/environ` when readable.
    pub env_home: Option<PathBuf>,
    /// `SMOLVM_DATA_DIR` from the environment when readable.
    pub env_smolvm_data_dir: Option<PathBuf>,
    /// Open files (Linux `/proc/<pid>/fd`), when readable.
    pub open_files: Vec<OpenFile>,
    pub fds_readable: bool,
}
