//! Event names (SPEC 6, 8): the journal's event kinds, which are also the lifecycle
//! event names a transcript's `event` records may hold. Written once, here.

macro_rules! events {
    ($($variant:ident => $name:literal),* $(,)?) => {
        /// A journal event kind (and a transcript's lifecycle event name).
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Event { $($variant),* }

        impl Event {
            pub fn as_str(self) -> &'static str {
                match self { $(Event::$variant => $name),* }
            }

            /// The event a name in a transcript stands for.
            pub fn parse(name: &str) -> Option<Event> {
                match name { $($name => Some(Event::$variant),)* _ => None }
            }
        }
    };
}

events! {
    ThresholdEvaluated => "threshold_evaluated",
    PressureReminderInjected => "pressure_reminder_injected",
    PreCompactHook => "pre_compact_hook",
    HistoryFallbackApplied => "history_fallback_applied",
    ReanchorInjected => "reanchor_injected",
    CompactionRequested => "compaction_requested",
    CompactionCompleted => "compaction_completed",
    CheckpointCreated => "checkpoint_created",
    PostCompactHook => "post_compact_hook",
    // Not a journal kind: an importer's record that a tool reported changed files
    // (`paths`), a re-anchor fact source (Codex `patch_apply_end`).
    FilesChanged => "files_changed",
}

impl Event {
    /// Whether a transcript's event record name is this event.
    pub fn is(self, name: &str) -> bool {
        name == self.as_str()
    }
}

/// Written as its name.
impl serde::Serialize for Event {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}
