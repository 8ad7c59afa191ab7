//! The window against a real QEMU VM: Celesto's CLI-persisted sandbox recipe, booted for real
//! (`smolsweep_fixtures::real_vm`, the same world and boot as the core's `tests/it/real_vm.rs`),
//! stopped and then deleted from the Running VMs view. Each confirmation is the core plan in the
//! CLI's words (`smolsweep stop|delete celesto:ID --dry-run`); each run goes through Celesto's
//! own CLI: the VM really ends (pid and start time), Celesto lists the sandbox stopped, then no
//! more, its disk and log go, and nothing else in the HOME changes; the History tab shows both
//! runs as the window's.
//!
//! Needs Xvfb, a session bus, tauri-driver and WebKitWebDriver (`scripts/setup/50-desktop.sh`),
//! Celesto (`scripts/setup/20-real-tools.sh`) and the QEMU VM (`scripts/setup/30-qemu-vm.sh`):
//! `scripts/test.sh` sources them and runs `scripts/desktop-tests.sh`, which runs it
//! (`--ignored`). Without the QEMU or Celesto variables it fails, it is never skipped.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::wd::*;
use crate::common::{cli, journal_runs};
use fantoccini::{Client, Locator};
use serde_json::{json, Value};
use smolsweep::exec::Origin;
use smolsweep_desktop::backend::outcome_heading;
use smolsweep_fixtures::real_vm::*;

/// The sandbox the window stops and deletes, and one beside it (created, never started) that
/// must stay as it was.
const ID: &str = "rvmwin1";
const OTHER: &str = "rvmwin2";

/// The app's own directories in the scratch HOME (its settings, its webview's data and cache),
/// which it may write at any time: left out of "nothing else in the HOME changed".
const APP_DIRS: [&str; 3] = [
    ".config/dev.smolsweep.desktop",
    ".local/share/dev.smolsweep.desktop",
    ".cache/dev.smolsweep.desktop",
];

/// The sandbox's row in the Running VMs view.
fn row_css(id: &str) -> String {
    format!(".vm.machine[data-product='celesto'][data-name='{id}']")
}

/// What is true of the HOME before an action: every file but the app's, and every row of
/// `celesto.db`.
struct Before {
    home: std::collections::BTreeMap<std::path::PathBuf, Entry>,
    rows: Vec<String>,
    other_disk: Vec<u8>,
}

impl Before {
    fn take(s: &Scratch) -> Before {
        Before {
            home: tree_without(&s.home, &APP_DIRS),
            rows: inventory(&s.data_dir.join("celesto.db")),
            other_disk: std::fs::read(s.data_dir.join(format!("disks/{OTHER}.qcow2"))).unwrap(),
        }
    }

    /// What changed in the HOME since, but the entries `allowed` (`changed …`, `removed …`);
    /// and the inventory's rows that do not name `ID` are as they were.
    fn assert_only(&self, s: &Scratch, what: &str, allowed: &[String]) {
        let all = changed(&self.home, &tree_without(&s.home, &APP_DIRS));
        eprintln!("real_vm: changed in HOME by the window's {what}: {all:?}");
        let unexpected: Vec<&String> = all.iter().filter(|c| !allowed.contains(c)).collect();
        assert!(
            unexpected.is_empty(),
            "the window's {what} changed more than {ID}'s record and files: {unexpected:#?}"
        );
        assert_eq!(
            rows_not_of(&inventory(&s.data_dir.join("celesto.db")), &[ID]),
            rows_not_of(&self.rows, &[ID]),
            "the window's {what} changed another row of the inventory"
        );
        let other = std::fs::read(s.data_dir.join(format!("disks/{OTHER}.qcow2"))).unwrap();
        assert!(other == self.other_disk, "{OTHER}'s disk changed");
    }
}

/// `path` relative to the HOME, as [`changed`] names it.
fn rel(s: &Scratch, p: &Path) -> String {
    p.strip_prefix(&s.home).unwrap().display().to_string()
}

