//! Issue 39: compaction as every surface offers and counts it. A keep rule shapes what is
//! estimated, counted, offered and planned for compaction exactly as for deletion (item 1), and
//! compaction is found where people look (item 4): the first screen's next steps, `why`, a
//! running machine named to `compact`, one wording for a disk left out.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use smolsweep::model::{Product, ScanReport};
use smolsweep::tray::{TrayModel, TraySettings};
use smolsweep::view::ScanView;
use smolsweep_fixtures::disks::{debugfs_w, ext4_image};
use smolsweep_fixtures::smolvm::DiskSet;
use smolsweep_fixtures::{age_tree, Scratch, OLD};

/// `smolsweep ARGS` in `sc`'s HOME: exit code, stdout, stderr.
pub(crate) fn cli(sc: &Scratch, args: &[&str]) -> (i32, String, String) {
    let o = sc
        .command(env!("CARGO_BIN_EXE_smolsweep"), args)
        .env("LANG", "C.UTF-8")
        .env("COLUMNS", "100")
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8(o.stdout).unwrap(),
        String::from_utf8(o.stderr).unwrap(),
    )
}

/// An ext4 image with 12 MiB written and deleted and 2 MiB kept, at `path`.
pub(crate) fn freed_disk(path: &Path, scratch: &Path) -> PathBuf {
    let img = ext4_image(scratch, "img.ext4", "64M", &[("big", 12), ("keep", 2)], &[]);
    debugfs_w(&img, "rm /big");
    let _ = std::fs::remove_file(path);
    std::fs::rename(&img, path).unwrap();
    path.to_path_buf()
}

/// smolvm machines `names`, each recorded stopped with a real ext4 `storage.raw` whose guest
/// freed 12 MiB; their storage paths, in order.
pub(crate) fn stopped_machines(sc: &Scratch, names: &[&str]) -> Vec<PathBuf> {
    let sm = sc.home.smolvm().unwrap();
    let disks = names
        .iter()
        .map(|n| {
            sm.record(n, json!({"state": "stopped"})).unwrap();
            let dir = sm
                .machine_dir(
                    n,
                    DiskSet::Raw {
                        storage: 1 << 20,
                        overlay: 1 << 16,
                    },
                )
                .unwrap();
            freed_disk(&dir.join("storage.raw"), sc.dir())
        })
        .collect();
    age_tree(&sc.home.root, OLD).unwrap();
    disks
}

/// A scan of `sc`'s HOME through the library, with its keep rules (`sc.data`).
pub(crate) fn scan(sc: &Scratch) -> ScanReport {
    let mut opts = crate::scan_options(&sc.home);
    let mut vars = sc.home.env_vars();
    vars.push(("PATH".into(), "/usr/bin:/bin".into()));
    vars.push((
        "SMOLSWEEP_DATA_DIR".into(),
        sc.data.to_string_lossy().into_owned(),
    ));
    let euid = opts.env.euid;
    opts.env = smolsweep::env::EnvSnapshot::from_pairs(sc.home.root.clone(), vars);
    opts.env.euid = euid;
    smolsweep::scan::scan(&opts)
}

fn disk<'a>(r: &'a ScanReport, p: &Path) -> &'a smolsweep::model::DiskEstimate {
    r.compact
        .disks
        .iter()
        .find(|d| d.path == p)
        .unwrap_or_else(|| panic!("{} not listed: {:#?}", p.display(), r.compact))
}

