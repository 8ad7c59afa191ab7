//! What the desktop app says before it has a window (issue 39, item 2): its `--help`, which is
//! printed without a display, and the one line it ends with when started with no graphical
//! session (exit 1), instead of the GUI toolkit's panic. The shell only prints these.

/// How the app is started, what it needs, and where else to go: `smolsweep-desktop --help`.
pub fn desktop_help(version: &str) -> String {
    format!(
        "smolsweep-desktop {version}: Smolsweep's tray app. It watches what Celesto SmolVM and \
smol-machines smolvm leave behind, shows what can be reclaimed and which VMs still run, \
notifies when new orphans appear, and reclaims in one confirmed click.

Usage: smolsweep-desktop [--show]

Options:
  --show         Open the window at start (the app otherwise starts in the tray)
  -h, --help     Print this help
  -V, --version  Print the version

It needs a graphical session (DISPLAY or WAYLAND_DISPLAY) with a session bus for its tray icon
and notifications; a second start opens the running app's window. Start at login: the window's
Settings, \"Start Smolsweep at login\". Without a graphical session, the command line does the
same on one screen: `smolsweep scan`, `smolsweep browse`.
"
    )
}

/// What the app does with its arguments before it starts the GUI toolkit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Launch {
    /// Print this on stdout and exit 0 (`--help`, `--version`).
    Print(String),
    /// Print this one line on stderr and exit with the code: no graphical session, or an
    /// argument it does not know.
    Refuse(String, i32),
    /// Start the app.
    Start,
}

/// What `args` (after the program name) ask of the app, where `var` reads the environment and
/// `needs_display` says whether the platform's toolkit needs an X11 or Wayland display (Linux).
pub fn launch(
    args: &[String],
    var: impl Fn(&str) -> Option<String>,
    needs_display: bool,
    version: &str,
) -> Launch {
    for a in args {
        match a.as_str() {
            "-h" | "--help" => return Launch::Print(desktop_help(version)),
            "-V" | "--version" => return Launch::Print(format!("smolsweep-desktop {version}\n")),
            "--show" => {}
            // The autostart entry and a second instance pass their own flags; they are the
            // app's to ignore, not a reason to refuse.
            other if other.starts_with("--") => {}
            other => {
                return Launch::Refuse(
                    format!(
                        "smolsweep-desktop: unexpected argument '{other}' (`smolsweep-desktop --help` lists the options)"
                    ),
                    2,
                )
            }
        }
    }
    let set = |k: &str| var(k).is_some_and(|v| !v.is_empty());
    if needs_display && !set("DISPLAY") && !set("WAYLAND_DISPLAY") {
        return Launch::Refuse(NO_DISPLAY.to_string(), 1);
    }
    Launch::Start
}

/// The one line of a start without a graphical session.
pub const NO_DISPLAY: &str = "smolsweep-desktop: no graphical session (neither DISPLAY nor \
WAYLAND_DISPLAY is set), so the tray app cannot start; run it in a desktop session, or use \
`smolsweep scan` here";

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn help_needs_no_display_and_no_display_is_one_line() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(matches!(
            launch(&args(&["--help"]), env(&[]), true, "1.0"),
            Launch::Print(h) if h.contains("Usage: smolsweep-desktop")
        ));
        assert_eq!(
            launch(&args(&[]), env(&[]), true, "1.0"),
            Launch::Refuse(NO_DISPLAY.into(), 1)
        );
        assert_eq!(
            launch(&args(&[]), env(&[("DISPLAY", "")]), true, "1.0"),
            Launch::Refuse(NO_DISPLAY.into(), 1),
            "an empty DISPLAY is none"
        );
        assert!(!NO_DISPLAY.contains('\n'));
        assert_eq!(
            launch(
                &args(&["--show"]),
                env(&[("WAYLAND_DISPLAY", "wayland-0")]),
                true,
                "1"
            ),
            Launch::Start
        );
        assert_eq!(
            launch(&args(&[]), env(&[]), false, "1"),
            Launch::Start,
            "macOS"
        );
        assert!(matches!(
            launch(&args(&["stray"]), env(&[("DISPLAY", ":0")]), true, "1"),
            Launch::Refuse(_, 2)
        ));
    }
}
