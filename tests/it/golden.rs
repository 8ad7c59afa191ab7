//! Golden tests of the human scan output (issue 10): the first screen a person reads (issue 19:
//! it fits 24 lines), at 80 and 120 columns, with and without colour, in a non-UTF-8 locale, and
//! the whole of it under `-v`, on the fixture HOME holding every edge case of both products. The expected text lives in `tests/golden/` and is
//! reviewed as text; `SMOLSWEEP_BLESS=1 cargo test --test it golden::` rewrites it after a change
//! someone has read.
//!
//! Only what varies between runs is normalised: the scratch directory and process ids.

use std::path::Path;
use std::process::Command;

use smolsweep_fixtures::{
    age_tree, celesto_edge_cases, smolvm_edge_cases, CelestoCase, Home, Layout, SmolvmCase,
};

pub(crate) fn scan_text(home: &Home, root: &Path, args: &[&str], env: &[(&str, &str)]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_smolsweep"))
        .args(args)
        .env_clear()
        .envs(home.env_vars())
        .env("PATH", "/usr/bin:/bin")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    normalise(&String::from_utf8(out.stdout).unwrap(), root)
}

/// The scratch root becomes `<T>`, every pid `<pid>`, and the count of other HOMEs' VM
/// processes goes: it is this machine's, not the fixture's (the suite runs on desktops with
/// SmolVM VMs of their own). It is a line of its own, counted apart from this HOME's running
/// VMs ("VM processes of other HOMEs: 2 (--all-homes lists them).").
fn normalise(text: &str, root: &Path) -> String {
    let text = text.replace(&root.display().to_string(), "<T>");
    let lines: Vec<&str> = text
        .split_inclusive('\n')
        .filter(|l| {
            let plain = l.replace("\x1b[1m", "").replace("\x1b[0m", "");
            !plain.contains("of other HOMEs: ") || !plain.contains("(--all-homes lists them)")
        })
        .collect();
    // A "VM processes" heading left with nothing under it was there only for that count: it
    // goes with the blank line that closed its section.
    let mut text = String::with_capacity(lines.len() * 40);
    let mut skip_blank = false;
    for (i, l) in lines.iter().enumerate() {
        let empty_next = lines.get(i + 1).is_none_or(|n| n.trim().is_empty());
        let plain = l.replace("\x1b[1m", "").replace("\x1b[0m", "");
        if plain.trim_end().ends_with("VM processes") && empty_next {
            skip_blank = true;
            continue;
        }
        if std::mem::take(&mut skip_blank) && l.trim().is_empty() {
            continue;
        }
        text.push_str(l);
    }
    // Finding ids hash the scratch path (`-v` prints them).
    let mut at = 0;
    while let Some(i) = text[at..].find("  id ").map(|i| at + i + 5) {
        let hex = text[i..]
            .chars()
            .take_while(|c| c.is_ascii_hexdigit())
            .count();
        if hex == 16 {
            text.replace_range(i..i + 16, "<id>");
        }
        at = i;
    }
    // "pid 123", in the reasons `-v` prints "(process 123)", and how long ago something young
    // changed ("changed 0 s ago": the clock moves between fixture and scan).
    // A line may break after the word (the layout is the same for every pid: it counts one as
    // seven digits).
    for word in ["pid ", "(process ", "changed ", "pid\n", "process\n"] {
        let mut out = String::with_capacity(text.len());
        let mut rest = text.as_str();
        while let Some(i) = rest.find(word) {
            let indent = match word.ends_with('\n') {
                true => {
                    rest[i + word.len()..].len()
                        - rest[i + word.len()..].trim_start_matches(' ').len()
                }
                false => 0,
            };
            out.push_str(&rest[..i + word.len() + indent]);
            rest = &rest[i + word.len() + indent..];
            let digits = rest.chars().take_while(|c| c.is_ascii_digit()).count();
            if digits > 0 {
                out.push_str(if word == "changed " { "<n>" } else { "<pid>" });
                rest = &rest[digits..];
            }
        }
        out.push_str(rest);
        text = out;
    }
    text
}

