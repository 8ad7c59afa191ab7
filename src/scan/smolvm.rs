//! smol-machines smolvm: machines, machine directories, lock files and caches.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use crate::fsread;
use crate::inventory::smolvm::{
    read_smolvm_inventory, vm_dir_hash, SmolvmRecord, SmolvmReservation,
};
use crate::model::{
    FindingKind, Machine, OptInClass, OwnerRecord, Product, ProductReport, Verdict,
};
use crate::roots::{smolvm_roots, SmolvmRootSet};

use super::celesto::pid_list;
use super::{Ctx, Draft};

const P: Product = Product::Smolvm;

/// One root set as the scan understood it.
#[derive(Debug, Default)]
pub(crate) struct SmolSet {
    pub vms_dirs: Vec<PathBuf>,
    pub names: HashSet<String>,
    pub hash_to_name: HashMap<String, String>,
    pub ok: bool,
}

/// What the smolvm part of the scan learnt, for process attribution.
#[derive(Debug, Default)]
pub(crate) struct SmolvmKnowledge {
    pub sets: Vec<SmolSet>,
    pub all_roots: Vec<PathBuf>,
    /// `SMOLVM_DATA_DIR`-style replacement homes of the sets.
    pub data_dirs: Vec<PathBuf>,
    pub recorded_pids: HashSet<u32>,
    pub pid_names: HashMap<u32, String>,
    /// Machine directories a `_boot-vm` boots from although their record does not own it: the
    /// record has no live process and no smolvm command holds `vm.lock` to start it (the
    /// manager of an interrupted `machine start` is gone, its VM lives on).
    pub unclaimed_vm_dirs: HashSet<PathBuf>,
    pub all_ok: bool,
}

impl SmolvmKnowledge {
    /// The set whose `vms/` holds `vm_dir`, and the machine name (from the record hash, or the
    /// directory's `name` file).
    pub fn locate_vm_dir(&self, vm_dir: &Path) -> Option<(&SmolSet, Option<String>)> {
        let parent = vm_dir.parent()?;
        let set = self
            .sets
            .iter()
            .find(|s| s.vms_dirs.iter().any(|v| v == parent))?;
        let hash = vm_dir.file_name()?.to_str()?;
        let name = set
            .hash_to_name
            .get(hash)
            .cloned()
            .or_else(|| read_name_file(vm_dir));
        Some((set, name))
    }
    pub fn name_for_pid(&self, pid: u32) -> Option<String> {
        self.pid_names.get(&pid).cloned()
    }
}

fn read_name_file(dir: &Path) -> Option<String> {
    let b = fsread::read_small(&dir.join("name"), 256).ok()?;
    let s = String::from_utf8(b).ok()?;
    let s = s.trim();
    (!s.is_empty()).then(|| s.to_string())
}

/// Whether `<dir>/vm.lock` is locked right now (the system lock table, not its holders' fds).
fn vm_lock_held(ctx: &Ctx<'_>, dir: &Path) -> bool {
    fsread::lstat(&dir.join("vm.lock")).is_some_and(|m| ctx.locks.is_held(m.dev(), m.ino()))
}

fn is_hash16(s: &str) -> bool {
    s.len() == 16 && s.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
}

fn ago(ctx: &Ctx<'_>, mtime_ns: i128) -> Duration {
    let now = ctx
        .now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i128)
        .unwrap_or(0);
    Duration::from_nanos((now - mtime_ns).max(0) as u64)
}

