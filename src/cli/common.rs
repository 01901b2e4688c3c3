//! Helpers the subcommands share: settings from flags, reading one input, printing.

use super::{ActionArgs, PolicyArgs};
use crate::engine::{Processed, Settings};
use crate::error::{Error, Exit, Result};
use crate::formats::InputFormat;
use crate::inputs::{self, Input};
use crate::ui;
use std::io::{self, Write};
use std::path::Path;

/// Settings from the flags (`actions` only where a command runs hooks: `run`, a
/// `check` case); a bad config file is bad input (exit 3).
pub(super) fn settings(p: &PolicyArgs, actions: Option<&ActionArgs>, dry_run: bool) -> Result<Settings> {
    let file = match &p.config {
        None => None,
        Some(path) => Some((path.as_path(), read_config_file(path)?)),
    };
    let file = file.as_ref().map(|(path, (value, text))| (*path, value, Some(text.as_str())));
    let mut layer = p.settings()?;
    if let Some(a) = actions {
        a.add_to(&mut layer);
    }
    let mut s = Settings::new(file, &layer)?.with_profile(p.profile.unwrap_or_default());
    (s.manual, s.dry_run, s.input_format) = (actions.is_some_and(|a| a.manual), dry_run, p.input_format);
    Ok(s)
}

/// A `--config` file's JSON and its text (which places the errors of its keys).
fn read_config_file(path: &Path) -> Result<(serde_json::Value, String)> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::read(path, e))?;
    let value = serde_json::from_str(&text).map_err(|e| {
        let line = text.lines().nth(e.line().saturating_sub(1)).unwrap_or("");
        let (column, msg) = crate::error::serde_position(&e, line);
        Error::bad_line(path, e.line(), column, format!("invalid JSON: {msg}"))
    })?;
    Ok((value, text))
}

pub(super) fn print_warnings(done: &Processed<'_>) {
    done.warnings.iter().for_each(|w| ui::warn(w));
}

/// Writes to stdout; a reader that closes early (`head`) is not an error.
pub(super) fn stdout_write(f: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<Exit> {
    let stdout = io::stdout();
    let mut w = io::BufWriter::with_capacity(1 << 20, stdout.lock());
    match f(&mut w).and_then(|()| w.flush()) {
        Ok(()) => Ok(Exit::Ok),
        Err(e) => Err(Error::stdout(e)),
    }
}

/// The one transcript a command takes.
pub(super) fn single_input(arg: &str, format: InputFormat) -> Result<Input> {
    let mut inputs = inputs::expand(&[arg.to_string()], format, None)?;
    if inputs.len() != 1 {
        return Err(Error::Usage(format!(
            "`{}` names {} transcripts; this command takes one",
            ui::escape(arg),
            inputs.len()
        )));
    }
    Ok(inputs.remove(0))
}

/// `--jobs`, capped to the cores the machine has (0: all of them).
pub(super) fn jobs(asked: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    if asked > cores {
        crate::ui::warn(&format!("--jobs {asked}: this machine has {cores} core(s); using {cores}"));
    }
    if asked == 0 {
        cores
    } else {
        asked.min(cores)
    }
}
