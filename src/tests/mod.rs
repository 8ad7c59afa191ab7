//! White-box tests of the crate's private floors (inventories, the process table, sizing, the
//! reaper, mount detaching, product roots), which the integration tests in `tests/it/` cannot
//! reach through the public facade. They share the fixtures crate with those tests.

mod detach;
mod inventory;
mod machines;
mod procmemo;
mod procs;
mod reap;
mod roots;
mod size;

/// A scratch directory for this test process's compiled helpers (`CARGO_TARGET_TMPDIR` exists
/// only for integration tests).
pub(crate) fn scratch_dir() -> &'static std::path::Path {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("scratch dir"))
        .path()
}
