//! The scan for a terminal. The first screen answers within 24 lines of the terminal's
//! width: the products, the kinds that free something (largest first, the rest folded into a
//! line), one line for every kind that frees nothing, one for the machines, one for the VM
//! processes, and the next steps. `-v` gives the whole `docker system df`-style table, every
//! machine and process and every item; `--kind` the items of a kind. Everything it prints comes
//! from [`smolsweep::view::ScanView`], so the CLI says what the tray and the window say.

use std::fmt::Write;
use std::time::SystemTime;

use smolsweep::model::FindingKind;
use smolsweep::model::*;
use smolsweep::view::{self, Group, ScanView};
use smolsweep::Filter;

/// The lines the first screen fits in.
pub const SCREEN_LINES: usize = 24;

/// How to render for this terminal.
#[derive(Debug, Clone)]
pub struct RenderOptions {
    /// Columns to fit (80 when not a terminal).
    pub width: usize,
    /// ANSI colour (a terminal, no `NO_COLOR`).
    pub color: bool,
    /// ASCII only (the locale is not UTF-8).
    pub ascii: bool,
    /// Every item, not only the summary.
    pub verbose: bool,
    /// Only the items of these kinds (and the summary).
    pub kinds: Vec<FindingKind>,
    /// List VM processes of other HOMEs too.
    pub all_homes: bool,
    /// Only the totals line.
    pub quiet: bool,
    /// What to narrow the view to (findings, machines, processes, totals, next steps).
    pub filter: Filter,
    /// When the filter's ages are measured from.
    pub now: SystemTime,
}

impl Default for RenderOptions {
    fn default() -> Self {
        RenderOptions {
            width: 80,
            color: false,
            ascii: false,
            verbose: true,
            kinds: Vec::new(),
            all_homes: true,
            quiet: false,
            filter: Filter::default(),
            now: SystemTime::now(),
        }
    }
}

struct Paint(bool);

