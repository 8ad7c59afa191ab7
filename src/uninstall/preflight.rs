//! Preflight: everything an uninstall would look at, gathered read-only.
//!
//! Nothing here writes, creates or executes: installs are found by reading files
//! ([`crate::install::detect_installs`]), sizes by `lstat` walks ([`crate::size::Sizer`]), machine
//! inventories through in-memory snapshots ([`crate::inventory::snapshot`]), processes from the
//! process table, PATH blocks by reading startup files. Neither product's CLI is run (`smolvm
//! machine ls` deletes directories; `celesto sandbox list` writes its database).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::env::EnvSnapshot;
use crate::install::Install;
use crate::model::{human_bytes, Machine, Platform, Product, Scope, VmProcess};
use crate::pathblock::{self, PathBlock};
use crate::roots::{
    celesto_roots, dot_smolvm_contents, is_system_path, smolvm_roots, state_dir_candidates,
    user_smolvm_sets, CelestoRoots, SmolvmRoots,
};

pub use super::known::StateKind;
/// A mounted file system (the mount table's row), and the parser of macOS `mount` output:
/// [`gather_with`] takes a mount table read elsewhere, so the macOS path is tested on Linux.
pub use crate::exec::detach::{parse_mount_output, MountEntry};
/// One row of the process table, as [`gather_with`] takes it.
pub use crate::procs::RawProcess;
pub use crate::view::uninstall::PreflightRows;

/// Schema name of the preflight report.
pub const PREFLIGHT_SCHEMA: &str = "smolsweep.uninstall.preflight/1";

/// A state directory of one product.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateDir {
    /// The product it belongs to.
    pub product: Product,
    /// What it is, by the table of kinds: `data_root`, `cache_root`, ..., `data_dir`,
    /// `image_dir`, `celesto_home`.
    pub kind: StateKind,
    /// Where it is.
    pub path: PathBuf,
    /// Whether it exists.
    pub exists: bool,
    /// Bytes allocated to it (hard links once).
    pub allocated_bytes: u64,
    /// Bytes it reads as.
    pub apparent_bytes: u64,
    /// Mount points below it (never walked into).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mounts: Vec<PathBuf>,
    /// What pointed there: `default`, or the variable (`CELESTO_DATA_DIR`, `SMOLVM_DATA_DIR`,
    /// `XDG_CACHE_HOME`, ...).
    #[serde(default)]
    pub source: String,
    /// What it is, in words ("smolvm machines and caches").
    #[serde(default)]
    pub label: String,
    /// Its allocated size, in words ("25.9 MB").
    #[serde(default)]
    pub size: String,
}

/// `~/.smolvm`, split by owner.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharedDotSmolvm {
    /// `~/.smolvm`.
    pub path: PathBuf,
    /// Entries smolvm's install put there.
    pub smolvm_entries: Vec<PathBuf>,
    /// Entries Celesto put there (its keys and state), which a smolvm uninstall leaves.
    pub celesto_entries: Vec<PathBuf>,
    /// Entries neither product is known to write: listed, never removed.
    pub other_entries: Vec<PathBuf>,
    /// The smolvm version `~/.smolvm/.version` names.
    pub smolvm_version: Option<String>,
}

/// A launcher symlink (`~/.local/bin/smolvm`, `~/.local/bin/smol`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Launcher {
    /// The symlink.
    pub path: PathBuf,
    /// What it points to.
    pub target: PathBuf,
    /// The install prefix it points into, when it points into one.
    pub into_prefix: Option<PathBuf>,
}

/// Something that holds secrets: kept unless the user asks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Credential {
    /// The product whose secrets it holds.
    pub product: Product,
    /// Where it is.
    pub path: PathBuf,
    /// What it is, in a sentence.
    pub what: String,
}

/// A system-level file that needs root: shown with the command, never acted on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SystemItem {
    /// The product it belongs to.
    pub product: Product,
    /// Where it is.
    pub path: PathBuf,
    /// What it is, in words.
    pub what: String,
    /// The exact command for the user to run.
    pub command: String,
}

