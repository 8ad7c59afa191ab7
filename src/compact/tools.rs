//! The tools that compact a disk, checked like the products: found, their version read
//! (`e2fsck -V`, `qemu-img --version`, …) and compared with [`TRUSTED`], the closed table of the
//! oldest version trusted for each.
//!
//! * A raw ext4 image is compacted by `e2fsck` (e2fsprogs). A qcow2 image by QEMU's tools:
//!   `qemu-img` (its check and its own reading of the backing chain), `qemu-io` (the discards)
//!   and `qemu-storage-daemon`, whose FUSE export shows `e2fsck` the guest's file system, which
//!   is checked as a raw one is. Nothing else is run.
//! * A tool too old, or whose version cannot be read, is "cannot tell" for the disks it would
//!   compact, with why. A missing tool leaves the estimate shown; the action then says what to
//!   install (the Debian/Ubuntu package and the Homebrew formula).
//! * Found on `PATH` first, then where Debian (`/usr/sbin`, `/sbin`, not always on a user's
//!   `PATH`) and Homebrew (its keg-only `e2fsprogs`, its prefix) put them.
//! * Every tool is started tied to Smolsweep's life ([`super::child`]).
//!
//! A version is read once per binary identity (its path, device, inode, size and mtime) and
//! remembered in the scan's cache (`tool-versions.json` in Smolsweep's data directory, beside
//! the keep rules): a scan reads it only when it has something compactable to check the tools
//! for, and runs a tool only for a binary it has not seen. A scan that estimates nothing
//! compactable runs no tool and reads no cache.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::Format;

/// One tool and the oldest version of it trusted to compact a disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Trusted {
    /// The command.
    pub tool: &'static str,
    /// The argument that prints its version.
    pub version_arg: &'static str,
    /// What its version line starts with, before the number.
    pub prefix: &'static str,
    /// The oldest version trusted.
    pub min: [u32; 3],
    /// The Debian/Ubuntu package that installs it.
    pub apt: &'static str,
    /// The Homebrew formula that installs it.
    pub brew: &'static str,
}

/// The closed table of the tools run and the oldest version of each trusted.
///
/// * e2fsprogs 1.46.0: the first `e2fsck` that knows `fast_commit`, a compatible feature an
///   older one checks without replaying (so it may call blocks free that a fast commit
///   uses); Debian 11 and Ubuntu 22.04 ship 1.46.
/// * QEMU 6.0: the oldest QEMU either SmolVM runs on (Celesto needs `qemu-system-x86_64` ≥
///   6.0), and the first whose `qemu-storage-daemon` exports an image over FUSE; older
///   `qemu-io` and `qemu-img` were never run against their images.
pub(crate) const TRUSTED: [Trusted; 4] = [
    Trusted {
        tool: "e2fsck",
        version_arg: "-V",
        prefix: "e2fsck ",
        min: [1, 46, 0],
        apt: "e2fsprogs",
        brew: "e2fsprogs",
    },
    Trusted {
        tool: "qemu-img",
        version_arg: "--version",
        prefix: "qemu-img version ",
        min: [6, 0, 0],
        apt: "qemu-utils",
        brew: "qemu",
    },
    Trusted {
        tool: "qemu-io",
        version_arg: "--version",
        prefix: "qemu-io version ",
        min: [6, 0, 0],
        apt: "qemu-utils",
        brew: "qemu",
    },
    Trusted {
        tool: "qemu-storage-daemon",
        version_arg: "--version",
        prefix: "qemu-storage-daemon version ",
        min: [6, 0, 0],
        // Debian 12 and Ubuntu ship it there; Debian 13's qemu-utils has it too.
        apt: "qemu-system-common",
        brew: "qemu",
    },
];

/// The tools compacting a disk of `format` runs (a qcow2 image's file system is checked by
/// `e2fsck` through QEMU's export).
pub(crate) fn for_format(format: Format) -> Vec<&'static Trusted> {
    let names: &[&str] = match format {
        Format::Raw => &["e2fsck"],
        Format::Qcow2 => &["qemu-img", "qemu-io", "qemu-storage-daemon", "e2fsck"],
    };
    TRUSTED.iter().filter(|t| names.contains(&t.tool)).collect()
}

