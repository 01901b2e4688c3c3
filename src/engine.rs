//! One transcript through the whole pipeline: layers the configuration, plans, asks
//! the user's hooks, and hands back everything the outputs are written from.

use crate::config::Config;
use crate::error::{Error, Result};
use crate::hooks::{self, Verdict};
use crate::policy::{self, Action, Options, Plan};
use crate::transcript::{self, RecordKind, Transcript};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// What the command line asked for, shared by every input of a run.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// `--config FILE`, already parsed.
    pub config_file: Option<(PathBuf, Value)>,
    /// Flag values, applied last.
    pub flags: Vec<(&'static str, Value)>,
    pub manual: bool,
    pub dry_run: bool,
    /// The input format the user named (`auto` detects).
    pub input_format: String,
}

impl Settings {
    /// The commands these settings would run (hooks, summarizer), by key.
    pub fn commands(&self) -> Vec<&'static str> {
        const COMMANDS: [&str; 3] = ["hooks.pre_compact", "hooks.post_compact", "summarizer"];
        let in_file = |key: &str| {
            let Some((_, file)) = &self.config_file else { return false };
            let at = match key.split_once('.') {
                Some((section, k)) => file.get(section).and_then(|s| s.get(k)),
                None => file.get(key),
            };
            at.is_some_and(|v| !v.is_null())
        };
        COMMANDS.into_iter().filter(|k| in_file(k) || self.flags.iter().any(|(f, v)| f == k && !v.is_null())).collect()
    }

    /// The configuration for one transcript: defaults < session < file < flags.
    pub fn config_for(&self, session: Option<&serde_json::Map<String, Value>>, file: &Path) -> Result<Config> {
        let mut cfg = Config::default();
        if let Some(s) = session {
            cfg.apply_session(s, file)?;
        }
        if let Some((path, value)) = &self.config_file {
            cfg.apply_file(value, path)?;
        }
        for (key, value) in &self.flags {
            cfg.apply_flag(key, value.clone()).map_err(|m| Error::Usage(format!("--{key}: {m}")))?;
        }
        Ok(cfg)
    }
}

/// A processed transcript: the parsed input, its configuration and the plan.
pub struct Processed<'a> {
    pub transcript: Transcript<'a>,
    pub transcript_name: PathBuf,
    pub config: Config,
    pub plan: Plan,
    pub warnings: Vec<String>,
}

impl Processed<'_> {
    /// A refused checkpoint is a failure of this transcript (exit 4, nothing written).
    pub fn refusal(&self) -> Option<Error> {
        let reason = self.plan.decision.reasons.iter().find(|r| r.code == "checkpoint_refused")?;
        self.plan.refused.then(|| Error::Failed(format!("{}: {}", self.transcript_name.display(), reason.message)))
    }

    pub fn decision_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(&self.plan.decision).expect("decision serializes");
        s.push('\n');
        s
    }
}

/// Parses canonical bytes and runs the policy, hooks included (unless `dry_run`).
/// `name` is the input's display name (used in errors and given to hooks).
pub fn process<'a>(canonical: &'a [u8], name: &Path, settings: &Settings) -> Result<Processed<'a>> {
    let t = transcript::parse(canonical, name)?;
    let config = settings.config_for(t.session.as_ref(), name)?;
    let mut warnings = config.warnings.clone();
    if t.unknown_records > 0 {
        warnings.push(format!("{}: {} record(s) of unknown type passed through", name.display(), t.unknown_records));
    }
    for &i in &t.orphan_results {
        let id = &t.items[i].id;
        // Line numbers only mean something in a canonical input.
        let at = if matches!(settings.input_format.as_str(), "rivumi" | "auto" | "") {
            format!(":{}", t.item_line(i))
        } else {
            String::new()
        };
        warnings
            .push(format!("{}{at}: tool result {id:?} answers a call that is not in the transcript", name.display()));
    }
    let input_format = if settings.input_format.is_empty() || settings.input_format == "auto" {
        "rivumi".to_string()
    } else {
        settings.input_format.clone()
    };
    let mut opts = Options { manual: settings.manual, input_format, ..Options::default() };
    let mut plan = policy::plan(&t, &config, &opts);
    if !settings.dry_run {
        if let (true, Some(cmd)) = (plan.gated, &config.pre_compact) {
            let payload = hook_payload("pre_compact", &plan, name, Value::Null);
            if let Verdict::Deny(reason) =
                hooks::pre_compact(cmd, &payload, config.hook_timeout_secs).map_err(Error::Failed)?
            {
                opts.denied_by_hook = Some(reason);
                plan = policy::plan(&t, &config, &opts);
            }
        }
        if let (Action::LocalCheckpoint, Some(cmd)) = (plan.decision.action, &config.summarizer) {
            opts.checkpoint_summary = Some(summarize(cmd, &t, &plan, config.summarizer_timeout_secs)?);
            plan = policy::plan(&t, &config, &opts);
        }
        run_post_hook(&t, &config, &mut plan, name, &mut warnings);
    }
    Ok(Processed { transcript: t, transcript_name: name.to_path_buf(), config, plan, warnings })
}

