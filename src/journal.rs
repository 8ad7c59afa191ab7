//! The journal: an append-only JSON Lines record of every executed plan.
//!
//! A `plan_started` line (plan id, actions, estimate) is written and fsynced before the first
//! action, one `action` line per outcome as it completes, and a `plan_finished` line with the
//! measured bytes. Each line is one `write` to a file opened with `O_APPEND`, followed by
//! `fsync`, so a crash mid-run leaves every completed action on disk; the reader tolerates a
//! truncated last line. Lives in the app's data directory (`SMOLSWEEP_DATA_DIR` overrides it).

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::plan::{Plan, PlannedAction};

mod lines;
mod tail;
use crate::record::{ActionRecord, ExecReport, FsMeasure, Origin, Outcome};
pub use lines::MAX_LINE;
pub use tail::{read_newest, run_ids, runs_of, runs_started_after, CutLine, Newest, RunIds};

/// File name of the journal inside the data directory.
pub const JOURNAL_FILE: &str = "journal.jsonl";

/// One line of the journal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum JournalEntry {
    /// Written and fsynced before a plan's first action (JSON `"event": "plan_started"`).
    PlanStarted {
        /// Milliseconds since the Unix epoch.
        at_ms: u64,
        /// Id of the plan (its content hash), linking the run's later lines to this one.
        plan_id: String,
        /// The HOME the plan was made for.
        #[serde(with = "crate::pathser::one")]
        home: PathBuf,
        /// Allocated bytes the plan expected to free.
        estimated_bytes: u64,
        /// Every action of the plan, as confirmed.
        actions: Vec<PlannedAction>,
        /// Which surface and command made the run (absent in journals of older versions).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        origin: Option<Origin>,
    },
    /// One action's outcome, written as soon as it completes.
    Action {
        /// Milliseconds since the Unix epoch.
        at_ms: u64,
        /// Id of the plan the action belongs to.
        plan_id: String,
        /// The action and its outcome (its fields are flattened into the line).
        #[serde(flatten)]
        record: Box<ActionRecord>,
    },
    /// Written after the last action, with the measured result.
    PlanFinished {
        /// Milliseconds since the Unix epoch.
        at_ms: u64,
        /// Id of the plan that ran.
        plan_id: String,
        /// Actions done.
        done: usize,
        /// Actions skipped (partial ones included).
        skipped: usize,
        /// Actions that failed.
        failed: usize,
        /// Allocated bytes the plan expected to free.
        estimated_bytes: u64,
        /// Bytes measured freed, summed over the actions (see [`ExecReport::freed_bytes`]).
        freed_bytes: u64,
        /// Free space of each file system before and after the run (absent in journals of older
        /// versions).
        #[serde(default)]
        filesystems: Vec<FsMeasure>,
    },
}

/// An open journal file.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    file: File,
}

/// The app data directory: `$SMOLSWEEP_DATA_DIR`, else the platform's data dir for Smolsweep.
pub fn data_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("SMOLSWEEP_DATA_DIR").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d));
    }
    directories::ProjectDirs::from("org", "Smolsweep", "smolsweep").map(|p| p.data_dir().into())
}

/// Where the journal is (whether or not it exists yet).
pub fn default_path() -> Option<PathBuf> {
    data_dir().map(|d| d.join(JOURNAL_FILE))
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// What changes whenever any surface journals a run: the journal's identity, size and
/// modification time in one string (empty when there is none). The window reads History again
/// when it changes, whoever ran.
pub fn stamp(journal: Option<&Path>) -> String {
    use std::os::unix::fs::MetadataExt;
    journal
        .and_then(|p| std::fs::metadata(p).ok())
        .map(|m| {
            format!(
                "{}:{}:{}:{}.{}",
                m.dev(),
                m.ino(),
                m.size(),
                m.mtime(),
                m.mtime_nsec()
            )
        })
        .unwrap_or_default()
}

impl Journal {
    /// Open the journal file at `path` for appending.
    ///
    /// The directory is created private (0700); the file is never reached through a symlink
    /// (`O_NOFOLLOW`) and must be a regular file.
    pub fn open(path: &Path) -> io::Result<Journal> {
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        if let Some(dir) = path.parent() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)?;
        }
        let file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(path)
            .map_err(|e| {
                if e.raw_os_error() == Some(libc::ELOOP) {
                    io::Error::other(format!(
                        "{} is a symbolic link; the journal is never written through one",
                        path.display()
                    ))
                } else {
                    e
                }
            })?;
        if !file.metadata()?.is_file() {
            return Err(io::Error::other(format!(
                "{} is not a regular file",
                path.display()
            )));
        }
        let mut j = Journal {
            path: path.to_path_buf(),
            file,
        };
        j.heal_tail()?;
        Ok(j)
    }

    /// Where the journal file is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A crash may have left a partial last line: end it, so the next entry starts on its own
    /// line (the reader skips the damaged one).
    fn heal_tail(&mut self) -> io::Result<()> {
        let len = self.file.metadata()?.len();
        if len == 0 {
            return Ok(());
        }
        let mut b = [0u8; 1];
        std::os::unix::fs::FileExt::read_exact_at(&self.file, &mut b, len - 1)?;
        if b[0] != b'\n' {
            self.file.write_all(b"\n")?;
            self.file.sync_data()?;
        }
        Ok(())
    }

    /// Append one entry as one line and fsync it.
    pub fn append(&mut self, entry: &JournalEntry) -> io::Result<()> {
        let mut line = serde_json::to_vec(entry).map_err(io::Error::other)?;
        line.push(b'\n');
        self.file.write_all(&line)?;
        self.file.sync_data()
    }

    /// Record that `plan` is about to run, made by `origin`.
    pub fn plan_started(&mut self, plan: &Plan, origin: &Origin) -> io::Result<()> {
        self.append(&JournalEntry::PlanStarted {
            at_ms: now_ms(),
            plan_id: plan.id.clone(),
            home: plan.home.clone(),
            estimated_bytes: plan.estimated_bytes,
            actions: plan.actions.clone(),
            origin: Some(origin.clone()),
        })
    }

    /// Record one action's outcome as part of the plan `plan_id`.
    pub fn action(&mut self, plan_id: &str, record: &ActionRecord) -> io::Result<()> {
        self.append(&JournalEntry::Action {
            at_ms: now_ms(),
            plan_id: plan_id.into(),
            record: Box::new(record.clone()),
        })
    }

    /// Record that the plan of `report` finished, with its counts and measured bytes.
    pub fn plan_finished(&mut self, report: &ExecReport) -> io::Result<()> {
        self.append(&JournalEntry::PlanFinished {
            at_ms: now_ms(),
            plan_id: report.plan_id.clone(),
            done: report.done().count(),
            skipped: report.skipped().count(),
            failed: report.failed().count(),
            estimated_bytes: report.estimated_bytes,
            freed_bytes: report.freed_bytes,
            filesystems: report.filesystems.clone(),
        })
    }
}

