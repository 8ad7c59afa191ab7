//! Just enough of the qcow2 header to follow a backing chain, parsed here rather than by running
//! `qemu-img` (which takes locks and is slow).

use std::path::{Path, PathBuf};

/// The backing file name recorded in a qcow2 header, or `None` for a non-qcow2 file or an image
/// without a backing file.
pub fn backing_file(_path: &Path) -> std::io::Result<Option<String>> {
    todo!("qcow2: backing_file")
}

/// The backing chain of an image: each backing file resolved (relative names against the
/// directory of the image that names them), up to `max_depth` links; stops at a missing file.
pub fn backing_chain(_path: &Path, _max_depth: usize) -> Vec<PathBuf> {
    todo!("qcow2: backing_chain")
}
