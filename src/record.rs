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
    Done {
        detail: String,
    },
    /// Dry run: it would be done.
    WouldDo {
        detail: String,
    },
    Skipped {
        why: String,
        /// Part of it was done (a directory deleted except a mount point inside).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        partial: bool,
        #[serde(
            default,
            skip_serializing_if = "Vec::is_empty",
            with = "crate::pathser::many"
        )]
        left: Vec<PathBuf>,
    },
    Failed {
        error: String,
    },
}

impl Outcome {
    pub fn skipped(why: impl Into<String>) -> Outcome {
        Outcome::Skipped {
            why: why.into(),
            partial: false,
            left: Vec::new(),
        }
    }
    pub fn failed(error: impl Into<String>) -> Outcome {
        Outcome::Failed {
            error: error.into(),
        }
    }
    pub fn done(detail: impl Into<String>) -> Outcome {
        Outcome::Done {
            detail: detail.into(),
        }
    }
    pub fn is_done(&self) -> bool {
        matches!(self, Outcome::Done { .. })
    }
}

/// What the UI hears while a plan runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum ProgressEvent {
    Started {
        index: usize,
        total: usize,
        summary: String,
    },
    Finished {
        index: usize,
        total: usize,
        summary: String,
        outcome: Outcome,
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
    pub index: usize,
    pub summary: String,
    #[serde(flatten)]
    pub action: Action,
    #[serde(flatten)]
    pub outcome: Outcome,
    /// What this action freed, measured on its own target (see `ExecReport::freed_bytes`).
    #[serde(default)]
    pub freed_bytes: u64,
}

/// Free space of one file system before and after the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FsMeasure {
    pub dev: u64,
    /// A path on it (a root of the plan).
    #[serde(with = "crate::pathser::one")]
    pub path: PathBuf,
    pub free_before: u64,
    pub free_after: u64,
}

/// The result of running (or dry-running) a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecReport {
    pub plan_id: String,
    pub dry_run: bool,
    pub records: Vec<ActionRecord>,
    pub estimated_bytes: u64,
    /// Measured: the sum of what each action freed, measured on its own target — allocated
    /// bytes there just before it acted less what is left after (hard links counted once), or
    /// for a machine deleted by its product's CLI the growth of free space during that action
    /// alone (0 in a dry run). Other programs writing to the same disk do not move it, as they
    /// move `filesystems`.
    pub freed_bytes: u64,
    pub filesystems: Vec<FsMeasure>,
    /// Set when the journal could not be written: the run stopped before the next action.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal_error: Option<String>,
}

impl ExecReport {
    pub fn done(&self) -> impl Iterator<Item = &ActionRecord> {
        self.records.iter().filter(|r| r.outcome.is_done())
    }
    pub fn skipped(&self) -> impl Iterator<Item = &ActionRecord> {
        self.records
            .iter()
            .filter(|r| matches!(r.outcome, Outcome::Skipped { .. }))
    }
    pub fn failed(&self) -> impl Iterator<Item = &ActionRecord> {
        self.records
            .iter()
            .filter(|r| matches!(r.outcome, Outcome::Failed { .. }))
    }
    pub fn would_do(&self) -> impl Iterator<Item = &ActionRecord> {
        self.records
            .iter()
            .filter(|r| matches!(r.outcome, Outcome::WouldDo { .. }))
    }
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