/// Whether QEMU's FUSE export is there to show `e2fsck` a qcow2 image's guest (QEMU builds it
/// on Linux only): elsewhere a qcow2 disk is not compacted, since its file system cannot be
/// checked ([`NO_EXPORT`]).
pub(crate) const FUSE_EXPORT: bool = cfg!(target_os = "linux");

/// Why a qcow2 disk is not compacted where QEMU has no FUSE export.
pub(crate) const NO_EXPORT: &str = "checking its file system first needs QEMU's FUSE export, \
     which QEMU has on Linux only";

/// What was found of one tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ToolState {
    /// Found, and at least the version trusted.
    Ready { path: PathBuf, version: [u32; 3] },
    /// Found, older than trusted.
    TooOld { version: [u32; 3] },
    /// Found, but its version could not be read (the first line it printed).
    Unreadable { said: String },
    /// Not found.
    Missing,
}

fn shown([a, b, c]: [u32; 3]) -> String {
    format!("{a}.{b}.{c}")
}

impl Trusted {
    /// What it is part of, as the action names it.
    fn part_of(&self) -> &'static str {
        if self.apt == "e2fsprogs" {
            "e2fsprogs"
        } else {
            "QEMU's tools"
        }
    }

    /// What to install for it, as the action says it.
    pub(crate) fn install(&self) -> String {
        install(std::slice::from_ref(&self))
    }

    /// The version of this tool in what `<tool> <version_arg>` printed, when it can be read.
    pub(crate) fn parse(&self, output: &str) -> Option<[u32; 3]> {
        let line = output
            .lines()
            .find_map(|l| l.trim().strip_prefix(self.prefix))?;
        let mut parts = line
            .split(|c: char| !c.is_ascii_digit() && c != '.')
            .next()?
            .split('.');
        let mut v = [0u32; 3];
        for (i, slot) in v.iter_mut().enumerate() {
            match parts.next() {
                Some(p) => *slot = p.parse().ok()?,
                None if i > 0 => break,
                None => return None,
            }
        }
        Some(v)
    }

    /// The state of this tool given its path and what its version argument printed.
    pub(crate) fn judge(&self, path: &Path, output: &str) -> ToolState {
        match self.parse(output) {
            Some(v) if v >= self.min => ToolState::Ready {
                path: path.to_path_buf(),
                version: v,
            },
            Some(v) => ToolState::TooOld { version: v },
            None => ToolState::Unreadable {
                said: output.lines().next().unwrap_or_default().trim().to_string(),
            },
        }
    }

    /// Why a disk it would compact cannot be told (too old, or no version read), or `None`.
    pub(crate) fn cannot_tell(&self, state: &ToolState) -> Option<String> {
        match state {
            ToolState::TooOld { version } => Some(format!(
                "{} {} is older than {}, the oldest version trusted to compact a disk; \
                 update {}",
                self.tool,
                shown(*version),
                shown(self.min),
                self.install().trim_start_matches("install ")
            )),
            ToolState::Unreadable { said } => Some(format!(
                "the version of {} could not be read (it printed {:?})",
                self.tool,
                crate::pathser::escape_text(said)
            )),
            _ => None,
        }
    }
}

/// Where the tools are installed when `PATH` lacks them: Debian's sbin directories and
/// Homebrew's keg-only e2fsprogs, and on macOS Homebrew's prefixes (an app started from the
/// Finder has a minimal `PATH`).
#[cfg(not(target_os = "macos"))]
const BESIDE_PATH: [&str; 4] = [
    "/usr/sbin",
    "/sbin",
    "/opt/homebrew/opt/e2fsprogs/sbin",
    "/usr/local/opt/e2fsprogs/sbin",
];
#[cfg(target_os = "macos")]
const BESIDE_PATH: [&str; 6] = [
    "/usr/sbin",
    "/sbin",
    "/opt/homebrew/opt/e2fsprogs/sbin",
    "/usr/local/opt/e2fsprogs/sbin",
    "/opt/homebrew/bin",
    "/usr/local/bin",
];

