//! The uninstall wizard in the real window, through WebDriver (tauri-driver + WebKitWebDriver),
//! end to end on a scratch HOME holding a real smolvm 1.32.2 script install (from the
//! `smolmachines` wheel) with machines created by its own CLI, registry credentials and a PATH
//! block: preflight → choices → plan → confirmation → proof. Asserts `result=clean`, the prefix
//! gone, credentials and the rc file kept; writes docs/screenshots/wizard-*.png.
//!
//! Needs Xvfb, a session bus, tauri-driver, WebKitWebDriver and `SMOLSWEEP_SMOL_WHEEL`:
//! scripts/desktop-tests.sh runs it (`--ignored`) after scripts/setup/20-real-tools.sh.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common::wd::*;
use fantoccini::{Client, Locator};
use serde_json::json;
use smolsweep_fixtures::real_tools::{install_smolvm_script_layout, run_ok, smolvm_cmd};

/// A scratch HOME with a real smolvm script install.
struct Home {
    _dir: tempfile::TempDir,
    home: PathBuf,
    bashrc: String,
}

impl Home {
    fn with_smolvm() -> Home {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir(&home).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o700)).unwrap();
        install_smolvm_script_layout(&home).unwrap();
        let bashrc = format!(
            "# my settings\nexport EDITOR=vim\n\n# smolvm\nexport PATH=\"{}/.local/bin:$PATH\"\n",
            home.display()
        );
        std::fs::write(home.join(".bashrc"), &bashrc).unwrap();
        let version = run_ok(smolvm_cmd(&home).arg("--version")).unwrap();
        assert!(version.contains("1.32.2"), "{version}");
        for name in ["demo", "demo2"] {
            run_ok(smolvm_cmd(&home).args(["machine", "create", "--name", name])).unwrap();
        }
        std::fs::create_dir_all(home.join(".config/smolvm")).unwrap();
        std::fs::write(
            home.join(".config/smolvm/config.toml"),
            "[registries.\"ghcr.io\"]\nusername = \"me\"\npassword = \"secret\"\n",
        )
        .unwrap();
        std::fs::create_dir_all(home.join(".cache/smolvm-registry/blobs/sha256")).unwrap();
        std::fs::write(home.join(".cache/smolvm-registry/blobs/sha256/ab"), b"blob").unwrap();
        Home {
            _dir: dir,
            home,
            bashrc,
        }
    }

    fn env(&self) -> Vec<(String, String)> {
        let h = |rel: &str| self.home.join(rel).display().to_string();
        vec![
            ("HOME".into(), h("")),
            ("XDG_CONFIG_HOME".into(), h(".config")),
            ("XDG_DATA_HOME".into(), h(".local/share")),
            ("XDG_CACHE_HOME".into(), h(".cache")),
            (
                "PATH".into(),
                format!(
                    "{}:{}",
                    h(".local/bin"),
                    std::env::var("PATH").unwrap_or_default()
                ),
            ),
        ]
    }
}

/// The window of the app on `h`'s HOME, `size` wide and high.
async fn open(h: &Home, extra_env: &[(&str, &str)], size: (u32, u32)) -> (Driver, Client) {
    open_window(h.env(), extra_env, "tauri-driver-wizard.log", size).await
}

async fn click(c: &Client, css: &str) {
    wait_css(c, css).await.click().await.unwrap();
}

async fn scroll_to(c: &Client, css: &str) {
    let _ = c
        .execute(
            "document.querySelector(arguments[0]).scrollIntoView({block: 'start'}); return true",
            vec![json!(css)],
        )
        .await;
}

