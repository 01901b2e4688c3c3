//! Turning INPUT arguments into transcripts to read: files, `-`, directories (every
//! regular file with the format's extension below, sorted) and globs, each with the
//! folder name its outputs get under `--out-dir`.
//!
//! Walks end and never stop a batch: a folder reached twice (a symlink loop, or two
//! links to one folder) is walked once with a warning; FIFOs, sockets and devices found
//! by a walk are skipped with a warning (they are read only when named on the command
//! line); an entry that cannot be read becomes an input that fails with its error, so
//! the rest of the batch still runs and the exit code says something failed.

use crate::error::{Error, Result};
use crate::formats::InputFormat;
use crate::source::Opened;
use crate::ui;
use crate::walk::Met;
use globset::GlobBuilder;
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;

/// One transcript to process.
pub struct Input {
    /// The file, or `-` for stdin.
    pub path: PathBuf,
    /// The folder under `--out-dir`: the path relative to its directory or glob root
    /// (or the file name), without extension; only plain names, never `.` or `..`.
    pub out_name: PathBuf,
    /// Why a walk could not read this entry; reported when it is processed.
    broken: Mutex<Option<std::io::Error>>,
    /// Whether the path was reached through a symbolic link (its real path differs).
    pub linked: bool,
    /// The input already opened to look at its head (read once: pipes cannot rewind),
    /// or why it could not be (stdin cannot be opened again to find out).
    opened: Mutex<Option<Result<Opened>>>,
    /// A folder read as one transcript: an OpenHands conversation (the agent SDK's
    /// `base_state.json` and `events/`, the app server's event folder, or an older
    /// session's `events/`; see [`crate::formats::openhands_v1::events_folder`]).
    pub folder: bool,
}

impl Input {
    /// Its name as people see it: `<stdin>`, or the path with anything that could drive
    /// a terminal escaped.
    pub fn display_name(&self) -> String {
        if self.is_stdin() {
            "<stdin>".into()
        } else {
            crate::ui::escape(&self.path.display().to_string())
        }
    }

    fn new(path: PathBuf, out_name: PathBuf) -> Input {
        Input { path, out_name, broken: Mutex::new(None), linked: false, opened: Mutex::new(None), folder: false }
    }

    /// An entry a walk could not read: it fails with `error` when it is processed.
    fn broken(path: PathBuf, out_name: PathBuf, error: std::io::Error) -> Input {
        Input { broken: Mutex::new(Some(error)), ..Input::new(path, out_name) }
    }

    /// One file named by a library caller (no walk, no glob): `-` is stdin; an
    /// OpenHands conversation folder is read as one transcript.
    pub fn file(path: PathBuf) -> Input {
        if path.is_dir() && crate::formats::openhands_v1::events_folder(&path, true).is_some() {
            return Input::conversation(path, None);
        }
        let out_name = path.file_name().map_or_else(|| PathBuf::from("input"), |n| out_stem(Path::new(n)));
        Input::new(path, out_name)
    }

    /// An OpenHands conversation folder (or its `events/` folder), one transcript; its
    /// outputs are named after the conversation (under `root`, the folder walked, when
    /// it was found by a walk below it).
    fn conversation(path: PathBuf, root: Option<&Path>) -> Input {
        let conv = if path.file_name().is_some_and(|n| n == "events") { path.parent().unwrap_or(&path) } else { &path };
        let out_name = match root.and_then(|r| conv.strip_prefix(r).ok()).filter(|r| !r.as_os_str().is_empty()) {
            Some(rel) => rel.to_path_buf(),
            None => conv
                .canonicalize()
                .ok()
                .and_then(|c| c.file_name().map(PathBuf::from))
                .unwrap_or_else(|| PathBuf::from("conversation")),
        };
        Input { folder: true, ..Input::new(path, out_name) }
    }

    pub fn is_stdin(&self) -> bool {
        self.path == Path::new("-")
    }

    /// Opens the input (once: a head read by [`Input::peek_dataset`] is handed over).
    pub fn open(&self) -> Result<Opened> {
        if let Some(e) = self.broken.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take() {
            return Err(Error::read(&self.path, e));
        }
        if let Some(o) = self.opened.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take() {
            return o;
        }
        if self.is_stdin() {
            Opened::stdin()
        } else if self.folder {
            Opened::memory(crate::formats::openhands_v1::assemble_folder(&self.path)?, &self.path)
        } else {
            Opened::file(&self.path)
        }
    }

    /// Reads the whole input.
    pub fn read(&self) -> Result<crate::source::Source> {
        self.open()?.read_all()
    }

