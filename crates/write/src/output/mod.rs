//! Writing results: the compacted transcript (kept records copied through byte for
//! byte), the out-dir layout, and atomic writes (temporary file, then rename).

pub mod chat;

use crate::error::Error;
use crate::formats::OutputFormat;
use crate::inputs::Input;
use crate::policy::{steps, Plan, Step, Walk};
use crate::signals;
use crate::transcript::Transcript;
use std::collections::HashSet;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Writes the compacted transcript: kept records as read (runs of them in one write),
/// injected records added where the walk puts them, each injected line ending with `\n`.
pub fn write_transcript(w: &mut dyn Write, t: &Transcript<'_>, plan: &Plan) -> io::Result<()> {
    let src = t.src;
    let mut behind = crate::mapped::Behind::new(src);
    // `pending..cursor` are kept bytes not yet written (from 0: the BOM included);
    // a record that starts after `cursor` follows removed ones, which are skipped.
    let (mut pending, mut cursor) = (0, t.records.first().map_or(src.len(), |r| r.span.start));
    // The last kept record, when it is the last thing written: an injected line after
    // it needs a line end first if it has none (looked at only then: reading a byte of
    // every record would bring every page of a mapped input back).
    let mut last_kept: Option<usize> = None;
    let walk = Walk { records: true, ..Walk::default() };
    for step in steps(t, plan, walk) {
        let kept = match step {
            Step::Kept(i) => Some(t.items[i].record),
            Step::Record(ri) => Some(ri),
            Step::Injected(_) | Step::Event(_) => None,
        };
        if let Some(ri) = kept {
            let r = &t.records[ri];
            if r.span.start != cursor {
                copy(w, src, pending..cursor, &mut behind)?;
                pending = r.span.start;
            }
            cursor = r.span.end;
            last_kept = Some(ri);
            continue;
        }
        copy(w, src, pending..cursor, &mut behind)?;
        pending = cursor;
        let line = match step {
            Step::Injected(m) => m.to_canonical(),
            Step::Event(e) => e.to_canonical(),
            Step::Kept(_) | Step::Record(_) => unreachable!("handled above"),
        };
        if last_kept.take().is_some_and(|ri| !t.records[ri].terminated(src)) {
            w.write_all(b"\n")?;
        }
        w.write_all(line.as_bytes())?;
        w.write_all(b"\n")?;
    }
    // The reader's records cover the file after the BOM: nothing follows the last one.
    copy(w, src, pending..cursor, &mut behind)
}

/// Copies input bytes through, a few MB at a time, giving back a mapped input's pages
/// behind the copy.
fn copy(
    w: &mut dyn Write,
    src: &[u8],
    range: std::ops::Range<usize>,
    behind: &mut crate::mapped::Behind<'_>,
) -> io::Result<()> {
    let mut at = range.start;
    while at < range.end {
        let end = range.end.min(at + (4 << 20));
        w.write_all(&src[at..end])?;
        behind.reached(end);
        at = end;
    }
    Ok(())
}

/// Makes what was written the output (`f`: the renames), unless the input it was made
/// from is a mapped file that shrank meanwhile ([`crate::mapped::check_current`]).
fn commit<T>(f: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
    crate::mapped::check_current()?;
    signals::committing(f)
}

/// Writes a file atomically: a temporary file in the same folder, then a rename. The
/// file gets the permissions the umask gives (as a file made by `>` would).
pub fn write_atomic(path: &Path, write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> io::Result<()> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !dir.is_dir() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = temp_file_in(dir, write)?;
    commit(|| tmp.persist(path).map(drop).map_err(|e| e.error))
}