/// A per-sandbox runtime file in the shared socket directory (`/tmp`): Celesto's libkrun
/// launcher configs (never removed upstream), vsock, QMP and Firecracker API sockets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuntimeFile {
    /// The product whose sandbox uses it.
    pub product: Product,
    /// Where it is.
    pub path: PathBuf,
    /// The sandbox it belongs to.
    pub owner: String,
}

/// Something a keep rule keeps, found by the scan the preflight makes: a path (a finding or a
/// machine's directory), a machine or sandbox, or a VM process. The uninstall plan names it and
/// leaves every step that would take it unticked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeptItem {
    /// The product of what is kept.
    pub product: Product,
    /// The rule's id ([`crate::keep::UNREADABLE`] when the keep file cannot be read).
    pub rule: String,
    /// The kept path (a finding or a machine's directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    /// The kept machine or sandbox.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
    /// The kept VM process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// The inventory holding a kept machine's record: removing it deletes the machine too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<PathBuf>,
}

/// Everything a keep rule keeps in `report`.
pub(crate) fn kept_items(report: &crate::model::ScanReport) -> Vec<KeptItem> {
    let item = |product, rule: &String| KeptItem {
        product,
        rule: rule.clone(),
        path: None,
        machine: None,
        pid: None,
        record: None,
    };
    let mut out: Vec<KeptItem> = Vec::new();
    for f in &report.findings {
        if let Some(rule) = &f.kept {
            out.push(KeptItem {
                path: Some(f.path.clone()),
                ..item(f.product, rule)
            });
        }
    }
    for m in &report.machines {
        if let Some(rule) = &m.kept {
            out.push(KeptItem {
                path: m.dir.clone(),
                machine: Some(m.name.clone()),
                record: m.db.clone(),
                ..item(m.product, rule)
            });
        }
    }
    for p in report
        .processes
        .iter()
        .filter(|p| p.scope == Scope::ThisHome)
    {
        if let Some(rule) = &p.kept {
            out.push(KeptItem {
                pid: Some(p.pid),
                ..item(p.product, rule)
            });
        }
    }
    out
}

/// Everything the uninstall looks at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Preflight {
    /// `smolsweep.uninstall.preflight/1` ([`PREFLIGHT_SCHEMA`]).
    pub schema: String,
    /// The HOME looked at.
    pub home: PathBuf,
    /// The platform whose layouts were used.
    pub platform: Platform,
    /// Each install of either product found (launcher, prefix, version).
    pub installs: Vec<Install>,
    /// Each product's state directories.
    pub state_dirs: Vec<StateDir>,
    /// `~/.smolvm` split by owner, when it exists.
    pub dot_smolvm: Option<SharedDotSmolvm>,
    /// Machine (smolvm) and sandbox (Celesto) records as their inventories hold them, each
    /// judged alive or not by the scan the preflight makes.
    pub machines: Vec<Machine>,
    /// VM processes that belong to this HOME.
    pub processes: Vec<VmProcess>,
    /// macOS `layers-cs` mounts under the smolvm roots.
    pub mounts: Vec<PathBuf>,
    /// Whether `mounts` was read (false until the mount-table reader is wired in on macOS).
    pub mounts_checked: bool,
    /// Launcher symlinks of the installs.
    pub launchers: Vec<Launcher>,
    /// `# smolvm` PATH blocks in shell startup files.
    pub path_blocks: Vec<PathBlock>,
    /// What holds secrets (kept unless asked).
    pub credentials: Vec<Credential>,
    /// Runtime files of this HOME's sandboxes in the shared socket directory.
    #[serde(default)]
    pub runtime_files: Vec<RuntimeFile>,
    /// System-level files that need root: shown with their command, never acted on.
    pub system: Vec<SystemItem>,
    /// Things that could not be read.
    pub problems: Vec<String>,
    /// What keep rules keep (a scan's judgement, keep rules applied).
    #[serde(default)]
    pub kept: Vec<KeptItem>,
}

