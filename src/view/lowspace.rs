//! Low-space alerts: when the file system holding SmolVM state runs low and something can be
//! given back (reclaimable files, or an orphaned VM holding deleted-but-open space), one
//! notification with a "Reclaim N" action; rate-limited; re-armed once space recovers.
//!
//! [`LowSpaceWatch::observe`] is the pure decision (statvfs numbers in, an alert or nothing
//! out); [`crate::space_of`] reads the numbers.

use std::path::PathBuf;

use crate::model::ScanReport;
use serde::{Deserialize, Serialize};

/// Free space is low below this share of the file system...
pub const LOW_PERCENT: u64 = 10;
/// ...or below this many bytes, whichever is smaller (a huge disk is not "low" with 100 GB
/// free; a small one is not always low).
pub const LOW_BYTES: u64 = 10_000_000_000;
/// At most one alert in this many seconds, even after space recovered and fell again.
pub const MIN_GAP_SECS: u64 = 3_600;

pub use crate::size::Space;

impl Space {
    /// The free space below which it is low.
    pub fn limit(&self) -> u64 {
        (self.total / 100 * LOW_PERCENT).min(LOW_BYTES)
    }
    /// Whether the free space is below the limit.
    pub fn is_low(&self) -> bool {
        self.avail < self.limit()
    }
}

/// What a low-space alert offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alert {
    /// The file system's numbers.
    pub space: Space,
    /// A directory of SmolVM state on it.
    pub path: PathBuf,
    /// What the tray's "Reclaim" frees: the planner's estimate its confirmation shows
    /// (`TrayModel::reclaim_bytes`), not a second sum of the findings.
    pub reclaimable: u64,
    /// Deleted-but-open bytes held by orphaned VMs of this HOME (freed by ending them).
    pub held_deleted: u64,
    /// How SmolVM's space grew, in the core's words (`crate::view::trend_growth`).
    pub growth: Option<String>,
}

impl Alert {
    /// The notification, with a "Reclaim N" action when the tray's reclaim frees something.
    pub fn note(&self) -> crate::view::notes::Note {
        let b = crate::view::bytes;
        let mut body = format!(
            "{} holding SmolVM state has {} free of {}.",
            self.path.display(),
            b(self.space.avail),
            b(self.space.total)
        );
        if self.held_deleted > 0 {
            body.push_str(&format!(
                " Orphaned VMs hold {} of deleted files (ending them frees it).",
                b(self.held_deleted)
            ));
        }
        if let Some(g) = &self.growth {
            body.push_str(&format!(" {g}."));
        }
        crate::view::notes::Note {
            summary: format!("Low disk space: {} free", b(self.space.avail)),
            body,
            review: true,
            // The action is the tray's reclaim, which ends no VM: offered only when it frees
            // something, with the number its confirmation will show.
            action: (self.reclaimable > 0).then(|| format!("Reclaim {}", b(self.reclaimable))),
        }
    }
}

/// Remembers whether the current low-space episode was announced.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LowSpaceWatch {
    /// An alert went out and space has not recovered since.
    pub alerted: bool,
    /// When the last alert went out (seconds since the epoch).
    pub last_sent: Option<u64>,
}

impl LowSpaceWatch {
    /// The decision for one look at the space (at `now`, seconds).
    pub fn observe(
        &mut self,
        space: Space,
        reclaimable: u64,
        held_deleted: u64,
        now: u64,
    ) -> Option<(u64, u64)> {
        if !space.is_low() {
            self.alerted = false;
            return None;
        }
        if self.alerted || reclaimable + held_deleted == 0 {
            return None;
        }
        if self
            .last_sent
            .is_some_and(|t| now.saturating_sub(t) < MIN_GAP_SECS)
        {
            return None;
        }
        self.alerted = true;
        self.last_sent = Some(now);
        Some((reclaimable, held_deleted))
    }

    /// Decide on the fullest file system holding `report`'s SmolVM state, `fs` ([`crate::space_of`]
    /// read it); `reclaimable` is what the tray's "Reclaim" would free, `growth` how the space
    /// history says SmolVM grew.
    pub fn check(
        &mut self,
        fs: Option<(PathBuf, Space)>,
        report: &ScanReport,
        reclaimable: u64,
        growth: Option<String>,
        now: u64,
    ) -> Option<Alert> {
        let (path, space) = fs?;
        let held: u64 = report
            .processes
            .iter()
            .filter(|p| p.is_this_homes_orphan())
            .map(|p| p.held_deleted_bytes)
            .sum();
        let (reclaimable, held_deleted) = self.observe(space, reclaimable, held, now)?;
        Some(Alert {
            space,
            path,
            reclaimable,
            held_deleted,
            growth,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GB: u64 = 1_000_000_000;

    #[test]
    fn low_is_below_ten_percent_or_ten_gigabytes_whichever_is_smaller() {
        let s = |avail, total| Space { avail, total };
        assert!(s(5 * GB, 100 * GB).is_low());
        assert!(!s(11 * GB, 100 * GB).is_low());
        assert!(!s(50 * GB, 1000 * GB).is_low(), "10 GB cap on a big disk");
        assert!(s(9 * GB, 1000 * GB).is_low());
        assert!(s(1_000_000, 20_000_000).is_low());
        assert!(!s(3_000_000, 20_000_000).is_low());
    }

    #[test]
    fn the_alert_names_the_growth_the_space_history_saw() {
        let mut a = Alert {
            space: Space {
                avail: GB,
                total: 100 * GB,
            },
            path: "/var".into(),
            reclaimable: 5,
            held_deleted: 0,
            growth: Some("SmolVM grew by 6.0 GB in the last week".into()),
        };
        assert!(
            a.note()
                .body
                .ends_with(" SmolVM grew by 6.0 GB in the last week."),
            "{}",
            a.note().body
        );
        a.growth = None;
        assert!(!a.note().body.contains("grew"));
    }

    #[test]
    fn one_alert_per_episode_rearmed_on_recovery_and_rate_limited() {
        let low = Space {
            avail: GB,
            total: 100 * GB,
        };
        let ok = Space {
            avail: 50 * GB,
            total: 100 * GB,
        };
        let mut w = LowSpaceWatch::default();
        assert_eq!(w.observe(low, 0, 0, 0), None, "nothing to give back");
        assert_eq!(w.observe(low, 5, 1, 10), Some((5, 1)));
        assert_eq!(w.observe(low, 5, 1, 20_000), None, "same episode");
        assert_eq!(w.observe(ok, 5, 1, 20_100), None);
        assert_eq!(w.observe(low, 5, 0, 20_200), Some((5, 0)), "fell again");
        assert_eq!(w.observe(ok, 5, 0, 20_300), None);
        assert_eq!(w.observe(low, 5, 0, 20_400), None, "within the gap");
        assert_eq!(
            w.observe(low, 5, 0, 20_200 + MIN_GAP_SECS),
            Some((5, 0)),
            "after the gap"
        );
    }
}
