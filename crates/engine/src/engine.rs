//! One transcript through the whole pipeline: layers the configuration, asks the
//! policy for a proposal, applies the user's verdicts (pre-compact hook, summarizer)
//! to it, runs the post-compact hook, and hands back everything the outputs are
//! written from.

use crate::config::{self, Config, Layered};
use crate::error::{CommandFailure, Error, Result};
use crate::formats::InputFormat;
use crate::hooks::{self, Verdict};
use crate::inputs::Input;
use crate::policy::{self, Action, Decision, Event, Options, Plan};
use crate::transcript::{self, RecordKind, Transcript};
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};

/// What the command line (or a library caller) asked for, shared by every input of a
/// run: the `--config` file and flag layers, already checked, and how to run.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// The layers above the session record (`--config` file, then flags).
    layers: config::Builder,
    pub manual: bool,
    pub dry_run: bool,
    /// The input format the user named (`Auto` detects).
    pub input_format: InputFormat,
    /// The format compacted transcripts are written in.
    pub output_format: crate::formats::OutputFormat,
    /// `--output-format openai`: each line says where it comes from (under `rivumi`).
    pub provenance: bool,
    /// Dataset mode: leave bad lines out of the output instead of echoing them.
    pub skip_bad_lines: bool,
    /// Dataset mode: also write each bad line, with its number and error, to this file.
    pub rejects: Option<PathBuf>,
    /// The profile laid between the defaults and the session (SPEC 12).
    profile: config::Profile,
    /// The configuration of a transcript without a session record (dataset lines),
    /// made once.
    no_session: std::sync::OnceLock<Layered>,
    /// Its typed configuration, shared by every line of a dataset (no copy per line).
    no_session_config: std::sync::OnceLock<std::sync::Arc<Config>>,
}

impl Settings {
    /// Settings from a `--config` file's JSON and the flags (typed; a later setting of a
    /// key wins); the file's text, when given, places its errors at line and column.
    pub fn new(config_file: Option<(&Path, &Value, Option<&str>)>, flags: &[config::Setting]) -> Result<Settings> {
        let mut layers = config::Builder::default();
        if let Some((path, value, text)) = config_file {
            layers.file(value, path, &|key| text.map(|t| crate::scan::place_of(t, key)))?;
        }
        layers.flags(flags);
        Ok(Settings { layers, ..Settings::default() })
    }

    /// The same settings under a profile (SPEC 12).
    #[must_use]
    pub fn with_profile(self, profile: config::Profile) -> Settings {
        Settings {
            profile,
            no_session: std::sync::OnceLock::new(),
            no_session_config: std::sync::OnceLock::new(),
            ..self
        }
    }

    /// The same settings with more flags on top.
    #[must_use]
    pub fn with_flags(&self, flags: &[config::Setting]) -> Settings {
        let mut layers = self.layers.clone();
        layers.flags(flags);
        Settings {
            layers,
            no_session: std::sync::OnceLock::new(),
            no_session_config: std::sync::OnceLock::new(),
            ..self.clone()
        }
    }

    pub fn profile(&self) -> config::Profile {
        self.profile
    }

    /// The defaults with the profile laid on them.
    fn base(&self) -> config::Builder {
        let mut base = config::Builder::default();
        base.profile(self.profile);
        base
    }

