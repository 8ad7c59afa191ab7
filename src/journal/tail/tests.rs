use super::*;
use crate::journal::read;
use crate::plan::{Action, PlannedAction};
use crate::record::{ActionRecord, Origin, Outcome};
use std::io::Write;
use std::path::PathBuf;

fn action(i: usize) -> Action {
    Action::RemovePathBlock {
        file: PathBuf::from(format!("/home/u/.profile-{i}")),
    }
}

/// Run `n` of a journal: started at `n * 1000` ms, with `actions` actions, finished or not.
fn run_lines(n: u64, actions: usize, finished: bool) -> Vec<JournalEntry> {
    let plan_id = format!("{n:064x}");
    let mut v = vec![JournalEntry::PlanStarted {
        at_ms: n * 1000,
        plan_id: plan_id.clone(),
        home: "/home/u".into(),
        estimated_bytes: 10,
        actions: (0..actions).map(|i| PlannedAction::of(action(i))).collect(),
        origin: None,
    }];
    for i in 0..actions {
        v.push(JournalEntry::Action {
            at_ms: n * 1000 + 1,
            plan_id: plan_id.clone(),
            record: Box::new(ActionRecord {
                index: i,
                summary: format!("edit {i}"),
                action: action(i),
                outcome: Outcome::done("removed"),
                freed_bytes: 1,
            }),
        });
    }
    if finished {
        v.push(JournalEntry::PlanFinished {
            at_ms: n * 1000 + 2,
            plan_id,
            done: actions,
            skipped: 0,
            failed: 0,
            estimated_bytes: 10,
            freed_bytes: n,
            filesystems: vec![],
        });
    }
    v
}

/// A journal of `runs` runs (the third unfinished, with a truncated line and a blank line
/// after it), every run with its number of actions.
fn journal(dir: &Path, runs: u64) -> PathBuf {
    let p = dir.join("journal.jsonl");
    let mut f = std::fs::File::create(&p).unwrap();
    for n in 1..=runs {
        for e in run_lines(n, (n % 5) as usize, n != 3) {
            let mut line = serde_json::to_vec(&e).unwrap();
            line.push(b'\n');
            f.write_all(&line).unwrap();
        }
        if n == 3 {
            f.write_all(b"{\"event\":\"action\",\"at_ms\":3\n\n")
                .unwrap();
        }
    }
    p
}

#[test]
fn the_newest_runs_read_from_the_end_are_the_last_of_the_whole_read() {
    let t = tempfile::tempdir().unwrap();
    let p = journal(t.path(), 40);
    let whole = read(&p).unwrap();
    let all = runs(&whole.entries);
    for count in [0, 1, 2, 5, 37, 38, 39, 40, 41, 100] {
        let n = read_newest(&p, count).unwrap();
        let got = runs(&n.entries);
        let want = &all[all.len().saturating_sub(count)..];
        assert_eq!(got, want, "count {count}");
        assert_eq!(n.runs_before + got.len(), all.len(), "count {count}");
        assert_eq!(n.damaged_lines, whole.damaged_lines, "count {count}");
    }
}

#[test]
fn lines_longer_than_a_chunk_are_read_whole() {
    let t = tempfile::tempdir().unwrap();
    let p = t.path().join("journal.jsonl");
    let mut f = std::fs::File::create(&p).unwrap();
    for n in 1..=3 {
        for e in run_lines(n, 8000, true) {
            let mut line = serde_json::to_vec(&e).unwrap();
            line.push(b'\n');
            f.write_all(&line).unwrap();
        }
    }
    let first = serde_json::to_vec(&run_lines(1, 8000, true)[0]).unwrap();
    assert!(first.len() > 2 * CHUNK, "{}", first.len());
    let n = read_newest(&p, 2).unwrap();
    assert_eq!(runs(&n.entries), runs(&read(&p).unwrap().entries)[1..]);
    assert_eq!(n.runs_before, 1);
}

#[test]
fn runs_started_after_a_time_are_those_of_the_whole_read_without_their_actions() {
    let t = tempfile::tempdir().unwrap();
    let p = journal(t.path(), 40);
    let all = runs(&read(&p).unwrap().entries);
    for after in [0, 1, 2_999, 3_000, 3_001, 39_000, 40_000, 50_000] {
        let got = runs_started_after(&p, after).unwrap();
        let want: Vec<(u64, Option<u64>)> = all
            .iter()
            .filter(|r| r.started_at_ms > after)
            .map(|r| (r.started_at_ms, r.freed_bytes))
            .collect();
        let got: Vec<(u64, Option<u64>)> = got
            .iter()
            .map(|r| (r.started_at_ms, r.freed_bytes))
            .collect();
        assert_eq!(got, want, "after {after}");
    }
}

