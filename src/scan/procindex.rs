//! An index over the process table: which files each process holds open or names exactly, which
//! VMMs run, and to whom each VMM belongs.

use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use crate::procs::shape::{detect_all, VmmShape};
use crate::procs::{HeldBelow, HeldHow, HeldRef, Holders, Holdings, RawProcess};

/// The process table, indexed for in-use checks.
///
/// Built either from the whole table ([`ProcIndex::build`]) or from every process's identity,
/// arguments and working directories ([`ProcIndex::deferred`]): then whether anything asked
/// about is held open or mapped is asked of the kernel first ([`crate::procs::held_below`]),
/// and only when something is (or the kernel cannot tell) is the rest of the table read, once,
/// to name who ([`crate::procs::holdings`]): every open regular file by its identity (one
/// kernel call per descriptor) and every mapped file, and a descriptor's name only when a
/// question needs it ([`Names`]). A scan of a HOME whose leftovers nobody holds never reads the
/// open files and maps of every process on the machine.
#[derive(Debug, Default)]
pub(crate) struct ProcIndex {
    pub raw: Vec<RawProcess>,
    /// Index into `raw` and the VMM shape of that process.
    pub vmms: Vec<(usize, VmmShape)>,
    /// What `raw` says processes use (everything, for an index of the whole table).
    known: OnceLock<Uses>,
    /// A deferred index's: what the rest of the table says (by identity, mapped files, the
    /// processes read whole), read by `rest` on first need.
    held: OnceLock<Uses>,
    /// A deferred index's descriptors held open, whose names are read on demand.
    names: OnceLock<Names>,
    /// Reads the rest of the process table, for a deferred index until it is read.
    rest: Mutex<Option<ReadRest>>,
    /// Files the kernel may still be asked about before the whole table is read anyway.
    budget: Mutex<usize>,
}

/// Who uses a path ([`ProcIndex::users`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Users {
    /// The processes the table shows using it.
    pub pids: Vec<u32>,
    /// None does, but the kernel counts an open description of it: a holder Smolsweep cannot
    /// see.
    pub unseen: bool,
}

impl Users {
    pub(crate) fn is_empty(&self) -> bool {
        self.pids.is_empty() && !self.unseen
    }
}

/// How many files an index asks the kernel about at most ([`ProcIndex::deferred`]), per
/// process on the machine (and at least [`KERNEL_QUESTIONS_MIN`]): a question costs a few
/// plain system calls, reading a process's open files two through `/proc` per descriptor, so
/// past that the table costs less, and a tree too large to ask about costs at most about what
/// the table would have.
const KERNEL_QUESTIONS_PER_PROCESS: usize = 4;
const KERNEL_QUESTIONS_MIN: usize = 256;

fn kernel_questions(processes: usize) -> usize {
    (KERNEL_QUESTIONS_PER_PROCESS * processes).max(KERNEL_QUESTIONS_MIN)
}

/// Reads the rest of the process table after the identities ([`crate::procs::holdings`], or a
/// stand-in in tests).
pub(crate) type ReadRest = fn(&[RawProcess]) -> Holdings;

/// The descriptors and mappings a deferred index read by identity alone, and the names it read
/// of them: a name is read only when a question needs it. When the kernel answered a question
/// about a path completely (every file there asked about), the candidates are the descriptors
/// holding one of the files it says are held there (by device and inode) and the mappings of
/// one (by inode: a mapping's device is its file system's, which on btrfs is not the file's);
/// when it could not, everything on a file system where a name at or below the path can lie
/// ([`crate::procs::devices_below`]), or everything when that cannot be told. Either way what
/// is named at or below the path is found, as the whole table would find it: the answers do
/// not change, only what is read. An unlinked file's descriptor is never named (its old name
/// is nobody's).
#[derive(Debug, Default)]
struct Names {
    /// Every regular file held open and every file mapped, outside the processes read whole,
    /// sorted by inode.
    held: Vec<HeldRef>,
    read: Mutex<NamesRead>,
}

#[derive(Debug, Default)]
struct NamesRead {
    /// Per entry of [`Names::held`]: its name was asked for.
    asked: Vec<bool>,
    /// The names read, as [`path_key`]s with the pid, sorted.
    used: Vec<(Box<[u8]>, u32)>,
}

impl Names {
    fn new(held: Vec<HeldRef>) -> Self {
        Names {
            read: Mutex::new(NamesRead {
                asked: vec![false; held.len()],
                used: Vec::new(),
            }),
            held,
        }
    }

