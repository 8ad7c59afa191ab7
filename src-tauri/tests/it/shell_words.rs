//! The shell only draws (issue 30): every sentence, title and heading a person reads comes from
//! the core's view (`smolsweep::view`), so no two surfaces can word one thing two ways. This
//! reads the shell's own code and fails on a string that is a sentence or a heading: one that
//! starts with a capital letter and has three words or more. Log lines and the shell's tests
//! are not what a person reads and are passed over; error context (`saving settings: …`) starts
//! in lower case and wraps the core's or the system's error.

use std::path::Path;

/// Every Rust file of the shell (`src-tauri/src/`) with its text.
fn shell_sources() -> Vec<(std::path::PathBuf, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out: Vec<_> = std::fs::read_dir(&src)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .map(|p| {
            let code = std::fs::read_to_string(&p).unwrap();
            (p, code)
        })
        .collect();
    out.sort();
    assert!(
        out.len() > 10,
        "only {} files in {}",
        out.len(),
        src.display()
    );
    out
}

/// The shell's code without its tests.
fn without_tests(code: &str) -> &str {
    code.split("#[cfg(test)]\nmod tests")
        .next()
        .unwrap_or_default()
}

/// The string literals of `code` (its tests and log lines left out) that read as a sentence or
/// a heading, with their line numbers.
fn sentences(code: &str) -> Vec<(usize, String)> {
    let words = |lit: &str| {
        lit.split(|c: char| !c.is_ascii_alphabetic())
            .filter(|w| !w.is_empty())
            .count()
    };
    let capital = |lit: &str| {
        lit.chars().next().is_some_and(|c| c.is_ascii_uppercase())
            && lit.chars().nth(1).is_some_and(|c| c.is_ascii_lowercase())
    };
    rust_literals(code, true)
        .into_iter()
        .filter(|(_, lit)| words(lit) >= 3 && capital(lit))
        .collect()
}

/// The one-line string literals of `code` (its tests and comment lines left out, and its log
/// lines when `skip_logs`), with their line numbers.
fn rust_literals(code: &str, skip_logs: bool) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (i, line) in without_tests(code).lines().enumerate() {
        let t = line.trim_start();
        if t.starts_with("//") || (skip_logs && t.contains("tracing::")) {
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
            out.push((i + 1, after[..end].to_string()));
            rest = &after[end + 1..];
        }
    }
    out
}

