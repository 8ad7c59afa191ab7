//! Guided uninstall: preflight, one plan, proof.

pub mod pathblock;
