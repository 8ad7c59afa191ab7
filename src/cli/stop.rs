//! `smolsweep stop`: stop machines or sandboxes through their product's CLI.

use smolsweep::plan::{Plan, Selection};

use super::run::{run_named, with_report, Named, ReportArgs, RunArgs};

#[derive(Debug, clap::Args)]
pub struct StopArgs {
    /// Machine names (smolvm) or sandbox ids (Celesto).
    #[arg(required = true)]
    pub machines: Vec<String>,
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub report: ReportArgs,
}

pub fn run(a: StopArgs) -> i32 {
    with_report(&a.report, a.run.json, |s| {
        let sel = Selection {
            stop_machines: a.machines.clone(),
            ..Default::default()
        };
        let plan = Plan::from_scan(&s.report, &sel);
        let named = Named::machines(&a.machines);
        run_named(&plan, &a.run, &s.at, "stop", &s.report, named)
    })
}
