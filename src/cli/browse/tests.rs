//! The browser drawn on ratatui's test backend at 80×24 and 120×40, on the fixture HOME of the
//! scan's golden tests (every edge case of both products), driven by keys. The expected text
//! lives in `tests/golden/browse-*.txt`; `SMOLSWEEP_BLESS=1` rewrites it after a change someone
//! has read. Only what varies between runs is normalised: the scratch directory (the report is
//! moved to `/scratch` before it is drawn, so paths shorten the same way every run) and pids.

use std::path::Path;
use std::time::{Duration, SystemTime};

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use smolsweep::env::EnvSnapshot;
use smolsweep::model::{Platform, ScanReport, Verdict};
use smolsweep::scan::{scan, ScanOptions};
use smolsweep::view::ScanView;
use smolsweep_fixtures::{
    celesto_edge_cases, smolvm_edge_cases, CelestoCase, Home, Layout, SmolvmCase,
};

use super::state::{App, Effect, Entry, Screen};
use super::ui;

/// The fixture HOME, scanned, with what holds its locks and processes while it lives.
struct Scanned {
    report: ScanReport,
    _cases: (CelestoCase, SmolvmCase),
    _t: tempfile::TempDir,
}

fn scanned() -> Scanned {
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Linux).unwrap();
    let cel = celesto_edge_cases(&home).unwrap();
    let smol = smolvm_edge_cases(&home).unwrap();
    let mut vars = home.env_vars();
    vars.push(("PATH".into(), "/usr/bin:/bin".into()));
    let mut env = EnvSnapshot::from_pairs(home.root.clone(), vars);
    env.euid = rustix::process::geteuid().as_raw();
    let opts = ScanOptions {
        env,
        platform: Platform::Linux,
        age_guard: Duration::from_secs(120),
        now: SystemTime::now(),
    };
    let mut report = scan(&opts);
    // Other HOMEs' VM processes are this machine's, not the fixture's (a desktop running
    // SmolVM VMs of its own draws the same screens).
    report
        .processes
        .retain(|p| p.scope == smolsweep::model::Scope::ThisHome);
    relocate(&mut report, t.path(), Path::new("/scratch"));
    Scanned {
        report,
        _cases: (cel, smol),
        _t: t,
    }
}

/// Every path and sentence of `r` under `from` moved to `to` (through its JSON, which
/// `--from-report` reads back).
fn relocate(r: &mut ScanReport, from: &Path, to: &Path) {
    let json = serde_json::to_string(&*r).unwrap();
    let json = json.replace(&from.display().to_string(), &to.display().to_string());
    *r = serde_json::from_str(&json).unwrap();
}

fn app(s: &Scanned, ascii: bool) -> App {
    let mut a = App::new(ascii, false);
    a.load(
        s.report.clone(),
        ScanView::of(&s.report, &smolsweep::plan::Plan::reclaimable(&s.report)),
    );
    a
}

/// The buffer as text, trailing spaces cut, pids normalised.
fn render(a: &mut App, w: u16, h: u16) -> String {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| ui::draw(f, a)).unwrap();
    let buf = t.backend().buffer();
    let mut out = String::new();
    for y in 0..h {
        let line: String = (0..w).map(|x| buf[(x, y)].symbol().to_string()).collect();
        out.push_str(line.trim_end());
        out.push('\n');
    }
    normalise_pids(&out)
}

fn normalise_pids(text: &str) -> String {
    let mut text = text.to_string();
    for word in ["pid ", "(process ", "process "] {
        let mut out = String::with_capacity(text.len());
        let mut rest = text.as_str();
        while let Some(i) = rest.find(word) {
            out.push_str(&rest[..i + word.len()]);
            rest = &rest[i + word.len()..];
            let digits = rest.chars().take_while(|c| c.is_ascii_digit()).count();
            if digits > 0 {
                out.push_str("<pid>");
                rest = &rest[digits..];
            }
        }
        out.push_str(rest);
        text = out;
    }
    text
}

fn key(a: &mut App, code: KeyCode) -> Effect {
    a.key(KeyEvent::from(code))
}

