//! Dataset mode (`--input-format openai`): a streaming map step. Lines are read in
//! bounded chunks, compacted in parallel, and written back in order, so memory does
//! not grow with the number of lines.

use super::inputs::Input;
use crate::dataset::{process_line, LineOutcome};
use crate::engine::Settings;
use crate::error::{Error, Exit, Result};
use crate::output::OutDir;
use rayon::prelude::*;
use std::io::{self, BufRead, Write};
use std::path::Path;

const CHUNK: usize = 1024;

/// Counts for the closing line.
#[derive(Default)]
struct Counts {
    lines: usize,
    changed: usize,
    bad: usize,
}

/// Runs dataset mode over the inputs: stdout for one input, else `DIR/<name>/transcript.jsonl`.
pub fn run(inputs: &[Input], settings: &Settings, out_dir: Option<&OutDir>, jobs: usize) -> Exit {
    crate::signals::install();
    let pool = crate::batch::pool(jobs);
    let mut total = Counts::default();
    let mut failed = Vec::new();
    for input in inputs {
        match one(input, settings, out_dir, &pool) {
            Ok(Some(counts)) => {
                total.lines += counts.lines;
                total.changed += counts.changed;
                total.bad += counts.bad;
            }
            // A reader that closed stdout early (`head`) is not an error.
            Ok(None) => return Exit::Ok,
            Err(e) => {
                crate::ui::error(&e.to_string());
                failed.push(e.exit());
            }
        }
    }
    crate::ui::note(&format!(
        "{} line(s): {} compacted, {} unchanged, {} bad",
        total.lines,
        total.changed,
        total.lines - total.changed - total.bad,
        total.bad
    ));
    match failed[..] {
        // A single input keeps its own exit code (3 for bad input).
        [code] if inputs.len() == 1 => code,
        [] if total.bad == 0 => Exit::Ok,
        _ => Exit::Failed,
    }
}

/// One dataset file: its counts, or `None` when stdout was closed by its reader.
fn one(
    input: &Input,
    settings: &Settings,
    out_dir: Option<&OutDir>,
    pool: &rayon::ThreadPool,
) -> Result<Option<Counts>> {
    let reader = input.open()?.into_reader();
    let Some(out) = out_dir else {
        let stdout = io::stdout();
        let mut w = io::BufWriter::with_capacity(1 << 20, stdout.lock());
        let streamed = stream(reader, &mut w, &input.path, settings, pool)
            .and_then(|c| w.flush().map(|()| c).map_err(Stop::Write));
        return match streamed {
            Ok(c) => Ok(Some(c)),
            Err(Stop::Write(e)) if e.kind() == io::ErrorKind::BrokenPipe => Ok(None),
            Err(Stop::Write(e)) => Err(Error::stdout(e)),
            Err(Stop::Input(e)) => Err(e),
        };
    };
    let (mut counts, mut input_error, mut reader) = (None, None, Some(reader));
    let written = out.write_folder(&input.out_name, &["transcript.jsonl"], |_, w| {
        match stream(reader.take().expect("one file"), w, &input.path, settings, pool) {
            Ok(c) => {
                counts = Some(c);
                Ok(())
            }
            Err(Stop::Write(e)) => Err(e),
            Err(Stop::Input(e)) => {
                input_error = Some(e);
                Err(io::Error::other("stopped")) // abandons the temporary file
            }
        }
    });
    if let Some(e) = input_error {
        return Err(e);
    }
    written?;
    Ok(Some(counts.unwrap_or_default()))
}

/// Why streaming stopped: the output could not be written, or the input (or a user's
/// hook) failed. Kept apart so a closed stdout is recognised by its kind.
enum Stop {
    Write(io::Error),
    Input(Error),
}

fn stream(
    mut reader: impl BufRead,
    w: &mut dyn Write,
    file: &Path,
    settings: &Settings,
    pool: &rayon::ThreadPool,
) -> std::result::Result<Counts, Stop> {
    let limit = crate::source::max_input_bytes();
    let mut counts = Counts::default();
    let mut line_no = 0;
    loop {
        let mut chunk: Vec<(usize, Vec<u8>)> = Vec::with_capacity(CHUNK);
        while chunk.len() < CHUNK {
            let mut raw = Vec::new();
            let read = crate::source::read_line_bounded(&mut reader, &mut raw, limit);
            let read =
                read.map_err(|e| Stop::Input(Error::bad_line(file, line_no + 1, 1, format!("cannot read: {e}"))));
            if read? == 0 {
                break;
            }
            line_no += 1;
            chunk.push((line_no, raw));
        }
        if chunk.is_empty() {
            return Ok(counts);
        }
        let outcomes: Vec<Result<LineOutcome>> = pool.install(|| {
            chunk
                .par_iter()
                .map(|(n, raw)| {
                    let body = strip_terminator(raw);
                    match std::str::from_utf8(body) {
                        Ok(text) => process_line(text, file, *n, settings),
                        Err(e) => Ok(LineOutcome::Bad(format!(
                            "{}:{n}:{}: invalid UTF-8",
                            file.display(),
                            e.valid_up_to() + 1
                        ))),
                    }
                })
                .collect()
        });
        for ((_, raw), outcome) in chunk.iter().zip(outcomes) {
            counts.lines += 1;
            match outcome.map_err(Stop::Input)? {
                LineOutcome::Changed(line) => {
                    counts.changed += 1;
                    w.write_all(line.as_bytes()).map_err(Stop::Write)?;
                    w.write_all(&raw[strip_terminator(raw).len()..]).map_err(Stop::Write)?;
                }
                LineOutcome::Unchanged => w.write_all(raw).map_err(Stop::Write)?,
                LineOutcome::Bad(message) => {
                    counts.bad += 1;
                    crate::ui::error(&message);
                    w.write_all(raw).map_err(Stop::Write)?;
                }
            }
        }
    }
}

fn strip_terminator(raw: &[u8]) -> &[u8] {
    let raw = raw.strip_suffix(b"\n").unwrap_or(raw);
    raw.strip_suffix(b"\r").unwrap_or(raw)
}
