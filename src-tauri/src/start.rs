//! Before the GUI toolkit starts (issue 39, item 2): `--help` and `--version` print without a
//! display, and a start with no graphical session ends with the core's one line and exit 1
//! instead of the toolkit's panic. The words are the core's (`smolsweep::view::launch`).

use smolsweep::view::launch::{launch, Launch};

/// Answer what the arguments ask that needs no window; return only when the app should start.
pub(crate) fn before_gui() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let env = |k: &str| std::env::var(k).ok();
    match launch(
        &args,
        env,
        cfg!(target_os = "linux"),
        env!("CARGO_PKG_VERSION"),
    ) {
        Launch::Start => {}
        Launch::Print(text) => {
            print!("{text}");
            std::process::exit(0);
        }
        Launch::Refuse(line, code) => {
            eprintln!("{line}");
            std::process::exit(code);
        }
    }
}
