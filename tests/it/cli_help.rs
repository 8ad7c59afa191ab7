//! Keep, history, help and the small CLI conventions of issue 19 ("one number, one screen"):
//! `keep add` updates only what is given, ids take unique prefixes, `history` is one line per
//! run newest first, every command's help has examples, the man page has EXAMPLES, FILES,
//! ENVIRONMENT and EXIT STATUS, flags appear only where they apply, `-n` is `--dry-run`,
//! `--out -` is stdout, conflicting output flags are a usage error, one JSON style.
//!
//! Every test runs the built binary on a scratch HOME and data directory it creates, with a
//! cleared environment.

use std::path::PathBuf;
use std::process::Output;

use serde_json::Value;
use smolsweep::keep::{Keeps, Rule, Target};
use smolsweep::model::{human_bytes, FindingKind};
use smolsweep_fixtures::{age_tree, unique_prefix, Scratch, OLD};

fn run(s: &Scratch, args: &[&str]) -> Output {
    s.command(env!("CARGO_BIN_EXE_smolsweep"), args)
        .env("TZ", "UTC0")
        .current_dir(s.dir())
        .output()
        .unwrap()
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn text(o: &Output) -> String {
    format!(
        "--- stdout\n{}--- stderr\n{}",
        out(o),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}\n{}", text(o)))
}

/// A HOME with `n` orphaned smolvm machine directories (record gone), old enough to reclaim.
fn with_orphans(n: usize) -> (Scratch, Vec<PathBuf>) {
    let s = Scratch::new();
    let sm = s.home.smolvm().unwrap();
    sm.record("kept", serde_json::json!({})).unwrap();
    let dirs = (0..n)
        .map(|i| sm.dangling_dir(&format!("vm-orphan-{i}")).unwrap())
        .collect();
    age_tree(&s.home.root, OLD).unwrap();
    (s, dirs)
}

fn keep_file(s: &Scratch) -> PathBuf {
    s.data.join("keep.json")
}

// ------------------------------------------------------------------------------------ keep

#[test]
fn keep_add_on_an_existing_rule_keeps_its_reason() {
    let s = Scratch::new();
    let kind = ["keep", "add", "--kind", "celesto.orphan_log"];
    let o = run(&s, &[&kind[..], &["--why", "debugging"]].concat());
    assert_eq!(code(&o), 0, "{}", text(&o));
    let first = Keeps::load(&keep_file(&s)).unwrap().rules[0].clone();
    // The same target again without --why: the reason (and since) stay.
    let o = run(&s, &kind);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(out(&o).contains("Already kept"), "{}", text(&o));
    let k = Keeps::load(&keep_file(&s)).unwrap();
    assert_eq!(k.rules, vec![first.clone()]);
    // With --why: only the reason changes.
    let o = run(&s, &[&kind[..], &["--why", "until Monday"]].concat());
    assert_eq!(code(&o), 0, "{}", text(&o));
    let k = Keeps::load(&keep_file(&s)).unwrap();
    assert_eq!(k.rules.len(), 1);
    assert_eq!(k.rules[0].why, "until Monday");
    assert_eq!((&k.rules[0].id, k.rules[0].since), (&first.id, first.since));
}

#[test]
fn keep_list_shows_rule_since_and_reason() {
    let s = Scratch::new();
    let mut k = Keeps::empty();
    let r = Rule::new(
        Target::Kind {
            kind: FindingKind::CelestoOrphanLog,
        },
        "debugging",
        1_796_083_200,
    );
    k.add(r.clone());
    k.save(&keep_file(&s)).unwrap();
    let o = run(&s, &["keep", "list"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let t = out(&o);
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(lines.len(), 2, "{t}");
    for col in ["RULE", "SINCE", "KEEPS", "REASON"] {
        assert!(lines[0].contains(col), "{t}");
    }
    assert!(
        lines[1].starts_with(&format!("{}  2026-12-01  ", r.id)),
        "{t}"
    );
    assert!(lines[1].ends_with("debugging"), "{t}");
    assert!(lines[1].contains("Logs of deleted sandboxes"), "{t}");
}

/// Keep rules for every kind, saved; their ids.
fn every_kind_kept(s: &Scratch) -> Vec<String> {
    let mut k = Keeps::empty();
    for kind in FindingKind::ALL {
        k.add(Rule::new(Target::Kind { kind: *kind }, "", 0));
    }
    k.save(&keep_file(s)).unwrap();
    k.rules.iter().map(|r| r.id.clone()).collect()
}

#[test]
fn keep_remove_takes_a_unique_prefix() {
    let s = Scratch::new();
    let ids = every_kind_kept(&s);
    // The shortest prefix of the first id that no other id starts with, of at least the four
    // characters a removal takes.
    let unique = (4..=ids[0].len())
        .map(|n| &ids[0][..n])
        .find(|p| ids.iter().filter(|i| i.starts_with(p)).count() == 1)
        .unwrap()
        .to_string();
    assert!(unique.len() < ids[0].len(), "ids this alike: {ids:?}");
    let o = run(&s, &["keep", "remove", &unique]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(out(&o).contains(&ids[0]), "{}", text(&o));
    let left: Vec<String> = Keeps::load(&keep_file(&s))
        .unwrap()
        .rules
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(left, ids[1..].to_vec());
}

#[test]
fn keep_remove_refuses_an_ambiguous_prefix_listing_the_candidates() {
    let s = Scratch::new();
    let ids = every_kind_kept(&s);
    // 66 ids of 16 possible first digits: some share one.
    let shared = ids
        .iter()
        .map(|i| &i[..1])
        .find(|p| ids.iter().filter(|i| i.starts_with(p)).count() > 1)
        .unwrap()
        .to_string();
    let o = run(&s, &["keep", "remove", &shared]);
    assert_eq!(code(&o), 1, "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(err.contains("ambiguous"), "{err}");
    for i in ids.iter().filter(|i| i.starts_with(&shared)) {
        assert!(err.contains(i.as_str()), "{i} not listed: {err}");
    }
    assert_eq!(Keeps::load(&keep_file(&s)).unwrap().rules.len(), ids.len());
}

// --------------------------------------------------------------------------------- history

/// Two runs: a prune of one orphan, then an apply of a plan for another; the two orphans.
fn two_runs() -> (Scratch, PathBuf, PathBuf) {
    let (s, dirs) = with_orphans(1);
    let o = run(&s, &["prune", "-y"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let sm = s.home.smolvm().unwrap();
    let late = sm.dangling_dir("vm-orphan-late").unwrap();
    age_tree(&s.home.root, OLD).unwrap();
    let o = run(&s, &["plan", "--out", "p.json"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let o = run(&s, &["apply", "p.json", "-y"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(!dirs[0].exists() && !late.exists());
    (s, dirs[0].clone(), late)
}

/// Every run id and plan id of `history --json`.
fn history_ids(v: &Value) -> Vec<String> {
    let runs = v["runs"].as_array().unwrap();
    ["run_id", "plan_id"]
        .iter()
        .flat_map(|k| runs.iter().map(|r| r[*k].as_str().unwrap().to_string()))
        .collect()
}

/// Journal a finished run of `plan_id` started at `at_ms` (no actions) in `s`'s journal.
fn journal_run(s: &Scratch, plan_id: &str, at_ms: u64) {
    use smolsweep::journal::{Journal, JournalEntry};
    let mut j = Journal::open(&s.data.join("journal.jsonl")).unwrap();
    j.append(&JournalEntry::PlanStarted {
        at_ms,
        plan_id: plan_id.into(),
        home: s.home.root.clone(),
        estimated_bytes: 0,
        actions: vec![],
        origin: None,
    })
    .unwrap();
    j.append(&JournalEntry::PlanFinished {
        at_ms: at_ms + 1,
        plan_id: plan_id.into(),
        done: 0,
        skipped: 0,
        failed: 0,
        estimated_bytes: 0,
        freed_bytes: 0,
        filesystems: vec![],
    })
    .unwrap();
}

/// `history RUN` searched run ids first, so a prefix of one run's run id and another run's plan
/// id silently picked the run (the fresh-clone failure of
/// `history_of_one_run_by_a_unique_prefix_lists_its_items`). Made here on purpose: the second
/// plan's id starts with the first run's run id.
#[test]
fn a_prefix_of_a_run_id_and_a_plan_id_is_ambiguous() {
    let s = Scratch::new();
    let first_plan = "1".repeat(64);
    let first_run = smolsweep::journal::run_id(&first_plan, 1_000);
    let fill = if first_run[6..].starts_with('0') {
        "f"
    } else {
        "0"
    };
    let second_plan = format!("{}{}", &first_run[..6], fill.repeat(58));
    journal_run(&s, &first_plan, 1_000);
    journal_run(&s, &second_plan, 2_000);
    let o = run(&s, &["history", &first_run[..6]]);
    assert_eq!(code(&o), 1, "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(err.contains("ambiguous"), "{err}");
    assert!(
        err.contains(&first_run[..12]),
        "the run is a candidate: {err}"
    );
    assert!(
        err.contains(&second_plan[..12]),
        "the plan is a candidate: {err}"
    );
    // One character more than the shared part names one of them, as it names it alone.
    let o = run(&s, &["history", &first_run]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let o = run(&s, &["history", &second_plan[..7]]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(out(&o).contains(&second_plan), "{}", text(&o));
}

#[test]
fn history_is_newest_first_one_line_per_run() {
    let (s, ..) = two_runs();
    let o = run(&s, &["history"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let t = out(&o);
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(lines.len(), 2, "one line per run, no items: {t}");
    assert!(lines[0].contains("apply (cli)"), "newest first: {t}");
    assert!(lines[1].contains("prune (cli)"), "{t}");
    for l in &lines {
        assert!(l.contains("1 done, 0 skipped, 0 failed"), "{t}");
        assert!(l.contains("freed "), "{t}");
    }
    // -n: the newest N, and how many older runs were left out.
    let o = run(&s, &["history", "-n", "1"]);
    let t = out(&o);
    assert_eq!(t.lines().count(), 2, "{t}");
    assert!(t.lines().next().unwrap().contains("apply (cli)"), "{t}");
    assert!(t.contains("1 older run not shown"), "{t}");
    let o = run(&s, &["history", "--json", "-n", "1"]);
    let v = json(&o);
    assert_eq!(v["runs"].as_array().unwrap().len(), 1, "{v}");
    assert_eq!(v["runs"][0]["origin"]["command"], "apply", "{v}");
    assert_eq!(v["older_runs_not_shown"], 1, "{v}");
}

#[test]
fn history_of_one_run_by_a_unique_prefix_lists_its_items() {
    let (s, first, late) = two_runs();
    let v = json(&run(&s, &["history", "--json"]));
    let prune = v["runs"][1]["plan_id"].as_str().unwrap().to_string();
    // Unique among every id `history RUN` searches: run ids and plan ids alike.
    let ids = history_ids(&v);
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    let o = run(&s, &["history", unique_prefix(&prune, &ids)]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let t = out(&o);
    assert!(t.lines().next().unwrap().contains("prune (cli)"), "{t}");
    assert!(t.contains(first.to_str().unwrap()), "the run's item: {t}");
    assert!(
        !t.contains(late.to_str().unwrap()),
        "another run's item: {t}"
    );
    let o = run(&s, &["history", "ffffffffffffffff0"]);
    assert_eq!(code(&o), 1, "{}", text(&o));
}

/// A journal of `runs` finished runs of `actions` actions each, written as the journal writes
/// its lines, run `n` started at `n` seconds and freeing `n` bytes; a crash's truncated line
/// follows the first run (line `actions + 3`).
fn big_journal(s: &Scratch, runs: u64, actions: usize) {
    use smolsweep::exec::{ActionRecord, Origin, Outcome};
    use smolsweep::journal::JournalEntry;
    use smolsweep::plan::{Action, PlannedAction};
    use std::io::Write;
    let action = |i: usize| Action::RemovePathBlock {
        file: s.home.root.join(format!(".profile-{i}")),
    };
    std::fs::create_dir_all(&s.data).unwrap();
    let f = std::fs::File::create(s.data.join("journal.jsonl")).unwrap();
    let mut w = std::io::BufWriter::new(f);
    let line = |w: &mut std::io::BufWriter<std::fs::File>, e: &JournalEntry| {
        serde_json::to_writer(&mut *w, e).unwrap();
        w.write_all(b"\n").unwrap();
    };
    for n in 1..=runs {
        let plan_id = format!("{n:064x}");
        line(
            &mut w,
            &JournalEntry::PlanStarted {
                at_ms: n * 1000,
                plan_id: plan_id.clone(),
                home: s.home.root.clone(),
                estimated_bytes: n,
                actions: (0..actions).map(|i| PlannedAction::of(action(i))).collect(),
                origin: Some(Origin::new("auto", &format!("run {n}"))),
            },
        );
        for i in 0..actions {
            let record = ActionRecord {
                index: i,
                summary: format!("edit {i}"),
                action: action(i),
                outcome: Outcome::done("edited"),
                freed_bytes: 0,
            };
            line(
                &mut w,
                &JournalEntry::Action {
                    at_ms: n * 1000 + 1,
                    plan_id: plan_id.clone(),
                    record: Box::new(record),
                },
            );
        }
        line(
            &mut w,
            &JournalEntry::PlanFinished {
                at_ms: n * 1000 + 2,
                plan_id,
                done: actions,
                skipped: 0,
                failed: 0,
                estimated_bytes: n,
                freed_bytes: n,
                filesystems: vec![],
            },
        );
        if n == 1 {
            w.write_all(b"{\"event\":\"action\",\"at\n").unwrap();
        }
    }
    w.flush().unwrap();
}

/// `history -n 1` parsed the whole journal (4–5 s and 706 MB for 300 MB); it now reads the
/// newest run from the end and counts the older ones. Here: the newest of 400 runs (many chunks
/// of the backward read) with its own counts, the 399 older ones counted, the damaged line
/// numbered.
#[test]
fn history_n_1_of_a_big_journal_is_the_newest_run_read_from_the_end() {
    let s = Scratch::new();
    big_journal(&s, 400, 40);
    let v = json(&run(&s, &["history", "-n", "1", "--json"]));
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "{v}");
    let newest = &runs[0];
    assert_eq!(newest["origin"]["command"], "run 400", "{newest}");
    let want_id = smolsweep::journal::run_id(&format!("{:064x}", 400), 400_000);
    assert_eq!(newest["run_id"], want_id.as_str(), "{newest}");
    assert_eq!(newest["done"], 40, "{newest}");
    assert_eq!(newest["freed_bytes"], 400, "{newest}");
    assert_eq!(newest["outcomes"].as_array().unwrap().len(), 40, "{newest}");
    assert_eq!(v["older_runs_not_shown"], 399, "{v}");
    assert_eq!(v["damaged_lines"], serde_json::json!([43]), "{v}");
    let t = out(&run(&s, &["history", "-n", "1"]));
    assert!(t.lines().next().unwrap().contains("run 400 (auto)"), "{t}");
    assert!(
        t.contains("40 done, 0 skipped, 0 failed  freed 400 B"),
        "{t}"
    );
    assert!(
        t.contains("399 older runs not shown; `smolsweep history -n 400` shows every run"),
        "{t}"
    );
}

/// A plan applied twice is two runs: each has its own id, and `history RUN` shows that run
/// alone (before, the id was the plan's and both runs were listed).
#[test]
fn a_plan_applied_twice_is_two_runs_with_two_ids() {
    let (s, ..) = two_runs();
    let o = run(&s, &["apply", "p.json", "-y"]);
    assert_eq!(code(&o), 1, "every item skipped: {}", text(&o));
    let v = json(&run(&s, &["history", "--json"]));
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3, "{v}");
    assert_eq!(runs[0]["plan_id"], runs[1]["plan_id"], "one plan: {v}");
    let (again, first) = (
        runs[0]["run_id"].as_str().unwrap(),
        runs[1]["run_id"].as_str().unwrap(),
    );
    assert_ne!(again, first, "two runs, two ids: {v}");
    let ids = history_ids(&v);
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    let o = run(&s, &["history", unique_prefix(again, &ids)]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let t = out(&o);
    let heads: Vec<&str> = t.lines().filter(|l| !l.starts_with(' ')).collect();
    assert_eq!(heads.len(), 1, "that run alone: {t}");
    assert!(heads[0].contains("0 done, 1 skipped"), "{t}");
    let listed = out(&run(&s, &["history"]));
    assert!(
        listed.contains(&again[..12]) && listed.contains(&first[..12]),
        "{listed}"
    );
}

#[test]
fn history_still_reads_a_journal_of_an_older_version() {
    let (s, _dirs) = with_orphans(1);
    let o = run(&s, &["prune", "-y"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    // Older versions wrote no origin and no file-system measures.
    let path = s.data.join("journal.jsonl");
    let old: Vec<String> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            let o = v.as_object_mut().unwrap();
            o.remove("origin");
            o.remove("filesystems");
            v.to_string()
        })
        .collect();
    std::fs::write(&path, old.join("\n") + "\n").unwrap();
    let o = run(&s, &["history"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let t = out(&o);
    assert_eq!(t.lines().count(), 1, "{t}");
    assert!(t.contains("(command not recorded)"), "{t}");
    assert!(t.contains("1 done"), "{t}");
}

// ------------------------------------------------------------------------------ conventions

#[test]
fn dry_run_has_short_n_everywhere() {
    let s = Scratch::new();
    for cmd in [
        "prune",
        "reap",
        "stop",
        "delete",
        "apply",
        "uninstall",
        "auto",
    ] {
        let t = out(&run(&s, &[cmd, "--help"]));
        assert!(t.contains("-n, --dry-run"), "{cmd}: {t}");
    }
    let (s, dirs) = with_orphans(1);
    let o = run(&s, &["prune", "-n"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(out(&o).contains("Dry run: nothing changed"), "{}", text(&o));
    assert!(dirs[0].exists());
}

#[test]
fn plan_out_dash_writes_stdout() {
    let (s, dirs) = with_orphans(1);
    let o = run(&s, &["plan", "--out", "-"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let v = json(&o);
    assert_eq!(v["schema"], "smolsweep.plan/1", "{v}");
    assert!(!s.dir().join("-").exists(), "a file named - was written");
    // What it wrote is a plan `apply` runs.
    std::fs::write(s.dir().join("p.json"), &o.stdout).unwrap();
    let o = run(&s, &["apply", "p.json", "-y"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(!dirs[0].exists());
}

#[test]
fn apply_with_every_item_skipped_exits_nonzero() {
    let (s, dirs) = with_orphans(2);
    let o = run(&s, &["plan", "--out", "p.json"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    for d in &dirs {
        std::fs::remove_dir_all(d).unwrap();
    }
    let o = run(&s, &["apply", "p.json", "-y"]);
    assert_eq!(code(&o), 1, "{}", text(&o));
    assert!(out(&o).contains("0 done, 2 skipped"), "{}", text(&o));
    let o = run(&s, &["apply", "p.json", "-y", "--json"]);
    assert_eq!(code(&o), 1, "{}", text(&o));
    let o = run(&s, &["apply", "p.json", "-n"]);
    assert_eq!(code(&o), 1, "{}", text(&o));
}

/// Issue 19: a dry run's "it would free about X" counts only what the dry run would do; an
/// item it skips (here: gone since the plan was written) is not in X.
#[test]
fn a_dry_run_does_not_count_what_it_skips() {
    let (s, dirs) = with_orphans(2);
    let o = run(&s, &["plan", "--out", "p.json"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let both = json(&run(&s, &["apply", "p.json", "-n", "--json"]))["estimated_bytes"].clone();
    std::fs::remove_dir_all(&dirs[0]).unwrap();
    let o = run(&s, &["plan", "--out", "q.json"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let plan: Value =
        serde_json::from_slice(&std::fs::read(s.dir().join("q.json")).unwrap()).unwrap();
    let one = plan["estimated_bytes"].as_u64().unwrap();
    assert!(one > 0 && Some(one) < both.as_u64(), "{one} of {both}");
    let v = json(&run(&s, &["apply", "p.json", "-n", "--json"]));
    assert_eq!(v["estimated_bytes"].as_u64(), Some(one), "{v}");
    let o = run(&s, &["apply", "p.json", "-n"]);
    let t = out(&o);
    assert!(
        t.contains(&format!("it would free about {}.", human_bytes(one))),
        "{t}"
    );
}

#[test]
fn json_is_one_style_for_every_command() {
    let (s, _dirs) = with_orphans(1);
    for args in [
        &["scan", "--json"][..],
        &["prune", "-n", "--json"][..],
        &["history", "--json"][..],
        &["keep", "list", "--json"][..],
        &["verify", "--json"][..],
    ] {
        let t = out(&run(&s, args));
        assert!(t.starts_with("{\n  \""), "{args:?} is not pretty JSON: {t}");
        assert!(t.ends_with("}\n"), "{args:?}: {t}");
    }
}

#[test]
fn scan_quiet_does_not_start_with_a_blank_line() {
    let (s, _dirs) = with_orphans(1);
    let o = run(&s, &["scan", "-q"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let t = out(&o);
    assert_eq!(t.lines().count(), 1, "{t:?}");
    assert!(t.starts_with("Reclaimable:"), "{t:?}");
}

// ------------------------------------------------------------------------ help, man, flags

/// The commands `smolsweep --help` lists (without `help`).
fn commands(s: &Scratch) -> Vec<String> {
    let t = out(&run(s, &["--help"]));
    t.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .filter(|c| c != "help")
        .collect()
}

#[test]
fn completions_and_man_are_listed_in_the_command_list() {
    let s = Scratch::new();
    let cmds = commands(&s);
    for c in [
        "scan",
        "prune",
        "history",
        "keep",
        "kinds",
        "completions",
        "man",
    ] {
        assert!(cmds.iter().any(|x| x == c), "{c} not listed: {cmds:?}");
    }
}

#[test]
fn every_command_help_has_examples() {
    let s = Scratch::new();
    let mut paths: Vec<Vec<String>> = commands(&s).into_iter().map(|c| vec![c]).collect();
    for sub in ["add", "list", "remove"] {
        paths.push(vec!["keep".into(), sub.into()]);
    }
    for p in paths {
        let mut args: Vec<&str> = p.iter().map(String::as_str).collect();
        args.push("--help");
        let o = run(&s, &args);
        assert_eq!(code(&o), 0, "{}", text(&o));
        let t = out(&o);
        let ex = t.split("Examples:\n").nth(1).unwrap_or("");
        let cmd = format!("smolsweep {}", p.join(" "));
        assert!(
            ex.lines().any(|l| l.trim_start().starts_with(&cmd)),
            "{cmd}: {t}"
        );
    }
}

#[test]
fn man_page_has_examples_files_environment_and_exit_status() {
    let s = Scratch::new();
    let man = out(&run(&s, &["man"]));
    let section = |name: &str| -> String {
        let start = man
            .find(&format!(".SH {name}\n"))
            .unwrap_or_else(|| panic!("no {name}: {man}"));
        let rest = &man[start + 4..];
        rest[..rest.find("\n.SH ").unwrap_or(rest.len())].to_string()
    };
    assert!(
        section("EXAMPLES").contains("smolsweep prune \\-n"),
        "{man}"
    );
    let files = section("FILES");
    for f in ["journal.jsonl", "keep.json", "auto\\-policy.json"] {
        assert!(files.contains(f), "{f}: {files}");
    }
    let env = section("ENVIRONMENT");
    for v in [
        "HOME",
        "SMOLSWEEP_DATA_DIR",
        "SMOLSWEEP_ACCEPT_NEWER",
        "CELESTO_DATA_DIR",
        "SMOLVM_DATA_DIR",
        "XDG_DATA_HOME",
        "NO_COLOR",
        "COLUMNS",
        "TZ",
    ] {
        assert!(env.contains(v), "{v}: {env}");
    }
    let exit = section("EXIT STATUS");
    for c in ["\\fB0\\fR", "\\fB1\\fR", "\\fB2\\fR", "skipped"] {
        assert!(exit.contains(c), "{c}: {exit}");
    }
    // Each command's page has its examples and the exit status too.
    let dir = s.dir().join("man1");
    let o = run(&s, &["man", "--out-dir", dir.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let page = std::fs::read_to_string(dir.join("smolsweep-history.1")).unwrap();
    assert!(page.contains(".SH EXAMPLES"), "{page}");
    assert!(page.contains(".SH EXIT STATUS"), "{page}");
}

#[test]
fn accept_newer_is_not_offered_by_man() {
    let s = Scratch::new();
    for cmd in ["man", "history", "completions", "kinds", "verify"] {
        let t = out(&run(&s, &[cmd, "--help"]));
        assert!(!t.contains("--accept-newer"), "{cmd} offers it: {t}");
    }
    let o = run(&s, &["man", "--accept-newer", "all"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    for cmd in ["scan", "prune", "plan", "apply", "uninstall"] {
        let t = out(&run(&s, &[cmd, "--help"]));
        assert!(t.contains("--accept-newer"), "{cmd} lacks it: {t}");
    }
    let t = out(&run(&s, &["keep", "add", "--help"]));
    assert!(t.contains("--accept-newer"), "{t}");
    // Before the command it is still taken.
    let o = run(&s, &["--accept-newer", "smolvm", "scan", "-q"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let o = run(&s, &["scan", "-q", "--accept-newer", "smolvm"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
}

#[test]
fn kind_help_lists_groups_and_kinds_prints_the_table() {
    let s = Scratch::new();
    let t = out(&run(&s, &["scan", "--help"]));
    assert!(!t.contains("possible values: celesto.orphan_disk"), "{t}");
    assert!(
        t.contains("celesto (nothing is lost): orphaned-disks,"),
        "{t}"
    );
    let kinds = run(&s, &["kinds"]);
    assert_eq!(code(&kinds), 0, "{}", text(&kinds));
    let table = out(&kinds);
    for k in FindingKind::ALL {
        assert!(
            table
                .lines()
                .any(|l| l.contains(k.as_str()) && l.contains(k.label())),
            "{k:?}: {table}"
        );
    }
    let o = run(&s, &["scan", "--kind", "help"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert_eq!(out(&o), table);
    // A short name (the label as the scan shows it) filters like the JSON id; one that is no
    // kind's is refused, and one both products share names both in a filter but not in a rule.
    let (s, _dirs) = with_orphans(1);
    let short = FindingKind::SmolvmDanglingDir.short();
    let by_short = json(&run(&s, &["scan", "--json", "--kind", short]));
    let by_id = json(&run(
        &s,
        &["scan", "--json", "--kind", "smolvm.dangling_dir"],
    ));
    assert_eq!(by_short["findings"], by_id["findings"]);
    assert_eq!(
        by_short["findings"].as_array().unwrap().len(),
        1,
        "{by_short}"
    );
    let o = run(&s, &["scan", "--kind", "mount_point"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    let o = run(&s, &["scan", "-q", "--kind", "mount-points"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let o = run(&s, &["keep", "add", "--kind", "mount-points"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
}

#[test]
fn scan_prometheus_and_json_together_exit_2() {
    let s = Scratch::new();
    for args in [
        &["scan", "--format", "prometheus", "--json"][..],
        &["scan", "--json", "--format", "human"][..],
    ] {
        let o = run(&s, args);
        assert_eq!(code(&o), 2, "{args:?}: {}", text(&o));
        assert!(o.stdout.is_empty(), "{}", text(&o));
    }
    let o = run(&s, &["scan", "--json", "--format", "json"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
}
