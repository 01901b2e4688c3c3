//! `--output-format claude-code|codex`: the compacted session written the way the agent
//! that recorded it writes its own compactions, so that the agent can resume it. The
//! input file is copied unchanged and the compaction is appended after it:
//!
//! - Claude Code ([`claude_code`]): a `compact_boundary` system record, a user message
//!   marked `isCompactSummary` carrying the summary (and the re-anchor block), and the
//!   retained records copied after it with fresh uuids, re-parented in order.
//! - Codex ([`codex`]): a `compacted` record whose `replacement_history` is the
//!   compacted history, then a `context_compacted` event.
//! - Gemini CLI ([`gemini_cli`]): a `$set` of `messages`, the new history, as its own
//!   compression writes (a session of the older single-document shape is first written
//!   as JSON Lines, as Gemini CLI does when it resumes one).
//!
//! Only a plan that replaces history (a summary or a checkpoint) is a compaction; any
//! other plan leaves the session as it was (the caller says so).
//!
//! What is written was checked by reading it back with this tool's own importers (the
//! context starts at the new boundary, occupancy drops, every `parentUuid` resolves, a
//! second run adds nothing), not by running Claude Code or Codex.

mod claude_code;
mod codex;
mod gemini_cli;

use crate::engine::{Processed, Settings};
use crate::error::Error;
use crate::formats::InputFormat;
use crate::inputs::Input;
use crate::policy::{Step, Walk};
use crate::transcript::Synthetic;
use std::io::{self, Write};

/// Writes `original` (the input as read) followed by the compaction `done` plans, in
/// the input's own format.
pub fn write(w: &mut dyn Write, done: &Processed<'_>, format: InputFormat, original: &[u8]) -> io::Result<()> {
    if format == InputFormat::GeminiCli {
        let c = Compaction::of(done);
        return gemini_cli::write(w, done, c.as_ref(), original).map_err(|e| io::Error::other(e.to_string()));
    }
    w.write_all(original)?;
    if !original.is_empty() && !original.ends_with(b"\n") {
        w.write_all(b"\n")?;
    }
    let Some(c) = Compaction::of(done) else { return Ok(()) };
    let lines = match format {
        InputFormat::ClaudeCode => claude_code::append(done, &c, original),
        InputFormat::Codex => codex::append(done, &c, original),
        _ => return Err(io::Error::other(format!("no resumable output for {format} input"))),
    }
    .map_err(|e| io::Error::other(e.to_string()))?;
    for line in lines {
        w.write_all(line.to_string().as_bytes())?;
        w.write_all(b"\n")?;
    }
    Ok(())
}

/// Whether the plan is a compaction these formats can record.
pub fn compacts(done: &Processed<'_>) -> bool {
    done.plan.replacement.is_some()
}

/// A session to be written back in the agent's own format with no compaction to record
/// (nothing planned, or a checkpoint refused): nothing is written (exit 4), and the error
/// names the flags that would compact this session, when some would.
pub fn nothing_to_record(input: &Input, settings: &Settings, done: &Processed<'_>) -> Option<Error> {
    let format = done.output_format.resumes()?;
    if compacts(done) {
        return None;
    }
    let d = &done.plan.decision;
    let why = d.reasons.last().map_or(String::new(), |r| format!(": {}", crate::ui::escape(&r.message)));
    let hint = if input.is_stdin() { None } else { compacting_flags(input, settings) };
    let hint = hint.map_or_else(
        || "no other path compacts it either (too little history)".to_string(),
        |flags| format!("{flags} would compact it"),
    );
    Some(Error::Failed(format!(
        "{}: --output-format {format} writes a session back with a compaction, and none was planned ({}{why}): nothing was written; {hint}",
        input.display_name(),
        d.action.as_str()
    )))
}

/// The flags under which this input would be compacted: the agent runner's fallback, or
/// a local checkpoint, asked for by hand.
fn compacting_flags(input: &Input, settings: &Settings) -> Option<&'static str> {
    use crate::config::{RuntimeKind, Setting};
    let paths: [(&'static str, Vec<Setting>); 2] = [
        ("--runtime agent-runner --manual", vec![Setting::Runtime(RuntimeKind::AgentRunner)]),
        (
            "--runtime conversation --no-native-compaction --manual",
            vec![Setting::Runtime(RuntimeKind::Conversation), Setting::NativeCompaction(false)],
        ),
    ];
    paths.into_iter().find_map(|(flags, settings_for)| {
        let mut s = settings.with_flags(&settings_for);
        (s.manual, s.dry_run) = (true, true);
        let compacts = crate::engine::process_input(input, &s, |d| Ok(compacts(d) && !d.plan.refused())).ok()?;
        compacts.then_some(flags)
    })
}

