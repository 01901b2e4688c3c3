//! `run`: one input to stdout, or many (or an out-dir) as a parallel batch; dataset
//! mode for OpenAI-format files.

use super::common::{jobs, print_warnings, settings};
use super::{Emit, RunArgs};
use crate::engine::process_input;
use crate::engine::{Processed, Settings};
use crate::error::{Error, Exit, Result};
use crate::formats::OutputFormat;
use crate::inputs::{self, Input};
use crate::output::{self, OutDir, Output};
use std::io::{self, IsTerminal, Write};
use std::path::Path;

pub(super) fn run(mut args: RunArgs) -> Result<Exit> {
    // `--out -` is stdout, as `-` among the inputs is stdin.
    if args.out.as_deref().is_some_and(output::is_stdout) {
        args.out = None;
    }
    check_paths(&args)?;
    let mut settings = settings(&args.policy, Some(&args.actions), args.dry_run)?;
    settings.output_format = args.output_format;
    settings.skip_bad_lines = args.bad_lines == super::BadLines::Skip;
    settings.provenance = args.provenance;
    settings.rejects.clone_from(&args.rejects);
    let inputs = inputs::expand(&args.inputs, args.policy.input_format, args.out_dir.as_deref())?;
    if let Some(r) = args.rejects.as_deref().filter(|r| !output::is_stdout(r)) {
        output::refuse_input(r, &inputs::real_paths(&inputs), "--rejects")?;
        if args.out.as_deref().is_some_and(|o| output::same_file(o, r)) {
            return Err(Error::Usage(format!(
                "--rejects and --out name the same file ({}): one would replace the other",
                crate::ui::escape(&r.display().to_string())
            )));
        }
    }
    let Some(file) = &args.out else {
        let stdout = io::stdout();
        let mut w = io::BufWriter::with_capacity(1 << 20, stdout.lock());
        return run_into(&args, &settings, &inputs, &mut w);
    };
    // `--out FILE`: what stdout would get, written aside and renamed when the run ends;
    // a run that fails as a whole (bad input, a usage error, a dataset whose input
    // broke off) leaves no file.
    output::refuse_input(file, &inputs::real_paths(&inputs), "--out")?;
    let mut result = None;
    let written = output::write_output(file, |w| {
        let r = run_into(&args, &settings, &inputs, w);
        let ok = r.as_ref().is_ok_and(|code| *code != Exit::BadInput);
        result = Some(r);
        if ok {
            Ok(())
        } else {
            Err(io::Error::other("not written"))
        }
    });
    match result {
        // Its error is already reported; the file was abandoned.
        Some(Ok(Exit::BadInput)) => Ok(Exit::BadInput),
        Some(Ok(code)) => written.map(|()| code).map_err(|e| Error::write(file, e)),
        Some(Err(Error::Write { path, source })) if path == Path::new("<stdout>") => Err(Error::write(file, source)),
        Some(Err(e)) => Err(e),
        None => Err(Error::write(file, written.expect_err("the writer ran unless creating the file failed"))),
    }
}

/// The paths to write, checked before any input is read.
fn check_paths(args: &RunArgs) -> Result<()> {
    if let Some(out) = &args.out {
        output::check_file_path(out, "--out")?;
    }
    if let Some(dir) = &args.out_dir {
        output::check_folder_path(dir, "--out-dir")?;
    }
    match &args.rejects {
        Some(r) if output::is_stdout(r) && args.out.is_none() && args.out_dir.is_none() => Err(Error::Usage(
            "--rejects -: stdout carries the dataset; name a file, or write the dataset with --out or --out-dir".into(),
        )),
        Some(r) if !output::is_stdout(r) => output::check_file_path(r, "--rejects"),
        _ => Ok(()),
    }
}

