//! Mounts inside what is about to be removed.
//!
//! macOS: smolvm attaches APFS sparse images at `…/smolvm-pack/<crc>/layers-cs` and
//! `…/vms/<hash>/pack/layers-cs`; `rm -rf` on a live mount point fails with `Resource busy`
//! and the uninstaller forgets the per-machine ones. Each such mount is detached with
//! `hdiutil detach <mp>`, retried with `-force`, before its parent is removed; a detach that
//! still fails blocks that removal. Any other mount point inside is never detached or crossed.
//!
//! Linux: a mount point under a root is reported and never deleted through.
//!
//! Parsing (`mount`, `/proc/self/mountinfo`, `hdiutil info`) and command building are plain code,
//! tested on every platform.

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::exec::machines::{run_captured, RunError};
#[cfg(test)]
use crate::model::Platform;

/// One mounted file system.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MountEntry {
    /// The device or image (`/dev/disk5s1`).
    pub device: String,
    /// Where it is mounted.
    pub mountpoint: PathBuf,
    /// The file system type (`apfs`, `ext4`).
    pub fstype: String,
}

/// Parse mount tables: macOS `mount` output
/// (`/dev/disk4s1 on /Users/u/… (apfs, local, nobrowse)`), Linux `mount` output
/// (`/dev/sda1 on / type ext4 (rw)`) and `/proc/self/mountinfo` lines, in any mix.
pub fn parse_mount_output(text: &str) -> Vec<MountEntry> {
    text.lines()
        .filter_map(|l| parse_mountinfo_line(l).or_else(|| parse_mount_line(l)))
        .collect()
}

/// Parse `/proc/self/mountinfo` only (Linux glue; parsed and tested everywhere).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) fn parse_mountinfo(text: &str) -> Vec<MountEntry> {
    text.lines().filter_map(parse_mountinfo_line).collect()
}

/// Undo mountinfo's octal escapes (`\040` space, `\011` tab, `\012` newline, `\134` backslash).
pub(crate) fn unescape_octal(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = (b[i + 1] - b'0') as u32 * 64
                + (b[i + 2] - b'0') as u32 * 8
                + (b[i + 3] - b'0') as u32;
            if v <= 255 {
                out.push(v as u8);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn parse_mountinfo_line(line: &str) -> Option<MountEntry> {
    // id parent maj:min root mountpoint options [optional...] - fstype source superopts
    let fields: Vec<&str> = line.split(' ').collect();
    if fields.len() < 10 || fields[0].parse::<u64>().is_err() || !fields[2].contains(':') {
        return None;
    }
    let sep = fields.iter().position(|f| *f == "-")?;
    if sep < 6 || sep + 2 >= fields.len() {
        return None;
    }
    Some(MountEntry {
        device: unescape_octal(fields[sep + 2]),
        mountpoint: PathBuf::from(unescape_octal(fields[4])),
        fstype: unescape_octal(fields[sep + 1]),
    })
}

fn parse_mount_line(line: &str) -> Option<MountEntry> {
    let line = line.trim_end();
    let (device, rest) = line.split_once(" on ")?;
    // Options are the last parenthesised group.
    let open = rest.rfind(" (")?;
    if !rest.ends_with(')') {
        return None;
    }
    let (mp, opts) = (&rest[..open], &rest[open + 2..rest.len() - 1]);
    // Linux `mount`: `<mp> type <fstype> (<opts>)`.
    let (mp, fstype) = match mp.rsplit_once(" type ") {
        Some((m, t)) if !t.contains(' ') => (m, t.to_string()),
        _ => (mp, opts.split(',').next().unwrap_or("").trim().to_string()),
    };
    if mp.is_empty() {
        return None;
    }
    Some(MountEntry {
        device: device.to_string(),
        mountpoint: PathBuf::from(mp),
        fstype,
    })
}

/// One device line of `hdiutil info`.
#[cfg(test)]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HdiutilDevice {
    pub device: String,
    pub content_hint: String,
    pub mountpoint: Option<PathBuf>,
}

/// One attached image in `hdiutil info`.
#[cfg(test)]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HdiutilImage {
    pub image_path: Option<PathBuf>,
    pub devices: Vec<HdiutilDevice>,
}

