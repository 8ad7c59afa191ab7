//! The command-line conventions a user relies on (issue 10, item 4): exit codes that tell
//! refused and absent targets apart from "nothing to do", broken pipes that end quietly, `-y`
//! and `--quiet` everywhere they belong, progress on stderr, `history` naming the command and
//! local time, `plan --out` not overwriting what is not a plan, `apply` on a scan report, shell
//! completions and a man page.
//!
//! Every test runs the built binary on a scratch HOME it creates, with a cleared environment;
//! only processes a test spawned are ever signalled.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use smolsweep_fixtures::vmm::{fake_vmm_bin, spawn, Shape};
use smolsweep_fixtures::{Scratch, OLD};

/// What the tests run on a scratch HOME (`smolsweep_fixtures::Scratch`).
trait Conventions: Sized {
    fn empty() -> Self;
    fn with_orphans(n: usize) -> (Self, Vec<PathBuf>);
    fn cmd(&self, args: &[&str]) -> Command;
    fn run(&self, args: &[&str]) -> Output;
    fn path(&self, name: &str) -> PathBuf;
}

impl Conventions for Scratch {
    fn empty() -> Scratch {
        Scratch::new()
    }

    /// A HOME with `n` orphaned smolvm VM directories (record gone), old enough to reclaim.
    fn with_orphans(n: usize) -> (Scratch, Vec<PathBuf>) {
        let s = Scratch::new();
        let sm = s.home.smolvm().unwrap();
        sm.record("kept", serde_json::json!({})).unwrap();
        let dirs = (0..n)
            .map(|i| sm.dangling_dir(&format!("vm-orphan-{i}")).unwrap())
            .collect();
        smolsweep_fixtures::age_tree(&s.home.root, OLD).unwrap();
        (s, dirs)
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = self.command(env!("CARGO_BIN_EXE_smolsweep"), args);
        c.env("TZ", "UTC0");
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().unwrap()
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir().join(name)
    }
}

fn text(o: &Output) -> String {
    format!(
        "--- stdout\n{}--- stderr\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

fn fake_vmm() -> PathBuf {
    fake_vmm_bin(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/fake_vmm.rs"),
        Path::new(env!("CARGO_TARGET_TMPDIR")),
    )
}

/// A libkrun-shaped VM process of `home` whose machine directory `dir` has no record (an
/// orphan), or of another HOME when `home` is some other directory.
fn orphan_vmm(bin: &Path, home: &Path, dir: &Path) -> smolsweep_fixtures::vmm::FakeVmm {
    spawn(
        bin,
        &Shape {
            argv: vec![
                "/proc/self/exe".into(),
                "_boot-vm".into(),
                dir.join("boot-config.json").display().to_string(),
            ],
            comm: Some("libkrun VM"),
            home: Some(home),
            ..Default::default()
        },
    )
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| s.rsplit(')').next().unwrap_or("").split_whitespace().next() != Some("Z"))
        .unwrap_or(false)
}

// ------------------------------------------------------------------------------ exit codes

/// One row of the exit-code table: what was run, the case, the code it must give.
struct Row<'a> {
    args: Vec<&'a str>,
    case: &'static str,
    want: i32,
}

