//! Drawing the browser's state on a ratatui frame. The texts are the core view's; this lays
//! them out (columns, a cursor, the open/closed marker, ASCII under a non-UTF-8 locale) and
//! adds only the key help.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Wrap};
use ratatui::Frame;
use smolsweep::model::Verdict;
use smolsweep::view;

use super::state::{App, Entry, Finished, Review, Running, Screen};

/// The columns after WHAT, as the scan's table has them: PRODUCT 7, ITEMS 5, SIZE 9,
/// RECLAIMABLE 11, OPT-IN 9, two spaces between columns.
const FIXED: usize = 7 + 5 + 9 + 11 + 9 + 5 * 2;
/// Cursor, open/closed marker, space.
const LEAD: usize = 3;

/// Draw `app` on `f`.
pub(crate) fn draw(f: &mut Frame, app: &mut App) {
    let area = f.area();
    match app.screen.clone() {
        Screen::Scanning => {
            let s = smolsweep::tray::TrayModel::scanning().status;
            f.render_widget(Paragraph::new(text(app, &s)), area);
        }
        Screen::List | Screen::Quit => list_screen(f, app, area),
        Screen::Help => help_screen(f, app, area),
        Screen::Review(r) => review_screen(f, app, &r, area),
        Screen::Running(r) => running_screen(f, app, &r, area),
        Screen::Finished(d) => finished_screen(f, app, &d, area),
    }
}

/// `s` as the terminal can show it: ASCII when the locale is not UTF-8.
fn text(app: &App, s: &str) -> String {
    if app.ascii {
        view::ascii(s)
    } else {
        s.to_string()
    }
}

/// `s` in at most `w` characters, ending in "…" ("..." in ASCII) when cut.
fn fit(app: &App, s: &str, w: usize) -> String {
    if s.chars().count() <= w {
        return s.to_string();
    }
    let ell = if app.ascii { "..." } else { "…" };
    let keep = w.saturating_sub(ell.chars().count());
    s.chars().take(keep).collect::<String>() + ell
}

fn style(app: &App, color: Color) -> Style {
    if app.color {
        Style::default().fg(color)
    } else {
        Style::default()
    }
}

fn bold() -> Style {
    Style::default().add_modifier(Modifier::BOLD)
}

/// The head of the list screen: the scan's title, the products (with their problems), the
/// filter's note, the table header.
fn head_lines(app: &App, width: usize) -> Vec<Line<'static>> {
    let Some(v) = &app.view else {
        return Vec::new();
    };
    let mut out = vec![Line::styled(
        text(
            app,
            &format!("Smolsweep scan of {} ({})", v.home, v.platform),
        ),
        bold(),
    )];
    let products: Vec<String> = v
        .products
        .iter()
        .map(|p| {
            let ver = p
                .version
                .as_deref()
                .map(|x| format!(" {x}"))
                .unwrap_or_default();
            format!("{}{ver}: {}", p.name, p.status)
        })
        .collect();
    out.push(Line::raw(text(app, &format!("  {}", products.join("   ")))));
    for p in v.products.iter().flat_map(|p| p.problems.iter()).take(2) {
        let l = fit(app, &format!("  ! {}", view::escape_text(p)), width);
        out.push(Line::styled(text(app, &l), style(app, Color::Yellow)));
    }
    // The machines of both products, one line, as the scan's first screen has it; then the one
    // count of running VMs, other HOMEs' apart.
    if let Some(l) = v.machines_line(width, app.ascii) {
        out.push(Line::raw(text(app, &l)));
    }
    let count = match &v.other_homes_count {
        Some(o) => format!("{}; {o}", v.vms_line),
        None => v.vms_line.clone(),
    };
    out.push(Line::raw(text(app, &fit(app, &count, width))));
    if let Some(note) = &v.filter_note {
        out.push(Line::styled(
            text(app, &fit(app, note, width)),
            style(app, Color::Yellow),
        ));
    }
    let what = what_width(app, width);
    out.push(Line::styled(
        table_line(
            " ".repeat(LEAD),
            "WHAT",
            what,
            ["PRODUCT", "ITEMS", "SIZE", "RECLAIMABLE", "OPT-IN"],
        ),
        bold(),
    ));
    out
}

