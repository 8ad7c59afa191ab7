//! Installed copies of both products, found by reading files only (nothing is executed).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::env::EnvSnapshot;
use crate::model::{Platform, Product};
use crate::roots::{
    dot_smolvm_contents, is_native_binary, is_smolvm_wrapper, parse_version, read_head,
    smolvm_roots, HEAD_BYTES,
};

/// One installation.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Install {
    pub product: Product,
    /// `script` (`~/.smolvm` or another `install.sh --prefix`), `homebrew`, `deb`, `opt`,
    /// `wheel` (`smolmachines`), `pypi` (a Python environment with `celesto` or PyPI `smolvm`),
    /// `binary` (a smol-machines executable anywhere else).
    pub method: String,
    /// The prefix, virtualenv or package directory.
    pub path: PathBuf,
    /// The command that runs it, when found.
    pub executable: Option<PathBuf>,
    pub version: Option<String>,
    /// For `pypi`: the distribution name (`celesto` or `smolvm`); `smolmachines` for `wheel`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distribution: Option<String>,
}

/// Commands looked up on `PATH`.
pub(crate) const COMMANDS: [&str; 4] = ["celesto", "smolvm", "smol-vmm", "smol"];

/// Find installations: executables on `PATH` (`celesto`, `smolvm`, `smol-vmm`, `smol`) told apart
/// by content, the fixed install prefixes and launchers of [`crate::roots::smolvm_roots`], and
/// Python `*.dist-info` directories next to them. Read-only; nothing is executed.
pub(crate) fn detect_installs(platform: Platform, env: &EnvSnapshot) -> Vec<Install> {
    let roots = smolvm_roots(platform, env);
    detect_installs_with(env, &roots.install_prefixes, &roots.launchers)
}

/// [`detect_installs`] with the fixed prefixes and launchers given as data (tests pass scratch
/// paths so the host's own installs do not leak in).
///
/// Order: `PATH` hits in `PATH` order (per directory: `celesto`, `smolvm`, `smol-vmm`, `smol`),
/// then launchers, then prefixes. Executables are de-duplicated by resolved path, and installs by
/// (product, path), so a launcher symlink and the prefix it points into give one install.
pub(crate) fn detect_installs_with(
    env: &EnvSnapshot,
    prefixes: &[PathBuf],
    launchers: &[PathBuf],
) -> Vec<Install> {
    let mut found = Found::default();
    let homes = Homes::new(env);

    let path_var = env.vars.get("PATH").map(String::as_str).unwrap_or("");
    let mut invoked: Vec<PathBuf> = Vec::new();
    for dir in path_var.split(':').filter(|d| Path::new(d).is_absolute()) {
        for cmd in COMMANDS {
            let candidate = Path::new(dir).join(cmd);
            if crate::fsread::lstat(&candidate).is_some() {
                invoked.push(candidate);
            }
        }
    }
    invoked.extend(
        launchers
            .iter()
            .filter(|l| crate::fsread::lstat(l).is_some())
            .cloned(),
    );

    let mut seen_resolved: HashSet<PathBuf> = HashSet::new();
    for exe in invoked {
        let Some(resolved) = resolve_quietly(&exe, prefixes) else {
            continue;
        };
        if !seen_resolved.insert(resolved.clone()) {
            continue;
        }
        for install in classify_executable(&exe, &resolved, &homes) {
            found.add(install);
        }
    }

    for prefix in prefixes {
        for install in installs_in_prefix(prefix, &homes) {
            found.add(install);
        }
    }
    found.0
}

/// Where an executable really is. A symlink whose length matches a known launcher target
/// (`<prefix>/smolvm`, `<prefix>/smol`, what `install.sh` links) is taken to point there without
/// being read: following or reading a link updates its atime, and a scan changes no timestamp
/// of the SmolVM layout it reads. Anything else is resolved normally.
fn resolve_quietly(exe: &Path, prefixes: &[PathBuf]) -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let meta = crate::fsread::lstat(exe)?;
    if meta.file_type().is_symlink() {
        let name = exe.file_name()?;
        for prefix in prefixes {
            let target = prefix.join(name);
            if target.as_os_str().len() as u64 == meta.size()
                && crate::fsread::lstat(&target).is_some_and(|m| m.is_file())
            {
                return Some(target);
            }
        }
    } else if !meta.is_file() || meta.mode() & 0o111 == 0 {
        return None;
    }
    let resolved = std::fs::canonicalize(exe).ok()?;
    is_executable_file(&resolved).then_some(resolved)
}