/// The CLI's plan for `smolsweep ACTION celesto:ID` (a dry run, nothing done): the sentence of
/// its "Plan <id>: …" line and its action lines.
fn cli_plan(s: &Scratch, action: &str) -> (String, Vec<String>) {
    let target = format!("celesto:{ID}");
    let what = format!("{action}-dry-run");
    let (code, _, text) = s.smolsweep_with_celesto(&what, &[action, &target, "--dry-run"]);
    assert_eq!(code, 0, "{text}");
    let plan_line = text.lines().find(|l| l.starts_with("Plan ")).unwrap();
    let sentence = plan_line.split_once(": ").unwrap().1.to_string();
    let lines = text
        .lines()
        .skip_while(|l| !l.starts_with("Plan "))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .map(|l| l.trim_start().to_string())
        .collect();
    (sentence, lines)
}

/// `ACTION` on the sandbox's row; the confirmation shows the core plan (the window's
/// `plan_machine_action`) in the CLI's words, and nothing has run yet. Returns the plan.
async fn open_confirmation(c: &Client, s: &Scratch, action: &str) -> Value {
    let (sentence, cli_lines) = cli_plan(s, action);
    assert_eq!(cli_lines.len(), 1, "one action on {ID}: {cli_lines:?}");
    let runs_before = journal_runs(&s.smolsweep_data()).len();
    let css = format!("{} button[data-action='{action}']", row_css(ID));
    click_css(c, &css, 30).await;
    wait_css(c, "#confirm-dialog[open] #confirm-list li").await;
    let args = json!({"product": "celesto", "name": ID, "action": action});
    let plan = invoke_with(c, "plan_machine_action", args).await;
    let steps: Vec<String> = serde_json::from_value(plan["steps"].clone()).expect("steps");
    assert_eq!(steps, cli_lines, "the window's plan is the CLI's: {plan:#}");
    let mut shown = vec![];
    for li in c.find_all(Locator::Css("#confirm-list li")).await.unwrap() {
        shown.push(li.text().await.unwrap());
    }
    assert_eq!(shown, cli_lines, "the dialog lists the plan's actions");
    assert_eq!(text_of(c, "#confirm-summary").await, sentence);
    assert_eq!(text_of(c, "#confirm-title").await, plan["title"]);
    assert_eq!(text_of(c, "#confirm-go").await, plan["ok"]);
    assert_eq!(
        journal_runs(&s.smolsweep_data()).len(),
        runs_before,
        "nothing runs before the confirmation"
    );
    plan
}

