//! Issue 39, item 6: one object, one story. A Celesto sandbox whose inventory row is gone while
//! its QEMU still runs was told four ways (its lock "of sandbox 'x', which exists" beside "No
//! inventory row claims it"; its process "in no list of sandboxes"; `why x` "not a machine or
//! sandbox"; `why celesto:x` without the running pid or `reap`). Every surface now tells it from
//! one set of facts, with the command that ends it.

use std::path::{Path, PathBuf};

use serde_json::Value;
use smolsweep_fixtures::vmm::{self, FakeVmm, Shape};
use smolsweep_fixtures::{age_tree, Scratch, OLD};

/// `smolsweep ARGS` in `sc`'s HOME: exit code and stdout.
fn cli(sc: &Scratch, args: &[&str]) -> (i32, String) {
    let o = sc
        .command(env!("CARGO_BIN_EXE_smolsweep"), args)
        .env("LANG", "C.UTF-8")
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    (o.status.code().unwrap_or(-1), text)
}

/// Sandbox `sbx1`: its disk, log, create lock and host key, no inventory row (another sandbox
/// has one), and a QEMU of this HOME running it as Celesto starts one (`-drive file=…` and
/// `-qmp unix:…/qmp-sbx1.sock`).
fn unlisted_running(sc: &Scratch) -> (PathBuf, FakeVmm) {
    let c = sc.home.celesto_data_dir().unwrap();
    c.row("other1", "stopped", "qemu", None).unwrap();
    let disk = c.disk("sbx1", "qcow2", 1 << 16, 1 << 14).unwrap();
    c.log("sbx1", 1000).unwrap();
    c.lock("sbx1.create.lock").unwrap();
    c.known_hosts("sbx1").unwrap();
    let qmp = sc.home.sockets().qmp("sbx1").unwrap();
    age_tree(&sc.home.root, OLD).unwrap();
    let bin = vmm::standin_bin(Path::new(env!("CARGO_TARGET_TMPDIR")));
    let vm = vmm::spawn(
        &bin,
        &Shape {
            argv: vec![
                "qemu-system-x86_64".into(),
                "-drive".into(),
                format!("file={},format=qcow2,if=virtio", disk.display()),
                "-qmp".into(),
                format!("unix:{},server=on,wait=off", qmp.display()),
            ],
            open: Some(&disk),
            home: Some(&sc.home.root),
            ..Shape::default()
        },
    );
    (disk, vm)
}

/// Hazard (issue 39, item 6): a sandbox whose row is gone while its QEMU still runs was told
/// four ways. Its disk, log, lock, host key and socket, its VM process, `why sbx1`, `why
/// celesto:sbx1` and the window's rows all say one sentence with the running pid and `smolsweep
/// reap PID`; and that command ends it, after which what it left is reclaimable.
#[test]
fn a_sandbox_with_no_row_whose_vm_still_runs_is_told_one_way_everywhere() {
    let sc = Scratch::new();
    let (disk, vm) = unlisted_running(&sc);
    let pid = vm.pid();
    let (_, json) = cli(&sc, &["scan", "--json"]);
    let r: Value = serde_json::from_str(&json).unwrap();
    let process = r["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pid"] == pid)
        .expect("the VM process");
    let story = process["reason"].as_str().unwrap().to_string();
    assert!(story.contains(&format!("(process {pid})")), "{story}");
    assert!(
        story.contains(&format!("`smolsweep reap {pid}` ends it")),
        "{story}"
    );
    let mine: Vec<&Value> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["owner"] == "sbx1")
        .collect();
    assert!(
        mine.len() >= 5,
        "disk, log, lock, host key, socket: {mine:#?}"
    );
    for f in &mine {
        assert_eq!(f["verdict"], "protected", "{f:#}");
        assert_eq!(f["reason"].as_str().unwrap(), story, "{f:#}");
    }
    // No surface contradicts it.
    let (_, verbose) = cli(&sc, &["scan", "-v"]);
    for contradiction in [
        "which exists",
        "in no list of sandboxes",
        "does not list this disk",
    ] {
        assert!(
            !verbose.contains(contradiction),
            "{contradiction}:\n{verbose}"
        );
    }
    // `why` by its bare id, by `celesto:ID`, and of its process.
    let flat = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let story_flat = flat(&story);
    for target in ["sbx1".to_string(), "celesto:sbx1".into(), pid.to_string()] {
        let (code, why) = cli(&sc, &["why", &target]);
        assert_eq!(code, 0, "why {target}:\n{why}");
        assert!(flat(&why).contains(&story_flat), "why {target}:\n{why}");
        assert!(
            why.contains(&format!("`smolsweep reap {pid}`")),
            "why {target}:\n{why}"
        );
    }
    // The window's rows are the scan view's.
    let report: smolsweep::model::ScanReport = serde_json::from_str(&json).unwrap();
    let v = smolsweep::view::ScanView::of(&report, &smolsweep::plan::Plan::reclaimable(&report));
    let rows: Vec<&smolsweep::view::Row> = v
        .groups
        .iter()
        .flat_map(|g| g.rows.iter())
        .filter(|row| {
            report
                .finding(&row.id)
                .is_some_and(|f| f.owner.as_deref() == Some("sbx1"))
        })
        .collect();
    assert_eq!(rows.len(), mine.len());
    assert!(rows.iter().all(|row| row.reason == story));
    assert!(v
        .processes
        .iter()
        .any(|p| p.pid == pid && p.reason == story));
    // The command it names ends it; what it left is then reclaimable.
    let (code, out) = cli(&sc, &["reap", "-y", &pid.to_string()]);
    assert_eq!(code, 0, "{out}");
    assert!(!vmm::alive(pid), "{out}");
    let (_, json) = cli(&sc, &["scan", "--json"]);
    let r: Value = serde_json::from_str(&json).unwrap();
    let d = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == disk.to_str().unwrap())
        .unwrap();
    assert_eq!(d["verdict"], "reclaimable", "{d:#}");
    drop(vm);
}
