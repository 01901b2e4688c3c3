//! `check`: golden-file regression over case folders (the work is in `crate::check`).

use super::common::{settings, stdout_write};
use super::{CaseFlags, CheckArgs};
use crate::engine::Settings;
use crate::error::{Error, Exit, Result};
use std::io::{self, IsTerminal};

pub(super) fn check(args: CheckArgs) -> Result<Exit> {
    let color = io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let opts = crate::check::CheckOptions { bless: args.bless, color, allow_case_commands: args.allow_case_commands };
    let parse = |flags: &[String]| -> Result<Settings> {
        let parsed = <CaseFlags as clap::Parser>::try_parse_from(flags).map_err(|e| {
            Error::Usage(format!("bad flags in a case's args file: {}", e.to_string().lines().next().unwrap_or("")))
        })?;
        settings(&parsed.policy, false)
    };
    let mut report = Vec::new();
    let code = crate::check::check(&args.dir, &opts, &parse, &mut report)?;
    stdout_write(|w| w.write_all(&report))?;
    Ok(code)
}
