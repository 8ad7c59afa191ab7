//! Whose VM each VMM-shaped process is: attributed to this HOME's products by what the scan
//! knows of them (records, machine directories, data directories), with the reason.

use std::path::{Path, PathBuf};

use crate::model::{Product, Scope, VmProcess};
use crate::procs::shape::VmmShape;
use crate::procs::RawProcess;

use super::celesto::CelestoKnowledge;
use super::ctx::Ctx;
use super::smolvm::SmolvmKnowledge;

fn under_any(path: &Path, roots: &[PathBuf]) -> bool {
    roots.iter().any(|r| path.starts_with(r))
}

/// Turn VMM-shaped processes into attributed [`VmProcess`]es.
pub(crate) fn attribute(
    ctx: &Ctx<'_>,
    cel: &CelestoKnowledge,
    smol: &SmolvmKnowledge,
) -> Vec<VmProcess> {
    let home = &ctx.opts.env.home;
    let mut out = Vec::new();
    for (i, shape) in &ctx.procs.vmms {
        let p = &ctx.procs.raw[*i];
        let mut claim = claim(p, shape, home, cel, smol);
        if !started_here(p, shape, home, ctx.opts.env.euid) {
            claim.this_home = false;
        }
        out.push(vm_process(p, shape, claim));
    }
    out.sort_by_key(|p| p.pid);
    out
}

/// What the knowledge of this HOME says about one VMM: whose it is and why.
struct Claim {
    product: Product,
    owner: Option<String>,
    /// Nothing in this HOME's inventories owns it (only acted on when it is this HOME's).
    orphan: bool,
    /// It runs from this HOME's roots (before the process's own uid and HOME are weighed).
    this_home: bool,
    reason: String,
}

/// The claim for one VMM, by its shape.
fn claim(
    p: &RawProcess,
    shape: &VmmShape,
    home: &Path,
    cel: &CelestoKnowledge,
    smol: &SmolvmKnowledge,
) -> Claim {
    match shape {
        VmmShape::SmolvmBootVm { vm_dir, .. } => claim_boot_vm(vm_dir, smol),
        VmmShape::SmolvmForked => claim_forked(p, home, smol),
        VmmShape::CelestoQemu {
            drives, sandbox_id, ..
        } => {
            let dd = drives.iter().find_map(|d| cel.data_dir_of(d));
            cel_attr("QEMU", sandbox_id, dd)
        }
        VmmShape::CelestoFirecracker { sandbox_id, .. } => cel_attr(
            "Firecracker",
            sandbox_id,
            cel_data_dir_of(p, sandbox_id, cel),
        ),
        VmmShape::CelestoLibkrun { sandbox_id, .. } => {
            cel_attr("libkrun", sandbox_id, cel_data_dir_of(p, sandbox_id, cel))
        }
    }
}

/// A smolvm `_boot-vm` VMM, by the machine directory it boots from.
fn claim_boot_vm(vm_dir: &Path, smol: &SmolvmKnowledge) -> Claim {
    let Some((set, name)) = smol.locate_vm_dir(vm_dir) else {
        return Claim {
            product: Product::Smolvm,
            owner: None,
            orphan: false,
            this_home: false,
            reason: format!(
                "It runs a machine from {}, which is outside this HOME's smolvm folders.",
                vm_dir.display()
            ),
        };
    };
    let unclaimed = smol.unclaimed_vm_dirs.contains(vm_dir);
    let recorded = name.as_ref().is_some_and(|n| set.names.contains(n)) && !unclaimed;
    let reason = match (&name, recorded, set.ok) {
        (_, _, false) => "smolvm's list of machines could not be read, so Smolsweep cannot tell which machine this VM belongs to.".to_string(),
        (Some(n), false, _) if unclaimed => format!(
            "A VM is running from the directory of machine '{n}' ({}), but the machine's record names no running VM and no smolvm command is starting it, so the machine does not own this VM.",
            vm_dir.display()
        ),
        (Some(n), true, _) => {
            format!("The VM of machine '{n}', running from {}.", vm_dir.display())
        }
        (Some(n), false, _) => format!(
            "A VM is running from the directory of '{n}' ({}), but no machine record owns it.",
            vm_dir.display()
        ),
        (None, _, _) => format!(
            "A VM is running from {}, a machine directory with no name and no record, so no machine owns it.",
            vm_dir.display()
        ),
    };
    Claim {
        product: Product::Smolvm,
        owner: name,
        orphan: set.ok && !recorded,
        this_home: true,
        reason,
    }
}