#[test]
fn the_shell_holds_no_sentence_of_its_own() {
    let mut found = Vec::new();
    for (p, code) in shell_sources() {
        for (n, lit) in sentences(&code) {
            found.push(format!("{}:{n}: {lit:?}", p.display()));
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

// ---- the window (`ui/`) --------------------------------------------------------------------

/// A string literal of a window script as the word check reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Lit {
    line: usize,
    /// Its text; each `${…}` of a template literal stands as `\u{1}`.
    text: String,
    /// Where it stands: a word's key (`w("…")`), a person reads it (`text:`, `title:`,
    /// `"aria-label":`, `placeholder:`, `.textContent =`, `toast(…)`, an element's child in
    /// `el(tag, attrs, …)`), a class list or a selector (neither is read), or elsewhere.
    place: Place,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    Key,
    Read,
    Code,
    Other,
}

/// One open bracket of a script while it is read.
#[derive(Debug, Clone, Default)]
struct Level {
    /// The function called, for a `(` right after a name.
    call: String,
    /// Which argument (or element) is being read: commas seen at this level.
    arg: usize,
    /// An object's property being read (`text`, `aria-label`, `class`, …).
    prop: String,
    /// The next name or string may be a property's name (after `{` or `,` in an object).
    expect_key: bool,
    brace: bool,
    /// `.textContent = …` / `.className = …` up to the next `;` or `,`.
    assign: Option<Place>,
}

const READ_PROPS: [&str; 4] = ["text", "title", "aria-label", "placeholder"];
const READ_ASSIGN: [&str; 4] = ["textContent", "innerText", "title", "placeholder"];
const READ_CALLS: [&str; 3] = ["toast", "createTextNode", "alert"];
const CODE_CALLS: [&str; 11] = [
    "$",
    "$$",
    "querySelector",
    "querySelectorAll",
    "closest",
    "matches",
    "createElement",
    "createElementNS",
    "add",
    "remove",
    "toggle",
];

/// The string literals of a script with where each stands (see [`Lit`]).
fn literals(code: &str) -> Vec<Lit> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    scan(&chars, &mut i, &mut line, Place::Other, false, &mut out);
    out
}

/// Reads code from `i` to the end, or (`in_template`) to the `}` closing a `${`.
fn scan(
    c: &[char],
    i: &mut usize,
    line: &mut usize,
    base: Place,
    in_template: bool,
    out: &mut Vec<Lit>,
) {
    let mut stack: Vec<Level> = Vec::new();
    // The last significant token: a name (`Some(name)`), or punctuation (`None` with `last_punct`).
    let mut last_name: Option<String> = None;
    let mut last_punct: char = '(';
    let mut after_dot = false;
    let mut pending_assign: Option<String> = None;
    // `.textContent = …` outside any bracket, up to the `;`.
    let mut top_assign: Option<Place> = None;
    while *i < c.len() {
        let ch = c[*i];
        let next = c.get(*i + 1).copied().unwrap_or('\0');
        if ch == '\n' {
            *line += 1;
            *i += 1;
            continue;
        }
        if ch.is_whitespace() {
            *i += 1;
            continue;
        }
        if ch == '/' && next == '/' {
            while *i < c.len() && c[*i] != '\n' {
                *i += 1;
            }
            continue;
        }
        if ch == '/' && next == '*' {
            *i += 2;
            while *i + 1 < c.len() && !(c[*i] == '*' && c[*i + 1] == '/') {
                if c[*i] == '\n' {
                    *line += 1;
                }
                *i += 1;
            }
            *i += 2;
            continue;
        }
        // Where a literal here stands.
        let place = |stack: &[Level]| -> Place {
            let Some(l) = stack.last() else {
                return top_assign.unwrap_or(base);
            };
            if let Some(p) = l.assign {
                return p;
            }
            if l.brace {
                return match l.prop.as_str() {
                    p if READ_PROPS.contains(&p) => Place::Read,
                    "class" => Place::Code,
                    _ => base,
                };
            }
            match l.call.as_str() {
                "w" | "wn" if l.arg == 0 => Place::Key,
                "el" | "svgEl" if l.arg == 0 => Place::Code,
                "el" | "svgEl" if l.arg >= 2 => Place::Read,
                f if READ_CALLS.contains(&f) => Place::Read,
                f if CODE_CALLS.contains(&f) => Place::Code,
                _ => base,
            }
        };
        if ch == '"' || ch == '\'' || ch == '`' {
            let start_line = *line;
            let mut text = String::new();
            *i += 1;
            let here = place(&stack);
            while *i < c.len() && c[*i] != ch {
                match c[*i] {
                    '\\' => {
                        text.push(c.get(*i + 1).copied().unwrap_or('\\'));
                        *i += 2;
                    }
                    '$' if ch == '`' && c.get(*i + 1) == Some(&'{') => {
                        *i += 2;
                        text.push('\u{1}');
                        let inner = match here {
                            Place::Key => Place::Other,
                            p => p,
                        };
                        scan(c, i, line, inner, true, out);
                    }
                    x => {
                        if x == '\n' {
                            *line += 1;
                        }
                        text.push(x);
                        *i += 1;
                    }
                }
            }
            *i += 1;
            // A property's name is no literal.
            let mut j = *i;
            while j < c.len() && c[j] == ' ' {
                j += 1;
            }
            let is_key =
                stack.last().is_some_and(|l| l.brace && l.expect_key) && c.get(j) == Some(&':');
            if is_key {
                let l = stack.last_mut().unwrap();
                l.prop = text;
                l.expect_key = false;
            } else {
                out.push(Lit {
                    line: start_line,
                    text,
                    place: here,
                });
                if let Some(l) = stack.last_mut() {
                    l.expect_key = false;
                }
            }
            last_name = None;
            last_punct = 'x';
            after_dot = false;
            continue;
        }
        if ch.is_ascii_alphanumeric() || ch == '_' || ch == '$' {
            let s = *i;
            while *i < c.len() && (c[*i].is_ascii_alphanumeric() || c[*i] == '_' || c[*i] == '$') {
                *i += 1;
            }
            let name: String = c[s..*i].iter().collect();
            let mut j = *i;
            while j < c.len() && c[j] == ' ' {
                j += 1;
            }
            let colon = c.get(j) == Some(&':');
            if let Some(l) = stack.last_mut() {
                if l.brace && l.expect_key && colon {
                    l.prop = name.clone();
                }
                l.expect_key = false;
            }
            pending_assign = after_dot.then(|| name.clone());
            last_name = Some(name);
            after_dot = false;
            continue;
        }
        // Punctuation.
        let regex_ok = last_name.as_deref().map_or(true, |n| n == "return")
            && "(,=:[!&|?{};+-*%<>~^".contains(last_punct);
        if ch == '/' && regex_ok {
            *i += 1;
            let mut class = false;
            while *i < c.len() {
                match c[*i] {
                    '\\' => *i += 1,
                    '[' => class = true,
                    ']' => class = false,
                    '/' if !class => break,
                    _ => {}
                }
                *i += 1;
            }
            *i += 1;
            while *i < c.len() && c[*i].is_ascii_alphabetic() {
                *i += 1;
            }
            last_name = None;
            last_punct = 'x';
            continue;
        }
        match ch {
            '(' | '[' | '{' => {
                let call = match (ch, &last_name) {
                    ('(', Some(n)) => n.clone(),
                    _ => String::new(),
                };
                stack.push(Level {
                    call,
                    brace: ch == '{',
                    expect_key: ch == '{',
                    ..Default::default()
                });
            }
            ')' | ']' | '}' => {
                let closed = stack.pop();
                if closed.is_none() && ch == '}' && in_template {
                    *i += 1;
                    return;
                }
            }
            ',' => {
                if let Some(l) = stack.last_mut() {
                    l.arg += 1;
                    l.prop.clear();
                    l.assign = None;
                    l.expect_key = l.brace;
                }
            }
            ';' => {
                if let Some(l) = stack.last_mut() {
                    l.assign = None;
                }
            }
            '=' if next != '='
                && c.get(i.wrapping_sub(1))
                    .is_some_and(|p| !"=!<>".contains(*p)) =>
            {
                let p = match pending_assign.take().as_deref() {
                    Some(n) if READ_ASSIGN.contains(&n) => Some(Place::Read),
                    Some("className") => Some(Place::Code),
                    _ => None,
                };
                if p.is_some() {
                    match stack.last_mut() {
                        Some(l) => l.assign = p,
                        None => top_assign = p,
                    }
                }
            }
            _ => {}
        }
        if ch == ';' && stack.is_empty() {
            top_assign = None;
        }
        after_dot = ch == '.';
        if ch != '.' {
            pending_assign = None;
        }
        last_name = None;
        last_punct = ch;
        *i += 1;
    }
}

/// DOM names a script compares with, not words a person reads.
const DOM_NAMES: [&str; 4] = ["Enter", "Escape", "Tab", "use strict"];

/// Whether `s` holds two words in a row (`kept by you`, `holds \u{1} of deleted files`).
fn two_words(s: &str) -> bool {
    let word = |t: &str| {
        let t = t.trim_matches(|c: char| "().,:;!?…“”\"'".contains(c));
        !t.is_empty() && t.chars().all(|c| c.is_ascii_alphabetic() || c == '\'')
    };
    let toks: Vec<&str> = s.split_whitespace().collect();
    toks.windows(2).any(|p| word(p[0]) && word(p[1]))
}

/// The literals of a window script that hold a word a person reads: a capitalised word
/// anywhere (`"Keep"`, `"Nothing to reclaim."`), any letter where a person reads it
/// (`text: "orphaned"`, `` toast(`Copied ${path}`) ``), or two words in a row outside a class
/// list or a selector (`"kept by you"`). A word's key (`w("keep")`) is none of these.
fn ui_script_words(code: &str) -> Vec<(usize, String)> {
    literals(code)
        .into_iter()
        .filter(|l| l.place != Place::Key && !DOM_NAMES.contains(&l.text.as_str()))
        .filter(|l| {
            let t = &l.text;
            let capital = t
                .as_bytes()
                .windows(2)
                .any(|p| p[0].is_ascii_uppercase() && p[1].is_ascii_lowercase());
            let letter = t.chars().any(|c| c.is_ascii_alphabetic());
            capital
                || (l.place == Place::Read && letter)
                || (l.place != Place::Code && two_words(t))
        })
        .map(|l| (l.line, l.text.replace('\u{1}', "${…}")))
        .collect()
}

/// The keys a window script looks words up by (`w("…")`, `wn("…")`).
fn ui_script_keys(code: &str) -> Vec<String> {
    literals(code)
        .into_iter()
        .filter(|l| l.place == Place::Key)
        .map(|l| l.text)
        .collect()
}

/// The page's words and keys: text outside `<code>` (commands and paths, as typed) and
/// `<title>` (the app's name before a script runs) and the `title`, `aria-label`,
/// `placeholder` and `alt` attributes that hold a letter; the keys of `data-word`,
/// `data-word-title`, `data-word-aria-label` and `data-word-placeholder`.
fn html_words(html: &str) -> (Vec<(usize, String)>, Vec<String>) {
    let (mut words, mut keys) = (Vec::new(), Vec::new());
    let mut quiet = 0usize;
    let line_at = |pos: usize| html[..pos].matches('\n').count() + 1;
    let mut pos = 0;
    while pos < html.len() {
        let Some(lt) = html[pos..].find('<').map(|x| x + pos) else {
            break;
        };
        let text = html[pos..lt].trim();
        if quiet == 0 && text.chars().any(|c| c.is_ascii_alphabetic()) {
            words.push((line_at(pos), text.to_string()));
        }
        if html[lt..].starts_with("<!--") {
            pos = html[lt..]
                .find("-->")
                .map(|x| lt + x + 3)
                .unwrap_or(html.len());
            continue;
        }
        let gt = html[lt..].find('>').map(|x| lt + x).unwrap_or(html.len());
        let tag = &html[lt + 1..gt];
        pos = gt + 1;
        let name: String = tag
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect();
        if ["code", "title", "script", "style"].contains(&name.as_str()) {
            match tag.starts_with('/') {
                true => quiet = quiet.saturating_sub(1),
                false => quiet += 1,
            }
        }
        // Attributes: name="value" (or 'value').
        let mut rest = &tag[name.len().min(tag.len())..];
        while let Some(eq) = rest.find("=\"").or_else(|| rest.find("='")) {
            let attr = rest[..eq]
                .rsplit(|c: char| c.is_whitespace())
                .next()
                .unwrap_or("");
            let q = rest.as_bytes()[eq + 1] as char;
            let after = &rest[eq + 2..];
            let end = after.find(q).unwrap_or(after.len());
            let value = &after[..end];
            if ["title", "aria-label", "placeholder", "alt"].contains(&attr)
                && value.chars().any(|c| c.is_ascii_alphabetic())
            {
                words.push((line_at(lt), format!("{attr}={value:?}")));
            }
            if attr == "data-word" || attr.starts_with("data-word-") {
                keys.push(value.to_string());
            }
            rest = &after[(end + 1).min(after.len())..];
        }
    }
    (words, keys)
}

fn ui_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../ui")
}

