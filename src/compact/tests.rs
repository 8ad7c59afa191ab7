//! Estimates of real images made offline with e2fsprogs (`mke2fs -d`, `debugfs -w`) and
//! qemu-img (`convert`, overlays over a backing file), checked against `dumpe2fs -h`.

use super::*;
use std::path::PathBuf;

use smolsweep_fixtures::disks::{debugfs_w, ext4_image as ext4, random_file, run, s};

/// A number `dumpe2fs -h` gives, by its label.
fn dumpe2fs(img: &Path, label: &str) -> u64 {
    let out = run("dumpe2fs", &["-h", s(img)]);
    let line = out.lines().find(|l| l.starts_with(label)).unwrap();
    line.split_whitespace().last().unwrap().parse().unwrap()
}

/// "Free blocks" of `dumpe2fs -h`.
fn dumpe2fs_free(img: &Path) -> u64 {
    dumpe2fs(img, "Free blocks:")
}

/// "Free blocks" × "Block size" of `dumpe2fs -h`.
fn dumpe2fs_free_bytes(img: &Path) -> u64 {
    dumpe2fs_free(img) * dumpe2fs(img, "Block size:")
}

/// A qcow2 overlay over `base` holding the clusters where `guest` differs from it.
fn overlay(guest: &Path, base: &Path, fmt: &str, ov: &Path) -> PathBuf {
    let q = |a: &[&str]| run("qemu-img", a);
    q(&[
        "create",
        "-q",
        "-f",
        "qcow2",
        "-b",
        s(guest),
        "-F",
        "raw",
        s(ov),
    ]);
    q(&["rebase", "-q", "-b", s(base), "-F", fmt, s(ov)]);
    ov.to_path_buf()
}

fn known(path: &Path) -> Estimate {
    estimate(path).unwrap_or_else(|e| panic!("{}: {e:?}", path.display()))
}

fn cannot_tell(path: &Path) -> String {
    match estimate(path) {
        Ok(e) => panic!("{} estimated: {e:?}", path.display()),
        Err((_, CannotTell(why))) => why,
    }
}

const MB: u64 = 1 << 20;

#[test]
fn compact_raw_ext4_with_a_deleted_file_counts_its_blocks_and_matches_dumpe2fs() {
    let t = tempfile::tempdir().unwrap();
    let img = ext4(t.path(), "a.ext4", "128M", &[("big", 30)], &[]);
    let before = known(&img);
    assert!(before.compactable_bytes < 4 * MB, "{before:?}");
    debugfs_w(&img, "rm /big");
    let e = known(&img);
    let map = ext4::free_map(&mut Raw {
        file: &open_disk(&img).unwrap(),
        budget: Budget::new(),
    })
    .unwrap();
    assert_eq!(map.free_blocks, dumpe2fs_free(&img));
    assert_eq!(map.free_blocks, map.sb_free_blocks);
    assert_eq!(e.guest_free_bytes, dumpe2fs_free_bytes(&img));
    assert!(e.compactable_bytes >= 29 * MB, "{e:?}");
    assert!(
        e.compactable_bytes <= before.compactable_bytes + 31 * MB,
        "{e:?}"
    );
    assert!(e.compactable_bytes <= e.allocated_bytes);
    // e2fsprogs' own discard on a copy punches out exactly what the estimate counted.
    let copy = t.path().join("copy.ext4");
    run("cp", &["--sparse=always", s(&img), s(&copy)]);
    let before_copy = known(&copy);
    assert_eq!(before_copy.compactable_bytes, e.compactable_bytes);
    run("e2fsck", &["-fp", "-E", "discard", s(&copy)]);
    let after = known(&copy);
    // (e2fsck's check-time writes may allocate a few host blocks back.)
    let freed = before_copy.allocated_bytes - after.allocated_bytes;
    assert!(
        freed <= e.compactable_bytes && e.compactable_bytes - freed <= 16384,
        "{before_copy:?} {after:?}"
    );
    assert_eq!(after.compactable_bytes, 0);
}

