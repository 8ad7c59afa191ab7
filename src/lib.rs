//! Smolsweep core: scan what both SmolVMs leave behind, plan, confirm, execute, journal.
//!
//! The pipeline is `scan → findings (verdict + reason) → plan → execute → journal`, shared by the
//! CLI, the tray app and the uninstall guide. Nothing here depends on a GUI.

mod chains;
pub mod env;
pub mod exec;
pub mod filter;
pub mod fsread;
pub mod install;
pub mod inventory;
pub mod journal;
pub mod keep;
pub mod kind;
pub mod locks;
pub mod model;
pub mod pathblock;
pub mod pathser;
pub mod plan;
pub mod policy;
pub mod procs;
mod product;
pub mod prom;
pub mod qcow2;
pub(crate) mod record;
pub mod report;
pub mod roots;
pub mod scan;
pub mod size;
mod table;
pub mod target;
pub mod tray;
pub mod uninstall;
pub mod upstream;
pub mod view;

pub use model::*;
