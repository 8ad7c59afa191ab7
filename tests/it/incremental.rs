//! Issue 11: an incremental rescan (the app's, reusing a `ScanMemo`) gives exactly the findings
//! a full fresh scan gives, over a randomized sequence of mutations of a fixture HOME: files
//! created, deleted, renamed, grown in place, touched, directories replaced by files, whole
//! subtrees added, inventory rows added and removed.

use crate::scan_options as options;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use smolsweep::model::ScanReport;
use smolsweep::scan::memo::{scan_with_memo_and, ScanMemo};
use smolsweep::scan::scan_with;
use smolsweep_fixtures::{Home, Layout};

/// Findings as JSON, everything compared (sizes, identities, verdicts, reasons, mounts).
fn findings(r: &ScanReport) -> Vec<serde_json::Value> {
    r.findings
        .iter()
        .map(|f| serde_json::to_value(f).unwrap())
        .collect()
}

fn write(p: &Path, bytes: usize) {
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, vec![b'x'; bytes]).unwrap();
}

/// Every path strictly below `dir` (files and directories).
fn below(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let p = e.path();
            if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                stack.push(p.clone());
            }
            out.push(p);
        }
    }
    out.sort();
    out
}

struct Fixture {
    _tmp: tempfile::TempDir,
    home: Home,
    /// Where mutations happen: smolvm `_shared` stores, pack-cache entries, Celesto disks.
    areas: Vec<PathBuf>,
    celesto: smolsweep_fixtures::celesto::CelestoData,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let home = Home::new(tmp.path(), Layout::Linux).unwrap();
    let shared = home.path(".cache/smolvm/vms/_shared");
    let pack = home.path(".cache/smolvm-pack");
    for s in 0..4 {
        let store = shared.join(format!("{:08x}", 0x1a2b_3c40 + s));
        for d in 0..5 {
            for f in 0..6 {
                write(
                    &store.join(format!("rootfs/usr/lib/p{d}/f{f}.so")),
                    100 * (f + d),
                );
            }
        }
        write(&store.join("manifest.json"), 40);
    }
    for p in 0..2 {
        let e = pack.join(format!("{:016x}", p + 0xabc));
        write(&e.join("layers/l0/blob"), 3000);
        write(&e.join("pack.json"), 10);
    }
    let celesto = home.celesto_data_dir().unwrap();
    for i in 0..4 {
        let id = format!("vm{i:02}");
        fs::write(celesto.disks().join(format!("{id}.qcow2")), vec![1u8; 5000]).unwrap();
        if i % 2 == 0 {
            celesto.row(&id, "stopped", "qemu", None).unwrap();
        }
    }
    // Old enough for the age guard, so orphans are judged rather than "too young".
    smolsweep_fixtures::age_tree(&home.root, smolsweep_fixtures::OLD).unwrap();
    let areas = vec![shared, pack, celesto.disks()];
    Fixture {
        _tmp: tmp,
        home,
        areas,
        celesto,
    }
}

