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
    /// Run hooks and summarizers that a case's `args` or `config.json` names. Off by
    /// default: case folders come with pull requests, and a test run must not execute
    /// what a contributor wrote into them.
    pub allow_case_commands: bool,
}

/// Runs every case under `dir`; writes findings to `w`; returns the exit code.
pub fn check(
    dir: &Path,
    opts: &CheckOptions,
    parse_args: &dyn Fn(&[String]) -> Result<Settings>,
    w: &mut dyn Write,
) -> Result<Exit> {
    let cases = find_cases(dir)?;
    let real_dir = std::fs::canonicalize(dir).map_err(|e| Error::read(dir, e))?;
    if cases.is_empty() {
        return Err(Error::bad_input(dir, "no case folders (a folder holding input.jsonl) below this directory"));
    }
    let (mut differing, mut unreadable) = (0, 0);
    for case in &cases {
        let name = crate::ui::escape(&case.strip_prefix(dir).unwrap_or(case).display().to_string());
        match run_case(case, parse_args, opts.allow_case_commands) {
            Err(e) => {
                unreadable += 1;
                let _ = writeln!(w, "{name}: error: {}", crate::ui::escape(&e.to_string()));
            }
            Ok(actual) => match compare(case, &real_dir, &name, &actual, opts, w) {
                Ok(diffs) => differing += usize::from(diffs > 0),
                Err(e) => {
                    unreadable += 1;
                    let _ = writeln!(w, "{name}: error: {}", crate::ui::escape(&e.to_string()));
                }
            },
        }
    }
    let verb = if opts.bless { "blessed" } else { "differ" };
    let _ = writeln!(
        w,
        "{} case(s), {differing} {verb}{}",
        cases.len(),
        if unreadable > 0 { format!(", {unreadable} unreadable") } else { String::new() }
    );
    Ok(if unreadable > 0 {
        Exit::BadInput
    } else if differing > 0 && !opts.bless {
        Exit::Differences
    } else {
        Exit::Ok
    })
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
    match std::fs::read_to_string(&args_file) {
        Ok(extra) => args.extend(extra.lines().map(str::trim).filter(|l| !l.is_empty()).map(str::to_string)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::read(&args_file, e)),
    }
    let settings = parse_args(&args)?;
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

/// Compares (or blesses) one case; returns how many files differ.
fn compare(
    case: &Path,
    real_dir: &Path,
    name: &str,
    actual: &[(&'static str, Vec<u8>)],
    opts: &CheckOptions,
    w: &mut dyn Write,
) -> Result<usize> {
    let mut diffs = 0;
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
        diffs += 1;
        if opts.bless {
            blessable(&path, real_dir).map_err(|why| Error::Failed(format!("{file}: not blessed: {why}")))?;
            bless(&path, produced).map_err(|e| Error::write(&path, e))?;
            let what = match (&expected, produced) {
                (None, _) => "new",
                (_, None) => "removed",
                _ => "changed",
            };
            let _ = writeln!(w, "{name}/{file}: blessed ({what})");
            continue;
        }
        match (expected, produced) {
            (None, Some(_)) => {
                let _ = writeln!(w, "{name}/{file}: missing expected file (the run produces it)");
            }
            (Some(_), None) => {
                let _ = writeln!(w, "{name}/{file}: extra expected file (the run no longer produces it)");
            }
            (Some(e), Some(a)) => print_diff(w, &format!("{name}/{file}"), &e, a, opts.color),
            (None, None) => {}
        }
    }
    let extra: Vec<String> = std::fs::read_dir(case)
        .map(|rd| {
            rd.filter_map(std::result::Result::ok).map(|e| e.file_name().to_string_lossy().into_owned()).collect()
        })
        .unwrap_or_default();
    for f in extra
        .iter()
        .filter(|f| !INPUTS.contains(&f.as_str()) && !Output::ALL.iter().any(|o| o.file_name() == f.as_str()))
    {
        if case.join(f).is_file() && !f.starts_with('.') {
            let _ = writeln!(w, "{name}/{f}: note: not an output name; ignored");
        }
    }
    Ok(diffs)
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

/// A unified diff (expected → actual), coloured for a terminal.
fn print_diff(w: &mut dyn Write, label: &str, expected: &[u8], actual: &[u8], color: bool) {
    let old = String::from_utf8_lossy(expected);
    let new = String::from_utf8_lossy(actual);
    let diff = TextDiff::from_lines(old.as_ref(), new.as_ref());
    let _ = writeln!(w, "--- {label} (expected)\n+++ {label} (actual)");
    for group in diff.grouped_ops(3) {
        let first = &group[0];
        let last = &group[group.len() - 1];
        let (o, n) = (first.old_range().start, first.new_range().start);
        let (oe, ne) = (last.old_range().end, last.new_range().end);
        let _ = writeln!(w, "@@ -{},{} +{},{} @@", o + 1, oe - o, n + 1, ne - n);
        for op in &group {
            for change in diff.iter_changes(op) {
                let (sign, code) = match change.tag() {
                    ChangeTag::Delete => ("-", "\x1b[31m"),
                    ChangeTag::Insert => ("+", "\x1b[32m"),
                    ChangeTag::Equal => (" ", ""),
                };
                let text = crate::render::escape_controls(change.value().trim_end_matches('\n'));
                if color && !code.is_empty() {
                    let _ = writeln!(w, "{code}{sign}{text}\x1b[0m");
                } else {
                    let _ = writeln!(w, "{sign}{text}");
                }
            }
        }
    }
}
