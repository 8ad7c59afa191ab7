//! The journal's lines, read in bounded memory whatever their length: a line longer than
//! [`MAX_LINE`] is never held whole. It is read as its first [`MAX_LINE`] bytes (which hold
//! every field a reader asks of it: the event, the time, the ids) and its last [`TAIL`] bytes
//! (a `plan_started` line's origin), with its length, and is shown cut, with its size.
//!
//! Lines are found with `memchr` in windows of [`CHUNK`] bytes, read with `pread`, from the end
//! ([`Backwards`]) or from an offset on ([`forward`]); a line inside a window is looked at in
//! place, never copied unless kept. What a reader holds of the journal at once is a window, a
//! line's head and a line's tail: [`held`] (tests) is the most it held.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// Bytes read at a time.
pub(crate) const CHUNK: usize = 256 * 1024;
/// The longest line held whole; of a longer line only its head and tail are held.
pub const MAX_LINE: usize = 4 << 20;
/// How much of the end of a cut line is held.
pub(crate) const TAIL: usize = 64 * 1024;

/// One line (without its newline): whole, or its head and its tail when it is cut.
#[derive(Debug, Clone, Default)]
pub(crate) struct Line {
    /// Byte offset where it starts.
    pub offset: u64,
    /// Its length in bytes.
    pub len: u64,
    /// The line, or its first [`MAX_LINE`] bytes.
    pub head: Vec<u8>,
    /// The last [`TAIL`] bytes of a cut line (empty for a whole one).
    pub tail: Vec<u8>,
}

impl Line {
    /// Whether only its head and tail were read.
    pub(crate) fn cut(&self) -> bool {
        self.len > self.head.len() as u64
    }

    /// Whether it holds nothing but white space (a cut line never does).
    pub(crate) fn blank(&self) -> bool {
        !self.cut() && self.head.iter().all(|b| b.is_ascii_whitespace())
    }
}

