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
    let v = ScanView::of(&r, &smolsweep::plan::Plan::reclaimable(&r));
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
    let plan = smolsweep::compact_plan(&r, &[]).unwrap();
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
        smolsweep::compact_plan(&r, &["smolvm:m2".into()]).is_err(),
        "never planned"
    );
}

/// Hazard (issue 39, item 1): the window applies a rule saved after its scan to the report it
/// shows (`target::apply_keeps_at`); the disk that rule keeps stopped being offered only at the
/// next scan.
#[test]
fn a_disk_kept_after_the_scan_is_no_longer_offered_for_compaction() {
    let sc = Scratch::new();
    let disks = stopped_machines(&sc, &["m1", "m2"]);
    let mut r = scan(&sc);
    assert_eq!(r.compact.compactable_disks, 2);
    let (code, _, err) = cli(&sc, &["keep", "add", "smolvm:m2"]);
    assert_eq!(code, 0, "{err}");
    let keep_file = sc.data.join("keep.json");
    smolsweep::apply_keeps_at(&mut r, &keep_file);
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

/// Hazard (issue 39, item 4): compaction was offered only where nobody looks. The first
/// screen's "Next:" names `smolsweep compact` when something is compactable; `why` of a machine
/// and of a disk gives the command; a machine named to `compact` while it runs is told that it
/// runs and how to stop it.
#[test]
fn compaction_is_named_where_people_look_first_screen_why_and_a_running_machine() {
    let sc = Scratch::new();
    let disks = stopped_machines(&sc, &["m1"]);
    let r = scan(&sc);
    let total = smolsweep::view::bytes(r.compact.compactable_bytes);
    let (_, first, _) = cli(&sc, &["scan"]);
    let next = &first[first.find("Next:").expect("next steps")..];
    assert!(
        next.contains(&format!(
            "`smolsweep compact` gives back {total} inside 1 disk"
        )),
        "{first}"
    );
    // `why` of the machine and of its disk.
    let (code, why_m, _) = cli(&sc, &["why", "smolvm:m1"]);
    assert_eq!(code, 0, "{why_m}");
    assert!(
        why_m.contains("`smolsweep compact smolvm:m1` gives back about"),
        "{why_m}"
    );
    let (code, why_d, _) = cli(&sc, &["why", disks[0].to_str().unwrap()]);
    assert_eq!(code, 0, "{why_d}");
    assert!(
        why_d.contains(&format!("`smolsweep compact {}`", disks[0].display())),
        "{why_d}"
    );
    // The command `why` gives is one `compact` takes.
    let (code, dry, err) = cli(&sc, &["compact", "-n", "smolvm:m1"]);
    assert_eq!(code, 0, "{dry}{err}");

    // Started (recorded running with a live VM): `compact m1` says it runs and how to stop it.
    let sm = sc.home.smolvm().unwrap();
    let bin = smolsweep_fixtures::vmm::standin_bin(Path::new(env!("CARGO_TARGET_TMPDIR")));
    let vm = smolsweep_fixtures::vmm::boot_vm(&bin, &sc.home.root, disks[0].parent().unwrap());
    sm.record("m1", json!({"state": "running", "pid": vm.pid()}))
        .unwrap();
    let (code, out, err) = cli(&sc, &["compact", "m1"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("smolvm:m1 runs ("), "{err}");
    assert!(
        err.contains(
            "stop it with `smolsweep stop smolvm:m1`, then run `smolsweep compact smolvm:m1`"
        ),
        "{err}"
    );
    let (_, first, _) = cli(&sc, &["scan"]);
    assert!(
        !first.contains("smolsweep compact"),
        "nothing compactable now:\n{first}"
    );
}

/// Hazard (issue 39, item 4): a disk left out of a compaction was "Not planned: disk:/…" in the
/// CLI, "Not included: disk:/…" in the window and a dialog line that named no disk. One wording
/// on every surface: under "Not planned:", the disk's path and why.
#[test]
fn a_skipped_disk_is_worded_one_way_on_every_surface() {
    let sc = Scratch::new();
    let disks = stopped_machines(&sc, &["m1"]);
    let overlay = disks[0].with_file_name("overlay.raw");
    let r = scan(&sc);
    let line = format!(
        "{}: cannot tell what compacting would give back (not an ext4 file system)",
        overlay.display()
    );
    // The CLI's plan.
    let (_, dry, _) = cli(&sc, &["compact", "-n"]);
    // (The terminal's width wraps it; its continuations are indented.)
    let flat = dry.replace("\n  ", "\n").replace("\n", " ");
    assert!(flat.contains(&format!("Not planned: {line}")), "{dry}");
    // The window's dialog (its refusals and its heading) and the tray's native dialog.
    let core = smolsweep::compact_plan(&r, &[]).unwrap();
    let plan = smolsweep::view::runs::plan_of(&r, core);
    assert_eq!(plan.refused.len(), 1, "{:#?}", plan.refused);
    assert_eq!(plan.refused[0].line, line);
    assert_eq!(plan.confirmation.not_planned, vec![line.clone()]);
    let ask = smolsweep::view::window::compact_ask(plan);
    assert!(
        ask.message.contains(&format!("Not planned:\n• {line}")),
        "{}",
        ask.message
    );
    assert_eq!(
        smolsweep::view::words::Word::NotPlanned.text(),
        smolsweep::view::NOT_PLANNED
    );
}

/// Hazard (issue 39, item 4): `browse` showed machines without the space inside their disks and
/// could not compact them. Its machine row shows what compacting gives back, and `c` there
/// plans `smolsweep compact NAME`, reviews it and runs it through the executor (journaled as
/// browse), the disk smaller afterwards.
#[test]
fn browse_shows_compactable_space_on_a_machine_row_and_compacts_it() {
    use crate::browse::{command_line, Tmux};
    let sc = Scratch::new();
    let disks = stopped_machines(&sc, &["m1"]);
    let before = smolsweep_fixtures::disks::allocated(&disks[0]);
    let r = scan(&sc);
    let size = smolsweep::view::bytes(r.compact.compactable_bytes);
    let tmux = Tmux::new(sc.dir());
    let mut vars = sc.home.env_vars();
    vars.push(("SMOLSWEEP_DATA_DIR".into(), sc.data.display().to_string()));
    let cmd = command_line(vars, "/usr/bin:/bin:/usr/sbin:/sbin", "C.UTF-8", "browse");
    tmux.ok(&[
        "new-session",
        "-d",
        "-s",
        "b",
        "-x",
        "120",
        "-y",
        "40",
        &cmd,
    ]);
    tmux.cursor_to("Machines (1)");
    tmux.keys(&["Enter"]);
    tmux.cursor_to("smolvm   machine  m1");
    let row = tmux.screen();
    assert!(row.contains(&format!("{size} compactable")), "{row}");
    assert!(row.contains("c Compact"), "{row}");
    tmux.keys(&["c"]);
    let review = tmux.wait_for("the question", |s| s.contains("? [y/N]"));
    assert!(review.contains("Compact 1 disk"), "{review}");
    assert!(
        review.contains("Not planned:"),
        "the overlay, worded as everywhere:\n{review}"
    );
    tmux.keys(&["y"]);
    let done = tmux.wait_for("the closing line", |s| s.contains(" failed"));
    assert!(done.contains("1 done, 0 skipped, 0 failed"), "{done}");
    assert!(
        smolsweep_fixtures::disks::allocated(&disks[0]) + (11 << 20) <= before,
        "the disk gave its free space back"
    );
    let (_, history, _) = cli(&sc, &["history", "--json"]);
    let v: Value = serde_json::from_str(&history).unwrap();
    assert_eq!(v["runs"][0]["origin"]["command"], "browse", "{v}");
    tmux.keys(&["x"]);
    tmux.wait_for("the list again", |s| s.contains("q quit"));
    tmux.keys(&["q"]);
}
