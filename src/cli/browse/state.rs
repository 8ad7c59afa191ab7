//! What the browser shows and what a key does to it: pure state, no terminal, so the render
//! tests and the key tests drive it directly. Every word, number and sentence in it comes from
//! the core's view (`smolsweep::view`); this only chooses which of them to show.

use std::collections::BTreeSet;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use smolsweep::exec::{ExecReport, ProgressEvent};
use smolsweep::model::{FindingKind, ScanReport};
use smolsweep::plan::{Plan, Selection};
use smolsweep::view::runs::VmAction;
use smolsweep::view::{self, Confirmation, Group, Row, ScanView};
use smolsweep::{plan_for, Target};

/// One line of the list: a group (a kind of finding) or one of its rows; the machines'
/// heading or one machine or sandbox; the VM processes' heading or one VM process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Entry {
    /// `groups[i]` of the view.
    Group(usize),
    /// `groups[g].rows[r]` of the view.
    Row(usize, usize),
    /// The heading of the view's machines.
    Machines,
    /// `machines[i]` of the view.
    Machine(usize),
    /// The heading of this HOME's VM processes.
    Processes,
    /// The heading of other HOMEs' VM processes (counted apart, shown only).
    Others,
    /// `processes[i]` of the view (under [`Entry::Processes`] or [`Entry::Others`]).
    Process(usize),
}

impl Entry {
    /// A heading: a group, the machines' or the VM processes'.
    pub fn is_heading(self) -> bool {
        matches!(
            self,
            Entry::Group(_) | Entry::Machines | Entry::Processes | Entry::Others
        )
    }
}

/// The plan the marked items make, and its confirmation, while it is being reviewed.
#[derive(Debug, Clone)]
pub(crate) struct Review {
    pub plan: Plan,
    pub confirmation: Confirmation,
    /// First plan line shown (the lines scroll).
    pub scroll: usize,
}

/// A run under way: how many actions are done of how many, and the last one's line.
#[derive(Debug, Clone, Default)]
pub(crate) struct Running {
    pub sentence: String,
    pub done: usize,
    pub total: usize,
    pub last: String,
}

/// A finished run: what did not go as planned, and the core's closing line.
#[derive(Debug, Clone, Default)]
pub(crate) struct Finished {
    pub lines: Vec<String>,
    pub closing: String,
}

/// Which screen is up.
#[derive(Debug, Clone)]
pub(crate) enum Screen {
    /// Before the first scan has finished.
    Scanning,
    /// The groups and their rows.
    List,
    /// The keys.
    Help,
    /// The marked items' plan and its question.
    Review(Box<Review>),
    /// The executor is running the plan.
    Running(Running),
    /// The run is over.
    Finished(Finished),
    /// Leaving with marks pending: the question (the list stays drawn under it).
    Quit,
}

/// What the terminal loop must do after a key.
#[derive(Debug)]
pub(crate) enum Effect {
    /// Redraw.
    None,
    /// Leave the browser.
    Quit,
    /// Scan again (after a run, or `r`).
    Rescan,
    /// Run this confirmed plan through the executor.
    Run(Box<Plan>),
}

/// The browser's state.
pub(crate) struct App {
    pub report: Option<ScanReport>,
    pub view: Option<ScanView>,
    /// Group indices in the order shown: what frees something, largest first (as the scan's
    /// first screen orders them), then the groups that free nothing.
    pub order: Vec<usize>,
    /// Kinds whose group is open (kept across a rescan).
    pub open: BTreeSet<FindingKind>,
    /// The machines' and the VM processes' sections are open (this HOME's, other HOMEs').
    pub open_machines: bool,
    pub open_processes: bool,
    pub open_others: bool,
    /// Index into [`App::entries`].
    pub cursor: usize,
    /// First entry drawn (set by the renderer so the cursor stays in sight).
    pub offset: usize,
    /// Lines the list had when last drawn (what PgUp and PgDn move).
    pub page: usize,
    /// Marked finding ids, in the order marked.
    pub marked: Vec<String>,
    /// The core's sentence for the marked items' plan ("Delete 2 items; about 1.2 MB to free.").
    pub marked_sentence: Option<String>,
    /// A line for the status bar (a refusal's reason, the last run's closing line).
    pub status: Option<String>,
    pub screen: Screen,
    /// The locale is not UTF-8: draw ASCII only.
    pub ascii: bool,
    /// Colour allowed (`NO_COLOR` unset).
    pub color: bool,
}

