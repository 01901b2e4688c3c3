//! Running one case: finding the case folders under DIR (no link out of it), reading
//! a case's files with a bound, running it as `run --out-dir` would, comparing.

use super::args::{args_lines, config_value};
use super::diff::{first_difference, unified_diff};
use super::report::shown;
use super::review::{accept_one, writable};
use super::{is_output_or_pending, CaseSettings, CheckOptions, FileReport, Mode, Outputs, PENDING, PENDING_REMOVAL};
use crate::engine::{self, Settings};
use crate::error::{Error, Result};
use crate::output::{self, Output};
use std::path::{Path, PathBuf};

/// The names an input file of a case may have (with a compression suffix or not).
pub(super) const INPUT_NAMES: &[&str] = &["input.jsonl", "input.traj", "input.json"];
/// The most a case's `args` or `config.json` may hold.
pub(super) const SMALL_FILE: u64 = 1 << 20;
/// The kind of a case, from its `args` and its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr, strum::EnumString, strum::VariantArray)]
#[strum(serialize_all = "lowercase")]
pub(super) enum Kind {
    Transcript,
    Dataset,
    Replay,
}

impl Kind {
    /// Its name as it is written (derived by the rule serde and clap use; `tests/it/names.rs` holds them equal).
    pub(super) fn as_str(self) -> &'static str {
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
pub(super) fn output_names() -> Vec<&'static str> {
    let mut v = Kind::Transcript.outputs();
    v.extend(Kind::Dataset.outputs());
    v.extend(Kind::Replay.outputs());
    v
}

