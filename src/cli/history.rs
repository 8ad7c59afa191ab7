//! `smolsweep history`: the journal of executed plans, newest first, or one run item by item.

use std::path::Path;

use smolsweep::journal;
use smolsweep::model::human_bytes;
use smolsweep::view::escape_text;

use super::progress::outcome_line;
use super::run::fail;

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

pub fn run(a: HistoryArgs) -> i32 {
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
        crate::outln!("({})", smolsweep::view::runs::older_runs_line(older, total));
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
/// milliseconds since the epoch, as every History shows it (the core's `view::history_time`).
fn local_time(ms: u64) -> String {
    smolsweep::view::history_time(ms, &smolsweep::env::SystemZone)
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