/// Parse `hdiutil info` (plain text): images separated by `====…` lines, `key : value` lines,
/// then tab-separated `/dev/diskN<TAB>hint<TAB>[mountpoint]` lines.
#[cfg(test)]
pub fn parse_hdiutil_info(text: &str) -> Vec<HdiutilImage> {
    let mut images = Vec::new();
    let mut cur: Option<HdiutilImage> = None;
    for line in text.lines() {
        if line.starts_with("====") {
            if let Some(img) = cur.take() {
                images.push(img);
            }
            cur = Some(HdiutilImage::default());
            continue;
        }
        let Some(img) = cur.as_mut() else {
            continue; // the framework/driver header
        };
        if line.starts_with("/dev/") {
            let parts: Vec<&str> = line.split('\t').collect();
            let device = parts[0].trim().to_string();
            let hint = parts.get(1).map(|s| s.trim()).unwrap_or("").to_string();
            let mp = parts
                .get(2)
                .map(|s| s.trim_end_matches(['\r', '\n']))
                .map(|s| s.trim_start())
                .filter(|s| !s.trim().is_empty())
                .map(PathBuf::from);
            img.devices.push(HdiutilDevice {
                device,
                content_hint: hint,
                mountpoint: mp,
            });
        } else if let Some((k, v)) = line.split_once(" : ") {
            if k.trim() == "image-path" {
                img.image_path = Some(PathBuf::from(v.trim()));
            }
        }
    }
    if let Some(img) = cur {
        images.push(img);
    }
    images
}

/// Mount points listed by `hdiutil info`, as mount entries (device, mount point, `hdiutil`).
#[cfg(test)]
pub fn hdiutil_mounts(images: &[HdiutilImage]) -> Vec<MountEntry> {
    images
        .iter()
        .flat_map(|i| i.devices.iter())
        .filter_map(|d| {
            d.mountpoint.as_ref().map(|mp| MountEntry {
                device: d.device.clone(),
                mountpoint: mp.clone(),
                fstype: "hdiutil".into(),
            })
        })
        .collect()
}

/// Whether `path` is `root` or inside it, component-wise (no string prefix tricks).
fn is_within(path: &Path, root: &Path) -> bool {
    path.starts_with(root)
}

fn name_is(c: Option<Component<'_>>, want: &str) -> bool {
    matches!(c, Some(Component::Normal(n)) if n == want)
}

/// `…/smolvm-pack/<x>/layers-cs` or `…/vms/<x>/pack/layers-cs`.
pub(crate) fn is_layers_cs_mountpoint(mp: &Path) -> bool {
    let c: Vec<Component<'_>> = mp.components().collect();
    let n = c.len();
    if n < 4 || !name_is(c.get(n - 1).copied(), "layers-cs") {
        return false;
    }
    if name_is(c.get(n - 3).copied(), "smolvm-pack") {
        return true;
    }
    n >= 5 && name_is(c.get(n - 2).copied(), "pack") && name_is(c.get(n - 4).copied(), "vms")
}

/// The `layers-cs` mount points under any of `roots` (both shapes), deepest first.
pub(crate) fn layers_cs_mounts_under(entries: &[MountEntry], roots: &[PathBuf]) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = entries
        .iter()
        .map(|e| &e.mountpoint)
        .filter(|mp| is_layers_cs_mountpoint(mp) && roots.iter().any(|r| is_within(mp, r)))
        .cloned()
        .collect();
    sort_deepest_first(&mut v);
    v
}

/// Every mount point at or under `dir`, deepest first.
#[cfg(test)]
pub fn mounts_under(entries: &[MountEntry], dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = entries
        .iter()
        .map(|e| &e.mountpoint)
        .filter(|mp| is_within(mp, dir))
        .cloned()
        .collect();
    sort_deepest_first(&mut v);
    v
}

fn sort_deepest_first(v: &mut Vec<PathBuf>) {
    v.sort_by(|a, b| {
        b.components()
            .count()
            .cmp(&a.components().count())
            .then_with(|| a.cmp(b))
    });
    v.dedup();
}

