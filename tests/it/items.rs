//! Items (issue 29): keep rules, filters and plans act on whole items (a Celesto disk with its
//! `.retained` marker, companions, log, firmware, host key and lock), and no run ever makes a
//! surviving path more deletable. Every test runs the built binary on a scratch HOME it creates.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{json, Value};
use smolsweep_fixtures::{age_tree, Scratch, OLD};

use crate::{cli_run as run, cli_scan as scan};

/// How deletable a verdict is: never (0), when asked for (1), by default (2).
fn rank(verdict: &str) -> u8 {
    match verdict {
        "reclaimable" => 2,
        "opt_in" => 1,
        _ => 0,
    }
}

/// Every finding's path with its kind and verdict.
fn judged(v: &Value) -> BTreeMap<PathBuf, (String, String)> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                PathBuf::from(f["path"].as_str().unwrap()),
                (
                    f["kind"].as_str().unwrap().to_string(),
                    f["verdict"].as_str().unwrap().to_string(),
                ),
            )
        })
        .collect()
}

/// The invariant: every path judged before that still exists is judged the same kind and no
/// more deletable now.
fn assert_no_survivor_demoted(s: &Scratch, before: &Value, ctx: &str) {
    let after = judged(&scan(s));
    for (path, (kind, verdict)) in judged(before) {
        if std::fs::symlink_metadata(&path).is_err() {
            continue;
        }
        let Some((k2, v2)) = after.get(&path) else {
            continue;
        };
        assert_eq!(
            (k2.as_str(), true),
            (kind.as_str(), rank(v2) <= rank(&verdict)),
            "{ctx}: {} was {kind} {verdict}, is now {k2} {v2}",
            path.display()
        );
    }
}

/// A saved disk (`id`, qcow2) with its marker, a backup companion and its log.
fn saved(d: &smolsweep_fixtures::celesto::CelestoData, id: &str, ext: &str) -> Vec<PathBuf> {
    let disk = d.disk(id, ext, 1 << 16, 1 << 14).unwrap();
    let name = format!("{id}.{ext}");
    vec![
        disk,
        d.retained(&name).unwrap(),
        d.companion(&name, ".create-backup-9c1d", 4096).unwrap(),
        d.log(id, 300).unwrap(),
    ]
}

fn all_there(paths: &[PathBuf], ctx: &str) {
    for p in paths {
        assert!(
            std::fs::symlink_metadata(p).is_ok(),
            "{ctx}: {} is gone",
            p.display()
        );
    }
}

fn all_gone(paths: &[PathBuf], ctx: &str) {
    for p in paths {
        assert!(
            std::fs::symlink_metadata(p).is_err(),
            "{ctx}: {} is still there",
            p.display()
        );
    }
}

/// The sequence: one kind rule on saved disks, two prunes, and both saved disks and
/// their markers are still there and still saved disks.
#[test]
fn keep_saved_disks_by_kind_keeps_their_markers_through_two_prunes() {
    let s = Scratch::new();
    let d = s.home.celesto_data_dir().unwrap();
    d.row("live1", "stopped", "qemu", None).unwrap();
    let mut item = saved(&d, "6ba3", "qcow2");
    item.extend(saved(&d, "c449", "ext4"));
    age_tree(&s.home.root, OLD).unwrap();
    let (code, out) = run(
        &s,
        &["keep", "add", "--kind", "saved-disks", "--why", "backups"],
    );
    assert_eq!(code, 0, "{out}");
    let before = scan(&s);
    let (_, out) = run(&s, &["prune", "-y", "--include-saved"]);
    all_there(&item, &format!("prune --include-saved: {out}"));
    assert_no_survivor_demoted(&s, &before, "prune --include-saved");
    let v = scan(&s);
    for disk in [&item[0], &item[4]] {
        let (kind, verdict) = &judged(&v)[disk];
        assert_eq!(
            (kind.as_str(), verdict.as_str()),
            ("celesto.saved_disk", "protected")
        );
    }
    let (_, out) = run(&s, &["prune", "-y"]);
    all_there(&item, &format!("second prune: {out}"));
}

