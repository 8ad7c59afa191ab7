//! What a run records: each action's outcome, the free space measured, the whole report, and
//! the events the UI hears. The executor makes these and the journal writes and reads them; both
//! stand above this file, and neither needs the other for it. Every surface names them through
//! `exec` (`smolsweep::exec::Outcome`, ...).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::plan::{Action, Plan};

/// Schema name of a reclaim result.
pub const RESULT_SCHEMA: &str = "smolsweep.result/1";

/// The outcome of one action. Expected situations (already gone, changed, refused) are outcomes,
/// not errors.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// It was done (JSON `"outcome": "done"`).
    Done {
        /// What was done, for a person ("deleted (12 entries)", "stopped web").
        detail: String,
    },
    /// Dry run: it would be done.
    WouldDo {
        /// What it would do ("would delete").
        detail: String,
    },
    /// It was not done, or only in part: the target was already gone, had changed since the scan,
    /// was refused, or the journal could not be written.
    Skipped {
        /// Why, for a person ("already gone", "changed since the scan, left in place: …").
        why: String,
        /// Part of it was done (a directory deleted except a mount point inside).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        partial: bool,
        /// What was left in place (mount points, entries changed or unreadable) when it was done
        /// only in part.
        #[serde(
            default,
            skip_serializing_if = "Vec::is_empty",
            with = "crate::pathser::many"
        )]
        left: Vec<PathBuf>,
    },
    /// It was attempted and an error stopped it.
    Failed {
        /// The error, for a person.
        error: String,
    },
}

impl Outcome {
    /// Skipped for `why`, nothing of it done.
    pub fn skipped(why: impl Into<String>) -> Outcome {
        Outcome::Skipped {
            why: why.into(),
            partial: false,
            left: Vec::new(),
        }
    }
    /// Failed with `error`.
    pub fn failed(error: impl Into<String>) -> Outcome {
        Outcome::Failed {
            error: error.into(),
        }
    }
    /// Done, with `detail` saying what was done.
    pub fn done(detail: impl Into<String>) -> Outcome {
        Outcome::Done {
            detail: detail.into(),
        }
    }
    /// Whether it was done (not skipped, failed or only dry-run).
    pub fn is_done(&self) -> bool {
        matches!(self, Outcome::Done { .. })
    }
}

/// What the UI hears while a plan runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum ProgressEvent {
    /// An action is about to run (JSON `"event": "started"`).
    Started {
        /// Its position in the plan, from 0.
        index: usize,
        /// How many actions the plan has.
        total: usize,
        /// The action's one-line summary, as the plan shows it.
        summary: String,
    },
    /// An action has run, with its outcome.
    Finished {
        /// Its position in the plan, from 0.
        index: usize,
        /// How many actions the plan has.
        total: usize,
        /// The action's one-line summary, as the plan shows it.
        summary: String,
        /// What became of it.
        outcome: Outcome,
        /// What it freed, measured on its own target (0 when it frees nothing itself or was not
        /// carried out).
        freed_bytes: u64,
    },
}

/// Which surface and command made a run (recorded in the journal).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Origin {
    /// `cli`, `tray`, `window`, `auto`.
    pub surface: String,
    /// `prune`, `reap`, `stop`, `delete`, `apply`, `uninstall`, `reclaim`, `end process`, ...
    pub command: String,
}

impl Origin {
    /// The origin `command` run from `surface`.
    pub fn new(surface: &str, command: &str) -> Self {
        Origin {
            surface: surface.into(),
            command: command.into(),
        }
    }
}

/// One action with its outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionRecord {
    /// Its position in the plan, from 0.
    pub index: usize,
    /// The action's one-line summary, as the plan shows it.
    pub summary: String,
    /// The action as planned (its fields are flattened into the record's JSON).
    #[serde(flatten)]
    pub action: Action,
    /// What became of it (flattened into the record's JSON: `outcome` and its fields).
    #[serde(flatten)]
    pub outcome: Outcome,
    /// What this action freed, measured on its own target (see `ExecReport::freed_bytes`).
    #[serde(default)]
    pub freed_bytes: u64,
}

