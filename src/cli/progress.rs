//! Progress of a run on stderr: items and bytes done of the total.
//!
//! On a terminal one bar line that is redrawn in place (`\r`); otherwise plain lines, one each
//! time another tenth of the items is done (so a log of a 600-item prune has about ten). With
//! `-v` one line per item as it finishes. Nothing with `--json` or `--quiet`.

use std::cell::RefCell;
use std::io::{IsTerminal, Write};

use smolsweep::exec::{Outcome, ProgressEvent};
use smolsweep::model::human_bytes;
use smolsweep::plan::{Action, Plan};

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// Nothing (`--json`, `--quiet`).
    Off,
    /// A bar redrawn in place on a terminal.
    Bar,
    /// Plain lines (stderr is not a terminal).
    Lines,
}

impl Style {
    /// The style for stderr as it is now.
    pub fn for_stderr(silent: bool) -> Style {
        if silent {
            Style::Off
        } else if std::io::stderr().is_terminal() {
            Style::Bar
        } else {
            Style::Lines
        }
    }
}

/// The bytes an action is expected to free (0 for actions that free nothing themselves).
pub fn action_bytes(a: &Action) -> u64 {
    match a {
        Action::DeletePath { expected_bytes, .. } | Action::RemoveTree { expected_bytes, .. } => {
            *expected_bytes
        }
        Action::DeleteMachine { bytes, .. } => *bytes,
        Action::CompactDisk { expected_bytes, .. } => *expected_bytes,
        _ => 0,
    }
}

/// Per-action bytes of `plan`, in executor order.
pub fn plan_bytes(plan: &Plan) -> Vec<u64> {
    plan.actions
        .iter()
        .map(|a| action_bytes(&a.action))
        .collect()
}

/// The width of the terminal on stderr, when it is one.
fn stderr_columns() -> Option<usize> {
    crate::cli::out::terminal_columns(libc::STDERR_FILENO)
}

#[derive(Default)]
struct State {
    done_items: usize,
    done_bytes: u64,
    /// Tenths of the items already reported in `Lines` style.
    tenths_shown: usize,
    /// A bar is on the screen (and must be cleared before other output).
    bar_drawn: bool,
}

/// Listens to the executor's [`ProgressEvent`]s and draws progress on stderr.
pub struct Progress {
    style: Style,
    verbose: bool,
    bytes: Vec<u64>,
    /// The sum of `bytes`.
    sum_bytes: u64,
    /// The total shown: the plan's estimate (each inode once), so progress ends at the number
    /// the confirmation named; bytes done are scaled to it.
    total_bytes: u64,
    width: usize,
    state: RefCell<State>,
}

impl Progress {
    /// `bytes[i]` is what action `i` is expected to free; `estimate` the plan's total (the
    /// sum of `bytes` when `None`).
    pub fn new(style: Style, verbose: bool, bytes: Vec<u64>, estimate: Option<u64>) -> Progress {
        let width = std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.parse::<usize>().ok())
            .or_else(stderr_columns)
            .unwrap_or(80);
        Progress::with_width(style, verbose, bytes, estimate, width)
    }

    /// [`Progress::new`] for a terminal `width` columns wide (at least 20 are used).
    fn with_width(
        style: Style,
        verbose: bool,
        bytes: Vec<u64>,
        estimate: Option<u64>,
        width: usize,
    ) -> Progress {
        let sum_bytes: u64 = bytes.iter().sum();
        let total_bytes = estimate.unwrap_or(sum_bytes);
        let width = width.max(20);
        Progress {
            style,
            verbose,
            bytes,
            sum_bytes,
            total_bytes,
            width,
            state: RefCell::new(State::default()),
        }
    }

    /// The callback to hand to the executor.
    pub fn event(&self, ev: &ProgressEvent) {
        if self.style == Style::Off {
            return;
        }
        match ev {
            ProgressEvent::Started { total, summary, .. } => {
                if self.style == Style::Bar {
                    let st = self.state.borrow();
                    let line = self.bar_line(st.done_items, *total, st.done_bytes, summary);
                    drop(st);
                    self.draw(&line);
                }
            }
            ProgressEvent::Finished {
                index,
                total,
                summary,
                outcome,
                freed_bytes,
            } => {
                let mut st = self.state.borrow_mut();
                st.done_items += 1;
                st.done_bytes += self.bytes.get(*index).copied().unwrap_or(0);
                let (items, bytes) = (st.done_items, st.done_bytes);
                let tenths = items * 10 / (*total).max(1);
                let new_tenth = tenths > st.tenths_shown;
                if new_tenth {
                    st.tenths_shown = tenths;
                }
                drop(st);
                if self.verbose {
                    self.line(&format!(
                        "[{items}/{total}] {}",
                        outcome_line(summary, outcome, *freed_bytes)
                    ));
                } else if self.style == Style::Lines && new_tenth {
                    self.line(&self.counts(items, *total, bytes));
                }
                if self.style == Style::Bar && items == *total {
                    self.clear();
                }
            }
        }
    }

    /// Clear a bar still on the screen (call before printing the result).
    pub fn finish(&self) {
        self.clear();
    }

    /// Bytes done, on the scale of the total shown.
    fn scaled(&self, bytes: u64) -> u64 {
        if self.sum_bytes == 0 || self.sum_bytes == self.total_bytes {
            return bytes.min(self.total_bytes);
        }
        (bytes as u128 * self.total_bytes as u128 / self.sum_bytes as u128) as u64
    }

    fn counts(&self, items: usize, total: usize, bytes: u64) -> String {
        let bytes = self.scaled(bytes);
        format!(
            "{items}/{total} items, {} of {}",
            human_bytes(bytes),
            human_bytes(self.total_bytes)
        )
    }

    fn bar_line(&self, items: usize, total: usize, bytes: u64, summary: &str) -> String {
        const BAR: usize = 20;
        let filled = if self.total_bytes > 0 {
            (self.scaled(bytes).min(self.total_bytes) as u128 * BAR as u128
                / self.total_bytes as u128) as usize
        } else {
            items * BAR / total.max(1)
        };
        let counts = self.counts(items, total, bytes);
        let mut line = format!(
            "[{}{}] {counts}  ",
            "#".repeat(filled),
            "-".repeat(BAR - filled)
        );
        // A narrow terminal: the counts alone, cut to fit (the bar is redrawn on one line).
        if line.chars().count() + 1 > self.width {
            return counts.chars().take(self.width - 1).collect();
        }
        let room = self.width.saturating_sub(line.chars().count() + 1);
        let s: String = if summary.chars().count() > room {
            let keep = room.saturating_sub(1);
            // ASCII: the locale may not be UTF-8.
            summary
                .chars()
                .take(keep.saturating_sub(2))
                .chain("...".chars())
                .collect()
        } else {
            summary.to_string()
        };
        line.push_str(&s);
        line
    }

    fn draw(&self, line: &str) {
        let mut e = std::io::stderr().lock();
        let _ = write!(e, "\r\x1b[K{line}");
        let _ = e.flush();
        self.state.borrow_mut().bar_drawn = true;
    }

    fn clear(&self) {
        let mut st = self.state.borrow_mut();
        if st.bar_drawn {
            let mut e = std::io::stderr().lock();
            let _ = write!(e, "\r\x1b[K");
            let _ = e.flush();
            st.bar_drawn = false;
        }
    }

    /// A whole line, above the bar when there is one; at a terminal fit to its width (wrapped
    /// at spaces, a long path shortened from the middle), ASCII when the locale is not UTF-8.
    fn line(&self, s: &str) {
        self.clear();
        let text = self.fitted(s);
        let mut e = std::io::stderr().lock();
        let _ = writeln!(e, "{text}");
    }

    /// `s` as [`Progress::line`] writes it.
    fn fitted(&self, s: &str) -> String {
        if self.style != Style::Bar {
            return s.to_string();
        }
        let ascii = !crate::cli::out::utf8_locale();
        let s = match ascii {
            true => smolsweep::view::ascii(s),
            false => s.to_string(),
        };
        crate::cli::out::fit(&s, self.width, ascii)
    }
}

