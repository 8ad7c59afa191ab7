//! `smolsweep why` (issue 21): how Smolsweep judges one thing, and on what evidence. Golden
//! texts for every verdict class on the fixture HOME of the golden scan tests (plus a keep rule,
//! a disk a spawned process holds open, a VM process this test starts, and a HOME with a newer
//! smolvm), the exit codes, and the same facts as JSON.
//!
//! The expected text lives in `tests/golden/why.txt`; `SMOLSWEEP_BLESS=1 cargo test --test it
//! why::` rewrites it after a change someone has read. What varies between runs is normalised:
//! the scratch directory, finding ids, process ids, user ids and times.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;
use smolsweep_fixtures::vmm::{boot_vm, fake_vmm_bin, spawn, FakeVmm, Shape};
use smolsweep_fixtures::{
    age_tree, celesto_edge_cases, smolvm_edge_cases, unique_prefix, Scratch, OLD,
};

fn run(s: &Scratch, args: &[&str]) -> Output {
    s.command(env!("CARGO_BIN_EXE_smolsweep"), args)
        .env("LANG", "C.UTF-8")
        .output()
        .unwrap()
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

fn scan_json(s: &Scratch) -> Value {
    let o = run(s, &["scan", "--json"]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The path of the first finding (in the report's order) that `pick` accepts.
fn finding_path(v: &Value, pick: impl Fn(&Value) -> bool) -> PathBuf {
    let f = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| pick(f))
        .unwrap_or_else(|| panic!("no such finding in {v:#}"));
    PathBuf::from(f["path"].as_str().unwrap())
}

fn id_of(v: &Value, p: &Path) -> String {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"].as_str() == p.to_str())
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Replace every run of digits that follows one of `words` with `with`.
fn digits_after(text: &str, words: &[&str], with: &str) -> String {
    run_after(text, words, with, |c| c.is_ascii_digit())
}

/// Replace every run of characters `in_run` accepts that follows one of `words` with `with`.
fn run_after(text: &str, words: &[&str], with: &str, in_run: fn(char) -> bool) -> String {
    let mut text = text.to_string();
    for word in words {
        let mut out = String::with_capacity(text.len());
        let mut rest = text.as_str();
        while let Some(i) = rest.find(word) {
            out.push_str(&rest[..i + word.len()]);
            rest = &rest[i + word.len()..];
            let n = rest.chars().take_while(|c| in_run(*c)).count();
            if n > 0 {
                out.push_str(with);
                rest = &rest[n..];
            }
        }
        out.push_str(rest);
        text = out;
    }
    text
}

/// Every `YYYY-MM-DD HH:MM:SS UTC` becomes `<time>`, every other `YYYY-MM-DD` `<date>`, and
/// every run of 16 hex digits (a finding id) `<id>`.
fn times_and_ids(text: &str) -> String {
    let shape = |s: &[u8], pat: &[u8]| {
        s.len() >= pat.len()
            && pat.iter().zip(s).all(|(p, c)| match p {
                b'9' => c.is_ascii_digit(),
                p => p == c,
            })
    };
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        let rest = &b[i..];
        let hex = rest.iter().take_while(|c| c.is_ascii_hexdigit()).count();
        let boundary = i == 0 || !b[i - 1].is_ascii_alphanumeric();
        if shape(rest, b"9999-99-99 99:99:99 UTC") {
            out.push_str("<time>");
            i += 23;
        } else if shape(rest, b"9999-99-99") {
            out.push_str("<date>");
            i += 10;
        } else if boundary && hex == 16 {
            out.push_str("<id>");
            i += 16;
        } else if boundary && hex > 0 {
            out.push_str(&text[i..i + hex]);
            i += hex;
        } else {
            let c = text[i..].chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

fn normalise(text: &str, root: &Path) -> String {
    let text = text.replace(&root.display().to_string(), "<T>");
    let text = digits_after(&text, &["user "], "<uid>");
    // Keep rule ids hash the kept file's identity.
    let text = run_after(&text, &["rule ", "keep remove "], "<rule>", |c| {
        c.is_ascii_hexdigit()
    });
    let text = digits_after(
        &text,
        &["Process ", "process ", "reap ", "kill ", "processes "],
        "<pid>",
    );
    // At a terminal's width a line may break after the word (the layout is the same for
    // every pid: it counts one as seven digits).
    let mut text = text;
    let pid = ["process\n", "Process\n", "reap\n", "kill\n", "processes\n"];
    for (word, hex) in pid.iter().map(|w| (*w, false)).chain([("remove\n", true)]) {
        let mut out = String::with_capacity(text.len());
        let mut rest = text.as_str();
        while let Some(i) = rest.find(word) {
            let after = &rest[i + word.len()..];
            let indent = after.len() - after.trim_start_matches(' ').len();
            out.push_str(&rest[..i + word.len() + indent]);
            rest = &after[indent..];
            let n = match hex {
                false => rest.chars().take_while(char::is_ascii_digit).count(),
                true => rest.chars().take_while(char::is_ascii_hexdigit).count(),
            };
            if n > 0 {
                out.push_str(if hex { "<rule>" } else { "<pid>" });
                rest = &rest[n..];
            }
        }
        out.push_str(rest);
        text = out;
    }
    times_and_ids(&text)
}

fn check(name: &str, got: &str) {
    smolsweep_fixtures::golden::check(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden"),
        name,
        got,
    )
}

/// `smolsweep why TARGET` as the golden file shows it: the case, the exit code, stdout and
/// stderr.
fn why_text(s: &Scratch, case: &str, target: &str) -> String {
    why_text_in(s, case, target, &[])
}

/// [`why_text`] with `env` set (a terminal's `COLUMNS`, a locale); every line fits `COLUMNS`.
fn why_text_in(s: &Scratch, case: &str, target: &str, env: &[(&str, &str)]) -> String {
    let o = s
        .command(env!("CARGO_BIN_EXE_smolsweep"), &["why", target])
        .env("LANG", "C.UTF-8")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    if let Some((_, w)) = env.iter().find(|(k, _)| *k == "COLUMNS") {
        let w: usize = w.parse().unwrap();
        let all =
            String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
        for l in all.lines() {
            assert!(l.chars().count() <= w, "{case} at {w}: {l}");
        }
    }
    let text =
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    for internal in ["smolvm.boot_vm", "celesto.qemu", "orphan_disk", "opt_in"] {
        assert!(
            !text.contains(internal),
            "{case}: internal id {internal}:\n{text}"
        );
    }
    format!(
        "$ smolsweep why {case} (exit {})\n{}\n",
        code(&o),
        normalise(&text, s.dir())
    )
}

fn fake_vmm() -> PathBuf {
    fake_vmm_bin(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/fake_vmm.rs"),
        Path::new(env!("CARGO_TARGET_TMPDIR")),
    )
}

/// A process this test starts that holds `path` open and names it on its command line.
fn holder(path: &Path) -> FakeVmm {
    spawn(
        &fake_vmm(),
        &Shape {
            argv: vec!["holder".into(), path.display().to_string()],
            open: Some(path),
            ..Default::default()
        },
    )
}

/// Issue 21: every verdict class, as a person reads it: a reclaimable orphan disk, an opt-in
/// cache, a kept disk and the backing file it keeps, a disk a process holds open, a machine, a
/// sandbox, a gone sandbox's leftovers, a product root, a path outside every root, a process
/// that is no VM, an orphaned VM process, and a newer smolvm whose leftovers are unverifiable.
#[test]
fn why_texts_match_the_reviewed_text() {
    let s = Scratch::new();
    let _cel = celesto_edge_cases(&s.home).unwrap();
    let _smol = smolvm_edge_cases(&s.home).unwrap();
    let v = scan_json(&s);
    let ends =
        |suffix: &'static str| move |f: &Value| f["path"].as_str().unwrap().ends_with(suffix);
    let orphan = finding_path(&v, ends("disks/orph1.ext4"));
    let cache = finding_path(&v, |f| {
        f["verdict"] == "opt_in" && f["kind"] == "celesto.image_cache_stale"
    });
    let kept = finding_path(&v, ends("disks/orph2.qcow2"));
    let backing = finding_path(&v, ends("disks/orph2.qcow2.backing-3f2a.qcow2"));
    let in_use = finding_path(&v, ends("disks/inuse1.qcow2"));
    let dangling = finding_path(&v, |f| f["kind"] == "smolvm.dangling_dir");
    let data_dir = s.home.path(".local/state/celesto");
    // Inside what the layout table says is never a finding (smolvm serve's volumes: user data).
    let under = s
        .home
        .path(".local/share/smolvm/volumes/web-data/notes.txt");
    std::fs::create_dir_all(under.parent().unwrap()).unwrap();
    std::fs::write(&under, "mine").unwrap();
    let outside = s.dir().join("notes.txt");
    std::fs::write(&outside, "mine").unwrap();
    let o = run(
        &s,
        &[
            "keep",
            "add",
            kept.to_str().unwrap(),
            "--why",
            "golden image",
        ],
    );
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    let held = holder(&in_use);
    let vm = boot_vm(&fake_vmm(), &s.home.root, &dangling);
    let cache_id = id_of(&v, &cache);
    // A prefix of 8 or more that no other finding id starts with and that is not all digits
    // (digits name a running process first), whatever the ids of this scratch HOME's paths.
    let ids: Vec<&str> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap())
        .collect();
    let shortest = unique_prefix(&cache_id, &ids).len().max(8);
    let cache_prefix = (shortest..cache_id.len())
        .map(|n| &cache_id[..n])
        .find(|p| !p.bytes().all(|b| b.is_ascii_digit()))
        .unwrap_or(&cache_id);

    let p = |p: &Path| p.to_str().unwrap().to_string();
    let cases = [
        ("ORPHAN-DISK", p(&orphan)),
        ("CACHE-ID-PREFIX", cache_prefix.to_string()),
        ("KEPT-DISK", p(&kept)),
        ("BACKING-FILE-OF-KEPT-DISK", p(&backing)),
        ("DISK-IN-USE", p(&in_use)),
        ("smolvm:web", "smolvm:web".into()),
        ("celesto:fire1", "celesto:fire1".into()),
        ("celesto:orph1", "celesto:orph1".into()),
        ("DATA-DIR", p(&data_dir)),
        ("UNDER-A-ROOT", p(&under)),
        ("OUTSIDE", p(&outside)),
        ("HOLDER-PID", held.pid().to_string()),
        ("VM-PID", vm.pid().to_string()),
    ];
    let mut text = String::new();
    for (case, target) in &cases {
        text += &why_text(&s, case, target);
    }
    // Issue 31: each target class at a terminal of 80 and of 120 columns, in ASCII.
    for w in ["80", "120"] {
        let mut at = String::new();
        for (case, target) in &cases {
            at += &why_text_in(&s, case, target, &[("COLUMNS", w), ("LANG", "C")]);
        }
        assert!(at.is_ascii(), "LANG=C gets ASCII only");
        check(&format!("why-{w}-lang-c.txt"), &at);
    }

    // A HOME with a smolvm newer than the versions Smolsweep knows.
    let newer = Scratch::new();
    let sm = newer.home.smolvm().unwrap();
    sm.install("1.40.0").unwrap();
    sm.record("other", serde_json::json!({})).unwrap();
    let ghost = sm.dangling_dir("ghost").unwrap();
    age_tree(&newer.home.root, OLD).unwrap();
    text += &why_text(&newer, "NEWER-SMOLVM-DIR", ghost.to_str().unwrap());
    check("why.txt", &text);
    drop((held, vm));
}

#[test]
fn why_fails_with_exit_1_on_what_it_cannot_find_and_2_on_usage() {
    let s = Scratch::new();
    let _ = s.home.celesto_data_dir().unwrap();
    let gone = s.home.path(".local/state/celesto/disks/nothing.qcow2");
    for target in [
        "smolvm:nosuchmachine",
        "celesto:nosuchsandbox",
        gone.to_str().unwrap(),
        "zzzz-not-anything",
        "4294967295",
    ] {
        let o = run(&s, &["why", target]);
        assert_eq!(code(&o), 1, "{target}: {o:?}");
        assert!(o.stdout.is_empty(), "{target}: {o:?}");
        assert!(
            String::from_utf8_lossy(&o.stderr).starts_with("smolsweep: "),
            "{target}: {o:?}"
        );
    }
    assert_eq!(code(&run(&s, &["why"])), 2);
    assert_eq!(code(&run(&s, &["why", "a", "b"])), 2);
    let o = run(&s, &["why", "--help"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("Examples:"));
}

#[test]
fn why_json_gives_the_same_facts_as_data() {
    let s = Scratch::new();
    let d = s.home.celesto_data_dir().unwrap();
    d.row("live1", "stopped", "qemu", None).unwrap();
    d.disk("live1", "qcow2", 1 << 16, 1 << 14).unwrap();
    let orphan = d.disk("gone1", "qcow2", 1 << 16, 1 << 14).unwrap();
    age_tree(&s.home.root, OLD).unwrap();

    let o = run(&s, &["why", "--json", orphan.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{o:?}");
    let text = String::from_utf8(o.stdout).unwrap();
    // The one JSON style of every command: pretty, two-space indent.
    assert!(
        text.starts_with("{\n  \"schema\": \"smolsweep.why/1\""),
        "{text}"
    );
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["found"], true);
    assert_eq!(v["asked"]["by"], "path");
    assert_eq!(v["finding"]["verdict"], "reclaimable");
    assert_eq!(v["finding"]["kind"], "celesto.orphan_disk");
    assert_eq!(v["record"], Value::Null);
    assert!(v["unclaimed_in"][0]
        .as_str()
        .unwrap()
        .ends_with("celesto.db"));
    assert_eq!(v["processes"], serde_json::json!([]));
    assert_eq!(
        v["free"]["command"],
        "smolsweep prune --kind orphaned-disks"
    );
    assert_eq!(v["free"]["estimated_bytes"], 1 << 14);
    // The sentences are the same the text prints.
    let human = String::from_utf8(run(&s, &["why", orphan.to_str().unwrap()]).stdout).unwrap();
    for l in v["lines"].as_array().unwrap() {
        assert!(
            human.contains(l["text"].as_str().unwrap()),
            "{l} not in {human}"
        );
    }

    // A locale that is not UTF-8 gets ASCII.
    let o = s
        .command(
            env!("CARGO_BIN_EXE_smolsweep"),
            &["why", orphan.to_str().unwrap()],
        )
        .env("LANG", "C")
        .output()
        .unwrap();
    assert!(o.stdout.is_ascii() && !o.stdout.is_empty(), "{o:?}");

    let o = run(&s, &["why", "--json", "celesto:live1"]);
    assert_eq!(code(&o), 0, "{o:?}");
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["asked"]["by"], "machine");
    assert_eq!(v["record"]["name"], "live1");
    assert_eq!(v["record"]["state"], "stopped");
    assert_eq!(v["free"]["command"], "smolsweep delete celesto:live1");

    // Not found: still one JSON object, and exit 1.
    let o = run(&s, &["why", "--json", "smolvm:nothing"]);
    assert_eq!(code(&o), 1);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["found"], false);
}

/// Ids like git: `why NAME` took a finding whose id starts with NAME before the machine called
/// NAME. What is named in full (a machine's name) now wins over an id it only starts; a finding
/// id given in full is still that finding.
#[test]
fn why_names_a_machine_by_its_full_name_before_a_finding_id_it_starts() {
    let s = Scratch::new();
    let sm = s.home.smolvm().unwrap();
    let orphan = sm.dangling_dir("vm-orphan").unwrap();
    age_tree(&s.home.root, OLD).unwrap();
    let id = id_of(&scan_json(&s), &orphan);
    // A prefix of its id that is not all digits (digits may also name a running process).
    let name = (6..id.len())
        .map(|n| &id[..n])
        .find(|p| !p.bytes().all(|b| b.is_ascii_digit()))
        .unwrap_or(&id);
    sm.record(name, serde_json::json!({})).unwrap();
    let o = run(&s, &["why", name]);
    let said = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(code(&o), 0, "{said}{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        said.starts_with(&format!("machine smolvm:{name}")),
        "{said}"
    );
    let o = run(&s, &["why", &id]);
    let said = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(code(&o), 0, "{said}");
    assert!(said.starts_with(orphan.to_str().unwrap()), "{said}");
}
