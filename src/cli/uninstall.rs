//! `smolsweep uninstall`.
//!
//! Same conventions as `prune`: without `--yes` the plan is only shown; on a terminal the user is
//! asked (step count and bytes); when stdin is not a terminal the plan is printed and the exit
//! code is 1 if there was something to do. While it runs, progress (steps and bytes) is shown on
//! stderr; after a run, each step's result and the proof are printed (`--quiet`: only errors, a
//! dirty proof and one closing line). Exit codes: 0 done (and clean) or nothing to do, 1
//! refused, any failure or a dirty proof, 2 usage.

use super::progress::{Progress, Style};
use super::run::RunArgs;
use smolsweep::env::EnvSnapshot;
use smolsweep::exec::{How, Outcome};
use smolsweep::model::Platform;
use smolsweep::uninstall::plan::{self, UninstallOptions, UninstallPlan};
use smolsweep::uninstall::preflight::{self, Preflight};
use smolsweep::uninstall::run::{self, RunReport};
use smolsweep::uninstall::verify::{self, Proof, VerifyOptions};

/// Which product(s) to uninstall: the flag's values for the library's
/// [`smolsweep::uninstall::plan::ProductChoice`] (clap stays in the binary).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProductChoice {
    Celesto,
    Smolvm,
    All,
}

impl From<ProductChoice> for plan::ProductChoice {
    fn from(c: ProductChoice) -> Self {
        match c {
            ProductChoice::Celesto => plan::ProductChoice::Celesto,
            ProductChoice::Smolvm => plan::ProductChoice::Smolvm,
            ProductChoice::All => plan::ProductChoice::All,
        }
    }
}

/// The run flags are `prune`'s ([`RunArgs`]), said of a preflight, steps and a proof.
#[derive(Debug, clap::Args)]
#[command(
    mut_arg("dry_run", |a| a.help("Show the preflight and the plan; change nothing")),
    mut_arg("json", |a| a.help("Print JSON instead of text")),
    mut_arg("quiet", |a| a.help("Print only errors and the closing line (no plan, no progress, no proof unless dirty)")),
    mut_arg("verbose", |a| a.help("One progress line per step as it finishes")),
)]
pub struct UninstallArgs {
    /// Which product to uninstall.
    #[arg(long, value_enum, default_value = "all")]
    pub product: ProductChoice,
    /// Also remove registry credentials (~/.config/smolvm), Celesto credentials and SSH keys.
    #[arg(long)]
    pub remove_credentials: bool,
    /// Also remove the '# smolvm' PATH lines from shell startup files (backed up first).
    #[arg(long)]
    pub remove_path_block: bool,
    /// Also remove what your keep rules keep inside the product's state (`smolsweep keep
    /// list`); without it, every step that would take a kept item is left out.
    #[arg(long)]
    pub remove_kept: bool,
    #[command(flatten)]
    pub run: RunArgs,
}

pub(crate) fn env_or_exit() -> Result<EnvSnapshot, i32> {
    EnvSnapshot::capture().map_err(|e| {
        eprintln!("smolsweep: {e:#}");
        1
    })
}

/// The JSON answer of `uninstall`.
#[derive(serde::Serialize)]
struct Envelope<'a> {
    schema: &'static str,
    dry_run: bool,
    preflight: &'a Preflight,
    plan: &'a UninstallPlan,
    #[serde(skip_serializing_if = "Option::is_none")]
    run: Option<&'a RunReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    proof: Option<&'a Proof>,
}

pub fn run(args: UninstallArgs) -> i32 {
    let env = match env_or_exit() {
        Ok(e) => e,
        Err(c) => return c,
    };
    let platform = Platform::current();
    let pre = preflight::gather(&env, platform);
    let opts = UninstallOptions {
        product: args.product.into(),
        remove_credentials: args.remove_credentials,
        remove_path_block: args.remove_path_block,
        remove_kept: args.remove_kept,
    };
    let plan = plan::build(&pre, &opts);
    let session = Session {
        args: &args,
        env: &env,
        platform,
        pre: &pre,
        plan: &plan,
    };
    if plan.is_empty() {
        if !args.run.quiet {
            session.show(None, None, true);
        }
        if !args.run.json {
            crate::outln!("Nothing to do.");
        }
        return 0;
    }
    if args.run.dry_run {
        session.show(None, None, true);
        return 0;
    }
    if !args.run.yes {
        session.show(None, None, true);
        if let Err(code) = confirm(&plan) {
            return code;
        }
    }
    let report = match session.carry_out() {
        Ok(r) => r,
        Err(code) => return code,
    };
    let proof = verify::verify(&env, platform, &VerifyOptions::after(&plan));
    session.show(Some(&report), Some(&proof), false);
    if report.any_failed() || !proof.is_clean() {
        1
    } else {
        0
    }
}

