//! The uninstall wizard's commands under Tauri's mock runtime, through IPC: preflight → plan →
//! run (with progress events) → proof, on a scratch HOME laid out by the fixture crate (a
//! smolvm 1.32.2 script install with a machine, caches, registry credentials and a PATH block).
//! The core's machine actions are answered by a recording runner (the real CLI is driven in the
//! WebDriver test); everything else is the core on the scratch HOME.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use smolsweep::env::EnvSnapshot;
use smolsweep::exec::{ActionRunner, Outcome};
use smolsweep::model::{Platform, Product, ScanReport};
use smolsweep::uninstall::UninstallPlan;
use smolsweep_desktop::uninstall::Uninstaller;
use smolsweep_desktop::EV_UNINSTALL_PROGRESS;
use smolsweep_desktop::{Backend, Note, Notifier};
use smolsweep_fixtures::smolvm::Smolvm;
use smolsweep_fixtures::{Home, Layout};
use tauri::test::{get_ipc_response, MockRuntime};
use tauri::webview::InvokeRequest;
use tauri::{App, Listener, WebviewWindow};

/// Machine actions as the CLI would report them, recorded.
#[derive(Default)]
struct Calls(Mutex<Vec<String>>);

struct Runner(Arc<Calls>);
impl ActionRunner for Runner {
    fn stop_machine(&self, _: Product, name: &str, _: Option<u32>, _: Option<u64>) -> Outcome {
        self.0 .0.lock().unwrap().push(format!("stop {name}"));
        Outcome::done("stopped")
    }
    fn delete_machine(
        &self,
        _: Product,
        name: &str,
        _: bool,
        _: &[String],
        _: Option<(u32, u64)>,
    ) -> Outcome {
        self.0 .0.lock().unwrap().push(format!("delete {name}"));
        Outcome::done("deleted")
    }
    fn reap(&self, pid: u32, _: u64, _: Product, _: Option<&str>, _: u32) -> Outcome {
        self.0 .0.lock().unwrap().push(format!("reap {pid}"));
        Outcome::done("reaped")
    }
    fn detach(&self, m: &Path) -> Outcome {
        self.0
             .0
            .lock()
            .unwrap()
            .push(format!("detach {}", m.display()));
        Outcome::done("detached")
    }
}

struct Scratch {
    home: PathBuf,
    journal: PathBuf,
    calls: Arc<Calls>,
}

impl Uninstaller for Scratch {
    fn env(&self) -> anyhow::Result<EnvSnapshot> {
        Ok(EnvSnapshot::from_pairs(
            &self.home,
            [(
                "PATH",
                format!("{}/.local/bin:/usr/bin:/bin", self.home.display()),
            )],
        ))
    }
    fn platform(&self) -> Platform {
        Platform::Linux
    }
    fn runner(&self, _: &UninstallPlan, _: &EnvSnapshot) -> Box<dyn ActionRunner> {
        Box::new(Runner(self.calls.clone()))
    }
    fn journal_path(&self) -> Option<PathBuf> {
        Some(self.journal.clone())
    }
}

struct Fake(Arc<Scratch>);
impl Backend for Fake {
    fn scan(&self) -> anyhow::Result<ScanReport> {
        anyhow::bail!("not scanned in this test")
    }
    fn execute(
        &self,
        _: &smolsweep::plan::Plan,
        _: smolsweep::exec::Confirmed,
        _: smolsweep::exec::Origin,
        _: &dyn Fn(&smolsweep::exec::ProgressEvent),
    ) -> Result<smolsweep::exec::ExecReport, String> {
        Err("not run in this test".into())
    }
    fn uninstaller(&self) -> Arc<dyn Uninstaller> {
        self.0.clone()
    }
}

struct NoNotes;
impl Notifier for NoNotes {
    fn notify(&self, _: &Note, _: Box<dyn FnOnce() + Send>) -> anyhow::Result<()> {
        Ok(())
    }
}

