//! What every command that runs a plan shares: the run flags (`-n/-y/--json/-q/-v`, declared
//! once here and used by `prune`, `reap`, `stop`, `delete`, `compact`, `apply` and `uninstall`),
//! the scan a plan is made from, and plan → confirm → execute → journal.
//!
//! Without `--yes`, a plan is only shown: on a terminal the user is asked (count and bytes); when
//! stdin is not a terminal the plan is printed as a dry run and the exit code is 1 when there was
//! something to do. Exit codes: 0 done or nothing to do, 1 refused or any failure, 2 usage.
//! A target named on the command line (`reap PID`, `stop NAME`, `delete NAME`, `plan --id ID`,
//! `plan --stop/--delete NAME`) that is absent from the scan or refused makes the exit code 1,
//! also when the rest of the plan was carried out (as `rm a missing` does).
//!
//! A run lists its plan once (the confirmation), shows progress on stderr, then prints what
//! was skipped or failed and one closing line; `--quiet` keeps only errors and the closing line.

use std::collections::BTreeSet;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use smolsweep::exec::{self, Confirmed, ExecReport, How, Outcome};
use smolsweep::model::{OptInClass, ScanReport};
use smolsweep::plan::{Action, Plan, SkippedAtPlan};
use smolsweep::view::{self, shown};

use super::progress::{self, Progress, Style};

#[derive(Debug, Clone, clap::Args)]
pub struct IncludeArgs {
    /// Also delete saved (`.retained`) Celesto disks with their companions and logs.
    #[arg(long)]
    pub include_saved: bool,
    /// Also delete rebuildable caches (downloaded or built image caches, smolvm's pack, library
    /// and registry caches, ...). Without it the only caches that go are old image caches of
    /// versions the installed Celesto no longer uses, as Celesto's own `image prune` decides; the
    /// images it uses now are never deleted.
    #[arg(long)]
    pub include_caches: bool,
    /// Also delete residue that may still carry user data (firmware NVRAM, snapshots).
    #[arg(long)]
    pub include_residue: bool,
}

impl IncludeArgs {
    pub(crate) fn classes(&self) -> BTreeSet<OptInClass> {
        let mut s = BTreeSet::new();
        if self.include_saved {
            s.insert(OptInClass::SavedDisks);
        }
        if self.include_caches {
            s.insert(OptInClass::Caches);
        }
        if self.include_residue {
            s.insert(OptInClass::Residue);
        }
        s
    }
}

#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs {
    /// Show what would be done; change nothing.
    #[arg(long, short = 'n')]
    pub dry_run: bool,
    /// Do it without asking.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Print one JSON object (schema smolsweep.result/1).
    #[arg(long)]
    pub json: bool,
    /// Print only errors and the closing line (no plan, no progress).
    #[arg(long, short = 'q', conflicts_with = "verbose")]
    pub quiet: bool,
    /// One progress line per item as it finishes.
    #[arg(long, short = 'v')]
    pub verbose: bool,
}

#[derive(Debug, Clone, clap::Args)]
pub struct ReportArgs {
    /// Plan from a saved `smolsweep scan --json` report instead of scanning now.
    #[arg(long, hide = true, value_name = "FILE")]
    pub from_report: Option<PathBuf>,
}

#[derive(Debug, Clone, clap::Args)]
pub struct CascadeArg {
    /// Also delete the machines branched from a deleted machine (smolvm `--cascade`); they are
    /// named in the plan. Without it, a machine with branches is not deleted.
    #[arg(long)]
    pub cascade: bool,
}

/// A scan to plan from, and where its plan runs (the re-judge seeded with the scan when it was
/// made just now, from this environment).
pub(crate) struct Scanned {
    pub(crate) report: ScanReport,
    pub(crate) at: Where,
}

/// The environment a plan runs in, and the whole scan it was made from when that was just now
/// (the re-judge starts from it while it is fresh).
pub(crate) struct Where {
    pub(crate) opts: smolsweep::scan::ScanOptions,
    pub(crate) seed: Option<(ScanReport, std::time::Instant)>,
}

impl Where {
    fn road(&self) -> exec::Road<'_> {
        let road = exec::Road::new(self.opts.clone());
        match &self.seed {
            Some((report, taken)) => road.seeded(report, *taken),
            None => road,
        }
    }
}

/// The scan report saved at `f` (`--from-report`).
pub(crate) fn saved_report(f: &Path) -> anyhow::Result<ScanReport> {
    let text = smolsweep::read_input_text(
        f,
        smolsweep::MAX_REPORT_BYTES,
        "a scan report Smolsweep wrote",
    )?;
    serde_json::from_str(&text)
        .map_err(|e| anyhow::anyhow!("{} is not a scan report: {e}", shown(f)))
}

