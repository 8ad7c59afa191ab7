//! Reading a journal from its end: what `history -n N`, the space history and every scan
//! (which records a point of it) need are the newest runs, so they read backwards, in chunks,
//! and stop as soon as they have them. Memory stays flat in the journal's size: the chunk, the
//! longest line and the entries kept.

use std::fs::File;
use std::io::{self, BufRead};
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::{runs, JournalEntry, RunSummary};

/// The first chunk read from the end; a line longer than what is held doubles the next read.
const CHUNK: usize = 64 * 1024;

/// How a `plan_started` line starts (serde writes the tag first).
const PLAN_STARTED: &[u8] = b"{\"event\":\"plan_started\"";
/// How an `action` line starts.
const ACTION: &[u8] = b"{\"event\":\"action\"";

/// What [`read_newest`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Newest {
    /// The entries of the newest runs, in file order, from the `plan_started` line of the oldest
    /// of them to the end.
    pub entries: Vec<JournalEntry>,
    /// Runs (`plan_started` lines) before those, counted without being read as entries.
    pub runs_before: usize,
    /// 1-based numbers of lines that are not valid entries: in the part read, every line that
    /// does not parse; before it, every line not shaped like an entry (one JSON object of an
    /// event per line), as a crash's truncated line is not.
    pub damaged_lines: Vec<usize>,
}

/// The lines of a file from the last to the first.
struct Backwards {
    file: File,
    /// File offset of `buf[0]`.
    start: u64,
    /// Bytes `[start, start + buf.len())` not yet returned; they end at a line end or the end.
    buf: Vec<u8>,
}