#[test]
fn a_missing_or_empty_journal_has_no_runs() {
    let t = tempfile::tempdir().unwrap();
    let p = t.path().join("journal.jsonl");
    assert_eq!(read_newest(&p, 3).unwrap(), Newest::default());
    assert!(runs_started_after(&p, 0).unwrap().is_empty());
    std::fs::write(&p, b"").unwrap();
    assert_eq!(read_newest(&p, 3).unwrap(), Newest::default());
}

#[test]
fn a_runs_ids_find_it_as_the_whole_read_does() {
    let t = tempfile::tempdir().unwrap();
    let p = journal(t.path(), 12);
    let all = runs(&read(&p).unwrap().entries);
    let ids = run_ids(&p).unwrap();
    let as_read: Vec<(&str, &str)> = all
        .iter()
        .map(|r| (r.run_id.as_str(), r.plan_id.as_str()))
        .collect();
    let by_ids: Vec<(&str, &str)> = ids
        .iter()
        .map(|r| (r.run_id.as_str(), r.plan_id.as_str()))
        .collect();
    assert_eq!(by_ids, as_read);
    for (r, want) in ids.iter().zip(&all) {
        let (got, cut) = runs_of(&p, r.offset, &[r.plan_id.as_str()]).unwrap();
        assert_eq!(got, vec![want.clone()], "{}", r.run_id);
        assert!(cut.is_empty());
    }
    assert!(run_ids(&t.path().join("none")).unwrap().is_empty());
}

/// Append `entries` to the journal at `p`, one line each.
fn append(p: &Path, entries: &[JournalEntry]) {
    let mut f = std::fs::OpenOptions::new().append(true).open(p).unwrap();
    for e in entries {
        let mut line = serde_json::to_vec(e).unwrap();
        line.push(b'\n');
        f.write_all(&line).unwrap();
    }
}

/// Hazard: a journal whose newest line is very long (a run interrupted after writing the
/// `plan_started` line of a huge plan) made `history -n 1` hold and parse the whole line, and
/// the space history too. Every reader holds at most a window, a line's head of [`MAX_LINE`]
/// and its tail: the line is shown cut, with its size, its run with the fields its head and
/// tail give (when, plan, HOME, estimate, origin), and the older runs are counted as before.
#[test]
fn a_journal_whose_newest_line_is_longer_than_the_limit_is_read_in_bounded_memory() {
    let t = tempfile::tempdir().unwrap();
    let p = journal(t.path(), 20);
    let before = runs(&read(&p).unwrap().entries);
    let huge = JournalEntry::PlanStarted {
        at_ms: 21_000,
        plan_id: format!("{:064x}", 21),
        home: "/home/u".into(),
        estimated_bytes: 10,
        actions: (0..100_000).map(|i| PlannedAction::of(action(i))).collect(),
        origin: Some(Origin::new("prune", "cli")),
    };
    let len = serde_json::to_vec(&huge).unwrap().len();
    assert!(len > 3 * MAX_LINE, "{len}");
    append(&p, std::slice::from_ref(&huge));
    let bound = MAX_LINE + super::super::lines::TAIL + 2 * CHUNK;

    let _ = super::super::lines::held();
    let n = read_newest(&p, 1).unwrap();
    assert!(
        super::super::lines::held() <= bound,
        "held more than a line's head"
    );
    assert_eq!(n.runs_before, 20);
    assert_eq!(n.damaged_lines, read(&p).unwrap().damaged_lines);
    assert_eq!(n.cut_lines.len(), 1, "{:?}", n.cut_lines);
    let c = &n.cut_lines[0];
    assert_eq!(
        (c.bytes, c.event.as_deref()),
        (len as u64, Some("plan_started"))
    );
    assert_eq!(c.plan_id.as_deref(), Some(format!("{:064x}", 21).as_str()));
    let r = &runs(&n.entries)[0];
    assert_eq!((r.started_at_ms, r.estimated_bytes), (21_000, 10));
    assert_eq!(r.origin, Some(Origin::new("prune", "cli")));
    assert_eq!((r.planned_actions, r.finished), (0, false));

    // The space history: only the heads it shows.
    let _ = super::super::lines::held();
    let after = runs_started_after(&p, 0).unwrap();
    assert!(super::super::lines::held() <= HEAD + 2 * CHUNK);
    assert_eq!(after.len(), before.len() + 1);
    assert_eq!(after.last().map(|r| r.started_at_ms), Some(21_000));

    // `history RUN`: found by its ids, its run read with the line cut.
    let ids = run_ids(&p).unwrap();
    let last = ids.last().unwrap();
    let _ = super::super::lines::held();
    let (got, cut) = runs_of(&p, last.offset, &[last.plan_id.as_str()]).unwrap();
    assert!(super::super::lines::held() <= bound);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].origin, Some(Origin::new("prune", "cli")));
    assert_eq!(cut, n.cut_lines);
    let said = crate::view::runs::cut_line(c);
    assert!(
        said.contains("plan_started line of plan 000000000000 at byte")
            && said.contains("shown cut (its planned actions are not listed)"),
        "{said}"
    );
}

