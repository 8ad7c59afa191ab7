//! The installed-style app with the real scan (no report file) of a scratch HOME laid out by the
//! fixture crate: the tray menu shows what the core's scan finds, and a new orphaned VMM (a real
//! process shaped like smolvm's `_boot-vm`) is announced exactly once.
//!
//! Needs Xvfb, a session bus and dunst: scripts/desktop-tests.sh runs it (`--ignored`).

use std::path::Path;
use std::time::{Duration, SystemTime};

use crate::common::*;
use smolsweep::env::EnvSnapshot;
use smolsweep::model::{human_bytes, Platform};
use smolsweep::scan::{scan, ScanOptions};
use smolsweep_fixtures::vmm::{fake_vmm_bin, spawn, Shape};
use smolsweep_fixtures::{age_tree, celesto_edge_cases, smolvm_edge_cases, Home, Layout, OLD};

/// The environment the app runs with: the scratch HOME's, plus the display and session bus.
fn app_env(home: &Home) -> Vec<(String, String)> {
    let mut v = home.env_vars();
    v.push(("PATH".into(), "/usr/bin:/bin".into()));
    for k in ["DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "XAUTHORITY"] {
        if let Ok(val) = std::env::var(k) {
            v.push((k.into(), val));
        }
    }
    v
}

fn expected_scan(home: &Home) -> smolsweep::model::ScanReport {
    let mut vars = home.env_vars();
    vars.push(("PATH".into(), "/usr/bin:/bin".into()));
    let mut env = EnvSnapshot::from_pairs(home.root.clone(), vars);
    env.euid = rustix::process::geteuid().as_raw();
    scan(&ScanOptions {
        env,
        platform: Platform::Linux,
        age_guard: Duration::from_secs(120),
        now: SystemTime::now(),
    })
}

#[test]
#[ignore = "needs a display server and dunst: run scripts/desktop-tests.sh"]
fn real_scan_of_a_scratch_home_fills_the_menu_and_a_new_orphan_vmm_is_notified_once() {
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Linux).unwrap();
    let _celesto = celesto_edge_cases(&home).unwrap();
    let _smolvm = smolvm_edge_cases(&home).unwrap();
    let want = expected_scan(&home);
    assert!(want.totals.reclaimable_allocated_bytes > 0);

    let log = log_dir().join("app-real-scan.log");
    let child = std::process::Command::new(APP)
        .env_clear()
        .envs(app_env(&home))
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let app = AppProc { child, log };
    let (bus, path) = wait_for(20, "the tray menu", || find_menu(app.pid()));
    let status = format!(
        "Reclaimable: {}",
        human_bytes(want.totals.reclaimable_allocated_bytes)
    );
    let items = wait_for(30, &status, || {
        layout(&bus, &path)
            .ok()
            .filter(|l| item(l, &status).is_some())
    });
    assert!(item(
        &items,
        &format!(
            "Reclaim {}…",
            human_bytes(want.totals.reclaimable_allocated_bytes)
        )
    )
    .is_some());

    // A VM is left running with no machine record: a real process shaped like smolvm's VMM.
    let late_dir = home.smolvm().unwrap().dangling_dir("vm-late").unwrap();
    age_tree(&late_dir, OLD).unwrap();
    let bin = fake_vmm_bin(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/fake_vmm.rs"),
        Path::new(env!("CARGO_TARGET_TMPDIR")),
    );
    let vmm = spawn(
        &bin,
        &Shape {
            argv: vec![
                "/proc/self/exe".into(),
                "_boot-vm".into(),
                late_dir.join("boot-config.json").display().to_string(),
            ],
            comm: Some("libkrun VM"),
            home: Some(&home.root),
            ..Default::default()
        },
    );
    let count = |h: &[(String, String, String)]| {
        h.iter()
            .filter(|(a, s, b)| {
                a == "Smolsweep" && s == "Orphaned VM still running" && b.contains("vm-late")
            })
            .count()
    };
    assert_eq!(count(&dunst_history()), 0);
    click_label(&bus, &path, "Rescan now").unwrap();
    let vm_label = "smol-machines smolvm · vm-late · orphaned";
    wait_for(30, vm_label, || {
        layout(&bus, &path)
            .ok()
            .filter(|l| item(l, vm_label).is_some())
    });
    let h = wait_for(20, "the orphan notification", || {
        let h = dunst_history();
        (count(&h) > 0).then_some(h)
    });
    assert_eq!(count(&h), 1, "{h:?}");
    let body = &h.iter().find(|(_, _, b)| b.contains("vm-late")).unwrap().2;
    assert!(body.contains(&format!("pid {}", vmm.pid())), "{body}");

    click_label(&bus, &path, "Rescan now").unwrap();
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        count(&dunst_history()),
        1,
        "a second scan does not repeat it"
    );
}
