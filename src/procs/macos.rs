//! macOS processes through `ps` (and deleted-but-open files through `lsof +L1`).
//!
//! Plain text parsing, compiled and tested everywhere; only [`list_processes`] runs the tools.
//!
//! **Start time.** `lstart` is printed by `strftime("%c")` in the local zone and locale. The
//! command pins both (`env LC_ALL=C TZ=UTC ps …`), so `lstart` is C-locale text in UTC and
//! [`parse_lstart`] converts it without consulting any zone. Text produced with another `TZ`
//! would be off by that zone's offset; comparisons between two readings of the same command
//! (pid + start time identity checks) are unaffected either way.
//!
//! **Argument boundaries.** `ps` joins argv with single spaces, so a path containing a space
//! cannot be told from two arguments. [`parse_ps_output`] rebuilds the boundaries that matter
//! for VMM detection:
//! * argv[0]: when a longer run of leading words ends in a known VMM executable name
//!   (`smolvm-bin`, `smol-vmm`, `firecracker`, `qemu-system-*`, `python*`) and the words after
//!   the first neither start with `-` nor `/`, they are one path (`/Users/John Doe/.smolvm/smolvm-bin`);
//! * `smolvm-bin _boot-vm <rest>`: the rest is the one boot-config path;
//! * `python … -m <module> <rest>`: the rest is the one config path;
//! * `qemu-system-*` and `firecracker`: a word that does not start with `-` and follows another
//!   such word continues it (QEMU and Firecracker take at most one value per option).
//!
//! Other commands are split on spaces. Double spaces inside an argument are lost.

// Called from the macOS glue (`super::list`) only; parsed and tested on every platform.
#![cfg_attr(not(target_os = "macos"), allow(dead_code))]

use std::path::PathBuf;
use std::process::Command;

use super::{OpenFile, RawProcess};

/// The exact `ps` invocation [`parse_ps_output`] expects.
pub(crate) fn ps_command() -> Vec<String> {
    [
        "env",
        "LC_ALL=C",
        "TZ=UTC",
        "ps",
        "-axww",
        "-o",
        "pid=,ppid=,uid=,lstart=,command=",
    ]
    .map(String::from)
    .to_vec()
}

/// The exact `lsof` invocation [`parse_lsof_deleted`] expects: open files with fewer than one
/// link (unlinked), machine-readable fields, no name or port lookups, no warnings.
pub(crate) fn lsof_deleted_command() -> Vec<String> {
    ["lsof", "-nP", "-w", "+L1", "-FpcftDiksn"]
        .map(String::from)
        .to_vec()
}