    /// Reads the whole input, or maps it when it is a large regular file: the caller
    /// checks [`crate::source::Source::intact`] before it trusts what it made of it.
    pub fn map_or_read(&self) -> Result<crate::source::Source> {
        self.open()?.map_or_read_all()
    }

    /// The dataset format this input's head shows, if it is a dataset; the opened input,
    /// or the error that opening it gave, is kept for the next [`Input::open`].
    pub fn peek_dataset(&self) -> Option<InputFormat> {
        let opened = self.open();
        let format = opened.as_ref().ok().and_then(|o| crate::formats::dataset_format(&self.path, o.head()));
        *self.opened.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(opened);
        format
    }
}

/// Expands the arguments in order; `exclude` (the out-dir) is never read from.
pub fn expand(args: &[String], format: InputFormat, exclude: Option<&Path>) -> Result<Vec<Input>> {
    let exts = format.extensions();
    let exclude = exclude.and_then(|p| std::fs::canonicalize(p).ok());
    let mut out = Vec::new();
    for arg in args {
        if arg == "-" {
            out.push(Input::new(PathBuf::from("-"), PathBuf::from("stdin")));
            continue;
        }
        let path = PathBuf::from(arg);
        let conversations = matches!(format, InputFormat::Auto | InputFormat::Openhands);
        if path.is_dir() {
            let before = out.len();
            let mut walk = Walk::new(&path, exts, exclude.as_deref(), None);
            walk.sniff_json = format == InputFormat::Auto;
            walk.conversations = conversations;
            walk.run(&mut out)?;
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
                .map_err(|e| Error::Usage(format!("bad glob `{}`: {e}", ui::escape(arg))))?;
            let matcher = glob.compile_matcher();
            let before = out.len();
            if root.is_dir() {
                let filter = |p: &Path| matcher.is_match(p);
                let mut walk = Walk::new(&root, &[], exclude.as_deref(), Some(&filter));
                walk.conversations = conversations;
                walk.run(&mut out)?;
            }
            if out.len() == before {
                return Err(Error::bad_input(&path, "the glob matches no file"));
            }
        } else {
            let name = path.file_name().map_or_else(|| PathBuf::from("input"), |n| out_stem(Path::new(n)));
            let linked = std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink());
            out.push(Input { linked, ..Input::new(path, name) });
        }
    }
    if matches!(format, InputFormat::Auto | InputFormat::Openhands) {
        out = conversations_of_files(out);
    }
    Ok(out)
}

/// Files of an OpenHands conversation (its event files, its state) named as inputs, by
/// the shell's glob (`convs/*/events/*.json`) or one of ours (`'data/**/*.json'`), are
/// read as that conversation, once, where its first file was: an event file alone is no
/// transcript, and its conversation's other events and usage are needed to read it.
fn conversations_of_files(inputs: Vec<Input>) -> Vec<Input> {
    let mut seen: std::collections::HashMap<PathBuf, usize> = std::collections::HashMap::new();
    let mut out: Vec<Input> = Vec::with_capacity(inputs.len());
    let mut grouped: Vec<(usize, usize)> = Vec::new();
    let mut files = crate::formats::openhands_v1::ConversationFiles::default();
    for input in inputs {
        let conv = (!input.folder && !input.is_stdin()).then(|| files.of(&input.path)).flatten();
        let Some(conv) = conv else {
            out.push(input);
            continue;
        };
        let key = std::fs::canonicalize(&conv).unwrap_or_else(|_| conv.clone());
        if let Some(&at) = seen.get(&key) {
            grouped[at].1 += 1;
        } else {
            seen.insert(key, grouped.len());
            grouped.push((out.len(), 1));
            out.push(Input::conversation(conv, None));
        }
    }
    for (at, files) in grouped {
        ui::warn(&format!(
            "{}: {files} file(s) of this OpenHands conversation named: read as that conversation, one transcript (all its events in order, and its state if it has one)",
            out[at].display_name()
        ));
    }
    out
}

/// The output folder name of a file: its name without the last extension. A name that
/// would be empty, `.` or `..` (files named `.jsonl`… `...jsonl`) keeps its whole name
/// behind a `_`, so an output folder is always a plain name inside `--out-dir`.
pub fn out_stem(file: &Path) -> PathBuf {
    let name = file.to_string_lossy();
    // A compressed input's folder is named as the file inside it (`a.jsonl.gz` → `a`).
    let inner = crate::source::Compression::strip_suffix(&name);
    let stem = match inner.rfind('.') {
        Some(0) | None => &name[..],
        Some(at) => &inner[..at],
    };
    if matches!(stem, "" | "." | "..") {
        PathBuf::from(format!("_{name}"))
    } else {
        PathBuf::from(stem)
    }
}

