//! macOS processes as `ps` prints them (`procs::macos`): the parser and VMM detection over
//! recorded `ps -axww -o pid=,ppid=,uid=,lstart=,command=` text, on every platform.

use crate::procs::macos::{parse_ps_output, ps_command};
use crate::procs::shape::{detect_all, detect_shape, VmmShape};
use crate::procs::RawProcess;

const PS_FIXTURE: &str = "\
    1     0     0 Mon Nov 30 01:00:00 2026     /sbin/launchd
  501     1   501 Mon Nov 30 03:10:04 2026     /Users/u/.smolvm/smolvm-bin _boot-vm /Users/u/Library/Caches/smolvm/vms/0123456789abcdef/boot-config.json
  610   600   501 Mon Nov 30 03:11:00 2026     /Users/u/.smolvm/smolvm-bin machine run --name web --oci-cache
  611   610   501 Mon Nov 30 03:11:01 2026     /Users/u/.smolvm/smolvm-bin machine run --name web --oci-cache
  620     1   501 Mon Nov 30 03:12:00 2026     /Users/u/.smolvm/smolvm-bin pack run ./app.smolmachine
  630     1   501 Mon Nov 30 03:12:30 2026     /Users/u/.smolvm/smolvm-bin machine ls
  600   400   501 Mon Nov 30 03:09:59 2026     -zsh
  700     1   501 Tue Dec  1 09:05:07 2026     /opt/homebrew/bin/qemu-system-aarch64 -M virt -drive file=/Users/u/.local/state/celesto/disks/sbx1.qcow2,if=none,format=qcow2 -qmp unix:/tmp/qmp-sbx1.sock,server=on,wait=off
  710     1   501 Tue Dec  1 09:06:00 2026     /usr/local/bin/firecracker --api-sock /tmp/fc-sbx2.sock
  720     1   501 Tue Dec  1 09:07:00 2026     /Users/u/.venv/bin/python3 -m celesto.runtime._libkrun_launcher /tmp/libkrun-sbx3-0123456789abcdef0123456789abcdef.json
  800   600   501 Tue Dec  1 09:08:00 2026     /bin/zsh -c pgrep -f _boot-vm; echo qemu-system-x86_64 /x/smolvm-bin _boot-vm /y/boot-config.json
  801   600   501 Tue Dec  1 09:08:01 2026     /Users/John Doe/.smolvm/smolvm-bin _boot-vm /Users/John Doe/Library/Caches/smolvm/vms/fedcba9876543210/boot-config.json
";

fn shapes_by_pid(procs: &[RawProcess]) -> Vec<(u32, String)> {
    detect_all(procs)
        .into_iter()
        .map(|(p, s)| (p.pid, s.shape_name().to_string()))
        .collect()
}

#[test]
fn macos_ps_command_pins_locale_zone_and_columns() {
    let cmd = ps_command();
    assert_eq!(&cmd[..3], ["env", "LC_ALL=C", "TZ=UTC"]);
    assert_eq!(cmd[3], "ps");
    assert!(cmd.contains(&"-axww".to_string()));
    assert_eq!(cmd.last().unwrap(), "pid=,ppid=,uid=,lstart=,command=");
}

#[test]
fn macos_ps_fixture_finds_every_vmm_shape_and_nothing_else() {
    let procs = parse_ps_output(PS_FIXTURE);
    assert_eq!(procs.len(), 12);
    assert!(procs.iter().all(|p| p.from_ps));
    assert_eq!(
        shapes_by_pid(&procs),
        vec![
            (501, "smolvm.boot_vm".to_string()),
            (611, "smolvm.forked".to_string()),
            (620, "smolvm.forked".to_string()),
            (700, "celesto.qemu".to_string()),
            (710, "celesto.firecracker".to_string()),
            (720, "celesto.libkrun".to_string()),
            (801, "smolvm.boot_vm".to_string()),
        ]
    );
    let by_pid = |pid| procs.iter().find(|p| p.pid == pid).unwrap();
    let boot = by_pid(501);
    assert_eq!(boot.comm, "smolvm-bin");
    assert_eq!(boot.ppid, 1);
    assert_eq!(boot.uid, 501);
    assert_eq!(boot.start_time, 1_796_008_204); // 2026-11-30T03:10:04Z
    assert_eq!(
        detect_shape(boot),
        Some(VmmShape::SmolvmBootVm {
            boot_config: "/Users/u/Library/Caches/smolvm/vms/0123456789abcdef/boot-config.json"
                .into(),
            vm_dir: "/Users/u/Library/Caches/smolvm/vms/0123456789abcdef".into(),
        })
    );
    // A path with spaces in argv[0] and in the boot config survives `ps`.
    assert_eq!(
        detect_shape(by_pid(801)),
        Some(VmmShape::SmolvmBootVm {
            boot_config:
                "/Users/John Doe/Library/Caches/smolvm/vms/fedcba9876543210/boot-config.json".into(),
            vm_dir: "/Users/John Doe/Library/Caches/smolvm/vms/fedcba9876543210".into(),
        })
    );
    assert_eq!(
        detect_shape(by_pid(700)),
        Some(VmmShape::CelestoQemu {
            drives: vec!["/Users/u/.local/state/celesto/disks/sbx1.qcow2".into()],
            qmp_socket: Some("/tmp/qmp-sbx1.sock".into()),
            sandbox_id: Some("sbx1".into()),
        })
    );
    assert_eq!(
        detect_shape(by_pid(710)).unwrap().sandbox_id(),
        Some("sbx2")
    );
    assert_eq!(
        detect_shape(by_pid(720)).unwrap().sandbox_id(),
        Some("sbx3")
    );
    // Day padded with two spaces in lstart.
    assert_eq!(by_pid(700).start_time, 1_796_115_907); // 2026-12-01T09:05:07Z
}

#[test]
fn macos_forked_child_needs_a_smolvm_parent_or_init() {
    let procs = parse_ps_output(PS_FIXTURE);
    let cli = procs.iter().find(|p| p.pid == 610).unwrap();
    let child = procs.iter().find(|p| p.pid == 611).unwrap();
    // The CLI (parent: a shell) and the child share argv; only the parent tells them apart.
    assert_eq!(cli.argv, child.argv);
    assert_eq!(detect_shape(cli), None);
    // Alone, the child's parent (610) is unknown.
    assert_eq!(detect_shape(child), None);
    assert!(detect_all(&procs).iter().any(|(p, _)| p.pid == 611));
    // `machine ls` under init is not a VM.
    assert!(!detect_all(&procs).iter().any(|(p, _)| p.pid == 630));
}

#[test]
fn macos_hazard_9_shell_text_mentioning_boot_vm_is_not_a_vmm() {
    let procs = parse_ps_output(PS_FIXTURE);
    let shell = procs.iter().find(|p| p.pid == 800).unwrap();
    assert_eq!(shell.argv[0], "/bin/zsh");
    assert!(shell.argv.join(" ").contains("_boot-vm"));
    assert_eq!(detect_shape(shell), None);
}

#[test]
fn macos_unparseable_lines_are_skipped() {
    let text = "garbage\n  12 1 501 Mon Nov 30 03:10:04\n 13 1 501 Mon Nov 30 03:10:04 2026 /bin/sleep 5\n";
    let procs = parse_ps_output(text);
    assert_eq!(procs.len(), 1);
    assert_eq!(procs[0].argv, vec!["/bin/sleep", "5"]);
    assert_eq!(procs[0].comm, "sleep");
}
