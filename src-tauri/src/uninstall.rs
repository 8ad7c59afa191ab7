//! The uninstall wizard's commands: preflight → plan → run → proof, all through the core's
//! `smolsweep::uninstall` (nothing re-implemented here).
//!
//! The window gets the preflight, asks for a plan for the user's choices, shows it with a
//! checkbox per step, and sends it back with some steps unticked. The shell keeps the plan it
//! built: the one sent back must be that plan step for step (only the `checked` flags may
//! differ), so the window can skip steps but never add or change one. The run holds the scan
//! lock (no scan or reclaim at the same time), runs through the core's one executor, and reports
//! every step as an `uninstall-progress` event as it finishes (the executor's progress events).
//! Afterwards the proof is taken for the products and roots of the plan that ran.

use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use smolsweep::env::EnvSnapshot;
use smolsweep::exec::{Outcome, ProgressEvent};
use smolsweep::uninstall::plan::{self as uplan, ProductChoice, UninstallOptions};
use smolsweep::uninstall::preflight::{self, Preflight, PreflightRows};
use smolsweep::uninstall::run::{self as urun, RunReport};
use smolsweep::uninstall::verify::{self, Proof, VerifyOptions};
use smolsweep::uninstall::UninstallPlan;
use smolsweep::view::uninstall::{self as words, Row, StepRow};
use tauri::{AppHandle, Emitter, Manager, Runtime};

use crate::state::{AppState, EV_UNINSTALL_PROGRESS};
pub use crate::uninstaller::{RealUninstaller, Uninstaller};
use smolsweep::lock;

/// What the wizard has shown so far.
#[derive(Default)]
pub struct WizardState {
    preflight: Mutex<Option<Preflight>>,
    plan: Mutex<Option<UninstallPlan>>,
    /// The plan in `plan` has run (it stays for the proof).
    ran: Mutex<bool>,
    last_run: Mutex<Option<RunReport>>,
}

/// A step of the run that finished, sent while the run goes on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UninstallProgress {
    /// Index of the step in the plan.
    pub index: Option<usize>,
    pub summary: String,
    pub result: Outcome,
    /// Steps finished so far.
    pub done: usize,
    pub total: usize,
    /// `view::uninstall::progress_line`: "Remove ~/.smolvm: done".
    #[serde(default)]
    pub line: String,
    /// `view::uninstall::outcome_word`: "done".
    #[serde(default)]
    pub word: String,
}

/// What a run did and the proof taken right after it.
#[derive(Debug, Clone, Serialize)]
pub struct RunResult {
    pub run: RunReport,
    pub proof: ProofReport,
    /// `RunReport::freed_line`: "Freed about 1.2 GB.".
    pub freed: String,
    /// `RunReport::step_rows`: each step's line, outcome word and detail.
    pub steps: Vec<StepRow>,
}

/// The preflight as the window gets it: the core's preflight, its rows
/// (`Preflight::rows`, the core's words) and the product the choices page offers first.
#[derive(Debug, Clone, Serialize)]
pub struct PreflightShown {
    #[serde(flatten)]
    pub preflight: Preflight,
    pub rows: PreflightRows,
    /// The product the choices page offers first (`uninstall::plan::default_choice`).
    pub default_product: ProductChoice,
}

impl From<Preflight> for PreflightShown {
    fn from(preflight: Preflight) -> Self {
        PreflightShown {
            default_product: uplan::default_choice(&preflight),
            rows: preflight.rows(),
            preflight,
        }
    }
}

/// The plan as the window gets it: the core's plan (sent back as it is, with its ticks, to
/// run) and what a person reads of it, all the core's words.
#[derive(Debug, Clone, Serialize)]
pub struct PlanShown {
    #[serde(flatten)]
    pub plan: UninstallPlan,
    /// `PlanStep::size` of each step, in step order ("" for a step that removes no bytes).
    pub sizes: Vec<String>,
    /// The products' names, joined (`UninstallPlan::product_names`).
    pub product_names: String,
    /// What is left in place, one row each (`UninstallPlan::kept_rows`).
    pub kept_rows: Vec<Row>,
    /// The plan's digest (`UninstallPlan::digest`): sent back with the ticks to run it.
    pub digest: String,
    #[serde(flatten)]
    pub ticks: Ticks,
}

