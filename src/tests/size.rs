//! Sizes as the scan reports them: allocated and apparent bytes, each inode once, symlinks never
//! followed, file systems never crossed, no timestamp changed.

use std::fs::{self, File};
use std::io::{Seek, SeekFrom, Write};
use std::os::unix::fs::{symlink, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::size::{identity, Sizer};

fn alloc(p: &Path) -> u64 {
    fs::symlink_metadata(p).unwrap().blocks() * 512
}

fn apparent(p: &Path) -> u64 {
    fs::symlink_metadata(p).unwrap().size()
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// `len` bytes apparent, with `written` real bytes in the middle.
fn sparse(path: &Path, len: u64, written: usize) {
    let mut f = File::create(path).unwrap();
    f.set_len(len).unwrap();
    f.seek(SeekFrom::Start(len / 2)).unwrap();
    f.write_all(&vec![0xabu8; written]).unwrap();
    f.sync_all().unwrap();
}

/// `du -sx -B1 [--apparent-size] PATH` as a number.
fn du(path: &Path, apparent: bool) -> u64 {
    let mut c = Command::new("du");
    c.args(["-s", "-x", "-B1"]);
    if apparent {
        c.arg("--apparent-size");
    }
    let out = c.arg(path).output().expect("du");
    assert!(out.status.success());
    String::from_utf8(out.stdout)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn b13_sparse_disk_reports_allocated_not_apparent() {
    let d = tempfile::tempdir().unwrap();
    let disk = d.path().join("fc.ext4");
    sparse(&disk, 2 << 30, 1 << 20);
    let m = Sizer::new().measure(&disk).unwrap();
    assert_eq!(m.apparent, 2 << 30);
    assert_eq!(m.allocated, alloc(&disk));
    assert!(m.allocated >= 1 << 20, "the written MiB is allocated");
    assert!(m.allocated < 4 << 20, "the hole is not: {}", m.allocated);
    assert_eq!(m.files, 1);
}

#[test]
fn hard_links_counted_once_within_a_tree() {
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("t");
    fs::create_dir_all(t.join("a")).unwrap();
    fs::create_dir_all(t.join("b")).unwrap();
    fs::write(t.join("a/data"), vec![1u8; 100_000]).unwrap();
    fs::hard_link(t.join("a/data"), t.join("b/data-again")).unwrap();
    fs::hard_link(t.join("a/data"), t.join("third")).unwrap();
    let m = Sizer::new().measure(&t).unwrap();
    let dirs = [&t, &t.join("a"), &t.join("b")];
    let dir_alloc: u64 = dirs.iter().map(|p| alloc(p)).sum();
    let dir_app: u64 = dirs.iter().map(|p| apparent(p)).sum();
    assert_eq!(m.allocated, dir_alloc + alloc(&t.join("a/data")));
    assert_eq!(m.apparent, dir_app + 100_000);
    assert_eq!((m.files, m.dirs, m.already_counted), (1, 3, 2));
    // Same figures as du, which also counts a hard-linked inode once.
    assert_eq!(m.allocated, du(&t, false));
    assert_eq!(m.apparent, du(&t, true));
}

#[test]
fn hard_links_counted_once_across_measure_calls() {
    let d = tempfile::tempdir().unwrap();
    let a = d.path().join("disk.ext4");
    let b = d.path().join("disk.ext4.backup");
    fs::write(&a, vec![2u8; 50_000]).unwrap();
    fs::hard_link(&a, &b).unwrap();
    let mut s = Sizer::new();
    let first = s.measure(&a).unwrap();
    let second = s.measure(&b).unwrap();
    assert_eq!((first.apparent, first.allocated), (50_000, alloc(&a)));
    assert_eq!((second.apparent, second.allocated, second.files), (0, 0, 0));
    assert_eq!(second.already_counted, 1);
    // The identity is still reported for the second name.
    assert_eq!(second.identity.unwrap().ino, first.identity.unwrap().ino);
    // A fresh sizer counts it again.
    assert_eq!(Sizer::new().measure(&b).unwrap().apparent, 50_000);
}

#[test]
fn overlapping_measurements_count_each_inode_once() {
    let d = tempfile::tempdir().unwrap();
    let top = d.path().join("cache");
    let inner = top.join("ubuntu-v0.1.9-amd64-qemu");
    fs::create_dir_all(&inner).unwrap();
    fs::write(inner.join("rootfs.ext4"), vec![3u8; 70_000]).unwrap();
    fs::write(top.join("other"), vec![4u8; 9_000]).unwrap();

    // Inner first, then the enclosing tree: the enclosing one adds only what is new.
    let mut s = Sizer::new();
    let i = s.measure(&inner).unwrap();
    let t = s.measure(&top).unwrap();
    let mut whole = Sizer::new();
    let all = whole.measure(&top).unwrap();
    assert_eq!(i.allocated + t.allocated, all.allocated);
    assert_eq!(i.apparent + t.apparent, all.apparent);
    assert_eq!(t.files, 1);
    assert_eq!(t.already_counted, 2, "inner dir and its file");

    // Enclosing first, then the inner tree: nothing new, but still walked for its mtime.
    let again = whole.measure(&inner).unwrap();
    assert_eq!(
        (again.apparent, again.allocated, again.files, again.dirs),
        (0, 0, 0, 0)
    );
    assert_eq!(again.newest_mtime_ns, i.newest_mtime_ns);
}

#[test]
fn b12_symlinked_disk_not_double_counted() {
    let d = tempfile::tempdir().unwrap();
    let disks = d.path().join("disks");
    fs::create_dir(&disks).unwrap();
    let target = disks.join("real-target.ext4");
    sparse(&target, 1 << 30, 4 << 20);
    let link = disks.join("link.ext4");
    symlink(&target, &link).unwrap();

    let mut s = Sizer::new();
    let l = s.measure(&link).unwrap();
    // Only the link itself: its own length and (fast symlink) no blocks, never the target's.
    assert_eq!(l.apparent, target.as_os_str().len() as u64);
    assert_eq!(l.allocated, alloc(&link));
    assert!(l.allocated < 4096, "{}", l.allocated);
    assert_eq!(
        l.identity.unwrap().file_type,
        crate::size::file_type(libc::S_IFLNK)
    );
    let t = s.measure(&target).unwrap();
    assert_eq!(t.apparent, 1 << 30);
    assert!(t.allocated >= 4 << 20);

    // The directory holding both counts the target once.
    let dir = Sizer::new().measure(&disks).unwrap();
    assert_eq!(dir.allocated, alloc(&disks) + alloc(&target) + alloc(&link));
    assert_eq!(dir.allocated, l.allocated + t.allocated + alloc(&disks));
    assert_eq!(dir.files, 2);
    assert_eq!(dir.allocated, du(&disks, false));
}

#[test]
fn symlink_to_directory_is_not_entered() {
    let d = tempfile::tempdir().unwrap();
    let elsewhere = d.path().join("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    fs::write(elsewhere.join("big"), vec![5u8; 300_000]).unwrap();
    let tree = d.path().join("tree");
    fs::create_dir(&tree).unwrap();
    let link = tree.join("stale-image-dir");
    symlink(&elsewhere, &link).unwrap();

    let m = Sizer::new().measure(&tree).unwrap();
    assert_eq!(m.allocated, alloc(&tree) + alloc(&link));
    assert_eq!(m.apparent, apparent(&tree) + apparent(&link));
    assert_eq!((m.files, m.dirs), (1, 1));
    // Measured directly, the symlink is still only itself.
    let l = Sizer::new().measure(&link).unwrap();
    assert_eq!((l.files, l.dirs, l.apparent), (1, 0, apparent(&link)));
    // The root given as a symlink is not followed either.
    assert!(l.mounts.is_empty());
}

#[test]
fn sockets_and_fifos_count_as_themselves() {
    let d = tempfile::tempdir().unwrap();
    let sock = d.path().join("qmp-real1.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let fifo = d.path().join("console.fifo");
    smolsweep_fixtures::mkfifo(&fifo).unwrap();
    let s = Sizer::new().measure(&sock).unwrap();
    assert_eq!(s.files, 1);
    assert_eq!(
        s.identity.unwrap().file_type,
        crate::size::file_type(libc::S_IFSOCK)
    );
    // Measuring never opens a FIFO (which would block).
    let f = Sizer::new().measure(&fifo).unwrap();
    assert_eq!(
        f.identity.unwrap().file_type,
        crate::size::file_type(libc::S_IFIFO)
    );
    let all = Sizer::new().measure(d.path()).unwrap();
    assert_eq!((all.files, all.dirs), (2, 1));
}

#[test]
fn newest_mtime_and_identity_cover_the_tree() {
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("t");
    fs::create_dir_all(t.join("x/y")).unwrap();
    fs::write(t.join("x/y/new"), b"n").unwrap();
    fs::write(t.join("old"), b"o").unwrap();
    let set = |p: &Path, sec: i64, nsec: i64| {
        let ts = rustix::fs::Timespec {
            tv_sec: sec,
            tv_nsec: nsec as _,
        };
        rustix::fs::utimensat(
            rustix::fs::CWD,
            p,
            &rustix::fs::Timestamps {
                last_access: ts,
                last_modification: ts,
            },
            rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
        )
        .unwrap();
    };
    for p in [&t, &t.join("x"), &t.join("x/y"), &t.join("old")] {
        set(p, 1_500_000_000, 0);
    }
    set(&t.join("x/y/new"), 1_600_000_000, 123);
    let m = Sizer::new().measure(&t).unwrap();
    assert_eq!(m.newest_mtime_ns, 1_600_000_000_000_000_123);
    let id = m.identity.unwrap();
    assert_eq!(id, identity(&t).unwrap());
    let md = fs::symlink_metadata(&t).unwrap();
    assert_eq!(
        (id.dev, id.ino, id.file_type),
        (md.dev(), md.ino(), crate::size::file_type(libc::S_IFDIR))
    );
    assert_eq!(id.mtime_ns, 1_500_000_000_000_000_000);
}

#[test]
fn totals_match_du_on_a_mixed_tree_with_any_thread_count() {
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("t");
    for i in 0..120 {
        let sub = t.join(format!("vm{i:03}/logs"));
        fs::create_dir_all(&sub).unwrap();
        fs::write(sub.join("console.log"), vec![b'l'; (i * 997) % 20_000]).unwrap();
        if i % 10 == 0 {
            sparse(&t.join(format!("vm{i:03}/disk.ext4")), 256 << 20, 64 << 10);
        }
        if i % 7 == 0 && i > 0 {
            fs::hard_link(sub.join("console.log"), t.join(format!("vm000/link{i}"))).unwrap();
        }
    }
    symlink("/nonexistent/target", t.join("dangling")).unwrap();
    let expect_alloc = du(&t, false);
    let expect_app = du(&t, true);
    for threads in [1, 2, 3, 8] {
        let m = Sizer::with_threads(threads).measure(&t).unwrap();
        assert_eq!(m.allocated, expect_alloc, "threads={threads}");
        assert_eq!(m.apparent, expect_app, "threads={threads}");
        assert_eq!(m.files, 120 + 12 + 1, "threads={threads}");
        assert_eq!(m.dirs, 1 + 240, "threads={threads}");
        assert_eq!(m.already_counted, 17, "threads={threads}");
        assert_eq!(m.errors, 0);
    }
    let m = Sizer::new().measure(&t).unwrap();
    assert_eq!(m.allocated, expect_alloc);
}

/// Unmounts on drop, so a failing assertion does not leave a mount behind.
struct Mounted(PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

fn tmpfs_inside_tree_body() {
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("pack");
    let mnt = t.join("layers-cs");
    fs::create_dir_all(&mnt).unwrap();
    fs::write(t.join("manifest.json"), vec![b'{'; 5_000]).unwrap();
    let st = Command::new("mount")
        .args([
            "-t",
            "tmpfs",
            "-o",
            "size=16m",
            "smolsweep-test",
            mnt.to_str().unwrap(),
        ])
        .status()
        .expect("mount");
    assert!(st.success(), "mount -t tmpfs failed");
    let guard = Mounted(mnt.clone());
    fs::create_dir(mnt.join("inner")).unwrap();
    let mut f = File::create(mnt.join("inner/layer.tar")).unwrap();
    f.write_all(&vec![7u8; 4 << 20]).unwrap();
    drop(f);
    assert_ne!(
        fs::metadata(&mnt).unwrap().dev(),
        fs::metadata(&t).unwrap().dev(),
        "tmpfs is mounted"
    );

    let m = Sizer::new().measure(&t).unwrap();
    assert_eq!(m.mounts, vec![mnt.clone()]);
    assert_eq!(
        m.allocated,
        alloc(&t) + alloc(&t.join("manifest.json")),
        "the mount point and everything below it are not counted"
    );
    assert_eq!((m.files, m.dirs, m.errors), (1, 1, 0));
    assert_eq!(m.allocated, du(&t, false), "same as du -x");
    drop(guard);
    assert_eq!(
        fs::metadata(&mnt).unwrap().dev(),
        fs::metadata(&t).unwrap().dev(),
        "unmounted"
    );
}

#[test]
fn tmpfs_mounted_inside_tree_is_listed_not_counted() {
    const CHILD: &str = "SMOLSWEEP_SIZE_TEST_IN_USERNS";
    if is_root() {
        tmpfs_inside_tree_body();
        return;
    }
    // Not root: run this same test as root of a private user and mount namespace.
    assert!(
        std::env::var_os(CHILD).is_none(),
        "no root even in a user namespace"
    );
    let out = Command::new("unshare")
        .args(["--user", "--map-root-user", "--mount"])
        .arg(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "size::tmpfs_mounted_inside_tree_is_listed_not_counted",
            "--nocapture",
        ])
        .env(CHILD, "1")
        .output()
        .expect("unshare (util-linux)");
    assert!(
        out.status.success(),
        "in user namespace: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("1 passed"));
}

/// Run `f` on a thread whose credentials are those of `nobody` (Linux credentials are per
/// thread; the rest of the process stays root). Only called when running as root.
#[cfg(target_os = "linux")]
fn as_nobody<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| {
        s.spawn(|| {
            use rustix::process::{Gid, Uid};
            let gid = Gid::from_raw(65534);
            let uid = Uid::from_raw(65534);
            rustix::thread::set_thread_groups(&[]).unwrap();
            rustix::thread::set_thread_res_gid(gid, gid, gid).unwrap();
            rustix::thread::set_thread_res_uid(uid, uid, uid).unwrap();
            assert!(!rustix::process::geteuid().is_root());
            f()
        })
        .join()
        .unwrap()
    })
}

// Checked as `nobody` from a thread of a root process: per-thread credentials are Linux's.
#[cfg(target_os = "linux")]
#[test]
fn unreadable_directory_counted_as_error() {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    fs::set_permissions(d.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let t = d.path().join("t");
    let locked = t.join("locked");
    fs::create_dir_all(locked.join("deep")).unwrap();
    fs::write(locked.join("deep/secret"), vec![9u8; 200_000]).unwrap();
    fs::create_dir(t.join("open")).unwrap();
    fs::write(t.join("open/visible"), vec![8u8; 30_000]).unwrap();
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o000)).unwrap();

    let visible =
        alloc(&t) + alloc(&locked) + alloc(&t.join("open")) + alloc(&t.join("open/visible"));
    let check = || {
        // Without root's DAC override, `locked` cannot be read: counted as an error, its own
        // blocks counted (its lstat works), nothing below it, and the walk goes on.
        let m = Sizer::new().measure(&t).unwrap();
        assert_eq!(m.errors, 1);
        assert_eq!(m.allocated, visible);
        assert_eq!((m.files, m.dirs), (1, 3));
        m
    };
    if is_root() {
        // Root bypasses permissions, so check from a thread running as `nobody`. The tree is
        // owned by root, so O_NOATIME is refused there too and the plain-open fallback is used.
        let as_root = Sizer::new().measure(&t).unwrap();
        assert_eq!(as_root.errors, 0);
        assert_eq!(as_root.files, 2);
        let m = as_nobody(check);
        assert_eq!(
            as_root.allocated - m.allocated,
            alloc(&locked.join("deep")) + alloc(&locked.join("deep/secret"))
        );
    } else {
        check();
    }
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o755)).unwrap();
}

/// Seconds and nanoseconds.
#[cfg(target_os = "linux")]
type Ts = (i64, i64);

/// (path, atime, mtime, ctime) of everything below `root`, read with lstat (which changes
/// nothing).
#[cfg(target_os = "linux")]
fn times(root: &Path) -> Vec<(PathBuf, Ts, Ts, Ts)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(p) = stack.pop() {
        let m = fs::symlink_metadata(&p).unwrap();
        out.push((
            p.clone(),
            (m.atime(), m.atime_nsec()),
            (m.mtime(), m.mtime_nsec()),
            (m.ctime(), m.ctime_nsec()),
        ));
        if m.is_dir() {
            // Listing changes atimes: collect names from our own bookkeeping instead.
            let names: &[&str] = match p.strip_prefix(root).unwrap().to_str().unwrap() {
                "" => &["a", "b", "top-file", "link"],
                "a" => &["a1", "f"],
                "a/a1" => &["g", "h"],
                "b" => &["sparse.ext4"],
                _ => &[],
            };
            stack.extend(names.iter().map(|n| p.join(n)));
        }
    }
    out
}

