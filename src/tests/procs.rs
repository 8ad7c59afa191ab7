//! Process scanning against real processes shaped like the VMMs of both products.
//!
//! Stand-in VMMs are `examples/fake_vmm.rs` (compiled by the fixtures crate) started with a chosen
//! argv[0], argv and comm; `tail`, `bash` and `python3` are used where the real shape needs a
//! real program. Every process is killed by its own PID when its guard drops.

use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::procs::macos::{parse_ps_output, ps_command};
use crate::procs::shape::{detect_all, detect_shape, InUseIndex, VmmShape};
use crate::procs::{held_deleted_bytes, linux, names_path_exactly, RawProcess};
use smolsweep_fixtures::vmm::{self, spawn_ready, FakeVmm};

/// The compiled stand-in VMM, built once per test binary.
fn fake_vmm() -> PathBuf {
    vmm::standin_bin(super::scratch_dir())
}

/// The stand-in VMM with this argv (argv[0] included) and, optionally, a comm and a held file.
fn fake(argv: &[&str], comm: Option<&str>, open: Option<&Path>) -> FakeVmm {
    let mut cmd = Command::new(fake_vmm());
    cmd.arg0(argv[0]).args(&argv[1..]);
    if let Some(c) = comm {
        cmd.env("FAKE_VMM_COMM", c);
    }
    if let Some(o) = open {
        cmd.env("FAKE_VMM_OPEN", o);
    }
    spawn_ready(cmd)
}

fn read(pid: u32) -> RawProcess {
    linux::list_processes()
        .into_iter()
        .find(|p| p.pid == pid)
        .unwrap_or_else(|| panic!("pid {pid} not listed"))
}

fn scratch() -> tempfile::TempDir {
    tempfile::tempdir().expect("tempdir")
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 scratch path")
}

/// Field 22 of `/proc/<pid>/stat`, read independently of the code under test.
fn stat_field_22(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    after.split(' ').nth(22 - 3).unwrap().parse().unwrap()
}

#[test]
fn hazard_7_proc_self_exe_argv0_boot_vm_is_found() {
    let tmp = scratch();
    let vm_dir = tmp.path().join(".cache/smolvm/vms/0123456789abcdef");
    std::fs::create_dir_all(&vm_dir).unwrap();
    let cfg = vm_dir.join("boot-config.json");
    let g = fake(
        &["/proc/self/exe", "_boot-vm", s(&cfg)],
        Some("libkrun VM"),
        None,
    );

    let p = read(g.pid());
    assert_eq!(p.comm, "libkrun VM");
    assert_eq!(p.argv, vec!["/proc/self/exe", "_boot-vm", s(&cfg)]);
    // A scanner keyed on `smolvm-bin` in the command line misses it.
    assert!(!p.argv.iter().any(|a| a.contains("smolvm-bin")));
    let shape = detect_shape(&p).expect("boot child detected");
    assert_eq!(
        shape,
        VmmShape::SmolvmBootVm {
            boot_config: cfg.clone(),
            vm_dir: vm_dir.clone()
        }
    );
    assert_eq!(shape.shape_name(), "smolvm.boot_vm");
    assert!(names_path_exactly(&p, &cfg));
    // While booting, before libkrun renames it, the kernel names it after `/proc/self/exe`.
    let booting = fake(&["/proc/self/exe", "_boot-vm", s(&cfg)], Some("exe"), None);
    let b = read(booting.pid());
    assert_eq!(b.comm, "exe");
    assert_eq!(
        detect_shape(&b).map(|s| s.shape_name()),
        Some("smolvm.boot_vm")
    );
    let all = linux::list_processes();
    assert!(detect_all(&all).iter().any(|(q, _)| q.pid == g.pid()));
}

#[test]
fn vm_hostname_comm_is_found_in_both_smolvm_shapes() {
    let tmp = scratch();
    let cfg = tmp.path().join("vms/fedcba9876543210/boot-config.json");
    let boot = fake(
        &["/proc/self/exe", "_boot-vm", s(&cfg)],
        Some("VM:myhost"),
        None,
    );
    let forked = fake(&["./myapp", "run"], Some("VM:myhost"), None);

    let p = read(boot.pid());
    assert_eq!(p.comm, "VM:myhost");
    assert_eq!(detect_shape(&p).unwrap().shape_name(), "smolvm.boot_vm");
    let f = read(forked.pid());
    assert_eq!(detect_shape(&f), Some(VmmShape::SmolvmForked));
}

#[test]
fn hazard_8_forked_pack_run_child_is_found_by_comm_only() {
    let argv = [
        "/home/u/.smolvm/smolvm-bin",
        "machine",
        "run",
        "--name",
        "web",
        "--oci-cache",
    ];
    let vm = fake(&argv, Some("libkrun VM"), None);
    let cli = fake(&argv, None, None);

    let p = read(vm.pid());
    assert_eq!(p.argv, argv);
    assert_eq!(detect_shape(&p), Some(VmmShape::SmolvmForked));
    // Same argv, not renamed: the CLI itself, not a VMM.
    let c = read(cli.pid());
    assert_ne!(c.comm, "libkrun VM");
    assert_eq!(detect_shape(&c), None);
}