/// One case folder being checked.
pub(super) struct Case<'a> {
    pub(super) dir: &'a Path,
    pub(super) real_dir: &'a Path,
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
    pub(super) fn run(
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
            let t = canonical.transcript(name)?;
            canonical.accounting_of(&t, name)?;
            let layered = s.config_for(&t, name)?;
            let r = crate::replay::replay(&t, &layered.config, s.profile().as_str(), &|l| canonical.source_line(l));
            let svg = crate::chart::svg(&r, &input_name);
            return Ok((
                Kind::Replay,
                vec![("replay.jsonl", r.json_lines().into_bytes()), ("replay.svg", svg.into_bytes())],
            ));
        }
        // Paths in decisions and hook payloads are relative to the case, never absolute.
        let t = canonical.transcript(name)?;
        let accounting = canonical.accounting_of(&t, name)?;
        let mut done = engine::process_parsed(t, name, &s).map_err(|e| canonical.relocate(e))?;
        done.accounting = accounting;
        if let Some(e) = done.refusal() {
            return Err(e);
        }
        if let Some(f) = s.output_format.resumes() {
            let records = canonical.source_records.clone();
            done.original = Some(engine::Original { format: f, bytes: original.into(), records });
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
    pub(super) fn compare(
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
            // So is a pending removal once the case produces the file again (or there is
            // nothing left to remove).
            let removal_name = format!("{file}{PENDING_REMOVAL}");
            let removal = self.dir.join(&removal_name);
            let mut marked = self.read(&removal_name, SMALL_FILE)?.is_some();
            if marked && (produced.is_some() || expected.is_none()) {
                self.drop_pending(&removal)?;
                dropped.push(removal_name.clone());
                marked = false;
            }
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
                    for p in [&pending, &removal] {
                        if exists(p) {
                            std::fs::remove_file(p).map_err(|e| Error::write(p, e))?;
                        }
                    }
                    files.push(report(status, line, None));
                    continue;
                }
                Mode::Pending => {
                    // What differs is written for review: the output, or the mark that
                    // the run no longer produces the expected file.
                    let note = if produced.is_none() { removal_note(file) } else { String::new() };
                    let (to, name, bytes) = match produced {
                        Some(bytes) => (&pending, &pending_name, &bytes[..]),
                        None => (&removal, &removal_name, note.as_bytes()),
                    };
                    writable(to, self.real_dir).map_err(|why| Error::Failed(format!("{name}: not written: {why}")))?;
                    output::write_atomic(to, |w| w.write_all(bytes)).map_err(|e| Error::write(to, e))?;
                }
                Mode::Check if waiting.is_some() || marked => {
                    files.push(report(if marked { "pending_removal" } else { "pending" }, line, None));
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
    pub(super) fn accept(
        &self,
        kind: Kind,
        actual: &[(&'static str, Vec<u8>)],
    ) -> Result<(Vec<FileReport>, Vec<String>)> {
        self.accept_only(kind, actual, None)
    }

    /// [`Case::accept`] for one expected file, or all of them.
    pub(super) fn accept_only(
        &self,
        kind: Kind,
        actual: &[(&'static str, Vec<u8>)],
        only: Option<&str>,
    ) -> Result<(Vec<FileReport>, Vec<String>)> {
        let limit = crate::source::max_input_bytes();
        let (mut files, mut dropped) = (Vec::new(), Vec::new());
        for file in kind.outputs().into_iter().filter(|f| only.is_none_or(|o| o == *f)) {
            let produced = actual.iter().find(|(f, _)| *f == file).map(|(_, b)| b);
            if let Some(report) = self.accept_removal(file, produced, &mut dropped)? {
                files.push(report);
            }
            let pending_name = format!("{file}{PENDING}");
            let pending = self.dir.join(&pending_name);
            let Some(waiting) = self.read(&pending_name, limit)? else { continue };
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

    /// A pending removal of `file` accepted: the expected file and its mark removed, when
    /// the case still does not produce it; dropped when there is nothing to remove or the
    /// case produces the expected file again; refused when it produces something else.
    fn accept_removal(
        &self,
        file: &str,
        produced: Option<&Vec<u8>>,
        dropped: &mut Vec<String>,
    ) -> Result<Option<FileReport>> {
        let removal_name = format!("{file}{PENDING_REMOVAL}");
        if self.read(&removal_name, SMALL_FILE)?.is_none() {
            return Ok(None);
        }
        let (removal, path) = (self.dir.join(&removal_name), self.dir.join(file));
        let expected = self.read(file, crate::source::max_input_bytes())?;
        match (produced, expected) {
            (None, Some(_)) => {
                writable(&path, self.real_dir)
                    .map_err(|why| Error::Failed(format!("{}: not removed: {why}", shown(&path))))?;
                std::fs::remove_file(&path).map_err(|e| Error::write(&path, e))?;
                self.drop_pending(&removal)?;
                Ok(Some(FileReport { file: file.to_string(), path: shown(&path), status: "removed", line: 1, diff: None }))
            }
            (p, e) if p.is_none() || p == e.as_ref() => {
                self.drop_pending(&removal)?;
                dropped.push(removal_name);
                Ok(None)
            }
            _ => Err(Error::Failed(format!(
                "{}: stale: the case produces this file again; nothing accepted (run check --pending again, then read the new file)",
                shown(&removal)
            ))),
        }
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
                && !is_output_or_pending(&outputs, f)
                && std::fs::symlink_metadata(self.dir.join(f)).is_ok_and(|m| m.is_file())
                && !f.starts_with('.')
        });
        ignored.sort();
        ignored
    }
}

/// What a pending removal holds: a note for whoever finds it.
fn removal_note(file: &str) -> String {
    format!(
        "The case no longer produces {file}. `rivumi-compact check --accept` removes {file}, and this file with it.\n"
    )
}

/// Whether a file name is a case's input (`input.jsonl`, `input.traj.gz`, …).
pub(super) fn is_input_name(f: &str) -> bool {
    INPUT_NAMES.contains(&crate::source::Compression::strip_suffix(f))
}

pub(super) fn exists(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

/// Reads a file of an untrusted folder: a regular file inside `real_dir` (a link only
/// to one), at most `limit` bytes; `None` when it is not there. A FIFO, a device, a
/// folder or a path out of DIR (absolute, through `..`, or through a link, its own or
/// a folder's on the way) is an error, never read (a FIFO would block, a link to
/// /dev/zero would fill memory, a path to ~/.ssh would leak).
pub(super) fn read_bounded(path: &Path, real_dir: &Path, limit: u64) -> Result<Option<Vec<u8>>> {
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
pub(super) fn dataset_output(source: &[u8], name: &Path, s: &Settings) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(source.len());
    // Bad lines are echoed into the output, which pins them.
    crate::dataset::compact_lines(source, name, s, &mut out)?;
    Ok(out)
}

/// The cases the patterns name (each pattern must name at least one), in order.
pub(super) fn select(dir: &Path, all: &[PathBuf], patterns: &[String]) -> Result<Vec<PathBuf>> {
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
pub(super) fn case_name(dir: &Path, case: &Path) -> String {
    let rel = case.strip_prefix(dir).unwrap_or(case).display().to_string();
    if rel.is_empty() {
        ".".into()
    } else {
        rel
    }
}

/// Whether a folder is inside DIR, whose real path is `real_dir` (links resolved).
pub(super) fn inside(folder: &Path, real_dir: &Path) -> bool {
    std::fs::canonicalize(folder).is_ok_and(|r| r.starts_with(real_dir))
}

/// Every case folder below `dir` (and `dir` itself, whose real path is `real_dir`),
/// sorted: a folder holding an input, `args`, `config.json`, an expected output or a
/// pending one (so a folder that lost its input is an error, never a silent skip). A
/// folder reached twice (a symbolic link loop) is walked once, with a warning; a link to
/// a folder out of DIR is a case that fails, never walked.
pub(super) fn find_cases(dir: &Path, real_dir: &Path) -> Result<Vec<PathBuf>> {
    let outputs = output_names();
    let is_case_file =
        |f: &str| is_input_name(f) || ["args", "config.json"].contains(&f) || is_output_or_pending(&outputs, f);
    let mut cases = std::collections::BTreeSet::new();
    crate::walk::walk(dir, &mut |met| {
        let e = match met {
            crate::walk::Met::Folder(e) | crate::walk::Met::Other(e) => e,
            // A link that points nowhere: a case's file all the same (the case fails
            // when it reads it).
            crate::walk::Met::Failed { path, broken_link: true, .. } => {
                if path.file_name().is_some_and(|f| is_case_file(&f.to_string_lossy())) {
                    cases.insert(path.parent().unwrap_or(dir).to_path_buf());
                }
                return Ok(true);
            }
            crate::walk::Met::Failed { path, error, .. } => return Err(Error::read(path, error)),
        };
        // A folder holding a case's file is a case.
        if e.depth() > 0 && is_case_file(&e.file_name().to_string_lossy()) {
            cases.insert(e.path().parent().unwrap_or(dir).to_path_buf());
        }
        // A link to a folder out of DIR is not walked: it stands as one case, which
        // fails (a case folder is untrusted; its links may point anywhere, even /).
        if e.depth() > 0 && e.file_type().is_dir() && !inside(e.path(), real_dir) {
            cases.insert(e.path().to_path_buf());
            return Ok(false);
        }
        Ok(true)
    })?;
    Ok(cases.into_iter().collect())
}
