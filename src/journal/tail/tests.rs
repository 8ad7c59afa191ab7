use super::*;
use crate::journal::read;
use crate::plan::{Action, PlannedAction};
use crate::record::{ActionRecord, Outcome};
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
        for e in run_lines(n, 2000, true) {
            let mut line = serde_json::to_vec(&e).unwrap();
            line.push(b'\n');
            f.write_all(&line).unwrap();
        }
    }
    let first = serde_json::to_vec(&run_lines(1, 2000, true)[0]).unwrap();
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
        let got = runs_of(&p, r.offset, &[r.plan_id.as_str()]).unwrap();
        assert_eq!(got, vec![want.clone()], "{}", r.run_id);
    }
    assert!(run_ids(&t.path().join("none")).unwrap().is_empty());
}
