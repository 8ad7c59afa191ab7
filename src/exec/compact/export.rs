//! A qcow2 image's guest disk shown to `e2fsck` through QEMU's own reading of it:
//! `qemu-storage-daemon` opens the held image (the `file` driver, by its absolute canonical
//! name, unlocked: the compaction holds QEMU's lock) with its backing chain, read-only, and
//! exports the guest disk over FUSE as one regular file, read-only, on a mount point in a
//! private directory of Smolsweep's own (`$TMPDIR`, 0700). The same full `e2fsck -fn` a raw
//! image gets then reads the guest through QEMU's qcow2 driver, exactly as a VM would.
//!
//! The daemon dies with Smolsweep like every tool, with `SIGTERM`, which makes it unmount its
//! export first; it is ended the same way as soon as the check is done. Where no FUSE export
//! can be made (no `/dev/fuse`, no `fusermount3` for a user), the check cannot be made and the
//! disk is not compacted.

use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::Image;

/// How long the export may take to appear.
const READY_WITHIN: Duration = Duration::from_secs(20);

/// A private directory holding the mount point, removed with it.
struct Scratch {
    dir: PathBuf,
    mount: PathBuf,
}

impl Scratch {
    fn new() -> std::io::Result<Scratch> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        let tmp = Some(std::env::temp_dir())
            .filter(|t| t.is_absolute())
            .unwrap_or_else(|| PathBuf::from("/tmp"));
        loop {
            let n = N.fetch_add(1, Ordering::Relaxed);
            let dir = tmp.join(format!("smolsweep-guest-{}-{n}", std::process::id()));
            match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 1000 => continue,
                Err(e) => return Err(e),
            }
            let mount = dir.join("guest");
            let made = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&mount);
            if let Err(e) = made {
                let _ = std::fs::remove_dir(&dir);
                return Err(e);
            }
            return Ok(Scratch { dir, mount });
        }
    }

    /// Whether something is mounted on the mount point.
    fn mounted(&self) -> bool {
        let dev = |p: &Path| std::fs::symlink_metadata(p).map(|m| m.dev()).ok();
        dev(&self.mount).is_some_and(|m| Some(m) != dev(&self.dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.mount);
        let _ = std::fs::remove_file(self.dir.join("daemon.err"));
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// QEMU's option value: commas doubled.
fn opt(p: &Path) -> Result<String, String> {
    p.to_str().map(|s| s.replace(',', ",,")).ok_or_else(|| {
        format!(
            "{}: its path is not UTF-8, which QEMU's options cannot carry; not compacted",
            crate::pathser::shown(p)
        )
    })
}

/// Run `check` on the guest disk of the held qcow2 image `img` (judged at `name`) as QEMU's
/// FUSE export shows it; `Err` says why it is not compacted (the check's own refusal, or why
/// the export could not be made).
pub(super) fn guest_clean(
    img: &Image,
    name: &Path,
    check: impl FnOnce(&Path) -> Result<(), String>,
) -> Result<(), String> {
    let exe = crate::compact::tools::ready("qemu-storage-daemon")
        .map_err(|why| format!("{why}; not compacted"))?;
    let cannot = |why: String| {
        format!(
            "QEMU's FUSE export of its guest disk could not be made ({why}), so its file system \
             cannot be checked; not compacted"
        )
    };
    let scratch = Scratch::new().map_err(|e| cannot(e.to_string()))?;
    let err_file = scratch.dir.join("daemon.err");
    let err = std::fs::File::create(&err_file).map_err(|e| cannot(e.to_string()))?;
    let mut cmd = Command::new(&exe);
    cmd.arg("--blockdev")
        .arg(format!(
            "driver=file,node-name=file0,filename={},read-only=on,locking=off",
            opt(img.path())?
        ))
        .arg("--blockdev")
        .arg("driver=qcow2,node-name=disk0,file=file0,read-only=on")
        .arg("--export")
        .arg(format!(
            "type=fuse,id=guest0,node-name=disk0,mountpoint={},writable=off",
            opt(&scratch.mount)?
        ))
        .env("LANG", "C")
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err);
    img.still_judged(name)?;
    let mut daemon = crate::compact::child::spawn(
        &mut cmd,
        libc::SIGTERM,
        Some(img.fd()),
        crate::compact::child::TIE,
    )
    .map_err(|e| cannot(e.to_string()))?;
    let started = Instant::now();
    let ready = loop {
        if scratch.mounted() {
            break Ok(());
        }
        match daemon.child.try_wait() {
            Ok(Some(status)) => {
                let said = std::fs::read_to_string(&err_file).unwrap_or_default();
                let first = said.lines().next().unwrap_or_default().trim().to_string();
                break Err(cannot(format!(
                    "qemu-storage-daemon exited {status}: {first}"
                )));
            }
            Ok(None) if started.elapsed() < READY_WITHIN => {
                std::thread::sleep(Duration::from_millis(5));
            }
            _ => break Err(cannot("it did not appear within 20 s".into())),
        }
    };
    let checked = ready.and_then(|()| check(&scratch.mount));
    // Ended as it would be with Smolsweep: SIGTERM, which unmounts the export.
    if let Ok(pid) = i32::try_from(daemon.child.id()) {
        // SAFETY: `kill` of the daemon this function started and has not waited for yet.
        unsafe { libc::kill(pid, libc::SIGTERM) };
    }
    let _ = daemon.wait();
    checked
}
