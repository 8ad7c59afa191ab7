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

/// Scan options for a scratch HOME as this test process sees it: the HOME's own variables plus
/// `extra` (e.g. `PATH`), this process's euid, Linux's layout, the usual age guard, now.
pub(crate) fn scan_options(
    home: &smolsweep_fixtures::Home,
    extra: &[(&str, &str)],
) -> crate::scan::ScanOptions {
    let mut vars = home.env_vars();
    vars.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let mut env = crate::env::EnvSnapshot::from_pairs(home.root.clone(), vars);
    env.euid = rustix::process::geteuid().as_raw();
    crate::scan::ScanOptions {
        env,
        platform: crate::model::Platform::Linux,
        age_guard: std::time::Duration::from_secs(120),
        now: std::time::SystemTime::now(),
    }
}

/// A scratch directory for this test process's compiled helpers (`CARGO_TARGET_TMPDIR` exists
/// only for integration tests).
#[cfg(target_os = "linux")]
pub(crate) fn scratch_dir() -> &'static std::path::Path {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("scratch dir"))
        .path()
}
