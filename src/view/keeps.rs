//! The window's keep rules and filter controls, as a person sees and types them: each rule's
//! line, the filter's fields (parsed by the core's filter), and the kinds it can choose.

use serde::{Deserialize, Serialize};

use crate::filter::{parse_age, parse_size, Filter};
use crate::keep::Rule;
use crate::model::{FindingKind, Product, ScanReport};

/// One keep rule as the window lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeepLine {
    /// The rule's id.
    pub id: String,
    /// The core's words for what it keeps (`Rule::describe`).
    pub what: String,
    /// `YYYY-MM-DD`.
    pub since: String,
    /// The reason the person gave (may be empty).
    pub why: String,
    /// The settings list's line: "finding 3f2a… — since 2026-11-30: debugging".
    pub line: String,
    /// A kept row's line, as the scan's reason says it: "Kept by you since 2026-11-30
    /// (debugging)" ([`Rule::kept_since`]).
    pub kept_line: String,
}

impl KeepLine {
    /// The lines of rule `r`.
    pub fn of(r: &Rule) -> KeepLine {
        let (what, since) = (r.describe(), r.since_day());
        let why = match r.why.is_empty() {
            true => String::new(),
            false => format!(": {}", r.why),
        };
        KeepLine {
            id: r.id.clone(),
            line: format!("{what} — since {since}{why}"),
            kept_line: r.kept_since(),
            what,
            since,
            why: r.why.clone(),
        }
    }
}

/// The window's filter controls, as typed (`7d`, `100M`); parsed by the core.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct FilterInput {
    /// An age: only what is older (`7d`).
    pub older_than: String,
    /// A size: only what is at least this big (`100M`).
    pub min_size: String,
    /// Only these products (all when empty).
    pub products: Vec<Product>,
    /// Only these kinds (all when empty).
    pub kinds: Vec<FindingKind>,
}

impl FilterInput {
    /// The core filter these controls mean (`crate::filter::{parse_age, parse_size}`).
    pub fn filter(&self) -> Result<Filter, String> {
        let older_than_secs = match self.older_than.trim() {
            "" => None,
            s => Some(parse_age(s)?),
        };
        let min_bytes = match self.min_size.trim() {
            "" => None,
            s => Some(parse_size(s)?),
        };
        Ok(Filter {
            older_than_secs,
            min_bytes,
            products: self.products.clone(),
            kinds: self.kinds.clone(),
        })
    }
}

/// A kind the filter can choose (those in the latest scan).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KindChoice {
    /// The kind.
    pub kind: FindingKind,
    /// Whose.
    pub product: Product,
    /// The kind's label.
    pub label: &'static str,
}

/// The kinds the filter can choose: those in `r`, each once.
pub fn kind_choices(r: &ScanReport) -> Vec<KindChoice> {
    let mut seen = std::collections::BTreeSet::new();
    r.findings
        .iter()
        .filter(|f| seen.insert(f.kind))
        .map(|f| KindChoice {
            kind: f.kind,
            product: f.product,
            label: f.kind.label(),
        })
        .collect()
}
