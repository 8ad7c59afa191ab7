//! What a run of a plan looks like to a person, before and after: the plan as the window and
//! the tray confirm it (the core plan's actions, refusals, estimate and fingerprint), a reclaim's
//! and a Stop / End process / Delete's outcome, the progress of a run, and the History tab's
//! runs. Every surface shows these as they are (the window receives them as JSON); none
//! re-derives a sentence, a count or an estimate.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Why a confirmed reclaim did not run: the plan made now is not the one shown.
pub const PLAN_CHANGED: &str =
    "What would be reclaimed changed since it was shown (a scan ran in between); nothing was deleted. Review it again.";
/// Why a confirmed Stop / End process / Delete did not run: the plan made now is not the one
/// shown.
pub const VM_PLAN_CHANGED: &str =
    "What this would do changed since it was shown (a scan ran in between); nothing was done. Review it again.";
/// Why nothing can be planned yet.
pub const NO_SCAN_YET: &str = "no scan has finished yet";
/// Why a reclaim of the selection runs nothing.
pub const NOTHING_TO_RECLAIM: &str = "nothing selected can be reclaimed";

use crate::journal::Newest;
use crate::model::{Product, ScanReport};
use crate::plan::{Action, Plan as CorePlan};
use crate::record::{ExecReport, Outcome, ProgressEvent};
use crate::target::TargetPlan;
use crate::view::words::Word;
use crate::view::Confirmation;

/// One thing the plan will do, as the confirmation lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlanStep {
    /// The finding the step acts on (empty for actions that are not a finding's).
    pub id: String,
    /// The path it acts on (empty for an action on no path).
    pub path: PathBuf,
    /// The path shortened from the middle for display (`view::short_path`).
    pub short_path: String,
    /// The core's words for the action (`view::action_line`, as `smolsweep prune` prints it).
    pub summary: String,
    /// Allocated bytes the scan measured for it.
    pub allocated_bytes: u64,
}

/// A finding the user asked for that will not be touched, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refusal {
    /// The finding's id.
    pub id: String,
    /// The finding's path, when the scan has it.
    pub path: Option<PathBuf>,
    /// The planner's reason, in words.
    pub reason: String,
    /// What every surface lists under "Not planned:" for it ([`crate::view::not_planned_line`]).
    #[serde(default)]
    pub line: String,
}

/// Exactly what a reclaim will do, shown before it runs: the core's plan for the chosen
/// findings — the plan the executor runs — and the core's confirmation of it
/// (`view::confirmation`), the same words and estimate the CLI and the tray show.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlanView {
    /// The core's confirmation of the plan (`view::confirmation`).
    pub confirmation: Confirmation,
    /// What it will do, in order.
    pub steps: Vec<PlanStep>,
    /// What was asked for and will not be touched, and why.
    pub refused: Vec<Refusal>,
    /// The core's estimate (`confirmation.estimate_bytes`).
    pub estimated_bytes: u64,
    /// Fingerprint of the core plan's actions and refusals. A reclaim confirmed against this view
    /// runs only if the plan made at that moment has the same fingerprint.
    pub digest: String,
    /// The core plan itself (what [`Backend::execute`] runs).
    #[serde(skip)]
    pub core: Option<CorePlan>,
}

/// The window's plan for a core plan made from `report` (the confirmation, steps and refusals).
pub fn plan_of(report: &ScanReport, core: CorePlan) -> PlanView {
    let confirmation = crate::view::confirmation(&core);
    let steps = core
        .actions
        .iter()
        .map(|a| {
            let (id, path, bytes) = match &a.action {
                Action::DeletePath {
                    finding_id,
                    path,
                    expected_bytes,
                    ..
                } => (finding_id.clone(), path.clone(), *expected_bytes),
                Action::DeleteMachine { bytes, .. } => (String::new(), PathBuf::new(), *bytes),
                Action::Detach { mountpoint } => (String::new(), mountpoint.clone(), 0),
                Action::CompactDisk {
                    path,
                    expected_bytes,
                    ..
                } => (String::new(), path.clone(), *expected_bytes),
                _ => (String::new(), PathBuf::new(), 0),
            };
            PlanStep {
                short_path: crate::view::short_path(&path, 72),
                id,
                path,
                summary: crate::view::action_line(a),
                allocated_bytes: bytes,
            }
        })
        .collect();
    let refused = core
        .skipped_at_plan
        .iter()
        .map(|s| {
            let path = report.finding(&s.id).map(|f| f.path.clone());
            Refusal {
                line: crate::view::not_planned_line(&s.id, &s.why, path.as_deref()),
                id: s.id.clone(),
                path,
                reason: s.why.clone(),
            }
        })
        .collect();
    PlanView {
        estimated_bytes: confirmation.estimate_bytes,
        confirmation,
        steps,
        refused,
        digest: core.action_digest(),
        core: Some(core),
    }
}

