//! smolvm's caches and the rest of its data and cache roots: every entry of the data root and
//! the cache root judged by what the layout table says it is (usage log, init layers and their
//! staging folders, network sockets, seeds, registry tokens, ...), the pack, library and
//! download caches beside them, and temporary build trees.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::fsread;
use crate::layout::{Is, Place, Sub};
use crate::model::{FindingKind, OptInClass, Verdict};
use crate::root_kind::RootKind;
use crate::scan::ctx::{pid_list, Ctx, Draft};

use super::{ago, SetScan, P};

impl SetScan<'_> {
    /// An entry of a root the layout table does not know.
    fn unrecognised(&self, ctx: &mut Ctx<'_>, e: &fsread::Entry, root: &Path) {
        ctx.add(
            Draft::new(P, FindingKind::SmolvmUnrecognised, &e.path)
                .root(root)
                .verdict(
                    Verdict::Unknown,
                    "Not something smolvm writes here; left alone.",
                ),
        );
    }

    /// Every entry of the data root (`~/.local/share/smolvm`): the usage log is judged; the
    /// database, the agent root file system, volumes and credentials are never findings.
    pub(super) fn judge_data_root(&self, ctx: &mut Ctx<'_>) {
        let root = &self.set.data_root;
        for e in fsread::read_dir_or_empty(root) {
            let Some(name) = e.name_str() else { continue };
            match crate::layout::row(Place::Root(RootKind::DataRoot), name) {
                None => self.unrecognised(ctx, &e, root),
                Some(r) if r.kinds().first() == Some(&FindingKind::SmolvmUsageLog) => {
                    let d = Draft::new(P, FindingKind::SmolvmUsageLog, &e.path).root(root);
                    ctx.add(self.gate(d.opt_in(
                        OptInClass::Residue,
                        "smolvm's log of machine events and its install id; never needed to run a machine (it rotates itself at 10 MiB, and a new id is made when needed).",
                    )));
                }
                Some(_) => {}
            }
        }
    }

    /// Every entry of the cache root (`~/.cache/smolvm`) beside the machine directories.
    pub(super) fn judge_cache_root(&self, ctx: &mut Ctx<'_>) {
        let root = self.set.cache_root.clone();
        for e in fsread::read_dir_or_empty(&root) {
            let Some(name) = e.name_str() else { continue };
            let Some(row) = crate::layout::row(Place::Root(RootKind::CacheRoot), name) else {
                self.unrecognised(ctx, &e, &root);
                continue;
            };
            let d = |kind| Draft::new(P, kind, &e.path).root(&root);
            let what = match (row.is, row.kinds().first()) {
                (Is::Holds(Place::In(Sub::SmolvmInitLayers)), _) => {
                    self.judge_init_layers(ctx, &e);
                    continue;
                }
                (Is::Holds(Place::In(Sub::SmolvmNet)), _) => {
                    self.judge_networks(ctx, &e);
                    continue;
                }
                (_, Some(FindingKind::SmolvmRegistryTokens)) => {
                    ctx.add(d(FindingKind::SmolvmRegistryTokens).verdict(
                        Verdict::Protected,
                        "Registry pull tokens (credentials): never part of a reclaim; `smolsweep uninstall --remove-credentials` removes them.",
                    ));
                    continue;
                }
                (_, Some(FindingKind::SmolvmImageSeeds)) => "Seed images for fast machine creation; rebuilt when needed. smolvm trims it itself above SMOLVM_IMAGE_SEED_MAX_BYTES.",
                (_, Some(FindingKind::SmolvmAgentRootfsTars)) => "Unpacked agent root file system archives; rebuilt when needed.",
                (_, Some(FindingKind::SmolvmRootfsCache)) => "Root file systems extracted for SDK runs; rebuilt when needed.",
                _ => continue,
            };
            if e.is_dir() {
                let kind = row.kinds()[0];
                self.add_cache(ctx, d(kind), what, what.split(';').next().unwrap_or(what));
            }
        }
    }

    /// `init-layers/`: each baked layer is a cache smolvm bounds itself; each staging folder of
    /// a bake whose process is gone is left over (the bound never counts it).
    fn judge_init_layers(&self, ctx: &mut Ctx<'_>, e: &fsread::Entry) {
        for c in fsread::read_dir_or_empty(&e.path) {
            let name = c.name_str().unwrap_or_default().to_string();
            let row = crate::layout::row(Place::In(Sub::SmolvmInitLayers), &name);
            let d =
                Draft::new(P, FindingKind::SmolvmUnrecognised, &c.path).root(&self.set.cache_root);
            match row.and_then(|r| r.kinds().first()) {
                Some(FindingKind::SmolvmInitLayers) => {
                    let what = format!(
                        "Init layer baked for --oci-cache runs; baked again when needed. {}",
                        cap_note(ctx, "SMOLVM_INIT_CACHE_MAX_BYTES", "10 GiB")
                    );
                    let d = Draft {
                        kind: FindingKind::SmolvmInitLayers,
                        ..d
                    };
                    self.add_cache(ctx, d, &what, "Init layer baked for --oci-cache runs");
                }
                Some(FindingKind::SmolvmInitStaging) if c.is_dir() => {
                    let d = Draft {
                        kind: FindingKind::SmolvmInitStaging,
                        ..d
                    };
                    ctx.add(self.gate(staging(ctx, &c, &name, d)));
                }
                _ => ctx.add(d.verdict(
                    Verdict::Unknown,
                    "Not something smolvm writes in its init-layer cache; left alone.",
                )),
            }
        }
    }

    /// `net/<hash16>/`: the sockets of one inter-VM network, left over once no smolvm VM runs.
    fn judge_networks(&self, ctx: &mut Ctx<'_>, e: &fsread::Entry) {
        for c in fsread::read_dir_or_empty(&e.path) {
            let name = c.name_str().unwrap_or_default();
            let known = crate::layout::row(Place::In(Sub::SmolvmNet), name).is_some();
            let d =
                Draft::new(P, FindingKind::SmolvmNetworkDir, &c.path).root(&self.set.cache_root);
            let d = if !known || !c.is_dir() {
                Draft {
                    kind: FindingKind::SmolvmUnrecognised,
                    ..d
                }
                .verdict(
                    Verdict::Unknown,
                    "Not something smolvm writes among its network sockets; left alone.",
                )
            } else if !self.busy.is_empty() {
                d.verdict(
                    Verdict::Protected,
                    self.busy_reason("Sockets of an inter-VM network"),
                )
            } else if ago(ctx, fsread::newest_mtime(&c.path).unwrap_or(i128::MAX))
                < ctx.opts.age_guard
            {
                d.verdict(Verdict::Protected, "Sockets of an inter-VM network, changed moments ago: a VM may be starting on it.")
            } else {
                d.verdict(
                    Verdict::Reclaimable,
                    "Sockets of an inter-VM network; no smolvm VM runs, so no VM is on it.",
                )
            };
            ctx.add(self.gate(d));
        }
    }
    /// Extracted `.smolmachine` packs: kept while a live process holds a lease or uses them.
    pub(super) fn judge_pack_cache(&self, ctx: &mut Ctx<'_>) {
        for e in fsread::read_dir_or_empty(&self.set.pack_cache) {
            if !e.is_dir() {
                continue;
            }
            let mut users: Vec<u32> = fsread::read_dir_or_empty(&e.path.join("leases"))
                .iter()
                .filter_map(|l| l.name_str()?.parse().ok())
                .filter(|pid| ctx.procs.by_pid(*pid).is_some())
                .collect();
            users.extend(ctx.procs.users_below(&e.path));
            let d = Draft::new(P, FindingKind::SmolvmPackCache, &e.path).root(&self.set.pack_cache);
            let d = if !users.is_empty() {
                d.verdict(
                    Verdict::Protected,
                    format!(
                        "Extracted .smolmachine pack in use by process {}.",
                        pid_list(&users)
                    ),
                )
            } else {
                d.opt_in(OptInClass::Caches, format!("Extracted .smolmachine pack with no active lease; extracted again on the next run. {}", cap_note(ctx, "SMOLVM_PACK_CACHE_MAX_BYTES", "10 % of its file system, at least 5 GiB")))
            };
            ctx.add(self.gate(d));
        }
    }

    /// Libraries a packed smolvm binary unpacked: kept while it runs.
    pub(super) fn judge_libs_cache(&self, ctx: &mut Ctx<'_>) {
        for e in fsread::read_dir_or_empty(&self.set.libs_cache) {
            let d = Draft::new(P, FindingKind::SmolvmLibsCache, &e.path).root(&self.set.libs_cache);
            let held = e.is_file() && ctx.locks.is_held(&e.path, e.meta.dev(), e.meta.ino());
            let users = ctx.procs.users_below(&e.path);
            let d = if held || !users.is_empty() {
                d.verdict(
                    Verdict::Protected,
                    "Libraries of a packed smolvm binary that is running.",
                )
            } else {
                d.opt_in(
                    OptInClass::Caches,
                    "Libraries unpacked by a packed smolvm binary; unpacked again when it runs.",
                )
            };
            ctx.add(self.gate(d));
        }
    }

    /// The registry blob cache and the local image archives.
    pub(super) fn judge_download_caches(&self, ctx: &mut Ctx<'_>) {
        for (p, kind, what) in [
            (&self.set.registry_cache, FindingKind::SmolvmRegistryCache, "Registry blob cache; downloaded again when needed. smolvm trims it itself above SMOLVM_BLOB_CACHE_MAX_BYTES."),
            (&self.set.image_archives, FindingKind::SmolvmImageArchives, "Local image archives (from v1.23 also images fetched for machines without network); fetched again when needed."),
        ] {
            if fsread::lstat(p).is_some_and(|m| m.is_dir()) {
                let d = Draft::new(P, kind, p.as_path());
                self.add_cache(ctx, d, what, what.split(';').next().unwrap_or(what));
            }
        }
    }
}