/// Hazard (issue 39, item 1): after `keep add smolvm:m2` the scan said "Compactable: 184 MB
/// inside 2 disks", `compact -n` headed "Compact 2 disks; about 184 MB" and ended with another
/// total, and the window's card and the tray kept offering the kept disk. A kept machine's disk
/// is never estimated, counted, offered or planned, on every surface, with one total per screen.
#[test]
fn a_kept_machines_disk_is_never_estimated_counted_offered_or_planned_for_compaction() {
    let sc = Scratch::new();
    let disks = stopped_machines(&sc, &["m1", "m2"]);
    let (code, _, err) = cli(&sc, &["keep", "add", "smolvm:m2"]);
    assert_eq!(code, 0, "{err}");
    let r = scan(&sc);

    // Estimated and counted: only m1's disk.
    let (m1, m2) = (disk(&r, &disks[0]), disk(&r, &disks[1]));
    assert!(m1.compactable_bytes >= 11 << 20, "{m1:#?}");
    assert!(m1.kept.is_none());
    assert!(m2.kept.is_some(), "{m2:#?}");
    assert_eq!((m2.compactable_bytes, m2.read_bytes), (0, 0), "never read");
    assert_eq!(r.compact.compactable_disks, 1);
    assert_eq!(r.compact.compactable_bytes, m1.compactable_bytes);
    let total = smolsweep::view::bytes(m1.compactable_bytes);

    // The scan's first screen and -v.
    let (_, text, _) = cli(&sc, &["scan"]);
    assert!(
        text.contains(&format!("Compactable: {total} inside 1 disk ")),
        "{text}"
    );
    let (_, verbose, _) = cli(&sc, &["scan", "-v"]);
    assert!(verbose.contains("kept by you"), "{verbose}");

    // The tray, the window's card and its machine rows.
    let tray = TrayModel::from_report(&r, &TraySettings::default());
    let label = &tray.compact.as_ref().expect("m1 is offered").label;
    assert!(
        label.starts_with(&format!("Compact 1 disk: {total}")),
        "{label}"
    );
    let v = ScanView::of(&r);
    assert_eq!(v.compact.compactable_disks, 1);
    assert_eq!(v.compact.size, total);
    let row = |name: &str| v.machines.iter().find(|m| m.name == name).unwrap();
    assert!(row("m1").compactable.is_some());
    assert_eq!(row("m2").compactable, None, "a kept machine offers nothing");

    // `compact -n`: one disk, one total, from its head to its last line.
    let (code, dry, err) = cli(&sc, &["compact", "-n"]);
    assert_eq!(code, 0, "{dry}{err}");
    let sizes: Vec<&str> = dry
        .split(['(', ')', ';', ',', '\n'])
        .filter(|s| s.contains(" MB") || s.contains(" kB"))
        .collect();
    assert!(!sizes.is_empty(), "{dry}");
    eprintln!("{dry}");
    for s in &sizes {
        assert!(s.contains(&total), "a second total {s:?} in:\n{dry}");
    }
    assert!(!dry.contains(disks[1].to_str().unwrap()), "{dry}");
    let plan = smolsweep::target::compact_plan(&r, &[]).unwrap();
    assert_eq!(plan.actions.len(), 1, "{plan:#?}");
    let m2_dir = disks[1].parent().unwrap().to_str().unwrap();
    assert!(
        plan.skipped_at_plan.iter().all(|s| !s.id.contains(m2_dir)),
        "{plan:#?}"
    );

    // Named, it is refused with the rule, and nothing is planned.
    let (code, out, err) = cli(&sc, &["compact", "-y", "smolvm:m2"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("kept by you (keep rule"), "{err}");
    assert!(
        smolsweep::target::compact_plan(&r, &["smolvm:m2".into()]).is_err(),
        "never planned"
    );
}

/// Hazard (issue 39, item 1): the window applies a rule saved after its scan to the report it
/// shows; the disk that rule keeps stopped being offered only at the next scan.
#[test]
fn a_disk_kept_after_the_scan_is_no_longer_offered_for_compaction() {
    let sc = Scratch::new();
    let disks = stopped_machines(&sc, &["m1", "m2"]);
    let mut r = scan(&sc);
    assert_eq!(r.compact.compactable_disks, 2);
    let (code, _, err) = cli(&sc, &["keep", "add", "smolvm:m2"]);
    assert_eq!(code, 0, "{err}");
    let keep_file = sc.data.join("keep.json");
    smolsweep::keep::apply_at(&mut r, &keep_file);
    assert!(disk(&r, &disks[1]).kept.is_some());
    assert_eq!(r.compact.compactable_disks, 1);
    let tray = TrayModel::from_report(&r, &TraySettings::default());
    assert!(tray.compact.unwrap().label.starts_with("Compact 1 disk:"));
    // Released, the next scan (the window scans again after a rule is removed) estimates it.
    let (code, _, err) = cli(&sc, &["keep", "remove", &keep_id(&sc)]);
    assert_eq!(code, 0, "{err}");
    let r = scan(&sc);
    assert_eq!(r.compact.compactable_disks, 2);
    assert_eq!(
        r.compact.of_machine(Product::Smolvm, "m2"),
        disk(&r, &disks[1]).compactable_bytes
    );
}

fn keep_id(sc: &Scratch) -> String {
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(sc.data.join("keep.json")).unwrap()).unwrap();
    v["rules"][0]["id"].as_str().unwrap().to_string()
}
