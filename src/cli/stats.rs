//! `stats`: totals over many transcripts; decides as `run --dry-run` would (no hooks,
//! no files).

use super::common::{settings, stdout_write};
use super::StatsArgs;
use crate::engine::process_input;
use crate::engine::Settings;
use crate::error::{Error, Exit, Result};
use crate::formats::InputFormat;
use crate::inputs::{self, Input};
use crate::stats::Stats;
use crate::ui;
use std::io::{self, IsTerminal};

pub(super) fn stats(args: StatsArgs) -> Result<Exit> {
    let settings = settings(&args.policy, None, true)?;
    let inputs = inputs::expand(&args.inputs, args.policy.input_format, None)?;
    crate::signals::install();
    let progress = io::stderr().is_terminal() && inputs.len() > 1;
    let dataset = inputs::batch_dataset_format(args.policy.input_format, &inputs)?;
    // An input's stats, and the error that ended it (a dataset keeps the rows read
    // before its input broke off, as `run` writes them).
    let one = |input: &Input| {
        if let Some(format) = dataset {
            return dataset_stats(input, &settings, format);
        }
        let read = process_input(input, &settings, |done| {
            let mut one = Stats::new();
            one.add(done);
            Ok(one)
        });
        match read {
            Ok(one) => (one, None),
            Err(e) => (Stats::new(), Some(e)),
        }
    };
    let mut total = Stats::new();
    let mut unreadable = None;
    crate::batch::for_each(&inputs, super::common::jobs(args.jobs), progress, one, |_, r| {
        if let Some((one, error)) = r {
            total.merge(one);
            if let Some(e) = error {
                total.failed += 1;
                ui::error(&e.to_string());
                unreadable = Some(e.exit());
            }
        }
        true
    });
    let total = total.finish();
    let text = if args.json {
        let mut s = serde_json::to_string_pretty(&total).expect("json");
        s.push('\n');
        s
    } else {
        total.table()
    };
    stdout_write(|w| w.write_all(text.as_bytes()))?;
    // One input keeps its own code (3 for one that cannot be read), as `run` does.
    Ok(match (inputs.len(), unreadable) {
        (1, Some(code)) => code,
        _ if total.failed > 0 => Exit::Failed,
        _ => Exit::Ok,
    })
}

/// Stats over a dataset file, streamed: every line is a transcript; a bad line (invalid
/// UTF-8 included, never replaced) is reported and counted as failed. An input that
/// cannot be opened, or breaks off, gives its error beside the rows read before it.
fn dataset_stats(input: &Input, settings: &Settings, format: InputFormat) -> (Stats, Option<Error>) {
    let mut s = settings.clone();
    s.input_format = format;
    let mut stats = Stats::new();
    let mut reader = match input.open() {
        Ok(opened) => opened.into_reader(),
        Err(e) => return (stats, Some(e)),
    };
    let limit = crate::source::max_input_bytes();
    let mut line = Vec::new();
    for n in 1.. {
        line.clear();
        match crate::source::read_line_bounded(&mut reader, &mut line, limit) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => return (stats, Some(crate::source::broken_at(&input.path, n, &line, &e))),
        }
        let message = match crate::dataset::line_text(&line, n) {
            Ok(text) => crate::dataset::add_line_stats(text, &input.path, n, &s, &mut stats),
            Err(column) => {
                stats.failed += 1;
                Some(format!("{}:{n}:{column}: {}", input.path.display(), crate::error::NOT_UTF8))
            }
        };
        if let Some(m) = message {
            ui::error(&m);
        }
    }
    (stats, None)
}
