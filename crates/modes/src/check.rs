//! `check`: golden-file regression, as pleasant as `cargo insta`. Every case folder
//! under DIR is run again and its outputs compared with the expected files; a
//! difference is shown as a unified diff whose changed JSONL lines have their changed
//! fields marked; `--pending` writes what differs beside it as `NAME.new` for review,
//! `--accept` turns pending files into expected ones, `--bless` accepts everything.
//!
//! A case folder holds one input (`input.jsonl`, `input.traj` or `input.json`, any of
//! them compressed: `.gz`, `.zst`), an optional `config.json`, an optional `args` file
//! (flags of `run`, one per line; a first line `replay` makes a replay case) and the
//! expected outputs. Three kinds of case, by what they pin:
//! - a transcript: what `run --out-dir` writes (`transcript.jsonl` in the format
//!   `--output-format` names, `decision.json`, `journal.jsonl`, `summary.md`,
//!   `reanchor.md`);
//! - a dataset: `output.jsonl`, one output line per input line;
//! - a replay: `replay.jsonl` (the `--json` points) and `replay.svg`.
//!
//! Case folders are untrusted (they come with pull requests): every file read from one
//! is a regular file inside DIR (a link is followed only to a regular file inside it),
//! read with a bound; no hook or summarizer a case names is run unless allowed.

use crate::engine::{self, Settings};
use crate::error::{Error, Exit, Result};
use crate::output::{self, Output};
use similar::{ChangeTag, TextDiff};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The names an input file of a case may have (with a compression suffix or not).
const INPUT_NAMES: &[&str] = &["input.jsonl", "input.traj", "input.json"];
/// The most a case's `args` or `config.json` may hold.
const SMALL_FILE: u64 = 1 << 20;
/// What a pending file is called: the expected file's name and this.
pub const PENDING: &str = ".new";

/// What `check` does with what it finds.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Mode {
    /// Compare, report, exit 1 on a difference (or a pending file left to review).
    #[default]
    Check,
    /// Compare, and write each actual output that differs beside it as `NAME.new`.
    Pending,
    /// Turn the pending files of the selected cases (or these files) into expected ones.
    Accept(Vec<PathBuf>),
    /// Write every expected file from this run (and remove those no output produces).
    Bless,
}

/// How the findings are reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Format {
    /// For people: diffs, and the command that accepts them.
    #[default]
    Text,
    /// One JSON document: cases, files (with the line of the first difference), diffs.
    Json,
    /// GitHub Actions workflow commands: an annotation at each first difference.
    Github,
    /// JUnit XML: one test case per case (GitLab, Jenkins).
    Junit,
}

/// How `check` runs and shows its findings.
pub struct CheckOptions {
    pub mode: Mode,
    pub format: Format,
    pub color: bool,
    /// Only the cases whose name (path below DIR) matches one of these globs; empty: all.
    pub cases: Vec<String>,
    /// Run hooks and summarizers that a case's `args` or `config.json` names. Off by
    /// default: case folders come with pull requests, and a test run must not execute
    /// what a contributor wrote into them.
    pub allow_case_commands: bool,
}

/// What a case's flags come to: the settings, and what the command line alone knows.
pub struct CaseSettings {
    pub settings: Settings,
    /// Whether the case names a profile (a replay case takes its input's agent's).
    pub profile_given: bool,
}

/// What `check` found in one case.
#[derive(Debug, serde::Serialize)]
pub struct CaseReport {
    pub name: String,
    pub path: String,
    /// `transcript`, `dataset` or `replay` (null when the case could not be read).
    pub kind: Option<&'static str>,
    /// `ok`, `differ`, `pending`, `accepted`, `blessed` or `error`.
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Where the error is: a file of the case and its 1-based line (an `args` flag, an
    /// input line), or the case folder and line 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_line: Option<usize>,
    pub files: Vec<FileReport>,
    /// Pending `.new` files dropped as stale: what the case produces no longer matches
    /// them (it produces the expected file again, or something else since).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dropped: Vec<String>,
    /// Files in the case folder that are neither inputs nor output names (ignored).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ignored: Vec<String>,
}

/// One expected file that is not what the run produces (or was written).
#[derive(Debug, serde::Serialize)]
pub struct FileReport {
    pub file: String,
    pub path: String,
    /// `changed`, `missing` (the run produces it, no expected file), `extra` (an
    /// expected file the run no longer produces), `pending` (a `.new` file waits for
    /// review); with `--pending`, `--accept` or `--bless`, what was written.
    pub status: &'static str,
    /// The 1-based line of the expected file where the first difference is.
    pub line: usize,
    /// The unified diff (`a/` expected, `b/` actual), for a changed file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
}

/// The kind of a case, from its `args` and its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr, strum::EnumString, strum::VariantArray)]
#[strum(serialize_all = "lowercase")]
enum Kind {
    Transcript,
    Dataset,
    Replay,
}

impl Kind {
    /// Its name as it is written (derived by the rule serde and clap use; `tests/it/names.rs` holds them equal).
    fn as_str(self) -> &'static str {
        self.into()
    }

    /// The expected files a case of this kind may hold.
    fn outputs(self) -> Vec<&'static str> {
        match self {
            Kind::Transcript => Output::ALL.iter().map(|o| o.file_name()).collect(),
            Kind::Dataset => vec!["output.jsonl"],
            Kind::Replay => vec!["replay.jsonl", "replay.svg"],
        }
    }
}

/// Every expected-file name of every kind: a folder holding one of them is a case.
fn output_names() -> Vec<&'static str> {
    let mut v = Kind::Transcript.outputs();
    v.extend(Kind::Dataset.outputs());
    v.extend(Kind::Replay.outputs());
    v
}

