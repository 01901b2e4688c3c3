//! Dataset mode (`--input-format openai`): a streaming map step. Lines are read in
//! bounded chunks, compacted in parallel, and written back in order, so memory does
//! not grow with the number of lines.

use super::inputs::Input;
use crate::engine::Settings;
use crate::error::{Error, Exit, Result};
use crate::formats::openai::{process_line, LineOutcome};
use rayon::prelude::*;
use std::io::{self, BufRead, BufReader, Read, Write};
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
pub fn run(inputs: &[Input], settings: &Settings, out_dir: Option<&Path>, jobs: usize) -> Result<Exit> {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(jobs).build().expect("a thread pool");
    let mut total = Counts::default();
    for input in inputs {
        let reader: Box<dyn Read> = if input.is_stdin() {
            Box::new(io::stdin())
        } else {
            Box::new(
                std::fs::File::open(&input.path)
                    .map_err(|e| Error::bad_input(&input.path, format!("cannot read: {e}")))?,
            )
        };
        let counts = match out_dir {
            None => {
                let stdout = io::stdout();
                let mut w = io::BufWriter::with_capacity(1 << 20, stdout.lock());
                let streamed = stream(reader, &mut w, &input.path, settings, &pool)
                    .and_then(|c| w.flush().map(|_| c).map_err(Stop::Write));
                match streamed {
                    Ok(c) => c,
                    // A reader that closed early (`head`) is not an error.
                    Err(Stop::Write(e)) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(Exit::Ok),
                    Err(Stop::Write(e)) => return Err(Error::Failed(format!("cannot write to standard output: {e}"))),
                    Err(Stop::Input(e)) => return Err(e),
                }
            }
            Some(dir) => {
                let path = dir.join(&input.out_name).join("transcript.jsonl");
                let (mut counts, mut input_error) = (None, None);
                let written =
                    crate::output::write_atomic(&path, |w| match stream(reader, w, &input.path, settings, &pool) {
                        Ok(c) => {
                            counts = Some(c);
                            Ok(())
                        }
                        Err(Stop::Write(e)) => Err(e),
                        Err(Stop::Input(e)) => {
                            input_error = Some(e);
                            Err(io::Error::other("stopped")) // abandons the temporary file
                        }
                    });
                if let Some(e) = input_error {
                    return Err(e);
                }
                written.map_err(|e| Error::Failed(format!("{}: cannot write: {e}", path.display())))?;
                counts.unwrap_or_default()
            }
        };
        total.lines += counts.lines;
        total.changed += counts.changed;
        total.bad += counts.bad;
    }
    eprintln!(
        "rivumi-compact: {} line(s): {} compacted, {} unchanged, {} bad",
        total.lines,
        total.changed,
        total.lines - total.changed - total.bad,
        total.bad
    );
    Ok(if total.bad > 0 { Exit::Failed } else { Exit::Ok })
}

/// Why streaming stopped: the output could not be written, or the input (or a user's
/// hook) failed. Kept apart so a closed stdout is recognised by its kind.
enum Stop {
    Write(io::Error),
    Input(Error),
}

fn stream(
    reader: Box<dyn Read>,
    w: &mut dyn Write,
    file: &Path,
    settings: &Settings,
    pool: &rayon::ThreadPool,
) -> std::result::Result<Counts, Stop> {
    let mut reader = BufReader::with_capacity(1 << 20, reader);
    let mut counts = Counts::default();
    let mut line_no = 0;
    loop {
        let mut chunk: Vec<(usize, Vec<u8>)> = Vec::with_capacity(CHUNK);
        while chunk.len() < CHUNK {
            let mut raw = Vec::new();
            let read = reader.read_until(b'\n', &mut raw);
            if read.map_err(|e| Stop::Input(Error::bad_input(file, format!("cannot read: {e}"))))? == 0 {
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
                    eprintln!("rivumi-compact: error: {}", crate::render::escape_controls(&message));
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
