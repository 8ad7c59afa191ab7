//! Stopping and deleting machines through the real CLIs: smolvm 1.32.2 (from the
//! `smolmachines` wheel, laid out like a script install in a scratch HOME) and celesto 0.1.10
//! (from PyPI, in a virtualenv), plus stand-in CLIs for what the real ones cannot be made to do
//! here (hang, print something new, fail a filesystem freeze).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::env::EnvSnapshot;
use crate::exec::machines::{
    celesto_row, smolvm_record_state, CelestoCli, MachineOutcome, SmolvmCli,
};
use crate::exec::reap::ProcessRef;
use crate::inventory::smolvm::vm_dir_hash;

/// The real tools come from scripts/setup/20-real-tools.sh through the fixture crate.
mod support {
    use std::path::{Path, PathBuf};

    pub use smolsweep_fixtures::real_tools::smolvm_cmd;

    /// Lay smolvm out like `install.sh` does under `home` (§13.2); returns the launcher.
    pub fn install_smolvm_script_layout(home: &Path) -> PathBuf {
        smolsweep_fixtures::real_tools::install_smolvm_script_layout(home)
            .expect("smolvm script layout")
    }

    pub fn make_executable(p: &Path) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

use support::*;

fn smolvm_home() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    install_smolvm_script_layout(&home);
    (tmp, home)
}

fn db_of(home: &Path) -> PathBuf {
    home.join(".local/share/smolvm/server/smolvm.db")
}

fn vms_of(home: &Path) -> PathBuf {
    home.join(".cache/smolvm/vms")
}

fn env_for(home: &Path) -> EnvSnapshot {
    EnvSnapshot::from_pairs(home, [("PATH", "/usr/bin:/bin")])
}

fn cli_for(home: &Path) -> SmolvmCli {
    let mut cli = SmolvmCli::locate(&env_for(home), db_of(home)).expect("smolvm located");
    cli.timeout = Duration::from_secs(60);
    cli
}

fn create(home: &Path, name: &str) {
    let out = smolvm_cmd(home)
        .args(["machine", "create", "--name", name])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "machine create: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("Created machine: {name}")));
}

/// Rewrite a record's JSON, keeping it a BLOB (TEXT breaks smolvm: hazard 20).
fn edit_record(home: &Path, name: &str, json_set_args: &str) {
    let conn = rusqlite::Connection::open(db_of(home)).unwrap();
    conn.busy_timeout(Duration::from_secs(10)).unwrap();
    let n = conn
        .execute(
            &format!(
                "UPDATE vms SET data = CAST(json_set(CAST(data AS TEXT), {json_set_args}) AS BLOB) \
                 WHERE name = ?1"
            ),
            [name],
        )
        .unwrap();
    assert_eq!(n, 1);
    let ty: String = conn
        .query_row(
            "SELECT typeof(data) FROM vms WHERE name = ?1",
            [name],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(ty, "blob");
}

/// A stand-in CLI: records its argv and environment, then runs `body`.
fn stand_in(dir: &Path, body: &str) -> (PathBuf, PathBuf) {
    let log = dir.join("stand-in.log");
    let prog = dir.join("smolvm-stand-in");
    std::fs::write(
        &prog,
        format!(
            "#!/bin/bash\nprintf 'argv %s\\n' \"$*\" >> '{log}'\nenv | sort | sed 's/^/env /' >> '{log}'\n{body}\n",
            log = log.display()
        ),
    )
    .unwrap();
    make_executable(&prog);
    (prog, log)
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}

#[test]
fn real_smolvm_is_located_and_answers() {
    let (_t, home) = smolvm_home();
    let cli = cli_for(&home);
    assert_eq!(cli.program, home.join(".smolvm/smolvm"));
    let out = smolvm_cmd(&home).arg("--version").output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "smolvm 1.32.2");
}