/// The run, with what goes to stdout written to `w`.
fn run_into(args: &RunArgs, settings: &Settings, inputs: &[Input], w: &mut dyn Write) -> Result<Exit> {
    if let Some(dataset) = inputs::batch_dataset_format(args.policy.input_format, inputs)? {
        if let Some(f) = args.output_format.resumes() {
            return Err(Error::Usage(format!(
                "--output-format {f} writes a session back: {dataset} files are datasets"
            )));
        }
        if args.dry_run || args.emit.is_some_and(|e| e != Emit::Transcript) {
            return Err(Error::Usage(format!(
                "dataset mode ({dataset}) writes one line per line: no --dry-run or --emit"
            )));
        }
        if inputs.len() > 1 && args.out_dir.is_none() {
            return Err(Error::Usage(format!("{} inputs need --out-dir", inputs.len())));
        }
        let out = args.out_dir.as_deref().map(|dir| out_dir(dir, inputs)).transpose()?;
        let mut s = settings.clone();
        s.input_format = dataset;
        return Ok(super::dataset::run(inputs, &s, out.as_ref(), jobs(args.jobs), w));
    }
    // One chat line per transcript: several inputs give their lines in input order.
    let lines = args.output_format == OutputFormat::Openai && args.emit.is_none_or(|e| e == Emit::Transcript);
    if args.provenance && !lines {
        return Err(Error::Usage(
            "--provenance marks chat lines and dataset rows: a session is written in its own format; add --output-format openai"
                .into(),
        ));
    }
    if inputs.len() > 1 && args.out_dir.is_none() && !args.dry_run && !lines {
        return Err(Error::Usage(format!(
            "{} inputs need --out-dir (one input prints its transcript on stdout)",
            inputs.len()
        )));
    }
    let out = args.out_dir.as_deref().map(|dir| out_dir(dir, inputs)).transpose()?;
    if inputs.len() == 1 && out.is_none() {
        let input = &inputs[0];
        // One large transcript is parsed in pieces on up to `--jobs` threads.
        return crate::batch::with_threads(jobs(args.jobs), || {
            process_input(input, settings, |done| {
                print_warnings(done);
                writes_back(args, input, settings, done)?;
                if let (Some(e), false) = (done.refusal(), args.dry_run) {
                    return Err(e);
                }
                crate::ui::note(&format!(
                    "{}: {}; {}",
                    input.display_name(),
                    done.plan.decision.one_line(),
                    done.accounting.summary()
                ));
                let emit = args.emit.unwrap_or(if args.dry_run { Emit::Decision } else { Emit::Transcript });
                nothing_emitted_note(input, done, emit);
                let code = write_out(w, |w| emit_to(w, done, emit))?;
                Ok(if done.plan.refused() { Exit::Failed } else { code })
            })
        });
    }
    run_batch(args, settings, inputs, out.as_ref(), lines, w)
}

