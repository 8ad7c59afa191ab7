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
    /// What every surface calls one of its VMs (issue 31: one noun per object): `sandbox` for
    /// Celesto (whatever the installed version's CLI calls it), `machine` for smolvm.
    pub fn noun(self) -> &'static str {
        match self {
            Product::Celesto => "sandbox",
            Product::Smolvm => "machine",
        }
    }
    /// [`Product::noun`] for more than one: `sandboxes` or `machines`.
    pub fn nouns(self) -> &'static str {
        match self {
            Product::Celesto => "sandboxes",
            Product::Smolvm => "machines",
        }
    }
    /// `1 sandbox`, `3 machines`: a count of its VMs in the one noun.
    pub fn count(self, n: usize) -> String {
        format!("{n} {}", if n == 1 { self.noun() } else { self.nouns() })
    }
    /// Its name for a person: `Celesto SmolVM` or `smol-machines smolvm`.
    pub fn display_name(self) -> &'static str {
        match self {
            Product::Celesto => "Celesto SmolVM",
            Product::Smolvm => "smol-machines smolvm",
        }
    }
}
