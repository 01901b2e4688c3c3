//! `run`: one input to stdout, or many (or an out-dir) as a parallel batch; dataset
//! mode for OpenAI-format files.

use super::commands::{display, print_warnings, report, settings, stdout_write, warn, with_processed};
use super::inputs::{self, Input};
use super::{Emit, RunArgs};
use crate::engine::{Processed, Settings};
use crate::error::{Error, Exit, Result};
use crate::output::{self, Output};
use crate::render::escape_controls;
use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};

pub(super) fn run(args: RunArgs) -> Result<Exit> {
    let settings = settings(&args.policy, args.dry_run)?;
    let inputs = inputs::expand(&args.inputs, &args.policy.input_format, args.out_dir.as_deref())?;
    if inputs::is_dataset(&args.policy.input_format, &inputs) {
        if args.dry_run || args.emit.is_some_and(|e| e != Emit::Transcript) {
            return Err(Error::Usage("dataset mode (openai) writes conversations only: no --dry-run or --emit".into()));
        }
        if inputs.len() > 1 && args.out_dir.is_none() {
            return Err(Error::Usage(format!("{} inputs need --out-dir", inputs.len())));
        }
        if let Some(dir) = &args.out_dir {
            check_distinct(&inputs)?;
            check_not_input(dir, &inputs)?;
        }
        let mut s = settings.clone();
        s.input_format = "openai".into();
        return super::dataset::run(&inputs, &s, args.out_dir.as_deref(), args.jobs);
    }
    if inputs.len() > 1 && args.out_dir.is_none() && !args.dry_run {
        return Err(Error::Usage(format!(
            "{} inputs need --out-dir (one input prints its transcript on stdout)",
            inputs.len()
        )));
    }
    if let Some(dir) = &args.out_dir {
        check_distinct(&inputs)?;
        check_not_input(dir, &inputs)?;
    }
    if inputs.len() == 1 && args.out_dir.is_none() {
        let input = &inputs[0];
        return with_processed(input, &settings, |done| {
            print_warnings(done);
            if let (Some(e), false) = (done.refusal(), args.dry_run) {
                return Err(e);
            }
            eprintln!("rivumi-compact: {}: {}", display(input), escape_controls(&done.plan.decision.one_line()));
            let emit = args.emit.unwrap_or(if args.dry_run { Emit::Decision } else { Emit::Transcript });
            let code = stdout_write(|w| emit_to(w, done, emit))?;
            Ok(if done.plan.refused { Exit::Failed } else { code })
        });
    }
    run_batch(&args, &settings, &inputs)
}

/// Several inputs (or an out-dir): processed in parallel, reported in input order.
fn run_batch(args: &RunArgs, settings: &Settings, inputs: &[Input]) -> Result<Exit> {
    crate::batch::install_interrupt_handler();
    let progress = io::stderr().is_terminal() && inputs.len() > 1;
    let results = crate::batch::map(inputs, args.jobs, progress, |input| {
        with_processed(input, settings, |done| {
            if let Some(e) = done.refusal() {
                return Err(e);
            }
            if let (Some(dir), false) = (&args.out_dir, args.dry_run) {
                output::write_out_dir(&dir.join(&input.out_name), done)?;
            }
            let line = format!("{}: {}", display(input), escape_controls(&done.plan.decision.one_line()));
            // `--emit` (or `--dry-run`'s decision) still goes to stdout, in input order.
            let mut emitted = Vec::new();
            let emit = args.emit.or(args.dry_run.then_some(Emit::Decision));
            if let Some(e) = emit {
                emit_to(&mut emitted, done, e).map_err(|e| Error::Failed(e.to_string()))?;
            }
            Ok((line, done.warnings.clone(), done.plan.changes(), emitted))
        })
    });
    let mut stdout_bytes = Vec::new();
    let (mut failed, mut compacted, mut skipped) = (0, 0, 0);
    for r in &results {
        match r {
            None => skipped += 1,
            Some(Ok((line, warnings, changed, emitted))) => {
                stdout_bytes.extend_from_slice(emitted);
                warnings.iter().for_each(|w| warn(w));
                compacted += usize::from(*changed);
                if inputs.len() == 1 {
                    eprintln!("rivumi-compact: {line}");
                }
            }
            Some(Err(e)) => {
                failed += 1;
                report(&e.to_string());
            }
        }
    }
    stdout_write(|w| w.write_all(&stdout_bytes))?;
    let total = results.len();
    let done = total - skipped;
    let stopped = if skipped > 0 { format!(", {skipped} not started (interrupted)") } else { String::new() };
    eprintln!(
        "rivumi-compact: {total} file(s): {compacted} compacted, {} unchanged, {failed} failed{stopped}",
        done - compacted - failed
    );
    if crate::batch::interrupted() {
        return Ok(Exit::Interrupted);
    }
    if total == 1 && failed == 1 {
        // A single input keeps its own exit code (3 for bad input, 4 for a hook failure).
        if let Some(Some(Err(e))) = results.into_iter().next() {
            return Ok(e.exit());
        }
    }
    Ok(if failed > 0 { Exit::Failed } else { Exit::Ok })
}

fn check_distinct(inputs: &[Input]) -> Result<()> {
    let mut seen = std::collections::BTreeMap::new();
    for i in inputs {
        if let Some(other) = seen.insert(i.out_name.clone(), i.path.clone()) {
            return Err(Error::Usage(format!(
                "{} and {} would share the output folder {}",
                other.display(),
                i.path.display(),
                i.out_name.display()
            )));
        }
    }
    Ok(())
}

/// An output may never land on an input: refuse before anything is written.
fn check_not_input(dir: &Path, inputs: &[Input]) -> Result<()> {
    let Ok(dir) = std::fs::canonicalize(dir) else {
        return Ok(()); // a new folder holds no input
    };
    // Canonicalize each input's folder once (a batch has few folders and many files).
    let mut folders: std::collections::HashMap<PathBuf, Option<PathBuf>> = std::collections::HashMap::new();
    let mut sources: std::collections::HashSet<PathBuf> = std::collections::HashSet::new();
    for i in inputs.iter().filter(|i| !i.is_stdin()) {
        let (Some(parent), Some(name)) = (i.path.parent(), i.path.file_name()) else { continue };
        let parent = if parent.as_os_str().is_empty() { Path::new(".") } else { parent };
        let canon = folders.entry(parent.to_path_buf()).or_insert_with(|| std::fs::canonicalize(parent).ok());
        if let Some(c) = canon {
            sources.insert(c.join(name));
        }
    }
    if sources.contains(&dir) {
        return Err(Error::Usage(format!("--out-dir {} is an input", dir.display())));
    }
    for i in inputs {
        for o in Output::ALL {
            let target = dir.join(&i.out_name).join(o.file_name());
            if sources.contains(&target) {
                return Err(Error::Usage(format!("{} would overwrite the input {}", o.file_name(), target.display())));
            }
        }
    }
    Ok(())
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
