//! What only the desktop window and tray show, as data: the compaction they confirm and report,
//! the "Why?" dialog as labelled sections, paths shortened to the width they get, and History's
//! times.
//! The window draws these as they are; none of its words is its own.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Serialize;

use crate::model::ScanReport;
use crate::plan::Plan;
use crate::record::ExecReport;
use crate::view::notes::Note;
use crate::view::runs::{PlanView, ReclaimOutcome, StepStatus};
use crate::view::why::{Free, Line, Why};
use crate::view::{plural, Confirmation, ScanView};

/// Why a confirmed compaction did not run: a scan in between changed its plan.
pub const COMPACT_PLAN_CHANGED: &str =
    "What would be compacted changed since it was shown (a scan ran in between); nothing was compacted. Review it again.";

/// A compaction's native confirmation (the tray's) and the window's dialog title and button.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CompactAsk {
    /// "Compact 2 disks", or "Nothing to compact".
    pub title: String,
    /// The core's question and the actions, one per line; what is not planned and why.
    pub message: String,
    /// The button that runs it.
    pub ok: &'static str,
    /// The plan it asks about.
    pub plan: PlanView,
}

/// What the tray and the window ask before a compaction of `plan` runs.
pub fn compact_ask(plan: PlanView) -> CompactAsk {
    let c = &plan.confirmation;
    let mut message = match plan.steps.is_empty() {
        true => "Nothing can be compacted now, so nothing will run.".to_string(),
        false => format!(
            "{}?\n\nOnly blocks the guest's file system calls free are released; each disk is \
             checked again as it is compacted.\n",
            c.question()
        ),
    };
    for l in &c.lines {
        message.push_str(&format!("\n• {l}"));
    }
    if !c.not_planned.is_empty() {
        message.push_str(&format!("\n\n{}", crate::view::NOT_PLANNED));
        for n in &c.not_planned {
            message.push_str(&format!("\n• {n}"));
        }
    }
    CompactAsk {
        title: match plan.steps.is_empty() {
            true => "Nothing to compact".into(),
            false => c.headline.clone(),
        },
        message,
        ok: "Compact",
        plan,
    }
}

/// What a compaction of `plan` did ([`ReclaimOutcome::of`], in a compaction's words).
pub fn compact_outcome(
    plan: &PlanView,
    result: Result<ExecReport, String>,
    times: (u64, u64),
) -> ReclaimOutcome {
    let mut out = ReclaimOutcome::of(plan, result, times);
    let done = out.count(StepStatus::Removed);
    out.summary = format!(
        "Compacted {}; estimated {}, measured {}.",
        plural(done, "disk", "disks"),
        out.estimated,
        out.measured
    );
    out.refused_line = match out.refused.len() {
        0 => String::new(),
        n => format!(
            "{} {}",
            crate::view::NOT_PLANNED,
            plural(n, "disk", "disks")
        ),
    };
    out
}

/// The notification after a compaction.
pub fn compact_note(out: &ReclaimOutcome) -> Note {
    let done = out.count(StepStatus::Removed);
    let summary = match done {
        0 => "Nothing compacted".to_string(),
        n => format!(
            "Compacted {}: gave back {}",
            plural(n, "disk", "disks"),
            out.measured
        ),
    };
    let mut lines: Vec<String> = out
        .steps
        .iter()
        .filter(|s| s.status != StepStatus::Removed)
        .map(|s| format!("{}: {}", crate::view::short_path(&s.path, 48), s.message))
        .collect();
    lines.insert(0, out.summary.clone());
    lines.extend(out.journal_error.clone());
    Note {
        summary,
        body: lines.join("\n"),
        review: false,
        action: None,
    }
}

/// The widths (characters) a path is offered in, longest first.
const PATH_WIDTHS: [usize; 7] = [120, 96, 72, 60, 48, 40, 32];

/// A path shortened from the middle ([`crate::view::short_path`]) to each of a few widths,
/// longest first, without repeats: the window shows the longest that fits on one line.
pub fn path_fits(path: &Path) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in PATH_WIDTHS {
        let s = crate::view::short_path(path, w);
        if out.last() != Some(&s) {
            out.push(s);
        }
    }
    out
}

/// One section of the "Why?" dialog: a label and its sentences.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WhySection {
    /// "Verdict", "Processes", …; "" for the lines that name what was asked.
    pub label: &'static str,
    /// Its sentences, each wrapped by the window as a paragraph.
    pub lines: Vec<WhyLine>,
}