#[test]
fn hazard_9_pgrep_f_boot_vm_false_positive() {
    let tmp = scratch();
    let cfg = tmp.path().join("vms/0123456789abcdef/boot-config.json");
    let text = format!(
        "echo ready; read x; : pgrep -f _boot-vm {} qemu-system-x86_64 -drive file=/d.qcow2",
        cfg.display()
    );
    let mut cmd = Command::new("bash");
    cmd.args(["-c", &text, "_boot-vm", s(&cfg)]);
    let shell = spawn_ready(cmd);
    // argv[1] is exactly `_boot-vm`, but the process is not renamed by libkrun.
    let lookalike = fake(&["cat", "_boot-vm", s(&cfg)], None, None);

    for pid in [shell.pid(), lookalike.pid()] {
        let p = read(pid);
        // What `pgrep -f _boot-vm` keys on is there …
        assert!(p.argv.join(" ").contains("_boot-vm"));
        // … and still no VMM.
        assert_eq!(detect_shape(&p), None, "{:?}", p.argv);
    }
    let all = linux::list_processes();
    let found: Vec<u32> = detect_all(&all).iter().map(|(p, _)| p.pid).collect();
    assert!(!found.contains(&shell.pid()) && !found.contains(&lookalike.pid()));
}

#[test]
fn hazard_28_vm_under_another_home_is_found_and_reports_that_home() {
    let tmp = scratch();
    let other_home = tmp.path().join("someone-else");
    let data = tmp.path().join("smol-data");
    let cfg = data.join(".cache/smolvm/vms/0123456789abcdef/boot-config.json");
    let mut cmd = Command::new(fake_vmm());
    cmd.arg0("/proc/self/exe")
        .args(["_boot-vm", s(&cfg)])
        .env("FAKE_VMM_COMM", "libkrun VM")
        .env("HOME", &other_home)
        .env("SMOLVM_DATA_DIR", &data);
    let g = spawn_ready(cmd);

    let p = read(g.pid());
    assert!(detect_shape(&p).is_some(), "found regardless of HOME");
    assert_eq!(p.env_home.as_deref(), Some(other_home.as_path()));
    assert_eq!(p.env_smolvm_data_dir.as_deref(), Some(data.as_path()));
}

#[test]
fn celesto_qemu_drive_paths_are_exact_with_comma_doubling() {
    let tmp = scratch();
    let data = tmp.path().join("data,dir");
    let disk = data.join("disks/sbx1.qcow2");
    std::fs::create_dir_all(disk.parent().unwrap()).unwrap();
    std::fs::write(&disk, b"QFI\xfb").unwrap();
    let qmp = tmp.path().join("qmp-sbx1.sock");
    let drive = format!(
        "file={},if=none,format=qcow2,id=root-drive,node-name=root",
        s(&disk).replace(',', ",,")
    );
    let qmp_arg = format!("unix:{},server=on,wait=off", s(&qmp).replace(',', ",,"));
    let g = fake(
        &[
            "qemu-system-x86_64",
            "-M",
            "microvm",
            "-drive",
            &drive,
            "-qmp",
            &qmp_arg,
        ],
        None,
        None,
    );

    let p = read(g.pid());
    let shape = detect_shape(&p).expect("qemu detected");
    assert_eq!(
        shape,
        VmmShape::CelestoQemu {
            drives: vec![disk.clone()],
            qmp_socket: Some(qmp.clone()),
            sandbox_id: Some("sbx1".into())
        }
    );
    assert!(names_path_exactly(&p, &disk));
    assert!(!names_path_exactly(&p, &tmp.path().join("data")));
    assert!(!names_path_exactly(&p, &data));
}

#[test]
fn b4_longer_path_in_argv_does_not_mark_disk_in_use() {
    let tmp = scratch();
    let disk = tmp.path().join("disks/victim.qcow2");
    std::fs::create_dir_all(disk.parent().unwrap()).unwrap();
    std::fs::write(&disk, b"disk").unwrap();
    let backup = PathBuf::from(format!("{}.backup-zz", disk.display()));
    std::fs::write(&backup, b"backup").unwrap();

    let mut cmd = Command::new("bash");
    cmd.args([
        "-c",
        "echo ready; exec tail -f \"$1\" >/dev/null",
        "bash",
        s(&backup),
    ]);
    let tail = spawn_ready(cmd);
    let drive = format!("file={},if=none", s(&backup));
    let qemu = fake(&["qemu-system-x86_64", "-drive", &drive], None, None);

    // `exec tail` may not have happened the instant `ready` was printed.
    let mut t = read(tail.pid());
    for _ in 0..100 {
        if t.argv.first().map(String::as_str) == Some("tail") && !t.open_files.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
        t = read(tail.pid());
    }
    assert_eq!(t.argv, vec!["tail", "-f", s(&backup)]);
    let q = read(qemu.pid());
    for p in [&t, &q] {
        // Celesto's substring rule would protect the disk …
        assert!(p.argv.join(" ").contains(s(&disk)));
        // … the exact rule does not, yet does see the path the process really names.
        assert!(!names_path_exactly(p, &disk), "{:?}", p.argv);
        assert!(names_path_exactly(p, &backup), "{:?}", p.argv);
    }
    let index = InUseIndex::build(&linux::list_processes());
    assert!(index.users(&disk).is_empty());
    let users = index.users(&backup);
    assert!(users.contains(&tail.pid()) && users.contains(&qemu.pid()));
}

#[test]
fn b2_firecracker_maps_to_sandbox_id_and_open_disk_is_in_use() {
    let tmp = scratch();
    let disk = tmp.path().join("disks/sbx2.ext4");
    std::fs::create_dir_all(disk.parent().unwrap()).unwrap();
    std::fs::write(&disk, vec![1u8; 8192]).unwrap();
    let sock = tmp.path().join("fc-sbx2.sock");
    let argv = ["/usr/local/bin/firecracker", "--api-sock", s(&sock)];
    let bare = fake(&argv, None, None);
    let holding = fake(&argv, None, Some(&disk));

    let p = read(bare.pid());
    assert_eq!(
        detect_shape(&p),
        Some(VmmShape::CelestoFirecracker {
            api_sock: sock.clone(),
            sandbox_id: Some("sbx2".into())
        })
    );
    // The command line does not name the disk (B2): only the id or an open file can.
    assert!(!names_path_exactly(&p, &disk));
    assert!(names_path_exactly(&read(holding.pid()), &disk));
}