impl Backwards {
    fn open(path: &Path) -> io::Result<Option<Backwards>> {
        let file = match crate::fsread::open_regular(path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let start = file.metadata()?.len();
        Ok(Some(Backwards {
            file,
            start,
            buf: Vec::new(),
        }))
    }

    /// The line before those returned so far (without its newline) and the offset it starts
    /// at; `None` once the start of the file is passed.
    fn prev(&mut self) -> io::Result<Option<(u64, Vec<u8>)>> {
        loop {
            let body = self.buf.strip_suffix(b"\n").unwrap_or(&self.buf);
            if let Some(i) = body.iter().rposition(|b| *b == b'\n') {
                let line = body[i + 1..].to_vec();
                self.buf.truncate(i + 1);
                return Ok(Some((self.start + i as u64 + 1, line)));
            }
            if self.start == 0 {
                if self.buf.is_empty() {
                    return Ok(None);
                }
                let line = body.to_vec();
                self.buf.clear();
                return Ok(Some((0, line)));
            }
            let n = (CHUNK.max(self.buf.len()) as u64).min(self.start);
            let mut more = vec![0; n as usize];
            self.file.read_exact_at(&mut more, self.start - n)?;
            more.extend_from_slice(&self.buf);
            self.buf = more;
            self.start -= n;
        }
    }
}

fn blank(line: &[u8]) -> bool {
    line.iter().all(|b| b.is_ascii_whitespace())
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
    // Where the part read starts (nothing read: the end).
    let mut stop = back.start;
    while started < count {
        let Some((at, line)) = back.prev()? else {
            break;
        };
        read_lines += 1;
        stop = at;
        if blank(&line) {
            continue;
        }
        match serde_json::from_slice::<JournalEntry>(&line) {
            Ok(e) => {
                started += usize::from(matches!(e, JournalEntry::PlanStarted { .. }));
                out.entries.push(e);
            }
            Err(_) => damaged_from_end.push(read_lines),
        }
    }
    out.entries.reverse();
    let older = if started < count {
        Older::default()
    } else {
        count_older(path, stop)?
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

fn count_older(path: &Path, stop: u64) -> io::Result<Older> {
    use std::io::Read;
    let file = crate::fsread::open_regular(path)?;
    let mut r = io::BufReader::with_capacity(CHUNK, file.take(stop));
    let mut o = Older::default();
    let mut line = Vec::new();
    loop {
        line.clear();
        if r.read_until(b'\n', &mut line)? == 0 {
            return Ok(o);
        }
        o.lines += 1;
        let body = line.strip_suffix(b"\n").unwrap_or(&line);
        if blank(body) {
            continue;
        }
        let shaped = body.starts_with(b"{\"event\":\"") && body.trim_ascii_end().ends_with(b"}");
        if !shaped {
            o.damaged.push(o.lines);
        } else if body.starts_with(PLAN_STARTED) {
            o.runs += 1;
        }
    }
}

/// The runs of the journal at `path` started after `after_ms` (milliseconds since the epoch),
/// oldest first, without their actions: what the space history adds. Read from the end up to
/// the first run started at or before `after_ms`; `action` lines are passed over unread.
pub fn runs_started_after(path: &Path, after_ms: u64) -> io::Result<Vec<RunSummary>> {
    let Some(mut back) = Backwards::open(path)? else {
        return Ok(Vec::new());
    };
    let mut entries = Vec::new();
    while let Some((_, line)) = back.prev()? {
        if blank(&line) || line.starts_with(ACTION) {
            continue;
        }
        let Ok(mut e) = serde_json::from_slice::<JournalEntry>(&line) else {
            continue;
        };
        let mut done = false;
        if let JournalEntry::PlanStarted { at_ms, actions, .. } = &mut e {
            done = *at_ms <= after_ms;
            *actions = Vec::new();
        }
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

/// The fields of a line that say which run it belongs to (the rest passed over unread).
#[derive(serde::Deserialize)]
struct Ids {
    plan_id: String,
    #[serde(default)]
    at_ms: u64,
}

/// Calls `each` with the offset and bytes (without the newline) of every line of the journal at
/// `path` from byte `from` on, one line held at a time. A missing file has no lines.
fn each_line(path: &Path, from: u64, mut each: impl FnMut(u64, &[u8])) -> io::Result<()> {
    use std::io::{Seek, SeekFrom};
    let mut file = match crate::fsread::open_regular(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    file.seek(SeekFrom::Start(from))?;
    let mut r = io::BufReader::with_capacity(CHUNK, file);
    let (mut at, mut line) = (from, Vec::new());
    loop {
        line.clear();
        let n = r.read_until(b'\n', &mut line)?;
        if n == 0 {
            return Ok(());
        }
        each(at, line.strip_suffix(b"\n").unwrap_or(&line));
        at += n as u64;
    }
}

/// Every run of the journal at `path`, oldest first, by its ids: what a run id or plan id given
/// by a person is looked up in. Only the ids of `plan_started` lines are read.
pub fn run_ids(path: &Path) -> io::Result<Vec<RunIds>> {
    let mut out = Vec::new();
    each_line(path, 0, |offset, line| {
        if !line.starts_with(PLAN_STARTED) {
            return;
        }
        if let Ok(ids) = serde_json::from_slice::<Ids>(line) {
            out.push(RunIds {
                run_id: super::run_id(&ids.plan_id, ids.at_ms),
                plan_id: ids.plan_id,
                offset,
            });
        }
    })?;
    Ok(out)
}

/// The runs of the plans `plan_ids` in the journal at `path`, from the `plan_started` line at
/// byte `from` on, oldest first, with every item: only their lines are read as entries.
pub fn runs_of(path: &Path, from: u64, plan_ids: &[&str]) -> io::Result<Vec<RunSummary>> {
    let mut entries = Vec::new();
    each_line(path, from, |_, line| {
        let ours = serde_json::from_slice::<Ids>(line)
            .is_ok_and(|ids| plan_ids.contains(&ids.plan_id.as_str()));
        if let Some(e) = ours.then(|| serde_json::from_slice(line).ok()).flatten() {
            entries.push(e);
        }
    })?;
    Ok(runs(&entries))
}

#[cfg(test)]
mod tests;
