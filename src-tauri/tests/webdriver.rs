//! The real window through WebDriver (tauri-driver + WebKitWebDriver): findings listed with
//! reasons, protected items not selectable, select → confirm → execute removes exactly the
//! selected files, the result shows the freed bytes; a VM ended from the window through its core
//! plan, found afterwards in the History tab and in `smolsweep history`. Writes the window
//! screenshots.
//!
//! Needs Xvfb, a session bus, tauri-driver and WebKitWebDriver: scripts/desktop-tests.sh runs it
//! (`--ignored`) under `xvfb-run` + `dbus-run-session`.

mod common;

use std::path::Path;
use std::time::Duration;

use common::wd::*;
use common::*;
use fantoccini::{Client, Locator};
use serde_json::json;
use smolsweep::model::{human_bytes, Scope, Verdict, VmProcess};
use smolsweep_fixtures::vmm::{spawn, standin_bin, Shape};
use smolsweep_fixtures::{age_tree, Home, Layout, OLD};

fn start_driver(s: &Scratch) -> (Driver, u16) {
    start_driver_with(s, &[])
}

fn start_driver_with(s: &Scratch, extra_env: &[(&str, &str)]) -> (Driver, u16) {
    spawn_driver(s.app_env(), extra_env, "tauri-driver.log")
}

