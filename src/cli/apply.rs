//! `smolsweep apply`: run a plan written by `smolsweep plan`, re-checking every item.

use std::path::PathBuf;

use smolsweep::plan::Plan;
use smolsweep::view::shown;

use super::run::{fail, run_plan_with, Mode, RunArgs, Where};

#[derive(Debug, clap::Args)]
pub struct ApplyArgs {
    /// A plan written by `smolsweep plan --out`.
    pub file: PathBuf,
    #[command(flatten)]
    pub run: RunArgs,
}

pub fn run(a: ApplyArgs) -> i32 {
    let text = match smolsweep::read_input_text(
        &a.file,
        smolsweep::MAX_PLAN_BYTES,
        "a plan Smolsweep wrote",
    ) {
        Ok(t) => t,
        Err(e) => return fail(a.run.json, &e.to_string()),
    };
    let plan = match Plan::from_json(&text) {
        Ok(p) => p,
        Err(e @ smolsweep::plan::PlanError::ScanReport) => {
            return fail(a.run.json, &format!("refusing {}: {e}", shown(&a.file)))
        }
        Err(e) => return fail(a.run.json, &format!("refusing {}: {e}", shown(&a.file))),
    };
    // The HOME the scan and the re-judge use (the snapshot's, exactly as set), so the plan is
    // compared with the HOME it would act on.
    let opts = match smolsweep::scan::ScanOptions::from_env() {
        Ok(o) => o,
        Err(e) => return fail(a.run.json, &format!("cannot read the environment: {e}")),
    };
    if opts.env.home != plan.home {
        return fail(
            a.run.json,
            &format!(
                "refusing the plan: it was made for HOME {}, this is {}",
                shown(&plan.home),
                shown(&opts.env.home)
            ),
        );
    }
    let mode = Mode {
        run: &a.run,
        refused: vec![],
        strict: false,
        all_skipped_refused: true,
        each: false,
    };
    run_plan_with(&plan, mode, &Where { opts, seed: None }, "apply")
}