fn check(name: &str, got: &str) {
    smolsweep_fixtures::golden::check(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden"),
        name,
        got,
    )
}

fn width_of(line: &str) -> usize {
    // Colour sequences take no columns.
    let mut n = 0;
    let mut esc = false;
    for c in line.chars() {
        match (esc, c) {
            (false, '\x1b') => esc = true,
            (true, 'm') => esc = false,
            (true, _) => {}
            (false, _) => n += 1,
        }
    }
    n
}

/// The fixture HOME, with the cases that hold its locks and live processes while they live.
pub(crate) struct EdgeCases {
    pub(crate) home: Home,
    pub(crate) _cases: (CelestoCase, SmolvmCase),
    pub(crate) t: tempfile::TempDir,
}

pub(crate) fn edge_case_home() -> EdgeCases {
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Linux).unwrap();
    let cel = celesto_edge_cases(&home).unwrap();
    let smol = smolvm_edge_cases(&home).unwrap();
    EdgeCases {
        home,
        _cases: (cel, smol),
        t,
    }
}

/// Issue 19: the first screen of a typical HOME answers within one 80×24 terminal: the
/// total, what frees something, and the next step have not scrolled away.
#[test]
fn scan_first_screen_fits_80x24() {
    let EdgeCases { home, t, _cases } = edge_case_home();
    for env in [
        vec![("LANG", "C.UTF-8"), ("COLUMNS", "80")],
        vec![("LANG", "C"), ("COLUMNS", "80")],
        vec![("COLUMNS", "80"), ("CLICOLOR_FORCE", "1")],
    ] {
        let text = scan_text(&home, t.path(), &["scan"], &env);
        assert!(
            text.lines().count() <= 24,
            "{env:?}: {} lines:\n{text}",
            text.lines().count()
        );
        for l in text.lines() {
            assert!(width_of(l) <= 80, "{env:?}: {} columns: {l:?}", width_of(l));
        }
        let plain = text.replace("\x1b[1m", "").replace("\x1b[0m", "");
        for needed in [
            "Reclaimable:",
            "Sandboxes 9 (1 running): fire1",
            "Running VMs:",
            "Next:",
            "Orphaned disks",
        ] {
            assert!(plain.contains(needed), "{env:?}: no {needed:?}:\n{text}");
        }
        // Rows that free nothing are folded into one line that says they free nothing, and
        // nothing a total counts is in it (issue 31).
        assert!(!plain.contains("Unrecognised"), "{text}");
        assert!(plain.contains("Left alone: "), "{text}");
        assert!(!plain.contains("Nothing to free"), "{text}");
        for internal in ["smolvm.boot_vm", "celesto.qemu", "orphan_disk", "_dir"] {
            assert!(!plain.contains(internal), "internal id {internal}:\n{text}");
        }
    }
}