#[test]
fn b3_open_log_of_a_vm_is_in_use() {
    let tmp = scratch();
    let log = tmp.path().join("logs/sbx1.log");
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    std::fs::write(&log, b"boot\n").unwrap();
    let g = fake(
        &[
            "qemu-system-x86_64",
            "-drive",
            "file=/nowhere/sbx1.qcow2,if=none",
        ],
        None,
        Some(&log),
    );
    let p = read(g.pid());
    assert!(!p.argv.iter().any(|a| a.contains("sbx1.log")));
    assert!(names_path_exactly(&p, &log));
    assert!(InUseIndex::build(&[p]).users(&log).contains(&g.pid()));
}

#[test]
fn celesto_libkrun_launcher_from_real_python_is_found() {
    let tmp = scratch();
    let pkg = tmp.path().join("celesto/runtime");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(tmp.path().join("celesto/__init__.py"), "").unwrap();
    std::fs::write(pkg.join("__init__.py"), "").unwrap();
    std::fs::write(
        pkg.join("_libkrun_launcher.py"),
        "import sys\nprint('ready', flush=True)\nsys.stdin.read()\n",
    )
    .unwrap();
    let hex = "0123456789abcdef0123456789abcdef";
    let cfg = tmp.path().join(format!("libkrun-my-sbx-3-{hex}.json"));
    let mut cmd = Command::new("python3");
    cmd.current_dir(tmp.path())
        .args(["-m", "celesto.runtime._libkrun_launcher", s(&cfg)]);
    let py = spawn_ready(cmd);
    // The same launcher after libkrun renamed it.
    let renamed = fake(
        &[
            "/venv/bin/python3",
            "-m",
            "celesto.runtime._libkrun_launcher",
            s(&cfg),
        ],
        Some("libkrun VM"),
        None,
    );

    for pid in [py.pid(), renamed.pid()] {
        let p = read(pid);
        let shape = detect_shape(&p).unwrap_or_else(|| panic!("{:?}", p.argv));
        assert_eq!(
            shape,
            VmmShape::CelestoLibkrun {
                config: cfg.clone(),
                sandbox_id: Some("my-sbx-3".into())
            }
        );
        assert_eq!(shape.shape_name(), "celesto.libkrun");
    }
}

#[test]
fn smolvm_787_deleted_but_open_bytes_are_counted() {
    let tmp = scratch();
    let storage = tmp.path().join("vms/0123456789abcdef/storage.raw");
    std::fs::create_dir_all(storage.parent().unwrap()).unwrap();
    let mut f = std::fs::File::create(&storage).unwrap();
    f.write_all(&vec![7u8; 1 << 20]).unwrap();
    f.sync_all().unwrap();
    drop(f);
    let cfg = tmp.path().join("vms/0123456789abcdef/boot-config.json");
    let g = fake(
        &["/proc/self/exe", "_boot-vm", s(&cfg)],
        Some("libkrun VM"),
        Some(&storage),
    );

    let before = read(g.pid());
    assert!(before.fds_readable);
    let open = before
        .open_files
        .iter()
        .find(|o| o.path == storage)
        .expect("storage listed while linked");
    assert!(!open.deleted);
    assert_eq!(held_deleted_bytes(&before), 0);

    std::fs::remove_file(&storage).unwrap();
    let after = read(g.pid());
    let held = after
        .open_files
        .iter()
        .find(|o| o.path == storage)
        .expect("unlinked storage still listed under its old path");
    assert!(held.deleted);
    assert_eq!((held.dev, held.ino), (open.dev, open.ino));
    assert!(held.allocated >= 1 << 20, "allocated {}", held.allocated);
    assert_eq!(held_deleted_bytes(&after), held.allocated);
}

#[test]
fn b7_start_time_matches_proc_and_differs_for_a_new_process_with_the_same_comm() {
    let comm = "a) b (c";
    let first = fake(&["fake"], Some(comm), None);
    std::thread::sleep(Duration::from_millis(60));
    let second = fake(&["fake"], Some(comm), None);

    let a = read(first.pid());
    let b = read(second.pid());
    assert_eq!(a.comm, comm);
    assert_eq!(a.ppid, std::process::id());
    assert_eq!(a.uid, rustix::process::getuid().as_raw());
    assert_eq!(a.start_time, stat_field_22(first.pid()));
    assert_eq!(linux::process_start_time(first.pid()), Some(a.start_time));
    assert_eq!(b.start_time, stat_field_22(second.pid()));
    assert!(b.start_time > a.start_time);
    let secs = linux::start_time_epoch_secs(a.start_time).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    assert!(
        secs <= now + 1 && secs + 120 > now,
        "start {secs}, now {now}"
    );
    assert_eq!(linux::clock_ticks_per_second(), 100);
}

#[test]
fn vanished_process_is_skipped_and_threads_are_not_listed() {
    let mut g = fake(&["fake"], None, None);
    let pid = g.pid();
    g.kill().unwrap();
    assert_eq!(linux::read_process(Path::new("/proc"), pid), None);

    // This test binary runs tests on several threads; only its leader may be listed.
    let all = linux::list_processes();
    for p in &all {
        if let Ok(status) = std::fs::read_to_string(format!("/proc/{}/status", p.pid)) {
            let tgid = status
                .lines()
                .find_map(|l| l.strip_prefix("Tgid:"))
                .map(|v| v.trim().parse::<u32>().unwrap());
            assert_eq!(tgid, Some(p.pid), "thread {} listed", p.pid);
        }
    }
    assert!(all.iter().any(|p| p.pid == std::process::id()));
}