/// `hdiutil detach <mp>`, or `hdiutil detach -force <mp>`.
pub(crate) fn detach_command(mountpoint: &Path, force: bool) -> Vec<String> {
    let mut v = vec!["hdiutil".to_string(), "detach".to_string()];
    if force {
        v.push("-force".into());
    }
    v.push(mountpoint.to_string_lossy().into_owned());
    v
}

/// Result of running one command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CommandResult {
    /// Exit code; `None` when it was killed or timed out.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl CommandResult {
    pub(crate) fn success(&self) -> bool {
        self.code == Some(0)
    }
}

/// Runs `argv[0]` (looked up on `PATH`) with `argv[1..]`.
pub(crate) trait CommandRunner {
    fn run(&self, argv: &[String]) -> std::io::Result<CommandResult>;
}

/// The real runner: `std::process::Command`, the program looked up on `path` (the process's
/// own `PATH` when `None`), stdin from /dev/null, a timeout, its process group killed on timeout.
#[derive(Debug, Clone)]
pub(crate) struct SystemRunner {
    pub path: Option<OsString>,
    /// Extra environment (the runner otherwise passes only `PATH`, `HOME`, `LANG`, `TMPDIR`).
    pub env: Vec<(OsString, OsString)>,
    pub timeout: Duration,
}

impl Default for SystemRunner {
    fn default() -> Self {
        SystemRunner {
            path: None,
            env: vec![],
            timeout: Duration::from_secs(60),
        }
    }
}

impl SystemRunner {
    fn lookup(&self, program: &str) -> Option<PathBuf> {
        if program.contains('/') {
            return Some(PathBuf::from(program));
        }
        let path = self
            .path
            .clone()
            .or_else(|| std::env::var_os("PATH"))
            .unwrap_or_default();
        std::env::split_paths(&path)
            .map(|d| d.join(program))
            .find(|p| p.is_file())
    }
}

impl CommandRunner for SystemRunner {
    fn run(&self, argv: &[String]) -> std::io::Result<CommandResult> {
        let Some(first) = argv.first() else {
            return Err(std::io::Error::other("empty command"));
        };
        let program = self.lookup(first).ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("{first}: not on PATH"),
            )
        })?;
        let mut env: Vec<(OsString, OsString)> = Vec::new();
        for k in ["HOME", "LANG", "TMPDIR"] {
            if let Some(v) = std::env::var_os(k) {
                env.push((k.into(), v));
            }
        }
        if let Some(p) = self.path.clone().or_else(|| std::env::var_os("PATH")) {
            env.push(("PATH".into(), p));
        }
        env.extend(self.env.iter().cloned());
        let args: Vec<OsString> = argv[1..].iter().map(OsString::from).collect();
        match run_captured(&program, &args, &env, self.timeout) {
            Ok(r) => Ok(CommandResult {
                code: r.code,
                stdout: r.stdout,
                stderr: r.stderr,
            }),
            Err(RunError::TimedOut { stdout, stderr }) => Ok(CommandResult {
                code: None,
                stdout,
                stderr: format!("{stderr}\n(timed out)"),
            }),
            Err(RunError::Missing(e)) | Err(RunError::Io(e)) => Err(e),
        }
    }
}

/// What detaching one mount point did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub(crate) enum DetachOutcome {
    /// Detached; `forced` when the plain detach failed and `-force` succeeded.
    Detached {
        forced: bool,
        /// The plain detach's error when it had to be forced (e.g. `Resource busy`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        first_error: Option<String>,
    },
    /// Still attached: the parent must not be removed.
    Failed { error: String },
}

fn describe(r: &std::io::Result<CommandResult>) -> String {
    match r {
        Ok(c) => {
            let msg = format!("{} {}", c.stderr.trim(), c.stdout.trim());
            let msg = msg.trim();
            match c.code {
                Some(code) => format!("exit {code}: {msg}"),
                None => format!("killed: {msg}"),
            }
        }
        Err(e) => e.to_string(),
    }
}

