//! Reading the process table: on several threads, and `ps` as macOS prints it.

use super::*;

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
