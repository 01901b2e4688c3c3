//! One transcript through the whole pipeline: layers the configuration, plans, asks
//! the user's hooks, and hands back everything the outputs are written from.

use crate::config::{Config, Layer};
use crate::error::{Error, Result};
use crate::hooks::{self, Verdict};
use crate::policy::{self, Action, Options, Plan};
use crate::transcript::{self, Transcript};
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
        debug_assert!(cfg.sources.values().all(|l| *l >= Layer::Default));
        Ok(cfg)
    }
}

/// A processed transcript: the parsed input, its configuration and the plan.
pub struct Processed<'a> {
    pub transcript: Transcript<'a>,
    pub config: Config,
    pub plan: Plan,
    pub warnings: Vec<String>,
}

impl Processed<'_> {
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
        warnings.push(format!(
            "{}:{}: tool result {id:?} answers a call that is not in the transcript",
            name.display(),
            t.item_line(i)
        ));
    }
    let input_format = if settings.input_format.is_empty() || settings.input_format == "auto" {
        "rivumi".to_string()
    } else {
        settings.input_format.clone()
    };
    let mut opts = Options { manual: settings.manual, input_format, denied_by_hook: None };
    let mut plan = policy::plan(&t, &config, &opts);
    if plan.gated && !settings.dry_run {
        if let Some(cmd) = &config.pre_compact {
            let payload = hook_payload("pre_compact", &plan, name, Value::Null);
            match hooks::pre_compact(cmd, &payload, config.hook_timeout_secs).map_err(Error::Failed)? {
                Verdict::Allow => {}
                Verdict::Deny(reason) => {
                    opts.denied_by_hook = Some(reason);
                    plan = policy::plan(&t, &config, &opts);
                }
            }
        }
    }
    if !settings.dry_run && post_hook_due(&plan) {
        if let Some(cmd) = &config.post_compact {
            let payload = hook_payload("post_compact", &plan, name, Value::Null);
            let outcome = hooks::post_compact(cmd, &payload, config.hook_timeout_secs);
            let (ok, message) = match outcome {
                Ok(()) => (true, Value::Null),
                Err(m) => {
                    warnings.push(format!("{}: {m}", name.display()));
                    (false, json!(m))
                }
            };
            plan.journal
                .push("post_compact_hook", json!({"outcome": if ok {"ok"} else {"failed"}, "message": message}));
        }
    }
    Ok(Processed { transcript: t, config, plan, warnings })
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