/// Whether a file has one of the extensions, also under a compression suffix
/// (`a.jsonl`, `a.jsonl.gz`, `a.traj.zst`); an extension may have two parts
/// (`traj.json`). A name that is all extension (`.jsonl`) has none.
pub fn has_extension(p: &Path, exts: &[&str]) -> bool {
    let name = p.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
    let inner = crate::source::Compression::strip_suffix(&name);
    exts.iter()
        .any(|x| inner.strip_suffix(x).and_then(|rest| rest.strip_suffix('.')).is_some_and(|stem| !stem.is_empty()))
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

/// One walk for inputs (over [`crate::walk`]): the files with the format's extensions
/// (or the glob's matches) below `root`, with the folder names their outputs get.
struct Walk<'a> {
    root: &'a Path,
    exts: &'a [&'a str],
    exclude: Option<&'a Path>,
    filter: Filter<'a>,
    /// Whether `.json` files are transcripts only when their head says so (`auto`).
    sniff_json: bool,
    /// Whether an OpenHands conversation folder is one input (its files are not
    /// walked): the folder walked itself, or one below it (that a glob matches).
    conversations: bool,
}

impl<'a> Walk<'a> {
    fn new(root: &'a Path, exts: &'a [&'a str], exclude: Option<&'a Path>, filter: Filter<'a>) -> Self {
        Walk { root, exts, exclude, filter, sniff_json: false, conversations: false }
    }

    fn run(&self, out: &mut Vec<Input>) -> Result<()> {
        crate::walk::walk(self.root, &mut |met| {
            match met {
                // Only folders can hold the out-dir; a file is never canonicalized.
                Met::Folder(e) => {
                    let excluded = e.depth() > 0
                        && self
                            .exclude
                            .is_some_and(|x| std::fs::canonicalize(e.path()).is_ok_and(|c| c.starts_with(x)));
                    // A glob takes a conversation folder that it matches (`'convs/*'`);
                    // the folder a walk starts at is one named as an input.
                    let top = e.depth() == 0;
                    let norm: PathBuf = e.path().components().filter(|c| !matches!(c, Component::CurDir)).collect();
                    let wanted = self.filter.is_none_or(|f| f(e.path()) || f(&norm)) && !(top && self.filter.is_some());
                    if !excluded
                        && self.conversations
                        && wanted
                        && crate::formats::openhands_v1::events_folder(e.path(), top).is_some()
                    {
                        out.push(Input::conversation(e.path().to_path_buf(), Some(self.root)));
                        return Ok(false);
                    }
                    return Ok(!excluded);
                }
                Met::Other(e) => self.entry(e.path(), e.path_is_symlink(), Ok(e.file_type()), out),
                Met::Failed { path, error, broken_link: true } => self.entry(path, true, Err(error), out),
                // A folder below that cannot be read: an input that fails with its error.
                Met::Failed { path, error, broken_link: false } => {
                    let rel = path.strip_prefix(self.root).unwrap_or(path).to_path_buf();
                    out.push(Input::broken(path.into(), rel, error));
                }
            }
            Ok(true)
        })
    }

    /// A `.json` file a walk for any format (`auto`) finds is a transcript only when its
    /// head shows one (an OpenHands dump, a Gemini CLI session, a SWE-agent trajectory):
    /// configuration files sit beside transcripts. Other extensions are taken as they are.
    fn transcript_json(&self, p: &Path) -> bool {
        if !self.sniff_json || !has_extension(p, &["json"]) {
            return true;
        }
        let Ok(opened) = Opened::file(p) else { return true }; // its error is reported when it is read
                                                               // An empty list (Gemini CLI's `logs.json` of a session with no prompt typed) is
                                                               // nothing a folder holds a transcript in.
        let empty_list = opened.head().iter().filter(|b| !b.is_ascii_whitespace()).eq(b"[]".iter());
        !empty_list && crate::formats::detect_for(p, opened.head()) != InputFormat::Auto
    }

    /// An entry that is no folder (what a link points to, when it is a link).
    fn entry(&self, p: &Path, linked: bool, target: std::io::Result<std::fs::FileType>, out: &mut Vec<Input>) {
        let ext_ok = self.exts.is_empty() || (has_extension(p, self.exts) && self.transcript_json(p));
        let norm: PathBuf = p.components().filter(|c| !matches!(c, Component::CurDir)).collect();
        if !ext_ok || self.filter.is_some_and(|f| !f(p) && !f(&norm)) {
            return;
        }
        let rel = p.strip_prefix(self.root).unwrap_or(p);
        let name = rel.parent().unwrap_or(Path::new("")).join(out_stem(Path::new(rel.file_name().unwrap_or_default())));
        match target {
            Ok(t) if t.is_file() => out.push(Input { linked, ..Input::new(p.to_path_buf(), name) }),
            Ok(_) => ui::warn(&format!(
                "{}: skipped: not a regular file (name it on the command line to read it)",
                p.display()
            )),
            Err(e) => out.push(Input { linked, ..Input::broken(p.to_path_buf(), name, e) }),
        }
    }
}

/// Dataset mode: `--input-format openai`, or `auto` when the first input starts with a
/// `{"messages": …}` conversation. One look, not one per file: a batch of 10,000
/// transcripts is not opened twice, and a pipe's head is kept for its reader.
/// The dataset format of a run (one transcript per line), or `None` for transcripts:
/// OpenAI chat lines, or OpenHands evaluation outputs (`instance_id` and `history`).
pub fn dataset_format(format: InputFormat, inputs: &[Input]) -> Option<InputFormat> {
    let first = || inputs.first().and_then(Input::peek_dataset);
    match format {
        InputFormat::Openai => Some(InputFormat::Openai),
        InputFormat::Openhands | InputFormat::Auto => first().filter(|f| format == InputFormat::Auto || *f == format),
        _ => None,
    }
}

/// The inputs' dataset format as [`dataset_format`] finds it from the first, checked
/// against the others when the format is detected: a folder that mixes a dataset with
/// sessions is a usage error naming one of each (the first file's format is not taken
/// for all).
pub fn batch_dataset_format(format: InputFormat, inputs: &[Input]) -> Result<Option<InputFormat>> {
    let found = dataset_format(format, inputs);
    // A session first: a dataset after it fails on its own ("openai files are
    // datasets"); a dataset first would make every session after it a dataset.
    if format != InputFormat::Auto || inputs.len() < 2 || found.is_none() {
        return Ok(found);
    }
    let first = &inputs[0];
    for other in &inputs[1..] {
        let theirs = other.peek_dataset();
        if theirs != found {
            let what = |f: Option<InputFormat>| f.map_or("a session".to_string(), |f| format!("a {f} dataset"));
            return Err(Error::Usage(format!(
                "{} is {} but {} is {}: run datasets and sessions apart, or name the format with --input-format",
                crate::ui::escape(&first.path.display().to_string()),
                what(found),
                crate::ui::escape(&other.path.display().to_string()),
                what(theirs)
            )));
        }
    }
    Ok(found)
}

/// The real paths of the inputs (symbolic links resolved), to compare with outputs.
/// Each folder is resolved once (a batch has few folders and many files); only an
/// input that is itself a link is resolved whole.
pub fn real_paths(inputs: &[Input]) -> std::collections::HashSet<PathBuf> {
    let mut folders: std::collections::HashMap<PathBuf, Option<PathBuf>> = std::collections::HashMap::new();
    let mut real = std::collections::HashSet::new();
    for i in inputs.iter().filter(|i| !i.is_stdin()) {
        if i.linked {
            real.extend(std::fs::canonicalize(&i.path));
        }
        let (Some(parent), Some(name)) = (i.path.parent(), i.path.file_name()) else { continue };
        let parent = if parent.as_os_str().is_empty() { Path::new(".") } else { parent };
        let canon = folders.entry(parent.to_path_buf()).or_insert_with(|| std::fs::canonicalize(parent).ok());
        if let Some(c) = canon {
            real.insert(c.join(name));
        }
    }
    real
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_folders_are_plain_names() {
        for (file, want) in [
            ("a.jsonl", "a"),
            ("a.b.jsonl", "a.b"),
            (".jsonl", ".jsonl"),
            ("..jsonl", "_..jsonl"),
            ("...jsonl", "_...jsonl"),
            ("noext", "noext"),
            (".hidden", ".hidden"),
        ] {
            assert_eq!(out_stem(Path::new(file)), PathBuf::from(want), "{file}");
        }
    }

    #[test]
    fn extensions_may_have_two_parts() {
        let swe = ["traj", "traj.json"];
        for (file, want) in [
            ("a.traj", true),
            ("a.traj.json", true),
            ("a.traj.json.gz", true),
            ("preds.json", false),
            ("atraj.json", false),
            (".traj.json", false),
            (".traj", false),
            ("traj.json", false),
        ] {
            assert_eq!(has_extension(Path::new(file), &swe), want, "{file}");
        }
        assert!(has_extension(Path::new("..jsonl"), &["jsonl"]));
        assert!(!has_extension(Path::new(".jsonl"), &["jsonl"]));
    }
}
