//! Reading a journal from its end: what `history -n N`, the space history and every scan
//! (which records a point of it) need are the newest runs, so they read backwards and stop as
//! soon as they have them. Memory stays flat in the journal's size and in the length of its
//! lines ([`super::lines`]): a window, a line of at most [`MAX_LINE`] bytes (a longer one is
//! read as its head and tail and shown cut, with its size: [`CutLine`]), and the entries kept.
//! The space history reads only the fields it shows: a `plan_started` line's head (never its
//! actions), and passes `action` lines over unread.

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

#[cfg(test)]
use super::lines::CHUNK;
use super::lines::{forward, Backwards, Line, MAX_LINE};
use super::{runs, JournalEntry, RunSummary};
use crate::record::Origin;

/// How a `plan_started` line starts (serde writes the tag first).
const PLAN_STARTED: &[u8] = b"{\"event\":\"plan_started\"";
/// How an `action` line starts.
const ACTION: &[u8] = b"{\"event\":\"action\"";
/// How much of a line the space history reads: its fields before a `plan_started` line's
/// actions, a whole `plan_finished` line.
const HEAD: usize = 64 * 1024;

/// A journal line longer than [`MAX_LINE`]: read as its head and tail, shown cut.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CutLine {
    /// Byte offset where it starts.
    pub offset: u64,
    /// Its length in bytes.
    pub bytes: u64,
    /// Its event (`plan_started`, `action`, `plan_finished`), when its head names one.
    pub event: Option<String>,
    /// The plan it belongs to, when its head names one.
    pub plan_id: Option<String>,
}

impl CutLine {
    fn of(line: &Line) -> CutLine {
        let ids = ids_of(&line.head);
        CutLine {
            offset: line.offset,
            bytes: line.len,
            event: ids.as_ref().map(|i| i.event.clone()),
            plan_id: ids.map(|i| i.plan_id),
        }
    }
}

/// What [`read_newest`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Newest {
    /// The entries of the newest runs, in file order, from the `plan_started` line of the oldest
    /// of them to the end. A cut `plan_started` line is here without its actions.
    pub entries: Vec<JournalEntry>,
    /// Runs (`plan_started` lines) before those, counted without being read as entries.
    pub runs_before: usize,
    /// 1-based numbers of lines that are not valid entries: in the part read, every line that
    /// does not parse; before it, every line not shaped like an entry (one JSON object of an
    /// event per line), as a crash's truncated line is not.
    pub damaged_lines: Vec<usize>,
    /// Lines of the part read too long to read whole, newest first.
    pub cut_lines: Vec<CutLine>,
}

/// The fields every line starts with (`{"event":…,"at_ms":…,"plan_id":…`).
#[derive(Deserialize)]
struct Ids {
    #[serde(default)]
    event: String,
    plan_id: String,
    #[serde(default)]
    at_ms: u64,
}

/// The fields a line's head starts with, read from its first bytes alone.
fn ids_of(head: &[u8]) -> Option<Ids> {
    const KEY: &[u8] = b"\"plan_id\":\"";
    let at = memchr::memmem::find(head, KEY)? + KEY.len();
    let end = at + memchr::memchr(b'"', &head[at..])?;
    let mut json = head[..=end].to_vec();
    json.push(b'}');
    serde_json::from_slice(&json).ok()
}

/// The fields of a `plan_started` line before its actions.
#[derive(Deserialize)]
struct StartedHead {
    at_ms: u64,
    plan_id: String,
    #[serde(with = "crate::pathser::one")]
    home: PathBuf,
    estimated_bytes: u64,
}

/// A `plan_started` entry read from the head of its line, without its actions; with the
/// origin its end names when `origin` (read from the tail of a cut line).
fn started_head(line: &Line, origin: bool) -> Option<JournalEntry> {
    const KEY: &[u8] = b",\"actions\":";
    let at = memchr::memmem::find(&line.head, KEY)?;
    let mut json = line.head[..at].to_vec();
    json.push(b'}');
    let h: StartedHead = serde_json::from_slice(&json).ok()?;
    let end = match line.cut() {
        true => &line.tail,
        false => &line.head,
    };
    Some(JournalEntry::PlanStarted {
        at_ms: h.at_ms,
        plan_id: h.plan_id,
        home: h.home,
        estimated_bytes: h.estimated_bytes,
        actions: Vec::new(),
        origin: origin.then(|| origin_of(end)).flatten(),
    })
}

/// The origin at the end of a `plan_started` line (`…],"origin":{…}}`).
fn origin_of(end: &[u8]) -> Option<Origin> {
    #[derive(Deserialize)]
    struct Only {
        origin: Option<Origin>,
    }
    const KEY: &[u8] = b"],\"origin\":";
    let at = memchr::memmem::rfind(end, KEY)?;
    let mut json = b"{".to_vec();
    json.extend_from_slice(&end[at + 2..]);
    serde_json::from_slice::<Only>(&json).ok()?.origin
}

/// The entry a line read whole or cut gives: a cut `plan_started` line its head, any other
/// cut line none.
fn entry_of(line: &Line) -> Result<Option<JournalEntry>, ()> {
    match line.cut() {
        true if line.head.starts_with(PLAN_STARTED) => Ok(started_head(line, true)),
        true => Ok(None),
        false => serde_json::from_slice(&line.head).map(Some).map_err(|_| ()),
    }
}

