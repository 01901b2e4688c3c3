//! `validate`: every broken invariant of the inputs, with file and line.

use super::common::{for_each_row, stdout_write};
use super::ValidateArgs;
use crate::error::{Exit, Result};
use crate::formats::InputFormat;
use crate::inputs;
use crate::ui;
use crate::validate::Violation;
use std::path::PathBuf;

pub(super) fn validate(args: ValidateArgs) -> Result<Exit> {
    let inputs = inputs::expand(&args.inputs, args.input_format, None)?;
    let mut all = Vec::new();
    let mut unreadable = false;
    let mut transcripts = 0;
    let mut rows_seen = false;
    for input in &inputs {
        let dataset = inputs::dataset_format(args.input_format, std::slice::from_ref(input));
        if let Some(format) = dataset {
            match dataset_rows(input, format, args.line) {
                Ok((found, rows, broken)) => {
                    all.extend(found);
                    transcripts += rows;
                    rows_seen = true;
                    // The rows read before the input broke off are reported with it.
                    if let Some(e) = broken {
                        unreadable = true;
                        ui::error(&e.to_string());
                    }
                }
                Err(e) => {
                    unreadable = true;
                    ui::error(&e.to_string());
                }
            }
            continue;
        }
        if args.line.is_some() {
            return Err(crate::error::Error::Usage(format!(
                "--line N picks a row of a dataset; {} is a transcript",
                ui::escape(&input.path.display().to_string())
            )));
        }
        transcripts += 1;
        let read = input.read().and_then(|raw| {
            let original = raw.to_vec();
            crate::formats::import(raw, &input.path, args.input_format).map(|c| (c, original))
        });
        match read {
            Ok((canonical, raw)) => {
                // Imported files are validated in their canonical form: say so, since
                // the line numbers are those of that form.
                // Imported files are validated in their canonical form, reported at the
                // input's lines where they are tracked; a whole-file document (SWE-agent,
                // OpenHands) names its canonical lines, and says so.
                let tracked = canonical.format == InputFormat::Rivumi || canonical.source_lines.is_some();
                let shown = if tracked {
                    input.path.clone()
                } else {
                    PathBuf::from(format!("{} (as canonical {})", input.path.display(), canonical.format))
                };
                for mut v in crate::validate::validate(&canonical.bytes, &shown) {
                    if canonical.source_lines.is_some() {
                        v.line = canonical.input_line(v.line);
                        v.message = canonical.relocate_message(&v.message);
                    }
                    all.push(v);
                }
                let own = crate::validate::agent_file(&raw, canonical.format, &shown);
                // One conflict, one violation: a uuid used by two records is also an
                // item id used twice in the canonical form.
                let at: std::collections::HashSet<usize> =
                    own.iter().filter(|v| v.code == "duplicate_uuid").map(|v| v.line).collect();
                all.retain(|v| {
                    !(v.code == "duplicate_id" && v.file == shown.display().to_string() && at.contains(&v.line))
                });
                all.extend(own);
            }
            Err(e) => {
                unreadable = true;
                ui::error(&e.to_string());
            }
        }
    }
    let text = if args.json {
        let mut s = serde_json::to_string_pretty(&all).expect("json");
        s.push('\n');
        s
    } else {
        let mut s: String = all
            .iter()
            .map(|v| format!("{}:{}: {}: {}\n", ui::escape(&v.file), v.line, v.code, ui::escape(&v.message)))
            .collect();
        // A dataset's rows are its non-blank lines, as `run` and `stats` count them.
        let what = if rows_seen { "row(s)" } else { "transcript(s)" };
        s.push_str(&format!("{} violation(s) in {transcripts} {what}\n", all.len()));
        s
    };
    stdout_write(|w| w.write_all(text.as_bytes()))?;
    Ok(if unreadable {
        Exit::BadInput
    } else if all.is_empty() {
        Exit::Ok
    } else {
        Exit::Differences
    })
}

/// Every row of a dataset (or the one `--line` names), each validated in its canonical
/// form; a violation is reported at the row's line, naming the message it is about.
/// An input that cannot be opened, or breaks off, gives its error beside the rows read
/// before it.
fn dataset_rows(
    input: &inputs::Input,
    format: InputFormat,
    only: Option<u64>,
) -> Result<(Vec<Violation>, usize, Option<crate::error::Error>)> {
    let shown = input.path.display().to_string();
    let mut out = Vec::new();
    let mut found = false;
    let mut rows = 0;
    let lines = for_each_row(input, only, |n, text| {
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
                for v in crate::validate::validate(&c, std::path::Path::new(&shown)) {
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
        return Err(crate::error::Error::bad_input(
            &input.path,
            format!("--line {k}: there is no row there ({lines} lines)"),
        ));
    }
    Ok((out, rows, None))
}