/// Runs the cases under `dir` (all, or those `opts.cases` names); writes findings to
/// `w`; returns the exit code.
pub fn check(
    dir: &Path,
    opts: &CheckOptions,
    parse_args: &dyn Fn(&[String]) -> Result<CaseSettings>,
    w: &mut dyn Write,
) -> Result<Exit> {
    let real_dir = std::fs::canonicalize(dir).map_err(|e| Error::read(dir, e))?;
    let all = find_cases(dir, &real_dir)?;
    if all.is_empty() {
        return Err(Error::bad_input(
            dir,
            "no case folders (a folder holding input.jsonl, input.traj or input.json) below this directory",
        ));
    }
    if let Mode::Accept(files) = &opts.mode {
        if !files.is_empty() {
            return accept_files(files, &real_dir, opts, parse_args, w);
        }
    }
    let cases = select(dir, &all, &opts.cases)?;
    let mut reports = Vec::with_capacity(cases.len());
    for case in &cases {
        let ctx = Case { dir: case, real_dir: &real_dir };
        let name = case_name(dir, case);
        // Every mode runs the case: a pending file is accepted only while it is what the
        // case produces.
        let report = ctx.run(parse_args, opts.allow_case_commands).and_then(|(kind, actual)| match &opts.mode {
            Mode::Accept(_) => ctx.accept(kind, &actual).map(|(files, dropped)| (kind, files, Vec::new(), dropped)),
            _ => ctx.compare(kind, &actual, opts).map(|(files, ignored, dropped)| (kind, files, ignored, dropped)),
        });
        let report = match report {
            Ok((kind, files, ignored, dropped)) => {
                let status = status_of(&files, &opts.mode);
                CaseReport {
                    name,
                    path: shown(case),
                    kind: Some(kind.as_str()),
                    status,
                    error: None,
                    error_file: None,
                    error_line: None,
                    files,
                    ignored,
                    dropped,
                }
            }
            Err(e) => {
                let (file, line) = match &e {
                    Error::BadLine { at, .. } => (shown(&at.file), at.line),
                    Error::BadInput { file, .. } | Error::Read { path: file, .. } => (shown(file), 1),
                    _ => (shown(case), 1),
                };
                CaseReport {
                    name,
                    path: shown(case),
                    kind: None,
                    status: "error",
                    error: Some(e.to_string()),
                    error_file: Some(file),
                    error_line: Some(line),
                    files: vec![],
                    ignored: vec![],
                    dropped: vec![],
                }
            }
        };
        if opts.format == Format::Text {
            write_case_text(w, &report, opts.color);
        }
        reports.push(report);
    }
    let count = |s: &str| reports.iter().filter(|r| r.status == s).count();
    let (differing, errors) = (count("differ") + count("pending"), count("error"));
    match opts.format {
        Format::Text => write_totals(w, dir, &reports, opts),
        Format::Json => {
            let doc = serde_json::json!({
                "dir": shown(dir), "cases": reports, "total": reports.len(),
                "differ": differing, "blessed": count("blessed"), "accepted": count("accepted"), "errors": errors,
            });
            let _ = writeln!(w, "{}", serde_json::to_string_pretty(&doc).expect("a report serializes"));
        }
        Format::Github => write_github(w, dir, &reports, opts),
        Format::Junit => write_junit(w, dir, &reports),
    }
    Ok(if errors > 0 {
        Exit::BadInput
    } else if differing > 0 {
        Exit::Differences
    } else {
        Exit::Ok
    })
}

fn status_of(files: &[FileReport], mode: &Mode) -> &'static str {
    if files.is_empty() {
        return "ok";
    }
    match mode {
        Mode::Bless => "blessed",
        Mode::Accept(_) => "accepted",
        Mode::Pending if files.iter().all(|f| f.status == "accepted") => "ok",
        Mode::Check if files.iter().all(|f| f.status == "pending") => "pending",
        _ => "differ",
    }
}

/// What a case produced: each output's file name and bytes.
type Outputs = Vec<(&'static str, Vec<u8>)>;

/// One case folder being checked.
struct Case<'a> {
    dir: &'a Path,
    real_dir: &'a Path,
}

