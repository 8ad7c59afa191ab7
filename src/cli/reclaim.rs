//! `smolsweep prune|reap|stop|delete|plan|apply|history`: plan → confirm → execute → journal.
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
use smolsweep::journal;
use smolsweep::model::{human_bytes, OptInClass, ScanReport};
use smolsweep::plan::{Action, Plan, Selection, SkippedAtPlan};
use smolsweep::view::{self, escape_text, shown};

use super::progress::{self, outcome_line, Progress, Style};

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

#[derive(Debug, clap::Args)]
pub struct PruneArgs {
    #[command(flatten)]
    pub include: IncludeArgs,
    #[command(flatten)]
    pub filter: crate::cli::filters::FilterArgs,
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
pub struct CompactArgs {
    /// Machines or sandboxes (their disks), or disk paths; without any, every disk with
    /// something to compact.
    pub targets: Vec<String>,
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
    #[command(flatten)]
    pub filter: crate::cli::filters::FilterArgs,
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
    /// Write the plan here (JSON, schema smolsweep.plan/1); `-` writes it to stdout, alone.
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
    /// One run's items: its id (from `smolsweep history`) or a prefix only it starts with.
    #[arg(value_name = "RUN")]
    pub run: Option<String>,
    /// Show the newest N runs.
    #[arg(short = 'n', long = "count", value_name = "N", default_value_t = 10)]
    pub count: usize,
    /// Print one JSON object (schema smolsweep.history/1).
    #[arg(long)]
    pub json: bool,
}

/// A scan to plan from, and where its plan runs (the re-judge seeded with the scan when it was
/// made just now, from this environment).
struct Scanned {
    report: ScanReport,
    at: Where,
}

/// The environment a plan runs in, and the whole scan it was made from when that was just now
/// (the re-judge starts from it while it is fresh).
struct Where {
    opts: smolsweep::scan::ScanOptions,
    seed: Option<(ScanReport, std::time::Instant)>,
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

fn load_report(args: &ReportArgs) -> anyhow::Result<Scanned> {
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

fn with_report(args: &ReportArgs, json: bool, f: impl FnOnce(Scanned) -> i32) -> i32 {
    match load_report(args) {
        Ok(r) => f(r),
        // A saved report that cannot be used: the message names it and why.
        Err(e) if args.from_report.is_some() => fail(json, &format!("{e}")),
        Err(e) => fail(json, &format!("scan failed: {e}")),
    }
}

fn fail(json: bool, msg: &str) -> i32 {
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
struct Named {
    keys: Vec<String>,
    ids: Vec<String>,
}

impl Named {
    fn machines(names: &[String]) -> Named {
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
fn refused(plan: &Plan, report: &ScanReport, named: &Named) -> Vec<SkippedAtPlan> {
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

/// The finding ids `given` names, each in full or by a prefix of at least four characters only
/// one id starts with (a plan deletes what they name); one that names none stays as given, for
/// the planner to refuse by name.
fn finding_ids(report: &ScanReport, given: &[String]) -> Result<Vec<String>, String> {
    given
        .iter()
        .map(|g| {
            super::prefix::find_to_remove(&report.findings, g, "finding id", |f| &f.id)
                .map(|f| f.map_or_else(|| g.clone(), |f| f.id.clone()))
        })
        .collect()
}

/// How a run prints, and what makes it fail.
struct Mode<'a> {
    run: &'a RunArgs,
    /// Named targets that were not planned.
    refused: Vec<SkippedAtPlan>,
    /// Targets were named: one that is skipped when the plan runs is a refusal too.
    strict: bool,
    /// A plan whose every action is skipped when it runs (`apply` of a plan the world has
    /// moved past) did nothing that was asked: a refusal.
    all_skipped_refused: bool,
    /// One progress line per item as it finishes, also without `-v` (compaction: a few items,
    /// each of them slow, each with the bytes it freed).
    each: bool,
}

fn run_named(
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

pub fn prune(a: PruneArgs) -> i32 {
    with_report(&a.report, a.run.json, |mut s| {
        a.filter
            .filter()
            .apply(&mut s.report, std::time::SystemTime::now());
        let sel = Selection {
            all_reclaimable: true,
            include: a.include.classes(),
            ..Default::default()
        };
        let plan = Plan::from_scan(&s.report, &sel);
        run_named(&plan, &a.run, &s.at, "prune", &s.report, Named::default())
    })
}

pub fn reap(a: ReapArgs) -> i32 {
    with_report(&a.report, a.run.json, |s| {
        let sel = Selection {
            reap_orphans: a.pids.is_empty(),
            reap_pids: a.pids.clone(),
            ..Default::default()
        };
        let plan = Plan::from_scan(&s.report, &sel);
        let named = Named {
            keys: a.pids.iter().map(|p| format!("pid:{p}")).collect(),
            ids: vec![],
        };
        run_named(&plan, &a.run, &s.at, "reap", &s.report, named)
    })
}

pub fn stop(a: StopArgs) -> i32 {
    with_report(&a.report, a.run.json, |s| {
        let sel = Selection {
            stop_machines: a.machines.clone(),
            ..Default::default()
        };
        let plan = Plan::from_scan(&s.report, &sel);
        let named = Named::machines(&a.machines);
        run_named(&plan, &a.run, &s.at, "stop", &s.report, named)
    })
}

pub fn delete(a: DeleteArgs) -> i32 {
    with_report(&a.report, a.run.json, |s| {
        let sel = Selection {
            delete_machines: a.machines.clone(),
            cascade: a.cascade.cascade,
            ..Default::default()
        };
        let plan = Plan::from_scan(&s.report, &sel);
        let named = Named::machines(&a.machines);
        run_named(&plan, &a.run, &s.at, "delete", &s.report, named)
    })
}

pub fn compact(a: CompactArgs) -> i32 {
    with_report(&a.report, a.run.json, |s| {
        let plan = match smolsweep::compact_plan(&s.report, &a.targets) {
            Ok(p) => p,
            Err(e) => return fail(a.run.json, &e),
        };
        let mode = Mode {
            run: &a.run,
            refused: compact_refused(&plan, &a.targets),
            strict: !a.targets.is_empty(),
            all_skipped_refused: false,
            each: true,
        };
        run_plan_with(&plan, mode, &s.at, "compact")
    })
}

/// What of a compaction's named targets was refused: a disk named by its path that is not
/// planned, and every disk of a machine or sandbox none of whose disks is. Disks nobody named,
/// and a machine's disk with nothing to give back beside one that is compacted, are not
/// refusals (the plan lists them under "Not planned:").
fn compact_refused(plan: &Plan, targets: &[String]) -> Vec<SkippedAtPlan> {
    let planned_for = |t: &str| {
        plan.actions.iter().any(|a| match &a.action {
            Action::CompactDisk { product, owner, .. } => {
                let (p, name) = t.split_once(':').map_or((None, t), |(p, n)| (Some(p), n));
                owner.as_deref() == Some(name) && p.is_none_or(|p| p == product.as_str())
            }
            _ => false,
        })
    };
    let mut out = Vec::new();
    for t in targets {
        let by_path = t.contains('/');
        for s in &plan.skipped_at_plan {
            let disk = s.id.strip_prefix("disk:").unwrap_or(&s.id);
            let named = match by_path {
                true => Path::new(disk) == Path::new(t),
                false => !planned_for(t),
            };
            if named && !out.contains(s) {
                out.push(s.clone());
            }
        }
    }
    out
}

/// Whether `path` may be written with a plan: absent, or a Smolsweep plan already.
fn may_overwrite(path: &Path) -> Result<(), String> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("cannot check {}: {e}", path.display())),
    };
    let refuse = |what: &str| {
        Err(format!(
            "refusing to overwrite {}: {what}, not a Smolsweep plan (choose another --out, or remove it first)",
            path.display()
        ))
    };
    if !meta.is_file() {
        return refuse("it exists and is not a regular file");
    }
    let text = match smolsweep::read_input_text(path, smolsweep::MAX_PLAN_BYTES, "a plan") {
        Ok(t) => t,
        Err(smolsweep::InputError::TooLarge { .. }) => {
            return refuse(&format!(
                "it exists and is larger than {} MiB",
                smolsweep::MAX_PLAN_BYTES >> 20
            ))
        }
        Err(_) => return refuse("it exists and is not a text file"),
    };
    match serde_json::from_str::<serde_json::Value>(&text) {
        Ok(v) if v.get("schema").and_then(|s| s.as_str()) == Some(smolsweep::plan::PLAN_SCHEMA) => {
            Ok(())
        }
        Ok(v)
            if v.get("schema").and_then(|s| s.as_str()) == Some(smolsweep::model::SCAN_SCHEMA) =>
        {
            refuse("it is a scan report")
        }
        _ => refuse("it exists"),
    }
}

pub fn plan(a: PlanArgs) -> i32 {
    // `-` is stdout (`./-` names a file called `-`).
    let to_stdout = a.out.as_os_str() == "-";
    let writable = if to_stdout {
        Ok(())
    } else {
        may_overwrite(&a.out)
    };
    if let Err(msg) = writable {
        return fail(false, &msg);
    }
    with_report(&a.report, false, |s| {
        let mut report = s.report;
        let ids = match finding_ids(&report, &a.ids) {
            Ok(ids) => ids,
            Err(why) => return fail(false, &why),
        };
        a.filter
            .filter()
            .apply(&mut report, std::time::SystemTime::now());
        let sel = Selection {
            all_reclaimable: a.all || a.ids.is_empty(),
            ids: ids.clone(),
            include: a.include.classes(),
            reap_orphans: a.reap,
            stop_machines: a.stop.clone(),
            delete_machines: a.delete.clone(),
            cascade: a.cascade.cascade,
            ..Default::default()
        };
        let plan = Plan::from_scan(&report, &sel);
        let mut named = Named::machines(&a.stop);
        named.keys.extend(Named::machines(&a.delete).keys);
        named.ids = ids;
        let refused = refused(&plan, &report, &named);
        if !refused.is_empty() {
            if !to_stdout {
                print_plan(&plan);
            }
            print_refused(&refused);
            eprintln!("smolsweep: no plan written: a named target cannot be planned");
            return 1;
        }
        if let Err(e) = plan.verify() {
            return fail(false, &format!("no plan written: {e}"));
        }
        if to_stdout {
            // Only the plan, so `plan --out - > p.json` or `| jq` read it.
            crate::cli::out::raw(&(plan.to_json_pretty() + "\n"));
            return 0;
        }
        if let Err(e) = std::fs::write(&a.out, plan.to_json_pretty() + "\n") {
            return fail(false, &format!("cannot write {}: {e}", a.out.display()));
        }
        print_plan(&plan);
        crate::outln!("Plan written to {}", a.out.display());
        0
    })
}

pub fn apply(a: ApplyArgs) -> i32 {
    let text = match smolsweep::read_input_text(
        &a.file,
        smolsweep::MAX_PLAN_BYTES,
        "a plan Smolsweep wrote",
    ) {
        Ok(t) => t,
        Err(e) => return fail(a.run.json, &e.to_string()),
    };
    let plan = match Plan::from_json(&text) {
        Ok(p) => p,
        Err(e @ smolsweep::plan::PlanError::ScanReport) => {
            return fail(a.run.json, &format!("refusing {}: {e}", shown(&a.file)))
        }
        Err(e) => return fail(a.run.json, &format!("refusing {}: {e}", shown(&a.file))),
    };
    // The HOME the scan and the re-judge use (the snapshot's, exactly as set), so the plan is
    // compared with the HOME it would act on.
    let opts = match smolsweep::scan::ScanOptions::from_env() {
        Ok(o) => o,
        Err(e) => return fail(a.run.json, &format!("cannot read the environment: {e}")),
    };
    if opts.env.home != plan.home {
        return fail(
            a.run.json,
            &format!(
                "refusing the plan: it was made for HOME {}, this is {}",
                shown(&plan.home),
                shown(&opts.env.home)
            ),
        );
    }
    let mode = Mode {
        run: &a.run,
        refused: vec![],
        strict: false,
        all_skipped_refused: true,
        each: false,
    };
    run_plan_with(&plan, mode, &Where { opts, seed: None }, "apply")
}

pub fn history(a: HistoryArgs) -> i32 {
    let Some(path) = journal::default_path() else {
        return fail(a.json, "no data directory for the journal");
    };
    let cannot = |e: std::io::Error| fail(a.json, &format!("cannot read {}: {e}", path.display()));
    if let Some(given) = &a.run {
        return match history_of_run(&a, &path, given) {
            Ok(code) => code,
            Err(e) => cannot(e),
        };
    }
    // The newest runs only, read from the end: the older ones are counted, not read.
    let contents = match journal::read_newest(&path, a.count) {
        Ok(c) => c,
        Err(e) => return cannot(e),
    };
    let mut runs = journal::runs(&contents.entries);
    runs.reverse();
    let shown_runs = &runs[..runs.len().min(a.count)];
    let older = contents.runs_before + runs.len() - shown_runs.len();
    let total = contents.runs_before + runs.len();
    if a.json {
        crate::cli::out::json(&serde_json::json!({
            "schema": "smolsweep.history/1",
            "journal": path,
            "runs": shown_runs,
            "older_runs_not_shown": older,
            "damaged_lines": contents.damaged_lines,
            "cut_lines": contents.cut_lines,
        }));
        return 0;
    }
    if total == 0 {
        crate::outln!("No reclaims recorded yet ({}).", path.display());
    }
    for r in shown_runs {
        crate::outln!("{}", run_line(r));
    }
    for c in &contents.cut_lines {
        crate::outln!("({})", smolsweep::view::runs::cut_line(c));
    }
    if older > 0 {
        crate::outln!(
            "({older} older run{} not shown; `smolsweep history -n {}` shows every run.)",
            if older == 1 { "" } else { "s" },
            total
        );
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

/// The run id shown and accepted: the first 12 hex digits of its plan's id, as `prune` shows it.
fn run_id(r: &journal::RunSummary) -> &str {
    &r.run_id[..r.run_id.len().min(12)]
}

/// One run on one line: when, id, command (surface), done/skipped/failed, freed.
fn run_line(r: &journal::RunSummary) -> String {
    let by = match &r.origin {
        Some(o) => format!("{} ({})", escape_text(&o.command), escape_text(&o.surface)),
        None => "(command not recorded)".into(),
    };
    format!(
        "{}  {}  {by}  {} done, {} skipped, {} failed  {}",
        local_time(r.started_at_ms),
        run_id(r),
        r.done,
        r.skipped,
        r.failed,
        match r.freed_bytes {
            Some(b) => format!("freed {}", human_bytes(b)),
            None => "interrupted".into(),
        }
    )
}

/// `history RUN`: the run whose id is `given` or starts with it, or every run of the plan whose
/// id does, item by item. The journal is searched by ids, then only those runs are read.
fn history_of_run(a: &HistoryArgs, path: &Path, given: &str) -> std::io::Result<i32> {
    // Newest first, like `git log`.
    let mut ids = journal::run_ids(path)?;
    ids.reverse();
    let named = match runs_named(&ids, given, |r| (&r.run_id, &r.plan_id)) {
        Ok(r) if r.is_empty() => {
            return Ok(fail(
                a.json,
                &format!(
                    "no run {given} in {} (see `smolsweep history`)",
                    path.display()
                ),
            ))
        }
        Ok(r) => r,
        Err(candidates) => {
            return Ok(fail(
                a.json,
                &super::prefix::ambiguous("run", given, &candidates),
            ))
        }
    };
    let from = named.iter().map(|r| r.offset).min().unwrap_or(0);
    let plans: Vec<&str> = named.iter().map(|r| r.plan_id.as_str()).collect();
    let (mut of_plan, cut) = journal::runs_of(path, from, &plans)?;
    of_plan.retain(|r| named.iter().any(|n| n.run_id == r.run_id));
    of_plan.reverse();
    if a.json {
        crate::cli::out::json(&serde_json::json!({
            "schema": "smolsweep.history/1",
            "journal": path,
            "runs": of_plan,
            "cut_lines": cut,
        }));
        return Ok(0);
    }
    for c in &cut {
        crate::outln!("({})", smolsweep::view::runs::cut_line(c));
    }
    for r in &of_plan {
        crate::outln!("{}", run_line(r));
        crate::outln!(
            "  plan {}: {} planned, estimated {}",
            r.plan_id,
            r.planned_actions,
            human_bytes(r.estimated_bytes)
        );
        if r.freed_bytes.is_none() {
            crate::outln!("  did not finish (interrupted): the items below are what was done");
        }
        for o in &r.outcomes {
            crate::outln!("  {}", outcome_line(&o.summary, &o.outcome, o.freed_bytes));
        }
    }
    Ok(0)
}

/// The runs `given` names, like git names objects: a run id (what `history` prints) names one
/// run, a plan id every run of that plan; an id given in full wins, otherwise every run id and
/// plan id starting with `given` is a candidate. Candidates naming different runs make it
/// ambiguous (`Err` lists them, shortened, run ids first); none is `Ok` of nothing.
fn runs_named<'r, T>(
    runs: &'r [T],
    given: &str,
    ids: impl Fn(&T) -> (&str, &str),
) -> Result<Vec<&'r T>, Vec<String>> {
    let run_of = |r: &T| ids(r).0.to_string();
    let plan_of = |r: &T| ids(r).1.to_string();
    if given.is_empty() {
        return Ok(Vec::new());
    }
    let of_plan = |id: &str| -> Vec<&T> { runs.iter().filter(|r| plan_of(r) == id).collect() };
    if let Some(r) = runs.iter().find(|r| run_of(r) == given) {
        return Ok(vec![r]);
    }
    if runs.iter().any(|r| plan_of(r) == given) {
        return Ok(of_plan(given));
    }
    let short = |id: &str| id[..id.len().min(12)].to_string();
    // (shown, the runs it names), each id once.
    let mut candidates: Vec<(String, Vec<&T>)> = Vec::new();
    for r in runs.iter().filter(|r| run_of(r).starts_with(given)) {
        candidates.push((short(&run_of(r)), vec![r]));
    }
    for r in runs.iter().filter(|r| plan_of(r).starts_with(given)) {
        let shown = format!("plan {}", short(&plan_of(r)));
        if !candidates.iter().any(|(s, _)| *s == shown) {
            candidates.push((shown, of_plan(&plan_of(r))));
        }
    }
    let first = candidates.first().map(|(_, rs)| rs.clone());
    let same = |rs: &Vec<&T>| {
        first.as_ref().is_some_and(|f| {
            f.len() == rs.len() && f.iter().zip(rs).all(|(a, b)| std::ptr::eq(*a, *b))
        })
    };
    if candidates.iter().all(|(_, rs)| same(rs)) {
        Ok(first.unwrap_or_default())
    } else {
        Err(candidates.into_iter().map(|(s, _)| s).collect())
    }
}

/// `YYYY-MM-DD HH:MM:SS +HH:MM` in the local time zone (`TZ`, else /etc/localtime) from
/// milliseconds since the epoch.
/// A time as every History shows it (the core's `view::history_time`).
fn local_time(ms: u64) -> String {
    smolsweep::view::history_time(ms)
}

fn print_plan(plan: &Plan) {
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
fn print_refused(refused: &[SkippedAtPlan]) {
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

fn run_plan_with(plan: &Plan, mode: Mode<'_>, at: &Where, command: &str) -> i32 {
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

#[cfg(test)]
mod tests {
    #[test]
    fn local_time_follows_tz() {
        let s = super::local_time(1_796_011_677_000);
        assert!(s.starts_with("2026-11-"), "{s}");
        assert_eq!(s.len(), "2026-11-30 04:07:57 +00:00".len(), "{s}");
    }
}