/// Writes a file the user named (`--out`, `--svg`) the way `>` writes it: a new or
/// regular file is replaced atomically (a temporary file, then a rename), after checking
/// that `>` could write it (a read-only file is refused, never renamed over); a link to
/// a regular file replaces its target; a FIFO, a device or a pipe (`/dev/null`,
/// `>(wc -c)`) is written through as a stream; a folder or a link to nothing is
/// refused. Nothing that is not a regular file is ever renamed over.
pub fn write_output(path: &Path, write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> io::Result<()> {
    let meta = match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return write_atomic(path, write),
        Err(e) => return Err(e),
        Ok(m) => m,
    };
    let target = if meta.file_type().is_symlink() {
        match std::fs::metadata(path) {
            Ok(t) => t,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(io::Error::new(io::ErrorKind::NotFound, "a link to nothing: refusing to create its target"))
            }
            Err(e) => return Err(e),
        }
    } else {
        meta
    };
    if target.is_dir() {
        return Err(io::Error::new(io::ErrorKind::IsADirectory, "a folder"));
    }
    if target.is_file() {
        // What `>` would be refused (a read-only file) is refused here too; a file it
        // would write keeps its mode, as `>` keeps it.
        drop(std::fs::OpenOptions::new().write(true).open(path)?);
        let real = std::fs::canonicalize(path)?;
        let dir = real.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let tmp = temp_file_in(dir, write)?;
        tmp.value.as_file().set_permissions(target.permissions())?;
        return commit(|| tmp.persist(&real).map(drop).map_err(|e| e.error));
    }
    let file = std::fs::OpenOptions::new().write(true).open(path)?;
    let mut buf = io::BufWriter::with_capacity(1 << 20, file);
    write(&mut buf)?;
    buf.flush()
}

/// Whether two output paths name one file, whether or not it exists yet: their
/// folders resolved (links followed), their names compared; a link is followed too.
pub fn same_file(a: &Path, b: &Path) -> bool {
    let resolved = |p: &Path| -> Option<PathBuf> {
        if let Ok(real) = std::fs::canonicalize(p) {
            return Some(real);
        }
        let dir = p.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        Some(std::fs::canonicalize(dir).ok()?.join(p.file_name()?))
    };
    matches!((resolved(a), resolved(b)), (Some(x), Some(y)) if x == y)
}