/// A Python process that runs `code` with the scratch path `P` (bytes) in its environment and
/// prints `ready` once it has done what `code` does.
fn python_with(code: &str, path: &Path, cwd: Option<&Path>) -> FakeVmm {
    let mut cmd = Command::new("python3");
    cmd.args([
        "-c",
        &format!("import os, sys, mmap\n{code}\nprint('ready', flush=True)\nsys.stdin.read()\n"),
    ])
    .env("P", path);
    if let Some(d) = cwd {
        cmd.current_dir(d);
    }
    spawn_ready(cmd)
}

/// The one "in use" rule over the whole process table, as the scan asks it.
fn in_use(path: &Path) -> Vec<u32> {
    let devino = std::fs::metadata(path).ok().map(|m| {
        use std::os::unix::fs::MetadataExt;
        (m.dev(), m.ino())
    });
    crate::scan::ProcIndex::build(linux::list_processes(), 0).in_use(path, devino)
}

#[test]
fn a_file_held_only_through_a_memory_map_is_in_use() {
    let tmp = scratch();
    let disk = tmp.path().join("vms/m1/storage.raw");
    std::fs::create_dir_all(disk.parent().unwrap()).unwrap();
    std::fs::write(&disk, vec![3u8; 8192]).unwrap();
    // Every descriptor is closed once mapped (Python's mmap keeps a duplicate): only
    // /proc/<pid>/maps still names the file.
    let g = python_with(
        "f = open(os.environb[b'P'], 'rb')\nm = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)\nf.close()\nos.closerange(3, 4096)",
        &disk,
        None,
    );
    let p = read(g.pid());
    assert!(!p.open_files.iter().any(|f| f.path == disk));
    assert!(p.mapped.contains(&disk), "{:?}", p.mapped);
    assert!(in_use(&disk).contains(&g.pid()));
    assert!(in_use(disk.parent().unwrap()).contains(&g.pid()));
}

#[test]
fn a_directory_that_is_only_a_working_directory_is_in_use() {
    let tmp = scratch();
    let inner = tmp.path().join("vms/m2/rootfs/etc");
    std::fs::create_dir_all(&inner).unwrap();
    let g = python_with("pass", &inner, Some(&inner));
    let p = read(g.pid());
    assert_eq!(p.cwd.as_deref(), Some(inner.as_path()));
    assert!(!p.open_files.iter().any(|f| f.path.starts_with(tmp.path())));
    for dir in [&inner, &tmp.path().join("vms/m2")] {
        assert!(in_use(dir).contains(&g.pid()), "{}", dir.display());
    }
    // Never a sibling that merely shares a prefix of the name.
    let sibling = tmp.path().join("vms/m");
    std::fs::create_dir_all(&sibling).unwrap();
    assert!(!in_use(&sibling).contains(&g.pid()));
}

#[test]
fn another_name_of_an_open_file_is_in_use_by_its_inode_also_once_deleted() {
    let tmp = scratch();
    let held = tmp.path().join("elsewhere/disk.img");
    let other = tmp.path().join("vms/m3/disk.img");
    std::fs::create_dir_all(held.parent().unwrap()).unwrap();
    std::fs::create_dir_all(other.parent().unwrap()).unwrap();
    std::fs::write(&held, b"disk").unwrap();
    std::fs::hard_link(&held, &other).unwrap();
    let g = python_with("f = open(os.environb[b'P'], 'rb')", &held, None);
    // Only the inode ties the second name to the process.
    assert!(in_use(&other).contains(&g.pid()));
    // The name it was opened by unlinked: the kernel shows it with ` (deleted)`, the rule
    // still sees the other name by its inode.
    std::fs::remove_file(&held).unwrap();
    let p = read(g.pid());
    let f = p
        .open_files
        .iter()
        .find(|f| f.path == held)
        .expect("listed under its old name, without the suffix");
    assert!(!f.deleted, "another link remains");
    assert!(in_use(&other).contains(&g.pid()));
}

#[test]
fn a_path_with_a_newline_and_non_utf8_bytes_is_in_use_when_held_or_mapped() {
    use std::os::unix::ffi::OsStrExt;
    let tmp = scratch();
    let dir = tmp.path().join("vms/m4");
    std::fs::create_dir_all(&dir).unwrap();
    let odd = dir.join(std::ffi::OsStr::from_bytes(b"disk\nof \xff (deleted).raw"));
    std::fs::write(&odd, vec![5u8; 4096]).unwrap();
    let holder = python_with("f = open(os.environb[b'P'], 'rb')", &odd, None);
    let mapper = python_with(
        "f = open(os.environb[b'P'], 'rb')\nm = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)\nf.close()\nos.closerange(3, 4096)",
        &odd,
        None,
    );
    let h = read(holder.pid());
    assert!(h.open_files.iter().any(|f| f.path == odd && !f.deleted));
    // maps writes the newline as `\012`.
    assert!(read(mapper.pid()).mapped.contains(&odd));
    // Only the inode or the exact bytes match: ask by path alone.
    let index = crate::scan::ProcIndex::build(linux::list_processes(), 0);
    let users = index.in_use(&odd, None);
    assert!(users.contains(&holder.pid()) && users.contains(&mapper.pid()));
    assert!(index.in_use(&dir, None).contains(&mapper.pid()));
}

#[test]
fn a_table_read_on_several_threads_lists_every_process_once_in_order() {
    // More processes than the table needs before it is read in parallel.
    let tmp = scratch();
    let file = tmp.path().join("held");
    std::fs::write(&file, b"x").unwrap();
    let guards: Vec<FakeVmm> = (0..60)
        .map(|_| fake(&["fake"], None, Some(&file)))
        .collect();
    let all = linux::list_processes();
    assert!(all.windows(2).all(|w| w[0].pid < w[1].pid));
    for g in &guards {
        let p = all.iter().find(|p| p.pid == g.pid()).expect("listed");
        assert!(p.open_files.iter().any(|f| f.path == file));
    }
    let users = in_use(&file);
    assert!(guards.iter().all(|g| users.contains(&g.pid())));
}

