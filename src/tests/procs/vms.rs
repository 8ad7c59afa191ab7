//! VM processes of both products found by their shape, whose HOME they run for, and what
//! their command lines name and their descriptors hold.

use super::*;

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