/// Where `tool` is: the first executable file named so on `PATH`, then in [`BESIDE_PATH`].
pub(crate) fn locate(tool: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .filter(|d| d.is_absolute())
        .chain(BESIDE_PATH.iter().map(PathBuf::from))
        .map(|d| d.join(tool))
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.mode() & 0o111 != 0))
}

/// A binary's identity: path, device, inode, size, mtime (ns).
type BinIdent = (PathBuf, u64, u64, u64, i128);

/// What each binary printed for its version, by identity, in this process.
static SEEN: Mutex<Option<HashMap<BinIdent, String>>> = Mutex::new(None);

/// How long reading a version may take.
const VERSION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// What `exe arg` prints (stdout then stderr), within [`VERSION_TIMEOUT`].
fn version_output(exe: &Path, arg: &str) -> Option<String> {
    use std::process::{Command, Stdio};
    let mut cmd = Command::new(exe);
    cmd.arg(arg)
        .env("LANG", "C")
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut running = super::child::spawn(&mut cmd, libc::SIGKILL, None, super::child::TIE).ok()?;
    let started = std::time::Instant::now();
    loop {
        match running.child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if started.elapsed() < VERSION_TIMEOUT => {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            _ => {
                let _ = running.child.kill();
                let _ = running.wait();
                return None;
            }
        }
    }
    let out = running.wait_with_output().ok()?;
    Some(String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr))
}

/// Most of what a tool printed that is kept (the version is on its first lines).
const PRINTED_MAX: usize = 4096;

/// The file of the scan's cache of tool versions, in Smolsweep's data directory.
pub(crate) const CACHE_FILE: &str = "tool-versions.json";
/// Its schema.
const CACHE_SCHEMA: &str = "smolsweep.tool-versions/1";
/// Most binaries it remembers (the newest kept).
const CACHE_MAX: usize = 64;

/// The scan's cache of tool versions, as saved.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Remembered {
    schema: String,
    tools: Vec<Version>,
}

/// What one binary printed for its version, under its identity.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Version {
    path: String,
    dev: u64,
    ino: u64,
    size: u64,
    mtime_s: i64,
    mtime_ns: u32,
    printed: String,
}

impl Version {
    fn key(&self) -> BinIdent {
        (
            PathBuf::from(&self.path),
            self.dev,
            self.ino,
            self.size,
            i128::from(self.mtime_s) * 1_000_000_000 + i128::from(self.mtime_ns),
        )
    }
}

/// The cache at `file`; a missing, unreadable or foreign file is an empty one (it is written
/// afresh on the next miss).
fn remembered(file: &Path) -> Remembered {
    let mut f = match crate::fsread::open_regular(file) {
        Ok(f) => f,
        Err(_) => return Remembered::default(),
    };
    let mut text = String::new();
    let read = std::io::Read::read_to_string(&mut std::io::Read::take(&mut f, 1 << 20), &mut text);
    match read
        .ok()
        .and_then(|_| serde_json::from_str::<Remembered>(&text).ok())
    {
        Some(r) if r.schema == CACHE_SCHEMA => r,
        _ => Remembered::default(),
    }
}

/// Remember in the cache at `file` what the binary `key` printed.
fn remember(file: &Path, key: &BinIdent, printed: &str) {
    let Some(path) = key.0.to_str() else {
        return;
    };
    let mut r = remembered(file);
    r.schema = CACHE_SCHEMA.into();
    r.tools.retain(|v| v.key() != *key);
    r.tools.push(Version {
        path: path.into(),
        dev: key.1,
        ino: key.2,
        size: key.3,
        mtime_s: (key.4.div_euclid(1_000_000_000)) as i64,
        mtime_ns: (key.4.rem_euclid(1_000_000_000)) as u32,
        printed: printed.into(),
    });
    let extra = r.tools.len().saturating_sub(CACHE_MAX);
    r.tools.drain(..extra);
    if let Ok(bytes) = serde_json::to_vec(&r) {
        // A cache that cannot be written is read again next time: nothing else depends on it.
        let _ = crate::atomic::write(file, &bytes, true);
    }
}

