//! Where each product keeps its state, as pure functions of (platform, environment snapshot).
//!
//! Nothing here touches the file system except [`dot_smolvm_contents`], which only reads.

use std::path::{Path, PathBuf};

use crate::env::EnvSnapshot;
use crate::model::{Platform, Product};
use crate::root_kind::RootKind;

/// A candidate directory and why it is a candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RootCandidate {
    pub path: PathBuf,
    /// Where it came from: `CELESTO_DATA_DIR`, `SMOLVM_DATA_DIR`, `XDG_STATE_HOME`, `default`,
    /// `legacy`, `system`, `sudo_user`, `CELESTO_IMAGE_DIR`, ...
    pub source: String,
    /// The directory the CLI would pick today with this environment.
    pub preferred: bool,
}

/// Celesto SmolVM (and legacy PyPI smolvm) roots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CelestoRoots {
    /// Every data directory that may hold `celesto.db` / `smolvm.db`, `disks/`, `*.log`,
    /// in the CLI's order of preference. Scanned when they exist; never created.
    pub data_dirs: Vec<RootCandidate>,
    /// Every image cache directory (`CELESTO_IMAGE_DIR`, `SMOLVM_IMAGE_DIR`, `~/.celesto/images`,
    /// `~/.smolvm/images`).
    pub image_dirs: Vec<RootCandidate>,
    /// `~/.celesto` (keys, forwards, bin, credentials).
    pub home_dir: PathBuf,
    /// `~/.smolvm` as PyPI smolvm / legacy Celesto uses it (shared name with smol-machines).
    pub legacy_home_dir: PathBuf,
    /// Socket and libkrun-config directory (`/tmp`).
    pub socket_dir: PathBuf,
}

/// One complete set of smol-machines smolvm roots (the CLI's default for this environment, or
/// the layout under `SMOLVM_DATA_DIR`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SmolvmRootSet {
    /// `default`, `SMOLVM_DATA_DIR`, ...
    pub source: String,
    /// `<data_local_dir>/smolvm`.
    pub data_root: PathBuf,
    /// `<data_root>/server/smolvm.db`.
    pub db_path: PathBuf,
    /// `<cache_dir>/smolvm`.
    pub cache_root: PathBuf,
    /// Machine directory parents: `<cache_root>/vms` (up to 1.32.2) and `<data_root>/vms` (newer).
    pub vms_dirs: Vec<PathBuf>,
    /// `<cache_dir>/smolvm-pack`.
    pub pack_cache: PathBuf,
    /// `<cache_dir>/smolvm-libs`.
    pub libs_cache: PathBuf,
    /// `<cache_dir>/smolvm-registry`.
    pub registry_cache: PathBuf,
    /// `<cache_dir>/smolvm-image-archives`.
    pub image_archives: PathBuf,
    /// `~/.config/smolvm` (also on macOS), or `$SMOLVM_CONFIG`'s directory.
    pub config_dir: PathBuf,
}

impl SmolvmRootSet {
    /// The set's directories by their report names (`data_root`, `cache_root`, ...).
    pub(crate) fn named_roots(&self) -> [(RootKind, &PathBuf); 7] {
        [
            (RootKind::DataRoot, &self.data_root),
            (RootKind::CacheRoot, &self.cache_root),
            (RootKind::PackCache, &self.pack_cache),
            (RootKind::LibsCache, &self.libs_cache),
            (RootKind::RegistryCache, &self.registry_cache),
            (RootKind::ImageArchives, &self.image_archives),
            (RootKind::ConfigDir, &self.config_dir),
        ]
    }
}

/// smol-machines smolvm roots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SmolvmRoots {
    /// The set the CLI uses with this environment first, then any other set worth scanning.
    pub sets: Vec<SmolvmRootSet>,
    /// Install prefixes to look at: `~/.smolvm`, `/opt/smolvm`, `/usr/lib/smolvm`, Homebrew.
    pub install_prefixes: Vec<PathBuf>,
    /// Launchers: `~/.local/bin/smolvm`, `~/.local/bin/smol`, `/usr/local/bin/smolvm`, ...
    pub launchers: Vec<PathBuf>,
}

