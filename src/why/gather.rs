//! The facts `why` gathers for one target: its finding, the processes using it and how, the
//! record claiming it, the keep rule, the backing chain read from the disk, and the plans that
//! would free it (the planner's, worded by the view).

use std::path::{Path, PathBuf};

use crate::env::EnvSnapshot;
use crate::filter::Filter;
use crate::model::*;
use crate::plan::{Action, Plan, Selection};
use crate::procs::RawProcess;

use super::WhyFacts;
use crate::view::why::*;
use crate::view::{class_label, confirmation, fix_for_process};

/// The process table, without the process asking: it names the target on its command line,
/// and is not a user of it.
pub(super) fn own_table() -> Vec<RawProcess> {
    let mut processes = crate::scan::list_processes();
    processes.retain(|p| p.pid != std::process::id());
    processes
}

/// The roots of this environment: those the scan resolved and read, every state directory the
/// products may use here, and the roots of the findings.
pub(super) fn roots_of(report: &ScanReport, env: &EnvSnapshot, platform: Platform) -> Vec<Root> {
    let mut out: Vec<Root> = Vec::new();
    let mut push = |product: Option<Product>, what: &'static str, path: PathBuf| {
        if !out.iter().any(|r| r.path == path) {
            let exists = crate::fsread::lstat(&path).is_some();
            out.push(Root {
                product,
                what,
                path,
                exists,
            });
        }
    };
    for p in &report.products {
        for (key, path) in &p.roots {
            push(Some(p.product), root_what(key), path.clone());
        }
    }
    for (product, kind, path, _) in crate::roots::state_dir_candidates(env, platform) {
        push(Some(product), kind.what(), path);
    }
    push(None, "shared directory", env.home.join(".smolvm"));
    for f in &report.findings {
        if let Some(r) = &f.root {
            push(Some(f.product), "state directory", r.clone());
        }
    }
    out
}

pub(super) fn keep_facts(facts: &WhyFacts, rule: &str) -> KeepFacts {
    let found = facts
        .keeps
        .as_ref()
        .ok()
        .and_then(|k| k.rules.iter().find(|r| r.id == rule));
    KeepFacts {
        rule: rule.to_string(),
        readable: facts.keeps.is_ok(),
        since: found.map(|r| r.since),
        keeps: found.map(|r| r.describe()),
        reason: found.map(|r| r.why.clone()).filter(|w| !w.is_empty()),
    }
}

/// When a process started, in seconds since the epoch.
pub(super) fn started_at(start_time: u64) -> Option<u64> {
    crate::procs::os::start_time_epoch_secs(start_time)
}

/// `pid` as the process table and the scan saw it, and how it uses `path` (when given).
pub(super) fn process_facts(facts: &WhyFacts, pid: u32, path: Option<&Finding>) -> ProcessFacts {
    let raw = facts.processes.iter().find(|p| p.pid == pid);
    let vm = facts.report.processes.iter().find(|p| p.pid == pid);
    ProcessFacts {
        pid,
        exists: raw.is_some() || vm.is_some(),
        command: crate::pathser::escape_text(
            &raw.map(|p| p.argv.clone())
                .or_else(|| vm.map(|v| v.argv.clone()))
                .unwrap_or_default()
                .join(" "),
        ),
        uid: raw.map(|p| p.uid).or(vm.map(|v| v.uid)),
        started_at: raw
            .map(|p| p.start_time)
            .or(vm.map(|v| v.start_time))
            .and_then(started_at),
        uses: path.map(|f| uses(raw, vm, f)).unwrap_or_default(),
        vm: vm.map(|v| VmFacts {
            product: v.product,
            what: v.shape.label(),
            owner: v.owner.clone(),
            orphan: v.orphan,
            this_home: v.scope == Scope::ThisHome,
            reason: crate::pathser::escape_text(&v.reason),
            held_deleted_bytes: v.held_deleted_bytes,
        }),
    }
}

/// How a process uses finding `f`: the facets of the one "in use" rule, asked of the index's
/// own enumeration (`scan::procindex::how_used`); a VM process whose table entry is gone boots
/// from it when its recorded paths say so.
pub(super) fn uses(raw: Option<&RawProcess>, vm: Option<&VmProcess>, f: &Finding) -> Vec<Use> {
    use crate::scan::procindex::{how_used, Usage};
    let p = f.path.as_path();
    let devino = f.identity.map(|i| (i.dev, i.ino));
    let mut out: Vec<Use> = raw
        .map(|r| how_used(r, p, devino))
        .unwrap_or_default()
        .into_iter()
        .map(|u| match u {
            Usage::HoldsOpen => Use::HoldsOpen,
            Usage::Names => Use::Names,
            Usage::WorksIn => Use::WorksIn,
            Usage::Maps => Use::Maps,
            Usage::Boots => Use::Boots,
        })
        .collect();
    if out.is_empty() && vm.is_some_and(|v| v.paths.iter().any(|q| q.starts_with(p))) {
        out.push(Use::Boots);
    }
    if out.is_empty() {
        out.push(Use::Uses);
    }
    out
}

