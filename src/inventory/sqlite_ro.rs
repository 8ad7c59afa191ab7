//! Reading an inventory: a consistent read-only snapshot (see [`super::snapshot`]) queried
//! inside one short transaction, plus the schema checks both readers share.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::types::Value;
use rusqlite::Connection;

use super::InventoryError;

/// How long a locked inventory is waited for before it is reported as locked.
pub const BUSY_TIMEOUT: Duration = super::snapshot::BUSY_TIMEOUT;

/// Run `f` against a read-only snapshot of the database at `path`. The file itself is never
/// opened by SQLite: nothing is created, written or timestamped.
pub fn read<T>(
    path: &Path,
    f: impl Fn(&Connection) -> Result<T, InventoryError>,
) -> Result<T, InventoryError> {
    let conn = super::snapshot::open_snapshot(path, BUSY_TIMEOUT)?;
    let tx = conn.unchecked_transaction().map_err(|e| map_err(path, e))?;
    let out = f(&tx);
    drop(tx);
    out
}

/// Open a regular file read-only without following a symlink and, where allowed, without
/// updating its access time ([`crate::fsread::open_regular`]).
pub fn open_noatime(path: &Path) -> std::io::Result<File> {
    crate::fsread::open_regular(path)
}

/// `<path><suffix>`, e.g. the `-wal` beside a database.
pub fn side(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// Maps a SQLite error to the inventory error a scanner acts on.
pub fn map_err(path: &Path, e: rusqlite::Error) -> InventoryError {
    use rusqlite::ErrorCode as C;
    let path = path.to_path_buf();
    match &e {
        rusqlite::Error::SqliteFailure(f, msg) => match f.code {
            C::DatabaseBusy | C::DatabaseLocked => InventoryError::Locked {
                path,
                seconds: BUSY_TIMEOUT.as_secs(),
            },
            C::NotADatabase | C::DatabaseCorrupt => InventoryError::Corrupt {
                path,
                detail: e.to_string(),
            },
            // READONLY_ROLLBACK / READONLY_RECOVERY / READONLY_CANTINIT: a crashed writer left a
            // hot journal or a wal-index that only a writer may repair.
            C::ReadOnly => InventoryError::Io {
                path,
                detail: format!("needs recovery by its owning program: {e}"),
            },
            C::Unknown
                if msg.as_deref().is_some_and(|m| {
                    m.starts_with("no such table") || m.starts_with("no such column")
                }) =>
            {
                InventoryError::UnknownShape {
                    path,
                    detail: e.to_string(),
                }
            }
            _ => InventoryError::Io {
                path,
                detail: e.to_string(),
            },
        },
        _ => InventoryError::Io {
            path,
            detail: e.to_string(),
        },
    }
}

/// Columns of `table`, or `None` when the table does not exist.
pub fn columns(
    conn: &Connection,
    path: &Path,
    table: &str,
) -> Result<Option<Vec<String>>, InventoryError> {
    let exists: bool = conn
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [table],
            |r| r.get::<_, i64>(0),
        )
        .map_err(|e| map_err(path, e))?
        > 0;
    if !exists {
        return Ok(None);
    }
    let mut stmt = conn
        .prepare("SELECT name FROM pragma_table_info(?1)")
        .map_err(|e| map_err(path, e))?;
    let cols = stmt
        .query_map([table], |r| r.get::<_, String>(0))
        .map_err(|e| map_err(path, e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| map_err(path, e))?;
    Ok(Some(cols))
}

/// Requires `table` with all of `needed`, else [`InventoryError::UnknownShape`].
pub fn require_columns(
    conn: &Connection,
    path: &Path,
    table: &str,
    needed: &[&str],
) -> Result<Vec<String>, InventoryError> {
    let Some(cols) = columns(conn, path, table)? else {
        return Err(InventoryError::UnknownShape {
            path: path.to_path_buf(),
            detail: format!("no table `{table}`"),
        });
    };
    let missing: Vec<&str> = needed
        .iter()
        .copied()
        .filter(|c| !cols.iter().any(|k| k.eq_ignore_ascii_case(c)))
        .collect();
    if !missing.is_empty() {
        return Err(InventoryError::UnknownShape {
            path: path.to_path_buf(),
            detail: format!("table `{table}` lacks column(s) {}", missing.join(", ")),
        });
    }
    Ok(cols)
}

/// `SELECT <cols> FROM <table> ORDER BY <order>`, every row as values. A column the table does
/// not have (not in `present`, from [`columns`] or [`require_columns`]) reads as NULL, so older
/// schemas need no query of their own.
pub fn select<const N: usize>(
    conn: &Connection,
    path: &Path,
    table: &str,
    cols: [&str; N],
    present: &[String],
    order: &str,
) -> Result<Vec<[Value; N]>, InventoryError> {
    let list: Vec<&str> = cols
        .iter()
        .map(|c| {
            if present.iter().any(|k| k.eq_ignore_ascii_case(c)) {
                *c
            } else {
                "NULL"
            }
        })
        .collect();
    let sql = format!("SELECT {} FROM {table} ORDER BY {order}", list.join(", "));
    let mut stmt = conn.prepare(&sql).map_err(|e| map_err(path, e))?;
    let rows = stmt
        .query_map([], |r| {
            let mut row = [(); N].map(|_| Value::Null);
            for (i, v) in row.iter_mut().enumerate() {
                *v = r.get(i)?;
            }
            Ok(row)
        })
        .map_err(|e| map_err(path, e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| map_err(path, e))?;
    Ok(rows)
}
