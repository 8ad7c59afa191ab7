//! Every integration test of the desktop crate, in one binary: one link instead of one per file.
//! A file's tests are named `<file>::…`: `cargo test -p smolsweep-desktop --test it mock::` runs
//! `mock.rs`. The `#[ignore]`d ones (`display`, `webdriver`, `wizard_window`, `window_look`,
//! `real_scan`, `real_vm_window`) need a display server (and `real_vm_window` a real QEMU VM):
//! `scripts/desktop-tests.sh` runs them.
//!
//! All of them share one process and run in parallel with each other, so a test changes nothing
//! process-wide that another could observe, and signals and waits only for processes it started.

mod common;

#[cfg(target_os = "linux")]
mod busy;
mod display;
mod launch;
mod mock;
mod real_scan;
mod shell_words;
// A real QEMU VM watched through `/proc`: Linux only.
#[cfg(target_os = "linux")]
mod real_vm_window;
mod ui;
mod webdriver;
mod window_look;
mod wizard;
mod wizard_window;
