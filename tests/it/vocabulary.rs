//! One truth in words people read (issue 10): `stop` says what really happened and names a
//! command that will accept the next step, every `fix=` hint of `verify` is one, machines of
//! both products are named unambiguously, scan ids reach `plan --id`, and "changed since the
//! scan" is judged at full precision.
//!
//! Each test runs the built binary on a scratch HOME it creates; only processes a test spawned
//! are signalled.

use std::path::Path;

use serde_json::{json, Value};
use smolsweep_fixtures::vmm::{self, FakeVmm};
use smolsweep_fixtures::{age_tree, smolvm::DiskSet, Scratch, OLD};

fn scratch() -> Scratch {
    Scratch::new()
}

/// What the tests run on a scratch HOME.
trait Run {
    fn run(&self, args: &[&str]) -> (i32, String, String);
    fn json(&self, args: &[&str]) -> Value;
}

impl Run for Scratch {
    fn run(&self, args: &[&str]) -> (i32, String, String) {
        let out = self
            .command(env!("CARGO_BIN_EXE_smolsweep"), args)
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
    fn json(&self, args: &[&str]) -> Value {
        let (code, out, err) = self.run(args);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?} exit {code}: {e}\n{err}"))
    }
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s[s.rfind(')')? + 2..].chars().next())
        .is_some_and(|c| c != 'Z')
}

#[test]
fn stop_of_a_machine_that_is_not_running_says_what_happened_and_names_the_reap() {
    // The record says `created` (no pid), no smolvm command holds vm.lock, yet a `_boot-vm`
    // boots its directory: the manager of an interrupted `machine start` is gone.
    let s = scratch();
    let sm = s.home.smolvm().unwrap();
    sm.record("m1", json!({"state": "created"})).unwrap();
    let dir = sm
        .machine_dir(
            "m1",
            DiskSet::Raw {
                storage: 1 << 16,
                overlay: 1 << 16,
            },
        )
        .unwrap();
    age_tree(&s.home.root, OLD).unwrap();
    let mut vm = vmm::boot_vm(
        &vmm::standin_bin(Path::new(env!("CARGO_TARGET_TMPDIR"))),
        &s.home.root,
        &dir,
    );
    let pid = vm.pid();

    let (code, out, err) = s.run(&["stop", "m1", "-y"]);
    assert_eq!(code, 1, "nothing was stopped: {out}{err}");
    assert!(!out.contains("stopped"), "{out}");
    assert!(err.contains("m1 was not running"), "{err}");
    let hint = format!("smolsweep reap {pid}");
    assert!(err.contains(&hint), "names the command that helps: {err}");
    assert!(alive(pid));

    // And that command accepts it.
    let (code, out, err) = s.run(&["reap", &pid.to_string(), "-y"]);
    assert_eq!(code, 0, "{out}{err}");
    let _ = vm.kill(); // reaped: reap the zombie of our own child
    assert!(!alive(pid), "reap ended the VM it was pointed to");
}

#[test]
fn a_machine_booted_by_a_live_smolvm_command_is_not_called_an_orphan() {
    // Same layout, but a smolvm command holds vm.lock (a `machine start` is under way).
    let s = scratch();
    let sm = s.home.smolvm().unwrap();
    sm.record("m2", json!({"state": "created"})).unwrap();
    let dir = sm
        .machine_dir(
            "m2",
            DiskSet::Raw {
                storage: 1 << 16,
                overlay: 1 << 16,
            },
        )
        .unwrap();
    age_tree(&s.home.root, OLD).unwrap();
    let lock = std::fs::File::open(dir.join("vm.lock")).unwrap();
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive).unwrap();
    let vm = vmm::boot_vm(
        &vmm::standin_bin(Path::new(env!("CARGO_TARGET_TMPDIR"))),
        &s.home.root,
        &dir,
    );
    let v = s.json(&["scan", "--json"]);
    let p = v["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pid"] == json!(vm.pid()))
        .unwrap();
    assert_eq!(p["orphan"], json!(false), "{p:#}");
    let (code, _, err) = s.run(&["reap", &vm.pid().to_string(), "-y"]);
    assert_eq!(code, 1, "refused: {err}");
    assert!(alive(vm.pid()));
    drop(lock);
}

