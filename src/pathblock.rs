//! The `# smolvm` PATH block that smol-machines' `install.sh` appends to shell startup files.
//!
//! `install.sh` (`modify_path`) appends exactly three lines: an empty line, `# smolvm`, and
//! `export PATH="<bin_dir>:$PATH"` (fish: `set -gx PATH <bin_dir> $PATH`), with `<bin_dir>`
//! already expanded (normally `~/.local/bin`). Removing the block restores the file as it was
//! before the install; every other byte stays as it is.
//!
//! Everything here only reads: the blocks found in HOME's startup files (for the uninstall to
//! plan), and a text without them. Rewriting a startup file is the executor's
//! (`exec::rcfile`).

use std::path::{Path, PathBuf};

/// Shell startup files `install.sh` may have edited, relative to HOME.
pub(crate) const RC_FILES: [&str; 5] = [
    ".zshrc",
    ".bash_profile",
    ".bashrc",
    ".profile",
    ".config/fish/config.fish",
];

/// One PATH block found in a file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PathBlock {
    pub file: PathBuf,
    /// 1-based line number of the `# smolvm` line.
    pub line: usize,
    /// The lines that removal takes out (the empty line before, when present, included).
    pub lines: Vec<String>,
}

fn is_export_line(line: &str, bin_dirs: &[String]) -> bool {
    let l = line.trim_end_matches('\r');
    bin_dirs.iter().any(|b| {
        l == format!("export PATH=\"{b}:$PATH\"") || l == format!("set -gx PATH {b} $PATH")
    })
}

/// Byte ranges of each block in `text` (start, end) and the 1-based line of `# smolvm`.
fn block_ranges(text: &str, bin_dirs: &[String]) -> Vec<(usize, usize, usize)> {
    let mut lines: Vec<(usize, &str)> = Vec::new(); // (byte offset, line incl. newline)
    let mut off = 0;
    for l in text.split_inclusive('\n') {
        lines.push((off, l));
        off += l.len();
    }
    let mut out = Vec::new();
    let mut i = 0;
    while i + 1 < lines.len() + 1 && i < lines.len() {
        let cur = lines[i].1.trim_end_matches('\n').trim_end_matches('\r');
        if cur == "# smolvm" && i + 1 < lines.len() {
            let next = lines[i + 1].1.trim_end_matches('\n');
            if is_export_line(next, bin_dirs) {
                let mut start = lines[i].0;
                if i > 0 && lines[i - 1].1.trim_end_matches(['\n', '\r']).is_empty() {
                    start = lines[i - 1].0;
                }
                let end = lines[i + 1].0 + lines[i + 1].1.len();
                out.push((start, end, i + 1));
                i += 2;
                continue;
            }
        }
        i += 1;
    }
    out
}

/// The bin directories `install.sh` writes for this HOME (`$HOME/.local/bin`).
pub(crate) fn default_bin_dirs(home: &Path) -> Vec<String> {
    vec![home.join(".local/bin").to_string_lossy().into_owned()]
}

/// Find the blocks in one file's text.
pub(crate) fn find_in_text(file: &Path, text: &str, bin_dirs: &[String]) -> Vec<PathBlock> {
    block_ranges(text, bin_dirs)
        .into_iter()
        .map(|(s, e, line)| PathBlock {
            file: file.to_path_buf(),
            line,
            lines: text[s..e].lines().map(str::to_string).collect(),
        })
        .collect()
}

/// The text with every block removed; `None` when there is none.
pub(crate) fn remove_from_text(text: &str, bin_dirs: &[String]) -> Option<String> {
    let ranges = block_ranges(text, bin_dirs);
    if ranges.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (s, e, _) in ranges {
        out.push_str(&text[at..s]);
        at = e;
    }
    out.push_str(&text[at..]);
    Some(out)
}

/// Scan the startup files of `home` (read-only).
pub(crate) fn find(home: &Path) -> Vec<PathBlock> {
    let bins = default_bin_dirs(home);
    RC_FILES
        .iter()
        .map(|f| home.join(f))
        .filter_map(|p| {
            let b = crate::fsread::read_small(&p, 4 << 20).ok()?;
            let text = String::from_utf8(b).ok()?;
            Some(find_in_text(&p, &text, &bins))
        })
        .flatten()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: &str = "/home/u/.local/bin";

    #[test]
    fn removal_restores_the_file_exactly() {
        let original = "# my aliases\nalias ll='ls -l'\nexport EDITOR=vim\n";
        let installed = format!("{original}\n# smolvm\nexport PATH=\"{B}:$PATH\"\n");
        let bins = vec![B.to_string()];
        assert_eq!(remove_from_text(&installed, &bins).unwrap(), original);
        let found = find_in_text(Path::new("/x"), &installed, &bins);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].line, 5);
        assert_eq!(
            found[0].lines,
            ["", "# smolvm", &format!("export PATH=\"{B}:$PATH\"")]
        );
    }

    #[test]
    fn fish_block_and_lines_after_it_are_kept() {
        let installed = format!("set -x A 1\n\n# smolvm\nset -gx PATH {B} $PATH\nset -x B 2\n");
        let out = remove_from_text(&installed, &[B.to_string()]).unwrap();
        assert_eq!(out, "set -x A 1\nset -x B 2\n");
    }

    #[test]
    fn unrelated_or_edited_lines_are_never_touched() {
        let bins = vec![B.to_string()];
        // A comment without the export line, an export for another directory, a user's own
        // PATH line: none is the installer's block.
        for text in [
            "# smolvm\necho hi\n".to_string(),
            "# smolvm\nexport PATH=\"/opt/bin:$PATH\"\n".to_string(),
            format!("export PATH=\"{B}:$PATH\"\n"),
            format!("# smolvm is great\nexport PATH=\"{B}:$PATH\"\n"),
        ] {
            assert_eq!(remove_from_text(&text, &bins), None, "{text:?}");
        }
    }
}