/// The preflight as the window lists it ([`crate::view::uninstall`]'s rows).
impl Preflight {
    /// One row per item, in the preflight's order; state directories that exist only.
    pub fn rows(&self) -> PreflightRows {
        use crate::view::uninstall as v;
        let mut state_dirs: Vec<v::Row> = self
            .state_dirs
            .iter()
            .filter(|d| d.exists)
            .map(|d| v::state_dir_row(d.product, &d.label, d.mounts.len(), &d.path, &d.size))
            .collect();
        if let Some(d) = &self.dot_smolvm {
            state_dirs.push(v::dot_smolvm_row(
                &d.path,
                d.smolvm_entries.len(),
                d.celesto_entries.len(),
                d.other_entries.len(),
            ));
        }
        PreflightRows {
            installs: self.installs.iter().map(v::install_row).collect(),
            state_dirs,
            machines: self.machines.iter().map(v::machine_row).collect(),
            processes: self.processes.iter().map(v::process_row).collect(),
            mounts: self
                .mounts
                .iter()
                .map(|m| v::Row {
                    main: m.display().to_string(),
                    ..Default::default()
                })
                .collect(),
            launchers: (self.launchers.iter())
                .map(|l| v::launcher_row(&l.path, &l.target))
                .collect(),
            path_blocks: self.path_blocks.iter().map(v::path_block_row).collect(),
            path_block_choices: self.path_blocks.iter().map(v::path_block_choice).collect(),
            credentials: (self.credentials.iter())
                .map(|c| v::credential_row(c.product, &c.path, &c.what))
                .collect(),
            credential_choices: (self.credentials.iter())
                .map(|c| v::Row {
                    main: c.path.display().to_string(),
                    detail: c.what.clone(),
                    ..Default::default()
                })
                .collect(),
            system: (self.system.iter())
                .map(|i| v::system_row(i.product, &i.command, &i.what))
                .collect(),
        }
    }
}

impl Preflight {
    /// State directories of one product that exist.
    pub fn existing_dirs(&self, product: Product) -> impl Iterator<Item = &StateDir> {
        self.state_dirs
            .iter()
            .filter(move |d| d.product == product && d.exists)
    }

    /// The CLI of a product, when an install with an executable was found.
    pub fn cli(&self, product: Product) -> Option<&Path> {
        let mut it = self
            .installs
            .iter()
            .filter(|i| i.product == product && i.executable.is_some());
        // Prefer a script install (the smolvm wrapper), then anything else.
        let all: Vec<&Install> = it.by_ref().collect();
        all.iter()
            .find(|i| i.method == "script" || i.method == "pypi")
            .or(all.first())
            .and_then(|i| i.executable.as_deref())
    }

    /// Whether anything of either product was found at all.
    pub fn anything_found(&self) -> bool {
        !self.installs.is_empty()
            || self.state_dirs.iter().any(|d| d.exists)
            || !self.machines.is_empty()
            || !self.processes.is_empty()
            || !self.launchers.is_empty()
            || !self.path_blocks.is_empty()
    }
}

/// Gather the preflight for `env` from the live system (process table and mount table
/// included).
pub fn gather(env: &EnvSnapshot, platform: Platform) -> Preflight {
    let mounts = crate::exec::detach::current_mounts();
    gather_with(env, platform, &crate::procs::list(), mounts.as_deref().ok())
}

