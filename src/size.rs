//! Honest sizes: allocated (`st_blocks`×512) and apparent bytes, hard links once, symlinks never
//! followed, file systems never crossed, atime never touched.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::model::FileIdentity;

/// What a walk of one path measured.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Measure {
    pub apparent: u64,
    pub allocated: u64,
    pub files: u64,
    pub dirs: u64,
    /// Directories on another device below the path: never entered.
    pub mounts: Vec<PathBuf>,
    /// Entries that could not be read.
    pub errors: u64,
    /// Newest mtime (ns since epoch) of anything in the tree, the root included.
    pub newest_mtime_ns: i128,
    /// Identity of the path itself (`lstat`).
    pub identity: Option<FileIdentity>,
}

/// Measures paths, counting each (device, inode) once across all calls.
#[derive(Debug, Default)]
pub struct Sizer {
    seen: HashSet<(u64, u64)>,
}

impl Sizer {
    pub fn new() -> Self {
        Self::default()
    }

    /// Measure a file or a directory tree. A symlink counts as itself.
    pub fn measure(&mut self, _path: &Path) -> std::io::Result<Measure> {
        let _ = &self.seen;
        todo!("size: measure")
    }
}

/// `lstat` identity of a path.
pub fn identity(_path: &Path) -> std::io::Result<FileIdentity> {
    todo!("size: identity")
}