    /// Settings that apply a typed configuration over every transcript's session
    /// record, as flags would. A value the configuration rules refuse (a budget of 0,
    /// a threshold outside (0, 1]) is an error naming its key, as it would be in a file.
    ///
    /// ```
    /// use rivumi_engine::config::{Config, Task};
    /// use rivumi_engine::engine::Settings;
    /// let cfg = Config { task: Task { max_total_tokens: Some(100_000) }, ..Config::default() };
    /// let settings = Settings::from_config(&cfg).unwrap();
    /// let zero = Config { task: Task { max_total_tokens: Some(0) }, ..Config::default() };
    /// assert!(Settings::from_config(&zero).unwrap_err().to_string().contains("task.max_total_tokens"));
    /// ```
    pub fn from_config(cfg: &Config) -> Result<Settings> {
        match serde_json::to_value(cfg) {
            Ok(Value::Object(keys)) => {
                let mut layers = config::Builder::default();
                layers.overrides(&keys)?;
                Ok(Settings { layers, ..Settings::default() })
            }
            Ok(_) => Err(Error::Usage("a configuration is an object".into())),
            Err(e) => Err(Error::Usage(format!("the configuration cannot be written: {e}"))),
        }
    }

    /// Keys the user set (`--config` or flags) that cannot act on the path this
    /// transcript takes, each with the flag that would make it act (SPEC 12).
    pub fn inert(&self, config: &Config, name: &Path) -> Vec<String> {
        self.inert_keys(config).iter().map(|k| k.said(name, "this transcript takes")).collect()
    }

    /// [`Settings::inert`] for a dataset, said once before its rows: the rows carry no
    /// layer that chooses the path, so the flags and the config file decide it.
    pub fn inert_for_rows(&self, name: &Path) -> Vec<String> {
        self.inert_keys_for_rows().iter().map(|k| k.said(name, "its rows take")).collect()
    }

    /// The keys of [`Settings::inert_for_rows`], for a caller that words them itself
    /// (the Python package names keys, not flags).
    pub fn inert_keys_for_rows(&self) -> Vec<Inert> {
        self.inert_keys(&self.layers.clone().build().config)
    }

    /// The keys set that cannot act on the path `config` chooses.
    fn inert_keys(&self, config: &Config) -> Vec<Inert> {
        use config::RuntimeKind::{AgentRunner, Conversation};
        let (keys, other): (&[(&'static str, &'static str)], _) = match config.runtime.kind {
            Conversation => (
                &[("task.max_total_tokens", "--max-total-tokens"), ("fallback.target_tokens", "--target-tokens")],
                AgentRunner,
            ),
            // The context window still shows in the agent runner's re-anchor block.
            AgentRunner => (
                &[("runtime.native_compaction", "--native-compaction"), ("trigger.limit_tokens", "--trigger-limit")],
                Conversation,
            ),
        };
        keys.iter()
            .filter(|(k, _)| self.layers.sets(k))
            .map(|&(key, flag)| Inert { key, flag, path: config.runtime.kind.as_str(), other: other.as_str() })
            .collect()
    }

    /// The commands these settings would run (hooks, summarizer), by key.
    pub fn commands(&self) -> Vec<&'static str> {
        let cfg = self.layers.clone().build().config;
        let set = [
            ("hooks.pre_compact", cfg.hooks.pre_compact.is_some()),
            ("hooks.post_compact", cfg.hooks.post_compact.is_some()),
            ("summarizer", cfg.summarizer.is_some()),
        ];
        set.into_iter().filter(|(_, on)| *on).map(|(k, _)| k).collect()
    }

    /// The typed configuration for one transcript and the warnings its layers gave; a
    /// transcript without a session record shares one configuration with all others.
    pub fn config_of(&self, t: &Transcript<'_>, file: &Path) -> Result<(std::sync::Arc<Config>, Vec<String>)> {
        if t.session.is_none() {
            let shared = self.no_session_config.get_or_init(|| {
                std::sync::Arc::new(self.config_for(t, file).expect("no session layer, no error").config)
            });
            let warnings = self.no_session.get().map(|l| l.warnings.clone()).unwrap_or_default();
            return Ok((shared.clone(), warnings));
        }
        let Layered { config, warnings, .. } = self.config_for(t, file)?;
        Ok((std::sync::Arc::new(config), warnings))
    }

    /// The configuration for one transcript: defaults < session < file < flags. A value
    /// of its session record that is refused is named at its line and column (an
    /// importer's session layer holds only values it checked).
    pub fn config_for(&self, t: &Transcript<'_>, file: &Path) -> Result<Layered> {
        let Some(s) = t.session.as_ref() else {
            return Ok(self.no_session.get_or_init(|| self.layers.over(&self.base()).build()).clone());
        };
        let mut base = config::Builder::default();
        base.profile_for(self.profile, s.get("agent_version").and_then(Value::as_str));
        base.session(s, file)?;
        self.layers.over(&base).build_for_session(file, &|path| t.session_value_at(path))
    }
}

