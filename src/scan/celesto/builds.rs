//! What Celesto builds and downloads besides its published image caches, which its own
//! `image prune` never removes: custom image builds (one per build context), S3 images,
//! cloud-init seeds, macOS image bundles, old lume installs and the dashboard's assets; and
//! the references its inventory rows declare to them (a row's root file system, kernel,
//! initrd and drives: holds of the reference graph, `crate::reach`).

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::fsread::{self, Entry};
use crate::layout::{Place, Sub};
use crate::model::{FindingKind, Holder, OptInClass, Verdict, Via};
use crate::scan::ctx::{Ctx, Draft};

use super::{gate, InvDir, P};

/// Every path an inventory row boots or attaches (its root file system, kernel, initrd and
/// `extra_drives`) is held by that sandbox's record.
pub(super) fn declare_drives(ctx: &mut Ctx<'_>, dirs: &[InvDir]) {
    for d in dirs {
        for inv in &d.invs {
            for s in &inv.sandboxes {
                let extra = s
                    .config
                    .get("extra_drives")
                    .and_then(|v| v.as_array())
                    .into_iter()
                    .flatten()
                    .filter_map(|v| v.as_str().map(std::path::PathBuf::from));
                let named = [&s.kernel_path, &s.initrd_path, &s.rootfs_path]
                    .into_iter()
                    .flatten()
                    .cloned()
                    .chain(extra);
                for p in named.filter(|p| p.is_absolute()).collect::<Vec<_>>() {
                    let by = Holder::Record {
                        product: P,
                        name: s.id.clone(),
                    };
                    ctx.hold(&p, by, Via::Drive, Some(&inv.db_path));
                }
            }
        }
    }
}

/// Whether the lock file at `p` is held right now (by a build under way).
fn lock_held(ctx: &Ctx<'_>, p: &Path) -> bool {
    fsread::lstat(p).is_some_and(|m| ctx.locks.is_held(p, m.dev(), m.ino()))
}

/// Whether `p` changed within the age guard (something may be writing it).
fn young(ctx: &Ctx<'_>, p: &Path) -> bool {
    let newest = fsread::newest_mtime(p).unwrap_or(i128::MAX);
    let now = ctx
        .opts
        .now
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i128)
        .unwrap_or(0);
    now - newest < ctx.opts.age_guard.as_nanos() as i128
}

/// The builds and downloads in one image cache: `custom/`, `s3/`, `cloud-init-seeds/`,
/// `macos/`. `ok`/`problem`: whether every inventory could be read (the rows that hold these).
pub(super) fn scan_builds(ctx: &mut Ctx<'_>, dir: &Path, ok: bool, problem: &str) {
    for name in fsread::read_dir_or_empty(&dir.join("custom")) {
        if !name.is_dir() {
            continue;
        }
        for b in fsread::read_dir_or_empty(&name.path) {
            if b.is_dir() {
                ctx.add(gate(custom_build(ctx, &b, dir), ok, problem));
            }
        }
    }
    for e in fsread::read_dir_or_empty(&dir.join("s3")) {
        let known = e
            .name_str()
            .is_some_and(|n| crate::layout::row(Place::In(Sub::CelestoS3), n).is_some());
        if known && e.is_dir() {
            let d = Draft::new(P, FindingKind::CelestoS3Image, &e.path).root(dir);
            ctx.add(gate(d.opt_in(OptInClass::Caches, "Image downloaded from S3 that no sandbox boots from; downloaded again when needed (Celesto's own prune never removes it)."), ok, problem));
        }
    }
    let seeds = dir.join("cloud-init-seeds");
    for e in fsread::read_dir_or_empty(&seeds) {
        let known = e
            .name_str()
            .is_some_and(|n| crate::layout::row(Place::In(Sub::CelestoSeeds), n).is_some());
        if known && e.is_file() {
            let d = Draft::new(P, FindingKind::CelestoCloudInitSeed, &e.path).root(dir);
            let d = if young(ctx, &e.path) {
                d.verdict(
                    Verdict::Protected,
                    "Cloud-init seed written moments ago: a sandbox may be being created with it.",
                )
            } else {
                d.verdict(
                    Verdict::Reclaimable,
                    "Cloud-init seed no sandbox attaches; made again when a sandbox needs it.",
                )
            };
            ctx.add(gate(d, ok, problem));
        }
    }
    macos_images(ctx, dir, ok, problem);
}

