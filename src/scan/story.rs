//! One object, one story (issue 39, item 6). A Celesto sandbox whose inventory row is gone
//! while its VM still runs was told four ways: its lock and host key "of sandbox 'x', which
//! exists", its disk "Celesto does not list this disk's sandbox", its VM process "in no list of
//! sandboxes". Once the scan has judged everything, every finding that VM protects and the VM
//! process itself say the one sentence made here from one set of facts (the sandbox, its VM
//! processes), with the command that ends it. Verdicts are not touched: only the words.

use std::collections::BTreeMap;

use crate::model::{Product, ScanReport, Scope, Verdict};

/// "Sandbox 'x' is in no Celesto SmolVM inventory, but its Celesto QEMU VM still runs (process
/// 12): started by the Celesto SDK without a record, or still running after the sandbox was
/// deleted. `smolsweep reap 12` ends it; `smolsweep prune` then frees what it leaves."
pub(crate) fn unlisted_but_running(product: Product, id: &str, vmm: &str, pids: &[u32]) -> String {
    let noun = product.noun();
    let mut capital = noun.chars();
    let noun_cap: String = capital
        .next()
        .map(|c| c.to_uppercase().chain(capital).collect())
        .unwrap_or_default();
    let list: Vec<String> = pids.iter().map(u32::to_string).collect();
    let processes = match pids.len() {
        1 => format!("process {}", list[0]),
        _ => format!("processes {}", list.join(", ")),
    };
    let how = match product {
        Product::Celesto => format!(
            "started by the Celesto SDK without a record, or still running after the {noun} was deleted"
        ),
        Product::Smolvm => format!("still running after the {noun} was deleted"),
    };
    format!(
        "{noun_cap} '{}' is in no {} inventory, but its {vmm} still runs ({processes}): {how}. \
         `smolsweep reap {}` ends it; `smolsweep prune` then frees what it leaves.",
        crate::pathser::escape_text(id),
        product.display_name(),
        list.join(" ")
    )
}

/// Tell every Celesto sandbox no inventory lists, whose VM of this HOME still runs, one way: its
/// VM processes and every finding of it that is protected (and kept by no rule, and used by no
/// other process) say [`unlisted_but_running`].
pub(crate) fn tell(report: &mut ScanReport) {
    let mut vms: BTreeMap<(Product, String), (String, Vec<u32>)> = BTreeMap::new();
    for p in &report.processes {
        let unlisted = p.scope == Scope::ThisHome && p.orphan && p.kept.is_none();
        if let (true, Product::Celesto, Some(id)) = (unlisted, p.product, &p.owner) {
            let e = vms
                .entry((p.product, id.clone()))
                .or_insert_with(|| (p.shape.label().to_string(), Vec::new()));
            e.1.push(p.pid);
        }
    }
    for ((product, id), (vmm, pids)) in &vms {
        let recorded = report
            .machines
            .iter()
            .any(|m| m.product == *product && &m.name == id);
        if recorded {
            continue;
        }
        let story = unlisted_but_running(*product, id, vmm, pids);
        for p in report
            .processes
            .iter_mut()
            .filter(|p| p.product == *product && p.owner.as_deref() == Some(id))
            .filter(|p| p.scope == Scope::ThisHome && p.kept.is_none())
        {
            p.reason = story.clone();
        }
        for f in report.findings.iter_mut().filter(|f| {
            f.product == *product
                && f.owner.as_deref() == Some(id)
                && f.verdict == Verdict::Protected
                && f.kept.is_none()
                && f.used_by.iter().all(|u| pids.contains(u))
        }) {
            f.reason = story.clone();
        }
    }
}
