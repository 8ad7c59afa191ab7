//! `smolsweep plan`: write a plan to a file for review (`smolsweep apply FILE` runs it).

use std::path::{Path, PathBuf};

use smolsweep::model::ScanReport;
use smolsweep::plan::{Plan, Selection};

use super::run::{
    fail, print_plan, print_refused, refused, with_report, CascadeArg, IncludeArgs, Named,
    ReportArgs,
};

#[derive(Debug, clap::Args)]
pub struct PlanArgs {
    #[command(flatten)]
    pub filter: crate::cli::filters::FilterArgs,
    /// Finding ids to include (default without ids: everything reclaimable).
    #[arg(long = "id", value_name = "ID")]
    pub ids: Vec<String>,
    /// Everything reclaimable, in addition to any --id.
    #[arg(long)]
    pub all: bool,
    #[command(flatten)]
    pub include: IncludeArgs,
    /// Also end every orphaned VM process of this HOME.
    #[arg(long)]
    pub reap: bool,
    /// Also stop this machine (repeatable).
    #[arg(long = "stop", value_name = "MACHINE")]
    pub stop: Vec<String>,
    /// Also delete this machine through its product's CLI (repeatable).
    #[arg(long = "delete", value_name = "MACHINE")]
    pub delete: Vec<String>,
    #[command(flatten)]
    pub cascade: CascadeArg,
    /// Write the plan here (JSON, schema smolsweep.plan/1); `-` writes it to stdout, alone.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    #[command(flatten)]
    pub report: ReportArgs,
}

/// The finding ids `given` names, each in full or by a prefix of at least four characters only
/// one id starts with (a plan deletes what they name); one that names none stays as given, for
/// the planner to refuse by name.
fn finding_ids(report: &ScanReport, given: &[String]) -> Result<Vec<String>, String> {
    given
        .iter()
        .map(|g| {
            super::prefix::find_to_remove(&report.findings, g, "finding id", |f| &f.id)
                .map(|f| f.map_or_else(|| g.clone(), |f| f.id.clone()))
        })
        .collect()
}

/// Whether `path` may be written with a plan: absent, or a Smolsweep plan already.
fn may_overwrite(path: &Path) -> Result<(), String> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("cannot check {}: {e}", path.display())),
    };
    let refuse = |what: &str| {
        Err(format!(
            "refusing to overwrite {}: {what}, not a Smolsweep plan (choose another --out, or remove it first)",
            path.display()
        ))
    };
    if !meta.is_file() {
        return refuse("it exists and is not a regular file");
    }
    let text = match smolsweep::read_input_text(path, smolsweep::MAX_PLAN_BYTES, "a plan") {
        Ok(t) => t,
        Err(smolsweep::InputError::TooLarge { .. }) => {
            return refuse(&format!(
                "it exists and is larger than {} MiB",
                smolsweep::MAX_PLAN_BYTES >> 20
            ))
        }
        Err(_) => return refuse("it exists and is not a text file"),
    };
    match serde_json::from_str::<serde_json::Value>(&text) {
        Ok(v) if v.get("schema").and_then(|s| s.as_str()) == Some(smolsweep::plan::PLAN_SCHEMA) => {
            Ok(())
        }
        Ok(v)
            if v.get("schema").and_then(|s| s.as_str()) == Some(smolsweep::model::SCAN_SCHEMA) =>
        {
            refuse("it is a scan report")
        }
        _ => refuse("it exists"),
    }
}

pub fn run(a: PlanArgs) -> i32 {
    // `-` is stdout (`./-` names a file called `-`).
    let to_stdout = a.out.as_os_str() == "-";
    let writable = if to_stdout {
        Ok(())
    } else {
        may_overwrite(&a.out)
    };
    if let Err(msg) = writable {
        return fail(false, &msg);
    }
    with_report(&a.report, false, |s| {
        let mut report = s.report;
        let ids = match finding_ids(&report, &a.ids) {
            Ok(ids) => ids,
            Err(why) => return fail(false, &why),
        };
        a.filter
            .filter()
            .apply(&mut report, std::time::SystemTime::now());
        let sel = Selection {
            all_reclaimable: a.all || a.ids.is_empty(),
            ids: ids.clone(),
            include: a.include.classes(),
            reap_orphans: a.reap,
            stop_machines: a.stop.clone(),
            delete_machines: a.delete.clone(),
            cascade: a.cascade.cascade,
            ..Default::default()
        };
        let plan = Plan::from_scan(&report, &sel);
        let mut named = Named::machines(&a.stop);
        named.keys.extend(Named::machines(&a.delete).keys);
        named.ids = ids;
        let refused = refused(&plan, &report, &named);
        if !refused.is_empty() {
            if !to_stdout {
                print_plan(&plan);
            }
            print_refused(&refused);
            eprintln!("smolsweep: no plan written: a named target cannot be planned");
            return 1;
        }
        if let Err(e) = plan.verify() {
            return fail(false, &format!("no plan written: {e}"));
        }
        if to_stdout {
            // Only the plan, so `plan --out - > p.json` or `| jq` read it.
            crate::cli::out::raw(&(plan.to_json_pretty() + "\n"));
            return 0;
        }
        if let Err(e) = std::fs::write(&a.out, plan.to_json_pretty() + "\n") {
            return fail(false, &format!("cannot write {}: {e}", a.out.display()));
        }
        print_plan(&plan);
        crate::outln!("Plan written to {}", a.out.display());
        0
    })
}
