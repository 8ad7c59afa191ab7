//! The shell under Tauri's mock runtime: commands through IPC, the real menu built and read,
//! menu clicks, notifications and the scan lock. No display needed.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use smolsweep::exec::{ActionRunner, Confirmed, ExecReport, Origin, Outcome, ProgressEvent};
use smolsweep::model::{
    finding_id, Finding, Machine, OptInClass, Platform, Product, ProductReport, ScanReport, Scope,
    Totals, Verdict, VmProcess, SCAN_SCHEMA,
};
use smolsweep::plan::Plan as CorePlan;
use smolsweep_desktop::{build_app, build_menu, handle_menu_id, Backend, Deps, Note, Notifier};
use tauri::menu::MenuItemKind;
use tauri::test::{get_ipc_response, mock_builder, mock_context, noop_assets, MockRuntime};
use tauri::webview::InvokeRequest;
use tauri::{App, WebviewWindow, WebviewWindowBuilder};

struct Fake {
    report: Mutex<ScanReport>,
    scans: AtomicUsize,
    running: AtomicUsize,
    max_running: AtomicUsize,
    delay: Duration,
    /// What the runner was asked to do (`reap <pid> <start>`, `stop <name>`, `delete <name>`).
    calls: Mutex<Vec<String>>,
    journal: PathBuf,
    /// The keep rules and the automatic clean-up policy file of this test's HOME.
    keep: PathBuf,
    policy: PathBuf,
}

/// Records machine and process actions instead of carrying them out.
struct Recorder<'a>(&'a Mutex<Vec<String>>);
impl ActionRunner for Recorder<'_> {
    fn stop_machine(&self, _: Product, name: &str, _: Option<u32>, _: Option<u64>) -> Outcome {
        self.0.lock().unwrap().push(format!("stop {name}"));
        Outcome::done("stopped")
    }
    fn delete_machine(
        &self,
        _: Product,
        name: &str,
        cascade: bool,
        _: &[String],
        _: Option<(u32, u64)>,
    ) -> Outcome {
        let c = if cascade { " --cascade" } else { "" };
        self.0.lock().unwrap().push(format!("delete {name}{c}"));
        Outcome::done("deleted")
    }
    fn reap(&self, pid: u32, start: u64, _: Product, _: Option<&str>, _: u32) -> Outcome {
        self.0.lock().unwrap().push(format!("reap {pid} {start}"));
        Outcome::done("ended")
    }
    fn detach(&self, m: &Path) -> Outcome {
        Outcome::failed(format!("not in this test: {}", m.display()))
    }
}

impl Backend for Fake {
    fn scan(&self) -> anyhow::Result<ScanReport> {
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_running.fetch_max(now, Ordering::SeqCst);
        std::thread::sleep(self.delay);
        self.scans.fetch_add(1, Ordering::SeqCst);
        self.running.fetch_sub(1, Ordering::SeqCst);
        // Like a real scan: files that are gone are not found again.
        let mut r = self.report.lock().unwrap().clone();
        r.findings
            .retain(|f| f.path.exists() || f.identity.is_none());
        r.compute_totals();
        Ok(r)
    }
    /// The real executor and journal; the re-judge answers "as planned" (the findings and
    /// processes are hand-built) and the runner records.
    fn execute(
        &self,
        plan: &CorePlan,
        confirmed: Confirmed,
        origin: Origin,
        progress: &dyn Fn(&ProgressEvent),
    ) -> Result<ExecReport, String> {
        let runner = Recorder(&self.calls);
        let mut judge = AsPlanned;
        let road = smolsweep::exec::Road::given(&mut judge, &runner)
            .journal_at(self.journal.clone())
            .sink(progress);
        smolsweep::exec::run(plan, Some(confirmed), origin, road).map_err(|e| e.to_string())
    }
    fn journal_path(&self) -> Option<PathBuf> {
        Some(self.journal.clone())
    }
    fn keep_path(&self) -> Option<PathBuf> {
        Some(self.keep.clone())
    }
    fn auto_policy_path(&self) -> Option<PathBuf> {
        Some(self.policy.clone())
    }
}

#[derive(Default)]
struct Notes(Mutex<Vec<Note>>);
impl Notifier for Notes {
    fn notify(&self, note: &Note, _on_review: Box<dyn FnOnce() + Send>) -> anyhow::Result<()> {
        self.0.lock().unwrap().push(note.clone());
        Ok(())
    }
}

fn file_finding(root: &Path, name: &str, verdict: Verdict, class: Option<OptInClass>) -> Finding {
    let path = root.join(name);
    std::fs::write(&path, vec![7u8; 8192]).unwrap();
    let md = std::fs::symlink_metadata(&path).unwrap();
    let kind = match verdict {
        Verdict::Reclaimable => smolsweep::model::FindingKind::CelestoOrphanDisk,
        Verdict::OptIn => smolsweep::model::FindingKind::SmolvmPackCache,
        Verdict::Protected => smolsweep::model::FindingKind::CelestoSandboxDisk,
        Verdict::Unknown => smolsweep::model::FindingKind::SmolvmMachineDir,
    };
    let identity = smolsweep::model::FileIdentity::of(&path).unwrap();
    Finding {
        apparent_bytes: md.size(),
        allocated_bytes: md.blocks() * 512,
        reason: format!("{name} reason"),
        opt_in_class: class,
        identity: Some(identity),
        root: Some(root.to_path_buf()),
        ..Finding::new(
            finding_id(Product::Celesto, kind, &path),
            Product::Celesto,
            kind,
            path,
            verdict,
        )
    }
}

fn orphan(pid: u32) -> VmProcess {
    VmProcess {
        pid,
        start_time: 99,
        product: Product::Smolvm,
        shape: smolsweep::model::ProcShape::SmolvmBootVm,
        owner: Some("lost".into()),
        orphan: true,
        scope: Scope::ThisHome,
        held_deleted_bytes: 1_500_000_000,
        uid: 0,
        comm: "smolvm".into(),
        argv: vec![],
        paths: vec![],
        reason: "no machine record".into(),
        fds_readable: true,
        kept: None,
    }
}

struct World {
    _dir: tempfile::TempDir,
    home: PathBuf,
    fake: Arc<Fake>,
    notes: Arc<Notes>,
    app: App<MockRuntime>,
    window: WebviewWindow<MockRuntime>,
}

fn world(delay_ms: u64, confirm: bool) -> World {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    // A product root below HOME (the core never deletes directly from HOME).
    let state = home.join("state");
    std::fs::create_dir_all(&state).unwrap();
    let findings = vec![
        file_finding(&state, "orphan-a.qcow2", Verdict::Reclaimable, None),
        file_finding(&state, "orphan-b.qcow2", Verdict::Reclaimable, None),
        file_finding(
            &state,
            "cache.tar",
            Verdict::OptIn,
            Some(OptInClass::Caches),
        ),
        file_finding(&state, "live.qcow2", Verdict::Protected, None),
        file_finding(&state, "odd.img", Verdict::Unknown, None),
    ];
    let mut report = ScanReport {
        schema: SCAN_SCHEMA.into(),
        home: home.clone(),
        platform: Platform::Linux,
        products: vec![ProductReport {
            product: Product::Celesto,
            detected: true,
            status: "ok".into(),
            roots: Default::default(),
            problems: vec![],
            version: None,
            newer: None,
        }],
        findings,
        machines: vec![],
        processes: vec![],
        totals: Totals::default(),
        scanned_at: 0,
        scanned_at_ns: 0,
        duration_ms: 0,
        compact: Default::default(),
    };
    report.compute_totals();
    let fake = Arc::new(Fake {
        report: Mutex::new(report),
        scans: AtomicUsize::new(0),
        running: AtomicUsize::new(0),
        max_running: AtomicUsize::new(0),
        delay: Duration::from_millis(delay_ms),
        calls: Mutex::new(vec![]),
        journal: dir.path().join("smolsweep-data/journal.jsonl"),
        keep: dir.path().join("smolsweep-data/keep.json"),
        policy: smolsweep::policy_path(&home),
    });
    let notes = Arc::new(Notes::default());
    let (app, window) = crate::common::mock_app(fake.clone(), notes.clone(), dir.path(), confirm);
    World {
        _dir: dir,
        home,
        fake,
        notes,
        app,
        window,
    }
}

fn call(w: &World, cmd: &str, args: Value) -> Result<Value, Value> {
    call_in(&w.window, cmd, args)
}

fn call_in(window: &WebviewWindow<MockRuntime>, cmd: &str, args: Value) -> Result<Value, Value> {
    let req = InvokeRequest {
        cmd: cmd.into(),
        callback: tauri::ipc::CallbackFn(0),
        error: tauri::ipc::CallbackFn(1),
        url: "tauri://localhost".parse().unwrap(),
        body: tauri::ipc::InvokeBody::Json(args),
        headers: Default::default(),
        invoke_key: tauri::test::INVOKE_KEY.to_string(),
    };
    get_ipc_response(window, req).map(|b| b.deserialize::<Value>().unwrap())
}

fn ids_by_verdict(w: &World, v: &str) -> Vec<String> {
    let r = call(w, "get_report", json!({})).unwrap();
    r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["verdict"] == v)
        .map(|f| f["id"].as_str().unwrap().to_string())
        .collect()
}

/// (id, text, enabled) of every native menu item, submenus flattened.
fn menu_items(w: &World) -> Vec<(String, String, bool)> {
    let model: smolsweep::tray::TrayModel =
        serde_json::from_value(call(w, "get_tray_model", json!({})).unwrap()).unwrap();
    let menu = build_menu(&w.app, &model).unwrap();
    let mut out = vec![];
    fn walk(items: Vec<MenuItemKind<MockRuntime>>, out: &mut Vec<(String, String, bool)>) {
        for k in items {
            match k {
                MenuItemKind::MenuItem(i) => out.push((
                    i.id().as_ref().to_string(),
                    i.text().unwrap(),
                    i.is_enabled().unwrap(),
                )),
                MenuItemKind::Submenu(s) => {
                    out.push((
                        s.id().as_ref().to_string(),
                        s.text().unwrap(),
                        s.is_enabled().unwrap(),
                    ));
                    walk(s.items().unwrap(), out)
                }
                _ => {}
            }
        }
    }
    walk(menu.items().unwrap(), &mut out);
    out
}

