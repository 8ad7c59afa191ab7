//! Issue 19: one action, one number. For one seeded HOME, what an action is expected to free is
//! the same in the JSON plan, the CLI's dry run, the tray's Reclaim item, the window's
//! confirmation and the journal: for prune, delete of a machine of either product, stop, reap
//! and the uninstall's plan.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use serde_json::{json, Value};
use smolsweep::env::EnvSnapshot;
use smolsweep::model::{human_bytes, Platform, Product, ScanReport};
use smolsweep::plan::Plan;
use smolsweep::scan::{scan, ScanOptions};
use smolsweep::tray::{TrayModel, TraySettings};
use smolsweep::{plan_for, Target, VmAction};
use smolsweep_fixtures::smolvm::{DiskSet, Smolvm};
use smolsweep_fixtures::vmm::{self, FakeVmm};
use smolsweep_fixtures::{age_tree, Home, Layout, OLD};

const BASE_PATH: &str = "/usr/bin:/bin";

/// A HOME with both products' state: a Celesto orphan disk and log, a stopped sandbox with its
/// disk and log, a smolvm machine with its directory and a dangling machine directory.
struct Seeded {
    _t: tempfile::TempDir,
    home: Home,
    data: PathBuf,
}

impl Seeded {
    fn new() -> Seeded {
        let t = tempfile::tempdir().unwrap();
        let home = Home::new(t.path(), Layout::Linux).unwrap();
        let c = home.celesto_data_dir().unwrap();
        c.disk("gone1", "qcow2", 300_000, 262_144).unwrap();
        c.log("gone1", 9_000).unwrap();
        c.row("c1", "stopped", "qemu", None).unwrap();
        c.disk("c1", "qcow2", 200_000, 131_072).unwrap();
        c.log("c1", 5_000).unwrap();
        let sm = home.smolvm().unwrap();
        sm.machine_dir(
            "m1",
            DiskSet::Raw {
                storage: 1 << 20,
                overlay: 1 << 18,
            },
        )
        .unwrap();
        sm.record("m1", json!({"state": "stopped"})).unwrap();
        sm.dangling_dir("vm-gone").unwrap();
        age_tree(t.path(), OLD).unwrap();
        let data = t.path().join("smolsweep-data");
        Seeded { _t: t, home, data }
    }

    fn env(&self) -> EnvSnapshot {
        let mut vars = self.home.env_vars();
        vars.push(("PATH".into(), BASE_PATH.into()));
        let mut env = EnvSnapshot::from_pairs(&self.home.root, vars);
        env.euid = rustix::process::geteuid().as_raw();
        env
    }

    fn scan(&self) -> ScanReport {
        scan(&ScanOptions {
            env: self.env(),
            platform: Platform::Linux,
            age_guard: Duration::from_secs(120),
            now: SystemTime::now(),
        })
    }

    fn cli(&self, args: &[&str]) -> (i32, String) {
        let out = Command::new(env!("CARGO_BIN_EXE_smolsweep"))
            .args(args)
            .env_clear()
            .envs(self.home.env_vars())
            .env("PATH", BASE_PATH)
            .env("LANG", "C.UTF-8")
            .env("SMOLSWEEP_DATA_DIR", &self.data)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr),
        )
    }

    fn json(&self, args: &[&str]) -> Value {
        let (code, out) = self.cli(args);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?} exit {code}: {e}\n{out}"))
    }

    /// The plan `smolsweep plan` writes for `args`.
    fn plan(&self, args: &[&str]) -> Plan {
        let file = self.data.join("plan.json");
        std::fs::create_dir_all(&self.data).unwrap();
        let mut a = vec!["plan", "--out", file.to_str().unwrap()];
        a.extend_from_slice(args);
        let (code, out) = self.cli(&a);
        assert_eq!(code, 0, "{out}");
        serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap()
    }

    /// The estimate each run in the journal recorded, oldest first.
    fn journal_estimates(&self) -> Vec<u64> {
        let path = self.data.join("journal.jsonl");
        let contents = smolsweep::journal::read(&path).unwrap();
        smolsweep::journal::runs(&contents.entries)
            .iter()
            .map(|r| r.estimated_bytes)
            .collect()
    }
}

/// The dry run's closing line names the estimate in the view's words.
fn dry_run_says(out: &str, bytes: u64) {
    let want = format!("it would free about {}.", human_bytes(bytes));
    assert!(out.contains(&want), "want {want:?} in:\n{out}");
}

fn machine(r: &ScanReport, product: Product, name: &str) -> u64 {
    r.machines
        .iter()
        .find(|m| m.product == product && m.name == name)
        .unwrap_or_else(|| panic!("{name} in {:?}", r.machines))
        .allocated_bytes
}

#[test]
fn prune_has_one_estimate_in_the_plan_the_dry_run_the_tray_the_window_and_the_journal() {
    let s = Seeded::new();
    let r = s.scan();
    let plan = s.plan(&[]);
    let est = plan.estimated_bytes;
    assert!(
        est > 262_144,
        "the orphan disk, its log and the dangling dir: {est}"
    );
    let tray = TrayModel::from_report(&r, &TraySettings::default());
    assert_eq!(tray.reclaim_bytes, est, "the tray's Reclaim item");
    let window =
        smolsweep::view::confirmation(&smolsweep::plan::Plan::of_ids(&r, &tray.reclaim_ids));
    assert_eq!(window.estimate_bytes, est, "the window's confirmation");
    assert!(
        window.sentence().contains(&human_bytes(est)),
        "{}",
        window.sentence()
    );
    let dry = s.json(&["prune", "--dry-run", "--json"]);
    assert_eq!(dry["estimated_bytes"], est, "the result JSON");
    let (_, text) = s.cli(&["prune", "--dry-run"]);
    dry_run_says(&text, est);
    assert!(
        text.contains(&format!("about {} to free.", human_bytes(est))),
        "the plan line:\n{text}"
    );
    let run = s.json(&["prune", "-y", "--json"]);
    assert_eq!(run["estimated_bytes"], est, "{run}");
    assert_eq!(s.journal_estimates(), vec![est], "the journal");
}