impl Paint {
    fn wrap(&self, code: &str, s: &str) -> String {
        if self.0 {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
    fn bold(&self, s: &str) -> String {
        self.wrap("1", s)
    }
    fn green(&self, s: &str) -> String {
        self.wrap("32", s)
    }
    fn yellow(&self, s: &str) -> String {
        self.wrap("33", s)
    }
    fn dim(&self, s: &str) -> String {
        self.wrap("2", s)
    }
}

/// Render for a terminal as `o` says (`r` is the whole scan; `o.filter` narrows it).
pub fn render_with(r: &ScanReport, o: &RenderOptions) -> String {
    let v = ScanView::filtered(
        r,
        &smolsweep::plan::Plan::reclaimable_of(r, &o.filter, o.now),
    );
    let paint = Paint(o.color);
    let mut s = String::new();
    if o.quiet {
        totals_line(&mut s, &v, &paint);
        s = s.trim_start_matches('\n').to_string(); // -q: the one line, no blank line first
    } else if o.verbose {
        header(&mut s, &v, o, &paint);
        if v.groups.is_empty() && v.hidden.is_none() {
            let _ = writeln!(s, "Nothing of either SmolVM found.");
        }
        summary_table(&mut s, &v.table_lines(), o, &paint);
        totals_line(&mut s, &v, &paint);
        machines(&mut s, &v, &paint);
        compact(&mut s, &v, o, &paint, true);
        processes(&mut s, &v, o, &paint);
        items(&mut s, &v, o, &paint);
        next_steps(&mut s, &v, o, &paint);
    } else {
        first_screen(&mut s, &v, o, &paint);
    }
    if o.ascii {
        view::ascii(&s)
    } else {
        s
    }
}

/// `text` broken at spaces into lines of at most `width` columns, the first starting with
/// `first`, the others with `rest`; a `command` in backticks and a word longer than a line stay
/// whole.
fn wrap(text: &str, width: usize, first: &str, rest: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    let mut quoted = false;
    for w in text.split(' ') {
        match words.last_mut() {
            Some(last)
                if quoted || crate::cli::out::glued(last.rsplit(' ').next().unwrap_or(last), w) =>
            {
                last.push(' ');
                last.push_str(w);
            }
            _ => words.push(w.to_string()),
        }
        quoted ^= w.matches('`').count() % 2 == 1;
    }
    let mut lines = Vec::new();
    let mut cur = first.to_string();
    let mut empty = true;
    // Laid out as the output fits it (a pid counts as its widest, `out::layout_columns`).
    let mut cur_w = first.chars().count();
    for word in &words {
        let n = crate::cli::out::layout_columns(word) + usize::from(!empty);
        if !empty && cur_w + n > width {
            lines.push(std::mem::replace(&mut cur, rest.to_string()));
            cur_w = rest.chars().count();
            empty = true;
        }
        if !empty {
            cur.push(' ');
            cur_w += 1;
        }
        cur.push_str(word);
        cur_w += crate::cli::out::layout_columns(word);
        empty = false;
    }
    lines.push(cur);
    lines
}

/// The first screen: at most [`SCREEN_LINES`] lines for a typical HOME. What follows the
/// table is laid out first, so the table gets the lines that are left.
fn first_screen(s: &mut String, v: &ScanView, o: &RenderOptions, paint: &Paint) {
    let mut head = String::new();
    header(&mut head, v, o, paint);
    if v.groups.is_empty() && v.hidden.is_none() {
        let _ = writeln!(head, "Nothing of either SmolVM found.");
    }
    let any_rows = v.first_screen(usize::MAX).rows.len();
    let mut tail = String::new();
    if let Some(l) = v.first_screen(usize::MAX).nothing_line(any_rows > 0) {
        for l in wrap(&l, o.width, "", "  ") {
            let _ = writeln!(tail, "{}", paint.dim(&l));
        }
    }
    let nothing_matched = v.groups.is_empty() && v.hidden.is_some();
    if !nothing_matched {
        totals_line(&mut tail, v, paint);
    }
    let lines = [
        v.machines_line(o.width, o.ascii),
        v.processes_line(o.width, o.ascii, o.all_homes),
        v.other_homes_cli_line(o.all_homes),
    ];
    for l in lines.iter().flatten() {
        let (label, rest) = l.split_at(l.find(':').map_or(0, |i| i + 1));
        let _ = writeln!(tail, "{}{rest}", paint.bold(label));
    }
    compact(&mut tail, v, o, paint, false);
    items(&mut tail, v, o, paint);
    next_steps(&mut tail, v, o, paint);
    // The line of other HOMEs' VM processes counts whether or not this machine has any: what the
    // first screen shows of this HOME does not depend on other people's VMs.
    let others_absent =
        v.other_homes_count.is_none() && v.processes_line(o.width, o.ascii, false).is_some();
    let used = head.lines().count()
        + tail.lines().count()
        + usize::from(any_rows > 0)
        + usize::from(others_absent);
    // The rows get what is left, less the folded line's (it may wrap).
    let mut rows = SCREEN_LINES.saturating_sub(used).max(2);
    let (screen, more) = loop {
        let screen = v.first_screen(rows);
        let more = screen
            .more_line()
            .map(|l| wrap(&l, o.width, "", "  "))
            .unwrap_or_default();
        if rows <= 2 || screen.rows.len() + more.len() + used <= SCREEN_LINES {
            break (screen, more);
        }
        rows -= 1;
    };
    s.push_str(&head);
    summary_table(s, &screen.rows, o, paint);
    for l in more {
        let _ = writeln!(s, "{}", paint.dim(&l));
    }
    s.push_str(&tail);
    // A section that is not there leaves no second blank line.
    while s.contains("\n\n\n") {
        *s = s.replace("\n\n\n", "\n\n");
    }
}

fn header(s: &mut String, v: &ScanView, o: &RenderOptions, paint: &Paint) {
    let _ = writeln!(
        s,
        "{}",
        paint.bold(&format!("Smolsweep scan of {} ({})", v.home, v.platform))
    );
    for p in &v.products {
        let ver = p
            .version
            .as_deref()
            .map(|x| format!(" {x}"))
            .unwrap_or_default();
        let status = match p.status {
            "ok" => paint.green("ok"),
            "can't verify" => paint.yellow("can't verify"),
            other => other.to_string(),
        };
        let _ = writeln!(s, "  {}{ver}: {status}", p.name);
        for pr in &p.problems {
            let text = smolsweep::view::escape_text(pr);
            for (i, l) in wrap(&text, o.width, "    ! ", "      ").iter().enumerate() {
                match i {
                    0 => {
                        let rest = l.strip_prefix("    ! ").unwrap_or(l);
                        let _ = writeln!(s, "    {} {rest}", paint.yellow("!"));
                    }
                    _ => {
                        let _ = writeln!(s, "{l}");
                    }
                }
            }
        }
    }
    if let Some(note) = &v.filter_note {
        for l in wrap(note, o.width, "", "  ") {
            let _ = writeln!(s, "{}", paint.yellow(&l));
        }
    }
    s.push('\n');
}

/// Fit `text` into `w` characters, ending in "…" (ASCII: "...") when cut.
fn fit(text: &str, w: usize, ascii: bool) -> String {
    if text.chars().count() <= w {
        return text.to_string();
    }
    let ell = if ascii { "..." } else { "…" };
    let mut out: String = text
        .chars()
        .take(w.saturating_sub(ell.chars().count()))
        .collect();
    out.push_str(ell);
    out
}

fn summary_table(s: &mut String, lines: &[view::TableLine<'_>], o: &RenderOptions, paint: &Paint) {
    if lines.is_empty() {
        return;
    }
    // WHAT takes what the other columns leave: PRODUCT 7, ITEMS 5, SIZE 9, VERDICT 12, two
    // spaces between columns.
    let fixed = 7 + 5 + 9 + 12 + 4 * 2;
    let longest = lines.iter().map(|l| l.group.label.chars().count()).max();
    let what = o
        .width
        .saturating_sub(fixed + 1)
        .clamp(12, longest.unwrap_or(12).max(12));
    let line = |what_col: &str, p: &str, n: &str, size: &str, verdict: &str| {
        format!("{what_col:<what$}  {p:<7}  {n:>5}  {size:>9}  {verdict}")
    };
    let _ = writeln!(
        s,
        "{}",
        paint.bold(line("WHAT", "PRODUCT", "ITEMS", "SIZE", "VERDICT").trim_end())
    );
    for l in lines {
        let row = line(
            &fit(l.group.label, what, o.ascii),
            l.group.product.as_str(),
            &l.count.to_string(),
            &l.size,
            l.word,
        );
        let row = match l.verdict {
            Verdict::Reclaimable => paint.green(&row),
            Verdict::OptIn => row,
            _ => paint.dim(&row),
        };
        let _ = writeln!(s, "{}", row.trim_end());
    }
}

fn totals_line(s: &mut String, v: &ScanView, paint: &Paint) {
    let t = &v.totals;
    let _ = writeln!(
        s,
        "\n{} {} in {}; opt-in: {} in {}.",
        paint.bold("Reclaimable:"),
        paint.green(&t.reclaimable),
        t.reclaimable_items,
        t.opt_in,
        t.opt_in_items,
    );
}

fn machines(s: &mut String, v: &ScanView, paint: &Paint) {
    if v.machines.is_empty() {
        return;
    }
    let _ = writeln!(s, "\n{}", paint.bold(v.machines_heading()));
    for m in &v.machines {
        let pid = m.pid.map(|p| format!(" (pid {p})")).unwrap_or_default();
        let size = m
            .size
            .as_deref()
            .map(|x| format!(", {x}"))
            .unwrap_or_default();
        let state = if m.stale {
            paint.yellow(&m.state)
        } else {
            m.state.clone()
        };
        let role = m.role.map(|r| format!(" — {r}")).unwrap_or_default();
        let compact = m
            .compactable
            .as_deref()
            .map(|x| format!(", {x}"))
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "  {:<8} {:<9} {:<24} {state}{pid}{size}{compact}{role}",
            m.product.as_str(),
            m.noun,
            smolsweep::view::escape_text(&m.name)
        );
    }
}

/// The compaction line (the core's), and with `each` one line per disk.
fn compact(s: &mut String, v: &ScanView, o: &RenderOptions, paint: &Paint, each: bool) {
    if v.hidden.as_ref().is_some_and(|h| h.items_only) {
        return;
    }
    let line = if each {
        &v.compact.detail
    } else {
        &v.compact.line
    };
    let Some(l) = line else {
        return;
    };
    let rest = l.strip_prefix("Compactable:").unwrap_or(l);
    let mut lines = wrap(rest, o.width.saturating_sub(12), "", "  ").into_iter();
    let _ = writeln!(
        s,
        "{}{}",
        paint.bold("Compactable:"),
        lines.next().unwrap_or_default()
    );
    for l in lines {
        let _ = writeln!(s, "{l}");
    }
    if each {
        for d in &v.compact.disk_lines {
            for l in wrap(d, o.width, "  ", "    ") {
                let _ = writeln!(s, "{l}");
            }
        }
    }
}

fn processes(s: &mut String, v: &ScanView, o: &RenderOptions, paint: &Paint) {
    // This HOME's running VMs (the one count), its VM processes listed; other HOMEs' apart.
    let (label, rest) = v
        .vms_line
        .split_at(v.vms_line.find(':').map_or(0, |i| i + 1));
    let _ = writeln!(s, "\n{}{rest}", paint.bold(label));
    for p in v.processes.iter().filter(|p| p.this_home) {
        process(s, p, paint);
    }
    if let Some(l) = v.other_homes_cli_line(o.all_homes) {
        let (label, rest) = l.split_at(l.find(':').map_or(0, |i| i + 1));
        let _ = writeln!(s, "{}{rest}", paint.bold(label));
        if o.all_homes {
            for p in v.processes.iter().filter(|p| !p.this_home) {
                process(s, p, paint);
            }
        }
    }
}

/// One VM process of `-v`: pid, what, whose, its tags, and why.
fn process(s: &mut String, p: &view::ProcessRow, paint: &Paint) {
    let mut tags = Vec::new();
    if !p.this_home {
        tags.push("another HOME's".to_string());
    }
    if p.orphan {
        tags.push(paint.yellow("orphan"));
    }
    if let Some(h) = &p.held_deleted {
        tags.push(format!("holds {h} of deleted files"));
    }
    let _ = writeln!(
        s,
        "  pid {:<7} {:<22} {:<16} {}\n      {}",
        p.pid,
        p.what,
        p.owner.as_deref().unwrap_or("-"),
        tags.join(", "),
        p.reason
    );
}

fn listed<'v>(v: &'v ScanView, o: &RenderOptions) -> Vec<&'v Group> {
    v.groups
        .iter()
        // Under `--kind` the view holds the chosen kinds' items whole (their companions, logs
        // and locks too): every one of them is listed, as every one is counted.
        .filter(|_| o.verbose || !o.kinds.is_empty())
        .collect()
}