/// `hdiutil detach <mp>`; on any failure (`Resource busy` included) `hdiutil detach -force <mp>`.
pub(crate) fn detach(mountpoint: &Path, runner: &dyn CommandRunner) -> DetachOutcome {
    let first = runner.run(&detach_command(mountpoint, false));
    if matches!(&first, Ok(r) if r.success()) {
        return DetachOutcome::Detached {
            forced: false,
            first_error: None,
        };
    }
    let first_error = describe(&first);
    let second = runner.run(&detach_command(mountpoint, true));
    if matches!(&second, Ok(r) if r.success()) {
        return DetachOutcome::Detached {
            forced: true,
            first_error: Some(first_error),
        };
    }
    DetachOutcome::Failed {
        error: format!("{first_error}; with -force: {}", describe(&second)),
    }
}

/// Why a directory may not be removed yet.
#[cfg(test)]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MountBlock {
    pub mountpoint: PathBuf,
    pub reason: String,
}

/// Whether a directory is clear of mounts.
#[cfg(test)]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum MountGate {
    /// Nothing is mounted inside any more (`detached` lists what was detached for it).
    Clear { detached: Vec<PathBuf> },
    /// Something is still mounted inside: do not remove the directory.
    Blocked {
        detached: Vec<PathBuf>,
        blocks: Vec<MountBlock>,
    },
}

#[cfg(test)]
impl MountGate {
    #[cfg(test)]
    pub fn is_clear(&self) -> bool {
        matches!(self, MountGate::Clear { .. })
    }
}

/// Make `dir` safe to remove with respect to mounts: on macOS detach every `layers-cs` mount
/// inside it (deepest first); any other mount, a failed detach, or any mount at all on Linux
/// blocks the removal.
#[cfg(test)]
pub fn clear_mounts_inside(
    dir: &Path,
    entries: &[MountEntry],
    platform: Platform,
    runner: &dyn CommandRunner,
) -> MountGate {
    let mut detached = Vec::new();
    let mut blocks = Vec::new();
    for mp in mounts_under(entries, dir) {
        if platform == Platform::Linux {
            blocks.push(MountBlock {
                reason:
                    "a file system is mounted here; Smolsweep never deletes through a mount point"
                        .into(),
                mountpoint: mp,
            });
            continue;
        }
        if !is_layers_cs_mountpoint(&mp) {
            blocks.push(MountBlock {
                reason: "a file system that is not a smolvm layers volume is mounted here".into(),
                mountpoint: mp,
            });
            continue;
        }
        match detach(&mp, runner) {
            DetachOutcome::Detached { .. } => detached.push(mp),
            DetachOutcome::Failed { error } => blocks.push(MountBlock {
                reason: format!("hdiutil could not detach it: {error}"),
                mountpoint: mp,
            }),
        }
    }
    if blocks.is_empty() {
        MountGate::Clear { detached }
    } else {
        MountGate::Blocked { detached, blocks }
    }
}

/// [`clear_mounts_inside`], then `remove(dir)` only when the gate is clear.
#[cfg(test)]
pub fn detach_then<R>(
    dir: &Path,
    entries: &[MountEntry],
    platform: Platform,
    runner: &dyn CommandRunner,
    remove: impl FnOnce(&Path) -> R,
) -> (MountGate, Option<R>) {
    let gate = clear_mounts_inside(dir, entries, platform, runner);
    if gate.is_clear() {
        let r = remove(dir);
        (gate, Some(r))
    } else {
        (gate, None)
    }
}

/// The mount table now: `/proc/self/mountinfo` on Linux, `mount` output on macOS.
pub(crate) fn current_mounts() -> std::io::Result<Vec<MountEntry>> {
    #[cfg(target_os = "linux")]
    {
        Ok(parse_mountinfo(&std::fs::read_to_string(
            "/proc/self/mountinfo",
        )?))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let r = SystemRunner {
            path: Some("/sbin:/usr/sbin:/bin:/usr/bin".into()),
            ..SystemRunner::default()
        }
        .run(&["mount".to_string()])?;
        if !r.success() {
            return Err(std::io::Error::other(format!("mount: {}", r.stderr.trim())));
        }
        Ok(parse_mount_output(&r.stdout))
    }
}