    /// Reads the names a question about `path` needs, given what the kernel said of it.
    fn read_for(&self, path: &Path, said: &HeldBelow) {
        if said.said() == Holders::Nobody {
            return;
        }
        let mut read = self.read.lock().unwrap_or_else(|e| e.into_inner());
        let unasked = |i: &usize| {
            !read.asked[*i] && !matches!(self.held[*i].how, HeldHow::Fd { linked: false, .. })
        };
        let wanted: Vec<usize> = if said.complete {
            said.files
                .iter()
                .flat_map(|&(dev, ino)| {
                    let start = self.held.partition_point(|h| h.ino < ino);
                    let n = self.held[start..]
                        .iter()
                        .take_while(|h| h.ino == ino)
                        .count();
                    (start..start + n).filter(move |&i| {
                        matches!(self.held[i].how, HeldHow::Map { .. }) || self.held[i].dev == dev
                    })
                })
                .filter(unasked)
                .collect()
        } else {
            let devices = crate::procs::devices_below(path);
            (0..self.held.len())
                .filter(unasked)
                .filter(|&i| {
                    devices
                        .as_ref()
                        .is_none_or(|d| d.contains(&self.held[i].dev))
                })
                .collect()
        };
        if wanted.is_empty() {
            return;
        }
        let asked: Vec<HeldRef> = wanted.iter().map(|&i| self.held[i]).collect();
        let mut key = Vec::new();
        for (&i, name) in wanted.iter().zip(crate::procs::held_names(&asked)) {
            read.asked[i] = true;
            if let Some(name) = name {
                path_key(&name, &mut key);
                read.used.push((key.as_slice().into(), self.held[i].pid));
            }
        }
        read.used.sort_unstable();
        read.used.dedup();
    }

    /// Pids of the processes whose names read so far are the path whose [`path_key`] is `pk`,
    /// or below it.
    fn users(&self, pk: &[u8]) -> Vec<u32> {
        let read = self.read.lock().unwrap_or_else(|e| e.into_inner());
        users_by_key(&read.used, pk).collect()
    }
}

/// The paths and files processes use, for [`ProcIndex::in_use`].
#[derive(Debug, Default)]
struct Uses {
    /// Device and inode of every open file, with the pid of the process, sorted.
    open: Vec<((u64, u64), u32)>,
    /// Every path a process uses (open file, absolute argument, working directory, root
    /// directory, mapped file, a smolvm VMM's machine directory), as a [`path_key`], sorted,
    /// with the pid of the process: everything below a directory is one contiguous range.
    used: Vec<(Box<[u8]>, u32)>,
}

/// Each VMM-shaped process of `raw` (by index) with its shape.
fn vmms_of(raw: &[RawProcess]) -> Vec<(usize, VmmShape)> {
    // Shapes are detected over the whole table: a macOS forked child is recognised by its
    // parent.
    let shapes: Vec<(u32, VmmShape)> = detect_all(raw)
        .into_iter()
        .map(|(p, s)| (p.pid, s))
        .collect();
    shapes
        .into_iter()
        .filter_map(|(pid, shape)| Some((raw.iter().position(|p| p.pid == pid)?, shape)))
        .collect()
}

impl Uses {
    /// What the processes of `raw` use, Smolsweep's own process left out: it names what it
    /// acts on on its command line (`smolsweep compact DISK`), may work in a SmolVM directory
    /// and holds what it measures or compacts open, and none of that is a use of anything, in
    /// any scan.
    fn build(raw: &[RawProcess], vmms: &[(usize, VmmShape)]) -> Self {
        let mut u = Uses::default();
        let mut key = Vec::new();
        let mut add = |used: &mut Vec<(Box<[u8]>, u32)>, q: &Path, pid: u32| {
            path_key(q, &mut key);
            used.push((key.as_slice().into(), pid));
        };
        let me = std::process::id();
        for p in raw.iter().filter(|p| p.pid != me) {
            for f in &p.open_files {
                u.open.push(((f.dev, f.ino), p.pid));
            }
            for (_, q) in facets(p, &[]) {
                add(&mut u.used, q, p.pid);
            }
        }
        for (i, s) in vmms.iter().filter(|(i, _)| raw[*i].pid != me) {
            for q in boot_paths(s) {
                add(&mut u.used, q, raw[*i].pid);
            }
        }
        u.open.sort_unstable();
        u.open.dedup();
        u.used.sort_unstable();
        u.used.dedup();
        u
    }

