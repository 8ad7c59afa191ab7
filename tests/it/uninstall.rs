//! Guided uninstall against the real upstream tools in scratch HOMEs.
//!
//! smolvm 1.32.2 comes from the `smolmachines` wheel laid out the way `install.sh` does it
//! (prefix `~/.smolvm` with the wrapper, `smolvm-bin`, `lib/`, templates and `.version`, the agent
//! rootfs in the data root, the `~/.local/bin/smolvm` symlink, a PATH block appended to a
//! `.bashrc` with the user's own lines); Celesto 0.1.10 comes from PyPI in a virtualenv. Machines
//! are created with the real CLI. Every test works in its own `tempfile` directory.
//!
//! The tools come from `scripts/setup/20-real-tools.sh` (PyPI, through pip), which exports
//! `SMOLSWEEP_SMOL_WHEEL` and `SMOLSWEEP_CELESTO_BIN`; a missing tool fails the test, nothing is
//! skipped. Run: `export SMOLSWEEP_REPO=$PWD; source scripts/setup/20-real-tools.sh;
//! cargo test --test it uninstall::`.

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use sha2::{Digest, Sha256};

use smolsweep_fixtures::real_tools::SMOLVM_VERSION;
use smolsweep_fixtures::vmm::{self, FakeVmm};

/// `<venv>/bin/celesto` (celesto 0.1.10), from `scripts/setup/20-real-tools.sh`.
fn celesto_bin() -> PathBuf {
    smolsweep_fixtures::real_tools::require_celesto_bin()
}

/// A script install of smolvm 1.32.2 under `home`, laid out as `install.sh` does it.
fn install_smolvm_script_layout(home: &Path) {
    smolsweep_fixtures::real_tools::install_smolvm_script_layout(home).unwrap();
}

/// The `.bashrc` text before the install, and after `install.sh` appended its PATH block.
fn write_bashrc_with_block(home: &Path) -> (String, String) {
    let before = "# my settings\nexport EDITOR=vim\nalias ll='ls -l'\n".to_string();
    let after = format!(
        "{before}\n# smolvm\nexport PATH=\"{}/.local/bin:$PATH\"\n",
        home.display()
    );
    std::fs::write(home.join(".bashrc"), &after).unwrap();
    (before, after)
}

fn base_path(home: &Path) -> String {
    format!("{}/.local/bin:/usr/local/bin:/usr/bin:/bin", home.display())
}

