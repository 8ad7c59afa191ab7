//! A real QEMU VM, not a stand-in: a Celesto 0.1.10 SDK sandbox booted on QEMU with a Debian
//! kernel and a busybox initramfs (celesto-smolvm.md §12.6), orphaned the way the reference
//! documents (the SDK process dies without `delete()`; its QEMU, in its own session, runs on,
//! and no inventory row ever names it), then found, skipped, reaped and pruned by the
//! `smolsweep` binary. And Celesto's CLI-persisted recipe (§12.6), started: a sandbox with a
//! row in `celesto.db` whose real QEMU runs, stopped and deleted by `smolsweep stop|delete
//! celesto:ID` through Celesto's own CLI — the VM really ends, its record (and for delete its
//! disk and log) goes, and nothing else in the HOME changes — or, kept by a rule, not deleted.
//!
//! Needs `scripts/setup/20-real-tools.sh` (`SMOLSWEEP_CELESTO_BIN`) and
//! `scripts/setup/30-qemu-vm.sh` (`SMOLSWEEP_QEMU_KERNEL`, `SMOLSWEEP_QEMU_INITRD`,
//! `SMOLSWEEP_QEMU_BIN_DIR`, `SMOLSWEEP_QEMU_ACCEL`); `scripts/test.sh` sources both. Without
//! them the test fails, it is never skipped.
//!
//! Everything lives in one scratch directory (on a private tmpfs the test mounts, so the
//! measured free space is disturbed by nothing else on the machine): HOME, the XDG directories,
//! `CELESTO_DATA_DIR`, `CELESTO_IMAGE_DIR`, `TMPDIR`, the QMP socket directory and Smolsweep's
//! journal. Every child process gets a clean environment pointing there. The only processes
//! signalled are the Celesto helper a test spawns and the QEMU that helper starts, by pid and
//! start time; a guard kills both if the test fails. One test boots one VM, and the tests boot
//! theirs one at a time.

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The SDK sandbox that becomes the orphan. Its id is one no other test uses: while its VM runs,
/// the scan protects a disk of that id in any HOME it cannot tell apart, and the tests share one
/// process now.
const SDK_ID: &str = "rvmsdk1";
/// A CLI-persisted sandbox (a row in `celesto.db`, never started): the inventory exists.
const CLI_ID: &str = "real1";
const MEMORY_MIB: u32 = 128;
/// What the test writes into the SDK disk (through qemu-io) so that its size means something.
const DATA_MIB: u32 = 32;

/// `$var`, or a failure that says how to get it.
fn required(var: &str) -> PathBuf {
    let v = std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| {
            panic!(
                "{var} is not set: this test boots a real QEMU VM. Run `scripts/test.sh`, or \
                 `export SMOLSWEEP_REPO=$PWD; source scripts/setup/20-real-tools.sh; \
                 source scripts/setup/30-qemu-vm.sh` first"
            )
        });
    let p = PathBuf::from(v);
    assert!(p.exists(), "{var}={} does not exist", p.display());
    p
}

/// A tmpfs mounted on the scratch directory for the test's life, unmounted (lazily, after the
/// guard has ended every process) when dropped.
struct PrivateTmpfs(PathBuf);

impl PrivateTmpfs {
    fn mount(at: &Path) -> Option<PrivateTmpfs> {
        let ok = std::process::Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                "size=512m,mode=0700",
                "smolsweep-real-vm",
            ])
            .arg(at)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| PrivateTmpfs(at.to_path_buf()))
    }
}

impl Drop for PrivateTmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

/// The scratch world: one private directory holding HOME and everything else.
struct Scratch {
    root: PathBuf,
    home: PathBuf,
    data_dir: PathBuf,
    image_dir: PathBuf,
    socket_dir: PathBuf,
    logs: PathBuf,
    qemu_bin_dir: PathBuf,
    venv_bin: PathBuf,
    runs: std::cell::Cell<u32>,
}

impl Scratch {
    fn new(root: &Path, qemu_bin_dir: PathBuf, venv_bin: PathBuf) -> Scratch {
        let home = root.join("home");
        for d in [
            home.clone(),
            root.join("tmp"),
            root.join("run"),
            root.join("logs"),
        ] {
            fs::DirBuilder::new().mode(0o700).create(&d).unwrap();
        }
        Scratch {
            root: root.to_path_buf(),
            data_dir: home.join(".local/state/celesto"),
            image_dir: home.join(".celesto/images"),
            socket_dir: root.join("tmp"),
            logs: root.join("logs"),
            home,
            qemu_bin_dir,
            venv_bin,
            runs: std::cell::Cell::new(0),
        }
    }

