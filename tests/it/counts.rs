//! Issue 31, item 1: every item a total counts is in a line of the same screen. A person adds
//! up the lines above "Reclaimable: 1.3 MB in 11 items" and gets 11; a kind whose items are 0
//! bytes is such a line, never folded under "nothing to free"; a folded line counts reclaimable
//! and opt-in items apart. Checked on the fixture HOME of both products for the first screen,
//! `-v`, a filtered scan and `prune -n`, by reading the text a person reads.

use crate::golden::{edge_case_home, scan_text, EdgeCases};

/// What the totals line says: reclaimable items, reclaimable machines, opt-in items.
fn totals(text: &str) -> (usize, usize, usize) {
    let l = text
        .lines()
        .find(|l| l.starts_with("Reclaimable:"))
        .unwrap_or_else(|| panic!("no totals line:\n{text}"));
    let (rec, opt) = l.split_once("; opt-in:").unwrap();
    let rec = rec.split_once(" in ").unwrap().1;
    let items = number_before(rec, " item").unwrap();
    let machines = number_before(rec, " machine").unwrap_or(0);
    let opt = number_before(opt.split_once(" in ").unwrap().1, " item").unwrap();
    (items, machines, opt)
}

/// The number just before the first `word` in `s`.
fn number_before(s: &str, word: &str) -> Option<usize> {
    let at = s.find(word)?;
    let digits: String = s[..at]
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.chars().rev().collect::<String>().parse().ok()
}

/// The table's lines: (ITEMS, VERDICT) of each, read from the right (labels have spaces).
fn table(text: &str) -> Vec<(usize, String)> {
    text.lines()
        .skip_while(|l| !l.starts_with("WHAT"))
        .skip(1)
        .take_while(|l| !l.is_empty() && !l.starts_with('…') && !l.starts_with("Left alone"))
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let n = w.len();
            (w[n - 4].parse().unwrap(), w[n - 1].to_string())
        })
        .collect()
}

/// The folded line ("… 3 more lines: 1 kB reclaimable (4 items), 2 kB opt-in (1 item)."),
/// wrapped or not: its reclaimable and opt-in counts.
fn folded(text: &str) -> (usize, usize) {
    let Some(at) = text.find("… ") else {
        return (0, 0);
    };
    let line: String = text[at..]
        .split_inclusive('\n')
        .take_while(|l| !l.starts_with("Left alone") && !l.trim().is_empty())
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let count = |what: &str| {
        line.find(what)
            .and_then(|i| number_before(&line[i..], " item"))
            .unwrap_or(0)
    };
    (count("reclaimable ("), count("opt-in ("))
}

fn sum(lines: &[(usize, String)], verdict: &str) -> usize {
    lines
        .iter()
        .filter(|(_, v)| v == verdict)
        .map(|(n, _)| n)
        .sum()
}

fn first_screen_counts_match(text: &str, what: &str) -> (usize, usize, usize) {
    let (items, machines, opt) = totals(text);
    let lines = table(text);
    let (more_rec, more_opt) = folded(text);
    assert_eq!(
        sum(&lines, "reclaimable") + more_rec,
        items + machines,
        "{what}: reclaimable lines and the total disagree:\n{text}"
    );
    assert_eq!(
        sum(&lines, "opt-in") + more_opt,
        opt,
        "{what}: opt-in lines and the total disagree:\n{text}"
    );
    // "Nothing to free" is said only where nothing is counted.
    assert!(
        !(text.contains("Nothing to free") && items + machines + opt > 0),
        "{what}:\n{text}"
    );
    (items, machines, opt)
}

