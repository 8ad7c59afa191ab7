//! Keep rules and filters in the window. Both are the core's: a rule is a
//! `smolsweep::keep::Rule` written through `Keeps` (the file `smolsweep keep` reads), and a filter
//! is a `smolsweep::filter::Filter`; the shell only resolves what the user clicked to a rule
//! target and keeps the window's current filter.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use smolsweep::filter::{parse_age, parse_size, Filter};
use smolsweep::keep::{Keeps, Rule, Target};
use smolsweep::model::FindingKind;
use smolsweep::model::{Product, ScanReport};
use tauri::{AppHandle, Manager, Runtime};

use crate::{lock, AppState};

/// One keep rule as the window lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeepLine {
    pub id: String,
    /// The core's words for what it keeps (`Rule::describe`).
    pub what: String,
    /// `YYYY-MM-DD`.
    pub since: String,
    pub why: String,
    /// The settings list's line: "finding 3f2a… — since 2026-11-30: debugging".
    pub line: String,
    /// A kept row's line: "Kept by you since 2026-11-30: debugging".
    pub kept_line: String,
}

impl KeepLine {
    fn of(r: &Rule) -> KeepLine {
        let (what, since) = (r.describe(), r.since_day());
        let why = match r.why.is_empty() {
            true => String::new(),
            false => format!(": {}", r.why),
        };
        KeepLine {
            id: r.id.clone(),
            line: format!("{what} — since {since}{why}"),
            kept_line: format!("Kept by you since {since}{why}"),
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
    pub older_than: String,
    pub min_size: String,
    pub products: Vec<Product>,
    pub kinds: Vec<FindingKind>,
}

impl FilterInput {
    /// The core filter these controls mean (`smolsweep::filter::{parse_age, parse_size}`).
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
    pub kind: FindingKind,
    pub product: Product,
    pub label: &'static str,
}

pub(crate) fn kind_choices(r: &ScanReport) -> Vec<KindChoice> {
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

pub(crate) fn time_of(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(secs)
}

/// The report the window shows and selects from: the latest scan narrowed by its filter.
pub(crate) fn filtered(st: &AppState, r: &ScanReport) -> ScanReport {
    let mut r = r.clone();
    let f = lock(&st.filter).clone();
    if !f.is_empty() {
        let now = lock(&st.clock).now();
        f.apply(&mut r, time_of(now));
    }
    r
}

/// Apply the saved keep rules to a report from the backend, by the core's rule
/// (`smolsweep::keep::apply_at`): a real scan has applied them already and applying again
/// changes nothing; a saved report gets them the same way, unreadable rules included (then
/// nothing is reclaimable).
pub(crate) fn apply_keeps(b: &dyn crate::Backend, r: &mut ScanReport) {
    let Some(p) = b.keep_path() else { return };
    smolsweep::keep::apply_at(r, &p);
    r.compute_totals();
}

/// Every rule, and which rule keeps which finding of the latest scan.
pub(crate) fn lines(st: &AppState) -> (Vec<KeepLine>, BTreeMap<String, KeepLine>) {
    let rules = st
        .backend
        .keep_path()
        .and_then(|p| Keeps::load(&p).ok())
        .map(|k| k.rules)
        .unwrap_or_default();
    let by_id: BTreeMap<&str, &Rule> = rules.iter().map(|r| (r.id.as_str(), r)).collect();
    let mut kept = BTreeMap::new();
    if let Some(r) = lock(&st.report).as_ref() {
        for f in &r.findings {
            if let Some(rule) = f.kept.as_deref().and_then(|id| by_id.get(id)) {
                kept.insert(f.id.clone(), KeepLine::of(rule));
            }
        }
    }
    (rules.iter().map(KeepLine::of).collect(), kept)
}

/// What the user asked to keep.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "by", rename_all = "snake_case")]
pub enum KeepRequest {
    /// A finding of the latest scan, by id: kept as that very file (identity-checked).
    Finding { id: String },
    /// A machine or sandbox: everything that belongs to it.
    Machine { product: Product, name: String },
    /// A whole kind.
    Kind { kind: FindingKind },
}

/// The rule target for a request, resolved against the latest scan.
pub fn target_of(r: &ScanReport, req: &KeepRequest) -> Result<Target, String> {
    match req {
        KeepRequest::Finding { id } => {
            let f = r
                .finding(id)
                .ok_or("that finding is not in the latest scan; rescan and try again")?;
            let i = f.identity.ok_or_else(|| {
                format!(
                    "{} could not be examined, so it cannot be kept",
                    f.path.display()
                )
            })?;
            Ok(Target::Item {
                path: f.path.clone(),
                dev: i.dev,
                ino: i.ino,
                born_ns: smolsweep::keep::born(&f.path),
            })
        }
        KeepRequest::Machine { product, name } => {
            if !r
                .machines
                .iter()
                .any(|m| m.product == *product && &m.name == name)
            {
                return Err(format!("no machine or sandbox {name} in the latest scan"));
            }
            Ok(Target::Owner {
                product: *product,
                name: name.clone(),
            })
        }
        KeepRequest::Kind { kind } => Ok(Target::Kind { kind: *kind }),
    }
}

/// Write a keep rule for `req` (through the core's `Keeps`); the caller rescans.
pub fn add<R: Runtime>(app: &AppHandle<R>, req: &KeepRequest, why: &str) -> Result<String, String> {
    let st = app.state::<AppState>();
    let report = lock(&st.report).clone().ok_or("no scan has finished yet")?;
    let target = target_of(&report, req)?;
    let path = st
        .backend
        .keep_path()
        .ok_or("no data directory for keep rules")?;
    let rule = Rule::new(target, why.trim(), lock(&st.clock).now());
    let id = rule.id.clone();
    // Under the writers' lock, on the rules as they are now (`keep add` may be saving too).
    Keeps::update(&path, |k| {
        k.add(rule);
        Ok::<_, smolsweep::keep::KeepError>(())
    })
    .map_err(|e| e.to_string())?;
    Ok(id)
}

/// Remove a keep rule by id; the caller rescans.
pub fn remove<R: Runtime>(app: &AppHandle<R>, id: &str) -> Result<(), String> {
    let st = app.state::<AppState>();
    let path = st
        .backend
        .keep_path()
        .ok_or("no data directory for keep rules")?;
    Keeps::update(&path, |k| {
        if k.remove(id) {
            Ok(())
        } else {
            Err(anyhow::anyhow!("no keep rule {id}"))
        }
    })
    .map_err(|e| e.to_string())
}