/// What [`read`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JournalContents {
    /// The entries that could be read, in file order.
    pub entries: Vec<JournalEntry>,
    /// 1-based numbers of lines that were not valid entries (a crash's truncated line).
    pub damaged_lines: Vec<usize>,
}

/// Read a journal; a missing file is an empty journal; damaged lines are skipped and counted.
pub fn read(path: &Path) -> io::Result<JournalContents> {
    let bytes = match crate::fsread::open_regular(path) {
        Ok(mut f) => {
            use std::io::Read;
            let mut b = Vec::new();
            f.read_to_end(&mut b)?;
            b
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(JournalContents::default()),
        Err(e) => return Err(e),
    };
    let mut out = JournalContents::default();
    for (i, line) in bytes.split(|b| *b == b'\n').enumerate() {
        if line.iter().all(|b| b.is_ascii_whitespace()) {
            continue;
        }
        match serde_json::from_slice::<JournalEntry>(line) {
            Ok(e) => out.entries.push(e),
            Err(_) => out.damaged_lines.push(i + 1),
        }
    }
    Ok(out)
}

/// One executed plan as the journal tells it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunSummary {
    /// Id of this run: unique among the runs of a journal, also when one plan ran twice
    /// ([`run_id`] of the plan id and the start).
    pub run_id: String,
    /// Id of the plan that ran.
    pub plan_id: String,
    /// When its `plan_started` line was written (milliseconds since the Unix epoch).
    pub started_at_ms: u64,
    /// The HOME the plan was made for.
    #[serde(with = "crate::pathser::one")]
    pub home: PathBuf,
    /// Which surface and command made it (`None` for runs journaled by older versions).
    pub origin: Option<Origin>,
    /// How many actions the plan had.
    pub planned_actions: usize,
    /// Allocated bytes the plan expected to free.
    pub estimated_bytes: u64,
    /// Actions journaled as done.
    pub done: usize,
    /// Actions journaled as skipped.
    pub skipped: usize,
    /// Actions journaled as failed.
    pub failed: usize,
    /// `None` when the run never finished (crash or kill): the actions listed are what was done.
    pub freed_bytes: Option<u64>,
    /// Whether a `plan_finished` line was written for it.
    pub finished: bool,
    /// The outcome of every action journaled, in order.
    pub outcomes: Vec<ActionRecord>,
}

/// The id of the run of `plan_id` started at `at_ms`: 16 hex digits of a hash of both, so two
/// runs of one plan have two ids, and the same journal gives the same ids on every read.
pub fn run_id(plan_id: &str, at_ms: u64) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(format!("{plan_id}@{at_ms}").as_bytes());
    hex::encode(digest)[..16].to_string()
}

/// Group journal entries into runs, oldest first.
pub fn runs(entries: &[JournalEntry]) -> Vec<RunSummary> {
    let mut runs: Vec<RunSummary> = Vec::new();
    for e in entries {
        match e {
            JournalEntry::PlanStarted {
                at_ms,
                plan_id,
                home,
                estimated_bytes,
                actions,
                origin,
            } => runs.push(RunSummary {
                run_id: run_id(plan_id, *at_ms),
                plan_id: plan_id.clone(),
                started_at_ms: *at_ms,
                home: home.clone(),
                origin: origin.clone(),
                planned_actions: actions.len(),
                estimated_bytes: *estimated_bytes,
                done: 0,
                skipped: 0,
                failed: 0,
                freed_bytes: None,
                finished: false,
                outcomes: Vec::new(),
            }),
            JournalEntry::Action {
                plan_id, record, ..
            } => {
                if let Some(r) = runs
                    .iter_mut()
                    .rev()
                    .find(|r| &r.plan_id == plan_id && !r.finished)
                {
                    match record.outcome {
                        Outcome::Done { .. } => r.done += 1,
                        Outcome::Skipped { .. } => r.skipped += 1,
                        Outcome::Failed { .. } => r.failed += 1,
                        Outcome::WouldDo { .. } => {}
                    }
                    r.outcomes.push((**record).clone());
                }
            }
            JournalEntry::PlanFinished {
                plan_id,
                freed_bytes,
                ..
            } => {
                if let Some(r) = runs
                    .iter_mut()
                    .rev()
                    .find(|r| &r.plan_id == plan_id && !r.finished)
                {
                    r.finished = true;
                    r.freed_bytes = Some(*freed_bytes);
                }
            }
        }
    }
    runs
}