    /// What the rest of the table says: everything of the processes read whole, the open files
    /// of the others by identity, and the mapped files read by name.
    fn of_holdings(h: &Holdings) -> Self {
        let mut u = Uses::build(&h.whole, &vmms_of(&h.whole));
        u.open.extend(h.held.iter().filter_map(|f| match f.how {
            HeldHow::Fd { .. } => Some(((f.dev, f.ino), f.pid)),
            HeldHow::Map { .. } => None,
        }));
        let mut key = Vec::new();
        for (pid, files) in &h.mapped {
            for q in files {
                path_key(q, &mut key);
                u.used.push((key.as_slice().into(), *pid));
            }
        }
        u.open.sort_unstable();
        u.open.dedup();
        u.used.sort_unstable();
        u.used.dedup();
        u
    }
}

/// The pids of `used` (sorted [`path_key`]s) at the path whose key is `pk` or below it: one
/// contiguous run.
fn users_by_key<'a>(used: &'a [(Box<[u8]>, u32)], pk: &'a [u8]) -> impl Iterator<Item = u32> + 'a {
    let start = used.partition_point(|(q, _)| **q < *pk);
    used[start..]
        .iter()
        .take_while(move |(q, _)| q.starts_with(pk) && q.get(pk.len()).is_none_or(|&b| b == 0))
        .map(|(_, pid)| *pid)
}

impl Uses {
    /// Pids of the processes that use the path whose [`path_key`] is `pk` (with identity
    /// `devino`, when known) or anything below it.
    fn users(&self, pk: &[u8], devino: Option<(u64, u64)>) -> Vec<u32> {
        let mut pids: Vec<u32> = Vec::new();
        if let Some(k) = devino {
            let start = self.open.partition_point(|(d, _)| *d < k);
            pids.extend(
                self.open[start..]
                    .iter()
                    .take_while(|(d, _)| *d == k)
                    .map(|(_, i)| *i),
            );
        }
        pids.extend(users_by_key(&self.used, pk));
        pids
    }
}

/// A path as bytes that order the way its components do: each component written after a 0
/// byte (no name holds one), so `/a/b` is `\0/\0a\0b`. Whatever lies below `/a` (`/a` itself,
/// `/a/…`) starts with `\0/\0a` followed by nothing or a 0, and sorts before `/ab`, so it is
/// one contiguous run; the same components (`/a//b/./`) give the same key, as they compare
/// equal as paths.
fn path_key(path: &Path, out: &mut Vec<u8>) {
    out.clear();
    let bytes = path.as_os_str().as_bytes();
    // The kernel's paths are already plain (`/a/b`): one byte each, no parsing.
    let plain = bytes.first() == Some(&b'/')
        && (bytes.len() == 1 || bytes.last() != Some(&b'/'))
        && !bytes.windows(2).any(|w| w == b"//")
        && !bytes.windows(3).any(|w| w == b"/./")
        && !bytes.ends_with(b"/.");
    if plain {
        out.extend_from_slice(b"\0/");
        if bytes.len() > 1 {
            out.extend(bytes.iter().map(|&b| if b == b'/' { 0 } else { b }));
        }
        return;
    }
    for c in path.components() {
        out.push(0);
        match c {
            Component::RootDir => out.push(b'/'),
            c => out.extend_from_slice(c.as_os_str().as_bytes()),
        }
    }
}

impl ProcIndex {
    pub(crate) fn build(raw: Vec<RawProcess>, _euid: u32) -> Self {
        let vmms = vmms_of(&raw);
        let known = OnceLock::from(Uses::build(&raw, &vmms));
        ProcIndex {
            budget: Mutex::new(kernel_questions(raw.len())),
            raw,
            vmms,
            known,
            ..Default::default()
        }
    }

    /// An index of `identities` (every process's identity, command line and working
    /// directories, and everything of the VMM-shaped ones: [`crate::procs::list_identities`])
    /// that reads the rest of the table with `rest` the first time the kernel says a file asked
    /// about is held, or cannot tell.
    pub(crate) fn deferred(identities: Vec<RawProcess>, rest: ReadRest) -> Self {
        ProcIndex {
            vmms: vmms_of(&identities),
            rest: Mutex::new(Some(rest)),
            budget: Mutex::new(kernel_questions(identities.len())),
            raw: identities,
            ..Default::default()
        }
    }

    /// This index asking the kernel about at most `budget` more files (tests: with none, the
    /// kernel cannot tell, and names are read by device).
    #[cfg(all(test, target_os = "linux"))]
    pub(crate) fn with_budget(self, budget: usize) -> Self {
        *crate::basics::lock(&self.budget) = budget;
        self
    }

