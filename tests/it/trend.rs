//! Issue 21, space over time: `smolsweep auto` (the timer's run) records a point of its scan in
//! the history beside the journal, `smolsweep trend [--json]` prints it with the freed bytes of
//! the journal's runs, a damaged history starts afresh with a notice, and a point's numbers
//! are the ones the scan's view shows per product.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde_json::{json, Value};
use smolsweep::env::EnvSnapshot;
use smolsweep::model::{Platform, Product};
use smolsweep::scan::{scan, ScanOptions};
use smolsweep::trend::{self, Point};
use smolsweep::view::ScanView;
use smolsweep::Filter;
use smolsweep_fixtures::smolvm::DiskSet;
use smolsweep_fixtures::{age_tree, Scratch};

fn run(s: &Scratch, args: &[&str]) -> (i32, String, String) {
    let out = s
        .command(Path::new(env!("CARGO_BIN_EXE_smolsweep")), args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn trend_json(s: &Scratch) -> Value {
    let (code, out, err) = run(s, &["trend", "--json"]);
    assert_eq!(code, 0, "{out}{err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// Old leftovers of both products: a Celesto orphan disk and log, a stopped sandbox with its
/// disk, a smolvm machine and a dangling machine directory.
fn seed(s: &Scratch) {
    let c = s.home.celesto_data_dir().unwrap();
    c.disk("gone1", "qcow2", 300_000, 262_144).unwrap();
    c.log("gone1", 9_000).unwrap();
    c.row("c1", "stopped", "qemu", None).unwrap();
    c.disk("c1", "qcow2", 200_000, 131_072).unwrap();
    let sm = s.home.smolvm().unwrap();
    sm.machine_dir(
        "m1",
        DiskSet::Raw {
            storage: 1 << 20,
            overlay: 1 << 18,
        },
    )
    .unwrap();
    sm.record("m1", json!({"state": "stopped"})).unwrap();
    sm.dangling_dir("vm-gone").unwrap();
    // Older than the default policy's age.
    age_tree(s.dir(), Duration::from_secs(9 * 86_400)).unwrap();
}

fn policy(s: &Scratch) -> PathBuf {
    let path = s.home.root.join(".config/smolsweep/auto-policy.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let p = json!({"schema": "smolsweep.policy/1", "enabled": true});
    std::fs::write(&path, p.to_string()).unwrap();
    path
}

#[test]
fn without_a_history_trend_says_so() {
    let s = Scratch::new();
    let (code, out, _) = run(&s, &["trend"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("No space history yet"), "{out}");
    let v = trend_json(&s);
    assert_eq!(v["schema"], "smolsweep.trend-view/1");
    assert_eq!(v["sentence"], Value::Null);
    assert_eq!(v["notice"], Value::Null);
    assert!(!s.data.join(trend::TREND_FILE).exists(), "trend only reads");
}

#[test]
fn the_timers_auto_records_a_point_and_trend_prints_it_with_what_the_run_freed() {
    let s = Scratch::new();
    seed(&s);
    let p = policy(&s);
    let (code, out, err) = run(&s, &["auto", "--policy", p.to_str().unwrap(), "-n"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        !s.data.join(trend::TREND_FILE).exists(),
        "a dry run records nothing"
    );

    let (code, out, err) = run(&s, &["auto", "--policy", p.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    let run_json: Value = serde_json::from_str(&out).unwrap();
    let freed = run_json["freed_bytes"].as_u64().expect(&out);
    assert!(freed > 0, "{run_json:#}");

    let v = trend_json(&s);
    let celesto = &v["products"][0];
    assert_eq!(celesto["product"], "celesto");
    assert_eq!(celesto["rows"].as_array().unwrap().len(), 1);
    assert!(celesto["rows"][0]["totals"]["on_disk"].as_u64().unwrap() > 262_144);
    assert_eq!(v["products"][1]["product"], "smolvm");
    let sentence = v["sentence"].as_str().unwrap();
    assert!(
        sentence.starts_with("SmolVM uses ")
            && sentence.ends_with("its history starts with this scan"),
        "{sentence}"
    );
    assert_eq!(v["freed"][0]["freed_bytes"].as_u64(), Some(freed), "{v:#}");

    let (code, text, _) = run(&s, &["trend"]);
    assert_eq!(code, 0);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], format!("{sentence}."));
    assert!(text.contains("\nCelesto SmolVM\nTime "), "{text}");
    assert!(
        text.contains("On disk  Reclaimable  Opt-in  Protected  Held by orphaned VMs"),
        "{text}"
    );
    assert!(text.contains("\nReclaimed\n"), "{text}");

    // A second run in the same hour replaces the point of that hour.
    let (code, out, err) = run(&s, &["auto", "--policy", p.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    let v = trend_json(&s);
    assert!(v["products"][0]["rows"].as_array().unwrap().len() <= 2);
}

#[test]
fn a_damaged_history_starts_afresh_with_a_notice_and_the_journal_stays() {
    let s = Scratch::new();
    seed(&s);
    let p = policy(&s);
    std::fs::create_dir_all(&s.data).unwrap();
    let file = s.data.join(trend::TREND_FILE);
    std::fs::write(&file, b"{\"schema\": \"smolsweep.trend/1\", \"points\": [{").unwrap();
    let journal = s.data.join("journal.jsonl");
    std::fs::write(&journal, b"{\"event\": \"damaged\"}\n").unwrap();

    let (code, out, err) = run(&s, &["trend"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.contains("could not be read") && err.contains("starts afresh"),
        "{err}"
    );
    assert_eq!(
        trend_json(&s)["notice"]
            .as_str()
            .map(|n| n.contains("starts afresh")),
        Some(true)
    );

    let (code, out, err) = run(&s, &["auto", "--policy", p.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(err.contains("starts afresh"), "{err}");
    let v = trend_json(&s);
    assert_eq!(v["notice"], Value::Null, "written afresh: {v:#}");
    assert_eq!(v["products"][0]["rows"].as_array().unwrap().len(), 1);
    let j = std::fs::read_to_string(&journal).unwrap();
    assert!(
        j.starts_with("{\"event\": \"damaged\"}\n"),
        "the journal is never rewritten: {j}"
    );
}

#[test]
fn a_named_pipe_in_the_historys_place_neither_hangs_trend_nor_auto() {
    let s = Scratch::new();
    seed(&s);
    let p = policy(&s);
    std::fs::create_dir_all(&s.data).unwrap();
    let file = s.data.join(trend::TREND_FILE);
    let c = std::ffi::CString::new(file.as_os_str().as_encoded_bytes()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let (code, _, err) = run(&s, &["trend"]);
    assert_eq!(code, 0);
    assert!(err.contains("a named pipe"), "{err}");
    let (code, out, err) = run(&s, &["auto", "--policy", p.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        std::fs::symlink_metadata(&file).unwrap().is_file(),
        "replaced by a history"
    );
}

#[test]
fn a_points_numbers_are_the_scan_views_per_product() {
    let s = Scratch::new();
    seed(&s);
    let mut vars = s.home.env_vars();
    vars.push(("PATH".into(), "/usr/bin:/bin".into()));
    let mut env = EnvSnapshot::from_pairs(&s.home.root, vars);
    env.euid = rustix::process::geteuid().as_raw();
    let now = SystemTime::now();
    let r = scan(&ScanOptions {
        env,
        platform: Platform::Linux,
        age_guard: Duration::from_secs(120),
        now,
    });
    let point = Point::of(&r);
    assert_eq!(point.at, r.scanned_at);
    let whole = ScanView::of(&r, &smolsweep::plan::Plan::reclaimable(&r)).totals;
    let sum = |f: fn(&trend::ProductTotals) -> u64| point.products.values().map(f).sum::<u64>();
    assert_eq!(sum(|t| t.reclaimable), whole.reclaimable_bytes);
    assert_eq!(sum(|t| t.opt_in), whole.opt_in_bytes);
    assert_eq!(
        point.on_disk(),
        r.findings.iter().map(|f| f.allocated_bytes).sum::<u64>()
    );
    for product in [Product::Celesto, Product::Smolvm] {
        let filter = Filter {
            products: vec![product],
            ..Default::default()
        };
        let shown =
            ScanView::filtered(&r, &smolsweep::plan::Plan::reclaimable_of(&r, &filter, now)).totals;
        let t = &point.products[&product];
        assert_eq!(t.reclaimable, shown.reclaimable_bytes, "{product:?}");
        assert_eq!(t.opt_in, shown.opt_in_bytes, "{product:?}");
        assert!(t.on_disk > 0, "{product:?}");
    }
}

/// People without the app (issue 31, item 8): a plain `scan` records nothing, `scan --record`
/// adds one point, and the empty history's sentence says so.
#[test]
fn scan_record_adds_a_point_and_a_plain_scan_does_not() {
    let s = Scratch::new();
    seed(&s);
    let (_, out, _) = run(&s, &["trend"]);
    assert!(out.contains("`smolsweep scan --record`"), "{out}");
    let (code, _, err) = run(&s, &["scan", "-q"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        !s.data.join(trend::TREND_FILE).exists(),
        "a plain scan records nothing"
    );
    let (code, _, err) = run(&s, &["scan", "-q", "--record"]);
    assert_eq!(code, 0, "{err}");
    let v = trend_json(&s);
    assert!(v["sentence"].is_string(), "{v:#}");
    let rows: usize = v["products"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["rows"].as_array().map_or(0, Vec::len))
        .max()
        .unwrap_or(0);
    assert_eq!(rows, 1, "one scan, one point: {v:#}");
}
