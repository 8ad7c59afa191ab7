//! Where state lives, as data: Celesto and smol-machines roots per platform and environment,
//! `~/.smolvm` ownership by content, and install detection on scratch layouts.

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::env::EnvSnapshot;
use crate::install::{detect_installs, detect_installs_with, Install};
use crate::model::{Platform, Product};
use crate::roots::{
    celesto_roots, celesto_roots_with, dot_smolvm_contents, smolvm_roots, CelestoRoots,
    RootCandidate,
};

const BOTH: [Platform; 2] = [Platform::Linux, Platform::Macos];

fn env(home: &str, vars: &[(&str, &str)]) -> EnvSnapshot {
    EnvSnapshot::from_pairs(home, vars.iter().map(|(k, v)| (*k, *v)))
}

fn nothing_exists(_: &Path) -> bool {
    false
}

fn roots(platform: Platform, env: &EnvSnapshot) -> CelestoRoots {
    celesto_roots_with(platform, env, &nothing_exists)
}

/// `(path, source, preferred)` triples, for table comparisons.
fn table(c: &[RootCandidate]) -> Vec<(String, String, bool)> {
    c.iter()
        .map(|c| (c.path.display().to_string(), c.source.clone(), c.preferred))
        .collect()
}

fn row(path: &str, source: &str, preferred: bool) -> (String, String, bool) {
    (path.to_string(), source.to_string(), preferred)
}

fn preferred(c: &[RootCandidate]) -> Vec<PathBuf> {
    c.iter()
        .filter(|c| c.preferred)
        .map(|c| c.path.clone())
        .collect()
}

fn assert_unique(c: &[RootCandidate]) {
    let set: BTreeSet<&PathBuf> = c.iter().map(|c| &c.path).collect();
    assert_eq!(set.len(), c.len(), "duplicate candidates in {c:?}");
}

// ---------------------------------------------------------------------------------------------
// Celesto data and image directories
// ---------------------------------------------------------------------------------------------

#[test]
fn celesto_default_is_the_same_on_linux_and_macos() {
    for platform in BOTH {
        let r = roots(platform, &env("/home/u", &[]));
        assert_eq!(
            table(&r.data_dirs),
            vec![
                row("/home/u/.local/state/celesto", "default", true),
                row("/home/u/.local/state/smolvm", "legacy", false),
                row("/var/lib/celesto", "system", false),
                row("/var/lib/smolvm", "system legacy", false),
            ],
            "{platform:?}"
        );
        assert_eq!(
            table(&r.image_dirs),
            vec![
                row("/home/u/.celesto/images", "default", true),
                row("/home/u/.smolvm/images", "legacy", false),
            ],
            "{platform:?}"
        );
        assert_eq!(r.home_dir, PathBuf::from("/home/u/.celesto"));
        assert_eq!(r.legacy_home_dir, PathBuf::from("/home/u/.smolvm"));
        assert_eq!(r.socket_dir, PathBuf::from("/tmp"));
        // No ~/Library anywhere: Celesto has no macOS-specific path.
        assert!(r
            .data_dirs
            .iter()
            .chain(&r.image_dirs)
            .all(|c| !c.path.to_string_lossy().contains("Library")));
    }
}

#[test]
fn celesto_xdg_state_home_is_preferred_and_default_still_listed() {
    for platform in BOTH {
        let r = roots(platform, &env("/home/u", &[("XDG_STATE_HOME", "/xdg")]));
        assert_eq!(
            table(&r.data_dirs),
            vec![
                row("/xdg/celesto", "XDG_STATE_HOME", true),
                row("/xdg/smolvm", "XDG_STATE_HOME legacy", false),
                row("/var/lib/celesto", "system", false),
                row("/var/lib/smolvm", "system legacy", false),
                row("/home/u/.local/state/celesto", "default", false),
                row("/home/u/.local/state/smolvm", "legacy", false),
            ]
        );
    }
}

#[test]
fn celesto_xdg_state_home_with_tilde_is_expanded() {
    let r = roots(
        Platform::Linux,
        &env("/home/u", &[("XDG_STATE_HOME", "~/st")]),
    );
    assert_eq!(
        preferred(&r.data_dirs),
        vec![PathBuf::from("/home/u/st/celesto")]
    );
}

#[test]
fn celesto_data_dir_env_is_preferred_and_expanded() {
    for platform in BOTH {
        let r = roots(platform, &env("/home/u", &[("CELESTO_DATA_DIR", "~/cd")]));
        assert_eq!(r.data_dirs[0].path, PathBuf::from("/home/u/cd"));
        assert_eq!(r.data_dirs[0].source, "CELESTO_DATA_DIR");
        assert_eq!(preferred(&r.data_dirs), vec![PathBuf::from("/home/u/cd")]);
        // The candidate list is still scanned.
        assert!(r
            .data_dirs
            .iter()
            .any(|c| c.path == Path::new("/home/u/.local/state/celesto") && !c.preferred));
        assert_unique(&r.data_dirs);
    }
}

#[test]
fn celesto_11_smolvm_data_dir_steers_celesto_too() {
    // celesto/_compat.py copies SMOLVM_DATA_DIR to CELESTO_DATA_DIR when the latter is unset,
    // on every platform (smol-machines' meaning of the variable does not matter here).
    for platform in BOTH {
        let r = roots(
            platform,
            &env("/home/u", &[("SMOLVM_DATA_DIR", "/srv/smol")]),
        );
        assert_eq!(
            table(&r.data_dirs)[0],
            row("/srv/smol", "SMOLVM_DATA_DIR", true),
            "{platform:?}"
        );
        assert_eq!(preferred(&r.data_dirs).len(), 1);
    }
}

#[test]
fn celesto_data_dir_beats_the_smolvm_alias() {
    let r = roots(
        Platform::Linux,
        &env(
            "/home/u",
            &[("CELESTO_DATA_DIR", "/c"), ("SMOLVM_DATA_DIR", "/s")],
        ),
    );
    assert_eq!(
        table(&r.data_dirs)[..2],
        [
            row("/c", "CELESTO_DATA_DIR", true),
            row("/s", "SMOLVM_DATA_DIR", false)
        ]
    );
}

