//! WebDriver plumbing shared by the window tests: tauri-driver in its own process group, a
//! session with the app, waits and screenshots.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;

use super::{log_dir, wait_for, APP};

/// tauri-driver in its own process group, with the WebKitWebDriver and the app it starts: the
/// whole group ends when the test does, so no app instance outlives its test (the next test's
/// app would otherwise hand over to it as the single instance).
pub struct Driver(Child);

impl Drop for Driver {
    fn drop(&mut self) {
        use rustix::process::{kill_process_group, test_kill_process_group, Pid, Signal};
        let Some(group) = Pid::from_raw(self.0.id() as i32) else {
            return;
        };
        let _ = kill_process_group(group, Signal::TERM);
        let _ = self.0.wait();
        for i in 0..50 {
            if test_kill_process_group(group).is_err() {
                return;
            }
            if i == 30 {
                let _ = kill_process_group(group, Signal::KILL);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `name` on this process's `PATH` (or `name` itself): a `PATH` in the app's environment would
/// otherwise be the one searched for tauri-driver.
fn on_path(name: &str) -> std::path::PathBuf {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| name.into())
}

/// Start tauri-driver with the app's environment; `log` names its stderr file in the log dir.
pub fn spawn_driver(
    env: Vec<(String, String)>,
    extra_env: &[(&str, &str)],
    log: &str,
) -> (Driver, u16) {
    let port = free_port();
    let native = free_port();
    let log = std::fs::File::create(log_dir().join(log)).unwrap();
    use std::os::unix::process::CommandExt;
    let child = Command::new(on_path("tauri-driver"))
        .process_group(0)
        .args([
            "--port",
            &port.to_string(),
            "--native-port",
            &native.to_string(),
            "--native-driver",
            "/usr/bin/WebKitWebDriver",
        ])
        .env_remove("SMOLSWEEP_REPORT_FILE")
        .envs(env)
        .envs(extra_env.iter().copied())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("tauri-driver (cargo install tauri-driver --locked --version 2.1.0)");
    wait_for(20, "tauri-driver to listen", || {
        std::net::TcpStream::connect(("127.0.0.1", port)).ok()
    });
    (Driver(child), port)
}

/// The app's window through WebDriver, as every window test opens it: tauri-driver started with
/// the app's environment (and `extra_env`; its stderr in `log`), a session with the app, the
/// window `width` x `height`. The app ends when the returned [`Driver`] is dropped.
pub async fn open_window(
    env: Vec<(String, String)>,
    extra_env: &[(&str, &str)],
    log: &str,
    (width, height): (u32, u32),
) -> (Driver, Client) {
    let (driver, port) = spawn_driver(env, extra_env, log);
    let c = connect(port).await;
    c.set_window_size(width, height).await.ok();
    (driver, c)
}

/// A WebDriver session with the app (started with its window shown).
pub async fn connect(port: u16) -> Client {
    let mut caps = serde_json::Map::new();
    caps.insert("browserName".into(), json!("wry"));
    caps.insert(
        "tauri:options".into(),
        json!({ "application": APP, "args": ["--show"] }),
    );
    let mut b = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new());
    b.capabilities(caps);
    // tauri-driver listens before its native driver does, and a session starts the app: on a
    // loaded machine (the CI's other phases run beside) that takes more than the 10 s it was
    // given once, so the first session is retried for up to a minute.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let mut last = None;
    while std::time::Instant::now() < deadline {
        match b.connect(&format!("http://127.0.0.1:{port}")).await {
            Ok(c) => return c,
            Err(e) => last = Some(e),
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    panic!("a WebDriver session with the app within 60 s: {last:?}")
}

/// Save a screenshot as `$SMOLSWEEP_SCREENSHOTS/<name>.png` (when that is set).
pub async fn shot(c: &Client, name: &str) {
    let Ok(dir) = std::env::var("SMOLSWEEP_SCREENSHOTS") else {
        return;
    };
    // Let the page paint what the DOM already holds (snapshots show the last painted frame).
    let _ = c
        .execute_async(
            "const done = arguments[arguments.length - 1]; requestAnimationFrame(() => requestAnimationFrame(() => done(true)));",
            vec![],
        )
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    if let Ok(png) = c.screenshot().await {
        let _ = std::fs::create_dir_all(&dir);
        std::fs::write(format!("{dir}/{name}.png"), png).unwrap();
    }
}

/// The first element matching `css`, waited for up to `secs`. The window redraws its lists after
/// every scan and run: an element the driver has just found can be replaced before it makes a
/// handle for it ("stale element"), and then it is looked up again.
pub async fn wait_css_for(c: &Client, css: &str, secs: u64) -> fantoccini::elements::Element {
    let deadline = std::time::Instant::now() + Duration::from_secs(secs);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match c.wait().at_most(left).for_element(Locator::Css(css)).await {
            Ok(e) => return e,
            Err(e) if format!("{e} {e:?}").to_lowercase().contains("stale") && !left.is_zero() => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("waiting for {css}: {e}"),
        }
    }
}

pub async fn wait_css(c: &Client, css: &str) -> fantoccini::elements::Element {
    wait_css_for(c, css, 20).await
}

/// Show the view `view` by its nav button.
pub async fn nav(c: &Client, view: &str) {
    c.find(Locator::Css(&format!("nav button[data-view='{view}']")))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
}

/// The text of the first element matching `css`. The window redraws its rows after every scan
/// (a keep rule written makes one), so an element found may be replaced before its text is
/// read: then it is looked up again.
pub async fn text_of(c: &Client, css: &str) -> String {
    for _ in 0..50 {
        match wait_css(c, css).await.text().await {
            Ok(t) => return t,
            Err(e) if format!("{e:?}").contains("StaleElementReference") => {
                tokio::time::sleep(Duration::from_millis(100)).await
            }
            Err(e) => panic!("{css}: {e}"),
        }
    }
    panic!("{css}: replaced 50 times in a row")
}

/// The History tab's row for the run of `plan_id` (the tab reloads when shown).
pub async fn history_row(c: &Client, plan_id: &str) -> String {
    nav(c, "overview").await;
    nav(c, "history").await;
    text_of(c, &format!("#history-list li.run[data-plan='{plan_id}']")).await
}

/// The app's command `cmd` through the page's IPC, as the window calls it; an error comes back
/// as `{"error": "..."}`.
pub async fn invoke(c: &Client, cmd: &str) -> serde_json::Value {
    invoke_with(c, cmd, json!({})).await
}

/// [`invoke`] with arguments.
pub async fn invoke_with(c: &Client, cmd: &str, args: serde_json::Value) -> serde_json::Value {
    c.execute_async(
        "const done = arguments[arguments.length - 1]; window.__TAURI__.core.invoke(arguments[0], arguments[1]).then(done, (e) => done({error: String(e)}));",
        vec![json!(cmd), args],
    )
    .await
    .unwrap()
}

/// Click the first element matching `css`, looked up again when a redraw replaced it between
/// the lookup and the click.
pub async fn click_css(c: &Client, css: &str, secs: u64) {
    for _ in 0..50 {
        match wait_css_for(c, css, secs).await.click().await {
            Ok(()) => return,
            Err(e) if format!("{e:?}").contains("StaleElementReference") => {
                tokio::time::sleep(Duration::from_millis(100)).await
            }
            Err(e) => panic!("clicking {css}: {e}"),
        }
    }
    panic!("{css}: replaced 50 times in a row")
}