/// What happened to one step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    /// Done (or would be, in a dry run).
    Removed,
    /// Not done: the re-judge or the plan said no.
    Skipped,
    /// Tried and failed.
    Failed,
}

impl StepStatus {
    /// The status as a result line says it (and as it is serialised).
    pub fn word(self) -> &'static str {
        match self {
            StepStatus::Removed => "removed",
            StepStatus::Skipped => "skipped",
            StepStatus::Failed => "failed",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
/// What happened to one step of a reclaim.
pub struct StepResult {
    /// The finding the step acted on (empty for actions that are not a finding's).
    pub id: String,
    /// The path it acted on.
    pub path: PathBuf,
    /// What happened.
    pub status: StepStatus,
    /// The executor's words for it.
    pub message: String,
    /// Allocated bytes measured just before removal.
    pub freed_bytes: u64,
}

/// The result of a reclaim, as the window and the notification show it (the run itself is in
/// the core journal).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ReclaimOutcome {
    /// Seconds since the Unix epoch.
    pub started_at: u64,
    /// Seconds since the Unix epoch.
    pub finished_at: u64,
    /// The plan's estimate.
    pub estimated_bytes: u64,
    /// What the executor measured as freed.
    pub measured_bytes: u64,
    /// Both in words, as every surface writes bytes (`view::bytes`).
    #[serde(default)]
    pub estimated: String,
    #[serde(default)]
    /// The measured bytes in words.
    pub measured: String,
    /// "Removed 2 items; estimated 1.2 MB, measured 1.1 MB.": the result's sentence.
    #[serde(default)]
    pub summary: String,
    /// "1 selected item was not included (kept or not verified).", or "".
    #[serde(default)]
    pub refused_line: String,
    /// Each step, in the order it ran.
    pub steps: Vec<StepResult>,
    /// What the plan refused.
    pub refused: Vec<Refusal>,
    /// The journal could not be written: the run stopped before the next action.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal_error: Option<String>,
    /// Some step was not removed: the result is shown as partial.
    #[serde(default)]
    pub partial: bool,
    /// Each step that was not removed, in words: "skipped: /path — why".
    #[serde(default)]
    pub other_lines: Vec<String>,
}

impl ReclaimOutcome {
    /// What a reclaim of `plan` did, from the executor's report, or why nothing ran; it
    /// started and ended at `times` (Unix seconds).
    pub fn of(plan: &PlanView, result: Result<ExecReport, String>, times: (u64, u64)) -> Self {
        let (started_at, finished_at) = times;
        let mut out = ReclaimOutcome {
            started_at,
            estimated_bytes: plan.estimated_bytes,
            refused: plan.refused.clone(),
            ..Default::default()
        };
        match result {
            Ok(r) => {
                out.measured_bytes = r.freed_bytes;
                out.journal_error = r.journal_error.clone();
                for rec in &r.records {
                    let (id, expected) = match &rec.action {
                        Action::DeletePath {
                            finding_id,
                            expected_bytes,
                            ..
                        } => (finding_id.clone(), *expected_bytes),
                        _ => (String::new(), 0),
                    };
                    let (message, freed) = match &rec.outcome {
                        Outcome::Done { detail } => (detail.clone(), rec.freed_bytes),
                        Outcome::WouldDo { detail } => (detail.clone(), expected),
                        Outcome::Skipped { why, .. } => (why.clone(), 0),
                        Outcome::Failed { error } => (error.clone(), 0),
                    };
                    out.steps.push(StepResult {
                        id,
                        path: path_of(&rec.action),
                        status: status_of(&rec.outcome),
                        message,
                        freed_bytes: freed,
                    });
                }
            }
            Err(why) => {
                out.steps = plan
                    .steps
                    .iter()
                    .map(|s| StepResult {
                        id: s.id.clone(),
                        path: s.path.clone(),
                        status: StepStatus::Skipped,
                        message: why.clone(),
                        freed_bytes: 0,
                    })
                    .collect();
            }
        }
        out.finished_at = finished_at;
        out.estimated = crate::view::bytes(out.estimated_bytes);
        out.measured = crate::view::bytes(out.measured_bytes);
        let removed = out
            .steps
            .iter()
            .filter(|s| s.status == StepStatus::Removed)
            .count();
        out.summary = format!(
            "Removed {removed} item{}; estimated {}, measured {}.",
            if removed == 1 { "" } else { "s" },
            out.estimated,
            out.measured
        );
        out.refused_line = match out.refused.len() {
            0 => String::new(),
            1 => format!(
                "{} 1 selected item (kept or not verified).",
                crate::view::NOT_PLANNED
            ),
            n => format!(
                "{} {n} selected items (kept or not verified).",
                crate::view::NOT_PLANNED
            ),
        };
        out.with_others()
    }

