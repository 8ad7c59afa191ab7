//! The house's rules that the compiler does not check, read from the library's own sources.
//!
//! `view` (src/view.rs and src/view/) words facts and plans: functions from a scan, a plan, a
//! journal's runs or an executor's report to rows, labels and sentences. It reads nothing of the
//! system and plans nothing; what it words is gathered and planned in the rooms that own it (the
//! scan, `procs`, `size`, `journal`, `trend`, the planner, `why`), and a surface asks them first.

use std::path::{Path, PathBuf};

/// What the view may not call, and the room that does it instead.
const IO_OR_PLANNING: &[(&str, &str)] = &[
    (
        "std::fs",
        "files are read by fsread, journal, trend, keep and size",
    ),
    (
        "fs::",
        "files are read by fsread, journal, trend, keep and size",
    ),
    (
        "File::",
        "files are read by fsread, journal, trend, keep and size",
    ),
    (
        "OpenOptions",
        "files are read by fsread, journal, trend, keep and size",
    ),
    ("read_dir", "directories are listed by fsread and size"),
    ("read_link", "links are read by fsread"),
    ("metadata(", "files are looked at by fsread and size"),
    ("canonicalize", "paths are resolved by fsread and roots"),
    ("lstat", "files are looked at by fsread and size"),
    ("statvfs", "free space is read by size::space_of"),
    (".exists()", "files are looked at by fsread and size"),
    (".is_file()", "files are looked at by fsread and size"),
    (".is_dir()", "files are looked at by fsread and size"),
    ("/proc", "the process table is read by procs"),
    ("procs::", "the process table is read by procs"),
    ("list_processes", "the process table is read by procs"),
    ("process::id", "the process table is read by procs"),
    ("Command::new", "commands are run by exec"),
    ("std::process", "commands are run by exec"),
    ("std::env", "the environment is captured once by env"),
    ("env::var", "the environment is captured once by env"),
    (
        "EnvSnapshot::capture",
        "the environment is captured once by env",
    ),
    (
        "SystemTime::now",
        "a surface reads the clock and passes the time",
    ),
    (
        "Instant::now",
        "a surface reads the clock and passes the time",
    ),
    ("now_secs", "a surface reads the clock and passes the time"),
    ("journal::read", "the journal is read by journal"),
    ("read_newest", "the journal is read by journal"),
    ("journal::stamp", "the journal is looked at by journal"),
    ("trend::load", "the space history is read by trend"),
    ("Keeps::load", "keep rules are read by keep"),
    ("qcow2::", "disk headers are read by qcow2"),
    ("roots::state_dir", "the products' roots are found by roots"),
    ("scan::scan", "a scan is made by scan"),
    ("scan_with", "a scan is made by scan"),
    ("from_scan", "plans are made by the planner (plan)"),
    ("Planner", "plans are made by the planner (plan)"),
    ("planner::", "plans are made by the planner (plan)"),
    ("Plan::of_ids", "plans are made by the planner (plan)"),
    ("Plan::reclaimable", "plans are made by the planner (plan)"),
    (
        "plan_for(",
        "plans are made by the planner (target::plan_for)",
    ),
    (
        "compact_plan(",
        "plans are made by the planner (compact::compact_plan)",
    ),
    ("branch_descendants", "plans are made by the planner (plan)"),
    ("WhyFacts", "why's evidence is gathered by why"),
    ("libc::", "the system is asked by the rooms that own it"),
    (
        "SystemZone",
        "the local zone is read by env::SystemZone and given to the view",
    ),
];

/// The view's source files, under the crate's root.
fn view_sources(root: &Path) -> Vec<PathBuf> {
    let mut out = vec![root.join("src/view.rs")];
    let mut dirs = vec![root.join("src/view")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// A file's production code: its lines without comments and without its `#[cfg(test)]`
/// modules (from the attribute to the module's closing brace at the start of a line).
fn production(code: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut in_tests = false;
    for (i, line) in code.lines().enumerate() {
        if in_tests {
            in_tests = line != "}";
            continue;
        }
        if line.trim_start().starts_with("#[cfg(test)]") {
            in_tests = true;
            continue;
        }
        if !line.trim_start().starts_with("//") {
            out.push((i + 1, line));
        }
    }
    out
}

/// Every line of `code` (named `name`) that does I/O or planning, with the room that owns it.
fn offences(name: &str, code: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (n, line) in production(code) {
        for (what, owner) in IO_OR_PLANNING {
            if line.contains(what) {
                out.push(format!("{name}:{n}: `{what}` ({owner}): {}", line.trim()));
            }
        }
    }
    out
}

/// Hazard (issue 41, item 1): `view` planned (the window's and the tray's plans, the Running
/// VMs' Stop / Delete, the compaction, the scan view's totals), read the system (`why` the
/// process table and /proc, History the journal, the low-space alert statvfs, the uninstall's
/// fix a path's type) and the clock, while the house puts it under the rooms that do. No file of
/// it may read a file, the process table, the environment, the clock or the journal, run a
/// command, or ask the planner: it words what those rooms give it.
#[test]
fn the_view_does_no_io_and_no_planning() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = view_sources(root);
    let names: Vec<String> = files
        .iter()
        .map(|p| p.strip_prefix(root).unwrap().display().to_string())
        .collect();
    for must in ["src/view.rs", "src/view/runs.rs", "src/view/why/mod.rs"] {
        assert!(
            names.iter().any(|n| n == must),
            "{must} not read: {names:?}"
        );
    }
    let mut found = Vec::new();
    for (p, name) in files.iter().zip(&names) {
        found.extend(offences(name, &std::fs::read_to_string(p).unwrap()));
    }
    assert!(
        found.is_empty(),
        "I/O or planning in view:\n{}",
        found.join("\n")
    );
}

/// The check above finds what it looks for: a plan, a file read and the clock in production
/// code, and nothing in comments or in a test module.
#[test]
fn the_views_check_finds_io_and_planning_and_skips_comments_and_tests() {
    let code = "use x;\n\
                // Plan::from_scan(r, &s) in a comment\n\
                pub fn f(r: &ScanReport) -> Plan {\n    Plan::from_scan(r, &Selection::reclaimable())\n}\n\
                pub fn g(p: &Path) -> bool {\n    std::fs::metadata(p).is_ok()\n}\n\
                pub fn h() -> u64 {\n    crate::basics::now_secs()\n}\n\
                #[cfg(test)]\nmod tests {\n    fn t() { std::fs::write(\"x\", b\"\").unwrap(); }\n}\n\
                fn after() -> bool { Path::new(\"/proc/1\").exists() }\n";
    let found = offences("src/view/x.rs", code);
    let lines: Vec<&str> = found
        .iter()
        .map(|f| f.split(": `").next().unwrap())
        .collect();
    assert_eq!(
        lines,
        [
            "src/view/x.rs:4",
            "src/view/x.rs:7",
            "src/view/x.rs:7",
            "src/view/x.rs:7",
            "src/view/x.rs:10",
            "src/view/x.rs:16",
            "src/view/x.rs:16",
        ],
        "{found:#?}"
    );
    // The local zone too: the view is given one (issue 41's last exception, gone).
    assert_eq!(
        offences("src/view/localtime.rs", "libc::localtime_r(&t, &mut tm)").len(),
        1
    );
    assert_eq!(
        offences(
            "src/view/trend.rs",
            "time_text(at, &crate::env::SystemZone)"
        )
        .len(),
        1
    );
    assert_eq!(offences("src/view/x.rs", "libc::getpid()").len(), 1);
}
