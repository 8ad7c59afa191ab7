//! The window renders what the core sends: the static window (`ui/*.js`) formats no bytes,
//! sums nothing a person reads and names no product; the strings it shows instead travel in
//! the JSON of the commands (checked under the mock runtime in `mock.rs` and `wizard.rs`).

use std::path::PathBuf;

fn ui_scripts() -> Vec<(PathBuf, String)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../ui");
    let mut out: Vec<(PathBuf, String)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "js"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (p, text)
        })
        .collect();
    out.sort();
    assert!(
        out.iter().any(|(p, _)| p.ends_with("app.js"))
            && out.iter().any(|(p, _)| p.ends_with("wizard.js")),
        "{out:?}"
    );
    out
}

/// The code of a line: without a `//` comment (the scripts hold no `//` inside strings).
fn code(line: &str) -> &str {
    match line.find("//") {
        Some(i) => &line[..i],
        None => line,
    }
}

fn words(s: &str) -> impl Iterator<Item = &str> {
    s.split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .filter(|w| !w.is_empty())
}

#[test]
fn ui_formats_no_bytes_and_names_no_product() {
    let mut bad = vec![];
    for (path, text) in ui_scripts() {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        for (n, line) in text.lines().enumerate() {
            let c = code(line);
            let lower = c.to_lowercase();
            let mut why = vec![];
            // A byte-formatting function or byte units.
            if c.contains("bytes(") || c.contains("bytes (") || c.contains("toFixed(") {
                why.push("formats bytes");
            }
            if words(c).any(|w| {
                ["B", "kB", "KB", "MB", "GB", "TB", "PB", "KiB", "MiB", "GiB"].contains(&w)
            }) {
                why.push("a byte unit");
            }
            // Sums: no reduce at all, no arithmetic on a byte count.
            if c.contains("reduce(") {
                why.push("reduce(");
            }
            if lower.contains("bytes")
                && [" + ", " - ", " * ", " / ", "+=", "-=", "Math."]
                    .iter()
                    .any(|op| c.contains(op))
            {
                why.push("arithmetic on bytes");
            }
            // Product display names (the core's `Product::display_name`).
            // (`celesto` and `smolvm` alone are the products' ids, as the JSON carries them.)
            if lower.contains("celesto smolvm") || lower.contains("smol-machines") {
                why.push("a product's name");
            }
            // Plurals built here: counts in words come from the core.
            if c.contains("=== 1 ?") || c.contains("plural(") {
                why.push("builds a plural");
            }
            if !why.is_empty() {
                bad.push(format!("{name}:{}: {why:?}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "the window computes words of its own:\n{}",
        bad.join("\n")
    );
}

/// The check itself catches what the window used to do.
#[test]
fn ui_word_check_catches_the_old_helpers() {
    for old in [
        "const bytes = (n) => `${n} B`;",
        "  const u = [\"B\", \"kB\", \"MB\", \"GB\", \"TB\", \"PB\"];",
        "const total = v.legend.reduce((a, e) => a + e.bytes, 0) || 1;",
        "const PRODUCT = { celesto: \"Celesto SmolVM\", smolvm: \"smol-machines smolvm\" };",
        "text: `${n} step${n === 1 ? \"\" : \"s\"}`",
    ] {
        let c = code(old);
        let lower = c.to_lowercase();
        let caught = c.contains("bytes(")
            || c.contains("reduce(")
            || words(c).any(|w| ["B", "kB", "MB", "GB"].contains(&w))
            || lower.contains("smol-machines")
            || c.contains("=== 1 ?")
            || c.contains("const bytes");
        assert!(caught, "{old}");
    }
}

/// Issue 31 item 10, hazard: History in the locale's format ("12/3/2026, 5:29:36 AM") beside
/// the CLI's "2026-12-03 04:36:22 +00:00". The window formats no time or date of its own: every
/// time it shows is the core's text.
#[test]
fn history_time_is_never_formatted_by_the_window() {
    let formats = |c: &str| {
        ["toLocale", "new Date(", "Date.now(", "Intl."]
            .iter()
            .any(|f| c.contains(f))
    };
    assert!(formats(
        "el(\"td\", { text: new Date(r.started_at_ms).toLocaleString() }),"
    ));
    let mut bad = vec![];
    for (path, text) in ui_scripts() {
        for (n, line) in text.lines().enumerate() {
            if formats(code(line)) {
                bad.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "the window formats times:\n{}",
        bad.join("\n")
    );
}