/// Every script and page of the window, by name.
fn ui_files() -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = std::fs::read_dir(ui_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "js" || x == "html"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect();
    out.sort();
    let names: Vec<&str> = out.iter().map(|(n, _)| n.as_str()).collect();
    assert!(
        ["app.js", "index.html", "wizard.js"]
            .iter()
            .all(|n| names.contains(n)),
        "{names:?}"
    );
    out
}

/// The shell only draws, its window included (issue 30): no script or page of `ui/` holds a
/// word a person reads; each is the core's (`smolsweep::view::words`), looked up by key.
#[test]
fn the_window_holds_no_word_of_its_own() {
    let mut found = Vec::new();
    for (name, text) in ui_files() {
        let words = match name.ends_with(".html") {
            true => html_words(&text).0,
            false => ui_script_words(&text),
        };
        for (n, w) in words {
            found.push(format!("ui/{name}:{n}: {w:?}"));
        }
    }
    assert!(
        found.is_empty(),
        "words in the window (they belong in smolsweep::view::words):\n{}",
        found.join("\n")
    );
}

/// The window's vocabulary is closed: every key `ui/` looks up is in the core's table, and
/// every word of the table is used by `ui/`.
#[test]
fn the_windows_words_are_the_cores_table_and_all_of_it() {
    use smolsweep::view::words::Word;
    let mut used = std::collections::BTreeSet::new();
    for (name, text) in ui_files() {
        let keys = match name.ends_with(".html") {
            true => html_words(&text).1,
            false => ui_script_keys(&text),
        };
        assert!(!keys.is_empty(), "{name} looks up no word");
        used.extend(keys);
    }
    let table: std::collections::BTreeSet<String> =
        Word::ALL.iter().map(|w| w.key().to_string()).collect();
    let unknown: Vec<&String> = used.difference(&table).collect();
    let unused: Vec<&String> = table.difference(&used).collect();
    assert!(
        unknown.is_empty(),
        "keys the window uses that the core has no word for: {unknown:?}"
    );
    assert!(
        unused.is_empty(),
        "words of the core's table the window never uses: {unused:?}"
    );
}

