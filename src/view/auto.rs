//! An automatic clean-up waiting for the user, as the window shows it: the core's
//! confirmation of the plan the policy made, with the banner, status line and button that say
//! why it waits (its first run, or above the cap).

use serde::Serialize;

use crate::plan::Plan as CorePlan;

/// Why an automatic run waits for the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AskReason {
    /// The policy's first run: shown once as a preview.
    First,
    /// The run would free more than the policy's cap.
    Cap,
}

/// An automatic run waiting for the user, as the window shows it (the core's confirmation).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AutoPreview {
    /// Why it waits.
    pub reason: AskReason,
    /// The confirmation's headline.
    pub headline: String,
    /// The estimate, in words.
    pub estimate: String,
    /// What it will do, a line an action.
    pub lines: Vec<String>,
    /// The cap, in words, when above it.
    pub cap: Option<String>,
    /// Fingerprint of the plan shown: confirming runs only this plan.
    pub digest: String,
    /// The banner's sentence: "2.0 GB is above your cap of 1.0 GB." or "its first run would
    /// reclaim …".
    pub banner: String,
    /// The line above the plan in Settings.
    pub status: String,
    /// The button that runs it: "Run it: reclaim 2.0 GB".
    pub run_label: String,
}

/// The preview of `plan`, waiting for the user for `reason` (`cap`: the policy's cap, in bytes).
pub fn preview(plan: &CorePlan, reason: AskReason, cap: Option<u64>) -> AutoPreview {
    let c = crate::view::confirmation(plan);
    let cap = cap.map(crate::view::bytes);
    let (banner, status) = match (reason, &cap) {
        (AskReason::Cap, Some(cap)) => (
            format!("{} is above your cap of {cap}.", c.estimate),
            format!(
                "This run would free {}, above your cap of {cap}.",
                c.estimate
            ),
        ),
        _ => {
            let mut h = c.headline.chars();
            let lower: String = h
                .next()
                .map(|f| f.to_lowercase().chain(h).collect())
                .unwrap_or_default();
            (
                format!("its first run would {lower}."),
                "The first automatic run, to confirm once:".to_string(),
            )
        }
    };
    AutoPreview {
        reason,
        run_label: format!("Run it: reclaim {}", c.estimate),
        headline: c.headline,
        estimate: c.estimate,
        lines: c.lines,
        cap,
        digest: plan.action_digest(),
        banner,
        status,
    }
}

/// The one notification for a run waiting for the user (its first run, or above the cap).
pub fn waiting_note(pv: &AutoPreview) -> crate::view::notes::Note {
    let (summary, body) = match pv.reason {
        AskReason::First => (
            format!(
                "Automatic clean-up: confirm the first run ({})",
                pv.estimate
            ),
            format!(
                "{}. Review it once; later runs go by themselves.",
                pv.headline
            ),
        ),
        AskReason::Cap => (
            format!(
                "Automatic clean-up needs you: {} is above your cap of {}",
                pv.estimate,
                pv.cap.clone().unwrap_or_default()
            ),
            format!("{}. Nothing was deleted.", pv.headline),
        ),
    };
    crate::view::notes::Note {
        summary,
        body,
        review: true,
        action: None,
    }
}
