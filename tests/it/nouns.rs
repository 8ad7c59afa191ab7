//! Issue 31, item 4: one noun per object and one word per verdict, from the core's table
//! (`Product::noun`, `view::verdict_word`), on every surface. A Celesto sandbox was "computer"
//! in `scan -v`, "machine" in `why`'s "Delete 1 machine" and "sandbox" in `uninstall`; browse
//! said "Cache: only if you include caches" where the scan said "opt-in". This walks every
//! surface's output on the fixture HOME of both products and fails on a second noun for the
//! same object.

use serde_json::Value;
use smolsweep::model::{Product, ScanReport};

use crate::golden::{edge_case_home, EdgeCases};

fn run(c: &EdgeCases, args: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_smolsweep"))
        .args(args)
        .env_clear()
        .envs(c.home.env_vars())
        .env("PATH", "/usr/bin:/bin")
        .env("LANG", "C.UTF-8")
        .env("COLUMNS", "120")
        .env("SMOLSWEEP_DATA_DIR", c.t.path().join("data"))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Whether `line` has `word` as a whole word (the product name "smol-machines" is no noun).
fn has_word(line: &str, word: &str) -> bool {
    let line = line.replace("smol-machines", "");
    line.split(|c: char| !c.is_alphanumeric() && c != '-' && c != '_')
        .any(|w| w.eq_ignore_ascii_case(word))
}

/// Every string in a JSON value.
fn strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
        Value::Object(o) => o.values().for_each(|x| strings(x, out)),
        _ => {}
    }
}

#[test]
fn one_noun_per_object_on_every_surface() {
    let c = edge_case_home();
    let json: Value = serde_json::from_str(&run(&c, &["scan", "--json"])).unwrap();
    let report: ScanReport = serde_json::from_value(json.clone()).unwrap();
    // The JSON's noun is the core's, for every machine.
    for m in json["machines"].as_array().unwrap() {
        let p: Product = serde_json::from_value(m["product"].clone()).unwrap();
        assert_eq!(m["noun"], p.noun(), "{m}");
    }
    let names = |p: Product| -> Vec<String> {
        report
            .machines
            .iter()
            .filter(|m| m.product == p)
            .map(|m| m.name.clone())
            .collect()
    };
    let (cel, smol) = (names(Product::Celesto), names(Product::Smolvm));
    // Names only one product uses: a line naming one is about that object.
    let only = |mine: &[String], theirs: &[String]| -> Vec<String> {
        mine.iter()
            .filter(|n| !theirs.contains(n))
            .cloned()
            .collect()
    };
    let (cel_only, smol_only) = (only(&cel, &smol), only(&smol, &cel));
    assert!(
        cel_only.len() >= 3 && smol_only.len() >= 3,
        "{cel:?} {smol:?}"
    );
    let mut surfaces: Vec<(String, String)> = Vec::new();
    for args in [
        &["scan"][..],
        &["scan", "-v"],
        &["scan", "--product", "smolvm"],
        &["scan", "--product", "celesto"],
        &["uninstall", "-n"],
        &["prune", "-n"],
    ] {
        surfaces.push((args.join(" "), run(&c, args)));
    }
    for (p, list) in [("celesto", &cel_only), ("smolvm", &smol_only)] {
        for n in list.iter() {
            let target = format!("{p}:{n}");
            for args in [
                &["why", target.as_str()][..],
                &["delete", target.as_str(), "-n"],
                &["stop", target.as_str(), "-n"],
            ] {
                surfaces.push((args.join(" "), run(&c, args)));
            }
        }
    }
    // The tray's model, drawn by the shell: every string it carries.
    let tray = smolsweep::tray::TrayModel::from_report(&report, &Default::default());
    let mut texts = Vec::new();
    strings(&serde_json::to_value(&tray).unwrap(), &mut texts);
    surfaces.push(("tray".into(), texts.join("\n")));
    let mut texts = Vec::new();
    strings(
        &serde_json::to_value(smolsweep::view::ScanView::of(
            &report,
            &smolsweep::plan::Plan::reclaimable(&report),
        ))
        .unwrap(),
        &mut texts,
    );
    surfaces.push(("window's scan view".into(), texts.join("\n")));
    for (what, text) in &surfaces {
        for line in text.lines() {
            assert!(!has_word(line, "computer"), "{what}: {line}");
            let names_one = |list: &[String]| {
                list.iter()
                    .any(|n| has_word(line, n) || line.contains(&format!(":{n}")))
            };
            let (a_sandbox, a_machine) = (names_one(&cel_only), names_one(&smol_only));
            if a_sandbox && !a_machine {
                for w in ["machine", "machines"] {
                    assert!(!has_word(line, w), "{what}: a sandbox called {w}: {line}");
                }
            }
            if a_machine && !a_sandbox {
                for w in ["sandbox", "sandboxes"] {
                    assert!(!has_word(line, w), "{what}: a machine called {w}: {line}");
                }
            }
            // One word per verdict: the opt-in classes are "opt-in", never a second word.
            for other in [
                "only if you include caches",
                "Cache:",
                "Saved disk:",
                "Residue:",
            ] {
                assert!(!line.contains(other), "{what}: {line}");
            }
        }
    }
    // What deleting a sandbox says, in its one noun, on both surfaces that say it.
    let target = format!("celesto:{}", cel_only[0]);
    for args in [
        &["why", target.as_str()][..],
        &["delete", target.as_str(), "-n"],
    ] {
        let text = run(&c, args);
        assert!(text.contains("Delete 1 sandbox"), "{args:?}: {text}");
    }
}
