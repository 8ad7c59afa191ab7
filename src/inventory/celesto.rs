//! Celesto's `celesto.db` and legacy PyPI smolvm's `smolvm.db`, read-only.

use std::path::{Path, PathBuf};

use rusqlite::types::Value;

use super::sqlite_ro::{self, columns, require_columns, select};
use super::InventoryError;

/// One `vms` row.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CelestoSandbox {
    pub id: String,
    pub status: String,
    pub pid: Option<i64>,
    /// `config.rootfs_path`.
    pub rootfs_path: Option<PathBuf>,
    pub kernel_path: Option<PathBuf>,
    pub initrd_path: Option<PathBuf>,
    pub backend: Option<String>,
    pub retain_disk_on_delete: bool,
    pub created_at: Option<String>,
    /// The parsed `config` JSON.
    pub config: serde_json::Value,
}

/// One inventory file.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CelestoInventory {
    pub db_path: PathBuf,
    /// `smolvm.db` (PyPI smolvm) rather than `celesto.db`.
    pub legacy: bool,
    pub sandboxes: Vec<CelestoSandbox>,
    /// `browser_sessions.session_id` and `browser_sessions.vm_id` (live ids too).
    pub browser_ids: Vec<String>,
    /// `snapshots` rows: (snapshot_id, vm_id).
    pub snapshots: Vec<(String, String)>,
    /// Rows that could not be fully understood. Such a row is still listed (its id stays live, so
    /// its files are protected) with `config = Null`; upstream `sandbox prune` aborts on it (B17).
    pub problems: Vec<String>,
}

impl CelestoInventory {
    /// Every id this inventory keeps alive.
    pub(crate) fn live_ids(&self) -> impl Iterator<Item = &str> {
        self.sandboxes
            .iter()
            .map(|s| s.id.as_str())
            .chain(self.browser_ids.iter().map(|s| s.as_str()))
    }
}

/// Read one inventory: `mode=ro`, busy timeout, one short transaction, never created or written.
///
/// `smolvm.db` (PyPI smolvm, same schema) is read the same way and flagged `legacy`.
/// A `vms.config` that is not JSON does not fail the inventory (B17): the row is kept with
/// `config = Null` and a line in `problems`, because its id must stay live. Missing
/// `browser_sessions` / `snapshots` tables (older schemas) give empty lists.
pub(crate) fn read_celesto_db(path: &Path) -> Result<CelestoInventory, InventoryError> {
    sqlite_ro::read(path, &crate::upstream::CELESTO_DB, |conn| {
        read_tx(conn, path)
    })
}

fn read_tx(conn: &rusqlite::Connection, path: &Path) -> Result<CelestoInventory, InventoryError> {
    let mut problems = Vec::new();
    let sandboxes = read_sandboxes(conn, path, &mut problems)?;
    let browser_ids = read_browser_ids(conn, path)?;
    let snapshots = read_snapshots(conn, path, &mut problems)?;
    Ok(CelestoInventory {
        db_path: path.to_path_buf(),
        legacy: path
            .file_name()
            .is_some_and(|n| n == crate::upstream::PYPI_SMOLVM_INVENTORY.name),
        sandboxes,
        browser_ids,
        snapshots,
        problems,
    })
}

/// The `vms` rows, in rowid order; a row without a usable id is left out (with a problem).
fn read_sandboxes(
    conn: &rusqlite::Connection,
    path: &Path,
    problems: &mut Vec<String>,
) -> Result<Vec<CelestoSandbox>, InventoryError> {
    let cols = require_columns(conn, path, "vms", &["id", "status", "config"])?;
    let rows = select(
        conn,
        path,
        "vms",
        ["id", "status", "config", "pid", "created_at"],
        &cols,
        "rowid",
    )?;
    Ok(rows
        .into_iter()
        .filter_map(|row| sandbox_of(row, problems))
        .collect())
}