    fn known(&self) -> &Uses {
        self.known
            .get_or_init(|| Uses::build(&self.raw, &self.vmms))
    }

    /// The rest of the table's uses when `path` (or anything below it) may be held: for a
    /// deferred index, unless the kernel says nothing there is open; once read, always (an
    /// index of the whole table has them all in [`ProcIndex::known`]). With what the kernel
    /// said, when it was asked: a deferred index asks about every path, and reads the names
    /// the answer needs ([`Names::read_for`]).
    fn held(&self, path: &Path, devino: Option<(u64, u64)>) -> (Option<&Uses>, Holders) {
        if let Some(names) = self.names.get() {
            let held = self.ask_kernel(path, devino);
            names.read_for(path, &held);
            return (self.held.get(), held.said());
        }
        let mut rest = self.rest.lock().unwrap_or_else(|e| e.into_inner());
        let Some(read) = *rest else {
            return (self.held.get(), Holders::CannotTell);
        };
        let held = self.ask_kernel(path, devino);
        if held.said() == Holders::Nobody {
            return (None, Holders::Nobody);
        }
        *rest = None;
        let mut h = read(&self.raw);
        // Smolsweep's own descriptors and mappings are no use of anything, as in an index of
        // the whole table ([`Uses::build`]).
        let me = std::process::id();
        h.held.retain(|f| f.pid != me);
        h.mapped.retain(|(pid, _)| *pid != me);
        let uses = self.held.get_or_init(|| Uses::of_holdings(&h));
        let names = self
            .names
            .get_or_init(|| Names::new(std::mem::take(&mut h.held)));
        names.read_for(path, &held);
        (Some(uses), held.said())
    }

    fn ask_kernel(&self, path: &Path, devino: Option<(u64, u64)>) -> HeldBelow {
        let mut budget = self.budget.lock().unwrap_or_else(|e| e.into_inner());
        crate::procs::held_below(path, devino, &mut budget)
    }

    /// **The one "in use" rule.** Pids of processes (of any user whose table could be read) that
    /// use `path` or, for a directory, anything below it: hold it open (also by device and
    /// inode, so a renamed or hard-linked file counts), name it as an argument (a QEMU
    /// `-drive file=` counts, never a substring: upstream B4), have their working or root
    /// directory there, map it, or boot a smolvm machine from it. The scan and the executor's
    /// re-judge both ask this ([`ProcIndex::users`], which also tells a holder it cannot see).
    pub(crate) fn in_use(&self, path: &Path, devino: Option<(u64, u64)>) -> Vec<u32> {
        self.answer(path, devino).0
    }

    /// [`ProcIndex::in_use`], and, when no process it shows uses `path`, whether the kernel still
    /// counts an open description of it: a holder Smolsweep cannot see (another user's process,
    /// one in another container, a loop device), for whom what it holds is left alone too.
    pub(crate) fn users(&self, path: &Path, devino: Option<(u64, u64)>) -> Users {
        let (pids, said) = self.answer(path, devino);
        let unseen = pids.is_empty()
            && match said {
                // Not asked (an index of the whole table): the first answer tells.
                Holders::CannotTell => {
                    let mut budget = self.budget.lock().unwrap_or_else(|e| e.into_inner());
                    crate::procs::holders(path, devino, &mut budget) == Holders::Someone
                }
                said => said == Holders::Someone,
            };
        Users { pids, unseen }
    }

    fn answer(&self, path: &Path, devino: Option<(u64, u64)>) -> (Vec<u32>, Holders) {
        let mut pk = Vec::new();
        path_key(path, &mut pk);
        let mut pids = self.known().users(&pk, devino);
        let (held, said) = self.held(path, devino);
        if let Some(held) = held {
            pids.extend(held.users(&pk, devino));
        }
        if let Some(names) = self.names.get() {
            pids.extend(names.users(&pk));
        }
        pids.sort_unstable();
        pids.dedup();
        (pids, said)
    }

    /// Pids of processes that hold `path` open (same device and inode) or name it exactly as an
    /// argument (a QEMU `-drive file=` value counts). Never a substring match (upstream B4).
    pub(crate) fn users_of(&self, path: &Path, meta: Option<&std::fs::Metadata>) -> Vec<u32> {
        self.in_use(path, meta.map(|m| (m.dev(), m.ino())))
    }

    /// Pids of processes using `dir` or anything below it ([`ProcIndex::in_use`]).
    pub(crate) fn users_below(&self, dir: &Path) -> Vec<u32> {
        self.in_use(dir, None)
    }

