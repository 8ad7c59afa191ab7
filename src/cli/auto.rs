//! `smolsweep auto --policy FILE`: apply an automatic clean-up policy without a person, and
//! print the run as JSON. The systemd user timer and the launchd agent run this.
//!
//! It runs only what the policy allows, through the one plan → re-judge → execute → journal
//! road, and the journal marks the run as the policy's (surface `auto`). A plan above the
//! policy's cap is not run: that needs a person (exit 1, status `needs_confirmation`).

use std::path::PathBuf;

use serde_json::json;

use smolsweep::exec::{self, Confirmed, How};
use smolsweep::{Decision, Policy};

#[derive(Debug, clap::Args)]
pub struct AutoArgs {
    /// The policy file (schema smolsweep.policy/1, the app's automatic clean-up setting).
    #[arg(long, value_name = "FILE")]
    pub policy: PathBuf,
    /// Show what it would do; change nothing.
    #[arg(long, short = 'n')]
    pub dry_run: bool,
}

fn print(v: serde_json::Value) {
    crate::cli::out::json(&v);
}

fn refuse(status: &str, msg: &str) -> i32 {
    print(json!({"schema": exec::RESULT_SCHEMA, "status": status, "error": msg}));
    1
}

pub fn run(a: AutoArgs) -> i32 {
    let text = match smolsweep::read_input_text(
        &a.policy,
        smolsweep::MAX_SETTINGS_BYTES,
        "a policy Smolsweep wrote",
    ) {
        Ok(t) => t,
        Err(e) => return refuse("error", &e.to_string()),
    };
    let policy = match Policy::from_json(&text) {
        Ok(p) => p,
        Err(e) => return refuse("error", &format!("{}: {e}", a.policy.display())),
    };
    if !policy.enabled {
        print(json!({"schema": exec::RESULT_SCHEMA, "status": "disabled"}));
        return 0;
    }
    let opts = match smolsweep::scan::ScanOptions::from_env() {
        Ok(o) => o,
        Err(e) => return refuse("error", &format!("{e:#}")),
    };
    let taken = std::time::Instant::now();
    let report = smolsweep::scan::scan(&opts);
    if !a.dry_run {
        // The timer's scans draw the space history too.
        crate::cli::trend::record_scan(&report);
    }
    let plan = match policy.decide(&report, opts.now) {
        Err(e) => return refuse("error", &e),
        Ok(Decision::Nothing) => {
            print(json!({"schema": exec::RESULT_SCHEMA, "status": "nothing_to_do"}));
            return 0;
        }
        Ok(Decision::Ask { plan, cap }) => {
            let c = smolsweep::view::confirmation(&plan);
            print(json!({
                "schema": exec::RESULT_SCHEMA,
                "status": "needs_confirmation",
                "headline": c.headline,
                "estimated_bytes": c.estimate_bytes,
                "cap_bytes": cap,
                "plan_id": plan.id,
            }));
            return 1;
        }
        Ok(Decision::Run(plan)) => plan,
    };
    let road = || exec::Road::new(opts.clone()).seeded(&report, taken);
    if a.dry_run {
        return match exec::run(&plan, None, exec::Origin::new("auto", "dry run"), road()) {
            Ok(r) => {
                print(r.envelope(&plan));
                0
            }
            Err(e) => refuse("error", &e.to_string()),
        };
    }
    let confirmed = Confirmed::of(&plan, How::Policy);
    let origin = exec::Origin::new("auto", "auto --policy");
    let result = exec::run(&plan, Some(confirmed), origin, road());
    match result {
        Ok(r) => {
            let failed = r.failed().count() > 0 || r.journal_error.is_some();
            print(r.envelope(&plan));
            i32::from(failed)
        }
        Err(e) => refuse("error", &e.to_string()),
    }
}
