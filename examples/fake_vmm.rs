//! A stand-in VMM process for the process-scanner tests (std only, no arguments parsed).
//!
//! It ignores its argv entirely, so a test can give it any command line (`/proc/self/exe
//! _boot-vm …`, `qemu-system-x86_64 -drive …`, `firecracker --api-sock …`) through `arg0` and
//! `args`. Behaviour comes from the environment:
//! * `FAKE_VMM_COMM`: written to `/proc/self/comm` (what libkrun's `PR_SET_NAME` does);
//! * `FAKE_VMM_OPEN`: a file to open and keep open.
//!
//! It then prints `ready` and waits until its stdin closes (or it is killed).

use std::io::{Read, Write};

fn main() {
    if let Ok(comm) = std::env::var("FAKE_VMM_COMM") {
        std::fs::write("/proc/self/comm", comm.as_bytes()).expect("set comm");
    }
    let _held = std::env::var_os("FAKE_VMM_OPEN").map(|p| std::fs::File::open(p).expect("open"));
    let mut out = std::io::stdout();
    out.write_all(b"ready\n").expect("stdout");
    out.flush().expect("stdout");
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
}
