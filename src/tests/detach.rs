//! Mount parsing and detaching, with a stand-in `hdiutil` (tests/helpers/hdiutil) on PATH that
//! records every call and fails the way the real one does.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::exec::detach::{
    clear_mounts_inside, current_mounts, detach, detach_command, detach_then, hdiutil_mounts,
    is_layers_cs_mountpoint, layers_cs_mounts_under, mounts_under, parse_hdiutil_info,
    parse_mount_output, parse_mountinfo, DetachOutcome, MountEntry, MountGate, SystemRunner,
};
use crate::model::Platform;

const MACOS_MOUNT: &str = "\
/dev/disk3s1s1 on / (apfs, sealed, local, read-only, journaled)
devfs on /dev (devfs, local, nobrowse)
/dev/disk3s6 on /System/Volumes/VM (apfs, local, noexec, journaled, noatime, nobrowse)
/dev/disk3s5 on /System/Volumes/Data (apfs, local, journaled, nobrowse, protect)
map auto_home on /System/Volumes/Data/home (autofs, automounted, nobrowse)
/dev/disk4s1 on /Users/u/Library/Caches/smolvm-pack/1a2b3c4d/layers-cs (apfs, local, nodev, nosuid, journaled, noowners, nobrowse)
/dev/disk5s1 on /Users/u/Library/Caches/smolvm/vms/0123456789abcdef/pack/layers-cs (apfs, local, nodev, nosuid, journaled, noowners, nobrowse)
/dev/disk6s1 on /Volumes/My Disk (on) (apfs, local, nodev, nosuid, journaled, noowners)
/dev/disk7s1 on /Users/u/Library/Caches2/smolvm-pack/ffff/layers-cs (apfs, local, nobrowse)
";

const MOUNTINFO: &str = "\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro
25 22 0:23 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw
36 22 0:32 / /home/u/.cache/smolvm\\040cache/vms/abc rw,relatime shared:20 - tmpfs tmp\\040fs rw,size=1024k
37 22 0:33 / /home/u/tab\\011and\\134slash rw - tmpfs none rw
";

const HDIUTIL_INFO: &str = "framework       : 671
driver          : 10.15v671
================================================
image-path      : /Users/u/Library/Caches/smolvm-pack/1a2b3c4d/layers-cs.sparseimage
shadow-path     : <none>
icon-path       : /System/Library/PrivateFrameworks/DiskImages.framework/Resources/CDiskImage.icns
image-type      : sparse disk image
system-image    : TRUE
blockcount      : 41943040
blocksize       : 512
writeable       : TRUE
autodiskmount   : TRUE
removable       : TRUE
image-encrypted : false
mounting user   : u
mounting mode   : <unknown>
process ID      : 4242
/dev/disk4\tGUID_partition_scheme\t
/dev/disk4s1\tApple_APFS\t
/dev/disk5\tEF57347C-0000-11AA-AA11-0030654\t
/dev/disk5s1\t41504653-0000-11AA-AA11-0030654\t/Users/u/Library/Caches/smolvm-pack/1a2b3c4d/layers-cs
================================================
image-path      : /Users/u/Downloads/Some Installer.dmg
image-type      : read-only disk image
/dev/disk8\tGUID_partition_scheme\t
/dev/disk8s1\tApple_HFS\t/Volumes/Some Installer
";

#[test]
fn parses_macos_mount_output() {
    let m = parse_mount_output(MACOS_MOUNT);
    assert_eq!(m.len(), 9);
    assert_eq!(
        m[5],
        MountEntry {
            device: "/dev/disk4s1".into(),
            mountpoint: "/Users/u/Library/Caches/smolvm-pack/1a2b3c4d/layers-cs".into(),
            fstype: "apfs".into(),
        }
    );
    assert_eq!(m[4].device, "map auto_home");
    assert_eq!(m[4].fstype, "autofs");
    assert_eq!(m[7].mountpoint, PathBuf::from("/Volumes/My Disk (on)"));
}