pub(crate) fn load_report(args: &ReportArgs) -> anyhow::Result<Scanned> {
    let opts = smolsweep::scan::ScanOptions::from_env()?;
    if let Some(f) = &args.from_report {
        let report = saved_report(f)?;
        return Ok(Scanned {
            report,
            at: Where { opts, seed: None },
        });
    }
    let taken = std::time::Instant::now();
    let report = smolsweep::scan::scan(&opts);
    let seed = Some((report.clone(), taken));
    Ok(Scanned {
        report,
        at: Where { opts, seed },
    })
}

pub(crate) fn with_report(args: &ReportArgs, json: bool, f: impl FnOnce(Scanned) -> i32) -> i32 {
    match load_report(args) {
        Ok(r) => f(r),
        // A saved report that cannot be used: the message names it and why.
        Err(e) if args.from_report.is_some() => fail(json, &format!("{e}")),
        Err(e) => fail(json, &format!("scan failed: {e}")),
    }
}

pub(crate) fn fail(json: bool, msg: &str) -> i32 {
    if json {
        crate::cli::out::json(&serde_json::json!({"schema": exec::RESULT_SCHEMA, "error": msg}));
    } else {
        eprintln!("smolsweep: {msg}");
    }
    1
}

/// What the user named on the command line: `pid:N` and `machine:NAME` keys of the plan's
/// `skipped_at_plan`, and finding ids.
#[derive(Debug, Default)]
pub(crate) struct Named {
    pub(crate) keys: Vec<String>,
    pub(crate) ids: Vec<String>,
}

impl Named {
    pub(crate) fn machines(names: &[String]) -> Named {
        Named {
            keys: names.iter().map(|n| format!("machine:{n}")).collect(),
            ids: vec![],
        }
    }
    fn is_empty(&self) -> bool {
        self.keys.is_empty() && self.ids.is_empty()
    }
}

/// The named targets the plan left out: absent from the scan or refused. A finding id left out
/// only because a planned delete or machine delete already covers it is not refused.
pub(crate) fn refused(plan: &Plan, report: &ScanReport, named: &Named) -> Vec<SkippedAtPlan> {
    let covered = |id: &str| report.finding(id).is_some_and(|f| plan.covers(report, f));
    let mut out: Vec<SkippedAtPlan> = Vec::new();
    for s in &plan.skipped_at_plan {
        let is_named = named.keys.contains(&s.id) || named.ids.contains(&s.id);
        let is_covered = named.ids.contains(&s.id) && covered(&s.id);
        if is_named && !is_covered && !out.iter().any(|o| o.id == s.id) {
            out.push(s.clone());
        }
    }
    out
}

/// How a run prints, and what makes it fail.
pub(crate) struct Mode<'a> {
    pub(crate) run: &'a RunArgs,
    /// Named targets that were not planned.
    pub(crate) refused: Vec<SkippedAtPlan>,
    /// Targets were named: one that is skipped when the plan runs is a refusal too.
    pub(crate) strict: bool,
    /// A plan whose every action is skipped when it runs (`apply` of a plan the world has
    /// moved past) did nothing that was asked: a refusal.
    pub(crate) all_skipped_refused: bool,
    /// One progress line per item as it finishes, also without `-v` (compaction: a few items,
    /// each of them slow, each with the bytes it freed).
    pub(crate) each: bool,
}

pub(crate) fn run_named(
    plan: &Plan,
    run: &RunArgs,
    at: &Where,
    command: &str,
    report: &ScanReport,
    named: Named,
) -> i32 {
    let mode = Mode {
        run,
        refused: refused(plan, report, &named),
        strict: !named.is_empty(),
        all_skipped_refused: false,
        each: false,
    };
    run_plan_with(plan, mode, at, command)
}

pub(crate) fn print_plan(plan: &Plan) {
    let c = smolsweep::view::confirmation(plan);
    crate::outln!("Plan {}: {}", &plan.id[..12], c.sentence());
    for a in &plan.actions {
        crate::outln!("  {}", view::action_line(a));
        if let Action::DeletePath { mounts_inside, .. } = &a.action {
            for m in mounts_inside {
                crate::outln!("      mount point inside, left in place: {}", shown(m));
            }
        }
    }
    if !plan.skipped_at_plan.is_empty() {
        crate::outln!("{}", view::NOT_PLANNED);
        for s in &plan.skipped_at_plan {
            crate::outln!("  {}", view::not_planned_line(&s.id, &s.why, None));
        }
    }
}

/// One stderr line per named target that was not planned.
pub(crate) fn print_refused(refused: &[SkippedAtPlan]) {
    for s in refused {
        eprintln!("smolsweep: {}", view::not_planned_line(&s.id, &s.why, None));
    }
}

