//! `smolsweep prune`: delete what the scan found reclaimable (plan, confirm, execute).

use smolsweep::plan::{Plan, Selection};

use super::run::{run_named, with_report, IncludeArgs, Named, ReportArgs, RunArgs};

#[derive(Debug, clap::Args)]
pub struct PruneArgs {
    #[command(flatten)]
    pub include: IncludeArgs,
    #[command(flatten)]
    pub filter: crate::cli::filters::FilterArgs,
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub report: ReportArgs,
}

pub fn run(a: PruneArgs) -> i32 {
    with_report(&a.report, a.run.json, |mut s| {
        a.filter
            .filter()
            .apply(&mut s.report, std::time::SystemTime::now());
        let sel = Selection {
            all_reclaimable: true,
            include: a.include.classes(),
            ..Default::default()
        };
        let plan = Plan::from_scan(&s.report, &sel);
        run_named(&plan, &a.run, &s.at, "prune", &s.report, Named::default())
    })
}
