//! Read-only access to the products' SQLite inventories.

pub mod cache;
pub mod celesto;
pub mod smolvm;
pub mod snapshot;
pub mod sqlite_ro;

/// Why an inventory could not be read. Any of these makes the product's findings `unknown`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InventoryError {
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
