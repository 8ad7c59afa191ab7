//! An automatic clean-up policy: which classes, how old, how much at most. The same schema is
//! the app's setting and `smolsweep auto --policy FILE`'s file. A policy only ever narrows what
//! the scan judges reclaimable; it runs through the one plan → re-judge → execute → journal
//! road like every other run.

use std::collections::BTreeSet;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::filter::{parse_age, parse_size, Filter};
use crate::kind::FindingKind;
use crate::model::*;
use crate::plan::{Plan, Selection};

/// Schema name of a policy, in the app's setting and in a policy file.
pub const POLICY_SCHEMA: &str = "smolsweep.policy/1";

/// The classes an automatic run takes unless told otherwise: orphaned disks, their logs and
/// companions, and machine directories with no record. Never an opt-in class.
pub const DEFAULT_KINDS: &[FindingKind] = &[
    FindingKind::CelestoOrphanDisk,
    FindingKind::CelestoDiskCompanion,
    FindingKind::CelestoOrphanCompanion,
    FindingKind::CelestoOrphanLog,
    FindingKind::SmolvmDanglingDir,
    FindingKind::SmolvmEmptyDir,
    FindingKind::SmolvmNameOnlyDir,
];

/// What an automatic run may reclaim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    /// Schema name, [`POLICY_SCHEMA`] (another is refused).
    pub schema: String,
    /// Off by default: nothing runs by itself until the user turns it on.
    #[serde(default)]
    pub enabled: bool,
    /// The kinds it may delete (default [`DEFAULT_KINDS`]).
    #[serde(default = "default_kinds")]
    pub kinds: Vec<FindingKind>,
    /// Opt-in classes it may include (default none).
    #[serde(default)]
    pub include: BTreeSet<OptInClass>,
    /// Only items whose newest change is at least this old (default `7d`).
    #[serde(default = "default_age")]
    pub min_age: String,
    /// Above this estimate a run asks instead of acting (default `20G`).
    #[serde(default = "default_cap")]
    pub ask_above: String,
}

fn default_kinds() -> Vec<FindingKind> {
    DEFAULT_KINDS.to_vec()
}
fn default_age() -> String {
    "7d".into()
}
fn default_cap() -> String {
    "20G".into()
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            schema: POLICY_SCHEMA.into(),
            enabled: false,
            kinds: default_kinds(),
            include: BTreeSet::new(),
            min_age: default_age(),
            ask_above: default_cap(),
        }
    }
}

/// What a policy makes of a scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Nothing to do.
    Nothing,
    /// Run this plan unattended.
    Run(Plan),
    /// The plan frees more than the cap: a person must confirm it.
    Ask {
        /// The plan a person is asked to confirm.
        plan: Plan,
        /// The cap it exceeds (bytes, from `ask_above`).
        cap: u64,
    },
}

/// What the app does after a scheduled scan, from the policy's [`Decision`] and whether the
/// policy's first run was confirmed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Nothing to do.
    Nothing,
    /// Run this plan unattended.
    Run(Plan),
    /// Show this plan and wait for a person.
    Ask {
        /// The plan a person is asked to confirm.
        plan: Plan,
        /// Why it waits.
        reason: crate::view::auto::AskReason,
        /// The cap it exceeds, when that is why.
        cap: Option<u64>,
    },
}

impl Step {
    /// The plan it runs or asks about, if any.
    pub fn into_plan(self) -> Option<Plan> {
        match self {
            Step::Nothing => None,
            Step::Run(plan) | Step::Ask { plan, .. } => Some(plan),
        }
    }
}

impl Decision {
    /// The app's step: a run above the cap asks; a first run not yet confirmed is shown once
    /// as a preview to confirm; a confirmed one runs unattended.
    pub fn step(self, first_run_confirmed: bool) -> Step {
        use crate::view::auto::AskReason;
        match self {
            Decision::Nothing => Step::Nothing,
            Decision::Ask { plan, cap } => Step::Ask {
                plan,
                reason: AskReason::Cap,
                cap: Some(cap),
            },
            Decision::Run(plan) if !first_run_confirmed => Step::Ask {
                plan,
                reason: AskReason::First,
                cap: None,
            },
            Decision::Run(plan) => Step::Run(plan),
        }
    }
}

impl Policy {
    /// The policy with what a person left empty (the minimum age, the cap) set to its default.
    pub fn with_defaults(mut self) -> Policy {
        if self.min_age.trim().is_empty() {
            self.min_age = default_age();
        }
        if self.ask_above.trim().is_empty() {
            self.ask_above = default_cap();
        }
        self
    }

    /// Whether a first run confirmed under `old` still stands under this policy: it is on, it
    /// was on, and it takes no kind and no opt-in class `old` did not. Turning it on again or
    /// widening what it may take asks for a new preview.
    pub fn keeps_confirmation_of(&self, old: &Policy) -> bool {
        self.enabled
            && old.enabled
            && self.kinds.iter().all(|k| old.kinds.contains(k))
            && self.include.is_subset(&old.include)
    }

    /// Parse and check a policy file.
    pub fn from_json(text: &str) -> Result<Policy, String> {
        let p: Policy = serde_json::from_str(text).map_err(|e| format!("not a policy: {e}"))?;
        if p.schema != POLICY_SCHEMA {
            return Err(format!("schema '{}' is not {POLICY_SCHEMA}", p.schema));
        }
        p.filter()?;
        p.cap()?;
        Ok(p)
    }

    /// The filter the policy's age makes.
    pub fn filter(&self) -> Result<Filter, String> {
        Ok(Filter {
            older_than_secs: Some(parse_age(&self.min_age)?),
            ..Filter::default()
        })
    }

