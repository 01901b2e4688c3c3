//! Dataset mode (`--input-format openai`) on the command line: the library's stream
//! ([`crate::dataset::stream`]) over each input, with a progress bar on a terminal,
//! bad lines on stderr (and in `--rejects FILE`), the closing counts and the exit code.

use crate::dataset::stream::{stream_input, Counts, Observer};
use crate::engine::Settings;
use crate::error::{Error, Exit};
use crate::inputs::Input;
use crate::output::OutDir;
use std::io::{self, IsTerminal, Write};

/// Runs dataset mode over the inputs: stdout for one input, else `DIR/<name>/transcript.jsonl`.
/// `--rejects FILE` is written as `--out` is: atomically, and not at all when the run
/// fails as a whole (exit 3).
pub fn run(inputs: &[Input], settings: &Settings, out_dir: Option<&OutDir>, jobs: usize, w: &mut dyn Write) -> Exit {
    crate::signals::install();
    let Some(path) = &settings.rejects else {
        return run_with(inputs, settings, out_dir, jobs, w, None).0;
    };
    if crate::output::is_stdout(path) {
        // Stdout is free: the dataset goes to `--out` or `--out-dir` (checked before).
        let stdout = io::stdout();
        let mut lock = io::BufWriter::new(stdout.lock());
        let (code, failed) = run_with(inputs, settings, out_dir, jobs, w, Some(&mut lock));
        return match failed {
            Some(e) => {
                crate::ui::error(&Error::stdout(e).to_string());
                Exit::Failed
            }
            None => code,
        };
    }
    let mut code = None;
    let written = crate::output::write_output(path, |r| {
        let (c, failed) = run_with(inputs, settings, out_dir, jobs, w, Some(r));
        code = Some(c);
        if c == Exit::BadInput {
            return Err(io::Error::other("not written")); // abandons the temporary file
        }
        // Rejects that could not all be written are abandoned too, and said once.
        failed.map_or(Ok(()), Err)
    });
    match (code, written) {
        (Some(c), Ok(())) | (Some(c @ Exit::BadInput), _) => c,
        (_, Err(e)) => {
            crate::ui::error(&Error::write(path, e).to_string());
            Exit::Failed
        }
        (None, Ok(())) => unreachable!("the rejects were written by the run"),
    }
}

/// The run, and the error that stopped the rejects being written (the caller says it:
/// the dataset itself goes on, as the rows are what the run is for).
fn run_with(
    inputs: &[Input],
    settings: &Settings,
    out_dir: Option<&OutDir>,
    jobs: usize,
    w: &mut dyn Write,
    rejects: Option<&mut dyn Write>,
) -> (Exit, Option<io::Error>) {
    let threads = jobs.max(1);
    let mut total = Counts::default();
    let mut failed = Vec::new();
    let mut reporter = Reporter { progress: Progress::new(None), rejects, rejects_failed: None };
    // A flag that cannot act on the rows' path is said once, not lost with every row.
    for warning in inputs.iter().flat_map(|i| settings.inert_for_rows(&i.path)) {
        crate::ui::warn(&warning);
    }
    for input in inputs {
        match stream_input(input, settings, out_dir, threads, w, &mut reporter, &mut total) {
            Ok(true) => {}
            // A reader that closed stdout early (`head`) is not an error.
            Ok(false) => return (Exit::Ok, reporter.rejects_failed),
            Err(e) => {
                crate::ui::error(&e.to_string());
                failed.push(e.exit());
            }
        }
    }
    let rejects_failed = match (reporter.rejects_failed.take(), reporter.rejects.as_mut()) {
        (Some(e), _) => Some(e),
        (None, Some(r)) => r.flush().err(),
        (None, None) => None,
    };
    if rejects_failed.is_some() {
        failed.push(Exit::Failed);
    }
    crate::ui::note(&total.summary_line(settings.skip_bad_lines));
    (total.exit(inputs.len(), &failed), rejects_failed)
}

/// What the command line does as a stream goes: the bar, and each bad line on stderr
/// and, with `--rejects FILE`, as one JSON object a line (its number, error and text).
struct Reporter<'r> {
    progress: Progress,
    rejects: Option<&'r mut dyn Write>,
    /// Why the rejects stopped being written (no room, a closed pipe): the first error.
    rejects_failed: Option<io::Error>,
}

impl Observer for Reporter<'_> {
    fn start(&mut self, size: Option<u64>) {
        self.progress = Progress::new(size);
    }

    fn advance(&mut self, lines: usize, bytes: usize) {
        self.progress.advance(lines, bytes);
    }

    fn bad_line(&mut self, line: usize, message: &str, text: Option<&[u8]>) -> io::Result<()> {
        self.progress.suspend(|| crate::ui::error(message));
        if let (Some(r), None) = (&mut self.rejects, &self.rejects_failed) {
            let text = text.map(String::from_utf8_lossy);
            // A rejects file that cannot be written does not stop the dataset (nor is
            // it taken for stdout failing): it is abandoned, and said at the end.
            if let Err(e) = writeln!(r, "{}", serde_json::json!({"line": line, "error": message, "text": text})) {
                self.rejects_failed = Some(e);
            }
        }
        Ok(())
    }

    fn warning(&mut self, _line: usize, message: &str) {
        self.progress.suspend(|| crate::ui::warn(message));
    }

    fn finish(&mut self) {
        self.progress.finish();
    }
}

/// The progress of a dataset on a terminal: lines, MB and MB/s (nothing otherwise).
struct Progress {
    bar: Option<indicatif::ProgressBar>,
    lines: std::cell::Cell<usize>,
}

impl Progress {
    fn new(size: Option<u64>) -> Progress {
        let lines = std::cell::Cell::new(0);
        // On a terminal that stdout shares, a bar would draw over the lines written.
        if !io::stderr().is_terminal() || io::stdout().is_terminal() {
            return Progress { bar: None, lines };
        }
        let bar = size.map_or_else(indicatif::ProgressBar::new_spinner, indicatif::ProgressBar::new);
        let template = if size.is_some() {
            "{bar:30} {bytes}/{total_bytes} ({binary_bytes_per_sec}) {msg} {eta}"
        } else {
            "{spinner} {bytes} ({binary_bytes_per_sec}) {msg}"
        };
        if let Ok(style) = indicatif::ProgressStyle::with_template(template) {
            bar.set_style(style);
        }
        bar.set_draw_target(indicatif::ProgressDrawTarget::stderr_with_hz(4));
        Progress { bar: Some(bar), lines }
    }

    fn advance(&self, lines: usize, bytes: usize) {
        self.lines.set(self.lines.get() + lines);
        if let Some(bar) = &self.bar {
            bar.set_message(format!("{} lines", self.lines.get()));
            bar.inc(bytes as u64);
        }
    }

    fn suspend(&self, f: impl FnOnce()) {
        match &self.bar {
            Some(bar) => bar.suspend(f),
            None => f(),
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