/// Move the cursor to the first entry `pick` accepts.
fn go_to(a: &mut App, pick: impl Fn(&App, Entry) -> bool) {
    let i = a
        .entries()
        .iter()
        .position(|e| pick(a, *e))
        .expect("an entry to go to");
    key(a, KeyCode::Home);
    for _ in 0..i {
        key(a, KeyCode::Char('j'));
    }
    assert_eq!(a.cursor, i);
}

fn is_group(a: &App, e: Entry, label: &str) -> bool {
    matches!(e, Entry::Group(g) if a.group(g).is_some_and(|g| g.label == label))
}

fn check(name: &str, got: &str) {
    smolsweep_fixtures::golden::check(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden"),
        name,
        got,
    )
}

/// The screens a person goes through: the list, a group opened with an item marked, the
/// review of the marked item (the core's sentence, plan lines and question), and the help.
fn walk(s: &Scanned, ascii: bool, w: u16, h: u16) -> String {
    let mut a = app(s, ascii);
    let mut out = format!("=== list {w}x{h}\n");
    out += &render(&mut a, w, h);
    go_to(&mut a, |a, e| is_group(a, e, "Orphaned disks"));
    key(&mut a, KeyCode::Enter);
    key(&mut a, KeyCode::Char('j'));
    key(&mut a, KeyCode::Char(' '));
    assert_eq!(a.marked.len(), 1, "the first orphaned disk is marked");
    out += &format!("=== opened, one marked {w}x{h}\n");
    out += &render(&mut a, w, h);
    key(&mut a, KeyCode::Char('d'));
    assert!(matches!(a.screen, Screen::Review(_)));
    out += &format!("=== review {w}x{h}\n");
    out += &render(&mut a, w, h);
    key(&mut a, KeyCode::Esc);
    key(&mut a, KeyCode::Char('h'));
    out += &format!("=== collapsed, its mark counted {w}x{h}\n");
    out += &render(&mut a, w, h);
    assert!(matches!(key(&mut a, KeyCode::Char('q')), Effect::None));
    out += &format!("=== quit with a mark pending {w}x{h}\n");
    out += &render(&mut a, w, h);
    key(&mut a, KeyCode::Char('n'));
    go_to(&mut a, |_, e| e == Entry::Machines);
    key(&mut a, KeyCode::Enter);
    key(&mut a, KeyCode::Char('j'));
    out += &format!("=== machines {w}x{h}\n");
    out += &render(&mut a, w, h);
    key(&mut a, KeyCode::Char('?'));
    out += &format!("=== help {w}x{h}\n");
    out += &render(&mut a, w, h);
    out
}

#[test]
fn browse_screens_match_the_reviewed_text_at_80x24_and_120x40() {
    let s = scanned();
    let small = walk(&s, false, 80, 24);
    check("browse-80x24.txt", &small);
    check("browse-120x40.txt", &walk(&s, false, 120, 40));
    let ascii = walk(&s, true, 80, 24);
    assert!(ascii.is_ascii(), "LANG=C gets ASCII only:\n{ascii}");
    check("browse-80x24-lang-c.txt", &ascii);
    let ascii = walk(&s, true, 120, 40);
    assert!(ascii.is_ascii(), "LANG=C gets ASCII only:\n{ascii}");
    check("browse-120x40-lang-c.txt", &ascii);
    for internal in ["orphan_disk", "smolvm.boot_vm", "celesto.qemu", "[opt_in"] {
        assert!(
            !small.contains(internal),
            "internal id {internal}:\n{small}"
        );
    }
}

/// The rows shown are the core's: the same sizes, verdict words and reasons as its view.
#[test]
fn rows_show_the_core_s_size_verdict_and_reason() {
    let s = scanned();
    let mut a = app(&s, false);
    go_to(&mut a, |a, e| is_group(a, e, "Orphaned disks"));
    key(&mut a, KeyCode::Enter);
    key(&mut a, KeyCode::Down);
    let Some(Entry::Row(g, r)) = a.current() else {
        panic!("a row under the cursor");
    };
    let row = a.row(g, r).unwrap().clone();
    let text = render(&mut a, 120, 40);
    let line = text.lines().find(|l| l.starts_with('>')).unwrap();
    assert!(line.contains(&row.size), "{line}");
    assert!(
        line.contains(smolsweep::view::verdict_word(row.verdict)),
        "{line}"
    );
    assert!(ui::detail(&a).iter().any(|l| l.contains(&row.reason)));
}

