//! Celesto's image caches (judged against the installed versions that use them) and macOS
//! restore images.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use crate::fsread::{self};
use crate::model::{FindingKind, OptInClass, Product, Verdict};
use crate::roots::CelestoRoots;

use crate::scan::ctx::{Ctx, Draft};
use crate::scan::version::{cache_version, Version};

use super::*;
use crate::root_kind::RootKind;

/// Image caches, each once, named in the report's roots (`image_dir`, `image_dir_2`, ...).
/// Versions in cache names are the version of the distribution that wrote them (celesto
/// 0.1.x, PyPI smolvm 0.0.x): each directory is judged against the installed versions of the
/// distributions that use it.
pub(super) fn scan_image_dirs(
    ctx: &mut Ctx<'_>,
    roots: &CelestoRoots,
    depends: &[(PathBuf, String)],
    report_roots: &mut BTreeMap<String, PathBuf>,
) {
    let installs = ctx.installs.clone();
    let installed_of = |dists: &[&str]| -> Vec<(String, Version)> {
        installs
            .iter()
            .filter(|i| i.product == Product::Celesto)
            .filter(|i| dists.contains(&i.distribution.as_deref().unwrap_or("celesto")))
            .filter_map(|i| {
                let v = i.version.as_ref()?;
                Some((v.clone(), Version::parse(v)?))
            })
            .collect()
    };
    let mut seen_images = HashSet::new();
    for cand in &roots.image_dirs {
        let dir = &cand.path;
        if !dir.is_dir() || !seen_images.insert(canon(dir)) {
            continue;
        }
        let key = RootKind::ImageDir.key(seen_images.len() - 1);
        report_roots.insert(key, dir.clone());
        let mut dists = Vec::new();
        if cand.source == "CELESTO_IMAGE_DIR" || dir.ends_with(".celesto/images") || cand.preferred
        {
            dists.push("celesto");
        }
        if cand.source == "SMOLVM_IMAGE_DIR" || dir.ends_with(".smolvm/images") {
            dists.push("smolvm");
        }
        let installed = installed_of(&dists);
        scan_image_dir(ctx, dir, &installed, depends, &dists);
    }
}

/// `$TMPDIR/latest.ipsw`, where Celesto downloads a macOS restore image first: this user's is
/// an opt-in cache.
pub(crate) fn scan_tmp_restore_image(ctx: &mut Ctx<'_>) {
    use std::os::unix::fs::MetadataExt;
    let Some(tmp) = ctx
        .opts
        .env
        .var("TMPDIR")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
    else {
        return; // macOS gives every user a TMPDIR; a shared /tmp is not looked at
    };
    let p = tmp.join("latest.ipsw");
    if fsread::lstat(&p).is_some_and(|m| m.is_file() && m.uid() == ctx.opts.env.euid) {
        ctx.add(
            Draft::new(P, FindingKind::CelestoRestoreImage, &p)
                .root(&tmp)
                .opt_in(OptInClass::Caches, "macOS restore image (IPSW) Celesto downloaded to the temporary directory; several GB, downloaded again when needed."),
        );
    }
}

/// Image-build staging dirs (`<images>/<name>/.build-<8 hex>/`, or `<images>/.build-<8 hex>/`) a
/// killed build left, and macOS
/// restore images (`<images>/macos/.downloads/*.ipsw`), several GB each.
pub(super) fn build_staging_and_restore_images(ctx: &mut Ctx<'_>, dir: &Path) {
    let hex8 = |n: &str| n.len() == 8 && n.bytes().all(|b| b.is_ascii_hexdigit());
    // In an image's own folder (`<name>/.build-…`), and at the top (older releases).
    let mut parents = vec![dir.to_path_buf()];
    parents.extend(
        fsread::read_dir_or_empty(dir)
            .into_iter()
            .filter(|e| e.is_dir())
            .map(|e| e.path),
    );
    for parent in &parents {
        for e in fsread::read_dir_or_empty(parent) {
            let Some(tag) = e.name_str().and_then(|n| n.strip_prefix(".build-")) else {
                continue;
            };
            if !hex8(tag) || !e.is_dir() {
                continue;
            }
            let newest = fsread::newest_mtime(&e.path).unwrap_or(i128::MAX);
            let age = ctx
                .now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as i128)
                .unwrap_or(0)
                - newest;
            let d = Draft::new(P, FindingKind::CelestoBuildStaging, &e.path).root(parent);
            let d = if age < ctx.opts.age_guard.as_nanos() as i128 {
                d.verdict(Verdict::Protected, "Staging folder of an image build that changed moments ago: the build may be running.")
            } else {
                d.verdict(Verdict::Reclaimable, format!(
                    "Staging folder of an image build that was killed (Celesto removes it only when the build ends normally). A loop mount still at {} stays: it is never walked into; `sudo umount` it to reclaim all of it.",
                    e.path.join("mnt").display()
                ))
            };
            ctx.add(d);
        }
    }
    let downloads = dir.join("macos").join(".downloads");
    for e in fsread::read_dir_or_empty(&downloads) {
        if e.is_file() && e.name_str().is_some_and(|n| n.ends_with(".ipsw")) {
            ctx.add(
                Draft::new(P, FindingKind::CelestoRestoreImage, &e.path)
                    .root(&downloads)
                    .opt_in(OptInClass::Caches, "macOS restore image (IPSW) Celesto downloaded; several GB, downloaded again when a macOS sandbox is made."),
            );
        }
    }
}