/// The compacted context: what follows the new boundary, in order, and the figures of
/// the compaction.
pub struct Compaction<'p> {
    /// The kept items and injected messages (no event: neither agent records ours).
    pub steps: Vec<Step<'p>>,
    /// The text that replaced the removed history.
    pub summary: String,
    pub trigger: &'static str,
    /// The context occupancy before the compaction (what the agent records as its
    /// pre-compaction figure).
    pub pre_tokens: u64,
}

impl<'p> Compaction<'p> {
    /// The context after compaction: the items of the current context that stay (in
    /// order, the replacement where the removed span was) and the injected records
    /// appended after them. `None` when nothing was replaced.
    fn of(done: &'p Processed<'_>) -> Option<Compaction<'p>> {
        let (t, plan) = (&done.transcript, &done.plan);
        let (_, replacement) = plan.replacement.as_ref()?;
        let walk = Walk { from: crate::policy::context_start(t), ..Walk::default() };
        let mut steps = crate::policy::steps(t, plan, walk);
        // A checkpoint starts the context (SPEC 6): what comes before it (an earlier
        // checkpoint, instructions) is not in the context the agent resumes with.
        if replacement.kind == Synthetic::Checkpoint {
            let at = steps.iter().position(|s| matches!(s, Step::Injected(m) if std::ptr::eq(*m, replacement)));
            steps.drain(..at.unwrap_or(0));
        }
        steps.retain(|s| matches!(s, Step::Kept(_) | Step::Injected(_)));
        let summary = steps.iter().find_map(|s| match s {
            Step::Injected(m) => Some(m.content.clone()),
            _ => None,
        });
        let summary = summary.unwrap_or_default();
        let pre_tokens = plan.pre_tokens.expect("a plan that replaces records compacts");
        let trigger = match plan.decision.trigger {
            crate::policy::Trigger::Manual => "manual",
            crate::policy::Trigger::Auto => "auto",
        };
        Some(Compaction { steps, summary, trigger, pre_tokens })
    }
}

/// A uuid (version 4 layout) derived from `parts`: fresh for every copied record, and
/// the same for the same input, so that outputs can be pinned.
pub fn derived_uuid(parts: &[&str]) -> String {
    let mut a: u64 = 0xcbf2_9ce4_8422_2325;
    let mut b: u64 = 0x8422_2325_cbf2_9ce4;
    for p in parts {
        for &byte in p.as_bytes().iter().chain(std::iter::once(&0xff)) {
            a = (a ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
            b = (b ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3).rotate_left(5);
        }
    }
    // A finalizer, so that near inputs give unrelated-looking uuids.
    let mix = |mut z: u64| {
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let hi = mix(a);
    let lo = mix(b ^ a.rotate_left(17));
    let hex = format!("{hi:016x}{lo:016x}");
    let h = hex.as_bytes();
    let s = |r: std::ops::Range<usize>| std::str::from_utf8(&h[r]).expect("hex is ASCII").to_string();
    // version 4, variant 10xx
    let variant = ["8", "9", "a", "b"][usize::from(h[16] % 4)];
    format!("{}-{}-4{}-{}{}-{}", s(0..8), s(8..12), s(13..16), variant, s(17..20), s(20..32))
}

#[cfg(test)]
mod tests {
    #[test]
    fn derived_uuids_are_uuid_shaped_distinct_and_stable() {
        let a = super::derived_uuid(&["s", "u1"]);
        let b = super::derived_uuid(&["s", "u2"]);
        assert_ne!(a, b);
        assert_eq!(a, super::derived_uuid(&["s", "u1"]));
        assert_ne!(super::derived_uuid(&["s", "u1"]), super::derived_uuid(&["su", "1"]));
        for u in [a, b] {
            let parts: Vec<&str> = u.split('-').collect();
            assert_eq!(parts.iter().map(|p| p.len()).collect::<Vec<_>>(), [8, 4, 4, 4, 12], "{u}");
            assert!(parts[2].starts_with('4') && "89ab".contains(&parts[3][..1]), "{u}");
        }
    }
}
