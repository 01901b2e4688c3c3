//! `check`: golden-file regression over case folders (the work is in `crate::check`).

use super::common::{settings, stdout_write};
use super::{CaseFlags, CheckArgs};
use crate::check::{CaseSettings, Format, Mode};
use crate::error::{Error, Exit, Result};

pub(super) fn check(args: CheckArgs) -> Result<Exit> {
    let mode = if args.bless {
        Mode::Bless
    } else if args.pending {
        Mode::Pending
    } else if args.accept || !args.accept_file.is_empty() {
        Mode::Accept(args.accept_file.clone())
    } else {
        Mode::Check
    };
    let opts = crate::check::CheckOptions {
        mode,
        format: if args.json { Format::Json } else { args.format },
        color: crate::ui::color_stdout(),
        cases: args.cases.clone(),
        allow_case_commands: args.allow_case_commands,
    };
    let parse = |flags: &[String]| -> Result<CaseSettings> {
        let parsed = <CaseFlags as clap::Parser>::try_parse_from(flags).map_err(|e| {
            let first = e.to_string().lines().next().unwrap_or("").to_string();
            Error::Usage(first.strip_prefix("error: ").unwrap_or(&first).to_string())
        })?;
        let mut s = settings(&parsed.policy, Some(&parsed.actions), false)?;
        s.output_format = parsed.output_format;
        Ok(CaseSettings { settings: s, profile_given: parsed.policy.profile.is_some() })
    };
    let mut report = Vec::new();
    // `--accept-file PATH` alone: the checked folder is the one above the file's case.
    let dir = match (&args.dir, args.accept_file.first()) {
        (Some(dir), _) => dir.clone(),
        (None, Some(file)) => {
            let case = file.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
            case.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(std::path::Path::new(".")).to_path_buf()
        }
        (None, None) => return Err(Error::Usage("check needs DIR".into())),
    };
    let code = crate::check::check(&dir, &opts, &parse, &mut report)?;
    stdout_write(|w| w.write_all(&report))?;
    Ok(code)
}