/// Hazard: marking something the core does not allow acting on. A protected or unverifiable
/// row cannot be marked; Space says why, in the core's words, and `d` plans nothing for it.
#[test]
fn protected_and_unverifiable_rows_cannot_be_marked() {
    let s = scanned();
    let mut a = app(&s, false);
    for v in [Verdict::Protected, Verdict::Unknown] {
        let kind = a
            .view
            .as_ref()
            .unwrap()
            .groups
            .iter()
            .find(|g| g.rows.iter().any(|r| r.verdict == v))
            .map(|g| g.kind)
            .expect("the fixture has such a row");
        a.open.insert(kind);
        go_to(
            &mut a,
            |a, e| matches!(e, Entry::Row(g, r) if a.row(g, r).is_some_and(|r| r.verdict == v)),
        );
        let Some(Entry::Row(g, r)) = a.current() else {
            unreachable!()
        };
        let row = a.row(g, r).unwrap().clone();
        key(&mut a, KeyCode::Char(' '));
        assert!(a.marked.is_empty(), "{v:?} row was marked");
        assert_eq!(
            a.status.as_deref(),
            Some(format!("{}: {}", row.verdict_label, row.reason).as_str())
        );
    }
    key(&mut a, KeyCode::Char('k'));
    assert_eq!(a.status, None, "the reason goes with the next key");
    key(&mut a, KeyCode::Char('d'));
    assert!(matches!(a.screen, Screen::List), "nothing to review");
    assert_eq!(a.status.as_deref(), Some("Nothing to do."));
}

/// `d` reviews exactly the marked ids: the plan is the core's for that selection, and its
/// confirmation is `view::confirmation` of it; `n` backs out and `y` hands that plan over.
#[test]
fn review_plans_exactly_the_marked_items_and_y_runs_that_plan() {
    let s = scanned();
    let mut a = app(&s, false);
    go_to(&mut a, |a, e| is_group(a, e, "Orphaned disks"));
    key(&mut a, KeyCode::Char(' '));
    let marked = a.marked.clone();
    assert!(marked.len() > 1, "Space on a group marks its rows");
    let want = smolsweep::view::confirmation(&smolsweep::plan::Plan::of_ids(&s.report, &marked));
    assert_eq!(a.marked_sentence.as_deref(), Some(want.sentence().as_str()));
    key(&mut a, KeyCode::Char('d'));
    let Screen::Review(r) = &a.screen else {
        panic!("review")
    };
    assert_eq!(r.confirmation, want);
    key(&mut a, KeyCode::Char('n'));
    assert!(matches!(a.screen, Screen::List));
    key(&mut a, KeyCode::Char('d'));
    match key(&mut a, KeyCode::Char('y')) {
        Effect::Run(plan) => {
            assert_eq!(smolsweep::view::confirmation(&plan), want);
        }
        other => panic!("{other:?}"),
    }
}

/// A rescan keeps the cursor on the same item (or its group, when the item is gone), and
/// drops the marks of items that are gone.
#[test]
fn a_rescan_keeps_the_cursor_on_the_same_item_and_drops_gone_marks() {
    let s = scanned();
    let mut a = app(&s, false);
    go_to(&mut a, |a, e| is_group(a, e, "Orphaned disks"));
    key(&mut a, KeyCode::Enter);
    key(&mut a, KeyCode::Char('j'));
    key(&mut a, KeyCode::Char(' '));
    key(&mut a, KeyCode::Char('j'));
    let Some(Entry::Row(g, r)) = a.current() else {
        panic!("a row")
    };
    let (gone, here) = (a.marked[0].clone(), a.row(g, r).unwrap().id.clone());
    let mut after = s.report.clone();
    after.findings.retain(|f| f.id != gone);
    a.load(
        after.clone(),
        ScanView::of(&after, &smolsweep::plan::Plan::reclaimable(&after)),
    );
    assert!(a.marked.is_empty(), "the mark of an item that is gone");
    let Some(Entry::Row(g, r)) = a.current() else {
        panic!("a row")
    };
    assert_eq!(a.row(g, r).unwrap().id, here);
}

