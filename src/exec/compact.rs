//! Compacting one disk image ([`Action::CompactDisk`]): releasing the blocks its guest's ext4
//! calls free, with the well-kept tools of the field, re-judged at the moment of action.
//!
//! * Judged ([`judge`]): the same file as planned (device, inode, size, mtime); still the disk
//!   of a machine or sandbox its product records as stopped, with no VM alive and no process
//!   using it, or a saved disk (the fresh scan estimates it: see `compact::survey`); not kept by
//!   a keep rule; not the backing file of any disk the scan knows. The caller adds the one
//!   "in use" rule of the executor (no process holds, maps or names it).
//! * A smolvm machine's disk is compacted holding the machine's `vm.lock` (smolvm takes it before
//!   it starts the VM), so a start meanwhile is refused; one it holds is not compacted.
//! * Raw ext4 ([`run`]): `e2fsck -fn` clean first, then `e2fsck -fp -E discard` on the image
//!   file (e2fsprogs punches a hole, `fallocate(PUNCH_HOLE)`, for every free block range), then
//!   `e2fsck -fn` clean again.
//! * qcow2: the runs of whole clusters this file maps that the guest's file system calls free
//!   are computed read-only (the estimate's own reading) and discarded through QEMU's own qcow2
//!   driver, `qemu-io -d unmap -c 'discard OFF LEN'` (which takes QEMU's image lock, so an image
//!   a QEMU has open is refused): no FUSE needed, so it works the same on macOS, and only
//!   clusters the guest calls free are touched; `qemu-img check` clean before and after. The
//!   file system check before is the estimate's (clean, no errors, no journal to recover,
//!   bitmaps and superblock agreeing); `e2fsck` cannot open a qcow2 without an export.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::compact::Format;
use crate::model::{FileIdentity, Product, ScanReport};
use crate::record::Outcome;

/// Why a disk may not be compacted now, judged on a fresh scan.
pub(super) fn judge(
    report: &ScanReport,
    keep_overrides: &[String],
    (product, path, identity): (Product, &Path, &FileIdentity),
) -> Result<(), String> {
    let shown = crate::pathser::shown(path);
    let m = std::fs::symlink_metadata(path)
        .map_err(|e| format!("{shown} cannot be read now ({e}); not compacted"))?;
    let now = (
        m.dev(),
        m.ino(),
        m.size(),
        m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128,
    );
    let planned = (identity.dev, identity.ino, identity.size, identity.mtime_ns);
    if now != planned {
        return Err(format!("{shown} changed since the plan; not compacted"));
    }
    let Some(d) = report
        .compact
        .disks
        .iter()
        .find(|d| d.path == path && d.product == product)
    else {
        return Err(format!(
            "{shown} is no longer the disk of a stopped machine or a saved disk (its machine runs, is paused, or a process uses it); not compacted"
        ));
    };
    if let Some(why) = &d.cannot_tell {
        return Err(format!("{shown}: {why}; not compacted"));
    }
    let kept = report
        .machines
        .iter()
        .filter(|m| m.product == product && d.owner.as_deref() == Some(m.name.as_str()))
        .filter_map(|m| m.kept.as_deref())
        .chain(
            report
                .findings
                .iter()
                .filter(|f| f.path == path || path.starts_with(&f.path))
                .filter_map(|f| f.kept.as_deref()),
        )
        .find(|k| !keep_overrides.iter().any(|o| o == k));
    if let Some(rule) = kept {
        return Err(format!("{shown} is kept by the rule {rule}; not compacted"));
    }
    if let Some(over) = backed_by(report, path) {
        return Err(format!(
            "{shown} is the backing file of {}: compacting it would change what that disk reads; not compacted",
            crate::pathser::shown(&over)
        ));
    }
    Ok(())
}

/// A disk the scan knows whose backing chain runs through `path`.
fn backed_by(report: &ScanReport, path: &Path) -> Option<PathBuf> {
    let id = std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))?;
    if let Some(f) = report
        .findings
        .iter()
        .find(|f| f.path == path && !f.needed_by.is_empty())
    {
        return Some(f.needed_by[0].clone());
    }
    let disks = report.compact.disks.iter().map(|d| &d.path).chain(
        report
            .findings
            .iter()
            .filter(|f| !f.is_dir)
            .map(|f| &f.path),
    );
    for d in disks {
        let links = crate::qcow2::backing_chain(d, crate::compact::qmap::MAX_DEPTH);
        let through = links
            .iter()
            .any(|l| std::fs::metadata(l).is_ok_and(|m| (m.dev(), m.ino()) == id));
        if through {
            return Some(d.clone());
        }
    }
    None
}