#[test]
fn blank_variables_are_ignored() {
    for platform in BOTH {
        let r = roots(
            platform,
            &env(
                "/home/u",
                &[
                    ("CELESTO_DATA_DIR", "   "),
                    ("XDG_STATE_HOME", ""),
                    ("CELESTO_IMAGE_DIR", " \t "),
                ],
            ),
        );
        assert_eq!(
            preferred(&r.data_dirs),
            vec![PathBuf::from("/home/u/.local/state/celesto")]
        );
        assert_eq!(
            preferred(&r.image_dirs),
            vec![PathBuf::from("/home/u/.celesto/images")]
        );
        assert!(r.data_dirs.iter().all(|c| !c.path.as_os_str().is_empty()
            && c.path.to_string_lossy().trim() == c.path.to_string_lossy()));
    }
}

#[test]
fn a_present_but_blank_celesto_variable_blocks_the_smolvm_alias() {
    // The alias only applies when CELESTO_X is not in the environment at all.
    let r = roots(
        Platform::Linux,
        &env(
            "/home/u",
            &[("CELESTO_DATA_DIR", ""), ("SMOLVM_DATA_DIR", "/s")],
        ),
    );
    assert_eq!(table(&r.data_dirs)[0], row("/s", "SMOLVM_DATA_DIR", false));
    assert_eq!(
        preferred(&r.data_dirs),
        vec![PathBuf::from("/home/u/.local/state/celesto")]
    );
}

#[test]
fn smolvm_image_dir_alias_steers_celesto_and_whitespace_is_trimmed() {
    for platform in BOTH {
        let r = roots(
            platform,
            &env("/home/u", &[("SMOLVM_IMAGE_DIR", "  /imgs/smol \n")]),
        );
        assert_eq!(
            table(&r.image_dirs),
            vec![
                row("/imgs/smol", "SMOLVM_IMAGE_DIR", true),
                row("/home/u/.celesto/images", "default", false),
                row("/home/u/.smolvm/images", "legacy", false),
            ]
        );
    }
}

#[test]
fn celesto_image_dir_wins_over_alias_and_is_trimmed_then_expanded() {
    let r = roots(
        Platform::Macos,
        &env(
            "/Users/u",
            &[
                ("CELESTO_IMAGE_DIR", " ~/img "),
                ("SMOLVM_IMAGE_DIR", "/s-img"),
            ],
        ),
    );
    assert_eq!(
        table(&r.image_dirs)[..2],
        [
            row("/Users/u/img", "CELESTO_IMAGE_DIR", true),
            row("/s-img", "SMOLVM_IMAGE_DIR", false)
        ]
    );
}

#[test]
fn b5_legacy_state_dir_picked_only_when_canonical_absent_and_legacy_exists() {
    let canonical = PathBuf::from("/home/u/.local/state/celesto");
    let legacy = PathBuf::from("/home/u/.local/state/smolvm");
    let e = env("/home/u", &[]);
    // (canonical exists, legacy exists) -> expected preferred
    let cases = [
        (false, false, &canonical),
        (false, true, &legacy),
        (true, true, &canonical),
        (true, false, &canonical),
    ];
    for (c, l, want) in cases {
        for platform in BOTH {
            let exists = |p: &Path| (c && p == canonical) || (l && p == legacy);
            let r = celesto_roots_with(platform, &e, &exists);
            assert_eq!(
                preferred(&r.data_dirs),
                vec![want.clone()],
                "canonical={c} legacy={l}"
            );
            assert_eq!(r.data_dirs[0].path, *want);
            // Both are always candidates.
            for p in [&canonical, &legacy] {
                assert!(r.data_dirs.iter().any(|x| &x.path == p));
            }
        }
    }
}

#[test]
fn legacy_image_dir_picked_only_when_canonical_absent_and_legacy_exists() {
    let canonical = PathBuf::from("/home/u/.celesto/images");
    let legacy = PathBuf::from("/home/u/.smolvm/images");
    let e = env("/home/u", &[]);
    for (c, l, want) in [
        (false, true, &legacy),
        (true, true, &canonical),
        (false, false, &canonical),
    ] {
        let exists = |p: &Path| (c && p == canonical) || (l && p == legacy);
        let r = celesto_roots_with(Platform::Linux, &e, &exists);
        assert_eq!(preferred(&r.image_dirs), vec![want.clone()]);
        assert_eq!(r.image_dirs.len(), 2);
    }
}

#[test]
fn legacy_xdg_state_dir_follows_the_same_rule() {
    let e = env("/home/u", &[("XDG_STATE_HOME", "/xdg")]);
    let r = celesto_roots_with(Platform::Linux, &e, &|p: &Path| {
        p == Path::new("/xdg/smolvm")
    });
    assert_eq!(
        table(&r.data_dirs)[..2],
        [
            row("/xdg/smolvm", "XDG_STATE_HOME legacy", true),
            row("/xdg/celesto", "XDG_STATE_HOME", false)
        ]
    );
}

fn sudo_env(vars: &[(&str, &str)]) -> EnvSnapshot {
    let mut e = env("/root", vars);
    e.euid = 0;
    e.sudo_home = Some(PathBuf::from("/home/alice"));
    e
}

#[test]
fn celesto_sudo_uses_the_sudo_users_home_and_ignores_xdg_state_home() {
    for platform in BOTH {
        let e = sudo_env(&[("SUDO_USER", "alice"), ("XDG_STATE_HOME", "/xdg")]);
        let r = roots(platform, &e);
        assert_eq!(
            table(&r.data_dirs),
            vec![
                row("/home/alice/.local/state/celesto", "sudo_user", true),
                row("/home/alice/.local/state/smolvm", "sudo_user legacy", false),
                row("/var/lib/celesto", "system", false),
                row("/var/lib/smolvm", "system legacy", false),
                row("/xdg/celesto", "XDG_STATE_HOME", false),
                row("/xdg/smolvm", "XDG_STATE_HOME legacy", false),
                row("/root/.local/state/celesto", "default", false),
                row("/root/.local/state/smolvm", "legacy", false),
            ]
        );
        // The image cache uses Path.home() with no SUDO_USER handling; the sudo user's caches
        // are still candidates.
        assert_eq!(
            table(&r.image_dirs),
            vec![
                row("/root/.celesto/images", "default", true),
                row("/root/.smolvm/images", "legacy", false),
                row("/home/alice/.celesto/images", "sudo_user", false),
                row("/home/alice/.smolvm/images", "sudo_user legacy", false),
            ]
        );
    }
}