    /// A clean environment pointing into the scratch directory (celesto-smolvm.md §12.2).
    fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let h = &self.home;
        let mut c = Command::new(program);
        c.env_clear()
            .env(
                "PATH",
                format!(
                    "{}:{}:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
                    self.qemu_bin_dir.display(),
                    self.venv_bin.display()
                ),
            )
            .env("HOME", h)
            .env("LANG", "C.UTF-8")
            .env("TMPDIR", &self.socket_dir)
            .env("XDG_CONFIG_HOME", h.join(".config"))
            .env("XDG_DATA_HOME", h.join(".local/share"))
            .env("XDG_STATE_HOME", h.join(".local/state"))
            .env("XDG_CACHE_HOME", h.join(".cache"))
            .env("XDG_RUNTIME_DIR", self.root.join("run"))
            .env("CELESTO_DATA_DIR", &self.data_dir)
            .env("CELESTO_IMAGE_DIR", &self.image_dir)
            .env("CELESTO_NO_TELEMETRY", "1")
            .env("DO_NOT_TRACK", "1")
            .env("CELESTO_DISABLE_VERSION_CHECK", "1")
            .env("CELESTO_NO_KVM_REEXEC", "1")
            .env("SMOLSWEEP_SOCKET_DIR", &self.socket_dir)
            .env("SMOLSWEEP_DATA_DIR", self.root.join("smolsweep-data"))
            .current_dir(h)
            .stdin(Stdio::null());
        c
    }

    /// Runs `cmd` to completion within `limit` (killed and failed after it); returns the exit
    /// code and stdout. Output goes through files, so no pipe can fill up.
    fn run(&self, what: &str, cmd: &mut Command, limit: Duration) -> (i32, String) {
        let n = self.runs.get() + 1;
        self.runs.set(n);
        let out = self.logs.join(format!("{n:02}-{what}.out"));
        let err = self.logs.join(format!("{n:02}-{what}.err"));
        let started = Instant::now();
        let mut child = cmd
            .stdout(fs::File::create(&out).unwrap())
            .stderr(fs::File::create(&err).unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("{what}: cannot spawn {:?}: {e}", cmd.get_program()));
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if started.elapsed() > limit {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "{what} did not finish within {limit:?}\nstderr: {}",
                    read_lossy(&err)
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        eprintln!("real_vm: {what}: {status} in {:?}", started.elapsed());
        (
            status.code().unwrap_or(-1),
            read_lossy(&out) + &stderr_note(&err),
        )
    }

    /// SHA-256 of a file's content (coreutils `sha256sum`: fast, unlike an unoptimised test build).
    fn sha256(&self, p: &Path) -> String {
        let (code, out) = self.run(
            "sha256sum",
            self.command("sha256sum").arg(p),
            Duration::from_secs(30),
        );
        assert_eq!(code, 0, "sha256sum {}: {out}", p.display());
        out.split_whitespace()
            .next()
            .unwrap_or_default()
            .to_string()
    }

    /// `smolsweep ARGS` (the binary under test), with its JSON output parsed.
    fn smolsweep(&self, what: &str, args: &[&str]) -> (i32, Value, String) {
        self.smolsweep_on(what, args, "/usr/bin:/bin", Duration::from_secs(60))
    }

    /// `smolsweep ARGS` with Celesto's CLI on its `PATH`: stop and delete of a sandbox go through
    /// it, as they do on a person's machine.
    /// Its bound is above the 120 s smolsweep gives a product CLI, so a hung Celesto is
    /// reported by smolsweep itself.
    fn smolsweep_with_celesto(&self, what: &str, args: &[&str]) -> (i32, Value, String) {
        let path = format!("{}:/usr/bin:/bin", self.venv_bin.display());
        self.smolsweep_on(what, args, &path, Duration::from_secs(180))
    }

    fn smolsweep_on(
        &self,
        what: &str,
        args: &[&str],
        path: &str,
        limit: Duration,
    ) -> (i32, Value, String) {
        let mut c = self.command(env!("CARGO_BIN_EXE_smolsweep"));
        c.args(args).env("PATH", path);
        let (code, text) = self.run(what, &mut c, limit);
        let json = text.split("\n--- stderr ---\n").next().unwrap_or("");
        let v = if args.contains(&"--json") {
            serde_json::from_str(json)
                .unwrap_or_else(|e| panic!("{what}: output is not JSON ({e}):\n{text}"))
        } else {
            Value::Null
        };
        (code, v, text)
    }
}

fn read_lossy(p: &Path) -> String {
    String::from_utf8_lossy(&fs::read(p).unwrap_or_default()).into_owned()
}

fn stderr_note(p: &Path) -> String {
    let s = read_lossy(p);
    if s.trim().is_empty() {
        String::new()
    } else {
        format!("\n--- stderr ---\n{s}")
    }
}

/// `/proc/<pid>/stat` field 22 (start time) and the state letter, when the process exists.
fn proc_stat(pid: u32) -> Option<(char, u64)> {
    let s = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = s.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let state = fields.first()?.chars().next()?;
    // Field 22 overall is index 19 after the state (field 3).
    Some((state, fields.get(19)?.parse().ok()?))
}

fn alive(pid: u32, start_time: u64) -> bool {
    matches!(proc_stat(pid), Some((state, st)) if st == start_time && state != 'Z' && state != 'X')
}

/// Waits until `pid` (started at `start_time`) is dead; reaps it when this process is its
/// (sub)reaper. Returns whether death was confirmed within `limit`.
fn wait_dead(pid: u32, start_time: u64, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        let mut status = 0;
        // SAFETY: waitpid on one pid with WNOHANG; ECHILD when it is not our child.
        let r = unsafe { libc::waitpid(pid as libc::pid_t, &mut status, libc::WNOHANG) };
        if r == pid as libc::pid_t {
            return true;
        }
        if !alive(pid, start_time) && r != 0 {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Kills what the test started if it fails half-way: the SDK helper, and the QEMU it launched
/// (by pid, only while the pid still has the start time it had when the helper reported it).
#[derive(Default)]
struct Guard {
    helper: Option<Child>,
    qemu: Option<(u32, u64)>,
    /// When set: a QEMU the helper started before the test learnt its pid (the test failed in
    /// between) is found as this process's child (the helper's orphan, reparented to us, the
    /// subreaper) whose command line names this scratch directory, and killed too.
    scratch: Option<PathBuf>,
}

/// This process's children (orphans of a helper it spawned, reparented to it) whose command
/// line names `scratch`, with their start times.
fn adopted_children_naming(scratch: &Path) -> Vec<(u32, u64)> {
    let me = std::process::id();
    let needle = scratch.as_os_str().as_encoded_bytes();
    let mut out = Vec::new();
    for e in fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // Field 4 (ppid) is the second after the command's closing parenthesis.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        let cmdline = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if ppid == Some(me) && cmdline.windows(needle.len()).any(|w| w == needle) {
            if let Some((_, st)) = proc_stat(pid) {
                out.push((pid, st));
            }
        }
    }
    out
}

impl Drop for Guard {
    fn drop(&mut self) {
        // The helper first: its QEMU is then reparented to this process (a subreaper), which
        // can reap it below.
        if let Some(mut c) = self.helper.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        if let Some((pid, st)) = self.qemu.take() {
            if alive(pid, st) {
                // SAFETY: plain kill(2) of the QEMU this test started, identity just re-checked.
                unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
            }
            if !wait_dead(pid, st, Duration::from_secs(10)) {
                eprintln!("real_vm: QEMU {pid} did not die after SIGKILL");
            }
        }
        if let Some(scratch) = self.scratch.take() {
            for (pid, st) in adopted_children_naming(&scratch) {
                if alive(pid, st) {
                    // SAFETY: kill(2) of a descendant of this test's helper (our child now, and
                    // its command line names this test's scratch directory).
                    unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
                }
                if !wait_dead(pid, st, Duration::from_secs(10)) {
                    eprintln!("real_vm: process {pid} did not die after SIGKILL");
                }
            }
        }
    }
}