/// Whether `code` names something of its own `w` or `wn`, hiding the word lookup (`let w;`
/// in a function made its `w("why_what")` call the command's answer).
fn hides_the_lookup(code: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in code.lines().enumerate() {
        let toks: Vec<&str> = line
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$'))
            .filter(|t| !t.is_empty())
            .collect();
        let binds = toks.windows(2).any(|p| {
            ["let", "const", "var", "function"].contains(&p[0]) && ["w", "wn"].contains(&p[1])
        });
        let param = [
            "(w)", "(w,", " w =>", "(wn)", "(wn,", " wn =>", ", w)", ", wn)",
        ]
        .iter()
        .any(|p| line.contains(p));
        let defines = line.starts_with("function w(") || line.starts_with("function wn(");
        if (binds || param) && !defines {
            out.push((n + 1, line.trim().to_string()));
        }
    }
    out
}

/// No script hides the word lookup behind a name of its own.
#[test]
fn no_window_script_hides_the_word_lookup() {
    assert_eq!(
        hides_the_lookup("function w(key, holes) {\n  let w;\n  items.map((w) => w.id);\n"),
        [
            (2, "let w;".to_string()),
            (3, "items.map((w) => w.id);".to_string())
        ]
    );
    let mut found = Vec::new();
    for (name, text) in ui_files() {
        if name.ends_with(".js") {
            for (n, l) in hides_the_lookup(&text) {
                found.push(format!("ui/{name}:{n}: {l}"));
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// The check itself: a sentence, a heading, a button's word and a lowercase phrase in a script
/// or the page are found; keys, class lists, selectors, ids and commands in `<code>` are not.
#[test]
fn a_word_in_the_window_is_found_and_a_key_class_or_selector_is_not() {
    let js = r##"
"use strict";
function f(p, what) {
  $("#findings-list").replaceChildren(el("div", { class: "empty", text: "Nothing to reclaim." }));
  const b = el("button", { type: "button", class: "secondary small keep", "aria-label": `Keep ${what}` }, "Keep");
  el("span", { class: `badge ${p.orphan ? "orphan" : "state"}`, text: p.orphan ? "orphaned" : "running" });
  el("td", {}, "kept by you");
  $("#scan-state").textContent = "scanning";
  toast(`copied ${p.path}`);
  // "A comment is no word a person reads"
  el("p", { class: "muted small", text: w("nothing_kept") }, wn("history_journal", { journal: el("code", { text: p.j }) }));
  $$("nav button[data-view]").forEach((x) => x.classList.toggle("active", x.dataset.view === "overview"));
  invoke("keep_item", { request: { by: "finding", id: p.id }, why: "" });
  const re = /\{(\w+)\}/g; const half = p.w / 2; if (e.key === "Enter") go();
  const meta = [w("pid", { pid: p.pid }), p.held ? w("holds_deleted", { size: p.held }) : ""].join(" · ");
}
"##;
    let got: Vec<String> = ui_script_words(js).into_iter().map(|(_, t)| t).collect();
    assert_eq!(
        got,
        [
            "Nothing to reclaim.",
            "Keep ${…}",
            "Keep",
            "orphaned",
            "running",
            "kept by you",
            "scanning",
            "copied ${…}",
        ]
    );
    assert_eq!(
        ui_script_keys(js),
        ["nothing_kept", "history_journal", "pid", "holds_deleted"]
    );
    let html = r##"<!doctype html>
<html lang="en"><head><title>Smolsweep</title></head>
<body>
  <!-- Words in a comment are no words -->
  <nav id="nav" aria-label="Sections"><button type="button" data-view="overview" class="active" data-word="overview"></button></nav>
  <h2 id="h-space">Space by kind</h2>
  <label class="row"><input type="checkbox" id="s-notify"> <span data-word="notify_me" data-inline></span></label>
  <p class="muted small" data-word="auto_note"><code data-hole="command">systemctl --user enable --now smolsweep-auto.timer</code></p>
  <input id="f-age" size="5" placeholder="7d" data-word-aria-label="auto_min_age">
  <div class="card"><div id="t-optin" class="big">–</div></div>
</body></html>
"##;
    let (words, keys) = html_words(html);
    assert_eq!(
        words,
        [
            (5, "aria-label=\"Sections\"".to_string()),
            (6, "Space by kind".to_string()),
            (9, "placeholder=\"7d\"".to_string()),
        ]
    );
    assert_eq!(keys, ["overview", "notify_me", "auto_note", "auto_min_age"]);
}

// ---- no kind of finding named by the shell or the window ----------------------------------

/// What names a kind of finding in code: its stable string (`celesto.orphan_disk`), its short
/// name (`orphaned-disks`) and its variant (`FindingKind::CelestoOrphanDisk`). A kind is the
/// core's to decide on; the shell and the window carry the kinds the core hands them.
fn kind_names() -> Vec<String> {
    use smolsweep::model::FindingKind;
    let mut out = Vec::new();
    for k in FindingKind::ALL {
        out.push(k.as_str().to_string());
        out.push(k.short().to_string());
    }
    out
}

/// The literals of `lits` that name a kind: one holding a stable string, or one that is a short
/// name.
fn kind_literals(lits: Vec<(usize, String)>, names: &[String]) -> Vec<(usize, String)> {
    lits.into_iter()
        .filter(|(_, l)| {
            names
                .iter()
                .any(|n| l == n || (n.contains('.') && l.contains(n.as_str())))
        })
        .collect()
}

/// The lines of Rust `code` (its tests left out) that name a kind's variant (not `ALL`).
fn kind_variants(code: &str) -> Vec<(usize, String)> {
    without_tests(code)
        .lines()
        .enumerate()
        .filter(|(_, l)| {
            let t = l.trim_start();
            !t.starts_with("//")
                && l.match_indices("FindingKind::").any(|(at, m)| {
                    let mut rest = l[at + m.len()..].chars();
                    rest.next().is_some_and(|c| c.is_ascii_uppercase())
                        && rest.next().is_some_and(|c| c.is_ascii_lowercase())
                })
        })
        .map(|(n, l)| (n + 1, l.trim().to_string()))
        .collect()
}

/// Every kind of finding named in the shell's code or the window's scripts and page: the kinds
/// are the core's, which decides what each means.
fn kinds_named_by_the_shell_and_the_window() -> Vec<String> {
    let names = kind_names();
    let mut found = Vec::new();
    for (p, code) in shell_sources() {
        let mut hits = kind_literals(rust_literals(&code, false), &names);
        hits.extend(kind_variants(&code));
        for (n, lit) in hits {
            found.push(format!("{}:{n}: {lit:?}", p.display()));
        }
    }
    for (name, text) in ui_files() {
        let lits: Vec<(usize, String)> = match name.ends_with(".html") {
            true => text
                .lines()
                .enumerate()
                .map(|(n, l)| (n + 1, l.to_string()))
                .collect(),
            false => literals(&text)
                .into_iter()
                .map(|l| (l.line, l.text))
                .collect(),
        };
        let stable: Vec<String> = names.iter().filter(|n| n.contains('.')).cloned().collect();
        let names = if name.ends_with(".html") {
            &stable
        } else {
            &names
        };
        for (n, lit) in kind_literals(lits, names) {
            found.push(format!("ui/{name}:{n}: {lit:?}"));
        }
    }
    found
}

/// No kind literal in the shell or the window (issue 41): which kinds a surface treats apart is
/// decided in the core, by the kind's row, never by a shell naming `celesto.orphan_disk`.
#[test]
fn no_kind_literal_in_the_shell_or_the_window() {
    let found = kinds_named_by_the_shell_and_the_window();
    assert!(
        found.is_empty(),
        "kinds of finding named outside the core (decide by the kind's row in smolsweep):\n{}",
        found.join("\n")
    );
}

/// The check itself: a stable string, a short name and a variant are found in Rust and in a
/// script; a kind handed on from the core, a file name and the same words in a test are not.
#[test]
fn a_kind_literal_is_found_and_a_kind_handed_on_is_not() {
    let names = kind_names();
    let rust = r#"
fn f(k: &str) {
    if k == "celesto.orphan_disk" { return; }
    let s = "orphaned-disks";
    let v = smolsweep::model::FindingKind::SmolvmDanglingDir;
    let db = dir.join("celesto.db");
    // "celesto.saved_disk" in a comment
    let kind = finding.kind;
    let all = smolsweep::model::FindingKind::ALL;
}
#[cfg(test)]
mod tests {
    const K: &str = "celesto.orphan_disk";
}
"#;
    let lits = kind_literals(rust_literals(rust, false), &names);
    assert_eq!(
        lits,
        [
            (3, "celesto.orphan_disk".to_string()),
            (4, "orphaned-disks".to_string())
        ]
    );
    assert_eq!(
        kind_variants(rust),
        [(
            5,
            "let v = smolsweep::model::FindingKind::SmolvmDanglingDir;".to_string()
        )]
    );
    let js = r#"
const saved = findings.filter((f) => f.kind === "celesto.saved_disk");
const opts = kinds.map((k) => el("option", { value: k.kind, text: k.label }));
const tip = `${f.kind}: smolvm.dangling_dir`;
"#;
    let lits: Vec<(usize, String)> = literals(js).into_iter().map(|l| (l.line, l.text)).collect();
    let got: Vec<usize> = kind_literals(lits, &names)
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(got, [2, 4]);
}

// ---- no count worded by the shell -----------------------------------------------------------

/// The literals of `code` (its tests and log lines left out) that word a count: a number before
/// a word (`"1 check failed"`, `" · 1 mount inside"`), or a plural's ending chosen in code
/// (`if n == 1 { "" } else { "s" }`). Counting is wording: the core's.
fn counts_worded(code: &str) -> Vec<(usize, String)> {
    rust_literals(code, true)
        .into_iter()
        .filter(|(_, lit)| {
            let toks: Vec<&str> = lit.split_whitespace().collect();
            let numbered = toks.windows(2).any(|p| {
                p[0].chars().all(|c| c.is_ascii_digit())
                    && p[1].chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            });
            numbered || lit == "s" || lit == "es"
        })
        .collect()
}

/// The shell words no count (issue 41): "1 check failed" and "{n} checks failed", "1 mount
/// inside", "… and 3 more" are the core's, which chooses singular or plural once.
#[test]
fn the_shell_words_no_count_of_its_own() {
    let code = r#"
fn f(n: usize) -> String {
    let a = "1 check failed: it names what remains.";
    let b = format!("{n} item{}", if n == 1 { "" } else { "s" });
    let c = format!("{n} checks failed");
    tracing::info!("2 scans ran");
    let d = "port 8080";
}
"#;
    let got: Vec<usize> = counts_worded(code).into_iter().map(|(n, _)| n).collect();
    assert_eq!(got, [3, 4]);
    let mut found = Vec::new();
    for (p, code) in shell_sources() {
        for (n, lit) in counts_worded(&code) {
            found.push(format!("{}:{n}: {lit:?}", p.display()));
        }
    }
    assert!(
        found.is_empty(),
        "counts worded in the shell (the core words them):\n{}",
        found.join("\n")
    );
}

// ---- no decision in the window ---------------------------------------------------------------

/// What a window script decides that is the core's: a step's or an outcome's status compared
/// with a literal (`s.status !== "removed"`: what counts as a partial run), or a policy default
/// typed again (`|| "7d"`), with their line numbers.
fn window_decisions(code: &str, defaults: &[String]) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = code
        .lines()
        .enumerate()
        .filter(|(_, l)| {
            ["status ===", "status !==", "status ==", "status !="]
                .iter()
                .any(|c| l.contains(c))
        })
        .map(|(n, l)| (n + 1, l.trim().to_string()))
        .collect();
    out.extend(
        literals(code)
            .into_iter()
            .filter(|l| defaults.contains(&l.text))
            .map(|l| (l.line, l.text)),
    );
    out.sort();
    out
}

/// The window decides nothing the core decides (issue 41): whether a run was partial, and the
/// automatic clean-up's defaults, come from the core (`partial`, `other_lines`,
/// `Policy::with_defaults`).
#[test]
fn the_window_decides_no_outcome_and_types_no_policy_default() {
    let p = smolsweep::Policy::default();
    let defaults = vec![p.min_age.clone(), p.ask_above.clone()];
    let js = r##"
const other = out.steps.filter((s) => s.status !== "removed");
const age = $("#a-age").value.trim() || "7d";
box.className = `result${out.partial ? " partial" : ""}`;
el("li", { dataset: { status: s.status } }, out.lines[i]);
"##;
    let got: Vec<usize> = window_decisions(js, &defaults)
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(got, [2, 3]);
    let mut found = Vec::new();
    for (name, text) in ui_files() {
        if name == "app.js" {
            for (n, l) in window_decisions(&text, &defaults) {
                found.push(format!("ui/{name}:{n}: {l}"));
            }
        }
    }
    assert!(
        found.is_empty(),
        "decisions in the window (they belong in the core):\n{}",
        found.join("\n")
    );
}

// ---- no line composed by the window, no table of the core's words ---------------------------

/// The literals of a window script that compose a line a person reads out of the data's pieces
/// (`` `${r.index + 1}. ${r.summary}` ``, `` `${status}: ${path} — ${message}` ``): two holes or
/// more in a text read, where the core sends the finished line. And the tables that name what
/// the core names (`{ done: w("outcome_done"), … }`, `{ "--remove-credentials": … }`).
fn window_compositions(code: &str) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = literals(code)
        .into_iter()
        .filter(|l| l.place == Place::Read && l.text.matches('\u{1}').count() >= 2)
        .map(|l| (l.line, l.text.replace('\u{1}', "${…}")))
        .collect();
    for (n, line) in code.lines().enumerate() {
        let t = line.replace(' ', "");
        if [
            "{done:w(",
            "skipped:w(",
            "\"--",
            "outcome===\"",
            "outcome!==\"",
        ]
        .iter()
        .any(|p| t.contains(p))
        {
            out.push((n + 1, line.trim().to_string()));
        }
    }
    out.sort();
    out
}

/// The window composes no line and keeps no table of the core's words (issue 41): an
/// uninstall step's `N. summary`, an outcome's word, a flag's choice, `status: path — message`
/// are the core's (`view::uninstall`, `view::runs`), sent finished.
#[test]
fn the_window_composes_no_line_and_keeps_no_table_of_the_cores_words() {
    let js = r##"
el("span", { text: `${r.index + 1}. ${r.summary}` });
const outcomeWord = (o) => ({ done: w("outcome_done"), skipped: w("outcome_skipped") })[o];
const how = (h) => ({ "--remove-credentials": w("how_credentials") })[h] || h;
box.replaceChildren(el("p", { text: `${plan.ok}: ${plan.target}…` }));
el("p", { text: r.outcome === "done" ? r.detail : r.why });
tile.style.left = `${(t.x / TM_W) * 100}%`;
const pts = s.rows.map((r) => `${trX(r.x)},${trY(r.y1)}`);
el("span", { text: steps[i].line }), el("span", { class: `wz-o-${r.result.outcome}` });
el("button", { type: "button", "aria-label": `${text} ${label}` }, text);
el("div", { class: "seg", title: `${e.label}: ${e.size}, ${e.verdict_word}` });
"##;
    let got: Vec<usize> = window_compositions(js)
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(got, [2, 3, 4, 5, 6, 10, 11]);
    // None is left: the legend's tooltip and entry, a group's count and size, the selection's
    // line, the copy, machine and compaction buttons' names and the line while a machine action
    // runs are the core's too (`LegendEntry`, `Group`, `SelectionView`, `WhyPanel`,
    // `MachineRow`, `VmPlan`).
    let mut found = Vec::new();
    for (name, text) in ui_files() {
        if name.ends_with(".js") {
            for (n, l) in window_compositions(&text) {
                found.push(format!("ui/{name}:{n}: {l}"));
            }
        }
    }
    assert!(
        found.is_empty(),
        "lines composed or words tabled in the window (the core sends them):\n{}",
        found.join("\n")
    );
}

/// The shell types none of the core's refusals again (issue 41: "no scan has finished yet"
/// stood twice beside `view::runs::NO_SCAN_YET`): it says them by their names.
#[test]
fn the_shell_types_no_refusal_of_the_core_again() {
    use smolsweep::view::{runs, uninstall};
    let core = [
        runs::NO_SCAN_YET,
        runs::NOTHING_TO_RECLAIM,
        runs::PLAN_CHANGED,
        runs::VM_PLAN_CHANGED,
        uninstall::NOT_THE_PLAN_SHOWN,
        uninstall::NO_PLAN_YET,
        uninstall::ALREADY_RAN,
        uninstall::NOTHING_TICKED,
    ];
    let typed = |code: &str| -> Vec<(usize, String)> {
        rust_literals(code, false)
            .into_iter()
            .filter(|(_, l)| core.iter().any(|c| l.contains(c)))
            .collect()
    };
    assert_eq!(
        typed("fn f() { let e = \"no scan has finished yet\"; let k = NO_SCAN_YET; }"),
        [(1, "no scan has finished yet".to_string())]
    );
    let mut found = Vec::new();
    for (p, code) in shell_sources() {
        for (n, l) in typed(&code) {
            found.push(format!("{}:{n}: {l:?}", p.display()));
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// The wizard's run is checked by the plan's digest, as every other run (issue 41): the shell
/// takes no plan back from the window to compare as JSON.
#[test]
fn the_uninstall_run_takes_a_digest_not_a_plan() {
    let taken_back = |code: &str| -> Vec<(usize, String)> {
        without_tests(code)
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim_start().starts_with("//") && l.contains("serde_json::Value"))
            .map(|(n, l)| (n + 1, l.trim().to_string()))
            .collect()
    };
    assert_eq!(
        taken_back("fn run(plan: serde_json::Value) {}\n// serde_json::Value in words\n").len(),
        1
    );
    let (_, code) = shell_sources()
        .into_iter()
        .find(|(p, _)| p.ends_with("uninstall.rs"))
        .unwrap();
    let found = taken_back(&code);
    assert!(found.is_empty(), "{found:?}");
}