#[test]
fn celesto_direct_root_prefers_var_lib_celesto() {
    let direct_roots = [
        {
            let mut e = env("/root", &[]);
            e.euid = 0;
            e
        },
        // SUDO_USER=root is a direct root session.
        sudo_env(&[("SUDO_USER", "root")]),
        // A sudo user without a password database entry is too.
        {
            let mut e = env("/root", &[("SUDO_USER", "ghost")]);
            e.euid = 0;
            e
        },
    ];
    for e in direct_roots {
        let r = roots(Platform::Linux, &e);
        assert_eq!(
            table(&r.data_dirs)[..4],
            [
                row("/var/lib/celesto", "system", true),
                row("/root/.local/state/celesto", "default", false),
                row("/root/.local/state/smolvm", "legacy", false),
                row("/var/lib/smolvm", "system legacy", false),
            ],
            "{e:?}"
        );
    }
}

#[test]
fn direct_root_keeps_xdg_state_home() {
    let mut e = env("/root", &[("XDG_STATE_HOME", "/rx")]);
    e.euid = 0;
    let r = roots(Platform::Linux, &e);
    assert_eq!(
        table(&r.data_dirs)[..3],
        [
            row("/var/lib/celesto", "system", true),
            row("/rx/celesto", "XDG_STATE_HOME", false),
            row("/rx/smolvm", "XDG_STATE_HOME legacy", false),
        ]
    );
}

#[test]
fn non_root_with_sudo_user_set_is_a_normal_user() {
    let mut e = env("/home/u", &[("SUDO_USER", "alice")]);
    e.sudo_home = Some(PathBuf::from("/home/alice"));
    let r = roots(Platform::Linux, &e);
    assert_eq!(
        preferred(&r.data_dirs),
        vec![PathBuf::from("/home/u/.local/state/celesto")]
    );
    assert!(r
        .data_dirs
        .iter()
        .all(|c| !c.path.starts_with("/home/alice")));
}

#[test]
fn candidates_are_deduplicated_keeping_the_preferred_mark() {
    let r = roots(
        Platform::Linux,
        &env(
            "/home/u",
            &[
                ("XDG_STATE_HOME", "/home/u/.local/state/"),
                ("CELESTO_DATA_DIR", "/var/lib/celesto"),
                ("SMOLVM_IMAGE_DIR", "/home/u/.smolvm/images"),
            ],
        ),
    );
    assert_unique(&r.data_dirs);
    assert_unique(&r.image_dirs);
    assert_eq!(
        table(&r.data_dirs),
        vec![
            row("/var/lib/celesto", "CELESTO_DATA_DIR", true),
            row("/home/u/.local/state/celesto", "XDG_STATE_HOME", false),
            row(
                "/home/u/.local/state/smolvm",
                "XDG_STATE_HOME legacy",
                false
            ),
            row("/var/lib/smolvm", "system legacy", false),
        ]
    );
    assert_eq!(
        table(&r.image_dirs),
        vec![
            row("/home/u/.smolvm/images", "SMOLVM_IMAGE_DIR", true),
            row("/home/u/.celesto/images", "default", false),
        ]
    );
}

#[test]
fn celesto_roots_checks_real_existence_without_creating_anything() {
    let home = tempfile::tempdir().unwrap();
    let legacy = home.path().join(".local/state/smolvm");
    fs::create_dir_all(&legacy).unwrap();
    let e = EnvSnapshot::from_pairs(home.path(), Vec::<(String, String)>::new());
    let r = celesto_roots(Platform::Linux, &e);
    assert_eq!(preferred(&r.data_dirs), vec![legacy.clone()]);
    assert!(!home.path().join(".local/state/celesto").exists());
    assert!(!home.path().join(".celesto").exists());
    assert!(!home.path().join(".smolvm").exists());
    // Once the canonical directory exists it wins.
    fs::create_dir_all(home.path().join(".local/state/celesto")).unwrap();
    let r = celesto_roots(Platform::Linux, &e);
    assert_eq!(
        preferred(&r.data_dirs),
        vec![home.path().join(".local/state/celesto")]
    );
}

#[test]
fn socket_dir_override_for_tests() {
    let r = roots(
        Platform::Linux,
        &env("/home/u", &[("SMOLSWEEP_SOCKET_DIR", "/scratch/sock")]),
    );
    assert_eq!(r.socket_dir, PathBuf::from("/scratch/sock"));
}

// ---------------------------------------------------------------------------------------------
// smol-machines roots
// ---------------------------------------------------------------------------------------------

#[test]
fn hazard_24_smolvm_default_linux_machine_dirs_in_cache_and_data_root() {
    let r = smolvm_roots(Platform::Linux, &env("/home/u", &[]));
    assert_eq!(r.sets.len(), 1);
    let s = &r.sets[0];
    assert_eq!(s.source, "default");
    assert_eq!(s.data_root, PathBuf::from("/home/u/.local/share/smolvm"));
    assert_eq!(
        s.db_path,
        PathBuf::from("/home/u/.local/share/smolvm/server/smolvm.db")
    );
    assert_eq!(s.cache_root, PathBuf::from("/home/u/.cache/smolvm"));
    assert_eq!(
        s.vms_dirs,
        vec![
            PathBuf::from("/home/u/.cache/smolvm/vms"),
            PathBuf::from("/home/u/.local/share/smolvm/vms")
        ]
    );
    assert_eq!(s.pack_cache, PathBuf::from("/home/u/.cache/smolvm-pack"));
    assert_eq!(s.libs_cache, PathBuf::from("/home/u/.cache/smolvm-libs"));
    assert_eq!(
        s.registry_cache,
        PathBuf::from("/home/u/.cache/smolvm-registry")
    );
    assert_eq!(
        s.image_archives,
        PathBuf::from("/home/u/.cache/smolvm-image-archives")
    );
    assert_eq!(s.config_dir, PathBuf::from("/home/u/.config/smolvm"));
}