#[derive(Default)]
struct Found(Vec<Install>);

impl Found {
    fn add(&mut self, install: Install) {
        if let Some(existing) = self
            .0
            .iter_mut()
            .find(|i| i.product == install.product && i.path == install.path)
        {
            if existing.executable.is_none() {
                existing.executable = install.executable;
            }
            if existing.version.is_none() {
                existing.version = install.version;
            }
            if existing.distribution.is_none() {
                existing.distribution = install.distribution;
            }
            return;
        }
        self.0.push(install);
    }
}

/// The home directories a script install can live under, as written and resolved.
struct Homes(Vec<PathBuf>);

impl Homes {
    fn new(env: &EnvSnapshot) -> Self {
        let mut homes = vec![env.home.clone()];
        homes.extend(env.sudo_home.iter().filter(|_| env.euid == 0).cloned());
        let resolved: Vec<PathBuf> = homes
            .iter()
            .filter_map(|h| std::fs::canonicalize(h).ok())
            .collect();
        homes.extend(resolved);
        Homes(homes)
    }

    /// `<home>/.smolvm` when `path` is inside one.
    fn dot_smolvm_containing(&self, path: &Path) -> Option<PathBuf> {
        self.0
            .iter()
            .map(|h| h.join(".smolvm"))
            .find(|d| path.starts_with(d))
    }
}

fn is_executable_file(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// What one executable is. `invoked` is the path found (on `PATH` or as a launcher), `resolved`
/// its canonical path. A Python environment can yield two installs (its `celesto`/`smolvm`
/// distribution and a `smolmachines` wheel beside it).
fn classify_executable(invoked: &Path, resolved: &Path, homes: &Homes) -> Vec<Install> {
    let Some(head) = read_head(resolved, HEAD_BYTES) else {
        return Vec::new();
    };
    if let Some(entry) = python_entry_point(&head) {
        return python_installs(invoked, resolved, &entry);
    }
    let name = resolved.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let invoked_name = invoked.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let native_smolvm = is_native_binary(&head)
        && (matches!(invoked_name, "smolvm" | "smol-vmm")
            || matches!(name, "smolvm" | "smolvm-bin" | "smol-vmm" | "smol-bin"));
    if is_smolvm_wrapper(&head) || native_smolvm {
        return vec![smolvm_install_at(invoked, resolved, homes)];
    }
    Vec::new()
}

/// A pip console-script: `from <module>.cli.main import main` and the interpreter it runs.
#[derive(Debug, PartialEq, Eq)]
struct PythonEntry {
    distribution: &'static str,
    interpreter: Option<PathBuf>,
}

fn python_entry_point(head: &[u8]) -> Option<PythonEntry> {
    if !head.starts_with(b"#!") {
        return None;
    }
    let text = String::from_utf8_lossy(head);
    let mut lines = text.lines();
    let shebang = lines.next()?.trim_start_matches("#!").trim();
    let interpreter_word = shebang.split_whitespace().next().unwrap_or("");
    let interpreter = if is_python_name(interpreter_word) {
        Some(PathBuf::from(interpreter_word))
    } else if interpreter_word.ends_with("/env")
        && shebang
            .split_whitespace()
            .nth(1)
            .is_some_and(is_python_name)
    {
        None
    } else if matches!(interpreter_word, "/bin/sh" | "/usr/bin/sh") {
        // pip's form for long or spaced interpreter paths:
        //   #!/bin/sh
        //   '''exec' "/path/to/python" "$0" "$@"
        let line = lines.next()?.trim();
        let rest = line.strip_prefix("'''exec' ")?;
        let quoted = rest.strip_prefix('"')?;
        let path = &quoted[..quoted.find('"')?];
        if !is_python_name(path) {
            return None;
        }
        Some(PathBuf::from(path))
    } else {
        return None;
    };
    let distribution = if text.contains("from celesto.cli.main import") {
        "celesto"
    } else if text.contains("from smolvm.cli.main import") {
        "smolvm"
    } else {
        return None;
    };
    Some(PythonEntry {
        distribution,
        interpreter,
    })
}

fn is_python_name(path: &str) -> bool {
    Path::new(path)
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("python") || n.starts_with("pypy"))
}

