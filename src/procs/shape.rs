//! Which processes are VMMs of either product, and which paths a process names or holds.
//!
//! Detection reads argv **element by element**, never a substring of the joined command line:
//! `pgrep -f _boot-vm` also matches any shell or script whose text mentions `_boot-vm`
//! (smolvm hazard 9), and Celesto's substring in-use test lets `…/victim.qcow2.backup-zz`
//! protect `victim.qcow2` (Celesto B4).

use std::collections::HashMap;
use std::collections::HashSet;
#[cfg(all(test, target_os = "linux"))]
use std::fs;
#[cfg(all(test, target_os = "linux"))]
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::model::ProcShape;
#[cfg(test)]
use crate::model::Product;

use super::RawProcess;

/// The shape of a VMM process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum VmmShape {
    /// smolvm's exec'd boot child: `<exe> _boot-vm <vmdir>/boot-config.json`.
    SmolvmBootVm {
        boot_config: PathBuf,
        vm_dir: PathBuf,
    },
    /// smolvm's forked pack-run child: argv inherited from its parent, recognisable on Linux by
    /// the libkrun comm rename only; on macOS by `smolvm-bin machine|pack run` whose parent is 1
    /// or another `smolvm-bin`.
    SmolvmForked,
    /// Celesto QEMU: `qemu-system-* … -drive file=<disk>,… -qmp unix:/tmp/qmp-<id>.sock,…`.
    CelestoQemu {
        drives: Vec<PathBuf>,
        qmp_socket: Option<PathBuf>,
        sandbox_id: Option<String>,
    },
    /// Celesto Firecracker: `firecracker --api-sock /tmp/fc-<id>.sock`.
    CelestoFirecracker {
        api_sock: PathBuf,
        sandbox_id: Option<String>,
    },
    /// Celesto libkrun: `python -m …_libkrun_launcher /tmp/libkrun-<id>-<32hex>.json`.
    CelestoLibkrun {
        config: PathBuf,
        sandbox_id: Option<String>,
    },
}

impl VmmShape {
    /// What VMM this is, in the closed table of shapes (`VmProcess::shape`).
    pub(crate) fn shape(&self) -> ProcShape {
        match self {
            VmmShape::SmolvmBootVm { .. } => ProcShape::SmolvmBootVm,
            VmmShape::SmolvmForked => ProcShape::SmolvmForked,
            VmmShape::CelestoQemu { .. } => ProcShape::CelestoQemu,
            VmmShape::CelestoFirecracker { .. } => ProcShape::CelestoFirecracker,
            VmmShape::CelestoLibkrun { .. } => ProcShape::CelestoLibkrun,
        }
    }

    /// The stable name used in reports (`smolvm.boot_vm`).
    #[cfg(test)]
    pub fn shape_name(&self) -> &'static str {
        self.shape().as_str()
    }

    #[cfg(test)]
    pub fn product(&self) -> Product {
        self.shape().product()
    }

    /// The Celesto sandbox id read from a socket or config file name, when there is one.
    #[cfg(test)]
    pub fn sandbox_id(&self) -> Option<&str> {
        match self {
            VmmShape::CelestoQemu { sandbox_id, .. }
            | VmmShape::CelestoFirecracker { sandbox_id, .. }
            | VmmShape::CelestoLibkrun { sandbox_id, .. } => sandbox_id.as_deref(),
            _ => None,
        }
    }

    /// Paths the shape names in argv (boot config and machine dir, drives, sockets, config).
    #[cfg(all(test, target_os = "linux"))]
    pub fn paths(&self) -> Vec<PathBuf> {
        match self {
            VmmShape::SmolvmBootVm {
                boot_config,
                vm_dir,
            } => vec![boot_config.clone(), vm_dir.clone()],
            VmmShape::SmolvmForked => Vec::new(),
            VmmShape::CelestoQemu {
                drives, qmp_socket, ..
            } => drives.iter().chain(qmp_socket).cloned().collect(),
            VmmShape::CelestoFirecracker { api_sock, .. } => vec![api_sock.clone()],
            VmmShape::CelestoLibkrun { config, .. } => vec![config.clone()],
        }
    }
}