#[test]
fn locate_skips_the_other_smolvm() {
    let tmp = tempfile::tempdir().unwrap();
    let bin = tmp.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    // Celesto / PyPI smolvm's entry point has the same command name.
    let py = bin.join("smolvm");
    std::fs::write(
        &py,
        "#!/usr/bin/python3\nfrom smolvm.cli.main import main\nmain()\n",
    )
    .unwrap();
    make_executable(&py);
    let env = EnvSnapshot::from_pairs(tmp.path(), [("PATH", bin.to_str().unwrap())]);
    let found = SmolvmCli::locate(&env, tmp.path().join("db"));
    assert!(
        !matches!(&found, Some(c) if c.program == py),
        "picked the Python smolvm: {found:?}"
    );
}

#[test]
fn stop_on_a_created_machine_is_not_running() {
    let (_t, home) = smolvm_home();
    create(&home, "demo");
    assert_eq!(
        cli_for(&home).stop("demo"),
        MachineOutcome::NotRunning {
            state: "created".into()
        }
    );
    assert_eq!(
        smolvm_record_state(&db_of(&home), "demo")
            .unwrap()
            .as_deref(),
        Some("created")
    );
}

/// Hazard 12: `machine delete` without `--force` on a non-TTY exits 1 (v1.17+; earlier it
/// printed `Cancelled` and exited 0). We always pass `--force`.
#[test]
fn hazard_12_delete_without_force_on_non_tty() {
    let (_t, home) = smolvm_home();
    create(&home, "demo");
    // The trap, as the real CLI shows it.
    let out = smolvm_cmd(&home)
        .args(["machine", "delete", "--name", "demo"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("needs confirmation but stdin is not a terminal"));
    assert!(smolvm_record_state(&db_of(&home), "demo")
        .unwrap()
        .is_some());
    // Through Smolsweep.
    assert_eq!(
        cli_for(&home).delete("demo", false),
        MachineOutcome::Deleted
    );
    assert_eq!(smolvm_record_state(&db_of(&home), "demo").unwrap(), None);
}

/// Hazard 13: a paused machine with saved execution refuses `stop`; resume or delete is offered.
#[test]
fn hazard_13_paused_machine_refuses_stop() {
    let (t, home) = smolvm_home();
    create(&home, "p1");
    let ckpt = t.path().join("missing-checkpoint");
    edit_record(
        &home,
        "p1",
        &format!(
            "'$.state', 'paused', '$.paused_checkpoint', '{}'",
            ckpt.display()
        ),
    );
    let cli = cli_for(&home);
    assert_eq!(cli.stop("p1"), MachineOutcome::Paused);
    assert_eq!(
        smolvm_record_state(&db_of(&home), "p1").unwrap().as_deref(),
        Some("paused")
    );
    // Resume cannot work here (the checkpoint does not exist): reported as it is, not as success.
    match cli.resume("p1") {
        MachineOutcome::Unexpected { code, stderr, .. } => {
            assert_eq!(code, Some(1));
            assert!(stderr.contains("checkpoint"), "{stderr}");
        }
        other => panic!("{other:?}"),
    }
    // Delete (always --force) clears it.
    assert_eq!(cli.delete("p1", false), MachineOutcome::Deleted);
    assert_eq!(smolvm_record_state(&db_of(&home), "p1").unwrap(), None);
}

/// Observed with 1.32.2: a record whose state says `paused` but that holds no saved execution is
/// not refused; stop reports it not running.
#[test]
fn paused_record_without_saved_execution_reads_not_running() {
    let (_t, home) = smolvm_home();
    create(&home, "p2");
    edit_record(&home, "p2", "'$.state', 'paused'");
    assert_eq!(
        cli_for(&home).stop("p2"),
        MachineOutcome::NotRunning {
            state: "paused".into()
        }
    );
}

/// Hazard 3: `stop` on a name with no record creates `vms/<hash>/` and
/// `.<name>.fork-operation.lock`. Smolsweep checks the DB first and never runs the CLI.
#[test]
fn hazard_3_stop_on_ghost_name_never_calls_cli() {
    let (t, home) = smolvm_home();
    create(&home, "demo");
    let vms = vms_of(&home);
    let ghost_dir = vms.join(vm_dir_hash("ghost"));
    let ghost_lock = vms.join(".ghost.fork-operation.lock");
    let cli = cli_for(&home);
    assert_eq!(cli.stop("ghost"), MachineOutcome::NotFound);
    assert_eq!(cli.delete("ghost", true), MachineOutcome::NotFound);
    assert_eq!(cli.resume("ghost"), MachineOutcome::NotFound);
    assert!(!ghost_dir.exists(), "{} appeared", ghost_dir.display());
    assert!(!ghost_lock.exists(), "{} appeared", ghost_lock.display());
    // Not even started: a stand-in CLI on the same DB records nothing.
    let (prog, log) = stand_in(t.path(), "exit 0");
    let spy = SmolvmCli {
        program: prog,
        ..cli.clone()
    };
    assert_eq!(spy.stop("ghost"), MachineOutcome::NotFound);
    assert_eq!(read(&log), "");
    // The hazard is real: the CLI itself, given the ghost name, leaves both behind.
    let out = smolvm_cmd(&home)
        .args(["machine", "stop", "--name", "ghost"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("vm not found: ghost"));
    assert!(ghost_dir.exists() && ghost_lock.exists());
}

#[test]
fn no_database_means_not_found_and_nothing_is_created() {
    let (_t, home) = smolvm_home();
    let cli = cli_for(&home);
    assert_eq!(cli.stop("demo"), MachineOutcome::NotFound);
    assert_eq!(cli.delete("demo", false), MachineOutcome::NotFound);
    // Running the CLI would have created the DB and `usage/` (the data root itself exists:
    // install.sh puts the agent rootfs there).
    assert!(!db_of(&home).exists());
    assert!(!home.join(".local/share/smolvm/usage").exists());
    assert!(!home.join(".cache/smolvm").exists());
}

#[test]
fn delete_passes_force_always_and_cascade_only_when_asked() {
    let (t, home) = smolvm_home();
    create(&home, "demo");
    let (prog, log) = stand_in(t.path(), "echo 'Deleted machine: demo'");
    let spy = SmolvmCli {
        program: prog,
        ..cli_for(&home)
    };
    assert_eq!(spy.delete("demo", false), MachineOutcome::Deleted);
    assert_eq!(spy.delete("demo", true), MachineOutcome::Deleted);
    let argv: Vec<String> = read(&log)
        .lines()
        .filter_map(|l| l.strip_prefix("argv ").map(String::from))
        .collect();
    assert_eq!(
        argv,
        [
            "machine delete --name demo --force",
            "machine delete --name demo --force --cascade"
        ]
    );
    // Only the environment Smolsweep chose reaches the CLI.
    let envs: Vec<String> = read(&log)
        .lines()
        .filter_map(|l| l.strip_prefix("env ").map(String::from))
        .filter(|l| !l.starts_with("PWD=") && !l.starts_with("SHLVL=") && !l.starts_with("_="))
        .collect();
    assert!(
        envs.contains(&format!("HOME={}", home.display())),
        "{envs:?}"
    );
    assert!(
        envs.iter()
            .all(|e| e.starts_with("HOME=") || e.starts_with("PATH=")),
        "{envs:?}"
    );
}

#[test]
fn a_name_that_looks_like_an_option_is_refused() {
    let (_t, home) = smolvm_home();
    assert!(matches!(
        cli_for(&home).stop("--all"),
        MachineOutcome::InvalidName { .. }
    ));
}

#[test]
fn missing_cli() {
    let (_t, home) = smolvm_home();
    create(&home, "demo");
    let cli = SmolvmCli {
        program: home.join("no/such/smolvm"),
        ..cli_for(&home)
    };
    assert_eq!(cli.stop("demo"), MachineOutcome::CliMissing);
    assert_eq!(cli.delete("demo", false), MachineOutcome::CliMissing);
}

fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(s) => {
            let state = s[s.rfind(')').unwrap() + 2..].chars().next().unwrap();
            state == 'Z' || state == 'X'
        }
    }
}