/// `-` as a path to write: standard output, as it is standard input among the inputs.
pub fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Checks a path named to write a file (`--out`, `--rejects`, `--svg`) before any input is
/// read: a folder, or a link to nothing, is a usage error then, not a failure after the
/// whole input was processed. (What only writing can find, a read-only folder or a full
/// disk, is still found by writing.)
pub fn check_file_path(path: &Path, flag: &str) -> Result<(), Error> {
    let shown = || crate::ui::escape(&path.display().to_string());
    let made = match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => {
            return Err(Error::Usage(format!("{flag} {} is a folder: {flag} names a file", shown())));
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound && std::fs::symlink_metadata(path).is_ok() => {
            return Err(Error::Usage(format!(
                "{flag} {} is a link to nothing: refusing to create its target",
                shown()
            )));
        }
        // A regular file is replaced by a temporary file renamed over it, in its folder.
        Ok(m) if m.is_file() => std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .and_then(|_| std::fs::canonicalize(path))
            .and_then(|real| probe_folder(real.parent().unwrap_or(Path::new("/")))),
        // A FIFO or a device is written through when the run ends, as `>` writes it.
        Ok(_) => Ok(()),
        Err(_) => probe_folder(path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."))),
    };
    made.map_err(|e| cannot_make(flag, path, &e))
}

/// [`check_file_path`] for a folder to write (`--out-dir`): an existing file is a usage
/// error, and so is a folder nothing can be written in.
pub fn check_folder_path(path: &Path, flag: &str) -> Result<(), Error> {
    match std::fs::metadata(path) {
        Ok(m) if !m.is_dir() => Err(Error::Usage(format!(
            "{flag} {} exists and is not a folder: {flag} names a folder to write into",
            crate::ui::escape(&path.display().to_string())
        ))),
        _ => probe_folder(path).map_err(|e| cannot_make(flag, path, &e)),
    }
}

/// An output that cannot be made, found before any input is read: nothing was done
/// (exit 2), and no other output is committed.
fn cannot_make(flag: &str, path: &Path, e: &io::Error) -> Error {
    // The OS's words, without the name of the probe's random file.
    let reason = e.raw_os_error().map_or_else(|| e.kind().to_string(), |c| io::Error::from_raw_os_error(c).to_string());
    Error::Usage(format!(
        "{flag} {}: cannot be written ({reason}): nothing was done",
        crate::ui::escape(&path.display().to_string())
    ))
}

/// Whether a temporary file can be made in `dir` (or, when it does not exist yet, in the
/// nearest folder above it, where its missing folders would be made): the file every
/// output is first written to. The probe leaves nothing behind.
fn probe_folder(dir: &Path) -> io::Result<()> {
    let mut at = dir;
    while !at.as_os_str().is_empty() && !at.exists() {
        at = at.parent().unwrap_or(Path::new(""));
    }
    let at = if at.as_os_str().is_empty() { Path::new(".") } else { at };
    tempfile::Builder::new().prefix(".rivumi-probe-").tempfile_in(at).map(drop)
}

/// Refuses an output path (named by `flag`) that is one of the inputs (`real`: the
/// inputs' resolved paths), as `>` onto its own input would lose it.
pub fn refuse_input<S: std::hash::BuildHasher>(
    path: &Path,
    real: &HashSet<PathBuf, S>,
    flag: &str,
) -> Result<(), Error> {
    let Ok(resolved) = std::fs::canonicalize(path) else { return Ok(()) };
    if real.contains(&resolved) {
        return Err(Error::Usage(format!("{flag} {} is an input", crate::ui::escape(&path.display().to_string()))));
    }
    Ok(())
}

/// A written temporary file in `dir`, removed on a hard stop until it is persisted.
fn temp_file_in(
    dir: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<Tracked<tempfile::NamedTempFile>> {
    let mut tmp = tempfile::Builder::new()
        .prefix(".rivumi-")
        .suffix(".tmp")
        .permissions(mode(0o666))
        .tempfile_in(dir)
        .map_err(|e| beside(dir, "file", e))?;
    let tracked = signals::track(tmp.path());
    {
        let mut buf = io::BufWriter::with_capacity(1 << 20, tmp.as_file_mut());
        write(&mut buf)?;
        buf.flush()?;
    }
    Ok(Tracked { value: tmp, _guard: tracked })
}

/// The error of a temporary file or folder that could not be made in `dir`: said as
/// such, without the random name it would have had.
fn beside(dir: &Path, what: &str, e: io::Error) -> io::Error {
    // tempfile says `<cause> at path "<dir>/.rivumi-XXXXXX.tmp"`: the cause is kept.
    let said = e.to_string();
    let cause = said.split(" at path ").next().unwrap_or(&said);
    let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    io::Error::new(e.kind(), format!("cannot make a temporary {what} in {} to write it: {cause}", dir.display()))
}

/// A temporary file or folder and its registration for removal on a hard stop.
struct Tracked<T> {
    value: T,
    _guard: signals::Tracked,
}

impl Tracked<tempfile::NamedTempFile> {
    fn persist(self, to: &Path) -> Result<std::fs::File, tempfile::PersistError> {
        self.value.persist(to)
    }
}

fn mode(bits: u32) -> std::fs::Permissions {
    std::os::unix::fs::PermissionsExt::from_mode(bits)
}

/// `--out-dir`, resolved, with the real paths of the inputs no output may replace.
/// Every output folder is checked against both when it is written, so neither a name
/// nor a symbolic link (in the inputs or inside the out-dir) can send a write elsewhere.
pub struct OutDir {
    given: PathBuf,
    real: PathBuf,
    inputs: HashSet<PathBuf>,
    /// The parents of output folders already created, with their real paths.
    parents: std::sync::Mutex<std::collections::HashMap<PathBuf, PathBuf>>,
}

impl OutDir {
    /// Creates the folder if needed. `inputs` are the real paths of the inputs.
    pub fn create(dir: &Path, inputs: HashSet<PathBuf>) -> Result<OutDir, Error> {
        if std::fs::metadata(dir).is_ok_and(|m| !m.is_dir()) {
            let e = io::Error::new(io::ErrorKind::AlreadyExists, "it exists and is not a folder");
            return Err(Error::write(dir, e));
        }
        std::fs::create_dir_all(dir).map_err(|e| Error::write(dir, e))?;
        let real = std::fs::canonicalize(dir).map_err(|e| Error::write(dir, e))?;
        Ok(OutDir { given: dir.to_path_buf(), real, inputs, parents: std::sync::Mutex::default() })
    }

    /// The real path of `parent` (a folder under the out-dir), created if needed. Each
    /// is created and resolved once a run, not once an input: the folders of a batch
    /// share a few parents, and walking the whole path again for each input was a fifth
    /// of a batch of small files' system time. Before a resolved parent is used again,
    /// each of its folders from the out-dir down is checked to be a folder still, not a
    /// link (one `lstat` each): one that another process swapped meanwhile is resolved
    /// again, and the caller's check that it lies inside the out-dir sees where it leads.
    fn real_parent(&self, parent: &Path) -> Result<PathBuf, Error> {
        let known = self.parents.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(parent).cloned();
        if let Some(real) = known.filter(|real| self.still_folders(real)) {
            return Ok(real);
        }
        std::fs::create_dir_all(parent).map_err(|e| Error::write(parent, e))?;
        let real = std::fs::canonicalize(parent).map_err(|e| Error::write(parent, e))?;
        self.parents
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(parent.to_path_buf(), real.clone());
        Ok(real)
    }

    /// Whether `real` and each folder above it up to the out-dir's real path are
    /// folders (not links, not gone).
    fn still_folders(&self, real: &Path) -> bool {
        real.starts_with(&self.real)
            && real
                .ancestors()
                .take_while(|a| a.starts_with(&self.real))
                .all(|a| std::fs::symlink_metadata(a).is_ok_and(|m| m.is_dir()))
    }

    /// Writes the folder `name` (a relative path of plain names) with `files`, each
    /// written by `write`. A new folder appears whole (written aside, then renamed);
    /// in an existing one the files are written aside and renamed together, and output
    /// files this run does not produce are removed, so the folder matches this run.
    pub fn write_folder(
        &self,
        name: &Path,
        files: &[&str],
        mut write: impl FnMut(&str, &mut dyn Write) -> io::Result<()>,
    ) -> Result<(), Error> {
        let target = self.given.join(name);
        let fail = |what: String| Error::Failed(format!("{}: {what}", target.display()));
        let parent = target.parent().unwrap_or(&self.given);
        let real_parent = self.real_parent(parent)?;
        if !real_parent.starts_with(&self.real) {
            return Err(fail("not written: a symbolic link leads out of --out-dir".into()));
        }
        let real = real_parent.join(name.file_name().unwrap_or_default());
        if let Some(f) = files.iter().find(|f| self.inputs.contains(&real.join(f))) {
            return Err(fail(format!("not written: {f} would replace an input")));
        }
        let written = match std::fs::symlink_metadata(&real) {
            Ok(m) if m.file_type().is_symlink() => return Err(fail("not written: it is a symbolic link".into())),
            Ok(m) if !m.is_dir() => return Err(fail("not written: it exists and is not a folder".into())),
            Ok(_) => replace_files(&real, files, &mut write),
            Err(e) if e.kind() == io::ErrorKind::NotFound => new_folder(&real_parent, &real, files, &mut write),
            Err(e) => Err(e),
        };
        written.map_err(|e| Error::write(&target, e))
    }
}

fn new_folder(
    parent: &Path,
    real: &Path,
    files: &[&str],
    write: &mut dyn FnMut(&str, &mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let tmp = tempfile::Builder::new()
        .prefix(".rivumi-")
        .suffix(".tmp")
        .permissions(mode(0o777))
        .tempdir_in(parent)
        .map_err(|e| beside(parent, "folder", e))?;
    let _guard = signals::track(tmp.path());
    for f in files {
        let mut file = io::BufWriter::with_capacity(1 << 20, std::fs::File::create(tmp.path().join(f))?);
        write(f, &mut file)?;
        file.flush()?;
    }
    commit(|| match std::fs::rename(tmp.path(), real) {
        Ok(()) => {
            let _ = tmp.keep();
            Ok(())
        }
        // The folder appeared meanwhile: move the files just written into it.
        Err(_) if real.is_dir() => {
            for f in files {
                std::fs::rename(tmp.path().join(f), real.join(f))?;
            }
            remove_stale(real, files)
        }
        Err(e) => Err(e),
    })
}

fn replace_files(
    real: &Path,
    files: &[&str],
    write: &mut dyn FnMut(&str, &mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let mut temps = Vec::new();
    for f in files {
        temps.push((temp_file_in(real, |w| write(f, w))?, *f));
    }
    commit(|| {
        for (tmp, f) in temps {
            tmp.persist(&real.join(f)).map_err(|e| e.error)?;
        }
        remove_stale(real, files)
    })
}

/// Removes the output files an earlier run made that this run does not.
fn remove_stale(real: &Path, files: &[&str]) -> io::Result<()> {
    for stale in Output::ALL.iter().map(|o| o.file_name()).filter(|n| !files.contains(n)) {
        let p = real.join(stale);
        if std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_file()) {
            std::fs::remove_file(&p)?;
        }
    }
    Ok(())
}

/// The outputs of one run, by the file name `--out-dir` gives each; the values of
/// `--emit`, in the order its help lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Output {
    Transcript,
    Summary,
    Reanchor,
    Decision,
    Journal,
}

impl Output {
    pub const ALL: [Output; 5] =
        [Output::Transcript, Output::Decision, Output::Journal, Output::Summary, Output::Reanchor];

    pub fn file_name(self) -> &'static str {
        match self {
            Output::Transcript => "transcript.jsonl",
            Output::Decision => "decision.json",
            Output::Journal => "journal.jsonl",
            Output::Summary => "summary.md",
            Output::Reanchor => "reanchor.md",
        }
    }

    /// Writes this output of a processed transcript.
    pub fn write(self, w: &mut dyn Write, done: &crate::engine::Processed<'_>) -> io::Result<()> {
        match self {
            Output::Transcript => match done.output_format {
                OutputFormat::Canonical => write_transcript(w, &done.transcript, &done.plan),
                OutputFormat::Openai => {
                    w.write_all(chat::chat_line(done).as_bytes())?;
                    w.write_all(b"\n")
                }
                OutputFormat::ClaudeCode | OutputFormat::Codex | OutputFormat::GeminiCli => match &done.original {
                    Some(o) => crate::resume::write(w, done, o.format, &o.bytes),
                    None => Err(io::Error::other("the input as read was not kept")),
                },
            },
            Output::Decision => w.write_all(done.decision_json().as_bytes()),
            Output::Journal => w.write_all(done.plan.journal.to_jsonl().as_bytes()),
            Output::Summary => w.write_all(done.plan.summary_text.as_deref().unwrap_or("").as_bytes()),
            Output::Reanchor => w.write_all(done.plan.reanchor_text.as_deref().unwrap_or("").as_bytes()),
        }
    }
}

/// The outputs a run produces: the summary and re-anchor only when one was rendered.
pub fn produced(done: &crate::engine::Processed<'_>) -> Vec<Output> {
    Output::ALL
        .into_iter()
        .filter(|o| match o {
            Output::Summary => done.plan.summary_text.is_some(),
            Output::Reanchor => done.plan.reanchor_text.is_some(),
            _ => true,
        })
        .collect()
}

/// The out-dir layout for one input.
pub fn write_out_dir(out: &OutDir, name: &Path, done: &crate::engine::Processed<'_>) -> Result<(), Error> {
    let produced = produced(done);
    let files: Vec<&str> = produced.iter().map(|o| o.file_name()).collect();
    out.write_folder(name, &files, |f, w| {
        let o = produced.iter().find(|o| o.file_name() == f).expect("a produced output");
        o.write(w, done)
    })
}

/// Inputs whose `--out-dir` folders would be one are refused before anything is written.
pub fn check_out_names(inputs: &[Input]) -> Result<(), Error> {
    let mut seen = std::collections::BTreeMap::new();
    for i in inputs {
        if let Some(other) = seen.insert(i.out_name.clone(), i.path.clone()) {
            return Err(Error::Usage(format!(
                "{} and {} would share the output folder {}",
                other.display(),
                i.path.display(),
                i.out_name.display()
            )));
        }
    }
    Ok(())
}

/// An output may never land on an input: refuse before anything is written. (The
/// writer checks again, resolved, as it writes each folder.)
pub fn refuse_out_dir_over_inputs<S: std::hash::BuildHasher>(
    dir: &Path,
    inputs: &[Input],
    real_inputs: &HashSet<PathBuf, S>,
) -> Result<(), Error> {
    let Ok(dir) = std::fs::canonicalize(dir) else {
        return Ok(()); // a new folder holds no input
    };
    if real_inputs.contains(&dir) {
        return Err(Error::Usage(format!("--out-dir {} is an input", dir.display())));
    }
    for i in inputs {
        for o in Output::ALL {
            let target = dir.join(&i.out_name).join(o.file_name());
            if real_inputs.contains(&target) {
                return Err(Error::Usage(format!("{} would overwrite the input {}", o.file_name(), target.display())));
            }
        }
    }
    Ok(())
}
