//! White-box tests of the crate's private floors (inventories, the process table, sizing, the
//! reaper, mount detaching, product roots), which the integration tests in `tests/it/` cannot
//! reach through the public facade. They share the fixtures crate with those tests.

mod detach;
mod inventory;
mod layout;
mod machines;
// `/proc` and real processes read through it: Linux only.
#[cfg(target_os = "linux")]
mod procmemo;
#[cfg(target_os = "linux")]
mod procs;
mod procs_macos;
mod reap;
mod roots;
mod size;

/// A scratch directory for this test process's compiled helpers (`CARGO_TARGET_TMPDIR` exists
/// only for integration tests).
#[cfg(target_os = "linux")]
pub(crate) fn scratch_dir() -> &'static std::path::Path {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("scratch dir"))
        .path()
}