/// The comm libkrun gives a VMM on Linux: `libkrun VM`, or `VM:$HOSTNAME` (truncated to 15
/// bytes by the kernel) when `HOSTNAME` is set.
pub(crate) fn is_libkrun_comm(comm: &str) -> bool {
    comm == "libkrun VM" || comm.starts_with("VM:")
}

/// The last path component of argv[0] (`/proc/self/exe` → `exe`).
pub(crate) fn argv0_basename(p: &RawProcess) -> &str {
    p.argv
        .first()
        .map(|a| a.rsplit('/').next().unwrap_or(a))
        .unwrap_or("")
}

const SMOLVM_EXES: &[&str] = &["smolvm-bin", "smol-vmm"];

/// The shape of one process, or `None` when it is not a VMM of either product.
///
/// The macOS forked shape needs the parent: a `smolvm-bin machine|pack run` whose parent is
/// another `smolvm-bin` is found only by [`detect_all`]; here only parent 1 counts.
pub(crate) fn detect_shape(p: &RawProcess) -> Option<VmmShape> {
    detect_with_parent(p, |_| false)
}

/// Whether `p`, read from `/proc` (not from `ps`: no parent is asked), has the shape of a VMM
/// of either product: only then are its executable and environment read.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) fn may_be_vmm(p: &RawProcess) -> bool {
    detect_with_parent(p, |_| false).is_some()
}

/// Every VMM among `procs`, with its shape (in the order of `procs`).
pub(crate) fn detect_all(procs: &[RawProcess]) -> Vec<(&RawProcess, VmmShape)> {
    let by_pid: HashMap<u32, &RawProcess> = procs.iter().map(|p| (p.pid, p)).collect();
    let parent_is_smolvm = |ppid: u32| {
        by_pid
            .get(&ppid)
            .is_some_and(|parent| SMOLVM_EXES.contains(&argv0_basename(parent)))
    };
    procs
        .iter()
        .filter_map(|p| Some((p, detect_with_parent(p, parent_is_smolvm)?)))
        .collect()
}

fn detect_with_parent(p: &RawProcess, parent_is_smolvm: impl Fn(u32) -> bool) -> Option<VmmShape> {
    if let Some(s) = smolvm_boot_vm(p) {
        return Some(s);
    }
    // Before the comm checks: Celesto's libkrun launcher is renamed by libkrun too.
    if let Some(s) = celesto_libkrun(p) {
        return Some(s);
    }
    let exe = argv0_basename(p);
    if exe.starts_with("qemu-system-") {
        return Some(celesto_qemu(&p.argv));
    }
    if exe == "firecracker" {
        return celesto_firecracker(&p.argv);
    }
    let forked = if p.from_ps {
        SMOLVM_EXES.contains(&exe)
            && matches!(
                (
                    p.argv.get(1).map(String::as_str),
                    p.argv.get(2).map(String::as_str)
                ),
                (Some("machine" | "pack"), Some("run"))
            )
            && (p.ppid == 1 || parent_is_smolvm(p.ppid))
    } else {
        is_libkrun_comm(&p.comm)
    };
    forked.then_some(VmmShape::SmolvmForked)
}