/// The WHAT column: what the number columns leave, at most the longest label.
fn what_width(app: &App, width: usize) -> usize {
    let longest = app
        .view
        .as_ref()
        .and_then(|v| v.groups.iter().map(|g| g.label.chars().count()).max())
        .unwrap_or(12);
    width
        .saturating_sub(FIXED + LEAD)
        .clamp(12, longest.max(12))
}

fn table_line(lead: String, what: &str, w: usize, c: [&str; 5]) -> String {
    format!(
        "{lead}{what:<w$}  {:<7}  {:>5}  {:>9}  {:>11}  {:>9}",
        c[0], c[1], c[2], c[3], c[4]
    )
    .trim_end()
    .to_string()
}

/// "-" for no item, else the bytes in the core's words ("0 B" for items of no bytes: they
/// are counted, so they are shown).
fn dash_or(items: usize, n: u64) -> String {
    if items == 0 {
        "-".into()
    } else {
        view::bytes(n)
    }
}

/// One line of the list.
fn entry_line(app: &App, e: Entry, at_cursor: bool, width: usize) -> Line<'static> {
    let cursor = if at_cursor { ">" } else { " " };
    let (s, color) = match e {
        Entry::Group(g) => {
            let Some(grp) = app.group(g) else {
                return Line::raw("");
            };
            let open = app.open.contains(&grp.kind);
            let marker = match (open, app.ascii) {
                (true, false) => "▾",
                (false, false) => "▸",
                (true, true) => "-",
                (false, true) => "+",
            };
            let what = what_width(app, width);
            // Marked items are counted on their group, open or closed (issue 31).
            let marked = grp
                .rows
                .iter()
                .filter(|r| app.marked.contains(&r.id))
                .count();
            let label = match marked {
                0 => fit(app, grp.label, what),
                n => {
                    let tail = format!(" ({})", view::marks::marked_count(n));
                    let room = what.saturating_sub(tail.chars().count());
                    fit(app, grp.label, room) + &tail
                }
            };
            let s = table_line(
                format!("{cursor}{marker} "),
                &label,
                what,
                [
                    grp.product.as_str(),
                    &grp.count.to_string(),
                    &grp.size,
                    &dash_or(grp.reclaimable_count, grp.reclaimable_bytes),
                    &dash_or(grp.opt_in_count, grp.opt_in_bytes),
                ],
            );
            let color = if grp.reclaimable_count > 0 {
                Color::Green
            } else if grp.opt_in_count > 0 {
                Color::Yellow
            } else {
                Color::Reset
            };
            (s, color)
        }
        Entry::Row(g, r) => row_line(app, g, r, cursor, width),
        Entry::Machines | Entry::Processes | Entry::Others => section_line(app, e, cursor),
        Entry::Machine(i) => machine_line(app, i, cursor, width),
        Entry::Process(i) => process_line(app, i, cursor, width),
    };
    let mut st = style(app, color);
    if at_cursor {
        st = st.add_modifier(Modifier::REVERSED);
    }
    Line::styled(text(app, &s), st)
}

/// The open/closed marker of a section.
fn marker(app: &App, open: bool) -> &'static str {
    match (open, app.ascii) {
        (true, false) => "▾",
        (false, false) => "▸",
        (true, true) => "-",
        (false, true) => "+",
    }
}