#[test]
fn human_scan_output_matches_the_reviewed_text() {
    let EdgeCases { home, t, _cases } = edge_case_home();
    let utf8 = ("LANG", "C.UTF-8");
    type Case<'a> = (&'a str, &'a [&'a str], Vec<(&'a str, &'a str)>, usize);
    let cases: [Case; 7] = [
        ("scan-80.txt", &["scan"], vec![utf8, ("COLUMNS", "80")], 80),
        (
            "scan-120.txt",
            &["scan"],
            vec![utf8, ("COLUMNS", "120")],
            120,
        ),
        (
            "scan-80-colour.txt",
            &["scan"],
            vec![utf8, ("COLUMNS", "80"), ("CLICOLOR_FORCE", "1")],
            80,
        ),
        (
            "scan-80-lang-c.txt",
            &["scan"],
            vec![("LANG", "C"), ("COLUMNS", "80")],
            80,
        ),
        (
            "scan-v-80.txt",
            &["scan", "-v"],
            vec![utf8, ("COLUMNS", "80")],
            80,
        ),
        (
            "scan-product-smolvm-80.txt",
            &["scan", "--product", "smolvm"],
            vec![utf8, ("COLUMNS", "80")],
            80,
        ),
        (
            "scan-older-than-80.txt",
            &["scan", "--older-than", "3650d"],
            vec![utf8, ("COLUMNS", "80")],
            80,
        ),
    ];
    for (name, args, env, width) in cases {
        let text = scan_text(&home, t.path(), args, &env);
        let verbose = args.contains(&"-v");
        // The first screen fits the terminal; under -v, the summary table does.
        let table: Vec<&str> = if verbose {
            text.lines()
                .skip_while(|l| !l.contains("WHAT"))
                .take_while(|l| !l.is_empty())
                .collect()
        } else {
            assert!(text.lines().count() <= 24, "{name}: {text}");
            text.lines().collect()
        };
        if verbose {
            assert!(table.len() > 40, "-v shows every kind: {text}");
        }
        for l in &table {
            assert!(
                width_of(l) <= width,
                "{name}: {} columns: {l:?}",
                width_of(l)
            );
        }
        if name.contains("lang-c") {
            assert!(text.is_ascii(), "{name}: LANG=C gets ASCII only");
        }
        assert_eq!(text.contains('\x1b'), name.contains("colour"), "{name}");
        for internal in [
            "orphan_disk",
            "young_dir",
            "fork_lock",
            "disk_companion",
            "[opt_in",
        ] {
            // -v names each kind's id beside its items, as `--kind` and the JSON take it.
            assert!(
                verbose || !text.contains(internal),
                "{name}: internal name {internal}"
            );
        }
        check(name, &text);
    }
    // NO_COLOR wins over everything.
    let plain = scan_text(
        &home,
        t.path(),
        &["scan"],
        &[utf8, ("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")],
    );
    assert!(!plain.contains('\x1b'));
}

/// Issue 18: the golden text is the fixture's, whatever else runs on the machine. A VM process
/// of another HOME (a stand-in this test spawns) changes nothing of it.
#[test]
fn golden_scan_is_unchanged_beside_another_homes_vm_process() {
    use smolsweep_fixtures::vmm::{boot_vm, fake_vmm_bin};
    let other = tempfile::tempdir().unwrap();
    let bin = fake_vmm_bin(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/fake_vmm.rs"),
        Path::new(env!("CARGO_TARGET_TMPDIR")),
    );
    let dir = other.path().join(".cache/smolvm/vms/0123456789abcdef");
    let _vm = boot_vm(&bin, other.path(), &dir);
    human_scan_output_matches_the_reviewed_text();
}

/// `smolsweep ARGS` on `home`, stdout then stderr, with its exit code, normalised like the scan
/// and with plan ids and what a run measured (it depends on the file system) replaced.
fn run_text(home: &Home, root: &Path, data: &Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_smolsweep"))
        .args(args)
        .env_clear()
        .envs(home.env_vars())
        .env("PATH", "/usr/bin:/bin")
        .env("LANG", "C.UTF-8")
        .env("COLUMNS", "80")
        .env("SMOLSWEEP_DATA_DIR", data)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    let mut text = normalise(&text, root);
    for (word, len) in [("Plan ", 12), ("plan ", 12)] {
        let mut at = 0;
        while let Some(i) = text[at..].find(word).map(|i| at + i + word.len()) {
            let hex = text[i..]
                .chars()
                .take_while(|c| c.is_ascii_hexdigit())
                .count();
            if hex == len {
                text.replace_range(i..i + len, "<plan>");
            }
            at = i;
        }
    }
    if let Some(i) = text.find("Freed ") {
        if let Some(j) = text[i..].find(" (measured") {
            text.replace_range(i + 6..i + j, "<measured>");
        }
    }
    format!(
        "$ smolsweep {} (exit {})\n{text}\n",
        args.join(" "),
        out.status.code().unwrap_or(-1)
    )
}

