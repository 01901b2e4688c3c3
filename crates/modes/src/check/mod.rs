//! `check`: golden-file regression, as pleasant as `cargo insta`. Every case folder
//! under DIR is run again and its outputs compared with the expected files; a
//! difference is shown as a unified diff whose changed JSONL lines have their changed
//! fields marked; `--pending` writes what differs beside it as `NAME.new` for review (and
//! `NAME.removed` beside an expected file the run no longer produces), `--accept` turns
//! pending files into expected ones (and removes what is marked removed), `--bless`
//! accepts everything.
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
//!
//! The parts: this file (the options, the reports, the loop over the cases), `run.rs`
//! (finding and running one case), `review.rs` (accepting pending files), `report.rs`
//! (text, GitHub annotations, JUnit), `diff.rs` (the diffs), `args.rs` (a case's `args`).

mod args;
mod diff;
mod report;
mod review;
mod run;

pub use args::args_lines;

use crate::engine::Settings;
use crate::error::{Error, Exit, Result};
use report::{shown, write_case_text, write_github, write_junit, write_totals};
use review::accept_files;
use run::{case_name, find_cases, select, Case};
use std::io::Write;
use std::path::{Path, PathBuf};

/// What a pending file is called: the expected file's name and this.
pub const PENDING: &str = ".new";

/// What a pending removal is called: the name of an expected file the run no longer
/// produces, and this. `--accept` removes the expected file and the marker together.
pub const PENDING_REMOVAL: &str = ".removed";

/// Whether a file name is an output name, or a pending output or removal of one.
pub(super) fn is_output_or_pending(outputs: &[&str], f: &str) -> bool {
    outputs.iter().any(|o| *o == f || f.strip_suffix(PENDING) == Some(o) || f.strip_suffix(PENDING_REMOVAL) == Some(o))
}

/// What `check` does with what it finds.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Mode {
    /// Compare, report, exit 1 on a difference (or a pending file left to review).
    #[default]
    Check,
    /// Compare, and write each actual output that differs beside it as `NAME.new` (an
    /// expected file the run no longer produces: `NAME.removed`).
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
    /// Pending `.new` and `.removed` files dropped as stale: what the case produces no
    /// longer matches them (it produces the expected file again, or something else since).
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
    /// review), `pending_removal` (a `.removed` file does); with `--pending`, `--accept`
    /// or `--bless`, what was written (`removed`: an expected file the run no longer
    /// produces was removed).
    pub status: &'static str,
    /// The 1-based line of the expected file where the first difference is.
    pub line: usize,
    /// The unified diff (`a/` expected, `b/` actual), for a changed file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
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
        Mode::Check if files.iter().all(|f| matches!(f.status, "pending" | "pending_removal")) => "pending",
        _ => "differ",
    }
}

/// What a case produced: each output's file name and bytes.
type Outputs = Vec<(&'static str, Vec<u8>)>;
