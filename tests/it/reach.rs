//! The reference graph (issue 37): only what no record, live VM, lease, backing chain, pause,
//! row or keep rule reaches is ever offered. Machines are recorded by the real smolvm 1.32.2
//! CLI (`machine create`, which writes the record only), disks made by the real `qemu-img`;
//! every test runs the built binary on a scratch HOME it creates.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use smolsweep_fixtures::real_tools::{install_smolvm_script_layout, run_ok, smolvm_cmd};
use smolsweep_fixtures::smolvm::Smolvm;
use smolsweep_fixtures::{age_tree, sparse_file, write, Scratch, OLD};

use crate::{cli_run as run, cli_scan as scan};

/// The finding at `p` in a JSON report.
fn finding<'v>(r: &'v Value, p: &Path) -> &'v Value {
    r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"].as_str() == p.to_str())
        .unwrap_or_else(|| panic!("no finding at {}", p.display()))
}

/// The paths a plan for `args` (a prune's flags) would delete, from `plan --out -`.
fn planned(s: &Scratch, flags: &[&str]) -> Vec<PathBuf> {
    let mut args = vec!["plan", "--out", "-"];
    args.extend_from_slice(flags);
    let (code, out) = run(s, &args);
    assert!(code == 0 || code == 1, "{out}");
    let plan: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    plan["actions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a["path"].as_str().or(a["action"]["path"].as_str()))
        .map(PathBuf::from)
        .collect()
}

/// Every flag set a prune can be run with.
const FLAGS: &[&[&str]] = &[
    &[],
    &["--include-caches"],
    &["--include-saved", "--include-caches", "--include-residue"],
];

/// No plan under any flags takes `p` or anything in it.
fn never_planned(s: &Scratch, p: &Path) {
    for flags in FLAGS {
        let plan = planned(s, flags);
        assert!(
            !plan.iter().any(|q| q.starts_with(p) || p.starts_with(q)),
            "{flags:?} plans {}: {plan:?}",
            p.display()
        );
    }
}

/// A scratch HOME with the real smolvm CLI installed (`~/.smolvm`, `~/.local/bin/smolvm`).
fn with_smolvm() -> (Scratch, Smolvm) {
    let s = Scratch::new();
    install_smolvm_script_layout(&s.home.root).unwrap();
    let v = s.home.smolvm().unwrap();
    (s, v)
}

/// `smolvm machine create --name NAME`: the record only, as upstream writes it.
fn record(s: &Scratch, name: &str) {
    run_ok(smolvm_cmd(&s.home.root).args(["machine", "create", "--name", name])).unwrap();
}

/// `qemu-img create -f qcow2 -b BACKING -F FMT PATH`.
fn overlay(path: &Path, backing: &Path, fmt: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let out = Command::new("qemu-img")
        .args(["create", "-q", "-f", "qcow2", "-F", fmt, "-b"])
        .arg(backing)
        .arg(path)
        .output()
        .expect("qemu-img (qemu-utils)");
    assert!(out.status.success(), "{out:?}");
}

/// A machine directory `vms/<hash(name)>/` with its `name` file.
fn machine_dir(v: &Smolvm, name: &str) -> PathBuf {
    let d = v.vms_dir().join(Smolvm::hash(name));
    write(&d.join("name"), name).unwrap();
    d
}

#[test]
fn a_cow_base_under_a_recorded_machines_overlay_is_never_offered() {
    let (s, v) = with_smolvm();
    record(&s, "web");
    let digest = Smolvm::shared_digest("5eed5eed");
    let bases = v.cow_base(&digest).unwrap();
    let dir = machine_dir(&v, "web");
    overlay(
        &dir.join("overlay.qcow2"),
        &bases.join("overlay-10240/base.raw"),
        "raw",
    );
    overlay(
        &dir.join("storage.qcow2"),
        &bases.join("storage-20480/base.raw"),
        "raw",
    );
    // An unrecorded machine's overlay on other bases: those go only with it.
    let other = v.cow_base(&Smolvm::shared_digest("0ddba115")).unwrap();
    let dangling = machine_dir(&v, "gone");
    overlay(
        &dangling.join("overlay.qcow2"),
        &other.join("overlay-10240/base.raw"),
        "raw",
    );
    age_tree(&s.home.root, OLD).unwrap();

    let r = scan(&s);
    let f = finding(&r, &bases);
    assert_eq!(f["verdict"], "protected", "{f}");
    let reason = f["reason"].as_str().unwrap();
    assert!(
        reason.contains("machine 'web'") && reason.contains(".qcow2"),
        "{reason}"
    );
    never_planned(&s, &bases);
    let g = finding(&r, &other);
    assert_eq!(g["verdict"], "opt_in", "{g}");
    assert_eq!(g["needed_by"][0].as_str(), dangling.to_str(), "{g}");
    // Taken only with the directory whose disk backs onto it, after it.
    let plan = planned(&s, &["--include-caches"]);
    let at = |p: &Path| plan.iter().position(|q| q == p);
    assert!(at(&dangling).unwrap() < at(&other).unwrap(), "{plan:?}");
    let plan = planned(&s, &["--include-caches", "--kind", "copy-on-write-bases"]);
    assert!(!plan.contains(&other), "{plan:?}");
    // `why` prints the chain from the record that holds it.
    let (code, out) = run(&s, &["why", bases.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("Held") && out.contains("Directory of machine 'web'"),
        "{out}"
    );
}

#[test]
fn a_leased_packs_sidecars_stay_with_it() {
    let (s, v) = with_smolvm();
    record(&s, "api");
    let shared = v.shared("1a2b3c4d").unwrap();
    let bases = v.cow_base(&Smolvm::shared_digest("1a2b3c4d")).unwrap();
    let dir = machine_dir(&v, "api");
    write(&dir.join(".pack-shared"), format!("{}\n", shared.display())).unwrap();
    // An extraction nobody leases, and its records: a cache, taken whole.
    let free = v.shared("5e6f7a8b").unwrap();
    age_tree(&s.home.root, OLD).unwrap();

    let r = scan(&s);
    for p in std::iter::once(shared.clone())
        .chain(v.shared_records("1a2b3c4d"))
        .chain([bases.clone()])
    {
        let f = finding(&r, &p);
        assert_eq!(f["verdict"], "protected", "{}: {f}", p.display());
        never_planned(&s, &p);
    }
    let reason = finding(&r, &shared)["reason"].as_str().unwrap();
    assert!(reason.contains("Machine 'api' leases it"), "{reason}");
    let plan = planned(&s, &["--include-caches"]);
    for p in std::iter::once(free.clone()).chain(v.shared_records("5e6f7a8b")) {
        assert!(plan.contains(&p), "{} not planned: {plan:?}", p.display());
    }
    // The records go before their extraction, never it without them.
    let at = |p: &Path| plan.iter().position(|q| q == p).unwrap();
    for rec in v.shared_records("5e6f7a8b") {
        assert!(at(&rec) < at(&free), "{plan:?}");
    }
}

#[test]
fn a_lease_that_cannot_be_read_offers_no_shared_store() {
    let (s, v) = with_smolvm();
    record(&s, "api");
    let free = v.shared("5e6f7a8b").unwrap();
    let dir = machine_dir(&v, "api");
    write(&dir.join(".pack-shared"), "../../escape\n").unwrap();
    age_tree(&s.home.root, OLD).unwrap();
    let r = scan(&s);
    let f = finding(&r, &free);
    assert_eq!(f["verdict"], "unknown", "{f}");
    never_planned(&s, &free);
}

#[test]
fn a_branch_source_without_a_record_stays_while_a_clone_backs_onto_it() {
    let (s, v) = with_smolvm();
    record(&s, "clone");
    // The source's record is lost ("forgot externally deleted machine"); its directory holds
    // the frozen layer the clone's disk backs onto.
    let src = machine_dir(&v, "source");
    let layer = src.join("d/1/storage.base.qcow2");
    sparse_file(&src.join("d/1/base.raw"), 64 << 20, 64 << 10, b"").unwrap();
    overlay(&layer, &src.join("d/1/base.raw"), "raw");
    let clone = machine_dir(&v, "clone");
    overlay(&clone.join("storage.qcow2"), &layer, "qcow2");
    age_tree(&s.home.root, OLD).unwrap();

    let r = scan(&s);
    let f = finding(&r, &src);
    assert_eq!(f["verdict"], "protected", "{f}");
    assert!(
        f["reason"].as_str().unwrap().contains("machine 'clone'"),
        "{f}"
    );
    never_planned(&s, &src);
    // A clone without a record goes, and its source only with it, after it.
    let src2 = machine_dir(&v, "source2");
    let layer2 = src2.join("d/1/storage.base.qcow2");
    sparse_file(&src2.join("d/1/base.raw"), 64 << 20, 64 << 10, b"").unwrap();
    overlay(&layer2, &src2.join("d/1/base.raw"), "raw");
    let clone2 = machine_dir(&v, "clone2");
    overlay(&clone2.join("storage.qcow2"), &layer2, "qcow2");
    age_tree(&s.home.root, OLD).unwrap();
    let plan = planned(&s, &[]);
    let at = |p: &Path| plan.iter().position(|q| q == p);
    assert!(at(&clone2).unwrap() < at(&src2).unwrap(), "{plan:?}");
}

#[test]
fn a_second_hard_link_frees_nothing() {
    let (s, v) = with_smolvm();
    let shared = v.shared("9a8b7c6d").unwrap();
    let capture = s.dir().join("captures/serve.smolcheckpoint");
    sparse_file(&capture, 8 << 20, 8 << 20, b"SMOLCKPT").unwrap();
    let prepared = shared.with_extension("prepared.smolcheckpoint");
    std::fs::hard_link(&capture, &prepared).unwrap();
    age_tree(&s.home.root, OLD).unwrap();
    let r = scan(&s);
    let f = finding(&r, &prepared);
    assert_eq!(f["allocated_bytes"], 0, "{f}");
    assert!(
        f["reason"].as_str().unwrap().contains("frees nothing"),
        "{f}"
    );
    let (code, out) = run(&s, &["plan", "--out", "-", "--include-caches"]);
    assert_eq!(code, 0, "{out}");
    let plan: Value = serde_json::from_str(&out).unwrap();
    let line = plan["actions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["path"].as_str() == prepared.to_str())
        .unwrap_or_else(|| panic!("{out}"));
    assert_eq!(line["expected_bytes"], 0, "{line}");
    let store = finding(&r, &shared)["allocated_bytes"].as_u64().unwrap();
    assert!(
        plan["estimated_bytes"].as_u64().unwrap() < store + (1 << 20),
        "{out}"
    );
}

// ---- the property: random layouts, random records removed --------------------------------

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use smolsweep::model::{OptInClass, ScanReport};
use smolsweep::plan::{Action, Plan, Selection};

/// A qcow2 (version 3) header naming `backing` and nothing else: what the scan reads of a disk.
fn qcow2_naming(path: &Path, backing: &Path) {
    let name = backing.as_os_str().as_encoded_bytes();
    let mut h = vec![0u8; 112];
    h[0..4].copy_from_slice(b"QFI\xfb");
    h[4..8].copy_from_slice(&3u32.to_be_bytes());
    h[8..16].copy_from_slice(&112u64.to_be_bytes());
    h[16..20].copy_from_slice(&(name.len() as u32).to_be_bytes());
    h[20..24].copy_from_slice(&16u32.to_be_bytes());
    h[24..32].copy_from_slice(&(1u64 << 30).to_be_bytes());
    h[100..104].copy_from_slice(&104u32.to_be_bytes());
    h.extend_from_slice(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, h).unwrap();
}

/// One random smolvm layout: machines (recorded or not), clones backing onto their sources'
/// frozen layers, machines made from packs (a lease and an overlay on that pack's bases),
/// shared extractions with their records and bases, pause records. Returns, for each node, its
/// paths and the nodes it holds; and which nodes are roots (recorded machines).
struct Model {
    paths: Vec<Vec<PathBuf>>,
    holds: Vec<Vec<usize>>,
    roots: Vec<usize>,
}

fn layout(v: &Smolvm, db_records: &mut Vec<String>, rng: &mut StdRng) -> Model {
    let mut m = Model {
        paths: Vec::new(),
        holds: Vec::new(),
        roots: Vec::new(),
    };
    let node = |m: &mut Model, paths: Vec<PathBuf>| {
        m.paths.push(paths);
        m.holds.push(Vec::new());
        m.paths.len() - 1
    };
    // Shared extractions (with records) and their bases.
    let mut packs = Vec::new();
    for k in 0..rng.random_range(1..4) {
        let crc = format!("{:08x}", 0x5eed_0000 + k);
        let dir = v.shared(&crc).unwrap();
        let bases = v.cow_base(&Smolvm::shared_digest(&crc)).unwrap();
        let mut paths = vec![dir.clone()];
        paths.extend(v.shared_records(&crc));
        let s = node(&mut m, paths);
        let b = node(&mut m, vec![bases.clone()]);
        m.holds[s].push(b);
        packs.push((dir, bases, s, b));
    }
    let mut machines: Vec<(PathBuf, usize)> = Vec::new();
    for i in 0..rng.random_range(2..7) {
        let name = format!("m{i}");
        let dir = machine_dir(v, &name);
        let n = node(&mut m, vec![dir.clone()]);
        if rng.random_bool(0.5) {
            db_records.push(name.clone());
            m.roots.push(n);
        }
        match rng.random_range(0..3) {
            // A clone of an earlier machine: its disk backs onto that one's frozen layer.
            0 if !machines.is_empty() => {
                let (src, s) = &machines[rng.random_range(0..machines.len())];
                let layer = src.join(format!("d/{i}/storage.base.qcow2"));
                sparse_file(&src.join(format!("d/{i}/base.raw")), 1 << 20, 4096, b"").unwrap();
                qcow2_naming(&layer, &src.join(format!("d/{i}/base.raw")));
                qcow2_naming(&dir.join("storage.qcow2"), &layer);
                m.holds[n].push(*s);
            }
            // Made from a pack: a lease on its extraction, an overlay on its bases.
            1 => {
                let (shared, bases, s, b) = &packs[rng.random_range(0..packs.len())];
                write(&dir.join(".pack-shared"), format!("{}\n", shared.display())).unwrap();
                qcow2_naming(
                    &dir.join("overlay.qcow2"),
                    &bases.join("overlay-10240/base.raw"),
                );
                m.holds[n].extend([*s, *b]);
            }
            _ => {
                sparse_file(&dir.join("storage.raw"), 1 << 20, 4096, b"").unwrap();
            }
        }
        if rng.random_bool(0.3) {
            let p = node(&mut m, v.pause_record(&name).unwrap().to_vec());
            m.holds[n].push(p);
        }
        machines.push((dir, n));
    }
    m
}

/// Every node a root reaches.
fn reached(m: &Model) -> Vec<bool> {
    let mut seen = vec![false; m.paths.len()];
    let mut todo = m.roots.clone();
    while let Some(n) = todo.pop() {
        if !std::mem::replace(&mut seen[n], true) {
            todo.extend(&m.holds[n]);
        }
    }
    seen
}

fn every_selection(r: &ScanReport) -> Vec<Selection> {
    let all = [
        OptInClass::SavedDisks,
        OptInClass::Caches,
        OptInClass::Residue,
    ];
    vec![
        Selection::reclaimable(),
        Selection {
            all_reclaimable: true,
            include: [OptInClass::Caches].into_iter().collect(),
            ..Default::default()
        },
        Selection {
            ids: r.findings.iter().map(|f| f.id.clone()).collect(),
            all_reclaimable: true,
            include: all.into_iter().collect(),
            ..Default::default()
        },
    ]
}

#[test]
fn no_plan_under_any_flags_holds_a_node_reachable_from_a_root() {
    for seed in 0..12u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let s = Scratch::new();
        let v = s.home.smolvm().unwrap();
        let mut names = Vec::new();
        let m = layout(&v, &mut names, &mut rng);
        for n in &names {
            v.record(n, serde_json::json!({"state": "stopped"}))
                .unwrap();
        }
        v.open_db().unwrap();
        age_tree(&s.home.root, OLD).unwrap();
        let r = smolsweep::scan::scan_with(&crate::scan_options(&s.home), Vec::new());
        let reach = reached(&m);
        for sel in every_selection(&r) {
            let plan = Plan::from_scan(&r, &sel);
            for a in &plan.actions {
                let Action::DeletePath { path, .. } = &a.action else {
                    continue;
                };
                for (n, paths) in m.paths.iter().enumerate() {
                    let hit = paths
                        .iter()
                        .any(|p| p.starts_with(path) || path.starts_with(p));
                    assert!(
                        !(hit && reach[n]),
                        "seed {seed}: {} is planned, but a root reaches it ({sel:?})",
                        path.display()
                    );
                }
            }
        }
        // Every node nothing reaches is found, as what may go.
        for (n, paths) in m.paths.iter().enumerate().filter(|(n, _)| !reach[*n]) {
            for p in paths {
                let f = r.findings.iter().find(|f| f.path == *p);
                assert!(
                    f.is_some_and(|f| matches!(
                        f.verdict,
                        smolsweep::model::Verdict::Reclaimable | smolsweep::model::Verdict::OptIn
                    )),
                    "seed {seed}: node {n} at {} is not offered: {:?}",
                    p.display(),
                    f.map(|f| (&f.kind, &f.verdict, &f.reason))
                );
            }
        }
    }
}

// ---- the executor asks the same graph when it acts -----------------------------------------

/// Write a plan for `flags` to a file, let `change` happen, then `apply -y` it: what the change
/// makes reachable must still be there.
fn plan_change_apply(s: &Scratch, flags: &[&str], change: impl FnOnce(), kept: &[&Path]) {
    let file = s.dir().join("plan.json");
    let mut args = vec!["plan", "--out", file.to_str().unwrap()];
    args.extend_from_slice(flags);
    let (code, out) = run(s, &args);
    assert_eq!(code, 0, "{out}");
    let plan = std::fs::read_to_string(&file).unwrap();
    for p in kept {
        assert!(
            plan.contains(p.to_str().unwrap()),
            "{} not planned: {plan}",
            p.display()
        );
    }
    change();
    let (_, out) = run(s, &["apply", file.to_str().unwrap(), "-y"]);
    for p in kept {
        assert!(
            std::fs::symlink_metadata(p).is_ok(),
            "{} was deleted: {out}",
            p.display()
        );
    }
}

#[test]
fn a_clone_made_between_plan_and_run_holds_its_source() {
    let (s, v) = with_smolvm();
    let src = machine_dir(&v, "source");
    let layer = src.join("d/1/storage.base.qcow2");
    sparse_file(&src.join("d/1/base.raw"), 64 << 20, 64 << 10, b"").unwrap();
    overlay(&layer, &src.join("d/1/base.raw"), "raw");
    record(&s, "other");
    age_tree(&s.home.root, OLD).unwrap();
    plan_change_apply(
        &s,
        &[],
        || {
            record(&s, "clone");
            let clone = machine_dir(&v, "clone");
            overlay(&clone.join("storage.qcow2"), &layer, "qcow2");
        },
        &[&src],
    );
}

#[test]
fn a_pack_leased_between_plan_and_run_stays() {
    let (s, v) = with_smolvm();
    record(&s, "other");
    let shared = v.shared("2b3c4d5e").unwrap();
    age_tree(&s.home.root, OLD).unwrap();
    let records = v.shared_records("2b3c4d5e");
    let mut kept: Vec<&Path> = vec![&shared];
    kept.extend(records.iter().map(PathBuf::as_path));
    plan_change_apply(
        &s,
        &["--include-caches"],
        || {
            record(&s, "api");
            let dir = machine_dir(&v, "api");
            write(&dir.join(".pack-shared"), format!("{}\n", shared.display())).unwrap();
        },
        &kept,
    );
}

#[test]
fn a_sandbox_created_between_plan_and_run_holds_its_seed() {
    let s = Scratch::new();
    let d = s.home.celesto_data_dir().unwrap();
    d.row("live1", "stopped", "qemu", None).unwrap();
    let images = s.home.celesto_image_dir().unwrap();
    let seed = images.dir.join("cloud-init-seeds/0a1b2c3d.iso");
    write(&seed, "seed").unwrap();
    age_tree(&s.home.root, OLD).unwrap();
    plan_change_apply(
        &s,
        &[],
        || {
            let mut cfg = d.default_config("vm-new1", "qemu");
            cfg["extra_drives"] = serde_json::json!([seed.display().to_string()]);
            d.row_with_config("vm-new1", "running", None, &cfg).unwrap();
        },
        &[&seed],
    );
}
