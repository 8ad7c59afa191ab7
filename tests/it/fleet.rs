//! What fleets get beside the textfile export (issue 32): the Prometheus alerting rules of
//! `packaging/prometheus/`, checked and unit-tested by `promtool`, and the Grafana dashboard of
//! `packaging/grafana/`; every metric either of them queries is one the export writes.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use smolsweep_fixtures::Scratch;

fn packaging(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("packaging")
        .join(rel)
}

fn promtool(args: &[&str]) -> String {
    let out = Command::new("promtool")
        .args(args)
        .output()
        .expect("promtool (Debian prometheus) is installed by scripts/setup/60-promtool.sh");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "promtool {args:?}:\n{text}");
    text
}

/// Every `smolsweep_…` metric name in `text`.
fn metric_names(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find("smolsweep_") {
        let tail = &rest[i..];
        let end = tail
            .find(|c: char| !(c.is_ascii_lowercase() || c == '_'))
            .unwrap_or(tail.len());
        out.insert(tail[..end].to_string());
        rest = &tail[end..];
    }
    out
}

/// The metric names `smolsweep scan --format prometheus` writes (its `# TYPE` lines).
fn exported() -> BTreeSet<String> {
    let s = Scratch::new();
    let out = s
        .command(
            env!("CARGO_BIN_EXE_smolsweep"),
            &["scan", "--format", "prometheus"],
        )
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .map(|l| l.split(' ').next().unwrap().to_string())
        .collect()
}

#[test]
fn alerting_rules_pass_promtool_check_and_their_unit_tests() {
    let rules = packaging("prometheus/smolsweep.rules.yml");
    let tests = packaging("prometheus/smolsweep.rules.test.yml");
    let checked = promtool(&["check", "rules", rules.to_str().unwrap()]);
    assert!(checked.contains("SUCCESS: 6 rules found"), "{checked}");
    promtool(&["test", "rules", tests.to_str().unwrap()]);
    // Every alert has a unit test that names it.
    let r = std::fs::read_to_string(&rules).unwrap();
    let t = std::fs::read_to_string(&tests).unwrap();
    for line in r.lines().filter_map(|l| l.trim().strip_prefix("- alert: ")) {
        assert!(
            t.contains(&format!("alertname: {line}\n")),
            "{line} has no test"
        );
    }
}

#[test]
fn rules_and_dashboard_query_only_metrics_the_export_writes() {
    let exported = exported();
    let rules = std::fs::read_to_string(packaging("prometheus/smolsweep.rules.yml")).unwrap();
    let exprs: String = rules
        .lines()
        .filter(|l| l.trim_start().starts_with("expr:"))
        .collect::<Vec<_>>()
        .join("\n");
    let in_rules = metric_names(&exprs);
    assert!(in_rules.len() >= 6, "{in_rules:?}");
    let dash: Value = serde_json::from_str(
        &std::fs::read_to_string(packaging("grafana/smolsweep.json")).unwrap(),
    )
    .expect("the dashboard is JSON");
    let mut queries = String::new();
    let mut ids = BTreeSet::new();
    for p in dash["panels"].as_array().unwrap() {
        assert!(ids.insert(p["id"].as_u64().unwrap()), "panel ids repeat");
        let targets = p["targets"].as_array().unwrap();
        assert!(!targets.is_empty(), "{p:#}");
        for t in targets {
            queries.push_str(t["expr"].as_str().unwrap());
            queries.push('\n');
        }
    }
    for v in dash["templating"]["list"].as_array().unwrap() {
        queries.push_str(v["query"]["query"].as_str().unwrap());
        queries.push('\n');
    }
    let in_dash = metric_names(&queries);
    for name in in_rules.iter().chain(&in_dash) {
        assert!(
            exported.contains(name),
            "{name} is queried but not exported ({exported:?})"
        );
    }
    // The dashboard shows every figure the alerts are about.
    for name in &in_rules {
        assert!(in_dash.contains(name), "{name} is alerted on but not shown");
    }
}