/// procps `ps` accepts the same invocation, so the parser meets real `ps` output here.
#[test]
fn macos_ps_command_output_from_a_real_ps_parses() {
    let tmp = tempfile::Builder::new().prefix("a b ").tempdir().unwrap();
    let sock = tmp.path().join("fc-sbx9.sock");
    let g = fake(
        &["/opt/fc dir/firecracker", "--api-sock", s(&sock)],
        None,
        None,
    );

    let cmd = ps_command();
    let out = Command::new(&cmd[0])
        .args(&cmd[1..])
        .output()
        .expect("run ps");
    assert!(out.status.success());
    let procs = parse_ps_output(&String::from_utf8(out.stdout).unwrap());
    let from_proc = linux::list_processes();
    assert!(procs.len() * 2 > from_proc.len(), "most processes parsed");

    let p = procs
        .iter()
        .find(|p| p.pid == g.pid())
        .expect("listed by ps");
    assert_eq!(p.ppid, std::process::id());
    assert_eq!(
        p.argv,
        vec!["/opt/fc dir/firecracker", "--api-sock", s(&sock)]
    );
    assert_eq!(p.comm, "firecracker");
    assert_eq!(
        detect_shape(p),
        Some(VmmShape::CelestoFirecracker {
            api_sock: sock.clone(),
            sandbox_id: Some("sbx9".into())
        })
    );
    let linux_start = linux::start_time_epoch_secs(read(g.pid()).start_time).unwrap();
    assert!(
        p.start_time.abs_diff(linux_start) <= 2,
        "ps {} vs /proc {linux_start}",
        p.start_time
    );
}

#[test]
fn the_identity_read_takes_no_files_of_a_plain_process_but_everything_of_a_vmm() {
    let tmp = scratch();
    let held = tmp.path().join("held.img");
    std::fs::write(&held, b"disk").unwrap();
    let plain = python_with("f = open(os.environb[b'P'], 'rb')", &held, Some(tmp.path()));
    let drive = format!("file={},if=none,format=raw", s(&held));
    let vm = fake(
        &["qemu-system-x86_64", "-M", "microvm", "-drive", &drive],
        None,
        Some(&held),
    );
    let ids = linux::list_processes_at(Path::new("/proc"), linux::Depth::Identities);
    let p = ids.iter().find(|p| p.pid == plain.pid()).expect("listed");
    assert!(p.argv.iter().any(|a| a == "-c"), "{:?}", p.argv);
    assert!(p.start_time > 0);
    // Its working directory is read (a cheap link), its open files and maps are not.
    assert!(
        p.open_files.is_empty()
            && p.cwd == Some(tmp.path().canonicalize().unwrap())
            && p.mapped.is_empty(),
        "{p:?}"
    );
    let v = ids.iter().find(|p| p.pid == vm.pid()).expect("listed");
    assert!(v.open_files.iter().any(|f| f.path == held), "{v:?}");
    assert!(v.fds_readable && v.cwd.is_some() && !v.mapped.is_empty());
    // The whole read has the plain process's files.
    assert!(read(plain.pid()).open_files.iter().any(|f| f.path == held));
}

#[test]
fn a_file_held_by_a_process_missing_from_the_identities_is_in_use() {
    // The identities were read before the process started (or without its files): the kernel
    // says the file is held, the first in-use question reads the whole table, and that finds
    // it.
    type Held = (PathBuf, u32, (u64, u64));
    static HOLDER: std::sync::Mutex<Option<Held>> = std::sync::Mutex::new(None);
    fn rest(identities: &[RawProcess]) -> crate::procs::Holdings {
        assert!(identities.is_empty());
        let (path, pid, (dev, ino)) = HOLDER.lock().unwrap().clone().expect("set");
        let whole = vec![RawProcess {
            pid,
            start_time: 7,
            argv: vec!["cp".into()],
            fds_readable: true,
            open_files: vec![crate::procs::OpenFile {
                path,
                deleted: false,
                dev,
                ino,
                allocated: 0,
            }],
            ..Default::default()
        }];
        crate::procs::Holdings {
            whole,
            ..Default::default()
        }
    }
    let tmp = scratch();
    let disk = tmp.path().join("disks/a.qcow2");
    std::fs::create_dir_all(disk.parent().unwrap()).unwrap();
    std::fs::write(&disk, b"disk").unwrap();
    let holder = fake(&["cp"], None, Some(&disk));
    let m = std::fs::metadata(&disk).unwrap();
    let devino = (m.dev(), m.ino());
    *HOLDER.lock().unwrap() = Some((disk.clone(), holder.pid(), devino));
    let idx = crate::scan::ProcIndex::deferred(Vec::new(), rest);
    assert!(idx.by_pid(holder.pid()).is_none());
    assert_eq!(idx.in_use(&disk, None), vec![holder.pid()]);
    assert_eq!(idx.in_use(disk.parent().unwrap(), None), vec![holder.pid()]);
    assert_eq!(
        idx.in_use(&tmp.path().join("other"), Some(devino)),
        vec![holder.pid()]
    );
}

/// How many times [`counted_rest`] read the rest of the table.
static WHOLE_READS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn counted_rest(identities: &[RawProcess]) -> crate::procs::Holdings {
    WHOLE_READS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    crate::procs::holdings(identities)
}