struct World {
    _dir: tempfile::TempDir,
    home: PathBuf,
    smol: Smolvm,
    bashrc: (PathBuf, String),
    scratch: Arc<Scratch>,
    _app: App<MockRuntime>,
    window: WebviewWindow<MockRuntime>,
    progress: Arc<Mutex<Vec<Value>>>,
}

/// A smolvm script install with one machine, caches, credentials and a PATH block.
fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let h = Home::new(dir.path(), Layout::Linux).unwrap();
    let smol = Smolvm::new(&h).unwrap();
    smol.install("1.32.2").unwrap();
    smol.data_root_contents().unwrap();
    smol.record("demo", json!({})).unwrap();
    smol.machine_dir(
        "demo",
        smolsweep_fixtures::smolvm::DiskSet::Raw {
            storage: 1 << 20,
            overlay: 1 << 20,
        },
    )
    .unwrap();
    smol.registry_blob(&"ab".repeat(32)).unwrap();
    smol.image_archive("alpine.tar").unwrap();
    smol.config_toml().unwrap();
    let rc = smol.rc_files().unwrap();
    let (bash, _, _) = rc.iter().find(|(p, _, _)| p.ends_with(".bashrc")).unwrap();
    let bashrc = (bash.clone(), std::fs::read_to_string(bash).unwrap());

    let scratch = Arc::new(Scratch {
        home: h.root.clone(),
        journal: dir.path().join("data/journal.jsonl"),
        calls: Arc::default(),
    });
    let (app, window) = crate::common::mock_app(
        Arc::new(Fake(scratch.clone())),
        Arc::new(NoNotes),
        dir.path(),
        false,
    );
    let progress = Arc::new(Mutex::new(vec![]));
    let p2 = progress.clone();
    app.listen_any(EV_UNINSTALL_PROGRESS, move |e| {
        p2.lock()
            .unwrap()
            .push(serde_json::from_str(e.payload()).unwrap());
    });
    World {
        home: h.root.clone(),
        _dir: dir,
        smol,
        bashrc,
        scratch,
        _app: app,
        window,
        progress,
    }
}

fn call(w: &World, cmd: &str, args: Value) -> Result<Value, Value> {
    let req = InvokeRequest {
        cmd: cmd.into(),
        callback: tauri::ipc::CallbackFn(0),
        error: tauri::ipc::CallbackFn(1),
        url: "tauri://localhost".parse().unwrap(),
        body: tauri::ipc::InvokeBody::Json(args),
        headers: Default::default(),
        invoke_key: tauri::test::INVOKE_KEY.to_string(),
    };
    get_ipc_response(&w.window, req).map(|b| b.deserialize::<Value>().unwrap())
}

fn plan(w: &World, product: &str, creds: bool, path_block: bool) -> Value {
    call(
        w,
        "uninstall_plan",
        json!({"product": product, "removeCredentials": creds, "removePathBlock": path_block}),
    )
    .unwrap()
}

