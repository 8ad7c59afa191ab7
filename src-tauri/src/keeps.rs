//! Keep rules and filters in the window. Both are the core's: a rule is a
//! `smolsweep::keep::Rule` written through `Keeps` (the file `smolsweep keep` reads), and a filter
//! is a `smolsweep::Filter`; the shell only resolves what the user clicked to a rule
//! target and keeps the window's current filter.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Deserialize;
use smolsweep::keep::{Keeps, Rule, Target};
use smolsweep::model::FindingKind;
use smolsweep::model::{Product, ScanReport};
use tauri::{AppHandle, Manager, Runtime};

use crate::state::{lock, AppState, NO_SCAN_YET};

pub use smolsweep::view::keeps::{kind_choices, FilterInput, KeepLine, KindChoice};

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
/// (`smolsweep::apply_keeps_at`: the keep rules, and the compaction estimates they
/// shape): a real scan has applied them already and applying again changes nothing; a saved
/// report gets them the same way, unreadable rules included (then nothing is reclaimable, and
/// no disk is offered for compaction).
pub(crate) fn apply_keeps(b: &dyn crate::backend::Backend, r: &mut ScanReport) {
    let Some(p) = b.keep_path() else { return };
    smolsweep::apply_keeps_at(r, &p);
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

/// The rule target for a request, resolved against the latest scan (the core's one
/// resolution, `keep::target_in`, as `smolsweep keep add` resolves what is typed).
pub fn target_of(r: &ScanReport, req: &KeepRequest) -> Result<Target, String> {
    use smolsweep::keep::{target_in, Named};
    match req {
        KeepRequest::Finding { id } => target_in(r, &Named::Finding(id)),
        KeepRequest::Machine { product, name } => target_in(r, &Named::Machine(*product, name)),
        KeepRequest::Kind { kind } => target_in(r, &Named::Kind(*kind)),
    }
}

/// Write a keep rule for `req` (through the core's `Keeps`); the caller rescans.
pub fn add<R: Runtime>(app: &AppHandle<R>, req: &KeepRequest, why: &str) -> Result<String, String> {
    let st = app.state::<AppState>();
    let report = lock(&st.report).clone().ok_or(NO_SCAN_YET)?;
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