/// Issue 19: every dry run, and the closing lines of real runs, as a person reads them: the
/// plan line and the closing line name one estimate, a stop names no bytes, a refusal says why.
#[test]
fn dry_runs_and_closing_lines_match_the_reviewed_text() {
    let EdgeCases { home, t, _cases } = edge_case_home();
    let data = t.path().join("smolsweep-data");
    let mut text = String::new();
    // The items that are protected for being young stay young however slowly the commands run
    // (a loaded machine took over the two-minute age guard and made them reclaimable).
    let young: Vec<&Path> = [&_cases.0.manifest, &_cases.1.manifest]
        .into_iter()
        .flat_map(|m| &m.entries)
        .filter(|e| e.label.starts_with("young"))
        .map(|e| e.path.as_path())
        .collect();
    assert!(young.len() >= 2, "the young items of both products");
    for args in [
        &["prune", "--dry-run"][..],
        &["prune", "--dry-run", "--include-caches"],
        &["reap", "--dry-run"],
        &["stop", "celesto:fire1", "--dry-run"],
        &["stop", "smolvm:stopped1", "--dry-run"],
        &["delete", "smolvm:stopped1", "--dry-run"],
        &["delete", "celesto:stopped1", "--dry-run"],
        &["uninstall", "--dry-run"],
        &["prune", "-y", "--quiet"],
        &["prune", "--dry-run"],
    ] {
        for p in &young {
            age_tree(p, std::time::Duration::ZERO).unwrap();
        }
        text += &run_text(&home, t.path(), &data, args);
    }
    for l in text.lines() {
        assert!(!l.contains("about 0 B"), "a number that says nothing: {l}");
    }
    check("dry-runs.txt", &text);
}

/// Issue 31: every surface a person reads at a terminal of 80 and of 120 columns in `LANG=C`
/// (ASCII only, every line within the width): the first screen, `-v`, a filtered scan, `kinds`
/// and the `--help` of every command.
#[test]
fn every_surface_at_80_and_120_columns_in_lang_c() {
    let EdgeCases { home, t, _cases } = edge_case_home();
    let help = scan_text(&home, t.path(), &["--help"], &[]);
    let mut commands: Vec<Vec<&str>> = vec![vec![]];
    commands.extend(
        help.lines()
            .skip_while(|l| !l.starts_with("Commands:"))
            .skip(1)
            .take_while(|l| !l.is_empty())
            .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
            .filter_map(|l| l.split_whitespace().next())
            .filter(|c| *c != "help")
            .map(|c| vec![c]),
    );
    commands.extend([
        vec!["keep", "add"],
        vec!["keep", "list"],
        vec!["keep", "remove"],
    ]);
    assert!(commands.len() > 20, "{commands:?}");
    for w in ["80", "120"] {
        let env = [("LANG", "C"), ("COLUMNS", w)];
        let width: usize = w.parse().unwrap();
        let fits = |name: &str, text: &str| {
            assert!(text.is_ascii(), "{name}: LANG=C gets ASCII only");
            for l in text.lines() {
                assert!(
                    width_of(l) <= width,
                    "{name}: {} columns: {l:?}",
                    width_of(l)
                );
            }
        };
        for (name, args) in [
            (format!("scan-{w}-lang-c.txt"), &["scan"][..]),
            (format!("scan-v-{w}-lang-c.txt"), &["scan", "-v"]),
            (
                format!("scan-kind-{w}-lang-c.txt"),
                &["scan", "--kind", "orphaned-disks"],
            ),
            (format!("kinds-{w}-lang-c.txt"), &["kinds"]),
        ] {
            let text = scan_text(&home, t.path(), args, &env);
            fits(&name, &text);
            check(&name, &text);
        }
        let mut all = String::new();
        for c in &commands {
            let mut args = c.clone();
            args.push("--help");
            let text = scan_text(&home, t.path(), &args, &env);
            fits(&args.join(" "), &text);
            all += &format!("$ smolsweep {}\n{text}\n", args.join(" "));
        }
        check(&format!("help-{w}-lang-c.txt"), &all);
    }
}
