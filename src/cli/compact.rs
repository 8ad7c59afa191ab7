//! `smolsweep compact`: give back the space the guest freed inside the disks of stopped
//! machines and saved disks.

use std::path::Path;

use smolsweep::plan::{Action, Plan, SkippedAtPlan};

use super::run::{fail, run_plan_with, with_report, Mode, ReportArgs, RunArgs};

#[derive(Debug, clap::Args)]
pub struct CompactArgs {
    /// Machines or sandboxes (their disks), or disk paths; without any, every disk with
    /// something to compact.
    pub targets: Vec<String>,
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub report: ReportArgs,
}

pub fn run(a: CompactArgs) -> i32 {
    with_report(&a.report, a.run.json, |s| {
        let plan = match smolsweep::compact_plan(&s.report, &a.targets) {
            Ok(p) => p,
            Err(e) => return fail(a.run.json, &e),
        };
        let mode = Mode {
            run: &a.run,
            refused: compact_refused(&plan, &a.targets),
            strict: !a.targets.is_empty(),
            all_skipped_refused: false,
            each: true,
        };
        run_plan_with(&plan, mode, &s.at, "compact")
    })
}

/// What of a compaction's named targets was refused: a disk named by its path that is not
/// planned, and every disk of a machine or sandbox none of whose disks is. Disks nobody named,
/// and a machine's disk with nothing to give back beside one that is compacted, are not
/// refusals (the plan lists them under "Not planned:").
fn compact_refused(plan: &Plan, targets: &[String]) -> Vec<SkippedAtPlan> {
    let planned_for = |t: &str| {
        plan.actions.iter().any(|a| match &a.action {
            Action::CompactDisk { product, owner, .. } => {
                let (p, name) = t.split_once(':').map_or((None, t), |(p, n)| (Some(p), n));
                owner.as_deref() == Some(name) && p.is_none_or(|p| p == product.as_str())
            }
            _ => false,
        })
    };
    let mut out = Vec::new();
    for t in targets {
        let by_path = t.contains('/');
        for s in &plan.skipped_at_plan {
            let disk = s.id.strip_prefix("disk:").unwrap_or(&s.id);
            let named = match by_path {
                true => Path::new(disk) == Path::new(t),
                false => !planned_for(t),
            };
            if named && !out.contains(s) {
                out.push(s.clone());
            }
        }
    }
    out
}