#[test]
fn verify_fix_hints_name_commands_that_accept_them() {
    let s = scratch();
    let d = s.home.celesto_data_dir().unwrap();
    d.row("live1", "stopped", "qemu", None).unwrap();
    let live_disk = d.disk("live1", "qcow2", 1 << 16, 1 << 14).unwrap();
    let orphan_disk = d.disk("gone1", "qcow2", 1 << 16, 1 << 14).unwrap();
    let sm = s.home.smolvm().unwrap();
    sm.record("kept", json!({})).unwrap();
    let ghost = sm.dangling_dir("ghost").unwrap();
    age_tree(&s.home.root, OLD).unwrap();
    let orphan_vm = vmm::boot_vm(
        &vmm::standin_bin(Path::new(env!("CARGO_TARGET_TMPDIR"))),
        &s.home.root,
        &ghost,
    );

    let (_, out, err) = s.run(&["verify"]);
    let fix_of = |needle: &str| -> String {
        out.lines()
            .find(|l| l.contains(needle))
            .and_then(|l| l.split(" fix=").nth(1))
            .unwrap_or_else(|| panic!("no fix for {needle}:\n{out}{err}"))
            .to_string()
    };
    assert_eq!(
        fix_of(&live_disk.display().to_string()),
        "smolsweep delete celesto:live1"
    );
    assert_eq!(
        fix_of(&orphan_disk.display().to_string()),
        "smolsweep prune"
    );
    let reap = format!("smolsweep reap {}", orphan_vm.pid());
    assert_eq!(fix_of(&format!("process {}", orphan_vm.pid())), reap);
    // The directory the orphan VM boots from: its fix is the scan's own "in use" judgement,
    // recorded on the finding, not a second one.
    assert_eq!(fix_of(&ghost.display().to_string()), reap);
    let v = s.json(&["scan", "--json"]);
    let g = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == json!(ghost))
        .unwrap();
    assert_eq!(g["used_by"], json!([orphan_vm.pid()]), "{g:#}");
    assert_eq!(
        fix_of("smolvm machine 'kept'"),
        "smolsweep delete smolvm:kept"
    );

    // Each one is accepted by the command it names.
    let (code, _, err) = s.run(&["reap", &orphan_vm.pid().to_string(), "--dry-run"]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = s.run(&["prune", "--dry-run"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&orphan_disk.display().to_string()), "{out}");
}

