//! The layout tables against the scan and the uninstall (issue 37): every row's example laid out
//! in a scratch HOME is found by the scan as one of the row's kinds (or, for what is never a
//! finding, is not one), and every row directly in a state directory is recognised by the
//! uninstall. A name one knows and the other does not fails here.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use smolsweep_fixtures::{age_tree, Home, Layout, OLD};

use crate::layout::{self, Is, Made, Place};
use crate::model::ScanReport;
use crate::root_kind::RootKind;

fn opts(home: &Home) -> crate::scan::ScanOptions {
    crate::tests::scan_options(home, &[("PATH", "/usr/bin:/bin")])
}

/// Where each place lies in this HOME: the roots as the scan resolves them, then every
/// directory of rows below the row that leads to it.
fn places(o: &crate::scan::ScanOptions) -> HashMap<Place, PathBuf> {
    let mut at = HashMap::new();
    let smol = crate::roots::smolvm_roots(o.platform, &o.env);
    let set = &smol.sets[0];
    for (k, p) in set.named_roots() {
        at.insert(Place::Root(k), p.clone());
    }
    at.insert(Place::Root(RootKind::VmsDir), set.vms_dirs[0].clone());
    let cel = crate::roots::celesto_roots(o.platform, &o.env);
    let data = cel
        .data_dirs
        .iter()
        .find(|c| c.path.ends_with(".local/state/celesto"))
        .expect("the default data directory");
    at.insert(Place::Root(RootKind::DataDir), data.path.clone());
    let images = cel
        .image_dirs
        .iter()
        .find(|c| c.path.ends_with(".celesto/images"))
        .expect("the default image cache");
    at.insert(Place::Root(RootKind::ImageDir), images.path.clone());
    at.insert(Place::Root(RootKind::CelestoHome), cel.home_dir.clone());
    at.insert(Place::Root(RootKind::SocketDir), cel.socket_dir.clone());
    // Directories of rows, each below the row that holds it (rows may lead one level at a time).
    for _ in 0..4 {
        for r in layout::all() {
            let sub = match r.is {
                Is::Holds(p @ Place::In(_)) => p,
                Is::FoundHolding(_, s) => Place::In(s),
                _ => continue,
            };
            if let Some(parent) = at.get(&r.at).cloned() {
                at.entry(sub).or_insert_with(|| parent.join(r.example));
            }
        }
    }
    at
}

/// Make what the product makes at `p` (nothing if something is already there); a directory a
/// finding is made of gets a file, so it is not judged empty.
fn make(p: &Path, r: &layout::Row) {
    if std::fs::symlink_metadata(p).is_ok() {
        return;
    }
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    match r.made {
        Made::Dir => {
            std::fs::create_dir_all(p).unwrap();
            if matches!(r.is, Is::Found(_)) {
                std::fs::write(p.join("data"), b"x").unwrap();
            }
        }
        Made::File => std::fs::write(p, b"x").unwrap(),
        Made::Socket => {
            std::os::unix::net::UnixListener::bind(p).unwrap();
        }
    }
}

fn finding_at<'r>(r: &'r ScanReport, p: &Path) -> Option<&'r crate::model::Finding> {
    r.findings.iter().find(|f| f.path == p)
}

#[test]
fn every_row_of_the_layout_tables_is_what_the_scan_finds() {
    let t = tempfile::tempdir().unwrap();
    let home = Home::new(t.path(), Layout::Linux).unwrap();
    home.celesto_data_dir().unwrap();
    home.smolvm().unwrap().open_db().unwrap();
    let o = opts(&home);
    let at = places(&o);
    let mut made = Vec::new();
    for r in layout::all() {
        let dir = at
            .get(&r.at)
            .unwrap_or_else(|| panic!("{:?} lies nowhere", r.at));
        let p = dir.join(r.example);
        make(&p, r);
        made.push((p, r));
    }
    age_tree(&home.root, OLD).unwrap();
    let report = crate::scan::scan_with(&o, Vec::new());
    let mut wrong = Vec::new();
    for (p, r) in &made {
        let f = finding_at(&report, p);
        let inside = report
            .findings
            .iter()
            .any(|f| p.starts_with(&f.path) && f.path != *p);
        let ok = match r.is {
            Is::Found(k) | Is::FoundHolding(k, _) => f.is_some_and(|f| k.contains(&f.kind)),
            Is::Member => f.is_none() && inside,
            Is::Holds(_) | Is::Entries(_) => f.is_none(),
            Is::Never(_) => f.is_none() && !inside,
        };
        if !ok {
            wrong.push(format!(
                "{} ({:?}): {:?}",
                p.display(),
                r.is,
                f.map(|f| (f.kind, f.verdict, f.reason.clone()))
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "rows the scan does not find as they say:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_uninstall_knows_every_name_the_scan_knows_in_a_state_directory() {
    use crate::uninstall::preflight::StateKind;
    for r in layout::all() {
        let Place::Root(k) = r.at else { continue };
        if !k.has_layout() {
            continue;
        }
        assert!(k.recognises(r.example), "{k}: {}", r.example);
        // And a name no row holds is not the product's (archives are named by their user).
        let any = layout::rows_at(r.at).any(|r| r.name == layout::Name::Any);
        assert!(
            any || !StateKind::recognises(k, "my-holiday-photos.txt"),
            "{k} takes anything"
        );
    }
}