/// The entries whose presence shows that a directory is a Celesto data directory: an inventory
/// or `disks/` (a `locks/` or a `build.log` alone does not: a project holds those too).
pub(crate) fn celesto_data_markers() -> impl Iterator<Item = &'static str> {
    crate::upstream::inventories(Product::Celesto)
        .map(|i| i.name)
        .chain(["disks"])
}

/// Celesto roots for this environment, with existence checks on the real file system (only
/// `stat`, for `existing_legacy_path`; nothing is created).
pub(crate) fn celesto_roots(platform: Platform, env: &EnvSnapshot) -> CelestoRoots {
    celesto_roots_with(platform, env, &|p: &Path| p.exists())
}

/// Celesto roots with the existence facts given as data (`exists` answers "does this path
/// exist", like Python's `Path.exists()`, which follows symlinks).
///
/// Models `celesto/vm.py` `resolve_data_dir()` / `_candidate_data_dirs()`,
/// `celesto/images/manager.py` `resolve_image_dir()` and `celesto/_compat.py` (the
/// `SMOLVM_*` → `CELESTO_*` aliases and `existing_legacy_path`). macOS uses the same algorithm.
/// Every candidate that may hold state is returned, the CLI's pick first and marked `preferred`.
pub(crate) fn celesto_roots_with(
    _platform: Platform,
    env: &EnvSnapshot,
    exists: &dyn Fn(&Path) -> bool,
) -> CelestoRoots {
    CelestoRoots {
        data_dirs: celesto_data_dirs(env, exists),
        image_dirs: celesto_image_dirs(env, exists),
        home_dir: env.home.join(".celesto"),
        legacy_home_dir: env.home.join(".smolvm"),
        socket_dir: env.socket_dir(),
    }
}

/// `celesto/_compat.py` `existing_legacy_path`.
fn existing_legacy_path<'a>(
    canonical: &'a Path,
    legacy: &'a Path,
    exists: &dyn Fn(&Path) -> bool,
) -> &'a Path {
    if exists(canonical) || !exists(legacy) {
        canonical
    } else {
        legacy
    }
}

/// The value celesto sees for `CELESTO_<suffix>` after `apply_legacy_environment_aliases`:
/// `CELESTO_<suffix>` when it is present at all (even blank), else `SMOLVM_<suffix>`.
/// Returns the raw value and the variable it came from.
fn celesto_setting<'a>(env: &'a EnvSnapshot, suffix: &str) -> Option<(&'a str, String)> {
    let canonical = format!("CELESTO_{suffix}");
    if let Some(v) = env.vars.get(&canonical) {
        return Some((v.as_str(), canonical));
    }
    let legacy = format!("SMOLVM_{suffix}");
    env.vars.get(&legacy).map(|v| (v.as_str(), legacy))
}

/// Ordered, de-duplicated candidate list.
#[derive(Default)]
struct Candidates(Vec<RootCandidate>);

impl Candidates {
    fn push(&mut self, path: PathBuf, source: &str, preferred: bool) {
        if let Some(existing) = self.0.iter_mut().find(|c| c.path == path) {
            existing.preferred |= preferred;
            return;
        }
        self.0.push(RootCandidate {
            path,
            source: source.to_string(),
            preferred,
        });
    }
}

fn legacy_source(base: &str) -> String {
    if base == "default" {
        "legacy".to_string()
    } else {
        format!("{base} legacy")
    }
}

/// Push `<state_home>/celesto` and `<state_home>/smolvm`, the one `existing_legacy_path` picks
/// first.
fn push_state_pair(
    out: &mut Candidates,
    state_home: &Path,
    source: &str,
    preferred: bool,
    exists: &dyn Fn(&Path) -> bool,
) {
    let canonical = state_home.join("celesto");
    let legacy = state_home.join("smolvm");
    let picked_legacy = existing_legacy_path(&canonical, &legacy, exists) == legacy.as_path();
    let legacy_src = legacy_source(source);
    if picked_legacy {
        out.push(legacy, &legacy_src, preferred);
        out.push(canonical, source, false);
    } else {
        out.push(canonical, source, preferred);
        out.push(legacy, &legacy_src, false);
    }
}

