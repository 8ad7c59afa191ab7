//! Carrying out an [`UninstallPlan`]: its checked steps are one core [`Plan`], run by the one
//! executor, through the one road ([`crate::exec::run`]) like every other plan: each action re-judged at the
//! moment it runs, carried out (machine CLIs, pidfd reaping and `hdiutil` through
//! [`RealRunner`], removals through the descriptor-based delete primitive, launchers, empty
//! directories and PATH-block edits in [`crate::exec::teardown`]), and journaled. What a run
//! did reads the same on every surface: [`render`] (the steps and what was freed) and
//! [`render_tally`] (one closing sentence).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::env::EnvSnapshot;
use crate::exec::runner::RealRunner;
use crate::exec::{Confirmed, How, Origin, Outcome, Road, RunError};
use crate::model::{human_bytes, Platform};
use crate::plan::Action;

use super::plan::UninstallPlan;

/// One step and what happened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepRecord {
    /// The step's index in the uninstall plan.
    pub index: usize,
    /// What the step does, as the plan said it.
    pub summary: String,
    /// The action it carried out.
    #[serde(flatten)]
    pub action: Action,
    /// What happened.
    pub result: Outcome,
}

/// What a run did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunReport {
    /// Every step, ticked or not, in the plan's order.
    pub records: Vec<StepRecord>,
    /// Bytes freed, measured per action.
    pub freed_bytes: u64,
    /// Startup-file backups written before PATH-block edits.
    pub backups: Vec<PathBuf>,
    /// Set when the journal could not be written (the run stopped there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal_error: Option<String>,
}

impl RunReport {
    /// "Freed about 1.2 GB.": what the run freed, as the CLI and the window's proof say it.
    pub fn freed_line(&self) -> String {
        format!("Freed about {}.", human_bytes(self.freed_bytes))
    }
    /// Each step and what happened, as the window lists them
    /// ([`crate::view::uninstall::step_row`]), in `records` order.
    pub fn step_rows(&self) -> Vec<crate::view::uninstall::StepRow> {
        self.records
            .iter()
            .map(|r| crate::view::uninstall::step_row(r.index, &r.summary, &r.result))
            .collect()
    }
    /// Whether a step failed or the journal could not be written.
    pub fn any_failed(&self) -> bool {
        self.journal_error.is_some()
            || self
                .records
                .iter()
                .any(|r| matches!(r.result, Outcome::Failed { .. }))
    }
}

/// What a run did, for people: one line per step, `NN. done|skipped|FAILED: summary — detail`
/// (a dry run's steps read `done`), then `Freed about …` and one `Backup: …` line per
/// startup-file backup. The CLI prints it after a run; the window's copyable report holds it.
pub fn render(report: &RunReport) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    for rec in &report.records {
        let line = crate::view::uninstall::step_line(rec.index, &rec.summary, &rec.result);
        let _ = writeln!(s, "{line}");
    }
    let _ = writeln!(s, "{}", report.freed_line());
    for b in &report.backups {
        let _ = writeln!(s, "Backup: {}", b.display());
    }
    s
}

/// What a run did in one sentence, without a newline: `3 done, 1 skipped, 0 failed. Freed
/// about 1.2 GB.` (a dry run's steps count as done). `uninstall --quiet` closes with it.
pub fn render_tally(report: &RunReport) -> String {
    let mut counts = [0usize; 3];
    for rec in &report.records {
        match &rec.result {
            Outcome::Done { .. } | Outcome::WouldDo { .. } => counts[0] += 1,
            Outcome::Skipped { .. } => counts[1] += 1,
            Outcome::Failed { .. } => counts[2] += 1,
        }
    }
    format!(
        "{} done, {} skipped, {} failed. {}",
        counts[0],
        counts[1],
        counts[2],
        report.freed_line()
    )
}

/// The runner for an uninstall of `plan` in `env`: the real one, running the CLIs of the
/// installs being removed.
pub fn runner_for(plan: &UninstallPlan, env: &EnvSnapshot, platform: Platform) -> RealRunner {
    plan.clis
        .iter()
        .fold(RealRunner::new(env.clone(), platform), |r, (p, c)| {
            r.with_cli(*p, c.clone())
        })
}