#[test]
fn smolvm_default_macos_uses_library_but_config_under_dot_config() {
    let r = smolvm_roots(Platform::Macos, &env("/Users/u", &[]));
    assert_eq!(r.sets.len(), 1);
    let s = &r.sets[0];
    assert_eq!(
        s.data_root,
        PathBuf::from("/Users/u/Library/Application Support/smolvm")
    );
    assert_eq!(
        s.cache_root,
        PathBuf::from("/Users/u/Library/Caches/smolvm")
    );
    assert_eq!(
        s.vms_dirs,
        vec![
            PathBuf::from("/Users/u/Library/Caches/smolvm/vms"),
            PathBuf::from("/Users/u/Library/Application Support/smolvm/vms")
        ]
    );
    assert_eq!(
        s.pack_cache,
        PathBuf::from("/Users/u/Library/Caches/smolvm-pack")
    );
    assert_eq!(s.config_dir, PathBuf::from("/Users/u/.config/smolvm"));
}

#[test]
fn smolvm_xdg_overrides_apply_on_linux_only_and_must_be_absolute() {
    let vars = [
        ("XDG_CACHE_HOME", "/xc"),
        ("XDG_DATA_HOME", "/xd"),
        ("XDG_CONFIG_HOME", "/xcfg"),
    ];
    let linux = smolvm_roots(Platform::Linux, &env("/home/u", &vars));
    let s = &linux.sets[0];
    assert_eq!(s.cache_root, PathBuf::from("/xc/smolvm"));
    assert_eq!(s.data_root, PathBuf::from("/xd/smolvm"));
    assert_eq!(s.registry_cache, PathBuf::from("/xc/smolvm-registry"));
    // The config path is built from HOME, not XDG_CONFIG_HOME.
    assert_eq!(s.config_dir, PathBuf::from("/home/u/.config/smolvm"));

    let mac = smolvm_roots(Platform::Macos, &env("/Users/u", &vars));
    assert_eq!(
        mac.sets[0].cache_root,
        PathBuf::from("/Users/u/Library/Caches/smolvm")
    );

    // dirs-sys ignores relative and blank XDG values.
    let rel = smolvm_roots(
        Platform::Linux,
        &env(
            "/home/u",
            &[("XDG_CACHE_HOME", "rel"), ("XDG_DATA_HOME", "")],
        ),
    );
    assert_eq!(
        rel.sets[0].cache_root,
        PathBuf::from("/home/u/.cache/smolvm")
    );
    assert_eq!(
        rel.sets[0].data_root,
        PathBuf::from("/home/u/.local/share/smolvm")
    );
}

#[test]
fn hazard_19_smolvm_data_dir_machine_dirs_under_dot_cache() {
    // SMOLVM_DATA_DIR on Linux replaces HOME and clears XDG_*: machine dirs are in
    // $SMOLVM_DATA_DIR/.cache/smolvm/vms, not ${SMOLVM_DATA_DIR}/vms as the teardown scripts
    // assumed.
    let e = env(
        "/home/u",
        &[
            ("SMOLVM_DATA_DIR", "/srv/D"),
            ("XDG_CACHE_HOME", "/xc"),
            ("XDG_DATA_HOME", "/xd"),
        ],
    );
    let r = smolvm_roots(Platform::Linux, &e);
    let s = &r.sets[0];
    assert_eq!(s.source, "SMOLVM_DATA_DIR");
    assert_eq!(s.vms_dirs[0], PathBuf::from("/srv/D/.cache/smolvm/vms"));
    assert_eq!(
        s.vms_dirs[1],
        PathBuf::from("/srv/D/.local/share/smolvm/vms")
    );
    assert_eq!(
        s.db_path,
        PathBuf::from("/srv/D/.local/share/smolvm/server/smolvm.db")
    );
    assert_eq!(s.pack_cache, PathBuf::from("/srv/D/.cache/smolvm-pack"));
    assert_eq!(s.config_dir, PathBuf::from("/srv/D/.config/smolvm"));
    assert!(r
        .sets
        .iter()
        .flat_map(|s| &s.vms_dirs)
        .all(|v| v != Path::new("/srv/D/vms")));
    // The default layout of the real HOME (with its XDG) is scanned as well.
    assert_eq!(r.sets.len(), 2);
    assert_eq!(r.sets[1].source, "default");
    assert_eq!(r.sets[1].cache_root, PathBuf::from("/xc/smolvm"));
    assert_eq!(r.sets[1].data_root, PathBuf::from("/xd/smolvm"));
}

#[test]
fn smolvm_data_dir_is_a_no_op_on_macos() {
    let r = smolvm_roots(
        Platform::Macos,
        &env("/Users/u", &[("SMOLVM_DATA_DIR", "/srv/D")]),
    );
    assert_eq!(r.sets.len(), 1);
    assert_eq!(r.sets[0].source, "default");
    assert_eq!(
        r.sets[0].cache_root,
        PathBuf::from("/Users/u/Library/Caches/smolvm")
    );
}

#[test]
fn blank_smolvm_data_dir_is_ignored() {
    let r = smolvm_roots(
        Platform::Linux,
        &env("/home/u", &[("SMOLVM_DATA_DIR", "  ")]),
    );
    assert_eq!(r.sets.len(), 1);
    assert_eq!(r.sets[0].source, "default");
}

#[test]
fn smolvm_config_moves_the_config_dir() {
    for platform in BOTH {
        let r = smolvm_roots(
            platform,
            &env("/home/u", &[("SMOLVM_CONFIG", "/etc/smol/conf.toml")]),
        );
        assert_eq!(r.sets[0].config_dir, PathBuf::from("/etc/smol"));
    }
    // With SMOLVM_DATA_DIR the CLI's set follows SMOLVM_CONFIG; the default set keeps
    // ~/.config/smolvm so an older config is still found.
    let r = smolvm_roots(
        Platform::Linux,
        &env(
            "/home/u",
            &[
                ("SMOLVM_CONFIG", "/c/config.toml"),
                ("SMOLVM_DATA_DIR", "/D"),
            ],
        ),
    );
    assert_eq!(r.sets[0].config_dir, PathBuf::from("/c"));
    assert_eq!(
        r.sets[1].config_dir,
        PathBuf::from("/home/u/.config/smolvm")
    );
}