/// Run the plan shown as the window does: its digest and its ticks.
fn run(w: &World, plan: &Value) -> Result<Value, Value> {
    let checked: Vec<bool> = plan["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["checked"] == true)
        .collect();
    call(
        w,
        "uninstall_run",
        json!({ "digest": plan["digest"], "checked": checked }),
    )
}

fn step_index(plan: &Value, f: impl Fn(&Value) -> bool) -> usize {
    plan["steps"]
        .as_array()
        .unwrap()
        .iter()
        .position(f)
        .unwrap_or_else(|| panic!("no such step in {plan:#}"))
}

#[test]
fn wizard_preflight_plan_run_proof_leaves_smolvm_gone_and_credentials_kept() {
    let w = world();
    let prefix = w.home.join(".smolvm");

    // 1. Preflight: the install with its version, the machine, the PATH block, credentials.
    let pre = call(&w, "uninstall_preflight", json!({})).unwrap();
    assert_eq!(pre["home"], json!(w.home));
    let installs = pre["installs"].as_array().unwrap();
    assert!(
        installs
            .iter()
            .any(|i| i["product"] == "smolvm" && i["version"] == "1.32.2"),
        "{installs:#?}"
    );
    assert!(pre["machines"]
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m["name"] == "demo"));
    assert!(pre["path_blocks"]
        .as_array()
        .unwrap()
        .iter()
        .any(|b| b["file"] == json!(w.bashrc.0)));
    assert!(pre["credentials"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["path"] == json!(w.smol.config_dir)));
    assert!(pre["state_dirs"]
        .as_array()
        .unwrap()
        .iter()
        .any(|d| d["exists"] == true && d["allocated_bytes"].as_u64().unwrap() > 0));
    assert!(prefix.is_dir(), "preflight changes nothing");

    // 2-3. Choices (defaults: credentials and PATH block kept) and the plan.
    let p = plan(&w, "smolvm", false, false);
    let steps = p["steps"].as_array().unwrap();
    assert!(steps.iter().all(|s| s["checked"] == true));
    assert!(steps
        .iter()
        .any(|s| s["action"] == "delete_machine" && s["name"] == "demo"));
    assert!(!steps.iter().any(|s| s["action"] == "remove_path_block"));
    assert!(p["kept"]
        .as_array()
        .unwrap()
        .iter()
        .any(|k| k["path"] == json!(w.smol.config_dir)));

    // 5. Run: every step reported as it finishes, then the proof.
    let res = run(&w, &p).unwrap();
    let calls = w.scratch.calls.0.lock().unwrap().clone();
    assert!(calls.contains(&"delete demo".to_string()), "{calls:?}");
    let progress = w.progress.lock().unwrap().clone();
    let checked = steps.iter().filter(|s| s["checked"] == true).count();
    assert_eq!(progress.len(), checked, "{progress:#?}");
    let last = progress.last().unwrap();
    assert_eq!(last["done"], last["total"]);
    assert!(progress.iter().any(
        |e| e["summary"].as_str().unwrap().contains("demo") && e["result"]["outcome"] == "done"
    ));
    let records = res["run"]["records"].as_array().unwrap();
    assert_eq!(records.len(), steps.len());
    assert!(
        records.iter().all(|r| r["result"]["outcome"] != "failed"),
        "{records:#?}"
    );

    // 6. Proof: clean, with the audited home; the prefix is gone; credentials and the rc file
    // stay as they were.
    let proof = &res["proof"];
    assert_eq!(proof["clean"], true, "{}", proof["kv"]);
    let kv = proof["kv"].as_str().unwrap();
    assert!(kv.contains("result=clean"), "{kv}");
    assert!(
        kv.contains(&format!("audited_home={}", w.home.display())),
        "{kv}"
    );
    let report = proof["report"].as_str().unwrap();
    assert!(
        report.contains("result=clean") && report.contains("demo"),
        "{report}"
    );
    assert!(!prefix.exists(), "the install prefix is gone");
    assert!(!w.home.join(".local/bin/smolvm").exists());
    assert!(w.smol.config_dir.join("config.toml").is_file());
    assert_eq!(std::fs::read_to_string(&w.bashrc.0).unwrap(), w.bashrc.1);
    // Every action went through the journal.
    let j = std::fs::read_to_string(&w.scratch.journal).unwrap();
    assert!(j.contains("demo"), "{j}");

    // The proof alone, again.
    let again = call(&w, "uninstall_verify", json!({})).unwrap();
    assert_eq!(again["clean"], true, "{}", again["kv"]);
    assert!(
        again["report"].as_str().unwrap().contains("delete"),
        "the run is in the report"
    );
    // A plan runs once.
    let e = run(&w, &p).unwrap_err();
    assert!(e.as_str().unwrap().contains("already run"), "{e}");
    assert_eq!(w.scratch.calls.0.lock().unwrap().len(), calls.len());
}