async fn checkbox(c: &Client, id: &str) -> fantoccini::elements::Element {
    wait_css(c, &format!("tr.finding[data-id='{id}'] input.select")).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display server, tauri-driver and WebKitWebDriver: run scripts/desktop-tests.sh"]
async fn window_select_confirm_execute_removes_exactly_the_selected_files() {
    let s = Scratch::with_leftovers();
    let (_driver, port) = start_driver(&s);
    let c = connect(port).await;
    c.set_window_size(1280, 800).await.ok();

    // The overview with totals, after the first scan.
    let total = human_bytes(s.reclaimable_bytes());
    wait_css(&c, "#t-reclaimable").await;
    let t = c
        .wait()
        .at_most(Duration::from_secs(20))
        .for_element(Locator::XPath(&format!(
            "//div[@id='t-reclaimable'][text()='{total}']"
        )))
        .await;
    assert!(t.is_ok(), "overview shows {total}");
    shot(&c, "window-overview").await;

    // Findings, with reasons; reclaimable checked, opt-in unchecked, protected disabled.
    c.find(Locator::Css("nav button[data-view='findings']"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let rows = c.find_all(Locator::Css("tr.finding")).await.unwrap();
    assert_eq!(rows.len(), s.report.findings.len());
    for f in &s.report.findings {
        let row = wait_css(&c, &format!("tr.finding[data-id='{}']", f.id)).await;
        let text = row.text().await.unwrap();
        assert!(text.contains(&f.reason), "{text}");
        // The path is shortened from the middle; the full one is its title and what Copy copies.
        let path = row.find(Locator::Css(".path")).await.unwrap();
        let full = f.path.display().to_string();
        assert_eq!(
            path.attr("title").await.unwrap().as_deref(),
            Some(full.as_str())
        );
        let shown = path.text().await.unwrap();
        assert_eq!(shown, smolsweep::view::short_path(&f.path, 64));
        let copy = row.find(Locator::Css("button.copy")).await.unwrap();
        assert_eq!(
            copy.attr("aria-label").await.unwrap(),
            Some(format!("Copy path {full}"))
        );
    }
    let by = |v: Verdict| {
        s.report
            .findings
            .iter()
            .filter(|f| f.verdict == v)
            .collect::<Vec<_>>()
    };
    let (reclaimable, opt_in, protected) = (
        by(Verdict::Reclaimable),
        by(Verdict::OptIn),
        by(Verdict::Protected),
    );
    for f in &reclaimable {
        assert!(checkbox(&c, &f.id).await.is_selected().await.unwrap());
    }
    assert!(!checkbox(&c, &opt_in[0].id)
        .await
        .is_selected()
        .await
        .unwrap());
    let p = checkbox(&c, &protected[0].id).await;
    assert!(
        !p.is_enabled().await.unwrap(),
        "protected is not selectable"
    );
    let _ = p.click().await;
    assert!(
        !p.is_selected().await.unwrap(),
        "clicking it selects nothing"
    );

    // Choose: the first orphan disk and the cache; leave the second orphan disk.
    checkbox(&c, &reclaimable[1].id)
        .await
        .click()
        .await
        .unwrap();
    checkbox(&c, &opt_in[0].id).await.click().await.unwrap();
    shot(&c, "window-findings").await;

    c.find(Locator::Id("reclaim-btn"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_css(&c, "#confirm-dialog[open] #confirm-list li").await;
    let planned = c.find_all(Locator::Css("#confirm-list li")).await.unwrap();
    let mut planned_ids = vec![];
    for li in &planned {
        planned_ids.push(li.attr("data-id").await.unwrap().unwrap());
    }
    planned_ids.sort();
    let mut want = vec![reclaimable[0].id.clone(), opt_in[0].id.clone()];
    want.sort();
    assert_eq!(planned_ids, want, "the dialog lists exactly the selection");
    shot(&c, "window-confirm").await;
    c.find(Locator::Id("confirm-go"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();

    let measured = wait_css(&c, "#result #result-measured").await;
    let freed = measured.text().await.unwrap();
    let expect = human_bytes(reclaimable[0].allocated_bytes + opt_in[0].allocated_bytes);
    let estimated = c
        .find(Locator::Css("#result #result-estimated"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(estimated, expect);
    // "Freed" is measured (free space before and after), so other writers on this file system
    // move it: the window shows what the run measured, as recorded in the core journal.
    let runs = s.runs();
    let last = runs.last().unwrap();
    assert_eq!(
        last.origin,
        Some(smolsweep::exec::Origin::new("window", "reclaim"))
    );
    let measured_bytes = last.freed_bytes.unwrap();
    assert!(measured_bytes > 0, "{last:?}");
    let expect_measured = human_bytes(measured_bytes);
    assert_eq!(freed, expect_measured);
    shot(&c, "window-result").await;

    assert!(!reclaimable[0].path.exists());
    assert!(!opt_in[0].path.exists());
    assert!(reclaimable[1].path.exists(), "unselected file stays");
    assert!(protected[0].path.exists(), "protected file stays");

    // The history (the core journal) lists the reclaim, made by the window, with its measured
    // bytes.
    nav(&c, "history").await;
    let row = wait_css(
        &c,
        &format!("#history-list tr[data-plan='{}']", last.plan_id),
    )
    .await;
    let text = row.text().await.unwrap();
    assert!(
        text.contains("window · reclaim")
            && text.contains("2 done")
            && text.contains(&expect_measured),
        "{text}"
    );
    shot(&c, "window-history").await;

    // Settings are saved in the scratch HOME's config dir.
    c.find(Locator::Css("nav button[data-view='settings']"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_css(&c, ".s-class[value='caches']")
        .await
        .click()
        .await
        .unwrap();
    wait_for(10, "the saved settings", || {
        std::fs::read_to_string(s.home.join(".config/dev.smolsweep.desktop/settings.json"))
            .ok()
            .filter(|t| t.contains("caches"))
    });
    shot(&c, "window-settings").await;

    // A smaller window.
    c.set_window_size(800, 600).await.ok();
    c.find(Locator::Css("nav button[data-view='overview']"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    shot(&c, "window-overview-800x600").await;

    // Closing the window (the same close request a window manager sends) only hides it.
    let visible = || {
        run(
            "xdotool",
            &["search", "--onlyvisible", "--name", "^Smolsweep$"],
        )
        .map(|o| o.lines().count())
        .unwrap_or(0)
    };
    assert_eq!(visible(), 1);
    let _ = c
        .execute(
            "window.__TAURI__.window.getCurrentWindow().close(); return true",
            vec![],
        )
        .await;
    wait_for(10, "the window to be hidden", || {
        (visible() == 0).then_some(())
    });
    let all = run("xdotool", &["search", "--name", "^Smolsweep$"]).unwrap_or_default();
    assert_eq!(all.lines().count(), 1, "hidden, not destroyed");
    c.close().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display server, tauri-driver and WebKitWebDriver: run scripts/desktop-tests.sh"]
async fn window_follows_a_dark_desktop_theme() {
    let s = Scratch::with_leftovers();
    let (_driver, port) = start_driver_with(&s, &[("GTK_THEME", "Adwaita:dark")]);
    let c = connect(port).await;
    c.set_window_size(1280, 800).await.ok();
    wait_css(&c, "tr.finding").await;
    let bg = c
        .execute(
            "return getComputedStyle(document.body).backgroundColor",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(bg, json!("rgb(27, 30, 36)"), "the dark palette is used");
    shot(&c, "window-overview-dark").await;
    c.find(Locator::Css("nav button[data-view='findings']"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    shot(&c, "window-findings-dark").await;
    c.set_window_size(800, 600).await.ok();
    shot(&c, "window-findings-dark-800x600").await;
    c.close().await.ok();
}

async fn nav(c: &Client, view: &str) {
    c.find(Locator::Css(&format!("nav button[data-view='{view}']")))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
}

async fn text_of(c: &Client, css: &str) -> String {
    wait_css(c, css).await.text().await.unwrap()
}

/// The History tab's row for the run of `plan_id` (the tab reloads when shown).
async fn history_row(c: &Client, plan_id: &str) -> String {
    nav(c, "overview").await;
    nav(c, "history").await;
    text_of(c, &format!("#history-list tr[data-plan='{plan_id}']")).await
}

/// Stop (End process) from the window, for real: a stand-in VMM that the core's real scan sees
/// as an orphan of this scratch HOME (smolvm's `_boot-vm` shape, `libkrun VM`, this HOME, booted
/// from a dangling machine directory). The window shows the core plan, runs it after "yes"
/// through the executor (re-judged on the real system, ended through a pidfd), and the run is in
/// the History tab and in `smolsweep history --json`, made by the window.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display server, tauri-driver and WebKitWebDriver: run scripts/desktop-tests.sh"]
async fn window_ends_an_orphaned_vm_through_its_plan_and_both_histories_show_the_run() {
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Linux).unwrap();
    // smolvm's machine database (no record of vm-stray) and the directory its VM boots from.
    let smol = home.smolvm().unwrap();
    drop(smol.open_db().unwrap());
    let dir = smol.dangling_dir("vm-stray").unwrap();
    age_tree(&dir, OLD).unwrap();
    let vmm = spawn(
        &standin_bin(Path::new(env!("CARGO_TARGET_TMPDIR"))),
        &Shape {
            argv: vec![
                "/proc/self/exe".into(),
                "_boot-vm".into(),
                dir.join("boot-config.json").display().to_string(),
            ],
            comm: Some("libkrun VM"),
            home: Some(&home.root),
            ..Default::default()
        },
    );
    let pid = vmm.pid();
    // The real scan (no report file) of this HOME; the journal in a data dir of its own.
    let data = t.path().join("smolsweep-data");
    let mut env = home.env_vars();
    for (k, rel) in [
        ("XDG_CONFIG_HOME", ".config"),
        ("XDG_DATA_HOME", ".local/share"),
        ("XDG_CACHE_HOME", ".cache"),
    ] {
        env.push((k.into(), home.path(rel).display().to_string()));
    }
    env.push(("SMOLSWEEP_DATA_DIR".into(), data.display().to_string()));
    let (_driver, port) = spawn_driver(env, &[], "tauri-driver-end-process.log");
    let c = connect(port).await;
    c.set_window_size(1280, 800).await.ok();

    nav(&c, "vms").await;
    let vm = wait_css_for(&c, &format!(".vm[data-pid='{pid}']"), 30).await;
    let text = vm.text().await.unwrap();
    assert!(
        text.contains("vm-stray") && text.contains("orphaned"),
        "{text}"
    );
    shot(&c, "window-vms").await;

    // The confirmation is the core plan: one action, its summary, nothing run yet.
    vm.find(Locator::Css("button[data-action='reap']"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let steps = c
        .wait()
        .at_most(Duration::from_secs(20))
        .for_element(Locator::Css("#confirm-dialog[open] #confirm-list li"))
        .await
        .unwrap();
    let step = steps.text().await.unwrap();
    assert!(
        step.starts_with("end orphaned smol-machines smolvm")
            && step.contains(&format!(" {pid} "))
            && step.contains("vm-stray"),
        "{step}"
    );
    assert_eq!(
        c.find_all(Locator::Css("#confirm-list li"))
            .await
            .unwrap()
            .len(),
        1
    );
    let title = text_of(&c, "#confirm-title").await;
    assert!(title.starts_with("End process"), "{title}");
    // The core's confirmation: it says it ends a process.
    assert_eq!(text_of(&c, "#confirm-headline").await, "End 1 VM process");
    assert_eq!(text_of(&c, "#confirm-go").await, "End process");
    assert!(!exited(pid), "nothing runs before the confirmation");
    assert!(journal_runs(&data).is_empty());
    shot(&c, "window-vms-end-confirm").await;
    c.find(Locator::Id("confirm-go"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();

    wait_for(20, "the stand-in VMM to be ended", || {
        exited(pid).then_some(())
    });
    let result = text_of(&c, "#vm-result h2").await;
    assert!(result.starts_with("Done: end process"), "{result}");
    assert!(text_of(&c, "#vm-result li")
        .await
        .starts_with("done: end orphaned"));
    shot(&c, "window-vms-result").await;

    // The one core journal: the run, made by the window, with its one action done.
    let runs = journal_runs(&data);
    assert_eq!(runs.len(), 1, "{runs:?}");
    let run = &runs[0];
    assert_eq!(
        run.origin,
        Some(smolsweep::exec::Origin::new("window", "end process"))
    );
    assert_eq!((run.done, run.skipped, run.failed), (1, 0, 0));

    // The History tab shows it, with its surface and command.
    let row = history_row(&c, &run.plan_id).await;
    assert!(
        row.contains("window · end process") && row.contains("1 done") && row.contains(&step),
        "{row}"
    );
    shot(&c, "window-history-vm").await;

    // And so does the CLI, from the same data directory.
    let out = std::process::Command::new(cli())
        .args(["history", "--json"])
        .env("HOME", &home.root)
        .env("SMOLSWEEP_DATA_DIR", &data)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let h: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let cli_runs = h["runs"].as_array().unwrap();
    assert_eq!(cli_runs.len(), 1, "{h}");
    let r = &cli_runs[0];
    assert_eq!(r["plan_id"], json!(run.plan_id));
    assert_eq!(
        r["origin"],
        json!({"surface": "window", "command": "end process"})
    );
    assert_eq!(r["outcomes"][0]["outcome"], "done");
    assert_eq!(r["outcomes"][0]["action"], "signal_process");
    assert_eq!(r["outcomes"][0]["pid"], json!(pid));
    c.close().await.ok();
}

/// What the window's saved report calls an orphaned VMM is judged again on the real system when
/// the plan runs: a process that is not VMM-shaped (a copy of `sleep`) is never signalled, and
/// the run says why. Another HOME's VM plans nothing: the confirmation gives the planner's
/// reason and cannot be accepted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display server, tauri-driver and WebKitWebDriver: run scripts/desktop-tests.sh"]
async fn window_end_process_is_judged_again_when_it_runs_and_a_foreign_vm_plans_nothing() {
    let mut s = Scratch::with_leftovers();
    let machine = format!("stray-{}", std::process::id());
    let mut vmm = FakeVmm::spawn(s.dir.path(), &machine);
    s.add_process(vmm.as_orphan(&machine, 1_200_000_000));
    let mut theirs = FakeVmm::spawn(s.dir.path(), "theirs");
    s.add_process(VmProcess {
        scope: Scope::Foreign,
        orphan: false,
        reason: "The VM of machine theirs, of another HOME.".into(),
        ..theirs.as_orphan("theirs", 0)
    });
    s.save();
    let (_driver, port) = start_driver(&s);
    let c = connect(port).await;
    c.set_window_size(1280, 800).await.ok();
    wait_css(&c, "tr.finding").await;
    nav(&c, "vms").await;
    let vm = wait_css(&c, &format!(".vm[data-pid='{}']", vmm.pid)).await;
    let text = vm.text().await.unwrap();
    assert!(
        text.contains(&machine) && text.contains("orphaned"),
        "{text}"
    );
    assert!(text.contains("holds 1.2 GB of deleted files"), "{text}");

    // Another HOME's VM is shown, without an action it would refuse.
    let foreign = wait_css(&c, &format!(".vm[data-pid='{}']", theirs.pid)).await;
    assert!(
        foreign.text().await.unwrap().contains("another HOME"),
        "{}",
        foreign.text().await.unwrap()
    );
    assert!(foreign
        .find_all(Locator::Css("button"))
        .await
        .unwrap()
        .is_empty());
    shot(&c, "window-vms-foreign").await;

    // The saved report's orphan: planned and confirmed, then refused by the executor's judge.
    // (Planning rescans, which redraws the list.)
    wait_css(
        &c,
        &format!(".vm[data-pid='{}'] button[data-action='reap']", vmm.pid),
    )
    .await
    .click()
    .await
    .unwrap();
    let step = text_of(&c, "#confirm-dialog[open] #confirm-list li").await;
    assert!(
        step.starts_with("end orphaned smol-machines smolvm")
            && step.contains(&format!(" {} ", vmm.pid)),
        "{step}"
    );
    c.find(Locator::Id("confirm-go"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let result = text_of(&c, "#vm-result h2").await;
    assert!(result.starts_with("Not done: end process"), "{result}");
    let line = text_of(&c, "#vm-result li").await;
    assert!(
        line.starts_with("skipped: ") && line.contains("nothing signalled"),
        "{line}"
    );
    assert_eq!(vmm.child.try_wait().unwrap(), None, "still running");
    assert_eq!(theirs.child.try_wait().unwrap(), None, "still running");
    let runs = s.runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!((runs[0].done, runs[0].skipped), (0, 1));
    let row = history_row(&c, &runs[0].plan_id).await;
    assert!(
        row.contains("window · end process") && row.contains("1 skipped"),
        "{row}"
    );
    c.close().await.ok();
}