#[test]
fn parses_linux_mountinfo_with_octal_escapes() {
    let m = parse_mountinfo(MOUNTINFO);
    assert_eq!(m.len(), 4);
    assert_eq!(m[0].mountpoint, PathBuf::from("/"));
    assert_eq!(m[0].fstype, "ext4");
    assert_eq!(
        m[2],
        MountEntry {
            device: "tmp fs".into(),
            mountpoint: "/home/u/.cache/smolvm cache/vms/abc".into(),
            fstype: "tmpfs".into(),
        }
    );
    assert_eq!(m[3].mountpoint, PathBuf::from("/home/u/tab\tand\\slash"));
    // The same lines through the mixed parser, plus Linux `mount` command output.
    assert_eq!(parse_mount_output(MOUNTINFO), m);
    let linux_mount = parse_mount_output("tmpfs on /run/user/1000 type tmpfs (rw,nosuid,nodev)\n");
    assert_eq!(linux_mount[0].mountpoint, PathBuf::from("/run/user/1000"));
    assert_eq!(linux_mount[0].fstype, "tmpfs");
    // And the live table has a root.
    assert!(current_mounts()
        .unwrap()
        .iter()
        .any(|e| e.mountpoint == Path::new("/")));
}

#[test]
fn parses_hdiutil_info() {
    let imgs = parse_hdiutil_info(HDIUTIL_INFO);
    assert_eq!(imgs.len(), 2);
    assert_eq!(
        imgs[0].image_path.as_deref(),
        Some(Path::new(
            "/Users/u/Library/Caches/smolvm-pack/1a2b3c4d/layers-cs.sparseimage"
        ))
    );
    assert_eq!(imgs[0].devices.len(), 4);
    assert_eq!(imgs[0].devices[0].mountpoint, None);
    assert_eq!(imgs[0].devices[3].device, "/dev/disk5s1");
    let mounts = hdiutil_mounts(&imgs);
    assert_eq!(
        mounts
            .iter()
            .map(|m| m.mountpoint.clone())
            .collect::<Vec<_>>(),
        [
            PathBuf::from("/Users/u/Library/Caches/smolvm-pack/1a2b3c4d/layers-cs"),
            PathBuf::from("/Volumes/Some Installer"),
        ]
    );
}

#[test]
fn finds_both_layers_cs_shapes_only_under_roots() {
    let m = parse_mount_output(MACOS_MOUNT);
    let roots = [PathBuf::from("/Users/u/Library/Caches")];
    assert_eq!(
        layers_cs_mounts_under(&m, &roots),
        [
            PathBuf::from("/Users/u/Library/Caches/smolvm/vms/0123456789abcdef/pack/layers-cs"),
            PathBuf::from("/Users/u/Library/Caches/smolvm-pack/1a2b3c4d/layers-cs"),
        ]
    );
    // `Caches2` is not inside `Caches` (component-wise, not string prefix).
    assert!(layers_cs_mounts_under(&m, &[PathBuf::from("/Users/u/Library/Cach")]).is_empty());
    assert!(!is_layers_cs_mountpoint(Path::new(
        "/x/smolvm-pack/layers-cs"
    )));
    assert!(!is_layers_cs_mountpoint(Path::new("/x/vms/a/b/layers-cs")));
    assert!(!is_layers_cs_mountpoint(Path::new("/x/other/a/layers-cs")));
}

#[test]
fn detach_commands() {
    let mp = Path::new("/Users/u/Library/Caches/smolvm-pack/1a 2b/layers-cs");
    assert_eq!(
        detach_command(mp, false),
        [
            "hdiutil",
            "detach",
            "/Users/u/Library/Caches/smolvm-pack/1a 2b/layers-cs"
        ]
    );
    assert_eq!(
        detach_command(mp, true),
        [
            "hdiutil",
            "detach",
            "-force",
            "/Users/u/Library/Caches/smolvm-pack/1a 2b/layers-cs"
        ]
    );
}

/// A scratch macOS-shaped cache tree with both kinds of `layers-cs` mount point (as
/// directories), and the `mount` output that would list them.
struct Scene {
    _tmp: tempfile::TempDir,
    caches: PathBuf,
    pack: PathBuf,
    vm: PathBuf,
    log: PathBuf,
    entries: Vec<MountEntry>,
}