/// Installs found through a Python entry-point script.
fn python_installs(invoked: &Path, resolved: &Path, entry: &PythonEntry) -> Vec<Install> {
    // Environment roots to search, most specific first: the interpreter's `<env>/bin/..` (a
    // virtualenv; the interpreter path is not resolved, a venv's python is a symlink), then the
    // script's own `<prefix>/bin/..` (user and system installs).
    let mut bases: Vec<PathBuf> = Vec::new();
    if let Some(base) = entry
        .interpreter
        .as_deref()
        .and_then(Path::parent)
        .and_then(Path::parent)
    {
        bases.push(base.to_path_buf());
    }
    if let Some(base) = resolved.parent().and_then(Path::parent) {
        if !bases.iter().any(|b| b == base) {
            bases.push(base.to_path_buf());
        }
    }

    let mut version = None;
    let mut env_root = bases.first().cloned();
    let mut site_found: Option<PathBuf> = None;
    'search: for base in &bases {
        for site in site_dirs(base) {
            if let Some(v) = dist_info_version(&site, entry.distribution) {
                version = Some(v);
                env_root = Some(base.clone());
                site_found = Some(site);
                break 'search;
            }
        }
    }
    let mut out = vec![Install {
        product: Product::Celesto,
        method: "pypi".to_string(),
        path: env_root.unwrap_or_else(|| resolved.to_path_buf()),
        executable: Some(invoked.to_path_buf()),
        version,
        distribution: Some(entry.distribution.to_string()),
    }];
    // smol-machines' SDK wheel installed into the same environment.
    if let Some(site) = site_found {
        if let Some(v) = dist_info_version(&site, "smolmachines") {
            let pkg = site.join("smol");
            let exe = pkg.join("smol-vmm");
            out.push(Install {
                product: Product::Smolvm,
                method: "wheel".to_string(),
                executable: exe.is_file().then_some(exe),
                path: pkg,
                version: Some(v),
                distribution: Some("smolmachines".to_string()),
            });
        }
    }
    out
}

/// `<base>/lib{,64}/python3.*/{site,dist}-packages`, `<base>/local/lib/python3.*/dist-packages`
/// (Debian's pip) and `<base>/lib/python/site-packages` (macOS user installs); existing ones
/// only, in a stable order.
pub(crate) fn site_dirs(base: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for lib in [base.join("lib"), base.join("lib64"), base.join("local/lib")] {
        let Ok(read) = crate::fsread::read_dir_std(&lib) else {
            continue;
        };
        let mut pythons: Vec<PathBuf> = read
            .filter_map(Result::ok)
            .filter(|e| {
                e.file_name()
                    .to_str()
                    .is_some_and(|n| n == "python" || n.starts_with("python3"))
            })
            .map(|e| e.path())
            .collect();
        pythons.sort();
        for py in pythons {
            for leaf in ["site-packages", "dist-packages"] {
                let site = py.join(leaf);
                if site.is_dir() {
                    out.push(site);
                }
            }
        }
    }
    out
}

/// The version in `<site>/<dist>-<version>.dist-info` (names compared the way pip normalises
/// them: case-insensitive, `-`, `_` and `.` alike). With several, the last in sort order.
pub(crate) fn dist_info_version(site: &Path, dist: &str) -> Option<String> {
    let want = normalize_dist(dist);
    let read = crate::fsread::read_dir_std(site).ok()?;
    let mut versions: Vec<String> = read
        .filter_map(Result::ok)
        .filter(|e| e.path().is_dir())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let stem = name.strip_suffix(".dist-info")?;
            let (n, v) = stem.rsplit_once('-')?;
            (normalize_dist(n) == want && !v.is_empty()).then(|| v.to_string())
        })
        .collect();
    versions.sort();
    versions.pop()
}

