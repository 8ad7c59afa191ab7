//! The one road a plan takes to its outcome, for every surface (`prune`, `apply`, `auto`,
//! `browse`, `uninstall`, the window, the wizard): [`run`] opens the journal (nothing runs
//! without it), builds the re-judge and the runner for the environment the run happens in,
//! and executes. A surface says only what differs: how the person confirmed, who asked, what
//! to tell as it goes; tests and the app may hand their own judge, runner or journal file.

use std::path::PathBuf;
use std::time::Instant;

use super::{
    execute, ActionRunner, Confirmed, ExecContext, ExecError, Judge, RealRunner, Rejudge,
    UnwiredRunner,
};
use crate::journal::Journal;
use crate::model::ScanReport;
use crate::plan::Plan;
use crate::record::{ExecReport, Origin, ProgressEvent};
use crate::scan::ScanOptions;

/// Where and how a run happens: the environment its actions are judged in (or the judge a
/// caller hands instead), the runner for machine, process and mount actions (by default the
/// real one for that environment), the journal file (by default Smolsweep's) and who hears
/// each action start and finish.
pub struct Road<'a> {
    judge: JudgeFrom<'a>,
    runner: Option<&'a dyn ActionRunner>,
    journal: Option<PathBuf>,
    sink: Option<&'a dyn Fn(&ProgressEvent)>,
}

/// What re-judges each action.
enum JudgeFrom<'a> {
    /// The scanner on this environment, started from a fresh scan when there is one.
    Env {
        opts: ScanOptions,
        seed: Option<(&'a ScanReport, Instant)>,
    },
    /// A judge the caller made (the wizard's, a test's).
    Given(&'a mut dyn Judge),
}

/// Why a run did not start: nothing was done.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The journal could not be opened.
    #[error("cannot open the journal, so nothing was done: {0}")]
    Journal(std::io::Error),
    /// No journal location in this environment.
    #[error("no data directory for the journal, so nothing was done")]
    NoJournal,
    /// The executor refused the plan (or the confirmation) as a whole.
    #[error(transparent)]
    Exec(#[from] ExecError),
}

impl<'a> Road<'a> {
    /// A run in the environment `opts` describes (the moment of execution: `now` is taken again
    /// when facts are gathered).
    pub fn new(opts: ScanOptions) -> Self {
        Road {
            judge: JudgeFrom::Env { opts, seed: None },
            runner: None,
            journal: None,
            sink: None,
        }
    }

    /// A run in this process's environment.
    pub fn from_env() -> anyhow::Result<Self> {
        Ok(Road::new(ScanOptions::from_env()?))
    }

    /// A run re-judged by `judge`, carried out by `runner` (the wizard's, a test's).
    pub fn given(judge: &'a mut dyn Judge, runner: &'a dyn ActionRunner) -> Self {
        Road {
            judge: JudgeFrom::Given(judge),
            runner: Some(runner),
            journal: None,
            sink: None,
        }
    }

    /// Start the re-judge from `report` when it is fresh (`prune` scans, plans and runs in one
    /// go; see [`Rejudge::seeded`]).
    pub fn seeded(self, report: &'a ScanReport, taken: Instant) -> Self {
        let judge = match self.judge {
            JudgeFrom::Env { opts, .. } => JudgeFrom::Env {
                opts,
                seed: Some((report, taken)),
            },
            given => given,
        };
        Road { judge, ..self }
    }

    /// Carry out machine, process and mount actions with `runner` (an uninstall's).
    pub fn runner(self, runner: &'a dyn ActionRunner) -> Self {
        Road {
            runner: Some(runner),
            ..self
        }
    }

    /// Journal in the file at `path` instead of the default journal.
    pub fn journal_at(self, path: PathBuf) -> Self {
        Road {
            journal: Some(path),
            ..self
        }
    }

    /// Tell `listen` as each action starts and finishes.
    pub fn sink(self, listen: &'a dyn Fn(&ProgressEvent)) -> Self {
        Road {
            sink: Some(listen),
            ..self
        }
    }
}

/// Run `plan`: confirmed by `confirmed` (made for exactly this plan), or a dry run when it is
/// `None` (read-only, nothing journaled); `origin` names who asked. The one entry every surface
/// runs a plan through.
pub fn run(
    plan: &Plan,
    confirmed: Option<Confirmed>,
    origin: Origin,
    road: Road<'_>,
) -> Result<ExecReport, RunError> {
    let Road {
        judge,
        runner,
        journal,
        sink,
    } = road;
    let (mut own_judge, mut own_runner) = (None, None);
    let (judge, env): (&mut dyn Judge, _) = match judge {
        JudgeFrom::Given(j) => (j, None),
        JudgeFrom::Env { opts, seed } => {
            let mut j = Rejudge::new(opts.clone());
            if let Some((report, taken)) = seed {
                j = j.seeded(report, taken);
            }
            (own_judge.insert(j), Some((opts.env, opts.platform)))
        }
    };
    let runner: &dyn ActionRunner = match (runner, env) {
        (Some(r), _) => r,
        (None, Some((env, platform))) => own_runner.insert(RealRunner::new(env, platform)),
        (None, None) => &UnwiredRunner,
    };
    let Some(confirmed) = confirmed else {
        let mut ctx = ExecContext::dry_run(runner, judge).origin(origin);
        if let Some(s) = sink {
            ctx = ctx.progress(s);
        }
        return Ok(execute(plan, ctx)?);
    };
    let path = match journal {
        Some(p) => p,
        None => crate::journal::default_path().ok_or(RunError::NoJournal)?,
    };
    let mut journal = Journal::open(&path).map_err(RunError::Journal)?;
    let mut ctx = ExecContext::confirmed(confirmed, runner, judge)
        .journal(&mut journal)
        .origin(origin);
    if let Some(s) = sink {
        ctx = ctx.progress(s);
    }
    Ok(execute(plan, ctx)?)
}
