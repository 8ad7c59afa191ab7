//! The table read by identity (names only where a question needs them), the kernel's answer
//! about who holds a file, and what a scan with nothing to judge leaves unread.

use super::*;

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
        let opts = crate::tests::scan_options(&home, &[]);
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

    let opts = crate::tests::scan_options(&home, &[]);
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
    let name =
        "tests::procs::identity::a_disk_held_through_a_bind_mount_of_its_file_system_is_in_use";
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

    let opts = crate::tests::scan_options(&home, &[]);
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

/// Issue 40: the rest of the table takes a process as the one the identities read when its
/// `/proc` directory is the one they listed (no `stat` read again), else when its start time is
/// theirs; a process neither way is another one (its pid reused) and is read whole.
#[test]
fn a_pid_reused_between_the_identities_and_the_rest_of_the_table_is_read_whole() {
    let tmp = scratch();
    let held = tmp.path().join("held.img");
    std::fs::write(&held, b"disk").unwrap();
    let plain = python_with("f = open(os.environb[b'P'], 'rb')", &held, Some(tmp.path()));
    let ino = std::fs::metadata(&held).unwrap().ino();
    let proc = Path::new("/proc");
    // Its directory held open for the whole test: the kernel cannot drop it from its cache
    // and make (and number) it anew meanwhile.
    let _pinned = std::fs::File::open(format!("/proc/{}", plain.pid())).unwrap();
    let ids = linux::list_processes_at(proc, linux::Depth::Identities);
    let me = ids
        .iter()
        .find(|p| p.pid == plain.pid())
        .expect("listed")
        .clone();
    let dir_ino = std::fs::metadata(format!("/proc/{}", plain.pid()))
        .unwrap()
        .ino();
    assert_eq!(
        me.proc_ino, dir_ino,
        "the identities keep the directory's number"
    );

    // The rest of the table with the identities changed for that pid only.
    let rest_with = |start_time: u64, proc_ino: u64| {
        let mut ids = ids.clone();
        let p = ids.iter_mut().find(|p| p.pid == plain.pid()).unwrap();
        (p.start_time, p.proc_ino) = (start_time, proc_ino);
        let h = linux::holdings_in(proc, &ids);
        let whole = h.whole.iter().any(|p| p.pid == plain.pid());
        let held: Vec<u64> = h
            .held
            .iter()
            .filter(|r| r.pid == plain.pid() && r.ino == ino)
            .map(|r| r.start_time)
            .collect();
        (whole, held)
    };
    // As listed: known by its directory, its descriptor held by identity.
    assert_eq!(
        rest_with(me.start_time, me.proc_ino),
        (false, vec![me.start_time])
    );
    // Its directory not known (0) or another one: known by its start time.
    assert_eq!(rest_with(me.start_time, 0), (false, vec![me.start_time]));
    assert_eq!(
        rest_with(me.start_time, dir_ino ^ 1),
        (false, vec![me.start_time])
    );
    // Another start time and no directory to tell: another process, read whole.
    assert_eq!(rest_with(me.start_time + 1, 0), (true, vec![]));
    assert_eq!(rest_with(me.start_time + 1, dir_ino ^ 1), (true, vec![]));
    // The same directory is the same process whatever start time was written down.
    assert_eq!(
        rest_with(me.start_time + 1, me.proc_ino),
        (false, vec![me.start_time + 1])
    );
}
