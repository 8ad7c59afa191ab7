//! The one terminal question before a run: `QUESTION? [y/N] ` on stderr, answered on stdin.
//!
//! Every command that carries out a plan without `--yes` asks through [`confirm`]: the same
//! texts, the same accepted answers and the same exit code (1) when it is not confirmed.

use std::io::{BufRead, IsTerminal, Write};

/// Ask `question` (without the `? [y/N] ` that follows it) on the terminal. `Err` is the exit
/// code, 1: stdin is not a terminal (`Not confirmed: stdin is not a terminal. Re-run with --yes
/// to do this.`), or the answer was not yes (`Nothing done: not confirmed (exit 1).`, as git
/// says why an aborted commit exits non-zero).
pub fn confirm(question: &str) -> Result<(), i32> {
    if !std::io::stdin().is_terminal() {
        eprintln!("Not confirmed: stdin is not a terminal. Re-run with --yes to do this.");
        return Err(1);
    }
    eprint!("{question}? [y/N] ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    let _ = std::io::stdin().lock().read_line(&mut answer);
    if !is_yes(&answer) {
        eprintln!("Nothing done: not confirmed (exit 1).");
        return Err(1);
    }
    Ok(())
}

/// `y` or `yes` (lower case, capitalised or upper case), spaces and the newline aside.
fn is_yes(answer: &str) -> bool {
    matches!(answer.trim(), "y" | "Y" | "yes" | "Yes" | "YES")
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_y_or_yes_confirms() {
        for a in ["y\n", "Y\n", "yes\n", " Yes \n", "YES"] {
            assert!(super::is_yes(a), "{a:?}");
        }
        for a in ["", "\n", "n\n", "no\n", "yep\n", "yES\n", "y es\n"] {
            assert!(!super::is_yes(a), "{a:?}");
        }
    }
}
