//! The command line's layer, typed: each flag is one [`Setting`], checked when the
//! flag is parsed and laid on the typed [`Config`] after the JSON layers below it
//! (defaults, profile, session record, `--config` file) are merged and read. A flag's
//! value is never written as JSON and read back.

use super::{Config, Globs, Inject, RuntimeKind, Threshold, Tokenizer};
use std::num::NonZeroU64;

/// One key a flag sets, with its value.
#[derive(Debug, Clone)]
pub enum Setting {
    /// `--runtime` [runtime.kind]
    Runtime(RuntimeKind),
    /// `--native-compaction`, `--no-native-compaction` [runtime.native_compaction]
    NativeCompaction(bool),
    /// `--context-window` [runtime.context_window]
    ContextWindow(NonZeroU64),
    /// `--trigger-limit` [trigger.limit_tokens]
    TriggerLimit(NonZeroU64),
    /// `--target-tokens` [fallback.target_tokens]
    TargetTokens(NonZeroU64),
    /// `--inject`, repeated [inject]
    Inject(Vec<Inject>),
    /// `--max-total-tokens` [task.max_total_tokens]
    MaxTotalTokens(NonZeroU64),
    /// `--threshold` [threshold]
    Threshold(Threshold),
    /// `--tokenizer` [tokenizer]
    Tokenizer(Tokenizer),
    /// `--allow`, repeated [workspace.allowed_paths]
    AllowedPaths(Globs),
    /// `--verify`, repeated [verification]
    Verification(Vec<String>),
    /// `--pre-compact-hook` [hooks.pre_compact]
    PreCompactHook(String),
    /// `--post-compact-hook` [hooks.post_compact]
    PostCompactHook(String),
    /// `--hook-timeout` [hooks.timeout_secs]
    HookTimeout(u64),
    /// `--summarizer` [summarizer]
    Summarizer(String),
}

