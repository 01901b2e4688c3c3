//! The journal (SPEC 8): ordered events, numbered from 0, with no clock and no paths.
//! Each event is a variant with its own typed fields; the JSON line is `seq`, `event`,
//! then those fields in order.

use super::decision::{Denominator, PressurePath, Trigger};
pub use crate::transcript::Event;
use serde::Serialize;

/// One journal event and its fields.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Entry {
    ThresholdEvaluated {
        path: PressurePath,
        denominator: Denominator,
        used: Option<u64>,
        limit: Option<u64>,
        ratio: Option<f64>,
        threshold: f64,
        estimated: bool,
        fired: bool,
        trigger: Trigger,
        /// Only where a custom trigger sets the figure the conversation path fires at.
        #[serde(skip_serializing_if = "Option::is_none")]
        trigger_tokens: Option<u64>,
    },
    PressureReminderInjected {
        used: u64,
        limit: u64,
    },
    PreCompactHook {
        outcome: HookOutcome,
        reason: Option<String>,
    },
    HistoryFallbackApplied {
        items_summarized: usize,
        tokens_before: u64,
        tokens_after: u64,
    },
    ReanchorInjected {
        variant: PressurePath,
        /// The conversation path's block waits for the compaction to complete.
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        pending: bool,
    },
    CompactionRequested {
        id: String,
    },
    CompactionCompleted {
        id: String,
    },
    CheckpointCreated {
        id: String,
        summarized_turn_ids: Vec<String>,
        retained_turn_ids: Vec<String>,
        occupancy_before: u64,
        occupancy_after: u64,
    },
    PostCompactHook {
        outcome: HookOutcome,
        /// The completed lifecycle it ran after, if it was one.
        id: Option<String>,
    },
}

/// What a hook did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HookOutcome {
    Allowed,
    Denied,
    Ok,
    Failed,
}

impl HookOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            HookOutcome::Allowed => "allowed",
            HookOutcome::Denied => "denied",
            HookOutcome::Ok => "ok",
            HookOutcome::Failed => "failed",
        }
    }
}

impl Entry {
    /// Its kind (the `event` field).
    pub fn kind(&self) -> Event {
        match self {
            Entry::ThresholdEvaluated { .. } => Event::ThresholdEvaluated,
            Entry::PressureReminderInjected { .. } => Event::PressureReminderInjected,
            Entry::PreCompactHook { .. } => Event::PreCompactHook,
            Entry::HistoryFallbackApplied { .. } => Event::HistoryFallbackApplied,
            Entry::ReanchorInjected { .. } => Event::ReanchorInjected,
            Entry::CompactionRequested { .. } => Event::CompactionRequested,
            Entry::CompactionCompleted { .. } => Event::CompactionCompleted,
            Entry::CheckpointCreated { .. } => Event::CheckpointCreated,
            Entry::PostCompactHook { .. } => Event::PostCompactHook,
        }
    }
}

/// A numbered event as it is written.
#[derive(Serialize)]
struct Line<'a> {
    seq: usize,
    #[serde(flatten)]
    entry: &'a Entry,
}

#[derive(Debug, Clone, Default)]
pub struct Journal {
    events: Vec<Entry>,
}

impl Journal {
    /// Appends an event (numbered by its place).
    pub fn push(&mut self, entry: Entry) {
        self.events.push(entry);
    }

    /// Appends another journal's events (numbered after this one's).
    pub fn extend(&mut self, other: Journal) {
        self.events.extend(other.events);
    }

    /// Drops the events of one kind (a record planned, then left out).
    pub fn remove(&mut self, event: Event) {
        self.events.retain(|e| e.kind() != event);
    }

    pub fn events(&self) -> &[Entry] {
        &self.events
    }

    /// The events of one kind.
    pub fn of(&self, event: Event) -> impl Iterator<Item = &Entry> {
        self.events.iter().filter(move |e| e.kind() == event)
    }

    /// JSON Lines, one event per line, `seq` first.
    pub fn to_jsonl(&self) -> String {
        let mut out = String::new();
        for (seq, entry) in self.events.iter().enumerate() {
            out.push_str(&serde_json::to_string(&Line { seq, entry }).expect("an event serializes"));
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_written_seq_first_then_their_fields_in_order() {
        let mut j = Journal::default();
        j.push(Entry::PreCompactHook { outcome: HookOutcome::Denied, reason: None });
        j.push(Entry::ReanchorInjected { variant: PressurePath::Conversation, pending: true });
        j.push(Entry::ReanchorInjected { variant: PressurePath::AgentRunner, pending: false });
        j.push(Entry::PostCompactHook { outcome: HookOutcome::Ok, id: Some("c1".into()) });
        j.remove(Event::PreCompactHook);
        assert_eq!(
            j.to_jsonl(),
            concat!(
                r#"{"seq":0,"event":"reanchor_injected","variant":"conversation","pending":true}"#,
                "\n",
                r#"{"seq":1,"event":"reanchor_injected","variant":"agent-runner"}"#,
                "\n",
                r#"{"seq":2,"event":"post_compact_hook","outcome":"ok","id":"c1"}"#,
                "\n"
            )
        );
        assert_eq!(j.of(Event::ReanchorInjected).count(), 2);
    }
}