    /// Sandbox ids that a running Celesto VMM names through its QMP socket, Firecracker API
    /// socket or libkrun config, and the pids of those VMMs.
    pub(crate) fn celesto_vmm_ids(&self) -> HashMap<String, Vec<u32>> {
        let mut m: HashMap<String, Vec<u32>> = HashMap::new();
        for (i, s) in &self.vmms {
            let id = match s {
                VmmShape::CelestoQemu { sandbox_id, .. }
                | VmmShape::CelestoFirecracker { sandbox_id, .. }
                | VmmShape::CelestoLibkrun { sandbox_id, .. } => sandbox_id.clone(),
                _ => None,
            };
            if let Some(id) = id {
                m.entry(id).or_default().push(self.raw[*i].pid);
            }
        }
        m
    }

    pub(crate) fn by_pid(&self, pid: u32) -> Option<&RawProcess> {
        self.raw.iter().find(|p| p.pid == pid)
    }

    /// Whether `pid` is alive and, when a start time was recorded, is the same process.
    pub(crate) fn alive_as_recorded(&self, pid: u32, start_time: Option<u64>) -> bool {
        match self.by_pid(pid) {
            Some(p) => start_time.is_none_or(|t| t == p.start_time),
            None => false,
        }
    }

    /// Smolvm VMMs whose machine directory lies in `vms_dir`.
    pub(crate) fn smolvm_vmms_in<'a>(
        &'a self,
        vms_dir: &'a Path,
    ) -> impl Iterator<Item = (&'a RawProcess, &'a Path)> + 'a {
        self.vmms.iter().filter_map(move |(i, s)| match s {
            VmmShape::SmolvmBootVm { vm_dir, .. } if vm_dir.parent() == Some(vms_dir) => {
                Some((&self.raw[*i], vm_dir.as_path()))
            }
            _ => None,
        })
    }
}

/// How a process uses a path: the facets of the one "in use" rule ([`ProcIndex::in_use`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Usage {
    HoldsOpen,
    Names,
    WorksIn,
    Maps,
    Boots,
}

/// Every path process `p` uses by name, and how: what it holds open, the absolute paths it
/// names as arguments, its working and (chroot) root directory, what it maps, and `boots` (a
/// VMM's [`boot_paths`]). [`ProcIndex::build`] indexes exactly these.
fn facets<'a>(
    p: &'a RawProcess,
    boots: &'a [PathBuf],
) -> impl Iterator<Item = (Usage, &'a Path)> + 'a {
    // A root of `/` is every process's; only a chroot names a directory.
    let root = p.root.iter().filter(|r| r.as_os_str() != "/");
    let named = p.argv.iter().skip(1).filter(|a| a.starts_with('/'));
    // An unlinked file is held by its identity alone: its old name is nobody's now (a new file
    // there is another file), and the kernel's count ([`crate::procs::holders`]) cannot
    // reach it through a name either.
    (p.open_files
        .iter()
        .filter(|f| !f.deleted)
        .map(|f| (Usage::HoldsOpen, f.path.as_path())))
    .chain(named.map(|a| (Usage::Names, Path::new(a.as_str()))))
    .chain(
        p.cwd
            .iter()
            .chain(root)
            .map(|q| (Usage::WorksIn, q.as_path())),
    )
    .chain(p.mapped.iter().map(|q| (Usage::Maps, q.as_path())))
    .chain(boots.iter().map(|q| (Usage::Boots, q.as_path())))
}

/// What a VMM of `shape` boots from, in use by it: a smolvm machine directory, QEMU's drives.
pub(crate) fn boot_paths(shape: &VmmShape) -> &[PathBuf] {
    match shape {
        VmmShape::SmolvmBootVm { vm_dir, .. } => std::slice::from_ref(vm_dir),
        VmmShape::CelestoQemu { drives, .. } => drives,
        _ => &[],
    }
}

/// How `p` uses `path` (or, for a directory, anything below it), by the facets the index holds
/// ([`facets`]; `devino` also finds a file it holds open under another name), in facet order.
pub(crate) fn how_used(p: &RawProcess, path: &Path, devino: Option<(u64, u64)>) -> Vec<Usage> {
    let shape = crate::procs::shape::detect_shape(p);
    let boots = shape.as_ref().map_or(&[][..], boot_paths);
    let mut out = Vec::new();
    if devino.is_some() && p.open_files.iter().any(|f| Some((f.dev, f.ino)) == devino) {
        out.push(Usage::HoldsOpen);
    }
    for (u, q) in facets(p, boots) {
        if q.starts_with(path) && !out.contains(&u) {
            out.push(u);
        }
    }
    out
}