#[test]
fn a_name_both_products_use_must_say_which_it_means() {
    let s = scratch();
    let d = s.home.celesto_data_dir().unwrap();
    d.row("twin", "stopped", "qemu", None).unwrap();
    let sm = s.home.smolvm().unwrap();
    sm.record("twin", json!({})).unwrap();
    age_tree(&s.home.root, OLD).unwrap();
    let (code, _, err) = s.run(&["delete", "twin", "--dry-run"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("celesto:twin") && err.contains("smolvm:twin"),
        "{err}"
    );
    let (code, out, err) = s.run(&["delete", "smolvm:twin", "--dry-run"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("smol-machines smolvm machine 'twin'"), "{out}");
}

#[test]
fn ids_the_verbose_scan_prints_are_the_ones_plan_takes() {
    let s = scratch();
    let d = s.home.celesto_data_dir().unwrap();
    d.row("live1", "stopped", "qemu", None).unwrap();
    let orphan = d.disk("gone1", "qcow2", 1 << 16, 1 << 14).unwrap();
    age_tree(&s.home.root, OLD).unwrap();
    let (_, out, _) = s.run(&["scan", "-v"]);
    // An item's first line has its id, the next its path.
    let lines: Vec<&str> = out.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.trim() == orphan.display().to_string())
        .unwrap_or_else(|| panic!("{out}"));
    let id = lines[at - 1]
        .split("id ")
        .nth(1)
        .unwrap()
        .trim()
        .to_string();
    let plan = s.home.root.join("p.json");
    let (code, _, err) = s.run(&["plan", "--id", &id, "--out", plan.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let p: Value = serde_json::from_str(&std::fs::read_to_string(&plan).unwrap()).unwrap();
    assert_eq!(p["actions"].as_array().unwrap().len(), 1, "{p:#}");
}

#[test]
fn a_directory_written_in_the_same_second_as_the_scan_is_not_changed_since() {
    // A pack-cache entry (opt-in cache, a directory), its last file written just before the
    // scan, in the same wall-clock second as the scan's start.
    let s = scratch();
    let sm = s.home.smolvm().unwrap();
    sm.record("kept", json!({})).unwrap();
    let pack = sm
        .pack("1a2b3c4d", smolsweep_fixtures::IMPOSSIBLE_PID)
        .unwrap();
    age_tree(&s.home.root, OLD).unwrap();
    let now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
    };
    // Start right after a second boundary, so the write and the scan share one second.
    std::thread::sleep(std::time::Duration::from_nanos(
        1_000_000_000 - now().subsec_nanos() as u64 + 5_000_000,
    ));
    std::fs::write(pack.join("written-just-now"), b"x").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let (code, out, err) = s.run(&["prune", "--include-caches", "-y", "--json"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!pack.exists(), "written before the scan, so deleted: {out}");
}

// Issue 19, points 2 and 4: one word per verdict, "kept" only of keep rules, and no internal
// id where a person reads.

/// The fixture HOME with every edge case of both products, one keep rule (an orphaned disk),
/// and one orphaned smolvm VM booting from a directory with no record, so the human surfaces
/// show a kept item and a VM process.
fn words_home() -> (Scratch, FakeVmm) {
    let s = scratch();
    smolsweep_fixtures::celesto_edge_cases(&s.home).unwrap();
    smolsweep_fixtures::smolvm_edge_cases(&s.home).unwrap();
    let ghost = s.home.smolvm().unwrap().dangling_dir("vm-words").unwrap();
    age_tree(&s.home.root, OLD).unwrap();
    let v = s.json(&["scan", "--json"]);
    let disk = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "celesto.orphan_disk")
        .and_then(|f| f["path"].as_str())
        .unwrap()
        .to_string();
    let (code, out, err) = s.run(&["keep", "add", &disk, "--why", "my disk"]);
    assert_eq!(code, 0, "{out}{err}");
    let vm = vmm::boot_vm(
        &vmm::standin_bin(Path::new(env!("CARGO_TARGET_TMPDIR"))),
        &s.home.root,
        &ghost,
    );
    (s, vm)
}

/// The text every human surface prints on the words HOME: `scan`, `scan -v` and
/// `uninstall --dry-run`, each with what it was.
fn human_surfaces(s: &Scratch) -> Vec<(&'static str, String)> {
    let mut all = Vec::new();
    for (name, args) in [
        ("scan", &["scan"][..]),
        ("scan -v", &["scan", "-v"][..]),
        ("uninstall --dry-run", &["uninstall", "--dry-run"][..]),
    ] {
        let (code, out, err) = s.run(args);
        assert!(code == 0 || code == 1, "{name}: exit {code}\n{out}{err}");
        all.push((name, format!("{out}{err}")));
    }
    all
}

/// Whether `line` says "kept" or "keep" in any sense but a keep rule's.
fn kept_outside_a_keep_rule(line: &str) -> bool {
    let l = line.to_lowercase();
    let says = l
        .split(|c: char| !c.is_alphanumeric() && c != '-')
        .any(|w| matches!(w, "kept" | "keep" | "keeps"));
    let of_a_rule = [
        "kept by you",
        "keep rule",
        "--remove-kept",
        "smolsweep keep",
        "keep file",
    ]
    .iter()
    .any(|r| l.contains(r));
    says && !of_a_rule
}

#[test]
fn kept_is_said_only_of_keep_rules() {
    let (s, mut vm) = words_home();
    let surfaces = human_surfaces(&s);
    let _ = vm.kill();
    let mut bad = Vec::new();
    for (name, text) in &surfaces {
        bad.extend(
            text.lines()
                .filter(|l| kept_outside_a_keep_rule(l))
                .map(|l| format!("{name}: {l}")),
        );
    }
    for k in smolsweep::model::FindingKind::ALL {
        for t in [k.label(), k.meaning()] {
            if kept_outside_a_keep_rule(t) {
                bad.push(format!("{k}: {t}"));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "\"kept\" not of a keep rule:\n{}",
        bad.join("\n")
    );
    // The rule itself is still said, where it protects the disk.
    let v = &surfaces[1].1;
    assert!(v.contains("Kept by you since "), "{v}");
    assert!(
        v.lines().any(|l| l.trim_start().starts_with("protected ")),
        "{v}"
    );
}

#[test]
fn no_internal_id_on_a_human_surface() {
    use smolsweep::model::{FindingKind, ProcShape};
    let (s, mut vm) = words_home();
    let surfaces = human_surfaces(&s);
    let _ = vm.kill();
    let ids: Vec<&str> = ProcShape::ALL
        .iter()
        .map(|p| p.as_str())
        .chain(FindingKind::ALL.iter().map(|k| k.as_str()))
        .collect();
    let mut bad = Vec::new();
    for (name, text) in &surfaces {
        for l in text.lines() {
            // A `--kind` hint names a kind by its stable string on purpose.
            let without_hints: String = l
                .split("--kind ")
                .enumerate()
                .map(|(i, part)| match i {
                    0 => part,
                    _ => part
                        .split_once(|c: char| c == ')' || c.is_whitespace())
                        .map_or("", |x| x.1),
                })
                .collect();
            let words: Vec<&str> = without_hints
                .split(|c: char| !(c.is_alphanumeric() || c == '.' || c == '_'))
                .map(|w| w.trim_end_matches('.'))
                .collect();
            if let Some(id) = ids.iter().find(|id| words.contains(id)) {
                bad.push(format!("{name}: {id} in {l}"));
            }
        }
    }
    assert!(bad.is_empty(), "internal ids:\n{}", bad.join("\n"));
    // The VM process is there, named by its shape's label, on both surfaces that list it.
    let label = ProcShape::SmolvmBootVm.label();
    for (name, text) in &surfaces[1..] {
        assert!(
            text.contains(label),
            "{name} names the VM by {label:?}:\n{text}"
        );
    }
}

#[test]
fn the_readme_names_the_verdicts_the_cli_prints() {
    use smolsweep::model::Verdict;
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let head = "| verdict (as printed) | in JSON | meaning |";
    let table: Vec<(String, String)> = readme
        .lines()
        .skip_while(|l| *l != head)
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            (cells[1].to_string(), cells[2].trim_matches('`').to_string())
        })
        .collect();
    let all = [
        Verdict::Reclaimable,
        Verdict::OptIn,
        Verdict::Protected,
        Verdict::Unknown,
    ];
    let expected: Vec<(String, String)> = all
        .iter()
        .map(|v| {
            let json = serde_json::to_value(v).unwrap();
            (
                smolsweep::view::verdict_word(*v).to_string(),
                json.as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(table, expected, "the README's verdict table");
    // And those words are what `scan -v` prints beside each item.
    let s = scratch();
    smolsweep_fixtures::celesto_edge_cases(&s.home).unwrap();
    smolsweep_fixtures::smolvm_edge_cases(&s.home).unwrap();
    age_tree(&s.home.root, OLD).unwrap();
    let (_, out, err) = s.run(&["scan", "-v"]);
    let printed: std::collections::BTreeSet<&str> = out
        .lines()
        .filter(|l| l.starts_with("  ") && l.contains("  id "))
        .filter_map(|l| {
            let w = l.trim_start();
            expected
                .iter()
                .map(|(w0, _)| w0.as_str())
                .find(|w0| w.starts_with(&format!("{w0} ")))
        })
        .collect();
    for (word, _) in &expected {
        assert!(
            printed.contains(word.as_str()),
            "scan -v prints {word:?}:\n{out}{err}"
        );
    }
    let rows = out
        .lines()
        .filter(|l| l.starts_with("  ") && l.contains("  id "))
        .count();
    let worded = out
        .lines()
        .filter(|l| l.starts_with("  ") && l.contains("  id "))
        .filter(|l| {
            expected
                .iter()
                .any(|(w, _)| l.trim_start().starts_with(&format!("{w} ")))
        })
        .count();
    assert_eq!(
        rows, worded,
        "every item's verdict is one of the README's words:\n{out}"
    );
}
