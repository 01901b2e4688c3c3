//! `check`: golden-file regression. Every case folder (one holding `input.jsonl`, an
//! optional `config.json` and, as an extension, an optional `args` file of flags, one
//! per line) is run again and its outputs compared with the expected files.

use crate::engine::{self, Settings};
use crate::error::{Error, Exit, Result};
use crate::output::{self, Output};
use similar::{ChangeTag, TextDiff};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Files of a case folder that are inputs, not expected outputs.
const INPUTS: &[&str] = &["input.jsonl", "config.json", "args"];

/// How `check` runs and shows its findings.
pub struct CheckOptions {
    pub bless: bool,
    pub color: bool,
    /// Report as one JSON document instead of text.
    pub json: bool,
    /// Only the cases whose name (path below DIR) matches one of these globs; empty: all.
    pub cases: Vec<String>,
    /// Run hooks and summarizers that a case's `args` or `config.json` names. Off by
    /// default: case folders come with pull requests, and a test run must not execute
    /// what a contributor wrote into them.
    pub allow_case_commands: bool,
}

/// What `check` found in one case.
#[derive(Debug, serde::Serialize)]
pub struct CaseReport {
    pub name: String,
    pub path: String,
    /// `ok`, `differ`, `blessed` or `error`.
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub files: Vec<FileReport>,
    /// Files in the case folder that are neither inputs nor output names (ignored).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ignored: Vec<String>,
}

/// One expected file that is not what the run produces (or was blessed).
#[derive(Debug, serde::Serialize)]
pub struct FileReport {
    pub file: String,
    pub path: String,
    /// `changed`, `missing` (the run produces it, no expected file), `extra` (an
    /// expected file the run no longer produces); with `--bless`, what was written.
    pub status: &'static str,
    /// The unified diff (`a/` expected, `b/` actual), for a changed file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
}

/// Runs the cases under `dir` (all, or those `opts.cases` names); writes findings to
/// `w`; returns the exit code.
pub fn check(
    dir: &Path,
    opts: &CheckOptions,
    parse_args: &dyn Fn(&[String]) -> Result<Settings>,
    w: &mut dyn Write,
) -> Result<Exit> {
    let all = find_cases(dir)?;
    let real_dir = std::fs::canonicalize(dir).map_err(|e| Error::read(dir, e))?;
    if all.is_empty() {
        return Err(Error::bad_input(dir, "no case folders (a folder holding input.jsonl) below this directory"));
    }
    let cases = select(dir, &all, &opts.cases)?;
    let mut reports = Vec::with_capacity(cases.len());
    for case in &cases {
        let name = case_name(dir, case);
        let report = match run_case(case, parse_args, opts.allow_case_commands)
            .and_then(|actual| compare(case, &real_dir, &actual, opts))
        {
            Ok((files, ignored)) => {
                let status = match (files.is_empty(), opts.bless) {
                    (true, _) => "ok",
                    (false, true) => "blessed",
                    (false, false) => "differ",
                };
                CaseReport { name, path: shown(case), status, error: None, files, ignored }
            }
            Err(e) => CaseReport {
                name,
                path: shown(case),
                status: "error",
                error: Some(e.to_string()),
                files: vec![],
                ignored: vec![],
            },
        };
        if !opts.json {
            write_case_text(w, &report, opts.color);
        }
        reports.push(report);
    }
    let count = |s: &str| reports.iter().filter(|r| r.status == s).count();
    let (differing, blessed, unreadable) = (count("differ"), count("blessed"), count("error"));
    if opts.json {
        let doc = serde_json::json!({
            "dir": shown(dir), "cases": reports, "total": reports.len(),
            "differ": differing, "blessed": blessed, "errors": unreadable,
        });
        let _ = writeln!(w, "{}", serde_json::to_string_pretty(&doc).expect("a report serializes"));
    } else {
        let (n, verb) = if opts.bless { (blessed, "blessed") } else { (differing, "differ") };
        let _ = writeln!(
            w,
            "{} case(s), {n} {verb}{}",
            reports.len(),
            if unreadable > 0 { format!(", {unreadable} unreadable") } else { String::new() }
        );
        if differing > 0 {
            let mut again =
                vec!["rivumi-compact".to_string(), "check".into(), "--bless".into(), shell_word(&shown(dir))];
            again.extend(opts.cases.iter().map(|c| shell_word(c)));
            let _ = writeln!(w, "to accept the actual outputs as expected, run: {}", again.join(" "));
        }
    }
    Ok(if unreadable > 0 {
        Exit::BadInput
    } else if differing > 0 {
        Exit::Differences
    } else {
        Exit::Ok
    })
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
            (blessed, _) => {
                let _ = writeln!(w, "{name}/{file}: blessed ({blessed})");
            }
        }
    }
    for f in &r.ignored {
        let _ = writeln!(w, "{name}/{}: note: not an output name; ignored", crate::ui::escape(f));
    }
}