#[test]
fn incremental_rescans_equal_full_scans_over_200_random_mutations() {
    let fx = fixture();
    let opts = options(&fx.home);
    let memo = ScanMemo::new();
    let seed = std::env::var("SMOLSWEEP_INCREMENTAL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(11u64);
    let mut rng = StdRng::seed_from_u64(seed);

    // First scan fills the memo; a rescan with nothing changed reads no directory again.
    let first = scan_with_memo_and(&opts, vec![], &memo);
    assert_eq!(findings(&first), findings(&scan_with(&opts, vec![])));
    assert!(
        first.findings.len() >= 10,
        "{} findings",
        first.findings.len()
    );
    let again = scan_with_memo_and(&opts, vec![], &memo);
    let st = memo.stats();
    assert_eq!(findings(&again), findings(&first));
    assert_eq!(
        st.read, 0,
        "nothing changed, yet directories were read: {st:?}"
    );
    assert!(st.reused > 40, "{st:?}");

    let mut reused = 0u64;
    let mut kinds = [0usize; 9];
    for step in 0..200 {
        let area = &fx.areas[rng.random_range(0..fx.areas.len())];
        let all = below(area);
        let files: Vec<&PathBuf> = all.iter().filter(|p| p.is_file()).collect();
        let dirs: Vec<&PathBuf> = all.iter().filter(|p| p.is_dir()).collect();
        let kind = rng.random_range(0..9);
        let what = match kind {
            // Create a file somewhere in the area.
            0 => {
                let parent = if dirs.is_empty() || rng.random_bool(0.3) {
                    area.clone()
                } else {
                    dirs[rng.random_range(0..dirs.len())].clone()
                };
                let p = parent.join(format!("new{step}.qcow2"));
                write(&p, rng.random_range(0..20_000));
                format!("create {}", p.display())
            }
            // Delete a file.
            1 if !files.is_empty() => {
                let p = files[rng.random_range(0..files.len())];
                fs::remove_file(p).unwrap();
                format!("delete {}", p.display())
            }
            // Rename a file, within its directory or to another one.
            2 if !files.is_empty() => {
                let p = files[rng.random_range(0..files.len())];
                let to = if dirs.is_empty() || rng.random_bool(0.5) {
                    p.with_file_name(format!("moved{step}"))
                } else {
                    dirs[rng.random_range(0..dirs.len())].join(format!("moved{step}"))
                };
                fs::rename(p, &to).unwrap();
                format!("rename {} -> {}", p.display(), to.display())
            }
            // Grow a file in place: its directory's mtime and ctime do not change.
            3 if !files.is_empty() => {
                let p = files[rng.random_range(0..files.len())];
                let mut f = fs::OpenOptions::new().append(true).open(p).unwrap();
                f.write_all(&vec![b'g'; rng.random_range(1..40_000)])
                    .unwrap();
                format!("grow {}", p.display())
            }
            // Touch a file or a directory.
            4 if !all.is_empty() => {
                let p = &all[rng.random_range(0..all.len())];
                let t = SystemTime::now() - Duration::from_secs(rng.random_range(0..100_000));
                fs::File::options()
                    .read(true)
                    .open(p)
                    .unwrap()
                    .set_modified(t)
                    .unwrap();
                format!("touch {}", p.display())
            }
            // Replace a directory by a file of the same name.
            5 if !dirs.is_empty() => {
                let p = dirs[rng.random_range(0..dirs.len())];
                fs::remove_dir_all(p).unwrap();
                write(p, 777);
                format!("replace dir {} by a file", p.display())
            }
            // Add a whole subtree (a new store or entry, or deeper inside one).
            6 => {
                let base = if dirs.is_empty() || rng.random_bool(0.5) {
                    area.clone()
                } else {
                    dirs[rng.random_range(0..dirs.len())].clone()
                };
                let t = base.join(format!("{step:016x}"));
                for i in 0..rng.random_range(1..5) {
                    write(&t.join(format!("d{i}/f")), 500 * i);
                }
                format!("subtree {}", t.display())
            }
            // Hard-link a file into another directory of any area: within one tree it is met
            // twice by one walk, across trees it is counted by the first measurement only.
            7 if !files.is_empty() => {
                let p = files[rng.random_range(0..files.len())];
                let other = &fx.areas[rng.random_range(0..fx.areas.len())];
                let targets: Vec<PathBuf> =
                    below(other).into_iter().filter(|d| d.is_dir()).collect();
                // Into a walked tree, or beside the Celesto disks (each file there is measured
                // itself). A link made where no scan looks raises no event where the memo
                // could see it; `FULL_READ_EVERY` bounds that, and it is not tested here.
                let dir = if targets.is_empty() || other == &fx.areas[2] && rng.random_bool(0.3) {
                    fx.areas[2].clone()
                } else {
                    targets[rng.random_range(0..targets.len())].clone()
                };
                let to = dir.join(format!("link{step}"));
                fs::hard_link(p, &to).unwrap();
                format!("hard link {} -> {}", p.display(), to.display())
            }
            // Change an inventory row: a disk gains or loses its record.
            _ => {
                let id = format!("vm{:02}", rng.random_range(0..6));
                let conn = rusqlite::Connection::open(&fx.celesto.db).unwrap();
                let n = conn
                    .execute("DELETE FROM vms WHERE id = ?1", [&id])
                    .unwrap();
                drop(conn);
                if n == 0 {
                    fx.celesto.row(&id, "stopped", "qemu", None).unwrap();
                }
                if rng.random_bool(0.5) {
                    write(&fx.celesto.disks().join(format!("{id}.qcow2")), 4096);
                }
                format!(
                    "inventory row {id} {}",
                    if n == 0 { "added" } else { "removed" }
                )
            }
        };
        kinds[kind] += 1;
        let inc = scan_with_memo_and(&opts, vec![], &memo);
        reused += memo.stats().reused;
        let full = scan_with(&opts, vec![]);
        let (a, b) = (findings(&inc), findings(&full));
        if a != b {
            let diff: Vec<_> = a.iter().zip(&b).filter(|(x, y)| x != y).take(3).collect();
            panic!(
                "step {step} (seed {seed}) after {what}: incremental {} findings, full {}; first differences: {diff:#?}",
                a.len(),
                b.len()
            );
        }
    }
    assert!(
        kinds.iter().all(|&k| k > 0),
        "every mutation kind ran: {kinds:?}"
    );
    // The memo was actually used, not bypassed.
    assert!(
        reused > 200 * 20,
        "directories reused over the run: {reused}"
    );
}

/// The rescan, checked against a full scan, and the memo's counts after it.
fn rescan_equals_full(fx: &Fixture, memo: &ScanMemo) -> smolsweep::scan::memo::MemoStats {
    let opts = options(&fx.home);
    let inc = scan_with_memo_and(&opts, vec![], memo);
    let st = memo.stats();
    assert_eq!(findings(&inc), findings(&scan_with(&opts, vec![])));
    st
}

#[test]
fn a_new_hard_link_to_a_remembered_file_is_not_counted_twice() {
    // A link made in one directory raises no event in the directory of the file's other name,
    // whose memo still sums it as a file with one link.
    let fx = fixture();
    let memo = ScanMemo::new();
    rescan_equals_full(&fx, &memo);
    rescan_equals_full(&fx, &memo);
    let store = fx.areas[0].join(format!("{:08x}", 0x1a2b_3c40 + 1));
    let file = store.join("rootfs/usr/lib/p3/f3.so");
    fs::hard_link(&file, store.join("rootfs/usr/again.so")).unwrap();
    rescan_equals_full(&fx, &memo);
    // Across two findings: counted by the first measurement only.
    fs::hard_link(&file, fx.areas[2].join("again.qcow2")).unwrap();
    rescan_equals_full(&fx, &memo);
    // Written through the other name: the remembered directory's sum is not reused for it.
    let mut f = fs::OpenOptions::new()
        .append(true)
        .open(fx.areas[2].join("again.qcow2"))
        .unwrap();
    f.write_all(&[b'g'; 30_000]).unwrap();
    rescan_equals_full(&fx, &memo);
}

#[test]
fn unchanged_trees_are_reused_whole_and_a_change_deep_inside_one_is_seen() {
    let fx = fixture();
    let memo = ScanMemo::new();
    rescan_equals_full(&fx, &memo);
    let st = rescan_equals_full(&fx, &memo);
    assert_eq!(st.read, 0, "{st:?}");
    assert!(st.reused > 40, "{st:?}");
    // Five levels down in one store.
    let deep = fx.areas[0]
        .join(format!("{:08x}", 0x1a2b_3c40 + 2))
        .join("rootfs/usr/lib/p4");
    write(&deep.join("new.so"), 12_345);
    let st = rescan_equals_full(&fx, &memo);
    assert!(
        st.read >= 1 && st.read <= 2,
        "only the changed directory is read: {st:?}"
    );
    // A file grown in place, then one removed, in the same directory.
    let mut f = fs::OpenOptions::new()
        .append(true)
        .open(deep.join("f1.so"))
        .unwrap();
    f.write_all(&[b'g'; 5000]).unwrap();
    rescan_equals_full(&fx, &memo);
    fs::remove_file(deep.join("f2.so")).unwrap();
    rescan_equals_full(&fx, &memo);
    // And nothing again.
    let st = rescan_equals_full(&fx, &memo);
    assert_eq!(st.read, 0, "{st:?}");
}

#[test]
fn a_name_moved_in_a_walked_tree_is_reported_and_a_write_in_place_is_not() {
    // The process table's memo (`scan::memo`) trusts remembered processes only while no name
    // moved in a walked tree: a renamed file changes what a sleeping holder's link text says.
    let fx = fixture();
    let memo = ScanMemo::new();
    let st = rescan_equals_full(&fx, &memo);
    assert!(st.names_moved && st.new_dirs > 0, "a first scan: {st:?}");
    let st = rescan_equals_full(&fx, &memo);
    assert!(!st.names_moved && st.new_dirs == 0, "{st:?}");
    let dir = fx.areas[0]
        .join(format!("{:08x}", 0x1a2b_3c40 + 2))
        .join("rootfs/usr/lib/p4");
    let mut f = fs::OpenOptions::new()
        .append(true)
        .open(dir.join("f1.so"))
        .unwrap();
    f.write_all(&[b'g'; 5000]).unwrap();
    let st = rescan_equals_full(&fx, &memo);
    assert!(
        !st.names_moved && st.new_dirs == 0,
        "grown in place: {st:?}"
    );
    fs::rename(dir.join("f1.so"), dir.join("moved.so")).unwrap();
    let st = rescan_equals_full(&fx, &memo);
    assert!(st.names_moved, "renamed: {st:?}");
    let st = rescan_equals_full(&fx, &memo);
    assert!(!st.names_moved, "{st:?}");
    fs::create_dir(dir.join("sub")).unwrap();
    let st = rescan_equals_full(&fx, &memo);
    assert!(
        st.names_moved && st.new_dirs == 1,
        "a new directory: {st:?}"
    );
    memo.clear();
    let st = rescan_equals_full(&fx, &memo);
    assert!(st.names_moved && st.new_dirs > 0, "after clear: {st:?}");
}

/// Fixture stores whose every tenth file (and, with `all`, every file) has a second name in
/// `outside`, a directory beside the HOME that no scan walks (as extracted image layers are
/// linked from another layer or a snapshot). Returns (store file, outside name) pairs.
fn link_outside(fx: &Fixture, outside: &Path, all: bool) -> Vec<(PathBuf, PathBuf)> {
    fs::create_dir_all(outside).unwrap();
    let files: Vec<PathBuf> = below(&fx.areas[0])
        .into_iter()
        .filter(|p| p.is_file())
        .collect();
    let mut out = Vec::new();
    for (i, p) in files.iter().enumerate() {
        if all || i % 10 == 0 {
            let to = outside.join(format!("l{i}"));
            fs::hard_link(p, &to).unwrap();
            out.push((p.clone(), to));
        }
    }
    assert!(out.len() >= 12, "{} links", out.len());
    out
}

#[test]
fn a_hard_linked_file_grown_through_its_other_name_is_seen_on_rescan() {
    // A write through a name outside every walked tree raises no event in the directory of the
    // name the scan sees: the memo must still see the file's new size and allocation.
    let fx = fixture();
    let links = link_outside(&fx, &fx.home.root.with_file_name("outside"), false);
    let memo = ScanMemo::new();
    rescan_equals_full(&fx, &memo);
    let st = rescan_equals_full(&fx, &memo);
    assert_eq!(st.read, 0, "{st:?}");
    for (i, (_, other)) in links.iter().enumerate().take(4) {
        let mut f = fs::OpenOptions::new().append(true).open(other).unwrap();
        f.write_all(&vec![b'g'; 5000 + 70_000 * i]).unwrap();
        drop(f);
        rescan_equals_full(&fx, &memo);
    }
    // Truncated through the other name, then rewritten to the same length (only its
    // allocation and times change).
    let (_, other) = &links[5];
    let len = fs::metadata(other).unwrap().len();
    fs::OpenOptions::new()
        .write(true)
        .open(other)
        .unwrap()
        .set_len(0)
        .unwrap();
    rescan_equals_full(&fx, &memo);
    fs::OpenOptions::new()
        .write(true)
        .open(other)
        .unwrap()
        .set_len(len)
        .unwrap();
    rescan_equals_full(&fx, &memo);
}

#[test]
fn a_hard_link_removed_elsewhere_changes_the_count_on_rescan() {
    // Removing the other name (outside, or in another finding) raises no event in the
    // remembered directory, yet changes which measurement counts the file.
    let fx = fixture();
    let links = link_outside(&fx, &fx.home.root.with_file_name("outside"), false);
    // Two names inside two findings: the first measurement counts the file, the other not.
    let (file, _) = &links[1];
    let twin = fx.areas[2].join("twin.qcow2");
    fs::hard_link(file, &twin).unwrap();
    let memo = ScanMemo::new();
    rescan_equals_full(&fx, &memo);
    rescan_equals_full(&fx, &memo);
    for (_, other) in links.iter().take(3) {
        fs::remove_file(other).unwrap();
        rescan_equals_full(&fx, &memo);
    }
    // The store's name goes: the Celesto-side name is now the one counted.
    fs::remove_file(file).unwrap();
    rescan_equals_full(&fx, &memo);
    // And a name made again elsewhere, then removed with the twin.
    fs::hard_link(&twin, fx.home.root.with_file_name("outside").join("again")).unwrap();
    rescan_equals_full(&fx, &memo);
    fs::remove_file(&twin).unwrap();
    rescan_equals_full(&fx, &memo);
}

#[test]
fn a_store_of_hard_links_rescans_without_rewalking() {
    // Every file of every store has a second name outside the HOME: a rescan with nothing
    // changed reads no directory again and stats only those files, once each.
    let fx = fixture();
    let links = link_outside(&fx, &fx.home.root.with_file_name("outside"), true);
    let memo = ScanMemo::new();
    rescan_equals_full(&fx, &memo);
    for _ in 0..3 {
        let st = rescan_equals_full(&fx, &memo);
        assert_eq!(st.read, 0, "a directory was read again: {st:?}");
        assert!(st.reused > 40, "{st:?}");
        // Only those files (and, on a file system that keeps small files inline, the
        // pack-cache blobs it then takes for sparse).
        let others = below(&fx.areas[1]).iter().filter(|p| p.is_file()).count() as u64;
        assert!(
            (links.len() as u64..=links.len() as u64 + others).contains(&st.restated),
            "each linked file is stat'ed once ({} linked): {st:?}",
            links.len()
        );
    }
    // A directory full of them is stat'ed relative to itself: a file grown through its other
    // name there is still seen, and so is one unlinked there.
    let mut f = fs::OpenOptions::new()
        .append(true)
        .open(&links[7].1)
        .unwrap();
    f.write_all(&[b'g'; 9000]).unwrap();
    drop(f);
    rescan_equals_full(&fx, &memo);
    fs::remove_file(&links[8].1).unwrap();
    rescan_equals_full(&fx, &memo);
}

/// How many events an inotify queue holds (`fs.inotify.max_queued_events`).
fn queue_length() -> usize {
    fs::read_to_string("/proc/sys/fs/inotify/max_queued_events")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(16_384)
}

/// Hazard: two VMs writing their disks between scans. Their writes alternate between two
/// remembered directories, so the kernel merges none of the events; once more were queued
/// than the queue holds (about 7 minutes of it), the memo was dropped whole and the next
/// rescan walked everything. Now the rescan reads only the two directories written in.
#[test]
fn vms_writing_their_disks_between_scans_do_not_overflow_the_memo_queue() {
    use std::os::unix::fs::FileExt;
    let fx = fixture();
    let memo = ScanMemo::new();
    rescan_equals_full(&fx, &memo);
    let st = rescan_equals_full(&fx, &memo);
    assert_eq!(st.read, 0, "{st:?}");
    // Two files in two remembered directories (two pack-cache entries, walked trees as a
    // machine's directory is), written in place in turn, 4 KiB each time.
    let pack = fx.areas[1].join(format!("{:016x}", 0xabc));
    let open = |p: PathBuf| fs::OpenOptions::new().write(true).open(p).unwrap();
    let disks = [
        open(pack.join("pack.json")),
        open(
            fx.areas[1]
                .join(format!("{:016x}", 0xabd))
                .join("pack.json"),
        ),
    ];
    let block = [b'w'; 4096];
    for i in 0..queue_length() + 1000 {
        for d in &disks {
            d.write_all_at(&block, (i % 2 * 4096) as u64).unwrap();
        }
    }
    let st = rescan_equals_full(&fx, &memo);
    assert!(
        st.read <= 2 && st.invalidated <= 2,
        "only the two directories written in are read again: {st:?}"
    );
    assert!(st.reused >= 40, "the rest is reused: {st:?}");
    assert!(!st.names_moved, "nothing was renamed: {st:?}");
    // And again, longer than before: each directory's watch reports once per scan.
    for _ in 0..3 {
        for i in 0..queue_length() {
            for d in &disks {
                d.write_all_at(&block, (i % 2 * 4096) as u64).unwrap();
            }
        }
        let st = rescan_equals_full(&fx, &memo);
        assert!(st.read <= 2 && st.invalidated <= 2, "{st:?}");
    }
    // A name created after the writes in a directory written in is still seen (its names
    // watch lasts).
    write(&pack.join("new.json"), 100);
    let st = rescan_equals_full(&fx, &memo);
    assert!(st.names_moved, "{st:?}");
}

/// The finding at `path` in a rescan that equals a full scan.
fn finding_at(fx: &Fixture, memo: &ScanMemo, path: &Path) -> Option<serde_json::Value> {
    let opts = options(&fx.home);
    let inc = scan_with_memo_and(&opts, vec![], memo);
    assert_eq!(findings(&inc), findings(&scan_with(&opts, vec![])));
    findings(&inc)
        .into_iter()
        .find(|f| f["path"] == path.to_str().unwrap())
}

/// A memo warmed by two scans, whose rescan with nothing changed lists no directory again.
fn warmed(fx: &Fixture) -> ScanMemo {
    let memo = ScanMemo::new();
    rescan_equals_full(fx, &memo);
    rescan_equals_full(fx, &memo);
    let st = rescan_equals_full(fx, &memo);
    assert_eq!(st.listings_read, 0, "nothing changed: {st:?}");
    assert!(st.listings_reused >= 5, "the judges' listings kept: {st:?}");
    memo
}

#[test]
fn a_rescan_after_a_file_appears_in_a_root_directory_sees_it() {
    // The judges' listings of the products' directories are kept between rescans while the
    // watches saw nothing there (issue 40, item 3): a disk that appears is an event there.
    let fx = fixture();
    let memo = warmed(&fx);
    let disk = fx.areas[2].join("vm77.qcow2");
    fs::write(&disk, vec![1u8; 5000]).unwrap();
    let f = finding_at(&fx, &memo, &disk).expect("the new disk is a finding");
    assert_eq!(f["kind"], "celesto.young_disk", "{f}");
    let st = memo.stats();
    assert!(st.listings_read >= 1 && st.listings_reused >= 1, "{st:?}");
}

#[test]
fn a_rescan_after_an_lstat_only_change_of_a_root_entry_sees_it() {
    // No name changes: only what `lstat` says of an entry of a listed directory (its times,
    // its size). Each is an event of the directory's watches (attributes; a write), which
    // drops the kept listing.
    let fx = fixture();
    let memo = warmed(&fx);
    let disk = fx.areas[2].join("vm01.qcow2");
    let kind = |memo: &ScanMemo| finding_at(&fx, memo, &disk).expect("judged")["kind"].clone();
    assert_eq!(kind(&memo), "celesto.orphan_disk");
    // Touched: its mtime is now, so a create may be under way.
    smolsweep_fixtures::set_mtime(&disk, SystemTime::now()).unwrap();
    assert_eq!(kind(&memo), "celesto.young_disk");
    // Old again, then grown in place by a write (its size and mtime change).
    smolsweep_fixtures::age_tree(&disk, smolsweep_fixtures::OLD).unwrap();
    assert_eq!(kind(&memo), "celesto.orphan_disk");
    assert_eq!(kind(&memo), "celesto.orphan_disk");
    fs::OpenOptions::new()
        .append(true)
        .open(&disk)
        .unwrap()
        .write_all(&[2u8; 3000])
        .unwrap();
    let f = finding_at(&fx, &memo, &disk).unwrap();
    assert_eq!(f["kind"], "celesto.young_disk", "{f}");
    assert_eq!(f["apparent_bytes"], 8000, "{f}");
}

#[test]
fn a_rescan_after_a_change_deep_inside_a_listed_subdirectory_sees_it() {
    // A subdirectory's own times change when a name is made in it, which is no event of the
    // directory that lists it: a kept listing's subdirectory entry is trusted only while a
    // watch of its own stands (else it is `lstat`ed again). An unrecorded machine directory
    // is young while anything in it changed within the age guard (its newest mtime is read
    // through listings all the way down).
    let fx = fixture();
    let smolvm = fx.home.smolvm().unwrap();
    smolvm.record("kept", serde_json::json!({})).unwrap();
    let ghost = smolvm
        .vms_dir()
        .join(smolsweep_fixtures::smolvm::Smolvm::hash("ghost"));
    write(&ghost.join("layers/l0/blob"), 2000);
    write(&ghost.join("name"), 5);
    smolsweep_fixtures::age_tree(&fx.home.root, smolsweep_fixtures::OLD).unwrap();
    let memo = warmed(&fx);
    let kind = |memo: &ScanMemo| finding_at(&fx, memo, &ghost).expect("judged")["kind"].clone();
    let old = kind(&memo);
    assert_ne!(old, "smolvm.young_dir");
    // A name made and removed again: only the times of `l0` tell (no new entry anywhere).
    write(&ghost.join("layers/l0/new"), 10);
    fs::remove_file(ghost.join("layers/l0/new")).unwrap();
    assert_eq!(kind(&memo), "smolvm.young_dir");
    // Aged again: what the listings kept of the tree's times follows.
    smolsweep_fixtures::age_tree(&ghost, smolsweep_fixtures::OLD).unwrap();
    assert_eq!(kind(&memo), old);
}

#[test]
fn after_the_watch_queue_overflowed_a_rescan_lists_every_directory_again() {
    // An event lost to a full queue may have been the one that said a listing changed: the
    // memo keeps nothing then.
    let fx = fixture();
    let memo = warmed(&fx);
    let kept = memo.stats().listings_kept;
    let busy = fx.areas[2].join("busy.tmp");
    for _ in 0..queue_length() / 2 + 100 {
        fs::write(&busy, b"x").unwrap();
        fs::remove_file(&busy).unwrap();
    }
    // Queued after the overflow: its event is lost.
    let disk = fx.areas[2].join("vm01.qcow2");
    smolsweep_fixtures::set_mtime(&disk, SystemTime::now()).unwrap();
    let f = finding_at(&fx, &memo, &disk).unwrap();
    assert_eq!(f["kind"], "celesto.young_disk", "{f}");
    let st = memo.stats();
    assert!(st.invalidated >= 1 && st.listings_read >= kept, "{st:?}");
}
