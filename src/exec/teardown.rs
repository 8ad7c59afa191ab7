//! The uninstall's own actions, carried out by the one executor: removing a product root (or an
//! entry of one) as a whole, a directory once it is empty, a launcher symlink, the PATH block.
//!
//! A whole root is deleted through the same descriptor-based primitive as every leftover
//! ([`super::delete::delete_path`]), bounded by the directory that holds it.

use std::path::{Path, PathBuf};

use super::confirm::Confirmed;
use super::delete::{self, delete_outcome, IdentityCheck, Target};
use super::{rcfile, remove};
use crate::model::FileIdentity;
use crate::plan::Plan;
use crate::record::Outcome;

/// Remove `path` (bounded by `root`) if it is still what the plan saw (device, inode, type; a
/// tree changes its sizes and times while the machines in it are deleted). Anything changed
/// inside it after this moment is left in place.
pub(super) fn remove_tree(
    token: &Confirmed,
    plan: &Plan,
    path: &Path,
    root: &Path,
    planned: Option<&FileIdentity>,
) -> Outcome {
    let Ok(now) = delete::identity_of(path) else {
        return Outcome::skipped("already gone");
    };
    if let Some(was) = planned {
        if (was.dev, was.ino, was.file_type) != (now.dev, now.ino, now.file_type) {
            return Outcome::skipped(
                "something else is at this path than when the plan was made; left alone",
            );
        }
    }
    let bound: PathBuf = if path == root {
        match path.parent() {
            Some(p) => p.to_path_buf(),
            None => return Outcome::failed("no parent directory"),
        }
    } else {
        root.to_path_buf()
    };
    let now_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i128)
        .unwrap_or(0);
    let t = Target {
        root: &bound,
        path,
        identity: &now,
        check: IdentityCheck::DevInoType,
        home: &plan.home,
        roots: &plan.roots,
        scanned_at_ns: Some(now_ns + 1_000_000_000),
    };
    delete_outcome(delete::delete_path(token, &t))
}

pub(super) fn remove_dir_if_empty(dir: &Path, home: &Path) -> Outcome {
    match remove::remove_dir_if_empty(dir, home) {
        Ok(true) => Outcome::done("removed"),
        Ok(false) if !remove::exists(dir) => Outcome::skipped("already gone"),
        Ok(false) => Outcome::skipped("kept: other files are still in it"),
        Err(e) => Outcome::failed(e.to_string()),
    }
}

pub(super) fn remove_launcher(link: &Path, target: &Path, home: &Path) -> Outcome {
    match std::fs::symlink_metadata(link) {
        Err(_) => return Outcome::skipped("already gone"),
        Ok(m) if !m.file_type().is_symlink() => {
            return Outcome::skipped("no longer a symlink; left alone")
        }
        Ok(_) => {}
    }
    match std::fs::read_link(link) {
        Ok(t) if t == target => {}
        _ => return Outcome::skipped("points somewhere else now; left alone"),
    }
    let Some(dir) = link.parent() else {
        return Outcome::failed("no parent directory");
    };
    match remove::remove_path(link, dir, home) {
        Ok(_) => Outcome::done("removed"),
        Err(e) => Outcome::failed(e.to_string()),
    }
}

/// Prefix of a done PATH-block removal's detail; the backup's path follows.
pub(crate) const BACKED_UP_TO: &str = "backed up to ";

pub(super) fn remove_path_block(file: &Path, home: &Path) -> Outcome {
    let now = crate::basics::now_secs();
    match rcfile::remove(file, home, now) {
        Ok(Some(backup)) => Outcome::done(format!("{BACKED_UP_TO}{}", backup.display())),
        Ok(None) => Outcome::skipped("no PATH block left in the file"),
        Err(e) => Outcome::failed(e.to_string()),
    }
}
