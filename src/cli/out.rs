//! Everything the CLI prints to stdout goes through here.
//!
//! A reader that stops early (`smolsweep scan | head -1`) closes the pipe; the next write fails
//! with `BrokenPipe`. Like `ls`, the process then ends quietly with exit code 0 instead of
//! panicking (Rust's `println!` panics, exit 101). Any other write error ends it with code 1
//! and one line on stderr.

use std::io::{ErrorKind, Write};

/// Write `s` verbatim to stdout (and flush).
pub fn print(s: &str) {
    write_all(s.as_bytes());
}

/// Write `s` and a newline to stdout (and flush).
pub fn println(s: &str) {
    let mut buf = String::with_capacity(s.len() + 1);
    buf.push_str(s);
    buf.push('\n');
    write_all(buf.as_bytes());
}

/// Write `bytes` to stdout; on a broken pipe end the process with code 0.
pub fn write_all(bytes: &[u8]) {
    let mut out = std::io::stdout().lock();
    let r = out.write_all(bytes).and_then(|()| out.flush());
    if let Err(e) = r {
        gone(&e);
    }
}

/// Write `v` as JSON to stdout: the one style of every `--json` (pretty, two-space indent,
/// then a newline).
pub fn json<T: serde::Serialize + ?Sized>(v: &T) {
    match serde_json::to_string_pretty(v) {
        Ok(s) => println(&s),
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "smolsweep: cannot write JSON: {e}");
            std::process::exit(1);
        }
    }
}

/// End the process for a failed stdout write: quietly with 0 when the reader went away.
fn gone(e: &std::io::Error) -> ! {
    if e.kind() == ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    // stderr may be gone too; nothing more to do about it.
    let _ = writeln!(std::io::stderr(), "smolsweep: cannot write to stdout: {e}");
    std::process::exit(1);
}

/// `println!`-like formatting through [`println`].
#[macro_export]
macro_rules! outln {
    () => { $crate::cli::out::println("") };
    ($($arg:tt)*) => { $crate::cli::out::println(&format!($($arg)*)) };
}
