//! Automatic clean-up after a scheduled scan: the core's `Policy::decide` on the scan, then the
//! one executor (journaled with surface `auto`). Off by default. The first run the policy would
//! make is a preview the user confirms once (then stored as confirmed in the settings); a plan
//! above the cap always asks; one notification after each run.

use serde::Serialize;
use smolsweep::exec::How;
use smolsweep::model::ScanReport;
use smolsweep::plan::Plan as CorePlan;
pub use smolsweep::view::auto::{preview, AskReason, AutoPreview};
use smolsweep::PolicyStep;
use tauri::{AppHandle, Manager, Runtime};

use crate::backend::{self, ReclaimOutcome};
use crate::keeps::time_of;
use crate::state::{lock, now_secs, AppState, NO_SCAN_YET};

/// What a scheduled scan's automatic step did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum AutoStep {
    /// The policy is off.
    Off,
    /// Nothing the policy allows is there.
    Nothing,
    /// Waiting for the user (the preview of the first run, or above the cap).
    Asked { preview: AutoPreview },
    /// Ran unattended.
    Ran { outcome: ReclaimOutcome },
    /// The policy could not be applied (a bad age or cap).
    Failed { error: String },
}

/// What the policy makes of `report` now (the shell's clock), its first run confirmed or not
/// (the core's rule, [`smolsweep::Decision::step`]).
fn decide(st: &AppState, report: &ScanReport, confirmed: bool) -> Result<PolicyStep, String> {
    let s = lock(&st.settings).clone();
    let now = time_of(lock(&st.clock).now());
    Ok(s.auto.decide(report, now)?.step(confirmed))
}

/// The automatic step after a scheduled scan of `report`.
pub async fn after_scan<R: Runtime>(app: &AppHandle<R>, report: &ScanReport) -> AutoStep {
    let st = app.state::<AppState>();
    let (enabled, confirmed) = {
        let s = lock(&st.settings);
        (s.auto.enabled, s.auto_confirmed)
    };
    if !enabled {
        *lock(&st.auto_pending) = None;
        return AutoStep::Off;
    }
    let (plan, reason, cap) = match decide(&st, report, confirmed) {
        Err(error) => return AutoStep::Failed { error },
        Ok(PolicyStep::Nothing) => {
            *lock(&st.auto_pending) = None;
            return AutoStep::Nothing;
        }
        Ok(PolicyStep::Run(plan)) => {
            *lock(&st.auto_pending) = None;
            let outcome = run(app, report, plan, How::Policy).await;
            return AutoStep::Ran { outcome };
        }
        Ok(PolicyStep::Ask { plan, reason, cap }) => (plan, reason, cap),
    };
    let pv = preview(&plan, reason, cap);
    let new = {
        let mut p = lock(&st.auto_pending);
        let new = p.as_ref().map(|p| &p.digest) != Some(&pv.digest);
        *p = Some(pv.clone());
        new
    };
    // One notification per plan waiting: the same plan found again by the next scan is not
    // announced again.
    if new && lock(&st.settings).notifications {
        let note = smolsweep::view::auto::waiting_note(&pv);
        crate::notify::send_note(app, note, Some("settings"));
    }
    AutoStep::Asked { preview: pv }
}

/// Run a plan the policy made, confirmed `how` (by the policy itself, or a click on its
/// preview), through the one executor, journaled with surface `auto`; one notification
/// afterwards.
async fn run<R: Runtime>(
    app: &AppHandle<R>,
    report: &ScanReport,
    plan: CorePlan,
    how: How,
) -> ReclaimOutcome {
    let st = app.state::<AppState>();
    let shown = backend::plan_of(report, plan.clone());
    let started = now_secs();
    let out = {
        let _g = st.scan_lock.lock().await;
        let origin = smolsweep::exec::Origin::new("auto", "auto");
        let r = crate::runs::execute(&st, &_g, plan, (how, origin), Box::new(|_, _| {})).await;
        ReclaimOutcome::of(&shown, r, (started, now_secs()))
    };
    if lock(&st.settings).notifications {
        crate::notify::send_note(app, crate::notes::auto_note(&out), Some("history"));
    }
    out
}

/// The user confirmed the waiting run with `digest`: run it if the policy still makes that very
/// plan from the latest scan. A confirmed first run is stored, so later runs go unattended.
pub async fn confirm<R: Runtime>(
    app: &AppHandle<R>,
    digest: &str,
) -> Result<ReclaimOutcome, String> {
    let st = app.state::<AppState>();
    let reason = lock(&st.auto_pending)
        .as_ref()
        .filter(|p| p.digest == digest)
        .map(|p| p.reason)
        .ok_or(crate::state::PLAN_CHANGED)?;
    let report = lock(&st.report).clone().ok_or(NO_SCAN_YET)?;
    let plan = decide(&st, &report, true)?
        .into_plan()
        .ok_or(crate::state::PLAN_CHANGED)?;
    if plan.action_digest() != digest {
        *lock(&st.auto_pending) = None;
        return Err(crate::state::PLAN_CHANGED.into());
    }
    *lock(&st.auto_pending) = None;
    if reason == AskReason::First {
        let mut s = lock(&st.settings).clone();
        s.auto_confirmed = true;
        if let Some(p) = st.settings_path() {
            s.save(&p).map_err(|e| format!("saving settings: {e}"))?;
        }
        *lock(&st.settings) = s;
    }
    let out = run(app, &report, plan, How::Click).await;
    let _ = crate::scan::scan_now(app).await;
    Ok(out)
}
