//! Rewriting a shell startup file without the `# smolvm` PATH block ([`crate::pathblock`] finds
//! it): the original is backed up first, then replaced atomically.

use std::path::{Path, PathBuf};

use crate::pathblock::{default_bin_dirs, remove_from_text};

/// Remove the blocks from one file: the original is first copied to
/// `<file>.smolsweep-backup-<unix time>`, then the new text replaces the file atomically
/// (same directory, same permissions). Returns the backup path, or `None` if there was no block.
pub(crate) fn remove(file: &Path, home: &Path, now_secs: u64) -> std::io::Result<Option<PathBuf>> {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::symlink_metadata(file)?;
    if !meta.file_type().is_file() {
        return Err(std::io::Error::other(
            "not a regular file (a symlinked startup file is left for you to edit)",
        ));
    }
    let text = String::from_utf8({
        use std::io::Read;
        let mut b = Vec::new();
        crate::fsread::open_regular(file)?.read_to_end(&mut b)?;
        b
    })
    .map_err(|_| std::io::Error::other("not UTF-8 text"))?;
    let Some(new) = remove_from_text(&text, &default_bin_dirs(home)) else {
        return Ok(None);
    };
    let name = file
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let backup = file.with_file_name(format!("{name}.smolsweep-backup-{now_secs}"));
    std::fs::copy(file, &backup)?;
    let tmp = file.with_file_name(format!(".{name}.smolsweep-tmp"));
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(new.as_bytes())?;
        f.sync_all()?;
    }
    std::fs::set_permissions(
        &tmp,
        std::fs::Permissions::from_mode(meta.permissions().mode()),
    )?;
    std::fs::rename(&tmp, file)?;
    Ok(Some(backup))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remove_backs_up_and_keeps_mode() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let home = t.path();
        let rc = home.join(".bashrc");
        let original = "export A=1\n";
        let bin = home.join(".local/bin");
        std::fs::write(
            &rc,
            format!(
                "{original}\n# smolvm\nexport PATH=\"{}:$PATH\"\n",
                bin.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&rc, std::fs::Permissions::from_mode(0o640)).unwrap();
        assert_eq!(crate::pathblock::find(home).len(), 1);
        let backup = remove(&rc, home, 42).unwrap().unwrap();
        assert_eq!(std::fs::read_to_string(&rc).unwrap(), original);
        assert!(std::fs::read_to_string(&backup)
            .unwrap()
            .contains("# smolvm"));
        assert_eq!(
            std::fs::metadata(&rc).unwrap().permissions().mode() & 0o777,
            0o640
        );
        assert_eq!(remove(&rc, home, 43).unwrap(), None);
    }
}