/// One sentence of a section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WhyLine {
    /// The sentence.
    pub text: String,
    /// An item of the list the sentence before introduces (the actions a command also takes).
    pub item: bool,
}

/// `why` as the window's dialog shows it: the core's sentences under their labels, and the
/// command to copy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WhyPanel {
    /// The sections, in order.
    pub sections: Vec<WhySection>,
    /// The smallest command that frees it, to copy (absent when none does).
    pub command: Option<String>,
    /// The command that frees only this one, when `command` takes more.
    pub only_this: Option<String>,
    /// The copy button's label.
    pub copy: &'static str,
    /// The name for a reader of `command`'s copy button: "Copy smolsweep prune".
    pub copy_command: Option<String>,
    /// The name for a reader of `only_this`'s copy button.
    pub copy_only_this: Option<String>,
    /// The label of the command's row.
    pub command_label: &'static str,
}

impl WhyPanel {
    /// The panel of `why`: consecutive lines under one topic make one section.
    pub fn of(why: &Why) -> WhyPanel {
        WhyPanel::from_lines(&why.lines, why.free.as_ref())
    }

    fn from_lines(lines: &[Line], free: Option<&Free>) -> WhyPanel {
        let mut sections: Vec<WhySection> = Vec::new();
        for l in lines {
            let line = WhyLine {
                item: l.text.starts_with("  "),
                text: l.text.trim_start().to_string(),
            };
            match sections.last_mut() {
                Some(s) if s.label == l.topic => s.lines.push(line),
                _ => sections.push(WhySection {
                    label: l.topic,
                    lines: vec![line],
                }),
            }
        }
        let command = free.and_then(|f| f.command.clone());
        let only_this = free.and_then(|f| f.only_this.clone());
        let copy = crate::view::words::Word::Copy.text();
        let copy_of = |c: &Option<String>| c.as_ref().map(|c| format!("{copy} {c}"));
        WhyPanel {
            sections,
            copy_command: copy_of(&command),
            copy_only_this: copy_of(&only_this),
            command,
            only_this,
            copy,
            command_label: "Command",
        }
    }
}

/// A machine row's compaction button ([`crate::view::MachineRow::compact_label`] names it with
/// the machine).
pub const COMPACT_MACHINE: &str = "Compact…";

/// What the window shows beside the scan's view (which carries the rows' short verdict labels,
/// the machines' heading and the line of other HOMEs' VM processes): the compaction's labels
/// and the paths that fit.
#[derive(Debug, Clone, Serialize)]
pub struct WindowView {
    /// The compaction card's label.
    pub compact_card: &'static str,
    /// The compaction button's label ("Compact 3 disks: 12 GB…"), absent when nothing is
    /// compactable.
    pub compact_button: Option<String>,
    /// A machine row's compaction button.
    pub compact_machine: &'static str,
    /// Every finding's path shortened to fit ([`path_fits`]), by finding id.
    pub paths: BTreeMap<String, Vec<String>>,
}

impl WindowView {
    /// The window's view beside `view`, the scan view of `report`.
    pub fn of(report: &ScanReport, view: &ScanView) -> WindowView {
        WindowView {
            compact_card: "Compactable (opt-in)",
            compact_button: view.compact.tray_label.as_ref().map(|l| format!("{l}…")),
            compact_machine: COMPACT_MACHINE,
            paths: report
                .findings
                .iter()
                .map(|f| (f.id.clone(), path_fits(&f.path)))
                .collect(),
        }
    }
}

/// What the window says of its selection: the line beside the Reclaim button and the button's
/// confirmation of the selection's plan.
#[derive(Debug, Clone, Serialize)]
pub struct SelectionView {
    /// How many findings are selected and what their plan does: "3 selected · Delete 3 items
    /// (1.5 GB)".
    pub selected_line: String,
    /// The core's confirmation of the selection's plan ([`crate::view::confirmation`]).
    #[serde(flatten)]
    pub confirmation: Confirmation,
}

impl SelectionView {
    /// The selection of the findings `ids` (each counted once) whose plan is `plan`, the
    /// planner's plan for them.
    pub fn of(ids: &[String], plan: &Plan) -> SelectionView {
        let selected = ids.iter().collect::<BTreeSet<_>>().len();
        let confirmation = crate::view::confirmation(plan);
        SelectionView {
            selected_line: format!("{selected} selected · {}", confirmation.headline),
            confirmation,
        }
    }
}

