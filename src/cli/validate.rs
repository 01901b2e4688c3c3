//! `validate`: every broken invariant of the inputs, with file and line.

use super::common::{load, stdout_write};
use super::inputs;
use super::ValidateArgs;
use crate::error::{Exit, Result};
use crate::formats::InputFormat;
use crate::ui;
use std::path::PathBuf;

pub(super) fn validate(args: ValidateArgs) -> Result<Exit> {
    let inputs = inputs::expand(&args.inputs, args.input_format, None)?;
    let mut all = Vec::new();
    let mut unreadable = false;
    for input in &inputs {
        match load(input, args.input_format) {
            Ok(canonical) => {
                // Imported files are validated in their canonical form: say so, since
                // the line numbers are those of that form.
                let shown = if canonical.format == InputFormat::Rivumi {
                    input.path.clone()
                } else {
                    PathBuf::from(format!("{} (as canonical {})", input.path.display(), canonical.format))
                };
                all.extend(crate::validate::validate(&canonical.bytes, &shown));
            }
            Err(e) => {
                unreadable = true;
                ui::error(&e.to_string());
            }
        }
    }
    let text = if args.json {
        let mut s = serde_json::to_string_pretty(&all).expect("json");
        s.push('\n');
        s
    } else {
        let mut s: String = all
            .iter()
            .map(|v| format!("{}:{}: {}: {}\n", ui::escape(&v.file), v.line, v.code, ui::escape(&v.message)))
            .collect();
        s.push_str(&format!("{} violation(s) in {} transcript(s)\n", all.len(), inputs.len()));
        s
    };
    stdout_write(|w| w.write_all(text.as_bytes()))?;
    Ok(if unreadable {
        Exit::BadInput
    } else if all.is_empty() {
        Exit::Ok
    } else {
        Exit::Differences
    })
}