pub(crate) fn scan(ctx: &mut Ctx<'_>) -> SmolvmKnowledge {
    let roots = smolvm_roots(ctx.opts.platform, &ctx.opts.env);
    let mut know = SmolvmKnowledge {
        all_ok: true,
        ..Default::default()
    };
    let mut problems = Vec::new();
    let mut report_roots = BTreeMap::new();
    let mut detected = false;
    let mut seen = HashSet::new();
    let mut version = None;
    for (n, set) in roots.sets.iter().enumerate() {
        if !seen.insert(set.cache_root.clone()) {
            continue;
        }
        let exists = [
            &set.data_root,
            &set.cache_root,
            &set.pack_cache,
            &set.libs_cache,
        ]
        .iter()
        .any(|p| p.is_dir());
        for p in [
            &set.data_root,
            &set.cache_root,
            &set.pack_cache,
            &set.libs_cache,
            &set.registry_cache,
            &set.image_archives,
        ] {
            know.all_roots.push(p.clone());
        }
        know.all_roots.extend(set.vms_dirs.iter().cloned());
        if set.source.contains("SMOLVM_DATA_DIR") {
            if let Some(d) = ctx.opts.env.var("SMOLVM_DATA_DIR") {
                know.data_dirs.push(PathBuf::from(d));
            }
        }
        if !exists {
            know.sets.push(SmolSet {
                vms_dirs: set.vms_dirs.clone(),
                ok: true,
                ..Default::default()
            });
            continue;
        }
        detected = true;
        let sfx = if n == 0 {
            String::new()
        } else {
            format!("_{}", n + 1)
        };
        for (k, v) in set.named_roots() {
            report_roots.insert(format!("{k}{sfx}"), v.clone());
        }
        for (i, v) in set.vms_dirs.iter().enumerate() {
            if v.is_dir() || i == 0 {
                report_roots.insert(
                    format!(
                        "vms_dir{}{sfx}",
                        if i == 0 {
                            "".into()
                        } else {
                            format!("_{}", i + 1)
                        }
                    ),
                    v.clone(),
                );
            }
        }
        let s = scan_set(ctx, set, &mut problems, &mut know);
        know.all_ok &= s.ok;
        know.sets.push(s);
    }
    if version.is_none() {
        version = ctx
            .installs
            .iter()
            .find(|i| i.product == Product::Smolvm)
            .and_then(|i| i.version.clone());
    }
    let installed = ctx.installs.iter().any(|i| i.product == Product::Smolvm);
    ctx.products.push(ProductReport {
        product: P,
        detected: detected || installed,
        status: if know.all_ok { "ok" } else { "unknown" }.into(),
        roots: report_roots,
        problems,
        version,
    });
    know
}