#[test]
fn hazard_28_root_scan_covers_serve_root_and_sudo_users_home() {
    let e = sudo_env(&[("SUDO_USER", "alice")]);
    let r = smolvm_roots(Platform::Linux, &e);
    let sources: Vec<&str> = r.sets.iter().map(|s| s.source.as_str()).collect();
    assert_eq!(sources, vec!["default", "serve_root", "sudo_user"]);
    assert_eq!(r.sets[0].cache_root, PathBuf::from("/root/.cache/smolvm"));
    assert_eq!(
        r.sets[1].data_root,
        PathBuf::from("/var/lib/smolvm/.local/share/smolvm")
    );
    assert_eq!(
        r.sets[2].cache_root,
        PathBuf::from("/home/alice/.cache/smolvm")
    );
    assert!(r
        .install_prefixes
        .contains(&PathBuf::from("/home/alice/.smolvm")));
    // Not as a normal user, and never on macOS.
    assert_eq!(
        smolvm_roots(Platform::Linux, &env("/home/u", &[]))
            .sets
            .len(),
        1
    );
    let mut mac = env("/var/root", &[]);
    mac.euid = 0;
    assert_eq!(smolvm_roots(Platform::Macos, &mac).sets.len(), 1);
}

#[test]
fn smolvm_install_prefixes_and_launchers_per_platform() {
    let linux = smolvm_roots(Platform::Linux, &env("/home/u", &[]));
    for p in [
        "/home/u/.smolvm",
        "/opt/smolvm",
        "/usr/lib/smolvm",
        "/home/linuxbrew/.linuxbrew/Cellar/smolvm",
    ] {
        assert!(linux.install_prefixes.contains(&PathBuf::from(p)), "{p}");
    }
    assert_eq!(linux.install_prefixes[0], PathBuf::from("/home/u/.smolvm"));
    for l in [
        "/home/u/.local/bin/smolvm",
        "/home/u/.local/bin/smol",
        "/usr/local/bin/smolvm",
        "/usr/bin/smolvm",
    ] {
        assert!(linux.launchers.contains(&PathBuf::from(l)), "{l}");
    }

    let mac = smolvm_roots(
        Platform::Macos,
        &env("/Users/u", &[("HOMEBREW_PREFIX", "/custom/brew")]),
    );
    for p in [
        "/Users/u/.smolvm",
        "/opt/homebrew/Cellar/smolvm",
        "/usr/local/Cellar/smolvm",
        "/custom/brew/Cellar/smolvm",
    ] {
        assert!(mac.install_prefixes.contains(&PathBuf::from(p)), "{p}");
    }
    assert!(!mac
        .install_prefixes
        .contains(&PathBuf::from("/usr/lib/smolvm")));
    assert!(mac
        .launchers
        .contains(&PathBuf::from("/opt/homebrew/bin/smolvm")));
    assert!(mac
        .launchers
        .contains(&PathBuf::from("/Users/u/.local/bin/smol")));
}

// ---------------------------------------------------------------------------------------------
// ~/.smolvm ownership
// ---------------------------------------------------------------------------------------------

const WRAPPER: &str = "#!/usr/bin/env bash\nset -e\nd=\"$(cd \"$(dirname \"$(readlink -f \"${BASH_SOURCE[0]}\")\")\" && pwd)\"\nexport LD_LIBRARY_PATH=\"$d/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\"\nexec \"$d/smolvm-bin\" \"$@\"\n";

fn write(path: &Path, body: &[u8], mode: u32) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, body).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

fn elf() -> Vec<u8> {
    let mut b = b"\x7fELF\x02\x01\x01".to_vec();
    b.resize(64, 0);
    b
}

/// A script install as `install.sh` lays it out (§13.2 of the smol-machines reference).
fn smol_machines_prefix(p: &Path) {
    write(&p.join("smolvm"), WRAPPER.as_bytes(), 0o755);
    write(&p.join("smolvm-bin"), &elf(), 0o755);
    write(&p.join(".version"), b"1.32.2\n", 0o644);
    write(&p.join("lib/libkrun.so"), &elf(), 0o644);
    write(&p.join("lib/libkrunfw.so.5"), &elf(), 0o644);
    write(
        &p.join("storage-template.ext4.zst"),
        b"\x28\xb5\x2f\xfd",
        0o644,
    );
    write(&p.join("overlay-template.ext4"), b"", 0o644);
    fs::create_dir_all(p.join("agent-rootfs/bin")).unwrap();
}

/// What Celesto / PyPI smolvm keep under ~/.smolvm.
fn celesto_dot_smolvm(p: &Path) {
    fs::create_dir_all(p.join("images/ubuntu-v0.0.36-amd64-firecracker")).unwrap();
    write(&p.join("keys/id_ed25519"), b"key", 0o600);
    write(&p.join("bin/firecracker"), &elf(), 0o755);
    write(&p.join("forwards/vm1.json"), b"{}", 0o644);
    write(&p.join("credentials"), b"x", 0o600);
    write(&p.join(".version_check.json"), b"{}", 0o644);
}

fn names(base: &Path, v: &[PathBuf]) -> Vec<String> {
    v.iter()
        .map(|p| p.strip_prefix(base).unwrap().display().to_string())
        .collect()
}

#[test]
fn dot_smolvm_smol_machines_only() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join(".smolvm");
    smol_machines_prefix(&d);
    let c = dot_smolvm_contents(&d).unwrap();
    assert!(c.smolvm_install);
    assert_eq!(c.smolvm_version.as_deref(), Some("1.32.2"));
    assert_eq!(
        names(&d, &c.smolvm_entries),
        vec![
            ".version",
            "agent-rootfs",
            "lib",
            "overlay-template.ext4",
            "smolvm",
            "smolvm-bin",
            "storage-template.ext4.zst"
        ]
    );
    assert!(c.celesto_entries.is_empty());
    assert!(c.other_entries.is_empty());
}