fn celesto_data_dirs(env: &EnvSnapshot, exists: &dyn Fn(&Path) -> bool) -> Vec<RootCandidate> {
    let mut out = Candidates::default();

    // 2) `CELESTO_DATA_DIR` (after the alias) wins when non-blank.
    let override_source = celesto_setting(env, "DATA_DIR")
        .filter(|(v, _)| !v.trim().is_empty())
        .map(|(_, src)| src);
    for var in ["CELESTO_DATA_DIR", "SMOLVM_DATA_DIR"] {
        if let Some(v) = env.var(var) {
            let preferred = override_source.as_deref() == Some(var);
            out.push(env.expand_user(v), var, preferred);
        }
    }
    let cli_picks_candidate = override_source.is_none();

    // 3) The candidate list, most preferred first.
    let sudo = env.under_sudo();
    let xdg = env
        .vars
        .get("XDG_STATE_HOME")
        .filter(|v| !v.is_empty())
        .map(|v| env.expand_user(v));
    let default_state = env.home.join(".local").join("state");
    let (state_home, state_source) = match (&env.sudo_home, &xdg) {
        (Some(sudo_home), _) if sudo => (sudo_home.join(".local").join("state"), "sudo_user"),
        (_, Some(xdg)) => (xdg.clone(), "XDG_STATE_HOME"),
        _ => (default_state.clone(), "default"),
    };
    let system = PathBuf::from("/var/lib/celesto");
    let system_legacy = PathBuf::from("/var/lib/smolvm");
    let direct_root = env.euid == 0 && !sudo;
    if direct_root {
        out.push(system, "system", cli_picks_candidate);
        push_state_pair(&mut out, &state_home, state_source, false, exists);
    } else {
        push_state_pair(
            &mut out,
            &state_home,
            state_source,
            cli_picks_candidate,
            exists,
        );
        out.push(system, "system", false);
    }
    // PyPI smolvm's system fallback.
    out.push(system_legacy, "system legacy", false);

    // Places other runs (without XDG_STATE_HOME, without sudo) may have used.
    if let Some(xdg) = &xdg {
        push_state_pair(&mut out, xdg, "XDG_STATE_HOME", false, exists);
    }
    push_state_pair(&mut out, &default_state, "default", false, exists);
    if let Some(sudo_home) = env.sudo_home.as_ref().filter(|_| env.euid == 0) {
        push_state_pair(
            &mut out,
            &sudo_home.join(".local").join("state"),
            "sudo_user",
            false,
            exists,
        );
    }
    out.0
}

fn celesto_image_dirs(env: &EnvSnapshot, exists: &dyn Fn(&Path) -> bool) -> Vec<RootCandidate> {
    let mut out = Candidates::default();
    // `$CELESTO_IMAGE_DIR` (after the alias), stripped, wins when non-blank.
    let override_source = celesto_setting(env, "IMAGE_DIR")
        .filter(|(v, _)| !v.trim().is_empty())
        .map(|(_, src)| src);
    for var in ["CELESTO_IMAGE_DIR", "SMOLVM_IMAGE_DIR"] {
        if let Some(v) = env.var(var) {
            let preferred = override_source.as_deref() == Some(var);
            out.push(env.expand_user(v.trim()), var, preferred);
        }
    }
    let homes = std::iter::once((&env.home, "default")).chain(
        env.sudo_home
            .as_ref()
            .filter(|_| env.euid == 0)
            .map(|h| (h, "sudo_user")),
    );
    for (i, (home, source)) in homes.enumerate() {
        let canonical = home.join(".celesto").join("images");
        let legacy = home.join(".smolvm").join("images");
        let preferred = i == 0 && override_source.is_none();
        let legacy_src = legacy_source(source);
        if existing_legacy_path(&canonical, &legacy, exists) == legacy.as_path() {
            out.push(legacy, &legacy_src, preferred);
            out.push(canonical, source, false);
        } else {
            out.push(canonical, source, preferred);
            out.push(legacy, &legacy_src, false);
        }
    }
    out.0
}