#[test]
fn a_scan_with_nothing_to_judge_never_reads_the_whole_table() {
    use std::sync::atomic::Ordering;
    let tmp = scratch();
    let home =
        smolsweep_fixtures::Home::new(tmp.path(), smolsweep_fixtures::Layout::Linux).expect("home");
    let scan = || {
        let mut env = crate::env::EnvSnapshot::from_pairs(home.root.clone(), home.env_vars());
        env.euid = rustix::process::geteuid().as_raw();
        let opts = crate::scan::ScanOptions {
            env,
            platform: crate::model::Platform::Linux,
            age_guard: Duration::from_secs(120),
            now: std::time::SystemTime::now(),
        };
        crate::scan::scan_sized(
            &opts,
            || crate::scan::ProcIndex::deferred(crate::procs::list_identities(), counted_rest),
            crate::size::Sizer::new(),
        )
    };
    let r = scan();
    assert!(r.findings.is_empty(), "{:?}", r.findings);
    assert_eq!(WHOLE_READS.load(Ordering::SeqCst), 0, "nothing to judge");
    // A disk with no inventory row is judged, and nobody holds it: the kernel says so, and the
    // whole table is not read either.
    let data = home.celesto_data_dir().expect("celesto data dir");
    let disk = data.disks().join("lost.qcow2");
    std::fs::write(&disk, vec![1u8; 4096]).unwrap();
    let r = scan();
    let lost = r
        .findings
        .iter()
        .find(|f| f.path == disk)
        .expect("lost disk judged");
    assert!(!lost.reason.contains("using it"), "{}", lost.reason);
    assert_eq!(WHOLE_READS.load(Ordering::SeqCst), 0, "nobody holds it");
    // A process that is no VMM holds it: the whole table is read, once, and names it.
    let holder = fake(&["holder"], None, Some(&disk));
    let r = scan();
    let lost = r
        .findings
        .iter()
        .find(|f| f.path == disk)
        .expect("lost disk judged");
    assert!(
        lost.reason.contains(&holder.pid().to_string()),
        "{}",
        lost.reason
    );
    assert_eq!(WHOLE_READS.load(Ordering::SeqCst), 1, "read once per scan");
}