fn normalize_dist(name: &str) -> String {
    name.to_ascii_lowercase().replace(['-', '.'], "_")
}

/// A smol-machines executable (wrapper or native binary) at `resolved`.
fn smolvm_install_at(invoked: &Path, resolved: &Path, homes: &Homes) -> Install {
    let parent = resolved.parent().unwrap_or(Path::new("/")).to_path_buf();
    let mut install = Install {
        product: Product::Smolvm,
        method: "binary".to_string(),
        path: parent.clone(),
        executable: Some(invoked.to_path_buf()),
        version: None,
        distribution: None,
    };
    let is_wheel = resolved.file_name().is_some_and(|n| n == "smol-vmm")
        && parent.file_name().is_some_and(|n| n == "smol")
        && parent
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|n| n == "site-packages" || n == "dist-packages");
    if is_wheel {
        install.method = "wheel".into();
        install.distribution = Some("smolmachines".into());
        install.version = parent
            .parent()
            .and_then(|site| dist_info_version(site, "smolmachines"));
    } else if let Some((keg, version)) = homebrew_keg(resolved) {
        install.method = "homebrew".into();
        install.path = keg;
        install.version = Some(version);
    } else if let Some(prefix) = homes.dot_smolvm_containing(resolved) {
        install.method = "script".into();
        install.path = prefix;
    } else if resolved.starts_with("/opt/smolvm") {
        install.method = "opt".into();
        install.path = PathBuf::from("/opt/smolvm");
    } else if resolved.starts_with("/usr/lib/smolvm") || resolved == Path::new("/usr/bin/smolvm") {
        install.method = "deb".into();
        install.path = PathBuf::from("/usr/lib/smolvm");
    } else if parent.join("smolvm-bin").is_file() {
        // `install.sh --prefix <somewhere>`
        install.method = "script".into();
    }
    if install.version.is_none() {
        install.version = read_dot_version(&install.path);
    }
    install
}

/// `<...>/Cellar/smolvm/<version>` and `<version>` for a path inside a Homebrew keg.
fn homebrew_keg(path: &Path) -> Option<(PathBuf, String)> {
    let comps: Vec<_> = path.components().collect();
    let i = comps.iter().position(|c| c.as_os_str() == "Cellar")?;
    if comps.get(i + 1)?.as_os_str() != "smolvm" {
        return None;
    }
    let version = comps.get(i + 2)?.as_os_str().to_str()?.to_string();
    let dir: PathBuf = comps[..i + 3].iter().collect();
    Some((dir, version))
}

fn read_dot_version(prefix: &Path) -> Option<String> {
    read_head(&prefix.join(".version"), 256)
        .as_deref()
        .and_then(parse_version)
}

