//! smol-machines smolvm's `server/smolvm.db`, read-only (`vms.data` is a JSON BLOB).

use std::path::Path;

use super::InventoryError;

/// One `vms` record.
#[derive(Debug, Clone, PartialEq)]
pub struct SmolvmRecord {
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

/// Read every record: `mode=ro`, busy timeout, one short transaction, never written.
pub fn read_smolvm_db(_path: &Path) -> Result<Vec<SmolvmRecord>, InventoryError> {
    todo!("inventory: smolvm")
}

/// First 16 hex characters of SHA-256(name): the machine's directory name.
pub fn vm_dir_hash(name: &str) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(name.as_bytes()))[..16].to_string()
}
