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
//! | [`filter`] | narrowing a report by product, kind and age |
//! | [`plan`] | a [`plan::Plan`] of actions with identities, as data |
//! | [`target`] | what Stop / End / Delete of a machine or VM process plans |
//! | [`exec`] | the one executor: confirm, re-judge, act, journal |
//! | [`journal`] | the record of every run, read by `history` and the window |
//! | [`trend`] | space over time: the scans' totals per product, bounded, beside the journal |
//! | [`keep`] | the user's keep rules |
//! | [`prefix`] | ids a person may shorten, one grammar for every command |
//! | [`policy`] | what the app's automatic runs may do |
//! | [`uninstall`] | the guided uninstall: preflight, plan, run, proof |
//! | [`view`] | every label, sentence and estimate the surfaces show |
//! | [`tray`] | the tray menu as a model |
//! | [`env`] | the environment a scan and a run read, captured once |
//! | [`input`] | reading a file a user names, safely |
//! | [`atomic`] | writing Smolsweep's own small state files atomically (the app's settings too) |
//!
//! Everything else (walking, sizing, inventories, the process table, product layouts) is
//! private to the crate.
#![deny(missing_docs)]

pub mod atomic;
pub mod env;
pub mod exec;
pub mod filter;
pub mod input;
pub mod journal;
pub mod keep;
pub mod model;
pub mod plan;
pub mod policy;
pub mod prefix;
pub mod scan;
pub mod target;
pub mod tray;
pub mod trend;
pub mod uninstall;
pub mod view;

mod chains;
mod compact;
mod fsread;
mod install;
mod inventory;
mod items;
mod kind;
mod layout;
mod locks;
mod pathblock;
mod pathser;
mod procs;
mod product;
mod qcow2;
mod reach;
mod record;
mod root_kind;
mod roots;
mod size;
mod table;
mod upstream;

#[cfg(test)]
mod tests;
