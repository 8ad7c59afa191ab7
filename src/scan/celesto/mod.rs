//! Celesto SmolVM (and legacy PyPI smolvm): sandboxes, disks, logs, image caches and residue.
//!
//! Its rooms: this file (the data directories, their inventories and what the scan learnt), `disks`
//! (a data directory's disks, companions, logs and markers), `residue` (what a sandbox leaves
//! outside its data directory, sockets, odd inventory files) and `images` (image caches and
//! restore images).

mod builds;
mod disks;
mod images;
mod residue;

use disks::scan_data_dir;
use images::scan_image_dirs;
pub(crate) use images::scan_tmp_restore_image;
use residue::{odd_inventory_files, sandbox_residue, scan_residue, scan_socket_dir};

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::fsread::{self};
use crate::inventory::celesto::{read_celesto_db, valid_sandbox_id, CelestoInventory};
use crate::model::{FindingKind, Machine, OwnerRecord, Product, ProductReport, Verdict};
use crate::root_kind::RootKind;
use crate::roots::{celesto_roots, CelestoRoots};

use super::ctx::{Ctx, Draft};

pub(super) const P: Product = Product::Celesto;

/// One Celesto data directory as the scan understood it.
#[derive(Debug, Clone)]
pub(crate) struct CelData {
    pub dir: PathBuf,
    /// Ids kept alive by any inventory in the directory (`celesto.db` ∪ `smolvm.db`, browser
    /// sessions included).
    pub live: HashSet<String>,
    /// Whether the inventories could be read.
    pub ok: bool,
}

/// What the Celesto part of the scan learnt, for process attribution.
#[derive(Debug, Default)]
pub(crate) struct CelestoKnowledge {
    pub data_dirs: Vec<CelData>,
}

impl CelestoKnowledge {
    pub(crate) fn data_dir_of(&self, path: &Path) -> Option<&CelData> {
        self.data_dirs.iter().find(|d| path.starts_with(&d.dir))
    }
    pub(crate) fn data_dir_with_disk(&self, id: &str) -> Option<&CelData> {
        self.data_dirs.iter().find(|d| {
            ["qcow2", "ext4"]
                .iter()
                .any(|e| fsread::lstat(&d.dir.join("disks").join(format!("{id}.{e}"))).is_some())
        })
    }
}

/// How a disk group (a sandbox id's disk, companions and log) is held.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Hold {
    Orphan,
    Saved,
    /// A create may be under way: the disk is written before the row, under
    /// `locks/<id>.create.lock`.
    Creating(String),
    InUse(Vec<u32>),
    Live(String),
}

pub(super) fn is_celesto_data_dir(dir: &Path) -> bool {
    crate::roots::celesto_data_markers().any(|n| fsread::lstat(&dir.join(n)).is_some())
}

/// The file names of Celesto's inventories, for a sentence: `celesto.db or smolvm.db`.
pub(super) fn inventory_names() -> String {
    let names: Vec<&str> = crate::upstream::inventories(P).map(|i| i.name).collect();
    names.join(" or ")
}

