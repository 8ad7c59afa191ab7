//! Headless Smolsweep for shared hosts and CI agents (issue 12): `smolsweep auto --policy FILE`
//! through the one executor, the systemd user units that run it, and the Prometheus text
//! exposition of `scan --format prometheus`, checked by `promtool` as its operators would.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};
use smolsweep_fixtures::{age_tree, Scratch, OLD};

fn scratch() -> Scratch {
    Scratch::new()
}

/// What the tests run on a scratch HOME.
trait Run {
    fn cmd(&self, program: &Path, args: &[&str]) -> Command;
    fn run(&self, args: &[&str]) -> (i32, String);
}

impl Run for Scratch {
    fn cmd(&self, program: &Path, args: &[&str]) -> Command {
        self.command(program, args)
    }
    fn run(&self, args: &[&str]) -> (i32, String) {
        let out = self
            .cmd(Path::new(env!("CARGO_BIN_EXE_smolsweep")), args)
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr),
        )
    }
}

/// Old orphans, a young orphan, a kept orphan and a live sandbox's disk.
struct Layout1 {
    old: PathBuf,
    young: PathBuf,
    kept: PathBuf,
    live: PathBuf,
}

fn layout(s: &Scratch) -> Layout1 {
    let d = s.home.celesto_data_dir().unwrap();
    d.row("live1", "stopped", "qemu", None).unwrap();
    let live = d.disk("live1", "qcow2", 1 << 16, 1 << 14).unwrap();
    let old = d.disk("old1", "qcow2", 1 << 16, 1 << 14).unwrap();
    let kept = d.disk("kept1", "qcow2", 1 << 16, 1 << 14).unwrap();
    let young = d.disk("young1", "qcow2", 1 << 16, 1 << 14).unwrap();
    age_tree(&s.home.root, Duration::from_secs(9 * 86_400)).unwrap();
    age_tree(&young, OLD).unwrap();
    Layout1 {
        old,
        young,
        kept,
        live,
    }
}

