//! `run` over transcripts (dataset files are [`crate::dataset`]'s): what is done with each
//! processed input — write-back's check, the refusal, the out-dir, what goes to stdout —
//! and a batch of inputs processed in parallel and handed over in input order as each
//! finishes, counted in a [`BatchSummary`]. The caller prints.

use crate::engine::{process_input, Processed, Settings};
use crate::error::{Error, Result};
use crate::inputs::Input;
use crate::output::{OutDir, Output};
use crate::report::BatchSummary;
use std::io;
use std::path::Path;

/// What a run does with each transcript.
#[derive(Clone, Copy)]
pub struct RunOptions<'o> {
    /// Decide only: nothing is written back or into the out-dir.
    pub dry_run: bool,
    /// What goes to stdout for each input; none for an out-dir batch that prints nothing.
    pub emit: Option<Output>,
    /// The out-dir each input's outputs are written into.
    pub out: Option<&'o OutDir>,
    /// Threads for the batch (a single input parses in pieces on as many).
    pub jobs: usize,
    /// Show progress on stderr.
    pub progress: bool,
}

impl RunOptions<'_> {
    /// Whether this run writes the transcript itself (so a session written back in an
    /// agent's format must have a compaction to record).
    fn writes_transcript(&self) -> bool {
        !self.dry_run && self.emit.is_none_or(|e| e == Output::Transcript)
    }
}

/// One input of a batch, handed over in input order.
pub enum Finished<'i> {
    Done {
        input: &'i Input,
        /// The decision and the accounting in one line ([`one_line`]).
        line: String,
        warnings: Vec<String>,
        /// What goes to stdout for it.
        emitted: Vec<u8>,
    },
    Failed {
        input: &'i Input,
        error: Error,
    },
    /// Not started: a signal stopped the batch first.
    NotStarted,
}

/// The input's decision and where its records went, as one line.
pub fn one_line(input: &Input, done: &Processed<'_>) -> String {
    format!("{}: {}; {}", input.display_name(), done.plan.decision.one_line(), done.accounting.summary())
}

/// A session is written back in the agent's own format only with a compaction to record
/// (`resume::nothing_to_record` says what to do when there is none); a dry run, or one
/// that prints something else than the transcript, writes nothing back.
pub fn check_write_back(opts: &RunOptions<'_>, input: &Input, settings: &Settings, done: &Processed<'_>) -> Result<()> {
    if !opts.writes_transcript() {
        return Ok(());
    }
    crate::resume::nothing_to_record(input, settings, done).map_or(Ok(()), Err)
}

/// Writes one output; `--emit summary` or `reanchor` with nothing rendered says so on
/// stderr, so an empty stdout is not mistaken for an empty summary.
pub fn emit(w: &mut dyn io::Write, input: &Input, done: &Processed<'_>, out: Output) -> io::Result<()> {
    let (rendered, what) = match out {
        Output::Summary => (done.plan.summary_text.is_some(), "summary"),
        Output::Reanchor => (done.plan.reanchor_text.is_some(), "re-anchor block"),
        _ => (true, ""),
    };
    if !rendered {
        crate::ui::note(&format!(
            "{}: no {what} was injected ({}), nothing to print",
            input.display_name(),
            done.plan.decision.action.as_str()
        ));
    }
    out.write(w, done)
}

/// A decision as one JSON line, the input's path first (a batch's decisions).
pub fn decision_line(w: &mut Vec<u8>, path: &Path, done: &Processed<'_>) {
    let mut line = serde_json::Map::new();
    line.insert("input".into(), serde_json::Value::String(path.display().to_string()));
    if let Ok(serde_json::Value::Object(d)) = serde_json::to_value(&done.plan.decision) {
        line.extend(d);
    }
    w.extend_from_slice(serde_json::Value::Object(line).to_string().as_bytes());
    w.push(b'\n');
}

/// The chat line of a session that could not be read or compacted: no messages, and
/// under `rivumi` (a key chat-format loaders ignore) the session and the error; it keeps
/// a batch's chat lines matched to its files.
pub fn failed_chat_line(input: &Input, error: &Error) -> String {
    let rivumi = serde_json::json!({"source": input.display_name(), "error": error.to_string()});
    format!("{}\n", serde_json::json!({"messages": [], "rivumi": rivumi}))
}

/// Processes `inputs` on `opts.jobs` threads and hands each to `sink` in input order as
/// it finishes (nothing is held for the end). `sink` returning an error (stdout closed)
/// stops the batch: no new input starts, and the error is returned. After a signal, no
/// new input starts either, when the caller asked for that ([`crate::signals::graceful`]).
pub fn run_batch<'i>(
    inputs: &'i [Input],
    settings: &Settings,
    opts: &RunOptions<'_>,
    mut sink: impl FnMut(Finished<'i>) -> io::Result<()>,
) -> io::Result<BatchSummary> {
    let mut summary = BatchSummary::new(inputs.len());
    let mut closed = None;
    let process = |input: &Input| {
        process_input(input, settings, |done| {
            check_write_back(opts, input, settings, done)?;
            if let Some(e) = done.refusal() {
                return Err(e);
            }
            if let (Some(out), false) = (opts.out, opts.dry_run) {
                crate::output::write_out_dir(out, &input.out_name, done)?;
            }
            let mut emitted = Vec::new();
            match opts.emit {
                // Decisions as JSON Lines that name their input.
                Some(Output::Decision) => decision_line(&mut emitted, &input.path, done),
                Some(out) => emit(&mut emitted, input, done, out).map_err(Error::stdout)?,
                None => {}
            }
            Ok((one_line(input, done), done.warnings.clone(), done.plan.changes(), emitted))
        })
    };
    crate::batch::for_each(inputs, opts.jobs, opts.progress, process, |k, r| {
        let input = &inputs[k];
        let finished = match r {
            None => {
                summary.not_started += 1;
                Finished::NotStarted
            }
            Some(Ok((line, warnings, changed, emitted))) => {
                summary.done(changed);
                Finished::Done { input, line, warnings, emitted }
            }
            Some(Err(error)) => {
                summary.failed(&error);
                Finished::Failed { input, error }
            }
        };
        match sink(finished) {
            Ok(()) => true,
            Err(e) => {
                closed = Some(e);
                false
            }
        }
    });
    closed.map_or(Ok(summary), Err)
}
