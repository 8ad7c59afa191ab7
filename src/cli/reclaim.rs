//! `smolsweep prune|reap|stop|delete|plan|apply|history`: plan → confirm → execute → journal.
//!
//! Without `--yes`, a plan is only shown: on a terminal the user is asked (count and bytes); when
//! stdin is not a terminal the plan is printed as a dry run and the exit code is 1 when there was
//! something to do. Exit codes: 0 done or nothing to do, 1 refused or any failure, 2 usage.

use std::collections::BTreeSet;
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};

use crate::exec::delete::Confirmed;
use crate::exec::{self, ActionRunner, ExecContext, ExecReport, Outcome, RunMode};
use crate::journal::{self, Journal};
use crate::model::{human_bytes, OptInClass, ScanReport};
use crate::pathser::{escape_text, shown};
use crate::plan::{Action, Plan, Selection};

/// The runner for machine, process and mount actions: the product CLIs, pidfd reaping and
/// `hdiutil`, for this process's own environment.
fn runner() -> &'static dyn ActionRunner {
    static RUNNER: std::sync::OnceLock<Box<dyn ActionRunner + Send + Sync>> =
        std::sync::OnceLock::new();
    RUNNER
        .get_or_init(|| match crate::env::EnvSnapshot::capture() {
            Ok(env) => Box::new(exec::runner::RealRunner::new(
                env,
                crate::model::Platform::current(),
            )),
            Err(_) => Box::new(exec::UnwiredRunner),
        })
        .as_ref()
}

#[derive(Debug, Clone, clap::Args)]
pub struct IncludeArgs {
    /// Also delete saved (`.retained`) Celesto disks with their companions and logs.
    #[arg(long)]
    pub include_saved: bool,
    /// Also delete rebuildable caches (image caches, pack caches, registry blobs, ...).
    #[arg(long)]
    pub include_caches: bool,
    /// Also delete residue that may still carry user data (firmware NVRAM, snapshots).
    #[arg(long)]
    pub include_residue: bool,
}

