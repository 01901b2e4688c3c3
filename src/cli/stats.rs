//! `stats`: totals over many transcripts; decides as `run --dry-run` would (no hooks,
//! no files).

use super::common::{settings, stdout_write};
use super::StatsArgs;
use crate::error::{Exit, Result};
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
    let one = |input: &Input| crate::stats::input_stats(input, &settings, dataset, &|m| ui::error(m));
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