/// A forked pack-run smolvm VMM, known by its process name: this HOME's when its HOME, its
/// `SMOLVM_DATA_DIR` or its open files say so.
fn claim_forked(p: &RawProcess, home: &Path, smol: &SmolvmKnowledge) -> Claim {
    let mine = p.env_home.as_deref() == Some(home)
        || p.env_smolvm_data_dir
            .as_deref()
            .is_some_and(|d| smol.data_dirs.iter().any(|x| x == d))
        || p.open_files
            .iter()
            .any(|f| under_any(&f.path, &smol.all_roots));
    let recorded = smol.recorded_pids.contains(&p.pid);
    let reason = if recorded {
        "A VM started by `smolvm machine run` or `pack run`; a machine record owns it.".to_string()
    } else {
        "A VM started by `smolvm machine run` or `pack run` (known by its process name); no machine record owns it.".to_string()
    };
    Claim {
        product: Product::Smolvm,
        owner: smol.name_for_pid(p.pid),
        orphan: mine && smol.all_ok && !recorded,
        this_home: mine,
        reason,
    }
}

/// The Celesto data directory a Firecracker or libkrun VMM uses: the one holding a file it has
/// open, else the one holding its sandbox's disk.
fn cel_data_dir_of<'a>(
    p: &RawProcess,
    sandbox_id: &Option<String>,
    cel: &'a CelestoKnowledge,
) -> Option<&'a super::celesto::CelData> {
    p.open_files
        .iter()
        .find_map(|f| cel.data_dir_of(&f.path))
        .or_else(|| {
            sandbox_id
                .as_deref()
                .and_then(|id| cel.data_dir_with_disk(id))
        })
}

/// Whether the process may be this HOME's at all: it runs as us, and was not started from
/// another HOME (a process from another HOME is never claimed, even if it names our paths;
/// `_boot-vm` and QEMU VMMs are judged by their paths alone).
fn started_here(p: &RawProcess, shape: &VmmShape, home: &Path, euid: u32) -> bool {
    let other_home = p.env_home.as_ref().is_some_and(|h| h != home);
    let judged_by_paths = matches!(
        shape,
        VmmShape::SmolvmBootVm { .. } | VmmShape::CelestoQemu { .. }
    );
    p.uid == euid && (judged_by_paths || !other_home)
}

/// The paths a VMM is known by, for the report.
fn shape_paths(shape: &VmmShape) -> Vec<PathBuf> {
    match shape {
        VmmShape::SmolvmBootVm { vm_dir, .. } => vec![vm_dir.clone()],
        VmmShape::CelestoQemu { drives, .. } => drives.clone(),
        VmmShape::CelestoFirecracker { api_sock, .. } => vec![api_sock.clone()],
        VmmShape::CelestoLibkrun { config, .. } => vec![config.clone()],
        VmmShape::SmolvmForked => Vec::new(),
    }
}

/// The report's row for one VMM and its claim.
fn vm_process(p: &RawProcess, shape: &VmmShape, claim: Claim) -> VmProcess {
    let this_home = claim.this_home;
    VmProcess {
        pid: p.pid,
        start_time: p.start_time,
        product: claim.product,
        shape: shape.shape(),
        owner: claim.owner,
        orphan: claim.orphan && this_home,
        scope: if this_home {
            Scope::ThisHome
        } else {
            Scope::Foreign
        },
        held_deleted_bytes: crate::procs::shape::held_deleted_bytes(p),
        uid: p.uid,
        comm: p.comm.clone(),
        argv: p.argv.clone(),
        paths: shape_paths(shape),
        reason: if this_home {
            claim.reason
        } else {
            format!(
                "{} It belongs to another HOME, so Smolsweep never acts on it.",
                claim.reason
            )
        },
        fds_readable: p.fds_readable,
        kept: None,
    }
}

fn cel_attr(
    vmm: &str,
    sandbox_id: &Option<String>,
    data_dir: Option<&super::celesto::CelData>,
) -> Claim {
    let Some(dd) = data_dir else {
        return Claim {
            product: Product::Celesto,
            owner: sandbox_id.clone(),
            orphan: false,
            this_home: false,
            reason: format!("A {vmm} VM whose disk is not in this HOME's Celesto data folders."),
        };
    };
    let live = sandbox_id.as_ref().is_some_and(|id| dd.live.contains(id));
    let name = sandbox_id.clone().unwrap_or_else(|| "?".into());
    let reason = if !dd.ok {
        format!("The {vmm} VM of sandbox '{name}'; Celesto's list of sandboxes could not be read, so Smolsweep cannot tell whether the sandbox still exists.")
    } else if live {
        format!(
            "The {vmm} VM of sandbox '{name}', which exists in {}.",
            dd.dir.display()
        )
    } else {
        format!("The {vmm} VM of sandbox '{name}', which is in no list of sandboxes: it was started by the Celesto SDK without a record, or is still running after its sandbox was deleted.")
    };
    Claim {
        product: Product::Celesto,
        owner: sandbox_id.clone(),
        orphan: dd.ok && !live,
        this_home: true,
        reason,
    }
}
