//! Celesto's `celesto.db` and legacy PyPI smolvm's `smolvm.db`, read-only.

use std::path::{Path, PathBuf};

use super::InventoryError;

/// One `vms` row.
#[derive(Debug, Clone, PartialEq)]
pub struct CelestoSandbox {
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
pub struct CelestoInventory {
    pub db_path: PathBuf,
    /// `smolvm.db` (PyPI smolvm) rather than `celesto.db`.
    pub legacy: bool,
    pub sandboxes: Vec<CelestoSandbox>,
    /// `browser_sessions.session_id` and `browser_sessions.vm_id` (live ids too).
    pub browser_ids: Vec<String>,
    /// `snapshots` rows: (snapshot_id, vm_id).
    pub snapshots: Vec<(String, String)>,
}

impl CelestoInventory {
    /// Every id this inventory keeps alive.
    pub fn live_ids(&self) -> impl Iterator<Item = &str> {
        self.sandboxes
            .iter()
            .map(|s| s.id.as_str())
            .chain(self.browser_ids.iter().map(|s| s.as_str()))
    }
}

/// Read one inventory: `mode=ro`, busy timeout, one short transaction, never created or written.
pub fn read_celesto_db(_path: &Path) -> Result<CelestoInventory, InventoryError> {
    todo!("inventory: celesto")
}

/// Upstream's sandbox id rule: `^[a-z0-9][a-z0-9_-]{0,62}[a-z0-9]$|^[a-z0-9]$`.
pub fn valid_sandbox_id(_id: &str) -> bool {
    todo!("inventory: valid_sandbox_id")
}