#[test]
fn every_count_on_a_screen_equals_the_rows_it_counts() {
    let EdgeCases { home, t, _cases } = edge_case_home();
    let env = [("LANG", "C.UTF-8"), ("COLUMNS", "80")];
    let first = scan_text(&home, t.path(), &["scan"], &env);
    let (items, machines, opt) = first_screen_counts_match(&first, "first screen");
    assert!(items > 0 && machines > 0 && opt > 0, "{first}");
    // 0-byte items (locks, sockets, links) are reclaimable items of the fixture: they are lines.
    let verbose = scan_text(&home, t.path(), &["scan", "-v"], &env);
    assert_eq!(totals(&verbose), (items, machines, opt));
    let lines = table(&verbose);
    assert_eq!(sum(&lines, "reclaimable"), items + machines, "{verbose}");
    assert_eq!(sum(&lines, "opt-in"), opt, "{verbose}");
    assert!(
        verbose
            .lines()
            .any(|l| l.starts_with("Lock files") && l.contains(" 0 B  reclaimable")),
        "{verbose}"
    );
    // Every item is also a row of its own under -v, with its verdict's one word.
    let rows = |word: &str| {
        verbose
            .lines()
            .filter(|l| l.starts_with(&format!("  {word} ")))
            .count()
    };
    assert_eq!(rows("reclaimable"), items + machines, "{verbose}");
    assert_eq!(rows("opt-in"), opt, "{verbose}");
    // A filtered scan: its lines and its item rows count what its totals count.
    for args in [
        &["scan", "--kind", "orphaned-disks"][..],
        &["scan", "--kind", "lock-files"][..],
        &["scan", "--product", "smolvm"][..],
    ] {
        let text = scan_text(&home, t.path(), args, &env);
        let (i, m, o) = first_screen_counts_match(&text, &args.join(" "));
        assert!(i + m > 0, "{args:?}:\n{text}");
        if args.contains(&"--kind") {
            let listed = text
                .lines()
                .filter(|l| l.starts_with("  reclaimable ") || l.starts_with("  opt-in "))
                .count();
            assert_eq!(listed, i + m + o, "{args:?}:\n{text}");
        }
    }
    // `prune -n`: its headline counts its lines, and says what the scan said.
    let plan = scan_text(&home, t.path(), &["prune", "-n"], &env);
    let head = plan.lines().find(|l| l.starts_with("Plan ")).unwrap();
    let p_items = number_before(head, " item").unwrap();
    let p_machines = number_before(head, " machine").unwrap_or(0);
    let acts: Vec<&str> = plan
        .lines()
        .filter(|l| l.starts_with("  delete ") || l.starts_with("  remove "))
        .collect();
    let machine_acts = acts.iter().filter(|l| l.contains(" machine '")).count();
    assert_eq!(
        (acts.len() - machine_acts, machine_acts),
        (p_items, p_machines),
        "{plan}"
    );
    assert_eq!((p_items, p_machines), (items, machines), "{plan}\n{first}");
}

/// A HOME with one of each VM: a running smolvm machine (its stand-in VMM recorded with its
/// pid), a running Celesto sandbox (recorded with a live pid), an orphaned VM process of this
/// HOME (a `_boot-vm` whose machine has no record), and a VM process of another HOME; scanned
/// once and saved, so every surface reads the same facts.
struct Fleet {
    t: tempfile::TempDir,
    home: smolsweep_fixtures::Home,
    report: smolsweep::model::ScanReport,
    saved: std::path::PathBuf,
    _vms: Vec<smolsweep_fixtures::vmm::FakeVmm>,
    _other: tempfile::TempDir,
}

fn fleet() -> Fleet {
    use smolsweep_fixtures::smolvm::{DiskSet, Smolvm};
    use smolsweep_fixtures::vmm;
    let t = tempfile::tempdir().unwrap();
    let home = smolsweep_fixtures::Home::new(t.path(), smolsweep_fixtures::Layout::Linux).unwrap();
    let bin = vmm::standin_bin(std::path::Path::new(env!("CARGO_TARGET_TMPDIR")));
    let sm = home.smolvm().unwrap();
    let dir = sm
        .machine_dir(
            "m1",
            DiskSet::Raw {
                storage: 1 << 16,
                overlay: 1 << 16,
            },
        )
        .unwrap();
    let m1 = vmm::boot_vm(&bin, &home.root, &dir);
    sm.record(
        "m1",
        serde_json::json!({"state": "running", "pid": m1.pid()}),
    )
    .unwrap();
    let never = sm.vms_dir().join(Smolvm::hash("vm-ctrlc1"));
    let orphan = vmm::boot_vm_holding(&bin, &home.root, &never, None);
    let c = home.celesto_data_dir().unwrap();
    c.row(
        "sb1",
        "running",
        "qemu",
        Some(i64::from(std::process::id())),
    )
    .unwrap();
    let other = tempfile::tempdir().unwrap();
    let theirs = vmm::boot_vm(
        &bin,
        other.path(),
        &other.path().join(".cache/smolvm/vms/0123456789abcdef"),
    );
    smolsweep_fixtures::age_tree(t.path(), smolsweep_fixtures::OLD).unwrap();
    let report = smolsweep::scan::scan(&crate::scan_options(&home));
    let saved = t.path().join("report.json");
    std::fs::write(&saved, serde_json::to_vec(&report).unwrap()).unwrap();
    Fleet {
        t,
        home,
        report,
        saved,
        _vms: vec![m1, orphan, theirs],
        _other: other,
    }
}

