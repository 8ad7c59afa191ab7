//! Smolsweep core: scan what both SmolVMs leave behind, plan, confirm, execute, journal.
//!
//! The pipeline is `scan → findings (verdict + reason) → plan → execute → journal`, shared by the
//! CLI, the tray app and the uninstall guide. Nothing here depends on a GUI.

pub mod cli;
pub mod env;
pub mod install;
pub mod inventory;
pub mod model;
pub mod procs;
pub mod qcow2;
pub mod roots;
pub mod scan;
pub mod size;
pub mod tray;

pub use model::*;
