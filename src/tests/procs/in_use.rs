//! Files a process uses: held, mapped after close, as a working directory, by another name or
//! deleted, and names with newlines or bytes that are not UTF-8.

use super::*;

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