/// Confirm, then wait (bounded: Celesto's CLI runs under TCG) for the result's heading, which is
/// the core's for the plan done.
async fn confirm_and_wait(c: &Client, plan: &Value) {
    let want = outcome_heading(
        true,
        plan["command"].as_str().unwrap(),
        plan["target"].as_str().unwrap(),
    );
    click_css(c, "#confirm-go", 10).await;
    let end = Instant::now() + Duration::from_secs(200);
    let mut last = String::new();
    while Instant::now() < end {
        if let Ok(h) = c.find(Locator::Css("#vm-result h2")).await {
            last = h.text().await.unwrap_or_default();
            if last == want {
                let lines = c.find_all(Locator::Css("#vm-result li")).await.unwrap();
                assert_eq!(lines.len(), 1);
                let status = lines[0].attr("data-status").await.unwrap();
                assert_eq!(status.as_deref(), Some("done"));
                return;
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("the result never said {want:?}; it says {last:?}");
}

/// The sandbox's row of the core's view, as the window has it now (`get_status`).
async fn view_row(c: &Client, id: &str) -> Option<Value> {
    let st = invoke(c, "get_status").await;
    let rows = st["view"]["machines"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    rows.into_iter()
        .find(|m| m["product"] == "celesto" && m["name"] == id)
}

/// Waits until the window's row of the sandbox is drawn from a view whose row `pred` is true
/// of, and shows that row's words (its noun and name, its state badge).
async fn wait_row(c: &Client, pred: impl Fn(&Value) -> bool, what: &str) {
    let css = row_css(ID);
    for _ in 0..300 {
        if let Some(r) = view_row(c, ID).await.filter(|r| pred(r)) {
            let label = r["state_label"].as_str().unwrap();
            let drawn = c.find(Locator::Css(&css)).await.is_ok();
            if drawn && text_of(c, &format!("{css} .badge")).await == label {
                let text = text_of(c, &css).await;
                let name = format!("{} {ID}", r["noun"].as_str().unwrap());
                assert!(text.contains(&name), "{text}");
                return;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the window's row of {ID} is never {what}");
}

/// Waits until neither the core's view nor the window has a row of the sandbox.
async fn wait_row_gone(c: &Client) {
    for _ in 0..300 {
        let drawn = c.find(Locator::Css(&row_css(ID))).await.is_ok();
        if view_row(c, ID).await.is_none() && !drawn {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the window still shows {ID}");
}

/// The journal has the window's stop and delete of `ID`, done, and the History tab shows each
/// with the core's words for it (`get_history`); so does `smolsweep history`.
async fn assert_both_runs_in_history(c: &Client, s: &Scratch) {
    let runs = journal_runs(&s.smolsweep_data());
    let origins: Vec<_> = runs.iter().map(|r| r.origin.clone()).collect();
    let want = ["stop", "delete"].map(|cmd| Some(Origin::new("window", cmd)));
    assert_eq!(origins, want, "{runs:?}");
    assert!(runs
        .iter()
        .all(|r| (r.done, r.skipped, r.failed) == (1, 0, 0)));
    let h = invoke(c, "get_history").await;
    for r in &runs {
        let row = history_row(c, &r.plan_id).await;
        let o = r.origin.as_ref().unwrap();
        let view = h["runs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["plan_id"] == r.plan_id.as_str())
            .unwrap_or_else(|| panic!("{} not in get_history: {h:#}", r.plan_id));
        // The core's line for the action, as `smolsweep history RUN` prints it (the window
        // keeps its spaces; WebDriver's text may fold them).
        let line = view["lines"][0].as_str().unwrap();
        let flat = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            row.contains(&format!("{} · {}", o.surface, o.command))
                && row.contains(view["counts"].as_str().unwrap())
                && flat(&row).contains(&flat(line))
                && line.contains(ID),
            "{row}"
        );
    }
    shot(c, "window-history-celesto").await;
    let (code, cli, out) = s.smolsweep("history", &["history", "--json"]);
    assert_eq!(code, 0, "{out}");
    let actions: Vec<(&str, &str, &str)> = cli["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let o = &r["outcomes"][0];
            (
                r["origin"]["surface"].as_str().unwrap(),
                o["action"].as_str().unwrap(),
                o["name"].as_str().unwrap(),
            )
        })
        .collect();
    // Newest first.
    let expect = [
        ("window", "delete_machine", ID),
        ("window", "stop_machine", ID),
    ];
    assert_eq!(actions, expect, "{cli:#}");
}

/// The window's Stop: the QEMU ends (pid and start time), only the sandbox's record and its
/// running guest's console log change, and Celesto lists it stopped.
async fn stop_from_the_window(c: &Client, w: &World, guard: &mut Guard, vm: &Running, t0: Instant) {
    let s = &w.s;
    let before = Before::take(s);
    let plan = open_confirmation(c, s, "stop").await;
    assert!(
        alive(vm.pid, vm.start_time),
        "nothing is stopped before yes"
    );
    shot(c, "window-vms-celesto-stop-confirm").await;
    confirm_and_wait(c, &plan).await;
    assert_vm_gone(guard, vm, "the window's Stop");
    step(t0, "the window's Stop ended the VM");
    let db = s.data_dir.join("celesto.db");
    let allowed = [
        format!("changed {}", rel(s, &db)),
        format!("changed {}", rel(s, &vm.log)),
    ];
    before.assert_only(s, "Stop", &allowed);
    assert!(vm.disk.is_file(), "Stop removed {ID}'s disk");
    let rows = inventory(&db);
    let row = rows
        .iter()
        .find(|r| r.starts_with("vms: (") && r.contains(&format!("id={ID:?}")))
        .unwrap_or_else(|| panic!("{ID}'s row is gone: {rows:#?}"));
    assert!(
        row.contains("status=\"stopped\"") && row.contains("pid=NULL"),
        "{row}"
    );
    let listed = celesto_list(w);
    assert_eq!(
        listed.get(ID).map(String::as_str),
        Some("stopped"),
        "{listed:?}"
    );
    assert_eq!(
        listed.get(OTHER).map(String::as_str),
        Some("created"),
        "{listed:?}"
    );
    wait_row(
        c,
        |r| r["can_stop"] == false && r["can_delete"] == true,
        "stopped",
    )
    .await;
    step(t0, "Celesto lists it stopped; nothing else changed");
}

/// The window's Delete: the sandbox's record, disk and log go through Celesto's CLI, nothing
/// else, and Celesto no longer lists it.
async fn delete_from_the_window(c: &Client, w: &World, vm: &Running, t0: Instant) {
    let s = &w.s;
    let before = Before::take(s);
    let plan = open_confirmation(c, s, "delete").await;
    assert!(vm.disk.is_file(), "nothing is deleted before yes");
    confirm_and_wait(c, &plan).await;
    let db = s.data_dir.join("celesto.db");
    let allowed = [
        format!("changed {}", rel(s, &db)),
        format!("removed {}", rel(s, &vm.disk)),
        format!("removed {}", rel(s, &vm.log)),
    ];
    before.assert_only(s, "Delete", &allowed);
    assert!(
        !vm.disk.exists() && !vm.log.exists(),
        "{ID}'s disk or log is still there"
    );
    let rows = inventory(&db);
    assert!(
        !rows.iter().any(|r| r.contains(&format!("{ID:?}"))),
        "{rows:#?}"
    );
    let listed = celesto_list(w);
    assert_eq!(listed.get(ID), None, "{listed:?}");
    assert_eq!(
        listed.get(OTHER).map(String::as_str),
        Some("created"),
        "{listed:?}"
    );
    wait_row_gone(c).await;
    wait_css(c, &row_css(OTHER)).await;
    shot(c, "window-vms-celesto-deleted").await;
    step(t0, "Celesto no longer lists it; its disk and log are gone");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display server, tauri-driver, WebKitWebDriver and a real QEMU VM: run scripts/desktop-tests.sh"]
// The one-VM lock is held for the whole test, across its awaits: no task of this test's own
// runtime takes it, only other VM tests of this process, which then wait their turn.
#[allow(clippy::await_holding_lock)]
async fn window_stops_then_deletes_a_real_celesto_sandbox_through_celestos_cli() {
    let t0 = Instant::now();
    let _one = one_vm_at_a_time();
    // QEMU outlives the helper that started it: this process reaps it (and only while the test
    // runs; cleared before the app's process group is ended, so its orphans go to init).
    let subreaper = Subreaper::set();
    let w = World::new(t0, &cli());
    let s = &w.s;
    let mut guard = Guard::default();
    let vm = boot_cli_sandbox(&w, &mut guard, ID, &[OTHER], t0);

    // The app on the scratch HOME, with the environment `smolsweep` gets there: Celesto's CLI on
    // its PATH, as on a person's machine. Its webview's GPU shader cache (Mesa's, in
    // `$XDG_CACHE_HOME` otherwise) goes outside the HOME, which must change only as planned.
    let mesa = s.root.join("mesa-shader-cache");
    let extra = [("MESA_SHADER_CACHE_DIR", mesa.to_str().unwrap())];
    let (driver, c) = open_window(
        s.env(&s.celesto_path()),
        &extra,
        "tauri-driver-real-vm.log",
        (1280, 800),
    )
    .await;
    nav(&c, "vms").await;
    wait_css_for(&c, &row_css(ID), 60).await;
    let row = view_row(&c, ID)
        .await
        .expect("the sandbox in the core's view");
    assert_eq!(row["pid"], vm.pid, "{row:#}");
    wait_row(&c, |r| r["can_stop"] == true, "running").await;
    assert!(text_of(&c, &row_css(ID))
        .await
        .contains(&format!("pid {}", vm.pid)));
    shot(&c, "window-vms-celesto").await;
    step(t0, "the window lists the running sandbox");

    stop_from_the_window(&c, &w, &mut guard, &vm, t0).await;
    delete_from_the_window(&c, &w, &vm, t0).await;
    assert_both_runs_in_history(&c, s).await;
    step(t0, "the History tab shows both runs");
    c.close().await.ok();
    drop(subreaper);
    drop(driver);
}