fn items(s: &mut String, v: &ScanView, o: &RenderOptions, paint: &Paint) {
    for g in listed(v, o) {
        let _ = writeln!(
            s,
            "\n{} {} {}",
            paint.bold(g.label),
            paint.dim(&format!(
                "({}, --kind {})",
                g.product.display_name(),
                g.kind
            )),
            paint.dim(&format!("- {}", g.meaning))
        );
        // An item is three lines: its verdict, size and id; its path; why (issue 31: a row
        // fits the terminal; the path is whole under -v, shortened from the middle otherwise).
        let path_w = o.width.saturating_sub(6).max(20);
        for r in &g.rows {
            let size = match &r.apparent {
                Some(a) => format!("{} (apparent {a})", r.size),
                None => r.size.clone(),
            };
            let word = view::verdict_word(r.verdict);
            let word = match r.verdict {
                Verdict::Reclaimable => paint.green(&format!("{word:<12}")),
                Verdict::Unknown => paint.yellow(&format!("{word:<12}")),
                _ => format!("{word:<12}"),
            };
            let path = if r.path.chars().count() > path_w && !o.verbose {
                view::short_path(std::path::Path::new(&r.path), path_w - 2 * o.ascii as usize)
            } else {
                r.path.clone()
            };
            let _ = writeln!(
                s,
                "  {word}  {size}  {}\n      {path}",
                paint.dim(&format!("id {}", r.id)),
            );
            for l in wrap(&r.reason, o.width, "      ", "      ") {
                let _ = writeln!(s, "{l}");
            }
        }
    }
}

