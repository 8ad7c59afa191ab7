//! Read-only access to the products' SQLite inventories.

pub(crate) mod cache;
pub(crate) mod celesto;
pub(crate) mod smolvm;
pub(crate) mod snapshot;
pub(crate) mod sqlite_ro;

/// Why an inventory could not be read. Any of these makes the product's findings `unknown`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum InventoryError {
    #[error("the inventory {0} does not exist")]
    Missing(std::path::PathBuf),
    #[error("the inventory {path} stayed locked for {seconds} s")]
    Locked {
        path: std::path::PathBuf,
        seconds: u64,
    },
    #[error("the inventory {path} is not a readable SQLite database: {detail}")]
    Corrupt {
        path: std::path::PathBuf,
        detail: String,
    },
    #[error("the inventory {path} has a shape Smolsweep does not know: {detail}")]
    UnknownShape {
        path: std::path::PathBuf,
        detail: String,
    },
    #[error("the inventory {path} could not be opened: {detail}")]
    Io {
        path: std::path::PathBuf,
        detail: String,
    },
}