/// The heading of the machines or the VM processes, with how many there are.
fn section_line(app: &App, e: Entry, cursor: &str) -> (String, Color) {
    let Some(v) = &app.view else {
        return (String::new(), Color::Reset);
    };
    let of = |this_home: bool| {
        v.processes
            .iter()
            .filter(|p| p.this_home == this_home)
            .count()
    };
    let (open, heading, n) = match e {
        Entry::Machines => (app.open_machines, v.machines_heading(), v.machines.len()),
        Entry::Others => (app.open_others, view::OTHER_HOMES, of(false)),
        _ => (app.open_processes, view::marks::PROCESSES_HEADING, of(true)),
    };
    let s = format!("{cursor}{} {heading} ({n})", marker(app, open));
    (s, Color::Reset)
}

/// A machine's or sandbox's line: product, noun, name, state, size (as `scan -v` lists them).
fn machine_line(app: &App, i: usize, cursor: &str, width: usize) -> (String, Color) {
    let Some(m) = app.view.as_ref().and_then(|v| v.machines.get(i)) else {
        return (String::new(), Color::Reset);
    };
    let size = [m.size.as_deref(), m.compactable.as_deref()]
        .into_iter()
        .flatten()
        .map(|x| format!(", {x}"))
        .collect::<String>();
    let s = format!(
        "{cursor}     {:<8} {:<8} {} {}{size}",
        m.product.as_str(),
        m.noun,
        view::escape_text(&m.name),
        m.state_label
    );
    let color = if m.stale { Color::Yellow } else { Color::Reset };
    (fit(app, &s, width), color)
}

/// A VM process's line: pid, what it is, whose, and whether it is an orphan.
fn process_line(app: &App, i: usize, cursor: &str, width: usize) -> (String, Color) {
    let Some(p) = app.view.as_ref().and_then(|v| v.processes.get(i)) else {
        return (String::new(), Color::Reset);
    };
    let mut tags = Vec::new();
    if p.orphan && p.this_home {
        tags.push(view::words::Word::Orphaned.text().to_string());
    }
    let s = format!(
        "{cursor}     pid {:<8} {} {} {}",
        p.pid,
        p.what,
        p.owner
            .as_deref()
            .map(view::escape_text)
            .unwrap_or("-".into()),
        tags.join(", ")
    );
    let color = if p.can_end {
        Color::Yellow
    } else {
        Color::Reset
    };
    (fit(app, s.trim_end(), width), color)
}

/// A finding's line: its mark box, size, verdict word and path (shortened from the middle by
/// the core when it does not fit).
fn row_line(app: &App, g: usize, r: usize, cursor: &str, width: usize) -> (String, Color) {
    let Some(row) = app.row(g, r) else {
        return (String::new(), Color::Reset);
    };
    let mark = if !row.selectable {
        " - "
    } else if app.marked.contains(&row.id) {
        "[x]"
    } else {
        "[ ]"
    };
    let word = view::verdict_word(row.verdict);
    let lead = format!("{cursor}  {mark} {:>9}  {word:<12}  ", row.size);
    let room = width.saturating_sub(lead.chars().count());
    let path = if row.path.chars().count() <= room {
        row.path.clone()
    } else {
        app.report
            .as_ref()
            .and_then(|rep| rep.finding(&row.id))
            .map(|f| view::short_path(&f.path, room))
            .unwrap_or_else(|| row.short_path.clone())
    };
    let color = match row.verdict {
        Verdict::Reclaimable => Color::Green,
        Verdict::OptIn => Color::Yellow,
        Verdict::Protected => Color::Reset,
        Verdict::Unknown => Color::DarkGray,
    };
    (format!("{lead}{path}"), color)
}