    /// The outcome with the steps not removed in words, and partial when there is one.
    fn with_others(mut self) -> Self {
        self.other_lines = self
            .steps
            .iter()
            .filter(|s| s.status != StepStatus::Removed)
            .map(|s| format!("{}: {} — {}", s.status.word(), s.path.display(), s.message))
            .collect();
        self.partial = !self.other_lines.is_empty();
        self
    }

    /// How many steps ended `s`.
    pub fn count(&self, s: StepStatus) -> usize {
        self.steps.iter().filter(|r| r.status == s).count()
    }
}

fn path_of(a: &Action) -> PathBuf {
    match a {
        Action::DeletePath { path, .. } => path.clone(),
        Action::Detach { mountpoint } => mountpoint.clone(),
        Action::CompactDisk { path, .. } => path.clone(),
        _ => PathBuf::new(),
    }
}

fn status_of(o: &Outcome) -> StepStatus {
    match o {
        Outcome::Done { .. } | Outcome::WouldDo { .. } => StepStatus::Removed,
        Outcome::Skipped { .. } => StepStatus::Skipped,
        Outcome::Failed { .. } => StepStatus::Failed,
    }
}

/// Progress of a running reclaim, sent to the window as `reclaim-progress` events.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Progress {
    /// Actions finished.
    pub done: usize,
    /// Actions in the plan.
    pub total: usize,
    /// The path of the action just finished.
    pub path: PathBuf,
    /// How it ended.
    pub status: StepStatus,
}

/// The reclaim progress for an executor event (one per finished action).
pub fn progress_of(plan: &CorePlan, e: &ProgressEvent) -> Option<Progress> {
    match e {
        ProgressEvent::Finished {
            index,
            total,
            outcome,
            ..
        } => Some(Progress {
            done: index + 1,
            total: *total,
            path: plan
                .actions
                .get(*index)
                .map(|a| path_of(&a.action))
                .unwrap_or_default(),
            status: status_of(outcome),
        }),
        ProgressEvent::Started { .. } => None,
    }
}

// ---- Stop / End process / Delete --------------------------------------------------------------

pub use crate::target::{Target as VmTarget, VmAction};

/// A machine or sandbox named in the scan's machine list (the Running VMs view's rows).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MachineRef {
    /// Whose.
    pub product: Product,
    /// The machine name or sandbox id.
    pub name: String,
}

