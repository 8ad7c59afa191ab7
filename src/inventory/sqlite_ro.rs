//! Reading an inventory: a consistent read-only snapshot (see [`super::snapshot`]) queried
//! inside one short transaction, plus the schema checks both readers share.

#[cfg(test)]
use std::fs::File;
use std::path::Path;
use std::time::Duration;

use rusqlite::types::Value;
use rusqlite::Connection;

use super::InventoryError;

/// How long a locked inventory is waited for before it is reported as locked.
pub(crate) const BUSY_TIMEOUT: Duration = super::snapshot::BUSY_TIMEOUT;

/// Run `f` against a read-only snapshot of the database at `path`. The file itself is never
/// opened by SQLite: nothing is created, written or timestamped.
pub(crate) fn read<T>(
    path: &Path,
    schema: &crate::upstream::Schema,
    f: impl Fn(&Connection) -> Result<T, InventoryError>,
) -> Result<T, InventoryError> {
    let conn = super::snapshot::open_snapshot(path, BUSY_TIMEOUT)?;
    let tx = conn.unchecked_transaction().map_err(|e| map_err(path, e))?;
    prove(&tx, path, schema)?;
    let out = f(&tx);
    drop(tx);
    out
}

/// An inventory is trusted only when it proves itself: SQLite's full integrity check passes
/// (an emptied table page behind an intact index fails it; `quick_check` would not), its
/// `user_version` is one of the verified versions', and it holds no table the product does not
/// write (rows moved elsewhere would read as "no sandboxes").
pub(crate) fn prove(
    conn: &Connection,
    path: &Path,
    schema: &crate::upstream::Schema,
) -> Result<(), InventoryError> {
    let mut stmt = conn
        .prepare("PRAGMA integrity_check(8)")
        .map_err(|e| map_err(path, e))?;
    let msgs = stmt
        .query_map([], |r| r.get::<_, String>(0))
        .map_err(|e| map_err(path, e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| map_err(path, e))?;
    if msgs != ["ok"] {
        return Err(InventoryError::Corrupt {
            path: path.to_path_buf(),
            detail: format!("its integrity check fails ({})", msgs.join("; ")),
        });
    }
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(|e| map_err(path, e))?;
    if !schema.user_versions.contains(&version) {
        return Err(InventoryError::UnknownShape {
            path: path.to_path_buf(),
            detail: format!(
                "its schema version (user_version {version}) is not one Smolsweep knows ({:?})",
                schema.user_versions
            ),
        });
    }
    let mut stmt = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name")
        .map_err(|e| map_err(path, e))?;
    let tables = stmt
        .query_map([], |r| r.get::<_, String>(0))
        .map_err(|e| map_err(path, e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| map_err(path, e))?;
    let unknown: Vec<&String> = tables
        .iter()
        .filter(|t| !schema.tables.contains(&t.as_str()))
        .collect();
    if !unknown.is_empty() {
        return Err(InventoryError::UnknownShape {
            path: path.to_path_buf(),
            detail: format!(
                "it has table(s) {} that {} does not write as far as Smolsweep knows",
                unknown
                    .iter()
                    .map(|t| format!("`{t}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
                schema.product.display_name()
            ),
        });
    }
    orphan_references(conn, path, schema, &tables)
}

/// Rows of a table that names sandbox or machine ids (leases, forwards) for ids the main table
/// lacks: the main table lost rows, so "no row" would not mean "no sandbox".
fn orphan_references(
    conn: &Connection,
    path: &Path,
    schema: &crate::upstream::Schema,
    tables: &[String],
) -> Result<(), InventoryError> {
    let key = match schema.product {
        crate::model::Product::Celesto => "id",
        crate::model::Product::Smolvm => "name",
    };
    for (table, col) in schema.references {
        if !tables.iter().any(|t| t == table) {
            continue;
        }
        let Some(cols) = columns(conn, path, table)? else {
            continue;
        };
        if !cols.iter().any(|c| c.eq_ignore_ascii_case(col)) {
            continue;
        }
        let sql = format!(
            "SELECT {col} FROM {table} WHERE {col} IS NOT NULL AND {col} NOT IN (SELECT {key} FROM vms) LIMIT 1"
        );
        let missing: Option<String> = conn
            .query_row(&sql, [], |r| r.get::<_, String>(0))
            .map(Some)
            .or_else(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => Ok(None),
                e => Err(map_err(path, e)),
            })?;
        if let Some(id) = missing {
            return Err(InventoryError::Corrupt {
                path: path.to_path_buf(),
                detail: format!(
                    "`{table}` names '{id}', which its `vms` table lacks: rows are missing"
                ),
            });
        }
    }
    Ok(())
}

/// Open a regular file read-only without following a symlink and, where allowed, without
/// updating its access time ([`crate::fsread::open_regular`]).
#[cfg(test)]
pub fn open_noatime(path: &Path) -> std::io::Result<File> {
    crate::fsread::open_regular(path)
}

/// Maps a SQLite error to the inventory error a scanner acts on.
pub(crate) fn map_err(path: &Path, e: rusqlite::Error) -> InventoryError {
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
pub(crate) fn columns(
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
pub(crate) fn require_columns(
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
pub(crate) fn select<const N: usize>(
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