#[test]
fn a_file_held_by_a_process_whose_descriptors_cannot_be_listed_is_still_held() {
    // The kernel's count sees every holder: a file mapped after its descriptor was closed, a
    // hard link to it held under another name, a file deep below a directory.
    let tmp = scratch();
    let dir = tmp.path().join("a/b/c");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("disk.raw");
    std::fs::write(&file, vec![0u8; 8192]).unwrap();
    let mut budget = 100;
    let free = |p: &Path, b: &mut usize| {
        crate::procs::holders(p, None, b) == crate::procs::Holders::Nobody
    };
    assert!(free(&file, &mut budget));
    assert!(free(tmp.path(), &mut budget));
    let other = tmp.path().join("other-name");
    std::fs::hard_link(&file, &other).unwrap();
    let mut holder = fake(&["holder"], None, Some(&other));
    assert!(!free(&file, &mut budget), "held under another name");
    assert!(!free(tmp.path(), &mut budget), "held below the directory");
    holder.kill().unwrap();
    assert!(free(&file, &mut budget));
    let mut mapper = python_with(
        "f = open(os.environb[b'P'], 'rb')\nm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)\nf.close()",
        &file,
        None,
    );
    assert!(
        !free(&file, &mut budget),
        "mapped with its descriptor closed"
    );
    mapper.kill().unwrap();
    // The budget spent, the kernel is not asked: "cannot tell".
    let mut none = 0;
    assert!(!free(&file, &mut none));
    // A named pipe, a socket and a link below a directory are nothing anyone holds open as a
    // file, and asking about them neither blocks nor follows the link.
    let odd = tmp.path().join("odd");
    std::fs::create_dir(&odd).unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        odd.join("fifo"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    std::os::unix::fs::symlink(&file, odd.join("link")).unwrap();
    let mut held_target = fake(&["holder"], None, Some(&file));
    assert!(
        free(&odd, &mut budget),
        "a link to a held file is not the file"
    );
    assert!(
        free(&odd.join("link"), &mut budget),
        "a link is not followed"
    );
    held_target.kill().unwrap();
}

#[test]
fn a_file_held_only_by_a_process_smolsweep_cannot_see_is_left_alone() {
    // The table shows no process (as when the holder is another user's, or in another
    // container), but the kernel counts an open description: the file is held by someone
    // Smolsweep cannot see, and a scan leaves it alone with that reason.
    let tmp = scratch();
    let home =
        smolsweep_fixtures::Home::new(tmp.path(), smolsweep_fixtures::Layout::Linux).expect("home");
    let data = home.celesto_data_dir().expect("celesto data dir");
    let held = data.disks().join("held-elsewhere.qcow2");
    let free = data.disks().join("free.qcow2");
    std::fs::write(&held, vec![1u8; 4096]).unwrap();
    std::fs::write(&free, vec![1u8; 4096]).unwrap();
    smolsweep_fixtures::age_tree(&home.root, smolsweep_fixtures::OLD).unwrap();
    let _holder = fake(&["holder"], None, Some(&held));

    let idx = crate::scan::ProcIndex::build(Vec::new(), 0);
    assert!(idx.in_use(&held, None).is_empty(), "the table shows nobody");
    let users = idx.users(&held, None);
    assert!(users.unseen && users.pids.is_empty(), "{users:?}");
    assert!(!idx.users(&free, None).unseen);
    assert!(
        !idx.users(&data.disks(), None).is_empty(),
        "below a directory"
    );

    let mut env = crate::env::EnvSnapshot::from_pairs(home.root.clone(), home.env_vars());
    env.euid = rustix::process::geteuid().as_raw();
    let opts = crate::scan::ScanOptions {
        env,
        platform: crate::model::Platform::Linux,
        age_guard: Duration::from_secs(120),
        now: std::time::SystemTime::now(),
    };
    let r = crate::scan::scan_with(&opts, Vec::new());
    let f = |p: &Path| {
        r.findings
            .iter()
            .find(|f| f.path == p)
            .expect("judged")
            .clone()
    };
    let h = f(&held);
    assert_eq!(h.verdict, crate::model::Verdict::Protected, "{}", h.reason);
    assert!(h.reason.contains("cannot see"), "{}", h.reason);
    assert!(h.used_by.is_empty());
    assert_eq!(f(&free).verdict, crate::model::Verdict::Reclaimable);
}

#[test]
fn a_disk_smolsweep_itself_names_is_still_asked_of_the_kernel() {
    // `smolsweep compact DISK` names the disk on its own command line and works in its
    // directory: Smolsweep's own process is no user of it, and leaving itself out must not skip
    // the question of a holder it cannot see.
    let tmp = scratch();
    let disk = tmp.path().join("disk.raw");
    std::fs::write(&disk, vec![0u8; 4096]).unwrap();
    let me = RawProcess {
        pid: std::process::id(),
        start_time: 7,
        argv: vec!["smolsweep".into(), "compact".into(), s(&disk).into()],
        cwd: Some(tmp.path().to_path_buf()),
        fds_readable: true,
        ..Default::default()
    };
    let idx = crate::scan::ProcIndex::build(vec![me], 0);
    assert!(idx.users(&disk, None).is_empty(), "nobody else");
    assert!(
        idx.in_use(tmp.path(), None).is_empty(),
        "nobody works there"
    );
    let _holder = fake(&["holder"], None, Some(&disk));
    let users = idx.users(&disk, None);
    assert!(users.unseen && users.pids.is_empty(), "{users:?}");
}

/// The scan's index of the table read by identity ([`crate::procs::holdings`]: names only
/// where a question needs them), asking the kernel about at most `budget` files when given.
fn by_identity(budget: Option<usize>) -> crate::scan::ProcIndex {
    let idx =
        crate::scan::ProcIndex::deferred(crate::procs::list_identities(), crate::procs::holdings);
    match budget {
        Some(b) => idx.with_budget(b),
        None => idx,
    }
}

/// What the whole table (every descriptor named) says of `path`, asserted equal to what the
/// scan's index read by identity says, both when the kernel answers (candidates by identity)
/// and when it cannot tell (candidates by device).
fn same_answer(path: &Path, devino: Option<(u64, u64)>) -> Vec<u32> {
    let whole = crate::scan::ProcIndex::build(linux::list_processes(), 0).in_use(path, devino);
    for budget in [None, Some(0)] {
        assert_eq!(
            by_identity(budget).in_use(path, devino),
            whole,
            "{} ({devino:?}), budget {budget:?}",
            path.display()
        );
    }
    whole
}

fn devino_of(path: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

#[test]
fn the_table_read_by_identity_answers_as_the_whole_table() {
    // The in-use cases of this file, asked of the scan's index, which reads descriptors by
    // identity and names only what the kernel says is held (issue 40): renamed, hard-linked,
    // unlinked, below a directory, mapped after close, a working directory, odd names.
    let tmp = scratch();
    let vms = tmp.path().join("vms");
    let disk = vms.join("m1/storage.raw");
    let mapped = vms.join("m2/overlay.raw");
    let cwd = vms.join("m3/rootfs");
    let linked = tmp.path().join("elsewhere/disk.img");
    let other = vms.join("m4/disk.img");
    let odd = vms.join(std::ffi::OsStr::from_bytes(
        b"m5/disk\nof \xff (deleted).raw",
    ));
    for d in [&disk, &mapped, &other, &linked, &odd] {
        std::fs::create_dir_all(d.parent().unwrap()).unwrap();
    }
    std::fs::create_dir_all(&cwd).unwrap();
    for f in [&disk, &mapped, &linked, &odd] {
        std::fs::write(f, vec![7u8; 8192]).unwrap();
    }
    std::fs::hard_link(&linked, &other).unwrap();
    let holder = python_with("f = open(os.environb[b'P'], 'rb')", &disk, None);
    let mapper = python_with(
        "f = open(os.environb[b'P'], 'rb')\nm = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)\nf.close()\nos.closerange(3, 4096)",
        &mapped,
        None,
    );
    let worker = python_with("pass", &cwd, Some(&cwd));
    let link_holder = python_with("f = open(os.environb[b'P'], 'rb')", &linked, None);
    let odd_holder = python_with("f = open(os.environb[b'P'], 'rb')", &odd, None);

    assert!(same_answer(&disk, devino_of(&disk)).contains(&holder.pid()));
    assert!(same_answer(&vms, None).contains(&holder.pid()));
    assert!(same_answer(&mapped, devino_of(&mapped)).contains(&mapper.pid()));
    assert!(same_answer(mapped.parent().unwrap(), None).contains(&mapper.pid()));
    assert!(same_answer(&cwd, None).contains(&worker.pid()));
    assert!(same_answer(&odd, None).contains(&odd_holder.pid()));
    // Held under another name: only the inode ties this one to the process.
    assert!(same_answer(&other, devino_of(&other)).contains(&link_holder.pid()));
    assert!(!same_answer(other.parent().unwrap(), None).contains(&link_holder.pid()));
    // Renamed while held: the kernel's name follows, and so does the answer.
    let moved = vms.join("m1/renamed.raw");
    std::fs::rename(&disk, &moved).unwrap();
    assert!(same_answer(&moved, None).contains(&holder.pid()));
    assert!(!same_answer(&disk, None).contains(&holder.pid()));
    // The name it was opened by unlinked: the other name is still held, by its inode.
    std::fs::remove_file(&linked).unwrap();
    assert!(same_answer(&other, devino_of(&other)).contains(&link_holder.pid()));
    // Unlinked altogether: held by its identity alone, never by its old name.
    let gone = devino_of(&moved);
    std::fs::remove_file(&moved).unwrap();
    assert!(same_answer(&moved, gone).contains(&holder.pid()));
    assert!(!same_answer(&vms.join("m1"), None).contains(&holder.pid()));
}

#[test]
fn smolsweeps_own_open_file_is_no_use_when_the_table_is_read_by_identity() {
    // Smolsweep's own process is no user of anything in any scan (issue 38): the index of
    // the whole table leaves it out, and so must the scan's index that reads the rest of the
    // table by identity once the kernel says something is held (issue 40). A process that
    // holds a file open in a directory finding (the app's measurement keeps disks open in
    // stores it scans) saw its own pid among the directory's users in a full scan and not in
    // the app's rescans.
    let tmp = scratch();
    let store = tmp.path().join("store");
    std::fs::create_dir_all(&store).unwrap();
    let mine = store.join("vm-disk.img");
    let _open = std::fs::File::create(&mine).unwrap();
    let theirs = store.join("other.img");
    std::fs::write(&theirs, vec![7u8; 4096]).unwrap();
    let holder = python_with("f = open(os.environb[b'P'], 'rb')", &theirs, None);
    let me = std::process::id();
    // Asked first about the file only this process holds, then about its directory (where
    // another process holds a file too), as a scan asks.
    let pids = same_answer(&mine, devino_of(&mine));
    assert!(pids.is_empty(), "{pids:?}");
    let pids = same_answer(&store, None);
    assert!(!pids.contains(&me), "{pids:?}");
    assert!(pids.contains(&holder.pid()), "{pids:?}");
}

#[test]
fn a_disk_held_through_a_bind_mount_of_its_file_system_is_in_use() {
    // A bind mount shows the same file system (the same device) at another place: the
    // kernel names the holder's descriptor by the bind mount's path. Making one needs a
    // mount namespace of this test's own, so that the machine's mounts stay untouched: the
    // test runs itself again as root of a new user and mount namespace (`unshare -rm`,
    // unprivileged), or fails saying why it cannot.
    const CHILD: &str = "SMOLSWEEP_PROCS_TEST_IN_USERNS";
    if std::env::var_os(CHILD).is_some() {
        return disk_held_through_a_bind_mount();
    }
    let name = "tests::procs::a_disk_held_through_a_bind_mount_of_its_file_system_is_in_use";
    let out = Command::new("unshare")
        .args(["--user", "--map-root-user", "--mount"])
        .arg(std::env::current_exe().unwrap())
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run `unshare` (util-linux), which this test needs to bind-mount a \
                 file system in a mount namespace of its own: {e}"
            )
        });
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        !stderr.starts_with("unshare:"),
        "this test needs a user and mount namespace of its own (`unshare --user \
         --map-root-user --mount`) to make a bind mount without touching the machine's \
         mounts, and this machine refused one (user namespaces disabled or restricted): {stderr}"
    );
    assert!(out.status.success(), "in the namespace: {stdout}{stderr}");
    assert!(stdout.contains("1 passed"), "{stdout}");
}