/// [`gather`] with a given process table and mount table (`None`: the mount table could not be
/// read). Tests pass fixtures: macOS `ps` and `mount` output parsed on any platform.
pub fn gather_with(
    env: &EnvSnapshot,
    platform: Platform,
    procs: &[RawProcess],
    mount_table: Option<&[MountEntry]>,
) -> Preflight {
    let home = env.home.clone();
    let mut problems = Vec::new();
    let smol = smolvm_roots(platform, env);
    let cel = celesto_roots(platform, env);
    let state_dirs = state_dirs_of(env, platform, &mut problems);
    let dot = home.join(".smolvm");
    let dot_smolvm = shared_dot_smolvm(&dot, &mut problems);
    let installs = crate::install::detect_installs(platform, env);
    let mounts = layers_cs_mounts(&smol, &home, mount_table);
    let mut machines = machine_records(&smol, &cel, &home, &mut problems);
    // One scan: its VM processes, kept items and liveness are what the preflight reports.
    let report = crate::scan::scan_with(&scan_options(env, platform), procs.to_vec());
    let processes = this_homes(&report);
    let launchers = launchers_of(&smol, &home);
    let credentials = credentials_of(&smol, &cel, &home, &dot);
    let runtime_files = celesto_runtime_files(&cel.socket_dir, &machines, env.euid);
    let kept = kept_items(&report);
    judge_liveness(&mut machines, &report);

    Preflight {
        schema: PREFLIGHT_SCHEMA.to_string(),
        home: home.clone(),
        platform,
        installs,
        state_dirs,
        dot_smolvm,
        machines,
        processes,
        mounts,
        mounts_checked: mount_table.is_some(),
        launchers,
        path_blocks: pathblock::find(&home),
        credentials,
        runtime_files,
        system: system_items(platform, &system_exists),
        problems,
        kept,
    }
}

/// Every state directory of both products by the table of kinds, each path once, measured
/// when it exists (a walk that fails adds a problem and counts zero).
fn state_dirs_of(
    env: &EnvSnapshot,
    platform: Platform,
    problems: &mut Vec<String>,
) -> Vec<StateDir> {
    let mut sizer = crate::size::Sizer::new();
    let mut state_dirs: Vec<StateDir> = Vec::new();
    for (product, kind, path, source) in state_dir_candidates(env, platform) {
        if !kind.is_state_dir() {
            continue;
        }
        if state_dirs.iter().any(|d| d.path == path) {
            continue;
        }
        let exists = std::fs::symlink_metadata(&path).is_ok();
        let (allocated, apparent, mounts) = if exists {
            match sizer.measure(&path) {
                Ok(m) => (m.allocated, m.apparent, m.mounts),
                Err(e) => {
                    problems.push(format!("{}: {e}", path.display()));
                    (0, 0, Vec::new())
                }
            }
        } else {
            (0, 0, Vec::new())
        };
        state_dirs.push(StateDir {
            product,
            kind,
            path,
            exists,
            allocated_bytes: allocated,
            apparent_bytes: apparent,
            mounts,
            source,
            label: kind.label().to_string(),
            size: human_bytes(allocated),
        });
    }
    state_dirs
}