/// THE ONE PLACE the detail text under the list is chosen. A row shows its full path, its
/// verdict with the core's reason, and what acting on it does; a group its meaning.
///
/// WHY: when the core's `smolsweep::view::why` lands (issue 21, item 1), a row's "Why" text
/// replaces `row.reason` here — the window's rows show the same text — and nowhere else.
pub(crate) fn detail(app: &App) -> Vec<String> {
    match app.current() {
        Some(Entry::Row(g, r)) => match app.row(g, r) {
            Some(row) => vec![
                row.path.clone(),
                format!("{}: {}", row.verdict_label, row.reason),
                row.effect.clone(),
            ],
            None => Vec::new(),
        },
        Some(Entry::Group(g)) => match app.group(g) {
            Some(grp) => vec![format!("{}: {}", grp.label, grp.meaning)],
            None => Vec::new(),
        },
        Some(Entry::Machines) => vec![view::marks::MACHINE_ACTIONS.to_string()],
        Some(Entry::Processes) => vec![view::marks::PROCESS_ACTIONS.to_string()],
        Some(Entry::Others) => app
            .view
            .as_ref()
            .and_then(|v| v.other_homes_line.clone())
            .into_iter()
            .collect(),
        Some(Entry::Machine(i)) => machine_detail(app, i),
        Some(Entry::Process(i)) => process_detail(app, i),
        None => Vec::new(),
    }
}

/// A machine's detail: what it is, its state and role, and what can be done with it.
fn machine_detail(app: &App, i: usize) -> Vec<String> {
    let Some(m) = app.view.as_ref().and_then(|v| v.machines.get(i)) else {
        return Vec::new();
    };
    let mut out = vec![format!(
        "{} {} {}: {}",
        m.product.display_name(),
        m.noun,
        view::escape_text(&m.name),
        m.state_label
    )];
    out.extend(m.role.map(str::to_string));
    out.extend(m.compactable.clone());
    out.extend(m.kept.clone());
    out.push(machine_actions(m));
    out
}

fn machine_actions(m: &view::MachineRow) -> String {
    view::marks::machine_actions(m.can_stop, m.can_delete, m.compactable.is_some())
        .unwrap_or_else(|| view::marks::no_action("a keep rule keeps it"))
}

/// A VM process's one action: an orphan is ended, one its record owns is stopped.
fn process_actions(p: &view::ProcessRow) -> String {
    match (p.this_home, p.can_end, p.orphan) {
        (true, true, _) => view::marks::ORPHAN_ACTIONS.to_string(),
        (true, false, false) => view::marks::PROCESS_STOP_ONLY.to_string(),
        (true, false, true) => view::marks::no_action("a keep rule keeps it"),
        (false, ..) => view::marks::no_action("it is another HOME's VM process"),
    }
}

/// A VM process's detail: the scan's reason, and what can be done with it.
fn process_detail(app: &App, i: usize) -> Vec<String> {
    let Some(p) = app.view.as_ref().and_then(|v| v.processes.get(i)) else {
        return Vec::new();
    };
    let mut out = vec![p.reason.clone()];
    out.extend(p.held_deleted.as_deref().map(view::marks::holds_deleted));
    out.extend(p.kept.clone());
    out.push(process_actions(p));
    out
}

/// The status line: a refusal or the last run's closing line, else the marked items' plan
/// sentence, else the scan's totals.
fn status_line(app: &App) -> String {
    if let Some(s) = app.status.as_ref().or(app.marked_sentence.as_ref()) {
        return s.clone();
    }
    match &app.view {
        Some(v) => format!(
            "Reclaimable: {} in {}; opt-in: {} in {}.",
            v.totals.reclaimable,
            v.totals.reclaimable_items,
            v.totals.opt_in,
            v.totals.opt_in_items
        ),
        None => String::new(),
    }
}

fn keys_line(app: &App, utf8: &str, ascii: &str) -> Line<'static> {
    Line::styled(
        if app.ascii { ascii } else { utf8 }.to_string(),
        Style::default().add_modifier(Modifier::DIM),
    )
}

fn rule(app: &App, width: usize) -> Line<'static> {
    Line::raw(if app.ascii { "-" } else { "─" }.repeat(width))
}