/// This process as the subreaper of its orphaned descendants (`PR_SET_CHILD_SUBREAPER`) until
/// dropped. The flag is process-wide and every test file's tests share this process, so it is
/// cleared again when the test ends, failed or not: afterwards other tests' orphans go to init as
/// they would in a binary of their own. (While it is set, an orphan of another test becomes a
/// zombie of this process instead; every test and the reaper count a zombie as dead.)
struct Subreaper;

impl Subreaper {
    fn set() -> Subreaper {
        // SAFETY: prctl with integer arguments only.
        unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
        Subreaper
    }
}

impl Drop for Subreaper {
    fn drop(&mut self) {
        // SAFETY: prctl with integer arguments only.
        unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) };
    }
}

/// The SDK helper's stdout, one JSON event per line, read on a thread so every wait can time out.
fn events(child: &mut Child) -> Receiver<String> {
    let out = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            match line {
                Ok(l) => {
                    if tx.send(l).is_err() {
                        break;
                    }
                }
                Err(_) => break,
            }
        }
    });
    rx
}

fn next_event(rx: &Receiver<String>, want: &str, limit: Duration, stderr: &Path) -> Value {
    let deadline = Instant::now() + limit;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => {
                if let Ok(v) = serde_json::from_str::<Value>(&line) {
                    if v["event"] == want {
                        return v;
                    }
                }
                eprintln!("real_vm: helper: {line}");
            }
            Err(e) => panic!(
                "the Celesto SDK helper sent no '{want}' event ({e:?} after {limit:?})\n\
                 helper stderr:\n{}",
                read_lossy(stderr)
            ),
        }
    }
}

fn finding<'a>(scan: &'a Value, path: &Path) -> &'a Value {
    scan["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| Path::new(f["path"].as_str().unwrap_or("")) == path)
        .unwrap_or_else(|| panic!("no finding for {} in {scan:#}", path.display()))
}

/// The records of `list` (`done`, `skipped`, ...) in a `smolsweep.result/1` envelope that act on
/// `path` (a record is its action's fields, flattened, plus `outcome`).
fn records_for<'a>(result: &'a Value, list: &str, path: &Path) -> Vec<&'a Value> {
    result[list]
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|r| Path::new(r["path"].as_str().unwrap_or("")) == path)
                .collect()
        })
        .unwrap_or_default()
}

/// (dev, ino, size, mtime in ns) as the plan records a file's identity.
fn identity(p: &Path) -> (u64, u64, u64, i128) {
    let m = fs::symlink_metadata(p).unwrap_or_else(|e| panic!("lstat {}: {e}", p.display()));
    (
        m.dev(),
        m.ino(),
        m.size(),
        m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128,
    )
}

fn step(t0: Instant, what: &str) {
    eprintln!("real_vm: [{:>5.1} s] {what}", t0.elapsed().as_secs_f64());
}

/// One real VM at a time in this process: each test boots its own QEMU (under TCG on a small
/// machine a boot takes tens of seconds; two at once would slow both), and the subreaper flag
/// each one sets while it runs is process-wide.
fn one_vm_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ONE.lock().unwrap_or_else(|e| e.into_inner())
}

/// The real tools, from the environment the setup scripts export.
struct Tools {
    celesto: PathBuf,
    python: PathBuf,
    kernel: PathBuf,
    initrd: PathBuf,
    accel: String,
}

/// A scratch world (on a private tmpfs when it can be mounted) with an empty 64 MiB ext4 base
/// image in a cache directory that image prune treats as stale. Fields drop in order: the
/// tmpfs is unmounted before the temp directory goes.
struct World {
    s: Scratch,
    tools: Tools,
    base: PathBuf,
    _private: Option<PrivateTmpfs>,
    _tmp: tempfile::TempDir,
}

impl World {
    fn new(t0: Instant) -> World {
        let celesto = smolsweep_fixtures::real_tools::require_celesto_bin();
        let venv_bin = celesto.parent().unwrap().to_path_buf();
        let python = venv_bin.join("python");
        let kernel = required("SMOLSWEEP_QEMU_KERNEL");
        let initrd = required("SMOLSWEEP_QEMU_INITRD");
        let qemu_bin_dir = required("SMOLSWEEP_QEMU_BIN_DIR");
        let accel = std::env::var("SMOLSWEEP_QEMU_ACCEL").unwrap_or_default();
        assert!(
            accel == "kvm" || accel == "tcg",
            "SMOLSWEEP_QEMU_ACCEL={accel:?}: expected kvm or tcg (set by scripts/setup/30-qemu-vm.sh)"
        );
        assert!(
            qemu_bin_dir.join("qemu-system-x86_64").is_file(),
            "no QEMU shim in {}",
            qemu_bin_dir.display()
        );
        // A tmpfs of its own (this runs as root here), so nothing else on the machine moves the
        // free space a prune measures; /dev/shm (shared with every browser engine) otherwise.
        let tmp = tempfile::Builder::new()
            .prefix("smolsweep-real-vm.")
            .tempdir()
            .unwrap();
        let private = PrivateTmpfs::mount(tmp.path());
        if private.is_none() {
            eprintln!(
                "real_vm: no private tmpfs (not root?); measuring on the temp dir's file system"
            );
        }
        let s = Scratch::new(tmp.path(), qemu_bin_dir, venv_bin);
        step(
            t0,
            &format!("scratch {} (QEMU accelerator {accel})", s.root.display()),
        );
        let base_dir = s.image_dir.join("ubuntu-v0.1.9-amd64-qemu");
        fs::create_dir_all(&base_dir).unwrap();
        let base = base_dir.join("rootfs.ext4");
        fs::File::create(&base).unwrap().set_len(64 << 20).unwrap();
        let (code, out) = s.run(
            "mkfs.ext4",
            s.command("mkfs.ext4").args(["-q", "-F"]).arg(&base),
            Duration::from_secs(60),
        );
        assert_eq!(code, 0, "mkfs.ext4: {out}");
        World {
            s,
            tools: Tools {
                celesto,
                python,
                kernel,
                initrd,
                accel,
            },
            base,
            _private: private,
            _tmp: tmp,
        }
    }
}