/// The input as read, for a session written back in the agent's own format.
#[derive(Debug, Clone)]
pub struct Original {
    pub format: crate::formats::InputFormat,
    pub bytes: std::sync::Arc<[u8]>,
    /// For each canonical line (index 0 is line 1), the input record it restates.
    pub records: Vec<Option<usize>>,
}

impl Original {
    /// The input record an item was read from (an index among the input's records).
    pub fn record_of(&self, t: &Transcript<'_>, item: usize) -> Option<usize> {
        let line = t.records[t.items[item].record].line;
        self.records.get(line.checked_sub(1)?).copied().flatten()
    }
}

/// A processed transcript: the parsed input, its configuration and the plan.
pub struct Processed<'a> {
    pub transcript: Transcript<'a>,
    pub transcript_name: PathBuf,
    pub config: std::sync::Arc<Config>,
    pub plan: Plan,
    pub warnings: Vec<String>,
    /// The format the transcript is written in.
    pub output_format: crate::formats::OutputFormat,
    /// Whether a chat line says where it comes from.
    pub provenance: bool,
    /// The input as read and its format, kept when the transcript is written back in
    /// the agent's own format (`--output-format claude-code|codex`).
    pub original: Option<Original>,
    /// Where every record of the input went (SPEC 1 "Accounting"): the importer's
    /// count, or the canonical transcript's own.
    pub accounting: transcript::Accounting,
}

impl Processed<'_> {
    /// A refused checkpoint is a failure of this transcript (exit 4, nothing written).
    pub fn refusal(&self) -> Option<Error> {
        let reason = self.plan.decision.reasons.iter().find(|r| r.code == policy::ReasonCode::CheckpointRefused)?;
        Some(Error::CheckpointRefused { file: self.transcript_name.clone(), reason: reason.message.clone() })
    }

    pub fn decision_json(&self) -> String {
        decision_json(&self.plan.decision)
    }
}

/// A decision as the pretty JSON `decision.json` holds.
pub fn decision_json(d: &Decision) -> String {
    let mut s = serde_json::to_string_pretty(d).expect("decision serializes");
    s.push('\n');
    s
}

/// Parses canonical bytes and runs the policy, hooks included (unless `dry_run`).
/// `name` is the input's display name (used in errors and given to hooks).
pub fn process<'a>(canonical: &'a [u8], name: &Path, settings: &Settings) -> Result<Processed<'a>> {
    process_parsed(transcript::parse(canonical, name)?, name, settings)
}

