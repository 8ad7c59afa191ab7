//! Carrying out an [`UninstallPlan`]: its checked steps are one core [`Plan`], run by the one
//! executor ([`crate::exec::execute`]) like every other plan: each action re-judged at the
//! moment it runs, carried out (machine CLIs, pidfd reaping and `hdiutil` through
//! [`RealRunner`], removals through the descriptor-based delete primitive, launchers, empty
//! directories and PATH-block edits in [`crate::exec::teardown`]), and journaled.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::env::EnvSnapshot;
use crate::exec::runner::RealRunner;
use crate::exec::{
    ActionRunner, Confirmed, ExecContext, How, Judge, Origin, Outcome, ProgressEvent,
};
use crate::journal::Journal;
use crate::model::Platform;
use crate::plan::Action;

use super::plan::UninstallPlan;

/// One step and what happened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepRecord {
    /// The step's index in the uninstall plan.
    pub index: usize,
    pub summary: String,
    #[serde(flatten)]
    pub action: Action,
    pub result: Outcome,
}

/// What a run did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunReport {
    pub records: Vec<StepRecord>,
    pub freed_bytes: u64,
    /// Startup-file backups written before PATH-block edits.
    pub backups: Vec<PathBuf>,
    /// Set when the journal could not be written (the run stopped there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal_error: Option<String>,
}

impl RunReport {
    pub fn any_failed(&self) -> bool {
        self.journal_error.is_some()
            || self
                .records
                .iter()
                .any(|r| matches!(r.result, Outcome::Failed { .. }))
    }
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

/// Run every checked step of `plan`, as `--yes` does (no journal).
pub fn run(plan: &UninstallPlan, runner: &dyn ActionRunner, judge: &mut dyn Judge) -> RunReport {
    run_with(plan, How::YesFlag, runner, judge, None, None, "cli")
}

/// Run every checked step of `plan`, confirmed `how`, through the one executor, journaled when
/// `journal` is given; `progress` hears every action start and finish; `surface` names who
/// asked.
pub fn run_with(
    plan: &UninstallPlan,
    how: How,
    runner: &dyn ActionRunner,
    judge: &mut dyn Judge,
    journal: Option<&mut Journal>,
    progress: Option<&dyn Fn(&ProgressEvent)>,
    surface: &str,
) -> RunReport {
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
        let mut ctx = ExecContext::confirmed(Confirmed::of(&core, how), runner, judge)
            .origin(Origin::new(surface, "uninstall"));
        if let Some(j) = journal {
            ctx = ctx.journal(j);
        }
        if let Some(p) = progress {
            ctx = ctx.progress(p);
        }
        match crate::exec::execute(&core, ctx) {
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
    report
}