fn scene() -> Scene {
    let tmp = tempfile::tempdir().unwrap();
    let caches = tmp.path().join("Library/Caches");
    let pack = caches.join("smolvm-pack/1a2b3c4d");
    let vm = caches.join("smolvm/vms/0123456789abcdef");
    for d in [pack.join("layers-cs"), vm.join("pack/layers-cs")] {
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("layer.tar"), b"x").unwrap();
    }
    std::fs::write(pack.join("layers-cs.sparseimage"), b"img").unwrap();
    let mount = format!(
        "/dev/disk3s5 on / (apfs, local, journaled)\n\
         /dev/disk4s1 on {} (apfs, local, nodev, nosuid, journaled, noowners, nobrowse)\n\
         /dev/disk5s1 on {} (apfs, local, nodev, nosuid, journaled, noowners, nobrowse)\n",
        pack.join("layers-cs").display(),
        vm.join("pack/layers-cs").display()
    );
    let log = tmp.path().join("calls.log");
    Scene {
        entries: parse_mount_output(&mount),
        _tmp: tmp,
        caches,
        pack,
        vm,
        log,
    }
}

fn stand_in(log: &Path, mode: &str) -> SystemRunner {
    let helpers = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/helpers");
    let path = std::env::join_paths([helpers, "/usr/bin".into(), "/bin".into()]).unwrap();
    SystemRunner {
        path: Some(path),
        env: vec![
            (OsString::from("HDIUTIL_LOG"), log.as_os_str().to_owned()),
            (OsString::from("HDIUTIL_MODE"), OsString::from(mode)),
        ],
        timeout: Duration::from_secs(20),
    }
}

fn log_lines(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(String::from)
        .collect()
}

fn append(log: &Path, line: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .unwrap();
    writeln!(f, "{line}").unwrap();
}

/// Hazards 17/18 (uninstaller and `rm -rf` vs live `layers-cs` mounts): every `layers-cs` mount
/// inside a directory, both shapes, is detached before that directory is removed.
#[test]
fn hazard_18_layers_cs_detached_before_parent_removed() {
    let s = scene();
    let runner = stand_in(&s.log, "ok");
    for dir in [&s.pack, &s.vm] {
        let (gate, removed) = detach_then(dir, &s.entries, Platform::Macos, &runner, |d| {
            append(&s.log, &format!("rm {}", d.display()));
            std::fs::remove_dir_all(d)
        });
        assert!(gate.is_clear(), "{gate:?}");
        removed.expect("removal ran").unwrap();
        assert!(!dir.exists());
    }
    let pack_mp = s.pack.join("layers-cs");
    let vm_mp = s.vm.join("pack/layers-cs");
    assert_eq!(
        log_lines(&s.log),
        [
            format!("hdiutil detach {}", pack_mp.display()),
            format!("rm {}", s.pack.display()),
            format!("hdiutil detach {}", vm_mp.display()),
            format!("rm {}", s.vm.display()),
        ]
    );
    assert!(s.caches.exists());
}

#[test]
fn removing_a_whole_root_detaches_every_mount_inside_first() {
    let s = scene();
    let runner = stand_in(&s.log, "ok");
    let (gate, _) = detach_then(&s.caches, &s.entries, Platform::Macos, &runner, |d| {
        append(&s.log, &format!("rm {}", d.display()))
    });
    match gate {
        MountGate::Clear { detached } => assert_eq!(detached.len(), 2),
        other => panic!("{other:?}"),
    }
    let lines = log_lines(&s.log);
    assert_eq!(lines.len(), 3);
    assert!(lines[0].starts_with("hdiutil detach ") && lines[1].starts_with("hdiutil detach "));
    assert_eq!(lines[2], format!("rm {}", s.caches.display()));
}

