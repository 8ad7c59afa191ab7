//! The pure parts of `why`'s facts: a finding, a record and a version as `why` lists them, what
//! the reference graph and the layout tables say of a path, and what stands in the way of
//! freeing a finding, all from a scan's report alone.

use std::path::Path;

use crate::model::*;

use super::facts::*;
use crate::view::{fix_for_process, verdict_word};

/// A root's report name (`data_dir_2`, `cache_root`) in words.
pub(crate) fn root_what(key: &str) -> &'static str {
    crate::root_kind::RootKind::of_key(key).map_or("state directory", |k| k.what())
}

pub(crate) fn item(f: &Finding) -> Item {
    Item {
        id: f.id.clone(),
        product: f.product,
        kind: f.kind,
        label: f.kind.label(),
        path: f.path.clone(),
        verdict: f.verdict,
        verdict_word: verdict_word(f.verdict),
        bytes: f.allocated_bytes,
        apparent_bytes: f.apparent_bytes,
    }
}

pub(crate) fn record(m: &Machine) -> Record {
    let noun = m.product.noun();
    Record {
        product: m.product,
        noun,
        name: m.name.clone(),
        state: if m.effective_state.is_empty() {
            m.state.clone()
        } else {
            m.effective_state.clone()
        },
        pid: m.pid,
        inventory: m.db.clone(),
        created_at: m.created_at,
        branched_from: m.branched_from.clone(),
        bytes: m.allocated_bytes,
    }
}

pub(crate) fn version_facts(r: &ScanReport, product: Product) -> Option<VersionFacts> {
    let p = r.products.iter().find(|p| p.product == product)?;
    let note = p
        .problems
        .iter()
        .find(|s| s.contains("newer than the versions Smolsweep knows"))
        .cloned();
    Some(VersionFacts {
        product,
        installed: p.version.clone(),
        verified_up_to: crate::upstream::VERIFIED
            .iter()
            .filter(|(q, ..)| *q == product)
            .map(|(_, d, v)| format!("{d} {v}"))
            .collect(),
        verified: note
            .as_deref()
            .is_none_or(|n| n.contains("because you accepted the risk")),
        note,
    })
}

/// What keeps a protected or unverifiable finding, and what would release it.
pub(crate) fn blocked(r: &ScanReport, f: &Finding) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(k) = &f.kept {
        out.push(format!(
            "It is {}.",
            crate::keep::kept_why(k).replace("; `", ": `")
        ));
    }
    for pid in &f.used_by {
        let fix = fix_for_process(r, *pid);
        out.push(match fix.strip_prefix("smolsweep ") {
            Some(_) => format!("Process {pid} uses it: `{fix}` would end that first."),
            None => format!("Process {pid} uses it: {fix}."),
        });
    }
    if let Some((h, holder)) = crate::reach::chain(r, f).first() {
        out.push(crate::reach::sentence(h, *holder));
    }
    let owner = r
        .machines
        .iter()
        .find(|m| m.product == f.product && Some(m.name.as_str()) == f.owner.as_deref());
    if let Some(m) = owner {
        out.push(format!(
            "It belongs to {} {}, which exists: `smolsweep delete {}:{}` deletes it with everything of it.",
            record(m).noun,
            m.name,
            m.product.as_str(),
            m.name
        ));
    }
    let newer = version_facts(r, f.product).is_some_and(|v| !v.verified);
    if f.verdict == Verdict::Unknown && out.is_empty() && newer {
        out.push(format!(
            "It is judged again once Smolsweep knows the installed version; `--accept-newer {}` accepts the risk now.",
            f.product.as_str()
        ));
    }
    if f.verdict == Verdict::Unknown && out.is_empty() {
        out.push("Smolsweep never acts on what it cannot verify: check it by hand.".into());
    }
    if out.is_empty() {
        out.push(match f.kind.removal() {
            crate::kind::Removal::Never => "Smolsweep never removes this kind of item.".into(),
            _ => "Nothing Smolsweep runs deletes it while it is protected.".into(),
        });
    }
    out
}

/// What the reference graph says of `f`: the chain that holds it, or, for what may go, that
/// nothing staying reaches it. `None` for what stays on its own (in use, recorded, kept).
pub(crate) fn reach_of(r: &ScanReport, f: &Finding) -> Option<Reach> {
    let chain = crate::reach::chain(r, f);
    if chain.is_empty() {
        if !matches!(f.verdict, Verdict::Reclaimable | Verdict::OptIn) {
            return None;
        }
        let leases = r
            .findings
            .iter()
            .flat_map(|g| &g.held_by)
            .filter(|h| h.via == Via::Lease)
            .count();
        return Some(Reach::Nothing {
            records: r.machines.len(),
            leases,
        });
    }
    let steps = chain
        .iter()
        .map(|(h, holder)| HeldStep {
            via: h.via,
            how: h.via.what(),
            by: holder.map(|g| g.path.clone()),
            text: crate::reach::sentence(h, *holder),
        })
        .collect();
    let root = match chain.last() {
        Some((h, None)) => match &h.by {
            Holder::Record { product, name } => format!(
                "{} {} '{name}' is recorded in its inventory: a record is a root, and nothing it reaches is offered.",
                product.display_name(),
                product.noun()
            ),
            Holder::Path(p) => format!(
                "{} is no leftover Smolsweep would delete: it stays.",
                crate::pathser::shown(p)
            ),
        },
        Some((_, Some(g))) => format!(
            "{} stays ({}): {}",
            crate::pathser::shown(&g.path),
            g.verdict.as_str(),
            crate::upstream::split_refs(&g.reason).0
        ),
        None => String::new(),
    };
    Some(Reach::Held { chain: steps, root })
}

/// What the layout table says `p` is, below the deepest root of the report that holds it.
pub(crate) fn upstream_of(r: &ScanReport, p: &Path) -> Option<Upstream> {
    let (kind, root) = r
        .products
        .iter()
        .flat_map(|pr| &pr.roots)
        .filter_map(|(k, v)| Some((crate::root_kind::RootKind::of_key(k)?, v)))
        .filter(|(_, v)| p.starts_with(v) && p != v.as_path())
        .max_by_key(|(_, v)| v.components().count())?;
    let (row, exact) = crate::layout::row_of(kind, root, p)?;
    Some(Upstream {
        what: row.what,
        cleans: row.cleans,
        since: row.since,
        never: match row.is {
            crate::layout::Is::Never(n) => Some(n.what()),
            _ => None,
        },
        declares: row.declares.iter().map(|d| d.what()).collect(),
        holds: match row.is {
            crate::layout::Is::Holds(crate::layout::Place::In(s)) => Some(s.what()),
            _ => None,
        },
        exact,
    })
}