/// The newest `count` runs of the journal at `path`: read from the end until the `count`-th
/// `plan_started` line from it, the older part only counted (runs, lines, lines not shaped like
/// an entry). A missing file is an empty journal.
pub fn read_newest(path: &Path, count: usize) -> io::Result<Newest> {
    let Some(mut back) = Backwards::open(path)? else {
        return Ok(Newest::default());
    };
    let mut out = Newest::default();
    // Counted from the end: (how many lines from the end, damaged).
    let mut read_lines = 0usize;
    let mut damaged_from_end = Vec::new();
    let mut started = 0usize;
    while started < count {
        let Some(line) = back.prev()? else {
            break;
        };
        read_lines += 1;
        if line.blank() {
            continue;
        }
        if line.cut() {
            out.cut_lines.push(CutLine::of(&line));
        }
        match entry_of(&line) {
            Ok(Some(e)) => {
                started += usize::from(matches!(e, JournalEntry::PlanStarted { .. }));
                out.entries.push(e);
            }
            Ok(None) => {}
            Err(()) => damaged_from_end.push(read_lines),
        }
    }
    out.entries.reverse();
    let older = if started < count {
        Older::default()
    } else {
        count_older(path, back.start())?
    };
    out.runs_before = older.runs;
    out.damaged_lines = older.damaged;
    out.damaged_lines.extend(
        damaged_from_end
            .iter()
            .rev()
            .map(|k| older.lines + read_lines - k + 1),
    );
    Ok(out)
}

/// What the part of a journal before `stop` holds, counted line by line.
#[derive(Default)]
struct Older {
    lines: usize,
    runs: usize,
    damaged: Vec<usize>,
}

/// Count the lines of the journal before byte `stop`, looking at their first and last bytes
/// only.
fn count_older(path: &Path, stop: u64) -> io::Result<Older> {
    let mut o = Older::default();
    forward(path, (0, Some(stop)), (64, 16), |seen| {
        o.lines += 1;
        let end = if seen.tail.is_empty() {
            seen.head
        } else {
            seen.tail
        };
        let ws = |b: &[u8]| b.iter().all(|b| b.is_ascii_whitespace());
        if ws(seen.head) && ws(end) {
            return;
        }
        let shaped =
            seen.head.starts_with(b"{\"event\":\"") && end.trim_ascii_end().ends_with(b"}");
        if !shaped {
            o.damaged.push(o.lines);
        } else if seen.head.starts_with(PLAN_STARTED) {
            o.runs += 1;
        }
    })?;
    Ok(o)
}

/// The runs of the journal at `path` started after `after_ms` (milliseconds since the epoch),
/// oldest first, without their actions: what the space history adds. Read from the end up to
/// the first run started at or before `after_ms`; `action` lines are passed over unread, and of
/// a `plan_started` line only the head is read.
pub fn runs_started_after(path: &Path, after_ms: u64) -> io::Result<Vec<RunSummary>> {
    let Some(mut back) = Backwards::open(path)? else {
        return Ok(Vec::new());
    };
    let mut entries = Vec::new();
    while let Some((start, len)) = back.prev_span()? {
        if len == 0 || back.starts_with(start, ACTION) {
            continue;
        }
        let line = back.line(start, len, HEAD)?;
        let e = match line.head.starts_with(PLAN_STARTED) {
            true => started_head(&line, false),
            false if line.cut() => None,
            false => serde_json::from_slice::<JournalEntry>(&line.head).ok(),
        };
        let Some(e) = e else {
            continue;
        };
        let done = matches!(e, JournalEntry::PlanStarted { at_ms, .. } if at_ms <= after_ms);
        entries.push(e);
        if done {
            break;
        }
    }
    entries.reverse();
    Ok(runs(&entries)
        .into_iter()
        .filter(|r| r.started_at_ms > after_ms)
        .collect())
}

/// One run's ids and where its `plan_started` line starts in the journal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunIds {
    /// [`super::run_id`] of the run.
    pub run_id: String,
    /// Id of the plan that ran.
    pub plan_id: String,
    /// Byte offset of its `plan_started` line.
    pub offset: u64,
}

/// Every run of the journal at `path`, oldest first, by its ids: what a run id or plan id given
/// by a person is looked up in. Only the ids at the head of `plan_started` lines are read.
pub fn run_ids(path: &Path) -> io::Result<Vec<RunIds>> {
    let mut out = Vec::new();
    forward(path, (0, None), (512, 0), |seen| {
        if !seen.head.starts_with(PLAN_STARTED) {
            return;
        }
        if let Some(ids) = ids_of(seen.head) {
            out.push(RunIds {
                run_id: super::run_id(&ids.plan_id, ids.at_ms),
                plan_id: ids.plan_id,
                offset: seen.offset,
            });
        }
    })?;
    Ok(out)
}

/// The runs of the plans `plan_ids` in the journal at `path`, from the `plan_started` line at
/// byte `from` on, oldest first, with every item, and their lines too long to read whole: only
/// their lines are read as entries, each at most [`MAX_LINE`] long.
pub fn runs_of(
    path: &Path,
    from: u64,
    plan_ids: &[&str],
) -> io::Result<(Vec<RunSummary>, Vec<CutLine>)> {
    let mut entries = Vec::new();
    let mut cut = Vec::new();
    forward(path, (from, None), (MAX_LINE, super::lines::TAIL), |seen| {
        let ours = ids_of(seen.head).is_some_and(|ids| plan_ids.contains(&ids.plan_id.as_str()));
        if !ours {
            return;
        }
        let line = Line {
            offset: seen.offset,
            len: seen.len,
            head: seen.head.to_vec(),
            tail: seen.tail.to_vec(),
        };
        if line.cut() {
            cut.push(CutLine::of(&line));
        }
        if let Ok(Some(e)) = entry_of(&line) {
            entries.push(e);
        }
    })?;
    Ok((runs(&entries), cut))
}

#[cfg(test)]
mod tests;