/// One `uninstall`: what was asked, what was found and the plan made of it.
struct Session<'a> {
    args: &'a UninstallArgs,
    env: &'a EnvSnapshot,
    platform: Platform,
    pre: &'a Preflight,
    plan: &'a UninstallPlan,
}

impl Session<'_> {
    /// Print the answer: before a run the preflight and the plan, after it each step's result,
    /// the leftovers and the proof (JSON: one envelope; `--quiet`: only the closing summary).
    fn show(&self, run: Option<&RunReport>, proof: Option<&Proof>, dry: bool) {
        if self.args.run.json {
            let env = Envelope {
                schema: "smolsweep.uninstall/1",
                dry_run: dry,
                preflight: self.pre,
                plan: self.plan,
                run,
                proof,
            };
            crate::cli::out::json(&env);
            return;
        }
        if self.args.run.quiet {
            if let Some(r) = run {
                print_quiet(r, proof);
            }
            return;
        }
        if run.is_none() {
            crate::cli::out::print(&preflight::render(self.pre));
            crate::outln!();
            crate::cli::out::print(&plan::render(self.plan));
        }
        if let Some(r) = run {
            crate::cli::out::print(&run::render(r));
            crate::cli::out::print(&plan::render_leftovers(self.plan));
        }
        if let Some(p) = proof {
            crate::outln!();
            crate::cli::out::raw(&verify::render_kv(p));
        }
    }

    /// Run the plan, journalled and re-judged step by step, with progress on stderr. `Err` is
    /// the exit code when nothing could be done.
    fn carry_out(&self) -> Result<RunReport, i32> {
        let (args, plan) = (self.args, self.plan);
        let (_, index_of) = plan.core_plan();
        let progress = Progress::new(
            Style::for_stderr(args.run.json || args.run.quiet),
            args.run.verbose && !args.run.json,
            index_of
                .iter()
                .map(|i| plan.steps.get(*i).map_or(0, |s| s.bytes))
                .collect(),
            None,
        );
        let listen = |ev: &smolsweep::exec::ProgressEvent| progress.event(ev);
        let opts = smolsweep::scan::ScanOptions {
            env: self.env.clone(),
            platform: self.platform,
            age_guard: std::time::Duration::from_secs(120),
            now: std::time::SystemTime::now(),
        };
        let runner = run::runner_for(plan, self.env, self.platform);
        // The same road and journal as prune: every machine, process, mount and delete action
        // is re-judged and recorded.
        let road = smolsweep::exec::Road::new(opts)
            .runner(&runner)
            .sink(&listen);
        let how = if args.run.yes {
            How::YesFlag
        } else {
            How::Answered
        };
        let report = run::run_with(plan, how, "cli", road).map_err(|e| {
            eprintln!("smolsweep: {e}");
            1
        })?;
        progress.finish();
        Ok(report)
    }
}

/// Ask on the terminal (the plan has been shown): step count and bytes. `Err` is the exit
/// code: stdin is not a terminal, or the answer was not yes.
fn confirm(plan: &UninstallPlan) -> Result<(), i32> {
    let n = plan.checked_count();
    let what = format!("Carry out {n} step{}", if n == 1 { "" } else { "s" });
    super::prompt::confirm(&smolsweep::view::freeing(&what, plan.checked_bytes()))
}

/// `--quiet`: failed steps and a dirty proof on stderr, one closing line on stdout.
fn print_quiet(r: &RunReport, proof: Option<&Proof>) {
    for rec in &r.records {
        if let Outcome::Failed { error } = &rec.result {
            eprintln!("smolsweep: FAILED {}: {error}", rec.summary);
        }
    }
    let clean = proof.is_none_or(|p| p.is_clean());
    if let Some(p) = proof.filter(|_| !clean) {
        eprint!("{}", verify::render_kv(p));
    }
    crate::outln!(
        "{} {}",
        run::render_tally(r),
        if clean {
            "Nothing of it is left."
        } else {
            "Something is left (see above)."
        }
    );
}