fn assert_gone(p: &Path) {
    assert!(
        std::fs::symlink_metadata(p).is_err(),
        "{} still exists",
        p.display()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display server, tauri-driver, WebKitWebDriver and the smolmachines wheel: run scripts/desktop-tests.sh"]
async fn wizard_uninstalls_a_real_smolvm_and_proves_it_clean() {
    let h = Home::with_smolvm();
    let home = h.home.clone();
    let (_driver, c) = open(&h, &[], (960, 720)).await;

    // 1. Preflight, from the nav (the tray's "Uninstall SmolVM…" opens the same view).
    click(&c, "nav button[data-view='uninstall']").await;
    wait_css(&c, "#wz-pre-body .wz-sec").await;
    let pre = wait_css(&c, "#wz-pre-body").await.text().await.unwrap();
    for want in [
        "1.32.2",
        "demo",
        "demo2",
        ".bashrc",
        ".config/smolvm",
        &home.join(".smolvm").display().to_string(),
    ] {
        assert!(pre.contains(want), "preflight shows {want}:\n{pre}");
    }
    assert!(
        home.join(".smolvm/smolvm-bin").is_file(),
        "preflight changes nothing"
    );
    shot(&c, "wizard-1-preflight").await;

    // 2. Choices: credentials and the PATH block unticked by default.
    click(&c, "#wz-pre-next").await;
    wait_css(&c, "#wz-choices:not(.hidden)").await;
    assert!(!wait_css(&c, "#wz-creds").await.is_selected().await.unwrap());
    assert!(!wait_css(&c, "#wz-pathblock")
        .await
        .is_selected()
        .await
        .unwrap());
    click(&c, "input[name='wz-product'][value='smolvm']").await;
    shot(&c, "wizard-2-choices").await;

    // 3. The plan: every step ticked, the machines deleted through the CLI, nothing about
    // credentials or the PATH block.
    click(&c, "#wz-choices-next").await;
    wait_css(&c, "#wz-plan:not(.hidden) tr.wz-plan-row").await;
    let rows = c.find_all(Locator::Css("tr.wz-plan-row")).await.unwrap();
    assert!(rows.len() >= 4, "{} steps", rows.len());
    let mut kinds = vec![];
    for r in &rows {
        kinds.push(r.attr("data-step").await.unwrap().unwrap_or_default());
        let cb = r.find(Locator::Css("input.wz-step")).await.unwrap();
        assert!(cb.is_selected().await.unwrap());
    }
    assert_eq!(
        kinds.iter().filter(|k| *k == "delete_machine").count(),
        2,
        "{kinds:?}"
    );
    assert!(!kinds.iter().any(|k| k == "remove_path_block"), "{kinds:?}");
    let plan_text = wait_css(&c, "#wz-plan").await.text().await.unwrap();
    assert!(plan_text.contains(".config/smolvm"), "kept: {plan_text}");
    shot(&c, "wizard-3-plan").await;

    // 4. Confirmation lists exactly the ticked steps.
    click(&c, "#wz-plan-next").await;
    wait_css(&c, "#wz-confirm:not(.hidden) #wz-confirm-list li").await;
    let listed = c
        .find_all(Locator::Css("#wz-confirm-list li"))
        .await
        .unwrap();
    assert_eq!(listed.len(), rows.len());
    shot(&c, "wizard-4-confirm").await;

    // 5-6. Run, then the proof.
    click(&c, "#wz-go").await;
    let proof = c
        .wait()
        .at_most(Duration::from_secs(180))
        .for_element(Locator::Css("#wz-proof:not(.hidden) #wz-result-line"))
        .await;
    let proof = match proof {
        Ok(e) => e,
        Err(e) => {
            shot(&c, "wizard-failed").await;
            let state = c
                .execute(
                    "return [document.getElementById('wz-progress').innerText, document.getElementById('toast').innerText].join('\\n---\\n')",
                    vec![],
                )
                .await;
            panic!("no proof after 180 s ({e}): {state:?}");
        }
    };
    let result = proof.text().await.unwrap();
    let report = c
        .execute("return document.getElementById('wz-report').value", vec![])
        .await
        .unwrap();
    let report = report.as_str().unwrap_or_default().to_string();
    assert_eq!(result, "result=clean", "{report}");
    assert!(report.contains("result=clean"), "{report}");
    assert!(
        report.contains(&format!("audited_home={}", home.display())),
        "{report}"
    );
    assert!(!report.contains("FAILED"), "{report}");
    shot(&c, "wizard-5-proof").await;
    click(&c, "#wz-copy").await;
    let copied = wait_css(&c, "#wz-copied").await.text().await.unwrap();
    assert!(!copied.is_empty(), "the copy button answers");
    scroll_to(&c, "#wz-report").await;
    shot(&c, "wizard-6-report").await;

    // The prefix, launcher and caches are gone; credentials and the rc file stay.
    assert_gone(&home.join(".smolvm"));
    assert_gone(&home.join(".local/bin/smolvm"));
    assert_gone(&home.join(".local/share/smolvm"));
    assert_gone(&home.join(".cache/smolvm-registry"));
    assert!(home.join(".config/smolvm/config.toml").is_file());
    assert_eq!(
        std::fs::read_to_string(home.join(".bashrc")).unwrap(),
        h.bashrc
    );

    // The proof view at the smallest supported size.
    c.set_window_size(800, 600).await.ok();
    scroll_to(&c, "#h-uninstall").await;
    shot(&c, "wizard-5-proof-800x600").await;
    c.close().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display server, tauri-driver, WebKitWebDriver and the smolmachines wheel: run scripts/desktop-tests.sh"]
async fn wizard_plan_in_a_dark_800x600_window_skips_unticked_steps_in_the_confirmation() {
    let h = Home::with_smolvm();
    let (_driver, c) = open(&h, &[("GTK_THEME", "Adwaita:dark")], (800, 600)).await;
    // The way the tray's "Uninstall SmolVM…" reaches an open window: a `navigate` event.
    wait_css(&c, "#view-overview.active").await;
    c.execute(
        "window.__TAURI__.event.emit('navigate', 'uninstall'); return true",
        vec![],
    )
    .await
    .unwrap();
    wait_css(&c, "#view-uninstall.active #wz-pre-body .wz-sec").await;
    let bg = c
        .execute(
            "return getComputedStyle(document.body).backgroundColor",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(bg, json!("rgb(27, 30, 36)"), "the dark palette is used");
    shot(&c, "wizard-1-preflight-dark-800x600").await;
    click(&c, "#wz-pre-next").await;
    click(&c, "input[name='wz-product'][value='smolvm']").await;
    click(&c, "#wz-choices-next").await;
    wait_css(&c, "#wz-plan:not(.hidden) tr.wz-plan-row").await;
    // Untick the first machine deletion.
    let row = wait_css(&c, "tr.wz-plan-row[data-step='delete_machine']").await;
    let index = row.attr("data-index").await.unwrap().unwrap();
    row.find(Locator::Css("input.wz-step"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    shot(&c, "wizard-3-plan-dark-800x600").await;
    click(&c, "#wz-plan-next").await;
    wait_css(&c, "#wz-confirm:not(.hidden) #wz-confirm-list li").await;
    let listed = c
        .find_all(Locator::Css("#wz-confirm-list li"))
        .await
        .unwrap();
    let rows = c.find_all(Locator::Css("tr.wz-plan-row")).await.unwrap();
    assert_eq!(listed.len(), rows.len() - 1);
    for li in &listed {
        assert_ne!(li.attr("data-index").await.unwrap().unwrap(), index);
    }
    let skipped = wait_css(&c, "#wz-confirm-skipped")
        .await
        .text()
        .await
        .unwrap();
    assert!(skipped.contains("Skipped"), "{skipped}");
    shot(&c, "wizard-4-confirm-dark-800x600").await;
    // Back out: nothing was done.
    click(&c, "#wz-confirm-back").await;
    assert!(h.home.join(".smolvm/smolvm-bin").is_file());
    c.close().await.ok();
}
