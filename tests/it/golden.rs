//! Golden tests of the human scan output (issue 10): the summary a person reads, at 80 and 120
//! columns, with and without colour, and in a non-UTF-8 locale, on the fixture HOME holding
//! every edge case of both products. The expected text lives in `tests/golden/` and is
//! reviewed as text; `SMOLSWEEP_BLESS=1 cargo test --test it golden::` rewrites it after a change
//! someone has read.
//!
//! Only what varies between runs is normalised: the scratch directory and process ids.

use std::path::Path;
use std::process::Command;

use smolsweep_fixtures::{celesto_edge_cases, smolvm_edge_cases, Home, Layout};

fn scan_text(home: &Home, root: &Path, args: &[&str], env: &[(&str, &str)]) -> String {
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
/// SmolVM VMs of their own).
fn normalise(text: &str, root: &Path) -> String {
    let text = text.replace(&root.display().to_string(), "<T>");
    let lines: Vec<&str> = text
        .split_inclusive('\n')
        .filter(|l| !l.contains("of other HOMEs (--all-homes lists them)"))
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
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(i) = rest.find("pid ") {
        out.push_str(&rest[..i + 4]);
        rest = &rest[i + 4..];
        let digits = rest.chars().take_while(|c| c.is_ascii_digit()).count();
        if digits > 0 {
            out.push_str("<pid>");
            rest = &rest[digits..];
        }
    }
    out.push_str(rest);
    out
}

fn check(name: &str, got: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("SMOLSWEEP_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (SMOLSWEEP_BLESS=1 writes it)", path.display()));
    if want != got {
        let first = want
            .lines()
            .zip(got.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(want.lines().count().min(got.lines().count()));
        panic!(
            "{name} differs from line {}:\n--- want\n{}\n--- got\n{}",
            first + 1,
            want.lines()
                .skip(first)
                .take(5)
                .collect::<Vec<_>>()
                .join("\n"),
            got.lines()
                .skip(first)
                .take(5)
                .collect::<Vec<_>>()
                .join("\n"),
        );
    }
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

#[test]
fn human_scan_output_matches_the_reviewed_text() {
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Linux).unwrap();
    let _cel = celesto_edge_cases(&home).unwrap();
    let _smol = smolvm_edge_cases(&home).unwrap();
    let utf8 = ("LANG", "C.UTF-8");
    type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, usize);
    let cases: [Case; 4] = [
        ("scan-80.txt", vec![utf8, ("COLUMNS", "80")], 80),
        ("scan-120.txt", vec![utf8, ("COLUMNS", "120")], 120),
        (
            "scan-80-colour.txt",
            vec![utf8, ("COLUMNS", "80"), ("CLICOLOR_FORCE", "1")],
            80,
        ),
        (
            "scan-80-lang-c.txt",
            vec![("LANG", "C"), ("COLUMNS", "80")],
            80,
        ),
    ];
    for (name, env, width) in cases {
        let text = scan_text(&home, t.path(), &["scan"], &env);
        // The summary table fits the terminal.
        let table: Vec<&str> = text
            .lines()
            .skip_while(|l| !l.contains("WHAT"))
            .take_while(|l| !l.is_empty())
            .collect();
        assert!(table.len() > 10, "{name}: {text}");
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
            assert!(!text.contains(internal), "{name}: internal name {internal}");
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