#[test]
fn dot_smolvm_ownership_by_content_not_name() {
    // A ~/.smolvm written only by PyPI smolvm / Celesto is not a smol-machines install, even
    // with a `smolvm` file (here a pip entry-point script) and a `.version` that is no version.
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join(".smolvm");
    celesto_dot_smolvm(&d);
    write(
        &d.join("smolvm"),
        b"#!/venv/bin/python3\nimport sys\nfrom smolvm.cli.main import main\n",
        0o755,
    );
    write(&d.join(".version"), b"not a version at all\n", 0o644);
    let c = dot_smolvm_contents(&d).unwrap();
    assert!(!c.smolvm_install);
    assert_eq!(c.smolvm_version, None);
    assert!(c.smolvm_entries.is_empty(), "{:?}", c.smolvm_entries);
    assert_eq!(
        names(&d, &c.celesto_entries),
        vec![
            ".version_check.json",
            "bin",
            "credentials",
            "forwards",
            "images",
            "keys"
        ]
    );
    assert_eq!(names(&d, &c.other_entries), vec![".version", "smolvm"]);
}

#[test]
fn dot_smolvm_mixed_splits_lib_per_entry() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join(".smolvm");
    smol_machines_prefix(&d);
    celesto_dot_smolvm(&d);
    fs::create_dir_all(d.join("lib/lume-0.4.0")).unwrap();
    write(&d.join("notes.txt"), b"mine", 0o644);
    let c = dot_smolvm_contents(&d).unwrap();
    assert!(c.smolvm_install);
    assert_eq!(
        names(&d, &c.smolvm_entries),
        vec![
            ".version",
            "agent-rootfs",
            "lib/libkrun.so",
            "lib/libkrunfw.so.5",
            "overlay-template.ext4",
            "smolvm",
            "smolvm-bin",
            "storage-template.ext4.zst"
        ]
    );
    assert_eq!(
        names(&d, &c.celesto_entries),
        vec![
            ".version_check.json",
            "bin",
            "credentials",
            "forwards",
            "images",
            "keys",
            "lib/lume-0.4.0"
        ]
    );
    assert_eq!(names(&d, &c.other_entries), vec!["notes.txt"]);
}

#[test]
fn dot_smolvm_lib_with_only_lume_is_celesto() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join(".smolvm");
    fs::create_dir_all(d.join("lib/lume-0.4.0")).unwrap();
    let c = dot_smolvm_contents(&d).unwrap();
    assert_eq!(names(&d, &c.celesto_entries), vec!["lib"]);
    assert!(!c.smolvm_install);
}

#[test]
fn dot_smolvm_symlinks_are_not_followed_or_claimed() {
    let tmp = tempfile::tempdir().unwrap();
    let elsewhere = tmp.path().join("elsewhere");
    smol_machines_prefix(&elsewhere);
    let d = tmp.path().join(".smolvm");
    fs::create_dir_all(&d).unwrap();
    symlink(elsewhere.join("smolvm-bin"), d.join("smolvm-bin")).unwrap();
    symlink(elsewhere.join(".version"), d.join(".version")).unwrap();
    symlink(&elsewhere, d.join("images")).unwrap();
    let c = dot_smolvm_contents(&d).unwrap();
    assert!(!c.smolvm_install);
    assert!(c.smolvm_entries.is_empty() && c.celesto_entries.is_empty());
    assert_eq!(
        names(&d, &c.other_entries),
        vec![".version", "images", "smolvm-bin"]
    );
}

#[test]
fn dot_smolvm_contents_only_reads() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join(".smolvm");
    smol_machines_prefix(&d);
    celesto_dot_smolvm(&d);
    let listing = |p: &Path| -> Vec<(PathBuf, u64, std::time::SystemTime)> {
        walkdir::WalkDir::new(p)
            .sort_by_file_name()
            .into_iter()
            .map(|e| {
                let e = e.unwrap();
                let m = e.path().symlink_metadata().unwrap();
                (e.path().to_path_buf(), m.len(), m.modified().unwrap())
            })
            .collect()
    };
    let before = listing(tmp.path());
    dot_smolvm_contents(&d).unwrap();
    assert_eq!(before, listing(tmp.path()));
    assert!(dot_smolvm_contents(&tmp.path().join("missing")).is_err());
}

// ---------------------------------------------------------------------------------------------
// Installs
// ---------------------------------------------------------------------------------------------

fn path_env(home: &Path, path_dirs: &[&Path]) -> EnvSnapshot {
    let path = path_dirs
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(":");
    EnvSnapshot::from_pairs(home, [("PATH", path)])
}

/// A virtualenv with a pip entry-point script for `dist` and its dist-info directories.
fn venv(root: &Path, dist: &str, version: &str, core: &str) -> PathBuf {
    let script = root.join("bin").join(dist);
    let body = format!(
        "#!{}/bin/python3\n# -*- coding: utf-8 -*-\nimport re\nimport sys\nfrom {dist}.cli.main import main\nif __name__ == \"__main__\":\n    sys.argv[0] = re.sub(r\"(-script\\.pyw|\\.exe)?$\", \"\", sys.argv[0])\n    sys.exit(main())\n",
        root.display()
    );
    write(&script, body.as_bytes(), 0o755);
    let site = root.join("lib/python3.11/site-packages");
    fs::create_dir_all(site.join(format!("{dist}-{version}.dist-info"))).unwrap();
    fs::create_dir_all(site.join(format!("{dist}_core-{core}.dist-info"))).unwrap();
    fs::create_dir_all(site.join(dist)).unwrap();
    script
}

fn only(installs: &[Install]) -> &Install {
    assert_eq!(installs.len(), 1, "{installs:#?}");
    &installs[0]
}

#[test]
fn celesto_pypi_entry_point_on_path() {
    let tmp = tempfile::tempdir().unwrap();
    let v = tmp.path().join("venv-celesto");
    let script = venv(&v, "celesto", "0.1.10", "2026.10.25");
    let e = path_env(tmp.path(), &[&v.join("bin")]);
    let found = detect_installs_with(&e, &[], &[]);
    assert_eq!(
        only(&found),
        &Install {
            product: Product::Celesto,
            method: "pypi".into(),
            path: v.clone(),
            executable: Some(script),
            version: Some("0.1.10".into()),
            distribution: Some("celesto".into()),
        }
    );
}

