//! `smolsweep delete`: delete machines or sandboxes (record and storage) through their
//! product's CLI.

use smolsweep::plan::{Plan, Selection};

use super::run::{run_named, with_report, CascadeArg, Named, ReportArgs, RunArgs};

#[derive(Debug, clap::Args)]
pub struct DeleteArgs {
    /// Machine names (smolvm) or sandbox ids (Celesto).
    #[arg(required = true)]
    pub machines: Vec<String>,
    #[command(flatten)]
    pub cascade: CascadeArg,
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub report: ReportArgs,
}

pub fn run(a: DeleteArgs) -> i32 {
    with_report(&a.report, a.run.json, |s| {
        let sel = Selection {
            delete_machines: a.machines.clone(),
            cascade: a.cascade.cascade,
            ..Default::default()
        };
        let plan = Plan::from_scan(&s.report, &sel);
        let named = Named::machines(&a.machines);
        run_named(&plan, &a.run, &s.at, "delete", &s.report, named)
    })
}