pub(super) fn finding_why(facts: &WhyFacts, f: &Finding, why: &mut Why) {
    let r = &facts.report;
    why.finding = Some(item(f));
    why.meaning = Some(f.kind.meaning());
    why.reason = Some(crate::pathser::escape_text(&f.reason));
    why.opt_in_class = f.opt_in_class;
    why.processes = f
        .used_by
        .iter()
        .map(|pid| process_facts(facts, *pid, Some(f)))
        .collect();
    let owner = f.owner.as_deref();
    why.record = r
        .machines
        .iter()
        .find(|m| m.product == f.product && Some(m.name.as_str()) == owner)
        .map(record);
    if why.record.is_none() {
        if let Some(rc) = &f.owner_recheck {
            why.unclaimed_in = rc.inventories.clone();
        }
    }
    why.keep_rule = f.kept.as_deref().map(|k| keep_facts(facts, k));
    why.needed_by = f.needed_by.clone();
    why.reach = reach_of(r, f);
    why.upstream = upstream_of(r, &f.path);
    if f.identity.is_some_and(|i| i.is_regular()) {
        why.backs_onto = crate::qcow2::backing_chain(&f.path, 16);
    }
    why.version = version_facts(r, f.product);
    why.free = Some(free_finding(facts, f));
    why.compact = r
        .compact
        .disks
        .iter()
        .filter(|d| d.path == f.path)
        .cloned()
        .collect();
}

/// The smallest `prune` that deletes `f` (by its kind, then without a filter), the plan it
/// makes, and what else it takes; or what stands in the way.
pub(super) fn free_finding(facts: &WhyFacts, f: &Finding) -> Free {
    let r = &facts.report;
    let mut free = Free::default();
    if !matches!(f.verdict, Verdict::Reclaimable | Verdict::OptIn) {
        free.blocked = blocked(&facts.report, f);
        return free;
    }
    let include: Vec<OptInClass> = f.opt_in_class.into_iter().collect();
    let flag = include
        .first()
        .map(|c| format!(" {}", class_label(*c).1))
        .unwrap_or_default();
    let sel = Selection {
        all_reclaimable: true,
        include: include.iter().copied().collect(),
        ..Default::default()
    };
    let by_kind = Filter {
        kinds: vec![f.kind],
        ..Default::default()
    };
    let mut last_refusal = None;
    for filter in [by_kind, Filter::default()] {
        let mut narrowed = r.clone();
        filter.apply(&mut narrowed, facts.now);
        let plan = Plan::from_scan(&narrowed, &sel);
        if !plan.covers(&narrowed, f) {
            last_refusal = plan
                .skipped_at_plan
                .iter()
                .find(|s| s.id == f.id)
                .map(|s| crate::pathser::escape_text(&s.why));
            continue;
        }
        let flags = filter.flags();
        let sp = if flags.is_empty() { "" } else { " " };
        free.command = Some(format!("smolsweep prune{sp}{flags}{flag}"));
        free.plan = Some(confirmation(&plan).sentence());
        free.estimated_bytes = plan.estimated_bytes;
        free.also = plan
            .actions
            .iter()
            .filter(|a| !matches!(&a.action, Action::DeletePath { path, .. } if path == &f.path))
            .map(|a| crate::pathser::escape_text(&crate::view::action_line(a)))
            .collect();
        if !free.also.is_empty() {
            free.only_this = only_this(r, f);
        }
        return free;
    }
    free.blocked.extend(last_refusal);
    free
}

/// The plan that deletes `f` and nothing it need not: `f` with the disks that back onto it.
pub(super) fn only_this(r: &ScanReport, f: &Finding) -> Option<String> {
    let mut ids = vec![f.id.clone()];
    ids.extend(
        r.findings
            .iter()
            .filter(|g| f.needed_by.contains(&g.path))
            .map(|g| g.id.clone()),
    );
    let sel = Selection {
        ids: ids.clone(),
        include: f.opt_in_class.into_iter().collect(),
        ..Default::default()
    };
    if !Plan::from_scan(r, &sel).covers(r, f) {
        return None;
    }
    let ids: String = ids.iter().map(|i| format!(" --id {i}")).collect();
    Some(format!(
        "smolsweep plan{ids} --out plan.json && smolsweep apply plan.json"
    ))
}

