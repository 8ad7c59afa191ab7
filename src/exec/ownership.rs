//! Re-checking, at the moment of deletion, that what the scan called orphaned still has no
//! owner: a sandbox row or a machine record created since the scan (for an id or name that
//! matches the orphan) makes the item someone's again, whatever its file identity says.
//!
//! The inventories are the ones the scan judged the item by ([`OwnerRecheck`], carried from the
//! finding into the plan), so the re-check reads exactly what the scan read, under any layout the
//! roots resolve (XDG overrides, `SMOLVM_DATA_DIR`, macOS).

use crate::inventory::cache;
use crate::inventory::smolvm::vm_dir_hash;
use crate::model::{OwnerRecheck, OwnerRecord};

/// `Err(why)` when the item now has an owner, or ownership cannot be verified.
pub(crate) fn still_orphaned(check: &OwnerRecheck) -> Result<(), String> {
    for db in &check.inventories {
        if crate::fsread::lstat(db).is_none() {
            continue; // no inventory, no record
        }
        match &check.record {
            OwnerRecord::SandboxId(id) => {
                let inv = cache::celesto(db)
                    .map_err(|e| format!("cannot verify that sandbox '{id}' is still gone: {e}"))?;
                if inv.live_ids().any(|l| l == id) {
                    return Err(format!(
                        "sandbox '{id}' exists again in {}; not deleted",
                        db.display()
                    ));
                }
            }
            OwnerRecord::MachineName(_) | OwnerRecord::MachineDirHash(_) => {
                let inv = cache::smolvm(db)
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
