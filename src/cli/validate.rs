//! `validate`: every broken invariant of the inputs, with file and line.

use super::common::stdout_write;
use super::ValidateArgs;
use crate::error::{Exit, Result};
use crate::inputs;

pub(super) fn validate(args: ValidateArgs) -> Result<Exit> {
    let inputs = inputs::expand(&args.inputs, args.input_format, None)?;
    let report = crate::validate::validate_inputs(&inputs, args.input_format, args.line)?;
    for e in &report.errors {
        crate::ui::error(&e.to_string());
    }
    stdout_write(|w| w.write_all(report.text(args.json).as_bytes()))?;
    Ok(report.exit())
}
