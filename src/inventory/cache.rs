//! Readings of an inventory kept for as long as its files are unchanged. A full read runs
//! SQLite's integrity check; the executor's owner re-check reads the same inventory once per
//! item of a plan, and the app's incremental rescans read it every few seconds, so both reuse
//! the last reading of a file that has not changed since.
//!
//! **What "unchanged" means.** The stamp of an inventory is device, inode, size, mtime and
//! ctime (nanoseconds) of the database, of its `-wal` and `-journal`, and, when the database is
//! a symlink, of the target and the target's `-wal` and `-journal` (SQLite reads those). Any
//! write by SQLite moves one of them; ctime cannot be set from user space. A file written in
//! the last two seconds is read again whatever its stamp (two writes within one tick of a
//! coarse clock would look alike), and a reading is kept only if the stamp did not change
//! while it was read. A failed read is never kept.
//!
//! The scan that a plan is made from, and the re-judge's scan, read afresh; only the owner
//! re-check and the app's rescans (which only show) use this.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, Mutex};

use super::celesto::{read_celesto_db, CelestoInventory};
use super::smolvm::{read_smolvm_inventory, SmolvmInventory};
use super::InventoryError;
use crate::basics::lock;

type FileStamp = Option<(u64, u64, u64, i64, i64, i64, i64)>;
type Stamp = Vec<FileStamp>;
type Cache<T> = LazyLock<Mutex<HashMap<PathBuf, (Stamp, T)>>>;

static CELESTO: Cache<CelestoInventory> = LazyLock::new(Default::default);
static SMOLVM: Cache<SmolvmInventory> = LazyLock::new(Default::default);

/// [`read_celesto_db`], or its last reading while the files are unchanged.
pub(crate) fn celesto(db: &Path) -> Result<CelestoInventory, InventoryError> {
    cached(&CELESTO, db, read_celesto_db)
}

/// [`read_smolvm_inventory`], or its last reading while the files are unchanged.
pub(crate) fn smolvm(db: &Path) -> Result<SmolvmInventory, InventoryError> {
    cached(&SMOLVM, db, read_smolvm_inventory)
}

fn file_stamp(p: &Path) -> FileStamp {
    crate::fsread::lstat(p).map(|m| {
        (
            m.dev(),
            m.ino(),
            m.size(),
            m.mtime(),
            m.mtime_nsec(),
            m.ctime(),
            m.ctime_nsec(),
        )
    })
}

fn stamp(db: &Path) -> Stamp {
    let mut files = vec![db.to_path_buf()];
    if crate::fsread::lstat(db).is_some_and(|m| m.file_type().is_symlink()) {
        // Unresolvable: a stamp no reading can have been kept under.
        files.push(std::fs::canonicalize(db).unwrap_or_default());
    }
    let mut out = Vec::new();
    for f in &files {
        for p in crate::upstream::content_files(f) {
            out.push(file_stamp(&p));
        }
    }
    out
}

fn cached<T: Clone>(
    cache: &Cache<T>,
    db: &Path,
    read: fn(&Path) -> Result<T, InventoryError>,
) -> Result<T, InventoryError> {
    let before = stamp(db);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(i64::MAX);
    let settled = before.iter().flatten().all(|s| s.3 < now - 2);
    if !settled {
        return read(db);
    }
    let hit = lock(cache)
        .get(db)
        .filter(|(s, _)| *s == before)
        .map(|(_, v)| v.clone());
    if let Some(hit) = hit {
        return Ok(hit);
    }
    let v = read(db)?;
    if stamp(db) == before {
        lock(cache).insert(db.to_path_buf(), (before, v.clone()));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symlinked_inventory_is_read_again_when_its_target_changes() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("real.db");
        std::fs::write(&target, b"one").unwrap();
        let link = d.path().join("celesto.db");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let a = stamp(&link);
        std::fs::write(&target, b"two!").unwrap();
        assert_ne!(
            a,
            stamp(&link),
            "the target's change must change the link's stamp"
        );
        // The link itself is unchanged all along.
        assert_eq!(a[0], stamp(&link)[0]);
    }
}