/// The plan's counts for the ticks shown: `UninstallPlan::tally` and `question`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ticks {
    /// "5 steps; 4 will run, freeing about 1.2 GB; 1 is left out".
    pub tally: String,
    /// "Uninstall smol-machines smolvm from /home/me: 5 steps; …".
    pub question: String,
    /// How many steps will run (0: nothing to confirm).
    pub will_run: usize,
}

impl Ticks {
    pub fn of(plan: &UninstallPlan) -> Self {
        Ticks {
            tally: plan.tally(),
            question: plan.question(),
            will_run: plan.checked_count(),
        }
    }
}

impl From<UninstallPlan> for PlanShown {
    fn from(plan: UninstallPlan) -> Self {
        PlanShown {
            sizes: plan.steps.iter().map(|s| s.size()).collect(),
            product_names: plan.product_names(),
            kept_rows: plan.kept_rows(),
            digest: plan.digest(),
            ticks: Ticks::of(&plan),
            plan,
        }
    }
}

/// The tally and question of the shell's plan with `checked` as the window's ticks (the plan
/// itself is not changed: the ticks are applied again when it runs).
pub fn ticks_now<R: Runtime>(app: &AppHandle<R>, checked: &[bool]) -> Result<Ticks, String> {
    let mut plan = lock(&app.state::<WizardState>().plan)
        .clone()
        .ok_or(words::NO_PLAN_YET)?;
    if checked.len() != plan.steps.len() {
        return Err(words::NOT_THE_PLAN_SHOWN.into());
    }
    for (i, c) in checked.iter().enumerate() {
        plan.set_checked(i, *c);
    }
    Ok(Ticks::of(&plan))
}

/// The proof, its `key=value` text and the whole copyable report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProofReport {
    pub proof: Proof,
    pub clean: bool,
    /// `verify::render_kv`: what `smolsweep verify` prints.
    pub kv: String,
    /// The plan's choices, each step and what happened, what was kept, the commands left for
    /// the user, and the proof: for the clipboard.
    pub report: String,
    /// `Proof::failed_line`: "2 checks failed: …", or "" when none did.
    #[serde(default)]
    pub failed_line: String,
}

fn uninstaller<R: Runtime>(app: &AppHandle<R>) -> Arc<dyn Uninstaller> {
    app.state::<AppState>().backend.uninstaller()
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    tauri::async_runtime::spawn_blocking(f)
        .await
        .map_err(|e| format!("uninstall: {e}"))?
}

/// Read-only: every install, state directory, machine, VM process, mount, launcher, PATH block,
/// credential and root-only item. Kept as the base of the next plan.
pub async fn preflight_now<R: Runtime>(app: &AppHandle<R>) -> Result<Preflight, String> {
    let u = uninstaller(app);
    let pre = blocking(move || {
        let env = u.env().map_err(|e| format!("{e:#}"))?;
        Ok(preflight::gather(&env, u.platform()))
    })
    .await?;
    let ws = app.state::<WizardState>();
    *lock(&ws.preflight) = Some(pre.clone());
    *lock(&ws.plan) = None;
    *lock(&ws.ran) = false;
    *lock(&ws.last_run) = None;
    Ok(pre)
}

/// The plan for the user's choices, built from the preflight the user saw.
pub async fn plan_now<R: Runtime>(
    app: &AppHandle<R>,
    opts: UninstallOptions,
) -> Result<UninstallPlan, String> {
    let seen = lock(&app.state::<WizardState>().preflight).clone();
    let pre = match seen {
        Some(p) => p,
        None => preflight_now(app).await?,
    };
    let plan = uplan::build(&pre, &opts);
    let ws = app.state::<WizardState>();
    *lock(&ws.plan) = Some(plan.clone());
    *lock(&ws.ran) = false;
    *lock(&ws.last_run) = None;
    Ok(plan)
}