/// smol-machines roots for this environment (pure).
///
/// `sets[0]` is what the CLI resolves with this environment through the `dirs` crate: on Linux
/// `$XDG_CACHE_HOME` / `$XDG_DATA_HOME` when absolute, else `~/.cache` / `~/.local/share`; on
/// macOS `~/Library/Caches` and `~/Library/Application Support` (XDG ignored). On Linux a
/// non-blank `SMOLVM_DATA_DIR=<D>` replaces `HOME` and clears `XDG_*` (`src/process.rs`
/// `apply_system_data_root`); it is a no-op on macOS. Further sets: the default layout when
/// `SMOLVM_DATA_DIR` moved the first one, `/var/lib/smolvm` (what `serve` picks as root on
/// Linux), and the sudo user's home when running as root under sudo.
pub(crate) fn smolvm_roots(platform: Platform, env: &EnvSnapshot) -> SmolvmRoots {
    let linux = platform == Platform::Linux;
    let (mut install_prefixes, mut launchers) = smolvm_installs(linux, env);
    let (cellar_installs, brew_launchers) = homebrew_smolvm(linux, env);
    for p in cellar_installs {
        push_unique(&mut install_prefixes, p);
    }
    for l in brew_launchers {
        push_unique(&mut launchers, l);
    }
    SmolvmRoots {
        sets: smolvm_root_sets(platform, env),
        install_prefixes,
        launchers,
    }
}

/// The root sets of [`smolvm_roots`], first the one the CLI resolves, each layout once.
fn smolvm_root_sets(platform: Platform, env: &EnvSnapshot) -> Vec<SmolvmRootSet> {
    let linux = platform == Platform::Linux;
    let config_file = env.var("SMOLVM_CONFIG").map(PathBuf::from);
    let data_dir_override = env.var("SMOLVM_DATA_DIR").filter(|_| linux);

    let mut sets: Vec<SmolvmRootSet> = Vec::new();
    let mut add = |set: SmolvmRootSet| {
        if !sets
            .iter()
            .any(|s| s.data_root == set.data_root && s.cache_root == set.cache_root)
        {
            sets.push(set);
        }
    };
    let default_set = |config: Option<PathBuf>| {
        smolvm_set(
            platform,
            &env.home,
            env.vars.get("XDG_CACHE_HOME").map(String::as_str),
            env.vars.get("XDG_DATA_HOME").map(String::as_str),
            config,
            "default",
        )
    };
    match data_dir_override {
        Some(d) => {
            add(smolvm_set(
                platform,
                Path::new(d),
                None,
                None,
                config_file.clone(),
                "SMOLVM_DATA_DIR",
            ));
            add(default_set(None));
        }
        None => add(default_set(config_file.clone())),
    }
    if linux && env.euid == 0 && data_dir_override.is_none() {
        add(smolvm_set(
            platform,
            Path::new("/var/lib/smolvm"),
            None,
            None,
            None,
            "serve_root",
        ));
    }
    if let Some(sudo_home) = env.sudo_home.as_ref().filter(|_| env.euid == 0) {
        add(smolvm_set(
            platform,
            sudo_home,
            None,
            None,
            None,
            "sudo_user",
        ));
    }
    sets
}

/// Install prefixes and launchers outside Homebrew: the user's (and the sudo user's) own, then
/// the system's.
fn smolvm_installs(linux: bool, env: &EnvSnapshot) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut install_prefixes = vec![env.home.join(".smolvm")];
    let mut launchers = vec![
        env.home.join(".local/bin/smolvm"),
        env.home.join(".local/bin/smol"),
    ];
    if let Some(sudo_home) = env.sudo_home.as_ref().filter(|_| env.euid == 0) {
        install_prefixes.push(sudo_home.join(".smolvm"));
        launchers.push(sudo_home.join(".local/bin/smolvm"));
        launchers.push(sudo_home.join(".local/bin/smol"));
    }
    if linux {
        install_prefixes.push(PathBuf::from("/opt/smolvm"));
        install_prefixes.push(PathBuf::from("/usr/lib/smolvm"));
        launchers.extend(
            [
                "/usr/local/bin/smolvm",
                "/usr/local/bin/smol",
                "/usr/bin/smolvm",
            ]
            .map(PathBuf::from),
        );
    } else {
        launchers.push(PathBuf::from("/usr/local/bin/smolvm"));
    }
    (install_prefixes, launchers)
}