#[cfg(test)]
thread_local! {
    /// The most bytes of a journal a reader on this thread held at once.
    static HELD: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// A reader holds `n` bytes of the journal at once now.
fn holding(n: usize) {
    #[cfg(test)]
    HELD.with(|h| h.set(h.get().max(n)));
    #[cfg(not(test))]
    let _ = n;
}

/// The most bytes of a journal a reader on this thread held at once since the last call (the
/// bound tests assert).
#[cfg(test)]
pub(crate) fn held() -> usize {
    HELD.with(|h| h.replace(0))
}

/// `file`'s bytes `[at, at + len)` (fewer at its end).
fn read_at(file: &File, at: u64, len: usize) -> io::Result<Vec<u8>> {
    let mut buf = vec![0; len];
    let mut got = 0;
    while got < len {
        match file.read_at(&mut buf[got..], at + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(got);
    Ok(buf)
}

/// The lines of a file from the last to the first.
pub(crate) struct Backwards {
    file: File,
    /// Where the line returned next ends (with its newline, if it has one).
    pos: u64,
    /// The file's bytes `[win_at, win_at + win.len())`.
    win: Vec<u8>,
    win_at: u64,
}

impl Backwards {
    /// The reader of the journal at `path`; `None` when there is none.
    pub(crate) fn open(path: &Path) -> io::Result<Option<Backwards>> {
        let file = match crate::fsread::open_regular(path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let pos = file.metadata()?.len();
        Ok(Some(Backwards {
            file,
            pos,
            win: Vec::new(),
            win_at: 0,
        }))
    }

    /// Where the part not returned yet ends: the offset of the last line returned.
    pub(crate) fn start(&self) -> u64 {
        self.pos
    }

    /// Make the window hold the bytes right before `at` (`at` > 0).
    fn window_before(&mut self, at: u64) -> io::Result<()> {
        let end = self.win_at + self.win.len() as u64;
        if self.win_at < at && at <= end {
            return Ok(());
        }
        let from = at.saturating_sub(CHUNK as u64);
        self.win = read_at(&self.file, from, (at - from) as usize)?;
        self.win_at = from;
        holding(self.win.len());
        Ok(())
    }

    /// The line before those returned so far; `None` once the start of the file is passed.
    pub(crate) fn prev(&mut self) -> io::Result<Option<Line>> {
        match self.prev_span()? {
            Some((start, len)) => self.line(start, len, MAX_LINE).map(Some),
            None => Ok(None),
        }
    }

    /// Where the line before those returned so far starts, and its length, without reading
    /// it ([`Backwards::line`] does); `None` once the start of the file is passed.
    pub(crate) fn prev_span(&mut self) -> io::Result<Option<(u64, u64)>> {
        if self.pos == 0 {
            return Ok(None);
        }
        self.window_before(self.pos)?;
        let mut end = self.pos;
        if self.win.get((end - 1 - self.win_at) as usize) == Some(&b'\n') {
            end -= 1;
        }
        let mut at = end;
        let start = loop {
            if at == 0 {
                break 0;
            }
            self.window_before(at)?;
            let w = &self.win[..(at - self.win_at) as usize];
            match memchr::memrchr(b'\n', w) {
                Some(i) => break self.win_at + i as u64 + 1,
                None => at = self.win_at,
            }
        };
        self.pos = start;
        Ok(Some((start, end - start)))
    }

    /// Whether the line starting at `start` (in the window: the one [`Backwards::prev_span`]
    /// just gave) starts with `prefix`.
    pub(crate) fn starts_with(&self, start: u64, prefix: &[u8]) -> bool {
        let from = start.saturating_sub(self.win_at) as usize;
        match start >= self.win_at {
            true => self.win.get(from..).is_some_and(|w| w.starts_with(prefix)),
            false => read_at(&self.file, start, prefix.len()).is_ok_and(|b| b == prefix),
        }
    }

    /// The line `[start, start + len)`: whole when it is at most `head_max` (at most
    /// [`MAX_LINE`]) long, else its first `head_max` bytes and its last [`TAIL`]; from the
    /// window when it is there.
    pub(crate) fn line(&self, start: u64, len: u64, head_max: usize) -> io::Result<Line> {
        let head_max = head_max.min(MAX_LINE);
        let in_window = start >= self.win_at
            && start + len <= self.win_at + self.win.len() as u64
            && len as usize <= head_max;
        if in_window {
            let from = (start - self.win_at) as usize;
            let head = self.win[from..from + len as usize].to_vec();
            holding(self.win.len() + head.len());
            return Ok(Line {
                offset: start,
                len,
                head,
                tail: Vec::new(),
            });
        }
        read_line(&self.file, (start, len), head_max, self.win.len())
    }
}

/// The line `[start, start + len)` of `file` read with `pread`: whole, or its head (`head_max`
/// bytes) and tail.
fn read_line(
    file: &File,
    (start, len): (u64, u64),
    head_max: usize,
    also_held: usize,
) -> io::Result<Line> {
    let head = read_at(file, start, (len as usize).min(head_max))?;
    let tail = match len as usize > head_max {
        true => {
            let n = (TAIL as u64).min(len);
            read_at(file, start + len - n, n as usize)?
        }
        false => Vec::new(),
    };
    holding(also_held + head.len() + tail.len());
    Ok(Line {
        offset: start,
        len,
        head,
        tail,
    })
}

/// What [`forward`] shows of each line: where it starts, its length, and its bytes (whole
/// when it is at most `head_max` long, else the first `head_max` and the last `tail_max`).
pub(crate) struct Seen<'a> {
    pub offset: u64,
    pub len: u64,
    pub head: &'a [u8],
    pub tail: &'a [u8],
}

/// Calls `each` with every line of the file at `path` from byte `from` to byte `to` (the end
/// when `None`), in order. Of a line longer than `head_max` (at most [`MAX_LINE`]) only the
/// first `head_max` bytes and the last `tail_max` (at most [`TAIL`]) are shown and held. A
/// missing file has no lines.
pub(crate) fn forward(
    path: &Path,
    (from, to): (u64, Option<u64>),
    (head_max, tail_max): (usize, usize),
    mut each: impl FnMut(Seen<'_>),
) -> io::Result<()> {
    let file = match crate::fsread::open_regular(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    let to = match to {
        Some(t) => t,
        None => file.metadata()?.len(),
    };
    let (head_max, tail_max) = (head_max.min(MAX_LINE), tail_max.min(TAIL));
    // A line running past a window: where it starts, its head so far, its last bytes so far.
    let mut open: Option<(u64, Vec<u8>, Vec<u8>)> = None;
    let mut at = from;
    while at < to {
        let win = read_at(&file, at, CHUNK.min((to - at) as usize))?;
        if win.is_empty() {
            break;
        }
        let mut i = 0;
        for nl in memchr::memchr_iter(b'\n', &win).chain([win.len()]) {
            let last = nl == win.len();
            let piece = &win[i..nl];
            let ends = !last || at + win.len() as u64 >= to;
            i = nl + 1;
            if last && piece.is_empty() && open.is_none() {
                break;
            }
            if open.is_none() && ends {
                // Within the window: looked at in place.
                let len = piece.len();
                each(Seen {
                    offset: at + (nl - len) as u64,
                    len: len as u64,
                    head: &piece[..len.min(head_max)],
                    tail: match len > head_max {
                        true => &piece[len - len.min(tail_max)..],
                        false => &[],
                    },
                });
                continue;
            }
            let start = at + (nl - piece.len()) as u64;
            let (_, head, tail) = open.get_or_insert_with(|| (start, Vec::new(), Vec::new()));
            let room = head_max.saturating_sub(head.len());
            head.extend_from_slice(&piece[..piece.len().min(room)]);
            tail.extend_from_slice(&piece[piece.len().saturating_sub(tail_max)..]);
            let extra = tail.len().saturating_sub(tail_max);
            tail.drain(..extra);
            holding(win.len() + head.len() + tail.len());
            if let Some((start, head, tail)) = open.take_if(|_| ends) {
                let len = at + nl as u64 - start;
                let whole = len as usize <= head_max;
                each(Seen {
                    offset: start,
                    len,
                    head: &head,
                    tail: if whole { &[] } else { &tail },
                });
            }
        }
        holding(win.len());
        at += win.len() as u64;
    }
    Ok(())
}