/// Free space of one file system before and after the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FsMeasure {
    /// Device number of the file system (`st_dev`).
    pub dev: u64,
    /// A path on it (a root of the plan).
    #[serde(with = "crate::pathser::one")]
    pub path: PathBuf,
    /// Free bytes before the first action (`f_bfree` × `f_frsize`).
    pub free_before: u64,
    /// Free bytes after the last action, measured the same way.
    pub free_after: u64,
}

/// The result of running (or dry-running) a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecReport {
    /// Id of the plan that ran.
    pub plan_id: String,
    /// Whether this was a dry run (nothing was changed, nothing journaled).
    pub dry_run: bool,
    /// Every action of the plan with its outcome, in plan order.
    pub records: Vec<ActionRecord>,
    /// What the plan estimated it would free (allocated bytes).
    pub estimated_bytes: u64,
    /// Measured: the sum of what each action freed, measured on its own target — allocated
    /// bytes there just before it acted less what is left after (hard links counted once), or
    /// for a machine deleted by its product's CLI the growth of free space during that action
    /// alone (0 in a dry run). Other programs writing to the same disk do not move it, as they
    /// move `filesystems`.
    pub freed_bytes: u64,
    /// Free space of each file system the plan deletes on, before and after the run (empty in a dry
    /// run).
    pub filesystems: Vec<FsMeasure>,
    /// Set when the journal could not be written: the run stopped before the next action.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal_error: Option<String>,
}

impl ExecReport {
    /// The actions that were done.
    pub fn done(&self) -> impl Iterator<Item = &ActionRecord> {
        self.records.iter().filter(|r| r.outcome.is_done())
    }
    /// The actions that were skipped (partial ones included).
    pub fn skipped(&self) -> impl Iterator<Item = &ActionRecord> {
        self.records
            .iter()
            .filter(|r| matches!(r.outcome, Outcome::Skipped { .. }))
    }
    /// The actions that failed.
    pub fn failed(&self) -> impl Iterator<Item = &ActionRecord> {
        self.records
            .iter()
            .filter(|r| matches!(r.outcome, Outcome::Failed { .. }))
    }
    /// The actions a dry run would do.
    pub fn would_do(&self) -> impl Iterator<Item = &ActionRecord> {
        self.records
            .iter()
            .filter(|r| matches!(r.outcome, Outcome::WouldDo { .. }))
    }
    /// Whether any action failed or the journal could not be written.
    pub fn any_failed(&self) -> bool {
        self.failed().next().is_some() || self.journal_error.is_some()
    }

    /// The `smolsweep.result/1` JSON envelope.
    pub fn envelope(&self, plan: &Plan) -> serde_json::Value {
        let list = |it: &mut dyn Iterator<Item = &ActionRecord>| -> Vec<serde_json::Value> {
            // A record that cannot be written as JSON (it always can) is reported, not a panic
            // after the run.
            it.map(|r| {
                serde_json::to_value(r).unwrap_or_else(
                    |e| serde_json::json!({"index": r.index, "summary": r.summary, "error": e.to_string()}),
                )
            })
            .collect()
        };
        serde_json::json!({
            "schema": RESULT_SCHEMA,
            "plan_id": self.plan_id,
            "dry_run": self.dry_run,
            "done": list(&mut self.done()),
            "would_do": list(&mut self.would_do()),
            "skipped": list(&mut self.skipped()),
            "failed": list(&mut self.failed()),
            "not_planned": plan.skipped_at_plan,
            "estimated_bytes": self.estimated_bytes,
            "freed_bytes": self.freed_bytes,
            "filesystems": self.filesystems,
            "journal_error": self.journal_error,
        })
    }
}