/// smolvm's exec'd boot child. argv[1] must be exactly `_boot-vm` and argv[2] a
/// `…/boot-config.json`, and the process itself must look like the VMM:
/// * Linux: comm `libkrun VM` / `VM:*` (after the libkrun rename), `exe` with argv[0]
///   `/proc/self/exe` (booting, before the rename: the kernel names it after the exec'd path),
///   or `smolvm-bin` / `smol-vmm` (exec'd through a real path);
/// * macOS (`ps`): argv[0]'s basename is `smolvm-bin` or `smol-vmm`.
///
/// So `cat _boot-vm …/boot-config.json` or a shell mentioning the string is not a VMM.
fn smolvm_boot_vm(p: &RawProcess) -> Option<VmmShape> {
    if p.argv.get(1).map(String::as_str) != Some("_boot-vm") {
        return None;
    }
    let config = p.argv.get(2)?;
    if !config.ends_with("/boot-config.json") {
        return None;
    }
    let exe = argv0_basename(p);
    let looks_like_vmm = if p.from_ps {
        SMOLVM_EXES.contains(&exe)
    } else {
        is_libkrun_comm(&p.comm)
            || (p.comm == "exe" && p.argv[0] == "/proc/self/exe")
            || SMOLVM_EXES.contains(&p.comm.as_str())
    };
    if !looks_like_vmm {
        return None;
    }
    let boot_config = PathBuf::from(config);
    let vm_dir = boot_config.parent()?.to_path_buf();
    Some(VmmShape::SmolvmBootVm {
        boot_config,
        vm_dir,
    })
}

/// QEMU: every `-drive file=…` (and `-blockdev …filename=…`, `-hda`…, `-cdrom`) plus the QMP
/// socket. Values are unescaped the way QEMU does (`,,` is a literal comma).
fn celesto_qemu(argv: &[String]) -> VmmShape {
    let mut drives = Vec::new();
    let mut qmp_socket = None;
    let mut args = argv.iter().skip(1);
    while let Some(arg) = args.next() {
        let opt = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-'));
        let Some(opt) = opt else { continue };
        match opt {
            "drive" | "blockdev" => {
                let Some(value) = args.next() else { break };
                let key = if opt == "drive" { "file" } else { "filename" };
                for (k, v) in qemu_opts(value) {
                    if k == key || (opt == "drive" && k == "file.filename") {
                        drives.push(PathBuf::from(v));
                    }
                }
            }
            "hda" | "hdb" | "hdc" | "hdd" | "cdrom" | "sd" | "pflash" | "mtdblock" => {
                let Some(value) = args.next() else { break };
                drives.push(PathBuf::from(value));
            }
            "qmp" => {
                let Some(value) = args.next() else { break };
                if let Some(rest) = value.strip_prefix("unix:") {
                    let pieces = split_qemu_commas(rest);
                    if let Some(path) = pieces.first().filter(|p| !p.is_empty()) {
                        qmp_socket = Some(PathBuf::from(path));
                    }
                }
            }
            _ => {}
        }
    }
    let sandbox_id = qmp_socket
        .as_deref()
        .and_then(|s| id_between(s, "qmp-", ".sock"));
    VmmShape::CelestoQemu {
        drives,
        qmp_socket,
        sandbox_id,
    }
}

/// Splits a QEMU option string on single commas; `,,` stands for a literal comma.
pub(crate) fn split_qemu_commas(value: &str) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut current = String::new();
    let mut chars = value.chars().peekable();
    while let Some(c) = chars.next() {
        if c == ',' {
            if chars.peek() == Some(&',') {
                chars.next();
                current.push(',');
            } else {
                pieces.push(std::mem::take(&mut current));
            }
        } else {
            current.push(c);
        }
    }
    pieces.push(current);
    pieces
}

/// `key=value` pairs of a QEMU option string (pieces without `=` are flags and skipped).
pub(crate) fn qemu_opts(value: &str) -> Vec<(String, String)> {
    split_qemu_commas(value)
        .into_iter()
        .filter_map(|piece| {
            let (k, v) = piece.split_once('=')?;
            Some((k.to_string(), v.to_string()))
        })
        .collect()
}

/// The exact paths a QEMU command line opens as drives.
#[cfg(test)]
pub fn qemu_drive_files(argv: &[String]) -> Vec<PathBuf> {
    match celesto_qemu(argv) {
        VmmShape::CelestoQemu { drives, .. } => drives,
        _ => Vec::new(),
    }
}