/// A path rule on one saved disk keeps its marker, companion and log; the other saved disk,
/// included, goes whole.
#[test]
fn keeping_one_saved_disk_by_path_keeps_its_marker_companions_and_log() {
    let s = Scratch::new();
    let d = s.home.celesto_data_dir().unwrap();
    d.row("live1", "stopped", "qemu", None).unwrap();
    let kept = saved(&d, "keep1", "qcow2");
    let other = saved(&d, "drop1", "qcow2");
    age_tree(&s.home.root, OLD).unwrap();
    let (code, out) = run(&s, &["keep", "add", kept[0].to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    let v = scan(&s);
    for p in &kept {
        let f = v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"].as_str() == p.to_str())
            .unwrap();
        assert!(f["kept"].is_string(), "{} is not kept: {f:#}", p.display());
    }
    let (code, out) = run(&s, &["prune", "-y", "--include-saved"]);
    assert_eq!(code, 0, "{out}");
    all_there(&kept, &out);
    all_gone(&other, &out);
    assert_no_survivor_demoted(&s, &v, "prune --include-saved");
}

/// `--kind orphaned-disks` selects whole items: a disk goes with its companion files and log.
#[test]
fn prune_kind_orphaned_disks_takes_their_companions_and_logs() {
    let s = Scratch::new();
    let d = s.home.celesto_data_dir().unwrap();
    d.row("live1", "stopped", "qemu", None).unwrap();
    let disk = d.disk("gone1", "qcow2", 1 << 16, 1 << 14).unwrap();
    let comp = d
        .companion("gone1.qcow2", ".create-backup-1a2b", 4096)
        .unwrap();
    let log = d.log("gone1", 200).unwrap();
    age_tree(&s.home.root, OLD).unwrap();
    let before = scan(&s);
    let (code, out) = run(&s, &["prune", "-n", "--kind", "orphaned-disks"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("gone1.log") && out.contains("create-backup"),
        "{out}"
    );
    let (code, out) = run(&s, &["prune", "-y", "--kind", "orphaned-disks"]);
    assert_eq!(code, 0, "{out}");
    all_gone(&[disk, comp, log], &out);
    assert_no_survivor_demoted(&s, &before, "prune --kind orphaned-disks");
}

/// A rule on a log keeps the whole item (issue 37): what holds a member holds its disk, and the
/// disk holds its members, so the disk's backup companion stays too (it was deleted before), for
/// a saved disk and for an orphan alike.
#[test]
fn a_rule_on_an_orphans_log_keeps_its_backup_companion_too() {
    let s = Scratch::new();
    let d = s.home.celesto_data_dir().unwrap();
    d.row("live1", "stopped", "qemu", None).unwrap();
    let item = saved(&d, "logk", "qcow2");
    let orphan = vec![
        d.disk("gone2", "qcow2", 1 << 16, 1 << 14).unwrap(),
        d.companion("gone2.qcow2", ".create-backup-1a2b", 4096)
            .unwrap(),
        d.log("gone2", 200).unwrap(),
    ];
    age_tree(&s.home.root, OLD).unwrap();
    for log in [&item[3], &orphan[2]] {
        let (code, out) = run(&s, &["keep", "add", log.to_str().unwrap()]);
        assert_eq!(code, 0, "{out}");
    }
    let before = scan(&s);
    let (code, out) = run(&s, &["prune", "-y", "--include-saved"]);
    assert_eq!(code, 0, "{out}");
    all_there(&item, &out);
    all_there(&orphan, &out);
    assert_no_survivor_demoted(&s, &before, "prune --include-saved");
}

/// A dangling marker saves nothing (as upstream's `Path.exists()`): its disk is an orphan, and
/// disk and marker go together without leaving either behind as something else.
#[test]
fn a_marker_that_is_a_dangling_symlink() {
    let s = Scratch::new();
    let d = s.home.celesto_data_dir().unwrap();
    d.row("live1", "stopped", "qemu", None).unwrap();
    let disk = d.disk("dang1", "qcow2", 1 << 16, 1 << 14).unwrap();
    let marker = d.retained_dangling("dang1.qcow2").unwrap();
    age_tree(&s.home.root, OLD).unwrap();
    let before = scan(&s);
    assert_eq!(judged(&before)[&disk].0, "celesto.orphan_disk");
    let (code, out) = run(&s, &["prune", "-y"]);
    assert_eq!(code, 0, "{out}");
    assert_no_survivor_demoted(&s, &before, "prune");
    all_gone(&[disk.clone(), marker.clone()], &out);
    // Its target was never created by the delete.
    assert!(!d.disks().join("missing-marker-target").exists());
}

/// A marker that is a symlink to its own disk saves it; removing the saved item unlinks the
/// marker (never deleting through it) and deletes the disk, in an order that never leaves the
/// disk an orphan while the marker could be skipped.
#[test]
fn a_marker_that_is_a_symlink_to_the_disk() {
    let s = Scratch::new();
    let d = s.home.celesto_data_dir().unwrap();
    d.row("live1", "stopped", "qemu", None).unwrap();
    let disk = d.disk("self1", "qcow2", 1 << 16, 1 << 14).unwrap();
    let marker =
        smolsweep_fixtures::symlink("self1.qcow2", &d.disks().join("self1.qcow2.retained"))
            .unwrap();
    age_tree(&s.home.root, OLD).unwrap();
    let before = scan(&s);
    assert_eq!(judged(&before)[&disk].0, "celesto.saved_disk");
    let (code, out) = run(&s, &["prune", "-y"]);
    assert_eq!(code, 0, "{out}");
    all_there(
        &[disk.clone(), marker.clone()],
        &format!("plain prune: {out}"),
    );
    assert_no_survivor_demoted(&s, &before, "prune");
    let (code, out) = run(&s, &["prune", "-y", "--include-saved"]);
    assert_eq!(code, 0, "{out}");
    all_gone(&[disk, marker], &out);
}

/// A companion of one orphan disk that another disk backs onto: the planner and the executor
/// keep the chain whole, and no survivor is demoted.
#[test]
fn a_disk_whose_companion_is_itself_a_backing_file_of_another_item() {
    let s = Scratch::new();
    let d = s.home.celesto_data_dir().unwrap();
    d.row("live1", "stopped", "qemu", None).unwrap();
    std::fs::create_dir_all(d.disks()).unwrap();
    let base = d.disks().join("orph1.qcow2.backing-0.qcow2");
    qemu_img(&["create", "-q", "-f", "qcow2", base.to_str().unwrap(), "1M"]);
    let orphan = d.disks().join("orph1.qcow2");
    qemu_img(&[
        "create",
        "-q",
        "-f",
        "qcow2",
        orphan.to_str().unwrap(),
        "1M",
    ]);
    let live = d.disks().join("live1.qcow2");
    let backing = base.file_name().unwrap().to_str().unwrap();
    qemu_img(&[
        "create",
        "-q",
        "-f",
        "qcow2",
        "-b",
        backing,
        "-F",
        "qcow2",
        live.to_str().unwrap(),
    ]);
    age_tree(&s.home.root, OLD).unwrap();
    let before = scan(&s);
    let (code, out) = run(&s, &["prune", "-y", "--include-saved", "--include-residue"]);
    assert_eq!(code, 0, "{out}");
    all_there(&[base.clone(), live.clone()], &out);
    assert_no_survivor_demoted(&s, &before, "prune");
    // The orphan disk itself stays with its companion, which the live disk needs: the scan
    // says so, and counts it in no total.
    assert!(
        orphan.exists(),
        "the disk went while its companion stays: {out}"
    );
    let (_, verdict) = &judged(&before)[&orphan];
    assert_eq!(verdict, "protected");
}

/// A saved disk whose sandbox row comes back between the plan and the run: nothing of its
/// item is touched (the fresh scan finds a live sandbox's disk).
#[test]
fn a_retained_disk_whose_sandbox_row_comes_back_between_plan_and_run() {
    let s = Scratch::new();
    let d = s.home.celesto_data_dir().unwrap();
    d.row("live1", "stopped", "qemu", None).unwrap();
    let item = saved(&d, "back1", "qcow2");
    age_tree(&s.home.root, OLD).unwrap();
    let plan = s.dir().join("plan.json");
    let (code, out) = run(
        &s,
        &["plan", "--include-saved", "--out", plan.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{out}");
    let text = std::fs::read_to_string(&plan).unwrap();
    assert!(text.contains("back1.qcow2.retained"), "{text}");
    d.row("back1", "stopped", "qemu", None).unwrap();
    let (_, out) = run(&s, &["apply", plan.to_str().unwrap(), "-y"]);
    all_there(&item, &out);
}

/// `qemu-img ARGS…`, failing the test when it fails (the fixtures' runner).
fn qemu_img(args: &[&str]) {
    smolsweep_fixtures::disks::run("qemu-img", args);
}

/// One random HOME of both products: live, saved and orphaned Celesto sandboxes with markers,
/// companions, logs, firmware, host keys and locks, some disks backing onto others; smolvm
/// machines and directories with no record. Returns what rules and filters may name.
fn random_home(s: &Scratch, rng: &mut impl rand::Rng) -> Vec<String> {
    let d = s.home.celesto_data_dir().unwrap();
    d.row("anchor1", "stopped", "qemu", None).unwrap();
    std::fs::create_dir_all(d.disks()).unwrap();
    let mut targets = Vec::new();
    let mut disks: Vec<PathBuf> = Vec::new();
    for i in 0..rng.random_range(3..7) {
        let role = ["live", "saved", "orphan", "orphan", "saved"][rng.random_range(0..5)];
        let id = format!("{}{i}", &role[..2]);
        if role == "live" {
            d.row(&id, "stopped", "qemu", None).unwrap();
        }
        let name = format!("{id}.qcow2");
        let path = d.disks().join(&name);
        let lower = rng
            .random_bool(0.3)
            .then(|| rng.random_range(0..disks.len().max(1)));
        match lower.and_then(|i| disks.get(i)) {
            Some(lower) => {
                let b = lower.file_name().unwrap().to_str().unwrap();
                qemu_img(&[
                    "create",
                    "-q",
                    "-f",
                    "qcow2",
                    "-b",
                    b,
                    "-F",
                    "qcow2",
                    path.to_str().unwrap(),
                ]);
            }
            None => qemu_img(&["create", "-q", "-f", "qcow2", path.to_str().unwrap(), "1M"]),
        }
        disks.push(path.clone());
        if role == "saved" {
            d.retained(&name).unwrap();
        }
        for (p, what) in [
            (0.5, "comp"),
            (0.7, "log"),
            (0.3, "fw"),
            (0.3, "kh"),
            (0.3, "lock"),
        ] {
            if rng.random_bool(p) {
                match what {
                    "comp" => drop(d.companion(&name, ".create-backup-77aa", 2048).unwrap()),
                    "log" => drop(d.log(&id, 100).unwrap()),
                    "fw" => drop(d.firmware(&id).unwrap()),
                    "kh" => drop(d.known_hosts(&id).unwrap()),
                    _ => drop(d.lock(&format!("{id}.create.lock")).unwrap()),
                }
            }
        }
        targets.push(path.display().to_string());
        targets.push(format!("celesto:{id}"));
    }
    let sm = s.home.smolvm().unwrap();
    for i in 0..rng.random_range(0..3) {
        let name = format!("m{i}");
        sm.record(&name, json!({})).unwrap();
        let set = smolsweep_fixtures::smolvm::DiskSet::Raw {
            storage: 1 << 14,
            overlay: 1 << 12,
        };
        sm.machine_dir(&name, set).unwrap();
    }
    for i in 0..rng.random_range(0..3) {
        let g = sm.dangling_dir(&format!("ghost{i}")).unwrap();
        targets.push(g.display().to_string());
    }
    age_tree(&s.home.root, OLD).unwrap();
    targets
}

/// Random keep rules (path, owner, kind) and random filters through prune, plan + apply and
/// auto: no surviving path is ever judged another kind or more deletable, and nothing a rule
/// keeps is touched.
#[test]
fn property_no_run_makes_a_survivor_more_deletable() {
    use rand::{Rng, SeedableRng};
    const KINDS: [&str; 6] = [
        "saved-disks",
        "orphaned-disks",
        "files-of-saved-disks",
        "logs-of-saved-disks",
        "logs-of-deleted-sandboxes",
        "files-of-orphaned-disks",
    ];
    for seed in 0..24u64 {
        let mut rng = rand::rngs::StdRng::seed_from_u64(2900 + seed);
        let s = Scratch::new();
        let targets = random_home(&s, &mut rng);
        let mut rules = Vec::new();
        for t in &targets {
            if rng.random_bool(0.25) {
                rules.push(vec![t.clone()]);
            }
        }
        if rng.random_bool(0.6) {
            let k = KINDS[rng.random_range(0..KINDS.len())];
            rules.push(vec!["--kind".into(), k.into()]);
        }
        for r in &rules {
            let mut args = vec!["keep", "add"];
            args.extend(r.iter().map(String::as_str));
            let (code, out) = run(&s, &args);
            assert_eq!(code, 0, "seed {seed}: keep add {r:?}: {out}");
        }
        let kept = kept_paths(&s);
        let mut args: Vec<String> = vec!["prune".into(), "-y".into()];
        for (p, flag) in [
            (0.6, "--include-saved"),
            (0.4, "--include-residue"),
            (0.3, "--include-caches"),
        ] {
            if rng.random_bool(p) {
                args.push(flag.into());
            }
        }
        if rng.random_bool(0.5) {
            args.extend([
                "--kind".into(),
                KINDS[rng.random_range(0..KINDS.len())].into(),
            ]);
        }
        if rng.random_bool(0.2) {
            args.extend(["--min-size".into(), "8k".into()]);
        }
        if rng.random_bool(0.2) {
            args.extend(["--older-than".into(), "1d".into()]);
        }
        if rng.random_bool(0.2) {
            let p = ["celesto", "smolvm"][rng.random_range(0..2)];
            args.extend(["--product".into(), p.into()]);
        }
        let ctx = format!("seed {seed}, rules {rules:?}, {args:?}");
        let before = scan(&s);
        let plan = s.dir().join("plan.json");
        let mut plan_args: Vec<&str> = vec!["plan", "--out", plan.to_str().unwrap()];
        plan_args.extend(args[2..].iter().map(String::as_str));
        let (code, out) = run(&s, &plan_args);
        assert_eq!(code, 0, "{ctx}: plan: {out}");
        let (_, out) = run(&s, &["apply", plan.to_str().unwrap(), "-y"]);
        assert_no_survivor_demoted(&s, &before, &format!("{ctx}: apply: {out}"));
        let before = scan(&s);
        let (_, out) = run(&s, &args.iter().map(String::as_str).collect::<Vec<_>>());
        assert_no_survivor_demoted(&s, &before, &format!("{ctx}: {out}"));
        let before = scan(&s);
        let policy = s.dir().join("policy.json");
        std::fs::write(
            &policy,
            json!({"schema": "smolsweep.policy/1", "enabled": true, "min_age": "1d",
                   "ask_above": "1T", "include": ["saved_disks", "caches", "residue"]})
            .to_string(),
        )
        .unwrap();
        let (_, out) = run(&s, &["auto", "--policy", policy.to_str().unwrap()]);
        assert_no_survivor_demoted(&s, &before, &format!("{ctx}: auto: {out}"));
        // Uninstalling one product leaves the other's survivors judged as they were.
        let before = scan(&s);
        let (_, out) = run(&s, &["uninstall", "--product", "smolvm", "-y", "-q"]);
        assert_no_survivor_demoted(&s, &before, &format!("{ctx}: uninstall smolvm: {out}"));
        for p in &kept {
            assert!(
                std::fs::symlink_metadata(p).is_ok(),
                "{ctx}: kept {} was removed",
                p.display()
            );
        }
    }
}

/// Paths the scan says a rule keeps.
fn kept_paths(s: &Scratch) -> Vec<PathBuf> {
    scan(s)["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kept"].is_string())
        .map(|f| PathBuf::from(f["path"].as_str().unwrap()))
        .collect()
}

/// Found by the property test: an uninstall whose cache step was left out (it holds a kept
/// directory) still removed the data directory with the machine database, so a machine's
/// directory that stayed became a leftover of no machine. A machine goes whole or not at all:
/// the database step is left out too, naming the machine.
#[test]
fn uninstall_keeps_the_record_of_a_machine_whose_directory_stays() {
    let s = Scratch::new();
    let sm = s.home.smolvm().unwrap();
    sm.record("m0", json!({})).unwrap();
    let set = smolsweep_fixtures::smolvm::DiskSet::Raw {
        storage: 1 << 14,
        overlay: 1 << 12,
    };
    let dir = sm.machine_dir("m0", set).unwrap();
    let ghost = sm.dangling_dir("ghost1").unwrap();
    age_tree(&s.home.root, OLD).unwrap();
    let (code, out) = run(&s, &["keep", "add", ghost.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    let before = scan(&s);
    let (_, out) = run(&s, &["uninstall", "--product", "smolvm", "-n"]);
    assert!(
        out.contains("Step 1 is left out: it holds the record of smol-machines smolvm m0"),
        "{out}"
    );
    let (_, out) = run(&s, &["uninstall", "--product", "smolvm", "-y"]);
    assert_no_survivor_demoted(&s, &before, &out);
    assert!(dir.exists() && ghost.exists(), "{out}");
    let v = scan(&s);
    assert!(
        v["machines"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["name"] == "m0"),
        "m0 lost its record: {out}"
    );
}