impl IncludeArgs {
    fn classes(&self) -> BTreeSet<OptInClass> {
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
    #[arg(long)]
    pub dry_run: bool,
    /// Do it without asking.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Print one JSON object (schema smolsweep.result/1).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, clap::Args)]
pub struct ReportArgs {
    /// Plan from a saved `smolsweep scan --json` report instead of scanning now.
    #[arg(long, hide = true, value_name = "FILE")]
    pub from_report: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct PruneArgs {
    #[command(flatten)]
    pub include: IncludeArgs,
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub report: ReportArgs,
}

#[derive(Debug, clap::Args)]
pub struct ReapArgs {
    /// Only these processes (default: every orphaned VM process of this HOME).
    pub pids: Vec<u32>,
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub report: ReportArgs,
}

#[derive(Debug, clap::Args)]
pub struct StopArgs {
    /// Machine names (smolvm) or sandbox ids (Celesto).
    #[arg(required = true)]
    pub machines: Vec<String>,
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub report: ReportArgs,
}

#[derive(Debug, clap::Args)]
pub struct DeleteArgs {
    /// Machine names (smolvm) or sandbox ids (Celesto).
    #[arg(required = true)]
    pub machines: Vec<String>,
    #[command(flatten)]
    pub cascade: CascadeArg,
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub report: ReportArgs,
}

#[derive(Debug, Clone, clap::Args)]
pub struct CascadeArg {
    /// Also delete the machines branched from a deleted machine (smolvm `--cascade`); they are
    /// named in the plan. Without it, a machine with branches is not deleted.
    #[arg(long)]
    pub cascade: bool,
}

#[derive(Debug, clap::Args)]
pub struct PlanArgs {
    /// Finding ids to include (default without ids: everything reclaimable).
    #[arg(long = "id", value_name = "ID")]
    pub ids: Vec<String>,
    /// Everything reclaimable, in addition to any --id.
    #[arg(long)]
    pub all: bool,
    #[command(flatten)]
    pub include: IncludeArgs,
    /// Also end every orphaned VM process of this HOME.
    #[arg(long)]
    pub reap: bool,
    /// Also stop this machine (repeatable).
    #[arg(long = "stop", value_name = "MACHINE")]
    pub stop: Vec<String>,
    /// Also delete this machine through its product's CLI (repeatable).
    #[arg(long = "delete", value_name = "MACHINE")]
    pub delete: Vec<String>,
    #[command(flatten)]
    pub cascade: CascadeArg,
    /// Write the plan here (JSON, schema smolsweep.plan/1).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    #[command(flatten)]
    pub report: ReportArgs,
}

#[derive(Debug, clap::Args)]
pub struct ApplyArgs {
    /// A plan written by `smolsweep plan --out`.
    pub file: PathBuf,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Debug, clap::Args)]
pub struct HistoryArgs {
    /// Print one JSON object (schema smolsweep.history/1).
    #[arg(long)]
    pub json: bool,
}

/// A scan to plan from, and the judge that will re-judge each action when it runs (seeded
/// with the scan when it was made just now, from this environment).
struct Scanned {
    report: ScanReport,
    judge: exec::Rejudge,
}

fn load_report(args: &ReportArgs) -> anyhow::Result<Scanned> {
    let opts = crate::scan::ScanOptions::from_env()?;
    if let Some(f) = &args.from_report {
        let text = std::fs::read_to_string(f)
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", f.display()))?;
        return Ok(Scanned {
            report: serde_json::from_str(&text)?,
            judge: exec::Rejudge::new(opts),
        });
    }
    let taken = std::time::Instant::now();
    let report = crate::scan::scan(&opts);
    let judge = exec::Rejudge::new(opts).seeded(&report, taken);
    Ok(Scanned { report, judge })
}

fn with_report(args: &ReportArgs, json: bool, f: impl FnOnce(Scanned) -> i32) -> i32 {
    match load_report(args) {
        Ok(r) => f(r),
        Err(e) => fail(json, &format!("scan failed: {e}")),
    }
}

fn fail(json: bool, msg: &str) -> i32 {
    if json {
        crate::outln!(
            "{}",
            serde_json::json!({"schema": exec::RESULT_SCHEMA, "error": msg})
        );
    } else {
        eprintln!("smolsweep: {msg}");
    }
    1
}

pub fn prune(a: PruneArgs) -> i32 {
    with_report(&a.report, a.run.json, |s| {
        let sel = Selection {
            all_reclaimable: true,
            include: a.include.classes(),
            ..Default::default()
        };
        run_plan(&Plan::from_scan(&s.report, &sel), &a.run, s.judge, "prune")
    })
}

pub fn reap(a: ReapArgs) -> i32 {
    with_report(&a.report, a.run.json, |s| {
        let sel = Selection {
            reap_orphans: a.pids.is_empty(),
            reap_pids: a.pids.clone(),
            ..Default::default()
        };
        run_plan(&Plan::from_scan(&s.report, &sel), &a.run, s.judge, "reap")
    })
}

pub fn stop(a: StopArgs) -> i32 {
    with_report(&a.report, a.run.json, |s| {
        let sel = Selection {
            stop_machines: a.machines.clone(),
            ..Default::default()
        };
        run_plan(&Plan::from_scan(&s.report, &sel), &a.run, s.judge, "stop")
    })
}

pub fn delete(a: DeleteArgs) -> i32 {
    with_report(&a.report, a.run.json, |s| {
        let sel = Selection {
            delete_machines: a.machines.clone(),
            cascade: a.cascade.cascade,
            ..Default::default()
        };
        run_plan(&Plan::from_scan(&s.report, &sel), &a.run, s.judge, "delete")
    })
}

pub fn plan(a: PlanArgs) -> i32 {
    with_report(&a.report, false, |s| {
        let report = s.report;
        let sel = Selection {
            all_reclaimable: a.all || a.ids.is_empty(),
            ids: a.ids.clone(),
            include: a.include.classes(),
            reap_orphans: a.reap,
            stop_machines: a.stop.clone(),
            delete_machines: a.delete.clone(),
            cascade: a.cascade.cascade,
            ..Default::default()
        };
        let plan = Plan::from_scan(&report, &sel);
        if let Err(e) = std::fs::write(&a.out, plan.to_json_pretty() + "\n") {
            return fail(false, &format!("cannot write {}: {e}", a.out.display()));
        }
        print_plan(&plan);
        crate::outln!("Plan written to {}", a.out.display());
        0
    })
}

pub fn apply(a: ApplyArgs) -> i32 {
    let text = match std::fs::read_to_string(&a.file) {
        Ok(t) => t,
        Err(e) => {
            return fail(
                a.run.json,
                &format!("cannot read {}: {e}", a.file.display()),
            )
        }
    };
    let plan = match Plan::from_json(&text) {
        Ok(p) => p,
        Err(e) => return fail(a.run.json, &format!("refusing the plan: {e}")),
    };
    let home = std::env::var_os("HOME").map(PathBuf::from);
    if home.as_deref() != Some(plan.home.as_path()) {
        return fail(
            a.run.json,
            &format!(
                "refusing the plan: it was made for HOME {}, this is {}",
                plan.home.display(),
                home.as_deref().unwrap_or(Path::new("(unset)")).display()
            ),
        );
    }
    match exec::Rejudge::from_env() {
        Ok(judge) => run_plan(&plan, &a.run, judge, "apply"),
        Err(e) => fail(a.run.json, &format!("cannot read the environment: {e}")),
    }
}

pub fn history(a: HistoryArgs) -> i32 {
    let Some(path) = journal::default_path() else {
        return fail(a.json, "no data directory for the journal");
    };
    let contents = match journal::read(&path) {
        Ok(c) => c,
        Err(e) => return fail(a.json, &format!("cannot read {}: {e}", path.display())),
    };
    let runs = journal::runs(&contents.entries);
    if a.json {
        crate::outln!(
            "{}",
            serde_json::json!({
                "schema": "smolsweep.history/1",
                "journal": path,
                "runs": runs,
                "damaged_lines": contents.damaged_lines,
            })
        );
        return 0;
    }
    if runs.is_empty() {
        crate::outln!("No reclaims recorded yet ({}).", path.display());
    }
    for r in &runs {
        let when = utc(r.started_at_ms / 1000);
        crate::outln!(
            "plan {}  started {when}  {} planned, {} done, {} skipped, {} failed; estimated {}, {}",
            &r.plan_id[..r.plan_id.len().min(12)],
            r.planned_actions,
            r.done,
            r.skipped,
            r.failed,
            human_bytes(r.estimated_bytes),
            match r.freed_bytes {
                Some(b) => format!("freed {} (measured)", human_bytes(b)),
                None => "did not finish (interrupted); the actions below are what was done".into(),
            }
        );
        for o in &r.outcomes {
            crate::outln!("  {}", outcome_line(&o.summary, &o.outcome));
        }
    }
    if !contents.damaged_lines.is_empty() {
        crate::outln!(
            "({} damaged line(s) skipped: {:?})",
            contents.damaged_lines.len(),
            contents.damaged_lines
        );
    }
    0
}

/// `YYYY-MM-DD HH:MM:SS UTC` from seconds since the epoch (civil-from-days, proleptic Gregorian).
fn utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

fn outcome_line(summary: &str, o: &Outcome) -> String {
    match o {
        Outcome::Done { .. } => format!("done     {summary}"),
        Outcome::WouldDo { .. } => format!("would    {summary}"),
        Outcome::Skipped { why, .. } => format!("skipped  {summary}: {}", escape_text(why)),
        Outcome::Failed { error } => format!("FAILED   {summary}: {}", escape_text(error)),
    }
}

fn print_plan(plan: &Plan) {
    crate::outln!(
        "Plan {}: {} action(s), about {} to free",
        &plan.id[..12],
        plan.actions.len(),
        human_bytes(plan.estimated_bytes)
    );
    for a in &plan.actions {
        crate::outln!("  {}", a.summary);
        if let Action::DeletePath { mounts_inside, .. } = &a.action {
            for m in mounts_inside {
                crate::outln!("      mount point inside, left in place: {}", shown(m));
            }
        }
    }
    if !plan.skipped_at_plan.is_empty() {
        crate::outln!("Not planned:");
        for s in &plan.skipped_at_plan {
            crate::outln!("  {}: {}", s.id, escape_text(&s.why));
        }
    }
}

fn question(plan: &Plan) -> String {
    let deletes = plan.delete_count();
    let bytes = human_bytes(plan.estimated_bytes);
    if deletes == plan.actions.len() {
        format!("Delete {deletes} item(s) ({bytes})? [y/N] ")
    } else {
        format!(
            "Carry out {} action(s), deleting {deletes} item(s) ({bytes})? [y/N] ",
            plan.actions.len()
        )
    }
}

fn print_result(plan: &Plan, report: &ExecReport, json: bool) {
    if json {
        crate::outln!("{}", report.envelope(plan));
        return;
    }
    if report.dry_run {
        print_plan(plan);
    }
    for r in &report.records {
        if !report.dry_run || !matches!(r.outcome, Outcome::WouldDo { .. }) {
            crate::outln!("{}", outcome_line(&r.summary, &r.outcome));
        }
    }
    if report.dry_run {
        crate::outln!(
            "Dry run: nothing changed. Would free about {}.",
            human_bytes(report.estimated_bytes)
        );
    } else {
        crate::outln!(
            "{} done, {} skipped, {} failed. Freed {} (measured; estimated {}).",
            report.done().count(),
            report.skipped().count(),
            report.failed().count(),
            human_bytes(report.freed_bytes),
            human_bytes(report.estimated_bytes)
        );
    }
}

fn dry_run(plan: &Plan, judge: &mut exec::Rejudge) -> Option<ExecReport> {
    exec::execute(plan, ExecContext::dry_run(runner(), judge)).ok()
}

/// Show, confirm and carry out `plan`; returns the exit code.
pub fn run_plan(plan: &Plan, run: &RunArgs, mut judge: exec::Rejudge, command: &str) -> i32 {
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
            crate::outln!("{}", empty.envelope(plan));
        } else {
            print_plan(plan);
            crate::outln!("Nothing to do.");
        }
        return 0;
    }
    if run.dry_run {
        return match dry_run(plan, &mut judge) {
            Some(r) => {
                print_result(plan, &r, run.json);
                0
            }
            None => fail(run.json, "the plan is not valid"),
        };
    }
    if !run.yes {
        if !std::io::stdin().is_terminal() {
            if let Some(r) = dry_run(plan, &mut judge) {
                print_result(plan, &r, run.json);
            }
            eprintln!("Not confirmed: stdin is not a terminal. Re-run with --yes to do this.");
            return 1;
        }
        if !run.json {
            print_plan(plan);
        }
        eprint!("{}", question(plan));
        let _ = std::io::stderr().flush();
        let mut answer = String::new();
        let _ = std::io::stdin().lock().read_line(&mut answer);
        if !matches!(answer.trim(), "y" | "Y" | "yes" | "YES" | "Yes") {
            eprintln!("Nothing done.");
            return 1;
        }
    }
    let token = Confirmed::for_plan(plan);
    let mut journal = match Journal::open_default() {
        Ok(j) => j,
        Err(e) => {
            return fail(
                run.json,
                &format!("cannot open the journal, so nothing was done: {e}"),
            )
        }
    };
    let progress = super::progress_lines(run.json);
    match exec::execute(
        plan,
        ExecContext {
            mode: RunMode::Execute(token),
            journal: Some(&mut journal),
            progress: Some(&progress),
            runner: runner(),
            judge: &mut judge,
            origin: exec::Origin::new("cli", command),
        },
    ) {
        Ok(report) => {
            print_result(plan, &report, run.json);
            if let Some(e) = &report.journal_error {
                eprintln!("smolsweep: the journal could not be written, so the run stopped: {e}");
            }
            if report.any_failed() {
                1
            } else {
                0
            }
        }
        Err(e) => fail(run.json, &e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn utc_formats_civil_dates() {
        assert_eq!(super::utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(super::utc(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(super::utc(1_796_011_677), "2026-11-30 04:07:57 UTC");
    }
}
