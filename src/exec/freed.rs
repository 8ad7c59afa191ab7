//! What one action freed, measured on its own target so that another program writing to the
//! same disk moves nothing: the allocated bytes of the inodes the action removed whose every
//! name it removed, less those a process still holds open (their blocks are freed only when it
//! closes them, smolvm #787). An ended VM process frees the deleted files it alone held open. A
//! machine deleted by its product's CLI is measured as the growth of free space on the HOME's
//! file system during that action alone. A disk compacted in place frees what it no longer
//! allocates.

use std::collections::{HashMap, HashSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::plan::{Action, Plan};
use crate::record::Outcome;

/// An inode by `(st_dev, st_ino)`.
type Ino = (u64, u64);

/// One inode of a tree: its allocated bytes, its link count and how many of its names lie in
/// the tree (a directory counts as all of its names).
#[derive(Debug, Clone, Copy)]
struct Inode {
    allocated: u64,
    nlink: u64,
    names: u64,
}

/// What was there just before the action: the tree a path action acts on, or the free space a
/// machine deletion is measured by.
#[derive(Default)]
pub(super) struct Before {
    tree: Option<(PathBuf, HashMap<Ino, Inode>)>,
    free: Option<(PathBuf, u64)>,
    /// The unlinked files a process to be ended holds open, with their bytes.
    held: Vec<(Ino, u64)>,
    /// A disk compacted in place, with its allocated bytes.
    file: Option<(PathBuf, u64)>,
}

/// Look at what `a` is about to act on.
pub(super) fn before(plan: &Plan, a: &Action) -> Before {
    match a {
        Action::DeletePath { path, .. } | Action::RemoveTree { path, .. } => Before {
            tree: Some((path.clone(), inodes(path))),
            free: path.parent().and_then(free_at),
            ..Before::default()
        },
        Action::DeleteMachine { .. } => Before {
            free: free_at(&plan.home),
            ..Before::default()
        },
        Action::SignalProcess { pid, .. } => Before {
            held: held_by(*pid),
            ..Before::default()
        },
        Action::CompactDisk { path, .. } => Before {
            file: std::fs::metadata(path)
                .ok()
                .map(|m| (path.clone(), m.blocks() * 512)),
            ..Before::default()
        },
        _ => Before::default(),
    }
}

/// The unlinked files process `pid` holds open (Linux; none elsewhere, where nothing is
/// measured).
fn held_by(pid: u32) -> Vec<(Ino, u64)> {
    crate::procs::os::deleted_open_files(pid)
}

/// The bytes the action freed, given what [`before`] saw and how it ended.
pub(super) fn after(before: Before, outcome: &Outcome) -> u64 {
    let acted = matches!(
        outcome,
        Outcome::Done { .. } | Outcome::Skipped { partial: true, .. }
    );
    if !acted {
        return 0;
    }
    if let Some((path, was)) = &before.file {
        // Compacted: the file stays; what it no longer allocates is freed.
        let now = std::fs::metadata(path).map_or(*was, |m| m.blocks() * 512);
        return was.saturating_sub(now);
    }
    if !before.held.is_empty() {
        // Ended: what no other process still holds open is freed now.
        let inos: HashSet<Ino> = before.held.iter().map(|(i, _)| *i).collect();
        let still = held_open(&inos).unwrap_or(inos);
        return before
            .held
            .iter()
            .filter(|(i, _)| !still.contains(i))
            .map(|(_, b)| b)
            .sum();
    }
    let gained = before
        .free
        .as_ref()
        .map(|(p, free)| crate::size::fs_free_bytes(p).map_or(0, |now| now.saturating_sub(*free)));
    let Some((path, was)) = before.tree else {
        return gained.unwrap_or(0);
    };
    let left = inodes(&path);
    let removed: HashMap<Ino, u64> = was
        .into_iter()
        .filter(|(ino, i)| !left.contains_key(ino) && i.names >= i.nlink)
        .map(|(ino, i)| (ino, i.allocated))
        .collect();
    let bytes: u64 = removed.values().sum();
    // The file system gained at least as much: nothing was held open (the usual case, and no
    // process table to read). Less: another program wrote meanwhile, or a process holds a
    // removed file open; only the latter keeps bytes from being freed.
    if gained.is_some_and(|g| g >= bytes) {
        return bytes;
    }
    match held_open(&removed.keys().copied().collect()) {
        Some(held) => removed
            .iter()
            .filter(|(ino, _)| !held.contains(ino))
            .map(|(_, b)| b)
            .sum(),
        // No process table to ask: the file system's growth is the most that was freed.
        None => bytes.min(gained.unwrap_or(0)),
    }
}

/// Free bytes on the file system holding `p`, with `p`.
fn free_at(p: &Path) -> Option<(PathBuf, u64)> {
    crate::size::fs_free_bytes(p)
        .ok()
        .map(|f| (p.to_path_buf(), f))
}

/// Every inode of the tree at `path` (not following symlinks, not crossing into another file
/// system); empty when nothing is there.
fn inodes(path: &Path) -> HashMap<Ino, Inode> {
    let mut out: HashMap<Ino, Inode> = HashMap::new();
    let walk = walkdir::WalkDir::new(path)
        .follow_links(false)
        .same_file_system(true);
    for e in walk.into_iter().filter_map(|e| e.ok()) {
        let Ok(m) = e.metadata() else { continue };
        let dir = m.is_dir();
        out.entry((m.dev(), m.ino()))
            .and_modify(|i| i.names += 1)
            .or_insert(Inode {
                allocated: m.blocks() * 512,
                nlink: if dir { 1 } else { m.nlink() },
                names: 1,
            });
    }
    out
}

/// Which of `inodes` (all unlinked by now) some process still holds open, or `None` where there
/// is no `/proc` to ask.
fn held_open(inodes: &HashSet<Ino>) -> Option<HashSet<Ino>> {
    if inodes.is_empty() {
        return Some(HashSet::new());
    }
    let procs = std::fs::read_dir("/proc").ok()?;
    let mut held = HashSet::new();
    for p in procs.filter_map(|e| e.ok()) {
        let Ok(fds) = std::fs::read_dir(p.path().join("fd")) else {
            continue;
        };
        for fd in fds.filter_map(|e| e.ok()) {
            // `stat` through the magic link reaches the open inode even when it is unlinked. An
            // inode number the file system gave to a new file since (a build writing beside
            // us) has a name: only an unlinked one can be ours.
            if let Ok(m) = std::fs::metadata(fd.path()) {
                if m.nlink() == 0 && inodes.contains(&(m.dev(), m.ino())) {
                    held.insert((m.dev(), m.ino()));
                }
            }
        }
    }
    Some(held)
}