#[test]
fn wizard_unticked_step_is_skipped_and_the_proof_says_what_remains() {
    let w = world();
    call(&w, "uninstall_preflight", json!({})).unwrap();
    let mut p = plan(&w, "smolvm", true, true);
    // Asked for: credentials and the PATH block are in the plan.
    assert!(p["steps"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["action"] == "remove_path_block"));
    let registry = w.smol.cache_dir.join("smolvm-registry");
    let i = step_index(&p, |s| {
        s["action"] == "remove_tree" && s["path"] == json!(registry)
    });
    p["steps"][i]["checked"] = json!(false);
    let res = run(&w, &p).unwrap();
    let rec = &res["run"]["records"][i];
    assert_eq!(rec["result"]["outcome"], "skipped", "{rec:#}");
    // Its line and word are the core's (`view::uninstall::step_row`), as the CLI says them.
    let row = &res["steps"][i];
    assert_eq!(row["word"], "skipped", "{row:#}");
    assert_eq!(row["detail"], "unticked", "{row:#}");
    assert_eq!(
        row["line"],
        format!("{}. {}", i + 1, rec["summary"].as_str().unwrap())
    );
    assert!(registry.is_dir(), "the unticked step was not carried out");
    assert!(!w.home.join(".smolvm").exists());
    // Credentials removed on request; the rc file lost only the block, and was backed up.
    assert!(!w.smol.config_dir.exists());
    let rc = std::fs::read_to_string(&w.bashrc.0).unwrap();
    assert_eq!(rc, w.bashrc.1.replace(&w.smol.path_block(false), ""));
    assert!(!res["run"]["backups"].as_array().unwrap().is_empty());
    // The proof is dirty and names the registry cache with what removes it.
    let proof = &res["proof"];
    assert_eq!(proof["clean"], false);
    let kv = proof["kv"].as_str().unwrap();
    assert!(kv.contains("result=dirty"), "{kv}");
    assert!(
        kv.contains("remains=") && kv.contains("smolvm-registry"),
        "{kv}"
    );
    assert!(kv.contains("fix="), "{kv}");
}

#[test]
fn wizard_run_refuses_a_plan_it_did_not_make() {
    let w = world();
    // No plan yet.
    let e = call(&w, "uninstall_run", json!({"digest": "x", "checked": []})).unwrap_err();
    assert!(e.as_str().unwrap().contains("no plan"), "{e}");
    call(&w, "uninstall_preflight", json!({})).unwrap();
    let p = plan(&w, "smolvm", false, false);
    // Another plan's digest (a step pointed elsewhere on the way) is not the plan shown.
    let mut bad = p.clone();
    bad["digest"] = json!("0".repeat(64));
    let e = run(&w, &bad).unwrap_err();
    assert!(e.as_str().unwrap().contains("not the one shown"), "{e}");
    // Nor is the plan shown before a new one was made (with credentials this time).
    let with_creds = plan(&w, "smolvm", true, false);
    assert_ne!(with_creds["digest"], p["digest"]);
    let e = run(&w, &p).unwrap_err();
    assert!(e.as_str().unwrap().contains("not the one shown"), "{e}");
    let p = plan(&w, "smolvm", false, false);
    // One tick per step.
    let e = call(
        &w,
        "uninstall_run",
        json!({ "digest": p["digest"], "checked": [true] }),
    );
    assert!(e.is_err() || p["steps"].as_array().unwrap().len() == 1);
    // Nothing ticked: nothing to do.
    let mut none = p.clone();
    for s in none["steps"].as_array_mut().unwrap() {
        s["checked"] = json!(false);
    }
    let e = run(&w, &none).unwrap_err();
    assert!(e.as_str().unwrap().contains("nothing to do"), "{e}");
    assert!(w.scratch.calls.0.lock().unwrap().is_empty());
    assert!(w.home.join(".smolvm/smolvm-bin").is_file());
    assert!(w.smol.config_dir.join("config.toml").is_file());
}