#[test]
fn deleting_a_machine_of_either_product_frees_what_it_owns_on_every_surface() {
    let s = Seeded::new();
    let r = s.scan();
    let c1 = machine(&r, Product::Celesto, "c1");
    assert!(
        c1 >= 131_072 + 4096,
        "a Celesto sandbox owns its disk and its log: {c1}"
    );
    let m1 = machine(&r, Product::Smolvm, "m1");
    assert!(m1 >= 1 << 20, "a smolvm machine owns its directory: {m1}");
    for (target, bytes, product, name) in [
        ("celesto:c1", c1, Product::Celesto, "c1"),
        ("smolvm:m1", m1, Product::Smolvm, "m1"),
    ] {
        let dry = s.json(&["delete", target, "--dry-run", "--json"]);
        assert_eq!(
            dry["estimated_bytes"], bytes,
            "{target}: the result JSON: {dry}"
        );
        let row = plan_for(
            &r,
            &Target::Machine {
                product,
                name: name.into(),
            },
            VmAction::Delete,
            false,
        );
        assert_eq!(
            row.confirmation().estimate_bytes,
            bytes,
            "{target}: the window's row"
        );
        let (_, text) = s.cli(&["delete", target, "--dry-run"]);
        dry_run_says(&text, bytes);
        assert!(
            !text.contains("about 0 B"),
            "{target}: no second number:\n{text}"
        );
    }
}

#[test]
fn stopping_a_machine_names_no_bytes_to_free() {
    let s = Seeded::new();
    let sm = s.home.smolvm().unwrap();
    let vm = vmm::boot_vm_holding(
        &vmm::standin_bin(Path::new(env!("CARGO_TARGET_TMPDIR"))),
        &s.home.root,
        &sm.vms_dir().join(Smolvm::hash("m1")),
        None,
    );
    let st = smolsweep::exec::ProcessRef::current(vm.pid())
        .unwrap()
        .start_time;
    sm.record(
        "m1",
        json!({"state": "running", "pid": vm.pid(), "pid_start_time": st}),
    )
    .unwrap();
    let dry = s.json(&["stop", "m1", "--dry-run", "--json"]);
    assert_eq!(dry["estimated_bytes"], 0, "{dry}");
    let (_, text) = s.cli(&["stop", "m1", "--dry-run"]);
    assert!(
        !text.contains(" B"),
        "a stop frees nothing and says no size:\n{text}"
    );
}

/// A stand-in `_boot-vm` of this HOME whose machine directory is gone, holding its deleted disk.
fn orphan_holding_a_deleted_disk(s: &Seeded, len: usize) -> FakeVmm {
    let dir = s
        .home
        .smolvm()
        .unwrap()
        .vms_dir()
        .join(Smolvm::hash("vm-787"));
    std::fs::create_dir_all(&dir).unwrap();
    let disk = dir.join("storage.raw");
    std::fs::write(&disk, smolsweep_fixtures::noise(len, 19)).unwrap();
    let v = vmm::boot_vm_holding(
        &vmm::standin_bin(Path::new(env!("CARGO_TARGET_TMPDIR"))),
        &s.home.root,
        &dir,
        Some(&disk),
    );
    std::fs::remove_dir_all(&dir).unwrap();
    v
}

#[test]
fn reaping_frees_the_deleted_files_the_process_held_on_every_surface() {
    let s = Seeded::new();
    let len = 2 << 20;
    let v = orphan_holding_a_deleted_disk(&s, len);
    let r = s.scan();
    let p = r.processes.iter().find(|p| p.pid == v.pid()).unwrap();
    let held = p.held_deleted_bytes;
    assert!(held >= len as u64, "{p:?}");
    let plan = s.plan(&["--reap"]);
    let reap_only: u64 = held;
    let row = plan_for(
        &r,
        &Target::Process {
            pid: p.pid,
            start_time: p.start_time,
        },
        VmAction::Reap,
        false,
    );
    assert_eq!(
        row.confirmation().estimate_bytes,
        reap_only,
        "the window's row: {:?}",
        row.plan
    );
    assert!(plan.estimated_bytes >= reap_only, "the plan counts it");
    let (_, text) = s.cli(&["reap", "--dry-run"]);
    dry_run_says(&text, reap_only);
    let run = s.json(&["reap", "-y", "--json"]);
    assert_eq!(run["estimated_bytes"], reap_only, "{run}");
    assert_eq!(s.journal_estimates(), vec![reap_only], "the journal");
    let freed = run["freed_bytes"].as_u64().unwrap();
    assert!(freed >= len as u64, "ending it freed what it held: {run}");
}

#[test]
fn the_uninstall_plan_counts_the_steps_it_numbers_and_sizes_each_removal() {
    let s = Seeded::new();
    let (_, text) = s.cli(&["uninstall", "--dry-run"]);
    let steps: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("  [x]") || l.starts_with("  [ ]"))
        .collect();
    assert!(!steps.is_empty(), "{text}");
    let header = text
        .lines()
        .find(|l| l.starts_with("Uninstall plan for"))
        .unwrap();
    assert!(
        header.contains(&format!("{} steps", steps.len())),
        "{header}\n{text}"
    );
    let celesto = steps
        .iter()
        .find(|l| l.contains("Celesto data"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        celesto.contains(" — "),
        "a removal says its size: {celesto}"
    );
}