/// Hazard (issue 39, item 3): at one moment the CLI said "VM processes: 4 (3 orphaned)", the
/// tray "8–10 VMs still running", the window's badge "Running VMs 11–16" and browse "VM
/// processes (5)" with another HOME's process inline. One count, defined once in the core
/// (this HOME's running machines and sandboxes and its orphaned VM processes; other HOMEs'
/// apart with their own count), is read here from the first screen, the tray, the window and
/// browse, all from one HOME's scan.
#[test]
fn one_vm_count_on_the_first_screen_the_tray_the_window_and_browse() {
    use smolsweep::view::{ScanView, VmCount};
    let f = fleet();
    let count = VmCount::of(&f.report);
    assert_eq!(
        (count.sandboxes, count.machines, count.orphans),
        (1, 1, 1),
        "{:#?}",
        f.report.processes
    );
    assert!(
        count.other_homes >= 1,
        "the other HOME's VM is counted apart"
    );
    let line = count.line();
    assert_eq!(line, "Running VMs: 3 (1 sandbox, 1 machine, 1 orphaned)");
    let others = count.other_homes_line().unwrap();

    // The CLI's first screen.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_smolsweep"))
        .args(["scan", "--from-report"])
        .arg(&f.saved)
        .env_clear()
        .envs(f.home.env_vars())
        .env("PATH", "/usr/bin:/bin")
        .env("LANG", "C.UTF-8")
        .env("COLUMNS", "120")
        .output()
        .unwrap();
    let cli = String::from_utf8(out.stdout).unwrap();
    assert!(cli.contains(&line), "{cli}");
    assert!(
        cli.contains(&format!("{others} (--all-homes lists them).")),
        "{cli}"
    );

    // The tray: the same line heads this HOME's VMs, other HOMEs' under their own.
    let tray = smolsweep::tray::TrayModel::from_report(&f.report, &Default::default());
    assert_eq!(tray.item("vms").unwrap().label, line);
    assert_eq!(tray.item("vms.others").unwrap().label, others);

    // The window: its badge is the core's number, its VMs view the same line.
    let v = ScanView::of(&f.report, &smolsweep::plan::Plan::reclaimable(&f.report));
    assert_eq!(v.vms, count);
    assert_eq!(v.vms.running(), 3);
    assert_eq!(v.vms_line, line);
    assert_eq!(v.other_homes_count.as_deref(), Some(others.as_str()));

    // browse, in a terminal, from the same saved scan.
    let tmux = crate::browse::Tmux::new(f.t.path());
    let args = format!("browse --from-report {}", crate::browse::quote(&f.saved));
    let cmd = crate::browse::command_line(f.home.env_vars(), "/usr/bin:/bin", "C.UTF-8", &args);
    tmux.ok(&[
        "new-session",
        "-d",
        "-s",
        "b",
        "-x",
        "140",
        "-y",
        "40",
        &cmd,
    ]);
    let screen = tmux.wait_for("the count", |s| s.contains("Running VMs"));
    assert!(screen.contains(&format!("{line}; {others}")), "{screen}");
    // This HOME's VM processes and other HOMEs' are two headings, each with its own count.
    assert!(
        screen.contains("VM processes (2)"),
        "the machine's VM and the orphan:\n{screen}"
    );
    assert!(
        screen.contains(&format!(
            "VM processes of other HOMEs ({})",
            count.other_homes
        )),
        "{screen}"
    );
    tmux.keys(&["q"]);
}
