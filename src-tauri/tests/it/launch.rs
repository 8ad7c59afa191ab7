//! Issue 39, item 2: the app says what it is and what it needs before it has a window.
//! `smolsweep-desktop --help` prints its help without a display; started with no graphical
//! session it exits 1 with one clear line, not a GTK panic (exit 101). No display is needed.

use std::process::{Command, Stdio};

fn desktop(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_smolsweep-desktop"))
        .args(args)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", std::env::temp_dir())
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// Hazard: `smolsweep-desktop --help` started GTK (and panicked without a display).
#[test]
fn desktop_help_prints_without_a_display() {
    let o = desktop(&["--help"]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let out = String::from_utf8(o.stdout).unwrap();
    assert_eq!(
        out,
        smolsweep::view::launch::desktop_help(env!("CARGO_PKG_VERSION"))
    );
    assert!(out.contains("Usage: smolsweep-desktop"), "{out}");
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v = desktop(&["--version"]);
    assert_eq!(v.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&v.stdout).starts_with("smolsweep-desktop "));
}

/// Hazard: started with no display, the app died in GTK's panic (exit 101, a backtrace hint).
#[test]
#[cfg(target_os = "linux")]
fn started_with_no_display_it_exits_1_with_one_clear_line() {
    for args in [&[][..], &["--show"]] {
        let o = desktop(args);
        assert_eq!(o.status.code(), Some(1), "{o:?}");
        let err = String::from_utf8(o.stderr).unwrap();
        assert_eq!(err, format!("{}\n", smolsweep::view::launch::NO_DISPLAY));
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(o.stdout.is_empty());
    }
}

/// Hazard (issue 39, item 4): the tray's native confirmation put its action first and Cancel
/// second (GTK lays out `OkCancelCustom(ok, cancel)` in that order) while the window's put
/// Cancel first. Both put the action first, then Cancel (the core's word), and the window's
/// focus still starts on Cancel.
#[test]
fn native_and_window_dialogs_put_their_buttons_in_one_order() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let html = std::fs::read_to_string(root.join("../ui/index.html")).unwrap();
    let dialog = &html[html.find("<dialog id=\"confirm-dialog\"").unwrap()..];
    let dialog = &dialog[..dialog.find("</dialog>").unwrap()];
    let go = dialog
        .find("id=\"confirm-go\"")
        .expect("the action's button");
    let cancel = dialog.find("id=\"confirm-cancel\"").expect("Cancel");
    assert!(go < cancel, "the window's action comes first:\n{dialog}");
    let native = std::fs::read_to_string(root.join("src/dialogs.rs")).unwrap();
    let call = &native[native.find("OkCancelCustom(").unwrap()..];
    let call = &call[..call.find("))").unwrap()];
    let (ok, cancel) = (
        call.find("ok.to_string()").unwrap(),
        call.find("Word::Cancel").unwrap(),
    );
    assert!(
        ok < cancel,
        "the native dialog's action comes first: {call}"
    );
    let js = std::fs::read_to_string(root.join("../ui/app.js")).unwrap();
    assert!(
        js.contains("$(\"#confirm-cancel\").focus()"),
        "the safe choice has the focus"
    );
}