/// The ids of `ids` a Reclaim of the window's selection counts: those `shown` (the report as the
/// window's filter shows it) lists, and any `report` does not know, which the planner refuses
/// by name. A finding the filter hides is never reclaimed for having been selected before.
pub fn in_view(report: &ScanReport, shown: &ScanReport, ids: Vec<String>) -> Vec<String> {
    ids.into_iter()
        .filter(|id| shown.finding(id).is_some() || report.finding(id).is_none())
        .collect()
}

/// A machine's compaction target as `compact_plan` takes it (`smolvm:web`).
pub fn machine_target(product: crate::model::Product, name: &str) -> String {
    format!("{}:{name}", product.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{CompactReport, DiskEstimate, Platform, Product, Totals, SCAN_SCHEMA};
    use crate::view::history_time;
    use crate::view::runs::plan_of;

    /// The compaction of `targets` as the window and the tray confirm it.
    fn compact_plan(report: &ScanReport, targets: &[String]) -> Result<PlanView, String> {
        crate::target::compact_plan(report, targets).map(|core| plan_of(report, core))
    }

    fn report(home: &Path, disks: Vec<DiskEstimate>) -> ScanReport {
        ScanReport {
            schema: SCAN_SCHEMA.into(),
            home: home.into(),
            platform: Platform::Linux,
            products: vec![],
            findings: vec![],
            machines: vec![],
            processes: vec![],
            totals: Totals::default(),
            scanned_at: 0,
            scanned_at_ns: 0,
            duration_ms: 0,
            compact: CompactReport::of(disks),
        }
    }

    fn disk(path: &Path, owner: &str, compactable: u64) -> DiskEstimate {
        std::fs::write(path, b"disk").unwrap();
        DiskEstimate {
            product: Product::Smolvm,
            owner: Some(owner.into()),
            saved: false,
            path: path.into(),
            format: Some("raw".into()),
            allocated_bytes: 3 * compactable.max(1),
            compactable_bytes: compactable,
            guest_free_bytes: compactable,
            read_bytes: 0,
            cannot_tell: None,
            needs: None,
            kept: None,
        }
    }

    /// A reclaimable directory `id` of `bytes` in the root `vms` under `dir`.
    fn finding(dir: &Path, id: &str, bytes: u64) -> crate::model::Finding {
        use crate::model::{FileIdentity, Finding, FindingKind, Verdict};
        Finding {
            apparent_bytes: bytes,
            allocated_bytes: bytes,
            identity: Some(FileIdentity {
                dev: 1,
                ino: id.bytes().map(u64::from).sum(),
                file_type: crate::size::file_type(libc::S_IFDIR),
                size: bytes,
                mtime_ns: 0,
            }),
            is_dir: true,
            root: Some(dir.join("vms")),
            ..Finding::new(
                id,
                Product::Smolvm,
                FindingKind::SmolvmDanglingDir,
                dir.join("vms").join(id),
                Verdict::Reclaimable,
            )
        }
    }

    /// A stopped smolvm machine `name` of this HOME.
    fn machine(name: &str) -> crate::model::Machine {
        crate::model::Machine::new(Product::Smolvm, name, "stopped")
    }

    /// Issue 41: which selected findings a Reclaim counts is the core's rule, not the shell's:
    /// what the filter shows, and an id the report does not know (the planner refuses it by
    /// name); a finding the filter hides is left out even when it was selected before.
    #[test]
    fn a_reclaim_of_the_selection_counts_only_what_the_filter_shows() {
        let t = tempfile::tempdir().unwrap();
        let finding = |id: &str, bytes: u64| finding(t.path(), id, bytes);
        let mut r = report(t.path(), vec![]);
        r.findings = vec![finding("big", 1 << 30), finding("small", 10)];
        let mut shown = r.clone();
        let f = crate::filter::Filter {
            min_bytes: Some(1 << 20),
            ..Default::default()
        };
        f.apply(&mut shown, std::time::SystemTime::now());
        let ids = ["big", "small", "gone"].map(String::from).to_vec();
        assert_eq!(in_view(&r, &shown, ids.clone()), ["big", "gone"]);
        assert_eq!(in_view(&r, &r, ids.clone()), ids);
    }

    /// The compaction is asked with the core's sentence and its actions; a disk with nothing
    /// to give back is named as not compacted, and a plan of nothing asks nothing.
    #[test]
    fn compaction_is_asked_with_the_cores_sentence_and_says_what_it_leaves() {
        let t = tempfile::tempdir().unwrap();
        let r = report(
            t.path(),
            vec![
                disk(&t.path().join("web.raw"), "web", 12_000_000),
                disk(&t.path().join("db.raw"), "db", 0),
            ],
        );
        let ask = compact_ask(compact_plan(&r, &[]).unwrap());
        assert_eq!(ask.title, "Compact 1 disk");
        assert_eq!(ask.ok, "Compact");
        assert!(
            ask.message
                .starts_with("Compact 1 disk, freeing about 12.0 MB?\n"),
            "{}",
            ask.message
        );
        assert!(
            ask.message.contains(&format!(
                "\n\nNot planned:\n• {}: nothing free inside",
                t.path().join("db.raw").display()
            )),
            "{}",
            ask.message
        );
        assert_eq!(ask.plan.steps.len(), 1);
        assert_eq!(ask.plan.steps[0].path, t.path().join("web.raw"));
        let web = compact_plan(&r, &[machine_target(Product::Smolvm, "web")]).unwrap();
        assert_eq!(web.steps.len(), 1);
        let none = compact_ask(compact_plan(&r, &["smolvm:db".into()]).unwrap());
        assert_eq!(none.title, "Nothing to compact");
        assert!(none.plan.steps.is_empty());
        assert!(compact_plan(&r, &["smolvm:nope".into()]).is_err());
    }

    #[test]
    fn a_compaction_that_did_not_run_says_so_in_its_note() {
        let t = tempfile::tempdir().unwrap();
        let r = report(
            t.path(),
            vec![disk(&t.path().join("web.raw"), "web", 12_000_000)],
        );
        let plan = compact_plan(&r, &[]).unwrap();
        let out = compact_outcome(&plan, Err("not run: the journal".into()), (0, 0));
        assert_eq!(
            out.summary,
            "Compacted 0 disks; estimated 12.0 MB, measured 0 B."
        );
        let n = compact_note(&out);
        assert_eq!(n.summary, "Nothing compacted");
        assert!(
            n.body.contains("web.raw: not run: the journal"),
            "{}",
            n.body
        );
    }

    /// Hazard: History in the locale's format while the CLI writes another.
    #[test]
    fn history_time_is_the_clis_format() {
        let ms = 1_796_115_907_123;
        let zone = chrono::FixedOffset::west_opt(3 * 3600).unwrap();
        let s = history_time(ms, &zone);
        let want = crate::view::local_time(1_796_115_907, &zone)
            .unwrap()
            .format("%Y-%m-%d %H:%M:%S %:z")
            .to_string();
        assert_eq!(s, want);
        let b = s.as_bytes();
        assert_eq!(s.len(), 26, "{s}");
        assert_eq!(
            (b[4], b[7], b[10], b[13], b[16], b[19]),
            (b'-', b'-', b' ', b':', b':', b' ')
        );
        assert!(matches!(b[20], b'+' | b'-'), "{s}");
    }

    /// Paths are offered shortened from the middle, longest first, each within its width.
    #[test]
    fn paths_fit_by_shortening_from_the_middle() {
        let p = Path::new("/home/someone/.local/state/celesto/disks/sb-0123456789abcdef.qcow2");
        let v = path_fits(p);
        assert_eq!(v[0], p.display().to_string(), "a path that fits is whole");
        assert!(v
            .windows(2)
            .all(|w| w[0].chars().count() > w[1].chars().count()));
        let last = v.last().unwrap();
        assert_eq!(last.chars().count(), 32);
        assert!(last.contains('…') && last.ends_with("ef.qcow2"), "{last}");
    }

    #[test]
    fn why_is_labelled_sections_and_the_command_to_copy() {
        let l = |topic: &'static str, text: &str| Line {
            topic,
            text: text.into(),
        };
        let lines = vec![
            l("", "/x/disk.qcow2 (id abc)"),
            l("Verdict", "reclaimable: no sandbox owns it."),
            l("To free", "`smolsweep prune`: Delete 2 items."),
            l("To free", "It also does this:"),
            l("To free", "  delete /x/other"),
        ];
        let free = Some(Free {
            command: Some("smolsweep prune".into()),
            plan: None,
            estimated_bytes: 0,
            also: vec![],
            only_this: Some("smolsweep prune --id abc".into()),
            blocked: vec![],
        });
        let p = WhyPanel::from_lines(&lines, free.as_ref());
        let labels: Vec<&str> = p.sections.iter().map(|s| s.label).collect();
        assert_eq!(labels, ["", "Verdict", "To free"]);
        assert_eq!(p.sections[2].lines.len(), 3);
        assert_eq!(
            p.sections[2].lines[2],
            WhyLine {
                text: "delete /x/other".into(),
                item: true
            }
        );
        assert_eq!(p.command.as_deref(), Some("smolsweep prune"));
        assert_eq!(p.only_this.as_deref(), Some("smolsweep prune --id abc"));
        assert_eq!(p.copy_command.as_deref(), Some("Copy smolsweep prune"));
        assert_eq!(
            p.copy_only_this.as_deref(),
            Some("Copy smolsweep prune --id abc")
        );
        assert_eq!(WhyPanel::from_lines(&lines, None).copy_command, None);
    }

    /// Issue 41, hazard: lines composed in the window (`${e.label}: ${e.size}, …`, `${g.count} ·
    /// ${g.size}`, `${text} ${label}`, `${n} selected · …`, `${plan.ok}: ${plan.target}…`). The
    /// core sends each finished, in the words the window showed.
    #[test]
    fn the_window_is_sent_every_line_finished() {
        let t = tempfile::tempdir().unwrap();
        let mut r = report(
            t.path(),
            vec![disk(&t.path().join("web.raw"), "web", 2_000_000)],
        );
        r.findings = vec![
            finding(t.path(), "a", 3_000_000),
            finding(t.path(), "b", 1_000_000),
        ];
        r.machines = vec![machine("web"), machine("db")];
        let v = ScanView::of(&r, &Plan::reclaimable(&r));
        let kind = crate::model::FindingKind::SmolvmDanglingDir.label();
        assert_eq!(v.legend.len(), 1);
        assert_eq!(v.legend[0].title, format!("{kind}: 4.0 MB, reclaimable"));
        assert_eq!(v.legend[0].line, format!("{kind} 4.0 MB"));
        assert_eq!(v.groups[0].count_line, "2 · 4.0 MB");
        let web = &v.machines.iter().find(|m| m.name == "web").unwrap();
        assert_eq!(web.stop_label, "Stop machine web");
        assert_eq!(web.delete_label, "Delete machine web");
        assert_eq!(web.compact_label.as_deref(), Some("Compact… machine web"));
        let db = &v.machines.iter().find(|m| m.name == "db").unwrap();
        assert_eq!(db.compact_label, None, "nothing to compact, no button");

        let ids = ["a", "b", "a"].map(String::from);
        let s = SelectionView::of(&ids, &Plan::of_ids(&r, &ids));
        assert_eq!(s.confirmation.headline, "Delete 2 items");
        assert_eq!(s.selected_line, "2 selected · Delete 2 items");
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["selected_line"], s.selected_line.as_str());
        assert_eq!(
            json["reclaim_label"], "Reclaim 4.0 MB…",
            "the button's words beside it"
        );

        let target = crate::target::Target::Machine {
            product: Product::Smolvm,
            name: "web".into(),
        };
        let stop = crate::target::plan_for(&r, &target, crate::view::runs::VmAction::Stop, false);
        let p = crate::view::runs::VmPlan::of(&stop, false);
        assert_eq!(p.running_line, format!("{}: {}…", p.ok, p.target));
        assert_eq!(p.running_line, "Stop: smol-machines smolvm web…");
    }

    #[test]
    fn nothing_compactable_offers_no_compaction_button() {
        let t = tempfile::tempdir().unwrap();
        let r = report(t.path(), vec![disk(&t.path().join("d.raw"), "d", 0)]);
        let w = WindowView::of(&r, &ScanView::of(&r, &crate::plan::Plan::reclaimable(&r)));
        assert_eq!(w.compact_button, None);
        let r = report(
            t.path(),
            vec![disk(&t.path().join("d.raw"), "d", 2_000_000)],
        );
        let w = WindowView::of(&r, &ScanView::of(&r, &crate::plan::Plan::reclaimable(&r)));
        assert_eq!(w.compact_button.as_deref(), Some("Compact 1 disk: 2.0 MB…"));
    }
}