/// The shell's own plan with the window's ticks, when the window showed this plan: its digest
/// ([`UninstallPlan::digest`]) is the one sent, as every other run compares the digest of what
/// was shown. The window sends no plan, so it can skip steps but never add or change one.
pub fn apply_checks(
    ours: &UninstallPlan,
    digest: &str,
    checked: &[bool],
) -> Result<UninstallPlan, String> {
    ours.with_ticks(digest, checked)
        .ok_or_else(|| words::NOT_THE_PLAN_SHOWN.to_string())
}

fn proof_report(plan: &UninstallPlan, run: Option<&RunReport>, proof: Proof) -> ProofReport {
    ProofReport {
        failed_line: proof.failed_line(),
        clean: proof.is_clean(),
        kv: verify::render_kv(&proof),
        report: smolsweep::uninstall::run::copyable_report(plan, run, &proof),
        proof,
    }
}

/// Take the proof for the products and roots of the last plan (both products and no roots
/// before any plan).
pub async fn verify_now<R: Runtime>(app: &AppHandle<R>) -> Result<ProofReport, String> {
    let u = uninstaller(app);
    let ws = app.state::<WizardState>();
    let plan = lock(&ws.plan).clone();
    let run = lock(&ws.last_run).clone();
    blocking(move || {
        let env = u.env().map_err(|e| format!("{e:#}"))?;
        let plan = plan.unwrap_or_else(|| {
            uplan::build(
                &preflight::gather(&env, u.platform()),
                &UninstallOptions::default(),
            )
        });
        let proof = proof_after(u.as_ref(), &env, &plan);
        Ok(proof_report(&plan, run.as_ref(), proof))
    })
    .await
}

/// Carry out the shell's plan with the window's ticks, then take the proof, when `digest` is
/// the digest of the plan shown.
pub async fn run_now<R: Runtime>(
    app: &AppHandle<R>,
    digest: &str,
    checked: &[bool],
) -> Result<RunResult, String> {
    let (ours, plan) = take_plan(app, digest, checked)?;
    let u = uninstaller(app);
    let st = app.state::<AppState>();
    let result = {
        let _g = st.scan_lock.lock().await;
        let app2 = app.clone();
        let plan2 = plan.clone();
        blocking(move || run_blocking(u.as_ref(), &app2, &plan2)).await
    };
    let result = match result {
        Ok(r) => r,
        Err(e) => {
            // Only the environment or the journal fail here, before any step ran.
            restore_plan(app, ours);
            return Err(e);
        }
    };
    let ws = app.state::<WizardState>();
    *lock(&ws.last_run) = Some(result.run.clone());
    *lock(&ws.plan) = Some(plan);
    *lock(&ws.ran) = true;
    *lock(&ws.preflight) = None;
    // The tray and the window's other views follow what is gone.
    let app2 = app.clone();
    tauri::async_runtime::spawn(async move {
        let _ = crate::scan::scan_now(&app2).await;
    });
    Ok(result)
}

/// Take the shell's plan for a run, as (the plan as it was, the plan with the sent ticks).
///
/// A plan runs once: it is taken now (a second click gets "no plan"), put back for the proof
/// afterwards, or put back as it was when nothing runs (here: no step ticked, or the sent plan
/// is not ours).
fn take_plan<R: Runtime>(
    app: &AppHandle<R>,
    digest: &str,
    checked: &[bool],
) -> Result<(UninstallPlan, UninstallPlan), String> {
    let ours = {
        let ws = app.state::<WizardState>();
        if *lock(&ws.ran) {
            return Err(words::ALREADY_RAN.into());
        }
        let taken = lock(&ws.plan).take();
        taken.ok_or(words::NO_PLAN_YET)?
    };
    match apply_checks(&ours, digest, checked) {
        Ok(p) if !p.is_empty() => Ok((ours, p)),
        Ok(_) => {
            restore_plan(app, ours);
            Err(words::NOTHING_TICKED.into())
        }
        Err(e) => {
            restore_plan(app, ours);
            Err(e)
        }
    }
}

