//! Users decide what stays (issue 12): keep rules and filters. Every test runs the built binary
//! on a scratch HOME it creates, with its own Smolsweep data directory.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};
use smolsweep_fixtures::{age_tree, Scratch, OLD};

fn scratch() -> Scratch {
    Scratch::new()
}

/// What the tests run on a scratch HOME.
trait Run {
    fn run(&self, args: &[&str]) -> (i32, String);
    fn scan(&self, extra: &[&str]) -> Value;
}

impl Run for Scratch {
    fn run(&self, args: &[&str]) -> (i32, String) {
        let out = self
            .command(env!("CARGO_BIN_EXE_smolsweep"), args)
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr),
        )
    }
    fn scan(&self, extra: &[&str]) -> Value {
        let mut args = vec!["scan", "--json"];
        args.extend_from_slice(extra);
        let (code, out) = self.run(&args);
        assert_eq!(code, 0, "{out}");
        serde_json::from_str(&out).unwrap()
    }
}

fn finding<'v>(v: &'v Value, p: &Path) -> Option<&'v Value> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"].as_str() == Some(p.to_str().unwrap()))
}

/// Two orphan disks and a live sandbox's disk.
fn celesto_orphans(s: &Scratch) -> (PathBuf, PathBuf) {
    let d = s.home.celesto_data_dir().unwrap();
    d.row("live1", "stopped", "qemu", None).unwrap();
    d.disk("live1", "qcow2", 1 << 16, 1 << 14).unwrap();
    let a = d.disk("gone1", "qcow2", 1 << 16, 1 << 14).unwrap();
    let b = d.disk("gone2", "qcow2", 1 << 16, 1 << 14).unwrap();
    age_tree(&s.home.root, OLD).unwrap();
    (a, b)
}

