//! `validate` over the inputs the arguments name: transcripts (imported ones in their
//! canonical form, reported at the input's lines where they are tracked, with the
//! agent's own file checked too) and dataset rows (each row in its canonical form). The
//! command line prints the [`Report`]; an input that cannot be read is in it too.

use super::Violation;
use crate::error::{Error, Exit, Result};
use crate::formats::InputFormat;
use crate::inputs::{self, Input};
use std::path::PathBuf;

/// What `validate` found over its inputs.
#[derive(Debug, Default)]
pub struct Report {
    pub violations: Vec<Violation>,
    /// Transcripts, or dataset rows, validated.
    pub transcripts: usize,
    /// Whether any input was a dataset (the count is then of rows).
    pub rows: bool,
    /// Inputs that could not be read, or broke off, in order (rows read before a break
    /// are in `violations`).
    pub errors: Vec<Error>,
}

impl Report {
    /// 3 when an input could not be read, 1 when something is broken, else 0.
    pub fn exit(&self) -> Exit {
        if !self.errors.is_empty() {
            Exit::BadInput
        } else if self.violations.is_empty() {
            Exit::Ok
        } else {
            Exit::Differences
        }
    }

    /// The violations as JSON (an array), or one line each for people and the count.
    pub fn text(&self, json: bool) -> String {
        if json {
            let mut s = serde_json::to_string_pretty(&self.violations).expect("json");
            s.push('\n');
            return s;
        }
        let escape = crate::ui::escape;
        let mut s: String = self
            .violations
            .iter()
            // A message names ids and values of any length: the text report keeps each
            // on a line a reader can take in; `--json` gives them whole.
            .map(|v| {
                format!("{}:{}: {}: {}\n", escape(&v.file), v.line, v.code, escape(&crate::error::elided(&v.message)))
            })
            .collect();
        // A dataset's rows are its non-blank lines, as `run` and `stats` count them.
        let what = if self.rows { "row(s)" } else { "transcript(s)" };
        s.push_str(&format!("{} violation(s) in {} {what}\n", self.violations.len(), self.transcripts));
        s
    }
}

/// Validates every input; `line` picks one row of a dataset (a usage error for a
/// transcript).
pub fn validate_inputs(inputs: &[Input], format: InputFormat, line: Option<u64>) -> Result<Report> {
    // Each input's dataset format, looked at once.
    let datasets: Vec<Option<InputFormat>> =
        inputs.iter().map(|input| inputs::dataset_format(format, std::slice::from_ref(input))).collect();
    // A usage error is found before any input is validated.
    if let Some((input, _)) = inputs.iter().zip(&datasets).find(|(_, d)| line.is_some() && d.is_none()) {
        return Err(Error::Usage(format!(
            "--line N picks a row of a dataset; {} is a transcript",
            crate::ui::escape(&input.path.display().to_string())
        )));
    }
    let mut report = Report::default();
    for (input, dataset) in inputs.iter().zip(datasets) {
        if let Some(dataset) = dataset {
            match dataset_rows(input, dataset, line) {
                Ok((found, rows, broken)) => {
                    report.violations.extend(found);
                    report.transcripts += rows;
                    report.rows = true;
                    report.errors.extend(broken);
                }
                Err(e) => report.errors.push(e),
            }
            continue;
        }
        report.transcripts += 1;
        match transcript(input, format) {
            Ok(found) => report.violations.extend(found),
            Err(e) => report.errors.push(e),
        }
    }
    Ok(report)
}

/// One transcript: its canonical form (at the input's lines where they are tracked; a
/// whole-file document, SWE-agent or OpenHands, names its canonical lines and says so)
/// and the agent's own file.
fn transcript(input: &Input, format: InputFormat) -> Result<Vec<Violation>> {
    let raw = input.read()?;
    let original = raw.to_vec();
    let canonical = crate::formats::import(raw, &input.path, format)?;
    let tracked = canonical.format == InputFormat::Rivumi || canonical.source_lines.is_some();
    let shown = if tracked {
        input.path.clone()
    } else {
        PathBuf::from(format!("{} (as canonical {})", input.path.display(), canonical.format))
    };
    // A canonical file that reads whole and gives no item is refused as `run` refuses
    // it (an imported one already was, by its import), and is validated as it was read;
    // one with bad lines gets them, line by line.
    let found = match canonical.format {
        InputFormat::Rivumi => match canonical.transcript(&shown) {
            Ok(t) => {
                canonical.accounting_of(&t, &shown)?;
                super::parsed(&t, &shown)
            }
            Err(_) => super::validate(&canonical.bytes, &shown),
        },
        _ => super::validate(&canonical.bytes, &shown),
    };
    let mut all = Vec::new();
    for mut v in found {
        if canonical.source_lines.is_some() {
            v.line = canonical.input_line(v.line);
            v.message = canonical.relocate_message(&v.message);
        }
        all.push(v);
    }
    let own = super::agent_file(&original, canonical.format, &shown);
    // One conflict, one violation: a uuid used by two records is also an item id used
    // twice in the canonical form.
    let at: std::collections::HashSet<usize> =
        own.iter().filter(|v| v.code == "duplicate_uuid").map(|v| v.line).collect();
    all.retain(|v| !(v.code == "duplicate_id" && v.file == shown.display().to_string() && at.contains(&v.line)));
    all.extend(own);
    Ok(all)
}

/// Every row of a dataset (or the one `--line` names), each validated in its canonical
/// form; a violation is reported at the row's line, naming the message it is about.
/// An input that cannot be opened, or breaks off, gives its error beside the rows read
/// before it.
fn dataset_rows(
    input: &Input,
    format: InputFormat,
    only: Option<u64>,
) -> Result<(Vec<Violation>, usize, Option<Error>)> {
    let shown = input.path.display().to_string();
    let mut out = Vec::new();
    let mut found = false;
    let mut rows = 0;
    let lines = crate::dataset::for_each_row(input, only, |n, text| {
        found = true;
        rows += 1;
        let bad = |message: String| Violation { file: shown.clone(), line: n, code: "bad_line", message };
        let canonical = match text {
            Ok(text) => crate::dataset::row_canonical(text, format),
            Err(bad_text) => Err(bad_text),
        };
        match canonical {
            Err((column, m)) => out.push(bad(format!("column {column}: {m}"))),
            Ok(c) => {
                for v in super::validate(&c, std::path::Path::new(&shown)) {
                    let message = format!("message {}: {}", v.line.saturating_sub(1), v.message);
                    out.push(Violation { line: n, message, ..v });
                }
            }
        }
        Ok(())
    });
    let lines = match lines {
        Ok(lines) => lines,
        Err(e) => return Ok((out, rows, Some(e))),
    };
    if let (Some(k), false) = (only, found) {
        return Err(Error::bad_input(&input.path, format!("--line {k}: there is no row there ({lines} lines)")));
    }
    Ok((out, rows, None))
}
