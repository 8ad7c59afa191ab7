//! Notifications: delivery (the words and which orphans are new are the core's,
//! `smolsweep::view::notes`), the review action, and the clock they are spaced by.

pub use smolsweep::view::notes::{
    auto_note, reclaim_note, vm_note, Note, OrphanWatch, MIN_GAP_SECS,
};

/// Shows notifications. The real one is [`DesktopNotifier`]; tests record them.
pub trait Notifier: Send + Sync + 'static {
    /// Show `note`; call `on_review` if the user picks "Review".
    fn notify(&self, note: &Note, on_review: Box<dyn FnOnce() + Send>) -> anyhow::Result<()>;
}

/// The label of `note`'s review action.
pub(crate) fn review_label(note: &Note) -> &str {
    note.action.as_deref().unwrap_or("Review")
}

/// The identifier of the review action (notify-rust's and UserNotifications' alike).
pub(crate) const REVIEW_ACTION: &str = "review";

/// Whether the action the user picked opens the review: the review button, or the
/// notification itself (notify-rust's `default`; UserNotifications' default action, whose
/// identifier Apple documents as `com.apple.UNNotificationDefaultActionIdentifier`).
pub(crate) fn picks_review(action: &str) -> bool {
    matches!(
        action,
        REVIEW_ACTION | "default" | "com.apple.UNNotificationDefaultActionIdentifier"
    )
}

/// The UserNotifications category of a review labelled `label`: one category per label, since
/// a category fixes its actions' titles.
#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
pub(crate) fn review_category(label: &str) -> String {
    format!("smolsweep.review.{label}")
}

/// The time the notifications are spaced by: the system's, or a test's.
pub trait Clock: Send + Sync + 'static {
    /// Seconds since the Unix epoch.
    fn now(&self) -> u64;
    /// Resolves once `now() >= t`.
    fn sleep_until(
        &self,
        t: u64,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + 'static>>;
}

/// The system clock (a tokio timer for the wait).
#[derive(Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0)
    }
    fn sleep_until(
        &self,
        t: u64,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + 'static>> {
        let secs = t.saturating_sub(self.now());
        Box::pin(tokio::time::sleep(std::time::Duration::from_secs(secs)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_review_is_picked_by_its_button_or_the_notification_itself() {
        // notify-rust reports the button's id or `default`; UserNotifications reports the
        // button's id or its default action's documented identifier.
        assert!(picks_review("review"));
        assert!(picks_review("default"));
        assert!(picks_review(
            "com.apple.UNNotificationDefaultActionIdentifier"
        ));
        assert!(!picks_review(
            "com.apple.UNNotificationDismissActionIdentifier"
        ));
        assert!(!picks_review("__closed"));
    }

    #[test]
    fn each_review_label_has_its_own_category() {
        let note = |action: Option<&str>| Note {
            summary: "s".into(),
            body: "b".into(),
            review: true,
            action: action.map(String::from),
        };
        assert_eq!(review_label(&note(None)), "Review");
        assert_eq!(
            review_label(&note(Some("Reclaim 3.2 GB"))),
            "Reclaim 3.2 GB"
        );
        assert_eq!(review_category("Review"), "smolsweep.review.Review");
        assert_ne!(review_category("Reclaim 3.2 GB"), review_category("Review"));
    }
}