impl App {
    /// A browser waiting for its first scan.
    pub fn new(ascii: bool, color: bool) -> App {
        App {
            report: None,
            view: None,
            order: Vec::new(),
            open: BTreeSet::new(),
            open_machines: false,
            open_processes: false,
            open_others: false,
            cursor: 0,
            offset: 0,
            page: 10,
            marked: Vec::new(),
            marked_sentence: None,
            status: None,
            screen: Screen::Scanning,
            ascii,
            color,
        }
    }

    /// Show a (new) scan: open groups stay open, marks of items that are gone are dropped.
    pub fn load(&mut self, report: ScanReport, view: ScanView) {
        let was = self.current().and_then(|e| self.identity(e));
        // The scan's first screen orders what frees something; the rest follows in the view's
        // order.
        let mut order: Vec<usize> = view
            .first_screen(usize::MAX)
            .rows
            .iter()
            .filter_map(|f| view.groups.iter().position(|g| std::ptr::eq(g, f.group)))
            .collect();
        let mut seen = BTreeSet::new();
        order.retain(|i| seen.insert(*i));
        let rest: Vec<usize> = (0..view.groups.len())
            .filter(|i| !order.contains(i))
            .collect();
        order.extend(rest);
        self.order = order;
        let shown: BTreeSet<&str> = view
            .groups
            .iter()
            .flat_map(|g| g.rows.iter().map(|r| r.id.as_str()))
            .collect();
        self.marked.retain(|id| shown.contains(id.as_str()));
        self.report = Some(report);
        self.view = Some(view);
        self.screen = Screen::List;
        self.remark();
        // The cursor stays on the same item, else on its group, else where it was.
        let entries = self.entries();
        let same = |e: &Entry| self.identity(*e) == was;
        let group = |e: &Entry| {
            e.is_heading() && self.identity(*e).map(|i| i.0) == was.as_ref().map(|i| i.0.clone())
        };
        self.cursor = match (
            entries.iter().position(same),
            entries.iter().position(group),
        ) {
            (Some(i), _) | (None, Some(i)) => i,
            _ => self.cursor.min(entries.len().saturating_sub(1)),
        };
    }

    /// What an entry stands for across scans: its section (a kind, the machines, the VM
    /// processes), and for a row its finding id, machine or process.
    fn identity(&self, e: Entry) -> Option<(String, Option<String>)> {
        let v = self.view.as_ref()?;
        match e {
            Entry::Group(g) => self.group(g).map(|grp| (grp.kind.to_string(), None)),
            Entry::Row(g, r) => {
                let kind = self.group(g)?.kind.to_string();
                self.row(g, r).map(|row| (kind, Some(row.id.clone())))
            }
            Entry::Machines => Some(("machines".into(), None)),
            Entry::Machine(i) => v.machines.get(i).map(|m| {
                let key = format!("{}:{}", m.product.as_str(), m.name);
                ("machines".to_string(), Some(key))
            }),
            Entry::Processes => Some(("processes".into(), None)),
            Entry::Others => Some(("others".into(), None)),
            Entry::Process(i) => v.processes.get(i).map(|p| {
                let key = format!("{}:{}", p.pid, p.start_time);
                ("processes".to_string(), Some(key))
            }),
        }
    }

    /// The lines of the list, in order: each group, and the rows of an open one.
    pub fn entries(&self) -> Vec<Entry> {
        let Some(v) = &self.view else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for &g in &self.order {
            out.push(Entry::Group(g));
            if self.open.contains(&v.groups[g].kind) {
                out.extend((0..v.groups[g].rows.len()).map(|r| Entry::Row(g, r)));
            }
        }
        if !v.machines.is_empty() {
            out.push(Entry::Machines);
            if self.open_machines {
                out.extend((0..v.machines.len()).map(Entry::Machine));
            }
        }
        // This HOME's VM processes, then other HOMEs' apart (the one count's split).
        for (heading, this_home, open) in [
            (Entry::Processes, true, self.open_processes),
            (Entry::Others, false, self.open_others),
        ] {
            let of: Vec<usize> = (0..v.processes.len())
                .filter(|&i| v.processes[i].this_home == this_home)
                .collect();
            if !of.is_empty() {
                out.push(heading);
                if open {
                    out.extend(of.into_iter().map(Entry::Process));
                }
            }
        }
        out
    }

    /// The entry under the cursor.
    pub fn current(&self) -> Option<Entry> {
        self.entries().get(self.cursor).copied()
    }

