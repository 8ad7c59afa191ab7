//! Compacting one disk image ([`Action::CompactDisk`]): releasing the blocks its guest's ext4
//! calls free, with the well-kept tools of the field, re-judged at the moment of action.
//!
//! * Judged ([`judge`]): the same file as planned (device, inode, size, mtime); still the disk
//!   of a machine or sandbox its product records as stopped, with no VM alive and no process
//!   using it, or a saved disk (the fresh scan estimates it: see `compact::survey`), with
//!   something to give back and nothing it needs missing (a tool, one name); not kept by a keep
//!   rule; not the backing file of any disk the scan knows, however QEMU would read its name.
//!   The caller adds the one "in use" rule of the executor (no process holds, maps or names
//!   it; Smolsweep's own process never counts).
//! * Held ([`image`]): the file is opened once by its absolute canonical name, must still have
//!   the judged identity and one name, and carries QEMU's own image lock for the whole
//!   compaction (a QEMU started meanwhile refuses to open it; one that holds it already makes
//!   the compaction refuse). Every tool inherits that lock, is handed that absolute name (QEMU:
//!   `--image-opts` with the `file` driver's `filename=`, never a protocol name) and dies with
//!   Smolsweep ([`crate::compact::child`]). Immediately before each writing step the kernel and
//!   the process table are asked again whether anything else holds or uses it.
//! * A smolvm machine's disk is compacted holding the machine's `vm.lock` too (smolvm takes it
//!   before it starts the VM), so a start meanwhile is refused; one it holds is not compacted.
//! * The guest's file system is checked in full before anything is written, the same way on
//!   both formats, and again after: `e2fsck -fn`, on the raw image itself or, for a qcow2 image,
//!   on the guest disk QEMU's own `qemu-storage-daemon` exports read-only over FUSE ([`export`];
//!   where QEMU has no FUSE export, a qcow2 disk is not compacted).
//! * Raw ext4 ([`raw`]): then `e2fsck -fp -E discard` on the image file (e2fsprogs punches a
//!   hole, `fallocate(PUNCH_HOLE)`, for every free block range).
//! * qcow2 ([`qcow2`]): `qemu-img check` clean and QEMU's own reading of the backing chain
//!   (`qemu-img info --backing-chain`) the files the estimate read; the runs of whole clusters
//!   this file maps that the guest's file system calls free are computed read-only (the
//!   estimate's own reading) and discarded through QEMU's own qcow2 driver (`qemu-io -c
//!   'discard OFF LEN'`): only clusters the guest calls free are touched; `qemu-img check`
//!   clean after.
//! * The disk gets back its access and modification times: its guest reads the same bytes, and
//!   the next scan says what it said before (kind, verdict, age).

mod export;
mod image;

use std::ffi::{OsStr, OsString};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::compact::qmap::has_protocol;
use crate::compact::Format;
use crate::model::{FileIdentity, Product, ScanReport};
use crate::record::Outcome;
use image::Image;

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
    // A keep rule first: the estimate of a kept disk is shaped by it (nothing to offer).
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
        return Err(format!(
            "{shown} is {}; not compacted",
            crate::keep::kept_why(rule)
        ));
    }
    if let Some(why) = &d.cannot_tell {
        return Err(format!("{shown}: {why}; not compacted"));
    }
    if let Some(needs) = &d.needs {
        return Err(format!("{shown}: {needs}; not compacted"));
    }
    if d.compactable_bytes == 0 {
        return Err(format!(
            "{shown}: nothing free inside to give back now; not compacted"
        ));
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
    disks.into_iter().find(|d| reaches(d, id)).cloned()
}

/// Whether the backing chain of `disk` may reach the file `id` as QEMU reads it: each backing
/// name resolved as a plain path (relative to the image naming it), `file:NAME` as `NAME` both
/// relative to that image and as it stands, and a `json:` name (whose files cannot be told
/// here) counted as reaching it.
fn reaches(disk: &Path, id: (u64, u64)) -> bool {
    let mut current = disk.to_path_buf();
    for _ in 0..crate::compact::qmap::MAX_DEPTH {
        let Ok(Some(h)) = crate::qcow2::read_header(&current) else {
            return false;
        };
        let Some(name) = h.backing_file else {
            return false;
        };
        let candidates = match name.strip_prefix("file:") {
            Some(rest) if !has_protocol(rest) => {
                vec![crate::qcow2::resolve(&current, rest), PathBuf::from(rest)]
            }
            _ if name.starts_with("json:") => return true,
            _ if has_protocol(&name) => return false,
            _ => vec![crate::qcow2::resolve(&current, &name)],
        };
        let is = |p: &PathBuf| std::fs::metadata(p).is_ok_and(|m| (m.dev(), m.ino()) == id);
        if candidates.iter().any(is) {
            return true;
        }
        match candidates.into_iter().find(|p| p.exists()) {
            Some(next) => current = next,
            None => return false,
        }
    }
    false
}