/// What Stop / End process / Delete of one VM or machine will do, shown before it runs: the
/// core's plan for that target ([`crate::target::plan_for`]) — the plan the executor runs —
/// with the core's confirmation and words for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VmPlan {
    /// The VM process (0 for a machine row).
    pub pid: u32,
    /// Its start time, as the scan saw it.
    pub start_time: u64,
    /// Set when the plan was asked for a machine row rather than a VM process.
    pub machine: Option<MachineRef>,
    /// What was asked.
    pub action: VmAction,
    /// The command as the journal records it: `stop`, `end process` or `delete`.
    pub command: String,
    /// Whom it is about, e.g. `smol-machines smolvm web (pid 4321)`.
    pub target: String,
    /// The plan's action summaries, in the order they run.
    pub steps: Vec<String>,
    /// What was asked for but not planned, with the planner's reason (a plan with no steps runs
    /// nothing).
    pub refused: Vec<Refusal>,
    /// The core's confirmation of the plan (`view::confirmation`).
    pub confirmation: Confirmation,
    /// The core's estimate (`confirmation.estimate_bytes`).
    pub estimated_bytes: u64,
    /// Delete together with the machines branched from it (`--cascade`).
    pub cascade: bool,
    /// A delete refused because machines are branched from it, which is planned with `cascade`.
    pub cascade_available: bool,
    /// Fingerprint of the core plan's actions and refusals ([`CorePlan::action_digest`]).
    pub digest: String,
    /// The confirmation's title, question and button (the tray's native dialog and the window
    /// show the same words).
    pub title: String,
    /// The question the confirmation asks.
    pub question: String,
    /// The button that runs it.
    pub ok: String,
    /// What the window says while it runs: "Stop: sandbox sb-live…".
    pub running_line: String,
    /// The result's heading if the run cannot start: "Not done: stop smolvm:m1".
    pub not_done: String,
    #[serde(skip)]
    /// The core plan itself (what the executor runs).
    pub core: Option<CorePlan>,
}

/// The words of a Stop / End process / Delete confirmation: the same in the tray's native
/// dialog, the window and the CLI.
impl TargetPlan {
    /// The confirmation dialog's title, e.g. `Stop: smol-machines smolvm web`.
    pub fn title(&self) -> String {
        format!("{}: {}", self.ok(), self.target)
    }

    /// The confirmation button's word.
    pub fn ok(&self) -> &'static str {
        match self.does {
            VmAction::Stop => Word::Stop.text(),
            VmAction::Delete => Word::Delete.text(),
            VmAction::Reap => Word::EndProcess.text(),
        }
    }

    /// The core's confirmation of the plan (one with nothing planned says why).
    pub fn confirmation(&self) -> Confirmation {
        match &self.plan {
            Ok(p) => crate::view::confirmation(p),
            Err(s) => Confirmation {
                headline: "Nothing to do".into(),
                estimate_bytes: 0,
                estimate: crate::view::bytes(0),
                reclaim_label: crate::view::reclaim_label(Some(0)),
                lines: vec![],
                not_planned: vec![crate::view::not_planned_line(&s.id, &s.why, None)],
                note: crate::view::run_note(false),
            },
        }
    }

    /// The confirmation's question: what runs and how it is checked, or that nothing can run.
    pub fn question(&self) -> String {
        match &self.plan {
            Ok(p) if !p.actions.is_empty() => {
                let c = crate::view::confirmation(p);
                format!("{} {}", c.sentence(), c.note)
            }
            _ => crate::view::run_note(false),
        }
    }
}

/// The heading of a VM or machine action's result: "Done: stop smolvm:m1" or "Not done: …".
pub fn outcome_heading(done: bool, command: &str, target: &str) -> String {
    let word = if done { "Done" } else { "Not done" };
    format!("{word}: {command} {target}")
}

impl VmPlan {
    /// The planner's plan for one target ([`crate::target::plan_for`], asked with `cascade`),
    /// as the window and the tray show it.
    pub fn of(t: &TargetPlan, cascade: bool) -> Self {
        let confirmation = t.confirmation();
        let core = t.plan.clone().ok();
        VmPlan {
            pid: t.pid,
            start_time: t.start_time,
            machine: t
                .machine
                .clone()
                .map(|(product, name)| MachineRef { product, name }),
            action: t.action,
            command: t.command().into(),
            target: t.target.clone(),
            steps: core
                .iter()
                .flat_map(|c| c.actions.iter().map(crate::view::action_line))
                .collect(),
            refused: t
                .refused()
                .into_iter()
                .map(|s| Refusal {
                    line: crate::view::not_planned_line(&s.id, &s.why, None),
                    id: s.id,
                    path: None,
                    reason: s.why,
                })
                .collect(),
            estimated_bytes: confirmation.estimate_bytes,
            confirmation,
            cascade,
            cascade_available: t.cascade_available,
            digest: core
                .as_ref()
                .map(CorePlan::action_digest)
                .unwrap_or_default(),
            title: t.title(),
            question: t.question(),
            ok: t.ok().into(),
            running_line: format!("{}…", t.title()),
            not_done: outcome_heading(false, t.command(), &t.target),
            core,
        }
    }