#[test]
fn hanging_cli_times_out_and_its_process_group_is_killed() {
    let (t, home) = smolvm_home();
    create(&home, "demo");
    let pids = t.path().join("pids");
    let (prog, _log) = stand_in(
        t.path(),
        &format!(
            "echo $$ > '{p}'; sleep 600 & echo $! >> '{p}'; wait",
            p = pids.display()
        ),
    );
    let cli = SmolvmCli {
        program: prog,
        timeout: Duration::from_millis(1500),
        ..cli_for(&home)
    };
    let started = Instant::now();
    assert_eq!(cli.stop("demo"), MachineOutcome::TimedOut);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    let listed: Vec<u32> = read(&pids)
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect();
    assert_eq!(listed.len(), 2, "the stand-in did not start its child");
    let until = Instant::now() + Duration::from_secs(5);
    while !listed.iter().all(|p| gone(*p)) {
        assert!(Instant::now() < until, "left alive: {listed:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn unexpected_output_is_reported_not_guessed() {
    let (t, home) = smolvm_home();
    create(&home, "demo");
    let (prog, _) = stand_in(t.path(), "echo 'Machine demo is now asleep'; exit 0");
    let cli = SmolvmCli {
        program: prog,
        ..cli_for(&home)
    };
    match cli.stop("demo") {
        MachineOutcome::Unexpected { code, stdout, .. } => {
            assert_eq!(code, Some(0));
            assert!(stdout.contains("asleep"));
        }
        other => panic!("{other:?}"),
    }
    let (prog, _) = stand_in(t.path(), "echo 'panicked at src/main.rs' >&2; exit 101");
    let cli = SmolvmCli {
        program: prog,
        ..cli_for(&home)
    };
    assert!(matches!(
        cli.delete("demo", false),
        MachineOutcome::Unexpected {
            code: Some(101),
            ..
        }
    ));
}

/// Hazard 22: the guest cannot freeze its filesystem; the VMM is left alive. The outcome asks
/// for reap, then delete (not producible without a running guest: a stand-in prints the
/// documented message).
#[test]
fn hazard_22_fs_sync_failure_offers_reap_then_delete() {
    let (t, home) = smolvm_home();
    create(&home, "demo");
    let (prog, _) = stand_in(
        t.path(),
        "echo 'Error: agent operation failed: stop agent: guest did not confirm filesystem synchronization; left the VM alive for retry: agent operation failed: shutdown ack: freeze /oldroot/mnt/overlay: I/O error (os error 5)' >&2; exit 1",
    );
    let cli = SmolvmCli {
        program: prog,
        ..cli_for(&home)
    };
    assert_eq!(cli.delete("demo", false), MachineOutcome::FsSyncFailed);
}

/// Hazard 22 and #787, the way out: reap the VMM (verified), then delete again, and the delete
/// runs only after the VMM is confirmed dead.
#[test]
fn hazard_22_reap_then_delete_only_after_the_vmm_is_dead() {
    let (t, home) = smolvm_home();
    create(&home, "demo");
    // A "VMM" that ignores SIGTERM, as smolvm's can.
    let ready = t.path().join("ready");
    let mut vmm = Sleeper(
        Command::new("bash")
            .arg("-c")
            .arg("trap '' TERM; touch \"$1\"; exec sleep 600")
            .arg("bash")
            .arg(&ready)
            .stdin(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let pid = vmm.0.id();
    let until = Instant::now() + Duration::from_secs(10);
    while !(ready.exists()
        && std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "sleep"))
    {
        assert!(Instant::now() < until);
        std::thread::sleep(Duration::from_millis(10));
    }
    let target = ProcessRef::current(pid).unwrap();
    // The stand-in CLI records whether the VMM was still running when it was called.
    let (prog, log) = stand_in(
        t.path(),
        &format!(
            "s=$(cut -d' ' -f3 /proc/{pid}/stat 2>/dev/null); echo \"vmm-state ${{s:-gone}}\" >> '{}'; \
             echo 'Deleted machine: demo'",
            t.path().join("stand-in.log").display()
        ),
    );
    let cli = SmolvmCli {
        program: prog,
        ..cli_for(&home)
    };
    let opts = crate::exec::reap::ReapOptions {
        term_grace: Duration::from_millis(300),
        kill_grace: Duration::from_secs(5),
    };
    // A stale identity: nothing is signalled and the CLI is not called.
    let stale = ProcessRef {
        start_time: target.start_time + 7,
        ..target
    };
    let (r, d) = cli.delete_after_reap("demo", &stale, false, &opts);
    assert!(
        matches!(r, crate::exec::reap::ReapOutcome::IdentityMismatch { .. }),
        "{r:?}"
    );
    assert_eq!(d, None);
    assert!(vmm.alive());
    assert_eq!(read(&log), "");
    // The real identity: SIGKILL after the grace, then the delete.
    let (r, d) = cli.delete_after_reap("demo", &target, false, &opts);
    assert!(r.death_confirmed(), "{r:?}");
    assert_eq!(d, Some(MachineOutcome::Deleted));
    let states: Vec<String> = read(&log)
        .lines()
        .filter_map(|l| l.strip_prefix("vmm-state ").map(String::from))
        .collect();
    assert_eq!(states.len(), 1);
    assert!(
        states[0] == "Z" || states[0] == "gone",
        "delete ran while the VMM was {}",
        states[0]
    );
    // A ghost name: nothing is reaped at all.
    let mut other = Sleeper::new();
    let other_ref = ProcessRef::current(other.0.id()).unwrap();
    let (_, d) = cli.delete_after_reap("ghost", &other_ref, false, &opts);
    assert_eq!(d, Some(MachineOutcome::NotFound));
    assert!(other.alive());
}

// ---------------------------------------------------------------------------------------------
// Celesto

/// The fixture crate's Celesto scene, with this crate's environment and CLI handle.
struct CelestoScene(smolsweep_fixtures::scene::CelestoScene);

impl std::ops::Deref for CelestoScene {
    type Target = smolsweep_fixtures::scene::CelestoScene;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl CelestoScene {
    fn new() -> CelestoScene {
        CelestoScene(smolsweep_fixtures::scene::CelestoScene::new())
    }

    fn env(&self) -> EnvSnapshot {
        EnvSnapshot::from_pairs(
            &self.home,
            self.vars.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        )
    }

    fn cli(&self) -> CelestoCli {
        let mut c = CelestoCli::locate(&self.env(), self.db()).expect("celesto located");
        c.timeout = Duration::from_secs(120);
        c
    }
}

use smolsweep_fixtures::scene::Sleeper;

#[test]
fn celesto_stop_and_delete_with_the_real_cli() {
    let s = CelestoScene::new();
    let cli = s.cli();
    // A stopped sandbox: nothing to stop (the CLI is not needed).
    s.add("c1", "stopped", None);
    assert_eq!(
        cli.stop("c1", None),
        MachineOutcome::NotRunning {
            state: "stopped".into()
        }
    );
    // A row that says running without a pid: the real CLI stops it.
    s.add("c2", "running", None);
    assert_eq!(cli.stop("c2", None), MachineOutcome::Stopped);
    assert_eq!(
        celesto_row(&s.db(), "c2").unwrap().unwrap().status,
        "stopped"
    );
    // Delete through the real CLI: row, disk and log go.
    assert_eq!(cli.delete("c1", None), MachineOutcome::Deleted);
    assert_eq!(celesto_row(&s.db(), "c1").unwrap(), None);
    assert!(!s.state.join("disks/c1.ext4").exists());
    assert!(!s.state.join("c1.log").exists());
    // No row: never passed to the CLI (it would reclaim files outside any plan).
    std::fs::write(s.state.join("disks/orphan.ext4"), b"x").unwrap();
    assert_eq!(cli.delete("orphan", None), MachineOutcome::NotFound);
    assert!(s.state.join("disks/orphan.ext4").exists());
}

/// Celesto B7: `sandbox stop`/`delete` SIGTERM/SIGKILL whatever process holds the stored pid.
/// Smolsweep runs them only when that pid is still the recorded process.
#[test]
fn b7_celesto_stop_on_a_reused_pid_is_refused() {
    let s = CelestoScene::new();
    let cli = s.cli();
    let mut unrelated = Sleeper::new();
    let pid = unrelated.0.id();
    s.add("c3", "running", Some(pid));
    let now = ProcessRef::current(pid).unwrap();
    let stale = ProcessRef {
        start_time: now.start_time - 1,
        ..now
    };
    assert_eq!(cli.stop("c3", None), MachineOutcome::PidNotVerified { pid });
    assert_eq!(
        cli.stop("c3", Some(&stale)),
        MachineOutcome::PidNotVerified { pid }
    );
    assert_eq!(
        cli.delete("c3", Some(&stale)),
        MachineOutcome::PidNotVerified { pid }
    );
    std::thread::sleep(Duration::from_millis(300));
    assert!(unrelated.alive(), "the unrelated process was signalled");
    assert!(s.state.join("disks/c3.ext4").exists());
    // When the pid is verified to be the recorded process, the real CLI stops it.
    assert_eq!(cli.stop("c3", Some(&now)), MachineOutcome::Stopped);
    let until = Instant::now() + Duration::from_secs(10);
    while unrelated.alive() {
        assert!(
            Instant::now() < until,
            "celesto did not stop the verified process"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Celesto B8: `sandbox delete` on a sandbox with no row but a live VMM (an SDK sandbox)
/// deletes its disk and log under the running process and reports success. Smolsweep never
/// passes an id without a row to the CLI.
#[test]
fn b8_rowless_running_sandbox_is_never_passed_to_delete() {
    let s = CelestoScene::new();
    let disk = s.state.join("disks/sdk1.qcow2");
    let log = s.state.join("sdk1.log");
    std::fs::write(&disk, vec![0u8; 4096]).unwrap();
    std::fs::write(&log, "boot\n").unwrap();
    // A QEMU-shaped process holding the disk open, as an SDK VM would.
    let mut vmm = Sleeper(
        Command::new("bash")
            .arg("-c")
            .arg("exec 3<\"$1\"; exec -a \"qemu-system-x86_64 -drive file=$1,if=none\" sleep 600")
            .arg("bash")
            .arg(&disk)
            .stdin(Stdio::null())
            .spawn()
            .unwrap(),
    );
    assert_eq!(s.cli().delete("sdk1", None), MachineOutcome::NotFound);
    assert_eq!(s.cli().stop("sdk1", None), MachineOutcome::NotFound);
    assert!(disk.exists() && log.exists());
    assert!(vmm.alive());
    // The hazard is real: celesto itself deletes both under the live process.
    let cli = s.cli();
    let out = Command::new(&cli.program)
        .args(["sandbox", "delete", "sdk1", "--json"])
        .env_clear()
        .envs(cli.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(!disk.exists() && !log.exists());
    assert!(vmm.alive());
}

/// Celesto B6: an id with a path in it is refused before any command is built.
#[test]
fn b6_invalid_sandbox_id_never_reaches_the_cli() {
    let s = CelestoScene::new();
    let (prog, log) = stand_in(s.state.parent().unwrap(), "exit 0");
    let spy = CelestoCli {
        program: prog,
        ..s.cli()
    };
    for id in ["../../outside", "UPPER", "a.b", "-rf", ""] {
        assert_eq!(
            spy.delete(id, None),
            MachineOutcome::InvalidName { name: id.into() }
        );
        assert_eq!(
            spy.stop(id, None),
            MachineOutcome::InvalidName { name: id.into() }
        );
    }
    assert_eq!(read(&log), "");
}

#[test]
fn celesto_cli_missing_and_unexpected() {
    let s = CelestoScene::new();
    s.add("c4", "running", None);
    let missing = CelestoCli {
        program: s.state.join("nope/celesto"),
        ..s.cli()
    };
    assert_eq!(missing.stop("c4", None), MachineOutcome::CliMissing);
    let (prog, _) = stand_in(s.state.parent().unwrap(), "echo 'Stopped!'");
    let odd = CelestoCli {
        program: prog,
        ..s.cli()
    };
    assert!(matches!(
        odd.stop("c4", None),
        MachineOutcome::Unexpected { .. }
    ));
}

/// `machine delete --cascade` also deletes every machine branched from the one named: it is
/// passed only when the user chose it, with every branch named in the plan, and a branch made
/// after the plan stops the delete (the real smolvm 1.32.2 CLI does the deleting).
#[test]
fn cascade_delete_only_when_chosen_and_with_every_branch_in_the_plan() {
    use crate::exec::RealRunner;
    use crate::exec::{execute, Confirmed, ExecContext, How, Outcome};
    use crate::model::Platform;
    use crate::plan::{Action, Plan, Selection};
    use crate::scan::{scan, ScanOptions};

    let (_t, home) = smolvm_home();
    for m in ["base", "kid", "grandkid", "other"] {
        create(&home, m);
    }
    edit_record(&home, "kid", "'$.golden', 'base'");
    edit_record(&home, "grandkid", "'$.golden', 'kid'");
    let mut env = env_for(&home);
    env.euid = rustix::process::geteuid().as_raw();
    let scan_now = || {
        scan(&ScanOptions {
            env: env.clone(),
            platform: Platform::Linux,
            age_guard: Duration::from_secs(120),
            now: std::time::SystemTime::now(),
        })
    };
    let select = |cascade| Selection {
        delete_machines: vec!["base".into()],
        cascade,
        ..Default::default()
    };
    let deletes = |p: &Plan| -> Vec<(String, bool, Vec<String>)> {
        p.actions
            .iter()
            .filter_map(|a| match &a.action {
                Action::DeleteMachine {
                    name,
                    cascade,
                    children,
                    ..
                } => Some((name.clone(), *cascade, children.clone())),
                _ => None,
            })
            .collect()
    };

    // Not chosen: the machine is not planned, and the plan says why.
    let plan = Plan::from_scan(&scan_now(), &select(false));
    assert!(deletes(&plan).is_empty(), "{plan:#?}");
    let why = &plan
        .skipped_at_plan
        .iter()
        .find(|s| s.id == "machine:base")
        .unwrap()
        .why;
    assert!(
        why.contains("grandkid, kid") && why.contains("cascade"),
        "{why}"
    );

    // Chosen: the branches are named.
    let plan = Plan::from_scan(&scan_now(), &select(true));
    assert_eq!(
        deletes(&plan),
        [("base".into(), true, vec!["grandkid".into(), "kid".into()])]
    );

    // A branch made after the plan: nothing is deleted.
    create(&home, "late");
    edit_record(&home, "late", "'$.golden', 'kid'");
    let runner = RealRunner::new(env.clone(), Platform::Linux);
    let run = |plan: &Plan| {
        let mut judge = crate::exec::Rejudge::new(ScanOptions {
            env: env.clone(),
            platform: Platform::Linux,
            age_guard: Duration::from_secs(120),
            now: std::time::SystemTime::now(),
        });
        let confirmed = Confirmed::of(plan, How::YesFlag);
        execute(plan, ExecContext::confirmed(confirmed, &runner, &mut judge)).unwrap()
    };
    let r = run(&plan);
    match &r.records[0].outcome {
        Outcome::Skipped { why, .. } => assert!(why.contains("late"), "{why}"),
        o => panic!("{o:?}"),
    }
    for m in ["base", "kid", "grandkid", "late", "other"] {
        assert!(
            matches!(smolvm_record_state(&db_of(&home), m), Ok(Some(_))),
            "{m} was deleted"
        );
    }

    // Planned again with every branch: the real CLI deletes the family and nothing else.
    let plan = Plan::from_scan(&scan_now(), &select(true));
    assert_eq!(
        deletes(&plan),
        [(
            "base".into(),
            true,
            vec!["grandkid".into(), "kid".into(), "late".into()]
        )]
    );
    let r = run(&plan);
    assert!(r.records[0].outcome.is_done(), "{:?}", r.records[0].outcome);
    for m in ["base", "kid", "grandkid", "late"] {
        assert_eq!(smolvm_record_state(&db_of(&home), m), Ok(None), "{m}");
    }
    assert!(matches!(
        smolvm_record_state(&db_of(&home), "other"),
        Ok(Some(_))
    ));
}