/// Every word the wizard shows travels in the commands' JSON: the products' names, each step's
/// size, the tally and the question for the ticks shown, the freed line, the failed checks.
#[test]
fn wizard_commands_carry_sizes_names_tally_question_and_freed_line() {
    use smolsweep::model::human_bytes;
    let w = world();
    let pre = call(&w, "uninstall_preflight", json!({})).unwrap();
    // Each item is the core's row (`view::uninstall`), its product named.
    let installs = pre["installs"].as_array().unwrap();
    let rows = pre["rows"]["installs"].as_array().unwrap();
    assert_eq!(rows.len(), installs.len());
    assert!(!rows.is_empty(), "{pre:#}");
    for (i, r) in installs.iter().zip(rows) {
        let product: Product = serde_json::from_value(i["product"].clone()).unwrap();
        assert_eq!(r["main"], i["path"], "{r:#}");
        assert!(
            r["detail"]
                .as_str()
                .unwrap()
                .starts_with(product.display_name()),
            "{r:#}"
        );
    }
    if !pre["dot_smolvm"].is_null() {
        let rows = pre["rows"]["state_dirs"].as_array().unwrap();
        let line = rows.last().unwrap()["detail"].as_str().unwrap();
        assert!(line.contains(Product::Smolvm.display_name()), "{line}");
    }
    let p = plan(&w, "smolvm", false, false);
    let steps = p["steps"].as_array().unwrap();
    let sizes = p["sizes"].as_array().unwrap();
    assert_eq!(sizes.len(), steps.len());
    for (s, z) in steps.iter().zip(sizes) {
        let want = match s["bytes"].as_u64().unwrap() {
            0 => String::new(),
            b => human_bytes(b),
        };
        assert_eq!(z, &json!(want), "{s:#}");
    }
    assert!(sizes.iter().any(|z| z != ""), "some step removes bytes");
    let core: UninstallPlan = {
        // The plan's own words for its ticks, as the core says them.
        let mut v = p.clone();
        for s in v["steps"].as_array_mut().unwrap() {
            s.as_object_mut().unwrap().remove("identity");
        }
        serde_json::from_value(v).unwrap_or_else(|_| {
            panic!("the plan reads back without identities");
        })
    };
    assert_eq!(p["tally"], core.tally());
    assert_eq!(p["question"], core.question());
    assert_eq!(p["product_names"], Product::Smolvm.display_name());
    let q = p["question"].as_str().unwrap();
    assert!(
        q.starts_with(&format!(
            "Uninstall {} from {}: ",
            Product::Smolvm.display_name(),
            w.home.display()
        )) && q.contains("freeing about"),
        "{q}"
    );
    // The ticks shown: the shell's tally for them, the plan unchanged.
    let n = steps.len();
    let mut ticks = vec![true; n];
    ticks[0] = false;
    let t = call(&w, "uninstall_ticks", json!({ "checked": ticks })).unwrap();
    assert_eq!(t["will_run"], n - 1);
    assert!(
        t["tally"].as_str().unwrap().ends_with("1 is left out"),
        "{t}"
    );
    assert!(
        t["question"].as_str().unwrap().contains("1 is left out"),
        "{t}"
    );
    let none = call(&w, "uninstall_ticks", json!({ "checked": vec![false; n] })).unwrap();
    assert_eq!(none["will_run"], 0);
    assert!(
        none["tally"].as_str().unwrap().contains("none will run"),
        "{none}"
    );
    assert!(call(&w, "uninstall_ticks", json!({ "checked": [true] })).is_err() || n == 1);
    // The run: the freed line, and no failed check.
    let res = run(&w, &p).unwrap();
    let freed = res["run"]["freed_bytes"].as_u64().unwrap();
    assert_eq!(res["freed"], format!("Freed about {}.", human_bytes(freed)));
    assert_eq!(res["proof"]["clean"], true, "{}", res["proof"]["kv"]);
    assert_eq!(res["proof"]["failed_line"], "");
}