/// One `vms` row (id, status, config, pid, created_at). A config that is missing or not JSON
/// keeps the row, with `config = Null` and a problem.
fn sandbox_of(row: [Value; 5], problems: &mut Vec<String>) -> Option<CelestoSandbox> {
    let [id, status, config, pid, created_at] = row;
    let Some(id) = text(&id) else {
        problems.push(format!("a vms row has no usable id ({id:?}); row ignored"));
        return None;
    };
    let config = match text_or_blob(&config) {
        Some(raw) => match serde_json::from_slice::<serde_json::Value>(&raw) {
            Ok(v) => v,
            Err(e) => {
                problems.push(format!("sandbox {id}: config is not JSON ({e})"));
                serde_json::Value::Null
            }
        },
        None => {
            problems.push(format!("sandbox {id}: config is missing"));
            serde_json::Value::Null
        }
    };
    let pid = match pid {
        Value::Integer(n) => Some(n),
        Value::Text(t) => t.trim().parse().ok(),
        _ => None,
    };
    let cfg_path = |k: &str| config.get(k).and_then(|v| v.as_str()).map(PathBuf::from);
    Some(CelestoSandbox {
        status: text(&status).unwrap_or_default(),
        pid,
        rootfs_path: cfg_path("rootfs_path"),
        kernel_path: cfg_path("kernel_path"),
        initrd_path: cfg_path("initrd_path"),
        backend: config
            .get("backend")
            .and_then(|v| v.as_str())
            .map(str::to_owned),
        retain_disk_on_delete: config
            .get("retain_disk_on_delete")
            .and_then(|v| v.as_bool())
            .unwrap_or(false),
        created_at: text(&created_at),
        config,
        id,
    })
}

/// Browser sessions keep both their session id and their VM id alive (each id once; no table,
/// no ids).
fn read_browser_ids(
    conn: &rusqlite::Connection,
    path: &Path,
) -> Result<Vec<String>, InventoryError> {
    let mut browser_ids = Vec::new();
    let Some(bcols) = columns(conn, path, "browser_sessions")? else {
        return Ok(browser_ids);
    };
    let wanted: Vec<&str> = ["session_id", "vm_id"]
        .into_iter()
        .filter(|c| bcols.iter().any(|k| k.eq_ignore_ascii_case(c)))
        .collect();
    for col in wanted {
        let ids = select(conn, path, "browser_sessions", [col], &bcols, "rowid")?;
        for [v] in ids {
            if let Some(id) = text(&v) {
                if !browser_ids.contains(&id) {
                    browser_ids.push(id);
                }
            }
        }
    }
    Ok(browser_ids)
}

/// `snapshots` rows as (snapshot_id, vm_id); no table, none; a table without those columns is
/// a problem.
fn read_snapshots(
    conn: &rusqlite::Connection,
    path: &Path,
    problems: &mut Vec<String>,
) -> Result<Vec<(String, String)>, InventoryError> {
    let mut snapshots = Vec::new();
    let Some(scols) = columns(conn, path, "snapshots")? else {
        return Ok(snapshots);
    };
    let has = |c: &str| scols.iter().any(|k| k.eq_ignore_ascii_case(c));
    if !(has("snapshot_id") && has("vm_id")) {
        problems.push("table `snapshots` lacks snapshot_id/vm_id".into());
        return Ok(snapshots);
    }
    let rows = select(
        conn,
        path,
        "snapshots",
        ["snapshot_id", "vm_id"],
        &scols,
        "rowid",
    )?;
    for [s, v] in rows {
        if let (Some(s), Some(v)) = (text(&s), text(&v)) {
            snapshots.push((s, v));
        }
    }
    Ok(snapshots)
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::Text(t) => Some(t.clone()),
        Value::Integer(n) => Some(n.to_string()),
        Value::Blob(b) => String::from_utf8(b.clone()).ok(),
        _ => None,
    }
}

fn text_or_blob(v: &Value) -> Option<Vec<u8>> {
    match v {
        Value::Text(t) => Some(t.clone().into_bytes()),
        Value::Blob(b) => Some(b.clone()),
        _ => None,
    }
}

/// Upstream's sandbox id rule: `^[a-z0-9][a-z0-9_-]{0,62}[a-z0-9]$|^[a-z0-9]$`.
pub(crate) fn valid_sandbox_id(id: &str) -> bool {
    let b = id.as_bytes();
    let edge = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    let inner = |c: u8| edge(c) || c == b'_' || c == b'-';
    match b.len() {
        0 => false,
        1 => edge(b[0]),
        n if n <= 64 => edge(b[0]) && edge(b[n - 1]) && b[1..n - 1].iter().all(|&c| inner(c)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn b6_valid_sandbox_id_matches_the_upstream_regex() {
        for ok in ["a", "0", "ab", "a-b", "a_b", "real1", "x9", &"a".repeat(64)] {
            assert!(valid_sandbox_id(ok), "{ok:?} should be valid");
        }
        for bad in [
            "",
            "-",
            "_",
            "-a",
            "a-",
            "a_",
            "A",
            "aB",
            "a.b",
            "two.dots",
            "../x",
            "a/b",
            "a b",
            "é",
            "a\0",
            &"a".repeat(65),
        ] {
            assert!(!valid_sandbox_id(bad), "{bad:?} should be invalid");
        }
    }
}