/// Put a taken plan back, as it was.
fn restore_plan<R: Runtime>(app: &AppHandle<R>, ours: UninstallPlan) {
    *lock(&app.state::<WizardState>().plan) = Some(ours);
}

/// The run itself, on a blocking thread: journalled and re-judged step by step, each finished
/// step sent to the window, then the proof.
fn run_blocking<R: Runtime>(
    u: &dyn Uninstaller,
    app: &AppHandle<R>,
    plan: &UninstallPlan,
) -> Result<RunResult, String> {
    let env = u.env().map_err(|e| format!("{e:#}"))?;
    let runner = u.runner(plan, &env);
    let (_, index_of) = plan.core_plan();
    let progress = |ev: &ProgressEvent| {
        if let ProgressEvent::Finished {
            index,
            total,
            summary,
            outcome,
            ..
        } = ev
        {
            let p = UninstallProgress {
                index: index_of.get(*index).copied(),
                line: words::progress_line(summary, outcome),
                word: words::outcome_word(outcome).into(),
                summary: summary.clone(),
                result: outcome.clone(),
                done: index + 1,
                total: *total,
            };
            let _ = app.emit(EV_UNINSTALL_PROGRESS, p);
        }
    };
    let mut judge = u.judge(&env);
    // The one road, as in the CLI: nothing runs without the journal.
    let mut road = smolsweep::exec::Road::given(judge.as_mut(), runner.as_ref()).sink(&progress);
    if let Some(j) = u.journal_path() {
        road = road.journal_at(j);
    }
    let run = urun::run_with(plan, smolsweep::exec::How::Click, "window", road)
        .map_err(|e| e.to_string())?;
    let proof = proof_after(u, &env, plan);
    let proof = proof_report(plan, Some(&run), proof);
    Ok(RunResult {
        freed: run.freed_line(),
        steps: run.step_rows(),
        run,
        proof,
    })
}

/// The proof for the products and roots of `plan` ([`VerifyOptions::after`], as the CLI).
fn proof_after(u: &dyn Uninstaller, env: &EnvSnapshot, plan: &UninstallPlan) -> Proof {
    verify::verify(env, u.platform(), &VerifyOptions::after(plan))
}

// ---------------------------------------------------------------------------------------------
// Commands (registered in lib.rs)

#[tauri::command]
pub(crate) async fn uninstall_preflight<R: Runtime>(
    app: AppHandle<R>,
) -> Result<PreflightShown, String> {
    preflight_now(&app).await.map(PreflightShown::from)
}

#[tauri::command]
pub(crate) async fn uninstall_plan<R: Runtime>(
    app: AppHandle<R>,
    product: ProductChoice,
    remove_credentials: bool,
    remove_path_block: bool,
) -> Result<PlanShown, String> {
    plan_now(
        &app,
        UninstallOptions {
            product,
            remove_credentials,
            remove_path_block,
            remove_kept: false,
        },
    )
    .await
    .map(PlanShown::from)
}

/// The tally and the question for the window's ticks of the plan shown.
#[tauri::command]
pub(crate) async fn uninstall_ticks<R: Runtime>(
    app: AppHandle<R>,
    checked: Vec<bool>,
) -> Result<Ticks, String> {
    ticks_now(&app, &checked)
}

/// Run the plan shown (`digest`) with the window's ticks.
#[tauri::command]
pub(crate) async fn uninstall_run<R: Runtime>(
    app: AppHandle<R>,
    digest: String,
    checked: Vec<bool>,
) -> Result<RunResult, String> {
    run_now(&app, &digest, &checked).await
}