/// Where Homebrew would put smolvm: `<cellar>/smolvm` for every cellar (`HOMEBREW_CELLAR`,
/// then each prefix's), and `<prefix>/bin/smolvm` for every prefix (`HOMEBREW_PREFIX`, then
/// the platform's usual ones).
fn homebrew_smolvm(linux: bool, env: &EnvSnapshot) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut brew_prefixes: Vec<PathBuf> = Vec::new();
    if let Some(p) = env.var("HOMEBREW_PREFIX") {
        brew_prefixes.push(PathBuf::from(p));
    }
    if linux {
        brew_prefixes.push(PathBuf::from("/home/linuxbrew/.linuxbrew"));
        brew_prefixes.push(env.home.join(".linuxbrew"));
    } else {
        brew_prefixes.push(PathBuf::from("/opt/homebrew"));
        brew_prefixes.push(PathBuf::from("/usr/local"));
    }
    let mut cellars: Vec<PathBuf> = Vec::new();
    if let Some(c) = env.var("HOMEBREW_CELLAR") {
        cellars.push(PathBuf::from(c));
    }
    cellars.extend(brew_prefixes.iter().map(|p| p.join("Cellar")));
    let installs = cellars.iter().map(|c| c.join("smolvm")).collect();
    let launchers = brew_prefixes
        .iter()
        .map(|p| p.join("bin").join("smolvm"))
        .collect();
    (installs, launchers)
}

fn push_unique(v: &mut Vec<PathBuf>, p: PathBuf) {
    if !v.contains(&p) {
        v.push(p);
    }
}

/// A `dirs`-crate XDG value: used only when absolute (`dirs-sys` `is_absolute_path`).
fn xdg_abs(value: Option<&str>) -> Option<PathBuf> {
    value.map(PathBuf::from).filter(|p| p.is_absolute())
}

/// One root set computed the way the `dirs` crate does for `home`.
fn smolvm_set(
    platform: Platform,
    home: &Path,
    xdg_cache: Option<&str>,
    xdg_data: Option<&str>,
    config_file: Option<PathBuf>,
    source: &str,
) -> SmolvmRootSet {
    let (cache_dir, data_local_dir) = match platform {
        Platform::Linux => (
            xdg_abs(xdg_cache).unwrap_or_else(|| home.join(".cache")),
            xdg_abs(xdg_data).unwrap_or_else(|| home.join(".local").join("share")),
        ),
        Platform::Macos => (
            home.join("Library").join("Caches"),
            home.join("Library").join("Application Support"),
        ),
    };
    let data_root = data_local_dir.join("smolvm");
    let cache_root = cache_dir.join("smolvm");
    let config_dir = match config_file {
        Some(file) => match file.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
            _ => PathBuf::from("."),
        },
        None => home.join(".config").join("smolvm"),
    };
    SmolvmRootSet {
        source: source.to_string(),
        db_path: crate::upstream::SMOLVM_INVENTORY.path_in(&data_root),
        vms_dirs: vec![cache_root.join("vms"), data_root.join("vms")],
        pack_cache: cache_dir.join("smolvm-pack"),
        libs_cache: cache_dir.join("smolvm-libs"),
        registry_cache: cache_dir.join("smolvm-registry"),
        image_archives: cache_dir.join("smolvm-image-archives"),
        data_root,
        cache_root,
        config_dir,
    }
}

/// Every state directory an uninstall may remove, per product and kind, as the environment
/// resolves them (nothing is read but the environment).
pub(crate) fn state_dir_candidates(
    env: &EnvSnapshot,
    platform: Platform,
) -> Vec<(Product, RootKind, PathBuf, String)> {
    let smol = smolvm_roots(platform, env);
    let cel = celesto_roots(platform, env);
    let mut out = Vec::new();
    for set in user_smolvm_sets(&smol, &env.home) {
        for (kind, path) in set.named_roots() {
            out.push((Product::Smolvm, kind, path.clone(), set.source.clone()));
        }
    }
    for (kind, dirs) in [
        (RootKind::DataDir, &cel.data_dirs),
        (RootKind::ImageDir, &cel.image_dirs),
    ] {
        for d in dirs.iter().filter(|d| !is_system_path(&d.path)) {
            out.push((Product::Celesto, kind, d.path.clone(), d.source.clone()));
        }
    }
    out.push((
        Product::Celesto,
        RootKind::CelestoHome,
        cel.home_dir.clone(),
        "default".into(),
    ));
    out
}

