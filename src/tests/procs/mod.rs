//! Process scanning against real processes shaped like the VMMs of both products.
//!
//! Stand-in VMMs are `examples/fake_vmm.rs` (compiled by the fixtures crate) started with a chosen
//! argv[0], argv and comm; `tail`, `bash` and `python3` are used where the real shape needs a
//! real program. Every process is killed by its own PID when its guard drops. One file per job:
//! which processes are VMs and of whom ([`vms`]), which files a process uses ([`in_use`]),
//! reading the table ([`table`]), and the table read by identity with the kernel's answers
//! ([`identity`]).

mod identity;
mod in_use;
mod table;
mod vms;

use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::procs::macos::{parse_ps_output, ps_command};
use crate::procs::shape::{detect_all, detect_shape, InUseIndex, VmmShape};
use crate::procs::{held_deleted_bytes, linux, names_path_exactly, RawProcess};
use smolsweep_fixtures::vmm::{self, spawn_ready, FakeVmm};

/// The compiled stand-in VMM, built once per test binary.
fn fake_vmm() -> PathBuf {
    vmm::standin_bin(super::scratch_dir())
}

/// The stand-in VMM with this argv (argv[0] included) and, optionally, a comm and a held file.
fn fake(argv: &[&str], comm: Option<&str>, open: Option<&Path>) -> FakeVmm {
    let mut cmd = Command::new(fake_vmm());
    cmd.arg0(argv[0]).args(&argv[1..]);
    if let Some(c) = comm {
        cmd.env("FAKE_VMM_COMM", c);
    }
    if let Some(o) = open {
        cmd.env("FAKE_VMM_OPEN", o);
    }
    spawn_ready(cmd)
}

fn read(pid: u32) -> RawProcess {
    linux::list_processes()
        .into_iter()
        .find(|p| p.pid == pid)
        .unwrap_or_else(|| panic!("pid {pid} not listed"))
}

fn scratch() -> tempfile::TempDir {
    tempfile::tempdir().expect("tempdir")
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 scratch path")
}

/// Field 22 of `/proc/<pid>/stat`, read independently of the code under test.
fn stat_field_22(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    after.split(' ').nth(22 - 3).unwrap().parse().unwrap()
}

/// A Python process that runs `code` with the scratch path `P` (bytes) in its environment and
/// prints `ready` once it has done what `code` does.
fn python_with(code: &str, path: &Path, cwd: Option<&Path>) -> FakeVmm {
    let mut cmd = Command::new("python3");
    cmd.args([
        "-c",
        &format!("import os, sys, mmap\n{code}\nprint('ready', flush=True)\nsys.stdin.read()\n"),
    ])
    .env("P", path);
    if let Some(d) = cwd {
        cmd.current_dir(d);
    }
    spawn_ready(cmd)
}

/// The one "in use" rule over the whole process table, as the scan asks it.
fn in_use(path: &Path) -> Vec<u32> {
    let devino = std::fs::metadata(path).ok().map(|m| {
        use std::os::unix::fs::MetadataExt;
        (m.dev(), m.ino())
    });
    crate::scan::ProcIndex::build(linux::list_processes(), 0).in_use(path, devino)
}