/// Installs in a fixed prefix (`~/.smolvm`, `/opt/smolvm`, `/usr/lib/smolvm`) or a Homebrew
/// `Cellar/smolvm` directory (one install per version directory).
fn installs_in_prefix(prefix: &Path, homes: &Homes) -> Vec<Install> {
    let is_cellar = prefix.file_name().is_some_and(|n| n == "smolvm")
        && prefix
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|n| n == "Cellar");
    if is_cellar {
        let Ok(read) = crate::fsread::read_dir_std(prefix) else {
            return Vec::new();
        };
        let mut kegs: Vec<PathBuf> = read
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        kegs.sort();
        return kegs
            .into_iter()
            .filter_map(|keg| {
                let version = keg.file_name()?.to_str()?.to_string();
                let executable = [keg.join("bin/smolvm"), keg.join("libexec/smolvm")]
                    .into_iter()
                    .find(|p| is_executable_file(p));
                let has_binary = keg.join("libexec/smolvm-bin").is_file() || executable.is_some();
                has_binary.then(|| Install {
                    product: Product::Smolvm,
                    method: "homebrew".into(),
                    path: keg,
                    executable,
                    version: Some(version),
                    distribution: None,
                })
            })
            .collect();
    }

    let Ok(contents) = dot_smolvm_contents(prefix) else {
        return Vec::new();
    };
    if !contents.smolvm_install {
        return Vec::new();
    }
    let method = if homes.dot_smolvm_containing(prefix).is_some() {
        "script"
    } else if prefix.starts_with("/opt/smolvm") {
        "opt"
    } else if prefix.starts_with("/usr/lib/smolvm") {
        "deb"
    } else {
        "script"
    };
    let mut executables = vec![prefix.join("smolvm")];
    if method == "deb" {
        executables.insert(0, PathBuf::from("/usr/bin/smolvm"));
    }
    executables.push(prefix.join("smolvm-bin"));
    vec![Install {
        product: Product::Smolvm,
        method: method.into(),
        path: prefix.to_path_buf(),
        executable: executables.into_iter().find(|p| is_executable_file(p)),
        version: contents.smolvm_version,
        distribution: None,
    }]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_point_shebang_forms() {
        let venv = python_entry_point(b"#!/v/bin/python3\nfrom celesto.cli.main import main\n");
        assert_eq!(
            venv,
            Some(PythonEntry {
                distribution: "celesto",
                interpreter: Some(PathBuf::from("/v/bin/python3")),
            })
        );
        let env = python_entry_point(b"#!/usr/bin/env python3\nfrom smolvm.cli.main import main\n");
        assert_eq!(
            env,
            Some(PythonEntry {
                distribution: "smolvm",
                interpreter: None,
            })
        );
        let sh = python_entry_point(
            b"#!/bin/sh\n'''exec' \"/a b/bin/python3.11\" \"$0\" \"$@\"\n' '''\nfrom celesto.cli.main import main\n",
        );
        assert_eq!(
            sh.unwrap().interpreter,
            Some(PathBuf::from("/a b/bin/python3.11"))
        );
        // Not an entry point of either distribution.
        assert_eq!(
            python_entry_point(b"#!/v/bin/python3\nfrom other import main\n"),
            None
        );
        assert_eq!(
            python_entry_point(b"#!/bin/bash\nfrom celesto.cli.main import main\n"),
            None
        );
        assert_eq!(
            python_entry_point(b"from celesto.cli.main import main\n"),
            None
        );
    }

    #[test]
    fn homebrew_keg_paths() {
        assert_eq!(
            homebrew_keg(Path::new(
                "/opt/homebrew/Cellar/smolvm/1.32.2/libexec/smolvm-bin"
            )),
            Some((
                PathBuf::from("/opt/homebrew/Cellar/smolvm/1.32.2"),
                "1.32.2".to_string()
            ))
        );
        assert_eq!(
            homebrew_keg(Path::new("/opt/homebrew/Cellar/other/1/bin/x")),
            None
        );
        assert_eq!(homebrew_keg(Path::new("/opt/homebrew/Cellar/smolvm")), None);
    }

    #[test]
    fn dist_info_names_are_normalised_and_core_packages_do_not_match() {
        let tmp = tempfile::tempdir().unwrap();
        for d in [
            "smolvm_core-2026.6.24.dist-info",
            "Celesto-0.1.10.dist-info",
            "smolmachines-1.32.2.dist-info",
        ] {
            std::fs::create_dir(tmp.path().join(d)).unwrap();
        }
        assert_eq!(dist_info_version(tmp.path(), "smolvm"), None);
        assert_eq!(
            dist_info_version(tmp.path(), "smolvm-core").as_deref(),
            Some("2026.6.24")
        );
        assert_eq!(
            dist_info_version(tmp.path(), "celesto").as_deref(),
            Some("0.1.10")
        );
        assert_eq!(
            dist_info_version(tmp.path(), "smolmachines").as_deref(),
            Some("1.32.2")
        );
    }
}