/// Runs the policy, hooks included (unless `dry_run`), on a transcript already read.
pub fn process_parsed<'a>(t: Transcript<'a>, name: &Path, settings: &Settings) -> Result<Processed<'a>> {
    let (config, mut warnings) = settings.config_of(&t, name)?;
    if t.unknown_records > 0 {
        warnings.push(format!("{}: {} record(s) of unknown type passed through", name.display(), t.unknown_records));
    }
    for &i in &t.orphan_results {
        let id = &t.items[i].id;
        // Line numbers only mean something in a canonical input.
        let at = if matches!(settings.input_format, InputFormat::Rivumi | InputFormat::Auto) {
            format!(":{}", t.item_line(i))
        } else {
            String::new()
        };
        warnings
            .push(format!("{}{at}: tool result {id:?} answers a call that is not in the transcript", name.display()));
    }
    let input_format = match settings.input_format {
        InputFormat::Auto => InputFormat::Rivumi,
        f => f,
    };
    let opts = Options { manual: settings.manual, input_format };
    let mut proposal = policy::propose(&t, &config, &opts);
    if !settings.dry_run {
        if let (Some(_), Some(cmd)) = (proposal.compaction(), &config.hooks.pre_compact) {
            let payload = hook_payload("pre_compact", proposal.decision(), name, None);
            if let Verdict::Deny(reason) = hooks::pre_compact(cmd, &payload, config.hooks.timeout_secs)? {
                proposal.deny(&reason);
            }
        }
        if let (Some(items), Some(cmd)) = (proposal.checkpoint_items(), &config.summarizer) {
            let text = summarize(cmd, &t, items, config.summarizer_timeout_secs)?;
            proposal.use_summary(text);
        }
    }
    let mut plan = proposal.finish();
    if !settings.dry_run {
        run_post_hook(&t, &config, &mut plan, name, &mut warnings);
    }
    // A size to fit that nothing reaches is said, whatever else is printed.
    if let Some(r) = plan.decision.reasons.iter().find(|r| r.code == policy::ReasonCode::TargetUnreachable) {
        warnings.push(format!("{}: {}: {}", name.display(), r.code.as_str(), r.message));
    }
    warnings.extend(settings.inert(&config, name));
    warnings.extend(over_window(&config, plan.decision.used, t.session.as_ref(), name));
    let output_format = settings.output_format;
    let accounting = t.accounting();
    Ok(Processed {
        accounting,
        transcript: t,
        transcript_name: name.to_path_buf(),
        config,
        plan,
        warnings,
        output_format,
        provenance: settings.provenance,
        original: None,
    })
}

/// Runs the user's summarizer on the removed turns (canonical records as a JSON array).
fn summarize(cmd: &str, t: &Transcript<'_>, items: &[usize], timeout: u64) -> Result<String> {
    // The records as they are in the input (each one JSON object, checked when read).
    let records: Vec<&str> = items.iter().map(|&i| t.line_text(t.items[i].record).trim()).collect();
    let input = format!("[{}]", records.join(","));
    let failed = |failure| Error::Command { which: crate::error::Command::Summarizer, command: cmd.into(), failure };
    let done = hooks::run_command(cmd, input.as_bytes(), timeout).map_err(failed)?;
    match done.code {
        Some(0) if done.stdout_cut => Err(failed(CommandFailure::TooLong(hooks::OUTPUT_LIMIT))),
        // The summarizer's text is injected as it printed it, line by line, but what could
        // drive a terminal or forge a line (controls, bidirectional marks, U+2028/U+2029)
        // is escaped as in every text the tool injects: it may echo the transcript.
        Some(0) if !done.stdout.trim().is_empty() => {
            Ok(done.stdout.trim_end().lines().map(crate::ui::escape).collect::<Vec<_>>().join("\n"))
        }
        Some(0) => Err(failed(CommandFailure::Empty)),
        Some(code) => Err(failed(CommandFailure::Exit { code, stderr: crate::ui::escape(done.stderr.trim()) })),
        None => Err(failed(CommandFailure::Killed { stderr: crate::ui::escape(done.stderr.trim()) })),
    }
}

