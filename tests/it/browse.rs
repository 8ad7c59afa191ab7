//! `smolsweep browse` (issue 21): driven in a real terminal (tmux, its own server socket in a
//! scratch directory) through open → mark → review → confirm → done, and refused without a
//! terminal. Its drawing is pinned by the golden tests in `src/cli/browse/tests.rs`.
//!
//! The binary runs with a scratch HOME and data directory only (`env -i`), so its scan and its
//! process-table reads judge that HOME alone. Waiting is polling the screen with a bound; no
//! assertion is about time.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use smolsweep_fixtures::{age_tree, Home, Layout};

/// A tmux server of this test's own (its socket in a scratch directory), killed on drop.
pub(crate) struct Tmux {
    socket: String,
    dir: PathBuf,
}

impl Tmux {
    pub(crate) fn new(dir: &Path) -> Tmux {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Tmux {
            socket: format!("smolsweep-browse-{}-{n}", std::process::id()),
            dir: dir.to_path_buf(),
        }
    }

    fn cmd(&self) -> Command {
        let mut c = Command::new("tmux");
        c.env("TMUX_TMPDIR", &self.dir).env_remove("TMUX").args([
            "-L",
            &self.socket,
            "-f",
            "/dev/null",
        ]);
        c
    }

    pub(crate) fn ok(&self, args: &[&str]) -> String {
        let out = self.cmd().args(args).output().unwrap_or_else(|e| {
            panic!("tmux: {e} (scripts/setup/00-rust.sh installs it)");
        });
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub(crate) fn screen(&self) -> String {
        self.ok(&["capture-pane", "-p", "-t", "b"])
    }

    pub(crate) fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "b"];
        args.extend_from_slice(keys);
        self.ok(&args);
    }

    /// The screen once `done` accepts it; panics with the last screen after a generous bound.
    pub(crate) fn wait_for(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if done(&s) {
                return s;
            }
            if start.elapsed() > Duration::from_secs(90) {
                panic!("the screen never showed {what}:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Move the cursor (the line starting with `>`) down to the first line containing `text`.
    pub(crate) fn cursor_to(&self, text: &str) {
        let s = self.wait_for(text, |s| s.contains(text));
        let lines: Vec<&str> = s.lines().collect();
        let at = lines
            .iter()
            .position(|l| l.starts_with('>'))
            .expect("a cursor");
        let to = lines.iter().position(|l| l.contains(text)).unwrap();
        assert!(to >= at, "{text} above the cursor:\n{s}");
        for _ in at..to {
            self.keys(&["j"]);
        }
        self.wait_for(&format!("the cursor on {text}"), |s| {
            s.lines().any(|l| l.starts_with('>') && l.contains(text))
        });
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd().arg("kill-server").stderr(Stdio::null()).status();
    }
}

/// `env -i VARS PATH=… LANG=… TERM=screen smolsweep ARGS`, as a shell command line: the binary
/// with `vars` and nothing else of this process's environment.
pub(crate) fn command_line(
    vars: Vec<(String, String)>,
    path: &str,
    lang: &str,
    args: &str,
) -> String {
    let mut env: Vec<String> = vars
        .into_iter()
        .map(|(k, v)| format!("{k}={}", quote(Path::new(&v))))
        .collect();
    env.extend([
        format!("PATH={path}"),
        format!("LANG={lang}"),
        "TERM=screen".into(),
    ]);
    format!(
        "env -i {} {} {args}",
        env.join(" "),
        quote(Path::new(env!("CARGO_BIN_EXE_smolsweep")))
    )
}

pub(crate) fn quote(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', "'\\''"))
}

/// A scratch HOME as Celesto leaves it: a stopped sandbox's disk (protected) and two orphaned
/// disks, all older than the age guard.
struct Scratch {
    t: tempfile::TempDir,
    home: Home,
    live: PathBuf,
    gone1: PathBuf,
    gone2: PathBuf,
}

fn scratch() -> Scratch {
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Linux).unwrap();
    let data = home.celesto_data_dir().unwrap();
    data.row("live1", "stopped", "qemu", None).unwrap();
    let live = data.disk("live1", "qcow2", 1 << 16, 1 << 14).unwrap();
    let gone1 = data.disk("gone1", "qcow2", 1 << 16, 1 << 14).unwrap();
    let gone2 = data.disk("gone2", "qcow2", 1 << 16, 1 << 14).unwrap();
    age_tree(&home.root, Duration::from_secs(3600)).unwrap();
    Scratch {
        t,
        home,
        live,
        gone1,
        gone2,
    }
}

impl Scratch {
    fn data(&self) -> PathBuf {
        self.t.path().join("smolsweep-data")
    }

    /// `env -i VAR=… smolsweep ARGS`, as a shell command line.
    fn command_line(&self, args: &str, lang: &str) -> String {
        let mut vars = self.home.env_vars();
        vars.push((
            "SMOLSWEEP_DATA_DIR".into(),
            self.data().display().to_string(),
        ));
        command_line(vars, "/usr/bin:/bin", lang, args)
    }
}

/// Mark → review → confirm → done in a real terminal: the marked orphan is gone, the other
/// orphan and the protected disk are untouched, the journal has the run (as `browse`), and
/// `q` ends it with 0. Under `LANG=C` every character drawn is ASCII.
#[test]
fn browse_in_a_terminal_marks_reviews_and_reclaims_one_orphan() {
    let s = scratch();
    let tmux = Tmux::new(s.t.path());
    let exit = s.t.path().join("exit-code");
    let stty = s.t.path().join("stty-after");
    // After it ends, the terminal's modes as the shell finds them.
    let line = format!(
        "{}; echo $? > {}; stty -a > {}",
        s.command_line("browse", "C"),
        quote(&exit),
        quote(&stty)
    );
    tmux.ok(&[
        "new-session",
        "-d",
        "-s",
        "b",
        "-x",
        "100",
        "-y",
        "30",
        &line,
    ]);
    let first = tmux.wait_for("the groups", |s| s.contains("Orphaned disks"));
    assert!(first.is_ascii(), "LANG=C draws ASCII only:\n{first}");
    assert!(first.contains("Reclaimable:"), "{first}");

    tmux.cursor_to("Orphaned disks");
    tmux.keys(&["Enter"]);
    tmux.cursor_to("gone1.qcow2");
    tmux.keys(&["Space"]);
    tmux.wait_for("the mark", |s| {
        s.lines()
            .any(|l| l.starts_with('>') && l.contains("[x]") && l.contains("gone1.qcow2"))
    });
    tmux.keys(&["d"]);
    let review = tmux.wait_for("the question", |s| s.contains("? [y/N]"));
    assert!(review.contains("Delete 1 item"), "{review}");
    assert!(review.contains("gone1.qcow2"), "{review}");
    assert!(!review.contains("gone2.qcow2"), "{review}");
    tmux.keys(&["y"]);
    let done = tmux.wait_for("the closing line", |s| s.contains(" failed"));
    assert!(done.contains("1 done, 0 skipped, 0 failed"), "{done}");

    assert!(!s.gone1.exists(), "the marked orphan is still there");
    assert!(
        s.gone2.exists(),
        "an orphan that was not marked was deleted"
    );
    assert!(s.live.exists(), "a protected disk was deleted");
    let out = Command::new(env!("CARGO_BIN_EXE_smolsweep"))
        .args(["history", "--json"])
        .env_clear()
        .envs(s.home.env_vars())
        .env("PATH", "/usr/bin:/bin")
        .env("SMOLSWEEP_DATA_DIR", s.data())
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["runs"].as_array().map(Vec::len), Some(1), "{v}");
    assert_eq!(v["runs"][0]["origin"]["command"], "browse", "{v}");
    assert_eq!(v["runs"][0]["done"], 1, "{v}");

    // Any key: back to the list, scanned again; then q.
    tmux.keys(&["x"]);
    tmux.wait_for("the list again", |s| {
        s.contains("q quit") && !s.contains("gone1.qcow2")
    });
    tmux.keys(&["q"]);
    let start = Instant::now();
    while fs::read_to_string(&exit).map_or(true, |c| c.trim().is_empty()) {
        assert!(
            start.elapsed() < Duration::from_secs(90),
            "browse did not end"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(fs::read_to_string(&exit).unwrap().trim(), "0");
    // The terminal is given back as it was: line editing and echo on again.
    while !fs::read_to_string(&stty).is_ok_and(|t| t.contains("echo")) {
        assert!(start.elapsed() < Duration::from_secs(90), "no stty -a");
        std::thread::sleep(Duration::from_millis(100));
    }
    let modes = fs::read_to_string(&stty).unwrap();
    let on = |m: &str| modes.split_whitespace().any(|w| w == m);
    assert!(on("icanon") && on("echo"), "raw mode left on:\n{modes}");
}

/// Without a terminal there is nothing to browse with: exit 2, pointing at `smolsweep scan`,
/// and nothing drawn on stdout.
#[test]
fn browse_without_a_terminal_exits_2_pointing_at_scan() {
    let s = scratch();
    let out = Command::new(env!("CARGO_BIN_EXE_smolsweep"))
        .arg("browse")
        .env_clear()
        .envs(s.home.env_vars())
        .env("PATH", "/usr/bin:/bin")
        .env("SMOLSWEEP_DATA_DIR", s.data())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("`smolsweep scan`"), "{err}");
    assert!(out.stdout.is_empty());
    assert!(s.gone1.exists() && s.gone2.exists());
}