pub(super) fn path_why(facts: &WhyFacts, p: &Path, why: &mut Why) {
    let r = &facts.report;
    if let Some(f) = r.findings.iter().find(|f| f.path == p) {
        return finding_why(facts, f, why);
    }
    // The innermost finding holding it.
    let holder = r
        .findings
        .iter()
        .filter(|f| f.is_dir && p.starts_with(&f.path))
        .max_by_key(|f| f.path.components().count());
    if let Some(f) = holder {
        why.inside = true;
        return finding_why(facts, f, why);
    }
    if crate::fsread::lstat(p).is_none() {
        why.found = false;
    }
    why.upstream = upstream_of(r, p);
    let root = facts
        .roots
        .iter()
        .filter(|root| p.starts_with(&root.path))
        .max_by_key(|root| root.path.components().count());
    why.place = Some(match root {
        Some(root) => Place::Under {
            root: root.clone(),
            findings: r.findings.iter().filter(|f| f.path.starts_with(p)).count(),
        },
        None => Place::Outside {
            roots: facts.roots.iter().filter(|r| r.exists).cloned().collect(),
        },
    });
}

pub(super) fn machine_why(facts: &WhyFacts, product: Product, name: &str, why: &mut Why) {
    let r = &facts.report;
    let m = r
        .machines
        .iter()
        .find(|m| m.product == product && m.name == name);
    let owned = |f: &&Finding| {
        (f.product == product && f.owner.as_deref() == Some(name))
            || m.and_then(|m| m.dir.as_deref())
                .is_some_and(|d| f.path.starts_with(d))
    };
    why.items = r.findings.iter().filter(owned).map(item).collect();
    why.version = version_facts(r, product);
    let Some(m) = m else {
        why.found = !why.items.is_empty();
        return;
    };
    why.record = Some(record(m));
    why.compact = r
        .compact
        .disks
        .iter()
        .filter(|d| d.product == product && d.owner.as_deref() == Some(name))
        .cloned()
        .collect();
    why.processes = r
        .processes
        .iter()
        .filter(|p| p.product == product && p.owner.as_deref() == Some(name))
        .map(|p| process_facts(facts, p.pid, None))
        .collect();
    why.keep_rule = m.kept.as_deref().map(|k| keep_facts(facts, k));
    let branches = crate::plan::branch_descendants(r, m);
    why.branches = branches.iter().map(|b| b.name.clone()).collect();
    let target = format!("{}:{name}", product.as_str());
    let sel = Selection {
        delete_machines: vec![target.clone()],
        cascade: !branches.is_empty(),
        ..Default::default()
    };
    let plan = Plan::from_scan(r, &sel);
    let cascade = if branches.is_empty() {
        ""
    } else {
        " --cascade"
    };
    why.free = Some(Free {
        command: Some(format!("smolsweep delete {target}{cascade}")),
        plan: (!plan.is_empty()).then(|| confirmation(&plan).sentence()),
        estimated_bytes: plan.estimated_bytes,
        also: plan
            .actions
            .iter()
            .map(|a| crate::pathser::escape_text(&crate::view::action_line(a)))
            .collect(),
        only_this: None,
        blocked: plan
            .skipped_at_plan
            .iter()
            .map(|s| crate::pathser::escape_text(&s.why))
            .collect(),
    });
}

pub(super) fn process_why(facts: &WhyFacts, pid: u32, why: &mut Why) {
    let r = &facts.report;
    let p = process_facts(facts, pid, None);
    why.found = p.exists;
    why.items = r
        .findings
        .iter()
        .filter(|f| f.used_by.contains(&pid))
        .map(item)
        .collect();
    let vm = r.processes.iter().find(|v| v.pid == pid);
    if let Some(v) = vm {
        why.version = version_facts(r, v.product);
        why.keep_rule = v.kept.as_deref().map(|k| keep_facts(facts, k));
        why.record = r
            .machines
            .iter()
            .find(|m| m.product == v.product && Some(m.name.as_str()) == v.owner.as_deref())
            .map(record);
        let mut free = Free::default();
        if v.is_this_homes_orphan() {
            let plan = Plan::from_scan(
                r,
                &Selection {
                    reap_pids: vec![pid],
                    ..Default::default()
                },
            );
            free.command = Some(format!("smolsweep reap {pid}"));
            free.plan = Some(confirmation(&plan).sentence());
            free.estimated_bytes = plan.estimated_bytes;
        } else {
            free.blocked.push(fix_for_process(r, pid));
        }
        why.free = Some(free);
    }
    why.processes = vec![p];
}
