//! Smolsweep core: scan what both SmolVMs leave behind, plan, confirm, execute, journal.
//!
//! The pipeline is `scan → findings (verdict + reason) → plan → execute → journal`, shared by the
//! CLI, the tray app and the uninstall guide. Nothing here depends on a GUI.
//!
//! This is the library's whole public face, the few entry points the CLI binary and the desktop
//! shell call:
//!
//! | module | what it gives |
//! |---|---|
//! | [`scan`] | [`scan::scan`] a HOME into a [`model::ScanReport`] (and the app's incremental rescan) |
//! | [`model`] | the report's types: findings, machines, VM processes, verdicts, products |
//! | [`plan`] | a [`plan::Plan`] of actions with identities, as data |
//! | [`exec`] | the one executor: confirm, re-judge, act, journal |
//! | [`journal`] | the record of every run, read by `history` and the window |
//! | [`trend`] | space over time: the scans' totals per product, bounded, beside the journal |
//! | [`keep`] | the user's keep rules |
//! | [`prefix`] | ids a person may shorten, one grammar for every command |
//! | [`uninstall`] | the guided uninstall: preflight, plan, run, proof |
//! | [`view`] | every label, sentence and estimate the surfaces show |
//! | [`tray`] | the tray menu as a model |
//! | [`env`] | the environment a scan and a run read, captured once |
//!
//! and, re-exported here from rooms of their own that are otherwise private:
//!
//! | items | what they give |
//! |---|---|
//! | [`Filter`], [`parse_age_flag`], [`parse_size_flag`] | narrowing a report by product, kind and age |
//! | [`plan_for`], [`Target`], [`VmAction`], [`compact_plan`], [`apply_keeps_at`] | what Stop / End / Delete of a machine or VM process, or a compaction, plans |
//! | [`Policy`], [`Decision`], [`policy_path`] | what the app's automatic runs may do |
//! | [`read_input`], [`read_input_text`], [`InputError`], `MAX_*_BYTES` | reading a file a user names, safely |
//! | [`write_atomic`] | writing Smolsweep's own small state files atomically (the app's settings too) |
//! | [`now_secs`], [`lock`] | the wall clock in Unix seconds; a mutex taken also after a panic |
//! | [`space_of`] | the free space of the fullest file system holding SmolVM state, for the low-space alert |
//! | [`WhyFacts`] | what `why` reads (a scan, the process table, the keep rules, the roots) and the evidence it gathers for one target, worded by [`view::why`] |
//!
//! Everything else (walking, sizing, inventories, the process table, product layouts) is
//! private to the crate.
#![deny(missing_docs)]

pub mod env;
pub mod exec;
pub mod journal;
pub mod keep;
pub mod model;
pub mod plan;
pub mod prefix;
pub mod scan;
pub mod tray;
pub mod trend;
pub mod uninstall;
pub mod view;

pub use atomic::write as write_atomic;
pub use basics::{lock, now_secs};
pub use filter::{parse_age_flag, parse_size_flag, Filter};
pub use input::{
    read_input, read_input_text, InputError, MAX_PLAN_BYTES, MAX_REPORT_BYTES, MAX_SETTINGS_BYTES,
};
pub use policy::{
    path_for as policy_path, Decision, Policy, Step as PolicyStep, DEFAULT_KINDS, POLICY_SCHEMA,
};
pub use size::space_of;
pub use target::{apply_keeps_at, compact_plan, plan_for, Target, TargetPlan, VmAction};
pub use why::WhyFacts;

mod atomic;
mod basics;
mod chains;
mod compact;
mod filter;
mod fsread;
mod input;
mod install;
mod inventory;
mod items;
mod kind;
mod layout;
mod locks;
mod pathblock;
mod pathser;
mod policy;
mod procs;
mod product;
mod qcow2;
mod reach;
mod record;
mod root_kind;
mod roots;
mod size;
mod table;
mod target;
mod upstream;
mod why;

#[cfg(test)]
mod tests;