#[test]
fn a_kept_item_survives_prune_and_a_plan_made_before_it_was_kept() {
    let s = scratch();
    let (a, b) = celesto_orphans(&s);
    let plan = s.dir().join("before.json");
    let (code, out) = s.run(&["plan", "--out", plan.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = s.run(&[
        "keep",
        "add",
        a.to_str().unwrap(),
        "--why",
        "a golden image",
    ]);
    assert_eq!(code, 0, "{out}");

    let v = s.scan(&[]);
    let f = finding(&v, &a).unwrap();
    assert_eq!(f["verdict"], "protected", "{f:#}");
    assert!(
        f["reason"]
            .as_str()
            .unwrap()
            .starts_with("Kept by you since "),
        "{f:#}"
    );
    assert!(f["reason"].as_str().unwrap().contains("a golden image"));
    assert!(f["kept"].is_string());

    // The plan made before the rule: the re-judge sees the rule and skips the item.
    let (code, out) = s.run(&["apply", plan.to_str().unwrap(), "-y"]);
    assert_eq!(code, 0, "{out}");
    assert!(a.exists(), "kept: {out}");
    assert!(!b.exists(), "not kept: {out}");
    let (code, out) = s.run(&["prune", "-y"]);
    assert_eq!(code, 0, "{out}");
    assert!(a.exists());
    let (_, list) = s.run(&["keep", "list"]);
    assert!(
        list.contains(a.to_str().unwrap()) && list.contains("a golden image"),
        "{list}"
    );
}

#[test]
fn a_different_file_at_a_kept_path_is_not_kept() {
    let s = scratch();
    let (a, _) = celesto_orphans(&s);
    let (code, out) = s.run(&["keep", "add", a.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    std::fs::remove_file(&a).unwrap();
    std::fs::write(&a, vec![1u8; 4096]).unwrap();
    age_tree(&a, OLD).unwrap();
    let v = s.scan(&[]);
    assert_eq!(finding(&v, &a).unwrap()["verdict"], "reclaimable");
}

#[test]
fn keeping_a_machine_or_a_kind_keeps_everything_of_it() {
    let s = scratch();
    let sm = s.home.smolvm().unwrap();
    sm.record("kept", json!({})).unwrap();
    let ghost = sm.dangling_dir("ghost").unwrap();
    let d = s.home.celesto_data_dir().unwrap();
    d.row("live1", "stopped", "qemu", None).unwrap();
    let disk = d.disk("gone1", "qcow2", 1 << 16, 1 << 14).unwrap();
    let log = d.log("gone1", 100).unwrap();
    age_tree(&s.home.root, OLD).unwrap();
    let (code, out) = s.run(&["keep", "add", "--kind", "smolvm.dangling_dir"]);
    assert_eq!(code, 0, "{out}");
    let v = s.scan(&[]);
    assert_eq!(finding(&v, &ghost).unwrap()["verdict"], "protected");
    assert_eq!(finding(&v, &disk).unwrap()["verdict"], "reclaimable");
    // A rule naming a sandbox id keeps all of its files, the disk and the log.
    let (code, out) = s.run(&["keep", "add", "celesto:gone1"]);
    assert_eq!(code, 0, "{out}");
    let v = s.scan(&[]);
    assert_eq!(finding(&v, &disk).unwrap()["verdict"], "protected");
    assert_eq!(finding(&v, &log).unwrap()["verdict"], "protected");
    let rules: Value = serde_json::from_str(&s.run(&["keep", "list", "--json"]).1).unwrap();
    let ids: Vec<String> = rules["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 2);
    for id in &ids {
        assert_eq!(s.run(&["keep", "remove", id]).0, 0);
    }
    assert_eq!(
        s.run(&["keep", "remove", &ids[0]]).0,
        1,
        "a missing rule is refused"
    );
    assert_eq!(
        s.run(&["keep", "add", "nosuch"]).0,
        1,
        "an unknown target is refused"
    );
    let v = s.scan(&[]);
    assert_eq!(finding(&v, &ghost).unwrap()["verdict"], "reclaimable");
    assert_eq!(finding(&v, &log).unwrap()["verdict"], "reclaimable");
}

#[test]
fn a_damaged_keep_file_makes_nothing_reclaimable() {
    let s = scratch();
    let (a, _) = celesto_orphans(&s);
    std::fs::create_dir_all(&s.data).unwrap();
    std::fs::write(s.data.join("keep.json"), b"{not json").unwrap();
    let v = s.scan(&[]);
    assert_eq!(finding(&v, &a).unwrap()["verdict"], "unknown");
    let (_, out) = s.run(&["prune", "-y"]);
    assert!(a.exists(), "{out}");
    let (code, out) = s.run(&["keep", "list"]);
    assert_eq!(code, 1);
    assert!(out.contains("not a Smolsweep keep file"), "{out}");
}

/// The app applies keep rules to a report it is given (a saved report) by the core's rule: a
/// damaged keep file makes a saved report's reclaimable items unknown too, and a report the
/// scan already judged stays as it was, with its problem said once.
#[test]
fn a_damaged_keep_file_makes_a_saved_report_unknown_and_applying_twice_changes_nothing() {
    let s = scratch();
    let (a, _) = celesto_orphans(&s);
    // Judged with no keep file: reclaimable.
    let mut report: smolsweep::model::ScanReport = serde_json::from_value(s.scan(&[])).unwrap();
    let at =
        |r: &smolsweep::model::ScanReport| r.findings.iter().find(|f| f.path == a).unwrap().verdict;
    assert_eq!(at(&report), smolsweep::model::Verdict::Reclaimable);
    std::fs::create_dir_all(&s.data).unwrap();
    let keep = s.data.join("keep.json");
    std::fs::write(&keep, b"{not json").unwrap();
    smolsweep::keep::apply_at(&mut report, &keep);
    assert_eq!(at(&report), smolsweep::model::Verdict::Unknown);
    let once = serde_json::to_value(&report).unwrap();
    smolsweep::keep::apply_at(&mut report, &keep);
    assert_eq!(serde_json::to_value(&report).unwrap(), once);
    let problems: usize = report
        .products
        .iter()
        .map(|p| {
            p.problems
                .iter()
                .filter(|m| m.contains("Keep rules"))
                .count()
        })
        .sum();
    assert_eq!(problems, report.products.len(), "one line per product");
}

#[test]
fn filters_narrow_scan_prune_and_plan_by_age_size_product_and_kind() {
    let s = scratch();
    let d = s.home.celesto_data_dir().unwrap();
    d.row("live1", "stopped", "qemu", None).unwrap();
    let old_big = d.disk("oldbig", "qcow2", 1 << 22, 1 << 21).unwrap();
    let old_small = d.disk("oldsmall", "qcow2", 1 << 16, 1 << 13).unwrap();
    let new_big = d.disk("newbig", "qcow2", 1 << 22, 1 << 21).unwrap();
    let sm = s.home.smolvm().unwrap();
    sm.record("kept", json!({})).unwrap();
    let ghost = sm.dangling_dir("ghost").unwrap();
    age_tree(&s.home.root, Duration::from_secs(10 * 86_400)).unwrap();
    age_tree(&new_big, Duration::from_secs(2 * 86_400)).unwrap();

    let paths = |v: &Value| -> Vec<String> {
        let mut p: Vec<String> = v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["verdict"] == "reclaimable")
            .map(|f| {
                f["path"]
                    .as_str()
                    .unwrap()
                    .rsplit('/')
                    .next()
                    .unwrap()
                    .to_string()
            })
            .collect();
        p.sort();
        p
    };
    let cases: [(&[&str], &[&str]); 5] = [
        (
            &["--older-than", "7d", "--product", "celesto"],
            &["oldbig.qcow2", "oldsmall.qcow2"],
        ),
        (
            &["--min-size", "1M", "--product", "celesto"],
            &["newbig.qcow2", "oldbig.qcow2"],
        ),
        (
            &[
                "--older-than",
                "7d",
                "--min-size",
                "1M",
                "--product",
                "celesto",
            ],
            &["oldbig.qcow2"],
        ),
        (
            &["--product", "smolvm"],
            &[&*ghost.file_name().unwrap().to_string_lossy()],
        ),
        (
            &["--kind", "celesto.orphan_disk", "--older-than", "1w"],
            &["oldbig.qcow2", "oldsmall.qcow2"],
        ),
    ];
    for (args, want) in cases {
        assert_eq!(paths(&s.scan(args)), want, "{args:?}");
    }
    assert_eq!(s.run(&["scan", "--older-than", "7y"]).0, 2, "usage error");

    // prune takes the same filters: only the old big disk goes.
    let (code, out) = s.run(&["prune", "--older-than", "7d", "--min-size", "1M", "-y"]);
    assert_eq!(code, 0, "{out}");
    assert!(!old_big.exists());
    assert!(
        old_small.exists() && new_big.exists() && ghost.exists(),
        "{out}"
    );
    // and plan.
    let plan = s.dir().join("p.json");
    let (code, out) = s.run(&[
        "plan",
        "--product",
        "smolvm",
        "--out",
        plan.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}");
    let p: Value = serde_json::from_str(&std::fs::read_to_string(&plan).unwrap()).unwrap();
    let acts = p["actions"].as_array().unwrap();
    assert_eq!(acts.len(), 1, "{p:#}");
    assert!(acts[0]["path"]
        .to_string()
        .contains(&*ghost.file_name().unwrap().to_string_lossy()));
}

// ------------------------------------------------------------ issue 17: every target type

/// `qemu-img ARGS…`, failing the test when it fails (the fixtures' runner).
fn qemu_img(args: &[&str]) {
    smolsweep_fixtures::disks::run("qemu-img", args);
}

/// `qemu-img info --backing-chain` opens every image of the chain: whether a disk still opens.
fn chain_opens(disk: &Path) -> bool {
    std::process::Command::new("qemu-img")
        .args(["info", "--backing-chain", "-U"])
        .arg(disk)
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// A qcow2 overlay at `path` on `backing` (recorded as written: relative to the overlay).
fn overlay(path: &Path, backing: &str) {
    qemu_img(&[
        "create",
        "-q",
        "-f",
        "qcow2",
        "-b",
        backing,
        "-F",
        "qcow2",
        path.to_str().unwrap(),
    ]);
}

fn base(path: &Path) {
    qemu_img(&["create", "-q", "-f", "qcow2", path.to_str().unwrap(), "1M"]);
}

fn machine<'v>(v: &'v Value, name: &str) -> &'v Value {
    v["machines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("no machine {name}: {v:#}"))
}

#[test]
fn keep_rule_on_a_machine_stops_delete_and_an_earlier_plan() {
    let s = scratch();
    let sm = s.home.smolvm().unwrap();
    sm.record("m2", json!({})).unwrap();
    let dir = sm
        .machine_dir(
            "m2",
            smolsweep_fixtures::smolvm::DiskSet::Raw {
                storage: 1 << 16,
                overlay: 1 << 14,
            },
        )
        .unwrap();
    let plan = s.dir().join("before.json");
    let (code, out) = s.run(&[
        "plan",
        "--delete",
        "smolvm:m2",
        "--out",
        plan.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(std::fs::read_to_string(&plan)
        .unwrap()
        .contains("delete_machine"));
    let (code, out) = s.run(&["keep", "add", "smolvm:m2", "--why", "my work"]);
    assert_eq!(code, 0, "{out}");
    assert!(machine(&s.scan(&[]), "m2")["kept"].is_string());

    let (code, out) = s.run(&["delete", "smolvm:m2", "-y"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("kept by you"), "{out}");
    let (_, out) = s.run(&["apply", plan.to_str().unwrap(), "-y"]);
    assert!(
        out.contains("kept by you"),
        "the re-judge sees the rule: {out}"
    );
    assert!(dir.exists());
    assert!(
        machine(&s.scan(&[]), "m2")["kept"].is_string(),
        "record kept"
    );
    let (code, out) = s.run(&["stop", "smolvm:m2", "-y"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("kept by you"), "{out}");
}

#[test]
fn keep_rule_on_a_machine_keeps_its_orphaned_vm_process_from_reap() {
    use smolsweep_fixtures::vmm::{alive, boot_vm, fake_vmm_bin};
    let s = scratch();
    let sm = s.home.smolvm().unwrap();
    sm.record("m3", json!({})).unwrap();
    let dir = sm
        .machine_dir(
            "m3",
            smolsweep_fixtures::smolvm::DiskSet::Raw {
                storage: 1 << 16,
                overlay: 1 << 14,
            },
        )
        .unwrap();
    let bin = fake_vmm_bin(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/fake_vmm.rs"),
        Path::new(env!("CARGO_TARGET_TMPDIR")),
    );
    // An interrupted start: a `_boot-vm` of m3 that its record does not own.
    let vm = boot_vm(&bin, &s.home.root, &dir);
    let pid = vm.pid();
    let proc_of = |v: &Value| -> Value {
        v["processes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["pid"] == pid)
            .cloned()
            .unwrap_or_else(|| panic!("process {pid} not shown: {v:#}"))
    };
    let p = proc_of(&s.scan(&[]));
    assert_eq!(p["orphan"], true, "{p:#}");
    let (code, out) = s.run(&["keep", "add", "smolvm:m3"]);
    assert_eq!(code, 0, "{out}");
    let p = proc_of(&s.scan(&[]));
    assert!(p["kept"].is_string(), "{p:#}");

    let (_, out) = s.run(&["reap", "-y"]);
    assert!(
        alive(pid),
        "a kept machine's VM is not ended by reap: {out}"
    );
    let (code, out) = s.run(&["reap", &pid.to_string(), "-y"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("kept by you"), "{out}");
    assert!(alive(pid));
}

#[test]
fn keep_rule_on_a_celesto_disk_survives_uninstall_unless_remove_kept_is_chosen() {
    let s = scratch();
    let (a, b) = celesto_orphans(&s);
    let (code, out) = s.run(&["keep", "add", a.to_str().unwrap(), "--why", "evidence"]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = s.run(&["uninstall", "--product", "celesto", "--dry-run", "--json"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("kept by you") && out.contains(a.to_str().unwrap()),
        "the plan names the kept disk: {out}"
    );
    let (_, out) = s.run(&["uninstall", "--product", "celesto", "-y"]);
    assert!(a.exists(), "the kept disk survives the uninstall: {out}");
    let (_, out) = s.run(&["uninstall", "--product", "celesto", "--remove-kept", "-y"]);
    assert!(
        !a.exists() && !b.exists(),
        "an explicit choice removes it: {out}"
    );
}

#[test]
fn a_kept_orphan_disk_keeps_its_backing_file() {
    let s = scratch();
    let d = s.home.celesto_data_dir().unwrap();
    d.row("live1", "stopped", "qemu", None).unwrap();
    d.disk("live1", "qcow2", 1 << 16, 1 << 14).unwrap();
    let disks = d.disks();
    // Celesto's own full-snapshot restore writes `<disk>.backing-0.qcow2` under its disk.
    let backing = disks.join("gone1.qcow2.backing-0.qcow2");
    let disk = disks.join("gone1.qcow2");
    base(&backing);
    overlay(&disk, "gone1.qcow2.backing-0.qcow2");
    age_tree(&s.home.root, OLD).unwrap();
    let v = s.scan(&[]);
    assert_eq!(finding(&v, &backing).unwrap()["verdict"], "reclaimable");
    let (code, out) = s.run(&["keep", "add", disk.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    let v = s.scan(&[]);
    let f = finding(&v, &backing).unwrap();
    assert_eq!(f["verdict"], "protected", "{f:#}");
    assert!(
        f["reason"].as_str().unwrap().contains("gone1.qcow2"),
        "{f:#}"
    );
    let (code, out) = s.run(&["prune", "-y"]);
    assert_eq!(code, 0, "{out}");
    assert!(disk.exists() && backing.exists(), "{out}");
    assert!(chain_opens(&disk), "the kept disk still opens");
}

#[test]
fn a_live_sandbox_disk_that_is_an_overlay_on_an_orphan_disk_keeps_it() {
    let s = scratch();
    let d = s.home.celesto_data_dir().unwrap();
    d.row("live1", "stopped", "qemu", None).unwrap();
    let disks = d.disks();
    let orphan = disks.join("gone1.qcow2");
    let live = disks.join("live1.qcow2");
    base(&orphan);
    overlay(&live, "gone1.qcow2");
    age_tree(&s.home.root, OLD).unwrap();
    let v = s.scan(&[]);
    let f = finding(&v, &orphan).unwrap();
    assert_eq!(f["verdict"], "protected", "{f:#}");
    assert!(
        f["reason"].as_str().unwrap().contains("live1.qcow2"),
        "{f:#}"
    );
    let (code, out) = s.run(&["prune", "-y"]);
    assert_eq!(code, 0, "{out}");
    assert!(orphan.exists(), "{out}");
    assert!(chain_opens(&live), "the live sandbox's disk still opens");
}

#[test]
fn an_orphan_backing_file_goes_only_with_its_overlay_and_after_it() {
    let s = scratch();
    let d = s.home.celesto_data_dir().unwrap();
    d.row("live1", "stopped", "qemu", None).unwrap();
    let disks = d.disks();
    let lower = disks.join("aaa1.qcow2");
    let upper = disks.join("zzz1.qcow2");
    base(&lower);
    overlay(&upper, "aaa1.qcow2");
    age_tree(&s.home.root, Duration::from_secs(30 * 86_400)).unwrap();
    age_tree(&upper, Duration::from_secs(2 * 86_400)).unwrap();
    // Only the backing file is old enough: it is not deleted alone.
    let (code, out) = s.run(&["prune", "--older-than", "7d", "-y"]);
    assert_eq!(code, 0, "{out}");
    assert!(lower.exists() && upper.exists(), "{out}");
    assert!(chain_opens(&upper));
    // Together: the overlay is deleted first, then its backing file.
    let plan = s.dir().join("p.json");
    let (code, out) = s.run(&["plan", "--out", plan.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    let text = std::fs::read_to_string(&plan).unwrap();
    let (u, l) = (
        text.find("zzz1.qcow2\"").unwrap(),
        text.find("aaa1.qcow2\"").unwrap(),
    );
    assert!(u < l, "the overlay comes first: {text}");
    let (code, out) = s.run(&["apply", plan.to_str().unwrap(), "-y"]);
    assert_eq!(code, 0, "{out}");
    assert!(!lower.exists() && !upper.exists(), "{out}");
}

// ------------------------------------------------------------------- property tests

/// (path, dev, ino) of everything a keep rule keeps now, by the scan's own judgement:
/// kept findings and the directories of kept machines, and the names of kept machines.
fn kept_now(s: &Scratch) -> (Vec<(PathBuf, u64, u64)>, Vec<String>) {
    use std::os::unix::fs::MetadataExt;
    let v = s.scan(&[]);
    let mut paths: Vec<PathBuf> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kept"].is_string())
        .map(|f| PathBuf::from(f["path"].as_str().unwrap()))
        .collect();
    let mut names = Vec::new();
    for m in v["machines"].as_array().unwrap() {
        if m["kept"].is_string() {
            names.push(format!(
                "{}:{}",
                m["product"].as_str().unwrap(),
                m["name"].as_str().unwrap()
            ));
            if let Some(d) = m["dir"].as_str() {
                paths.push(PathBuf::from(d));
            }
        }
    }
    let ids = paths
        .into_iter()
        .map(|p| {
            let m = std::fs::symlink_metadata(&p).unwrap();
            (p, m.dev(), m.ino())
        })
        .collect();
    (ids, names)
}

fn assert_still_there(s: &Scratch, kept: &[(PathBuf, u64, u64)], names: &[String], after: &str) {
    use std::os::unix::fs::MetadataExt;
    for (p, dev, ino) in kept {
        let m = std::fs::symlink_metadata(p)
            .unwrap_or_else(|_| panic!("{after} removed kept {}", p.display()));
        assert_eq!(
            (m.dev(), m.ino()),
            (*dev, *ino),
            "{after} replaced {}",
            p.display()
        );
    }
    let v = s.scan(&[]);
    for n in names {
        let (product, name) = n.split_once(':').unwrap();
        assert!(
            v["machines"]
                .as_array()
                .unwrap()
                .iter()
                .any(|m| m["product"] == product && m["name"] == name),
            "{after} deleted the kept machine {n}"
        );
    }
}

/// For random keep-rule sets over a seeded HOME with both products' leftovers, no command
/// (prune with every class, apply of a plan made before the rules, auto, delete and stop of
/// kept machines, uninstall) touches anything a rule keeps.
#[test]
fn property_no_command_touches_what_a_random_keep_rule_set_keeps() {
    use rand::{Rng, SeedableRng};
    for seed in 0..4u64 {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let s = scratch();
        let d = s.home.celesto_data_dir().unwrap();
        d.row("live1", "stopped", "qemu", None).unwrap();
        d.disk("live1", "qcow2", 1 << 16, 1 << 14).unwrap();
        let mut targets: Vec<String> = Vec::new();
        for i in 0..4 {
            let id = format!("gone{i}");
            let disk = d.disk(&id, "qcow2", 1 << 16, 1 << 14).unwrap();
            d.log(&id, 200).unwrap();
            targets.push(disk.display().to_string());
            targets.push(format!("celesto:{id}"));
        }
        let sm = s.home.smolvm().unwrap();
        for i in 0..3 {
            let name = format!("m{i}");
            sm.record(&name, json!({})).unwrap();
            let set = smolsweep_fixtures::smolvm::DiskSet::Raw {
                storage: 1 << 14,
                overlay: 1 << 12,
            };
            sm.machine_dir(&name, set).unwrap();
            targets.push(format!("smolvm:{name}"));
        }
        for i in 0..2 {
            let g = sm.dangling_dir(&format!("ghost{i}")).unwrap();
            targets.push(g.display().to_string());
        }
        age_tree(&s.home.root, OLD).unwrap();
        let before = s.dir().join("before.json");
        let (code, out) = s.run(&[
            "plan",
            "--include-saved",
            "--include-caches",
            "--include-residue",
            "--out",
            before.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{out}");
        let mut chosen = Vec::new();
        for t in &targets {
            if rng.random_bool(0.35) {
                let (code, out) = s.run(&["keep", "add", t]);
                assert_eq!(code, 0, "seed {seed}: keep add {t}: {out}");
                chosen.push(t.clone());
            }
        }
        if rng.random_bool(0.5) {
            let (code, out) = s.run(&["keep", "add", "--kind", "celesto.orphan_log"]);
            assert_eq!(code, 0, "{out}");
        }
        let (kept, names) = kept_now(&s);
        let ctx = format!("seed {seed}, rules on {chosen:?}");

        let (_, out) = s.run(&["apply", before.to_str().unwrap(), "-y"]);
        assert_still_there(&s, &kept, &names, &format!("apply ({ctx}): {out}"));
        for n in &names {
            let (code, out) = s.run(&["delete", n, "-y"]);
            assert_eq!(code, 1, "delete {n} ({ctx}): {out}");
            let (_, out) = s.run(&["stop", n, "-y"]);
            assert_still_there(&s, &kept, &names, &format!("stop {n} ({ctx}): {out}"));
        }
        let policy = s.dir().join("policy.json");
        std::fs::write(
            &policy,
            json!({"schema": "smolsweep.policy/1", "enabled": true, "min_age": "1d",
                   "ask_above": "1T", "include": ["saved_disks", "caches", "residue"]})
            .to_string(),
        )
        .unwrap();
        let (_, out) = s.run(&["auto", "--policy", policy.to_str().unwrap()]);
        assert_still_there(&s, &kept, &names, &format!("auto ({ctx}): {out}"));
        let (_, out) = s.run(&[
            "prune",
            "--include-saved",
            "--include-caches",
            "--include-residue",
            "-y",
        ]);
        assert_still_there(&s, &kept, &names, &format!("prune ({ctx}): {out}"));
        let (_, out) = s.run(&["reap", "-y"]);
        assert_still_there(&s, &kept, &names, &format!("reap ({ctx}): {out}"));
        let (_, out) = s.run(&["uninstall", "-y"]);
        assert_still_there(&s, &kept, &names, &format!("uninstall ({ctx}): {out}"));
    }
}

/// For random backing chains across live, kept and orphaned disks, a prune never leaves a
/// surviving disk whose chain is broken (checked by the real `qemu-img info --backing-chain`),
/// and never deletes a live or kept disk.
#[test]
fn property_prune_never_breaks_the_backing_chain_of_a_surviving_disk() {
    use rand::{Rng, SeedableRng};
    for seed in 0..8u64 {
        let mut rng = rand::rngs::StdRng::seed_from_u64(100 + seed);
        let s = scratch();
        let d = s.home.celesto_data_dir().unwrap();
        let disks = d.disks();
        std::fs::create_dir_all(&disks).unwrap();
        let n = rng.random_range(3..7);
        let mut made: Vec<(PathBuf, &str)> = Vec::new();
        for i in 0..n {
            let role = ["live", "kept", "orphan", "orphan"][rng.random_range(0..4)];
            let id = format!("{}{i}", &role[..1].repeat(3));
            if role == "live" {
                d.row(&id, "stopped", "qemu", None).unwrap();
            }
            // Sometimes Celesto's restore layout: `<disk>.backing-0.qcow2` under the disk.
            let path = disks.join(format!("{id}.qcow2"));
            if i > 0 && rng.random_bool(0.7) {
                let (lower, _) = &made[rng.random_range(0..made.len())];
                overlay(&path, lower.file_name().unwrap().to_str().unwrap());
            } else if rng.random_bool(0.3) {
                let b = disks.join(format!("{id}.qcow2.backing-0.qcow2"));
                base(&b);
                overlay(&path, b.file_name().unwrap().to_str().unwrap());
            } else {
                base(&path);
            }
            made.push((path, role));
        }
        if !made.iter().any(|(_, r)| *r == "live") {
            d.row("anchor1", "stopped", "qemu", None).unwrap();
        }
        age_tree(&s.home.root, OLD).unwrap();
        for (p, role) in &made {
            if *role == "kept" {
                let (code, out) = s.run(&["keep", "add", p.to_str().unwrap()]);
                assert_eq!(code, 0, "{out}");
            }
        }
        let (code, out) = s.run(&["prune", "--include-saved", "--include-residue", "-y"]);
        assert_eq!(code, 0, "seed {seed}: {out}");
        for (p, role) in &made {
            if *role != "orphan" {
                assert!(
                    p.exists(),
                    "seed {seed}: the {role} disk {} was deleted: {out}",
                    p.display()
                );
            }
            if p.exists() {
                assert!(
                    chain_opens(p),
                    "seed {seed}: {} survives with a broken chain: {out}",
                    p.display()
                );
            }
        }
    }
}

/// Four `keep add PATH` at once all answered "Kept … (rule X)", but each read the file, added
/// its rule and wrote it back unaware of the others: one rule was left, and the next prune
/// deleted the other three disks. Writers now serialise on a lock and re-read under it.
#[test]
fn four_keep_adds_at_once_all_land() {
    let s = scratch();
    let d = s.home.celesto_data_dir().unwrap();
    let disks: Vec<PathBuf> = (1..=4)
        .map(|i| {
            d.disk(&format!("gone{i}"), "qcow2", 1 << 16, 1 << 14)
                .unwrap()
        })
        .collect();
    age_tree(&s.home.root, OLD).unwrap();
    let children: Vec<std::process::Child> = disks
        .iter()
        .map(|p| {
            s.command(
                env!("CARGO_BIN_EXE_smolsweep"),
                &["keep", "add", p.to_str().unwrap()],
            )
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
        })
        .collect();
    for c in children {
        let o = c.wait_with_output().unwrap();
        let said =
            String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{said}");
        assert!(said.starts_with("Kept "), "{said}");
    }
    let keeps = smolsweep::keep::Keeps::load(&s.data.join("keep.json")).unwrap();
    for p in &disks {
        let kept = keeps
            .rules
            .iter()
            .any(|r| matches!(&r.target, smolsweep::keep::Target::Item { path, .. } if path == p));
        assert!(
            kept,
            "{} said kept but is not in the file: {keeps:?}",
            p.display()
        );
    }
    let (code, out) = s.run(&["prune", "-y"]);
    assert!(code == 0 || code == 1, "{out}");
    assert!(
        disks.iter().all(|p| p.exists()),
        "a kept disk was pruned: {out}"
    );
}

/// One id grammar (issue 31): `keep add` and `plan --id` take a finding id in full or by a
/// prefix only it starts with (at least four characters, since what they name is kept or
/// deleted), like `why`; `keep remove` refuses a prefix shorter than four characters that is
/// not a whole rule id.
#[test]
fn keep_add_plan_id_and_keep_remove_take_ids_like_git() {
    let s = scratch();
    let (a, b) = celesto_orphans(&s);
    let v = s.scan(&[]);
    let ids: Vec<&str> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap())
        .collect();
    let id_of = |p: &Path| finding(&v, p).unwrap()["id"].as_str().unwrap().to_string();
    let (ida, idb) = (id_of(&a), id_of(&b));
    let short = |id: &str| {
        let p = smolsweep_fixtures::unique_prefix(id, &ids);
        id[..p.len().max(4)].to_string()
    };
    // plan --id with a prefix plans that finding's item.
    let out = s.dir().join("plan.json");
    let (code, text) = s.run(&["plan", "--id", &short(&idb), "--out", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{text}");
    let plan = std::fs::read_to_string(&out).unwrap();
    assert!(plan.contains(b.to_str().unwrap()), "{plan}");
    assert!(!plan.contains(a.to_str().unwrap()), "{plan}");
    // keep add with a prefix keeps it.
    let (code, text) = s.run(&["keep", "add", &short(&ida)]);
    assert_eq!(code, 0, "{text}");
    assert!(finding(&s.scan(&[]), &a).unwrap()["kept"].is_string());
    // Three characters name nothing that is kept or deleted, even when only one id starts so.
    let (code, text) = s.run(&["plan", "--id", &ida[..3], "--out", out.to_str().unwrap()]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("at least 4 characters"), "{text}");
    let rule = s.run(&["keep", "list", "--json"]).1;
    let rule: Value = serde_json::from_str(&rule).unwrap();
    let rid = rule["rules"][0]["id"].as_str().unwrap().to_string();
    let (code, text) = s.run(&["keep", "remove", &rid[..1]]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("at least 4 characters"), "{text}");
    let (code, text) = s.run(&["keep", "remove", &rid[..4]]);
    assert_eq!(code, 0, "{text}");
}
