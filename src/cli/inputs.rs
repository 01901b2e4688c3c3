//! Turning INPUT arguments into transcripts to read: files, `-`, directories (every
//! file with the format's extension below, sorted) and globs, each with the folder
//! name its outputs get under `--out-dir`.

use crate::error::{Error, Result};
use globset::GlobBuilder;
use std::path::{Component, Path, PathBuf};

/// One transcript to process.
#[derive(Debug, Clone)]
pub struct Input {
    /// The file, or `-` for stdin.
    pub path: PathBuf,
    /// The folder under `--out-dir`: the path relative to its directory or glob root
    /// (or the file name), without extension.
    pub out_name: PathBuf,
}

impl Input {
    pub fn is_stdin(&self) -> bool {
        self.path == Path::new("-")
    }

    /// Reads the whole input.
    pub fn read(&self) -> Result<crate::source::Source> {
        if self.is_stdin() {
            let mut buf = Vec::new();
            std::io::Read::read_to_end(&mut std::io::stdin().lock(), &mut buf)
                .map_err(|e| Error::bad_input(&self.path, format!("cannot read standard input: {e}")))?;
            return Ok(buf.into());
        }
        crate::source::read(&self.path).map_err(|e| Error::bad_input(&self.path, format!("cannot read: {e}")))
    }
}

/// The file extensions a directory or glob is searched for, by input format.
pub fn extensions(format: &str) -> &'static [&'static str] {
    match format {
        "swe-agent" => &["traj"],
        "openhands" => &["json"],
        // `.json` is left out of `auto`: it would pick up config files beside transcripts.
        "auto" => &["jsonl", "traj"],
        _ => &["jsonl"],
    }
}

/// Expands the arguments in order; `exclude` (the out-dir) is never read from.
pub fn expand(args: &[String], format: &str, exclude: Option<&Path>) -> Result<Vec<Input>> {
    let exts = extensions(format);
    let exclude = exclude.and_then(|p| std::fs::canonicalize(p).ok());
    let mut out = Vec::new();
    for arg in args {
        if arg == "-" {
            out.push(Input { path: PathBuf::from("-"), out_name: PathBuf::from("stdin") });
            continue;
        }
        let path = PathBuf::from(arg);
        if path.is_dir() {
            let before = out.len();
            walk(&path, &path, exts, exclude.as_deref(), None, &mut out)?;
            if out.len() == before {
                return Err(Error::bad_input(
                    &path,
                    format!("no transcripts (*.{}) in this directory", exts.join(", *.")),
                ));
            }
        } else if !path.exists() && is_glob(arg) {
            let root = glob_root(arg);
            let glob = GlobBuilder::new(arg)
                .literal_separator(true)
                .build()
                .map_err(|e| Error::Usage(format!("bad glob `{arg}`: {e}")))?;
            let matcher = glob.compile_matcher();
            let before = out.len();
            if root.is_dir() {
                walk(&root, &root, &[], exclude.as_deref(), Some(&|p: &Path| matcher.is_match(p)), &mut out)?;
            }
            if out.len() == before {
                return Err(Error::bad_input(&path, "the glob matches no file"));
            }
        } else {
            let name = path.file_stem().map(PathBuf::from).unwrap_or_else(|| PathBuf::from("input"));
            out.push(Input { path, out_name: name });
        }
    }
    Ok(out)
}

fn is_glob(s: &str) -> bool {
    s.contains(['*', '?', '[', '{'])
}

/// The leading components of a glob that hold no glob characters.
fn glob_root(glob: &str) -> PathBuf {
    let mut root = PathBuf::new();
    for c in Path::new(glob).components() {
        if is_glob(&c.as_os_str().to_string_lossy()) {
            break;
        }
        root.push(c);
    }
    if root.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        root
    }
}

type Filter<'a> = Option<&'a dyn Fn(&Path) -> bool>;

fn walk(
    root: &Path,
    dir: &Path,
    exts: &[&str],
    exclude: Option<&Path>,
    filter: Filter<'_>,
    out: &mut Vec<Input>,
) -> Result<()> {
    // The entry's file type comes with the directory listing: no stat per file.
    let mut entries: Vec<(PathBuf, bool)> = std::fs::read_dir(dir)
        .map_err(|e| Error::bad_input(dir, format!("cannot read directory: {e}")))?
        .filter_map(|e| e.ok())
        .map(|e| {
            let is_dir = e.file_type().map(|t| t.is_dir() || (t.is_symlink() && e.path().is_dir())).unwrap_or(false);
            (e.path(), is_dir)
        })
        .collect();
    entries.sort();
    for (p, is_dir) in entries {
        if is_dir {
            // Only folders can hold the out-dir; a file is never canonicalized.
            if !exclude.is_some_and(|x| std::fs::canonicalize(&p).is_ok_and(|c| c.starts_with(x))) {
                walk(root, &p, exts, exclude, filter, out)?;
            }
            continue;
        }
        let ext_ok = exts.is_empty() || p.extension().is_some_and(|e| exts.iter().any(|x| e == *x));
        let norm: PathBuf = p.components().filter(|c| !matches!(c, Component::CurDir)).collect();
        if !ext_ok || filter.is_some_and(|f| !f(&p) && !f(&norm)) {
            continue;
        }
        let rel = p.strip_prefix(root).unwrap_or(&p).with_extension("");
        out.push(Input { path: p, out_name: rel });
    }
    Ok(())
}

/// Dataset mode: `--input-format openai`, or `auto` when the first input file starts
/// with a `{"messages": …}` conversation. One look, not one per file: a batch of
/// 10,000 transcripts is not opened twice (stdin needs the flag: it is not read twice).
pub fn is_dataset(format: &str, inputs: &[Input]) -> bool {
    match format {
        "openai" => true,
        "auto" => inputs.iter().find(|i| !i.is_stdin()).is_some_and(|i| {
            let mut head = vec![0u8; 64 * 1024];
            let n = std::fs::File::open(&i.path).and_then(|mut f| std::io::Read::read(&mut f, &mut head)).unwrap_or(0);
            crate::formats::detect(&head[..n]) == "openai"
        }),
        _ => false,
    }
}
