//! Installed copies of both products, found by reading files only (nothing is executed).

use std::path::PathBuf;

use crate::env::EnvSnapshot;
use crate::model::{Platform, Product};

/// One installation.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Install {
    pub product: Product,
    /// `script` (`~/.smolvm`), `homebrew`, `deb`, `opt`, `wheel` (`smolmachines`), `pypi`
    /// (a Python environment with `celesto` or PyPI `smolvm`).
    pub method: String,
    /// The prefix, virtualenv or package directory.
    pub path: PathBuf,
    /// The command that runs it, when found.
    pub executable: Option<PathBuf>,
    pub version: Option<String>,
    /// For `pypi`: the distribution name (`celesto` or `smolvm`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distribution: Option<String>,
}

/// Find installations: executables on `PATH` (`celesto`, `smolvm`, `smol-vmm`) told apart by
/// content, install prefixes, and Python `*.dist-info` directories next to them.
pub fn detect_installs(_platform: Platform, _env: &EnvSnapshot) -> Vec<Install> {
    todo!("install: detect")
}