#[test]
fn smolvm_command_that_is_a_python_entry_point_is_celesto_not_smol_machines() {
    // §11: `smolvm --version` does not tell the products apart; the script's content does.
    let tmp = tempfile::tempdir().unwrap();
    let v = tmp.path().join("venv-smolvm");
    let script = venv(&v, "smolvm", "0.0.36", "2026.6.24");
    let e = path_env(tmp.path(), &[&v.join("bin")]);
    let i = only(&detect_installs_with(&e, &[], &[])).clone();
    assert_eq!(i.product, Product::Celesto);
    assert_eq!(i.method, "pypi");
    assert_eq!(i.distribution.as_deref(), Some("smolvm"));
    assert_eq!(i.version.as_deref(), Some("0.0.36"));
    assert_eq!(i.path, v);
    assert_eq!(i.executable, Some(script));
}

#[test]
fn user_install_with_system_python_finds_dist_info_beside_the_script() {
    // pip install --user: ~/.local/bin/celesto with #!/usr/bin/python3.
    let tmp = tempfile::tempdir().unwrap();
    let local = tmp.path().join(".local");
    write(
        &local.join("bin/celesto"),
        b"#!/usr/bin/python3\nimport sys\nfrom celesto.cli.main import main\nsys.exit(main())\n",
        0o755,
    );
    fs::create_dir_all(local.join("lib/python3.11/site-packages/celesto-0.1.9.dist-info")).unwrap();
    let e = path_env(tmp.path(), &[&local.join("bin")]);
    let i = only(&detect_installs_with(&e, &[], &[])).clone();
    assert_eq!(i.path, local);
    assert_eq!(i.version.as_deref(), Some("0.1.9"));
}

#[test]
fn smolmachines_wheel_in_the_same_venv_is_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let v = tmp.path().join("venv");
    venv(&v, "celesto", "0.1.10", "2026.10.25");
    let site = v.join("lib/python3.11/site-packages");
    fs::create_dir_all(site.join("smolmachines-1.32.2.dist-info")).unwrap();
    write(&site.join("smol/smol-vmm"), &elf(), 0o755);
    let e = path_env(tmp.path(), &[&v.join("bin")]);
    let found = detect_installs_with(&e, &[], &[]);
    assert_eq!(found.len(), 2, "{found:#?}");
    assert_eq!(found[1].product, Product::Smolvm);
    assert_eq!(found[1].method, "wheel");
    assert_eq!(found[1].path, site.join("smol"));
    assert_eq!(found[1].version.as_deref(), Some("1.32.2"));
    assert_eq!(found[1].executable, Some(site.join("smol/smol-vmm")));
}

#[test]
fn smol_vmm_symlink_on_path_is_a_wheel_install() {
    let tmp = tempfile::tempdir().unwrap();
    let site = tmp.path().join("v/lib/python3.12/site-packages");
    fs::create_dir_all(site.join("smolmachines-1.32.2.dist-info")).unwrap();
    write(&site.join("smol/smol-vmm"), &elf(), 0o755);
    let bin = tmp.path().join("bin");
    fs::create_dir_all(&bin).unwrap();
    symlink(site.join("smol/smol-vmm"), bin.join("smol-vmm")).unwrap();
    let e = path_env(tmp.path(), &[&bin]);
    let i = only(&detect_installs_with(&e, &[], &[])).clone();
    assert_eq!(i.product, Product::Smolvm);
    assert_eq!(i.method, "wheel");
    assert_eq!(i.version.as_deref(), Some("1.32.2"));
    assert_eq!(i.distribution.as_deref(), Some("smolmachines"));
    assert_eq!(i.executable, Some(bin.join("smol-vmm")));
}

#[test]
fn script_install_through_launcher_symlink_is_one_install() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let prefix = h.join(".smolvm");
    smol_machines_prefix(&prefix);
    let local_bin = h.join(".local/bin");
    fs::create_dir_all(&local_bin).unwrap();
    symlink(prefix.join("smolvm"), local_bin.join("smolvm")).unwrap();

    let expected = Install {
        product: Product::Smolvm,
        method: "script".into(),
        path: prefix.clone(),
        executable: Some(local_bin.join("smolvm")),
        version: Some("1.32.2".into()),
        distribution: None,
    };
    // On PATH, and also as a fixed launcher and prefix: still one install.
    let e = path_env(h, &[&local_bin, &prefix]);
    let found = detect_installs_with(
        &e,
        std::slice::from_ref(&prefix),
        &[local_bin.join("smolvm")],
    );
    assert_eq!(only(&found), &expected);

    // Not on PATH: the launcher alone finds it.
    let e = path_env(h, &[]);
    let found = detect_installs_with(&e, &[], &[local_bin.join("smolvm")]);
    assert_eq!(only(&found), &expected);
}

#[test]
fn script_install_found_by_prefix_when_not_on_path() {
    let home = tempfile::tempdir().unwrap();
    let prefix = home.path().join(".smolvm");
    smol_machines_prefix(&prefix);
    let e = path_env(home.path(), &[]);
    let i = only(&detect_installs_with(
        &e,
        std::slice::from_ref(&prefix),
        &[],
    ))
    .clone();
    assert_eq!(i.method, "script");
    assert_eq!(i.path, prefix);
    assert_eq!(i.executable, Some(prefix.join("smolvm")));
    assert_eq!(i.version.as_deref(), Some("1.32.2"));
}

#[test]
fn celesto_only_dot_smolvm_is_not_a_smol_machines_install() {
    let home = tempfile::tempdir().unwrap();
    let prefix = home.path().join(".smolvm");
    celesto_dot_smolvm(&prefix);
    let e = path_env(home.path(), &[&prefix.join("bin")]);
    assert_eq!(detect_installs_with(&e, &[prefix], &[]), vec![]);
}

