//! macOS notifications through Apple's UserNotifications framework (objc2 bindings): a
//! notification with a review action, whose answer reaches a delegate that runs the review.
//!
//! Glue only: which action opens the review and the category of each label are plain
//! functions in `notes` (tested everywhere). UserNotifications needs the app bundle (a bundle
//! identifier): outside one (a bare `cargo run`) nothing is shown and an error is returned.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, Once};

use block2::RcBlock;
use objc2::rc::Retained;
use objc2::runtime::{Bool, ProtocolObject};
use objc2::{define_class, msg_send, AllocAnyThread};
use objc2_foundation::{NSArray, NSBundle, NSError, NSObject, NSObjectProtocol, NSSet, NSString};
use objc2_user_notifications::{
    UNAuthorizationOptions, UNMutableNotificationContent, UNNotification, UNNotificationAction,
    UNNotificationActionOptions, UNNotificationCategory, UNNotificationCategoryOptions,
    UNNotificationPresentationOptions, UNNotificationRequest, UNNotificationResponse,
    UNUserNotificationCenter, UNUserNotificationCenterDelegate,
};

use crate::notes::{picks_review, review_category, review_label, Note, REVIEW_ACTION};
use smolsweep::lock;

type OnReview = Box<dyn FnOnce() + Send>;

/// Reviews waiting for an answer, by notification request identifier.
static PENDING: Mutex<BTreeMap<String, OnReview>> = Mutex::new(BTreeMap::new());
/// The labels whose categories are registered (registering replaces the whole set).
static LABELS: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
static NEXT_ID: AtomicU64 = AtomicU64::new(0);
static SETUP: Once = Once::new();

define_class!(
    // SAFETY: NSObject has no subclassing requirements; the class has no ivars and no Drop.
    #[unsafe(super(NSObject))]
    #[name = "SmolsweepNotificationDelegate"]
    struct Delegate;

    unsafe impl NSObjectProtocol for Delegate {}

    unsafe impl UNUserNotificationCenterDelegate for Delegate {
        /// Shown also while the app is active (a menu-bar app always is).
        #[unsafe(method(userNotificationCenter:willPresentNotification:withCompletionHandler:))]
        fn will_present(
            &self,
            _center: &UNUserNotificationCenter,
            _notification: &UNNotification,
            completion: &block2::DynBlock<dyn Fn(UNNotificationPresentationOptions)>,
        ) {
            completion
                .call((UNNotificationPresentationOptions::Banner
                    | UNNotificationPresentationOptions::List,));
        }

        #[unsafe(method(userNotificationCenter:didReceiveNotificationResponse:withCompletionHandler:))]
        fn did_receive(
            &self,
            _center: &UNUserNotificationCenter,
            response: &UNNotificationResponse,
            completion: &block2::DynBlock<dyn Fn()>,
        ) {
            let id = response.notification().request().identifier().to_string();
            let on_review = lock(&PENDING).remove(&id);
            if let Some(f) = on_review {
                if picks_review(&response.actionIdentifier().to_string()) {
                    f();
                }
            }
            completion.call(());
        }
    }
);

impl Delegate {
    fn new() -> Retained<Self> {
        let this = Self::alloc().set_ivars(());
        // SAFETY: NSObject's designated initialiser.
        unsafe { msg_send![super(this), init] }
    }
}

/// Once per process: the delegate (kept for the process's life: the centre holds it weakly)
/// and the request for permission to show alerts.
fn setup(center: &UNUserNotificationCenter) {
    SETUP.call_once(|| {
        let delegate = Delegate::new();
        center.setDelegate(Some(ProtocolObject::from_ref(&*delegate)));
        std::mem::forget(delegate);
        let answered = RcBlock::new(|granted: Bool, _err: *mut NSError| {
            if !granted.as_bool() {
                tracing::warn!("notifications: not allowed in System Settings");
            }
        });
        center.requestAuthorizationWithOptions_completionHandler(
            UNAuthorizationOptions::Alert | UNAuthorizationOptions::Sound,
            &answered,
        );
    });
}

/// Register one category per review label seen (each fixes its button's title).
fn register_label(center: &UNUserNotificationCenter, label: &str) {
    let mut labels = lock(&LABELS);
    if !labels.insert(label.to_string()) {
        return;
    }
    let categories: Vec<Retained<UNNotificationCategory>> = labels
        .iter()
        .map(|l| {
            let action = UNNotificationAction::actionWithIdentifier_title_options(
                &NSString::from_str(REVIEW_ACTION),
                &NSString::from_str(l),
                UNNotificationActionOptions::Foreground,
            );
            UNNotificationCategory::categoryWithIdentifier_actions_intentIdentifiers_options(
                &NSString::from_str(&review_category(l)),
                &NSArray::from_retained_slice(&[action]),
                &NSArray::new(),
                UNNotificationCategoryOptions::empty(),
            )
        })
        .collect();
    center.setNotificationCategories(&NSSet::from_retained_slice(&categories));
}

/// Show `note`; `on_review` runs (on the delegate's thread) if the user picks its review.
pub(crate) fn show(note: &Note, on_review: OnReview) -> anyhow::Result<()> {
    if NSBundle::mainBundle().bundleIdentifier().is_none() {
        anyhow::bail!("notifications need the app bundle (no bundle identifier)");
    }
    let center = UNUserNotificationCenter::currentNotificationCenter();
    setup(&center);
    let content = UNMutableNotificationContent::new();
    content.setTitle(&NSString::from_str(&note.summary));
    content.setBody(&NSString::from_str(&note.body));
    let id = format!(
        "smolsweep.{}.{}",
        std::process::id(),
        NEXT_ID.fetch_add(1, Ordering::Relaxed)
    );
    if note.review {
        let label = review_label(note);
        register_label(&center, label);
        content.setCategoryIdentifier(&NSString::from_str(&review_category(label)));
        lock(&PENDING).insert(id.clone(), on_review);
    }
    let request = UNNotificationRequest::requestWithIdentifier_content_trigger(
        &NSString::from_str(&id),
        &content,
        None,
    );
    let added = RcBlock::new(move |err: *mut NSError| {
        if !err.is_null() {
            tracing::warn!("notifications: the request was refused");
        }
    });
    center.addNotificationRequest_withCompletionHandler(&request, Some(&added));
    Ok(())
}