/// Issue 31: `q` or Esc with marks pending asked nothing and the marks were gone. Now both ask
/// (from the list); `n` or Esc stays with the marks, `y` quits; with
/// nothing marked they quit at once.
#[test]
fn quitting_with_marks_pending_asks() {
    let s = scanned();
    let mut a = app(&s, false);
    assert!(matches!(key(&mut a, KeyCode::Char('q')), Effect::Quit));
    go_to(&mut a, |a, e| is_group(a, e, "Orphaned disks"));
    key(&mut a, KeyCode::Char(' '));
    let marked = a.marked.clone();
    for quit in [KeyCode::Char('q'), KeyCode::Esc] {
        for stay in [KeyCode::Char('n'), KeyCode::Esc] {
            assert!(matches!(key(&mut a, quit), Effect::None));
            assert!(matches!(a.screen, Screen::Quit));
            let text = render(&mut a, 80, 24);
            assert!(text.contains(&a.quit_question()), "{text}");
            assert!(matches!(key(&mut a, stay), Effect::None));
            assert!(matches!(a.screen, Screen::List));
            assert_eq!(a.marked, marked, "the marks stay");
        }
    }
    assert!(matches!(key(&mut a, KeyCode::Char('q')), Effect::None));
    assert!(matches!(key(&mut a, KeyCode::Char('y')), Effect::Quit));
}

/// Hazard (issue 39, item 7): `q` on the help left the browser (or asked to) instead of
/// closing the help. `q` and Esc close the help, with nothing marked and with marks pending.
#[test]
fn q_on_browses_help_closes_the_help() {
    let s = scanned();
    let mut a = app(&s, false);
    for close in [KeyCode::Char('q'), KeyCode::Esc, KeyCode::Char('?')] {
        key(&mut a, KeyCode::Char('?'));
        assert!(matches!(a.screen, Screen::Help));
        assert!(matches!(key(&mut a, close), Effect::None), "{close:?}");
        assert!(matches!(a.screen, Screen::List), "{close:?}");
    }
    go_to(&mut a, |a, e| is_group(a, e, "Orphaned disks"));
    key(&mut a, KeyCode::Char(' '));
    let marked = a.marked.clone();
    key(&mut a, KeyCode::Char('?'));
    assert!(matches!(key(&mut a, KeyCode::Char('q')), Effect::None));
    assert!(
        matches!(a.screen, Screen::List),
        "the help closed, no question"
    );
    assert_eq!(a.marked, marked, "the marks stay");
    let help = {
        key(&mut a, KeyCode::Char('?'));
        render(&mut a, 120, 40)
    };
    assert!(help.contains("on this help: close it"), "{help}");
}

/// Issue 31: after `n` in the review one more Esc quit and the marks were gone.
#[test]
fn after_n_in_the_review_the_marks_stay() {
    let s = scanned();
    let mut a = app(&s, false);
    go_to(&mut a, |a, e| is_group(a, e, "Orphaned disks"));
    key(&mut a, KeyCode::Char(' '));
    let marked = a.marked.clone();
    key(&mut a, KeyCode::Char('d'));
    key(&mut a, KeyCode::Char('n'));
    assert_eq!(a.marked, marked);
    assert!(matches!(key(&mut a, KeyCode::Esc), Effect::None));
    assert!(matches!(a.screen, Screen::Quit));
    assert_eq!(a.marked, marked);
}

