//! Desktop notifications: the session's notification server through notify-rust, or on macOS
//! Apple's UserNotifications framework (`notes_macos`).

#[cfg(not(target_os = "macos"))]
use crate::notes::{picks_review, review_label, REVIEW_ACTION};
use crate::notes::{Note, Notifier};

/// Desktop notifications: the session's notification server through notify-rust, or on macOS
/// Apple's UserNotifications framework (`notes_macos`).
#[derive(Debug, Default)]
pub struct DesktopNotifier;

impl Notifier for DesktopNotifier {
    fn notify(&self, note: &Note, on_review: Box<dyn FnOnce() + Send>) -> anyhow::Result<()> {
        #[cfg(target_os = "macos")]
        {
            crate::notes_macos::show(note, on_review)
        }
        #[cfg(not(target_os = "macos"))]
        {
            show_notify_rust(note, on_review)
        }
    }
}

#[cfg(not(target_os = "macos"))]
fn show_notify_rust(note: &Note, on_review: Box<dyn FnOnce() + Send>) -> anyhow::Result<()> {
    let mut n = notify_rust::Notification::new();
    n.appname("Smolsweep")
        .summary(&note.summary)
        .body(&note.body)
        .icon("smolsweep-desktop");
    #[cfg(unix)]
    {
        if note.review {
            let label = review_label(note);
            n.action("default", label).action(REVIEW_ACTION, label);
        }
        let handle = n.show()?;
        if note.review {
            // Waits for the user's answer or the notification closing, off the async runtime.
            std::thread::spawn(move || {
                handle.wait_for_action(|a| {
                    if picks_review(a) {
                        on_review();
                    }
                })
            });
        }
    }
    #[cfg(not(unix))]
    {
        let _ = on_review;
        n.show()?;
    }
    Ok(())
}
