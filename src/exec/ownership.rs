//! Re-checking, at the moment of deletion, that what the scan called orphaned still has no
//! owner: a sandbox row or a machine record created since the scan (for an id or name that
//! matches the orphan) makes the item someone's again, whatever its file identity says.
//!
//! The inventories are the ones the scan judged the item by ([`OwnerRecheck`], carried from the
//! finding into the plan), so the re-check reads exactly what the scan read, under any layout the
//! roots resolve (XDG overrides, `SMOLVM_DATA_DIR`, macOS).

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::inventory::celesto::{read_celesto_db, CelestoInventory};
use crate::inventory::smolvm::{read_smolvm_inventory, vm_dir_hash, SmolvmInventory};
use crate::inventory::InventoryError;
use crate::model::{OwnerRecheck, OwnerRecord};

/// `Err(why)` when the item now has an owner, or ownership cannot be verified.
pub fn still_orphaned(check: &OwnerRecheck) -> Result<(), String> {
    for db in &check.inventories {
        if crate::fsread::lstat(db).is_none() {
            continue; // no inventory, no record
        }
        match &check.record {
            OwnerRecord::SandboxId(id) => {
                let inv = cached(&CELESTO, db, read_celesto_db)
                    .map_err(|e| format!("cannot verify that sandbox '{id}' is still gone: {e}"))?;
                if inv.live_ids().any(|l| l == id) {
                    return Err(format!(
                        "sandbox '{id}' exists again in {}; not deleted",
                        db.display()
                    ));
                }
            }
            OwnerRecord::MachineName(_) | OwnerRecord::MachineDirHash(_) => {
                let inv = cached(&SMOLVM, db, read_smolvm_inventory)
                    .map_err(|e| format!("cannot verify that no machine owns it now: {e}"))?;
                let claims = |name: &str| match &check.record {
                    OwnerRecord::MachineName(n) => name == n,
                    OwnerRecord::MachineDirHash(h) => &vm_dir_hash(name) == h,
                    OwnerRecord::SandboxId(_) => false,
                };
                if let Some(r) = inv.records.iter().find(|r| claims(&r.name)) {
                    return Err(format!(
                        "machine '{}' was created for it since the scan; not deleted",
                        r.name
                    ));
                }
                // A reservation whose owner may be alive: the machine is being created (the
                // scan's rule: one whose owner is gone is stale).
                if let Some(r) = inv
                    .reservations
                    .iter()
                    .find(|r| claims(&r.name) && r.owner_pid.is_none_or(pid_may_be_alive))
                {
                    return Err(format!(
                        "machine '{}' is being created (a create reservation); not deleted",
                        r.name
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Whether a process with this pid exists (one of another user counts as existing).
fn pid_may_be_alive(pid: i64) -> bool {
    let Some(pid) = i32::try_from(pid)
        .ok()
        .filter(|p| *p > 0)
        .and_then(rustix::process::Pid::from_raw)
    else {
        return false;
    };
    !matches!(
        rustix::process::test_kill_process(pid),
        Err(rustix::io::Errno::SRCH)
    )
}

/// What identifies the bytes of an inventory: device, inode, size, mtime and ctime of the file
/// and of its `-wal` and `-journal` (any write by SQLite changes one of them).
type Stamp = Vec<Option<(u64, u64, u64, i64, i64, i64, i64)>>;

fn stamp(db: &Path) -> Stamp {
    use std::os::unix::fs::MetadataExt;
    ["", "-wal", "-journal"]
        .iter()
        .map(|s| {
            crate::fsread::lstat(&crate::inventory::sqlite_ro::side(db, s)).map(|m| {
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
        })
        .collect()
}

type Cache<T> = std::thread::LocalKey<RefCell<HashMap<PathBuf, (Stamp, T)>>>;

thread_local! {
    static CELESTO: RefCell<HashMap<PathBuf, (Stamp, CelestoInventory)>> = RefCell::new(HashMap::new());
    static SMOLVM: RefCell<HashMap<PathBuf, (Stamp, SmolvmInventory)>> = RefCell::new(HashMap::new());
}

/// Read an inventory, or reuse the last reading of it when its files have not changed since
/// (a 500-item prune re-checks the same inventory 500 times; each full read runs SQLite's
/// integrity check). A changed stamp, or a failed read, always reads again.
fn cached<T: Clone>(
    cache: &'static Cache<T>,
    db: &Path,
    read: fn(&Path) -> Result<T, InventoryError>,
) -> Result<T, InventoryError> {
    let before = stamp(db);
    // File times are coarse (a few ms): two writes in one tick look alike, so a file written
    // in the last two seconds is always read again (every write moves the mtime).
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(i64::MAX);
    let settled = before.iter().flatten().all(|s| s.3 < now - 2);
    if !settled {
        return read(db);
    }
    if let Some(hit) = cache.with(|c| {
        c.borrow()
            .get(db)
            .filter(|(s, _)| *s == before)
            .map(|(_, v)| v.clone())
    }) {
        return Ok(hit);
    }
    let v = read(db)?;
    // Kept only if nothing changed while it was read.
    if stamp(db) == before {
        cache.with(|c| c.borrow_mut().insert(db.to_path_buf(), (before, v.clone())));
    }
    Ok(v)
}