#[test]
fn compact_free_blocks_match_dumpe2fs_across_layouts() {
    let t = tempfile::tempdir().unwrap();
    // 32-byte descriptors without flex_bg, 1 KiB blocks (first data block 1), sparse_super2,
    // and a large sparse file system whose many groups are BLOCK_UNINIT.
    let layouts: [(&str, &[&str]); 4] = [
        ("2G", &[]),
        ("300M", &["-O", "^64bit,^flex_bg", "-b", "4096"]),
        ("96M", &["-b", "1024"]),
        ("512M", &["-O", "sparse_super2"]),
    ];
    for (i, (size, opts)) in layouts.iter().enumerate() {
        let img = ext4(t.path(), &format!("l{i}.ext4"), size, &[("f", 3)], opts);
        debugfs_w(&img, "rm /f");
        let e = known(&img);
        assert_eq!(
            e.guest_free_bytes,
            dumpe2fs_free_bytes(&img),
            "{size} {opts:?}: {e:?}"
        );
        assert!(e.compactable_bytes >= 2 * MB, "{size} {opts:?}: {e:?}");
    }
}

#[test]
fn compact_estimate_reads_stay_within_the_stated_bound() {
    let t = tempfile::tempdir().unwrap();
    let img = ext4(t.path(), "b.ext4", "2G", &[], &[]);
    let e = known(&img);
    // 1 KiB superblock, 16 descriptors, and at most one 4 KiB bitmap per group (16 groups).
    assert!(e.read_bytes <= 1024 + 4096 + 16 * 4096, "{e:?}");
    let q = t.path().join("b.qcow2");
    run("qemu-img", &["convert", "-O", "qcow2", s(&img), s(&q)]);
    let e = known(&q);
    // plus header, L1 and 4 L2 tables of 64 KiB; guest reads are rounded to nothing more.
    assert!(
        e.read_bytes <= 1024 + 4096 + 16 * 4096 + 112 + 64 + 4 * 65536,
        "{e:?}"
    );
}

#[test]
fn compact_qcow2_converted_counts_only_whole_free_clusters() {
    let t = tempfile::tempdir().unwrap();
    let img = ext4(t.path(), "c.ext4", "256M", &[("big", 20)], &[]);
    debugfs_w(&img, "rm /big");
    let q = t.path().join("c.qcow2");
    run("qemu-img", &["convert", "-O", "qcow2", s(&img), s(&q)]);
    let e = known(&q);
    assert_eq!(e.format, Format::Qcow2);
    assert_eq!(e.guest_free_bytes, dumpe2fs_free_bytes(&img));
    assert!(e.compactable_bytes >= 19 * MB, "{e:?}");
    assert!(e.compactable_bytes <= 21 * MB, "{e:?}");
    assert_eq!(e.compactable_bytes % 65536, 0);
}

#[test]
fn compact_qcow2_overlay_counts_its_own_clusters_not_the_base() {
    let t = tempfile::tempdir().unwrap();
    // The base holds A (10 MB); the guest then wrote B (20 MB) and deleted both.
    let base = ext4(t.path(), "base.raw", "256M", &[("a", 10)], &[]);
    let guest = t.path().join("guest.raw");
    std::fs::copy(&base, &guest).unwrap();
    random_file(t.path(), "b", 20);
    debugfs_w(&guest, &format!("write {} /b", s(&t.path().join("b"))));
    debugfs_w(&guest, "rm /b");
    debugfs_w(&guest, "rm /a");
    // The overlay holds what the guest changed over the base (`rebase` in safe mode copies
    // exactly the clusters where the two differ).
    let ov = overlay(&guest, &base, "raw", &t.path().join("ov.qcow2"));
    let chain = run("qemu-img", &["info", "--backing-chain", s(&ov)]);
    assert!(chain.contains("base.raw"), "{chain}");
    let e = known(&ov);
    assert_eq!(e.guest_free_bytes, dumpe2fs_free_bytes(&guest));
    assert!(e.compactable_bytes >= 19 * MB, "{e:?}");
    assert!(
        e.compactable_bytes <= 21 * MB,
        "A's blocks are the base's: {e:?}"
    );
    // A second overlay level over a qcow2 base reads through both.
    let mid = t.path().join("mid.qcow2");
    run("qemu-img", &["convert", "-O", "qcow2", s(&base), s(&mid)]);
    let top = overlay(&guest, &mid, "qcow2", &t.path().join("top.qcow2"));
    let e2 = known(&top);
    assert_eq!(e2.guest_free_bytes, e.guest_free_bytes);
    assert_eq!(e2.compactable_bytes, e.compactable_bytes);
}