#[test]
fn smol_launcher_and_smolvm_launcher_share_the_prefix() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let prefix = h.join(".smolvm");
    smol_machines_prefix(&prefix);
    write(
        &prefix.join("smol"),
        b"#!/bin/bash\nd=$(dirname \"$0\")\nexec \"$d/smol-bin\" \"$@\"\n",
        0o755,
    );
    write(&prefix.join("smol-bin"), &elf(), 0o755);
    let local_bin = h.join(".local/bin");
    fs::create_dir_all(&local_bin).unwrap();
    symlink(prefix.join("smol"), local_bin.join("smol")).unwrap();
    symlink(prefix.join("smolvm"), local_bin.join("smolvm")).unwrap();
    let e = path_env(h, &[&local_bin]);
    let i = only(&detect_installs_with(&e, &[], &[])).clone();
    assert_eq!(i.path, prefix);
    // PATH order per directory: smolvm before smol.
    assert_eq!(i.executable, Some(local_bin.join("smolvm")));
}

#[test]
fn homebrew_keg_from_cellar_and_from_path() {
    let tmp = tempfile::tempdir().unwrap();
    let brew = tmp.path().join("brew");
    let keg = brew.join("Cellar/smolvm/1.32.2");
    write(&keg.join("libexec/smolvm"), WRAPPER.as_bytes(), 0o755);
    write(&keg.join("libexec/smolvm-bin"), &elf(), 0o755);
    fs::create_dir_all(keg.join("bin")).unwrap();
    symlink(keg.join("libexec/smolvm"), keg.join("bin/smolvm")).unwrap();
    fs::create_dir_all(brew.join("bin")).unwrap();
    symlink(keg.join("bin/smolvm"), brew.join("bin/smolvm")).unwrap();

    let e = path_env(tmp.path(), &[]);
    let i = only(&detect_installs_with(
        &e,
        &[brew.join("Cellar/smolvm")],
        &[],
    ))
    .clone();
    assert_eq!(i.method, "homebrew");
    assert_eq!(i.path, keg);
    assert_eq!(i.version.as_deref(), Some("1.32.2"));
    assert_eq!(i.executable, Some(keg.join("bin/smolvm")));

    let e = path_env(tmp.path(), &[&brew.join("bin")]);
    let found = detect_installs_with(&e, &[brew.join("Cellar/smolvm")], &[]);
    let i = only(&found);
    assert_eq!(i.method, "homebrew");
    // Found through the canonical keg path.
    assert_eq!(i.path, fs::canonicalize(&keg).unwrap());
    assert_eq!(i.executable, Some(brew.join("bin/smolvm")));
}

#[test]
fn unrelated_commands_named_smol_or_smolvm_are_ignored() {
    let tmp = tempfile::tempdir().unwrap();
    let bin = tmp.path().join("bin");
    // Another tool's Python script, a plain shell script, a non-executable file, a directory.
    write(
        &bin.join("smol"),
        b"#!/usr/bin/python3\nfrom smol_other.cli import main\nmain()\n",
        0o755,
    );
    write(&bin.join("smolvm"), b"#!/bin/sh\necho hello\n", 0o755);
    write(
        &bin.join("celesto"),
        b"#!/usr/bin/python3\nfrom celesto.cli.main import main\n",
        0o644,
    );
    fs::create_dir_all(bin.join("smol-vmm")).unwrap();
    let e = path_env(tmp.path(), &[&bin]);
    assert_eq!(detect_installs_with(&e, &[], &[]), vec![]);
}

#[test]
fn same_executable_twice_on_path_is_reported_once() {
    let tmp = tempfile::tempdir().unwrap();
    let v = tmp.path().join("venv");
    venv(&v, "celesto", "0.1.10", "2026.10.25");
    let other = tmp.path().join("other-bin");
    fs::create_dir_all(&other).unwrap();
    symlink(v.join("bin/celesto"), other.join("celesto")).unwrap();
    let e = path_env(tmp.path(), &[&v.join("bin"), &other, &v.join("bin")]);
    let i = only(&detect_installs_with(&e, &[], &[])).clone();
    assert_eq!(i.executable, Some(v.join("bin/celesto")));
}

#[test]
fn pip_sh_exec_form_for_long_interpreter_paths() {
    let tmp = tempfile::tempdir().unwrap();
    let v = tmp.path().join("venv with space");
    fs::create_dir_all(v.join("lib/python3.11/site-packages/celesto-0.1.10.dist-info")).unwrap();
    let body = format!(
        "#!/bin/sh\n'''exec' \"{}/bin/python3\" \"$0\" \"$@\"\n' '''\nimport sys\nfrom celesto.cli.main import main\nsys.exit(main())\n",
        v.display()
    );
    let bin = tmp.path().join("bin");
    write(&bin.join("celesto"), body.as_bytes(), 0o755);
    let e = path_env(tmp.path(), &[&bin]);
    let i = only(&detect_installs_with(&e, &[], &[])).clone();
    assert_eq!(i.path, v);
    assert_eq!(i.version.as_deref(), Some("0.1.10"));
}

#[test]
fn relative_path_entries_are_not_searched() {
    let tmp = tempfile::tempdir().unwrap();
    let v = tmp.path().join("venv");
    venv(&v, "celesto", "0.1.10", "2026.10.25");
    let e = EnvSnapshot::from_pairs(tmp.path(), [("PATH", "venv/bin::.")]);
    assert_eq!(detect_installs_with(&e, &[], &[]), vec![]);
}

#[test]
fn detect_installs_looks_at_the_home_prefix_and_launchers_without_path() {
    // The glue: fixed prefixes and launchers come from smolvm_roots. Only assert on the scratch
    // HOME's install, since the host may have system-wide ones.
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let prefix = h.join(".smolvm");
    smol_machines_prefix(&prefix);
    let local_bin = h.join(".local/bin");
    fs::create_dir_all(&local_bin).unwrap();
    symlink(prefix.join("smolvm"), local_bin.join("smolvm")).unwrap();
    let e = path_env(h, &[]);
    for platform in BOTH {
        let found = detect_installs(platform, &e);
        let mine: Vec<&Install> = found.iter().filter(|i| i.path.starts_with(h)).collect();
        assert_eq!(mine.len(), 1, "{found:#?}");
        assert_eq!(mine[0].method, "script");
        assert_eq!(mine[0].path, prefix);
        assert_eq!(mine[0].executable, Some(local_bin.join("smolvm")));
        assert_eq!(mine[0].version.as_deref(), Some("1.32.2"));
    }
}