/// `s` broken at spaces into lines of at most `w` columns; a word longer than a line is cut
/// into pieces, so nothing is lost (issue 31: the detail text wraps, never cuts).
pub(crate) fn wrap_text(s: &str, w: usize) -> Vec<String> {
    let w = w.max(1);
    let mut lines = Vec::new();
    let mut cur = String::new();
    for word in s.split(' ') {
        let chars: Vec<char> = word.chars().collect();
        for piece in chars.chunks(w) {
            let piece: String = piece.iter().collect();
            let len = cur.chars().count();
            if len > 0 && len + 1 + piece.chars().count() > w {
                lines.push(std::mem::take(&mut cur));
            }
            if !cur.is_empty() {
                cur.push(' ');
            }
            cur.push_str(&piece);
        }
    }
    lines.push(cur);
    lines
}

/// The list's bottom lines: the detail of the entry under the cursor, the status (or the
/// quit question) and the keys, each wrapped to `width`.
fn bottom(app: &App, width: usize) -> (Vec<String>, Vec<String>, String) {
    let detail: Vec<String> = detail(app)
        .iter()
        .flat_map(|l| wrap_text(&text(app, l), width))
        .collect();
    let status = match app.screen {
        Screen::Quit => app.quit_question(),
        _ => status_line(app),
    };
    let v = app.view.as_ref();
    let keys = match (&app.screen, app.current()) {
        (Screen::Quit, _) => view::marks::QUIT_KEYS.to_string(),
        (_, Some(Entry::Machine(i))) => match v.and_then(|v| v.machines.get(i)) {
            Some(m) => format!("{}  h close  q quit", machine_actions(m)),
            None => String::new(),
        },
        (_, Some(Entry::Process(i))) => match v.and_then(|v| v.processes.get(i)) {
            Some(p) => format!("{}  h close  q quit", process_actions(p)),
            None => String::new(),
        },
        _ if app.ascii => {
            "j k move  Enter open  Space mark  d review  r rescan  ? help  q quit".into()
        }
        _ => "↑↓ jk move  Enter open  Space mark  d review  r rescan  ? help  q quit".into(),
    };
    (detail, wrap_text(&text(app, &status), width), keys)
}

fn list_screen(f: &mut Frame, app: &mut App, area: Rect) {
    let width = area.width as usize;
    let head = head_lines(app, width);
    let (detail, status, keys) = bottom(app, width);
    // The detail takes the lines it needs (at least 3), leaving the list at least 3.
    let fixed = head.len() + 1 + status.len() + 1;
    let room = (area.height as usize).saturating_sub(fixed + 3);
    let det_h = detail.len().max(3).min(room.max(1));
    let [top, list, sep, det, status_area, keys_area] = Layout::vertical([
        Constraint::Length(head.len() as u16),
        Constraint::Min(1),
        Constraint::Length(1),
        Constraint::Length(det_h as u16),
        Constraint::Length(status.len() as u16),
        Constraint::Length(1),
    ])
    .areas(area);
    f.render_widget(Paragraph::new(head), top);
    let entries = app.entries();
    let h = list.height as usize;
    app.page = h;
    if app.cursor < app.offset {
        app.offset = app.cursor;
    } else if app.cursor >= app.offset + h {
        app.offset = app.cursor + 1 - h;
    }
    let lines: Vec<Line> = entries
        .iter()
        .enumerate()
        .skip(app.offset)
        .take(h)
        .map(|(i, e)| entry_line(app, *e, i == app.cursor, width))
        .collect();
    f.render_widget(Paragraph::new(lines), list);
    f.render_widget(Paragraph::new(rule(app, width)), sep);
    let detail: Vec<Line> = detail.into_iter().map(Line::raw).collect();
    f.render_widget(Paragraph::new(detail), det);
    let status: Vec<Line> = status
        .into_iter()
        .map(|l| Line::styled(l, bold()))
        .collect();
    f.render_widget(Paragraph::new(status), status_area);
    f.render_widget(Paragraph::new(keys_line(app, &keys, &keys)), keys_area);
}