/// Whether smolvm trims a cache by itself: the cap variable as set here, or its default.
fn cap_note(ctx: &Ctx<'_>, var: &str, default: &str) -> String {
    match ctx.opts.env.var(var) {
        Some(v) => format!("smolvm trims it itself above {var}={v}."),
        None => format!("smolvm trims it itself above {var} (default {default})."),
    }
}

/// Temporary trees of interrupted image builds and init bakes in this user's temporary
/// directory (`$TMPDIR`, else `/tmp`): reclaimable when this user's, settled, and unused.
pub(crate) fn scan_tmp_trees(ctx: &mut Ctx<'_>) {
    let tmp = ctx
        .opts
        .env
        .var("TMPDIR")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    for name in ["smolvm-image-seeds", "smolvm-init-layers"] {
        let p = tmp.join(name);
        let Some(m) = fsread::lstat(&p) else { continue };
        let d = Draft::new(P, FindingKind::SmolvmTmpBuildTree, &p).root(&tmp);
        let newest = fsread::newest_mtime(&p).unwrap_or(i128::MAX);
        let d = if !m.is_dir() {
            d.verdict(
                Verdict::Unknown,
                format!(
                    "Named like smolvm's temporary build tree but is {}; left alone.",
                    fsread::type_name(m.file_type())
                ),
            )
        } else if m.uid() != ctx.opts.env.euid {
            d.verdict(
                Verdict::Protected,
                "smolvm's temporary build tree of another user; never touched.",
            )
        } else if ago(ctx, newest) < ctx.opts.age_guard {
            d.verdict(
                Verdict::Protected,
                "smolvm's temporary build tree, changed moments ago: a build may be running.",
            )
        } else {
            d.verdict(Verdict::Reclaimable, "Temporary tree an interrupted smolvm image build or init bake left behind; no smolvm process uses it.")
        };
        ctx.add(d);
    }
}

/// A bake's staging folder `.staging-<key>-<pid>`: kept while its process lives or it changed
/// moments ago; otherwise a killed bake's leftover.
fn staging(ctx: &Ctx<'_>, c: &fsread::Entry, name: &str, d: Draft) -> Draft {
    let pid: Option<u32> = name.rsplit('-').next().and_then(|p| p.parse().ok());
    let newest = fsread::newest_mtime(&c.path).unwrap_or(i128::MAX);
    match pid.filter(|p| ctx.procs.by_pid(*p).is_some()) {
        Some(p) => d.verdict(
            Verdict::Protected,
            format!("Staging folder of an init bake that is running (process {})." , pid_list(&[p])),
        ),
        None if ago(ctx, newest) < ctx.opts.age_guard => d.verdict(
            Verdict::Protected,
            "Staging folder of an init bake, changed moments ago: the bake may be running.",
        ),
        None => d.verdict(
            Verdict::Reclaimable,
            "Staging folder of an init bake whose process is gone (a killed bake leaves it; smolvm's cache limit never counts it).",
        ),
    }
}