/// Run every checked step of `plan`, confirmed `how` (the caller says how the person
/// confirmed it; nothing here confirms on its own), through the one road every plan takes
/// ([`crate::exec::run`]: re-judged, journaled, the progress told to the road's sink);
/// `surface` names who asked. `Err` when the run could not start (the journal could not be
/// opened): nothing was done.
pub fn run_with(
    plan: &UninstallPlan,
    how: How,
    surface: &str,
    road: Road<'_>,
) -> Result<RunReport, RunError> {
    let (core, index_of) = plan.core_plan();
    let mut report = RunReport::default();
    for (i, ps) in plan.steps.iter().enumerate().filter(|(_, s)| !s.checked) {
        report.records.push(StepRecord {
            index: i,
            summary: ps.summary.clone(),
            action: ps.action.clone(),
            result: Outcome::skipped("unticked"),
        });
    }
    if !core.is_empty() {
        // The checked steps, as they were shown, are the core plan confirmed.
        let confirmed = Confirmed::of(&core, how);
        match crate::exec::run(
            &core,
            Some(confirmed),
            Origin::new(surface, "uninstall"),
            road,
        ) {
            Ok(r) => {
                report.freed_bytes = r.freed_bytes;
                report.journal_error = r.journal_error.clone();
                for rec in r.records {
                    if let (Action::RemovePathBlock { .. }, Outcome::Done { detail }) =
                        (&rec.action, &rec.outcome)
                    {
                        if let Some(b) = detail.strip_prefix(crate::exec::teardown::BACKED_UP_TO) {
                            report.backups.push(PathBuf::from(b));
                        }
                    }
                    report.records.push(StepRecord {
                        index: index_of[rec.index],
                        summary: rec.summary,
                        action: rec.action,
                        result: rec.outcome,
                    });
                }
            }
            Err(e @ (RunError::Journal(_) | RunError::NoJournal)) => return Err(e),
            Err(e) => {
                for (ci, i) in index_of.iter().enumerate() {
                    report.records.push(StepRecord {
                        index: *i,
                        summary: core.actions[ci].summary.clone(),
                        action: core.actions[ci].action.clone(),
                        result: Outcome::failed(format!("not carried out: {e}")),
                    });
                }
            }
        }
    }
    report.records.sort_by_key(|r| r.index);
    Ok(report)
}

/// The copyable report: choices, steps and outcomes (the core's [`render`], as the CLI
/// prints them), kept items, user commands, proof.
pub fn copyable_report(
    plan: &UninstallPlan,
    run: Option<&RunReport>,
    proof: &super::verify::Proof,
) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let products: Vec<&str> = plan.products.iter().map(|p| p.display_name()).collect();
    let _ = writeln!(s, "Smolsweep uninstall report");
    let _ = writeln!(s, "home={}", plan.home.display());
    let _ = writeln!(s, "products={}", products.join(", "));
    let _ = writeln!(
        s,
        "remove_credentials={} remove_path_block={}",
        plan.options.remove_credentials, plan.options.remove_path_block
    );
    let _ = writeln!(s);
    match run {
        Some(r) => {
            let _ = writeln!(s, "Steps:");
            s.push_str(&render(r));
        }
        None => {
            let _ = writeln!(s, "Nothing was run.");
        }
    }
    let left = super::plan::render_leftovers(plan);
    if !left.trim().is_empty() {
        let _ = writeln!(s);
        s.push_str(&left);
        if !left.ends_with('\n') {
            s.push('\n');
        }
    }
    let _ = writeln!(s);
    let _ = writeln!(s, "Proof (smolsweep verify):");
    s.push_str(&super::verify::render_kv(proof));
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Product;

    fn record(index: usize, summary: &str, result: Outcome) -> StepRecord {
        StepRecord {
            index,
            summary: summary.into(),
            action: Action::RemoveTree {
                product: Product::Smolvm,
                path: "/home/u/.smolvm".into(),
                root: "/home/u".into(),
                identity: None,
                expected_bytes: 0,
                mounts_inside: vec![],
            },
            result,
        }
    }

    #[test]
    fn a_run_reads_step_by_step_then_freed_and_backups() {
        let report = RunReport {
            records: vec![
                record(
                    0,
                    "Remove ~/.smolvm",
                    Outcome::Done {
                        detail: "removed".into(),
                    },
                ),
                record(1, "Remove ~/.cache/smolvm", Outcome::skipped("unticked")),
                record(11, "Stop machine 'demo'", Outcome::failed("exit 1")),
            ],
            freed_bytes: 2048,
            backups: vec![PathBuf::from("/home/u/.bashrc.smolsweep-backup")],
            journal_error: None,
        };
        assert_eq!(
            render(&report),
            " 1. done: Remove ~/.smolvm — removed\n\
             \x202. skipped: Remove ~/.cache/smolvm — unticked\n\
             12. FAILED: Stop machine 'demo' — exit 1\n\
             Freed about 2.0 kB.\n\
             Backup: /home/u/.bashrc.smolsweep-backup\n"
        );
        assert_eq!(
            render_tally(&report),
            "1 done, 1 skipped, 1 failed. Freed about 2.0 kB."
        );
    }
}