/// The post-compact hook after a fallback, a checkpoint or a completed native lifecycle.
/// Its failure is a warning; a completed lifecycle gets a `post_compact_hook` event so
/// the hook runs once.
fn run_post_hook(t: &Transcript<'_>, config: &Config, plan: &mut Plan, name: &Path, warnings: &mut Vec<String>) {
    let Some(cmd) = &config.hooks.post_compact else { return };
    let completion = plan.completed_lifecycle.clone();
    let compacted = matches!(plan.decision.action, Action::HistoryFallback | Action::LocalCheckpoint);
    if !compacted && completion.is_none() {
        return;
    }
    let event = completion.as_deref().and_then(|id| completion_event(t, id));
    let payload = hook_payload("post_compact", &plan.decision, name, event);
    // The failure's words (with the command, maybe an absolute path) go to stderr; the
    // journal keeps only the outcome, so it stays free of paths.
    let outcome = match hooks::post_compact(cmd, &payload, config.hooks.timeout_secs) {
        Ok(()) => policy::HookOutcome::Ok,
        Err(m) => {
            warnings.push(format!("{}: {m}", name.display()));
            policy::HookOutcome::Failed
        }
    };
    plan.journal.push(policy::Entry::PostCompactHook { outcome, id: completion.clone() });
    if let Some(id) = completion {
        let mut fields = serde_json::Map::new();
        fields.insert("outcome".into(), json!(outcome.as_str()));
        plan.appended.push(policy::Injected::Event(policy::EventRecord::with_fields(
            Event::PostCompactHook,
            id,
            fields,
        )));
    }
}

/// The `compaction_completed` event record with this id, as it is in the input.
fn completion_event<'a>(t: &Transcript<'a>, id: &str) -> Option<&'a str> {
    let is_it = |r: &&transcript::Record<'_>| matches!(&r.kind, RecordKind::Event(e) if Event::CompactionCompleted.is(&e.name) && e.id.as_deref() == Some(id));
    let at = t.records.iter().rposition(|r| is_it(&r))?;
    Some(t.line_text(at).trim())
}

/// What a pre- or post-compact hook reads on its standard input (SPEC 7).
#[derive(serde::Serialize)]
struct HookPayload<'a> {
    hook: &'a str,
    trigger: &'a policy::Trigger,
    path: &'a policy::PressurePath,
    action: &'a str,
    /// The transcript's path; null for standard input.
    transcript: Option<String>,
    decision: &'a Decision,
    /// The completed lifecycle's event record, as the input holds it (checked when read).
    event: Option<&'a serde_json::value::RawValue>,
}

/// The payload as the JSON text the hook reads.
fn hook_payload(hook: &str, decision: &Decision, name: &Path, event: Option<&str>) -> String {
    let event = event.map(|e| serde_json::from_str::<&serde_json::value::RawValue>(e).expect("a record is JSON"));
    let payload = HookPayload {
        hook,
        trigger: &decision.trigger,
        path: &decision.path,
        action: decision.action.as_str(),
        transcript: (name != Path::new("-")).then(|| name.display().to_string()),
        decision,
        event,
    };
    serde_json::to_string(&payload).expect("a payload serializes")
}

/// A conversation figure above the context window is not a full context: the window is
/// wrong for the session (a model the table lacks, or a window set too small).
pub fn over_window(
    config: &Config,
    used: Option<u64>,
    session: Option<&Map<String, Value>>,
    name: &Path,
) -> Option<String> {
    let window = config.runtime.context_window?;
    let used = used.filter(|&u| u > window && config.runtime.kind == config::RuntimeKind::Conversation)?;
    let model = session.and_then(|s| s.get("model")).and_then(Value::as_str);
    let whose = model.map_or(String::new(), |m| format!(" (model {})", crate::ui::escape(m)));
    Some(format!(
        "{}: the occupancy {used} is above the {window}-token context window{whose}: that window cannot be the one the session ran with; set runtime.context_window (--context-window)",
        name.display()
    ))
}

/// Reads one input and imports it (canonical JSONL bytes, and where they came from).
pub fn load(input: &Input, format: InputFormat) -> Result<crate::formats::Canonical> {
    let raw = input.read()?;
    crate::formats::import(raw, &input.path, format)
}