#[test]
fn resource_busy_is_retried_with_force() {
    let s = scene();
    let runner = stand_in(&s.log, "busy-once");
    let mp = s.pack.join("layers-cs");
    match detach(&mp, &runner) {
        DetachOutcome::Detached {
            forced: true,
            first_error: Some(e),
        } => assert!(e.contains("Resource busy"), "{e}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        log_lines(&s.log),
        [
            format!("hdiutil detach {}", mp.display()),
            format!("hdiutil detach -force {}", mp.display()),
        ]
    );
    // The gate goes through the same retry, then removes.
    let (gate, removed) = detach_then(&s.vm, &s.entries, Platform::Macos, &runner, |_| true);
    assert!(gate.is_clear());
    assert_eq!(removed, Some(true));
    assert!(log_lines(&s.log).iter().any(|l| l
        == &format!(
            "hdiutil detach -force {}",
            s.vm.join("pack/layers-cs").display()
        )));
}

#[test]
fn a_detach_that_still_fails_blocks_the_removal_and_is_reported() {
    let s = scene();
    let runner = stand_in(&s.log, "always-fail");
    let (gate, removed) = detach_then(&s.pack, &s.entries, Platform::Macos, &runner, |d| {
        std::fs::remove_dir_all(d)
    });
    assert!(removed.is_none(), "removal ran past a failed detach");
    assert!(s.pack.join("layers-cs/layer.tar").exists());
    match gate {
        MountGate::Blocked { detached, blocks } => {
            assert!(detached.is_empty());
            assert_eq!(blocks.len(), 1);
            assert_eq!(blocks[0].mountpoint, s.pack.join("layers-cs"));
            assert!(
                blocks[0].reason.contains("Resource busy"),
                "{}",
                blocks[0].reason
            );
        }
        other => panic!("{other:?}"),
    }
    let mp = s.pack.join("layers-cs");
    assert_eq!(
        log_lines(&s.log),
        [
            format!("hdiutil detach {}", mp.display()),
            format!("hdiutil detach -force {}", mp.display()),
        ]
    );
}

#[test]
fn missing_hdiutil_blocks_the_removal() {
    let s = scene();
    let runner = SystemRunner {
        path: Some(s.caches.as_os_str().to_owned()),
        ..SystemRunner::default()
    };
    let gate = clear_mounts_inside(&s.pack, &s.entries, Platform::Macos, &runner);
    assert!(!gate.is_clear(), "{gate:?}");
}

#[test]
fn other_mounts_on_macos_are_never_detached() {
    let s = scene();
    let runner = stand_in(&s.log, "ok");
    let odd = s.pack.join("not-layers");
    std::fs::create_dir_all(&odd).unwrap();
    let mut entries = s.entries.clone();
    entries.push(MountEntry {
        device: "/dev/disk9s1".into(),
        mountpoint: odd.clone(),
        fstype: "apfs".into(),
    });
    match clear_mounts_inside(&s.pack, &entries, Platform::Macos, &runner) {
        MountGate::Blocked { blocks, .. } => {
            assert_eq!(blocks.len(), 1);
            assert_eq!(blocks[0].mountpoint, odd);
        }
        other => panic!("{other:?}"),
    }
    assert!(log_lines(&s.log).iter().all(|l| !l.contains("not-layers")));
}

#[test]
fn linux_mount_under_a_root_is_reported_and_never_detached() {
    let s = scene();
    let runner = stand_in(&s.log, "ok");
    let (gate, removed) = detach_then(&s.caches, &s.entries, Platform::Linux, &runner, |_| ());
    assert!(removed.is_none());
    match gate {
        MountGate::Blocked { detached, blocks } => {
            assert!(detached.is_empty());
            assert_eq!(blocks.len(), 2);
        }
        other => panic!("{other:?}"),
    }
    assert!(log_lines(&s.log).is_empty(), "hdiutil ran on Linux");
}

/// A real tmpfs mounted under a scratch root (needs root, as in CI): found in the live mount
/// table and blocks the removal of every directory containing it.
#[test]
fn real_tmpfs_under_a_root_blocks_removal() {
    assert_eq!(
        rustix::process::geteuid().as_raw(),
        0,
        "this test mounts a tmpfs and must run as root (CI does)"
    );
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join(".cache/smolvm");
    let mp = root.join("vms/0123456789abcdef/pack/layers-cs");
    std::fs::create_dir_all(&mp).unwrap();
    let st = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(&mp)
        .status()
        .unwrap();
    assert!(st.success(), "mount -t tmpfs failed");
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(&self.0).status();
        }
    }
    let _guard = Unmount(mp.clone());
    std::fs::write(mp.join("inside"), b"keep").unwrap();
    let entries = current_mounts().unwrap();
    assert_eq!(mounts_under(&entries, &root), std::slice::from_ref(&mp));
    let log = tmp.path().join("calls.log");
    let runner = stand_in(&log, "ok");
    for dir in [root.clone(), root.join("vms"), mp.clone()] {
        let (gate, removed) = detach_then(&dir, &entries, Platform::Linux, &runner, |d| {
            std::fs::remove_dir_all(d)
        });
        assert!(removed.is_none(), "{}", dir.display());
        assert!(!gate.is_clear());
    }
    assert!(mp.join("inside").exists());
    assert!(log_lines(&log).is_empty());
}