// `O_NOATIME` is Linux's: elsewhere a walk does set access times.
#[cfg(target_os = "linux")]
#[test]
fn scan_changes_no_timestamp_atime_of_walked_dirs() {
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("t");
    fs::create_dir_all(t.join("a/a1")).unwrap();
    fs::create_dir_all(t.join("b")).unwrap();
    fs::write(t.join("top-file"), b"x").unwrap();
    fs::write(t.join("a/f"), b"y").unwrap();
    fs::write(t.join("a/a1/g"), b"z").unwrap();
    fs::write(t.join("a/a1/h"), b"w").unwrap();
    sparse(&t.join("b/sparse.ext4"), 64 << 20, 4096);
    symlink("a/f", t.join("link")).unwrap();

    // Every atime older than its mtime: under relatime the next read would update it.
    let before_set = times(&t);
    assert_eq!(before_set.len(), 10);
    for (p, _, (ms, mns), _) in &before_set {
        rustix::fs::utimensat(
            rustix::fs::CWD,
            p,
            &rustix::fs::Timestamps {
                last_access: rustix::fs::Timespec {
                    tv_sec: ms - 3600,
                    tv_nsec: *mns as _,
                },
                last_modification: rustix::fs::Timespec {
                    tv_sec: *ms,
                    tv_nsec: *mns as _,
                },
            },
            rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
        )
        .unwrap();
    }
    let before = times(&t);
    for (_, a, m, _) in &before {
        assert!(a < m);
    }

    let mut s = Sizer::with_threads(2);
    let m = s.measure(&t).unwrap();
    assert_eq!((m.files, m.dirs), (6, 4));
    Sizer::with_threads(1).measure(&t).unwrap();
    Sizer::new().measure(&t.join("a")).unwrap();
    let after = times(&t);
    assert_eq!(before, after, "measuring changed a timestamp");

    // Control: on this file system a plain directory read does update the atime, so the check
    // above is not vacuous (skipped on a noatime mount, where nothing would change anyway).
    let vfs = rustix::fs::statvfs(&t).unwrap();
    if !vfs.f_flag.contains(rustix::fs::StatVfsMountFlags::NOATIME) {
        let a1 = t.join("a/a1");
        let old = fs::symlink_metadata(&a1).unwrap().atime();
        let _ = fs::read_dir(&a1).unwrap().count();
        assert_ne!(
            fs::symlink_metadata(&a1).unwrap().atime(),
            old,
            "control read"
        );
    }
}
