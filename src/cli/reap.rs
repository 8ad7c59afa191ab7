//! `smolsweep reap`: end orphaned VM processes of this HOME (pid and start time proven).

use smolsweep::plan::{Plan, Selection};

use super::run::{run_named, with_report, Named, ReportArgs, RunArgs};

#[derive(Debug, clap::Args)]
pub struct ReapArgs {
    /// Only these processes (default: every orphaned VM process of this HOME).
    pub pids: Vec<u32>,
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub report: ReportArgs,
}

pub fn run(a: ReapArgs) -> i32 {
    with_report(&a.report, a.run.json, |s| {
        let sel = Selection {
            reap_orphans: a.pids.is_empty(),
            reap_pids: a.pids.clone(),
            ..Default::default()
        };
        let plan = Plan::from_scan(&s.report, &sel);
        let named = Named {
            keys: a.pids.iter().map(|p| format!("pid:{p}")).collect(),
            ids: vec![],
        };
        run_named(&plan, &a.run, &s.at, "reap", &s.report, named)
    })
}