fn policy(s: &Scratch, over: Value) -> PathBuf {
    let mut p = json!({"schema": "smolsweep.policy/1", "enabled": true});
    for (k, v) in over.as_object().unwrap() {
        p[k] = v.clone();
    }
    let path = s.home.root.join(".config/smolsweep/auto-policy.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, p.to_string()).unwrap();
    path
}

#[test]
fn auto_applies_the_policy_keeps_young_and_kept_items_and_marks_the_journal() {
    let s = scratch();
    let l = layout(&s);
    assert_eq!(s.run(&["keep", "add", l.kept.to_str().unwrap()]).0, 0);
    let p = policy(&s, json!({}));
    let (code, out) = s.run(&["auto", "--policy", p.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert!(v["done"].to_string().contains("old1.qcow2"), "{v:#}");
    assert!(!l.old.exists());
    assert!(l.young.exists(), "younger than the policy's 7 days");
    assert!(l.kept.exists(), "kept by the user");
    assert!(l.live.exists());
    let (_, history) = s.run(&["history"]);
    assert!(
        history.contains("(auto)"),
        "the journal marks the policy's run: {history}"
    );
}

#[test]
fn auto_asks_instead_of_acting_above_its_cap_and_does_nothing_when_disabled() {
    let s = scratch();
    let l = layout(&s);
    let p = policy(&s, json!({"ask_above": "1k"}));
    let (code, out) = s.run(&["auto", "--policy", p.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["status"], "needs_confirmation", "{v:#}");
    assert!(l.old.exists());
    let p = policy(&s, json!({"enabled": false}));
    let (code, out) = s.run(&["auto", "--policy", p.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("disabled") && l.old.exists());
    std::fs::write(&p, b"{\"schema\": \"other\"}").unwrap();
    let (code, out) = s.run(&["auto", "--policy", p.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(out.contains("smolsweep.policy/1"), "{out}");
}

fn unit(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("packaging/systemd")
        .join(name)
}

#[test]
fn systemd_user_units_verify_and_their_exec_start_runs_auto() {
    let s = scratch();
    // systemd-analyze checks every Documentation= man page and the ExecStart binary: give it
    // the pages the CLI generates and the binary this test built.
    let man = s.dir().join("man");
    assert_eq!(
        s.run(&["man", "--out-dir", man.join("man1").to_str().unwrap()])
            .0,
        0
    );
    let units = s.dir().join("units");
    std::fs::create_dir_all(&units).unwrap();
    for name in ["smolsweep-auto.service", "smolsweep-auto.timer"] {
        let text = std::fs::read_to_string(unit(name)).unwrap();
        let text = text.replace("/usr/bin/smolsweep", env!("CARGO_BIN_EXE_smolsweep"));
        std::fs::write(units.join(name), text).unwrap();
    }
    let runtime = s.dir().join("runtime");
    std::fs::create_dir_all(&runtime).unwrap();
    let out = Command::new("systemd-analyze")
        .args(["--user", "verify"])
        .arg(units.join("smolsweep-auto.service"))
        .arg(units.join("smolsweep-auto.timer"))
        .env("XDG_RUNTIME_DIR", &runtime)
        .env("MANPATH", &man)
        .output()
        .expect("systemd-analyze (Debian systemd) is installed");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let timer = std::fs::read_to_string(unit("smolsweep-auto.timer")).unwrap();
    assert!(timer.contains("WantedBy=timers.target"));

    // No private user manager runs here: run the service's ExecStart as systemd would, with
    // %h the user's home.
    let l = layout(&s);
    policy(&s, json!({}));
    let service = std::fs::read_to_string(unit("smolsweep-auto.service")).unwrap();
    let exec = service
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .unwrap()
        .replace("%h", s.home.root.to_str().unwrap());
    let mut words = exec.split_whitespace();
    assert_eq!(words.next(), Some("/usr/bin/smolsweep"));
    let args: Vec<&str> = words.collect();
    let (code, out) = s.run(&args);
    assert_eq!(code, 0, "{out}");
    assert!(!l.old.exists(), "{out}");
}

/// `promtool check metrics` accepts `text`.
fn assert_promtool_accepts(text: &str) {
    let mut check = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool (Debian prometheus) is installed by scripts/setup/60-promtool.sh");
    use std::io::Write;
    check
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = check.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}{}\n{text}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A HOME with a quote, a backslash and a newline is its own label value, escaped once; one
/// that is not UTF-8 is written escaped and says so in `home_encoding`. promtool accepts both.
#[test]
fn prometheus_home_labels_of_odd_homes_pass_promtool() {
    use std::os::unix::ffi::OsStrExt;
    let s = scratch();
    let quoted = s.dir().join("home \"q\" \\b\nc");
    let mut bytes = s.dir().as_os_str().as_bytes().to_vec();
    bytes.extend_from_slice(b"/home-\xff");
    let odd = PathBuf::from(std::ffi::OsStr::from_bytes(&bytes));
    let dir = s.dir().display().to_string();
    for (home, label) in [
        (&quoted, format!("home=\"{dir}/home \\\"q\\\" \\\\b\\nc\"")),
        (
            &odd,
            format!("home=\"{dir}/home-\\\\xff\",home_encoding=\"escaped\""),
        ),
    ] {
        std::fs::create_dir(home).unwrap();
        let out = s
            .cmd(
                Path::new(env!("CARGO_BIN_EXE_smolsweep")),
                &["scan", "--format", "prometheus"],
            )
            .env("HOME", home)
            .output()
            .unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(out.status.success(), "{text}");
        assert!(
            text.contains(&format!("smolsweep_reclaimable_bytes{{{label}}} ")),
            "{label}\n{text}"
        );
        assert_promtool_accepts(&text);
    }
}

#[test]
fn prometheus_output_passes_promtool_and_equals_the_json() {
    let s = scratch();
    let _l = layout(&s);
    let (code, text) = s.run(&["scan", "--format", "prometheus"]);
    assert_eq!(code, 0, "{text}");
    assert_promtool_accepts(&text);
    let (_, json) = s.run(&["scan", "--json"]);
    let v: Value = serde_json::from_str(&json).unwrap();
    let metric = |name: &str| -> u64 {
        text.lines()
            .find(|l| l.starts_with(&format!("{name}{{")))
            .and_then(|l| l.rsplit(' ').next())
            .unwrap()
            .parse()
            .unwrap()
    };
    let t = &v["totals"];
    assert_eq!(
        metric("smolsweep_reclaimable_bytes"),
        t["reclaimable_allocated_bytes"]
    );
    assert_eq!(
        metric("smolsweep_opt_in_bytes"),
        t["opt_in_allocated_bytes"]
    );
    assert_eq!(
        metric("smolsweep_orphan_vm_processes"),
        t["orphan_process_count"]
    );
    assert_eq!(
        metric("smolsweep_held_deleted_bytes"),
        t["held_deleted_bytes"]
    );
    let orphan_disks: u64 = text
        .lines()
        .filter(|l| {
            l.starts_with("smolsweep_findings{")
                && l.contains("kind=\"celesto.orphan_disk\"")
                && l.contains("verdict=\"reclaimable\"")
        })
        .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
        .sum();
    let json_count = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "celesto.orphan_disk" && f["verdict"] == "reclaimable")
        .count() as u64;
    assert_eq!(orphan_disks, json_count);
    assert!(json_count >= 2);
}