fn next_steps(s: &mut String, v: &ScanView, o: &RenderOptions, paint: &Paint) {
    let mut steps = v.next_steps.clone();
    if let Some(h) = v.hidden.as_ref().filter(|h| h.matching == 0 && h.items > 0) {
        steps.push(format!(
            "`smolsweep scan` without {} lists all {} items.",
            h.flags, h.items
        ));
    }
    if !o.verbose && !v.groups.is_empty() {
        let flags = v
            .hidden
            .as_ref()
            .map_or(String::new(), |h| format!(" {}", h.flags));
        let example = v.first_screen(1).rows.first().map(|l| l.group.kind.short());
        steps.push(match example {
            Some(k) if o.kinds.is_empty() => {
                format!("`smolsweep scan -v{flags}` lists every item; `--kind {k}` one kind.")
            }
            _ => format!("`smolsweep scan -v{flags}` lists every item."),
        });
    }
    for (i, step) in steps.iter().enumerate() {
        let first = if i == 0 { "Next: " } else { "      " };
        for (j, l) in wrap(step, o.width, first, "        ").iter().enumerate() {
            match (i, j) {
                (0, 0) => {
                    let rest = l.strip_prefix("Next: ").unwrap_or(l);
                    let _ = writeln!(s, "\n{} {rest}", paint.bold("Next:"));
                }
                _ => {
                    let _ = writeln!(s, "{l}");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::wrap;

    #[test]
    fn wrapping_keeps_commands_whole_and_lines_within_the_width() {
        let text =
            "`smolsweep prune --product smolvm --include-caches` also frees 21.2 MB of caches.";
        let lines = wrap(text, 60, "Next: ", "        ");
        assert_eq!(
            lines[0],
            "Next: `smolsweep prune --product smolvm --include-caches`"
        );
        assert_eq!(lines[1], "        also frees 21.2 MB of caches.");
        assert_eq!(wrap("a b", 80, "", ""), vec!["a b".to_string()]);
        for l in wrap(&"word ".repeat(40), 30, "", "  ") {
            assert!(l.chars().count() <= 30, "{l:?}");
        }
    }
}