fn check_table(s: &Scratch, rows: &[Row<'_>]) {
    let mut wrong = Vec::new();
    for r in rows {
        let o = s.run(&r.args);
        if code(&o) != r.want {
            wrong.push(format!(
                "{:?} ({}): exit {} (want {})\n{}",
                r.args,
                r.case,
                code(&o),
                r.want,
                text(&o)
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

macro_rules! row {
    ($case:literal, $want:expr, [$($a:expr),*]) => {
        Row { args: vec![$($a),*], case: $case, want: $want }
    };
}

#[test]
fn exit_codes_named_targets_absent_or_refused_exit_1_not_nothing_to_do() {
    let s = Scratch::empty();
    let plan_out = s.path("p.json");
    let p = plan_out.to_str().unwrap();
    check_table(
        &s,
        &[
            // Nothing to do without named targets: 0.
            row!("nothing to do", 0, ["prune", "--yes"]),
            row!("nothing to do", 0, ["prune", "--dry-run"]),
            row!("nothing to do", 0, ["reap", "--yes"]),
            row!("nothing to do", 0, ["uninstall", "--yes"]),
            row!("nothing to do", 0, ["history"]),
            row!("done", 0, ["scan"]),
            row!("done", 0, ["verify"]),
            row!("done", 0, ["completions", "bash"]),
            row!("done", 0, ["man"]),
            // A named target that is absent: 1 (it used to print "Nothing to do." and exit 0).
            row!("absent target", 1, ["reap", "1", "--yes"]),
            row!("absent target", 1, ["reap", "1", "--dry-run"]),
            row!("absent target", 1, ["reap", "1", "--yes", "--json"]),
            row!("absent target", 1, ["stop", "nosuch", "--yes"]),
            row!("absent target", 1, ["stop", "nosuch", "--yes", "--json"]),
            row!("absent target", 1, ["delete", "nosuch", "--yes"]),
            row!("absent target", 1, ["delete", "nosuch", "-y", "-q"]),
            row!("absent target", 1, ["plan", "--id", "bogus", "--out", p]),
            row!("absent target", 1, ["plan", "--stop", "nosuch", "--out", p]),
            row!(
                "absent target",
                1,
                ["plan", "--delete", "nosuch", "--out", p]
            ),
            row!(
                "absent target",
                1,
                ["apply", "/nonexistent/plan.json", "--yes"]
            ),
            // Usage errors: 2.
            row!("usage error", 2, ["scan", "--bogus"]),
            row!("usage error", 2, ["prune", "--bogus"]),
            row!("usage error", 2, ["prune", "--quiet", "--verbose"]),
            row!("usage error", 2, ["reap", "not-a-pid"]),
            row!("usage error", 2, ["stop"]),
            row!("usage error", 2, ["delete"]),
            row!("usage error", 2, ["plan"]),
            row!("usage error", 2, ["apply"]),
            row!("usage error", 2, ["history", "--bogus"]),
            row!("usage error", 2, ["uninstall", "--product", "neither"]),
            row!("usage error", 2, ["uninstall", "-q", "-v"]),
            row!("usage error", 2, ["verify", "--since", "2020-01-01"]),
            row!(
                "usage error",
                2,
                ["verify", "--protected", "/x", "--since", "yesterday"]
            ),
            row!("usage error", 2, ["completions", "tcsh"]),
            row!("usage error", 2, ["nosuchverb"]),
            row!("usage error", 2, []),
            // Help and version are not errors.
            row!("done", 0, ["--help"]),
            row!("done", 0, ["--version"]),
            row!("done", 0, ["prune", "--help"]),
        ],
    );
    assert!(
        !plan_out.exists(),
        "a plan missing what was named is not written"
    );
    // The refusal says what was not found, on stderr.
    let o = s.run(&["stop", "nosuch", "--yes"]);
    assert!(
        stderr(&o).contains("smolsweep: nosuch: no machine or sandbox with that name"),
        "{}",
        text(&o)
    );
    assert!(!stdout(&o).contains("Nothing to do."), "{}", text(&o));
    let o = s.run(&["reap", "1", "--yes"]);
    assert!(stderr(&o).contains("smolsweep: pid 1: "), "{}", text(&o));
}

#[test]
fn exit_codes_done_refused_and_partial_on_a_home_with_orphans() {
    let (s, dirs) = Scratch::with_orphans(3);
    let plan_out = s.path("plan.json");
    let p = plan_out.to_str().unwrap();
    let scan_json = s.path("scan.json");
    let o = s.run(&["scan", "--json"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    std::fs::write(&scan_json, &o.stdout).unwrap();
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let id = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["verdict"] == "reclaimable")
        .and_then(|f| f["id"].as_str())
        .unwrap()
        .to_string();
    check_table(
        &s,
        &[
            // Not confirmed (stdin is not a terminal): refused.
            row!("refused", 1, ["prune"]),
            row!("refused", 1, ["uninstall"]),
            row!("done", 0, ["prune", "--dry-run"]),
            row!("done", 0, ["plan", "--out", p]),
            row!("done", 0, ["plan", "--id", &id, "--out", p]),
            // A named id and an absent one: the plan is not written, exit 1.
            row!(
                "absent target",
                1,
                ["plan", "--id", &id, "--id", "bogus", "--out", p]
            ),
            // A scan report is not a plan.
            row!(
                "refused",
                1,
                ["apply", scan_json.to_str().unwrap(), "--yes"]
            ),
        ],
    );
    assert!(dirs.iter().all(|d| d.exists()), "nothing was deleted yet");
    // apply of the plan: done, 0.
    let o = s.run(&["apply", p, "-y"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(
        dirs.iter().filter(|d| d.exists()).count() < 3,
        "{}",
        text(&o)
    );
    // prune of the rest: done, 0; then nothing to do, 0.
    let o = s.run(&["prune", "-y"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(dirs.iter().all(|d| !d.exists()), "{}", text(&o));
    let o = s.run(&["prune", "-y"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(stdout(&o).contains("Nothing to do."), "{}", text(&o));
    // A plan applied twice: every item is gone, nothing fails, but nothing of it was done
    // either: every item skipped is a refusal, 1 (issue 19; it was 0).
    let o = s.run(&["apply", p, "--yes"]);
    assert_eq!(code(&o), 1, "{}", text(&o));
    assert!(
        stderr(&o).contains("every item of the plan was skipped"),
        "{}",
        text(&o)
    );
    let o = s.run(&["history"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
}

#[test]
fn exit_codes_reap_of_a_named_pid_of_another_home_is_refused_and_it_lives() {
    let (s, dirs) = Scratch::with_orphans(1);
    let bin = fake_vmm();
    let other = s.path("other-home");
    std::fs::create_dir(&other).unwrap();
    let foreign = orphan_vmm(&bin, &other, &other.join("vm"));
    let mine = orphan_vmm(&bin, &s.home.root, &dirs[0]);
    let fp = foreign.pid().to_string();
    let mp = mine.pid().to_string();
    // Another HOME's VM named explicitly: refused, exit 1, never signalled.
    let o = s.run(&["reap", &fp, "--yes"]);
    assert_eq!(code(&o), 1, "{}", text(&o));
    assert!(stderr(&o).contains("another HOME"), "{}", text(&o));
    assert!(alive(foreign.pid()));
    // Ours and the foreign one: ours is ended, the foreign one refused, exit 1.
    let o = s.run(&["reap", &mp, &fp, "--yes"]);
    assert_eq!(code(&o), 1, "{}", text(&o));
    assert!(!alive(mine.pid()), "{}", text(&o));
    assert!(alive(foreign.pid()), "{}", text(&o));
    // Nothing of ours left; reap without targets: nothing to do, 0.
    let o = s.run(&["reap", "--yes"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(alive(foreign.pid()));
    drop(foreign);
    drop(mine);
}

// ----------------------------------------------------------------------------- broken pipe

/// Run with stdout on a pipe; read up to `keep` bytes, then close the read end (as `head -c`
/// does) and wait. `keep = 0` closes it at once.
fn with_head(c: &mut Command, keep: usize) -> (std::process::ExitStatus, String) {
    let mut child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stdout.take().unwrap();
    if keep > 0 {
        let mut buf = vec![0u8; keep];
        let _ = pipe.read_exact(&mut buf);
    }
    drop(pipe);
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    (child.wait().unwrap(), err)
}

/// Closed at once (the first write finds no reader) and after `keep` bytes (a later write
/// does, when the output is larger than the pipe's buffer).
fn assert_quiet_on_broken_pipe(s: &Scratch, args: &[&str], keep: usize) {
    for keep in [0, keep] {
        let (status, err) = with_head(&mut s.cmd(args), keep);
        assert!(!err.contains("panicked"), "{args:?} panicked:\n{err}");
        assert!(!err.contains("Broken pipe"), "{args:?}:\n{err}");
        assert_eq!(
            status.code(),
            Some(0),
            "{args:?} (head after {keep} bytes): {status:?}\n{err}"
        );
    }
}

#[test]
fn broken_pipe_ends_every_printing_verb_quietly_with_exit_0() {
    // Enough orphans that every listing is larger than a pipe's buffer (64 KiB), so the
    // writer is still writing when the reader goes away.
    let (s, _dirs) = Scratch::with_orphans(1000);
    let plan = s.path("plan.json");
    let o = s.run(&["plan", "--out", plan.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(
        o.stdout.len() > 64 << 10,
        "plan listing is {} bytes",
        o.stdout.len()
    );
    let p = plan.to_str().unwrap();
    for (args, keep) in [
        (&["scan"][..], 1),
        (&["scan", "--json"], 10),
        (&["prune", "--dry-run"], 100),
        (&["prune", "--dry-run", "--json"], 10),
        (&["apply", p, "--dry-run"], 10),
        (&["reap", "--dry-run"], 0),
        (&["uninstall", "--dry-run", "--json"], 10),
        (&["uninstall", "--dry-run"], 0),
        (&["verify"], 0),
        (&["verify", "--json"], 0),
        (&["completions", "bash"], 10),
        (&["man"], 10),
        (&["--help"], 0),
    ] {
        assert_quiet_on_broken_pipe(&s, args, keep);
    }
    // history with a run in the journal (a run of a plan written just now), long enough too.
    let o = s.run(&["apply", p, "--yes", "--quiet"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert_quiet_on_broken_pipe(&s, &["history"], 10);
    assert_quiet_on_broken_pipe(&s, &["history", "--json"], 10);
}

// ------------------------------------------------------------------------- -y, -q, progress

#[test]
fn yes_short_flag_on_uninstall_and_every_acting_verb() {
    let s = Scratch::empty();
    for verb in [
        &["prune"][..],
        &["reap"],
        &["stop", "x"],
        &["delete", "x"],
        &["uninstall"],
    ] {
        let mut args = verb.to_vec();
        args.push("-y");
        let o = s.run(&args);
        assert_ne!(code(&o), 2, "{args:?} rejects -y:\n{}", text(&o));
    }
    let o = s.run(&["apply", "-y"]);
    assert!(
        !stderr(&o).contains("unexpected argument '-y'"),
        "{}",
        text(&o)
    );
}

#[test]
fn prune_yes_lists_each_item_once_then_progress_then_a_summary() {
    let (s, dirs) = Scratch::with_orphans(3);
    let o = s.run(&["prune", "--yes"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let out = stdout(&o);
    let err = stderr(&o);
    for d in &dirs {
        let name = d.file_name().unwrap().to_str().unwrap();
        let n = out.matches(name).count() + err.matches(name).count();
        assert_eq!(n, 1, "{name} is listed {n} times:\n{}", text(&o));
    }
    assert!(out.contains("3 done, 0 skipped, 0 failed."), "{}", text(&o));
    // Off a terminal, progress is plain lines of items and bytes, no carriage returns.
    assert!(err.contains("3/3 items"), "{}", text(&o));
    assert!(err.contains(" of "), "{}", text(&o));
    assert!(!err.contains('\r'), "{}", text(&o));
}

#[test]
fn verbose_prints_one_progress_line_per_item() {
    let (s, dirs) = Scratch::with_orphans(3);
    let o = s.run(&["prune", "--yes", "-v"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let err = stderr(&o);
    for i in 1..=3 {
        assert!(err.contains(&format!("[{i}/3] done ")), "{}", text(&o));
    }
    for d in &dirs {
        let name = d.file_name().unwrap().to_str().unwrap();
        assert!(err.contains(name), "{}", text(&o));
    }
}

#[test]
fn quiet_prints_only_the_closing_line() {
    let (s, dirs) = Scratch::with_orphans(3);
    let o = s.run(&["prune", "--yes", "--quiet"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(dirs.iter().all(|d| !d.exists()));
    let out = stdout(&o);
    assert_eq!(out.lines().count(), 1, "{}", text(&o));
    assert!(
        out.starts_with("3 done, 0 skipped, 0 failed."),
        "{}",
        text(&o)
    );
    assert_eq!(stderr(&o), "", "{}", text(&o));
    // Nothing to do, quietly.
    let o = s.run(&["prune", "-y", "-q"]);
    assert_eq!(code(&o), 0);
    assert_eq!(stdout(&o), "Nothing to do.\n", "{}", text(&o));
    // Errors still reach stderr.
    let o = s.run(&["stop", "nosuch", "-y", "-q"]);
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("smolsweep: nosuch: "), "{}", text(&o));
}

#[test]
fn uninstall_shows_progress_while_it_runs_and_quiet_hides_it() {
    for quiet in [false, true] {
        let s = Scratch::empty();
        let sm = s.home.smolvm().unwrap();
        sm.install("1.32.2").unwrap();
        let mut args = vec!["uninstall", "--product", "smolvm", "--yes"];
        if quiet {
            args.push("-q");
        }
        let o = s.run(&args);
        let err = stderr(&o);
        assert!(!s.home.path(".smolvm").exists(), "{}", text(&o));
        if quiet {
            assert!(!err.contains(" items, "), "{}", text(&o));
            assert_eq!(stdout(&o).lines().count(), 1, "{}", text(&o));
        } else {
            assert!(err.contains(" items, "), "{}", text(&o));
            assert!(!err.contains('\r'), "{}", text(&o));
        }
    }
}

// -------------------------------------------------------------------------------- history

#[test]
fn history_names_command_and_surface_in_local_time() {
    let (s, _dirs) = Scratch::with_orphans(1);
    let o = s.run(&["prune", "--yes"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let o = s.run(&["history"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let utc = stdout(&o);
    assert!(utc.contains("prune (cli)"), "{utc}");
    assert!(utc.contains("+00:00"), "{utc}");
    assert!(!utc.contains("UTC"), "{utc}");
    // Five hours east of UTC: the same run, shown five hours later, with its offset.
    let o = s.cmd(&["history"]).env("TZ", "XYZ-5").output().unwrap();
    let east = stdout(&o);
    assert!(east.contains("+05:00"), "{east}");
    let hour = |t: &str| -> u32 {
        let l = t.lines().next().unwrap();
        l[11..13].parse().unwrap()
    };
    assert_eq!((hour(&utc) + 5) % 24, hour(&east), "{utc}\n{east}");
}

// ---------------------------------------------------------------------- plan --out, apply

#[test]
fn plan_out_refuses_to_overwrite_a_file_that_is_not_a_plan() {
    let (s, _dirs) = Scratch::with_orphans(1);
    let notes = s.path("notes.txt");
    std::fs::write(&notes, "my notes\n").unwrap();
    let o = s.run(&["plan", "--out", notes.to_str().unwrap()]);
    assert_eq!(code(&o), 1, "{}", text(&o));
    assert!(stderr(&o).contains("refusing to overwrite"), "{}", text(&o));
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "my notes\n");
    // A scan report is not a plan either.
    let scan = s.path("scan.json");
    std::fs::write(&scan, s.run(&["scan", "--json"]).stdout).unwrap();
    let before = std::fs::read(&scan).unwrap();
    let o = s.run(&["plan", "--out", scan.to_str().unwrap()]);
    assert_eq!(code(&o), 1, "{}", text(&o));
    assert!(stderr(&o).contains("scan report"), "{}", text(&o));
    assert_eq!(std::fs::read(&scan).unwrap(), before);
    // A directory is not overwritten.
    let o = s.run(&["plan", "--out", s.dir().to_str().unwrap()]);
    assert_eq!(code(&o), 1, "{}", text(&o));
    // An existing plan may be replaced.
    let plan = s.path("plan.json");
    let o = s.run(&["plan", "--out", plan.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let o = s.run(&["plan", "--out", plan.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "overwriting a plan: {}", text(&o));
}

#[test]
fn apply_on_a_scan_report_says_it_is_a_scan_report() {
    let (s, dirs) = Scratch::with_orphans(1);
    let scan = s.path("scan.json");
    std::fs::write(&scan, s.run(&["scan", "--json"]).stdout).unwrap();
    let o = s.run(&["apply", scan.to_str().unwrap(), "--yes"]);
    assert_eq!(code(&o), 1, "{}", text(&o));
    let err = stderr(&o);
    assert!(err.contains("is a scan report"), "{err}");
    assert!(err.contains("smolsweep plan --out"), "{err}");
    assert!(!err.contains("missing field"), "{err}");
    assert!(dirs[0].exists());
    let o = s.run(&["apply", scan.to_str().unwrap(), "--yes", "--json"]);
    assert_eq!(code(&o), 1, "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["error"].as_str().unwrap().contains("scan report"), "{v}");
}

// ---------------------------------------------------------------------- completions, man

#[test]
fn completions_name_every_subcommand_and_man_is_roff_with_a_name_section() {
    let s = Scratch::empty();
    let verbs = [
        "scan",
        "prune",
        "reap",
        "stop",
        "delete",
        "plan",
        "apply",
        "history",
        "uninstall",
        "verify",
    ];
    for shell in ["bash", "zsh", "fish"] {
        let o = s.run(&["completions", shell]);
        assert_eq!(code(&o), 0, "{}", text(&o));
        let script = stdout(&o);
        for v in verbs {
            assert!(script.contains(v), "{shell} completion lacks {v}");
        }
        assert!(script.contains("include-caches"), "{shell}");
    }
    let bash = stdout(&s.run(&["completions", "bash"]));
    assert!(bash.contains("complete -F _smolsweep"), "{bash}");
    for v in verbs {
        // Its own case, so its flags complete.
        assert!(
            bash.contains(&format!("smolsweep__subcmd__{v})")),
            "bash has no case for {v}"
        );
    }
    // bash accepts it.
    if let Ok(st) = Command::new("bash")
        .arg("-n")
        .stdin(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(bash.as_bytes())?;
            c.wait()
        })
    {
        assert!(st.success(), "bash -n rejects the completion script");
    }

    let o = s.run(&["man"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let man = stdout(&o);
    assert!(man.contains(".TH smolsweep 1"), "{man}");
    assert!(man.contains(".SH NAME\nsmolsweep \\- "), "{man}");
    assert!(man.contains(".SH SYNOPSIS"), "{man}");
    for v in verbs {
        assert!(
            man.contains(&format!("smolsweep\\-{v}(1)")),
            "man lacks {v}"
        );
    }
    assert!(man.contains(".SH EXIT STATUS"), "{man}");
    // Every line is roff: a request, or text that does not start with a quote or dot by chance.
    for l in man.lines() {
        assert!(!l.starts_with('\''), "stray control line: {l}");
    }
    // The pages for the .deb.
    let dir = s.path("man");
    let o = s.run(&["man", "--out-dir", dir.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    for page in
        std::iter::once("smolsweep".to_string()).chain(verbs.map(|v| format!("smolsweep-{v}")))
    {
        assert!(dir.join(format!("{page}.1")).is_file(), "{page}.1");
    }
    // man(1) renders it, when it is installed.
    if Command::new("man").arg("--version").output().is_ok() {
        let o = Command::new("man")
            .arg("-l")
            .arg(dir.join("smolsweep.1"))
            .env("MANPAGER", "cat")
            .env("PAGER", "cat")
            .output()
            .unwrap();
        if o.status.success() {
            assert!(stdout(&o).contains("NAME"), "{}", text(&o));
        }
    }
}

#[test]
fn progress_on_a_terminal_is_one_bar_line_redrawn_in_place() {
    // `script` gives the run a terminal (util-linux); without it there is nothing to check.
    if Command::new("script").arg("--version").output().is_err() {
        return;
    }
    let (s, dirs) = Scratch::with_orphans(3);
    let mut inner = vec![env!("CARGO_BIN_EXE_smolsweep").to_string()];
    inner.extend(["prune", "--yes"].map(String::from));
    let line = format!("{} >/dev/null", inner.join(" "));
    let o = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .env_clear()
        .envs(s.home.env_vars())
        .env("SMOLSWEEP_DATA_DIR", &s.data)
        .env("PATH", "/usr/bin:/bin")
        .env("COLUMNS", "60")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(dirs.iter().all(|d| !d.exists()), "{}", text(&o));
    let tty = stdout(&o);
    assert!(
        tty.contains("\r\x1b[K[#"),
        "no bar redrawn in place: {tty:?}"
    );
    assert!(tty.contains("3 items, "), "{tty:?}");
    assert!(
        !tty.contains("3/3 items, ") || tty.ends_with("\r\x1b[K"),
        "{tty:?}"
    );
    for frame in tty.split('\r') {
        let visible = frame.trim_start_matches("\x1b[K").trim_end();
        assert!(
            visible.chars().count() <= 60,
            "wider than the terminal: {visible:?}"
        );
    }
}

/// Hazard (issue 39, item 7): `uninstall --dry-run` under `LANG=C` printed "—" and "…" that a
/// C locale's terminal shows as garbage. Every verb's text for a person is ASCII when the
/// locale is not UTF-8, on the fixture HOME of both products.
#[test]
fn uninstall_dry_run_and_every_verb_is_ascii_under_lang_c() {
    let crate::golden::EdgeCases { home, t, _cases } = crate::golden::edge_case_home();
    let data = t.path().join("smolsweep-data");
    for args in [
        &["uninstall", "--dry-run"][..],
        &["uninstall", "--dry-run", "--product", "smolvm"],
        &["prune", "-n", "--include-caches"],
        &["compact", "-n"],
        &["scan", "-v"],
        &["why", "smolvm:web"],
        &["kinds"],
        &["keep", "list"],
        &["history"],
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_smolsweep"))
            .args(args)
            .env_clear()
            .envs(home.env_vars())
            .env("PATH", "/usr/bin:/bin")
            .env("LANG", "C")
            .env("COLUMNS", "80")
            .env("SMOLSWEEP_DATA_DIR", &data)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            !out.trim().is_empty(),
            "{args:?} printed nothing:\n{}",
            text(&o)
        );
        for l in out.lines() {
            assert!(l.is_ascii(), "{args:?}: not ASCII under LANG=C: {l:?}");
        }
    }
}

/// Hazard (issue 39, item 7): `verify`'s `fix=` held the scan's reason ("check by hand: Disk of
/// sandbox 'bs-same', which exists in celesto.db.") where a fix belongs. On the fixture HOME of
/// both products every `fix=` is something to run: a Smolsweep command, or the command to run
/// by hand.
#[test]
fn verifys_fix_column_holds_a_fix() {
    let crate::golden::EdgeCases { home, t, _cases } = crate::golden::edge_case_home();
    let o = Command::new(env!("CARGO_BIN_EXE_smolsweep"))
        .arg("verify")
        .env_clear()
        .envs(home.env_vars())
        .env("PATH", "/usr/bin:/bin")
        .env("LANG", "C.UTF-8")
        .env("SMOLSWEEP_DATA_DIR", t.path().join("smolsweep-data"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let out = stdout(&o);
    let fixes: Vec<&str> = out
        .lines()
        .filter_map(|l| l.split_once(" fix="))
        .map(|f| f.1)
        .collect();
    assert!(fixes.len() > 20, "{out}");
    let commands = ["smolsweep ", "rm ", "remove '", "kill ", "not this HOME's"];
    for f in &fixes {
        assert!(
            commands.iter().any(|c| f.starts_with(c)),
            "not a fix: {f:?}\n{out}"
        );
        assert!(!f.contains("check by hand:"), "{f}");
    }
    assert!(
        fixes
            .iter()
            .any(|f| f.starts_with("rm -- ") && f.contains("UPPER.qcow2")),
        "an unrecognised file is removed by hand:\n{out}"
    );
}