/// `~/.smolvm` split by owner; `None` when it does not exist (or cannot be read: a problem).
fn shared_dot_smolvm(dot: &Path, problems: &mut Vec<String>) -> Option<SharedDotSmolvm> {
    match dot_smolvm_contents(dot) {
        Ok(d) => Some(SharedDotSmolvm {
            path: dot.to_path_buf(),
            smolvm_entries: d.smolvm_entries,
            celesto_entries: d.celesto_entries,
            other_entries: d.other_entries,
            smolvm_version: d.smolvm_version,
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            problems.push(format!("{}: {e}", dot.display()));
            None
        }
    }
}

/// `layers-cs` image mounts (macOS hdiutil) under this user's smolvm roots, deepest first
/// (none when the mount table could not be read).
fn layers_cs_mounts(
    smol: &SmolvmRoots,
    home: &Path,
    mount_table: Option<&[MountEntry]>,
) -> Vec<PathBuf> {
    let mut mount_roots: Vec<PathBuf> = Vec::new();
    for set in user_smolvm_sets(smol, home) {
        mount_roots.push(set.pack_cache.clone());
        mount_roots.extend(set.vms_dirs.iter().cloned());
    }
    mount_table
        .map(|t| crate::exec::detach::layers_cs_mounts_under(t, &mount_roots))
        .unwrap_or_default()
}

/// Whether each record's VM is alive, the state to show for it and where its directory is, as
/// the scan judged the same record (same product, name and inventory); a record the scan did
/// not see stays as read.
fn judge_liveness(machines: &mut [Machine], report: &crate::model::ScanReport) {
    for m in machines {
        if let Some(s) = report
            .machines
            .iter()
            .find(|s| s.product == m.product && s.name == m.name && s.db == m.db)
        {
            m.alive = s.alive;
            m.effective_state = s.effective_state.clone();
            // Where its storage is, as the scan found it: a machine goes whole or not at all.
            if m.dir.is_none() {
                m.dir = s.dir.clone();
            }
        }
    }
}

/// The machine records of this user's smolvm inventories, then the sandbox rows of every
/// Celesto data directory outside the system's; an inventory that cannot be read adds a
/// problem.
fn machine_records(
    smol: &SmolvmRoots,
    cel: &CelestoRoots,
    home: &Path,
    problems: &mut Vec<String>,
) -> Vec<Machine> {
    let mut machines = Vec::new();
    for set in user_smolvm_sets(smol, home) {
        if std::fs::symlink_metadata(&set.db_path).is_err() {
            continue;
        }
        match read_smolvm_machines(&set.db_path) {
            Ok(m) => machines.extend(m),
            Err(e) => problems.push(e),
        }
    }
    for d in cel.data_dirs.iter().filter(|d| !is_system_path(&d.path)) {
        for p in crate::upstream::inventory_paths(Product::Celesto, &d.path) {
            if std::fs::symlink_metadata(&p).is_err() {
                continue;
            }
            match read_celesto_rows(&p) {
                Ok(m) => machines.extend(m),
                Err(e) => problems.push(e),
            }
        }
    }
    machines
}

/// smolvm's launcher symlinks inside HOME, with the install prefix each points into.
fn launchers_of(smol: &SmolvmRoots, home: &Path) -> Vec<Launcher> {
    smol.launchers
        .iter()
        .filter(|l| l.starts_with(home))
        .filter_map(|l| {
            let meta = std::fs::symlink_metadata(l).ok()?;
            if !meta.file_type().is_symlink() {
                return None;
            }
            let target = std::fs::read_link(l).ok()?;
            let abs = if target.is_absolute() {
                target.clone()
            } else {
                l.parent().unwrap_or(Path::new("/")).join(&target)
            };
            let into_prefix = smol
                .install_prefixes
                .iter()
                .find(|p| lexical_starts_with(&abs, p))
                .cloned();
            Some(Launcher {
                path: l.clone(),
                target,
                into_prefix,
            })
        })
        .collect()
}

/// What holds secrets of either product and exists: smolvm's config directories, Celesto's
/// credentials and SSH keys, and the older ones under `~/.smolvm` (`dot`).
fn credentials_of(
    smol: &SmolvmRoots,
    cel: &CelestoRoots,
    home: &Path,
    dot: &Path,
) -> Vec<Credential> {
    let mut credentials = Vec::new();
    let mut cred = |product: Product, path: PathBuf, what: &str| {
        if std::fs::symlink_metadata(&path).is_ok() {
            credentials.push(Credential {
                product,
                path,
                what: what.to_string(),
            });
        }
    };
    for set in user_smolvm_sets(smol, home) {
        cred(
            Product::Smolvm,
            set.config_dir.clone(),
            "smolvm settings and container-registry credentials (config.toml)",
        );
    }
    cred(
        Product::Celesto,
        cel.home_dir.join("credentials"),
        "Celesto account credentials",
    );
    cred(
        Product::Celesto,
        cel.home_dir.join("keys"),
        "the SSH key pair Celesto uses to log in to sandboxes (id_ed25519)",
    );
    cred(
        Product::Celesto,
        dot.join("keys"),
        "the SSH key pair PyPI smolvm / older Celesto uses to log in to sandboxes",
    );
    cred(
        Product::Celesto,
        dot.join("credentials"),
        "PyPI smolvm / older Celesto account credentials",
    );
    credentials
}

/// Files in `socket_dir` named after one of this HOME's Celesto sandboxes and owned by `uid`:
/// `libkrun-<id>-<32 hex>.json`, `vsock-<id>.sock`, `qmp-<id>.sock`, `fc-<id>.sock`. Another
/// user's files, or names of sandboxes this HOME does not have, are never listed.
pub fn celesto_runtime_files(
    socket_dir: &Path,
    machines: &[Machine],
    uid: u32,
) -> Vec<RuntimeFile> {
    use std::os::unix::fs::MetadataExt;
    let ids: Vec<&str> = machines
        .iter()
        .filter(|m| m.product == Product::Celesto)
        .map(|m| m.name.as_str())
        .collect();
    if ids.is_empty() {
        return Vec::new();
    }
    let Ok(entries) = crate::fsread::read_dir(socket_dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries {
        if e.is_dir() || e.is_symlink() || e.meta.uid() != uid {
            continue;
        }
        let Some(name) = e.name_str() else { continue };
        let owner = ids.iter().find(|id| {
            name == format!("vsock-{id}.sock")
                || name == format!("qmp-{id}.sock")
                || name == format!("fc-{id}.sock")
                || crate::procs::shape::libkrun_config_id(&e.path).as_deref() == Some(**id)
        });
        if let Some(id) = owner {
            out.push(RuntimeFile {
                product: Product::Celesto,
                path: e.path.clone(),
                owner: id.to_string(),
            });
        }
    }
    out
}

fn lexical_starts_with(p: &Path, prefix: &Path) -> bool {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out.starts_with(prefix)
}

fn system_exists(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok()
}

/// System-level files of both products, with the command that removes each (as data: `exists`
/// answers for a path, and `/etc/sudoers.d` is listed through `list_sudoers`).
pub fn system_items(platform: Platform, exists: &dyn Fn(&Path) -> bool) -> Vec<SystemItem> {
    let mut out = Vec::new();
    let mut item = |product, path: &str, what: &str, command: String| {
        if exists(Path::new(path)) {
            out.push(SystemItem {
                product,
                path: PathBuf::from(path),
                what: what.to_string(),
                command,
            });
        }
    };
    if platform == Platform::Linux {
        if let Ok(rd) = std::fs::read_dir("/etc/sudoers.d") {
            let mut names: Vec<String> = rd
                .flatten()
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|n| n.starts_with("celesto-runtime-"))
                .collect();
            names.sort();
            for n in names {
                let p = format!("/etc/sudoers.d/{n}");
                item(
                    Product::Celesto,
                    &p,
                    "sudo rule written by `celesto setup`",
                    format!("sudo rm -f {p}"),
                );
            }
        }
        item(
            Product::Celesto,
            "/etc/udev/rules.d/65-celesto-kvm.rules",
            "udev rule written by `celesto setup`",
            "sudo rm -f /etc/udev/rules.d/65-celesto-kvm.rules && sudo udevadm control --reload"
                .into(),
        );
        item(
            Product::Celesto,
            "/var/lib/celesto",
            "Celesto's system data directory (and setup's libexec)",
            "sudo rm -rf /var/lib/celesto".into(),
        );
        item(
            Product::Smolvm,
            "/var/lib/smolvm",
            "smolvm `serve` data root as root, or PyPI smolvm's system data directory",
            "sudo rm -rf /var/lib/smolvm".into(),
        );
        item(
            Product::Smolvm,
            "/opt/smolvm",
            "smolvm installed by install.sh as root",
            "sudo rm -rf /opt/smolvm && sudo rm -f /usr/local/bin/smolvm /usr/local/bin/smol"
                .into(),
        );
        item(
            Product::Smolvm,
            "/usr/lib/smolvm",
            "smolvm installed from a .deb/.rpm package",
            "sudo apt remove smolvm   # or: sudo dnf remove smolvm".into(),
        );
        item(
            Product::Smolvm,
            "/usr/bin/smolvm",
            "smolvm command from a .deb/.rpm package",
            "sudo apt remove smolvm   # or: sudo dnf remove smolvm".into(),
        );
    }
    out
}

/// smolvm machine records from `server/smolvm.db` (read-only, through
/// [`crate::inventory::smolvm`]).
///
/// Ordered so that a machine comes after every machine branched from it: deleting the branches
/// first means no delete needs `--cascade`, which would take branches the plan does not show.
///
/// As recorded: not judged against the process table (`alive` false, `effective_state` the
/// recorded state).
pub fn read_smolvm_machines(db: &Path) -> Result<Vec<Machine>, String> {
    let records = crate::inventory::smolvm::read_smolvm_db(db).map_err(|e| e.to_string())?;
    let golden: std::collections::HashMap<&str, &str> = records
        .iter()
        .filter_map(|r| Some((r.name.as_str(), r.golden.as_deref()?)))
        .collect();
    // How many sources a machine is branched from, transitively (bounded: a cycle ends it).
    let depth = |name: &str| {
        let mut d = 0usize;
        let mut at = name;
        while let Some(src) = golden.get(at) {
            if d >= records.len() {
                break;
            }
            d += 1;
            at = src;
        }
        d
    };
    let mut out: Vec<(usize, Machine)> = records
        .iter()
        .map(|r| {
            (
                depth(&r.name),
                Machine {
                    pid_start_time: r.pid_start_time,
                    ephemeral: r.ephemeral,
                    created_at: r.created_at,
                    branched_from: r.golden.clone(),
                    ..as_recorded(Product::Smolvm, &r.name, &r.state, r.pid, db)
                },
            )
        })
        .collect();
    out.sort_by(|(da, a), (db_, b)| db_.cmp(da).then_with(|| a.name.cmp(&b.name)));
    Ok(out.into_iter().map(|(_, m)| m).collect())
}

/// A machine or sandbox as its inventory `db` records it, before any process is looked at.
pub(crate) fn as_recorded(
    product: Product,
    name: &str,
    state: &str,
    pid: Option<u32>,
    db: &Path,
) -> Machine {
    Machine {
        pid,
        effective_state: state.to_string(),
        db: Some(db.to_path_buf()),
        ..Machine::new(product, name, state)
    }
}

/// Celesto (or PyPI smolvm) sandbox rows from `celesto.db` / `smolvm.db` (read-only, through
/// [`crate::inventory::celesto`]).
///
/// As recorded: not judged against the process table (`alive` false, `effective_state` the
/// recorded state).
pub fn read_celesto_rows(db: &Path) -> Result<Vec<Machine>, String> {
    let mut out: Vec<Machine> = crate::inventory::celesto::read_celesto_db(db)
        .map_err(|e| e.to_string())?
        .sandboxes
        .iter()
        .map(|r| {
            let pid = r.pid.and_then(|p| u32::try_from(p).ok());
            as_recorded(Product::Celesto, &r.id, &r.status, pid, db)
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// VM processes of both products that belong to this HOME, by the scanner's one ownership rule
/// ([`crate::scan::procindex`]): the same answer `scan`, `reap`, `verify` and `uninstall` give.
pub fn vm_processes_of_home(
    env: &EnvSnapshot,
    platform: Platform,
    procs: &[RawProcess],
) -> Vec<VmProcess> {
    this_homes(&crate::scan::scan_with(
        &scan_options(env, platform),
        procs.to_vec(),
    ))
}

/// The VM processes of `report` that belong to this HOME.
fn this_homes(report: &crate::model::ScanReport) -> Vec<VmProcess> {
    report
        .processes
        .iter()
        .filter(|p| p.scope == Scope::ThisHome)
        .cloned()
        .collect()
}

/// How the preflight scans: as `scan` does, now.
fn scan_options(env: &EnvSnapshot, platform: Platform) -> crate::scan::ScanOptions {
    crate::scan::ScanOptions {
        env: env.clone(),
        platform,
        age_guard: std::time::Duration::from_secs(120),
        now: std::time::SystemTime::now(),
    }
}

/// The preflight for people: the CLI's text, each line [`crate::view::uninstall`]'s.
pub fn render(p: &Preflight) -> String {
    let mut s = String::new();
    render_installed(p, &mut s);
    render_running(p, &mut s);
    render_outside(p, &mut s);
    s
}

/// Each line of `lines`, ended.
fn lines(s: &mut String, lines: impl IntoIterator<Item = String>) {
    for l in lines {
        s.push_str(&l);
        s.push('\n');
    }
}

/// The preflight's head: the installations and the state directories found.
fn render_installed(p: &Preflight, s: &mut String) {
    use crate::view::uninstall as v;
    lines(
        s,
        [
            v::preflight_head(&p.home),
            String::new(),
            v::INSTALLATIONS.into(),
        ],
    );
    if p.installs.is_empty() {
        lines(s, [v::NONE_FOUND.to_string()]);
    }
    lines(s, p.installs.iter().map(v::install_line));
    lines(s, [String::new(), v::STATE_DIRECTORIES.into()]);
    lines(
        s,
        (p.state_dirs.iter().filter(|d| d.exists))
            .map(|d| v::state_dir_line(d.product, d.allocated_bytes, &d.path, d.kind.label())),
    );
    lines(
        s,
        p.dot_smolvm.iter().map(|d| {
            v::dot_smolvm_line(
                &d.path,
                d.smolvm_entries.len(),
                d.celesto_entries.len(),
                d.other_entries.len(),
            )
        }),
    );
}

/// The preflight's machines, sandboxes, VM processes and mounts.
fn render_running(p: &Preflight, s: &mut String) {
    use crate::view::uninstall as v;
    let counts: Vec<(Product, usize)> = Product::ALL
        .iter()
        .map(|&pr| (pr, p.machines.iter().filter(|m| m.product == pr).count()))
        .collect();
    lines(s, [String::new(), v::records_heading(&counts)]);
    lines(s, p.machines.iter().map(v::machine_line));
    lines(s, [v::processes_heading(p.processes.len())]);
    lines(s, p.processes.iter().map(v::process_line));
    if !p.mounts_checked {
        lines(s, [v::MOUNTS_UNREAD.to_string()]);
    }
    lines(s, p.mounts.iter().map(|m| v::mount_line(m)));
}

/// What the preflight found outside the state directories: launchers, PATH blocks,
/// credentials, system files and problems.
fn render_outside(p: &Preflight, s: &mut String) {
    use crate::view::uninstall as v;
    lines(
        s,
        (p.launchers.iter()).map(|l| v::launcher_line(&l.path, &l.target)),
    );
    lines(s, p.path_blocks.iter().map(v::path_block_line));
    lines(
        s,
        (p.credentials.iter()).map(|c| v::credential_line(&c.path, &c.what)),
    );
    if !p.system.is_empty() {
        lines(s, [String::new(), v::SYSTEM_FILES.into()]);
        lines(
            s,
            (p.system.iter()).map(|i| v::system_line(&i.command, &i.what)),
        );
    }
    lines(s, p.problems.iter().map(|e| v::problem_line(e)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_items_show_commands_only_for_existing_paths() {
        let exists = |p: &Path| p == Path::new("/opt/smolvm") || p == Path::new("/var/lib/celesto");
        let items = system_items(Platform::Linux, &exists);
        let cmds: Vec<&str> = items.iter().map(|i| i.command.as_str()).collect();
        assert!(cmds
            .iter()
            .any(|c| c.starts_with("sudo rm -rf /opt/smolvm")));
        assert!(cmds.contains(&"sudo rm -rf /var/lib/celesto"));
        assert!(!cmds.iter().any(|c| c.contains("/usr/lib/smolvm")));
        assert!(system_items(Platform::Macos, &exists).is_empty());
    }

    #[test]
    fn every_smolvm_root_is_a_state_directory_of_its_table() {
        let env = EnvSnapshot::from_pairs("/h", Vec::<(String, String)>::new());
        let smol: Vec<StateKind> = state_dir_candidates(&env, Platform::Linux)
            .into_iter()
            .filter(|(p, _, _, _)| *p == Product::Smolvm)
            .map(|(_, k, _, _)| k)
            .collect();
        let table: Vec<StateKind> = StateKind::ALL
            .iter()
            .copied()
            .filter(|k| k.product() == Product::Smolvm && k.is_state_dir())
            .collect();
        assert_eq!(smol, table);
    }

    #[test]
    fn launcher_target_is_resolved_lexically() {
        assert!(lexical_starts_with(
            Path::new("/h/.local/bin/../../.smolvm/smolvm"),
            Path::new("/h/.smolvm")
        ));
        assert!(!lexical_starts_with(
            Path::new("/h/.smolvm2/smolvm"),
            Path::new("/h/.smolvm")
        ));
    }
}