/// One item's result as the run lists it (the core's sentence), with what it freed.
pub(crate) fn outcome_line(summary: &str, o: &Outcome, freed_bytes: u64) -> String {
    smolsweep::view::outcome_line(summary, o, freed_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn done() -> Outcome {
        Outcome::Done {
            detail: String::new(),
        }
    }

    #[test]
    fn bar_line_fits_the_width_and_counts_bytes() {
        let p = Progress::new(Style::Bar, false, vec![1 << 20, 3 << 20], None);
        let l = p.bar_line(1, 2, 1 << 20, &"x".repeat(300));
        assert!(l.chars().count() <= 80, "{l}");
        assert!(l.starts_with("[#####---------------] 1/2 items"), "{l}");
    }

    /// Hazard (issue 39, item 7): progress lines ran past the terminal's edge (a narrow
    /// terminal got an 80-column bar; a compaction's line per disk was a whole path long).
    #[test]
    fn progress_lines_fit_the_terminal() {
        for width in [20, 30, 45, 80, 120] {
            let p = Progress::with_width(Style::Bar, true, vec![1 << 30; 3], None, width);
            let l = p.bar_line(1, 3, 1 << 30, &"delete file /x/y".repeat(20));
            assert!(l.chars().count() < width, "{width}: {l}");
            let line = format!(
                "[1/3] {}",
                outcome_line(
                    &format!(
                        "compact smol-machines smolvm disk /home/u/{}/storage.raw of m1",
                        "d".repeat(90)
                    ),
                    &done(),
                    12 << 20
                )
            );
            for l in p.fitted(&line).lines() {
                assert!(l.chars().count() <= width, "{width}: {l:?}");
            }
            assert!(p.fitted(&line).contains("12.6 MB"), "{}", p.fitted(&line));
        }
    }

    #[test]
    fn bytes_are_shown_on_the_scale_of_the_estimate() {
        // Two hard links to one 4 MB file: 8 MB of items, 4 MB to free.
        let p = Progress::new(Style::Lines, false, vec![4 << 20, 4 << 20], Some(4 << 20));
        assert_eq!(p.counts(1, 2, 4 << 20), "1/2 items, 2.1 MB of 4.2 MB");
        assert_eq!(p.counts(2, 2, 8 << 20), "2/2 items, 4.2 MB of 4.2 MB");
    }

    #[test]
    fn lines_style_reports_each_tenth_once() {
        let p = Progress::new(Style::Lines, false, vec![0; 100], None);
        for i in 0..100 {
            p.event(&ProgressEvent::Finished {
                index: i,
                total: 100,
                summary: "s".into(),
                outcome: done(),
                freed_bytes: 0,
            });
        }
        assert_eq!(p.state.borrow().tenths_shown, 10);
        assert_eq!(p.state.borrow().done_items, 100);
    }
}