pub(super) fn canon(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// Downgrade a draft when the data directory's inventory could not be verified.
pub(super) fn gate(d: Draft, ok: bool, problem: &str) -> Draft {
    if ok || !matches!(d.verdict, Verdict::Reclaimable | Verdict::OptIn) {
        return d;
    }
    let reason = format!(
        "{} But {problem}, so Smolsweep cannot verify it is unused and leaves it alone.",
        d.reason
    );
    let mut d = d.verdict(Verdict::Unknown, reason);
    d.opt_in_class = None;
    d
}

/// A finding that belongs to a sandbox id is re-checked against its data directory's
/// inventories before deletion (the same ones the scan judged it by).
pub(super) fn claim(d: Draft, data_dir: &Path) -> Draft {
    match d.owner.clone() {
        Some(id) => d.recheck(
            &crate::upstream::inventory_paths(P, data_dir),
            OwnerRecord::SandboxId(id),
        ),
        None => d,
    }
}

/// One Celesto data directory with the inventories read from it.
pub(super) struct InvDir {
    dir: PathBuf,
    invs: Vec<CelestoInventory>,
    /// Whether there is an inventory and every one could be read.
    ok: bool,
    /// Why not, when not.
    problem: String,
}

pub(crate) fn scan(ctx: &mut Ctx<'_>) -> CelestoKnowledge {
    let roots = celesto_roots(ctx.opts.platform, &ctx.opts.env);
    let mut problems = Vec::new();
    let mut report_roots: BTreeMap<String, PathBuf> = BTreeMap::new();
    let vmm_ids = ctx.procs.celesto_vmm_ids();

    // Inventories first: live ids across every data directory are needed for residue.
    let dirs = read_data_dirs(ctx, &roots, &mut problems, &mut report_roots);
    let know = knowledge_of(&dirs);
    let all_ok = know.data_dirs.iter().all(|d| d.ok);
    let live_all: HashSet<String> = know
        .data_dirs
        .iter()
        .flat_map(|d| d.live.iter().cloned())
        .collect();
    let depends = image_dependencies(&dirs, &mut ctx.chains);
    builds::declare_drives(ctx, &dirs);

    for d in &dirs {
        for inv in &d.invs {
            sandboxes_as_machines(ctx, inv, &vmm_ids);
        }
    }
    for (i, d) in dirs.iter().enumerate() {
        let live = know.data_dirs[i].live.clone();
        scan_data_dir(ctx, &d.dir, &d.invs, &live, d.ok, &d.problem, &vmm_ids);
        builds::scan_dashboard(ctx, &d.dir);
    }
    scan_forwards(ctx, &roots, &vmm_ids, &live_all, &know, all_ok);
    // Sockets and libkrun configs in /tmp.
    scan_socket_dir(ctx, &roots.socket_dir, &live_all, &vmm_ids, &know, all_ok);
    scan_image_dirs(ctx, &roots, &depends, &mut report_roots);
    let problem = dirs
        .iter()
        .find(|d| !d.ok)
        .map(|d| d.problem.clone())
        .unwrap_or_default();
    for dir in report_roots
        .iter()
        .filter(|(k, _)| RootKind::of_key(k) == Some(RootKind::ImageDir))
        .map(|(_, v)| v.clone())
        .collect::<Vec<_>>()
    {
        builds::scan_builds(ctx, &dir, all_ok, &problem);
    }
    let installed = ctx
        .installs
        .iter()
        .find(|i| i.product == P && i.distribution.as_deref().unwrap_or("celesto") == "celesto")
        .and_then(|i| i.version.clone());
    builds::scan_lume(ctx, &roots.home_dir, installed.as_deref());
    report_product(ctx, &roots, &know, report_roots, problems, all_ok);
    know
}

/// Every Celesto data directory among the roots (each once, markers required) with its
/// inventories read, named in the report's roots (`data_dir`, `data_dir_2`, ...); a directory
/// whose inventories cannot be verified adds its problem.
pub(super) fn read_data_dirs(
    ctx: &mut Ctx<'_>,
    roots: &CelestoRoots,
    problems: &mut Vec<String>,
    report_roots: &mut BTreeMap<String, PathBuf>,
) -> Vec<InvDir> {
    let mut seen_dirs = HashSet::new();
    let mut dirs = Vec::new();
    for cand in &roots.data_dirs {
        let dir = &cand.path;
        if !dir.is_dir() || !seen_dirs.insert(canon(dir)) || !is_celesto_data_dir(dir) {
            continue;
        }
        let d = read_data_dir(ctx, dir);
        if !d.ok {
            problems.push(d.problem.clone());
        }
        let nth = report_roots
            .keys()
            .filter(|k| RootKind::of_key(k) == Some(RootKind::DataDir))
            .count();
        let key = RootKind::DataDir.key(nth);
        report_roots.insert(key, dir.clone());
        dirs.push(d);
    }
    dirs
}

/// The inventories of one data directory (odd inventory files reported as findings), and
/// whether they verify it: not when there is none, or one cannot be read.
pub(super) fn read_data_dir(ctx: &mut Ctx<'_>, dir: &Path) -> InvDir {
    let mut invs = Vec::new();
    let mut ok = true;
    let mut problem = String::new();
    let dbs: Vec<PathBuf> = crate::upstream::inventory_paths(P, dir)
        .into_iter()
        .filter(|p| fsread::lstat(p).is_some())
        .collect();
    odd_inventory_files(ctx, dir, &dbs);
    if dbs.is_empty() {
        ok = false;
        problem = format!(
            "there is no list of sandboxes ({}) in {}: sandboxes made with the Celesto SDK alone are listed nowhere, so a live sandbox's disk cannot be told from an orphan. Running any `celesto` command once creates the list; then only disks of no listed sandbox that no process uses become reclaimable",
            inventory_names(),
            dir.display()
        );
    }
    for db in dbs {
        match ctx.read_inventory(&db, read_celesto_db, crate::inventory::cache::celesto) {
            Ok(inv) => invs.push(inv),
            Err(e) => {
                ok = false;
                problem = e.to_string();
            }
        }
    }
    InvDir {
        dir: dir.to_path_buf(),
        invs,
        ok,
        problem,
    }
}

/// What process attribution needs of the data directories: each one's live ids and whether its
/// inventories were read.
pub(super) fn knowledge_of(dirs: &[InvDir]) -> CelestoKnowledge {
    let mut know = CelestoKnowledge::default();
    for d in dirs {
        let live = d
            .invs
            .iter()
            .flat_map(|i| i.live_ids().map(str::to_string))
            .collect();
        know.data_dirs.push(CelData {
            dir: d.dir.clone(),
            live,
            ok: d.ok,
        });
    }
    know
}

/// Paths sandboxes depend on inside image caches (Celesto B1), with the sandbox id: the
/// kernel, initrd and rootfs an inventory row names, and the backing chain of every disk.
pub(super) fn image_dependencies(
    dirs: &[InvDir],
    memo: &mut crate::qcow2::ChainMemo,
) -> Vec<(PathBuf, String)> {
    let mut depends: Vec<(PathBuf, String)> = Vec::new();
    for d in dirs {
        for inv in &d.invs {
            for s in &inv.sandboxes {
                for p in [&s.kernel_path, &s.initrd_path, &s.rootfs_path]
                    .into_iter()
                    .flatten()
                {
                    depends.push((p.clone(), s.id.clone()));
                }
            }
        }
        for e in fsread::read_dir_or_empty(&d.dir.join("disks")) {
            if e.is_file() {
                let owner = e
                    .name_str()
                    .and_then(|n| n.split('.').next())
                    .unwrap_or("?")
                    .to_string();
                for b in crate::qcow2::chain_in(memo, &e.path, 16).0.links {
                    depends.push((b, owner.clone()));
                }
            }
        }
    }
    depends
}

/// `~/.celesto/forwards` and the legacy `~/.smolvm/forwards`: port-forward state of a sandbox
/// id is judged as that sandbox's residue; anything else is left alone.
pub(super) fn scan_forwards(
    ctx: &mut Ctx<'_>,
    roots: &CelestoRoots,
    vmm_ids: &HashMap<String, Vec<u32>>,
    live_all: &HashSet<String>,
    know: &CelestoKnowledge,
    all_ok: bool,
) {
    for home_dir in [&roots.home_dir, &roots.legacy_home_dir] {
        let fwd = home_dir.join("forwards");
        for e in fsread::read_dir_or_empty(&fwd) {
            let Some(name) = e.name_str() else { continue };
            let id = name
                .strip_suffix(".operation.lock")
                .or_else(|| name.strip_suffix(".json"));
            let d = Draft::new(P, FindingKind::CelestoForwardResidue, &e.path).root(&fwd);
            let d = match id {
                Some(id) if valid_sandbox_id(id) && e.is_file() => sandbox_residue(
                    d,
                    id,
                    "Port-forward state",
                    vmm_ids.contains_key(id),
                    live_all,
                    know,
                    all_ok,
                ),
                _ => d.verdict(
                    Verdict::Unknown,
                    "Not a file Celesto writes under forwards/; left alone.",
                ),
            };
            ctx.add(d);
        }
    }
}

/// Celesto's product report: detected when a data directory, an image cache, the home
/// directory or an install was found; `unknown` when an inventory could not be verified.
pub(super) fn report_product(
    ctx: &mut Ctx<'_>,
    roots: &CelestoRoots,
    know: &CelestoKnowledge,
    mut report_roots: BTreeMap<String, PathBuf>,
    problems: Vec<String>,
    all_ok: bool,
) {
    let home_exists = roots.home_dir.is_dir();
    if home_exists {
        report_roots.insert(RootKind::CelestoHome.key(0), roots.home_dir.clone());
    }
    report_roots.insert(RootKind::SocketDir.key(0), roots.socket_dir.clone());
    let detected = !know.data_dirs.is_empty()
        || report_roots
            .keys()
            .any(|k| RootKind::of_key(k) == Some(RootKind::ImageDir))
        || home_exists
        || ctx.installs.iter().any(|i| i.product == Product::Celesto);
    let version = ctx
        .installs
        .iter()
        .find(|i| i.product == Product::Celesto)
        .and_then(|i| i.version.clone());
    ctx.products.push(ProductReport {
        product: P,
        detected,
        status: if all_ok { "ok" } else { "unknown" }.into(),
        roots: report_roots,
        problems,
        version,
        newer: None,
    });
}

#[allow(clippy::too_many_arguments)]
/// Every sandbox row of `inv` as a machine (Celesto calls them sandboxes, lately computers):
/// its state as recorded, and whether its VM is alive. Celesto records a pid but no start time,
/// so a row is alive when its pid is a Celesto VM process naming this sandbox, or any process
/// when none names it.
pub(super) fn sandboxes_as_machines(
    ctx: &mut Ctx<'_>,
    inv: &CelestoInventory,
    vmm_ids: &HashMap<String, Vec<u32>>,
) {
    let disks = inv
        .db_path
        .parent()
        .map(|d| fsread::read_dir_or_empty(&d.join("disks")))
        .unwrap_or_default();
    for s in &inv.sandboxes {
        let pid = s.pid.and_then(|p| u32::try_from(p).ok()).filter(|p| *p > 0);
        let vmms = vmm_ids.get(&s.id);
        let alive = match (pid, vmms) {
            (Some(p), Some(v)) => v.contains(&p),
            (Some(p), None) => ctx.procs.by_pid(p).is_some(),
            (None, _) => false,
        };
        let effective = match s.status.as_str() {
            "running" if !alive => match pid {
                Some(_) => "stale: recorded running, process gone".to_string(),
                None => "stale: recorded running without a process".to_string(),
            },
            st => st.to_string(),
        };
        let dir = disks
            .iter()
            .find(|e| e.name_str().and_then(|n| n.split('.').next()) == Some(s.id.as_str()))
            .map(|e| e.path.clone());
        ctx.machines.push(Machine {
            pid,
            alive,
            effective_state: effective,
            pid_start_time: pid
                .filter(|_| alive)
                .and_then(|p| ctx.procs.by_pid(p))
                .map(|p| p.start_time),
            dir,
            db: Some(inv.db_path.clone()),
            ..Machine::new(P, s.id.clone(), s.status.clone())
        });
    }
}
