//! The `smolsweep` binary end to end on scratch HOMEs: reaping a real orphaned VM-shaped
//! process and then pruning what it held; stopping machines through the real smolvm 1.32.2.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use smolsweep_fixtures::scene::{CelestoScene, Sleeper};

use smolsweep_fixtures::vmm::{fake_vmm_bin, spawn, Shape};
use smolsweep_fixtures::{Home, Layout, OLD};

fn smolsweep(home: &Home, data: &Path, args: &[&str], path: &str) -> (i32, serde_json::Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_smolsweep"))
        .args(args)
        .env_clear()
        .envs(home.env_vars())
        .env("SMOLSWEEP_DATA_DIR", data)
        .env("PATH", path)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{args:?}: {e}\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), v)
}

fn alive(pid: u32) -> bool {
    // A zombie (our own exited child, not yet waited for) is dead.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            let state = s.rsplit(')').next().unwrap_or("").split_whitespace().next();
            state != Some("Z")
        })
        .unwrap_or(false)
}

#[test]
fn reap_then_prune_frees_an_orphaned_vms_directory() {
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Linux).unwrap();
    let data = t.path().join("smolsweep-data");
    let sm = home.smolvm().unwrap();
    sm.record("kept", serde_json::json!({})).unwrap();
    let dir = sm.dangling_dir("vm-orphan").unwrap();
    smolsweep_fixtures::age_tree(&home.root, OLD).unwrap();
    let bin = fake_vmm_bin(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/fake_vmm.rs"),
        Path::new(env!("CARGO_TARGET_TMPDIR")),
    );
    let vmm = spawn(
        &bin,
        &Shape {
            argv: vec![
                "/proc/self/exe".into(),
                "_boot-vm".into(),
                dir.join("boot-config.json").display().to_string(),
            ],
            comm: Some("libkrun VM"),
            home: Some(&home.root),
            ..Default::default()
        },
    );
    let pid = vmm.pid();
    // While the VM runs, its directory is protected and prune leaves it.
    let (code, v) = smolsweep(&home, &data, &["prune", "--yes", "--json"], "/usr/bin:/bin");
    assert_eq!(code, 0, "{v}");
    assert!(dir.exists());
    // Reap without --yes off a terminal: a dry run, exit 1, the process untouched.
    let (code, v) = smolsweep(&home, &data, &["reap", "--json"], "/usr/bin:/bin");
    assert_eq!(code, 1, "{v}");
    assert!(alive(pid));
    let (code, v) = smolsweep(&home, &data, &["reap", "--yes", "--json"], "/usr/bin:/bin");
    assert_eq!(code, 0, "{v}");
    assert!(!alive(pid), "the orphan was ended: {v}");
    assert_eq!(v["done"].as_array().unwrap().len(), 1, "{v}");
    let (code, v) = smolsweep(&home, &data, &["prune", "--yes", "--json"], "/usr/bin:/bin");
    assert_eq!(code, 0, "{v}");
    assert!(!dir.exists(), "the directory it held is reclaimed: {v}");
    // The journal recorded both runs.
    let out = Command::new(env!("CARGO_BIN_EXE_smolsweep"))
        .args(["history", "--json"])
        .env_clear()
        .envs(home.env_vars())
        .env("SMOLSWEEP_DATA_DIR", &data)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&pid.to_string()), "{text}");
    drop(vmm);
}