fn celesto_firecracker(argv: &[String]) -> Option<VmmShape> {
    let mut api_sock = None;
    let mut args = argv.iter().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--api-sock" {
            api_sock = args.next().cloned();
        } else if let Some(v) = arg.strip_prefix("--api-sock=") {
            api_sock = Some(v.to_string());
        }
    }
    let api_sock = PathBuf::from(api_sock.filter(|s| !s.is_empty())?);
    let sandbox_id = id_between(&api_sock, "fc-", ".sock");
    Some(VmmShape::CelestoFirecracker {
        api_sock,
        sandbox_id,
    })
}

/// A Python interpreter (`python`, `python3`, `python3.12`, macOS framework `Python`) running
/// `-m <…_libkrun_launcher> <config>`.
fn celesto_libkrun(p: &RawProcess) -> Option<VmmShape> {
    if !argv0_basename(p).to_ascii_lowercase().starts_with("python") {
        return None;
    }
    let m = p.argv.iter().skip(1).position(|a| a == "-m")? + 1;
    let module = p.argv.get(m + 1)?;
    if !module.ends_with("_libkrun_launcher") {
        return None;
    }
    let args = &p.argv[m + 2..];
    // Prefer the argument shaped like Celesto's config name; else the first argument.
    let config = args
        .iter()
        .find(|a| libkrun_config_id(Path::new(a)).is_some())
        .or_else(|| args.first())?;
    let config = PathBuf::from(config);
    let sandbox_id = libkrun_config_id(&config);
    Some(VmmShape::CelestoLibkrun { config, sandbox_id })
}

/// `<prefix><id><suffix>` in a file name → `id` (non-empty).
fn id_between(path: &Path, prefix: &str, suffix: &str) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    let id = name.strip_prefix(prefix)?.strip_suffix(suffix)?;
    (!id.is_empty()).then(|| id.to_string())
}

/// `libkrun-<id>-<32 lowercase hex>.json` → `id` (the id may itself contain `-`).
pub(crate) fn libkrun_config_id(path: &Path) -> Option<String> {
    let middle = id_between(path, "libkrun-", ".json")?;
    let (id, hex) = middle.rsplit_once('-')?;
    let is_hex = hex.len() == 32
        && hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    (is_hex && !id.is_empty()).then(|| id.to_string())
}

/// The parent chain of `pid` within `procs`, nearest first (stops at a missing parent or a
/// cycle). Maps a forked VMM to the CLI or packed binary that started it.
#[cfg(test)]
pub fn ancestors(procs: &[RawProcess], pid: u32) -> Vec<&RawProcess> {
    let by_pid: HashMap<u32, &RawProcess> = procs.iter().map(|p| (p.pid, p)).collect();
    let mut chain = Vec::new();
    let mut seen = HashSet::from([pid]);
    let mut cur = by_pid.get(&pid).map(|p| p.ppid);
    while let Some(ppid) = cur {
        if !seen.insert(ppid) {
            break;
        }
        let Some(parent) = by_pid.get(&ppid) else {
            break;
        };
        chain.push(*parent);
        cur = Some(parent.ppid);
    }
    chain
}

/// Whether `p` names `path` exactly: an argv element equal to it, a path its shape names (QEMU
/// drive `file=` after unescaping, sockets, configs), or an open file with that path or the
/// same device and inode. Never a substring: `…/victim.qcow2.backup-zz` does not name
/// `…/victim.qcow2` (Celesto B4).
#[cfg(all(test, target_os = "linux"))]
pub fn names_path_exactly(p: &RawProcess, path: &Path) -> bool {
    let identity = fs::metadata(path).ok().map(|m| (m.dev(), m.ino()));
    names_path_with_identity(p, path, identity)
}

#[cfg(all(test, target_os = "linux"))]
fn names_path_with_identity(p: &RawProcess, path: &Path, identity: Option<(u64, u64)>) -> bool {
    p.argv.iter().any(|a| Path::new(a) == path)
        || detect_shape(p).is_some_and(|s| s.paths().iter().any(|q| q == path))
        || qemu_drive_files(&p.argv).iter().any(|q| q == path)
        || p.open_files
            .iter()
            .any(|f| (!f.deleted && f.path == path) || identity == Some((f.dev, f.ino)))
}