/// `custom/<name>/<fingerprint>/`: a finished build is a cache; one without its root file
/// system is a killed build's leftover; either is kept while its build lock is held.
fn custom_build(ctx: &Ctx<'_>, b: &Entry, images: &Path) -> Draft {
    let done = fsread::lstat(&b.path.join("rootfs.ext4")).is_some_and(|m| m.is_file());
    let kind = if done {
        FindingKind::CelestoCustomImage
    } else {
        FindingKind::CelestoCustomImageTmp
    };
    let d = Draft::new(P, kind, &b.path).root(images);
    if lock_held(ctx, &b.path.join(".build.lock")) {
        d.verdict(
            Verdict::Protected,
            "A custom image build is running here (its build lock is held).",
        )
    } else if young(ctx, &b.path) {
        d.verdict(
            Verdict::Protected,
            "Custom image build changed moments ago: a build may be under way.",
        )
    } else if done {
        d.opt_in(OptInClass::Caches, "Custom image build that no sandbox boots from; built again from its build context when needed (Celesto's own prune never removes it, and a changed build context makes a new one beside it).")
    } else {
        d.verdict(
            Verdict::Reclaimable,
            "Custom image build that was killed before its root file system was finished; nothing uses it.",
        )
    }
}

/// `macos/<name>/`: a bundle with its manifest is a cache (tens of GB, built again when
/// needed); one without is a build that did not finish. Kept while its build lock is held.
fn macos_images(ctx: &mut Ctx<'_>, images: &Path, ok: bool, problem: &str) {
    let dir = images.join("macos");
    for e in fsread::read_dir_or_empty(&dir) {
        let Some(name) = e.name_str().map(str::to_string) else {
            continue;
        };
        let row = crate::layout::row(Place::In(Sub::CelestoMacos), &name);
        if !e.is_dir() || !row.is_some_and(|r| r.kinds().contains(&FindingKind::CelestoMacosImage))
        {
            continue;
        }
        let done = fsread::lstat(&e.path.join("celesto-manifest.json")).is_some();
        let kind = if done {
            FindingKind::CelestoMacosImage
        } else {
            FindingKind::CelestoMacosImageFailed
        };
        let d = Draft::new(P, kind, &e.path)
            .root(images)
            .owner(name.as_str());
        let d = if lock_held(ctx, &dir.join(format!(".{name}.build.lock"))) {
            d.verdict(
                Verdict::Protected,
                "A macOS image build is running (its build lock is held).",
            )
        } else if young(ctx, &e.path) {
            d.verdict(
                Verdict::Protected,
                "macOS image changed moments ago: a build may be under way.",
            )
        } else if done {
            d.opt_in(OptInClass::Caches, "macOS image bundle no sandbox boots from; built again when needed (Celesto's own prune never removes it).")
        } else {
            d.verdict(Verdict::Reclaimable, "macOS image bundle without its manifest: a build that did not finish; nothing uses it.")
        };
        ctx.add(gate(d, ok, problem));
    }
}

/// The lume version each verified Celesto installs (`host/lume.py` `LUME_VERSION`).
const LUME_PINS: &[(&str, &str)] = &[("0.1.10", "0.4.0")];

/// `~/.celesto/lib/lume-<ver>/`: every version but the one the installed Celesto pins is left
/// over (`celesto setup --macos` installs the pinned one beside the old).
pub(super) fn scan_lume(ctx: &mut Ctx<'_>, home: &Path, installed: Option<&str>) {
    let lib = home.join("lib");
    let pinned = installed.and_then(|v| LUME_PINS.iter().find(|(c, _)| *c == v).map(|p| p.1));
    for e in fsread::read_dir_or_empty(&lib) {
        let Some(ver) = e.name_str().and_then(|n| n.strip_prefix("lume-")) else {
            continue;
        };
        if !e.is_dir() || ver.is_empty() {
            continue;
        }
        let d = Draft::new(P, FindingKind::CelestoOldLume, &e.path).root(home);
        let d = match pinned {
            Some(p) if p == ver => d.verdict(
                Verdict::Protected,
                format!("The lume version the installed Celesto uses ({p})."),
            ),
            Some(p) => d.verdict(
                Verdict::Reclaimable,
                format!("lume {ver}; the installed Celesto uses {p}, and nothing else runs this one."),
            ),
            None => d.verdict(
                Verdict::Unknown,
                "A lume install; Smolsweep does not know which lume version the installed Celesto uses, so it is left alone.",
            ),
        };
        ctx.add(d);
    }
}

/// `<data dir>/dashboard-ui/`: the dashboard's web assets and their release tag, a cache.
pub(super) fn scan_dashboard(ctx: &mut Ctx<'_>, data_dir: &Path) {
    let p = data_dir.join("dashboard-ui");
    if fsread::lstat(&p).is_some_and(|m| m.is_dir()) {
        ctx.add(
            Draft::new(P, FindingKind::CelestoDashboardAssets, &p)
                .root(data_dir)
                .opt_in(
                    OptInClass::Caches,
                    "Web assets of `celesto dashboard`; downloaded again when the dashboard starts.",
                ),
        );
    }
}
