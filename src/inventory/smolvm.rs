//! smol-machines smolvm's `server/smolvm.db`, read-only (`vms.data` is a JSON BLOB).

use std::path::{Path, PathBuf};

use rusqlite::types::Value;

use super::sqlite_ro::{self, columns, require_columns, select};
use super::InventoryError;

/// One `vms` record.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SmolvmRecord {
    pub name: String,
    pub state: String,
    pub pid: Option<u32>,
    /// Linux: clock ticks since boot; macOS: µs since epoch (older records: seconds).
    pub pid_start_time: Option<u64>,
    pub ephemeral: bool,
    pub created_at: Option<i64>,
    /// Branch source (`golden`), when branched.
    pub golden: Option<String>,
    pub data: serde_json::Value,
}

/// A `vm_create_reservations` row: a machine is being created right now (its record may not
/// exist yet, or exist as `created` with no PID).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SmolvmReservation {
    pub name: String,
    pub owner_pid: Option<i64>,
    /// Unix seconds, as stored.
    pub created_at: Option<i64>,
}

/// Everything read from one `smolvm.db` in one transaction.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SmolvmInventory {
    pub db_path: PathBuf,
    pub records: Vec<SmolvmRecord>,
    /// Empty when the table does not exist (older releases).
    pub reservations: Vec<SmolvmReservation>,
}

/// Read every record: `mode=ro`, busy timeout, one short transaction, never written.
pub(crate) fn read_smolvm_db(path: &Path) -> Result<Vec<SmolvmRecord>, InventoryError> {
    Ok(read_smolvm_inventory(path)?.records)
}

/// Machines being created right now (`vm_create_reservations`).
#[cfg(test)]
pub fn read_smolvm_reservations(path: &Path) -> Result<Vec<SmolvmReservation>, InventoryError> {
    Ok(read_smolvm_inventory(path)?.reservations)
}

/// Records and reservations in one short read transaction.
///
/// The WAL database is opened with `mode=ro&readonly_shm=1` (see [`sqlite_ro`]): committed data
/// still in `-wal` is seen, and neither `-shm` nor any other file is written. `data` may be a
/// BLOB (what smolvm writes) or TEXT; it must be a JSON object, otherwise the whole inventory is
/// [`InventoryError::UnknownShape`].
pub(crate) fn read_smolvm_inventory(path: &Path) -> Result<SmolvmInventory, InventoryError> {
    sqlite_ro::read(path, &crate::upstream::SMOLVM_DB, |conn| {
        read_tx(conn, path)
    })
}

fn read_tx(conn: &rusqlite::Connection, path: &Path) -> Result<SmolvmInventory, InventoryError> {
    let shape = |detail: String| InventoryError::UnknownShape {
        path: path.to_path_buf(),
        detail,
    };
    let cols = require_columns(conn, path, "vms", &["name", "data"])?;
    let rows = select(conn, path, "vms", ["name", "data"], &cols, "name")?;

    let mut records = Vec::with_capacity(rows.len());
    for [name, data] in rows {
        let name = match name {
            Value::Text(t) => t,
            other => return Err(shape(format!("a vms row has a non-text name ({other:?})"))),
        };
        let raw: &[u8] = match &data {
            Value::Blob(b) => b,
            Value::Text(t) => t.as_bytes(),
            other => return Err(shape(format!("machine {name}: data is {other:?}"))),
        };
        let data: serde_json::Value = serde_json::from_slice(raw)
            .map_err(|e| shape(format!("machine {name}: data is not JSON ({e})")))?;
        if !data.is_object() {
            return Err(shape(format!("machine {name}: data is not a JSON object")));
        }
        records.push(record(name, data));
    }

    let mut reservations = Vec::new();
    if let Some(cols) = columns(conn, path, "vm_create_reservations")? {
        let has = |c: &str| cols.iter().any(|k| k.eq_ignore_ascii_case(c));
        if !has("name") {
            return Err(shape("table `vm_create_reservations` lacks `name`".into()));
        }
        let rows = select(
            conn,
            path,
            "vm_create_reservations",
            ["name", "owner_pid", "created_at"],
            &cols,
            "name",
        )?;
        for [name, pid, at] in rows {
            let int = |v: &Value| match v {
                Value::Integer(n) => Some(*n),
                _ => None,
            };
            let name = match name {
                Value::Text(t) => t,
                Value::Blob(b) => String::from_utf8_lossy(&b).into_owned(),
                other => {
                    return Err(shape(format!(
                        "a reservation has a non-text name ({other:?})"
                    )))
                }
            };
            reservations.push(SmolvmReservation {
                name,
                owner_pid: int(&pid),
                created_at: int(&at),
            });
        }
    }

    Ok(SmolvmInventory {
        db_path: path.to_path_buf(),
        records,
        reservations,
    })
}

fn record(name: String, data: serde_json::Value) -> SmolvmRecord {
    let u64_of = |k: &str| data.get(k).and_then(|v| v.as_u64());
    SmolvmRecord {
        name,
        state: data
            .get("state")
            .and_then(|v| v.as_str())
            .unwrap_or("unknown")
            .to_owned(),
        pid: u64_of("pid").and_then(|p| u32::try_from(p).ok()),
        pid_start_time: u64_of("pid_start_time"),
        ephemeral: data
            .get("ephemeral")
            .and_then(|v| v.as_bool())
            .unwrap_or(false),
        // Unix seconds; very old records stored a string, which is not trusted here.
        created_at: data.get("created_at").and_then(|v| {
            v.as_i64()
                .or_else(|| v.as_f64().filter(|f| f.is_finite()).map(|f| f as i64))
        }),
        golden: data
            .get("golden")
            .and_then(|v| v.as_str())
            .map(str::to_owned),
        data,
    }
}

/// First 16 hex characters of SHA-256(name): the machine's directory name.
pub(crate) fn vm_dir_hash(name: &str) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(name.as_bytes()))[..16].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vm_dir_hash_matches_observed_ghost() {
        assert_eq!(vm_dir_hash("ghost"), "ead6ef03d61ee60c");
    }

    #[test]
    fn hazard_26_record_fields_and_old_string_created_at() {
        let r = record(
            "a".into(),
            serde_json::json!({"state":"running","pid":4206649,"pid_start_time":123456789,
                "ephemeral":true,"created_at":"2024-01-01T00:00:00Z","golden":"base"}),
        );
        assert_eq!(r.state, "running");
        assert_eq!(r.pid, Some(4206649));
        assert_eq!(r.pid_start_time, Some(123456789));
        assert!(r.ephemeral);
        assert_eq!(r.created_at, None);
        assert_eq!(r.golden.as_deref(), Some("base"));
        let r = record(
            "b".into(),
            serde_json::json!({"created_at":1796004250,"pid":null}),
        );
        assert_eq!(r.created_at, Some(1796004250));
        assert_eq!((r.pid, r.pid_start_time, r.ephemeral), (None, None, false));
        assert_eq!(r.state, "unknown");
    }
}