    pub fn group(&self, g: usize) -> Option<&Group> {
        self.view.as_ref().and_then(|v| v.groups.get(g))
    }

    pub fn row(&self, g: usize, r: usize) -> Option<&Row> {
        self.group(g).and_then(|g| g.rows.get(r))
    }

    /// The core plan for exactly the marked finding ids: what the window's "reclaim
    /// selection" plans (`Plan::of_ids`, as the desktop plans it).
    pub fn plan(&self) -> Option<Plan> {
        let report = self.report.as_ref()?;
        let sel = Selection {
            ids: self.marked.clone(),
            ..Default::default()
        };
        Some(Plan::from_scan(report, &sel))
    }

    /// Recompute the marked items' sentence.
    fn remark(&mut self) {
        self.marked_sentence = match (&self.report, self.marked.is_empty()) {
            (Some(r), false) => Some(view::confirmation(&Plan::of_ids(r, &self.marked)).sentence()),
            _ => None,
        };
    }

    /// What a key does.
    pub fn key(&mut self, k: KeyEvent) -> Effect {
        if k.kind == KeyEventKind::Release {
            return Effect::None;
        }
        if k.modifiers.contains(KeyModifiers::CONTROL) && k.code == KeyCode::Char('c') {
            return Effect::Quit;
        }
        match &mut self.screen {
            Screen::Scanning | Screen::Running(_) => Effect::None,
            // Any key closes the help, `q` and Esc too: they leave the help, not the browser.
            Screen::Help => {
                self.screen = Screen::List;
                Effect::None
            }
            Screen::Quit => match k.code {
                KeyCode::Char('y') | KeyCode::Char('Y') => Effect::Quit,
                _ => {
                    self.screen = Screen::List;
                    Effect::None
                }
            },
            Screen::Review(r) => match k.code {
                KeyCode::Char('y') | KeyCode::Char('Y') | KeyCode::Enter => {
                    Effect::Run(Box::new(r.plan.clone()))
                }
                KeyCode::Char('n') | KeyCode::Char('N') | KeyCode::Esc | KeyCode::Char('q') => {
                    self.screen = Screen::List;
                    Effect::None
                }
                KeyCode::Down | KeyCode::Char('j') => {
                    r.scroll = (r.scroll + 1).min(r.confirmation.lines.len().saturating_sub(1));
                    Effect::None
                }
                KeyCode::Up | KeyCode::Char('k') => {
                    r.scroll = r.scroll.saturating_sub(1);
                    Effect::None
                }
                _ => Effect::None,
            },
            Screen::Finished(f) => {
                self.status = Some(f.closing.clone());
                self.screen = Screen::List;
                self.marked.clear();
                self.remark();
                Effect::Rescan
            }
            Screen::List => self.list_key(k),
        }
    }

    fn list_key(&mut self, k: KeyEvent) -> Effect {
        // A refusal's reason or the last closing line stays until the next key.
        self.status = None;
        let n = self.entries().len();
        let page = self.page.max(1);
        match k.code {
            KeyCode::Char('q') | KeyCode::Esc => return self.quit(),
            KeyCode::Char('?') => self.screen = Screen::Help,
            KeyCode::Char('r') => return Effect::Rescan,
            KeyCode::Down | KeyCode::Char('j') => self.cursor = (self.cursor + 1).min(n.max(1) - 1),
            KeyCode::Up | KeyCode::Char('k') => self.cursor = self.cursor.saturating_sub(1),
            KeyCode::PageDown => self.cursor = (self.cursor + page).min(n.max(1) - 1),
            KeyCode::PageUp => self.cursor = self.cursor.saturating_sub(page),
            KeyCode::Home | KeyCode::Char('g') => self.cursor = 0,
            KeyCode::End | KeyCode::Char('G') => self.cursor = n.max(1) - 1,
            KeyCode::Enter | KeyCode::Right | KeyCode::Char('l') => self.toggle_open(k.code),
            KeyCode::Left | KeyCode::Char('h') => self.close(),
            KeyCode::Char(' ') => self.mark(),
            KeyCode::Char('d') => self.review(),
            KeyCode::Char('s') => self.vm_review(VmAction::Stop),
            KeyCode::Char('e') => self.vm_review(VmAction::Reap),
            KeyCode::Char('x') => self.vm_review(VmAction::Delete),
            KeyCode::Char('c') => self.compact_review(),
            _ => {}
        }
        Effect::None
    }