/// `cmd args… path` with the trusted `cmd` ([`crate::compact::tools`]): its exit code and
/// output, or why it could not run (missing: what to install; too old: why).
fn tool(cmd: &str, args: &[&str], path: &Path) -> Result<(i32, String), String> {
    let exe = crate::compact::tools::ready(cmd).map_err(|why| format!("{why}; not compacted"))?;
    let out = Command::new(&exe)
        .args(args)
        .arg(path)
        .env("LANG", "C")
        .output()
        .map_err(|e| format!("{cmd} could not be run ({e}); not compacted"))?;
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    Ok((out.status.code().unwrap_or(-1), text))
}

/// `e2fsck -fn` on `path` is clean.
fn fsck_clean(path: &Path) -> Result<(), String> {
    match tool("e2fsck", &["-fn"], path)? {
        (0, _) => Ok(()),
        (code, text) => Err(format!(
            "e2fsck -fn does not find its file system clean (exit {code}: {}); not compacted",
            text.lines().last().unwrap_or_default().trim()
        )),
    }
}

/// `qemu-img check` on `path` is clean.
fn qcow2_clean(path: &Path) -> Result<(), String> {
    match tool("qemu-img", &["check", "-q", "-f", "qcow2"], path)? {
        (0, _) => Ok(()),
        (code, text) => Err(format!(
            "qemu-img check does not find it clean (exit {code}: {}); not compacted",
            text.lines().next().unwrap_or_default().trim()
        )),
    }
}

/// Compact the raw ext4 image at `path`.
fn raw(path: &Path) -> Outcome {
    if let Err(why) = fsck_clean(path) {
        return Outcome::skipped(why);
    }
    match tool("e2fsck", &["-fp", "-E", "discard"], path) {
        Ok((0, _)) => {}
        Ok((code, text)) => {
            return Outcome::failed(format!(
                "e2fsck -fp -E discard exited {code}: {}",
                text.trim()
            ))
        }
        Err(why) => return Outcome::failed(why),
    }
    match fsck_clean(path) {
        Ok(()) => Outcome::done("compacted: e2fsck released the blocks its file system calls free"),
        Err(why) => Outcome::failed(format!("after compacting, {why}")),
    }
}

/// Compact the qcow2 image at `path`.
fn qcow2(path: &Path) -> Outcome {
    if let Err(why) = qcow2_clean(path) {
        return Outcome::skipped(why);
    }
    let ranges = match crate::compact::qcow2_discard_ranges(path) {
        Ok(r) => r,
        Err(why) => return Outcome::skipped(format!("{}; not compacted", why.0)),
    };
    for batch in ranges.chunks(256) {
        let mut args: Vec<String> = vec!["-f".into(), "qcow2".into(), "-d".into(), "unmap".into()];
        for (off, len) in batch {
            args.push("-c".into());
            args.push(format!("discard {off} {len}"));
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        match tool("qemu-io", &args, path) {
            Ok((0, text)) if !text.contains("failed") => {}
            Ok((code, text)) => {
                return Outcome::failed(format!("qemu-io discard exited {code}: {}", text.trim()))
            }
            Err(why) => return Outcome::failed(why),
        }
    }
    match qcow2_clean(path) {
        Ok(()) => Outcome::done(format!(
            "compacted: QEMU discarded {} run(s) of clusters its file system calls free",
            ranges.len()
        )),
        Err(why) => Outcome::failed(format!("after compacting, {why}")),
    }
}

/// smolvm's own lock of the machine whose directory holds `path`: `vm.lock`, which its
/// launching CLI or server takes (`flock(LOCK_EX|LOCK_NB)`) before it starts the VM. Held while
/// the disk is compacted, so a `machine start` meanwhile is refused by smolvm itself. `Ok(None)`
/// when there is no such file; `Err` when someone holds it.
fn smolvm_lock(path: &Path) -> Result<Option<std::fs::File>, String> {
    let Some(lock) = path.parent().map(|d| d.join("vm.lock")) else {
        return Ok(None);
    };
    let Ok(f) = std::fs::File::open(&lock) else {
        return Ok(None);
    };
    match rustix::fs::flock(&f, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(Some(f)),
        Err(e) => Err(format!(
            "smolvm holds the machine's vm.lock ({e}): it is starting or running; not compacted"
        )),
    }
}

/// Compact `path` as its format says (a smolvm machine's disk under the machine's own lock).
pub(super) fn run(product: Product, path: &Path, format: &str) -> Outcome {
    let _lock = match product {
        Product::Smolvm => match smolvm_lock(path) {
            Ok(l) => l,
            Err(why) => return Outcome::skipped(why),
        },
        Product::Celesto => None,
    };
    let (fmt, compact): (_, fn(&Path) -> Outcome) = match format {
        "raw" => (Format::Raw, raw),
        "qcow2" => (Format::Qcow2, qcow2),
        other => return Outcome::skipped(format!("a {other} disk is not compacted")),
    };
    // Every tool it runs, found and trusted now, before the first runs.
    match crate::compact::tools::check(fmt) {
        Ok(None) => compact(path),
        Ok(Some(why)) | Err(why) => Outcome::skipped(format!("{why}; not compacted")),
    }
}