/// Writes to the run's output; a reader that closes stdout early (`head`) is not an error.
fn write_out(w: &mut dyn Write, f: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<Exit> {
    match f(w).and_then(|()| w.flush()) {
        Ok(()) => Ok(Exit::Ok),
        Err(e) => Err(Error::stdout(e)),
    }
}

/// The out-dir, after the checks that come before anything is written.
fn out_dir(dir: &Path, inputs: &[Input]) -> Result<OutDir> {
    output::check_out_names(inputs)?;
    let real_inputs = inputs::real_paths(inputs);
    output::refuse_out_dir_over_inputs(dir, inputs, &real_inputs)?;
    OutDir::create(dir, real_inputs)
}

/// Several inputs (or an out-dir): processed in parallel, reported in input order as
/// each finishes (stdout, warnings and errors stream; nothing is held for the end).
fn run_batch(
    args: &RunArgs,
    settings: &Settings,
    inputs: &[Input],
    out: Option<&OutDir>,
    lines: bool,
    w: &mut dyn Write,
) -> Result<Exit> {
    crate::signals::graceful();
    let progress = io::stderr().is_terminal() && !io::stdout().is_terminal() && inputs.len() > 1;
    let mut summary = crate::report::BatchSummary::new(inputs.len());
    let mut closed = None;
    let process = |input: &Input| {
        process_input(input, settings, |done| {
            writes_back(args, input, settings, done)?;
            if let Some(e) = done.refusal() {
                return Err(e);
            }
            if let (Some(out), false) = (out, args.dry_run) {
                output::write_out_dir(out, &input.out_name, done)?;
            }
            let line =
                format!("{}: {}; {}", input.display_name(), done.plan.decision.one_line(), done.accounting.summary());
            // `--emit` (or `--dry-run`'s decision) still goes to stdout, in input order;
            // decisions as JSON Lines that name their input.
            let mut emitted = Vec::new();
            let emit = args.emit.or(args.dry_run.then_some(Emit::Decision)).or(lines.then_some(Emit::Transcript));
            match emit {
                Some(Emit::Decision) => decision_line(&mut emitted, &input.path, done),
                Some(e) => {
                    emit_to(&mut emitted, done, e).map_err(Error::stdout)?;
                    nothing_emitted_note(input, done, e);
                }
                None => {}
            }
            Ok((line, done.warnings.clone(), done.plan.changes(), emitted))
        })
    };
    crate::batch::for_each(inputs, jobs(args.jobs), progress, process, |k, r| {
        match r {
            None => summary.not_started += 1,
            Some(Ok((line, warnings, changed, emitted))) => {
                for w in &warnings {
                    crate::ui::warn(w);
                }
                summary.done(changed);
                if inputs.len() == 1 {
                    crate::ui::note(&line);
                }
                if let Err(e) = w.write_all(&emitted) {
                    closed = Some(e);
                    return false;
                }
            }
            Some(Err(e)) => {
                summary.failed(&e);
                crate::ui::error(&e.to_string());
                // One chat line per session, in input order, even for one that failed: a
                // line that says so keeps the lines matched to the files.
                if lines && args.output_format == OutputFormat::Openai {
                    let line = failed_chat_line(&inputs[k].display_name(), &e.to_string());
                    if let Err(e) = w.write_all(line.as_bytes()) {
                        closed = Some(e);
                        return false;
                    }
                }
            }
        }
        true
    });
    if let Some(e) = closed.or_else(|| w.flush().err()) {
        return Err(Error::stdout(e));
    }
    crate::ui::note(&summary.line());
    crate::signals::finish();
    Ok(summary.exit())
}

/// The chat line of a session that could not be read or compacted: no messages, and
/// under `rivumi` (a key chat-format loaders ignore) the session and the error.
fn failed_chat_line(source: &str, error: &str) -> String {
    let line = serde_json::json!({"messages": [], "rivumi": {"source": source, "error": error}});
    format!("{line}\n")
}

/// A decision as one JSON line, the input's path first (`--dry-run` or `--emit
/// decision` over several inputs).
fn decision_line(w: &mut Vec<u8>, path: &Path, done: &Processed<'_>) {
    let mut line = serde_json::Map::new();
    line.insert("input".into(), serde_json::Value::String(path.display().to_string()));
    if let Ok(serde_json::Value::Object(d)) = serde_json::to_value(&done.plan.decision) {
        line.extend(d);
    }
    w.extend_from_slice(serde_json::Value::Object(line).to_string().as_bytes());
    w.push(b'\n');
}

/// `--emit summary` or `reanchor` prints nothing when nothing was rendered: say so on
/// stderr, so an empty stdout is not mistaken for an empty summary.
fn nothing_emitted_note(input: &Input, done: &Processed<'_>, emit: Emit) {
    let (rendered, what) = match emit {
        Emit::Summary => (done.plan.summary_text.is_some(), "summary"),
        Emit::Reanchor => (done.plan.reanchor_text.is_some(), "re-anchor block"),
        _ => return,
    };
    if !rendered {
        crate::ui::note(&format!(
            "{}: no {what} was injected ({}), nothing to print",
            input.display_name(),
            done.plan.decision.action.as_str()
        ));
    }
}

/// A session is written back in the agent's own format only with a compaction to record
/// (`resume::nothing_to_record` says what to do when there is none); `--dry-run` and
/// `--emit` other than the transcript write nothing back.
fn writes_back(args: &RunArgs, input: &Input, settings: &Settings, done: &Processed<'_>) -> Result<()> {
    if args.dry_run || args.emit.is_some_and(|e| e != Emit::Transcript) {
        return Ok(());
    }
    crate::resume::nothing_to_record(input, settings, done).map_or(Ok(()), Err)
}

/// Writes one output to a writer.
fn emit_to(w: &mut dyn Write, done: &Processed<'_>, emit: Emit) -> io::Result<()> {
    let out = match emit {
        Emit::Transcript => Output::Transcript,
        Emit::Decision => Output::Decision,
        Emit::Journal => Output::Journal,
        Emit::Summary => Output::Summary,
        Emit::Reanchor => Output::Reanchor,
    };
    out.write(w, done)
}