    /// Every line the confirmation lists: what runs, then what was not planned and why.
    pub fn lines(&self) -> Vec<String> {
        let refused = self
            .refused
            .iter()
            .map(|r| format!("not planned: {}", r.reason));
        self.steps.iter().cloned().chain(refused).collect()
    }

    /// The message of a native dialog (the tray's Stop / End process / Delete): the question,
    /// then each of [`lines`](Self::lines) as a bullet.
    pub fn native_message(&self) -> String {
        format!("{}\n\n• {}", self.question, self.lines().join("\n• "))
    }
}

/// How many action lines a native dialog lists before it says how many more there are.
const NATIVE_LINES: usize = 8;

impl PlanView {
    /// A reclaim's native dialog (the tray's): its title ("Reclaim 1.2 GB") and its message,
    /// the core's confirmation as the CLI and the window word it: the sentence with the
    /// estimate, then the first action lines and how many more.
    pub fn native_dialog(&self) -> (String, String) {
        let c = &self.confirmation;
        let mut msg = format!("{}?\n", c.sentence());
        for l in c.lines.iter().take(NATIVE_LINES) {
            msg.push_str(&format!("\n• {l}"));
        }
        if c.lines.len() > NATIVE_LINES {
            msg.push_str(&format!("\n… and {} more", c.lines.len() - NATIVE_LINES));
        }
        (format!("Reclaim {}", c.estimate), msg)
    }
}

/// What happened to one action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionStatus {
    /// Done.
    Done,
    /// Not done: the re-judge or the plan said no.
    Skipped,
    /// Tried and failed.
    Failed,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
/// What happened to one action of a Stop / End process / Delete.
pub struct ActionResult {
    /// The action, in the core's words.
    pub summary: String,
    /// What happened.
    pub status: ActionStatus,
    /// The executor's words for it.
    pub message: String,
}

impl ActionResult {
    /// The line the window shows for it: "done: Stop machine m1 — stopped".
    pub fn line(&self) -> String {
        let status = match self.status {
            ActionStatus::Done => "done",
            ActionStatus::Skipped => "skipped",
            ActionStatus::Failed => "failed",
        };
        format!("{status}: {} — {}", self.summary, self.message)
    }
}

/// The result of Stop / End process / Delete (the run itself is in the core journal).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmOutcome {
    /// The VM process asked about (0 for a machine).
    pub pid: u32,
    /// What was asked.
    pub action: VmAction,
    /// The command as the journal records it.
    pub command: String,
    /// Whom it was about.
    pub target: String,
    /// The journaled plan (empty when nothing ran).
    pub plan_id: String,
    /// Each action, in the order it ran.
    pub steps: Vec<ActionResult>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The journal could not be written: the run stopped before the next action.
    pub journal_error: Option<String>,
    /// "Done: stop smolvm:m1", or "Not done: …" when a step was not done or the journal failed.
    #[serde(default)]
    pub heading: String,
    /// Each step's line ([`ActionResult::line`]), in `steps` order.
    #[serde(default)]
    pub lines: Vec<String>,
    /// Not every action was done ([`all_done`](Self::all_done) is false): the result is
    /// shown as partial.
    #[serde(default)]
    pub partial: bool,
}

impl VmOutcome {
    /// What the run of `plan` did, from the executor's report, or why nothing ran.
    pub fn of(plan: &VmPlan, result: Result<ExecReport, String>) -> Self {
        let mut out = VmOutcome {
            pid: plan.pid,
            action: plan.action,
            command: plan.command.clone(),
            target: plan.target.clone(),
            plan_id: String::new(),
            steps: vec![],
            journal_error: None,
            heading: String::new(),
            lines: vec![],
            partial: false,
        };
        match result {
            Ok(r) => {
                out.plan_id = r.plan_id.clone();
                out.journal_error = r.journal_error.clone();
                out.steps = r
                    .records
                    .iter()
                    .map(|rec| {
                        let (status, message) = match &rec.outcome {
                            Outcome::Done { detail } | Outcome::WouldDo { detail } => {
                                (ActionStatus::Done, detail.clone())
                            }
                            Outcome::Skipped { why, .. } => (ActionStatus::Skipped, why.clone()),
                            Outcome::Failed { error } => (ActionStatus::Failed, error.clone()),
                        };
                        // The line the plan was confirmed with (`view::action_line`).
                        let planned = crate::plan::PlannedAction {
                            action: rec.action.clone(),
                            summary: rec.summary.clone(),
                        };
                        ActionResult {
                            summary: crate::view::action_line(&planned),
                            status,
                            message,
                        }
                    })
                    .collect();
            }
            Err(why) => {
                out.steps = plan
                    .steps
                    .iter()
                    .map(|s| ActionResult {
                        summary: s.clone(),
                        status: ActionStatus::Skipped,
                        message: why.clone(),
                    })
                    .collect();
            }
        }
        out.heading = outcome_heading(out.all_done(), &out.command, &out.target);
        out.lines = out.steps.iter().map(ActionResult::line).collect();
        out.partial = !out.all_done();
        out
    }

