//! Guided uninstall: preflight, one plan, proof.
//!
//! `preflight` gathers (read-only) every install, state directory, machine, VM process, mount,
//! launcher, PATH block, credential and system file of both products; `plan` turns it into one
//! ordered list of reviewable steps for the chosen product(s); `run` carries the steps out;
//! `verify` proves what is left.

pub(crate) mod known;
pub mod plan;
pub mod preflight;
pub mod run;
pub mod verify;

pub use plan::{build as build_plan, ProductChoice, UninstallOptions, UninstallPlan};
pub use preflight::{gather as preflight, Preflight};
pub use verify::{verify, Proof, VerifyOptions};