fn help_screen(f: &mut Frame, app: &App, area: Rect) {
    let arrows = if app.ascii {
        "Up Down j k"
    } else {
        "↑ ↓  j k"
    };
    let right = if app.ascii {
        "Enter Right l"
    } else {
        "Enter → l"
    };
    let left = if app.ascii { "Left h" } else { "← h" };
    let keys: [(&str, &str); 14] = [
        (arrows, "move"),
        ("PgUp PgDn", "move a page"),
        ("g G Home End", "first, last"),
        (right, "open a group (Enter again closes it)"),
        (left, "close the group"),
        (
            "Space",
            "mark an item, or every item of a group; again to unmark",
        ),
        (
            "d",
            "review the marked items' plan (y runs it, n goes back)",
        ),
        ("s", "stop the machine or sandbox (or the VM process's)"),
        ("e", "end the orphaned VM process"),
        ("x", "delete the machine or sandbox"),
        ("c", "compact the disks of the machine or sandbox"),
        ("r", "scan again"),
        ("?", "this help"),
        (
            "q Esc",
            "quit (asks first while items are marked); on this help: close it",
        ),
    ];
    let mut lines = vec![Line::styled("Keys", bold()), Line::raw("")];
    for (k, what) in keys {
        lines.push(Line::raw(format!("  {k:<14} {what}")));
    }
    lines.push(Line::raw(""));
    lines.push(Line::raw(
        "Only reclaimable and opt-in items can be marked; any other item says why.",
    ));
    f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), area);
}

fn review_screen(f: &mut Frame, app: &App, r: &Review, area: Rect) {
    let c = &r.confirmation;
    let [top, body, question, keys] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(1),
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(area);
    f.render_widget(
        Paragraph::new(Line::styled(text(app, &c.sentence()), bold())),
        top,
    );
    let mut lines: Vec<Line> = c
        .lines
        .iter()
        .skip(r.scroll)
        .map(|l| Line::raw(text(app, &format!("  {l}"))))
        .collect();
    if !c.not_planned.is_empty() {
        lines.push(Line::raw("Not planned:"));
        lines.extend(
            c.not_planned
                .iter()
                .map(|l| Line::raw(text(app, &format!("  {l}")))),
        );
    }
    f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), body);
    f.render_widget(
        Paragraph::new(Line::styled(
            text(app, &format!("{}? [y/N]", c.question())),
            bold(),
        )),
        question,
    );
    f.render_widget(
        Paragraph::new(keys_line(
            app,
            "y Enter confirm  n Esc back  ↑↓ jk scroll",
            "y Enter confirm  n Esc back  j k scroll",
        )),
        keys,
    );
}

fn running_screen(f: &mut Frame, app: &App, r: &Running, area: Rect) {
    const BAR: usize = 20;
    let filled = r.done * BAR / r.total.max(1);
    let bar = format!(
        "[{}{}] {}/{}",
        "#".repeat(filled),
        "-".repeat(BAR - filled),
        r.done,
        r.total
    );
    let lines = vec![
        Line::styled(text(app, &r.sentence), bold()),
        Line::raw(""),
        Line::raw(bar),
        Line::raw(text(app, &r.last)),
    ];
    f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), area);
}

fn finished_screen(f: &mut Frame, app: &App, d: &Finished, area: Rect) {
    let [body, closing, keys] = Layout::vertical([
        Constraint::Min(1),
        Constraint::Length(2),
        Constraint::Length(1),
    ])
    .areas(area);
    let lines: Vec<Line> = d.lines.iter().map(|l| Line::raw(text(app, l))).collect();
    f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), body);
    f.render_widget(
        Paragraph::new(Line::styled(text(app, &d.closing), bold())).wrap(Wrap { trim: false }),
        closing,
    );
    f.render_widget(
        Paragraph::new(keys_line(
            app,
            "any key: back to the list (scanned again)",
            "any key: back to the list (scanned again)",
        )),
        keys,
    );
}