thread_local! {
    /// Set by [`as_last_work`] while the process's last input is processed.
    static LAST_WORK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f`, the process's last work before it exits, so that the transcript
/// [`process_input`] made is not freed: a large one holds some hundred thousand small
/// strings, and freeing them one by one (and the allocator giving the memory back) was
/// most of what a 150 MB run did after its last write (8.5 → 1.2 ms under strace),
/// for nothing the exit does not do at once (as `clang -disable-free` does). Only the
/// command line calls it, for its one input.
pub fn as_last_work<T>(f: impl FnOnce() -> T) -> T {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            LAST_WORK.with(|l| l.set(self.0));
        }
    }
    let _restore = Restore(LAST_WORK.with(|l| l.replace(true)));
    f()
}

/// Reads, imports and processes one input (a file, `-`, compressed or not, in any
/// format), then hands the result to `f`: what every command does with one transcript.
pub fn process_input<T>(input: &Input, settings: &Settings, f: impl FnOnce(&Processed<'_>) -> Result<T>) -> Result<T> {
    let raw = input.map_or_read()?;
    // The agent's own format is written from the input as read.
    let original: Option<std::sync::Arc<[u8]>> = settings.output_format.resumes().map(|_| raw.to_vec().into());
    let canonical = crate::formats::import(raw, &input.path, settings.input_format)?;
    if let Some(needs) = settings.output_format.resumes().filter(|&f| f != canonical.format) {
        return Err(Error::Usage(format!(
            "--output-format {needs} writes a {needs} session back: {} is {}",
            input.display_name(),
            canonical.format
        )));
    }
    if let Some(why) = canonical.not_resumable.filter(|_| original.is_some()) {
        return Err(Error::Usage(format!(
            "--output-format {} writes a session back for its agent to resume: {} is {why}; leave --output-format out to write the compacted transcript",
            canonical.format,
            input.display_name()
        )));
    }
    let mut s = settings.clone();
    s.input_format = canonical.format;
    let bytes = &canonical.bytes;
    let t = canonical.transcript(&input.path)?;
    // The configuration's errors first: they say more than that there is no item.
    s.config_of(&t, &input.path).map_err(|e| canonical.relocate(e))?;
    let accounting = canonical.accounting_of(&t, &input.path)?;
    let mut done = process_parsed(t, &input.path, &s).map_err(|e| canonical.relocate(e))?;
    done.accounting = accounting;
    // A mapped input that shrank meanwhile was read as zeros: nothing made of it counts,
    // and nothing made of it is committed while `f` writes.
    bytes.intact(&input.path)?;
    done.original =
        original.map(|bytes| Original { format: canonical.format, bytes, records: canonical.source_records.clone() });
    done.warnings.splice(0..0, canonical.warnings.clone());
    let out = bytes.current(|| f(&done));
    bytes.intact(&input.path)?;
    if LAST_WORK.with(std::cell::Cell::get) {
        // The process exits next: its memory goes at once.
        std::mem::forget(done);
        std::mem::forget(canonical);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{as_last_work, LAST_WORK};

    #[test]
    fn the_last_work_is_marked_only_while_it_runs() {
        let marked = || LAST_WORK.with(std::cell::Cell::get);
        assert!(!marked());
        assert!(as_last_work(marked));
        assert!(as_last_work(|| as_last_work(marked) && marked()), "nested, the outer mark stays");
        assert!(!marked(), "unmarked after");
        let panicked = std::panic::catch_unwind(|| as_last_work(|| panic!("work")));
        assert!(panicked.is_err() && !marked(), "unmarked after a panic");
    }
}

/// A key the user set that cannot act on the path a transcript takes (SPEC 12): the
/// key, its flag, that path and the other one, on which it would act.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inert {
    pub key: &'static str,
    pub flag: &'static str,
    pub path: &'static str,
    pub other: &'static str,
}

impl Inert {
    /// The warning as the command line words it, `takes` saying what takes the path.
    pub fn said(&self, name: &Path, takes: &str) -> String {
        let Inert { key, flag, path, other } = self;
        format!(
            "{}: {key} ({flag}) does not act on the {path} path {takes}; it acts on the {other} path: add --runtime {other}",
            name.display()
        )
    }
}
