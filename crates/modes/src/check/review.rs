//! Review: pending files (`NAME.new`) accepted into expected ones, only inside DIR.

use super::report::shown;
use super::run::{exists, read_bounded, Case};
use super::{CaseSettings, CheckOptions, PENDING, PENDING_REMOVAL};
use crate::error::{Error, Exit, Result};
use std::io::Write;
use std::path::{Path, PathBuf};

/// `--accept-file PATH…`: each names an expected file or its pending file (`NAME.new`, or
/// `NAME.removed`); its case is run again, and the pending file accepted only while it is
/// what the case produces (a removal: while the case does not produce the file).
pub(super) fn accept_files(
    paths: &[PathBuf],
    real_dir: &Path,
    opts: &CheckOptions,
    parse_args: &dyn Fn(&[String]) -> Result<CaseSettings>,
    w: &mut dyn Write,
) -> Result<Exit> {
    for p in paths {
        let name = p.to_string_lossy();
        let expected = match name.strip_suffix(PENDING).or_else(|| name.strip_suffix(PENDING_REMOVAL)) {
            Some(e) => PathBuf::from(e),
            None => p.clone(),
        };
        let with = |suffix: &str| {
            let mut s = expected.clone().into_os_string();
            s.push(suffix);
            PathBuf::from(s)
        };
        let pending = with(PENDING);
        if !exists(&pending) && !exists(&with(PENDING_REMOVAL)) {
            return Err(Error::Usage(format!(
                "{}: no pending file to accept ({PENDING} or {PENDING_REMOVAL})",
                crate::ui::escape(&pending.display().to_string())
            )));
        }
        let folder = expected.parent().filter(|f| !f.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let file = expected.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
        let case = Case { dir: folder, real_dir };
        let (kind, actual) = case.run(parse_args, opts.allow_case_commands)?;
        let (accepted, dropped) = case.accept_only(kind, &actual, Some(&file))?;
        for f in accepted {
            let how = if f.status == "removed" { " (removed: the run no longer produces it)" } else { "" };
            let _ = writeln!(w, "{}: accepted{how}", crate::ui::escape(&f.path));
        }
        for d in dropped {
            let _ = writeln!(
                w,
                "{}: dropped: the case produces the expected file",
                crate::ui::escape(&shown(&folder.join(d)))
            );
        }
    }
    Ok(Exit::Ok)
}

/// Renames a pending file over its expected file, both real files inside DIR.
pub(super) fn accept_one(pending: &Path, expected: &Path, real_dir: &Path) -> Result<()> {
    read_bounded(pending, real_dir, crate::source::max_input_bytes())?;
    writable(expected, real_dir)
        .map_err(|why| Error::Failed(format!("{}: not accepted: {why}", expected.display())))?;
    if std::fs::symlink_metadata(pending).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(Error::Failed(format!("{}: not accepted: the pending file is a link", pending.display())));
    }
    std::fs::rename(pending, expected).map_err(|e| Error::write(expected, e))
}

/// A file `check` writes is a real file inside DIR: never through a symbolic link (the
/// case folder, a folder above it, or the file itself).
pub(super) fn writable(path: &Path, real_dir: &Path) -> std::result::Result<(), &'static str> {
    let folder = path.parent().and_then(|p| std::fs::canonicalize(p).ok());
    if !folder.is_some_and(|f| f.starts_with(real_dir)) {
        return Err("the case folder is a symbolic link out of the checked folder");
    }
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err("the file is a symbolic link");
    }
    Ok(())
}