/// The trusted `cmd` ([`crate::compact::tools`]) run with `args` on the held image `img` (judged
/// at `name`), which it inherits with its lock: its exit code and output, or why it could not
/// run (missing: what to install; too old: why; the image no longer the judged one).
fn tool(cmd: &str, args: &[&OsStr], img: &Image, name: &Path) -> Result<(i32, String), String> {
    let exe = crate::compact::tools::ready(cmd).map_err(|why| format!("{why}; not compacted"))?;
    img.still_judged(name)?;
    let mut c = Command::new(&exe);
    c.args(args).env("LANG", "C").env("LC_ALL", "C");
    let out = crate::compact::child::output(&mut c, Some(img.fd()))
        .map_err(|e| format!("{cmd} could not be run ({e}); not compacted"))?;
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    Ok((out.status.code().unwrap_or(-1), text))
}

/// `e2fsck -fn` on `target` (the image, or QEMU's export of its guest) is clean.
fn fsck_clean(target: &Path, img: &Image, name: &Path) -> Result<(), String> {
    match tool(
        "e2fsck",
        &[OsStr::new("-fn"), target.as_os_str()],
        img,
        name,
    )? {
        (0, _) => Ok(()),
        (code, text) => Err(format!(
            "e2fsck -fn does not find its file system clean (exit {code}: {}); not compacted",
            text.lines().last().unwrap_or_default().trim()
        )),
    }
}

/// QEMU's options naming the held image by its absolute canonical path through the `file`
/// driver (never a protocol), unlocked (the image is locked for the tools), with `qcow2` the
/// qcow2 driver's own options.
fn image_opts(img: &Image, qcow2: &str) -> Result<OsString, String> {
    let Some(p) = img.path().to_str() else {
        return Err(format!(
            "{}: its path is not UTF-8, which QEMU's options cannot carry; not compacted",
            crate::pathser::shown(img.path())
        ));
    };
    Ok(format!(
        "driver=qcow2{qcow2},file.driver=file,file.filename={},file.locking=off",
        p.replace(',', ",,")
    )
    .into())
}

/// `qemu-img check` on the held image is clean.
fn qcow2_clean(img: &Image, name: &Path) -> Result<(), String> {
    let opts = image_opts(img, "")?;
    let args = ["check", "-q", "--image-opts"].map(OsStr::new);
    match tool("qemu-img", &[&args[..], &[&opts]].concat(), img, name)? {
        (0, _) => Ok(()),
        (code, text) => Err(format!(
            "qemu-img check does not find it clean (exit {code}: {}); not compacted",
            text.lines().next().unwrap_or_default().trim()
        )),
    }
}

/// QEMU's own reading of the backing chain under the held image (`qemu-img info
/// --backing-chain`): the files it opens are the files the estimate read, one by one.
fn same_chain(img: &Image, name: &Path) -> Result<(), String> {
    let opts = image_opts(img, "")?;
    let args = [
        "info",
        "-U",
        "--backing-chain",
        "--output=json",
        "--image-opts",
    ]
    .map(OsStr::new);
    let (code, text) = tool("qemu-img", &[&args[..], &[&opts]].concat(), img, name)?;
    let qemu: Vec<String> = serde_json::from_str::<Vec<serde_json::Value>>(&text)
        .ok()
        .filter(|_| code == 0)
        .map(|v| {
            v.iter()
                .map(|i| i["filename"].as_str().unwrap_or_default().to_string())
                .collect()
        })
        .ok_or_else(|| {
            format!(
                "qemu-img info cannot read its backing chain (exit {code}: {}); not compacted",
                text.lines().next().unwrap_or_default().trim()
            )
        })?;
    let ours = crate::compact::qcow2_files(img.path())
        .map_err(|why| format!("{}; not compacted", why.0))?;
    let theirs: Vec<Option<(u64, u64)>> = qemu
        .iter()
        .map(|f| {
            (!has_protocol(f))
                .then(|| std::fs::metadata(f).ok().map(|m| (m.dev(), m.ino())))
                .flatten()
        })
        .collect();
    if theirs.len() == ours.len() && theirs.iter().zip(&ours).all(|(t, o)| *t == Some(*o)) {
        return Ok(());
    }
    Err(format!(
        "QEMU reads its backing chain from other files ({}) than the estimate read; not compacted",
        qemu.iter()
            .map(|f| crate::pathser::escape_text(f))
            .collect::<Vec<_>>()
            .join(" <- ")
    ))
}