/// Runs the user's summarizer on the removed turns (canonical records as a JSON array).
fn summarize(cmd: &str, t: &Transcript<'_>, plan: &Plan, timeout: u64) -> Result<String> {
    let records: Vec<Value> = plan
        .removed
        .iter()
        .map(|&i| serde_json::from_str(t.line_text(t.items[i].record)).unwrap_or(Value::Null))
        .collect();
    let input = Value::Array(records).to_string();
    let done =
        hooks::run_command(cmd, input.as_bytes(), timeout).map_err(|e| Error::Failed(format!("summarizer: {e}")))?;
    match done.code {
        Some(0) if done.stdout_cut => Err(Error::Failed(format!(
            "summarizer `{cmd}` printed more than {} bytes, the most a summary may hold",
            hooks::OUTPUT_LIMIT
        ))),
        Some(0) if !done.stdout.trim().is_empty() => Ok(done.stdout.trim_end().to_string()),
        Some(0) => Err(Error::Failed(format!("summarizer `{cmd}` printed no summary"))),
        code => Err(Error::Failed(format!(
            "summarizer `{cmd}` failed ({}): {}",
            code.map_or("killed by a signal".to_string(), |c| format!("exit code {c}")),
            crate::render::escape_controls(done.stderr.trim())
        ))),
    }
}

/// The post-compact hook after a fallback, a checkpoint or a completed native lifecycle.
/// Its failure is a warning; a completed lifecycle gets a `post_compact_hook` event so
/// the hook runs once.
fn run_post_hook(t: &Transcript<'_>, config: &Config, plan: &mut Plan, name: &Path, warnings: &mut Vec<String>) {
    let Some(cmd) = &config.post_compact else { return };
    let completion = plan.completed_lifecycle.clone();
    if !post_hook_due(plan) && completion.is_none() {
        return;
    }
    let event = completion.as_deref().map_or(Value::Null, |id| completion_event(t, id));
    let payload = hook_payload("post_compact", plan, name, event);
    // The failure's words (with the command, maybe an absolute path) go to stderr; the
    // journal keeps only the outcome, so it stays free of paths.
    let outcome = match hooks::post_compact(cmd, &payload, config.hook_timeout_secs) {
        Ok(()) => "ok",
        Err(m) => {
            warnings.push(format!("{}: {m}", name.display()));
            "failed"
        }
    };
    plan.journal.push("post_compact_hook", json!({"outcome": outcome, "id": completion}));
    if let Some(id) = completion {
        plan.appended
            .push(json!({"type": "event", "name": "post_compact_hook", "id": id, "outcome": outcome}).to_string());
    }
}

/// The `compaction_completed` event record with this id, as JSON.
fn completion_event(t: &Transcript<'_>, id: &str) -> Value {
    t.records
        .iter()
        .enumerate()
        .rev()
        .find(|(_, r)| matches!(&r.kind, RecordKind::Event { name, id: Some(i) } if name == "compaction_completed" && i == id))
        .and_then(|(ri, _)| serde_json::from_str(t.line_text(ri)).ok())
        .unwrap_or(Value::Null)
}

fn post_hook_due(plan: &Plan) -> bool {
    matches!(plan.decision.action, Action::HistoryFallback | Action::LocalCheckpoint)
}

fn hook_payload(hook: &str, plan: &Plan, name: &Path, event: Value) -> Value {
    let transcript = if name == Path::new("-") { Value::Null } else { json!(name.display().to_string()) };
    json!({
        "hook": hook,
        "trigger": plan.decision.trigger,
        "path": plan.decision.path,
        "action": plan.decision.action.as_str(),
        "transcript": transcript,
        "decision": plan.decision,
        "event": event,
    })
}