/// The directories an uninstall removes from or inside, resolved from the environment now: the
/// state directories, `~/.smolvm`, and the shared socket directory (for this HOME's runtime
/// files only). The executor refuses a removal outside all of them, whatever a plan says.
pub(crate) fn removal_roots(env: &EnvSnapshot, platform: Platform) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = state_dir_candidates(env, platform)
        .into_iter()
        .map(|(_, _, p, _)| p)
        .collect();
    out.push(env.home.join(".smolvm"));
    out.push(celesto_roots(platform, env).socket_dir);
    out
}

/// The smolvm root sets that belong to this user (not `/var/lib/smolvm`, not another HOME).
pub(crate) fn user_smolvm_sets<'a>(
    roots: &'a SmolvmRoots,
    _home: &Path,
) -> impl Iterator<Item = &'a SmolvmRootSet> {
    roots
        .sets
        .iter()
        .filter(|s| s.source == "default" || s.source == "SMOLVM_DATA_DIR")
}

/// Paths that need root: never planned for removal, only shown as commands.
pub(crate) fn is_system_path(p: &Path) -> bool {
    ["/var/lib", "/etc", "/opt", "/usr"]
        .iter()
        .any(|s| p.starts_with(s))
}

/// What `~/.smolvm` (or any directory with that role) holds, decided by content.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct DotSmolvm {
    /// A smol-machines install prefix: `smolvm-bin` and/or `.version` present.
    pub smolvm_install: bool,
    /// The smol-machines version from `.version`.
    pub smolvm_version: Option<String>,
    /// Entries that belong to smol-machines (`smolvm`, `smolvm-bin`, `lib`, `.version`,
    /// templates, `smol`, `smol-bin`, `agent-rootfs`, `kubernetes`, `containerd-shim-smolvm-v2`).
    pub smolvm_entries: Vec<PathBuf>,
    /// Entries that belong to Celesto / PyPI smolvm (`images`, `keys`, `bin`, `forwards`,
    /// `credentials`, `.version_check.json`, `lib/lume-*`).
    pub celesto_entries: Vec<PathBuf>,
    /// Entries neither product claims.
    pub other_entries: Vec<PathBuf>,
}

