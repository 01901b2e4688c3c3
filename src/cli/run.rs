//! `run`: one input to stdout, or many (or an out-dir) as a parallel batch
//! ([`crate::run`]); dataset mode for OpenAI-format files ([`crate::dataset`]). Here the
//! flags are checked and what the library hands back is printed.

use super::common::{jobs, print_warnings, settings};
use super::RunArgs;
use crate::engine::{process_input, Settings};
use crate::error::{Error, Exit, Result};
use crate::formats::OutputFormat;
use crate::inputs::{self, Input};
use crate::output::{self, OutDir, Output};
use crate::run::{self, Finished, RunOptions};
use std::io::{self, IsTerminal, Write};
use std::path::Path;

pub(super) fn run(mut args: RunArgs) -> Result<Exit> {
    // `--out -` is stdout, as `-` among the inputs is stdin.
    if args.out.as_deref().is_some_and(output::is_stdout) {
        args.out = None;
    }
    check_paths(&args)?;
    let mut settings = settings(&args.policy, Some(&args.actions), args.dry_run)?;
    settings.output_format = args.output_format.unwrap_or(OutputFormat::Canonical);
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
        if let Some(f) = args.output_format.and_then(OutputFormat::resumes) {
            return Err(Error::Usage(format!(
                "--output-format {f} writes a session back: {dataset} files are datasets"
            )));
        }
        if args.output_format == Some(OutputFormat::Canonical) {
            // Asked for, and not what would be written: each row stays a row.
            return Err(Error::Usage(format!(
                "--output-format canonical writes one transcript per input: {dataset} files are datasets, \
                 each row written back as a row (leave --output-format out)"
            )));
        }
        if args.dry_run || args.emit.is_some_and(|e| e != Output::Transcript) {
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
    let lines = args.output_format == Some(OutputFormat::Openai) && args.emit.is_none_or(|e| e == Output::Transcript);
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
    let emit = args.emit.or(args.dry_run.then_some(Output::Decision)).or(lines.then_some(Output::Transcript));
    let mut opts = RunOptions {
        dry_run: args.dry_run,
        emit,
        out: out.as_ref(),
        jobs: jobs(args.jobs),
        progress: io::stderr().is_terminal() && !io::stdout().is_terminal() && inputs.len() > 1,
    };
    if inputs.len() == 1 && out.is_none() {
        let input = &inputs[0];
        let emit = opts.emit.unwrap_or(Output::Transcript);
        opts.emit = Some(emit);
        // One large transcript is parsed in pieces on up to `--jobs` threads; the process
        // ends with it.
        return crate::batch::with_threads(opts.jobs, || {
            crate::engine::as_last_work(|| {
                process_input(input, settings, |done| {
                    print_warnings(done);
                    run::check_write_back(&opts, input, settings, done)?;
                    if let (Some(e), false) = (done.refusal(), args.dry_run) {
                        return Err(e);
                    }
                    crate::ui::note(&run::one_line(input, done));
                    let code = write_out(w, |w| run::emit(w, input, done, emit))?;
                    Ok(if done.plan.refused() { Exit::Failed } else { code })
                })
            })
        });
    }
    let single = inputs.len() == 1;
    // The first signal stops starting inputs; `finish` below dies of it once they end.
    crate::signals::graceful();
    let summary = run::run_batch(inputs, settings, &opts, |finished| match finished {
        Finished::NotStarted => Ok(()),
        Finished::Done { line, warnings, emitted, .. } => {
            for w in &warnings {
                crate::ui::warn(w);
            }
            if single {
                crate::ui::note(&line);
            }
            w.write_all(&emitted)
        }
        Finished::Failed { input, error } => {
            crate::ui::error(&error.to_string());
            // One chat line per session, in input order, even for one that failed.
            if lines {
                w.write_all(run::failed_chat_line(input, &error).as_bytes())?;
            }
            Ok(())
        }
    });
    let summary = summary.and_then(|s| w.flush().map(|()| s)).map_err(Error::stdout)?;
    crate::ui::note(&summary.line());
    crate::signals::finish();
    Ok(summary.exit())
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
