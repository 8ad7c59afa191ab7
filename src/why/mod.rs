//! `why`'s facts: how Smolsweep judges one thing, and on what evidence. A surface names a
//! finding, a path, a machine or sandbox, or a process ([`Asked`]); [`WhyFacts`] holds what was
//! read for it (one scan, the process table that scan judged, the keep rules, the products'
//! roots) and [`WhyFacts::explain`] gathers the evidence for one target (how each process uses
//! it, its backing chain, the plans that would free it) into a [`Why`], which the view words
//! ([`crate::view::why`]). Nothing here acts.

use std::path::Path;
use std::time::SystemTime;

use crate::env::EnvSnapshot;
use crate::keep::Keeps;
use crate::model::*;
use crate::procs::RawProcess;
use crate::scan::ScanOptions;
use crate::view::why::{Asked, Free, Root, Why};

mod gather;

use gather::*;

/// What `why` reads: one scan, the process table that scan judged, the keep rules and the
/// product roots of this environment.
pub struct WhyFacts {
    report: ScanReport,
    processes: Vec<RawProcess>,
    keeps: Result<Keeps, String>,
    roots: Vec<Root>,
    now: SystemTime,
}

impl WhyFacts {
    /// Scan now (read-only), keeping the process table the scan judged on.
    pub fn gather(opts: &ScanOptions) -> WhyFacts {
        let processes = own_table();
        let report = crate::scan::scan_with(opts, processes.clone());
        let keeps = Keeps::load(&crate::keep::path_for(&opts.env, opts.platform))
            .map_err(|e| e.to_string());
        let roots = roots_of(&report, &opts.env, opts.platform);
        WhyFacts {
            report,
            processes,
            keeps,
            roots,
            now: opts.now,
        }
    }

    /// The facts of a scan a surface already holds (the window's rows): the process table read
    /// now for the command lines of what uses them, the keep rules at `keep_file` (the
    /// environment's keep file when `None`) and the roots of `env`.
    pub fn of_report(report: ScanReport, env: &EnvSnapshot, keep_file: Option<&Path>) -> WhyFacts {
        let platform = report.platform;
        let keep_file = keep_file
            .map(Path::to_path_buf)
            .unwrap_or_else(|| crate::keep::path_for(env, platform));
        WhyFacts {
            roots: roots_of(&report, env, platform),
            processes: own_table(),
            keeps: Keeps::load(&keep_file).map_err(|e| e.to_string()),
            report,
            now: SystemTime::now(),
        }
    }

    /// The scan the answers come from (what a surface resolves a typed target against).
    pub fn report(&self) -> &ScanReport {
        &self.report
    }

    /// Whether process `pid` was in the process table the scan judged (a VM process or not).
    pub fn has_process(&self, pid: u32) -> bool {
        self.processes.iter().any(|p| p.pid == pid)
            || self.report.processes.iter().any(|p| p.pid == pid)
    }

    /// How Smolsweep judges `asked`, on these facts: gathered here, worded by the view
    /// ([`crate::view::why`]).
    pub fn explain(&self, asked: &Asked) -> Why {
        explain(self, asked)
    }
}

fn explain(facts: &WhyFacts, asked: &Asked) -> Why {
    let mut why = Why::new(asked.clone());
    match asked {
        Asked::Finding(id) => match facts.report.finding(id) {
            Some(f) => finding_why(facts, f, &mut why),
            None => why.found = false,
        },
        Asked::Path(p) => path_why(facts, p, &mut why),
        Asked::Machine { product, name } => machine_why(facts, *product, name, &mut why),
        Asked::Process(pid) => process_why(facts, *pid, &mut why),
    }
    // A sandbox no inventory lists whose VM still runs: the VM, and the command that ends it.
    if let (Asked::Machine { product, name }, None) = (asked, &why.record) {
        unlisted_vm(facts, *product, name, &mut why);
    }
    // A disk inside what the scan judges as a whole (a smolvm machine's `storage.raw` in its
    // directory) is estimated on its own: its estimate and its command are said too.
    if let (Asked::Path(p), true) = (asked, why.compact.is_empty()) {
        why.compact = facts
            .report
            .compact
            .disks
            .iter()
            .filter(|d| d.path == *p)
            .cloned()
            .collect();
    }
    why.lines = crate::view::why::render(&why);
    why
}

/// The VM processes of this HOME that run `name` of `product`, which no inventory records, and
/// the command that ends them (`smolsweep reap PID`): `why celesto:x` tells the story the scan
/// tells of its VM and everything it holds.
fn unlisted_vm(facts: &WhyFacts, product: Product, name: &str, why: &mut Why) {
    let r = &facts.report;
    let pids: Vec<u32> = r
        .processes
        .iter()
        .filter(|p| p.product == product && p.owner.as_deref() == Some(name))
        .filter(|p| p.scope == Scope::ThisHome)
        .map(|p| p.pid)
        .collect();
    if pids.is_empty() {
        return;
    }
    why.found = true;
    // The scan's one story of it (`scan::story`), as its VM process and its leftovers say it.
    why.reason = r
        .processes
        .iter()
        .find(|p| pids.contains(&p.pid))
        .map(|p| crate::pathser::escape_text(&p.reason));
    why.processes = pids
        .iter()
        .map(|p| process_facts(facts, *p, None))
        .collect();
    let plan = crate::plan::Plan::from_scan(
        r,
        &crate::plan::Selection {
            reap_pids: pids.clone(),
            ..Default::default()
        },
    );
    let list: Vec<String> = pids.iter().map(u32::to_string).collect();
    why.free = Some(Free {
        command: (!plan.is_empty()).then(|| format!("smolsweep reap {}", list.join(" "))),
        plan: (!plan.is_empty()).then(|| crate::view::confirmation(&plan).sentence()),
        estimated_bytes: plan.estimated_bytes,
        blocked: plan
            .skipped_at_plan
            .iter()
            .map(|s| crate::pathser::escape_text(&s.why))
            .collect(),
        ..Free::default()
    });
}