#[test]
fn compact_needs_recovery_is_cannot_tell() {
    let t = tempfile::tempdir().unwrap();
    let img = ext4(t.path(), "r.ext4", "64M", &[("f", 2)], &[]);
    debugfs_w(&img, "feature needs_recovery");
    assert!(cannot_tell(&img).contains("journal needs recovery"));
    let q = t.path().join("r.qcow2");
    run("qemu-img", &["convert", "-O", "qcow2", s(&img), s(&q)]);
    assert!(cannot_tell(&q).contains("journal needs recovery"));
}

#[test]
fn compact_errors_state_and_unknown_features_are_cannot_tell() {
    let t = tempfile::tempdir().unwrap();
    let img = ext4(t.path(), "e.ext4", "64M", &[], &[]);
    debugfs_w(&img, "ssv state 3");
    assert!(cannot_tell(&img).contains("errors"));
    debugfs_w(&img, "ssv state 0");
    assert!(cannot_tell(&img).contains("not cleanly unmounted"));
    let big = ext4(t.path(), "g.ext4", "64M", &[], &["-O", "bigalloc"]);
    assert!(cannot_tell(&big).contains("bigalloc"));
    let meta = ext4(
        t.path(),
        "m.ext4",
        "64M",
        &[],
        &["-O", "meta_bg,^resize_inode"],
    );
    assert!(cannot_tell(&meta).contains("meta_bg"));
    // A superblock whose free count disagrees with the bitmaps (a misread, or an inconsistent
    // file system) is not trusted.
    let odd = ext4(t.path(), "o.ext4", "64M", &[], &[]);
    debugfs_w(&odd, "ssv free_blocks_count 7");
    assert!(cannot_tell(&odd).contains("disagree"));
}

#[test]
fn compact_not_ext4_is_cannot_tell() {
    let t = tempfile::tempdir().unwrap();
    let zero = t.path().join("zero.raw");
    std::fs::write(&zero, vec![0u8; 8 << 20]).unwrap();
    assert_eq!(cannot_tell(&zero), "not an ext4 file system");
    let q = t.path().join("zero.qcow2");
    run("qemu-img", &["create", "-q", "-f", "qcow2", s(&q), "64M"]);
    assert_eq!(cannot_tell(&q), "not an ext4 file system");
    assert!(cannot_tell(&t.path().join("missing")).contains("could not be opened"));
}

#[test]
fn compact_compressed_or_snapshotted_qcow2_is_cannot_tell() {
    let t = tempfile::tempdir().unwrap();
    let img = ext4(t.path(), "z.ext4", "64M", &[("f", 2)], &[]);
    let c = t.path().join("c.qcow2");
    run(
        "qemu-img",
        &["convert", "-c", "-O", "qcow2", s(&img), s(&c)],
    );
    assert!(cannot_tell(&c).contains("compressed"));
    let q = t.path().join("s.qcow2");
    run("qemu-img", &["convert", "-O", "qcow2", s(&img), s(&q)]);
    run("qemu-img", &["snapshot", "-c", "s1", s(&q)]);
    assert!(cannot_tell(&q).contains("internal snapshots"));
}

#[test]
fn compact_estimate_is_reused_until_the_disk_or_its_base_changes() {
    let t = tempfile::tempdir().unwrap();
    let base = ext4(t.path(), "base.raw", "64M", &[("a", 4)], &[]);
    let ov = t.path().join("ov.qcow2");
    run(
        "qemu-img",
        &[
            "create",
            "-q",
            "-f",
            "qcow2",
            "-b",
            s(&base),
            "-F",
            "raw",
            s(&ov),
        ],
    );
    let first = estimate_cached(&ov).unwrap();
    let again = estimate_cached(&ov).unwrap();
    assert_eq!(first, again);
    debugfs_w(&base, "rm /a");
    // The base changed under the overlay: read again, and its deleted file is the base's.
    let after = estimate_cached(&ov).unwrap();
    assert_ne!(after.guest_free_bytes, first.guest_free_bytes);
    assert_eq!(after.compactable_bytes, 0);
    // The cache key is the chain's identities: a hit returns exactly what was computed.
    let key: Vec<Ident> = [ident(&ov).unwrap(), ident(&base).unwrap()].to_vec();
    let cache = CACHE.lock().unwrap();
    assert_eq!(cache.as_ref().unwrap().get(&key), Some(&Ok(after)));
}
