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
use smolsweep::uninstall::preflight::{self, Preflight};
use smolsweep::uninstall::run::{self as urun, RunReport};
use smolsweep::uninstall::verify::{self, Proof, VerifyOptions};
use smolsweep::uninstall::UninstallPlan;
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
}

/// What a run did and the proof taken right after it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunResult {
    pub run: RunReport,
    pub proof: ProofReport,
    /// `RunReport::freed_line`: "Freed about 1.2 GB.".
    #[serde(default)]
    pub freed: String,
}

/// The preflight as the window gets it: the core's preflight and the products' names.
#[derive(Debug, Clone, Serialize)]
pub struct PreflightShown {
    #[serde(flatten)]
    pub preflight: Preflight,
    pub product_names: std::collections::BTreeMap<&'static str, &'static str>,
    /// What the shared `~/.smolvm` holds, in words, when there is one: "shared: 3 entries of
    /// smol-machines smolvm, 1 of Celesto SmolVM, 0 others".
    pub dot_smolvm_line: Option<String>,
    /// What each state directory is, in `state_dirs` order: "Celesto SmolVM · data · 2 mounts
    /// inside".
    pub state_dir_lines: Vec<String>,
    /// What each VM process is, in `processes` order: "Celesto SmolVM · Celesto QEMU VM · …".
    pub process_lines: Vec<String>,
    /// The product the choices page offers first (`uninstall::plan::default_choice`).
    pub default_product: ProductChoice,
}