fn wait_for(mut f: impl FnMut() -> bool) {
    for _ in 0..200 {
        if f() {
            return;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("condition not reached in 5 s");
}

#[test]
fn report_is_empty_until_the_first_scan() {
    let w = world(0, false);
    assert_eq!(call(&w, "get_report", json!({})).unwrap(), Value::Null);
    let items = menu_items(&w);
    assert_eq!(items[0].1, "Scanning…");
    let st = call(&w, "rescan", json!({})).unwrap();
    assert_eq!(st["scans"], 1);
    assert_eq!(st["report"]["findings"].as_array().unwrap().len(), 5);
    assert_eq!(st["tray"]["icon"], "reclaimable");
}

#[test]
fn the_first_menu_shows_the_last_scans_numbers_until_the_fresh_scan_is_in() {
    // A run scans and saves its menu; the next start draws it at once, marked as from when and
    // acting on nothing, until its own first scan replaces it (issue 40, item 4).
    let w = world(0, false);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    w.fake.report.lock().unwrap().scanned_at = now - 5 * 60;
    call(&w, "rescan", json!({})).unwrap();
    let drawn: smolsweep::tray::TrayModel =
        serde_json::from_value(call(&w, "get_tray_model", json!({})).unwrap()).unwrap();
    let data = w._dir.path().join("data");
    assert!(data.join(smolsweep::tray::SAVED_MENU_FILE).is_file());
    let next = build_app(
        mock_builder(),
        Deps {
            backend: w.fake.clone(),
            notifier: w.notes.clone(),
            config_dir: Some(w._dir.path().join("config")),
            data_dir: Some(data),
            tray: false,
            background: false,
            confirm_answer: false,
        },
    )
    .build(mock_context(noop_assets()))
    .unwrap();
    let window = WebviewWindowBuilder::new(&next, "main", Default::default())
        .build()
        .unwrap();
    let model = |w: &WebviewWindow<MockRuntime>| -> smolsweep::tray::TrayModel {
        serde_json::from_value(call_in(w, "get_tray_model", json!({})).unwrap()).unwrap()
    };
    let first = model(&window);
    assert_eq!(
        first.status,
        format!("{} (last scan 5 min ago)", drawn.status)
    );
    assert_eq!(first.icon, drawn.icon);
    assert_eq!(
        call_in(&window, "get_report", json!({})).unwrap(),
        Value::Null
    );
    let items = build_menu(&next, &first).unwrap().items().unwrap();
    let enabled = |id: &str| {
        items.iter().find_map(|k| match k {
            MenuItemKind::MenuItem(i) if i.id().as_ref() == id => Some(i.is_enabled().unwrap()),
            _ => None,
        })
    };
    assert_eq!(
        enabled("reclaim"),
        Some(false),
        "plans wait for the fresh scan"
    );
    assert_eq!(enabled("rescan"), Some(true));
    call_in(&window, "rescan", json!({})).unwrap();
    let fresh = model(&window);
    assert_eq!(fresh.status, drawn.status);
    assert_eq!(fresh.reclaim_ids, drawn.reclaim_ids);
}

#[test]
fn native_menu_shows_totals_and_every_action() {
    let w = world(0, false);
    call(&w, "rescan", json!({})).unwrap();
    let items = menu_items(&w);
    let labels: Vec<&str> = items.iter().map(|i| i.1.as_str()).collect();
    // Two 8 KiB files: allocated size depends on the file system, so compare with the report.
    let r = call(&w, "get_report", json!({})).unwrap();
    let bytes = r["totals"]["reclaimable_allocated_bytes"].as_u64().unwrap();
    let human = smolsweep::model::human_bytes(bytes);
    assert_eq!(
        labels,
        [
            format!("Reclaimable: {human}").as_str(),
            format!("Reclaim {human}…").as_str(),
            "Rescan now",
            "Open Smolsweep",
            "Uninstall SmolVM…",
            "Quit"
        ]
    );
    let reclaim = items.iter().find(|i| i.0 == "reclaim").unwrap();
    assert!(reclaim.2, "reclaim is enabled");
    assert!(!items[0].2, "the status line is not clickable");
}

#[test]
fn menu_lists_orphaned_vms_with_end_process() {
    let w = world(0, true);
    w.fake.report.lock().unwrap().processes.push(orphan(4321));
    call(&w, "rescan", json!({})).unwrap();
    let items = menu_items(&w);
    let ids: Vec<&str> = items.iter().map(|i| i.0.as_str()).collect();
    assert!(ids.contains(&"vm:4321:99"), "{ids:?}");
    // An orphan has one action, "End process" (issue 39): no "Stop" beside it.
    assert!(!ids.contains(&"vm.stop:4321:99"), "{ids:?}");
    assert!(ids.contains(&"vm.reap:4321:99"));
    // Clicking "Reap" (confirmed) runs the core plan that ends exactly that process, journaled
    // as the tray's.
    handle_menu_id(w.app.handle(), "vm.reap:4321:99");
    wait_for(|| !w.fake.calls.lock().unwrap().is_empty());
    assert_eq!(*w.fake.calls.lock().unwrap(), ["reap 4321 99"]);
    wait_for(|| runs(&w).len() == 1);
    let run = &runs(&w)[0];
    assert_eq!(
        run["origin"],
        json!({"surface": "tray", "command": "end process"})
    );
    assert_eq!(run["done"], 1);
}

#[test]
fn tray_stop_runs_nothing_when_the_dialog_is_declined() {
    let w = world(0, false);
    w.fake.report.lock().unwrap().processes.push(orphan(4321));
    call(&w, "rescan", json!({})).unwrap();
    handle_menu_id(w.app.handle(), "vm.stop:4321:99");
    std::thread::sleep(Duration::from_millis(300));
    assert!(w.fake.calls.lock().unwrap().is_empty());
    assert!(runs(&w).is_empty());
}

#[test]
fn vm_action_refuses_a_vm_not_in_the_scan() {
    let w = world(0, true);
    call(&w, "rescan", json!({})).unwrap();
    let e = call(
        &w,
        "execute_vm_action",
        json!({"pid": 1, "startTime": 1, "action": "reap"}),
    )
    .unwrap_err();
    assert!(
        e.as_str().unwrap().contains("not in the latest scan"),
        "{e}"
    );
    assert!(w.fake.calls.lock().unwrap().is_empty());
    assert!(runs(&w).is_empty());
}

fn machine(name: &str, branched_from: Option<&str>) -> Machine {
    Machine {
        alive: true,
        effective_state: "running".into(),
        allocated_bytes: 3_000_000,
        branched_from: branched_from.map(String::from),
        ..Machine::new(Product::Smolvm, name, "running")
    }
}

fn owned(pid: u32, name: &str) -> VmProcess {
    VmProcess {
        owner: Some(name.into()),
        orphan: false,
        reason: format!("the VM of machine {name}"),
        ..orphan(pid)
    }
}

/// Every run in the core journal, oldest first, as the History tab receives it (newest first).
fn runs(w: &World) -> Vec<Value> {
    let h = call(w, "get_history", json!({})).unwrap();
    let mut v = h["runs"].as_array().unwrap().clone();
    v.reverse();
    v
}

/// Stop, End process and Delete in the window: a core plan from a fresh scan, shown with its
/// action summaries, run (after "yes") through the executor and journaled as the window's.
#[test]
fn window_vm_actions_run_the_confirmed_core_plan_and_are_journaled() {
    let w = world(0, true);
    {
        let mut r = w.fake.report.lock().unwrap();
        r.machines.push(machine("web", None));
        r.processes.push(owned(500, "web"));
        r.processes.push(orphan(501));
    }
    let cases = [
        (
            500,
            "stop",
            "stop",
            "stop smol-machines smolvm machine 'web' (running)",
            "stop web",
            "Stop 1 machine",
        ),
        (
            500,
            "delete",
            "delete",
            "delete smol-machines smolvm machine 'web' (3.0 MB)",
            "delete web",
            "Delete 1 machine",
        ),
        (
            501,
            "stop",
            "end process",
            "end orphaned smol-machines smolvm",
            "reap 501 99",
            "End 1 VM process",
        ),
    ];
    for (i, (pid, action, command, summary_start, call_made, headline)) in
        cases.into_iter().enumerate()
    {
        let scans = w.fake.scans.load(Ordering::SeqCst);
        let args = json!({"pid": pid, "startTime": 99, "action": action});
        let plan = call(&w, "plan_vm_action", args.clone()).unwrap();
        assert_eq!(
            w.fake.scans.load(Ordering::SeqCst),
            scans + 1,
            "a fresh scan"
        );
        assert_eq!(plan["command"], command);
        let steps = plan["steps"].as_array().unwrap();
        assert_eq!(steps.len(), 1, "{plan}");
        let summary = steps[0].as_str().unwrap().to_string();
        assert!(summary.starts_with(summary_start), "{summary}");
        // The words are the core's confirmation of the plan, as the CLI prints them.
        assert_eq!(plan["confirmation"]["headline"], headline, "{plan}");
        assert!(
            plan["question"].as_str().unwrap().starts_with(headline),
            "{plan}"
        );
        assert_eq!(plan["digest"].as_str().unwrap().len(), 64);
        assert!(
            w.fake.calls.lock().unwrap().len() == i,
            "nothing runs before yes"
        );
        let mut go = args.clone();
        go["digest"] = plan["digest"].clone();
        let out = call(&w, "execute_vm_action", go).unwrap();
        assert_eq!(out["steps"][0]["status"], "done", "{out}");
        assert_eq!(out["steps"][0]["summary"], summary);
        assert_eq!(w.fake.calls.lock().unwrap()[i], call_made);
        let run = runs(&w).pop().unwrap();
        assert_eq!(
            run["origin"],
            json!({"surface": "window", "command": command})
        );
        assert_eq!(run["plan_id"], out["plan_id"]);
        // The journal keeps the action's own summary (`Action::describe`); the window shows
        // the line a person reads for it (`view::action_line`), as the CLI prints it.
        let journaled = run["outcomes"][0]["summary"].as_str().unwrap();
        let verb = summary.split(' ').next().unwrap();
        assert!(journaled.starts_with(verb), "{journaled} / {summary}");
    }
}

/// A plan that plans nothing (another HOME's VM) shows the planner's reason and runs nothing.
#[test]
fn a_foreign_vm_plans_nothing_and_nothing_runs() {
    let w = world(0, true);
    w.fake.report.lock().unwrap().processes.push(VmProcess {
        scope: Scope::Foreign,
        ..orphan(600)
    });
    let args = json!({"pid": 600, "startTime": 99, "action": "stop"});
    let plan = call(&w, "plan_vm_action", args.clone()).unwrap();
    assert_eq!(plan["steps"], json!([]));
    assert_eq!(
        plan["refused"][0]["reason"],
        "belongs to another HOME; never signalled"
    );
    assert_eq!(
        plan["question"],
        "Nothing can be done, so nothing will run."
    );
    let mut go = args;
    go["digest"] = plan["digest"].clone();
    let e = call(&w, "execute_vm_action", go).unwrap_err();
    assert!(e.as_str().unwrap().contains("another HOME"), "{e}");
    assert!(w.fake.calls.lock().unwrap().is_empty());
    assert!(runs(&w).is_empty(), "nothing was journaled");
}

/// The confirmation names exactly what will run: an orphan whose machine record appeared
/// between the plan and "yes" is not ended, and the user is asked to review again.
#[test]
fn a_vm_plan_that_changed_before_yes_runs_nothing() {
    let w = world(0, true);
    w.fake.report.lock().unwrap().processes.push(orphan(700));
    let args = json!({"pid": 700, "startTime": 99, "action": "reap"});
    let plan = call(&w, "plan_vm_action", args.clone()).unwrap();
    assert_eq!(plan["steps"].as_array().unwrap().len(), 1);
    {
        let mut r = w.fake.report.lock().unwrap();
        r.machines.push(machine("lost", None));
        r.processes[0] = owned(700, "lost");
    }
    call(&w, "rescan", json!({})).unwrap();
    let mut go = args;
    go["digest"] = plan["digest"].clone();
    let e = call(&w, "execute_vm_action", go).unwrap_err();
    assert!(
        e.as_str().unwrap().contains("changed since it was shown"),
        "{e}"
    );
    assert!(w.fake.calls.lock().unwrap().is_empty());
    assert!(runs(&w).is_empty());
}

/// Deleting a machine that others are branched from is offered only with cascade, and the plan
/// names every branch.
#[test]
fn delete_with_branches_is_planned_only_with_cascade() {
    let w = world(0, true);
    {
        let mut r = w.fake.report.lock().unwrap();
        r.machines.push(machine("base", None));
        r.machines.push(machine("kid", Some("base")));
        r.processes.push(owned(800, "base"));
    }
    let args = json!({"pid": 800, "startTime": 99, "action": "delete"});
    let plain = call(&w, "plan_vm_action", args.clone()).unwrap();
    assert_eq!(plain["steps"], json!([]));
    assert_eq!(plain["cascade_available"], true);
    let mut c = args.clone();
    c["cascade"] = json!(true);
    let cascade = call(&w, "plan_vm_action", c.clone()).unwrap();
    assert!(cascade["steps"][0]
        .as_str()
        .unwrap()
        .contains("--cascade): kid"));
    // A digest confirmed for the plain plan does not run the cascade.
    let mut wrong = c.clone();
    wrong["digest"] = plain["digest"].clone();
    assert!(call(&w, "execute_vm_action", wrong).is_err());
    c["digest"] = cascade["digest"].clone();
    call(&w, "execute_vm_action", c).unwrap();
    assert_eq!(*w.fake.calls.lock().unwrap(), ["delete base --cascade"]);
}

#[test]
fn plan_refuses_protected_and_unknown_findings() {
    let w = world(0, false);
    call(&w, "rescan", json!({})).unwrap();
    let mut ids = ids_by_verdict(&w, "protected");
    ids.extend(ids_by_verdict(&w, "unknown"));
    ids.extend(ids_by_verdict(&w, "reclaimable"));
    let plan = call(&w, "plan_reclaim", json!({ "ids": ids })).unwrap();
    assert_eq!(plan["steps"].as_array().unwrap().len(), 2);
    assert_eq!(plan["refused"].as_array().unwrap().len(), 2);
    for s in plan["steps"].as_array().unwrap() {
        assert!(s["path"].as_str().unwrap().contains("orphan-"));
    }
}

#[test]
fn execute_removes_exactly_the_selected_files_and_records_history() {
    let w = world(0, false);
    call(&w, "rescan", json!({})).unwrap();
    let mut chosen = vec![ids_by_verdict(&w, "reclaimable")[0].clone()];
    chosen.extend(ids_by_verdict(&w, "protected"));
    let out = call(&w, "execute_reclaim", json!({ "ids": chosen })).unwrap();
    assert_eq!(out["steps"].as_array().unwrap().len(), 1);
    assert_eq!(out["steps"][0]["status"], "removed");
    assert!(out["measured_bytes"].as_u64().unwrap() > 0);
    let gone = out["steps"][0]["path"].as_str().unwrap();
    assert!(!Path::new(gone).exists());
    let left: Vec<_> = std::fs::read_dir(w.home.join("state"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(left.len(), 4, "{left:?}");
    assert!(w.home.join("state/live.qcow2").exists(), "protected stays");
    // The run is in the core journal (what `smolsweep history` reads), as the window's reclaim.
    let hist = runs(&w);
    assert_eq!(hist.len(), 1);
    assert_eq!(
        hist[0]["origin"],
        json!({"surface": "window", "command": "reclaim"})
    );
    assert_eq!(hist[0]["done"], 1);
    assert!(w._dir.path().join("smolsweep-data/journal.jsonl").is_file());
    assert!(
        !w._dir.path().join("data/history.jsonl").exists(),
        "no window history file"
    );
    // After the reclaim the shell rescanned: the removed file is no longer a finding.
    let r = call(&w, "get_report", json!({})).unwrap();
    assert_eq!(r["findings"].as_array().unwrap().len(), 4);
    wait_for(|| {
        w.notes
            .0
            .lock()
            .unwrap()
            .iter()
            .any(|n| n.summary.starts_with("Freed "))
    });
}

/// The confirmation names exactly what will run: when a scan between showing the plan and
/// accepting it changed the plan (here a sandbox came back for one chosen disk), nothing is
/// deleted and the user is asked to review again.
#[test]
fn confirmed_plan_that_changed_before_execution_deletes_nothing() {
    let w = world(0, false);
    call(&w, "rescan", json!({})).unwrap();
    let chosen = ids_by_verdict(&w, "reclaimable");
    let plan = call(&w, "plan_reclaim", json!({ "ids": chosen })).unwrap();
    assert_eq!(plan["steps"].as_array().unwrap().len(), 2);
    let digest = plan["digest"].as_str().unwrap().to_string();
    assert_eq!(digest.len(), 64);

    // The same state rescanned: the same fingerprint, so the confirmation still holds.
    call(&w, "rescan", json!({})).unwrap();
    let again = call(&w, "plan_reclaim", json!({ "ids": chosen })).unwrap();
    assert_eq!(again["digest"], plan["digest"]);

    // A sandbox comes back for orphan-a: the next scan calls its disk protected.
    {
        let mut r = w.fake.report.lock().unwrap();
        let f = r
            .findings
            .iter_mut()
            .find(|f| f.path.ends_with("orphan-a.qcow2"))
            .unwrap();
        f.verdict = Verdict::Protected;
        f.reason = "Disk of sandbox 'a', which exists again.".into();
    }
    call(&w, "rescan", json!({})).unwrap();
    let e = call(
        &w,
        "execute_reclaim",
        json!({ "ids": chosen, "digest": digest }),
    )
    .unwrap_err();
    assert!(
        e.as_str().unwrap().contains("changed since it was shown"),
        "{e}"
    );
    assert!(w.home.join("state/orphan-a.qcow2").exists());
    assert!(w.home.join("state/orphan-b.qcow2").exists(), "nothing ran");
    assert!(runs(&w).is_empty());

    // Reviewed again, the new plan runs and leaves the protected disk alone.
    let plan = call(&w, "plan_reclaim", json!({ "ids": chosen })).unwrap();
    assert_eq!(plan["steps"].as_array().unwrap().len(), 1);
    let out = call(
        &w,
        "execute_reclaim",
        json!({ "ids": chosen, "digest": plan["digest"] }),
    )
    .unwrap();
    assert_eq!(out["steps"].as_array().unwrap().len(), 1);
    assert!(w.home.join("state/orphan-a.qcow2").exists());
    assert!(!w.home.join("state/orphan-b.qcow2").exists());
}

#[test]
fn tray_reclaim_runs_only_after_the_dialog_is_accepted() {
    let declined = world(0, false);
    call(&declined, "rescan", json!({})).unwrap();
    handle_menu_id(declined.app.handle(), "reclaim");
    std::thread::sleep(Duration::from_millis(300));
    assert!(declined.home.join("state/orphan-a.qcow2").exists());

    let w = world(0, true);
    call(&w, "rescan", json!({})).unwrap();
    handle_menu_id(w.app.handle(), "reclaim");
    wait_for(|| {
        !w.home.join("state/orphan-a.qcow2").exists()
            && !w.home.join("state/orphan-b.qcow2").exists()
    });
    wait_for(|| runs(&w).len() == 1);
    assert_eq!(
        runs(&w)[0]["origin"],
        json!({"surface": "tray", "command": "reclaim"})
    );
    assert!(
        w.home.join("state/cache.tar").exists(),
        "opt-in not chosen in settings"
    );
    assert!(w.home.join("state/live.qcow2").exists());
    assert!(w.home.join("state/odd.img").exists());
}

#[test]
fn settings_persist_and_change_the_reclaim_total() {
    let w = world(0, false);
    call(&w, "rescan", json!({})).unwrap();
    let before = call(&w, "get_tray_model", json!({})).unwrap();
    let s = call(
        &w,
        "set_settings",
        json!({"settings": {"scan_interval_secs": 10, "notifications": false, "autostart": false, "include_opt_in": ["caches"]}}),
    )
    .unwrap();
    assert_eq!(s["scan_interval_secs"], 60, "clamped to the minimum");
    assert_eq!(
        s["scan_interval_label"], "1 minute",
        "in words for the window"
    );
    let after = call(&w, "get_tray_model", json!({})).unwrap();
    assert_eq!(before["reclaim_ids"].as_array().unwrap().len(), 2);
    assert_eq!(after["reclaim_ids"].as_array().unwrap().len(), 3);
    assert!(after["reclaim_bytes"].as_u64() > before["reclaim_bytes"].as_u64());
    let saved = std::fs::read_to_string(w._dir.path().join("config/settings.json")).unwrap();
    assert!(saved.contains("caches"));
    assert_eq!(call(&w, "get_settings", json!({})).unwrap(), s);
}

#[test]
fn a_new_orphan_is_notified_once() {
    let w = world(0, false);
    call(&w, "rescan", json!({})).unwrap();
    w.fake.report.lock().unwrap().processes.push(orphan(777));
    call(&w, "rescan", json!({})).unwrap();
    call(&w, "rescan", json!({})).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let notes = w.notes.0.lock().unwrap();
    let orphan_notes: Vec<_> = notes
        .iter()
        .filter(|n| n.summary.contains("Orphaned VM"))
        .collect();
    assert_eq!(orphan_notes.len(), 1, "{notes:?}");
    assert!(orphan_notes[0].body.contains("1.5 GB"));
    assert!(orphan_notes[0].review);
    let saved = std::fs::read_to_string(w._dir.path().join("data/notified.json")).unwrap();
    assert!(saved.contains("proc:777:99"), "remembered across restarts");
}

#[test]
fn scans_never_overlap() {
    let w = world(150, false);
    let handles: Vec<_> = (0..3)
        .map(|_| {
            let h = w.app.handle().clone();
            std::thread::spawn(move || {
                tauri::async_runtime::block_on(smolsweep_desktop::scan_now(&h)).unwrap();
            })
        })
        .collect();
    handle_menu_id(w.app.handle(), "rescan");
    for h in handles {
        h.join().unwrap();
    }
    wait_for(|| w.fake.scans.load(Ordering::SeqCst) == 4);
    assert_eq!(w.fake.max_running.load(Ordering::SeqCst), 1);
}

#[test]
fn a_failed_scan_says_cant_verify() {
    struct Broken;
    impl Backend for Broken {
        fn scan(&self) -> anyhow::Result<ScanReport> {
            anyhow::bail!("permission denied reading the inventory")
        }
        fn execute(
            &self,
            _: &CorePlan,
            _: Confirmed,
            _: Origin,
            _: &dyn Fn(&ProgressEvent),
        ) -> Result<ExecReport, String> {
            unreachable!()
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let app = build_app(
        mock_builder(),
        Deps {
            backend: Arc::new(Broken),
            notifier: Arc::new(Notes::default()),
            config_dir: Some(dir.path().into()),
            data_dir: Some(dir.path().into()),
            tray: false,
            background: false,
            confirm_answer: true,
        },
    )
    .build(mock_context(noop_assets()))
    .unwrap();
    let e = tauri::async_runtime::block_on(smolsweep_desktop::scan_now(app.handle())).unwrap_err();
    assert!(e.contains("permission denied"));
    let w = WebviewWindowBuilder::new(&app, "main", Default::default())
        .build()
        .unwrap();
    let req = InvokeRequest {
        cmd: "get_tray_model".into(),
        callback: tauri::ipc::CallbackFn(0),
        error: tauri::ipc::CallbackFn(1),
        url: "tauri://localhost".parse().unwrap(),
        body: tauri::ipc::InvokeBody::Json(json!({})),
        headers: Default::default(),
        invoke_key: tauri::test::INVOKE_KEY.to_string(),
    };
    let m = get_ipc_response(&w, req)
        .unwrap()
        .deserialize::<Value>()
        .unwrap();
    assert_eq!(
        m["status"],
        "Can't verify: scan failed: permission denied reading the inventory"
    );
    assert_eq!(m["reclaim_ids"].as_array().unwrap().len(), 0);
}

/// The fake backend's plans are hand-built: the re-judge answers "as planned".
struct AsPlanned;
impl smolsweep::exec::Judge for AsPlanned {
    fn still_confirmed(
        &mut self,
        _: &smolsweep::plan::Plan,
        _: &smolsweep::plan::Action,
    ) -> Result<(), String> {
        Ok(())
    }
    fn changed(&mut self) {}
}

/// The window's old `history.jsonl` is not imported (its records are not plans) and is left as
/// it was; the History tab says where it is.
#[test]
fn the_old_window_history_is_left_in_place_and_not_imported() {
    let w = world(0, false);
    let old = w._dir.path().join("data/history.jsonl");
    std::fs::create_dir_all(old.parent().unwrap()).unwrap();
    let line = b"{\"started_at\":1,\"finished_at\":2,\"estimated_bytes\":5,\"measured_bytes\":5,\"steps\":[],\"refused\":[]}\n";
    std::fs::write(&old, line).unwrap();
    let h = call(&w, "get_history", json!({})).unwrap();
    assert_eq!(h["legacy"], json!(old));
    assert_eq!(h["runs"], json!([]));
    assert_eq!(
        h["journal"],
        json!(w._dir.path().join("smolsweep-data/journal.jsonl"))
    );
    assert_eq!(std::fs::read(&old).unwrap(), line);
}

/// One plan, one set of words: the Reclaim button's total and the confirmation are the core's
/// (`Plan::of_ids`, worded by `view::confirmation`), which counts a hard-linked file once — a
/// sum over the selected rows would count it twice.
#[test]
fn the_reclaim_button_and_the_confirmation_are_the_planners() {
    let w = world(0, false);
    let state = w.home.join("state");
    std::fs::hard_link(
        state.join("orphan-a.qcow2"),
        state.join("orphan-a-link.qcow2"),
    )
    .unwrap();
    let link = file_finding_existing(&state, "orphan-a-link.qcow2");
    w.fake.report.lock().unwrap().findings.push(link);
    let st = call(&w, "rescan", json!({})).unwrap();
    let ids = ids_by_verdict(&w, "reclaimable");
    assert_eq!(ids.len(), 3);
    let report: ScanReport = serde_json::from_value(st["report"].clone()).unwrap();
    let rows: u64 = report
        .findings
        .iter()
        .filter(|f| ids.contains(&f.id))
        .map(|f| f.allocated_bytes)
        .sum();
    let button = call(&w, "selection_estimate", json!({ "ids": ids })).unwrap();
    let core = CorePlan::from_scan(
        &report,
        &smolsweep::plan::Selection {
            ids: ids.clone(),
            ..Default::default()
        },
    );
    let want = serde_json::to_value(smolsweep::view::confirmation(&core)).unwrap();
    let selection = smolsweep::view::window::SelectionView::of(&ids, &core);
    assert_eq!(button, serde_json::to_value(selection).unwrap());
    assert_eq!(
        button["selected_line"],
        format!("3 selected · {}", button["headline"].as_str().unwrap()),
        "the line beside the button counts the selection as the core does"
    );
    let one = report.findings[0].allocated_bytes;
    assert_eq!(
        button["estimate_bytes"],
        json!(2 * one),
        "the link counts once"
    );
    assert_ne!(button["estimate_bytes"], json!(rows));
    let plan = call(&w, "plan_reclaim", json!({ "ids": ids })).unwrap();
    assert_eq!(plan["confirmation"], want);
    assert_eq!(plan["estimated_bytes"], button["estimate_bytes"]);
    // The tray's Reclaim says the same number (the default selection is the reclaimable rows).
    let tray = call(&w, "get_tray_model", json!({})).unwrap();
    assert_eq!(tray["reclaim_bytes"], button["estimate_bytes"]);
    assert_eq!(
        tray["status"],
        json!(format!(
            "Reclaimable: {}",
            button["estimate"].as_str().unwrap()
        ))
    );
    // And the window's view: the overview total is the planner's.
    assert_eq!(
        st["view"]["totals"]["reclaimable_bytes"],
        button["estimate_bytes"]
    );
    // The tray's native dialog words it as the core does.
    let (title, msg) =
        smolsweep_desktop::tray_reclaim_text(&smolsweep_desktop::backend::plan(&report, &ids));
    assert_eq!(
        title,
        format!("Reclaim {}", button["estimate"].as_str().unwrap())
    );
    assert!(
        msg.starts_with(&format!("{};", button["headline"].as_str().unwrap())),
        "{msg}"
    );
}

fn file_finding_existing(root: &Path, name: &str) -> Finding {
    let path = root.join(name);
    let md = std::fs::symlink_metadata(&path).unwrap();
    let kind = smolsweep::model::FindingKind::CelestoOrphanDisk;
    Finding {
        id: finding_id(Product::Celesto, kind, &path),
        identity: Some(smolsweep::model::FileIdentity::of(&path).unwrap()),
        apparent_bytes: md.size(),
        allocated_bytes: md.blocks() * 512,
        path,
        ..file_finding(root, "scratch-twin", Verdict::Reclaimable, None)
    }
}

/// The Running VMs view's machine rows: a Celesto sandbox (no VM process) and a stale `running`
/// row are in the view with what may be done; Stop and Delete of the sandbox run the core plan
/// through the product's CLI (the runner), journaled as the window's.
#[test]
fn machine_rows_of_both_products_stop_and_delete_through_the_core_plan() {
    let w = world(0, true);
    {
        let mut r = w.fake.report.lock().unwrap();
        r.machines.push(Machine {
            product: Product::Celesto,
            name: "sb-live".into(),
            state: "running".into(),
            effective_state: "running".into(),
            ..machine("sb-live", None)
        });
        r.machines.push(Machine {
            alive: false,
            effective_state: "stopped".into(),
            ..machine("ghost", None)
        });
    }
    let st = call(&w, "rescan", json!({})).unwrap();
    let rows = st["view"]["machines"].as_array().unwrap();
    let row = |name: &str| rows.iter().find(|m| m["name"] == name).unwrap().clone();
    assert_eq!(row("sb-live")["product"], "celesto");
    assert_eq!(row("sb-live")["can_stop"], true);
    assert_eq!(row("ghost")["stale"], true, "running with its VM gone");
    assert_eq!(row("ghost")["can_stop"], false);
    for (action, call_made, command) in [
        ("stop", "stop sb-live", "stop"),
        ("delete", "delete sb-live", "delete"),
    ] {
        let args = json!({"product": "celesto", "name": "sb-live", "action": action});
        let plan = call(&w, "plan_machine_action", args.clone()).unwrap();
        assert_eq!(
            plan["machine"],
            json!({"product": "celesto", "name": "sb-live"})
        );
        assert_eq!(plan["steps"].as_array().unwrap().len(), 1, "{plan}");
        assert!(
            plan["steps"][0].as_str().unwrap().contains("sb-live"),
            "{plan}"
        );
        let mut go = args;
        go["digest"] = plan["digest"].clone();
        let out = call(&w, "execute_machine_action", go).unwrap();
        assert_eq!(out["steps"][0]["status"], "done", "{out}");
        assert_eq!(w.fake.calls.lock().unwrap().last().unwrap(), call_made);
        let run = runs(&w).pop().unwrap();
        assert_eq!(
            run["origin"],
            json!({"surface": "window", "command": command})
        );
    }
    // A machine the scan does not know plans nothing.
    let none = call(
        &w,
        "plan_machine_action",
        json!({"product": "smolvm", "name": "nosuch", "action": "stop"}),
    )
    .unwrap();
    assert_eq!(none["steps"], json!([]));
    assert!(none["refused"][0]["reason"]
        .as_str()
        .unwrap()
        .contains("nosuch"));
}

/// A fake clock: `sleep_until` resolves when the test moves the time past it.
struct FakeClock(tokio::sync::watch::Sender<u64>);
impl smolsweep_desktop::Clock for FakeClock {
    fn now(&self) -> u64 {
        *self.0.borrow()
    }
    fn sleep_until(
        &self,
        t: u64,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + 'static>> {
        let mut rx = self.0.subscribe();
        Box::pin(async move {
            let _ = rx.wait_for(|&now| now >= t).await;
        })
    }
}

/// An orphan found within the rate limit's gap is announced when the gap ends, without waiting
/// for the next scan.
#[test]
fn a_held_back_orphan_is_announced_when_the_gap_ends_not_at_the_next_scan() {
    let w = world(0, false);
    let (tx, _) = tokio::sync::watch::channel(1000u64);
    let clock = Arc::new(FakeClock(tx));
    smolsweep_desktop::set_clock(w.app.handle(), clock.clone());
    w.fake.report.lock().unwrap().processes.push(orphan(10));
    call(&w, "rescan", json!({})).unwrap();
    let orphan_notes = |w: &World| {
        w.notes
            .0
            .lock()
            .unwrap()
            .iter()
            .filter(|n| n.summary.contains("rphaned VM"))
            .cloned()
            .collect::<Vec<_>>()
    };
    wait_for(|| orphan_notes(&w).len() == 1);
    // A second orphan 10 s later: held back.
    clock.0.send_replace(1010);
    w.fake.report.lock().unwrap().processes.push(orphan(12));
    call(&w, "rescan", json!({})).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(orphan_notes(&w).len(), 1, "rate limited");
    let scans = w.fake.scans.load(Ordering::SeqCst);
    // The gap ends: the notification goes out, and no scan ran for it.
    clock
        .0
        .send_replace(1000 + smolsweep_desktop::notes::MIN_GAP_SECS);
    wait_for(|| orphan_notes(&w).len() == 2);
    let n = &orphan_notes(&w)[1];
    assert!(n.body.contains("pid 12"), "{}", n.body);
    assert!(!n.body.contains("pid 10"), "only the new one: {}", n.body);
    assert_eq!(w.fake.scans.load(Ordering::SeqCst), scans);
}

// ---- issue 12: keep, filters, automatic clean-up -----------------------------------------------

const T0: u64 = 1_800_000_000;
const DAY: u64 = 86_400;

fn set_age(w: &World, name: &str, days: u64) -> String {
    let mut r = w.fake.report.lock().unwrap();
    let f = r
        .findings
        .iter_mut()
        .find(|f| f.path.file_name().unwrap() == name)
        .unwrap();
    f.newest_change_ns = ((T0 - days * DAY) * 1_000_000_000) as i64;
    f.id.clone()
}

fn fake_clock(w: &World) -> Arc<FakeClock> {
    let (tx, _) = tokio::sync::watch::channel(T0);
    let clock = Arc::new(FakeClock(tx));
    smolsweep_desktop::set_clock(w.app.handle(), clock.clone());
    clock
}

fn finding_of(w: &World, id: &str) -> Value {
    let r = call(w, "get_report", json!({})).unwrap();
    r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == id)
        .cloned()
        .unwrap_or(Value::Null)
}

/// "Keep" in the window writes a core keep rule: the finding is protected ("kept by you", with
/// when and why), refused by the planner and not reclaimed; a machine's rule keeps what belongs
/// to it; removing the rule makes it reclaimable again.
#[test]
fn keep_in_the_window_protects_a_finding_and_a_machine_until_removed() {
    let w = world(0, true);
    fake_clock(&w);
    {
        let mut r = w.fake.report.lock().unwrap();
        let mut m = machine("web", None);
        m.product = Product::Celesto;
        r.machines.push(m);
        let b = r
            .findings
            .iter_mut()
            .find(|f| f.path.ends_with("orphan-b.qcow2"))
            .unwrap();
        b.owner = Some("web".into());
    }
    call(&w, "rescan", json!({})).unwrap();
    let ids = ids_by_verdict(&w, "reclaimable");
    assert_eq!(ids.len(), 2);
    let a = finding_of(&w, &ids[0]);
    let (a_id, b_id) = if a["path"].as_str().unwrap().ends_with("orphan-a.qcow2") {
        (ids[0].clone(), ids[1].clone())
    } else {
        (ids[1].clone(), ids[0].clone())
    };
    let st = call(
        &w,
        "keep_item",
        json!({"request": {"by": "finding", "id": a_id}, "why": "my golden image"}),
    )
    .unwrap();
    assert_eq!(st["kept"][&a_id]["why"], "my golden image");
    assert_eq!(st["kept"][&a_id]["since"], "2027-01-15");
    assert_eq!(st["keeps"].as_array().unwrap().len(), 1);
    let fa = finding_of(&w, &a_id);
    assert_eq!(fa["verdict"], "protected");
    assert!(fa["reason"]
        .as_str()
        .unwrap()
        .starts_with("Kept by you since 2027-01-15 (my golden image)"));
    // The kept row's line and the finding's reason say it in the same words.
    let kept_line = st["kept"][&a_id]["kept_line"].as_str().unwrap();
    assert!(fa["reason"].as_str().unwrap().starts_with(kept_line));
    // The machine: everything that belongs to it.
    let st = call(
        &w,
        "keep_item",
        json!({"request": {"by": "machine", "product": "celesto", "name": "web"}}),
    )
    .unwrap();
    assert_eq!(st["keeps"].as_array().unwrap().len(), 2);
    assert!(st["kept"][&b_id]["what"]
        .as_str()
        .unwrap()
        .contains("celesto:web"));
    assert!(ids_by_verdict(&w, "reclaimable").is_empty());
    let plan = call(&w, "plan_reclaim", json!({"ids": [a_id, b_id]})).unwrap();
    assert!(plan["steps"].as_array().unwrap().is_empty());
    assert_eq!(plan["refused"].as_array().unwrap().len(), 2);
    assert!(call(&w, "execute_reclaim", json!({"ids": [a_id, b_id]})).is_err());
    assert!(Path::new(fa["path"].as_str().unwrap()).exists());
    // An unknown machine is not kept.
    assert!(call(
        &w,
        "keep_item",
        json!({"request": {"by": "machine", "product": "celesto", "name": "nope"}}),
    )
    .is_err());
    // Remove the finding's rule: reclaimable again.
    let rule = st["kept"][&a_id]["id"].as_str().unwrap().to_string();
    let st = call(&w, "remove_keep", json!({"id": rule})).unwrap();
    assert_eq!(st["keeps"].as_array().unwrap().len(), 1);
    assert_eq!(ids_by_verdict(&w, "reclaimable"), vec![a_id.clone()]);
    assert!(call(&w, "remove_keep", json!({"id": "nothing"})).is_err());
}

/// The window's filters are the core's: only what they show is listed, counted and reclaimed.
#[test]
fn filters_narrow_the_view_and_what_reclaim_selects() {
    let w = world(0, true);
    fake_clock(&w);
    let old = set_age(&w, "orphan-a.qcow2", 30);
    let young = set_age(&w, "orphan-b.qcow2", 1);
    call(&w, "rescan", json!({})).unwrap();
    let st = call(&w, "set_filter", json!({"filter": {"older_than": "7d"}})).unwrap();
    assert_eq!(st["shown"], 1);
    assert_eq!(st["total"], 5);
    let rows: Vec<String> = st["view"]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["rows"].as_array().unwrap().clone())
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(rows, vec![old.clone()]);
    // The window says what the filter hid, in the core's words (`ScanView::filter_line`).
    assert_eq!(
        st["view"]["filter_line"],
        "1 of 5 items matches the filter (older than 7 days)."
    );
    let one = call(&w, "selection_estimate", json!({"ids": [old]})).unwrap();
    let both = call(&w, "selection_estimate", json!({"ids": [old, young]})).unwrap();
    assert_eq!(one["estimate_bytes"], both["estimate_bytes"]);
    let out = call(&w, "execute_reclaim", json!({"ids": [old, young]})).unwrap();
    assert_eq!(out["steps"].as_array().unwrap().len(), 1);
    assert!(
        w.home.join("state/orphan-b.qcow2").exists(),
        "outside the filter: not touched"
    );
    assert!(!w.home.join("state/orphan-a.qcow2").exists());
    assert!(call(&w, "set_filter", json!({"filter": {"older_than": "7y"}})).is_err());
    let st = call(&w, "set_filter", json!({"filter": {"min_size": "1G"}})).unwrap();
    assert_eq!(st["shown"], 0);
    let st = call(
        &w,
        "set_filter",
        json!({"filter": {"products": ["smolvm"]}}),
    )
    .unwrap();
    assert_eq!(st["shown"], 0, "every finding here is Celesto's");
    let kind = finding_of(&w, &young)["kind"].clone();
    let st = call(&w, "set_filter", json!({"filter": {"kinds": [kind]}})).unwrap();
    assert_eq!(
        st["shown"], 1,
        "the young orphan disk is the one left of its kind"
    );
    assert!(
        st["kinds"].as_array().unwrap().len() >= 3,
        "the kinds to choose from"
    );
    let st = call(&w, "set_filter", json!({"filter": {}})).unwrap();
    assert_eq!(st["shown"], st["total"]);
    assert!(
        st["view"]["filter_line"].is_null(),
        "nothing hidden, nothing said"
    );
    // The treemap draws what the filter shows: one tile per item, inside the area.
    let tiles = st["treemap"].as_array().unwrap();
    assert_eq!(
        tiles.len(),
        4,
        "every item left after the reclaim: {tiles:?}"
    );
    for t in tiles {
        let (x, w) = (t["x"].as_f64().unwrap(), t["w"].as_f64().unwrap());
        assert!(x >= 0.0 && w > 0.0 && x + w <= smolsweep_desktop::TREEMAP_W + 1e-6);
    }
    let st = call(&w, "set_filter", json!({"filter": {"older_than": "7d"}})).unwrap();
    assert!(
        st["treemap"].as_array().unwrap().is_empty(),
        "the old one was reclaimed"
    );
}

fn auto_notes(w: &World) -> Vec<Note> {
    w.notes
        .0
        .lock()
        .unwrap()
        .iter()
        .filter(|n| n.summary.starts_with("Automatic clean-up") || n.summary.starts_with("Freed"))
        .cloned()
        .collect()
}

fn scheduled(w: &World) -> Value {
    let step =
        tauri::async_runtime::block_on(smolsweep_desktop::scheduled_scan(w.app.handle())).unwrap();
    serde_json::to_value(step).unwrap()
}

fn add_old_orphan(w: &World, name: &str) {
    let state = w.home.join("state");
    let mut f = file_finding(&state, name, Verdict::Reclaimable, None);
    f.newest_change_ns = ((T0 - 30 * DAY) * 1_000_000_000) as i64;
    w.fake.report.lock().unwrap().findings.push(f);
}

/// Automatic clean-up: off by default; the first run is a preview confirmed once, later runs go
/// unattended, above the cap it asks; kept and young items survive; one notification per run;
/// the journal marks the runs with surface `auto`; the policy file the systemd timer reads is
/// the app's setting.
#[test]
fn automatic_clean_up_asks_once_then_runs_within_its_cap() {
    let w = world(0, true);
    let clock = fake_clock(&w);
    let old = set_age(&w, "orphan-a.qcow2", 30);
    set_age(&w, "orphan-b.qcow2", 1);
    add_old_orphan(&w, "orphan-kept.qcow2");
    assert_eq!(scheduled(&w)["step"], "off", "off by default");
    let kept = ids_by_verdict(&w, "reclaimable")
        .into_iter()
        .find(|i| {
            finding_of(&w, i)["path"]
                .as_str()
                .unwrap()
                .ends_with("orphan-kept.qcow2")
        })
        .unwrap();
    call(
        &w,
        "keep_item",
        json!({"request": {"by": "finding", "id": kept}}),
    )
    .unwrap();

    let mut s = call(&w, "get_settings", json!({})).unwrap();
    assert_eq!(s["auto"]["enabled"], false);
    s["auto"]["enabled"] = json!(true);
    s["auto_confirmed"] = json!(true); // the window cannot confirm by itself
    let s = call(&w, "set_settings", json!({"settings": s})).unwrap();
    assert_eq!(s["auto_confirmed"], false);
    let file = smolsweep::policy_path(&w.home);
    let saved = smolsweep::Policy::from_json(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert!(saved.enabled);

    // First run: a preview, one notification, nothing deleted; the next scan does not ask again.
    let step = scheduled(&w);
    assert_eq!(step["step"], "asked");
    assert_eq!(step["preview"]["reason"], "first");
    assert_eq!(
        step["preview"]["lines"].as_array().unwrap().len(),
        1,
        "only the old, unkept one"
    );
    wait_for(|| auto_notes(&w).len() == 1);
    assert!(auto_notes(&w)[0].summary.contains("confirm the first run"));
    assert_eq!(scheduled(&w)["step"], "asked");
    std::thread::sleep(Duration::from_millis(150));
    assert_eq!(auto_notes(&w).len(), 1);
    assert!(w.home.join("state/orphan-a.qcow2").exists());
    let st = call(&w, "get_status", json!({})).unwrap();
    let digest = st["auto"]["digest"].as_str().unwrap().to_string();
    assert!(call(&w, "confirm_auto", json!({"digest": "0000"})).is_err());
    let out = call(&w, "confirm_auto", json!({"digest": digest})).unwrap();
    assert_eq!(out["steps"].as_array().unwrap().len(), 1);
    assert_eq!(out["steps"][0]["id"], old);
    wait_for(|| auto_notes(&w).len() == 2);
    assert!(
        auto_notes(&w)[1].summary.starts_with("Freed "),
        "{:?}",
        auto_notes(&w)
    );
    assert!(auto_notes(&w)[1].summary.ends_with(": 1 item"));
    assert!(!w.home.join("state/orphan-a.qcow2").exists());
    assert_eq!(
        call(&w, "get_settings", json!({})).unwrap()["auto_confirmed"],
        true
    );

    // Later: a new old orphan goes unattended, one notification.
    clock.0.send_replace(T0 + 3600);
    add_old_orphan(&w, "orphan-c.qcow2");
    let step = scheduled(&w);
    assert_eq!(step["step"], "ran", "{step}");
    wait_for(|| auto_notes(&w).len() == 3);
    assert!(!w.home.join("state/orphan-c.qcow2").exists());
    assert_eq!(scheduled(&w)["step"], "nothing");

    // Above the cap: it asks, nothing is deleted; a smaller cap does not need a new preview.
    let mut s = call(&w, "get_settings", json!({})).unwrap();
    s["auto"]["ask_above"] = json!("1k");
    call(&w, "set_settings", json!({"settings": s})).unwrap();
    add_old_orphan(&w, "orphan-d.qcow2");
    let step = scheduled(&w);
    assert_eq!(step["step"], "asked");
    assert_eq!(step["preview"]["reason"], "cap");
    wait_for(|| auto_notes(&w).len() == 4);
    assert!(auto_notes(&w)[3].summary.contains("above your cap"));
    assert!(w.home.join("state/orphan-d.qcow2").exists());

    // Kept and young items survived every run; the journal marks the policy's runs.
    assert!(w.home.join("state/orphan-kept.qcow2").exists());
    assert!(w.home.join("state/orphan-b.qcow2").exists());
    let auto_runs: Vec<Value> = runs(&w)
        .into_iter()
        .filter(|r| r["origin"]["surface"] == "auto")
        .collect();
    assert_eq!(auto_runs.len(), 2);
    std::thread::sleep(Duration::from_millis(150));
    assert_eq!(auto_notes(&w).len(), 4, "one notification per run");
}

fn low_notes(w: &World) -> usize {
    w.notes
        .0
        .lock()
        .unwrap()
        .iter()
        .filter(|n| n.summary.starts_with("Low disk space"))
        .count()
}

/// Low space, for real: a 20 MB tmpfs holds the state; filled past the threshold (10 %), one
/// notification with a "Reclaim …" action; none while it stays low; none after it recovers;
/// one again when it falls again (after the rate limit's gap).
#[test]
fn low_space_on_the_state_file_system_is_announced_once_per_episode() {
    let w = world(0, true);
    let clock = fake_clock(&w);
    let mp = w.home.join("state-tmpfs");
    std::fs::create_dir_all(&mp).unwrap();
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(&self.0).status();
        }
    }
    let st = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=20m", "tmpfs"])
        .arg(&mp)
        .status()
        .expect("mount");
    assert!(st.success(), "mounting a tmpfs needs root");
    let _guard = Unmount(mp.clone());
    {
        let mut r = w.fake.report.lock().unwrap();
        r.findings = vec![file_finding(
            &mp,
            "orphan-low.qcow2",
            Verdict::Reclaimable,
            None,
        )];
    }
    let filler = mp.join("filler");
    let fill = || std::fs::write(&filler, vec![1u8; 19 * 1024 * 1024]).unwrap();
    let scan = || {
        call(&w, "rescan", json!({})).unwrap();
        std::thread::sleep(Duration::from_millis(150));
    };
    scan();
    assert_eq!(low_notes(&w), 0, "plenty of space");
    fill();
    scan();
    wait_for(|| low_notes(&w) == 1);
    {
        let n = w.notes.0.lock().unwrap();
        let n = n
            .iter()
            .find(|n| n.summary.starts_with("Low disk space"))
            .unwrap();
        assert!(
            n.action.as_deref().unwrap().starts_with("Reclaim "),
            "{n:?}"
        );
        assert!(n.body.contains("state-tmpfs"), "{}", n.body);
        // The number the action offers is the tray's Reclaim, which its confirmation shows.
        let tray = menu_items(&w)
            .into_iter()
            .find(|(_, label, _)| label.starts_with("Reclaim "))
            .unwrap();
        assert_eq!(
            n.action.as_deref().unwrap(),
            tray.1.trim_end_matches('…'),
            "{n:?}"
        );
    }
    clock
        .0
        .send_replace(T0 + 2 * smolsweep_desktop::lowspace::MIN_GAP_SECS);
    scan();
    assert_eq!(low_notes(&w), 1, "still low: not again");
    std::fs::remove_file(&filler).unwrap();
    scan();
    assert_eq!(low_notes(&w), 1, "recovered: nothing");
    fill();
    scan();
    wait_for(|| low_notes(&w) == 2);
    scan();
    assert_eq!(low_notes(&w), 2);
}

/// The overview's words are the core's, in the status JSON: counts in words, the held line,
/// the legend's share and verdict (the bar takes the treemap's verdict colours), and the
/// reclaim result's sentences.
#[test]
fn status_and_reclaim_carry_the_words_and_verdicts_the_window_shows() {
    let w = world(0, false);
    call(&w, "rescan", json!({})).unwrap();
    let st = call(&w, "get_status", json!({})).unwrap();
    let v = &st["view"];
    let t = &v["totals"];
    assert_eq!(t["findings"], 5, "{t:#}");
    assert_eq!(t["reclaimable_items"], "2 items");
    assert_eq!(t["opt_in_items"], "1 item");
    assert_eq!(t["held_line"], "", "nothing is held open");
    let legend = v["legend"].as_array().unwrap();
    assert!(!legend.is_empty());
    let total: f64 = legend.iter().map(|e| e["percent"].as_f64().unwrap()).sum();
    assert!((total - 100.0).abs() < 1e-6, "{legend:#?}");
    // One verdict per slice, the verdict of its kind's tiles in the treemap: one colour for
    // one verdict across the bar and the treemap.
    let tiles = st["treemap"].as_array().unwrap();
    for e in legend {
        let verdict = e["verdict"].as_str().unwrap();
        assert!(
            ["reclaimable", "opt_in", "protected", "unknown"].contains(&verdict),
            "{e}"
        );
        for tile in tiles.iter().filter(|t| t["kind_label"] == e["label"]) {
            assert_eq!(tile["verdict"], e["verdict"], "{tile} / {e}");
        }
    }
    assert!(legend
        .iter()
        .any(|e| e["verdict"] == "reclaimable" && e["verdict_word"] == "reclaimable"));
    assert!(legend
        .iter()
        .any(|e| e["verdict"] == "protected" && e["verdict_word"] == "protected"));

    let mut chosen = vec![ids_by_verdict(&w, "reclaimable")[0].clone()];
    chosen.extend(ids_by_verdict(&w, "protected"));
    let out = call(&w, "execute_reclaim", json!({ "ids": chosen })).unwrap();
    assert_eq!(
        out["summary"],
        format!(
            "Removed 1 item; estimated {}, measured {}.",
            out["estimated"].as_str().unwrap(),
            out["measured"].as_str().unwrap()
        )
    );
    let refused = out["refused"].as_array().unwrap().len();
    assert!(refused >= 1, "{out:#}");
    let line = out["refused_line"].as_str().unwrap();
    assert!(
        line.starts_with(&format!("Not planned: {refused} selected item"))
            && line.ends_with("(kept or not verified)."),
        "{line}"
    );
    // The History tab's words for the run.
    let h = call(&w, "get_history", json!({})).unwrap();
    assert_eq!(h["damaged_line"], "");
    let run = &h["runs"][0];
    assert_eq!(run["counts"], "1 planned: 1 done", "{run:#}");
    assert_eq!(
        run["estimated_line"],
        format!("est. {}", out["estimated"].as_str().unwrap())
    );
}

/// Space over time: each scan records a point in the history beside the core journal (the file
/// rewritten only when a new hour starts or the totals change), the tray's tooltip carries the
/// core's sentence, and `get_trend` returns the core's view of the series; a damaged history
/// starts afresh and the view says so.
#[test]
fn scans_record_the_space_history_and_the_tooltip_says_the_cores_sentence() {
    let w = world(0, false);
    let file = w.fake.journal.with_file_name(smolsweep::trend::TREND_FILE);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, b"{\"schema\": 1").unwrap();
    call(&w, "rescan", json!({})).unwrap();
    let v = call(&w, "get_trend", json!({})).unwrap();
    assert!(
        v["notice"].as_str().unwrap().contains("starts afresh"),
        "{v:#}"
    );
    let rows = v["products"][0]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{v:#}");
    let r = call(&w, "get_report", json!({})).unwrap();
    let on_disk: u64 = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["allocated_bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(rows[0]["totals"]["on_disk"].as_u64(), Some(on_disk));
    let sentence = v["sentence"].as_str().unwrap();
    assert!(sentence.starts_with("SmolVM uses "), "{sentence}");
    let model = call(&w, "get_tray_model", json!({})).unwrap();
    assert!(
        model["tooltip"].as_str().unwrap().ends_with(sentence),
        "{model:#}"
    );
    let loaded = smolsweep::trend::load(&file);
    assert_eq!(loaded.damaged, None);
    assert_eq!(loaded.trend.points.len(), 1);

    // The same totals again: merged in memory, the file not rewritten (an atomic write gives
    // it a new inode) unless a new hour began in between.
    let hour = || std::time::UNIX_EPOCH.elapsed().unwrap().as_secs() / 3600;
    let (h0, ino) = (hour(), std::fs::metadata(&file).unwrap().ino());
    call(&w, "rescan", json!({})).unwrap();
    if hour() == h0 {
        assert_eq!(std::fs::metadata(&file).unwrap().ino(), ino);
    }
    // Other totals: written at once, still one point for the hour.
    w.fake
        .report
        .lock()
        .unwrap()
        .findings
        .retain(|f| !f.path.ends_with("odd.img"));
    call(&w, "rescan", json!({})).unwrap();
    assert_ne!(std::fs::metadata(&file).unwrap().ino(), ino);
    let v = call(&w, "get_trend", json!({})).unwrap();
    let rows = v["products"][0]["rows"].as_array().unwrap();
    assert!(rows.len() <= 2, "{v:#}");
    assert!(rows.last().unwrap()["totals"]["on_disk"].as_u64() < Some(on_disk));
}

/// Issue 21: "Why?" on a row answers with the core's text for the scan the window shows (the
/// text `smolsweep why` prints); a finding that is not in it is an error naming it.
#[test]
fn why_on_a_row_is_the_cores_text() {
    let w = world(0, false);
    call(&w, "rescan", json!({})).unwrap();
    let id = ids_by_verdict(&w, "reclaimable")[0].clone();
    let v = call(
        &w,
        "why_of",
        json!({ "target": { "by": "finding", "id": id } }),
    )
    .unwrap();
    let text = v["text"].as_str().unwrap();
    assert!(text.contains(&format!("(id {id})")), "{text}");
    assert!(text.contains("Verdict    reclaimable"), "{text}");
    assert!(text.contains("To free    `smolsweep prune"), "{text}");
    assert_eq!(v["why"]["finding"]["id"], id);
    let lines: Vec<&str> = v["why"]["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["text"].as_str().unwrap())
        .collect();
    assert!(lines.iter().all(|l| text.contains(l)), "{text}");
    let e = call(
        &w,
        "why_of",
        json!({ "target": { "by": "finding", "id": "0000000000000000" } }),
    )
    .unwrap_err();
    assert!(e.as_str().unwrap().contains("No finding has the id"), "{e}");
}

/// Issue 21: the tray's VM entries have "Why?" too, with the core's text for that process.
#[test]
fn the_tray_vm_entry_has_why_with_the_cores_text() {
    let w = world(0, true);
    w.fake.report.lock().unwrap().processes.push(orphan(4321));
    call(&w, "rescan", json!({})).unwrap();
    let items = menu_items(&w);
    let why = items.iter().find(|i| i.0 == "vm.why:4321:99").unwrap();
    assert_eq!((why.1.as_str(), why.2), ("Why?", true));
    handle_menu_id(w.app.handle(), "vm.why:4321:99");
    let v = call(
        &w,
        "why_of",
        json!({ "target": { "by": "process", "pid": 4321 } }),
    )
    .unwrap();
    let text = v["text"].as_str().unwrap();
    assert!(text.starts_with("process 4321\n"), "{text}");
    assert!(text.contains("it is an orphan of this HOME"), "{text}");
    assert!(text.contains("`smolsweep reap 4321`"), "{text}");
    // Nothing ran: "Why?" only tells.
    std::thread::sleep(Duration::from_millis(200));
    assert!(w.fake.calls.lock().unwrap().is_empty());
}

// ---- Issue 32: compaction from the tray and the window --------------------------------------

/// A real raw ext4 disk of smolvm machine `owner` (stopped) in this world's HOME, 12 MiB
/// written and deleted inside, estimated as the scan would (`compactable` bytes).
fn add_compactable_disk(w: &World, owner: &str) -> (PathBuf, u64) {
    use smolsweep_fixtures::disks::{allocated, debugfs_w, ext4_image};
    let dir = w.home.join(format!("state/{owner}"));
    std::fs::create_dir_all(&dir).unwrap();
    let img = ext4_image(&dir, "storage.raw", "64M", &[("big", 12), ("keep", 1)], &[]);
    debugfs_w(&img, "rm /big");
    let before = allocated(&img);
    let compactable = 12 << 20;
    let mut r = w.fake.report.lock().unwrap();
    let mut m = machine(owner, None);
    (m.state, m.effective_state, m.alive) = ("stopped".into(), "stopped".into(), false);
    r.machines.push(m);
    let mut disks = r.compact.disks.clone();
    disks.push(smolsweep::model::DiskEstimate {
        product: Product::Smolvm,
        owner: Some(owner.into()),
        saved: false,
        path: img.clone(),
        format: Some("raw".into()),
        allocated_bytes: before,
        compactable_bytes: compactable,
        guest_free_bytes: compactable,
        read_bytes: 0,
        cannot_tell: None,
        needs: None,
        kept: None,
    });
    r.compact = smolsweep::model::CompactReport::of(disks);
    (img, before)
}

/// Issue 32: "Compact 1 disk: 12.6 MB…" right after Reclaim in the native menu; a click asks
/// first (declined: nothing runs), and once accepted runs the core's compaction plan through
/// the executor, journaled as the tray's, the disk smaller, and a notification with what it
/// gave back. Its bytes are never in the reclaimable total.
#[test]
fn tray_compact_follows_reclaim_asks_first_and_runs_through_the_executor() {
    let declined = world(0, false);
    let (img, before) = add_compactable_disk(&declined, "web");
    call(&declined, "rescan", json!({})).unwrap();
    handle_menu_id(declined.app.handle(), "compact");
    std::thread::sleep(Duration::from_millis(300));
    assert!(runs(&declined).is_empty());
    assert_eq!(smolsweep_fixtures::disks::allocated(&img), before);

    let w = world(0, true);
    let (img, before) = add_compactable_disk(&w, "web");
    let st = call(&w, "rescan", json!({})).unwrap();
    let label = format!(
        "Compact 1 disk: {}…",
        smolsweep::model::human_bytes(12 << 20)
    );
    let items = menu_items(&w);
    let at = items.iter().position(|i| i.0 == "reclaim").unwrap();
    assert_eq!(
        (
            items[at + 1].0.as_str(),
            items[at + 1].1.as_str(),
            items[at + 1].2
        ),
        ("compact", label.as_str(), true),
        "{items:?}"
    );
    // Its own figure: never in the reclaimable total.
    let r = &st["report"];
    assert_eq!(
        st["view"]["totals"]["reclaimable_bytes"],
        r["totals"]["reclaimable_allocated_bytes"]
    );
    handle_menu_id(w.app.handle(), "compact");
    wait_for(|| runs(&w).first().is_some_and(|r| r["finished"] == true));
    let run = &runs(&w)[0];
    assert_eq!(
        run["origin"],
        json!({"surface": "tray", "command": "compact"})
    );
    assert_eq!(
        (run["done"].clone(), run["skipped"].clone()),
        (json!(1), json!(0)),
        "{run}"
    );
    let after = smolsweep_fixtures::disks::allocated(&img);
    assert!(after + (10 << 20) < before, "{before} -> {after}");
    wait_for(|| {
        w.notes
            .0
            .lock()
            .unwrap()
            .iter()
            .any(|n| n.summary.starts_with("Compacted 1 disk: gave back "))
    });
    // Nothing else ran: no finding was deleted.
    assert!(w.home.join("state/orphan-a.qcow2").exists());
}

/// Issue 32: the window shows compactable per machine and in total (opt-in, beside the
/// reclaimable total, not in it), and compacts one machine's disks with the core's sentence;
/// a plan that changed before "yes" compacts nothing.
#[test]
fn window_compacts_a_machines_disks_with_the_cores_sentence() {
    let w = world(0, true);
    let (img, before) = add_compactable_disk(&w, "web");
    let st = call(&w, "rescan", json!({})).unwrap();
    let size = smolsweep::model::human_bytes(12 << 20);
    assert_eq!(st["view"]["compact"]["size"], json!(size));
    assert_eq!(
        st["window"]["compact_button"],
        json!(format!("Compact 1 disk: {size}…"))
    );
    let m = st["view"]["machines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "web")
        .unwrap();
    assert_eq!(m["compactable"], json!(format!("{size} compactable")));
    let machine = json!({ "product": "smolvm", "name": "web" });
    let ask = call(&w, "plan_compact", json!({ "machine": machine })).unwrap();
    assert_eq!(ask["title"], "Compact 1 disk");
    assert_eq!(ask["ok"], "Compact");
    assert_eq!(ask["plan"]["confirmation"]["headline"], "Compact 1 disk");
    assert!(
        ask["message"]
            .as_str()
            .unwrap()
            .starts_with(&format!("Compact 1 disk, freeing about {size}?")),
        "{ask}"
    );
    assert_eq!(
        ask["plan"]["steps"][0]["path"],
        json!(img.display().to_string())
    );
    let stale = call(
        &w,
        "execute_compact",
        json!({ "machine": machine, "digest": "not-the-plan" }),
    )
    .unwrap_err();
    assert_eq!(stale, json!(smolsweep::view::window::COMPACT_PLAN_CHANGED));
    assert!(runs(&w).is_empty());
    let out = call(
        &w,
        "execute_compact",
        json!({ "machine": machine, "digest": ask["plan"]["digest"] }),
    )
    .unwrap();
    assert!(
        out["summary"]
            .as_str()
            .unwrap()
            .starts_with(&format!("Compacted 1 disk; estimated {size}, measured ")),
        "{out}"
    );
    assert!(smolsweep_fixtures::disks::allocated(&img) < before);
    let run = &runs(&w)[0];
    assert_eq!(
        run["origin"],
        json!({"surface": "window", "command": "compact"})
    );
    // A machine with no disk to compact is refused by name.
    let e = call(
        &w,
        "plan_compact",
        json!({ "machine": { "product": "smolvm", "name": "nope" } }),
    )
    .unwrap_err();
    assert!(e.as_str().unwrap().contains("smolvm:nope"), "{e}");
}

// ---- Issue 31 item 10: the window, looked at as a person -------------------------------------

/// Hazard: "Why?" as the CLI's column text in a monospace box. The window gets the same
/// sentences under their labels, and the command to copy.
#[test]
fn why_dialog_is_labelled_sections_with_the_command_to_copy() {
    let w = world(0, false);
    call(&w, "rescan", json!({})).unwrap();
    let id = ids_by_verdict(&w, "reclaimable")[0].clone();
    let v = call(
        &w,
        "why_of",
        json!({ "target": { "by": "finding", "id": id } }),
    )
    .unwrap();
    let p = &v["panel"];
    let labels: Vec<&str> = p["sections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["label"].as_str().unwrap())
        .collect();
    assert!(
        labels.contains(&"Verdict") && labels.contains(&"To free"),
        "{labels:?}"
    );
    // One section per label, each sentence once, none of the text's column padding.
    let mut seen = labels.clone();
    seen.dedup();
    assert_eq!(seen, labels);
    let sentences: Vec<&str> = p["sections"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["lines"].as_array().unwrap())
        .map(|l| l["text"].as_str().unwrap())
        .collect();
    assert_eq!(sentences.len(), v["why"]["lines"].as_array().unwrap().len());
    assert!(sentences.iter().all(|s| !s.starts_with(' ')));
    assert!(
        p["command"]
            .as_str()
            .unwrap()
            .starts_with("smolsweep prune"),
        "{p}"
    );
    assert_eq!(p["copy"], "Copy");
}

/// Hazard: History in the locale's format ("12/3/2026, 5:29:36 AM") where the CLI writes
/// "2026-12-03 04:36:22 +00:00": the run's time is the core's, in the CLI's format.
#[test]
fn history_time_is_the_clis_format_from_the_core() {
    let w = world(0, true);
    call(&w, "rescan", json!({})).unwrap();
    let ids = ids_by_verdict(&w, "reclaimable");
    call(&w, "execute_reclaim", json!({ "ids": ids })).unwrap();
    let run = &runs(&w)[0];
    let ms = run["started_at_ms"].as_u64().unwrap();
    assert_eq!(
        run["started"],
        json!(smolsweep::view::history_time(
            ms,
            &smolsweep::env::SystemZone
        ))
    );
}

/// Hazard: Running VMs opening with every other HOME's VM process expanded. The core counts
/// them in the one line of the folded group; this HOME's stay rows of their own.
#[test]
fn other_homes_vm_processes_fold_into_one_group_with_a_count() {
    let w = world(0, false);
    {
        let mut r = w.fake.report.lock().unwrap();
        r.processes.push(orphan(4321));
        for pid in [5001, 5002] {
            r.processes.push(VmProcess {
                scope: Scope::Foreign,
                orphan: false,
                ..orphan(pid)
            });
        }
    }
    let st = call(&w, "rescan", json!({})).unwrap();
    assert_eq!(
        st["view"]["other_homes_line"],
        json!("VM processes of other HOMEs: 2 (shown, never acted on).")
    );
    let this_home: Vec<bool> = st["view"]["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["this_home"].as_bool().unwrap())
        .collect();
    assert_eq!(this_home.iter().filter(|t| **t).count(), 1);
    // Every finding's path comes shortened to fit, longest first, the whole path first.
    let r = &st["report"]["findings"][0];
    let fits = st["window"]["paths"][r["id"].as_str().unwrap()]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(fits[0], r["path"]);
}

/// The window asks for its fixed words once at start: `get_words` is the core's table, every
/// word by its key (`smolsweep::view::words`).
#[test]
fn the_window_is_sent_the_cores_words_by_key() {
    let w = world(0, true);
    let v = call(&w, "get_words", json!({})).unwrap();
    let got = v.as_object().unwrap();
    assert_eq!(got.len(), smolsweep::view::words::Word::ALL.len());
    for word in smolsweep::view::words::Word::ALL {
        assert_eq!(got[word.key()], word.text(), "{}", word.key());
    }
    assert_eq!(got["nothing_to_reclaim"], "Nothing to reclaim.");
}