    /// `q` or Esc: leave, or with marks pending ask first (the marks stay if the answer is no).
    fn quit(&mut self) -> Effect {
        if self.marked.is_empty() {
            return Effect::Quit;
        }
        self.screen = Screen::Quit;
        Effect::None
    }

    /// The question [`Screen::Quit`] asks: the core's, with the marked items' estimate.
    pub fn quit_question(&self) -> String {
        let estimate = match &self.report {
            Some(r) => view::confirmation(&Plan::of_ids(r, &self.marked)).estimate,
            None => view::bytes(0),
        };
        view::marks::quit_question(self.marked.len(), &estimate)
    }

    /// `s`, `e`, `x` on a machine or VM process row: the window's Stop, End process and Delete,
    /// planned by the core for that target (`view::runs`) and reviewed like the marked items'
    /// plan; what the planner refuses is said in its words.
    fn vm_review(&mut self, action: VmAction) {
        let (Some(report), Some(v)) = (&self.report, &self.view) else {
            return;
        };
        let target = match self.current() {
            Some(Entry::Machine(i)) => match v.machines.get(i) {
                Some(m) => Target::Machine {
                    product: m.product,
                    name: m.name.clone(),
                },
                None => return,
            },
            Some(Entry::Process(i)) => match v.processes.get(i) {
                Some(p) => Target::Process {
                    pid: p.pid,
                    start_time: p.start_time,
                },
                None => return,
            },
            _ => return,
        };
        let vp = view::runs::VmPlan::of(&plan_for(report, &target, action, false), false);
        match vp.core.filter(|p| !p.is_empty()) {
            Some(plan) => {
                self.screen = Screen::Review(Box::new(Review {
                    plan,
                    confirmation: vp.confirmation,
                    scroll: 0,
                }))
            }
            None => {
                let why: Vec<String> = vp.refused.iter().map(|r| r.reason.clone()).collect();
                self.status = Some(match why.is_empty() {
                    true => vp.confirmation.sentence(),
                    false => format!("{}: {}", vp.not_done, why.join("; ")),
                });
            }
        }
    }

    /// `c` on a machine or sandbox row: the compaction of its disks, planned as `smolsweep
    /// compact NAME` plans it and reviewed like the marked items' plan; a row with nothing to
    /// give back (a running machine, one a keep rule keeps) says why in the core's words.
    fn compact_review(&mut self) {
        let (Some(report), Some(v)) = (&self.report, &self.view) else {
            return;
        };
        let Some(Entry::Machine(i)) = self.current() else {
            self.status = Some(view::marks::COMPACT_WHERE.to_string());
            return;
        };
        let Some(m) = v.machines.get(i) else { return };
        let target = view::window::machine_target(m.product, &m.name);
        match smolsweep::compact_plan(report, &[target]) {
            Ok(plan) if !plan.is_empty() => {
                self.screen = Screen::Review(Box::new(Review {
                    confirmation: view::confirmation(&plan),
                    plan,
                    scroll: 0,
                }))
            }
            Ok(plan) => self.status = Some(view::confirmation(&plan).sentence()),
            Err(why) => self.status = Some(why),
        }
    }

    /// Enter opens or closes the group under the cursor; Right and `l` only open it.
    fn toggle_open(&mut self, code: KeyCode) {
        let current = self.current();
        let section = match current {
            Some(Entry::Machines) => Some(&mut self.open_machines),
            Some(Entry::Processes) => Some(&mut self.open_processes),
            Some(Entry::Others) => Some(&mut self.open_others),
            _ => None,
        };
        if let Some(open) = section {
            *open = !*open || code != KeyCode::Enter;
            return;
        }
        let Some(Entry::Group(g)) = self.current() else {
            return;
        };
        let Some(kind) = self.group(g).map(|g| g.kind) else {
            return;
        };
        if !self.open.insert(kind) && code == KeyCode::Enter {
            self.open.remove(&kind);
        }
    }

