//! `decide`: the decision and its reasons for people (with the per-turn chart), or as
//! JSON for programs; for a dataset, one decision per row (or the row `--line` names).

use super::common::{print_warnings, settings, single_input, stdout_write};
use super::DecideArgs;
use crate::dataset::for_each_row;
use crate::engine::process_input;
use crate::engine::{self, Processed, Settings};
use crate::error::{Error, Exit, Result};
use crate::formats::InputFormat;
use crate::inputs::{self, Input};
use std::io::Write;

pub(super) fn decide(args: DecideArgs) -> Result<Exit> {
    let settings = settings(&args.policy, None, true)?;
    let input = single_input(&args.input, args.policy.input_format)?;
    if let Some(format) = inputs::dataset_format(args.policy.input_format, std::slice::from_ref(&input)) {
        return rows(&args, &input, &settings, format);
    }
    if args.line.is_some() {
        return Err(Error::Usage("--line N picks a row of a dataset; this input is one transcript".into()));
    }
    process_input(&input, &settings, |done| {
        print_warnings(done);
        let text =
            if args.json { crate::report::decision_with_turns(done) } else { crate::report::decision_report(done) };
        stdout_write(|w| w.write_all(text.as_bytes()))
    })
}

/// The decisions of a dataset's rows. One row (`--line`) is shown like a transcript;
/// every row gives one line (`file:line: decision`, or a JSON object with `line`). A row
/// that cannot be read is reported and the exit code is 3.
fn rows(args: &DecideArgs, input: &Input, settings: &Settings, format: InputFormat) -> Result<Exit> {
    let mut s = settings.clone();
    s.input_format = format;
    let mut bad = false;
    let mut found = false;
    let stdout = std::io::stdout();
    let mut w = std::io::BufWriter::new(stdout.lock());
    let shown = input.path.display().to_string();
    let lines = for_each_row(input, args.line, |n, text| {
        found = true;
        let name = std::path::PathBuf::from(format!("{}:{n}", input.path.display()));
        let processed = text
            .map_err(|(col, m)| format!("{shown}:{n}:{col}: {m}"))
            .and_then(|text| {
                crate::dataset::row_canonical(text, format).map_err(|(col, m)| format!("{shown}:{n}:{col}: {m}"))
            })
            .and_then(|canonical| {
                engine::process(&canonical, &name, &s)
                    .map(|done| render(args, n, &shown, &done))
                    .map_err(|e| e.to_string())
            });
        match processed {
            Ok(text) => w.write_all(text.as_bytes()).map_err(Error::stdout),
            Err(m) => {
                bad = true;
                crate::ui::error(&m);
                Ok(())
            }
        }
    })?;
    w.flush().map_err(Error::stdout)?;
    if let (Some(k), false) = (args.line, found) {
        return Err(Error::bad_input(&input.path, format!("--line {k}: there is no row there ({lines} lines)")));
    }
    Ok(if bad { Exit::BadInput } else { Exit::Ok })
}

fn render(args: &DecideArgs, n: usize, shown: &str, done: &Processed<'_>) -> String {
    match (args.line.is_some(), args.json) {
        (true, true) => {
            let mut v = crate::report::decision_value(done);
            v.as_object_mut().expect("an object").shift_insert(0, "line".into(), serde_json::json!(n));
            format!("{}\n", serde_json::to_string_pretty(&v).expect("a decision serializes"))
        }
        (true, false) => crate::report::decision_report(done),
        (false, true) => {
            let mut v = serde_json::to_value(&done.plan.decision).expect("a decision serializes");
            v.as_object_mut().expect("an object").shift_insert(0, "line".into(), serde_json::json!(n));
            format!("{v}\n")
        }
        (false, false) => format!("{shown}:{n}: {}\n", done.plan.decision.one_line()),
    }
}
