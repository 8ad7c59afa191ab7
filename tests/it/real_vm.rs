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
//! The scratch world, the boot and the checks are `smolsweep_fixtures::real_vm`'s (the desktop
//! app's window test uses the same): everything lives in one scratch directory (on a private
//! tmpfs the test mounts, so the measured free space is disturbed by nothing else on the
//! machine): HOME, the XDG directories, `CELESTO_DATA_DIR`, `CELESTO_IMAGE_DIR`, `TMPDIR`, the
//! QMP socket directory and Smolsweep's journal. Every child process gets a clean environment
//! pointing there. The only processes signalled are the Celesto helper a test spawns and the
//! QEMU that helper starts, by pid and start time; a guard kills both if the test fails. One
//! test boots one VM, and the tests boot theirs one at a time.

use std::fs;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{ChildStdin, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use smolsweep_fixtures::real_vm::*;

/// The SDK sandbox that becomes the orphan. Its id is one no other test uses: while its VM runs,
/// the scan protects a disk of that id in any HOME it cannot tell apart, and the tests share one
/// process now.
const SDK_ID: &str = "rvmsdk1";
/// A CLI-persisted sandbox (a row in `celesto.db`, never started): the inventory exists.
const CLI_ID: &str = "real1";
/// What the test writes into the SDK disk (through qemu-io) so that its size means something.
const DATA_MIB: u32 = 32;

/// A scratch world whose `smolsweep` is this crate's binary.
fn world(t0: Instant) -> World {
    World::new(t0, Path::new(env!("CARGO_BIN_EXE_smolsweep")))
}

/// The finding for `path` in a scan.
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
#[test]
fn real_qemu_sandbox_orphan_is_found_skipped_reaped_then_pruned() {
    let t0 = Instant::now();
    let _one = one_vm_at_a_time();
    let helper = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/helpers/celesto_sdk_vm.py");
    // QEMU, once the SDK process is gone, is reparented to us: its death can then be confirmed
    // by reaping it, and no zombie is left to whatever init this machine has. Only for this
    // test's life (declared before the guard, so cleared after it has reaped QEMU).
    let _subreaper = Subreaper::set();
    let w = world(t0);
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

#[test]
fn real_qemu_sandbox_is_stopped_through_celestos_cli_and_nothing_else_changes() {
    const ID: &str = "rvmstop1";
    const OTHER: &str = "rvmstop2";
    let t0 = Instant::now();
    let _one = one_vm_at_a_time();
    let _subreaper = Subreaper::set();
    let w = world(t0);
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
    let w = world(t0);
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
    let w = world(t0);
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

/// The compaction estimate of `disk` in a scan.
fn compact_disk<'a>(scan: &'a Value, disk: &Path) -> &'a Value {
    scan["compact"]["disks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| Path::new(d["path"].as_str().unwrap_or("")) == disk)
        .unwrap_or_else(|| panic!("{} is not estimated: {:#}", disk.display(), scan["compact"]))
}

/// Starts the stopped CLI sandbox `id` through Celesto's own CLI (`sandbox start`, with QEMU's
/// shim on its PATH) and waits (bounded) for its guest's /init on the console (the log is
/// truncated at each start); the new QEMU is in `guard` as soon as the scan names its pid.
fn start_again(w: &World, guard: &mut Guard, id: &str, disk: &Path, t0: Instant) -> Running {
    let s = &w.s;
    let mut c = s.command(&w.tools.celesto);
    c.args(["sandbox", "start", id, "--json"]);
    let (code, out) = s.run("celesto-sandbox-start", &mut c, Duration::from_secs(180));
    assert_eq!(code, 0, "celesto sandbox start {id}: {out}");
    let (code, scan, out) = s.smolsweep("scan-started", &["scan", "--json"]);
    assert_eq!(code, 0, "{out}");
    let m = machine(&scan, id);
    assert_eq!(m["alive"], true, "{m:#}");
    let pid = m["pid"].as_u64().expect("a QEMU pid") as u32;
    let (_, start_time) = proc_stat(pid).expect("QEMU is running");
    guard.qemu = Some((pid, start_time));
    let cmdline = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    assert!(
        String::from_utf8_lossy(&cmdline).contains(&format!("file={},", disk.display())),
        "pid {pid} is not QEMU on {}",
        disk.display()
    );
    let log = s.data_dir.join(format!("{id}.log"));
    let deadline = Instant::now() + Duration::from_secs(90);
    while !read_lossy(&log).contains("smolsweep-guest-up") {
        assert!(
            alive(pid, start_time),
            "QEMU exited before the guest came up on the compacted disk:\n{}",
            read_lossy(&log)
        );
        assert!(
            Instant::now() < deadline,
            "the guest did not come up again within 90 s ({}):\n{}",
            w.tools.accel,
            read_lossy(&log)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    step(t0, &format!("{id} booted again: QEMU {pid} up"));
    Running {
        pid,
        start_time,
        disk: disk.to_path_buf(),
        log,
    }
}

/// Hazard: a compaction that leaves a machine unable to start, or its guest's files changed.
/// A real Celesto sandbox boots on QEMU, is stopped through Celesto's CLI, its guest's file
/// system gets a kept file and a written-then-deleted one (offline, as the guest would leave
/// it), `smolsweep compact` gives the freed clusters back, the image and its file system are
/// checked clean with the kept file's bytes unchanged, and Celesto's own `sandbox start` boots
/// it again on the compacted disk.
#[test]
fn compact_real_sandbox_boots_again_after_compaction() {
    use smolsweep_fixtures::disks::write_keep_and_free;
    use smolsweep_fixtures::disks::{allocated, ext4_file_sha, run as tool, s as arg};
    const ID: &str = "rvmcompact1";
    const FREED_MIB: usize = 20;
    let t0 = Instant::now();
    let _one = one_vm_at_a_time();
    let _subreaper = Subreaper::set();
    let w = world(t0);
    let s = &w.s;
    let mut guard = Guard::default();
    let vm = boot_cli_sandbox(&w, &mut guard, ID, &[], t0);
    let (code, _, out) =
        s.smolsweep_with_celesto("stop", &["stop", &format!("celesto:{ID}"), "-y", "--json"]);
    assert_eq!(code, 0, "{out}");
    assert_vm_gone(&mut guard, &vm, "smolsweep stop");
    step(t0, "stopped through Celesto's CLI");

    let work = s.root.join("work");
    let keep = write_keep_and_free(&vm.disk, &w.base, &work, 2, FREED_MIB);
    smolsweep_fixtures::age_tree(&vm.disk, smolsweep_fixtures::OLD).unwrap();
    let (code, scan, out) = s.smolsweep("scan-stopped", &["scan", "--json"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(machine(&scan, ID)["alive"], false);
    let est = compact_disk(&scan, &vm.disk);
    let expected = est["compactable_bytes"].as_u64().unwrap();
    assert!(expected >= (FREED_MIB as u64 - 2) << 20, "{est:#}");
    let was = allocated(&vm.disk);

    let (code, result, out) = s.smolsweep_on(
        "compact",
        &["compact", &format!("celesto:{ID}"), "-y", "--json"],
        "/usr/bin:/bin:/usr/sbin:/sbin",
        Duration::from_secs(120),
    );
    assert_eq!(code, 0, "{out}");
    let done = records_for(&result, "done", &vm.disk);
    assert_eq!(done.len(), 1, "{result:#}");
    let now = allocated(&vm.disk);
    assert_eq!(
        done[0]["freed_bytes"],
        was - now,
        "measured on the disk: {result:#}"
    );
    assert!(
        was - now >= (FREED_MIB as u64 - 2) << 20,
        "allocated {was} -> {now}, estimated {expected}: {result:#}"
    );
    step(t0, &format!("compacted: {was} -> {now} bytes allocated"));
    tool("qemu-img", &["check", arg(&vm.disk)]);
    let chain = tool("qemu-img", &["info", "--backing-chain", arg(&vm.disk)]);
    assert!(
        chain.contains(&format!("backing file: {}", w.base.display())),
        "{chain}"
    );
    assert_eq!(ext4_file_sha(&vm.disk, "keep", &work), keep);

    let again = start_again(&w, &mut guard, ID, &vm.disk, t0);
    let (code, _, out) = s.smolsweep_with_celesto(
        "stop-again",
        &["stop", &format!("celesto:{ID}"), "-y", "--json"],
    );
    assert_eq!(code, 0, "{out}");
    assert_vm_gone(&mut guard, &again, "the second stop");
    tool("qemu-img", &["check", arg(&vm.disk)]);
    assert_eq!(ext4_file_sha(&vm.disk, "keep", &work), keep);
    step(t0, "after the second boot: image clean, /keep intact");
}
