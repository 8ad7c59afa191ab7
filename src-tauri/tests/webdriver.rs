//! The real window through WebDriver (tauri-driver + WebKitWebDriver): findings listed with
//! reasons, protected items not selectable, select → confirm → execute removes exactly the
//! selected files, the result shows the freed bytes. Writes the window screenshots.
//!
//! Needs Xvfb, a session bus, tauri-driver and WebKitWebDriver: scripts/desktop-tests.sh runs it
//! (`--ignored`) under `xvfb-run` + `dbus-run-session`.

mod common;

use std::time::Duration;

use common::wd::*;
use common::*;
use fantoccini::{Client, Locator};
use serde_json::json;
use smolsweep::model::{human_bytes, Verdict};

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
        assert!(text.contains(&f.path.display().to_string()), "{text}");
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
    // move it: the window shows what the run measured, as recorded in the history file.
    let history = std::fs::read_to_string(
        s.home
            .join(".local/share/dev.smolsweep.desktop/history.jsonl"),
    )
    .unwrap();
    let last: serde_json::Value = serde_json::from_str(history.lines().last().unwrap()).unwrap();
    let measured_bytes = last["measured_bytes"].as_u64().unwrap();
    assert!(measured_bytes > 0, "{last}");
    let expect_measured = human_bytes(measured_bytes);
    assert_eq!(freed, expect_measured);
    shot(&c, "window-result").await;

    assert!(!reclaimable[0].path.exists());
    assert!(!opt_in[0].path.exists());
    assert!(reclaimable[1].path.exists(), "unselected file stays");
    assert!(protected[0].path.exists(), "protected file stays");

    // The history lists the reclaim with its measured bytes.
    c.find(Locator::Css("nav button[data-view='history']"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let row = wait_css(&c, "#history-list tr").await;
    let text = row.text().await.unwrap();
    assert!(
        text.contains("2 removed") && text.contains(&expect_measured),
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display server, tauri-driver and WebKitWebDriver: run scripts/desktop-tests.sh"]
async fn window_reaps_an_orphaned_vm_after_confirmation() {
    let mut s = Scratch::with_leftovers();
    let machine = format!("stray-{}", std::process::id());
    let mut vmm = FakeVmm::spawn(s.dir.path(), &machine);
    s.add_process(vmm.as_orphan(&machine, 1_200_000_000));
    s.save();
    let (_driver, port) = start_driver(&s);
    let c = connect(port).await;
    c.set_window_size(1280, 800).await.ok();
    wait_css(&c, "tr.finding").await;
    c.find(Locator::Css("nav button[data-view='vms']"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let vm = wait_css(&c, &format!(".vm[data-pid='{}']", vmm.pid)).await;
    let text = vm.text().await.unwrap();
    assert!(
        text.contains(&machine) && text.contains("orphaned"),
        "{text}"
    );
    assert!(text.contains("holds 1.2 GB of deleted files"), "{text}");
    shot(&c, "window-vms").await;
    vm.find(Locator::Css("button.danger"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    // The confirmation names what is lost; accept it.
    let prompt = wait_css(&c, "#ask-dialog[open] #ask-text")
        .await
        .text()
        .await
        .unwrap();
    assert!(
        prompt.contains("SIGKILL") && prompt.contains(&machine),
        "{prompt}"
    );
    shot(&c, "window-vms-reap-confirm").await;
    c.find(Locator::Id("ask-ok"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let status = wait_for(20, "the orphaned VM process to be killed", || {
        vmm.child.try_wait().ok().flatten()
    });
    use std::os::unix::process::ExitStatusExt;
    assert!(status.signal().is_some(), "ended by a signal: {status:?}");
    c.find(Locator::Css("nav button[data-view='vms']"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    c.close().await.ok();
}