/// Issue 31: a collapsed group with marked items showed no mark.
#[test]
fn a_collapsed_group_shows_its_marks_count() {
    let s = scanned();
    let mut a = app(&s, true);
    go_to(&mut a, |a, e| is_group(a, e, "Orphaned disks"));
    key(&mut a, KeyCode::Enter);
    key(&mut a, KeyCode::Char('j'));
    key(&mut a, KeyCode::Char(' '));
    key(&mut a, KeyCode::Char('j'));
    key(&mut a, KeyCode::Char(' '));
    key(&mut a, KeyCode::Char('h'));
    assert!(!a.entries().iter().any(|e| matches!(e, Entry::Row(..))));
    let text = render(&mut a, 80, 24);
    let line = text
        .lines()
        .find(|l| l.contains("Orphaned disks"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("(2 marked)"), "{line}");
}

/// Issue 31: VM processes were not listed (no End process). Machines and VM processes are
/// rows whose keys are the window's actions, planned by the core exactly as the window plans
/// them (`view::runs`), reviewed like the marked items' plan and run by the same executor.
#[test]
fn machines_and_processes_are_rows_with_the_windows_actions() {
    use smolsweep::view::runs::{VmAction, VmPlan};
    use smolsweep::{plan_for, Target};
    let planned = |report: &_, target: Target, action| {
        VmPlan::of(&plan_for(report, &target, action, false), false)
    };
    let s = scanned();
    let mut report = s.report.clone();
    report.processes.push(
        serde_json::from_value(serde_json::json!({
            "pid": 4_000_001u32, "start_time": 7, "product": "smolvm",
            "shape": "smolvm.boot_vm", "owner": "ghost-vm", "orphan": true,
            "scope": "this_home", "held_deleted_bytes": 0, "reason": "an orphan",
        }))
        .unwrap(),
    );
    let mut a = App::new(false, false);
    a.load(
        report.clone(),
        ScanView::of(&report, &smolsweep::plan::Plan::reclaimable(&report)),
    );
    go_to(&mut a, |_, e| e == Entry::Machines);
    key(&mut a, KeyCode::Enter);
    let (i, m) = a
        .view
        .as_ref()
        .unwrap()
        .machines
        .iter()
        .enumerate()
        .find(|(_, m)| m.can_stop)
        .map(|(i, m)| (i, m.clone()))
        .expect("a running machine in the fixture");
    go_to(&mut a, |_, e| e == Entry::Machine(i));
    key(&mut a, KeyCode::Char('s'));
    let Screen::Review(r) = &a.screen else {
        panic!("review: {:?}", a.status)
    };
    let machine = Target::Machine {
        product: m.product,
        name: m.name.clone(),
    };
    let want = planned(&report, machine, VmAction::Stop);
    assert_eq!(
        Some(&r.plan.actions),
        want.core.as_ref().map(|p| &p.actions)
    );
    assert_eq!(r.confirmation, want.confirmation);
    key(&mut a, KeyCode::Char('n'));
    go_to(&mut a, |_, e| e == Entry::Processes);
    key(&mut a, KeyCode::Enter);
    let i = a
        .view
        .as_ref()
        .unwrap()
        .processes
        .iter()
        .position(|p| p.pid == 4_000_001)
        .unwrap();
    go_to(&mut a, |_, e| e == Entry::Process(i));
    key(&mut a, KeyCode::Char('e'));
    let Screen::Review(r) = &a.screen else {
        panic!("review: {:?}", a.status)
    };
    let orphan = Target::Process {
        pid: 4_000_001,
        start_time: 7,
    };
    let want = planned(&report, orphan, VmAction::Reap);
    assert_eq!(
        Some(&r.plan.actions),
        want.core.as_ref().map(|p| &p.actions)
    );
    match key(&mut a, KeyCode::Char('y')) {
        Effect::Run(plan) => {
            assert_eq!(Some(&plan.actions), want.core.as_ref().map(|p| &p.actions))
        }
        other => panic!("{other:?}"),
    }
}

/// Issue 31: under LANG=C the detail text stopped mid-sentence. Every word of the longest
/// reason is on the screen, at 80x24 in ASCII.
#[test]
fn detail_text_wraps_never_cuts_under_lang_c() {
    let s = scanned();
    let mut a = app(&s, true);
    let (kind, id) = a
        .view
        .as_ref()
        .unwrap()
        .groups
        .iter()
        .flat_map(|g| g.rows.iter().map(move |r| (g.kind, r)))
        .max_by_key(|(_, r)| r.reason.len() + r.path.len())
        .map(|(k, r)| (k, r.id.clone()))
        .unwrap();
    a.open.insert(kind);
    go_to(
        &mut a,
        |a, e| matches!(e, Entry::Row(g, r) if a.row(g, r).is_some_and(|r| r.id == id)),
    );
    let text = render(&mut a, 80, 24);
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    for l in ui::detail(&a) {
        let want = smolsweep::view::ascii(&l)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        for word in want.split(' ') {
            assert!(flat.contains(word), "{word:?} is cut:\n{text}");
        }
        assert!(
            flat.contains(&want[want.len().saturating_sub(30)..]),
            "{text}"
        );
    }
}
