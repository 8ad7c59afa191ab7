//! Re-checking, at the moment of deletion, that what the scan called orphaned still has no
//! owner: a sandbox row or a machine record created since the scan (for an id or name that
//! matches the orphan) makes the item someone's again, whatever its file identity says.

use std::path::Path;

use crate::inventory::celesto::read_celesto_db;
use crate::inventory::smolvm::{read_smolvm_db, vm_dir_hash};
use crate::model::Product;

/// `Err(why)` when the item now has an owner, or ownership cannot be verified.
pub fn still_orphaned(
    product: Product,
    kind: &str,
    path: &Path,
    root: &Path,
) -> Result<(), String> {
    match product {
        Product::Celesto => celesto(kind, path, root),
        Product::Smolvm => smolvm(kind, path, root),
    }
}

/// The sandbox id a Celesto path belongs to, and its data directory.
fn celesto_owner<'a>(kind: &str, path: &'a Path, root: &'a Path) -> Option<(String, &'a Path)> {
    let name = path.file_name()?.to_str()?;
    let data_dir = match root.file_name()?.to_str()? {
        "disks"
            if kind.contains("disk") || kind.contains("companion") || kind.contains("saved") =>
        {
            root.parent()?
        }
        _ if kind.ends_with("_log") => root,
        _ => return None,
    };
    let id = name.strip_suffix(".log").unwrap_or(name);
    let id = id.split('.').next()?;
    Some((id.to_string(), data_dir))
}

fn celesto(kind: &str, path: &Path, root: &Path) -> Result<(), String> {
    let Some((id, data_dir)) = celesto_owner(kind, path, root) else {
        return Ok(()); // residue and caches: judged by identity alone
    };
    for db in ["celesto.db", "smolvm.db"] {
        let db = data_dir.join(db);
        if crate::fsread::lstat(&db).is_none() {
            continue;
        }
        let inv = read_celesto_db(&db)
            .map_err(|e| format!("cannot verify that sandbox '{id}' is still gone: {e}"))?;
        if inv.live_ids().any(|l| l == id) {
            return Err(format!(
                "sandbox '{id}' exists again in {}; not deleted",
                db.display()
            ));
        }
    }
    Ok(())
}

fn smolvm(kind: &str, path: &Path, root: &Path) -> Result<(), String> {
    if !matches!(
        kind,
        "smolvm.dangling_dir" | "smolvm.empty_dir" | "smolvm.name_only_dir" | "smolvm.fork_lock"
    ) {
        return Ok(());
    }
    // `<cache_root or data_root>/vms`: the database is under the data root beside it.
    let Some(base) = root.parent().and_then(Path::parent) else {
        return Ok(());
    };
    let hash = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let candidates = [
        base.join(".local/share/smolvm/server/smolvm.db"),
        base.join("Application Support/smolvm/server/smolvm.db"),
        root.parent()
            .map(|r| r.join("server/smolvm.db"))
            .unwrap_or_default(),
    ];
    let mut dbs: Vec<_> = candidates
        .iter()
        .filter(|p| crate::fsread::lstat(p).is_some())
        .cloned()
        .collect();
    // Linux layout: ~/.cache/smolvm/vms → ~/.local/share/smolvm/server/smolvm.db
    if let Some(home) = base.parent() {
        for p in [
            home.join(".local/share/smolvm/server/smolvm.db"),
            home.join("Library/Application Support/smolvm/server/smolvm.db"),
        ] {
            if crate::fsread::lstat(&p).is_some() && !dbs.contains(&p) {
                dbs.push(p);
            }
        }
    }
    for db in dbs {
        let records = read_smolvm_db(&db)
            .map_err(|e| format!("cannot verify that no machine owns it now: {e}"))?;
        for r in records {
            let owns = if kind == "smolvm.fork_lock" {
                hash.starts_with(&format!(".{}.fork-operation", r.name))
            } else {
                vm_dir_hash(&r.name) == hash
            };
            if owns {
                return Err(format!(
                    "machine '{}' was created for it since the scan; not deleted",
                    r.name
                ));
            }
        }
    }
    Ok(())
}