/// [`a_disk_held_through_a_bind_mount_of_its_file_system_is_in_use`], in its namespace.
fn disk_held_through_a_bind_mount() {
    let tmp = scratch();
    let home =
        smolsweep_fixtures::Home::new(tmp.path(), smolsweep_fixtures::Layout::Linux).expect("home");
    let disks = home.celesto_data_dir().expect("celesto data dir").disks();
    let disk = disks.join("bound.qcow2");
    std::fs::write(&disk, vec![1u8; 4096]).unwrap();
    smolsweep_fixtures::age_tree(&home.root, smolsweep_fixtures::OLD).unwrap();
    let bind = tmp.path().join("bind");
    std::fs::create_dir(&bind).unwrap();
    let st = Command::new("mount")
        .arg("--bind")
        .args([&disks, &bind])
        .status()
        .expect("mount (util-linux)");
    assert!(st.success(), "mount --bind in the test's own namespace");
    let seen = bind.join("bound.qcow2");
    let devino = devino_of(&disk);
    assert_eq!(devino_of(&seen), devino, "one file, one device, two places");
    let holder = python_with("f = open(os.environb[b'P'], 'rb')", &seen, None);
    let h = read(holder.pid());
    assert!(
        h.open_files.iter().any(|f| f.path == seen),
        "named by the bind mount"
    );

    // Held by its identity, named below the bind mount only, whether the kernel answers or
    // cannot tell (then names are read by device: a bind mount's files have the device of
    // the file system it shows).
    assert!(same_answer(&disk, devino).contains(&holder.pid()));
    assert!(same_answer(&seen, None).contains(&holder.pid()));
    assert!(same_answer(&bind, None).contains(&holder.pid()));
    assert!(!same_answer(&disks, None).contains(&holder.pid()));
    assert!(
        by_identity(None).users(&disks, None).unseen,
        "held there, by no name below it"
    );

    let mut env = crate::env::EnvSnapshot::from_pairs(home.root.clone(), home.env_vars());
    env.euid = rustix::process::geteuid().as_raw();
    let opts = crate::scan::ScanOptions {
        env,
        platform: crate::model::Platform::Linux,
        age_guard: Duration::from_secs(120),
        now: std::time::SystemTime::now(),
    };
    let r = crate::scan::scan(&opts);
    let f = r
        .findings
        .iter()
        .find(|f| f.path == disk)
        .expect("the disk is judged");
    assert_eq!(f.verdict, crate::model::Verdict::Protected, "{}", f.reason);
    assert!(
        f.used_by.contains(&holder.pid()),
        "{:?}: {}",
        f.used_by,
        f.reason
    );
}
