//! The process table where there is no `/proc`: `ps` on macOS ([`super::macos`]), nothing
//! elsewhere. The few functions of `super::linux` the rest of the crate calls, as stand-ins.

use std::path::Path;

use super::RawProcess;

/// Every process of this machine (macOS: `ps` plus `lsof +L1`).
pub(crate) fn list_processes() -> Vec<RawProcess> {
    if cfg!(target_os = "macos") {
        super::macos::list_processes()
    } else {
        Vec::new()
    }
}

/// The same as [`list_processes`]: `ps` is one read.
pub(crate) fn list_identities() -> Vec<RawProcess> {
    list_processes()
}

/// Who holds `path` open: only Linux's leases tell, so "cannot tell" here (the whole table is
/// read).
pub(crate) fn holders(
    _path: &Path,
    _devino: Option<(u64, u64)>,
    _budget: &mut usize,
) -> super::Holders {
    super::Holders::CannotTell
}

/// Whether another open description than `fd`'s exists: only Linux's leases tell.
pub(crate) fn holders_of_open(_fd: std::os::fd::BorrowedFd<'_>) -> super::Holders {
    super::Holders::CannotTell
}

/// The whole table: `ps` tells no descriptors one by one.
pub(crate) fn holdings(_identities: &[RawProcess]) -> super::Holdings {
    super::Holdings {
        whole: list_processes(),
        ..Default::default()
    }
}

/// Nothing is listed by identity here ([`holdings`]).
pub(crate) fn held_names(held: &[super::HeldRef]) -> Vec<Option<std::path::PathBuf>> {
    vec![None; held.len()]
}

/// Only Linux's leases tell: nothing is known here.
pub(crate) fn held_below(
    _path: &Path,
    _devino: Option<(u64, u64)>,
    _budget: &mut usize,
) -> super::HeldBelow {
    super::HeldBelow::default()
}

/// Not told by device here.
pub(crate) fn devices_below(_path: &Path) -> Option<Vec<u64>> {
    None
}

/// The unlinked files `pid` holds open: not measured without `/proc`.
pub(crate) fn deleted_open_files(_pid: u32) -> Vec<((u64, u64), u64)> {
    Vec::new()
}

/// A start time read here is already in seconds since the epoch ([`RawProcess::start_time`]).
pub(crate) fn start_time_epoch_secs(start_time: u64) -> Option<u64> {
    Some(start_time)
}

/// No memo of the table without `/proc`: every read is a whole one.
#[derive(Debug, Default)]
pub(crate) struct TableMemo;

impl TableMemo {
    /// The whole table (`proc_root` and `whole` have no meaning here).
    pub(crate) fn list(&mut self, _proc_root: &Path, _whole: bool) -> Vec<RawProcess> {
        list_processes()
    }

    /// Processes taken from the memo: none.
    pub(crate) fn kept(&self) -> usize {
        0
    }
}