#[test]
fn real_qemu_sandbox_orphan_is_found_skipped_reaped_then_pruned() {
    let t0 = Instant::now();
    let _one = one_vm_at_a_time();
    let helper = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/helpers/celesto_sdk_vm.py");
    // QEMU, once the SDK process is gone, is reparented to us: its death can then be confirmed
    // by reaping it, and no zombie is left to whatever init this machine has. Only for this
    // test's life (declared before the guard, so cleared after it has reaped QEMU).
    let _subreaper = Subreaper::set();
    let w = World::new(t0);
    let s = &w.s;
    let (celesto, python, kernel, initrd, accel) = (
        &w.tools.celesto,
        &w.tools.python,
        &w.tools.kernel,
        &w.tools.initrd,
        &w.tools.accel,
    );
    let base = &w.base;
    // Declared after the world, so it is dropped (processes killed) before the tree goes.
    let mut guard = Guard::default();

    // --- a. the real SDK creates the sandbox (no row) and a CLI sandbox (a row) --------------
    let helper_err = s.logs.join("helper.err");
    let mut cmd = s.command(python);
    cmd.arg(&helper)
        .args([SDK_ID, CLI_ID])
        .arg(kernel)
        .arg(initrd)
        .arg(base)
        .arg(&s.socket_dir)
        .arg(MEMORY_MIB.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(fs::File::create(&helper_err).unwrap());
    guard.helper = Some(cmd.spawn().expect("spawn the Celesto SDK helper"));
    let rx = events(guard.helper.as_mut().unwrap());
    let mut helper_in: ChildStdin = guard.helper.as_mut().unwrap().stdin.take().unwrap();
    let created = next_event(&rx, "created", Duration::from_secs(60), &helper_err);
    step(t0, &format!("SDK created: {created}"));
    let disk = s.data_dir.join(format!("disks/{SDK_ID}.qcow2"));
    let cli_disk = s.data_dir.join(format!("disks/{CLI_ID}.qcow2"));
    assert_eq!(Path::new(created["disk"].as_str().unwrap()), disk);
    assert_eq!(created["rootfs_format"], "qcow2");
    assert_eq!(Path::new(created["cli_disk"].as_str().unwrap()), cli_disk);
    assert!(disk.is_file() && cli_disk.is_file());
    assert!(s.data_dir.join("celesto.db").is_file());

    // Upstream's own view: the CLI lists only the row; the SDK sandbox is invisible to it.
    let mut c = s.command(celesto);
    c.args(["sandbox", "list", "--all", "--json"]);
    let (code, out) = s.run("celesto-sandbox-list", &mut c, Duration::from_secs(60));
    assert_eq!(code, 0, "celesto sandbox list: {out}");
    let listed: Value = serde_json::from_str(out.split("\n--- stderr ---\n").next().unwrap())
        .unwrap_or_else(|e| panic!("celesto sandbox list --json: {e}\n{out}"));
    let names: Vec<&str> = listed["data"]["vms"]
        .as_array()
        .map(|a| a.iter().filter_map(|v| v["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(names, vec![CLI_ID], "celesto sandbox list: {listed}");

    // Give the overlay real content, so that its size and the freed space mean something, then
    // make it look older than the scanner's age guard (a disk written in the last two minutes
    // may be a sandbox being created).
    let mut c = s.command("qemu-io");
    c.args(["-f", "qcow2", "-c"])
        .arg(format!("write -P 0x5a 0 {DATA_MIB}M"))
        .arg(&disk);
    let (code, out) = s.run("qemu-io-write", &mut c, Duration::from_secs(60));
    assert_eq!(code, 0, "qemu-io: {out}");
    smolsweep_fixtures::age_tree(&disk, smolsweep_fixtures::OLD).unwrap();

    // --- c (before the VM runs). The disk is an orphan, and the plan deletes it. --------------
    let (code, scan, out) = s.smolsweep("scan-before-start", &["scan", "--json"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(scan["schema"], "smolsweep.scan/1");
    let f = finding(&scan, &disk);
    assert_eq!(f["verdict"], "reclaimable", "before the VM starts: {f:#}");
    assert_eq!(f["kind"], "celesto.orphan_disk", "{f:#}");
    let f = finding(&scan, &cli_disk);
    assert_eq!(f["verdict"], "protected", "the CLI sandbox's disk: {f:#}");
    let plan_file = s.root.join("plan.json");
    let plan_arg = plan_file.to_str().unwrap();
    let (code, _, out) = s.smolsweep("plan", &["plan", "--out", plan_arg]);
    assert_eq!(code, 0, "{out}");
    let plan: Value = serde_json::from_str(&fs::read_to_string(&plan_file).unwrap()).unwrap();
    let planned = plan["actions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["action"] == "delete_path" && Path::new(a["path"].as_str().unwrap()) == disk)
        .unwrap_or_else(|| panic!("the plan does not delete {}: {plan:#}", disk.display()))
        .clone();
    assert!(
        !plan.to_string().contains(cli_disk.to_str().unwrap()),
        "the plan touches the CLI sandbox's disk: {plan:#}"
    );
    let at_plan = identity(&disk);
    step(t0, "plan written; it deletes the disk");

    // --- a (continued). Start QEMU, then kill the SDK process: QEMU survives, an orphan. -------
    writeln!(helper_in, "start").unwrap();
    helper_in.flush().unwrap();
    let started = next_event(&rx, "started", Duration::from_secs(60), &helper_err);
    let pid = started["pid"].as_u64().expect("a QEMU pid") as u32;
    let (_, start_time) = proc_stat(pid).expect("QEMU is running");
    guard.qemu = Some((pid, start_time));
    let cmdline = fs::read(format!("/proc/{pid}/cmdline")).unwrap();
    let argv: Vec<String> = cmdline
        .split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    assert!(
        argv[0].ends_with("/qemu-system-x86_64")
            && argv
                .iter()
                .any(|a| a.starts_with(&format!("file={},", disk.display()))),
        "pid {pid} is not QEMU on the disk: {argv:?}"
    );
    step(t0, &format!("QEMU {pid} started"));
    let mut helper_child = guard.helper.take().unwrap();
    let _ = helper_child.kill(); // SIGKILL: no delete(), no atexit, nothing.
    let _ = helper_child.wait();
    drop(helper_in);
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        alive(pid, start_time),
        "QEMU died with the SDK process; it should outlive it (own session)"
    );
    // The guest really boots: its /init says so on the console, which QEMU writes to the log.
    let log = s.data_dir.join(format!("{SDK_ID}.log"));
    let deadline = Instant::now() + Duration::from_secs(45);
    while !read_lossy(&log).contains("smolsweep-guest-up") {
        assert!(
            alive(pid, start_time),
            "QEMU exited before the guest came up:\n{}",
            read_lossy(&log)
        );
        assert!(
            Instant::now() < deadline,
            "the guest did not reach /init within 45 s ({accel}):\n{}",
            read_lossy(&log)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    step(t0, "SDK process killed; the orphaned guest is up");

    // --- b. The scan finds the orphan, this HOME's, and protects the disk it holds. ----------
    let (code, scan, out) = s.smolsweep("scan-orphan", &["scan", "--json"]);
    assert_eq!(code, 0, "{out}");
    let p = scan["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pid"] == pid)
        .unwrap_or_else(|| panic!("QEMU {pid} is not among the processes: {scan:#}"));
    assert_eq!(p["scope"], "this_home", "{p:#}");
    assert_eq!(p["orphan"], true, "{p:#}");
    assert_eq!(p["shape"], "celesto.qemu", "{p:#}");
    assert_eq!(p["owner"], SDK_ID, "{p:#}");
    assert_eq!(p["start_time"], start_time, "{p:#}");
    let f = finding(&scan, &disk);
    assert_eq!(f["verdict"], "protected", "while QEMU holds it: {f:#}");
    assert_eq!(f["kind"], "celesto.in_use_disk", "{f:#}");
    assert!(
        f["reason"].as_str().unwrap().contains(&pid.to_string()),
        "the reason names the process: {f:#}"
    );

    // --- c. The plan made before the VM started is applied now: the disk is in use, skipped. --
    // Precondition: the disk is still exactly what the plan recorded (QEMU has not written to
    // it), so only the re-judgment at the moment of action can tell that it must stay.
    assert_eq!(
        identity(&disk),
        at_plan,
        "precondition: QEMU changed the disk's identity since the plan"
    );
    let id = &planned["identity"];
    assert_eq!(
        (id["dev"].as_u64(), id["ino"].as_u64(), id["size"].as_u64()),
        (Some(at_plan.0), Some(at_plan.1), Some(at_plan.2)),
        "the plan's identity of the disk: {planned:#}"
    );
    let content = s.sha256(&disk);
    let (code, result, out) = s.smolsweep("apply", &["apply", plan_arg, "--yes", "--json"]);
    assert_ne!(code, 2, "{out}");
    assert!(
        disk.is_file(),
        "apply deleted the disk that QEMU {pid} is using (the plan was made before it started; \
         it must be re-judged at the moment of action and skipped): {result:#}"
    );
    assert_eq!(s.sha256(&disk), content, "the disk's content changed");
    assert!(
        records_for(&result, "done", &disk).is_empty()
            && records_for(&result, "skipped", &disk).len() == 1,
        "the disk's delete must be reported as skipped: {result:#}"
    );
    assert!(alive(pid, start_time), "apply must not touch the VM");
    step(t0, "apply skipped the in-use disk");

    // --- d. Reap ends QEMU; death is confirmed. -------------------------------------------------
    let pid_arg = pid.to_string();
    let (code, result, out) = s.smolsweep("reap", &["reap", &pid_arg, "--yes", "--json"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        result["done"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["action"] == "signal_process" && r["pid"] == pid),
        "{result:#}"
    );
    assert!(
        wait_dead(pid, start_time, Duration::from_secs(15)),
        "QEMU {pid} is still alive after reap"
    );
    guard.qemu = None;
    assert!(
        fs::metadata(format!("/proc/{pid}")).is_err()
            || proc_stat(pid).is_some_and(|(_, st)| st != start_time),
        "QEMU {pid} is gone from /proc"
    );
    step(t0, "reap ended QEMU");

    // --- e. Prune deletes the disk, and the freed space is the disk's. -------------------------
    let allocated = fs::metadata(&disk).unwrap().blocks() * 512;
    assert!(allocated >= u64::from(DATA_MIB) << 20, "{allocated}");
    let (code, result, out) = s.smolsweep("prune", &["prune", "--yes", "--json"]);
    assert_eq!(code, 0, "{out}");
    assert!(!disk.exists(), "prune left the disk: {result:#}");
    assert_eq!(records_for(&result, "done", &disk).len(), 1, "{result:#}");
    let freed = result["freed_bytes"].as_u64().expect("freed_bytes");
    let diff = freed.abs_diff(allocated) as f64 / allocated as f64;
    assert!(
        diff <= 0.05,
        "freed_bytes {freed} vs the disk's allocated {allocated} ({:.1} % apart): {result:#}",
        diff * 100.0
    );
    assert!(cli_disk.is_file(), "the CLI sandbox's disk stays");
    step(
        t0,
        &format!("prune freed {freed} bytes for a disk of {allocated} allocated"),
    );
}

// --- Stop and Delete of a real CLI sandbox ----------------------------------------------------

/// Celesto's "CLI-persisted sandbox" recipe (celesto-smolvm.md §12.6), started: every id gets a
/// row in `celesto.db` and a qcow2 overlay over BASE; the first is started (QEMU in its own
/// session, which outlives this process, the row `running` with its pid), the others stay
/// `created`. Prints one JSON line, then exits the way a CLI command does.
///
/// Usage: python -c CLI_SANDBOXES SOCKET_DIR KERNEL INITRD BASE MEMORY_MIB RUN_ID [IDLE_ID...]
const CLI_SANDBOXES: &str = r#"
import json, sys
from pathlib import Path
from celesto.cli.service import CLIService
from celesto.types import VMConfig

socket_dir, kernel, initrd, base, memory, run_id, *idle = sys.argv[1:]
mgr = CLIService().manager(socket_dir=Path(socket_dir), backend="qemu")
disks = {}
for vm_id in [run_id, *idle]:
    info = mgr.create(VMConfig(
        vm_id=vm_id, backend="qemu", kernel_path=Path(kernel), initrd_path=Path(initrd),
        rootfs_path=Path(base), rootfs_format="raw-ext4",
        boot_args="console=ttyS0 reboot=k panic=1 rdinit=/init",
        memory=int(memory), vcpu_count=1,
    ))
    disks[vm_id] = str(info.config.rootfs_path)
info = mgr.start(run_id)
print(json.dumps({"event": "started", "pid": info.pid, "disks": disks}), flush=True)
"#;

/// A CLI sandbox whose real QEMU runs, with its guest up.
struct Running {
    pid: u32,
    start_time: u64,
    disk: PathBuf,
    log: PathBuf,
}

/// Boots `id` as a CLI sandbox (see [`CLI_SANDBOXES`]) beside the never-started `idle`
/// sandboxes, and waits (bounded) for its guest's /init to report on the console. The QEMU is
/// in `guard` as soon as its pid is known. Needs the subreaper flag: the helper exits, and its
/// QEMU becomes this process's to reap.
fn boot_cli_sandbox(w: &World, guard: &mut Guard, id: &str, idle: &[&str], t0: Instant) -> Running {
    let s = &w.s;
    let helper_err = s.logs.join(format!("cli-{id}.err"));
    let mut cmd = s.command(&w.tools.python);
    cmd.arg("-c")
        .arg(CLI_SANDBOXES)
        .arg(&s.socket_dir)
        .arg(&w.tools.kernel)
        .arg(&w.tools.initrd)
        .arg(&w.base)
        .arg(MEMORY_MIB.to_string())
        .arg(id)
        .args(idle)
        .stdout(Stdio::piped())
        .stderr(fs::File::create(&helper_err).unwrap());
    guard.scratch = Some(s.root.clone());
    guard.helper = Some(cmd.spawn().expect("spawn the Celesto CLI-sandbox helper"));
    let rx = events(guard.helper.as_mut().unwrap());
    let started = next_event(&rx, "started", Duration::from_secs(120), &helper_err);
    let pid = started["pid"].as_u64().expect("a QEMU pid") as u32;
    let (_, start_time) = proc_stat(pid).expect("QEMU is running");
    guard.qemu = Some((pid, start_time));
    // The helper ends on its own, as `celesto sandbox start` would; its QEMU runs on.
    let mut helper = guard.helper.take().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(st) = helper.try_wait().unwrap() {
            break st;
        }
        if Instant::now() > deadline {
            let _ = helper.kill();
            let _ = helper.wait();
            panic!(
                "the CLI-sandbox helper did not exit within 60 s:\n{}",
                read_lossy(&helper_err)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(
        status.success(),
        "helper: {status}\n{}",
        read_lossy(&helper_err)
    );
    let disk = s.data_dir.join(format!("disks/{id}.qcow2"));
    assert_eq!(Path::new(started["disks"][id].as_str().unwrap()), disk);
    let cmdline = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    assert!(
        String::from_utf8_lossy(&cmdline).contains(&format!("file={},", disk.display())),
        "pid {pid} is not QEMU on {}: {:?}",
        disk.display(),
        String::from_utf8_lossy(&cmdline)
    );
    let log = s.data_dir.join(format!("{id}.log"));
    let deadline = Instant::now() + Duration::from_secs(90);
    while !read_lossy(&log).contains("smolsweep-guest-up") {
        assert!(
            alive(pid, start_time),
            "QEMU exited before the guest came up:\n{}",
            read_lossy(&log)
        );
        assert!(
            Instant::now() < deadline,
            "the guest did not reach /init within 90 s ({}):\n{}",
            w.tools.accel,
            read_lossy(&log)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    step(t0, &format!("CLI sandbox {id}: QEMU {pid} up"));
    Running {
        pid,
        start_time,
        disk,
        log,
    }
}

/// One entry of a tree, as "byte-identical" compares it.
#[derive(PartialEq, Eq)]
enum Entry {
    Dir(u32),
    File(u32, Vec<u8>),
    Link(PathBuf),
}

/// Every entry under `root` (relative path → type, mode and content).
fn tree(root: &Path) -> std::collections::BTreeMap<PathBuf, Entry> {
    let mut out = std::collections::BTreeMap::new();
    for e in walkdir::WalkDir::new(root).min_depth(1) {
        let e = e.unwrap_or_else(|e| panic!("walking {}: {e}", root.display()));
        let m = e.metadata().unwrap();
        let rel = e.path().strip_prefix(root).unwrap().to_path_buf();
        let mode = m.mode() & 0o7777;
        let entry = if m.file_type().is_symlink() {
            Entry::Link(fs::read_link(e.path()).unwrap())
        } else if m.is_dir() {
            Entry::Dir(mode)
        } else {
            Entry::File(mode, fs::read(e.path()).unwrap_or_default())
        };
        out.insert(rel, entry);
    }
    out
}

/// The relative paths that were added, removed or changed between two [`tree`]s.
fn changed(
    before: &std::collections::BTreeMap<PathBuf, Entry>,
    after: &std::collections::BTreeMap<PathBuf, Entry>,
) -> Vec<String> {
    let mut out = Vec::new();
    for (p, e) in before {
        match after.get(p) {
            None => out.push(format!("removed {}", p.display())),
            Some(a) if a != e => out.push(format!("changed {}", p.display())),
            Some(_) => {}
        }
    }
    for p in after.keys().filter(|p| !before.contains_key(*p)) {
        out.push(format!("added {}", p.display()));
    }
    out
}

/// Every row of every table of a Celesto inventory, read-only, as `table: (col=value, ...)`
/// lines, sorted.
fn inventory(db: &Path) -> Vec<String> {
    use rusqlite::{types::ValueRef, Connection, OpenFlags};
    let conn = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .unwrap_or_else(|e| panic!("{}: {e}", db.display()));
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut out = Vec::new();
    for t in tables {
        let mut st = conn.prepare(&format!("SELECT * FROM \"{t}\"")).unwrap();
        let cols: Vec<String> = st.column_names().iter().map(|c| c.to_string()).collect();
        let mut rows = st.query([]).unwrap();
        while let Some(r) = rows.next().unwrap() {
            let fields: Vec<String> = (0..cols.len())
                .map(|i| {
                    let v = match r.get_ref(i).unwrap() {
                        ValueRef::Null => "NULL".to_string(),
                        ValueRef::Integer(n) => n.to_string(),
                        ValueRef::Real(x) => x.to_string(),
                        ValueRef::Text(b) => format!("{:?}", String::from_utf8_lossy(b)),
                        ValueRef::Blob(b) => format!("blob:{}", hex_of(b)),
                    };
                    format!("{}={v}", cols[i])
                })
                .collect();
            out.push(format!("{t}: ({})", fields.join(", ")));
        }
    }
    out.sort();
    out
}

fn hex_of(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The inventory's rows that name none of `ids` (whole quoted values only, so `a1` does not
/// match `a10`): what a stop or delete of those ids must leave exactly as it was.
fn rows_not_of(rows: &[String], ids: &[&str]) -> Vec<String> {
    rows.iter()
        .filter(|r| !ids.iter().any(|id| r.contains(&format!("{id:?}"))))
        .cloned()
        .collect()
}

/// Celesto's own view through its CLI (`sandbox list --all --json`): sandbox name → status.
/// Run only after the checks of what changed: `list` may write the inventory (§6.2).
fn celesto_list(w: &World) -> std::collections::BTreeMap<String, String> {
    let s = &w.s;
    let mut c = s.command(&w.tools.celesto);
    c.args(["sandbox", "list", "--all", "--json"]);
    let (code, out) = s.run("celesto-sandbox-list", &mut c, Duration::from_secs(60));
    assert_eq!(code, 0, "celesto sandbox list: {out}");
    let listed: Value = serde_json::from_str(out.split("\n--- stderr ---\n").next().unwrap())
        .unwrap_or_else(|e| panic!("celesto sandbox list --json: {e}\n{out}"));
    listed["data"]["vms"]
        .as_array()
        .unwrap_or_else(|| panic!("celesto sandbox list: {listed}"))
        .iter()
        .map(|v| {
            (
                v["name"].as_str().unwrap_or("").to_string(),
                v["status"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// Waits for the recorded QEMU to be gone (reaping it: it is this process's), then checks
/// `/proc` by pid and start time.
fn assert_vm_gone(guard: &mut Guard, vm: &Running, after: &str) {
    assert!(
        wait_dead(vm.pid, vm.start_time, Duration::from_secs(30)),
        "QEMU {} still runs after {after}",
        vm.pid
    );
    guard.qemu = None;
    assert!(
        proc_stat(vm.pid).is_none_or(|(_, st)| st != vm.start_time),
        "QEMU {} (start time {}) is still in /proc after {after}",
        vm.pid,
        vm.start_time
    );
}

#[test]
fn real_qemu_sandbox_is_stopped_through_celestos_cli_and_nothing_else_changes() {
    const ID: &str = "rvmstop1";
    const OTHER: &str = "rvmstop2";
    let t0 = Instant::now();
    let _one = one_vm_at_a_time();
    let _subreaper = Subreaper::set();
    let w = World::new(t0);
    let s = &w.s;
    let mut guard = Guard::default();
    let vm = boot_cli_sandbox(&w, &mut guard, ID, &[OTHER], t0);
    let other_disk = s.data_dir.join(format!("disks/{OTHER}.qcow2"));
    let db = s.data_dir.join("celesto.db");

    let (code, scan, out) = s.smolsweep_with_celesto("scan", &["scan", "--json"]);
    assert_eq!(code, 0, "{out}");
    let m = scan["machines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["product"] == "celesto" && m["name"] == ID)
        .unwrap_or_else(|| panic!("no sandbox {ID} in the scan: {scan:#}"));
    assert_eq!(m["alive"], true, "{m:#}");
    assert_eq!(m["pid"], vm.pid, "{m:#}");

    let home_before = tree(&s.home);
    let rows_before = inventory(&db);
    let other_disk_before = fs::read(&other_disk).unwrap();
    let (code, result, out) =
        s.smolsweep_with_celesto("stop", &["stop", &format!("celesto:{ID}"), "-y", "--json"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        result["done"].as_array().is_some_and(|d| d
            .iter()
            .any(|r| r["action"] == "stop_machine" && r["name"] == ID)),
        "{result:#}"
    );
    assert_vm_gone(&mut guard, &vm, "smolsweep stop");
    step(t0, "stop ended the VM");

    // Nothing else changed: the inventory's other rows, every other file of the HOME.
    let home_after = tree(&s.home);
    let rows_after = inventory(&db);
    let log_rel = vm.log.strip_prefix(&s.home).unwrap();
    let db_rel = db.strip_prefix(&s.home).unwrap();
    let all = changed(&home_before, &home_after);
    eprintln!("real_vm: changed in HOME by stop: {all:?}");
    let unexpected: Vec<String> = all
        .into_iter()
        .filter(|c| !c.ends_with(&format!(" {}", db_rel.display())))
        .filter(|c| !c.ends_with(&format!(" {}", log_rel.display())))
        .collect();
    assert!(
        unexpected.is_empty(),
        "stop changed more than {ID}'s record: {unexpected:#?}"
    );
    assert_eq!(
        rows_not_of(&rows_after, &[ID]),
        rows_not_of(&rows_before, &[ID]),
        "stop changed another row of the inventory"
    );
    assert!(
        fs::read(&other_disk).unwrap() == other_disk_before,
        "{OTHER}'s disk changed"
    );
    assert!(vm.disk.is_file(), "stop removed {ID}'s disk");
    let row = rows_after
        .iter()
        .find(|r| r.starts_with("vms: (") && r.contains(&format!("id={ID:?}")))
        .unwrap_or_else(|| panic!("{ID}'s row is gone: {rows_after:#?}"));
    assert!(
        row.contains("status=\"stopped\"") && row.contains("pid=NULL"),
        "{ID}'s row after stop: {row}"
    );

    // Celesto's own view: the sandbox is stopped, the other one as it was.
    let listed = celesto_list(&w);
    assert_eq!(
        listed.get(ID).map(String::as_str),
        Some("stopped"),
        "{listed:?}"
    );
    assert_eq!(
        listed.get(OTHER).map(String::as_str),
        Some("created"),
        "{listed:?}"
    );
    step(t0, "Celesto lists it stopped; nothing else changed");
}

/// The scan's sandbox `id` of Celesto.
fn machine<'a>(scan: &'a Value, id: &str) -> &'a Value {
    scan["machines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["product"] == "celesto" && m["name"] == id)
        .unwrap_or_else(|| panic!("no sandbox {id} in the scan: {scan:#}"))
}

/// The journal holds exactly one run: `delete` from the CLI of sandbox `id`, done, with the
/// core's `estimate`.
fn assert_journaled_delete(s: &Scratch, id: &str, estimate: u64) {
    let (code, history, out) = s.smolsweep("history", &["history", "--json"]);
    assert_eq!(code, 0, "{out}");
    let runs = history["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 1, "{history:#}");
    let run = &runs[0];
    assert_eq!(run["origin"]["command"], "delete", "{run:#}");
    assert_eq!(run["origin"]["surface"], "cli", "{run:#}");
    assert_eq!(run["estimated_bytes"], estimate, "{run:#}");
    assert_eq!(
        (run["done"].as_u64(), run["failed"].as_u64()),
        (Some(1), Some(0)),
        "{run:#}"
    );
    assert_eq!(run["finished"], true, "{run:#}");
    let o = &run["outcomes"][0];
    assert!(
        o["action"] == "delete_machine" && o["name"] == id,
        "{run:#}"
    );
}

#[test]
fn real_qemu_sandbox_is_deleted_through_celestos_cli_with_its_disk_and_journaled_with_the_estimate()
{
    const ID: &str = "rvmdel1";
    const OTHER: &str = "rvmdel2";
    let t0 = Instant::now();
    let _one = one_vm_at_a_time();
    let _subreaper = Subreaper::set();
    let w = World::new(t0);
    let s = &w.s;
    let mut guard = Guard::default();
    let vm = boot_cli_sandbox(&w, &mut guard, ID, &[OTHER], t0);
    let other_disk = s.data_dir.join(format!("disks/{OTHER}.qcow2"));
    let db = s.data_dir.join("celesto.db");

    let (code, scan, out) = s.smolsweep_with_celesto("scan", &["scan", "--json"]);
    assert_eq!(code, 0, "{out}");
    let m = machine(&scan, ID);
    assert_eq!(m["alive"], true, "{m:#}");
    assert_eq!(m["pid"], vm.pid, "{m:#}");
    let estimate = m["allocated_bytes"].as_u64().expect("allocated_bytes");
    let disk_allocated = fs::metadata(&vm.disk).unwrap().blocks() * 512;
    assert!(
        estimate >= disk_allocated,
        "the sandbox's size {estimate} leaves out its disk's {disk_allocated}: {m:#}"
    );

    let home_before = tree(&s.home);
    let rows_before = inventory(&db);
    assert!(rows_before.iter().any(|r| r.contains(&format!("{ID:?}"))));
    let (code, result, out) = s.smolsweep_with_celesto(
        "delete",
        &["delete", &format!("celesto:{ID}"), "-y", "--json"],
    );
    assert_eq!(code, 0, "{out}");
    let done = result["done"].as_array().expect("done");
    assert!(
        done.len() == 1 && done[0]["action"] == "delete_machine" && done[0]["name"] == ID,
        "{result:#}"
    );
    assert_eq!(result["estimated_bytes"], estimate, "{result:#}");
    // Celesto's delete stops a running sandbox first: the VM is gone.
    assert_vm_gone(&mut guard, &vm, "smolsweep delete");
    step(t0, "delete ended the VM");

    // The record and the disk are gone, and nothing else: the inventory's other rows and every
    // other file of the HOME are as they were.
    let home_after = tree(&s.home);
    let rows_after = inventory(&db);
    assert!(!vm.disk.exists(), "{ID}'s disk is still there");
    assert!(!vm.log.exists(), "{ID}'s log is still there");
    let rel = |p: &Path| p.strip_prefix(&s.home).unwrap().display().to_string();
    let all = changed(&home_before, &home_after);
    eprintln!("real_vm: changed in HOME by delete: {all:?}");
    let expected = [
        format!("removed {}", rel(&vm.disk)),
        format!("removed {}", rel(&vm.log)),
    ];
    let unexpected: Vec<&String> = all
        .iter()
        .filter(|c| !expected.contains(c) && **c != format!("changed {}", rel(&db)))
        .collect();
    assert!(
        unexpected.is_empty(),
        "delete changed more than {ID}'s record and files: {unexpected:#?}"
    );
    assert!(
        !rows_after.iter().any(|r| r.contains(&format!("{ID:?}"))),
        "a row still names {ID}: {rows_after:#?}"
    );
    assert_eq!(
        rows_after,
        rows_not_of(&rows_before, &[ID]),
        "delete changed another row of the inventory"
    );
    assert!(other_disk.is_file(), "{OTHER}'s disk is gone");

    // Celesto's own view: the sandbox is gone, the other one is as it was.
    let listed = celesto_list(&w);
    assert_eq!(listed.get(ID), None, "{listed:?}");
    assert_eq!(
        listed.get(OTHER).map(String::as_str),
        Some("created"),
        "{listed:?}"
    );

    // The journal has the run, with the core's estimate.
    assert_journaled_delete(s, ID, estimate);
    step(t0, "Celesto no longer lists it; the journal has the run");
}

#[test]
fn real_qemu_sandbox_kept_by_a_rule_is_not_deleted_and_its_vm_runs_on() {
    const ID: &str = "rvmkeep1";
    let t0 = Instant::now();
    let _one = one_vm_at_a_time();
    let _subreaper = Subreaper::set();
    let w = World::new(t0);
    let s = &w.s;
    let mut guard = Guard::default();
    let vm = boot_cli_sandbox(&w, &mut guard, ID, &[], t0);
    let db = s.data_dir.join("celesto.db");

    let (code, _, out) = s.smolsweep("keep-add", &["keep", "add", &format!("celesto:{ID}")]);
    assert_eq!(code, 0, "{out}");
    let (code, rules, out) = s.smolsweep("keep-list", &["keep", "list", "--json"]);
    assert_eq!(code, 0, "{out}");
    let rule = rules["rules"][0]["id"]
        .as_str()
        .expect("a rule id")
        .to_string();

    let home_before = tree(&s.home);
    let rows_before = inventory(&db);
    let (code, _, out) =
        s.smolsweep_with_celesto("delete-kept", &["delete", &format!("celesto:{ID}"), "-y"]);
    assert_eq!(code, 1, "{out}");
    let sentence = format!(
        "{ID} is kept by you (keep rule {rule}; `smolsweep keep remove {rule}` releases it)"
    );
    assert!(
        out.contains(&sentence),
        "the refusal does not say {sentence:?}:\n{out}"
    );
    assert!(
        alive(vm.pid, vm.start_time),
        "the kept sandbox's VM was ended: {out}"
    );

    // Nothing was touched: every file of the HOME but the running guest's console log, and
    // every row of the inventory.
    let log_rel = vm.log.strip_prefix(&s.home).unwrap().display().to_string();
    let unexpected: Vec<String> = changed(&home_before, &tree(&s.home))
        .into_iter()
        .filter(|c| *c != format!("changed {log_rel}"))
        .collect();
    assert!(
        unexpected.is_empty(),
        "a refused delete changed files: {unexpected:#?}"
    );
    assert_eq!(
        inventory(&db),
        rows_before,
        "a refused delete changed the inventory"
    );
    assert!(vm.disk.is_file());
    let listed = celesto_list(&w);
    assert_eq!(
        listed.get(ID).map(String::as_str),
        Some("running"),
        "{listed:?}"
    );
    assert!(alive(vm.pid, vm.start_time), "the VM ended");
    step(t0, "the kept sandbox was refused; its VM runs on");
}
