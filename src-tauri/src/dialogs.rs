//! Native dialogs: tell, or ask yes/no (the configured answer in tests).

use tauri::{AppHandle, Manager, Runtime};

use crate::state::*;

/// Tell the user something with a native dialog (logged in tests).
pub(crate) fn tell<R: Runtime>(app: &AppHandle<R>, title: &str, msg: &str) {
    use tauri_plugin_dialog::{DialogExt, MessageDialogButtons, MessageDialogKind};
    if app.try_state::<tauri_plugin_dialog::Dialog<R>>().is_some() {
        app.dialog()
            .message(msg)
            .title(title)
            .kind(MessageDialogKind::Info)
            .buttons(MessageDialogButtons::Ok)
            .show(|_| {});
    } else {
        tracing::info!("{title}: {msg}");
    }
}

/// Ask a yes/no question with a native dialog (or the configured answer in tests). The action's
/// button comes first and Cancel second (GTK lays them out in the order given), the order of
/// the window's confirmation too.
pub(crate) fn confirm<R: Runtime>(
    app: &AppHandle<R>,
    title: &str,
    msg: &str,
    ok: &str,
    f: impl FnOnce(bool) + Send + 'static,
) {
    use tauri_plugin_dialog::{DialogExt, MessageDialogButtons, MessageDialogKind};
    if app.try_state::<tauri_plugin_dialog::Dialog<R>>().is_some() {
        app.dialog()
            .message(msg)
            .title(title)
            .kind(MessageDialogKind::Warning)
            .buttons(MessageDialogButtons::OkCancelCustom(
                ok.to_string(),
                smolsweep::view::words::Word::Cancel.text().to_string(),
            ))
            .show(f);
    } else {
        f(app.state::<AppState>().confirm_answer)
    }
}