    /// Whether the policy takes `f` (its class; the age is the filter's).
    pub fn takes(&self, f: &Finding) -> bool {
        match f.verdict {
            Verdict::Reclaimable => self.kinds.contains(&f.kind),
            Verdict::OptIn => f.opt_in_class.is_some_and(|c| self.include.contains(&c)),
            _ => false,
        }
    }

    /// The `ask_above` cap in bytes, or why it is not a size.
    pub fn cap(&self) -> Result<u64, String> {
        parse_size(&self.ask_above)
    }

    /// Plan what the policy allows in `report` (taken at `now`).
    pub fn decide(&self, report: &ScanReport, now: SystemTime) -> Result<Decision, String> {
        let mut r = report.clone();
        self.filter()?.apply(&mut r, now);
        let sel = Selection {
            ids: r
                .findings
                .iter()
                .filter(|f| self.takes(f))
                .map(|f| f.id.clone())
                .collect(),
            ..Default::default()
        };
        let plan = Plan::from_scan(&r, &sel);
        if plan.is_empty() {
            return Ok(Decision::Nothing);
        }
        let cap = self.cap()?;
        if crate::view::estimate_bytes(&plan) > cap {
            return Ok(Decision::Ask { plan, cap });
        }
        Ok(Decision::Run(plan))
    }
}

/// Where the app saves the policy and where the systemd user timer reads it
/// (`packaging/systemd/smolsweep-auto.service`: `%h/.config/smolsweep/auto-policy.json`).
pub fn path_for(home: &std::path::Path) -> std::path::PathBuf {
    home.join(".config/smolsweep/auto-policy.json")
}

impl Policy {
    /// Write the policy atomically (a sibling file renamed over it).
    pub fn save(&self, path: &std::path::Path) -> std::io::Result<()> {
        let text = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        crate::atomic::write(path, &text, false)
    }
}

#[cfg(test)]
mod app_helper_tests {
    use super::*;

    #[test]
    fn a_saved_policy_is_read_back_by_the_headless_run_s_parser() {
        let d = tempfile::tempdir().unwrap();
        let path = path_for(d.path());
        assert!(path.ends_with(".config/smolsweep/auto-policy.json"));
        let p = Policy {
            enabled: true,
            min_age: "3d".into(),
            ask_above: "5G".into(),
            ..Policy::default()
        };
        p.save(&path).unwrap();
        let back = Policy::from_json(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(back, p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 41: when the automatic run needs a fresh confirmation is the core's rule: a
    /// confirmed first run stands while the policy stays on and takes nothing more; turning it
    /// off and on again, or a kind or an opt-in class more, asks again.
    #[test]
    fn a_confirmed_first_run_stands_until_the_policy_widens_or_is_turned_on_again() {
        let on = Policy {
            enabled: true,
            ..Policy::default()
        };
        assert!(on.keeps_confirmation_of(&on));
        let narrower = Policy {
            kinds: on.kinds[..1].to_vec(),
            ..on.clone()
        };
        assert!(narrower.keeps_confirmation_of(&on));
        assert!(!on.keeps_confirmation_of(&narrower), "a kind more");
        let wider = Policy {
            include: [OptInClass::Caches].into(),
            ..on.clone()
        };
        assert!(!wider.keeps_confirmation_of(&on), "an opt-in class more");
        let off = Policy {
            enabled: false,
            ..on.clone()
        };
        assert!(!on.keeps_confirmation_of(&off), "turned on again");
        assert!(!off.keeps_confirmation_of(&on), "turned off");
    }

    /// Issue 41: the automatic clean-up's defaults are the core's: a minimum age or a cap a
    /// person left empty is the default again, not a policy that cannot be read.
    #[test]
    fn an_empty_age_or_cap_is_the_policys_default() {
        let typed = Policy {
            min_age: " ".into(),
            ask_above: String::new(),
            ..Policy::default()
        }
        .with_defaults();
        assert_eq!(typed, Policy::default());
        let own = Policy {
            min_age: "3d".into(),
            ..Policy::default()
        };
        assert_eq!(own.clone().with_defaults(), own);
    }

    /// Issue 41: whether the automatic run asks is the core's rule: above the cap it asks
    /// (the cap said), a first run not yet confirmed asks once, a confirmed one runs.
    #[test]
    fn a_run_above_the_cap_asks_and_an_unconfirmed_first_run_asks_once() {
        use crate::view::auto::AskReason;
        let empty = ScanReport {
            schema: crate::model::SCAN_SCHEMA.into(),
            home: "/h".into(),
            platform: crate::model::Platform::Linux,
            products: vec![],
            findings: vec![],
            machines: vec![],
            processes: vec![],
            totals: Default::default(),
            scanned_at: 0,
            scanned_at_ns: 0,
            duration_ms: 0,
            compact: Default::default(),
        };
        let plan = Plan::from_scan(&empty, &Selection::default());
        let ask = |d: Decision, confirmed| match d.step(confirmed) {
            Step::Ask { reason, cap, .. } => Some((reason, cap)),
            _ => None,
        };
        let above = || Decision::Ask {
            plan: plan.clone(),
            cap: 7,
        };
        assert_eq!(ask(above(), true), Some((AskReason::Cap, Some(7))));
        assert_eq!(ask(above(), false), Some((AskReason::Cap, Some(7))));
        let run = || Decision::Run(plan.clone());
        assert_eq!(ask(run(), false), Some((AskReason::First, None)));
        assert_eq!(run().step(true), Step::Run(plan.clone()));
        assert_eq!(Decision::Nothing.step(false), Step::Nothing);
    }
}
