//! `decide`: the decision and its reasons for people (with the per-turn chart), or as
//! JSON for programs.

use super::common::{print_warnings, settings, single_input, stdout_write, with_processed};
use super::DecideArgs;
use crate::error::{Exit, Result};

pub(super) fn decide(args: DecideArgs) -> Result<Exit> {
    let settings = settings(&args.policy, true)?;
    let input = single_input(&args.input, args.policy.input_format)?;
    with_processed(&input, &settings, |done| {
        print_warnings(done);
        let text = if args.json { crate::report::decision_with_turns(done) } else { crate::report::decision_report(done) };
        stdout_write(|w| w.write_all(text.as_bytes()))
    })
}