impl Setting {
    /// The key (JSON path) it sets, as `config` and the error messages name it.
    pub fn key(&self) -> &'static str {
        match self {
            Setting::Runtime(_) => "runtime.kind",
            Setting::NativeCompaction(_) => "runtime.native_compaction",
            Setting::ContextWindow(_) => "runtime.context_window",
            Setting::TriggerLimit(_) => "trigger.limit_tokens",
            Setting::TargetTokens(_) => "fallback.target_tokens",
            Setting::Inject(_) => "inject",
            Setting::MaxTotalTokens(_) => "task.max_total_tokens",
            Setting::Threshold(_) => "threshold",
            Setting::Tokenizer(_) => "tokenizer",
            Setting::AllowedPaths(_) => "workspace.allowed_paths",
            Setting::Verification(_) => "verification",
            Setting::PreCompactHook(_) => "hooks.pre_compact",
            Setting::PostCompactHook(_) => "hooks.post_compact",
            Setting::HookTimeout(_) => "hooks.timeout_secs",
            Setting::Summarizer(_) => "summarizer",
        }
    }

    /// Path globs from `--allow`: an invalid pattern is an error naming the key.
    pub fn allowed_paths(patterns: &[String]) -> std::result::Result<Setting, String> {
        Globs::paths(patterns).map(Setting::AllowedPaths).map_err(|m| format!("workspace.allowed_paths: {m}"))
    }

    /// Sets its key in `config`.
    pub(super) fn apply(&self, config: &mut Config) {
        match self {
            Setting::Runtime(k) => config.runtime.kind = *k,
            Setting::NativeCompaction(on) => config.runtime.native_compaction = *on,
            Setting::ContextWindow(n) => config.runtime.context_window = Some(n.get()),
            Setting::TriggerLimit(n) => config.trigger.limit_tokens = Some(n.get()),
            Setting::TargetTokens(n) => config.fallback.target_tokens = Some(n.get()),
            Setting::Inject(what) => config.inject.clone_from(what),
            Setting::MaxTotalTokens(n) => config.task.max_total_tokens = Some(n.get()),
            Setting::Threshold(t) => config.threshold = *t,
            Setting::Tokenizer(t) => config.tokenizer = *t,
            Setting::AllowedPaths(g) => config.workspace.allowed_paths = g.clone(),
            Setting::Verification(v) => config.verification.clone_from(v),
            Setting::PreCompactHook(c) => config.hooks.pre_compact = Some(c.clone()),
            Setting::PostCompactHook(c) => config.hooks.post_compact = Some(c.clone()),
            Setting::HookTimeout(s) => config.hooks.timeout_secs = *s,
            Setting::Summarizer(c) => config.summarizer = Some(c.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{keys, Builder, Layer};
    use serde_json::Value;
    use std::path::Path;

    fn one_of_each() -> Vec<Setting> {
        let n = |v| NonZeroU64::new(v).unwrap();
        vec![
            Setting::Runtime(RuntimeKind::Conversation),
            Setting::NativeCompaction(true),
            Setting::ContextWindow(n(7)),
            Setting::TriggerLimit(n(8)),
            Setting::TargetTokens(n(9)),
            Setting::Inject(vec![Inject::Summary]),
            Setting::MaxTotalTokens(n(10)),
            Setting::Threshold(Threshold::new(0.5).unwrap()),
            Setting::Tokenizer(Tokenizer::O200k),
            Setting::allowed_paths(&["src/**".to_string()]).unwrap(),
            Setting::Verification(vec!["make".into()]),
            Setting::PreCompactHook("pre".into()),
            Setting::PostCompactHook("post".into()),
            Setting::HookTimeout(3),
            Setting::Summarizer("sum".into()),
        ]
    }

    /// Each setting changes exactly the key it names, and `config` shows it from the
    /// flag layer.
    #[test]
    fn each_setting_sets_the_key_it_names_and_no_other() {
        let defaults: std::collections::BTreeMap<String, Value> = keys().into_iter().collect();
        for s in one_of_each() {
            let mut b = Builder::default();
            b.flags(std::slice::from_ref(&s));
            let changed: Vec<(String, Value, Layer)> =
                b.build().keys().into_iter().filter(|(k, v, _)| defaults.get(k) != Some(v)).collect();
            assert_eq!(changed.len(), 1, "{s:?} changed {changed:?}");
            assert_eq!(changed[0].0, s.key(), "{s:?}");
            assert_eq!(changed[0].2, Layer::Flag, "{s:?}");
        }
    }

    /// A flag wins over every JSON layer, and a session's invalid value under a key a
    /// flag sets is not read.
    #[test]
    fn flags_win_and_hide_what_they_set() {
        let file = serde_json::json!({"threshold": 0.9, "task": {"max_total_tokens": 5}});
        let session = serde_json::json!({"runtime": {"context_window": 0}, "tokenizer": "cl100k"});
        let mut flags = Builder::default();
        flags.file(&file, Path::new("c.json"), &|_| None).unwrap();
        let window = Setting::ContextWindow(NonZeroU64::new(4).unwrap());
        flags.flags(&[Setting::Threshold(Threshold::new(0.6).unwrap()), window]);
        let mut base = Builder::default();
        base.session(session.as_object().unwrap(), Path::new("t.jsonl")).unwrap();
        let layered = flags.over(&base).build_for_session(Path::new("t.jsonl"), &|_| None).unwrap();
        assert_eq!(layered.config.threshold.basis_points(), 6000);
        assert_eq!(layered.config.runtime.context_window, Some(4));
        assert_eq!(layered.config.task.max_total_tokens, Some(5));
        assert_eq!(layered.config.tokenizer, Tokenizer::Cl100k);
        let from = |key: &str| layered.keys().into_iter().find(|(k, ..)| k == key).map(|(_, _, l)| l);
        assert_eq!(from("threshold"), Some(Layer::Flag));
        assert_eq!(from("tokenizer"), Some(Layer::Session));
        // Without the flags, the session's window is read, and refused.
        let mut plain = Builder::default();
        plain.file(&file, Path::new("c.json"), &|_| None).unwrap();
        let e = plain.over(&base).build_for_session(Path::new("t.jsonl"), &|_| None).unwrap_err().to_string();
        assert!(e.contains("`runtime.context_window`"), "{e}");
    }

    #[test]
    fn an_invalid_glob_names_its_key() {
        let e = Setting::allowed_paths(&["a[".to_string()]).unwrap_err();
        assert!(e.starts_with("workspace.allowed_paths: invalid glob \"a[\""), "{e}");
    }
}
