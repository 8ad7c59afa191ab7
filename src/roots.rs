//! Where each product keeps its state, as pure functions of (platform, environment snapshot).
//!
//! Nothing here touches the file system except [`dot_smolvm_contents`], which only reads.

use std::path::{Path, PathBuf};

use crate::env::EnvSnapshot;
use crate::model::Platform;

/// A candidate directory and why it is a candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootCandidate {
    pub path: PathBuf,
    /// Where it came from: `CELESTO_DATA_DIR`, `SMOLVM_DATA_DIR`, `XDG_STATE_HOME`, `default`,
    /// `legacy`, `system`, `sudo_user`, `CELESTO_IMAGE_DIR`, ...
    pub source: String,
    /// The directory the CLI would pick today with this environment.
    pub preferred: bool,
}

/// Celesto SmolVM (and legacy PyPI smolvm) roots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CelestoRoots {
    /// Every data directory that may hold `celesto.db` / `smolvm.db`, `disks/`, `*.log`,
    /// in the CLI's order of preference. Scanned when they exist; never created.
    pub data_dirs: Vec<RootCandidate>,
    /// Every image cache directory (`CELESTO_IMAGE_DIR`, `SMOLVM_IMAGE_DIR`, `~/.celesto/images`,
    /// `~/.smolvm/images`).
    pub image_dirs: Vec<RootCandidate>,
    /// `~/.celesto` (keys, forwards, bin, credentials).
    pub home_dir: PathBuf,
    /// `~/.smolvm` as PyPI smolvm / legacy Celesto uses it (shared name with smol-machines).
    pub legacy_home_dir: PathBuf,
    /// Socket and libkrun-config directory (`/tmp`).
    pub socket_dir: PathBuf,
}

/// One complete set of smol-machines smolvm roots (the CLI's default for this environment, or
/// the layout under `SMOLVM_DATA_DIR`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SmolvmRootSet {
    /// `default`, `SMOLVM_DATA_DIR`, ...
    pub source: String,
    /// `<data_local_dir>/smolvm`.
    pub data_root: PathBuf,
    /// `<data_root>/server/smolvm.db`.
    pub db_path: PathBuf,
    /// `<cache_dir>/smolvm`.
    pub cache_root: PathBuf,
    /// Machine directory parents: `<cache_root>/vms` (up to 1.32.2) and `<data_root>/vms` (newer).
    pub vms_dirs: Vec<PathBuf>,
    /// `<cache_dir>/smolvm-pack`.
    pub pack_cache: PathBuf,
    /// `<cache_dir>/smolvm-libs`.
    pub libs_cache: PathBuf,
    /// `<cache_dir>/smolvm-registry`.
    pub registry_cache: PathBuf,
    /// `<cache_dir>/smolvm-image-archives`.
    pub image_archives: PathBuf,
    /// `~/.config/smolvm` (also on macOS), or `$SMOLVM_CONFIG`'s directory.
    pub config_dir: PathBuf,
}

/// smol-machines smolvm roots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SmolvmRoots {
    /// The set the CLI uses with this environment first, then any other set worth scanning.
    pub sets: Vec<SmolvmRootSet>,
    /// Install prefixes to look at: `~/.smolvm`, `/opt/smolvm`, `/usr/lib/smolvm`, Homebrew.
    pub install_prefixes: Vec<PathBuf>,
    /// Launchers: `~/.local/bin/smolvm`, `~/.local/bin/smol`, `/usr/local/bin/smolvm`, ...
    pub launchers: Vec<PathBuf>,
}

pub fn celesto_roots(_platform: Platform, _env: &EnvSnapshot) -> CelestoRoots {
    todo!("roots: celesto")
}

pub fn smolvm_roots(_platform: Platform, _env: &EnvSnapshot) -> SmolvmRoots {
    todo!("roots: smolvm")
}

/// What `~/.smolvm` (or any directory with that role) holds, decided by content.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DotSmolvm {
    /// A smol-machines install prefix: `smolvm-bin` and/or `.version` present.
    pub smolvm_install: bool,
    /// The smol-machines version from `.version`.
    pub smolvm_version: Option<String>,
    /// Entries that belong to smol-machines (`smolvm`, `smolvm-bin`, `lib`, `.version`,
    /// templates, `smol`, `smol-bin`, `agent-rootfs`, `kubernetes`, `containerd-shim-smolvm-v2`).
    pub smolvm_entries: Vec<PathBuf>,
    /// Entries that belong to Celesto / PyPI smolvm (`images`, `keys`, `bin`, `forwards`,
    /// `credentials`, `.version_check.json`, `lib/lume-*`).
    pub celesto_entries: Vec<PathBuf>,
    /// Entries neither product claims.
    pub other_entries: Vec<PathBuf>,
}

pub fn dot_smolvm_contents(_dir: &Path) -> std::io::Result<DotSmolvm> {
    todo!("roots: dot_smolvm_contents")
}
