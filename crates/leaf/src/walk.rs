//! The one directory walker (`walkdir` underneath), for the inputs a folder names and
//! for `check`'s case folders: depth first, each folder's entries sorted by name, links
//! followed, and each folder walked once. A folder reached again (a symbolic link loop,
//! or a second link to one folder) is skipped with a warning naming where it was first
//! walked; a walk always ends.

use crate::error::{Error, Result};
use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use walkdir::{DirEntry, WalkDir};

/// What a walk meets, in order.
pub enum Met<'a> {
    /// A folder, before what it holds (the top folder first, at depth 0). The visitor
    /// returns whether to walk into it.
    Folder(&'a DirEntry),
    /// Anything else: a file, a link to one, a FIFO, a socket, a device.
    Other(&'a DirEntry),
    /// A folder below the top that could not be read, or a link that points nowhere.
    Failed { path: &'a Path, error: std::io::Error, broken_link: bool },
}

/// Walks `root`, giving the visitor each entry; a top folder that cannot be read is the
/// walk's error (it was named by the user), as is any error the visitor returns.
pub fn walk(root: &Path, visit: &mut dyn FnMut(Met<'_>) -> Result<bool>) -> Result<()> {
    let mut seen: HashMap<(u64, u64), PathBuf> = HashMap::new();
    let mut it = WalkDir::new(root).follow_links(true).sort_by_file_name().into_iter();
    while let Some(next) = it.next() {
        match next {
            Ok(e) if e.file_type().is_dir() => {
                let meta = e.metadata().map_err(|err| Error::read(e.path(), io_error(err)))?;
                if let Some(first) = seen.get(&(meta.dev(), meta.ino())) {
                    skipped(e.path(), "a second link", first);
                    it.skip_current_dir();
                    continue;
                }
                seen.insert((meta.dev(), meta.ino()), e.path().to_path_buf());
                if !visit(Met::Folder(&e))? {
                    it.skip_current_dir();
                }
            }
            Ok(e) => {
                visit(Met::Other(&e))?;
            }
            Err(err) => {
                let path = err.path().unwrap_or(root).to_path_buf();
                if let Some(first) = err.loop_ancestor() {
                    skipped(&path, "a symbolic link loop", first);
                    continue;
                }
                let broken_link = std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink());
                let error = io_error(err);
                if path == root && !broken_link {
                    return Err(Error::read(&path, error));
                }
                visit(Met::Failed { path: &path, error, broken_link })?;
            }
        }
    }
    Ok(())
}

fn skipped(path: &Path, what: &str, first: &Path) {
    crate::ui::warn(&format!("{}: skipped: {what} to {}, already walked", path.display(), first.display()));
}

fn io_error(err: walkdir::Error) -> std::io::Error {
    let text = err.to_string();
    err.into_io_error().unwrap_or_else(|| std::io::Error::other(text))
}