    /// Close the group under the cursor, or the one of the row under it (the cursor goes to
    /// the group).
    fn close(&mut self) {
        let heading = match self.current() {
            Some(Entry::Machines | Entry::Machine(_)) => {
                self.open_machines = false;
                Entry::Machines
            }
            Some(Entry::Process(i))
                if self
                    .view
                    .as_ref()
                    .and_then(|v| v.processes.get(i))
                    .is_some_and(|p| !p.this_home) =>
            {
                self.open_others = false;
                Entry::Others
            }
            Some(Entry::Others) => {
                self.open_others = false;
                Entry::Others
            }
            Some(Entry::Processes | Entry::Process(_)) => {
                self.open_processes = false;
                Entry::Processes
            }
            Some(Entry::Group(g) | Entry::Row(g, _)) => Entry::Group(g),
            None => return,
        };
        let Entry::Group(g) = heading else {
            if let Some(i) = self.entries().iter().position(|e| *e == heading) {
                self.cursor = i;
            }
            return;
        };
        if let Some(kind) = self.group(g).map(|g| g.kind) {
            self.open.remove(&kind);
        }
        if let Some(i) = self.entries().iter().position(|e| *e == Entry::Group(g)) {
            self.cursor = i;
        }
    }

    /// Space: mark or unmark the row under the cursor (only a row whose verdict allows acting:
    /// reclaimable or opt-in; any other says why, in the core's words); on a group, mark every
    /// such row of it, or unmark them when all are marked.
    fn mark(&mut self) {
        let ids: Vec<String> = match self.current() {
            Some(Entry::Row(g, r)) => {
                let Some(row) = self.row(g, r) else { return };
                if !row.selectable {
                    self.status = Some(format!("{}: {}", row.verdict_label, row.reason));
                    return;
                }
                vec![row.id.clone()]
            }
            Some(Entry::Group(g)) => match self.group(g) {
                Some(grp) => grp
                    .rows
                    .iter()
                    .filter(|r| r.selectable)
                    .map(|r| r.id.clone())
                    .collect(),
                None => return,
            },
            Some(Entry::Machines | Entry::Machine(_)) => {
                self.status = Some(view::marks::act_instead(view::marks::MACHINE_ACTIONS));
                return;
            }
            Some(Entry::Processes | Entry::Process(_) | Entry::Others) => {
                self.status = Some(view::marks::act_instead(view::marks::PROCESS_ACTIONS));
                return;
            }
            None => return,
        };
        if ids.is_empty() {
            return;
        }
        if ids.iter().all(|id| self.marked.contains(id)) {
            self.marked.retain(|m| !ids.contains(m));
        } else {
            for id in ids {
                if !self.marked.contains(&id) {
                    self.marked.push(id);
                }
            }
        }
        self.remark();
    }

    /// `d`: the plan for the marked items, with the core's confirmation; a plan that does
    /// nothing is only said ("Nothing to do.").
    fn review(&mut self) {
        let Some(plan) = self.plan() else { return };
        let confirmation = view::confirmation(&plan);
        if plan.is_empty() {
            self.status = Some(confirmation.sentence());
            return;
        }
        self.screen = Screen::Review(Box::new(Review {
            plan,
            confirmation,
            scroll: 0,
        }));
    }

    /// The run of `plan` has started.
    pub fn start_run(&mut self, plan: &Plan) {
        self.screen = Screen::Running(Running {
            sentence: view::confirmation(plan).sentence(),
            total: plan.actions.len(),
            ..Default::default()
        });
    }

    /// What the executor says as the run goes.
    pub fn progress(&mut self, ev: &ProgressEvent) {
        let Screen::Running(r) = &mut self.screen else {
            return;
        };
        match ev {
            ProgressEvent::Started { total, summary, .. } => {
                r.total = *total;
                r.last = summary.clone();
            }
            ProgressEvent::Finished {
                total,
                summary,
                outcome,
                freed_bytes,
                ..
            } => {
                r.total = *total;
                r.done += 1;
                r.last = view::outcome_line(summary, outcome, *freed_bytes);
            }
        }
    }

    /// The run is over: what did not go as planned, and the closing line (or why it did not
    /// run at all).
    pub fn finish(&mut self, result: Result<ExecReport, String>) {
        let done = match result {
            Ok(report) => {
                let mut lines: Vec<String> = report
                    .records
                    .iter()
                    .filter(|r| !r.outcome.is_done())
                    .map(|r| view::outcome_line(&r.summary, &r.outcome, r.freed_bytes))
                    .collect();
                if let Some(e) = &report.journal_error {
                    lines.push(format!(
                        "the journal could not be written, so the run stopped: {e}"
                    ));
                }
                Finished {
                    lines,
                    closing: view::closing_line(&report),
                }
            }
            Err(msg) => Finished {
                lines: Vec::new(),
                closing: msg,
            },
        };
        self.screen = Screen::Finished(done);
    }

    /// A rescan is under way (the list stays until it is done).
    pub fn scanning(&mut self) {
        if self.view.is_none() {
            self.screen = Screen::Scanning;
        }
    }
}