    /// Every action was done.
    pub fn all_done(&self) -> bool {
        !self.steps.is_empty()
            && self.journal_error.is_none()
            && self.steps.iter().all(|s| s.status == ActionStatus::Done)
    }
}

// ---- History ----------------------------------------------------------------------------------

/// File the window kept its own reclaim history in before every run went to the core journal.
/// It is not imported (its records are not plans); the History tab says where it is.
pub const LEGACY_HISTORY_FILE: &str = "history.jsonl";

/// The History tab: the core journal's runs, newest first, each with the surface and command
/// that made it — what `smolsweep history` prints.
#[derive(Debug, Clone, Default, Serialize)]
pub struct History {
    /// The journal read.
    pub journal: Option<PathBuf>,
    /// Its runs, newest first.
    pub runs: Vec<HistoryRun>,
    /// Lines of the journal that could not be read (1-based).
    pub damaged_lines: Vec<usize>,
    /// "2 damaged journal lines skipped.", or "" when none was.
    pub damaged_line: String,
    /// The journal could not be read.
    pub error: Option<String>,
    /// The window's old `history.jsonl`, when it is still there.
    pub legacy: Option<PathBuf>,
    /// "312 older runs not shown; …", or "" when every run is shown: the window reads the
    /// newest [`HISTORY_RUNS`] runs from the journal's end, whatever its size.
    pub older_line: String,
    /// Lines too long to read whole, in words ([`cut_line`]).
    pub cut_lines: Vec<String>,
}

/// How many runs the window's History reads, from the journal's end: its memory and time are
/// bounded by what it shows, not by the journal's size.
pub const HISTORY_RUNS: usize = 100;

/// One run of the History tab: the journal's summary with its bytes in words.
#[derive(Debug, Clone, Serialize)]
pub struct HistoryRun {
    #[serde(flatten)]
    /// The journal's summary of the run.
    pub run: crate::journal::RunSummary,
    /// What the run measured as freed (`None` when it did not finish, or freed and planned
    /// nothing).
    pub freed: Option<String>,
    /// What the plan estimated, in words (`None` when it estimated nothing).
    pub estimated: Option<String>,
    /// "3 planned: 2 done, 1 skipped" (skipped and failed named only when there are some).
    pub counts: String,
    /// "est. 1.2 GB", or "" when nothing was estimated.
    pub estimated_line: String,
    /// When it started, as `smolsweep history` writes it ("2026-12-03 04:36:22 +00:00",
    /// [`crate::view::history_time`]).
    pub started: String,
    /// Which surface and command made it ("cli · prune"; "—" for runs of older versions).
    pub origin_line: String,
    /// What it freed ("1.2 GB"), "did not finish", or "—".
    pub freed_line: String,
    /// Every action's outcome as the CLI lists it ([`crate::view::outcome_line`]), in order.
    pub lines: Vec<String>,
    /// How many of `lines` are shown before the rest is folded ([`HISTORY_SHOWN`]).
    pub shown: usize,
    /// The folded rest, "…and 24 more" (absent when nothing is folded).
    pub more: Option<String>,
}

/// What History says of a run that never finished (a crash or a kill).
pub const DID_NOT_FINISH: &str = "did not finish";

/// How many outcome lines of a run History shows before it folds the rest.
pub const HISTORY_SHOWN: usize = 2;