pub(super) fn scan_image_dir(
    ctx: &mut Ctx<'_>,
    dir: &Path,
    installed: &[(String, Version)],
    depends: &[(PathBuf, String)],
    dists: &[&str],
) {
    let who = if dists.is_empty() {
        "Celesto".to_string()
    } else {
        dists.join(" or ")
    };
    let real_dir = canon(dir);
    build_staging_and_restore_images(ctx, dir);
    for e in fsread::read_dir_or_empty(dir) {
        let Some(name) = e.name_str() else { continue };
        // What the layout table says is no image cache (locks, builds, downloads) is judged
        // elsewhere or never.
        let row = crate::layout::row(crate::layout::Place::Root(RootKind::ImageDir), name);
        if row.is_some_and(|r| {
            r.kinds()
                .iter()
                .all(|k| *k != FindingKind::CelestoImageCache)
        }) {
            continue;
        }
        let Some(ver) = cache_version(name) else {
            continue; // s3/, custom/, macos/ and unversioned names: never touched
        };
        let link = e.is_symlink();
        if !(e.is_dir() || link) {
            ctx.add(Draft::new(P, FindingKind::CelestoUnrecognised, &e.path).root(dir).verdict(
                Verdict::Unknown,
                "A plain file named like an image cache; not something Celesto creates, left alone.",
            ));
            continue;
        }
        // Lexical: sandboxes record absolute, resolved paths; a symlinked entry is never
        // resolved (removing a link cannot break what its target holds).
        let real_entry = real_dir.join(&e.name);
        let users: Vec<&str> = depends
            .iter()
            .filter(|(p, _)| p.starts_with(&real_entry) || p.starts_with(&e.path))
            .map(|(_, id)| id.as_str())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let kind = if link {
            FindingKind::CelestoImageCacheLink
        } else {
            FindingKind::CelestoImageCache
        };
        let d = Draft::new(P, kind, &e.path).root(dir);
        ctx.add(cache_verdict(d, (ver, link), &users, installed, &who));
    }
}

/// The verdict on one versioned image cache `ver` of an image directory (`link`: a symlink
/// named like one): used by sandboxes `users`, the installed version's, newer than it, old, or
/// of a version that cannot be ordered; `who` names the products that would use it.
fn cache_verdict(
    d: Draft,
    (ver, link): (&str, bool),
    users: &[&str],
    installed: &[(String, Version)],
    who: &str,
) -> Draft {
    let newest = installed.iter().map(|(_, v)| v).max();
    let parsed = Version::parse(ver);
    if !users.is_empty() {
        Draft { kind: FindingKind::CelestoImageCacheInUse, ..d }.verdict(
            Verdict::Protected,
            format!("Image cache v{ver} that sandbox {} backs onto or boots from; deleting it would break them (Celesto B1).", users.iter().map(|u| format!("'{u}'")).collect::<Vec<_>>().join(", ")),
        )
    } else if installed
        .iter()
        .any(|(s, v)| s == ver || Some(v) == parsed.as_ref())
    {
        Draft {
            kind: FindingKind::CelestoImageCacheCurrent,
            ..d
        }
        .verdict(
            Verdict::Protected,
            format!("Image cache of the installed version {ver}."),
        )
    } else if let (Some(newest), Some(v)) = (newest, parsed.as_ref()) {
        if v > newest {
            Draft { kind: FindingKind::CelestoImageCacheNewer, ..d }.verdict(
                Verdict::Protected,
                format!("Image cache of v{ver}, newer than the installed version; Celesto's own clean-up would delete it, Smolsweep leaves it alone."),
            )
        } else if link {
            d.verdict(Verdict::Reclaimable, format!("Link to an image cache of old version {ver}; only the link is removed, its target stays (Celesto's own clean-up counts the target's bytes: B12)."))
        } else {
            Draft {
                kind: FindingKind::CelestoImageCacheStale,
                ..d
            }
            .verdict(
                Verdict::Reclaimable,
                format!(
                    "Image cache of old version {ver}; no sandbox backs onto or boots from it."
                ),
            )
        }
    } else if parsed.is_none() {
        d.verdict(
            Verdict::Unknown,
            format!("Image cache with a version '{ver}' Smolsweep cannot order; left alone."),
        )
    } else {
        Draft { kind: FindingKind::CelestoImageCacheStale, ..d }.opt_in(
            OptInClass::Caches,
            format!("Image cache of v{ver}; {who} is not installed here, so no version is current, and no sandbox uses it."),
        )
    }
}