#[test]
fn stop_of_a_created_machine_says_so_and_never_calls_smolvm_for_a_ghost() {
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Linux).unwrap();
    let data = t.path().join("smolsweep-data");
    smolsweep_fixtures::real_tools::install_smolvm_script_layout(&home.root).unwrap();
    let out = smolsweep_fixtures::real_tools::smolvm_cmd(&home.root)
        .args(["machine", "create", "--name", "demo"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let path = format!("{}:/usr/bin:/bin", home.path(".local/bin").display());
    // The real smolvm made a `created` machine with no process: nothing to stop, and saying
    // "done" would be a lie, so the named target is refused (exit 1) with what is true.
    let (code, v) = smolsweep(&home, &data, &["stop", "demo", "--yes", "--json"], &path);
    assert_eq!(code, 1, "{v}");
    assert!(
        v.to_string().contains("demo was not running (created)"),
        "{v}"
    );
    let vms = home.path(".cache/smolvm/vms");
    let before: Vec<_> = std::fs::read_dir(&vms)
        .map(|r| r.map(|e| e.unwrap().file_name()).collect())
        .unwrap_or_default();
    let (code, v) = smolsweep(&home, &data, &["stop", "ghost", "--yes", "--json"], &path);
    assert_ne!(code, 2, "{v}");
    let after: Vec<_> = std::fs::read_dir(&vms)
        .map(|r| r.map(|e| e.unwrap().file_name()).collect())
        .unwrap_or_default();
    assert_eq!(
        before, after,
        "hazard 3: stop on a ghost name created nothing"
    );
}

/// Issue 10: Celesto sandboxes are machines of the CLI too: `smolsweep stop` and `delete` reach
/// them through the real celesto CLI (plan, confirm, re-judge, journal), named `celesto:ID`.
#[test]
fn smolsweep_stop_and_delete_reach_celesto_sandboxes_through_the_real_cli() {
    let s = CelestoScene::new();
    let mut vm = Sleeper::new();
    s.add("c4", "running", Some(vm.0.id()));
    s.add("c5", "stopped", None);
    let data = s.root().join("smolsweep-data");
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_smolsweep"))
            .args(args)
            .env_clear()
            .envs(s.vars.iter().map(|(k, v)| (k, v)))
            .env("HOME", &s.home)
            .env("SMOLSWEEP_DATA_DIR", &data)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr),
        )
    };
    let (code, out) = run(&["stop", "c5", "-y"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("c5 was not running (stopped)"), "{out}");

    let (code, out) = run(&["stop", "celesto:c4", "-y"]);
    assert_eq!(code, 0, "{out}");
    let until = Instant::now() + Duration::from_secs(10);
    while vm.alive() {
        assert!(
            Instant::now() < until,
            "celesto did not stop c4's VM: {out}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(s.status("c4").as_deref(), Some("stopped"));

    let (code, out) = run(&["delete", "celesto:c4", "-y"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(s.status("c4"), None, "{out}");
    assert!(!s.state.join("disks/c4.ext4").exists());
    let (_, history) = run(&["history"]);
    assert!(history.contains("delete (cli)"), "{history}");
}

/// `scripts/run.sh ARGS` from the checkout, on `home`, without a graphical session, using the
/// binaries this test run built.
fn run_sh(home: &Home, args: &[&str]) -> std::process::Output {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let bin = Path::new(env!("CARGO_BIN_EXE_smolsweep")).parent().unwrap();
    Command::new("bash")
        .arg(repo.join("scripts/run.sh"))
        .args(args)
        .env_clear()
        .envs(home.env_vars())
        .env("PATH", "/usr/bin:/bin")
        .env("LANG", "C.UTF-8")
        .env("SMOLSWEEP_RUN_PREBUILT", "1")
        .env("SMOLSWEEP_RUN_BIN_DIR", bin)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// Hazard (issue 39, item 2): the main job's one command ran the CLI scan silently, wherever it
/// ran. Without a graphical session `scripts/run.sh` scans this HOME and says how to start the
/// tray app; with arguments it is `smolsweep scan ARGS`. (With a display it starts the app: the
/// desktop suite's `run_sh_starts_the_tray_app_in_a_graphical_session`.)
#[test]
fn run_sh_without_a_display_scans_and_says_how_to_start_the_app() {
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Linux).unwrap();
    let o = run_sh(&home, &[]);
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(out.starts_with("Smolsweep scan of "), "{out}");
    assert!(err.contains("no graphical session here"), "{err}");
    assert!(
        err.contains(
            "to use the tray app, run scripts/run.sh in a desktop session, or install the .deb"
        ),
        "{err}"
    );
    let o = run_sh(&home, &["--json"]);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["schema"], "smolsweep.scan/1");
}

/// Hazard (issue 39, item 2): the quick start grew past the main job. The README's quick start
/// is exactly two commands, one that runs the main job (`scripts/run.sh`: the tray app where a
/// display is) and one that runs every test (`scripts/test.sh`); `.ci/run` calls
/// `scripts/test.sh` and nothing else.
#[test]
fn the_quick_start_is_two_commands_and_ci_runs_test_sh_alone() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(repo.join("README.md")).unwrap();
    let quick = readme
        .split("\n## Quick start\n")
        .nth(1)
        .expect("a quick start")
        .split("\n## ")
        .next()
        .unwrap();
    let block = quick
        .split("```bash\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("a bash block");
    let commands: Vec<&str> = block
        .lines()
        .map(|l| l.split('#').next().unwrap().trim())
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(commands, ["scripts/run.sh", "scripts/test.sh"], "{block}");
    let ci = std::fs::read_to_string(repo.join(".ci/run")).unwrap();
    let steps: Vec<&str> = ci
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .collect();
    assert_eq!(
        steps,
        [r#"exec bash "$(dirname "$0")/../scripts/test.sh""#],
        "{ci}"
    );
}

/// Hazard (issue 39, item 5): History listed a run of 26 actions as 26 lines. Its view shows the
/// first two of the core's lines (what `smolsweep history RUN` prints) and folds the rest into
/// "…and 24 more"; a run of three shows all three (folding one line saves nothing).
#[test]
fn history_folds_a_long_run_after_two_lines() {
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Linux).unwrap();
    let d = home.celesto_data_dir().unwrap();
    for i in 0..26 {
        d.disk(&format!("gone{i:02}"), "qcow2", 1 << 16, 1 << 14)
            .unwrap();
    }
    smolsweep_fixtures::age_tree(t.path(), OLD).unwrap();
    let data = t.path().join("data");
    let (code, v) = smolsweep(&home, &data, &["prune", "-y", "--json"], "/usr/bin:/bin");
    assert_eq!(code, 0, "{v:#}");
    let journal = data.join(smolsweep::journal::JOURNAL_FILE);
    let h = history(&journal);
    let run = &h.runs[0];
    assert_eq!(run.lines.len(), 26);
    assert_eq!(run.shown, 2);
    assert_eq!(run.more.as_deref(), Some("…and 24 more"));
    assert!(run.lines[0].starts_with("done "), "{:?}", run.lines[0]);
    assert_eq!(run.origin_line, "cli · prune");
    let stamp = smolsweep::journal::stamp(Some(&journal));
    assert!(!stamp.is_empty());
    // Another run, by any surface, changes the stamp the window watches.
    for i in 0..3 {
        d.disk(&format!("late{i}"), "qcow2", 1 << 16, 1 << 14)
            .unwrap();
    }
    smolsweep_fixtures::age_tree(t.path(), OLD).unwrap();
    let (code, _) = smolsweep(&home, &data, &["prune", "-y", "--json"], "/usr/bin:/bin");
    assert_eq!(code, 0);
    assert_ne!(smolsweep::journal::stamp(Some(&journal)), stamp);
    let h = history(&journal);
    assert_eq!((h.runs[0].shown, h.runs[0].more.is_none()), (3, true));
}

/// History as the window reads it: the journal's newest runs, in the core's words.
fn history(journal: &std::path::Path) -> smolsweep::view::runs::History {
    use smolsweep::view::runs::HISTORY_RUNS;
    let newest = smolsweep::journal::read_newest(journal, HISTORY_RUNS);
    smolsweep::view::runs::history(Some((journal, newest)), None, &smolsweep::env::SystemZone)
}