/// Every folder below `dir` (and `dir` itself) that holds `input.jsonl`, sorted. A
/// folder reached twice (a symbolic link loop) is walked once, with a warning.
fn find_cases(dir: &Path) -> Result<Vec<PathBuf>> {
    use std::os::unix::fs::MetadataExt;
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
        if d.join("input.jsonl").is_file() {
            out.push(d.clone());
        }
        let entries = std::fs::read_dir(&d).map_err(|e| Error::read(&d, e))?;
        let mut subdirs: Vec<PathBuf> =
            entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_dir()).collect();
        subdirs.sort();
        stack.extend(subdirs.into_iter().rev());
    }
    out.sort();
    Ok(out)
}

/// Runs one case in memory: the outputs it produces, by file name.
fn run_case(
    case: &Path,
    parse_args: &dyn Fn(&[String]) -> Result<Settings>,
    allow_commands: bool,
) -> Result<Vec<(&'static str, Vec<u8>)>> {
    let mut args: Vec<String> = Vec::new();
    if case.join("config.json").is_file() {
        args.extend(["--config".to_string(), case.join("config.json").display().to_string()]);
    }
    let args_file = case.join("args");
    let settings = match std::fs::read_to_string(&args_file) {
        Ok(text) => {
            let groups = args_lines(&text);
            // Each flag (with its value) alone first, so that an error names its line.
            for (line, words) in &groups {
                parse_args(words).map_err(|e| Error::bad_line(&args_file, *line, 1, e.to_string()))?;
            }
            args.extend(groups.into_iter().flat_map(|(_, words)| words));
            parse_args(&args).map_err(|e| Error::bad_input(&args_file, e.to_string()))?
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => parse_args(&args)?,
        Err(e) => return Err(Error::read(&args_file, e)),
    };
    let commands = settings.commands();
    if !commands.is_empty() && !allow_commands {
        return Err(Error::bad_input(
            case,
            format!(
                "not run: the case names a command to run ({}); a case folder is untrusted, \
                 pass --allow-case-commands to run it",
                commands.join(", ")
            ),
        ));
    }
    let input = case.join("input.jsonl");
    let raw = std::fs::read(&input).map_err(|e| Error::read(&input, e))?;
    let canonical = crate::formats::import(raw.into(), Path::new("input.jsonl"), settings.input_format)?;
    let mut s = settings.clone();
    s.input_format = canonical.format;
    // Paths in decisions and hook payloads are relative to the case, never absolute.
    let done = engine::process(&canonical.bytes, Path::new("input.jsonl"), &s)?;
    if let Some(e) = done.refusal() {
        return Err(e);
    }
    let mut out = Vec::new();
    for o in output::produced(&done) {
        let mut buf = Vec::new();
        o.write(&mut buf, &done).map_err(|e| Error::write(Path::new(o.file_name()), e))?;
        out.push((o.file_name(), buf));
    }
    Ok(out)
}

/// The flags of an `args` file, grouped by the line their flag is on: one flag per
/// line, with its value on the same line (`--max-total-tokens 20000`, the rest of the
/// line, spaces included) or alone on the next lines (the older layout). Blank lines and
/// lines starting with `#` are skipped.
fn args_lines(text: &str) -> Vec<(usize, Vec<String>)> {
    let mut groups: Vec<(usize, Vec<String>)> = Vec::new();
    for (k, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
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
    groups
}

/// Compares (or blesses) one case: the files that differ (or were blessed), and the
/// files of the folder that are not output names.
fn compare(
    case: &Path,
    real_dir: &Path,
    actual: &[(&'static str, Vec<u8>)],
    opts: &CheckOptions,
) -> Result<(Vec<FileReport>, Vec<String>)> {
    let mut files = Vec::new();
    for o in Output::ALL {
        let file = o.file_name();
        let path = case.join(file);
        let expected = match std::fs::read(&path) {
            Ok(bytes) => Some(bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(Error::read(&path, e)),
        };
        let produced = actual.iter().find(|(f, _)| *f == file).map(|(_, b)| b);
        if expected.as_ref() == produced {
            continue;
        }
        let report = |status, diff| FileReport { file: file.to_string(), path: shown(&path), status, diff };
        if opts.bless {
            blessable(&path, real_dir).map_err(|why| Error::Failed(format!("{file}: not blessed: {why}")))?;
            bless(&path, produced).map_err(|e| Error::write(&path, e))?;
            files.push(report(
                match (&expected, produced) {
                    (None, _) => "new",
                    (_, None) => "removed",
                    _ => "changed",
                },
                None,
            ));
            continue;
        }
        files.push(match (expected, produced) {
            (None, _) => report("missing", None),
            (_, None) => report("extra", None),
            (Some(e), Some(a)) => report("changed", Some(unified_diff(&shown(&path), &e, a))),
        });
    }
    let mut ignored: Vec<String> = std::fs::read_dir(case)
        .map(|rd| {
            rd.filter_map(std::result::Result::ok).map(|e| e.file_name().to_string_lossy().into_owned()).collect()
        })
        .unwrap_or_default();
    ignored.retain(|f| {
        !INPUTS.contains(&f.as_str())
            && !Output::ALL.iter().any(|o| o.file_name() == f.as_str())
            && case.join(f).is_file()
            && !f.starts_with('.')
    });
    ignored.sort();
    Ok((files, ignored))
}

/// `--bless` writes only real files inside DIR: never through a symbolic link (the case
/// folder, a folder above it, or the expected file itself).
fn blessable(path: &Path, real_dir: &Path) -> std::result::Result<(), &'static str> {
    let folder = path.parent().and_then(|p| std::fs::canonicalize(p).ok());
    if !folder.is_some_and(|f| f.starts_with(real_dir)) {
        return Err("the case folder is a symbolic link out of the checked folder");
    }
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err("the expected file is a symbolic link");
    }
    Ok(())
}

fn bless(path: &Path, produced: Option<&Vec<u8>>) -> std::io::Result<()> {
    match produced {
        Some(bytes) => output::write_atomic(path, |w| w.write_all(bytes)),
        None => std::fs::remove_file(path),
    }
}

/// A unified diff, expected (`a/PATH`) → actual (`b/PATH`), as `git diff` heads it so a
/// CI log can link the path; control characters escaped.
fn unified_diff(path: &str, expected: &[u8], actual: &[u8]) -> String {
    use std::fmt::Write as _;
    let old = String::from_utf8_lossy(expected);
    let new = String::from_utf8_lossy(actual);
    let diff = TextDiff::from_lines(old.as_ref(), new.as_ref());
    let mut out = format!("--- a/{path}\n+++ b/{path}\n");
    for group in diff.grouped_ops(3) {
        let first = &group[0];
        let last = &group[group.len() - 1];
        let (o, n) = (first.old_range().start, first.new_range().start);
        let (oe, ne) = (last.old_range().end, last.new_range().end);
        let _ = writeln!(out, "@@ -{},{} +{},{} @@", o + 1, oe - o, n + 1, ne - n);
        for op in &group {
            for change in diff.iter_changes(op) {
                let sign = match change.tag() {
                    ChangeTag::Delete => '-',
                    ChangeTag::Insert => '+',
                    ChangeTag::Equal => ' ',
                };
                let text = crate::render::escape_controls(change.value().trim_end_matches('\n'));
                let _ = writeln!(out, "{sign}{text}");
            }
        }
    }
    out
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
