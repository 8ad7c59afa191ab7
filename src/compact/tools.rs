//! The tools that compact a disk, checked like the products: found, their version read
//! (`e2fsck -V`, `qemu-img --version`, `qemu-io --version`) and compared with [`TRUSTED`], the
//! closed table of the oldest version trusted for each.
//!
//! * A raw ext4 image is compacted by `e2fsck` (e2fsprogs); a qcow2 image by `qemu-img check`
//!   and `qemu-io` (QEMU's tools). Nothing else is run (no FUSE export, no `mke2fs`).
//! * A tool too old, or whose version cannot be read, is "cannot tell" for the disks it would
//!   compact, with why. A missing tool leaves the estimate shown; the action then says what to
//!   install (the Debian/Ubuntu package and the Homebrew formula).
//! * Found on `PATH` first, then where Debian (`/usr/sbin`, `/sbin`, not always on a user's
//!   `PATH`) and Homebrew (its keg-only `e2fsprogs`, its prefix) put them.
//!
//! A version is read once per binary (its path, device, inode, size and mtime) in a process.

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
///   6.0); older `qemu-io` and `qemu-img` were never run against their images.
pub(crate) const TRUSTED: [Trusted; 3] = [
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
];

/// The tools compacting a disk of `format` runs.
pub(crate) fn for_format(format: Format) -> Vec<&'static Trusted> {
    let names: &[&str] = match format {
        Format::Raw => &["e2fsck"],
        Format::Qcow2 => &["qemu-img", "qemu-io"],
    };
    TRUSTED.iter().filter(|t| names.contains(&t.tool)).collect()
}

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
    /// What to install for it, as the action says it.
    pub(crate) fn install(&self) -> String {
        let what = if self.apt == "e2fsprogs" {
            "e2fsprogs"
        } else {
            "QEMU's tools"
        };
        format!(
            "install {what} (Debian/Ubuntu: apt install {}; macOS: brew install {})",
            self.apt, self.brew
        )
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

static SEEN: Mutex<Option<HashMap<BinIdent, ToolState>>> = Mutex::new(None);

/// How long reading a version may take.
const VERSION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// What `exe arg` prints (stdout then stderr), within [`VERSION_TIMEOUT`].
fn version_output(exe: &Path, arg: &str) -> Option<String> {
    use std::process::{Command, Stdio};
    let mut child = Command::new(exe)
        .arg(arg)
        .env("LANG", "C")
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    let started = std::time::Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if started.elapsed() < VERSION_TIMEOUT => {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let out = child.wait_with_output().ok()?;
    Some(String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr))
}

/// The state of `t` on this machine now (its version read once per binary).
pub(crate) fn probe(t: &Trusted) -> ToolState {
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
    if let Some(hit) = SEEN
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .and_then(|s| s.get(&key))
    {
        return hit.clone();
    }
    let state = match version_output(&exe, t.version_arg) {
        Some(out) => t.judge(&exe, &out),
        None => ToolState::Unreadable {
            said: "nothing within 5 s".into(),
        },
    };
    SEEN.lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashMap::new)
        .insert(key, state.clone());
    state
}

/// What the tools for `format` say of compacting a disk now: `Err(why)` when it cannot tell
/// (a tool too old or unreadable); `Ok(Some(sentence))` naming the tools missing and what to
/// install; `Ok(None)` when every one is ready.
pub(crate) fn check(format: Format) -> Result<Option<String>, String> {
    let mut missing: Vec<&Trusted> = Vec::new();
    for t in for_format(format) {
        let state = probe(t);
        if let Some(why) = t.cannot_tell(&state) {
            return Err(why);
        }
        if state == ToolState::Missing {
            missing.push(t);
        }
    }
    let Some(first) = missing.first() else {
        return Ok(None);
    };
    let names: Vec<&str> = missing.iter().map(|t| t.tool).collect();
    let verb = if names.len() == 1 { "is" } else { "are" };
    Ok(Some(format!(
        "{} {verb} not installed: {}",
        names.join(" and "),
        first.install()
    )))
}

/// The path of the trusted `tool` to run now; `Err` says why not (missing: what to install;
/// too old or unreadable: why).
pub(crate) fn ready(tool: &str) -> Result<PathBuf, String> {
    let Some(t) = TRUSTED.iter().find(|t| t.tool == tool) else {
        return Err(format!("{tool} is no tool Smolsweep runs"));
    };
    match probe(t) {
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
        assert_eq!(names(Format::Qcow2), ["qemu-img", "qemu-io"]);
        assert_eq!(
            trusted("qemu-io").install(),
            "install QEMU's tools (Debian/Ubuntu: apt install qemu-utils; macOS: brew install qemu)"
        );
    }
}