/// The question is the confirmation every surface shows: "Delete 3 items and end 1 VM
/// process, freeing about 1.2 GB" (the prompt adds `? [y/N] `).
fn question(plan: &Plan) -> String {
    smolsweep::view::confirmation(plan).question()
}

/// The result of a run or dry run. The plan was listed before (unless `quiet`), so only what
/// did not go as planned is listed, then one closing line.
fn print_result(plan: &Plan, report: &ExecReport, run: &RunArgs) {
    if run.json {
        crate::cli::out::json(&report.envelope(plan));
        return;
    }
    for r in &report.records {
        let line = smolsweep::view::outcome_line(&r.summary, &r.outcome, r.freed_bytes);
        match &r.outcome {
            Outcome::Done { .. } | Outcome::WouldDo { .. } => {}
            Outcome::Failed { .. } if run.quiet => eprintln!("smolsweep: {line}"),
            _ if run.quiet => {}
            _ => crate::outln!("{line}"),
        }
    }
    crate::outln!("{}", smolsweep::view::closing_line(report));
}

fn dry_run(plan: &Plan, at: &Where) -> Result<ExecReport, exec::RunError> {
    exec::run(plan, None, exec::Origin::new("cli", "dry run"), at.road())
}

/// The exit code of a run: 1 when a named target was refused (at planning, or skipped when it
/// ran), when `apply` skipped every action of its plan, or when anything failed.
fn exit_code(mode: &Mode<'_>, report: Option<&ExecReport>) -> i32 {
    let all_skipped =
        |r: &ExecReport| !r.records.is_empty() && r.skipped().count() == r.records.len();
    let nothing_done = report.is_some_and(|r| mode.all_skipped_refused && all_skipped(r));
    if nothing_done && !mode.run.json {
        eprintln!("smolsweep: every item of the plan was skipped, so nothing was done (exit 1)");
    }
    let refused_now =
        nothing_done || report.is_some_and(|r| mode.strict && r.skipped().count() > 0);
    let failed = report.is_some_and(|r| r.any_failed());
    if !mode.refused.is_empty() || refused_now || failed {
        1
    } else {
        0
    }
}

pub(crate) fn run_plan_with(plan: &Plan, mode: Mode<'_>, at: &Where, command: &str) -> i32 {
    let run = mode.run;
    let human = !run.json;
    if human && !mode.refused.is_empty() {
        print_refused(&mode.refused);
    }
    if plan.is_empty() {
        if run.json {
            let empty = ExecReport {
                plan_id: plan.id.clone(),
                dry_run: run.dry_run || !run.yes,
                records: vec![],
                estimated_bytes: 0,
                freed_bytes: 0,
                filesystems: vec![],
                journal_error: None,
            };
            crate::cli::out::json(&empty.envelope(plan));
        } else if mode.refused.is_empty() {
            crate::outln!("Nothing to do.");
        } else {
            crate::outln!("Nothing done.");
        }
        return exit_code(&mode, None);
    }
    if human && !run.quiet {
        print_plan(plan);
    }
    if run.dry_run {
        return match dry_run(plan, at) {
            Ok(r) => {
                print_result(plan, &r, run);
                exit_code(&mode, Some(&r))
            }
            Err(e) => fail(run.json, &format!("the plan is not valid: {e}")),
        };
    }
    if !run.yes {
        if !std::io::stdin().is_terminal() {
            // Nobody to ask: the plan as a dry run, then the prompt's refusal.
            match dry_run(plan, at) {
                Ok(r) => print_result(plan, &r, run),
                Err(e) => return fail(run.json, &format!("the plan is not valid: {e}")),
            }
        }
        if let Err(code) = super::prompt::confirm(&question(plan)) {
            return code;
        }
    }
    let confirmed = Confirmed::of(plan, if run.yes { How::YesFlag } else { How::Answered });
    let progress = Progress::new(
        Style::for_stderr(run.json || run.quiet),
        (run.verbose || mode.each) && !run.json,
        progress::plan_bytes(plan),
        Some(plan.estimated_bytes),
    );
    let listen = |ev: &exec::ProgressEvent| progress.event(ev);
    let result = exec::run(
        plan,
        Some(confirmed),
        exec::Origin::new("cli", command),
        at.road().sink(&listen),
    );
    progress.finish();
    match result {
        Ok(report) => {
            print_result(plan, &report, run);
            if let Some(e) = &report.journal_error {
                eprintln!("smolsweep: the journal could not be written, so the run stopped: {e}");
            }
            exit_code(&mode, Some(&report))
        }
        Err(e) => fail(run.json, &e.to_string()),
    }
}