/// Allocated bytes of unlinked files `p` still holds open, each inode counted once
/// (a lower bound when its fds were unreadable).
pub(crate) fn held_deleted_bytes(p: &RawProcess) -> u64 {
    let mut seen = HashSet::new();
    p.open_files
        .iter()
        .filter(|f| f.deleted && seen.insert((f.dev, f.ino)))
        .map(|f| f.allocated)
        .sum()
}

/// Which processes name or hold which paths, built once for many in-use questions.
#[cfg(all(test, target_os = "linux"))]
#[derive(Debug, Default)]
pub struct InUseIndex {
    by_path: HashMap<PathBuf, Vec<u32>>,
    by_inode: HashMap<(u64, u64), Vec<u32>>,
}

#[cfg(all(test, target_os = "linux"))]
impl InUseIndex {
    pub fn build(procs: &[RawProcess]) -> Self {
        let mut index = InUseIndex::default();
        for p in procs {
            let mut paths: HashSet<PathBuf> = p.argv.iter().map(PathBuf::from).collect();
            if let Some(shape) = detect_shape(p) {
                paths.extend(shape.paths());
            }
            paths.extend(qemu_drive_files(&p.argv));
            for f in &p.open_files {
                if !f.deleted {
                    paths.insert(f.path.clone());
                }
                let pids = index.by_inode.entry((f.dev, f.ino)).or_default();
                if !pids.contains(&p.pid) {
                    pids.push(p.pid);
                }
            }
            for path in paths {
                index.by_path.entry(path).or_default().push(p.pid);
            }
        }
        index
    }