/// What the binary `key` printed for its version: remembered in this process, then in the
/// cache at `cache` (when given), else read now (and remembered in both).
fn printed(t: &Trusted, key: &BinIdent, cache: Option<&Path>) -> Option<String> {
    let seen = |k: &BinIdent| {
        crate::basics::lock(&SEEN)
            .as_ref()
            .and_then(|s| s.get(k).cloned())
    };
    let keep = |out: &String| {
        crate::basics::lock(&SEEN)
            .get_or_insert_with(HashMap::new)
            .insert(key.clone(), out.clone());
    };
    if let Some(hit) = seen(key) {
        return Some(hit);
    }
    if let Some(v) = cache.and_then(|f| remembered(f).tools.into_iter().find(|v| v.key() == *key)) {
        keep(&v.printed);
        return Some(v.printed);
    }
    let mut out = version_output(&key.0, t.version_arg)?;
    let mut cut = out.len().min(PRINTED_MAX);
    while !out.is_char_boundary(cut) {
        cut -= 1;
    }
    out.truncate(cut);
    keep(&out);
    if let Some(file) = cache {
        remember(file, key, &out);
    }
    Some(out)
}

/// The state of `t` on this machine now (its version read once per binary identity, and
/// remembered in the scan's cache at `cache`).
pub(crate) fn probe(t: &Trusted, cache: Option<&Path>) -> ToolState {
    let Some(exe) = locate(t.tool) else {
        return ToolState::Missing;
    };
    let Ok(m) = std::fs::metadata(&exe) else {
        return ToolState::Missing;
    };
    let key = (
        exe.clone(),
        m.dev(),
        m.ino(),
        m.size(),
        i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
    );
    match printed(t, &key, cache) {
        Some(out) => t.judge(&exe, &out),
        None => ToolState::Unreadable {
            said: "nothing within 5 s".into(),
        },
    }
}

/// What the tools for `format` say of compacting a disk now: `Err(why)` when it cannot tell
/// (a tool too old or unreadable); `Ok(Some(sentence))` naming the tools missing and what to
/// install; `Ok(None)` when every one is ready.
pub(crate) fn check(format: Format, cache: Option<&Path>) -> Result<Option<String>, String> {
    if format == Format::Qcow2 && !FUSE_EXPORT {
        return Ok(Some(NO_EXPORT.into()));
    }
    let mut missing: Vec<&Trusted> = Vec::new();
    for t in for_format(format) {
        let state = probe(t, cache);
        if let Some(why) = t.cannot_tell(&state) {
            return Err(why);
        }
        if state == ToolState::Missing {
            missing.push(t);
        }
    }
    if missing.is_empty() {
        return Ok(None);
    }
    let names: Vec<&str> = missing.iter().map(|t| t.tool).collect();
    let verb = if names.len() == 1 { "is" } else { "are" };
    Ok(Some(format!(
        "{} {verb} not installed: {}",
        listed(&names),
        install(&missing)
    )))
}

/// What to install for `tools`: what each is part of, with the Debian/Ubuntu packages and the
/// Homebrew formulas, each named once.
fn install(tools: &[&Trusted]) -> String {
    let mut parts: Vec<(&str, Vec<&str>, Vec<&str>)> = Vec::new();
    for t in tools {
        let i = match parts.iter().position(|(p, _, _)| *p == t.part_of()) {
            Some(i) => i,
            None => {
                parts.push((t.part_of(), Vec::new(), Vec::new()));
                parts.len() - 1
            }
        };
        let (_, apt, brew) = &mut parts[i];
        if !apt.contains(&t.apt) {
            apt.push(t.apt);
        }
        if !brew.contains(&t.brew) {
            brew.push(t.brew);
        }
    }
    let said: Vec<String> = parts
        .iter()
        .map(|(what, apt, brew)| {
            format!(
                "{what} (Debian/Ubuntu: apt install {}; macOS: brew install {})",
                apt.join(" "),
                brew.join(" ")
            )
        })
        .collect();
    format!("install {}", said.join(" and "))
}

