//! Every integration test of the core crate, in one binary: one link instead of one per file.
//! A file's tests are named `<file>::…`: `cargo test --test it golden::` runs `golden.rs`.
//!
//! All of them share one process and run in parallel with each other, so a test changes nothing
//! process-wide (environment, working directory, umask, rlimits, signal dispositions) that
//! another could observe, and signals and waits only for processes it started itself.

mod browse;
mod cli_conventions;
mod cli_e2e;
mod cli_help;
mod compact;
mod compact_faces;
mod counts;
mod fixtures_selftest;
mod fleet;
mod golden;
mod hazards;
mod headless;
mod house;
mod incremental;
mod inputs;
mod items;
mod keep;
mod nouns;
mod one_number;
mod one_story;
mod pipeline;
mod procmemo;
// A real QEMU VM watched through `/proc`: Linux only.
mod reach;
#[cfg(target_os = "linux")]
mod real_vm;
mod reclaim;
mod rejudge;
mod scan;
mod screen;
mod trend;
mod truthful;
mod two_things;
mod uninstall;
mod upstream_compare;
mod vocabulary;
mod why;
mod widths;

/// Scan options for a fixture HOME on Linux: its environment with a plain `PATH`, this
/// process's euid, the usual 120 s age guard, now.
pub(crate) fn scan_options(home: &smolsweep_fixtures::Home) -> smolsweep::scan::ScanOptions {
    let mut vars = home.env_vars();
    vars.push(("PATH".into(), "/usr/bin:/bin".into()));
    let mut env = smolsweep::env::EnvSnapshot::from_pairs(home.root.clone(), vars);
    env.euid = rustix::process::geteuid().as_raw();
    smolsweep::scan::ScanOptions {
        env,
        platform: smolsweep::model::Platform::Linux,
        age_guard: std::time::Duration::from_secs(120),
        now: std::time::SystemTime::now(),
    }
}

/// Run `plan` the way every surface does (`exec::run`), on `road` (a test's own judge and runner:
/// `Road::given`), journaled in a scratch journal that is dropped afterwards: `confirmed`, or a
/// dry run when it is `None`. A test that reads the journal sets its own with `journal_at`.
pub(crate) fn run_given(
    plan: &smolsweep::plan::Plan,
    confirmed: Option<smolsweep::exec::Confirmed>,
    road: smolsweep::exec::Road<'_>,
) -> Result<smolsweep::exec::ExecReport, smolsweep::exec::RunError> {
    let scratch = tempfile::tempdir().expect("a scratch directory for the journal");
    let road = road.journal_at(scratch.path().join("journal.jsonl"));
    smolsweep::exec::run(
        plan,
        confirmed,
        smolsweep::exec::Origin::new("cli", "test"),
        road,
    )
}

/// `smolsweep ARGS` in scratch `s`: its exit code, and its stdout followed by its stderr.
pub(crate) fn cli_run(s: &smolsweep_fixtures::Scratch, args: &[&str]) -> (i32, String) {
    let out = s
        .command(env!("CARGO_BIN_EXE_smolsweep"), args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

/// `smolsweep scan --json` in scratch `s`, which must succeed, as JSON.
pub(crate) fn cli_scan(s: &smolsweep_fixtures::Scratch) -> serde_json::Value {
    let (code, out) = cli_run(s, &["scan", "--json"]);
    assert_eq!(code, 0, "{out}");
    serde_json::from_str(&out).unwrap()
}