    /// PIDs that name `path` exactly or hold it open (same rules as [`names_path_exactly`]).
    pub fn users(&self, path: &Path) -> Vec<u32> {
        let mut pids: Vec<u32> = self.by_path.get(path).cloned().unwrap_or_default();
        if let Ok(m) = fs::metadata(path) {
            pids.extend(self.by_inode.get(&(m.dev(), m.ino())).into_iter().flatten());
        }
        pids.sort_unstable();
        pids.dedup();
        pids
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proc_with(comm: &str, argv: &[&str]) -> RawProcess {
        RawProcess {
            pid: 100,
            ppid: 1,
            comm: comm.into(),
            argv: argv.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn qemu_comma_doubling() {
        assert_eq!(
            split_qemu_commas("file=/a,,b/c.qcow2,if=none"),
            vec!["file=/a,b/c.qcow2", "if=none"]
        );
        assert_eq!(split_qemu_commas("a,,,b"), vec!["a,", "b"]);
        assert_eq!(
            qemu_drive_files(&[
                "qemu-system-x86_64".into(),
                "-drive".into(),
                "if=pflash,format=raw,unit=1,file=/fw/vars,,x.fd".into(),
                "-hda".into(),
                "/d/h.img".into(),
            ]),
            vec![PathBuf::from("/fw/vars,x.fd"), PathBuf::from("/d/h.img")]
        );
    }

    #[test]
    fn libkrun_ids() {
        let hex = "0123456789abcdef0123456789abcdef";
        assert_eq!(
            libkrun_config_id(Path::new(&format!("/tmp/libkrun-my-box-{hex}.json"))),
            Some("my-box".into())
        );
        assert_eq!(
            libkrun_config_id(Path::new("/tmp/libkrun-x-0123.json")),
            None
        );
        assert_eq!(
            libkrun_config_id(Path::new(&format!("/tmp/libkrun--{hex}.json"))),
            None
        );
        assert_eq!(
            libkrun_config_id(Path::new(&format!(
                "/tmp/libkrun-x-{}.json",
                hex.to_uppercase()
            ))),
            None
        );
    }

    #[test]
    fn hazard_7_proc_self_exe_argv0_with_unreadable_exe() {
        let p = proc_with(
            "libkrun VM",
            &[
                "/proc/self/exe",
                "_boot-vm",
                "/h/.cache/smolvm/vms/0123456789abcdef/boot-config.json",
            ],
        );
        assert_eq!(p.exe, None);
        assert_eq!(
            detect_shape(&p),
            Some(VmmShape::SmolvmBootVm {
                boot_config: "/h/.cache/smolvm/vms/0123456789abcdef/boot-config.json".into(),
                vm_dir: "/h/.cache/smolvm/vms/0123456789abcdef".into(),
            })
        );
        // Booting, before libkrun renames it: the kernel calls it `exe`.
        assert!(detect_shape(&proc_with(
            "exe",
            &p.argv.iter().map(String::as_str).collect::<Vec<_>>()
        ))
        .is_some());
    }

    #[test]
    fn hazard_9_boot_vm_argv_without_vmm_identity_is_not_a_vmm() {
        for comm in ["cat", "bash", "exe", "pgrep"] {
            let p = proc_with(comm, &["cat", "_boot-vm", "/x/vms/a/boot-config.json"]);
            assert_eq!(detect_shape(&p), None, "{comm}");
        }
        let p = proc_with(
            "bash",
            &[
                "bash",
                "-c",
                "pgrep -f _boot-vm /x/boot-config.json qemu-system-x86_64",
            ],
        );
        assert_eq!(detect_shape(&p), None);
    }

    #[test]
    fn libkrun_launcher_renamed_by_libkrun_stays_celesto() {
        let hex = "0123456789abcdef0123456789abcdef";
        let cfg = format!("/tmp/libkrun-sbx1-{hex}.json");
        let p = proc_with(
            "libkrun VM",
            &[
                "/venv/bin/python3",
                "-m",
                "celesto.runtime._libkrun_launcher",
                &cfg,
            ],
        );
        let s = detect_shape(&p).unwrap();
        assert_eq!(s.shape_name(), "celesto.libkrun");
        assert_eq!(s.sandbox_id(), Some("sbx1"));
    }

    #[test]
    fn held_deleted_counts_each_inode_once() {
        let f = |ino, deleted, allocated| super::super::OpenFile {
            path: "/x".into(),
            deleted,
            dev: 1,
            ino,
            allocated,
        };
        let p = RawProcess {
            open_files: vec![
                f(1, true, 4096),
                f(1, true, 4096),
                f(2, false, 100),
                f(3, true, 8192),
            ],
            ..Default::default()
        };
        assert_eq!(held_deleted_bytes(&p), 4096 + 8192);
    }

    #[test]
    fn ancestors_follow_ppid() {
        let mk = |pid, ppid| RawProcess {
            pid,
            ppid,
            ..Default::default()
        };
        let procs = [
            mk(1, 0),
            mk(10, 1),
            mk(11, 10),
            mk(12, 11),
            mk(20, 21),
            mk(21, 20),
        ];
        let chain: Vec<u32> = ancestors(&procs, 12).iter().map(|p| p.pid).collect();
        assert_eq!(chain, vec![11, 10, 1]);
        let cycle: Vec<u32> = ancestors(&procs, 20).iter().map(|p| p.pid).collect();
        assert_eq!(cycle, vec![21]);
        assert!(ancestors(&procs, 99).is_empty());
    }

    #[test]
    fn shape_names() {
        assert_eq!(VmmShape::SmolvmForked.shape_name(), "smolvm.forked");
        assert_eq!(VmmShape::SmolvmForked.product(), Product::Smolvm);
        let fc = celesto_firecracker(&[
            "firecracker".into(),
            "--api-sock".into(),
            "/tmp/fc-a-b.sock".into(),
        ])
        .unwrap();
        assert_eq!(fc.shape_name(), "celesto.firecracker");
        assert_eq!(fc.sandbox_id(), Some("a-b"));
        assert_eq!(fc.product(), Product::Celesto);
        assert_eq!(celesto_firecracker(&["firecracker".into()]), None);
    }
}
