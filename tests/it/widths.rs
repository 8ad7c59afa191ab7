//! Issue 31, item 6: everything a command prints at a terminal fits its width (wrapped, or a
//! path shortened from the middle); a pipe keeps whole lines. `scan -v` had 95 lines over 80
//! columns, `kinds` 65 of 68 (up to 149), `--help` 12.

use std::process::Command;

use crate::golden::{edge_case_home, EdgeCases};

fn run(c: &EdgeCases, args: &[&str], env: &[(&str, &str)]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_smolsweep"))
        .args(args)
        .env_clear()
        .envs(c.home.env_vars())
        .env("PATH", "/usr/bin:/bin")
        .env("SMOLSWEEP_DATA_DIR", c.t.path().join("data"))
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Every subcommand `smolsweep --help` lists.
fn commands(c: &EdgeCases) -> Vec<String> {
    run(c, &["--help"], &[])
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|c| c != "help")
        .collect()
}

#[test]
fn everything_printed_at_a_terminal_fits_its_width() {
    let c = edge_case_home();
    let json: serde_json::Value = serde_json::from_str(&run(&c, &["scan", "--json"], &[])).unwrap();
    let finding = &json["findings"][0];
    let id = finding["id"].as_str().unwrap().to_string();
    let path = finding["path"].as_str().unwrap().to_string();
    let mut cases: Vec<Vec<String>> = [
        &["scan"][..],
        &["scan", "-v"],
        &["scan", "--kind", "orphaned-disks"],
        &["kinds"],
        &["--help"],
        &["prune", "-n"],
        &["uninstall", "-n"],
        &["why", "celesto:fire1"],
        &["why", "smolvm:web"],
        &["why", &id],
        &["why", &path],
    ]
    .iter()
    .map(|a| a.iter().map(|s| s.to_string()).collect())
    .collect();
    let commands = commands(&c);
    assert!(commands.len() > 15, "{commands:?}");
    for cmd in &commands {
        cases.push(vec![cmd.clone(), "--help".into()]);
        cases.push(vec![cmd.clone(), "-h".into()]);
    }
    for sub in ["add", "list", "remove"] {
        cases.push(vec!["keep".into(), sub.into(), "--help".into()]);
    }
    for cols in ["80", "120"] {
        let w: usize = cols.parse().unwrap();
        for lang in ["C", "C.UTF-8"] {
            for args in &cases {
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let text = run(&c, &args, &[("COLUMNS", cols), ("LANG", lang)]);
                assert!(!text.is_empty(), "{args:?}");
                for l in text.lines() {
                    assert!(
                        l.chars().count() <= w,
                        "{args:?} at {cols} columns, LANG={lang}: {} columns:\n{l}",
                        l.chars().count()
                    );
                }
            }
        }
    }
    // A pipe without COLUMNS keeps whole lines: every path whole, the kinds table one row each.
    let piped = run(&c, &["scan", "-v"], &[("LANG", "C.UTF-8")]);
    for f in json["findings"].as_array().unwrap() {
        let p = f["path"].as_str().unwrap();
        assert!(piped.contains(p), "{p} is not whole in a pipe");
    }
    let kinds = run(&c, &["kinds"], &[]);
    assert!(
        kinds
            .lines()
            .any(|l| l.starts_with("orphaned-disks") && l.contains("celesto.orphan_disk")),
        "{kinds}"
    );
}