/// The real smolvm, as the user would run it.
fn smolvm(home: &Path, args: &[&str]) -> Output {
    Command::new(home.join(".local/bin/smolvm"))
        .args(args)
        .env_clear()
        .env("HOME", home)
        .env("PATH", base_path(home))
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn smolvm_ok(home: &Path, args: &[&str]) -> String {
    let o = smolvm(home, args);
    assert!(
        o.status.success(),
        "smolvm {args:?}: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Environment of a scratch Celesto user: `HOME`, the data directory in the usual place (set
/// explicitly: as root Celesto would prefer `/var/lib/celesto`), telemetry and checks off.
fn celesto_env(home: &Path) -> Vec<(String, String)> {
    let venv_bin = celesto_bin().parent().unwrap().to_path_buf();
    vec![
        ("HOME".into(), home.display().to_string()),
        (
            "PATH".into(),
            format!("{}:{}", venv_bin.display(), base_path(home)),
        ),
        (
            "CELESTO_DATA_DIR".into(),
            home.join(".local/state/celesto").display().to_string(),
        ),
        ("CELESTO_NO_TELEMETRY".into(), "1".into()),
        ("DO_NOT_TRACK".into(), "1".into()),
        ("CELESTO_DISABLE_VERSION_CHECK".into(), "1".into()),
        ("CELESTO_NO_KVM_REEXEC".into(), "1".into()),
    ]
}

fn celesto(home: &Path, args: &[&str]) -> Output {
    Command::new(celesto_bin())
        .args(args)
        .env_clear()
        .envs(celesto_env(home))
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// Smolsweep itself, with only the scratch user's environment.
fn smolsweep(home: &Path, extra: &[(String, String)], args: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_smolsweep"));
    c.args(args)
        .env_clear()
        .env("HOME", home)
        .env("PATH", base_path(home))
        .stdin(Stdio::null());
    for (k, v) in extra {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn scratch_home() -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let home = t.path().join("home");
    std::fs::create_dir(&home).unwrap();
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o700)).unwrap();
    (t, home)
}

/// A smolvm script install with two machines created by the real CLI, registry credentials and
/// a PATH block. Returns the `.bashrc` text before and after the install.
fn smolvm_home(home: &Path) -> (String, String) {
    install_smolvm_script_layout(home);
    let rc = write_bashrc_with_block(home);
    assert!(smolvm_ok(home, &["--version"]).contains(SMOLVM_VERSION));
    smolvm_ok(home, &["machine", "create", "--name", "demo"]);
    smolvm_ok(home, &["machine", "create", "--name", "demo2"]);
    std::fs::create_dir_all(home.join(".config/smolvm")).unwrap();
    std::fs::write(
        home.join(".config/smolvm/config.toml"),
        "[registries.\"ghcr.io\"]\nusername = \"me\"\npassword = \"secret\"\n",
    )
    .unwrap();
    // What upstream's uninstaller misses (hazard 17).
    for d in [
        "smolvm-registry/blobs/sha256",
        "smolvm-image-archives/fetched",
    ] {
        std::fs::create_dir_all(home.join(".cache").join(d)).unwrap();
    }
    std::fs::write(home.join(".cache/smolvm-registry/blobs/sha256/ab"), b"blob").unwrap();
    std::fs::write(
        home.join(".cache/smolvm-image-archives/fetched/x.tar"),
        b"img",
    )
    .unwrap();
    std::os::unix::fs::symlink(home.join(".smolvm/smol"), home.join(".local/bin/smol")).unwrap();
    rc
}

fn assert_clean(home: &Path, extra: &[(String, String)], product: &str) {
    let v = smolsweep(home, extra, &["verify", "--product", product]);
    let t = text(&v);
    assert!(v.status.success(), "verify not clean:\n{t}");
    assert!(
        t.contains(&format!("audited_home={}", home.display())),
        "{t}"
    );
    assert!(t.contains("result=clean"), "{t}");
}

#[test]
fn hazard_17_smolvm_uninstall_removes_upstream_leftovers_keeps_credentials_and_rc_file() {
    let (_t, home) = scratch_home();
    let (_before, after) = smolvm_home(&home);
    assert!(smolvm_ok(&home, &["machine", "ls", "-q"]).contains("demo2"));

    let o = smolsweep(&home, &[], &["uninstall", "--product", "smolvm", "--yes"]);
    let t = text(&o);
    assert!(o.status.success(), "uninstall failed:\n{t}");
    assert!(t.contains("Deleted machine: demo"), "{t}");
    assert!(t.contains("result=clean"), "{t}");
    assert_clean(&home, &[], "smolvm");

    for gone in [
        ".smolvm",
        ".local/share/smolvm",
        ".cache/smolvm",
        ".cache/smolvm-registry",
        ".cache/smolvm-image-archives",
        ".local/bin/smolvm",
        ".local/bin/smol",
    ] {
        assert!(
            std::fs::symlink_metadata(home.join(gone)).is_err(),
            "{gone} is still there"
        );
    }
    // Kept unless asked: registry credentials and the PATH block.
    assert!(home.join(".config/smolvm/config.toml").is_file());
    assert_eq!(
        std::fs::read_to_string(home.join(".bashrc")).unwrap(),
        after
    );
    assert!(t.contains("--remove-credentials"), "{t}");
    assert!(t.contains("--remove-path-block"), "{t}");
    // The same journal as prune recorded the machine deletions and the removals.
    // `history` is one line per run (issue 19); `history RUN` lists the run's items.
    let h = smolsweep(&home, &[], &["history", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&h.stdout).unwrap();
    let run = v["runs"][0]["plan_id"].as_str().unwrap().to_string();
    let h = smolsweep(&home, &[], &["history", &run]);
    let ht = text(&h);
    assert!(h.status.success(), "{ht}");
    assert!(ht.contains("Delete machine 'demo2'"), "{ht}");
    assert!(ht.contains("Remove smolvm data"), "{ht}");
}

#[test]
fn smolvm_uninstall_on_request_removes_credentials_and_only_the_path_lines() {
    let (_t, home) = scratch_home();
    let (before, _after) = smolvm_home(&home);
    let o = smolsweep(
        &home,
        &[],
        &[
            "uninstall",
            "--product",
            "smolvm",
            "--remove-credentials",
            "--remove-path-block",
            "--yes",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    assert!(!home.join(".config/smolvm").exists());
    // The rc file differs from the installed one only by the smolvm lines: it is byte for byte
    // the pre-install text again, and the installed text is kept in a backup.
    assert_eq!(
        std::fs::read(home.join(".bashrc")).unwrap(),
        before.as_bytes()
    );
    let backups: Vec<_> = std::fs::read_dir(&home)
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(".bashrc.smolsweep-backup-")
        })
        .collect();
    assert_eq!(backups.len(), 1);
    assert_clean(&home, &[], "smolvm");
}

/// Every file's content and metadata below `root`: (type+mode, size, atime, mtime, ctime,
/// content hash).
type Snapshot = BTreeMap<PathBuf, (u32, u64, (i64, i64), (i64, i64), (i64, i64), String)>;

fn snapshot(root: &Path) -> Snapshot {
    // Read without touching atimes: directories and files are opened with O_NOATIME.
    fn walk(p: &Path, out: &mut Snapshot) {
        use std::io::Read;
        let m = std::fs::symlink_metadata(p).unwrap();
        let hash = if m.file_type().is_file() {
            let mut f = smolsweep_fixtures::noatime::open(p).unwrap();
            let mut b = Vec::new();
            f.read_to_end(&mut b).unwrap();
            hex::encode(Sha256::digest(&b))
        } else if m.file_type().is_symlink() {
            std::fs::read_link(p).unwrap().display().to_string()
        } else {
            String::new()
        };
        // A symlink's atime is the one timestamp no reader can spare: Linux updates it on
        // readlink and whenever a path walk follows it (relatime included), and there is no
        // O_NOATIME for either. Finding launchers and PATH executables needs their targets.
        let atime = if m.file_type().is_symlink() {
            (0, 0)
        } else {
            (m.atime(), m.atime_nsec())
        };
        out.insert(
            p.to_path_buf(),
            (
                m.mode(),
                m.size(),
                atime,
                (m.mtime(), m.mtime_nsec()),
                (m.ctime(), m.ctime_nsec()),
                hash,
            ),
        );
        if m.file_type().is_dir() {
            for (e, _) in smolsweep_fixtures::noatime::read_dir(p).unwrap() {
                walk(&e, out);
            }
        }
    }
    let mut out = Snapshot::new();
    walk(root, &mut out);
    out
}

/// Give every hard-linked file below `root` its own inode. The shared layout hard-links the
/// wheel's files; other tests unlinking their links would change the shared inodes' ctime
/// while this test watches.
fn unshare_hard_links(root: &Path) {
    for e in walkdir::WalkDir::new(root).follow_links(false) {
        let e = e.unwrap();
        let m = std::fs::symlink_metadata(e.path()).unwrap();
        if m.file_type().is_dir() || m.nlink() <= 1 {
            continue;
        }
        let tmp = e.path().with_file_name(".unshare.tmp");
        if m.file_type().is_symlink() {
            let target = std::fs::read_link(e.path()).unwrap();
            std::os::unix::fs::symlink(&target, &tmp).unwrap();
        } else {
            std::fs::copy(e.path(), &tmp).unwrap();
            std::fs::set_permissions(&tmp, m.permissions()).unwrap();
        }
        std::fs::rename(&tmp, e.path()).unwrap();
    }
}

/// Make every atime older than its mtime, so that any read (relatime) would update it.
fn age_atimes(root: &Path) {
    use rustix::fs::{AtFlags, Timespec, Timestamps, CWD};
    for e in walkdir::WalkDir::new(root)
        .follow_links(false)
        .contents_first(true)
    {
        let e = e.unwrap();
        let m = std::fs::symlink_metadata(e.path()).unwrap();
        let ts = Timestamps {
            last_access: Timespec {
                tv_sec: m.mtime() - 3600,
                tv_nsec: 0,
            },
            last_modification: Timespec {
                tv_sec: m.mtime(),
                tv_nsec: m.mtime_nsec(),
            },
        };
        rustix::fs::utimensat(CWD, e.path(), &ts, AtFlags::SYMLINK_NOFOLLOW).unwrap();
    }
}

#[test]
fn dry_run_and_preflight_change_no_byte_or_timestamp() {
    let (t, home) = scratch_home();
    smolvm_home(&home);
    // Celesto files sharing ~/.smolvm, a Celesto home and data directory.
    std::fs::create_dir_all(home.join(".smolvm/keys")).unwrap();
    std::fs::write(home.join(".smolvm/keys/id_ed25519"), b"key").unwrap();
    std::fs::create_dir_all(home.join(".celesto/images/ubuntu-v0.1.10-amd64-qemu")).unwrap();
    std::fs::write(home.join(".celesto/credentials"), b"token").unwrap();
    std::fs::create_dir_all(home.join(".local/state/celesto/disks")).unwrap();
    unshare_hard_links(t.path());
    age_atimes(t.path());
    let before = snapshot(t.path());
    std::thread::sleep(std::time::Duration::from_millis(20));

    for args in [
        &["uninstall", "--dry-run"][..],
        &["uninstall", "--dry-run", "--json", "--product", "smolvm"],
        &[
            "uninstall",
            "--dry-run",
            "--remove-credentials",
            "--remove-path-block",
        ],
        // No --yes and stdin not a terminal: the plan is printed, nothing is done, exit 1.
        &["uninstall"],
        &["verify"],
        &["verify", "--json"],
    ] {
        let o = smolsweep(&home, &[], args);
        let code = o.status.code();
        match args {
            ["uninstall"] => assert_eq!(code, Some(1), "{}", text(&o)),
            ["verify", ..] => assert_eq!(code, Some(1), "machines exist:\n{}", text(&o)),
            _ => assert_eq!(code, Some(0), "{args:?}: {}", text(&o)),
        }
        let after = snapshot(t.path());
        for (p, v) in &before {
            assert_eq!(after.get(p), Some(v), "{args:?} changed {}", p.display());
        }
        assert_eq!(after.len(), before.len(), "{args:?} created files");
    }
    let o = smolsweep(&home, &[], &["uninstall", "--dry-run", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["dry_run"], true);
    let machines: Vec<&str> = v["preflight"]["machines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(machines, ["demo", "demo2"]);
    assert!(v["preflight"]["installs"]
        .as_array()
        .unwrap()
        .iter()
        .any(|i| i["method"] == "script" && i["version"] == SMOLVM_VERSION));
}

/// A Celesto user: the real CLI in a venv, its data directory (with a sandbox row and disk),
/// an image cache, SSH keys and credentials.
fn celesto_home(home: &Path) {
    let o = celesto(home, &["sandbox", "prune", "--dry-run", "--json"]);
    assert!(o.status.success(), "{}", text(&o));
    let data = home.join(".local/state/celesto");
    assert!(data.join("celesto.db").is_file());
    let img = home.join(".celesto/images/ubuntu-v0.1.10-amd64-qemu");
    let config = serde_json::json!({
        "vm_id": "sbx1", "preset": null, "vcpu_count": 1, "memory": 256,
        "guest_os": "alpine", "boot_mode": "direct_kernel",
        "kernel_path": img.join("vmlinux.bin"), "initrd_path": img.join("initrd.img"),
        "rootfs_path": data.join("disks/sbx1.qcow2"), "rootfs_format": "qcow2",
        "macos_machine": null, "extra_drives": [],
        "boot_args": "console=ttyS0 reboot=k panic=1 rdinit=/init", "ssh_capable": false,
        "backend": "qemu", "qemu_network": "slirp", "qemu_machine": "auto",
        "disk_mode": "isolated", "disk_size_mib": null, "grow_filesystem": false,
        "retain_disk_on_delete": false, "env_vars": {}, "network_rate_limit_mbps": null,
        "port_forwards": [], "vsock": null, "comm_channel": null, "internet_settings": null,
        "workspace_mounts": [], "ssh_public_key": null, "guest_managed_networking": false,
        "network_attachment": {"mode": "nat", "bridge": null}
    });
    let network = serde_json::json!({
        "guest_ip": "10.0.2.15", "gateway_ip": "10.0.2.2", "netmask": "255.255.255.0",
        "tap_device": "usernet", "guest_mac": "AA:FC:00:00:08:99", "ssh_host_port": 2200,
        "egress_proxy_host_port": null, "mode": "nat", "bridge": null
    });
    let conn = rusqlite::Connection::open(data.join("celesto.db")).unwrap();
    conn.execute(
        "INSERT INTO vms (id, status, config, network, pid, socket_path, display, created_at, \
         updated_at) VALUES ('sbx1', 'created', ?1, ?2, NULL, NULL, NULL, \
         '2026-01-01T00:00:00+00:00', '2026-01-01T00:00:00+00:00')",
        [config.to_string(), network.to_string()],
    )
    .unwrap();
    drop(conn);
    std::fs::write(data.join("disks/sbx1.qcow2"), b"disk").unwrap();
    std::fs::write(data.join("sbx1.log"), b"log").unwrap();
    std::fs::create_dir_all(&img).unwrap();
    std::fs::write(img.join("rootfs.ext4"), vec![0u8; 4096]).unwrap();
    std::fs::create_dir_all(home.join(".celesto/keys")).unwrap();
    std::fs::write(home.join(".celesto/keys/id_ed25519"), b"private").unwrap();
    std::fs::write(home.join(".celesto/keys/id_ed25519.pub"), b"public").unwrap();
    std::fs::write(home.join(".celesto/credentials"), b"token").unwrap();
    let l = celesto(home, &["sandbox", "list", "--all", "--json"]);
    assert!(text(&l).contains("sbx1"), "{}", text(&l));
}

#[test]
fn celesto_uninstall_leaves_verify_clean_and_keeps_keys() {
    let (tmp, home) = scratch_home();
    celesto_home(&home);
    // The shared socket directory: sbx1's launcher config and vsock socket, and a file of a
    // sandbox this HOME does not have.
    let sockets = tmp.path().join("sockets");
    std::fs::create_dir_all(&sockets).unwrap();
    let hex32 = "0123456789abcdef0123456789abcdef";
    for f in [
        format!("libkrun-sbx1-{hex32}.json"),
        "vsock-sbx1.sock".to_string(),
        format!("libkrun-other-{hex32}.json"),
    ] {
        std::fs::write(sockets.join(f), b"{}").unwrap();
    }
    let mut env = celesto_env(&home);
    env.push(("SMOLSWEEP_SOCKET_DIR".into(), sockets.display().to_string()));
    let o = smolsweep(&home, &env, &["uninstall", "--product", "celesto", "--yes"]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("Delete sandbox 'sbx1'"), "{t}");
    let mut left: Vec<String> = std::fs::read_dir(&sockets)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, [format!("libkrun-other-{hex32}.json")]);
    assert_clean(&home, &env, "celesto");
    assert!(!home.join(".local/state/celesto").exists());
    assert!(!home.join(".celesto/images").exists());
    assert!(home.join(".celesto/keys/id_ed25519").is_file());
    assert!(home.join(".celesto/credentials").is_file());
    // The package itself is the user's to remove: shown as a pip command.
    assert!(t.contains("-m pip uninstall celesto"), "{t}");
}

#[test]
fn uninstalling_smolvm_leaves_celesto_sharing_dot_smolvm_working() {
    let (_t, home) = scratch_home();
    smolvm_home(&home);
    celesto_home(&home);
    // Older Celesto / PyPI smolvm files inside the shared ~/.smolvm.
    std::fs::create_dir_all(home.join(".smolvm/keys")).unwrap();
    std::fs::write(home.join(".smolvm/keys/id_ed25519"), b"legacy").unwrap();
    std::fs::create_dir_all(home.join(".smolvm/forwards")).unwrap();
    let env = celesto_env(&home);

    let o = smolsweep(&home, &env, &["uninstall", "--product", "smolvm", "--yes"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_clean(&home, &env, "smolvm");
    // ~/.smolvm keeps only what is not smol-machines'.
    let mut left: Vec<String> = std::fs::read_dir(home.join(".smolvm"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["forwards", "keys"]);
    // Celesto still works and still lists its state.
    let l = celesto(&home, &["sandbox", "list", "--all", "--json"]);
    assert!(
        l.status.success() && text(&l).contains("sbx1"),
        "{}",
        text(&l)
    );
    assert!(home.join(".local/state/celesto/disks/sbx1.qcow2").is_file());

    // Then Celesto: keys stay (asked for nothing), the rest goes.
    let o = smolsweep(&home, &env, &["uninstall", "--product", "celesto", "--yes"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_clean(&home, &env, "all");
    assert!(home.join(".smolvm/keys/id_ed25519").is_file());
    assert!(!home.join(".smolvm/forwards").exists());
}

#[test]
fn uninstalling_celesto_leaves_smolvm_working() {
    let (_t, home) = scratch_home();
    smolvm_home(&home);
    celesto_home(&home);
    std::fs::create_dir_all(home.join(".smolvm/images/ubuntu-v0.0.36-amd64-qemu")).unwrap();
    let env = celesto_env(&home);
    let o = smolsweep(&home, &env, &["uninstall", "--product", "celesto", "--yes"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_clean(&home, &env, "celesto");
    assert!(!home.join(".smolvm/images").exists());
    let ls = smolvm_ok(&home, &["machine", "ls", "-q"]);
    assert!(ls.contains("demo") && ls.contains("demo2"), "{ls}");
    assert!(home.join(".smolvm/smolvm-bin").is_file());
    // smolvm's state is not "clean" while its machines exist.
    let v = smolsweep(&home, &env, &["verify", "--product", "smolvm"]);
    assert_eq!(v.status.code(), Some(1), "{}", text(&v));
}

/// A process shaped like smolvm's exec'd boot child for the machine directory `vm_dir`.
fn boot_vm(vm_dir: &Path) -> FakeVmm {
    let argv = [
        "/proc/self/exe".to_string(),
        "_boot-vm".to_string(),
        vm_dir.join("boot-config.json").display().to_string(),
    ];
    stand_in_vmm(&argv, "libkrun VM", None)
}

/// The stand-in VMM (`examples/fake_vmm.rs`) with this argv (argv[0] included), comm and HOME.
fn stand_in_vmm(argv: &[String], comm: &str, home: Option<&Path>) -> FakeVmm {
    let bin = vmm::standin_bin(Path::new(env!("CARGO_TARGET_TMPDIR")));
    vmm::spawn(
        &bin,
        &vmm::Shape {
            argv: argv.to_vec(),
            comm: Some(comm),
            home,
            ..Default::default()
        },
    )
}

#[test]
fn hazard_28_verify_names_the_audited_home_and_sees_only_its_vms() {
    let (_ta, a) = scratch_home();
    let (_tb, b) = scratch_home();
    let vm_dir = a.join(".cache/smolvm/vms/0123456789abcdef");
    std::fs::create_dir_all(&vm_dir).unwrap();
    std::fs::write(vm_dir.join("name"), b"ghost").unwrap();
    std::fs::write(vm_dir.join("storage.raw"), b"disk").unwrap();
    let vmm = boot_vm(&vm_dir);

    // Another HOME is clean, and says which HOME it audited.
    let o = smolsweep(&b, &[], &["verify"]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains(&format!("audited_home={}", b.display())), "{t}");

    // The VM's own HOME is dirty: its process and its directory, with what removes them.
    let o = smolsweep(&a, &[], &["verify"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains(&format!("audited_home={}", a.display())), "{t}");
    assert!(t.contains("vm_processes=FAIL"), "{t}");
    assert!(t.contains("vm_dirs=FAIL"), "{t}");
    assert!(t.contains(&format!("VM process {}", vmm.pid())), "{t}");
    assert!(t.contains("result=dirty"), "{t}");
    let j = smolsweep(&a, &[], &["verify", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&j.stdout).unwrap();
    assert_eq!(v["result"], "dirty");
    assert_eq!(v["audited_home"], a.display().to_string());

    // The uninstall reaps this HOME's survivor and removes its directory; verify is clean.
    let o = smolsweep(&a, &[], &["uninstall", "--product", "smolvm", "--yes"]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(!vmm::alive(vmm.pid()), "the VM process survived:\n{t}");
    assert!(!vm_dir.exists());
    assert_clean(&a, &[], "all");
}

#[test]
fn hazard_8_forked_and_renamed_vms_are_no_false_clean() {
    let (_t, home) = scratch_home();
    let smolvm_bin = home.join(".smolvm/smolvm-bin").display().to_string();
    // A forked pack-run VM: argv inherited from the CLI, recognisable only by its comm; tied to
    // this HOME by its environment.
    let forked = stand_in_vmm(
        &[
            smolvm_bin,
            "pack".into(),
            "run".into(),
            "app.smolmachine".into(),
        ],
        "libkrun VM",
        Some(&home),
    );
    let o = smolsweep(&home, &[], &["verify"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains(&format!("VM process {}", forked.pid())), "{t}");
    drop(forked);
    assert_clean(&home, &[], "all");

    // A boot child renamed after the host (`VM:$HOSTNAME`), which a `libkrun VM` comm match
    // misses.
    let vm_dir = home.join(".cache/smolvm/vms/0123456789abcdef");
    std::fs::create_dir_all(&vm_dir).unwrap();
    let argv = [
        "/proc/self/exe".to_string(),
        "_boot-vm".to_string(),
        vm_dir.join("boot-config.json").display().to_string(),
    ];
    let renamed = stand_in_vmm(&argv, "VM:buildhost", None);
    let o = smolsweep(&home, &[], &["verify"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains(&format!("VM process {}", renamed.pid())), "{t}");
    // The directory itself is empty: not state (hazard 29).
    assert!(t.contains("vm_dirs=none"), "{t}");
}

#[test]
fn hazard_29_excluded_and_empty_vm_dirs_are_not_leaks() {
    let (_t, home) = scratch_home();
    let vms = home.join(".cache/smolvm/vms");
    for d in [
        "_shared/abc",
        "_restore-checkpoints/c1",
        "_restore-base/b1",
        "_cow-bases/d1",
        "checkpoint-unpack",
        "fedcba9876543210",
    ] {
        std::fs::create_dir_all(vms.join(d)).unwrap();
    }
    std::fs::write(
        vms.join("_restore-checkpoints/c1/memory.bin"),
        vec![1u8; 8192],
    )
    .unwrap();
    std::fs::write(vms.join("_shared/abc/layer"), b"x").unwrap();
    for f in [".demo.fork-operation.lock", ".artifact-cache.lock"] {
        std::fs::write(vms.join(f), b"").unwrap();
    }
    let o = smolsweep(&home, &[], &["verify", "--product", "smolvm"]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("vm_dirs=none"), "{t}");
    assert!(t.contains("empty_vm_dirs=1"), "{t}");
    assert!(t.contains("restore_cache=present"), "{t}");

    std::fs::write(vms.join("fedcba9876543210/name"), b"left").unwrap();
    let o = smolsweep(&home, &[], &["verify", "--product", "smolvm"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(
        t.contains("vm_dirs=FAIL expected=none actual=1 remaining"),
        "{t}"
    );
    assert!(t.contains("fedcba9876543210"), "{t}");
}

#[test]
fn hazard_19_machine_dirs_under_smolvm_data_dir_are_checked() {
    let (t, home) = scratch_home();
    let d = t.path().join("relocated");
    let vm = d.join(".cache/smolvm/vms/00112233aabbccdd");
    std::fs::create_dir_all(&vm).unwrap();
    std::fs::write(vm.join("storage.raw"), b"disk").unwrap();
    // Upstream's scripts look in $SMOLVM_DATA_DIR/vms, where nothing is.
    std::fs::create_dir_all(d.join("vms")).unwrap();
    let env = [("SMOLVM_DATA_DIR".to_string(), d.display().to_string())];
    let o = smolsweep(&home, &env, &["verify", "--product", "smolvm"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("00112233aabbccdd"), "{t}");
}

#[test]
fn protected_dir_must_be_untouched_since_the_date() {
    let (t, home) = scratch_home();
    let real = t.path().join("real-install");
    std::fs::create_dir_all(real.join(".smolvm")).unwrap();
    std::fs::write(real.join(".smolvm/.version"), b"1.32.2\n").unwrap();
    let o = smolsweep(&home, &[], &["verify"]);
    assert!(text(&o).contains("protected=not_checked"), "{}", text(&o));
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 1;
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let args = [
        "verify",
        "--protected",
        real.to_str().unwrap(),
        "--since",
        &since.to_string(),
    ];
    let o = smolsweep(&home, &[], &args);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(
        out.contains(&format!("protected_untouched_since_{since}=ok")),
        "{out}"
    );
    std::thread::sleep(std::time::Duration::from_millis(1100));
    std::fs::write(real.join(".smolvm/.version"), b"1.32.3\n").unwrap();
    let o = smolsweep(&home, &[], &args);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("FAIL"), "{out}");
    assert!(out.contains(".version was modified"), "{out}");
    // A bad date is a usage error.
    let o = smolsweep(
        &home,
        &[],
        &["verify", "--protected", "/x", "--since", "soon"],
    );
    assert_eq!(o.status.code(), Some(2));
}

mod library {
    //! The same procedure through the library: plans edited the way the wizard edits them.

    use super::*;
    use smolsweep::env::EnvSnapshot;
    use smolsweep::exec::Outcome;
    use smolsweep::model::Platform;
    use smolsweep::plan::Action;
    use smolsweep::uninstall::plan::{self, ProductChoice, UninstallOptions};
    use smolsweep::uninstall::preflight;
    use smolsweep::uninstall::run;

    /// Run every checked step of `plan` as `uninstall --yes` confirms it (a journal of its
    /// own, no progress).
    fn run_yes(
        plan: &plan::UninstallPlan,
        runner: &dyn smolsweep::exec::ActionRunner,
        judge: &mut dyn smolsweep::exec::Judge,
    ) -> run::RunReport {
        let journal = tempfile::tempdir().unwrap();
        let road = smolsweep::exec::Road::given(judge, runner)
            .journal_at(journal.path().join("journal.jsonl"));
        run::run_with(plan, smolsweep::exec::How::YesFlag, "cli", road).unwrap()
    }

    /// The real judge, in the scratch HOME's environment.
    fn rejudge(env: &smolsweep::env::EnvSnapshot, platform: Platform) -> smolsweep::exec::Rejudge {
        smolsweep::exec::Rejudge::new(smolsweep::scan::ScanOptions {
            env: env.clone(),
            platform,
            age_guard: std::time::Duration::from_secs(120),
            now: std::time::SystemTime::now(),
        })
    }

    fn env_for(home: &Path, path: &str) -> EnvSnapshot {
        EnvSnapshot::from_pairs(home, [("PATH", path.to_string())])
    }

    fn smolvm_only() -> UninstallOptions {
        UninstallOptions {
            product: ProductChoice::Smolvm,
            ..UninstallOptions::default()
        }
    }

    /// A VM started between the preflight and "yes" uses files in a root the plan removes:
    /// the removal is re-judged when it runs and leaves that root in place.
    #[test]
    fn machine_started_between_uninstall_preflight_and_confirmation_keeps_its_files() {
        let (_t, home) = scratch_home();
        smolvm_home(&home);
        let env = env_for(&home, &base_path(&home));
        let pre = preflight::gather_with(&env, Platform::Linux, &[], Some(&[]));
        let mut p = plan::build(&pre, &smolvm_only());
        // Only the removals (the machines' own CLI steps are tested elsewhere).
        for i in 0..p.steps.len() {
            let removal = matches!(p.steps[i].action, Action::RemoveTree { .. });
            p.set_checked(i, removal);
        }
        // A VM starts, holding a disk open inside a root the plan removes.
        let vm_dir = p
            .checked()
            .find_map(|s| match &s.action {
                Action::RemoveTree { path, .. } if path.is_dir() => Some(path.clone()),
                _ => None,
            })
            .expect("a directory to remove");
        let disk = vm_dir.join("busy-storage.raw");
        std::fs::write(&disk, b"disk").unwrap();
        let bin = vmm::standin_bin(Path::new(env!("CARGO_TARGET_TMPDIR")));
        let vm = vmm::spawn(
            &bin,
            &vmm::Shape {
                argv: vec!["qemu-system-x86_64".into(), "-nographic".into()],
                comm: None,
                open: Some(&disk),
                home: Some(&home),
            },
        );
        let r = run_yes(
            &p,
            &run::runner_for(&p, &env, Platform::Linux),
            &mut rejudge(&env, Platform::Linux),
        );
        let why = r
            .records
            .iter()
            .find_map(|rec| match (&rec.action, &rec.result) {
                (Action::RemoveTree { path, .. }, Outcome::Skipped { why, .. })
                    if vm_dir.starts_with(path) =>
                {
                    Some(why.clone())
                }
                _ => None,
            })
            .unwrap_or_else(|| panic!("{:#?}", r.records));
        assert!(why.contains(&vm.pid().to_string()), "{why}");
        assert!(disk.exists(), "a running VM's disk was removed");
        assert!(vmm::alive(vm.pid()));
    }

    #[test]
    fn hazard_3_a_name_gone_since_planning_never_reaches_the_cli() {
        let (_t, home) = scratch_home();
        smolvm_home(&home);
        let env = env_for(&home, &base_path(&home));
        let pre = preflight::gather_with(&env, Platform::Linux, &[], Some(&[]));
        let mut p = plan::build(&pre, &smolvm_only());
        // Tick only the machine steps (what a user unticking the rest would do).
        for i in 0..p.steps.len() {
            let machine = matches!(p.steps[i].action, Action::DeleteMachine { .. });
            p.set_checked(i, machine);
        }
        assert_eq!(p.checked_count(), 2);
        // 'demo' disappears between planning and running.
        smolvm_ok(&home, &["machine", "delete", "--name", "demo", "--force"]);
        let vms = home.join(".cache/smolvm/vms");
        let listing = |d: &Path| -> Vec<String> {
            std::fs::read_dir(d)
                .map(|r| {
                    r.flatten()
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default()
        };
        let before: Vec<String> = listing(&vms);

        let r = run_yes(
            &p,
            &run::runner_for(&p, &env, Platform::Linux),
            &mut rejudge(&env, Platform::Linux),
        );
        let outcome = |name: &str| {
            r.records
                .iter()
                .find(
                    |rec| matches!(&rec.action, Action::DeleteMachine { name: n, .. } if n == name),
                )
                .map(|rec| rec.result.clone())
                .unwrap()
        };
        assert!(
            matches!(outcome("demo"), Outcome::Skipped { ref why, .. } if why.contains("not passed to the CLI")),
            "{:?}",
            outcome("demo")
        );
        assert!(matches!(outcome("demo2"), Outcome::Done { .. }));
        // No state for the ghost name: no machine dir, no fork-operation lock.
        let hash = smolsweep_fixtures::smolvm::Smolvm::hash("demo");
        let new: Vec<String> = listing(&vms)
            .into_iter()
            .filter(|n| !before.contains(n))
            .collect();
        assert!(
            !new.iter().any(|n| n == &hash || n.starts_with(".demo.")),
            "{new:?}"
        );
        // Unticked steps were not carried out.
        assert!(r
            .records
            .iter()
            .filter(|rec| matches!(rec.action, Action::RemoveTree { .. }))
            .all(|rec| rec.result == Outcome::skipped("unticked")));
        assert!(home.join(".smolvm/smolvm-bin").is_file());
        assert!(home.join(".local/share/smolvm/agent-rootfs").is_dir());
    }

    #[test]
    fn a_path_replaced_since_planning_is_left_alone() {
        let (_t, home) = scratch_home();
        let reg = home.join(".cache/smolvm-registry");
        let archives = home.join(".cache/smolvm-image-archives");
        std::fs::create_dir_all(reg.join("blobs/sha256")).unwrap();
        std::fs::create_dir_all(archives.join("x")).unwrap();
        let env = env_for(&home, "/usr/bin:/bin");
        let pre = preflight::gather_with(&env, Platform::Linux, &[], Some(&[]));
        let p = plan::build(&pre, &smolvm_only());
        // Between plan and run, the registry cache is replaced by something else (the old one
        // is moved aside first, so its inode cannot be reused by the new one).
        let aside = home.join(".cache/aside");
        std::fs::rename(&reg, &aside).unwrap();
        std::fs::create_dir_all(&reg).unwrap();
        std::fs::write(reg.join("new"), b"not what was planned").unwrap();
        let r = run_yes(
            &p,
            &run::runner_for(&p, &env, Platform::Linux),
            &mut rejudge(&env, Platform::Linux),
        );
        let outcome = |dir: &Path| {
            r.records
                .iter()
                .find(|rec| matches!(&rec.action, Action::RemoveTree { path, .. } if path == dir))
                .map(|rec| rec.result.clone())
                .unwrap()
        };
        assert!(
            matches!(outcome(&reg), Outcome::Skipped { ref why, .. } if why.contains("something else")),
            "{:?}",
            outcome(&reg)
        );
        assert!(reg.join("new").is_file());
        assert!(aside.join("blobs").is_dir());
        assert!(matches!(outcome(&archives), Outcome::Done { .. }));
        assert!(!archives.exists());
    }

    /// A stand-in smolvm whose first `delete` fails the way a guest that cannot freeze its file
    /// system does (hazard 22), recording every call.
    const FAKE_SMOLVM: &str = r#"#!/usr/bin/env python3
import os, sqlite3, sys
home = os.environ["HOME"]
args = sys.argv[1:]
with open(os.path.join(home, "cli.log"), "a") as f:
    f.write(" ".join(args) + "\n")
db = os.path.join(home, ".local/share/smolvm/server/smolvm.db")
if args[:2] == ["machine", "stop"]:
    sys.stderr.write("Error: agent operation failed: stop agent: guest did not confirm filesystem synchronization; left the VM alive for retry\n")
    sys.exit(1)
if args[:2] == ["machine", "delete"]:
    name = args[args.index("--name") + 1]
    marker = os.path.join(home, "fs-sync-failed")
    if not os.path.exists(marker):
        open(marker, "w").close()
        sys.stderr.write("Error: agent operation failed: stop agent: guest did not confirm filesystem synchronization; left the VM alive for retry: agent operation failed: shutdown ack: freeze /oldroot/mnt/overlay: I/O error (os error 5)\n")
        sys.exit(1)
    c = sqlite3.connect(db)
    c.execute("DELETE FROM vms WHERE name = ?", (name,))
    c.commit()
    print("Deleted machine: " + name)
    sys.exit(0)
sys.exit(2)
"#;

    #[test]
    fn hazard_22_fs_sync_failure_reaps_then_deletes() {
        let (_t, home) = scratch_home();
        let prefix = home.join(".smolvm");
        std::fs::create_dir_all(prefix.join("lib")).unwrap();
        std::fs::create_dir_all(home.join(".local/bin")).unwrap();
        std::fs::write(prefix.join("smolvm-bin"), FAKE_SMOLVM).unwrap();
        std::fs::write(prefix.join(".version"), "1.32.2\n").unwrap();
        std::fs::write(
            prefix.join("smolvm"),
            "#!/usr/bin/env bash\nset -e\n\
             d=\"$(cd \"$(dirname \"$(readlink -f \"${BASH_SOURCE[0]}\")\")\" && pwd)\"\n\
             export LD_LIBRARY_PATH=\"$d/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\"\n\
             exec \"$d/smolvm-bin\" \"$@\"\n",
        )
        .unwrap();
        for f in ["smolvm", "smolvm-bin"] {
            std::fs::set_permissions(prefix.join(f), std::fs::Permissions::from_mode(0o755))
                .unwrap();
        }
        std::os::unix::fs::symlink(prefix.join("smolvm"), home.join(".local/bin/smolvm")).unwrap();
        let vm_dir = home
            .join(".cache/smolvm/vms")
            .join(smolsweep_fixtures::smolvm::Smolvm::hash("demo"));
        std::fs::create_dir_all(&vm_dir).unwrap();
        std::fs::write(vm_dir.join("name"), b"demo").unwrap();
        let vmm = boot_vm(&vm_dir);
        let db = home.join(".local/share/smolvm/server/smolvm.db");
        std::fs::create_dir_all(db.parent().unwrap()).unwrap();
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute(
            "CREATE TABLE vms (name TEXT PRIMARY KEY NOT NULL, data BLOB NOT NULL)",
            [],
        )
        .unwrap();
        let data = serde_json::json!({"name": "demo", "state": "running", "pid": vmm.pid()});
        conn.execute(
            "INSERT INTO vms (name, data) VALUES ('demo', ?1)",
            [serde_json::to_vec(&data).unwrap()],
        )
        .unwrap();
        drop(conn);

        let o = smolsweep(&home, &[], &["uninstall", "--product", "smolvm", "--yes"]);
        let t = text(&o);
        // The stop cannot sync (skipped, said why), the delete reaps the VMM and succeeds on
        // the retry.
        assert!(t.contains("Deleted machine: demo"), "{t}");
        assert!(!vmm::alive(vmm.pid()), "{t}");
        let log = std::fs::read_to_string(home.join("cli.log")).unwrap();
        assert_eq!(
            log.lines()
                .filter(|l| l.starts_with("machine delete"))
                .count(),
            2,
            "{log}"
        );
        assert!(log
            .lines()
            .all(|l| !l.starts_with("machine delete") || l.contains("--force")));
        assert!(t.contains("result=clean"), "{t}");
        assert!(t.contains("skipped: Stop machine 'demo'"), "{t}");
        assert_eq!(o.status.code(), Some(0), "{t}");
    }

    /// Stand-in `hdiutil`: logs each call and whether the mount point's directory existed then;
    /// a path with `b0000001` (busy) fails without `-force`, a path with `stuck` always fails.
    const FAKE_HDIUTIL: &str = r#"#!/bin/sh
for a in "$@"; do mp="$a"; done
force=no
for a in "$@"; do [ "$a" = "-force" ] && force=yes; done
if [ -d "$mp" ]; then state=exists; else state=missing; fi
echo "$* $state" >> "$HDIUTIL_LOG"
case "$mp" in
  *stuck*) echo "hdiutil: detach failed - Resource busy" >&2; exit 16 ;;
  *b0000001*) [ "$force" = yes ] && exit 0; echo "hdiutil: detach failed - Resource busy" >&2; exit 16 ;;
esac
exit 0
"#;

    #[test]
    fn macos_mounts_are_detached_first_busy_is_forced_and_a_stuck_one_blocks_its_parent() {
        let (t, home) = scratch_home();
        let caches = home.join("Library/Caches");
        let ok = caches.join("smolvm-pack/1a2b3c4d/layers-cs");
        let busy = caches.join("smolvm-pack/b0000001/layers-cs");
        let stuck = caches.join("smolvm/vms/stuck00000000000/pack/layers-cs");
        for m in [&ok, &busy, &stuck] {
            std::fs::create_dir_all(m).unwrap();
        }
        let bin = t.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(bin.join("hdiutil"), FAKE_HDIUTIL).unwrap();
        std::fs::set_permissions(bin.join("hdiutil"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        let log = t.path().join("hdiutil.log");
        let mut env = env_for(&home, &format!("{}:/usr/bin:/bin", bin.display()));
        env.vars
            .insert("HDIUTIL_LOG".into(), log.display().to_string());

        // macOS `mount` output: the three layers-cs images, plus mounts that are not smolvm's.
        let table = format!(
            "/dev/disk3s1s1 on / (apfs, sealed, local, read-only, journaled)\n\
             /dev/disk5s1 on {} (apfs, local, nodev, nosuid, journaled, noowners, nobrowse)\n\
             /dev/disk6s1 on {} (apfs, local, nodev, nosuid, journaled, noowners, nobrowse)\n\
             /dev/disk7s1 on {} (apfs, local, nodev, nosuid, journaled, noowners, nobrowse)\n\
             /dev/disk8s1 on {} (apfs, local, nodev, nosuid, journaled, noowners, nobrowse)\n",
            ok.display(),
            busy.display(),
            stuck.display(),
            t.path().join("elsewhere/layers-cs").display(),
        );
        let entries = preflight::parse_mount_output(&table);
        let pre = preflight::gather_with(&env, Platform::Macos, &[], Some(&entries));
        assert_eq!(pre.mounts.len(), 3, "{:?}", pre.mounts);
        let p = plan::build(&pre, &smolvm_only());
        let first_remove = p
            .steps
            .iter()
            .position(|s| matches!(s.action, Action::RemoveTree { .. }))
            .unwrap();
        let last_detach = p
            .steps
            .iter()
            .rposition(|s| matches!(s.action, Action::Detach { .. }))
            .unwrap();
        assert!(last_detach < first_remove);

        let r = run_yes(
            &p,
            &run::runner_for(&p, &env, Platform::Macos),
            &mut rejudge(&env, Platform::Macos),
        );
        let calls = std::fs::read_to_string(&log).unwrap();
        let lines: Vec<&str> = calls.lines().collect();
        assert_eq!(
            lines,
            [
                // Deepest first; every parent still there when its mount is detached.
                format!("detach {} exists", stuck.display()),
                format!("detach -force {} exists", stuck.display()),
                format!("detach {} exists", ok.display()),
                format!("detach {} exists", busy.display()),
                format!("detach -force {} exists", busy.display()),
            ]
        );
        // The pack cache went; the cache root holding the stuck mount stayed, reported.
        assert!(!caches.join("smolvm-pack").exists());
        assert!(stuck.exists());
        let blocked = r
            .records
            .iter()
            .find(|rec| {
                matches!(&rec.action, Action::RemoveTree { path, .. } if *path == caches.join("smolvm"))
            })
            .unwrap();
        assert!(
            matches!(&blocked.result, Outcome::Failed { error } if error.contains("still mounted")),
            "{:?}",
            blocked.result
        );
        assert!(r.any_failed());
    }
}

#[test]
fn nothing_installed_means_nothing_to_do_and_nothing_created() {
    let (_t, home) = scratch_home();
    for args in [&["uninstall"][..], &["uninstall", "--yes"], &["verify"]] {
        let o = smolsweep(&home, &[], args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", text(&o));
        if args[0] == "uninstall" {
            assert!(text(&o).contains("Nothing to do."), "{}", text(&o));
        }
    }
    let o = smolsweep(&home, &[], &["uninstall", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["plan"]["steps"].as_array().unwrap().len(), 0);
    assert_eq!(std::fs::read_dir(&home).unwrap().count(), 0);
    // Usage errors exit 2.
    let o = smolsweep(&home, &[], &["uninstall", "--product", "both"]);
    assert_eq!(o.status.code(), Some(2));
}

/// On a terminal (a pseudo-terminal from util-linux `script`), the user is asked with the step
/// count and bytes; anything but yes does nothing and exits 1.
#[test]
fn a_terminal_is_asked_and_only_yes_proceeds() {
    let (_t, home) = scratch_home();
    let reg = home.join(".cache/smolvm-registry/blobs");
    std::fs::create_dir_all(&reg).unwrap();
    std::fs::write(reg.join("b"), vec![7u8; 10_000]).unwrap();
    let ask = |answer: &str| {
        let cmd = format!(
            "env -i HOME={} PATH=/usr/bin:/bin {} uninstall",
            home.display(),
            env!("CARGO_BIN_EXE_smolsweep")
        );
        let mut c = Command::new("script")
            .args(["-qec", &cmd, "/dev/null"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("util-linux script");
        use std::io::Write;
        c.stdin
            .take()
            .unwrap()
            .write_all(answer.as_bytes())
            .unwrap();
        c.wait_with_output().unwrap()
    };
    let o = ask("n\n");
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("Carry out 1 step, freeing about"), "{t}");
    assert!(t.contains("Nothing done: not confirmed (exit 1)."), "{t}");
    assert!(reg.join("b").is_file());
    let o = ask("y\n");
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains("result=clean"), "{t}");
    assert!(!home.join(".cache/smolvm-registry").exists());
}

/// Machines branched from others (smolvm's `golden`): the plan deletes every branch before the
/// machine it was branched from, each in its own step, so no delete needs `--cascade` (which
/// would also take branches the plan does not show). Real smolvm 1.32.2.
#[test]
fn branched_machines_are_uninstalled_branches_first_each_in_its_own_step() {
    let (_t, home) = scratch_home();
    smolvm_home(&home);
    smolvm_ok(&home, &["machine", "create", "--name", "kid"]);
    smolvm_ok(&home, &["machine", "create", "--name", "grandkid"]);
    let db = home.join(".local/share/smolvm/server/smolvm.db");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.busy_timeout(std::time::Duration::from_secs(10))
        .unwrap();
    for (name, golden) in [("kid", "demo"), ("grandkid", "kid")] {
        let n = conn
            .execute(
                "UPDATE vms SET data = CAST(json_set(CAST(data AS TEXT), '$.golden', ?2) AS BLOB) \
                 WHERE name = ?1",
                [name, golden],
            )
            .unwrap();
        assert_eq!(n, 1);
    }
    drop(conn);

    let dry = smolsweep(
        &home,
        &[],
        &["uninstall", "--product", "smolvm", "--dry-run"],
    );
    let t = text(&dry);
    assert!(dry.status.success(), "{t}");
    let at = |m: &str| {
        t.find(&format!("Delete machine '{m}'"))
            .unwrap_or_else(|| panic!("no step for {m}:\n{t}"))
    };
    assert!(at("grandkid") < at("kid") && at("kid") < at("demo"), "{t}");

    let o = smolsweep(&home, &[], &["uninstall", "--product", "smolvm", "--yes"]);
    let t = text(&o);
    assert!(o.status.success(), "uninstall failed:\n{t}");
    for m in ["grandkid", "kid", "demo", "demo2"] {
        assert!(t.contains(&format!("Deleted machine: {m}")), "{m}:\n{t}");
    }
    assert_clean(&home, &[], "smolvm");
}

/// `CELESTO_DATA_DIR` pointed at a user's project: the uninstall removes nothing of it, and says
/// which variable pointed there.
#[test]
fn celesto_data_dir_at_a_users_project_is_refused_and_loses_nothing() {
    let (_t, home) = scratch_home();
    let project = home.join("work/projects");
    for (rel, body) in [
        ("src/main.rs", "fn main() {}\n"),
        ("build.log", "ok\n"),
        ("locks/cargo.lock", ""),
        ("Cargo.toml", "[package]\n"),
    ] {
        let p = project.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, body).unwrap();
    }
    let before = snapshot(&project);
    let extra = [(
        "CELESTO_DATA_DIR".to_string(),
        project.display().to_string(),
    )];
    let o = smolsweep(
        &home,
        &extra,
        &["uninstall", "--product", "celesto", "--yes"],
    );
    let t = text(&o);
    assert_eq!(snapshot(&project), before, "the project changed:\n{t}");
    assert!(t.contains("CELESTO_DATA_DIR points there"), "{t}");
    assert!(t.contains("nothing in it is removed"), "{t}");
}

/// Files another tool keeps in `~/.cache/smolvm` are listed as not smolvm's and kept; smolvm's
/// own entries go.
#[test]
fn foreign_files_in_the_smolvm_cache_are_listed_and_kept() {
    let (_t, home) = scratch_home();
    install_smolvm_script_layout(&home);
    smolvm_ok(&home, &["machine", "create", "--name", "demo"]);
    let cache = home.join(".cache/smolvm");
    // What smolvm keeps there: a machine directory and a bake cache.
    let vm = cache.join("vms/0123456789abcdef");
    std::fs::create_dir_all(&vm).unwrap();
    std::fs::write(vm.join("name"), b"gone").unwrap();
    std::fs::create_dir_all(cache.join("init-layers")).unwrap();
    std::fs::write(cache.join("notes-of-another-tool.txt"), b"keep me\n").unwrap();
    let o = smolsweep(
        &home,
        &[],
        &["uninstall", "--product", "smolvm", "--dry-run"],
    );
    let t = text(&o);
    assert!(
        t.contains("Not smol-machines smolvm's, left in place:")
            && t.contains("notes-of-another-tool.txt"),
        "{t}"
    );
    // The CLI has no flag to tick a foreign entry, so it does not speak of ticking it (issue 19).
    assert!(!t.contains("tick"), "{t}");
    assert!(t.contains("remove them yourself"), "{t}");
    let o = smolsweep(&home, &[], &["uninstall", "--product", "smolvm", "--yes"]);
    let t = text(&o);
    assert_eq!(
        std::fs::read(cache.join("notes-of-another-tool.txt")).unwrap(),
        b"keep me\n",
        "{t}"
    );
    assert!(!cache.join("vms").exists(), "{t}");
}
