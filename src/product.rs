//! The two products both called SmolVM: the ground floor of the vocabulary, named alike by the
//! closed tables of kinds and by the scan's model (which hands it on as `model::Product`).

use serde::{Deserialize, Serialize};

/// The two unrelated products that are both called "SmolVM".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Product {
    /// Celesto SmolVM: the Python SDK/CLI (`celesto`, formerly PyPI `smolvm`).
    Celesto,
    /// smol-machines smolvm: the Rust CLI on libkrun.
    Smolvm,
}

impl Product {
    /// Both products, in the order every surface lists them.
    pub const ALL: [Product; 2] = [Product::Celesto, Product::Smolvm];

    /// Its stable lowercase name, as serialised and prefixed to kind strings: `celesto` or
    /// `smolvm`.
    pub fn as_str(self) -> &'static str {
        match self {
            Product::Celesto => "celesto",
            Product::Smolvm => "smolvm",
        }
    }
    /// Its name for a person: `Celesto SmolVM` or `smol-machines smolvm`.
    pub fn display_name(self) -> &'static str {
        match self {
            Product::Celesto => "Celesto SmolVM",
            Product::Smolvm => "smol-machines smolvm",
        }
    }
}