/// A cut `action` line is shown cut and counted nowhere else; the runs around it read as before.
#[test]
fn an_action_line_longer_than_the_limit_is_shown_cut() {
    let t = tempfile::tempdir().unwrap();
    let p = journal(t.path(), 4);
    let mut lines = run_lines(5, 2, true);
    if let JournalEntry::Action { record, .. } = &mut lines[1] {
        record.outcome = Outcome::skipped("x".repeat(MAX_LINE + 10));
    }
    append(&p, &lines);
    let n = read_newest(&p, 1).unwrap();
    assert_eq!(n.cut_lines.len(), 1, "{:?}", n.cut_lines);
    assert_eq!(n.cut_lines[0].event.as_deref(), Some("action"));
    let r = &runs(&n.entries)[0];
    assert_eq!((r.done, r.skipped, r.finished), (1, 0, true));
    assert!(
        n.damaged_lines.iter().all(|l| *l < 20),
        "{:?}",
        n.damaged_lines
    );
}

/// Hazard: the window's History read the whole journal into memory (a 2 GB journal, 2 GB),
/// whatever it showed. It reads the newest [`crate::view::runs::HISTORY_RUNS`] runs from the
/// end, holding at most a line's head of a huge line, says how many older runs it leaves to
/// `smolsweep history`, and shows a cut line in words.
#[test]
fn the_windows_history_reads_the_newest_runs_in_bounded_memory() {
    use crate::view::runs::{history, HISTORY_RUNS};
    let t = tempfile::tempdir().unwrap();
    let p = journal(t.path(), HISTORY_RUNS as u64 + 30);
    let huge = JournalEntry::PlanStarted {
        at_ms: 1_000_000,
        plan_id: format!("{:064x}", 1_000),
        home: "/home/u".into(),
        estimated_bytes: 10,
        actions: (0..100_000).map(|i| PlannedAction::of(action(i))).collect(),
        origin: Some(Origin::new("prune", "cli")),
    };
    append(&p, std::slice::from_ref(&huge));
    let bound = MAX_LINE + super::super::lines::TAIL + 2 * CHUNK;
    let _ = super::super::lines::held();
    let h = history(
        Some((&p, read_newest(&p, HISTORY_RUNS))),
        None,
        &crate::env::SystemZone,
    );
    assert!(super::super::lines::held() <= bound, "held a whole line");
    assert_eq!(h.runs.len(), HISTORY_RUNS);
    assert_eq!(h.runs[0].run.started_at_ms, 1_000_000, "newest first");
    assert_eq!(
        h.older_line,
        format!(
            "31 older runs not shown; `smolsweep history -n {}` shows every run.",
            HISTORY_RUNS + 31
        )
    );
    assert_eq!(h.cut_lines.len(), 1, "{:?}", h.cut_lines);
    assert!(h.cut_lines[0].contains("shown cut"), "{}", h.cut_lines[0]);
    assert_eq!(h.damaged_lines, read(&p).unwrap().damaged_lines);
    // A journal of fewer runs is shown whole, with no line about older ones.
    let t = tempfile::tempdir().unwrap();
    let p = journal(t.path(), 7);
    let h = history(
        Some((&p, read_newest(&p, HISTORY_RUNS))),
        None,
        &crate::env::SystemZone,
    );
    assert_eq!((h.runs.len(), h.older_line.as_str()), (7, ""));
}