/// `a`, `a and b`, `a, b and c`.
fn listed(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// The path of the trusted `tool` to run now; `Err` says why not (missing: what to install;
/// too old or unreadable: why).
pub(crate) fn ready(tool: &str) -> Result<PathBuf, String> {
    let Some(t) = TRUSTED.iter().find(|t| t.tool == tool) else {
        return Err(format!("{tool} is no tool Smolsweep runs"));
    };
    match probe(t, None) {
        ToolState::Ready { path, .. } => Ok(path),
        ToolState::Missing => Err(format!("{tool} is not installed: {}", t.install())),
        other => Err(t.cannot_tell(&other).unwrap_or_default()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recorded(name: &str) -> String {
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/tool-versions")
            .join(name);
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    fn trusted(tool: &str) -> &'static Trusted {
        TRUSTED.iter().find(|t| t.tool == tool).unwrap()
    }

    #[test]
    fn compact_tool_versions_recorded_are_read_and_compared_with_the_table() {
        let exe = Path::new("/x");
        for (tool, file, version, ready) in [
            ("e2fsck", "e2fsck-1.47.0-debian12.txt", [1, 47, 0], true),
            (
                "e2fsck",
                "e2fsck-1.42.9-centos7-first-line.txt",
                [1, 42, 9],
                false,
            ),
            (
                "qemu-img",
                "qemu-img-10.0.2-debian12-backports.txt",
                [10, 0, 2],
                true,
            ),
            (
                "qemu-img",
                "qemu-img-2.11.1-ubuntu18.04.txt",
                [2, 11, 1],
                false,
            ),
            (
                "qemu-io",
                "qemu-io-10.0.2-debian12-backports.txt",
                [10, 0, 2],
                true,
            ),
            (
                "qemu-storage-daemon",
                "qemu-storage-daemon-10.0.2-debian12-backports.txt",
                [10, 0, 2],
                true,
            ),
        ] {
            let t = trusted(tool);
            let out = recorded(file);
            assert_eq!(t.parse(&out), Some(version), "{file}");
            let state = t.judge(exe, &out);
            assert_eq!(matches!(state, ToolState::Ready { .. }), ready, "{file}");
            assert_eq!(t.cannot_tell(&state).is_some(), !ready, "{file}");
        }
        let why = trusted("e2fsck")
            .cannot_tell(&ToolState::TooOld {
                version: [1, 42, 9],
            })
            .unwrap();
        assert_eq!(
            why,
            "e2fsck 1.42.9 is older than 1.46.0, the oldest version trusted to compact a disk; \
             update e2fsprogs (Debian/Ubuntu: apt install e2fsprogs; macOS: brew install \
             e2fsprogs)"
        );
    }

    /// Hazard: a tool that answers in another way (another implementation, a wrapper, an
    /// error) is never taken for a trusted one.
    #[test]
    fn compact_tool_whose_version_cannot_be_read_is_cannot_tell() {
        let t = trusted("e2fsck");
        for out in [
            "BusyBox v1.36.1 (Debian 1:1.36.1-3) multi-call binary.\n",
            "e2fsck: invalid option -- 'V'\n",
            "",
            // Another tool's line.
            "qemu-img version 10.0.2\n",
        ] {
            let state = t.judge(Path::new("/x"), out);
            assert!(matches!(state, ToolState::Unreadable { .. }), "{out:?}");
            assert!(t
                .cannot_tell(&state)
                .unwrap()
                .starts_with("the version of e2fsck could not be read"));
        }
        // A version of one number is read as N.0.0.
        assert_eq!(
            trusted("qemu-io").parse("qemu-io version 9\n"),
            Some([9, 0, 0])
        );
    }

    #[test]
    fn compact_tools_per_format_and_what_to_install_name_the_debian_package_and_the_formula() {
        let names = |f| for_format(f).iter().map(|t| t.tool).collect::<Vec<_>>();
        assert_eq!(names(Format::Raw), ["e2fsck"]);
        assert_eq!(
            names(Format::Qcow2),
            ["e2fsck", "qemu-img", "qemu-io", "qemu-storage-daemon"]
        );
        assert_eq!(
            trusted("qemu-io").install(),
            "install QEMU's tools (Debian/Ubuntu: apt install qemu-utils; macOS: brew install qemu)"
        );
    }
}
