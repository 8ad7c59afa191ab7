//! `why`: how Smolsweep judges one thing, and on what evidence, in plain sentences.
//!
//! A person names a finding, a path, a machine or sandbox, or a process; `WhyFacts::explain`
//! (`crate::why`, which reads the system and asks the planner) gathers the facts the scan judged
//! it on (its kind and reason, the processes using it, the inventory row that claims it, the keep
//! rule that keeps it, the disks whose backing chain needs it, whether the product's version is
//! verified, and the smallest command that would free it) into a [`Why`]; here they are words:
//! [`Why::lines`], [`Why::text`]. The CLI prints the text or the facts as JSON; the window shows
//! the same text. Nothing here reads, plans or acts.

use std::path::PathBuf;

use serde::Serialize;

use crate::model::*;

mod facts;
mod parts;
mod render;

pub use facts::*;
pub(crate) use parts::*;
pub(crate) use render::render;

/// Schema name of `why --json`.
pub const WHY_SCHEMA: &str = "smolsweep.why/1";

/// What a person asked about, as a surface resolved what they typed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "by", content = "value", rename_all = "snake_case")]
pub enum Asked {
    /// A finding, by its full id.
    Finding(String),
    /// A path (absolute).
    Path(#[serde(with = "crate::pathser::one")] PathBuf),
    /// A smolvm machine or a Celesto sandbox, recorded or not (its leftovers).
    Machine {
        /// Whose.
        product: Product,
        /// The machine name or sandbox id.
        name: String,
    },
    /// A process id.
    Process(u32),
}