fn scan_set(
    ctx: &mut Ctx<'_>,
    set: &SmolvmRootSet,
    problems: &mut Vec<String>,
    know: &mut SmolvmKnowledge,
) -> SmolSet {
    let mut out = SmolSet {
        vms_dirs: set.vms_dirs.clone(),
        ok: true,
        ..Default::default()
    };
    let mut problem = String::new();
    let mut reservations: Vec<SmolvmReservation> = Vec::new();
    for suffix in ["", "-wal", "-shm"] {
        let p = crate::inventory::sqlite_ro::side(&set.db_path, suffix);
        let Some(m) = fsread::lstat(&p) else { continue };
        if m.file_type().is_file() || m.file_type().is_symlink() {
            continue;
        }
        if let Some(dir) = p.parent() {
            ctx.add(
                Draft::new(P, FindingKind::SmolvmOddFile, &p)
                    .root(dir)
                    .verdict(
                        Verdict::Unknown,
                        format!(
                    "{} where smolvm keeps its machine database; never read and never deleted.",
                    super::celesto::capitalized(fsread::type_name(m.file_type()))
                ),
                    ),
            );
        }
    }
    let records: Vec<SmolvmRecord> = if fsread::lstat(&set.db_path).is_some() {
        match read_smolvm_inventory(&set.db_path) {
            Ok(inv) => {
                reservations = inv.reservations;
                inv.records
            }
            Err(e) => {
                out.ok = false;
                problem = e.to_string();
                Vec::new()
            }
        }
    } else {
        let has_dirs = set.vms_dirs.iter().any(|v| {
            fsread::read_dir_or_empty(v)
                .iter()
                .any(|e| e.name_str().is_some_and(is_hash16))
        });
        if has_dirs {
            out.ok = false;
            problem = format!(
                "machine directories exist but there is no machine database at {}",
                set.db_path.display()
            );
        }
        Vec::new()
    };
    if !out.ok {
        problems.push(problem.clone());
    }
    for r in &records {
        out.names.insert(r.name.clone());
        out.hash_to_name
            .insert(vm_dir_hash(&r.name), r.name.clone());
    }
    // Machines being created right now (`vm_create_reservations`): their directory may exist
    // before their record does (upstream's own reclaim does not check this: hazard 4). A
    // reservation whose owner process is gone is stale.
    let reserved: HashMap<String, (String, Option<i64>)> = reservations
        .iter()
        .filter(|r| {
            r.owner_pid
                .and_then(|p| u32::try_from(p).ok())
                .is_none_or(|p| ctx.procs.by_pid(p).is_some())
        })
        .map(|r| (vm_dir_hash(&r.name), (r.name.clone(), r.owner_pid)))
        .collect();

    // Machines with liveness: pid and start time must both match.
    let mut running_pids: Vec<u32> = Vec::new();
    for r in &records {
        let alive = r
            .pid
            .is_some_and(|pid| ctx.procs.alive_as_recorded(pid, r.pid_start_time));
        if let Some(pid) = r.pid {
            if alive {
                know.recorded_pids.insert(pid);
                know.pid_names.insert(pid, r.name.clone());
                running_pids.push(pid);
            }
        }
        let hash = vm_dir_hash(&r.name);
        let dir = set
            .vms_dirs
            .iter()
            .map(|v| v.join(&hash))
            .find(|d| d.is_dir());
        let booting = dir.as_ref().is_some_and(|d| {
            ctx.procs
                .smolvm_vmms_in(d.parent().unwrap_or(d))
                .any(|(_, vd)| vd == d.as_path())
        });
        let effective = match r.state.as_str() {
            // A paused machine has no process by design (its execution is saved to disk).
            "running" | "unreachable" | "pausing" if !alive => {
                if r.pid.is_some() {
                    format!("stale: recorded {}, process gone", r.state)
                } else {
                    format!("stale: recorded {} without a process", r.state)
                }
            }
            "paused" | "pausing" => r.state.clone(),
            _ if booting && !alive && !dir.as_deref().is_some_and(|d| vm_lock_held(ctx, d)) => {
                know.unclaimed_vm_dirs.extend(dir.clone());
                format!(
                    "{}; a VM process boots it that the record does not own",
                    r.state
                )
            }
            "created" if booting => "booting".to_string(),
            s => s.to_string(),
        };
        ctx.machines.push(Machine {
            product: P,
            name: r.name.clone(),
            state: r.state.clone(),
            pid: r.pid,
            alive,
            effective_state: effective,
            pid_start_time: r.pid_start_time,
            ephemeral: r.ephemeral,
            created_at: r.created_at,
            dir: dir.clone(),
            allocated_bytes: 0,
            db: Some(set.db_path.clone()),
            branched_from: r.golden.clone(),
        });
    }

    // Machine directories.
    let mut busy: Vec<u32> = running_pids.clone();
    for v in &set.vms_dirs {
        busy.extend(ctx.procs.smolvm_vmms_in(v).map(|(p, _)| p.pid));
    }
    busy.extend(ctx.procs.users_below(&set.cache_root));
    busy.sort_unstable();
    busy.dedup();
    let busy_reason = |what: &str| {
        format!(
            "{what}; a smolvm VM is running (process {}), so it may be in use right now.",
            pid_list(&busy)
        )
    };
    let gate = |d: Draft| -> Draft {
        if out.ok || !matches!(d.verdict, Verdict::Reclaimable | Verdict::OptIn) {
            return d;
        }
        let reason = format!(
            "{} But {problem}, so Smolsweep cannot verify it and leaves it alone.",
            d.reason
        );
        let mut d = d.verdict(Verdict::Unknown, reason);
        d.opt_in_class = None;
        d
    };
    let age_guard = ctx.opts.age_guard;
    for vms in &set.vms_dirs {
        for e in fsread::read_dir_or_empty(vms) {
            let Some(name) = e.name_str().map(str::to_string) else {
                continue;
            };
            let d = Draft::new(P, FindingKind::SmolvmUnrecognised, &e.path).root(vms);
            if let Some(rest) = name.strip_prefix('.') {
                // `.<name>.fork-operation.lock`, `.<name>.fork-operation.pause-operation.lock`
                let m = rest
                    .strip_suffix(".fork-operation.pause-operation.lock")
                    .or_else(|| rest.strip_suffix(".fork-operation.lock"));
                let Some(mname) = m else { continue }; // other bookkeeping files
                let d = Draft {
                    kind: FindingKind::SmolvmForkLock,
                    ..d
                }
                .owner(mname)
                .recheck(
                    std::slice::from_ref(&set.db_path),
                    OwnerRecord::MachineName(mname.to_string()),
                );
                let d = if !e.is_file() {
                    d.verdict(
                        Verdict::Unknown,
                        "Named like a lock file but is not a regular file; left alone.",
                    )
                } else if !ctx.locks.readable {
                    d.verdict(Verdict::Unknown, "Lock file; the system lock table is not readable here, so Smolsweep cannot tell whether it is held.")
                } else if ctx.locks.is_held(e.meta.dev(), e.meta.ino()) {
                    d.verdict(
                        Verdict::Protected,
                        "Lock file held by a running smolvm process right now.",
                    )
                } else if out.names.contains(mname) {
                    d.verdict(
                        Verdict::Protected,
                        format!("Fork/pause lock of machine '{mname}', which exists."),
                    )
                } else {
                    d.verdict(Verdict::Reclaimable, format!("Free lock file of '{mname}', which has no machine; smolvm leaves these behind, even for names that never existed."))
                };
                ctx.add(gate(d));
                continue;
            }
            match name.as_str() {
                "_shared" => {
                    let refs = pack_shared_refs(set);
                    for c in fsread::read_dir_or_empty(&e.path) {
                        let cname = c.name_str().unwrap_or_default().to_string();
                        let d = Draft::new(P, FindingKind::SmolvmSharedPack, &c.path).root(&e.path);
                        let d = if refs.iter().any(|r| r.contains(&cname)) {
                            d.verdict(
                                Verdict::Protected,
                                "Shared pack store that a machine points at (.pack-shared).",
                            )
                        } else if !busy.is_empty() {
                            d.verdict(
                                Verdict::Protected,
                                busy_reason("Shared pack store no machine points at"),
                            )
                        } else {
                            d.opt_in(OptInClass::Caches, "Shared pack store no machine points at; rebuilt from the pack when needed.")
                        };
                        ctx.add(gate(d));
                    }
                }
                "_cow-bases" => {
                    let d = Draft::new(P, FindingKind::SmolvmCowBases, &e.path).root(vms);
                    let d = if busy.is_empty() {
                        d.opt_in(OptInClass::Caches, "Immutable copy-on-write disk bases; rebuilt when a machine needs them.")
                    } else {
                        d.verdict(Verdict::Protected, busy_reason("Copy-on-write disk bases"))
                    };
                    ctx.add(gate(d));
                }
                "_restore-base" | "_restore-checkpoints" => {
                    let d = Draft::new(P, FindingKind::SmolvmRestoreCache, &e.path).root(vms);
                    let d = if busy.is_empty() {
                        d.opt_in(OptInClass::Caches, "Clones of recently restored checkpoints, guest memory included; survives every smolvm command and is only a speed-up.")
                    } else {
                        d.verdict(
                            Verdict::Protected,
                            busy_reason("Restore cache holding guest memory"),
                        )
                    };
                    ctx.add(gate(d));
                }
                "checkpoint-unpack" => {
                    if fsread::read_dir_or_empty(&e.path).is_empty() {
                        continue;
                    }
                    let d = Draft::new(P, FindingKind::SmolvmCheckpointUnpack, &e.path).root(vms);
                    let d = if busy.is_empty() {
                        d.opt_in(
                            OptInClass::Caches,
                            "Scratch space of an interrupted checkpoint unpack.",
                        )
                    } else {
                        d.verdict(
                            Verdict::Protected,
                            busy_reason("Checkpoint unpack scratch space"),
                        )
                    };
                    ctx.add(gate(d));
                }
                n if is_hash16(n) && e.is_dir() => {
                    if let Some(mname) = out.hash_to_name.get(n).cloned() {
                        let rec = records.iter().find(|r| r.name == mname);
                        let state = rec.map(|r| r.state.clone()).unwrap_or_default();
                        let dead_ephemeral = rec.is_some_and(|r| {
                            r.ephemeral
                                && r.pid.is_some_and(|pid| {
                                    !ctx.procs.alive_as_recorded(pid, r.pid_start_time)
                                })
                        }) && ctx.procs.users_below(&e.path).is_empty();
                        let helper_gone = helper_creator(&mname)
                            .is_some_and(|pid| ctx.procs.by_pid(pid).is_none())
                            && matches!(state.as_str(), "created" | "stopped")
                            && ctx.procs.users_below(&e.path).is_empty();
                        let d = if helper_gone {
                            // Deleted through `machine delete --force`, like a dead ephemeral one.
                            Draft { kind: FindingKind::SmolvmHelperMachineDir, ..d }.owner(mname.as_str()).verdict(
                                Verdict::Reclaimable,
                                format!("Helper machine '{mname}' ({state}) left by an interrupted image build or init bake; the process that made it is gone."),
                            )
                        } else if dead_ephemeral {
                            // Reclaimed through `machine delete --force`, which removes the
                            // record with the directory.
                            Draft { kind: FindingKind::SmolvmDeadEphemeralDir, ..d }.owner(mname.as_str()).verdict(
                                Verdict::Reclaimable,
                                format!("Ephemeral machine '{mname}' whose VM process is gone; smolvm's own next command would delete it, Smolsweep does it through `machine delete`."),
                            )
                        } else {
                            Draft { kind: FindingKind::SmolvmMachineDir, ..d }.owner(mname.as_str()).verdict(
                                Verdict::Protected,
                                format!("Directory of machine '{mname}' ({state}); delete the machine to reclaim it."),
                            )
                        };
                        ctx.add(gate(d));
                        if let Some(f) = ctx.findings.iter().find(|f| f.path == e.path) {
                            let bytes = f.allocated_bytes;
                            if let Some(m) = ctx.machines.iter_mut().find(|m| {
                                m.name == mname && m.db.as_deref() == Some(set.db_path.as_path())
                            }) {
                                m.allocated_bytes = bytes;
                            }
                        }
                        continue;
                    }
                    if let Some((rname, owner_pid)) = reserved.get(n) {
                        let by = owner_pid
                            .map(|p| format!(" held by process {p}"))
                            .unwrap_or_default();
                        ctx.add(gate(
                            Draft {
                                kind: FindingKind::SmolvmReservedDir,
                                ..d
                            }
                            .owner(rname.as_str())
                            .verdict(
                                Verdict::Protected,
                                format!("Machine directory of '{rname}', which is being created right now (a create reservation{by}); left alone."),
                            ),
                        ));
                        continue;
                    }
                    let owner = read_name_file(&e.path);
                    let users = ctx.procs.users_below(&e.path);
                    let newest = fsread::newest_mtime(&e.path).unwrap_or(i128::MAX);
                    let age = ago(ctx, newest);
                    let entries = fsread::read_dir_or_empty(&e.path);
                    let only_name = entries.len() == 1 && entries[0].name_str() == Some("name");
                    let label = owner
                        .as_ref()
                        .map(|o| format!("'{o}'"))
                        .unwrap_or_else(|| "an unknown machine".into());
                    let d = d.owner_opt(owner.clone()).recheck(
                        std::slice::from_ref(&set.db_path),
                        OwnerRecord::MachineDirHash(n.to_string()),
                    );
                    let d = if !users.is_empty() {
                        Draft { kind: FindingKind::SmolvmReferencedDir, ..d }.verdict(
                            Verdict::Protected,
                            format!("Machine directory of {label} with no record, but process {} still uses it; reap that VM first.", pid_list(&users)),
                        )
                    } else if vm_lock_held(ctx, &e.path) {
                        // Whoever holds it (a CLI, serve) may be another user's process, whose
                        // open files this scan cannot see.
                        Draft { kind: FindingKind::SmolvmReferencedDir, ..d }.verdict(
                            Verdict::Protected,
                            format!("Machine directory of {label} with no record, but its vm.lock is held right now (a smolvm command or serve is working on it)."),
                        )
                    } else if age < age_guard {
                        Draft { kind: FindingKind::SmolvmYoungDir, ..d }.verdict(
                            Verdict::Protected,
                            format!("Machine directory of {label} with no record, changed {} s ago; a machine may be being created right now.", age.as_secs()),
                        )
                    } else if entries.is_empty() {
                        Draft { kind: FindingKind::SmolvmEmptyDir, ..d }.verdict(
                            Verdict::Reclaimable,
                            "Empty machine directory with no record (left by stop or status on a name that does not exist).",
                        )
                    } else if only_name {
                        Draft { kind: FindingKind::SmolvmNameOnlyDir, ..d }.verdict(
                            Verdict::Reclaimable,
                            format!("Machine directory of {label} holding only its name file, with no record."),
                        )
                    } else {
                        Draft { kind: FindingKind::SmolvmDanglingDir, ..d }.verdict(
                            Verdict::Reclaimable,
                            format!("Machine directory of {label} with no record and no process using it (a failed or interrupted `machine run` leaves these)."),
                        )
                    };
                    ctx.add(gate(d));
                }
                _ => {
                    ctx.add(d.verdict(
                        Verdict::Unknown,
                        "Not a machine directory name smolvm uses; left alone.",
                    ));
                }
            }
        }
    }

    // Caches beside the machine directories.
    for (sub, kind, what) in [
        (
            "init-layers",
            FindingKind::SmolvmInitLayers,
            "Image layers baked for --oci-cache runs; rebuilt when needed.",
        ),
        (
            "image-seeds",
            FindingKind::SmolvmImageSeeds,
            "Seed images for fast machine creation; rebuilt when needed. smolvm trims it itself above SMOLVM_IMAGE_SEED_MAX_BYTES.",
        ),
        (
            "agent-rootfs-tars",
            FindingKind::SmolvmAgentRootfsTars,
            "Unpacked agent root file system archives; rebuilt when needed.",
        ),
        (
            "rootfs",
            FindingKind::SmolvmRootfsCache,
            "Root file systems extracted for SDK runs; rebuilt when needed.",
        ),
    ] {
        let p = set.cache_root.join(sub);
        if fsread::lstat(&p).is_some_and(|m| m.is_dir()) {
            let d = Draft::new(P, kind, &p).root(&set.cache_root);
            let d = if busy.is_empty() {
                d.opt_in(OptInClass::Caches, what)
            } else {
                d.verdict(Verdict::Protected, busy_reason(what.trim_end_matches('.')))
            };
            ctx.add(gate(d));
        }
    }
    // Registry pull tokens (1.23+): credentials, shown and kept (uninstall removes them only
    // with --remove-credentials).
    let tokens = set.cache_root.join("registry-tokens");
    if fsread::lstat(&tokens).is_some() {
        ctx.add(
            Draft::new(P, FindingKind::SmolvmRegistryTokens, &tokens)
                .root(&set.cache_root)
                .verdict(
                    Verdict::Protected,
                    "Registry pull tokens (credentials): never part of a reclaim; `smolsweep uninstall --remove-credentials` removes them.",
                ),
        );
    }
    for e in fsread::read_dir_or_empty(&set.pack_cache) {
        if !e.is_dir() {
            continue;
        }
        let leases: Vec<u32> = fsread::read_dir_or_empty(&e.path.join("leases"))
            .iter()
            .filter_map(|l| l.name_str()?.parse().ok())
            .filter(|pid| ctx.procs.by_pid(*pid).is_some())
            .collect();
        let users = ctx.procs.users_below(&e.path);
        let d = Draft::new(P, FindingKind::SmolvmPackCache, &e.path).root(&set.pack_cache);
        let d = if !leases.is_empty() || !users.is_empty() {
            let mut all = leases.clone();
            all.extend(users);
            d.verdict(
                Verdict::Protected,
                format!(
                    "Extracted .smolmachine pack in use by process {}.",
                    pid_list(&all)
                ),
            )
        } else {
            d.opt_in(OptInClass::Caches, format!("Extracted .smolmachine pack with no active lease; extracted again on the next run. {}", cap_note(ctx, "SMOLVM_PACK_CACHE_MAX_BYTES", "10 % of its file system, at least 5 GiB")))
        };
        ctx.add(gate(d));
    }
    for e in fsread::read_dir_or_empty(&set.libs_cache) {
        let d = Draft::new(P, FindingKind::SmolvmLibsCache, &e.path).root(&set.libs_cache);
        let held = e.is_file() && ctx.locks.is_held(e.meta.dev(), e.meta.ino());
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
        ctx.add(gate(d));
    }
    for (p, kind, what) in [
        (&set.registry_cache, FindingKind::SmolvmRegistryCache, "Registry blob cache; downloaded again when needed. smolvm trims it itself above SMOLVM_BLOB_CACHE_MAX_BYTES."),
        (&set.image_archives, FindingKind::SmolvmImageArchives, "Local image archives (from v1.23 also images fetched for machines without network); fetched again when needed."),
    ] {
        if fsread::lstat(p).is_some_and(|m| m.is_dir()) {
            let d = Draft::new(P, kind, p.as_path());
            let d = if busy.is_empty() {
                d.opt_in(OptInClass::Caches, what)
            } else {
                d.verdict(Verdict::Protected, busy_reason(what.split(';').next().unwrap_or(what)))
            };
            ctx.add(gate(d));
        }
    }
    out
}

/// The pid in a helper machine's name (`image-seed-<hash>-<pid>`, `init-bake-<hash>-<pid>`):
/// the process whose image build or init bake made it.
pub(crate) fn helper_creator(name: &str) -> Option<u32> {
    let rest = name
        .strip_prefix("image-seed-")
        .or_else(|| name.strip_prefix("init-bake-"))?;
    let (_, pid) = rest.rsplit_once('-')?;
    pid.parse().ok().filter(|p| *p > 0)
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

/// Contents of every machine's `.pack-shared` pointer.
fn pack_shared_refs(set: &SmolvmRootSet) -> Vec<String> {
    let mut refs = Vec::new();
    for v in &set.vms_dirs {
        for e in fsread::read_dir_or_empty(v) {
            let p = e.path.join(".pack-shared");
            if let Some(m) = fsread::lstat(&p) {
                if m.file_type().is_symlink() {
                    if let Ok(t) = std::fs::read_link(&p) {
                        refs.push(t.to_string_lossy().into_owned());
                    }
                } else if let Ok(b) = fsread::read_small(&p, 4096) {
                    refs.push(String::from_utf8_lossy(&b).trim().to_string());
                }
            }
        }
    }
    refs
}