impl From<Preflight> for PreflightShown {
    fn from(preflight: Preflight) -> Self {
        let dot_smolvm_line = preflight.dot_smolvm_line();
        let state_dir_lines = preflight.state_dir_lines();
        let process_lines = preflight.process_lines();
        PreflightShown {
            default_product: uplan::default_choice(&preflight),
            preflight,
            product_names: smolsweep::view::product_names(),
            dot_smolvm_line,
            state_dir_lines,
            process_lines,
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
        .ok_or("no plan has been made yet")?;
    if checked.len() != plan.steps.len() {
        return Err("the plan is not the one shown; review it again".into());
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

/// The shell's own plan with the sent plan's `checked` flags: any other difference is refused.
///
/// The sent plan is taken as JSON (the plan's flattened steps hold 128-bit timestamps, which
/// serde cannot read back through `flatten`, and which JavaScript rounds); each of its steps
/// must equal ours apart from `checked` and the recorded file identity, which is always ours.
pub fn apply_checks(
    ours: &UninstallPlan,
    sent: &serde_json::Value,
) -> Result<UninstallPlan, String> {
    let changed = || "the plan is not the one shown; review it again".to_string();
    let theirs = serde_json::to_value(ours).map_err(|e| e.to_string())?;
    for key in ["schema", "home", "products", "options"] {
        if sent.get(key) != theirs.get(key) {
            return Err(changed());
        }
    }
    let (Some(a), Some(b)) = (
        theirs.get("steps").and_then(|s| s.as_array()),
        sent.get("steps").and_then(|s| s.as_array()),
    ) else {
        return Err(changed());
    };
    if a.len() != b.len() {
        return Err(changed());
    }
    let mut plan = ours.clone();
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        let checked = y
            .get("checked")
            .and_then(|c| c.as_bool())
            .ok_or_else(changed)?;
        let strip = |v: &serde_json::Value| {
            let mut v = v.clone();
            if let Some(o) = v.as_object_mut() {
                o.remove("checked");
                // Nanosecond timestamps do not survive JavaScript's numbers; the shell's own
                // identities are the ones used.
                o.remove("identity");
            }
            v
        };
        if strip(x) != strip(y) {
            return Err(changed());
        }
        plan.set_checked(i, checked);
    }
    Ok(plan)
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

/// Carry out the shell's plan with the sent plan's ticks, then take the proof.
pub async fn run_now<R: Runtime>(
    app: &AppHandle<R>,
    sent: serde_json::Value,
) -> Result<RunResult, String> {
    let (ours, plan) = take_plan(app, &sent)?;
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
    sent: &serde_json::Value,
) -> Result<(UninstallPlan, UninstallPlan), String> {
    let ours = {
        let ws = app.state::<WizardState>();
        if *lock(&ws.ran) {
            return Err("this plan has already run; start over for a new one".into());
        }
        let taken = lock(&ws.plan).take();
        taken.ok_or("no plan has been made yet")?
    };
    match apply_checks(&ours, sent) {
        Ok(p) if !p.is_empty() => Ok((ours, p)),
        Ok(_) => {
            restore_plan(app, ours);
            Err("no step is ticked: nothing to do".into())
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

#[tauri::command]
pub(crate) async fn uninstall_run<R: Runtime>(
    app: AppHandle<R>,
    plan: serde_json::Value,
) -> Result<RunResult, String> {
    run_now(&app, plan).await
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
        let mut sent = serde_json::to_value(&ours).unwrap();
        sent["steps"][1]["checked"] = false.into();
        let p = apply_checks(&ours, &sent).unwrap();
        assert!(p.steps[0].checked && !p.steps[1].checked);
        assert_eq!(p.checked_count(), 1);
    }

    #[test]
    fn a_wizard_plan_with_an_edited_kept_by_is_refused() {
        use serde_json::json;
        // A step that would take what a keep rule keeps starts unticked; ticking it is the
        // choice that overrides exactly those rules, so the window may tick it but never
        // change, drop or add the rules it names.
        let mut kept = remove("/home/u/a");
        kept.checked = false;
        kept.kept_by = vec!["~/.smolvm/machines/demo".into()];
        let ours = plan_with(vec![kept, remove("/home/u/b")]);
        let v = |p: &UninstallPlan| serde_json::to_value(p).unwrap();

        // Ticked as it is: accepted, with our rules.
        let mut sent = v(&ours);
        sent["steps"][0]["checked"] = true.into();
        let p = apply_checks(&ours, &sent).unwrap();
        assert!(p.steps[0].checked);
        assert_eq!(p.steps[0].kept_by, ours.steps[0].kept_by);

        // Sent back ticked, with step `i`'s rules set (`None`: dropped).
        let refused_with = |i: usize, rules: Option<serde_json::Value>| {
            let mut sent = v(&ours);
            sent["steps"][0]["checked"] = true.into();
            let step = sent["steps"][i].as_object_mut().unwrap();
            match rules {
                Some(r) => step.insert("kept_by".into(), r),
                None => step.remove("kept_by"),
            };
            apply_checks(&ours, &sent).is_err()
        };
        // Dropped (the step would look un-kept), emptied, changed, or one rule more.
        assert!(refused_with(0, None));
        assert!(refused_with(0, Some(json!([]))));
        assert!(refused_with(0, Some(json!(null))));
        assert!(refused_with(0, Some(json!(["other"]))));
        assert!(refused_with(
            0,
            Some(json!(["~/.smolvm/machines/demo", "other"]))
        ));
        // Rules added to a step no rule keeps.
        assert!(refused_with(1, Some(json!(["other"]))));
        // The rules moved to the other step.
        let mut sent = v(&ours);
        let rules = sent["steps"][0]["kept_by"].take();
        sent["steps"][0].as_object_mut().unwrap().remove("kept_by");
        sent["steps"][1]["kept_by"] = rules;
        assert!(apply_checks(&ours, &sent).is_err());
    }

    #[test]
    fn every_step_field_but_checked_and_identity_must_come_back_unchanged() {
        let mut step = remove("/home/u/a");
        step.why = "left by smolvm".into();
        step.kept_by = vec!["rule".into()];
        let ours = plan_with(vec![step]);
        let sent = serde_json::to_value(&ours).unwrap();
        let fields: Vec<String> = sent["steps"][0]
            .as_object()
            .unwrap()
            .keys()
            .filter(|k| !matches!(k.as_str(), "checked" | "identity"))
            .cloned()
            .collect();
        assert!(fields.len() >= 8, "{fields:?}");
        for f in &fields {
            let mut edited = sent.clone();
            let x = &mut edited["steps"][0][f];
            *x = match x.take() {
                serde_json::Value::String(s) => format!("{s}x").into(),
                serde_json::Value::Number(n) => (n.as_u64().unwrap_or(0) + 1).into(),
                serde_json::Value::Bool(b) => (!b).into(),
                serde_json::Value::Array(mut a) => {
                    a.push("x".into());
                    a.into()
                }
                _ => "x".into(),
            };
            assert!(
                apply_checks(&ours, &edited).is_err(),
                "{f} edited was accepted"
            );
            let mut dropped = sent.clone();
            dropped["steps"][0].as_object_mut().unwrap().remove(f);
            assert!(
                apply_checks(&ours, &dropped).is_err(),
                "{f} dropped was accepted"
            );
        }
        assert!(apply_checks(&ours, &sent).is_ok());
    }

    #[test]
    fn a_changed_or_added_step_from_the_window_is_refused() {
        let ours = plan_with(vec![remove("/home/u/a")]);
        let v = |p: &UninstallPlan| serde_json::to_value(p).unwrap();
        let mut sent = ours.clone();
        sent.steps[0] = remove("/etc");
        assert!(apply_checks(&ours, &v(&sent)).is_err());
        let mut sent = v(&ours);
        sent["steps"][0]["path"] = "/etc".into();
        assert!(apply_checks(&ours, &sent).is_err());
        // A rounded identity (what JavaScript sends back) is not a change: ours is used.
        let mut with_id = ours.clone();
        let id = smolsweep::model::FileIdentity {
            dev: 1,
            ino: 2,
            file_type: 0o040000,
            size: 0,
            mtime_ns: 1_764_473_601_123_456_789,
        };
        if let Action::RemoveTree { identity, .. } = &mut with_id.steps[0].action {
            *identity = Some(id);
        }
        let mut sent = v(&with_id);
        sent["steps"][0]["identity"]["mtime_ns"] = serde_json::json!(1.7644736011234568e18);
        let p = apply_checks(&with_id, &sent).unwrap();
        assert!(
            matches!(&p.steps[0].action, Action::RemoveTree { identity: Some(i), .. } if *i == id)
        );
        let mut sent = ours.clone();
        sent.steps.push(remove("/home/u/c"));
        assert!(apply_checks(&ours, &v(&sent)).is_err());
        let mut sent = ours.clone();
        sent.home = "/".into();
        assert!(apply_checks(&ours, &v(&sent)).is_err());
        let mut sent = ours.clone();
        sent.options.remove_credentials = true;
        assert!(apply_checks(&ours, &v(&sent)).is_err());
        assert!(apply_checks(&ours, &serde_json::json!("x")).is_err());
    }
}