/// Runs [`ps_command`] and [`lsof_deleted_command`] and merges them (macOS glue).
pub(crate) fn list_processes() -> Vec<RawProcess> {
    let run = |argv: Vec<String>| -> Option<String> {
        let out = Command::new(&argv[0]).args(&argv[1..]).output().ok()?;
        Some(String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let Some(ps) = run(ps_command()) else {
        return Vec::new();
    };
    let mut procs = parse_ps_output(&ps);
    // lsof exits 1 when nothing matched; its output is still valid.
    let deleted = run(lsof_deleted_command())
        .map(|t| parse_lsof_deleted(&t))
        .unwrap_or_default();
    let me = rustix::process::getuid().as_raw();
    for p in &mut procs {
        // Without privileges lsof sees only this user's processes.
        p.fds_readable = me == 0 || p.uid == me;
        p.open_files.extend(
            deleted
                .iter()
                .filter(|(pid, _)| *pid == p.pid)
                .map(|(_, f)| f.clone()),
        );
    }
    procs
}

/// Parses the output of [`ps_command`]: `pid ppid uid <lstart: 5 words> command…` per line.
/// Lines that do not parse are skipped.
pub(crate) fn parse_ps_output(text: &str) -> Vec<RawProcess> {
    text.lines().filter_map(parse_ps_line).collect()
}

fn parse_ps_line(line: &str) -> Option<RawProcess> {
    let mut rest = line;
    let mut word = || {
        let trimmed = rest.trim_start();
        let end = trimmed.find(char::is_whitespace).unwrap_or(trimmed.len());
        let (w, r) = trimmed.split_at(end);
        rest = r;
        (!w.is_empty()).then_some(w)
    };
    let pid = word()?.parse().ok()?;
    let ppid = word()?.parse().ok()?;
    let uid = word()?.parse().ok()?;
    let lstart: Vec<&str> = (0..5).map(|_| word()).collect::<Option<_>>()?;
    let start_time = parse_lstart(&lstart.join(" "))?;
    let command = rest.trim();
    let argv = rebuild_argv(command);
    let comm = argv
        .first()
        .map(|a| a.rsplit('/').next().unwrap_or(a).to_string())
        .unwrap_or_default();
    Some(RawProcess {
        pid,
        ppid,
        uid,
        start_time,
        comm,
        argv,
        from_ps: true,
        ..Default::default()
    })
}

/// `Mon Nov 30 03:10:04 2026` (C locale `%c`, read as UTC) → seconds since the epoch.
pub(crate) fn parse_lstart(text: &str) -> Option<u64> {
    let w: Vec<&str> = text.split_whitespace().collect();
    let [_dow, mon, day, hms, year] = w.as_slice() else {
        return None;
    };
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month = MONTHS.iter().position(|m| m == mon)? as u32 + 1;
    let day: u32 = day.parse().ok()?;
    let year: i64 = year.parse().ok()?;
    let mut t = hms.split(':').map(|x| x.parse::<u64>().ok());
    let (h, m, s) = (t.next()??, t.next()??, t.next()??);
    if t.next().is_some() || !(1..=31).contains(&day) || h > 23 || m > 59 || s > 60 {
        return None;
    }
    let days = days_from_civil(year, month, day);
    u64::try_from(days * 86_400)
        .ok()
        .map(|d| d + h * 3600 + m * 60 + s)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn known_exe(base: &str) -> bool {
    matches!(base, "smolvm-bin" | "smol-vmm" | "firecracker")
        || base.starts_with("qemu-system-")
        || base.to_ascii_lowercase().starts_with("python")
}

fn basename(s: &str) -> &str {
    s.rsplit('/').next().unwrap_or(s)
}

/// Rebuilds argv from a space-joined command (see the module docs for the rules).
pub(crate) fn rebuild_argv(command: &str) -> Vec<String> {
    let words: Vec<&str> = command.split_whitespace().collect();
    if words.is_empty() {
        return Vec::new();
    }
    // argv[0], possibly a path with spaces.
    let mut n0 = 1;
    if !known_exe(basename(words[0])) && words[0].starts_with('/') {
        for k in 2..=words.len().min(16) {
            let w = words[k - 1];
            if w.starts_with('-') || w.starts_with('/') {
                break;
            }
            if known_exe(basename(w)) {
                n0 = k;
                break;
            }
        }
    }
    let argv0 = words[..n0].join(" ");
    let base = basename(&argv0).to_string();
    let rest = &words[n0..];
    let mut argv = vec![argv0];

    if matches!(base.as_str(), "smolvm-bin" | "smol-vmm") && rest.first() == Some(&"_boot-vm") {
        argv.push("_boot-vm".into());
        if rest.len() > 1 {
            argv.push(rest[1..].join(" "));
        }
    } else if base.to_ascii_lowercase().starts_with("python") {
        match rest.iter().position(|w| *w == "-m") {
            Some(m) if m + 1 < rest.len() => {
                argv.extend(rest[..=m + 1].iter().map(|w| w.to_string()));
                if rest.len() > m + 2 {
                    argv.push(rest[m + 2..].join(" "));
                }
            }
            _ => argv.extend(rest.iter().map(|w| w.to_string())),
        }
    } else if base.starts_with("qemu-system-") || base == "firecracker" {
        let mut prev_is_value = false;
        for w in rest {
            let is_option = w.starts_with('-');
            if let (false, true, Some(last)) = (is_option, prev_is_value, argv.last_mut()) {
                last.push(' ');
                last.push_str(w);
            } else {
                argv.push(w.to_string());
            }
            prev_is_value = !is_option;
        }
    } else {
        argv.extend(rest.iter().map(|w| w.to_string()));
    }
    argv
}

/// Parses [`lsof_deleted_command`] output (`-F` fields, one per line: `p` pid, `c` command,
/// `f` fd, `t` type, `D` device, `i` inode, `k` link count, `s` size, `n` name) into the
/// unlinked regular files each process holds.
///
/// `allocated` is the **size** lsof reports (`st_size`; lsof has no block count), so on macOS
/// held bytes are apparent bytes, an upper bound for sparse disks.
pub(crate) fn parse_lsof_deleted(text: &str) -> Vec<(u32, OpenFile)> {
    #[derive(Default)]
    struct F {
        kind: Option<String>,
        dev: u64,
        ino: u64,
        nlink: Option<u64>,
        size: u64,
        name: Option<String>,
    }
    let mut out = Vec::new();
    let mut pid: Option<u32> = None;
    let mut file: Option<F> = None;
    let flush = |pid: Option<u32>, file: Option<F>, out: &mut Vec<(u32, OpenFile)>| {
        let (Some(pid), Some(f)) = (pid, file) else {
            return;
        };
        let regular = !matches!(f.kind.as_deref(), Some(k) if k != "REG");
        if let (true, Some(0) | None, Some(name)) = (regular, f.nlink, f.name) {
            out.push((
                pid,
                OpenFile {
                    path: PathBuf::from(name),
                    deleted: true,
                    dev: f.dev,
                    ino: f.ino,
                    allocated: f.size,
                },
            ));
        }
    };
    for line in text.lines() {
        let mut chars = line.chars();
        let Some(tag) = chars.next() else { continue };
        let value = chars.as_str();
        match tag {
            'p' => {
                flush(pid, file.take(), &mut out);
                pid = value.parse().ok();
            }
            'f' => {
                flush(pid, file.take(), &mut out);
                file = Some(F::default());
            }
            _ => {
                let Some(f) = file.as_mut() else { continue };
                match tag {
                    't' => f.kind = Some(value.to_string()),
                    'D' => {
                        f.dev = u64::from_str_radix(value.trim_start_matches("0x"), 16).unwrap_or(0)
                    }
                    'i' => f.ino = value.parse().unwrap_or(0),
                    'k' => f.nlink = value.parse().ok(),
                    's' => f.size = value.parse().unwrap_or(0),
                    'n' => f.name = Some(value.to_string()),
                    _ => {}
                }
            }
        }
    }
    flush(pid, file, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lstart_is_utc_epoch() {
        assert_eq!(parse_lstart("Thu Jan  1 00:00:00 1970"), Some(0));
        // 2026-11-30T03:10:04Z
        assert_eq!(
            parse_lstart("Mon Nov 30 03:10:04 2026"),
            Some(1_796_008_204)
        );
        assert_eq!(
            parse_lstart("Tue Feb 29 12:00:00 2028"),
            Some(1_835_438_400)
        );
        assert_eq!(parse_lstart("Mon Foo 30 03:10:04 2026"), None);
        assert_eq!(parse_lstart("Mon Nov 30 25:10:04 2026"), None);
    }

    #[test]
    fn argv0_with_spaces_is_rejoined() {
        let argv = rebuild_argv(
            "/Users/John Doe/.smolvm/smolvm-bin _boot-vm /Users/John Doe/Library/Caches/smolvm/vms/0123456789abcdef/boot-config.json",
        );
        assert_eq!(
            argv,
            vec![
                "/Users/John Doe/.smolvm/smolvm-bin",
                "_boot-vm",
                "/Users/John Doe/Library/Caches/smolvm/vms/0123456789abcdef/boot-config.json",
            ]
        );
    }

    #[test]
    fn shell_mentioning_smolvm_bin_is_not_rejoined() {
        let argv = rebuild_argv("/bin/bash -c echo /x/smolvm-bin _boot-vm /y/boot-config.json");
        assert_eq!(argv[0], "/bin/bash");
        assert_eq!(argv.len(), 6);
    }

    #[test]
    fn qemu_values_with_spaces() {
        let argv = rebuild_argv(
            "qemu-system-aarch64 -nographic -drive file=/Users/a b/disks/x.qcow2,if=none -append console=ttyS0 reboot=k",
        );
        assert_eq!(
            argv,
            vec![
                "qemu-system-aarch64",
                "-nographic",
                "-drive",
                "file=/Users/a b/disks/x.qcow2,if=none",
                "-append",
                "console=ttyS0 reboot=k",
            ]
        );
    }

    #[test]
    fn lsof_fields() {
        let text = "p501\ncsmolvm-bin\nf12\ntREG\nD0x1000012\ni4242\nk0\ns1073741824\nn/Users/u/Library/Caches/smolvm/vms/ab/storage.raw\nf13\ntREG\nk0\ns5\nn/tmp/x\np777\ncbash\nf3\ntDIR\nk0\nn/gone\n";
        let got = parse_lsof_deleted(text);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].0, 501);
        assert_eq!(
            got[0].1,
            OpenFile {
                path: "/Users/u/Library/Caches/smolvm/vms/ab/storage.raw".into(),
                deleted: true,
                dev: 0x1000012,
                ino: 4242,
                allocated: 1 << 30,
            }
        );
        assert_eq!(got[1].1.path, PathBuf::from("/tmp/x"));
    }
}
