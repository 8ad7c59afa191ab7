//! Issue 31, item 7: sentences that said two things. Each case the issue lists has its test,
//! named after it, run on the fixture HOME of both products (or a stand-in VM process of
//! another HOME this test spawns).

use std::path::Path;
use std::process::Command;

use crate::golden::{edge_case_home, EdgeCases};

/// `smolsweep ARGS` on the fixture HOME: exit code, stdout, stderr.
fn run(c: &EdgeCases, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_smolsweep"))
        .args(args)
        .env_clear()
        .envs(c.home.env_vars())
        .env("PATH", "/usr/bin:/bin")
        .env("LANG", "C.UTF-8")
        .env("SMOLSWEEP_DATA_DIR", c.t.path().join("data"))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `why /tmp/qmp-x.sock` (absent) printed "Nothing is at …" and "… it is no leftover the scan
/// recognises".
#[test]
fn why_of_an_absent_socket_says_only_that_nothing_is_there() {
    let c = edge_case_home();
    let sock = c.home.sockets().dir.join("qmp-x.sock");
    let (code, out, err) = run(&c, &["why", sock.to_str().unwrap()]);
    let text = format!("{out}{err}");
    assert_eq!(code, 1, "{text}");
    assert_eq!(text.matches("Nothing is at").count(), 1, "{text}");
    assert!(text.contains("socket directory"), "{text}");
    assert!(!text.contains("no leftover the scan recognises"), "{text}");
}

/// `why PID` of another HOME's VM said "belongs to another HOME" twice and told root to "kill
/// as that user" though the uid was the same.
#[test]
fn why_of_another_homes_vm_says_whose_once_and_no_kill_as_that_user() {
    use smolsweep_fixtures::vmm::{boot_vm, fake_vmm_bin};
    let c = edge_case_home();
    let other = tempfile::tempdir().unwrap();
    let bin = fake_vmm_bin(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/fake_vmm.rs"),
        Path::new(env!("CARGO_TARGET_TMPDIR")),
    );
    let dir = other.path().join(".cache/smolvm/vms/0123456789abcdef");
    let vm = boot_vm(&bin, other.path(), &dir);
    let pid = vm.pid().to_string();
    let (_, out, err) = run(&c, &["why", &pid]);
    let text = format!("{out}{err}");
    assert_eq!(text.matches("another HOME").count(), 1, "{text}");
    assert!(!text.contains("as that user"), "{text}");
    assert!(text.contains("run for the HOME it belongs to"), "{text}");
}

/// `apply /etc/passwd` answered "not a plan: expected value at line 1 column 1" without the
/// path.
#[test]
fn apply_of_a_file_that_is_not_a_plan_names_the_file() {
    let c = edge_case_home();
    let f = c.t.path().join("passwd");
    std::fs::write(&f, "root:x:0:0:root:/root:/bin/sh\n").unwrap();
    let (code, _, err) = run(&c, &["apply", f.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(f.to_str().unwrap()) && err.contains("not a plan"),
        "{err}"
    );
}

/// `--kind orphan-disks` pointed at `scan -v` instead of `smolsweep kinds` with a "did you
/// mean".
#[test]
fn a_misspelt_kind_says_did_you_mean_and_smolsweep_kinds() {
    let c = edge_case_home();
    let (code, _, err) = run(&c, &["scan", "--kind", "orphan-disks"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("did you mean orphaned-disks"), "{err}");
    assert!(
        err.contains("smolsweep kinds") && !err.contains("scan -v"),
        "{err}"
    );
}

/// `delete smolvm:m1 -n` of a running machine did not say it is running and will be stopped.
#[test]
fn delete_dry_run_of_a_running_machine_says_it_runs_and_is_stopped_first() {
    let c = edge_case_home();
    let (code, out, err) = run(&c, &["delete", "celesto:fire1", "-n"]);
    assert_eq!(code, 0, "{out}{err}");
    let line = out
        .lines()
        .find(|l| l.contains("sandbox 'fire1'"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        line.contains("it is running") && line.contains("stops it first"),
        "{line}"
    );
    // A machine that does not run is not said to.
    let (_, out, _) = run(&c, &["delete", "smolvm:demo", "-n"]);
    assert!(!out.contains("it is running"), "{out}");
}

/// "frees 0 B (1 items)": a count of one is one item, and 0 B is a size like any other.
#[test]
fn frees_0_b_counts_1_item_not_1_items() {
    let c = edge_case_home();
    let (_, out, _) = run(&c, &["scan", "--kind", "links-named-like-disks"]);
    assert!(
        !out.contains("(1 items)") && !out.contains(" 1 items"),
        "{out}"
    );
    assert!(out.contains("frees 0 B (1 item)"), "{out}");
}

/// Declining the prompt printed "Nothing done." with exit 1 and no word of why the exit is 1.
/// Answered on a terminal (util-linux `script`), as a person answers it.
#[test]
fn declining_the_prompt_says_why_the_exit_is_1() {
    let c = edge_case_home();
    let vars: String = c
        .home
        .env_vars()
        .iter()
        .map(|(k, v)| format!("{k}={v} "))
        .collect();
    let cmd = format!(
        "env -i {vars}PATH=/usr/bin:/bin SMOLSWEEP_DATA_DIR={} {} prune",
        c.t.path().join("data").display(),
        env!("CARGO_BIN_EXE_smolsweep")
    );
    let mut child = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("util-linux script");
    use std::io::Write;
    child.stdin.take().unwrap().write_all(b"n\n").unwrap();
    let o = child.wait_with_output().unwrap();
    let t = String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("Nothing done: not confirmed (exit 1)."), "{t}");
}

/// `verify` suggested `fix=smolsweep stop smolvm:m1` for a machine directory, which stop does
/// not remove: the fix for a machine's or sandbox's own storage is deleting it (a delete stops a
/// running one first).
#[test]
fn verify_fix_for_a_running_machines_directory_is_delete_not_stop() {
    use smolsweep_fixtures::smolvm::DiskSet;
    use smolsweep_fixtures::vmm::{self, Shape};
    let s = smolsweep_fixtures::Scratch::new();
    let sm = s.home.smolvm().unwrap();
    sm.record("m1", serde_json::json!({"state": "running"}))
        .unwrap();
    let dir = sm
        .machine_dir(
            "m1",
            DiskSet::Raw {
                storage: 1 << 16,
                overlay: 1 << 16,
            },
        )
        .unwrap();
    smolsweep_fixtures::age_tree(&s.home.root, smolsweep_fixtures::OLD).unwrap();
    let bin = vmm::standin_bin(Path::new(env!("CARGO_TARGET_TMPDIR")));
    let config = dir.join("boot-config.json").display().to_string();
    let _vm = vmm::spawn(
        &bin,
        &Shape {
            argv: vec!["/proc/self/exe".into(), "_boot-vm".into(), config],
            comm: Some("libkrun VM"),
            open: None,
            home: Some(&s.home.root),
        },
    );
    let out = s
        .command(env!("CARGO_BIN_EXE_smolsweep"), &["verify"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = out
        .lines()
        .find(|l| l.contains(&format!("machine directory {}", dir.display())))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(line.ends_with("fix=smolsweep delete smolvm:m1"), "{line}");
}
