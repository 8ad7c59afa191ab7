//! Issue 19, "one number, one screen": the flags of the first screen. A filter says what it
//! hid, an age or size without a unit is refused, and `--kind` takes the names the screen shows
//! as well as the JSON ones. (The screen's layout is pinned by `golden.rs`.)

use std::process::{Command, Output};

use smolsweep_fixtures::{celesto_edge_cases, smolvm_edge_cases, Home, Layout};

fn run(home: &Home, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_smolsweep"))
        .args(args)
        .env_clear()
        .envs(home.env_vars())
        .env("PATH", "/usr/bin:/bin")
        .env("LANG", "C.UTF-8")
        .env("COLUMNS", "80")
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn older_than_without_a_unit_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Linux).unwrap();
    for (flag, value, units) in [
        ("--older-than", "7", "s, m, h, d, w"),
        ("--min-size", "100", "B, k, M, G, T"),
    ] {
        for cmd in ["scan", "prune", "plan"] {
            let o = run(&home, &[cmd, flag, value]);
            assert_eq!(
                o.status.code(),
                Some(2),
                "{cmd} {flag} {value}: {}",
                stderr(&o)
            );
            let err = stderr(&o);
            assert!(err.contains("no unit") && err.contains(units), "{err}");
            assert!(stdout(&o).is_empty(), "{}", stdout(&o));
        }
    }
    let o = run(&home, &["scan", "--older-than", "7d", "--min-size", "100B"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn kind_takes_short_names_and_json_ids() {
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Linux).unwrap();
    let _cel = celesto_edge_cases(&home).unwrap();
    let short = run(&home, &["scan", "--kind", "orphaned-disks", "--json"]);
    let id = run(&home, &["scan", "--kind", "celesto.orphan_disk", "--json"]);
    assert!(short.status.success(), "{}", stderr(&short));
    let kinds = |o: &Output| -> Vec<String> {
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["kind"].as_str().unwrap().to_string())
            .collect()
    };
    let (a, b) = (kinds(&short), kinds(&id));
    // A kind selects whole items: the orphaned disks with their companions, logs and locks.
    let of_the_item = [
        "celesto.orphan_disk",
        "celesto.disk_companion",
        "celesto.orphan_log",
        "celesto.lock_residue",
    ];
    assert!(
        a.iter().any(|k| k == "celesto.orphan_disk")
            && a.iter().all(|k| of_the_item.contains(&k.as_str())),
        "{a:?}"
    );
    assert_eq!(a, b);
    // The screen names the filter by the name it shows.
    let text = stdout(&run(&home, &["scan", "--kind", "celesto.orphan_disk"]));
    assert!(text.contains("items match --kind orphaned-disks"), "{text}");
    // A name shared by both products' kinds means both, in a filter.
    let o = run(&home, &["scan", "--kind", "mount-points"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("--kind mount-points"), "{}", stdout(&o));
    let o = run(&home, &["scan", "--kind", "orphaned-disk"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("no kind is called that"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_filter_that_matches_nothing_says_how_many_it_hid() {
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Linux).unwrap();
    let _cel = celesto_edge_cases(&home).unwrap();
    let _smol = smolvm_edge_cases(&home).unwrap();
    let json: serde_json::Value =
        serde_json::from_slice(&run(&home, &["scan", "--json"]).stdout).unwrap();
    let n = json["findings"].as_array().unwrap().len();
    assert!(n > 0);
    let text = stdout(&run(&home, &["scan", "--older-than", "3650d"]));
    assert!(
        text.contains(&format!("None of the {n} items match --older-than 3650d")),
        "{text}"
    );
    assert!(!text.contains("Nothing of either SmolVM found"), "{text}");
    // Nor are machines shown as if they matched.
    assert!(
        !text.contains("Sandboxes 9") && !text.contains("machines 9:"),
        "{text}"
    );
    assert!(
        text.contains("not shown:") && text.contains("machines"),
        "{text}"
    );
    let v = stdout(&run(&home, &["scan", "-v", "--older-than", "3650d"]));
    assert!(v.contains(&format!("None of the {n} items match")), "{v}");
    assert!(!v.contains("Nothing of either SmolVM found"), "{v}");
}

#[test]
fn product_filter_hides_the_other_products_machines_and_processes() {
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Linux).unwrap();
    let _cel = celesto_edge_cases(&home).unwrap();
    let _smol = smolvm_edge_cases(&home).unwrap();
    for args in [
        &["scan", "--product", "smolvm"][..],
        &["scan", "-v", "--product", "smolvm"],
    ] {
        let text = stdout(&run(&home, args));
        assert!(text.contains("items match --product smolvm"), "{text}");
        assert!(text.contains("not shown: 9 sandboxes"), "{text}");
        for celesto in [
            "celesto  ",
            "celesto 9",
            "fire1",
            "vm-abc123",
            "Celesto QEMU",
        ] {
            assert!(
                !text.contains(celesto),
                "{args:?} shows {celesto:?}:\n{text}"
            );
        }
        assert!(
            text.contains("`smolsweep prune --product smolvm`"),
            "{text}"
        );
    }
}

/// A filter narrows the JSON report and the Prometheus text as it narrows the screen: with
/// `--product smolvm` no Celesto machine, process or finding is in them (the JSON listed every
/// machine).
#[test]
fn product_filter_narrows_the_json_and_prometheus_reports_too() {
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Linux).unwrap();
    let _cel = celesto_edge_cases(&home).unwrap();
    let _smol = smolvm_edge_cases(&home).unwrap();
    let all: serde_json::Value =
        serde_json::from_slice(&run(&home, &["scan", "--json"]).stdout).unwrap();
    let v: serde_json::Value =
        serde_json::from_slice(&run(&home, &["scan", "--json", "--product", "smolvm"]).stdout)
            .unwrap();
    let products = |key: &str, v: &serde_json::Value| -> Vec<String> {
        v[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["product"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(products("machines", &all).contains(&"celesto".to_string()));
    for key in ["machines", "findings", "processes"] {
        assert!(
            products(key, &v).iter().all(|p| p == "smolvm"),
            "{key}: {:?}",
            products(key, &v)
        );
    }
    assert!(!products("machines", &v).is_empty());
    let every = stdout(&run(&home, &["scan", "--format", "prometheus"]));
    assert!(every.contains("product=\"celesto\",kind"), "{every}");
    let prom = stdout(&run(
        &home,
        &["scan", "--format", "prometheus", "--product", "smolvm"],
    ));
    assert!(!prom.contains("product=\"celesto\",kind"), "{prom}");
}

/// Hazard (issue 39, item 7): a paused Celesto sandbox whose VM process is gone was shown as
/// plainly "paused" (a paused Celesto guest is a live QEMU or Firecracker process), and a stale
/// running row said "stale" twice. A paused sandbox's dead pid is flagged stale, once; a paused
/// smolvm machine (its pause is a checkpoint on disk, with no process) is not.
#[test]
fn a_paused_sandboxs_dead_pid_is_flagged_stale() {
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Linux).unwrap();
    let c = home.celesto_data_dir().unwrap();
    c.row(
        "p1",
        "paused",
        "qemu",
        Some(smolsweep_fixtures::IMPOSSIBLE_PID),
    )
    .unwrap();
    c.row(
        "r1",
        "running",
        "qemu",
        Some(smolsweep_fixtures::IMPOSSIBLE_PID),
    )
    .unwrap();
    let sm = home.smolvm().unwrap();
    sm.record("m1", serde_json::json!({"state": "paused"}))
        .unwrap();
    let r = smolsweep::scan::scan(&crate::scan_options(&home));
    let v = smolsweep::view::ScanView::of(&r, &smolsweep::plan::Plan::reclaimable(&r));
    let row = |name: &str| v.machines.iter().find(|m| m.name == name).unwrap();
    assert!(row("p1").stale, "{:#?}", row("p1"));
    assert_eq!(
        row("p1").state_label,
        "paused (stale: its VM process is gone)"
    );
    assert!(row("r1").stale);
    assert_eq!(
        row("r1").state_label.matches("stale").count(),
        1,
        "{}",
        row("r1").state_label
    );
    assert!(!row("m1").stale, "{:#?}", row("m1"));
    assert_eq!(v.vms.running(), 0, "nothing stale runs");
}

/// Hazard (issue 39, item 7): every group of what belongs to something that exists was marked
/// "in use" (a stopped sandbox's disk, an idle machine's directory), though no process used it.
/// "in use" is said only of a group where a process uses something.
#[test]
fn in_use_is_shown_only_where_a_process_uses_it() {
    use smolsweep_fixtures::vmm::{self, Shape};
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Linux).unwrap();
    let c = home.celesto_data_dir().unwrap();
    c.row("idle1", "stopped", "qemu", None).unwrap();
    c.disk("idle1", "qcow2", 1 << 16, 1 << 14).unwrap();
    let held = c.disk("held1", "qcow2", 1 << 16, 1 << 14).unwrap();
    smolsweep_fixtures::age_tree(t.path(), smolsweep_fixtures::OLD).unwrap();
    let bin = vmm::standin_bin(std::path::Path::new(env!("CARGO_TARGET_TMPDIR")));
    let _vm = vmm::spawn(
        &bin,
        &Shape {
            argv: vec![
                "qemu-system-x86_64".into(),
                format!("-drive file={}", held.display()),
            ],
            open: Some(&held),
            home: Some(&home.root),
            ..Shape::default()
        },
    );
    let r = smolsweep::scan::scan(&crate::scan_options(&home));
    let v = smolsweep::view::ScanView::of(&r, &smolsweep::plan::Plan::reclaimable(&r));
    let group = |kind: &str| {
        v.groups
            .iter()
            .find(|g| g.kind.as_str() == kind)
            .unwrap_or_else(|| panic!("no {kind}: {:#?}", v.groups))
    };
    let idle = group("celesto.sandbox_disk");
    assert_ne!(idle.risk_label, "in use", "no process uses it");
    assert_eq!(idle.risk_label, smolsweep::view::LIVE_NOT_IN_USE);
    let used = group("celesto.in_use_disk");
    assert_eq!(used.risk_label, "in use");
}