/// Decide, entry by entry and from content, what a `~/.smolvm`-style directory holds.
///
/// Only reads: `read_dir`, `symlink_metadata`, and the first bytes of a few regular files
/// (`.version`, the `smolvm` / `smol` launchers), opened with `O_NOFOLLOW | O_NONBLOCK`.
/// Symlinks are never followed; a symlink counts as an "other" entry. `lib/` is reported as a
/// whole when everything in it belongs to one product, and entry by entry when it is mixed
/// (smol-machines' `libkrun*` beside Celesto's `lume-*`). Entries are sorted by name.
pub(crate) fn dot_smolvm_contents(dir: &Path) -> std::io::Result<DotSmolvm> {
    let mut out = DotSmolvm::default();
    for (name, path, ft) in sorted_entries(dir)? {
        let owner = match name.as_deref() {
            Some(n) => classify_dot_smolvm_entry(n, &path, ft, &mut out),
            None => Owner::Other,
        };
        match owner {
            Owner::Smolvm => out.smolvm_entries.push(path),
            Owner::Celesto => out.celesto_entries.push(path),
            Owner::Other => out.other_entries.push(path),
            Owner::Handled => {}
        }
    }
    Ok(out)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Owner {
    Smolvm,
    Celesto,
    Other,
    /// Already recorded (the children of a mixed `lib/`).
    Handled,
}

type Entry = (Option<String>, PathBuf, std::fs::FileType);

/// `read_dir` sorted by name, with `symlink_metadata` file types; entries that vanish while
/// listing are skipped.
fn sorted_entries(dir: &Path) -> std::io::Result<Vec<Entry>> {
    let mut entries = Vec::new();
    for entry in crate::fsread::read_dir_std(dir)? {
        let entry = entry?;
        let path = entry.path();
        let ft = match std::fs::symlink_metadata(&path) {
            Ok(m) => m.file_type(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        entries.push((entry.file_name().into_string().ok(), path, ft));
    }
    entries.sort_by(|a, b| a.1.cmp(&b.1));
    Ok(entries)
}

fn classify_dot_smolvm_entry(
    name: &str,
    path: &Path,
    ft: std::fs::FileType,
    out: &mut DotSmolvm,
) -> Owner {
    let file = ft.is_file();
    let dir = ft.is_dir();
    match name {
        "smolvm-bin" if file => {
            out.smolvm_install = true;
            Owner::Smolvm
        }
        ".version" if file => match read_head(path, 256).as_deref().and_then(parse_version) {
            Some(v) => {
                out.smolvm_install = true;
                out.smolvm_version = Some(v);
                Owner::Smolvm
            }
            None => Owner::Other,
        },
        "smolvm" | "smol" if file => match read_head(path, HEAD_BYTES) {
            Some(head) if is_smolvm_wrapper(&head) || is_native_binary(&head) => Owner::Smolvm,
            _ => Owner::Other,
        },
        "smol-bin"
        | "containerd-shim-smolvm-v2"
        | "init.krun"
        | "storage-template.ext4"
        | "storage-template.ext4.zst"
        | "overlay-template.ext4"
        | "overlay-template.ext4.zst"
            if file =>
        {
            Owner::Smolvm
        }
        "agent-rootfs" | "kubernetes" if dir => Owner::Smolvm,
        "images" | "keys" | "bin" | "forwards" if dir => Owner::Celesto,
        "credentials" | ".version_check.json" | "telemetry.json" if file => Owner::Celesto,
        "lib" if dir => classify_lib(path, out),
        _ => Owner::Other,
    }
}

/// `lib/`: smol-machines puts libkrun and libkrunfw there, Celesto puts `lume-<ver>/` there.
fn classify_lib(lib: &Path, out: &mut DotSmolvm) -> Owner {
    let Ok(children) = sorted_entries(lib) else {
        return Owner::Other;
    };
    let owners: Vec<(PathBuf, Owner)> = children
        .into_iter()
        .map(|(name, path, ft)| {
            let owner = match name.as_deref() {
                Some(n) if n.starts_with("libkrun") && !ft.is_dir() => Owner::Smolvm,
                Some(n) if n.starts_with("lume-") && ft.is_dir() => Owner::Celesto,
                _ => Owner::Other,
            };
            (path, owner)
        })
        .collect();
    let Some(first) = owners.first().map(|(_, o)| *o) else {
        return Owner::Other;
    };
    if owners.iter().all(|(_, o)| *o == first) {
        return first;
    }
    for (path, owner) in owners {
        match owner {
            Owner::Smolvm => out.smolvm_entries.push(path),
            Owner::Celesto => out.celesto_entries.push(path),
            _ => out.other_entries.push(path),
        }
    }
    Owner::Handled
}

/// How many leading bytes are read to recognise a script or binary.
pub(crate) const HEAD_BYTES: usize = 16 * 1024;

/// The first `max` bytes of a regular file, without following a final symlink and without
/// blocking on a FIFO. `None` when it cannot be read or is not a regular file.
pub(crate) fn read_head(path: &Path, max: usize) -> Option<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let open = |extra: i32| {
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | extra)
            .open(path)
    };
    // O_NOATIME: a scan changes no timestamp (refused for files of other users: then without).
    let file = match open(crate::fsread::NOATIME.bits() as i32) {
        Ok(f) => f,
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => open(0).ok()?,
        Err(_) => return None,
    };
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut buf = Vec::with_capacity(max.min(4096));
    file.take(max as u64).read_to_end(&mut buf).ok()?;
    Some(buf)
}

/// A smol-machines `.version` body: `1.32.2` (a leading `v` is tolerated).
pub(crate) fn parse_version(bytes: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(bytes).ok()?.trim();
    let text = text.strip_prefix('v').unwrap_or(text);
    let ok = !text.is_empty()
        && text.len() <= 64
        && text.starts_with(|c: char| c.is_ascii_digit())
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+'));
    ok.then(|| text.to_string())
}

/// A shell script that execs smol-machines' real binary (`smolvm-bin` or `smol-bin`).
pub(crate) fn is_smolvm_wrapper(head: &[u8]) -> bool {
    if !head.starts_with(b"#!") {
        return false;
    }
    let first_line = head.split(|b| *b == b'\n').next().unwrap_or_default();
    let first_line = String::from_utf8_lossy(first_line);
    let shell = ["sh", "bash", "zsh", "dash"]
        .iter()
        .any(|sh| first_line.split(['/', ' ']).any(|w| w.trim() == *sh));
    let text = String::from_utf8_lossy(head);
    shell && (text.contains("smolvm-bin") || text.contains("smol-bin"))
}

/// ELF or Mach-O (thin or fat) magic.
pub(crate) fn is_native_binary(head: &[u8]) -> bool {
    const MAGICS: [[u8; 4]; 5] = [
        *b"\x7fELF",
        [0xcf, 0xfa, 0xed, 0xfe],
        [0xce, 0xfa, 0xed, 0xfe],
        [0xca, 0xfe, 0xba, 0xbe],
        [0xfe, 0xed, 0xfa, 0xcf],
    ];
    head.len() >= 4 && MAGICS.iter().any(|m| head[..4] == m[..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_file_bodies() {
        assert_eq!(parse_version(b"1.32.2\n").as_deref(), Some("1.32.2"));
        assert_eq!(parse_version(b"v1.18.2").as_deref(), Some("1.18.2"));
        assert_eq!(
            parse_version(b" 1.0.0-rc.1+g1234 ").as_deref(),
            Some("1.0.0-rc.1+g1234")
        );
        assert_eq!(parse_version(b""), None);
        assert_eq!(parse_version(b"latest"), None);
        assert_eq!(parse_version(b"1.2 beta"), None);
        assert_eq!(parse_version(&[0xff, 0xfe]), None);
    }

    #[test]
    fn wrapper_needs_a_shell_shebang_and_the_real_binary_name() {
        assert!(is_smolvm_wrapper(
            b"#!/usr/bin/env bash\nexec \"$d/smolvm-bin\" \"$@\"\n"
        ));
        assert!(is_smolvm_wrapper(
            b"#!/bin/sh\nexec /usr/lib/smolvm/smolvm-bin \"$@\"\n"
        ));
        assert!(is_smolvm_wrapper(b"#!/bin/bash\nexec \"$d/smol-bin\"\n"));
        // A Python script that mentions smolvm-bin in a comment is not the wrapper.
        assert!(!is_smolvm_wrapper(
            b"#!/venv/bin/python3\n# smolvm-bin\nfrom smolvm.cli.main import main\n"
        ));
        assert!(!is_smolvm_wrapper(b"#!/bin/bash\necho smolvm\n"));
        assert!(!is_smolvm_wrapper(b"exec smolvm-bin"));
    }

    #[test]
    fn native_binary_magics() {
        assert!(is_native_binary(b"\x7fELF\x02\x01"));
        assert!(is_native_binary(&[0xcf, 0xfa, 0xed, 0xfe, 7]));
        assert!(is_native_binary(&[0xca, 0xfe, 0xba, 0xbe]));
        assert!(!is_native_binary(b"#!/bin/sh"));
        assert!(!is_native_binary(b"\x7fEL"));
    }

    #[test]
    fn read_head_does_not_follow_symlinks_or_open_fifos() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("f");
        std::fs::write(&file, b"0123456789").unwrap();
        assert_eq!(read_head(&file, 4).as_deref(), Some(&b"0123"[..]));
        let link = tmp.path().join("l");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert_eq!(read_head(&link, 4), None);
        let fifo = tmp.path().join("p");
        smolsweep_fixtures::mkfifo(&fifo).unwrap();
        assert_eq!(read_head(&fifo, 4), None);
        assert_eq!(read_head(tmp.path(), 4), None);
    }

    #[test]
    fn dot_smolvm_fifo_named_version_is_not_read_as_a_version() {
        let tmp = tempfile::tempdir().unwrap();
        smolsweep_fixtures::mkfifo(&tmp.path().join(".version")).unwrap();
        let c = dot_smolvm_contents(tmp.path()).unwrap();
        assert!(!c.smolvm_install);
        assert_eq!(c.other_entries, vec![tmp.path().join(".version")]);
    }

    #[test]
    fn existing_legacy_path_matches_celesto_compat() {
        let c = Path::new("/c");
        let l = Path::new("/l");
        let only =
            |set: &'static [&'static str]| move |p: &Path| set.iter().any(|s| Path::new(s) == p);
        assert_eq!(existing_legacy_path(c, l, &only(&[])), c);
        assert_eq!(existing_legacy_path(c, l, &only(&["/l"])), l);
        assert_eq!(existing_legacy_path(c, l, &only(&["/c", "/l"])), c);
        assert_eq!(existing_legacy_path(c, l, &only(&["/c"])), c);
    }
}