impl HistoryRun {
    fn of(run: crate::journal::RunSummary, zone: &dyn crate::env::Zone) -> Self {
        let freed = run
            .freed_bytes
            .filter(|&b| b > 0 || run.estimated_bytes > 0)
            .map(crate::view::bytes);
        let estimated = (run.estimated_bytes > 0).then(|| crate::view::bytes(run.estimated_bytes));
        let mut counts = format!("{} planned: {} done", run.planned_actions, run.done);
        if run.skipped > 0 {
            counts += &format!(", {} skipped", run.skipped);
        }
        if run.failed > 0 {
            counts += &format!(", {} failed", run.failed);
        }
        let lines: Vec<String> = run
            .outcomes
            .iter()
            .map(|o| crate::view::outcome_line(&o.summary, &o.outcome, o.freed_bytes))
            .collect();
        // Folding one line saves nothing: a run of three shows all three.
        let shown = match lines.len() {
            n if n <= HISTORY_SHOWN + 1 => n,
            _ => HISTORY_SHOWN,
        };
        HistoryRun {
            more: (lines.len() > shown).then(|| format!("…and {} more", lines.len() - shown)),
            shown,
            lines,
            origin_line: match &run.origin {
                Some(o) => format!("{} · {}", o.surface, o.command),
                None => "—".into(),
            },
            freed_line: match (&freed, run.finished) {
                (_, false) => DID_NOT_FINISH.to_string(),
                (Some(f), true) => f.clone(),
                (None, true) => "—".into(),
            },
            started: crate::view::history_time(run.started_at_ms, zone),
            estimated_line: estimated
                .as_ref()
                .map(|e| format!("est. {e}"))
                .unwrap_or_default(),
            counts,
            run,
            freed,
            estimated,
        }
    }
}

/// "3 older runs not shown; `smolsweep history -n 13` shows every run.", of `older` runs left
/// out of `total`; "" when none is: what History and `smolsweep history` say of what they did
/// not read.
pub fn older_runs_line(older: usize, total: usize) -> String {
    match older {
        0 => String::new(),
        n => format!(
            "{n} older run{} not shown; `smolsweep history -n {total}` shows every run.",
            if n == 1 { "" } else { "s" }
        ),
    }
}

/// A journal line too long to read whole ([`crate::journal::CutLine`]), in words: where it
/// is, what it is, its size, and that it is shown cut.
pub fn cut_line(c: &crate::journal::CutLine) -> String {
    let escape = crate::pathser::escape_text;
    let what = match (c.event.as_deref(), c.plan_id.as_deref()) {
        (Some(e), Some(p)) => format!(
            "{} line of plan {}",
            escape(e),
            escape(p).get(..12).unwrap_or(p)
        ),
        _ => "line".to_string(),
    };
    format!(
        "The journal's {what} at byte {} is {}, longer than the {} read whole: shown cut{}.",
        c.offset,
        crate::view::bytes(c.bytes),
        crate::view::bytes(crate::journal::MAX_LINE as u64),
        match c.event.as_deref() {
            Some("plan_started") => " (its planned actions are not listed)",
            Some("action") => " (that item is not listed)",
            _ => "",
        }
    )
}

/// The History tab of the core journal: `read` is the journal's path and what
/// [`crate::journal::read_newest`] read of its newest [`HISTORY_RUNS`] runs (a missing file is
/// an empty history), `None` when there is no data directory for it; `legacy` the window's old
/// history file, when it is still there. Times are in `zone`.
pub fn history(
    read: Option<(&Path, std::io::Result<Newest>)>,
    legacy: Option<&Path>,
    zone: &dyn crate::env::Zone,
) -> History {
    let mut h = History {
        journal: read.as_ref().map(|(p, _)| p.to_path_buf()),
        legacy: legacy.map(Path::to_path_buf),
        ..Default::default()
    };
    let Some((path, read)) = read else {
        h.error = Some("no data directory for the journal".into());
        return h;
    };
    match read {
        Ok(c) => {
            h.runs = crate::journal::runs(&c.entries)
                .into_iter()
                .rev()
                .map(|r| HistoryRun::of(r, zone))
                .collect();
            h.older_line = older_runs_line(c.runs_before, c.runs_before + h.runs.len());
            h.cut_lines = c.cut_lines.iter().map(cut_line).collect();
            h.damaged_lines = c.damaged_lines;
            h.damaged_line = match h.damaged_lines.len() {
                0 => String::new(),
                1 => "1 damaged journal line skipped.".into(),
                n => format!("{n} damaged journal lines skipped."),
            };
        }
        Err(e) => h.error = Some(format!("cannot read {}: {e}", path.display())),
    }
    h
}
