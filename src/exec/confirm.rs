//! The confirmation a run needs: proof that one plan, exactly as it was shown, was said yes to.
//!
//! A [`Confirmed`] token holds the digest of the plan it was made for ([`Plan::content_id`]:
//! every action, path, identity, root and HOME of it) and how the yes was given. It is made only
//! by [`Confirmed::of`], at the moment the yes is given, and the executor runs nothing when the
//! plan it is handed is not the one the token names.

use crate::plan::Plan;

/// How a plan was confirmed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum How {
    /// A person answered yes to the question under the listed plan.
    Answered,
    /// `--yes` on the command line.
    YesFlag,
    /// An automatic clean-up policy, within the cap the user set (`auto --policy`, the
    /// desktop's timer).
    Policy,
    /// A click in the window, or on the tray's dialog, on the plan they show.
    Click,
}

impl std::fmt::Display for How {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            How::Answered => "answered yes",
            How::YesFlag => "--yes",
            How::Policy => "the automatic policy",
            How::Click => "confirmed in the window",
        })
    }
}

/// Proof that `plan` was confirmed. The delete primitive and every other change need it; a dry
/// run never has one.
#[derive(Debug)]
pub struct Confirmed {
    digest: String,
    how: How,
}

impl Confirmed {
    /// `plan`, as it was shown, was confirmed `how`.
    pub fn of(plan: &Plan, how: How) -> Confirmed {
        Confirmed {
            digest: plan.content_id(),
            how,
        }
    }

    /// The digest of the plan this token was made for.
    pub(crate) fn digest(&self) -> &str {
        &self.digest
    }

    pub(crate) fn how(&self) -> How {
        self.how
    }

    /// Whether this token was made for `plan` as it is now.
    pub(crate) fn is_for(&self, plan: &Plan) -> bool {
        self.digest == plan.content_id()
    }
}
