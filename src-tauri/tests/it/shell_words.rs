//! The shell only draws (issue 30): every sentence, title and heading a person reads comes from
//! the core's view (`smolsweep::view`), so no two surfaces can word one thing two ways. This
//! reads the shell's own code and fails on a string that is a sentence or a heading: one that
//! starts with a capital letter and has three words or more. Log lines and the shell's tests
//! are not what a person reads and are passed over; error context (`saving settings: …`) starts
//! in lower case and wraps the core's or the system's error.

use std::path::Path;

/// The string literals of `code` (its tests and log lines left out) that read as a sentence or
/// a heading, with their line numbers.
fn sentences(code: &str) -> Vec<(usize, String)> {
    let code = code
        .split("#[cfg(test)]\nmod tests")
        .next()
        .unwrap_or_default();
    let mut out = Vec::new();
    for (i, line) in code.lines().enumerate() {
        let t = line.trim_start();
        if t.starts_with("//") || t.contains("tracing::") {
            continue;
        }
        let mut rest = line;
        while let Some(start) = rest.find('"') {
            let after = &rest[start + 1..];
            let mut end = None;
            let mut esc = false;
            for (j, c) in after.char_indices() {
                match (esc, c) {
                    (true, _) => esc = false,
                    (false, '\\') => esc = true,
                    (false, '"') => {
                        end = Some(j);
                        break;
                    }
                    _ => {}
                }
            }
            let Some(end) = end else { break };
            let lit = &after[..end];
            let words = lit
                .split(|c: char| !c.is_ascii_alphabetic())
                .filter(|w| !w.is_empty())
                .count();
            let capital = lit.chars().next().is_some_and(|c| c.is_ascii_uppercase())
                && lit.chars().nth(1).is_some_and(|c| c.is_ascii_lowercase());
            if words >= 3 && capital {
                out.push((i + 1, lit.to_string()));
            }
            rest = &after[end + 1..];
        }
    }
    out
}

#[test]
fn the_shell_holds_no_sentence_of_its_own() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    for e in std::fs::read_dir(&src).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "rs") {
            let code = std::fs::read_to_string(&p).unwrap();
            for (n, lit) in sentences(&code) {
                found.push(format!("{}:{n}: {lit:?}", p.display()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "sentences in the shell (they belong in smolsweep::view):\n{}",
        found.join("\n")
    );
}

#[test]
fn a_sentence_in_shell_code_is_found_and_a_log_line_or_error_context_is_not() {
    let code = r#"
fn f() {
    let n = Note { summary: format!("Freed {} of space", b) };
    tracing::warn!("Scan failed badly: {e}");
    // "A comment is no sentence a person reads"
    let e = format!("saving settings to disk: {e}");
}
#[cfg(test)]
mod tests {
    const S: &str = "A test's own words do not count";
}
"#;
    let got = sentences(code);
    assert_eq!(got, vec![(3, "Freed {} of space".to_string())]);
}