#[tauri::command]
pub(crate) async fn uninstall_verify<R: Runtime>(app: AppHandle<R>) -> Result<ProofReport, String> {
    verify_now(&app).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use smolsweep::model::Platform;
    use smolsweep::model::Product;
    use smolsweep::plan::Action;
    use smolsweep::uninstall::plan::PlanStep;

    fn plan_with(steps: Vec<PlanStep>) -> UninstallPlan {
        UninstallPlan {
            schema: uplan::UNINSTALL_PLAN_SCHEMA.into(),
            home: "/home/u".into(),
            products: vec![Product::Smolvm],
            options: UninstallOptions::default(),
            steps,
            kept: vec![],
            user_commands: vec![],
            removed_roots: vec![],
            notes: vec![],
            clis: vec![],
            platform: Platform::Linux,
        }
    }

    fn remove(path: &str) -> PlanStep {
        PlanStep {
            action: Action::RemoveTree {
                product: Product::Smolvm,
                path: path.into(),
                root: "/home/u".into(),
                identity: None,
                expected_bytes: 10,
                mounts_inside: vec![],
            },
            summary: format!("Remove {path}"),
            why: String::new(),
            checked: true,
            bytes: 10,
            kept_by: Vec::new(),
        }
    }

    #[test]
    fn unticked_steps_are_kept_unticked() {
        let ours = plan_with(vec![remove("/home/u/a"), remove("/home/u/b")]);
        let p = apply_checks(&ours, &ours.digest(), &[true, false]).unwrap();
        assert!(p.steps[0].checked && !p.steps[1].checked);
        assert_eq!(p.checked_count(), 1);
        // A step that a keep rule keeps may be ticked: the choice that overrides its rules.
        let mut kept = remove("/home/u/a");
        kept.checked = false;
        kept.kept_by = vec!["~/.smolvm/machines/demo".into()];
        let ours = plan_with(vec![kept]);
        let p = apply_checks(&ours, &ours.digest(), &[true]).unwrap();
        assert!(p.steps[0].checked);
        assert_eq!(p.steps[0].kept_by, ours.steps[0].kept_by);
    }

    /// An edit of a plan on its way back from the window.
    type Edit = Box<dyn Fn(&mut UninstallPlan)>;

    /// Issue 41: the uninstall's run compared the whole plan's JSON sent back by the window,
    /// where every other run compares the digest of what was shown. Now the window sends the
    /// digest and its ticks: a plan edited on the way (any field of any step, the options, the
    /// HOME, a step more) has another digest and is refused; the unchanged plan runs, whatever
    /// its ticks.
    #[test]
    fn an_edited_uninstall_plan_is_refused_by_its_digest_and_an_unchanged_one_runs() {
        let mut kept = remove("/home/u/a");
        kept.checked = false;
        kept.kept_by = vec!["~/.smolvm/machines/demo".into()];
        let ours = plan_with(vec![kept, remove("/home/u/b")]);
        let edits: Vec<(&str, Edit)> = vec![
            ("path", Box::new(|p| p.steps[1] = remove("/etc"))),
            ("summary", Box::new(|p| p.steps[1].summary += "x")),
            ("why", Box::new(|p| p.steps[1].why += "x")),
            ("bytes", Box::new(|p| p.steps[1].bytes += 1)),
            ("kept_by dropped", Box::new(|p| p.steps[0].kept_by.clear())),
            (
                "kept_by added",
                Box::new(|p| p.steps[1].kept_by.push("other".into())),
            ),
            (
                "a step more",
                Box::new(|p| p.steps.push(remove("/home/u/c"))),
            ),
            ("home", Box::new(|p| p.home = "/".into())),
            ("options", Box::new(|p| p.options.remove_credentials = true)),
        ];
        for (what, edit) in &edits {
            let mut edited = ours.clone();
            edit(&mut edited);
            assert_ne!(edited.digest(), ours.digest(), "{what}");
            let ticks = vec![true; ours.steps.len()];
            assert!(
                apply_checks(&ours, &edited.digest(), &ticks).is_err(),
                "{what} edited was accepted"
            );
        }
        // The ticks are the window's: they change no digest.
        let mut ticked = ours.clone();
        ticked.set_checked(0, true);
        assert_eq!(ticked.digest(), ours.digest());
        let p = apply_checks(&ours, &ours.digest(), &[true, true]).unwrap();
        assert_eq!(p.checked_count(), 2);
        assert_eq!(p.steps[0].kept_by, ours.steps[0].kept_by);
        // One tick per step, and a digest at all.
        assert!(apply_checks(&ours, &ours.digest(), &[true]).is_err());
        assert!(apply_checks(&ours, "", &[true, true]).is_err());
    }
}