/// Compact the held raw ext4 image `img` (judged at `name`).
fn raw(img: &Image, name: &Path) -> Outcome {
    let check = || fsck_clean(img.path(), img, name);
    if let Err(why) = check().and_then(|()| img.nobody_else(name)) {
        return Outcome::skipped(why);
    }
    let args = ["-fp", "-E", "discard"].map(OsStr::new);
    match tool(
        "e2fsck",
        &[&args[..], &[img.path().as_os_str()]].concat(),
        img,
        name,
    ) {
        Ok((0, _)) => {}
        Ok((code, text)) => {
            return Outcome::failed(format!(
                "e2fsck -fp -E discard exited {code}: {}",
                text.trim()
            ))
        }
        Err(why) => return Outcome::failed(why),
    }
    match check() {
        Ok(()) => Outcome::done("compacted: e2fsck released the blocks its file system calls free"),
        Err(why) => Outcome::failed(format!("after compacting, {why}")),
    }
}

/// Both checks of a qcow2 image: QEMU finds the image clean, and `e2fsck -fn` its guest's file
/// system through QEMU's export.
fn qcow2_checks(img: &Image, name: &Path) -> Result<(), String> {
    qcow2_clean(img, name)?;
    export::guest_clean(img, name, |guest| fsck_clean(guest, img, name))
}

/// Compact the held qcow2 image `img` (judged at `name`).
fn qcow2(img: &Image, name: &Path) -> Outcome {
    let before = qcow2_checks(img, name).and_then(|()| same_chain(img, name));
    if let Err(why) = before {
        return Outcome::skipped(why);
    }
    let ranges = match crate::compact::qcow2_discard_ranges(img.path()) {
        Ok(r) => r,
        Err(why) => return Outcome::skipped(format!("{}; not compacted", why.0)),
    };
    let opts = match image_opts(img, ",discard=unmap") {
        Ok(o) => o,
        Err(why) => return Outcome::skipped(why),
    };
    for (i, batch) in ranges.chunks(256).enumerate() {
        if let Err(why) = img.nobody_else(name) {
            return match i {
                0 => Outcome::skipped(why),
                _ => Outcome::failed(format!("part compacted, then {why}")),
            };
        }
        let mut args: Vec<OsString> = vec!["--image-opts".into()];
        for (off, len) in batch {
            args.push("-c".into());
            args.push(format!("discard {off} {len}").into());
        }
        args.push(opts.clone());
        let args: Vec<&OsStr> = args.iter().map(OsString::as_os_str).collect();
        match tool("qemu-io", &args, img, name) {
            Ok((0, text)) if !text.contains("failed") => {}
            Ok((code, text)) => {
                return Outcome::failed(format!("qemu-io discard exited {code}: {}", text.trim()))
            }
            Err(why) => return Outcome::failed(why),
        }
    }
    match qcow2_checks(img, name) {
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

/// Compact `path`, judged with `identity`, as its format says: held under QEMU's lock (and a
/// smolvm machine's disk under the machine's own lock too), its timestamps given back after.
pub(super) fn run(product: Product, path: &Path, format: &str, identity: &FileIdentity) -> Outcome {
    let _lock = match product {
        Product::Smolvm => match smolvm_lock(path) {
            Ok(l) => l,
            Err(why) => return Outcome::skipped(why),
        },
        Product::Celesto => None,
    };
    let (fmt, compact): (_, fn(&Image, &Path) -> Outcome) = match format {
        "raw" => (Format::Raw, raw),
        "qcow2" => (Format::Qcow2, qcow2),
        other => return Outcome::skipped(format!("a {other} disk is not compacted")),
    };
    // Every tool it runs, found and trusted now, before the first runs.
    match crate::compact::tools::check(fmt, None) {
        Ok(None) => {}
        Ok(Some(why)) | Err(why) => return Outcome::skipped(format!("{why}; not compacted")),
    }
    let img = match Image::open(path, identity) {
        Ok(img) => img,
        Err(why) => return Outcome::skipped(why),
    };
    let outcome = compact(&img, path);
    img.restore_times();
    outcome
}