impl Case<'_> {
    /// A file of the case: `None` when it is not there. Only a regular file inside DIR
    /// is read (a link only to one), and at most `limit` bytes of it.
    fn read(&self, name: &str, limit: u64) -> Result<Option<Vec<u8>>> {
        let path = self.dir.join(name);
        read_bounded(&path, self.real_dir, limit)
    }

    /// The case's input file (exactly one).
    fn input(&self) -> Result<(String, Vec<u8>)> {
        let names: Vec<String> = std::fs::read_dir(self.dir)
            .map_err(|e| Error::read(self.dir, e))?
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|f| is_input_name(f))
            .collect();
        match names.as_slice() {
            [one] => {
                let bytes = self.read(one, crate::source::max_input_bytes())?.expect("listed");
                Ok((one.clone(), bytes))
            }
            [] => Err(Error::bad_input(
                self.dir,
                "a case folder without an input: it needs input.jsonl, input.traj or input.json (compressed or not)",
            )),
            many => Err(Error::bad_input(self.dir, format!("more than one input: {}", many.join(", ")))),
        }
    }

    /// The flags of the case (`config.json`, then `args`), checked line by line.
    fn flags(&self) -> Result<(bool, Vec<String>)> {
        let mut args: Vec<String> = Vec::new();
        if let Some(_config) = self.read("config.json", SMALL_FILE)? {
            args.extend(["--config".to_string(), self.dir.join("config.json").display().to_string()]);
        }
        let Some(bytes) = self.read("args", SMALL_FILE)? else { return Ok((false, args)) };
        let args_file = self.dir.join("args");
        let text = String::from_utf8(bytes).map_err(|_| Error::bad_input(&args_file, crate::error::NOT_UTF8))?;
        let (replay, groups) = args_lines(&text);
        for (line, words) in groups {
            // A `--config` an args file names is a case file like the others: inside
            // DIR (relative to the case folder), regular, bounded.
            if let Some(path) = config_value(&words) {
                let resolved = self.dir.join(&path);
                read_bounded(&resolved, self.real_dir, SMALL_FILE)
                    .and_then(|f| f.ok_or_else(|| Error::bad_input(&resolved, "not found")))
                    .map_err(|e| Error::bad_line(&args_file, line, 1, e.to_string()))?;
                args.extend(["--config".to_string(), resolved.display().to_string()]);
                continue;
            }
            args.extend(words);
        }
        Ok((replay, args))
    }

    /// Runs the case in memory: its kind and the outputs it produces, by file name.
    fn run(
        &self,
        parse_args: &dyn Fn(&[String]) -> Result<CaseSettings>,
        allow_commands: bool,
    ) -> Result<(Kind, Outputs)> {
        if !inside(self.dir, self.real_dir) {
            return Err(Error::bad_input(
                self.dir,
                "the case folder is a symbolic link out of the checked folder: nothing in it is read",
            ));
        }
        let (replay, args) = self.flags()?;
        let args_file = self.dir.join("args");
        let case = parse_args(&args).map_err(|e| self.locate(&args_file, &args, parse_args, e))?;
        let commands = case.settings.commands();
        if !commands.is_empty() && !allow_commands {
            return Err(Error::bad_input(
                self.dir,
                format!(
                    "not run: the case names a command to run ({}); a case folder is untrusted, \
                     pass --allow-case-commands to run it",
                    commands.join(", ")
                ),
            ));
        }
        let (input_name, raw) = self.input()?;
        let name = Path::new(&input_name);
        let source = crate::source::Opened::bytes(raw, name)?;
        let dataset = crate::formats::dataset_format(name, &source).filter(|_| !replay);
        if let Some(format) = dataset.filter(|_| case.settings.input_format == crate::formats::InputFormat::Auto) {
            let mut s = case.settings.clone();
            s.input_format = format;
            return Ok((Kind::Dataset, vec![("output.jsonl", dataset_output(&source, name, &s)?)]));
        }
        let original = source.to_vec();
        let canonical = crate::formats::import(source, name, case.settings.input_format)?;
        let mut s = case.settings.clone();
        s.input_format = canonical.format;
        if replay {
            if !case.profile_given {
                s = s.with_profile(crate::config::Profile::of_format(canonical.format));
            }
            let t = crate::transcript::parse(&canonical.bytes, name).map_err(|e| canonical.relocate(e))?;
            canonical.accounting_of(&t, name)?;
            let layered = s.config_for(t.session.as_ref(), name)?;
            let r = crate::replay::replay(&t, &layered.config, s.profile().as_str(), &|l| canonical.source_line(l));
            let svg = crate::chart::svg(&r, &input_name);
            return Ok((
                Kind::Replay,
                vec![("replay.jsonl", r.json_lines().into_bytes()), ("replay.svg", svg.into_bytes())],
            ));
        }
        // Paths in decisions and hook payloads are relative to the case, never absolute.
        let t = crate::transcript::parse(&canonical.bytes, name).map_err(|e| canonical.relocate(e))?;
        let accounting = canonical.accounting_of(&t, name)?;
        let mut done = engine::process_parsed(t, name, &s).map_err(|e| canonical.relocate(e))?;
        done.accounting = accounting;
        if let Some(e) = done.refusal() {
            return Err(e);
        }
        if let Some(f) = s.output_format.resumes() {
            done.original = Some((f, original.into()));
        }
        let mut out = Vec::new();
        for o in output::produced(&done) {
            let mut buf = Vec::new();
            o.write(&mut buf, &done).map_err(|e| Error::write(Path::new(o.file_name()), e))?;
            out.push((o.file_name(), buf));
        }
        Ok((Kind::Transcript, out))
    }

    /// A bad `args` file names the line of the flag it is about: each flag (with its
    /// value) is parsed alone to find it.
    fn locate(
        &self,
        file: &Path,
        _args: &[String],
        parse_args: &dyn Fn(&[String]) -> Result<CaseSettings>,
        e: Error,
    ) -> Error {
        let Ok(Some(bytes)) = self.read("args", SMALL_FILE) else { return e };
        let text = String::from_utf8_lossy(&bytes);
        for (line, words) in args_lines(&text).1 {
            if let Err(err) = parse_args(&words) {
                return Error::bad_line(file, line, 1, err.to_string());
            }
        }
        Error::bad_input(file, e.to_string())
    }

    /// Compares (or writes pending, or blesses) one case: the files that differ (or were
    /// written), and the files of the folder that are neither inputs nor output names.
    fn compare(
        &self,
        kind: Kind,
        actual: &[(&'static str, Vec<u8>)],
        opts: &CheckOptions,
    ) -> Result<(Vec<FileReport>, Vec<String>, Vec<String>)> {
        let limit = crate::source::max_input_bytes();
        let mut files = Vec::new();
        let mut dropped = Vec::new();
        for file in kind.outputs() {
            let path = self.dir.join(file);
            let expected = self.read(file, limit)?;
            let pending_name = format!("{file}{PENDING}");
            let pending = self.dir.join(&pending_name);
            let produced = actual.iter().find(|(f, _)| *f == file).map(|(_, b)| b);
            let report =
                |status, line, diff| FileReport { file: file.to_string(), path: shown(&path), status, line, diff };
            // A pending file that is not what the case produces now is stale: dropped,
            // never offered for review (it would install outdated outputs).
            let waiting = self.read(&pending_name, limit)?;
            if waiting.is_some() && (waiting.as_ref() != produced || expected.as_ref() == produced) {
                self.drop_pending(&pending)?;
                dropped.push(pending_name.clone());
            }
            let waiting = waiting.filter(|w| Some(w) == produced && expected.as_ref() != produced);
            if expected.as_ref() == produced {
                continue;
            }
            let line = first_difference(expected.as_deref().unwrap_or(b""), produced.map_or(&b""[..], |p| p));
            match opts.mode {
                Mode::Bless => {
                    writable(&path, self.real_dir)
                        .map_err(|why| Error::Failed(format!("{file}: not blessed: {why}")))?;
                    let status = match (&expected, produced) {
                        (None, _) => "new",
                        (_, None) => "removed",
                        _ => "changed",
                    };
                    match produced {
                        Some(bytes) => output::write_atomic(&path, |w| w.write_all(bytes)),
                        None => std::fs::remove_file(&path),
                    }
                    .map_err(|e| Error::write(&path, e))?;
                    if exists(&pending) {
                        std::fs::remove_file(&pending).map_err(|e| Error::write(&pending, e))?;
                    }
                    files.push(report(status, line, None));
                    continue;
                }
                Mode::Pending => {
                    if let Some(bytes) = produced {
                        writable(&pending, self.real_dir)
                            .map_err(|why| Error::Failed(format!("{pending_name}: not written: {why}")))?;
                        output::write_atomic(&pending, |w| w.write_all(bytes))
                            .map_err(|e| Error::write(&pending, e))?;
                    }
                }
                Mode::Check if waiting.is_some() => {
                    files.push(report("pending", line, None));
                    continue;
                }
                _ => {}
            }
            files.push(match (expected, produced) {
                (None, _) => report("missing", 1, None),
                (_, None) => report("extra", 1, None),
                (Some(e), Some(a)) => report("changed", line, Some(unified_diff(&shown(&path), &e, a, opts.color))),
            });
        }
        Ok((files, self.ignored(kind), dropped))
    }

    /// Removes a stale pending file (a real file inside DIR only).
    fn drop_pending(&self, pending: &Path) -> Result<()> {
        writable(pending, self.real_dir)
            .map_err(|why| Error::Failed(format!("{}: not removed: {why}", pending.display())))?;
        std::fs::remove_file(pending).map_err(|e| Error::write(pending, e))
    }

    /// `--accept`: each pending file of the case becomes its expected file, when it is
    /// what the case produces now (the case is run again first); a stale one is
    /// refused, and one the case no longer needs (it produces the expected file) dropped.
    fn accept(&self, kind: Kind, actual: &[(&'static str, Vec<u8>)]) -> Result<(Vec<FileReport>, Vec<String>)> {
        self.accept_only(kind, actual, None)
    }

    /// [`Case::accept`] for one expected file, or all of them.
    fn accept_only(
        &self,
        kind: Kind,
        actual: &[(&'static str, Vec<u8>)],
        only: Option<&str>,
    ) -> Result<(Vec<FileReport>, Vec<String>)> {
        let limit = crate::source::max_input_bytes();
        let (mut files, mut dropped) = (Vec::new(), Vec::new());
        for file in kind.outputs().into_iter().filter(|f| only.is_none_or(|o| o == *f)) {
            let pending_name = format!("{file}{PENDING}");
            let pending = self.dir.join(&pending_name);
            let Some(waiting) = self.read(&pending_name, limit)? else { continue };
            let produced = actual.iter().find(|(f, _)| *f == file).map(|(_, b)| b);
            let expected = self.read(file, limit)?;
            if expected.as_ref() == produced {
                self.drop_pending(&pending)?;
                dropped.push(pending_name);
            } else if Some(&waiting) != produced {
                return Err(Error::Failed(format!(
                    "{}: stale: the case produces something else now; nothing accepted (run check --pending again, then read the new file)",
                    shown(&pending)
                )));
            } else {
                accept_one(&pending, &self.dir.join(file), self.real_dir)?;
                let path = shown(&self.dir.join(file));
                files.push(FileReport { file: file.to_string(), path, status: "accepted", line: 1, diff: None });
            }
        }
        Ok((files, dropped))
    }

    /// Files of the case that are neither inputs, flags, outputs nor pending outputs.
    fn ignored(&self, kind: Kind) -> Vec<String> {
        let outputs = kind.outputs();
        let mut ignored: Vec<String> = std::fs::read_dir(self.dir)
            .map(|rd| rd.filter_map(|e| e.ok()?.file_name().into_string().ok()).collect())
            .unwrap_or_default();
        ignored.retain(|f| {
            !is_input_name(f)
                && !["config.json", "args"].contains(&f.as_str())
                && !outputs.iter().any(|o| *o == f.as_str() || f.strip_suffix(PENDING) == Some(o))
                && std::fs::symlink_metadata(self.dir.join(f)).is_ok_and(|m| m.is_file())
                && !f.starts_with('.')
        });
        ignored.sort();
        ignored
    }
}

/// Whether a file name is a case's input (`input.jsonl`, `input.traj.gz`, …).
fn is_input_name(f: &str) -> bool {
    INPUT_NAMES.contains(&crate::source::Compression::strip_suffix(f))
}

fn exists(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

/// Reads a file of an untrusted folder: a regular file inside `real_dir` (a link only
/// to one), at most `limit` bytes; `None` when it is not there. A FIFO, a device, a
/// folder or a path out of DIR (absolute, through `..`, or through a link, its own or
/// a folder's on the way) is an error, never read (a FIFO would block, a link to
/// /dev/zero would fill memory, a path to ~/.ssh would leak).
fn read_bounded(path: &Path, real_dir: &Path, limit: u64) -> Result<Option<Vec<u8>>> {
    use std::io::Read;
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::read(path, e)),
    };
    let real = std::fs::canonicalize(path).map_err(|e| Error::read(path, e))?;
    if !real.starts_with(real_dir) {
        let how = if meta.file_type().is_symlink() { "a link" } else { "a path" };
        return Err(Error::bad_input(path, format!("{how} out of the checked folder: a case file must be inside it")));
    }
    let target = std::fs::metadata(path).map_err(|e| Error::read(path, e))?;
    if !target.is_file() {
        let what = if target.is_dir() { "a folder" } else { "not a regular file (a FIFO, a device or a socket)" };
        return Err(Error::bad_input(path, format!("{what}: a case file must be a regular file")));
    }
    let file = std::fs::File::open(path).map_err(|e| Error::read(path, e))?;
    let mut bytes = Vec::with_capacity(usize::try_from(target.len().min(limit)).unwrap_or(0));
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes).map_err(|e| Error::read(path, e))?;
    if bytes.len() as u64 > limit {
        return Err(Error::bad_input(path, format!("larger than {limit} bytes, the most a case file may hold")));
    }
    Ok(Some(bytes))
}

/// The output of a dataset case: each line compacted on its own, in order.
fn dataset_output(source: &[u8], name: &Path, s: &Settings) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(source.len());
    // Bad lines are echoed into the output, which pins them.
    crate::dataset::compact_lines(source, name, s, &mut out)?;
    Ok(out)
}

/// `--accept-file PATH…`: each names an expected file or its pending file; its case is
/// run again, and the pending file accepted only while it is what the case produces.
fn accept_files(
    paths: &[PathBuf],
    real_dir: &Path,
    opts: &CheckOptions,
    parse_args: &dyn Fn(&[String]) -> Result<CaseSettings>,
    w: &mut dyn Write,
) -> Result<Exit> {
    for p in paths {
        let name = p.to_string_lossy();
        let (pending, expected) = match name.strip_suffix(PENDING) {
            Some(e) => (p.clone(), PathBuf::from(e)),
            None => (PathBuf::from(format!("{name}{PENDING}")), p.clone()),
        };
        if !exists(&pending) {
            return Err(Error::Usage(format!(
                "{}: no pending file to accept",
                crate::ui::escape(&pending.display().to_string())
            )));
        }
        let folder = expected.parent().filter(|f| !f.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let file = expected.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
        let case = Case { dir: folder, real_dir };
        let (kind, actual) = case.run(parse_args, opts.allow_case_commands)?;
        let (accepted, dropped) = case.accept_only(kind, &actual, Some(&file))?;
        for f in accepted {
            let _ = writeln!(w, "{}: accepted", crate::ui::escape(&f.path));
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
fn accept_one(pending: &Path, expected: &Path, real_dir: &Path) -> Result<()> {
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
fn writable(path: &Path, real_dir: &Path) -> std::result::Result<(), &'static str> {
    let folder = path.parent().and_then(|p| std::fs::canonicalize(p).ok());
    if !folder.is_some_and(|f| f.starts_with(real_dir)) {
        return Err("the case folder is a symbolic link out of the checked folder");
    }
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err("the file is a symbolic link");
    }
    Ok(())
}

/// The cases the patterns name (each pattern must name at least one), in order.
fn select(dir: &Path, all: &[PathBuf], patterns: &[String]) -> Result<Vec<PathBuf>> {
    if patterns.is_empty() {
        return Ok(all.to_vec());
    }
    let mut matchers = Vec::with_capacity(patterns.len());
    for p in patterns {
        let glob = globset::GlobBuilder::new(p.trim_end_matches('/'))
            .literal_separator(true)
            .build()
            .map_err(|e| Error::Usage(format!("case pattern `{}`: {e}", crate::ui::escape(p))))?;
        matchers.push((p, glob.compile_matcher()));
    }
    for (p, m) in &matchers {
        if !all.iter().any(|c| m.is_match(case_name(dir, c))) {
            return Err(Error::Usage(format!(
                "no case below {} matches `{}`",
                crate::ui::escape(&dir.display().to_string()),
                crate::ui::escape(p)
            )));
        }
    }
    Ok(all.iter().filter(|c| matchers.iter().any(|(_, m)| m.is_match(case_name(dir, c)))).cloned().collect())
}

/// A case's name: its folder below DIR (`.` for DIR itself).
fn case_name(dir: &Path, case: &Path) -> String {
    let rel = case.strip_prefix(dir).unwrap_or(case).display().to_string();
    if rel.is_empty() {
        ".".into()
    } else {
        rel
    }
}

/// A path as a CI log shows it: relative to the working folder when it is below it.
fn shown(path: &Path) -> String {
    let rel = std::env::current_dir().ok().and_then(|cwd| path.strip_prefix(&cwd).ok().map(Path::to_path_buf));
    rel.unwrap_or_else(|| path.to_path_buf()).display().to_string()
}

/// A word a shell reads back as it is (quoted when it needs to be).
fn shell_word(s: &str) -> String {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_./:=+,@%".contains(&b)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// One case's findings as text: a line per file (a diff for a changed one).
fn write_case_text(w: &mut dyn Write, r: &CaseReport, color: bool) {
    let name = crate::ui::escape(&r.name);
    if let Some(e) = &r.error {
        let _ = writeln!(w, "{name}: error: {}", crate::ui::escape(e));
    }
    for f in &r.files {
        let file = crate::ui::escape(&f.file);
        match (f.status, &f.diff) {
            ("changed", Some(diff)) => write_diff(w, diff, color),
            ("missing", _) => {
                let _ = writeln!(w, "{name}/{file}: missing expected file (the run produces it)");
            }
            ("extra", _) => {
                let _ = writeln!(w, "{name}/{file}: extra expected file (the run no longer produces it)");
            }
            ("pending", _) => {
                let _ = writeln!(w, "{name}/{file}{PENDING}: pending review (accept it with check --accept)");
            }
            ("accepted", _) => {
                let _ = writeln!(w, "{name}/{file}: accepted");
            }
            (written, _) => {
                let _ = writeln!(w, "{name}/{file}: blessed ({written})");
            }
        }
    }
    for f in &r.ignored {
        let _ = writeln!(w, "{name}/{}: note: not an output name; ignored", crate::ui::escape(f));
    }
    for f in &r.dropped {
        let _ = writeln!(
            w,
            "{name}/{}: note: removed, stale (the case no longer produces what it holds)",
            crate::ui::escape(f)
        );
    }
}

/// The closing lines for people: the totals and the command that goes on from here.
fn write_totals(w: &mut dyn Write, dir: &Path, reports: &[CaseReport], opts: &CheckOptions) {
    let count = |s: &str| reports.iter().filter(|r| r.status == s).count();
    let (differing, pending, errors) = (count("differ"), count("pending"), count("error"));
    let (n, verb) = match opts.mode {
        Mode::Bless => (count("blessed"), "blessed"),
        Mode::Accept(_) => (count("accepted"), "accepted"),
        _ => (differing + pending, "differ"),
    };
    let unreadable = if errors > 0 { format!(", {errors} unreadable") } else { String::new() };
    let _ = writeln!(w, "{} case(s), {n} {verb}{unreadable}", reports.len());
    let again = |flag: &str| {
        let mut words = vec!["rivumi-compact".to_string(), "check".into(), flag.into(), shell_word(&shown(dir))];
        words.extend(opts.cases.iter().map(|c| shell_word(c)));
        words.join(" ")
    };
    // What is left once the pending files are written: differences no `.new` file can
    // hold (an expected file the run no longer produces) need --bless, not --pending.
    let unwritten = reports.iter().flat_map(|r| &r.files).filter(|f| matches!(f.status, "changed" | "missing")).count();
    let extra = reports.iter().flat_map(|r| &r.files).filter(|f| f.status == "extra").count();
    if differing > 0 && opts.mode == Mode::Pending {
        let _ = writeln!(
            w,
            "the actual outputs are written beside them as NAME{PENDING}; to accept them, run: {}",
            again("--accept")
        );
    } else if unwritten > 0 {
        let _ = writeln!(w, "to review them as NAME{PENDING} files, run: {}", again("--pending"));
        let _ = writeln!(w, "to accept the actual outputs as expected, run: {}", again("--bless"));
    } else if pending > 0 || differing > 0 {
        if pending > 0 {
            let _ = writeln!(w, "pending files wait for review; to accept them, run: {}", again("--accept"));
        }
        if extra > 0 {
            let _ = writeln!(w, "expected files the run no longer produces go with: {}", again("--bless"));
        }
    }
}

/// GitHub Actions annotations: one `::error` at the first difference of each file
/// (and of each case that could not be read), then the totals.
fn write_github(w: &mut dyn Write, dir: &Path, reports: &[CaseReport], opts: &CheckOptions) {
    for r in reports {
        if let Some(e) = &r.error {
            let _ = writeln!(
                w,
                "::error file={},line={},title={}::{}",
                gh_property(r.error_file.as_deref().unwrap_or(&r.path)),
                r.error_line.unwrap_or(1),
                gh_property("rivumi-compact check"),
                gh_data(e)
            );
        }
        for f in &r.files {
            let what = match f.status {
                "changed" => "differs from the actual output",
                "missing" => "is missing: the run produces it",
                "extra" => "is no longer produced by the run",
                "pending" => "has a pending .new file to review",
                _ => continue,
            };
            let _ = writeln!(
                w,
                "::error file={},line={},title={}::{}",
                gh_property(&f.path),
                f.line,
                gh_property("rivumi-compact check"),
                gh_data(&format!("{}/{} {what} (rivumi-compact check --pending {})", r.name, f.file, shown(dir)))
            );
        }
    }
    write_totals(w, dir, reports, opts);
}

/// GitHub's escaping of a workflow command's message.
fn gh_data(s: &str) -> String {
    s.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A")
}

/// GitHub's escaping of a workflow command's property value.
fn gh_property(s: &str) -> String {
    gh_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// JUnit XML: one test suite, one test case per case, a failure holding its diffs.
fn write_junit(w: &mut dyn Write, dir: &Path, reports: &[CaseReport]) {
    let failures = reports.iter().filter(|r| matches!(r.status, "differ" | "pending")).count();
    let errors = reports.iter().filter(|r| r.status == "error").count();
    let _ = writeln!(w, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>");
    let _ = writeln!(w, "<testsuites tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\">", reports.len());
    let suite = xml(&shown(dir));
    let _ = writeln!(
        w,
        "  <testsuite name=\"rivumi-compact check {suite}\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\">",
        reports.len()
    );
    for r in reports {
        let _ = write!(w, "    <testcase classname=\"{suite}\" name=\"{}\" file=\"{}\"", xml(&r.name), xml(&r.path));
        match r.status {
            "error" => {
                let e = xml(r.error.as_deref().unwrap_or(""));
                let _ = writeln!(w, ">\n      <error message=\"{e}\">{e}</error>\n    </testcase>");
            }
            "differ" | "pending" => {
                let files: Vec<String> = r.files.iter().map(|f| format!("{} ({})", f.file, f.status)).collect();
                let body: String = r
                    .files
                    .iter()
                    .map(|f| f.diff.clone().unwrap_or_else(|| format!("{}: {}\n", f.path, f.status)))
                    .collect();
                let _ = writeln!(
                    w,
                    ">\n      <failure message=\"{}\">{}</failure>\n    </testcase>",
                    xml(&format!("differs: {}", files.join(", "))),
                    xml(&body)
                );
            }
            _ => {
                let _ = writeln!(w, "/>");
            }
        }
    }
    let _ = writeln!(w, "  </testsuite>\n</testsuites>");
}

/// Whether a folder is inside DIR, whose real path is `real_dir` (links resolved).
fn inside(folder: &Path, real_dir: &Path) -> bool {
    std::fs::canonicalize(folder).is_ok_and(|r| r.starts_with(real_dir))
}

/// Text as XML character data or an attribute value (a diff keeps its lines).
fn xml(s: &str) -> String {
    crate::ui::xml(s, true)
}

/// Every case folder below `dir` (and `dir` itself, whose real path is `real_dir`),
/// sorted: a folder holding an input, `args`, `config.json`, an expected output or a
/// pending one (so a folder that lost its input is an error, never a silent skip). A
/// folder reached twice (a symbolic link loop) is walked once, with a warning; a link to
/// a folder out of DIR is a case that fails, never walked.
fn find_cases(dir: &Path, real_dir: &Path) -> Result<Vec<PathBuf>> {
    use std::os::unix::fs::MetadataExt;
    let outputs = output_names();
    let mut out = Vec::new();
    let mut seen = std::collections::HashMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let meta = std::fs::metadata(&d).map_err(|e| Error::read(&d, e))?;
        if let Some(first) = seen.insert((meta.dev(), meta.ino()), d.clone()) {
            crate::ui::warn(&format!(
                "{}: skipped: a symbolic link to {}, already walked",
                d.display(),
                first.display()
            ));
            continue;
        }
        let entries: Vec<std::fs::DirEntry> =
            std::fs::read_dir(&d).map_err(|e| Error::read(&d, e))?.filter_map(std::result::Result::ok).collect();
        let is_case = entries.iter().any(|e| {
            let f = e.file_name().to_string_lossy().into_owned();
            is_input_name(&f)
                || ["args", "config.json"].contains(&f.as_str())
                || outputs.iter().any(|o| *o == f || f.strip_suffix(PENDING) == Some(o))
        });
        if is_case {
            out.push(d.clone());
        }
        let mut subdirs = Vec::new();
        for p in entries.iter().map(std::fs::DirEntry::path).filter(|p| p.is_dir()) {
            // A link to a folder out of DIR is not walked: it stands as one case, which
            // fails (a case folder is untrusted; its links may point anywhere, even /).
            if inside(&p, real_dir) {
                subdirs.push(p);
            } else {
                out.push(p);
            }
        }
        subdirs.sort();
        stack.extend(subdirs.into_iter().rev());
    }
    out.sort();
    Ok(out)
}

/// The flags of an `args` file, grouped by the line their flag is on: one flag per
/// line, with its value on the same line (`--max-total-tokens 20000`, the rest of the
/// line, spaces included) or alone on the next lines (the older layout). Blank lines,
/// lines starting with `#` and what follows ` #` on a line are comments. A first line
/// `replay` makes the case a replay case (returned first).
fn args_lines(text: &str) -> (bool, Vec<(usize, Vec<String>)>) {
    let mut groups: Vec<(usize, Vec<String>)> = Vec::new();
    let mut replay = false;
    for (k, raw) in text.lines().enumerate() {
        let line = strip_comment(raw).trim();
        if line.is_empty() {
            continue;
        }
        if groups.is_empty() && !replay && line == "replay" {
            replay = true;
            continue;
        }
        if line.starts_with('-') || groups.is_empty() {
            let words = match line.split_once(char::is_whitespace) {
                Some((flag, value)) if line.starts_with("--") && !flag.contains('=') => {
                    vec![flag.to_string(), value.trim().to_string()]
                }
                _ => vec![line.to_string()],
            };
            groups.push((k + 1, words));
        } else if let Some((_, words)) = groups.last_mut() {
            words.push(line.to_string());
        }
    }
    (replay, groups)
}

/// A line without its comment: from a `#` that starts the line or follows a space.
fn strip_comment(line: &str) -> &str {
    if line.trim_start().starts_with('#') {
        return "";
    }
    let b = line.as_bytes();
    (1..b.len()).find(|&i| b[i] == b'#' && b[i - 1].is_ascii_whitespace()).map_or(line, |i| &line[..i])
}

/// The value of a `--config` flag in one group of words.
fn config_value(words: &[String]) -> Option<String> {
    match words {
        [flag, value] if flag == "--config" => Some(value.clone()),
        [one] => one.strip_prefix("--config=").map(str::to_string),
        _ => None,
    }
}

/// The 1-based line of `expected` where it first differs from `actual`.
fn first_difference(expected: &[u8], actual: &[u8]) -> usize {
    let same = expected.iter().zip(actual).take_while(|(a, b)| a == b).count();
    1 + memchr::memchr_iter(b'\n', &expected[..same.min(expected.len())]).count()
}

/// A unified diff, expected (`a/PATH`) → actual (`b/PATH`), as `git diff` heads it so a
/// CI log can link the path; controls escaped. A changed JSON line is shown beside the
/// line it replaces with the changed fields marked (`[-…-]` and `{+…+}`, or coloured),
/// and a long one is cut around the change.
fn unified_diff(path: &str, expected: &[u8], actual: &[u8], color: bool) -> String {
    use std::fmt::Write as _;
    let old = String::from_utf8_lossy(expected);
    let new = String::from_utf8_lossy(actual);
    let diff = TextDiff::from_lines(old.as_ref(), new.as_ref());
    let path = crate::ui::escape(path);
    let mut out = format!("--- a/{path}\n+++ b/{path}\n");
    for group in diff.grouped_ops(3) {
        let first = &group[0];
        let last = &group[group.len() - 1];
        let (o, n) = (first.old_range().start, first.new_range().start);
        let (oe, ne) = (last.old_range().end, last.new_range().end);
        let _ = writeln!(out, "@@ -{},{} +{},{} @@", o + 1, oe - o, n + 1, ne - n);
        for op in &group {
            let changes: Vec<_> = diff.iter_changes(op).collect();
            let deleted: Vec<&str> =
                changes.iter().filter(|c| c.tag() == ChangeTag::Delete).map(similar::Change::value).collect();
            let inserted: Vec<&str> =
                changes.iter().filter(|c| c.tag() == ChangeTag::Insert).map(similar::Change::value).collect();
            // A replaced run of JSON lines, line for line: mark what changed inside.
            let paired = deleted.len() == inserted.len()
                && !deleted.is_empty()
                && deleted.iter().chain(&inserted).all(|l| l.trim_start().starts_with(['{', '[']));
            if paired {
                for (a, b) in deleted.iter().zip(&inserted) {
                    let (minus, plus) = inline_marks(a.trim_end_matches('\n'), b.trim_end_matches('\n'), color);
                    let _ = writeln!(out, "-{minus}");
                    let _ = writeln!(out, "+{plus}");
                }
                continue;
            }
            for change in changes {
                let sign = match change.tag() {
                    ChangeTag::Delete => '-',
                    ChangeTag::Insert => '+',
                    ChangeTag::Equal => ' ',
                };
                let text = crate::ui::escape(change.value().trim_end_matches('\n'));
                let _ = writeln!(out, "{sign}{}", shortened(&text, change.tag() == ChangeTag::Equal));
            }
        }
    }
    out
}

/// A context line of a diff cut when long (a Claude Code record can be 10 KB): its start
/// and how much was left out. Changed lines are shown whole.
fn shortened(line: &str, context: bool) -> std::borrow::Cow<'_, str> {
    let n = line.chars().count();
    if !context || n <= LONG_LINE {
        return std::borrow::Cow::Borrowed(line);
    }
    let head: String = line.chars().take(LONG_LINE / 2).collect();
    std::borrow::Cow::Owned(format!("{head}… ({} more characters)", n - LONG_LINE / 2))
}

/// The tokens a JSON line is compared by: strings with their quotes, numbers and
/// words, and each punctuation mark on its own.
fn tokens(s: &str) -> Vec<&str> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let start = i;
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i = (i + 1).min(b.len());
            }
            b'{' | b'}' | b'[' | b']' | b',' | b':' => i += 1,
            _ => {
                while i < b.len() && !b"\"{}[],:".contains(&b[i]) {
                    i += 1;
                }
            }
        }
        // Keep to character boundaries (an escape at the very end of a string).
        while i < b.len() && !s.is_char_boundary(i) {
            i += 1;
        }
        out.push(&s[start..i]);
    }
    out
}

/// The two lines with their changes marked, each cut to a window around its changes
/// when long: the changed JSON tokens, and inside a changed string only the characters
/// that changed, with a few characters of context (as `cargo insta` shows an inline
/// diff). The marks, `⟦-…-⟧` and `⟦+…+⟧`, cannot be taken for JSON.
fn inline_marks(old: &str, new: &str, color: bool) -> (String, String) {
    let (a, b) = (tokens(old), tokens(new));
    let ops = similar::capture_diff_slices(similar::Algorithm::Myers, &a, &b);
    let (mut minus, mut plus) =
        (Marked::new(color, "⟦-", "-⟧", "\x1b[7;31m"), Marked::new(color, "⟦+", "+⟧", "\x1b[7;32m"));
    // Unchanged text between changes is cut only in a long line.
    minus.long = old.chars().count() > LONG_LINE;
    plus.long = new.chars().count() > LONG_LINE;
    for op in ops {
        let (tag, old_range, new_range) = op.as_tag_tuple();
        let (was, is) = (a[old_range].concat(), b[new_range].concat());
        match tag {
            similar::DiffTag::Equal => {
                minus.context(&was);
                plus.context(&is);
            }
            similar::DiffTag::Replace if was.starts_with('"') && is.starts_with('"') => {
                chars_marked(&was, &is, &mut minus, &mut plus);
            }
            _ => {
                minus.changed(&was);
                plus.changed(&is);
            }
        }
    }
    (minus.finish(), plus.finish())
}

/// Characters of unchanged text kept on either side of a change inside a line.
const CONTEXT: usize = 20;

/// A changed string, character by character: the changed runs marked, the unchanged
/// ones kept as context (a long one cut to its ends).
fn chars_marked(was: &str, is: &str, minus: &mut Marked, plus: &mut Marked) {
    let diff = TextDiff::from_chars(was, is);
    for op in diff.ops() {
        let (tag, old_range, new_range) = op.as_tag_tuple();
        let old: String = diff.old_slices()[old_range].concat();
        let new: String = diff.new_slices()[new_range].concat();
        if tag == similar::DiffTag::Equal {
            minus.context(&old);
            plus.context(&new);
        } else {
            minus.changed(&old);
            plus.changed(&new);
        }
    }
}

/// A line being marked: its text, and where its changes are (for cutting it).
struct Marked {
    text: String,
    first: Option<usize>,
    last: usize,
    open: &'static str,
    close: &'static str,
    /// Whether the line is long enough to be cut.
    long: bool,
}

/// A line longer than this is cut to the part around its changes.
const LONG_LINE: usize = 240;
/// What is kept on either side of the changes of a cut line, in characters.
const AROUND: usize = CONTEXT;

impl Marked {
    fn new(color: bool, open: &'static str, close: &'static str, colored: &'static str) -> Marked {
        let (open, close) = if color { (colored, "\x1b[0m") } else { (open, close) };
        Marked { text: String::new(), first: None, last: 0, open, close, long: false }
    }

    fn plain(&mut self, s: &str) {
        self.text.push_str(&crate::ui::escape(s));
    }

    /// Unchanged text between changes: kept whole when short, else its two ends around
    /// `…` (the ends of the line are cut by [`Marked::finish`]).
    fn context(&mut self, s: &str) {
        let n = s.chars().count();
        if !self.long || self.first.is_none() || n <= 2 * CONTEXT + 1 {
            self.plain(s);
            return;
        }
        let head: String = s.chars().take(CONTEXT).collect();
        let tail: String = s.chars().skip(n - CONTEXT).collect();
        self.plain(&head);
        self.text.push('…');
        self.plain(&tail);
    }

    fn changed(&mut self, s: &str) {
        if s.is_empty() {
            return;
        }
        self.first.get_or_insert(self.text.len());
        self.text.push_str(self.open);
        self.text.push_str(&crate::ui::escape(s));
        self.text.push_str(self.close);
        self.last = self.text.len();
    }

    fn finish(self) -> String {
        let Some(first) = self.first.filter(|_| self.text.chars().count() > LONG_LINE) else { return self.text };
        let start = self.text[..first].char_indices().rev().nth(AROUND).map_or(0, |(i, _)| i);
        let end = self.text[self.last..].char_indices().nth(AROUND).map_or(self.text.len(), |(i, _)| self.last + i);
        let mut out = String::new();
        if start > 0 {
            out.push('…');
        }
        out.push_str(&self.text[start..end]);
        if end < self.text.len() {
            out.push('…');
        }
        out
    }
}

/// Writes a diff, its removed and added lines coloured when asked.
fn write_diff(w: &mut dyn Write, diff: &str, color: bool) {
    for line in diff.lines() {
        let code = match line.as_bytes().first() {
            _ if !color || line.starts_with("--- a/") || line.starts_with("+++ b/") => "",
            Some(b'-') => "\x1b[31m",
            Some(b'+') => "\x1b[32m",
            Some(b'@') => "\x1b[36m",
            _ => "",
        };
        if code.is_empty() {
            let _ = writeln!(w, "{line}");
        } else {
            let _ = writeln!(w, "{code}{line}\x1b[0m");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_field_is_marked_and_a_long_line_cut_around_it() {
        let old = r#"{"type":"message","id":"m1","used":100,"content":"same"}"#;
        let new = r#"{"type":"message","id":"m1","used":250,"content":"same"}"#;
        let (minus, plus) = inline_marks(old, new, false);
        assert_eq!(minus, r#"{"type":"message","id":"m1","used":⟦-100-⟧,"content":"same"}"#);
        assert_eq!(plus, r#"{"type":"message","id":"m1","used":⟦+250+⟧,"content":"same"}"#);
        let pad = "x".repeat(400);
        let (minus, _) = inline_marks(
            &format!(r#"{{"a":"{pad}","b":1,"c":"{pad}"}}"#),
            &format!(r#"{{"a":"{pad}","b":2,"c":"{pad}"}}"#),
            false,
        );
        assert!(minus.starts_with('…') && minus.ends_with('…') && minus.contains("\"b\":⟦-1-⟧"), "{minus}");
        assert!(minus.chars().count() < 140, "{}", minus.chars().count());
    }

    #[test]
    fn inside_a_long_string_only_the_change_is_marked_with_a_little_context() {
        let text = "lorem ipsum ".repeat(400);
        // Two changes far apart inside one 4,800-character string.
        let changed = format!("{}IPSUM{}LOREM{}", &text[..1006], &text[1011..3600], &text[3605..]);
        let old = format!(r#"{{"type":"tool_result","id":"r1","content":"{text}"}}"#);
        let new = format!(r#"{{"type":"tool_result","id":"r1","content":"{changed}"}}"#);
        let (minus, plus) = inline_marks(&old, &new, false);
        assert_eq!((minus.matches("⟦-").count(), plus.matches("⟦+").count()), (2, 2), "{minus}\n{plus}");
        assert!(minus.contains("⟦-lorem-⟧") && plus.contains("⟦+LOREM+⟧"), "{minus}\n{plus}");
        assert!(minus.contains("…") && minus.starts_with('…'), "unchanged text elided: {minus}");
        assert!(minus.chars().count() < 160 && plus.chars().count() < 160, "{minus}\n{plus}");
        assert!(!minus.contains("[-") && !plus.contains("{+"), "no mark reads as JSON");
    }

    #[test]
    fn args_comments_and_replay_cases() {
        let (replay, groups) = args_lines("replay\n# a comment\n--verify cargo test # the suite\n--threshold 0.9\n");
        assert!(replay);
        assert_eq!(
            groups,
            vec![(3, vec!["--verify".into(), "cargo test".into()]), (4, vec!["--threshold".into(), "0.9".into()])]
        );
        assert_eq!(strip_comment("--verify make#all"), "--verify make#all", "a # inside a word stays");
    }

    #[test]
    fn github_commands_cannot_be_forged() {
        assert_eq!(gh_data("x\n::error file=README.md::injected"), "x%0A::error file=README.md::injected");
        assert_eq!(gh_property("a,b:c"), "a%2Cb%3Ac");
    }
}
