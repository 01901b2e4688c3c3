//! `check`: golden-file regression over case folders (the work is in `crate::check`).

use super::common::{settings, stdout_write};
use super::{CaseFlags, CheckArgs};
use crate::engine::Settings;
use crate::error::{Error, Exit, Result};

pub(super) fn check(args: CheckArgs) -> Result<Exit> {
    let opts = crate::check::CheckOptions {
        bless: args.bless,
        color: crate::ui::color_stdout(),
        json: args.json,
        cases: args.cases.clone(),
        allow_case_commands: args.allow_case_commands,
    };
    let parse = |flags: &[String]| -> Result<Settings> {
        let parsed = <CaseFlags as clap::Parser>::try_parse_from(flags).map_err(|e| {
            let first = e.to_string().lines().next().unwrap_or("").to_string();
            Error::Usage(first.strip_prefix("error: ").unwrap_or(&first).to_string())
        })?;
        settings(&parsed.policy, Some(&parsed.actions), false)
    };
    let mut report = Vec::new();
    let code = crate::check::check(&args.dir, &opts, &parse, &mut report)?;
    stdout_write(|w| w.write_all(&report))?;
    Ok(code)
}
