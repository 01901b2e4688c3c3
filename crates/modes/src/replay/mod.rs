//! Replay (SPEC 12): walk a transcript in order and evaluate a profile's trigger at
//! each of its evaluation points, following the recorded session — a recorded
//! compaction resets the figure as it did, a predicted firing is only marked.
//!
//! The figures come from the policy's own accumulators ([`Occupancy`] for the
//! conversation runtime, [`CumulativeUsage`] for the agent runner), so replay and
//! `decide` can never disagree on what a point measures.

use crate::config::{Config, Estimator, EvaluateAt, RuntimeKind, Setting};
use crate::policy::{CumulativeUsage, Event, Figure, Occupancy, PressurePath};
use crate::tokens;
use crate::transcript::{EventRef, RecordKind, Synthetic, Transcript};
use serde::Serialize;

mod report;

/// One evaluation point.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// 1-based line of the input where the point is (its last record); `null` when
    /// the input is a whole-file document whose lines are not tracked.
    pub line: Option<usize>,
    /// Ordinal of the turn (1-based), and its id.
    pub turn: usize,
    pub turn_id: String,
    /// Ordinal of the model call (1-based; 0 before the first call).
    pub call: usize,
    pub used: u64,
    pub limit: Option<u64>,
    pub ratio: Option<f64>,
    /// The figure the trigger fires at.
    pub fires_at: Option<u64>,
    pub estimated: bool,
    /// The first point at or over the trigger since the start or the last recorded
    /// compaction.
    pub fired: bool,
    pub recorded: Option<Recorded>,
    /// Index of the point's last canonical record (the prefix `--out-dir` compacts).
    #[serde(skip)]
    pub record: usize,
}

/// A compaction the session recorded at a point.
#[derive(Debug, Clone, Serialize)]
pub struct Recorded {
    pub trigger: String,
    pub pre_tokens: Option<u64>,
    /// The input line of the compaction record.
    pub line: Option<usize>,
}

/// The closing figures.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub profile: String,
    pub path: PressurePath,
    pub evaluate_at: EvaluateAt,
    pub points: usize,
    pub recorded_auto: usize,
    pub recorded_manual: usize,
    /// Recorded auto compactions whose segment's first firing is at their model call
    /// or one call earlier.
    pub predicted_within_one_call: usize,
    /// Firings with no recorded compaction at that call or the next.
    pub unmatched_firings: usize,
    /// Per recorded auto compaction: the replayed figure there, against `pre_tokens`.
    pub compactions: Vec<Match>,
}

/// How replay met one recorded compaction.
#[derive(Debug, Clone, Serialize)]
pub struct Match {
    pub line: Option<usize>,
    pub call: usize,
    pub trigger: String,
    pub pre_tokens: Option<u64>,
    pub replayed: u64,
    /// The call of the segment's first firing, if any.
    pub fired_at_call: Option<usize>,
    pub predicted: bool,
}

/// A replayed transcript.
#[derive(Debug, Clone)]
pub struct Replay {
    pub points: Vec<Point>,
    pub summary: Summary,
}

/// Replays `t` under `cfg`. `source_line` maps a canonical line to the input's.
pub fn replay(t: &Transcript<'_>, cfg: &Config, profile: &str, source_line: &dyn Fn(usize) -> Option<usize>) -> Replay {
    let conversation = cfg.runtime.kind == RuntimeKind::Conversation;
    let at = cfg.trigger.evaluate_at.unwrap_or(if conversation {
        EvaluateAt::CompletedTurns
    } else {
        EvaluateAt::ModelCalls
    });
    let limit = if conversation { cfg.runtime.context_window } else { cfg.task.max_total_tokens };
    // The conversation runtime only auto-compacts when it advertises native compaction.
    let can_fire = !conversation || cfg.runtime.native_compaction;
    let fires_at = limit.filter(|_| can_fire).map(|l| cfg.fires_at(conversation, l));
    let est = tokens::item_estimates(t, cfg.tokenizer);
    let agent = (conversation && cfg.trigger.estimator != Estimator::Rivumi).then(|| AgentFigure {
        estimator: cfg.trigger.estimator,
        check_chars_per_token: claude_check_ratio(t, cfg),
        ..AgentFigure::default()
    });
    let mut w = Walk {
        agent,
        t,
        est: &est,
        source_line,
        conversation,
        limit,
        fires_at,
        points: Vec::new(),
        occupancy: Occupancy::default(),
        cumulative: CumulativeUsage::default(),
        call: 0,
        turn: 0,
        turn_id: None,
        open: None,
        armed: true,
        since_point: false,
        recorded_since_call: false,
    };
    for (ri, r) in t.records.iter().enumerate() {
        match &r.kind {
            RecordKind::Item(i) => w.item(ri, *i, at),
            RecordKind::Event(e) if Event::CompactionCompleted.is(&e.name) => {
                let rec = recorded_event(e, r.line, source_line);
                w.recorded(ri, rec);
                w.occupancy.record(t, r, w.est);
                if let Some(a) = &mut w.agent {
                    a.reset();
                }
            }
            _ => {}
        }
    }
    if let Some(last) = w.open.take() {
        w.emit(last, None);
    }
    let summary = summarize(&w.points, profile, conversation, at);
    Replay { points: w.points, summary }
}

struct Walk<'w, 'a> {
    /// The agent's own figure, under the `claude-code` and `codex` estimators.
    agent: Option<AgentFigure>,
    t: &'w Transcript<'a>,
    est: &'w [u64],
    source_line: &'w dyn Fn(usize) -> Option<usize>,
    conversation: bool,
    limit: Option<u64>,
    fires_at: Option<u64>,
    points: Vec<Point>,
    occupancy: Occupancy,
    cumulative: CumulativeUsage,
    call: usize,
    turn: usize,
    turn_id: Option<String>,
    /// The last record of the open model-call group (calls mode).
    open: Option<usize>,
    /// Whether the next point at or over the trigger is a firing.
    armed: bool,
    /// Whether an item came since the last point.
    since_point: bool,
    /// Whether a compaction was recorded since the latest model call.
    recorded_since_call: bool,
}

impl Walk<'_, '_> {
    fn item(&mut self, ri: usize, i: usize, at: EvaluateAt) {
        let est = self.est[i];
        let item = &self.t.items[i];
        let is_call = item.is_model_call();
        if is_call && at == EvaluateAt::ModelCalls {
            if let Some(last) = self.open.take() {
                self.emit(last, None);
            }
        }
        let turn = item.turn.as_deref().unwrap_or("-");
        if self.turn_id.as_deref() != Some(turn) {
            self.turn += 1;
            self.turn_id = Some(turn.to_string());
        }
        self.occupancy.record(self.t, &self.t.records[ri], self.est);
        if let Some(a) = &mut self.agent {
            a.item(self.t, i);
        }
        self.cumulative.add(item, est);
        self.since_point = true;
        if is_call {
            self.call += 1;
            self.recorded_since_call = false;
        }
        if is_call || self.open.is_some() {
            self.open = (at == EvaluateAt::ModelCalls).then_some(ri);
        }
        if at == EvaluateAt::CompletedTurns && is_call && item.calls().is_empty() {
            self.emit(ri, None);
        }
        // What this tool itself injected when it compacted (the records it appends
        // together: reminder, re-anchor, checkpoint) is one recorded compaction.
        let injected = [Synthetic::PressureReminder, Synthetic::Reanchor, Synthetic::Checkpoint];
        if injected.iter().any(|k| item.is_synthetic(*k)) && !self.recorded_since_call {
            let line = (self.source_line)(self.t.records[ri].line);
            self.recorded(ri, Recorded { trigger: "auto".into(), pre_tokens: None, line });
        }
    }

    fn figure(&self) -> Figure {
        if let Some(a) = self.agent.as_ref().filter(|a| a.knows()) {
            return a.figure();
        }
        if self.conversation {
            self.occupancy.figure()
        } else {
            self.cumulative.figure
        }
    }

    /// A recorded compaction: it ends the open group (or marks the last point, when
    /// nothing came since), then re-arms the trigger.
    fn recorded(&mut self, ri: usize, rec: Recorded) {
        if let Some(last) = self.open.take() {
            self.emit(last, Some(rec));
        } else if let Some(p) = self.points.last_mut().filter(|p| p.recorded.is_none() && !self.since_point) {
            p.recorded = Some(rec);
        } else {
            self.emit(ri, Some(rec));
        }
        self.armed = true;
        self.recorded_since_call = true;
    }

    fn emit(&mut self, record: usize, recorded: Option<Recorded>) {
        let fig = self.figure();
        let check = self.agent.as_ref().filter(|a| a.knows()).map_or(fig.tokens, AgentFigure::check);
        let over = self.fires_at.is_some_and(|at| check >= at);
        let fired = over && self.armed;
        if fired {
            self.armed = false;
        }
        self.since_point = false;
        self.points.push(Point {
            kind: "point",
            line: (self.source_line)(self.t.records[record].line),
            turn: self.turn,
            turn_id: self.turn_id.clone().unwrap_or_default(),
            call: self.call,
            used: fig.tokens,
            limit: self.limit,
            ratio: self.limit.map(|l| crate::render::ratio(fig.tokens, l)),
            fires_at: self.fires_at,
            estimated: fig.estimated,
            fired,
            recorded,
            record,
        });
    }
}

/// The figure an agent compares with its trigger (SPEC 12), measured with the agent
/// itself (conformance/): the last reported usage plus the agent's own estimate of what
/// came after it.
#[derive(Debug, Clone, Default)]
struct AgentFigure {
    estimator: Estimator,
    /// Claude Code: it decides on characters / this (unrounded) for some models.
    check_chars_per_token: Option<u64>,
    usage: Option<u64>,
    /// The estimate of what came after the usage, as the agent records it.
    after: u64,
    /// Claude Code: the characters (UTF-16 units) of what came after the usage.
    chars: u64,
}

impl AgentFigure {
    fn reset(&mut self) {
        (self.usage, self.after, self.chars) = (None, 0, 0);
    }

    fn item(&mut self, t: &Transcript<'_>, i: usize) {
        let item = &t.items[i];
        let blocks = match self.estimator {
            Estimator::ClaudeCode => claude_blocks(t, i),
            _ => Vec::new(),
        };
        if let Some(u) = item.usage().filter(|u| u.size() > 0) {
            self.usage = Some(match self.estimator {
                Estimator::GeminiCli => {
                    u.input_tokens.saturating_add(u.cache_read_tokens).saturating_add(u.cache_write_tokens)
                }
                _ => u.size(),
            });
            (self.after, self.chars) = (0, 0);
            // Claude Code takes the usage from the first record (block) of the message
            // and estimates the blocks after it.
            for &c in blocks.iter().skip(1) {
                self.add_chars(c);
            }
            return;
        }
        match self.estimator {
            Estimator::ClaudeCode => blocks.iter().for_each(|&c| self.add_chars(c)),
            Estimator::GeminiCli | Estimator::LastUsage => {}
            _ => self.after += item.estimate_bytes().div_ceil(4) + 6,
        }
    }

    fn add_chars(&mut self, c: u64) {
        self.after += (c + 2) / 4; // round(c / 4), halves up
        self.chars += c;
    }

    fn figure(&self) -> Figure {
        Figure { tokens: self.usage.unwrap_or(0).saturating_add(self.after), estimated: self.after > 0 }
    }

    /// Whether the agent's figure means anything yet: an estimator that counts nothing
    /// after the usage has none before the first usage (a saved chat, a file without
    /// usage), and the tool's own estimate stands in for it.
    fn knows(&self) -> bool {
        self.usage.is_some() || !matches!(self.estimator, Estimator::GeminiCli | Estimator::LastUsage)
    }

    /// The figure the agent decides on.
    fn check(&self) -> u64 {
        match self.check_chars_per_token {
            Some(r) if self.estimator == Estimator::ClaudeCode => self.usage.unwrap_or(0) + self.chars / r.max(1),
            _ => self.figure().tokens,
        }
    }
}

/// The UTF-16 lengths of a Claude Code item's content blocks, in the order Claude Code
/// writes them (texts, then calls; a call is its name and its input as JSON).
fn claude_blocks(t: &Transcript<'_>, i: usize) -> Vec<u64> {
    let utf16 = |s: &str| s.encode_utf16().count() as u64;
    let mut out: Vec<u64> = crate::transcript::content_texts(t, i).iter().map(|s| utf16(s)).collect();
    out.extend(t.items[i].calls().iter().map(|c| utf16(&c.name) + utf16(&c.arguments)));
    out
}

/// Claude Code's check ratio for the session's model (the model table).
fn claude_check_ratio(t: &Transcript<'_>, cfg: &Config) -> Option<u64> {
    if cfg.trigger.estimator != Estimator::ClaudeCode {
        return None;
    }
    let model = t.session.as_ref()?.get("model")?.as_str()?;
    crate::formats::models::claude_code(model)?.check_chars_per_token
}

/// The `trigger` and `pre_tokens` an importer kept on a compaction event.
fn recorded_event(e: &EventRef<'_>, line: usize, source_line: &dyn Fn(usize) -> Option<usize>) -> Recorded {
    let trigger = match e.trigger.as_deref() {
        Some("manual") => "manual",
        _ => "auto",
    };
    Recorded { trigger: trigger.into(), pre_tokens: e.pre_tokens, line: source_line(line) }
}

fn summarize(points: &[Point], profile: &str, conversation: bool, at: EvaluateAt) -> Summary {
    let mut s = Summary {
        kind: "summary",
        profile: profile.to_string(),
        path: if conversation { PressurePath::Conversation } else { PressurePath::AgentRunner },
        evaluate_at: at,
        points: points.len(),
        ..Summary::default()
    };
    let mut segment_fired: Option<usize> = None;
    let mut matched_firings = std::collections::HashSet::new();
    for p in points {
        if p.fired {
            segment_fired = Some(p.call);
        }
        let Some(rec) = &p.recorded else { continue };
        if rec.trigger == "manual" {
            s.recorded_manual += 1;
        } else {
            s.recorded_auto += 1;
            let predicted = segment_fired.is_some_and(|c| c + 1 >= p.call && c <= p.call);
            if predicted {
                s.predicted_within_one_call += 1;
                matched_firings.extend(segment_fired);
            }
            s.compactions.push(Match {
                line: rec.line,
                call: p.call,
                trigger: rec.trigger.clone(),
                pre_tokens: rec.pre_tokens,
                replayed: p.used,
                fired_at_call: segment_fired,
                predicted,
            });
        }
        segment_fired = None;
    }
    s.unmatched_firings = points.iter().filter(|p| p.fired && !matched_firings.contains(&p.call)).count();
    s
}

impl Replay {
    /// `--json`: one object per evaluation point, then the summary object.
    pub fn json_lines(&self) -> String {
        let mut out = String::new();
        for p in &self.points {
            out.push_str(&serde_json::to_string(p).expect("a point serializes"));
            out.push('\n');
        }
        out.push_str(&serde_json::to_string(&self.summary).expect("a summary serializes"));
        out.push('\n');
        out
    }
}

impl Summary {
    /// The closing line for people.
    pub fn line(&self) -> String {
        let manual =
            if self.recorded_manual > 0 { format!(" (and {} manual)", self.recorded_manual) } else { String::new() };
        let plural = if self.recorded_auto == 1 { "" } else { "s" };
        let extra = match self.unmatched_firings {
            0 => String::new(),
            n => format!("; {n} predicted firing(s) with no recorded compaction"),
        };
        format!(
            "recorded {} auto compaction{plural}{manual}, predicted within one model call: {}/{}{extra}",
            self.recorded_auto, self.predicted_within_one_call, self.recorded_auto
        )
    }
}

/// One input as `replay` reads it, handed to the caller's `then`.
pub struct Loaded<'t> {
    pub transcript: &'t Transcript<'t>,
    pub replay: Replay,
    /// The settings the replay ran under (its profile included).
    pub settings: crate::engine::Settings,
    /// Warnings for people: the importer's, the configuration's, flags that have no
    /// effect, and a context window below the figures.
    pub warnings: Vec<String>,
}

/// Replays one input as `replay` does (never running a hook or a summarizer): read and
/// imported, under the profile of the agent that wrote it when `follow_agent` (else the
/// settings' own), the configuration laid on, the trigger at every point; `then` gets
/// it. The command line and the Python package both call this.
pub fn replay_input<T>(
    input: &crate::inputs::Input,
    settings: &crate::engine::Settings,
    follow_agent: bool,
    then: impl FnOnce(Loaded<'_>) -> crate::error::Result<T>,
) -> crate::error::Result<T> {
    let canonical = crate::engine::load(input, settings.input_format)?;
    let mut warnings = canonical.warnings.clone();
    let mut settings = settings.clone();
    settings.input_format = canonical.format;
    if follow_agent {
        settings = settings.with_profile(crate::config::Profile::of_format(canonical.format));
    }
    let t = canonical.transcript(&input.path)?;
    canonical.accounting_of(&t, &input.path)?;
    let layered = settings.config_for(&t, &input.path)?;
    warnings.extend(layered.warnings.iter().cloned());
    let profile = settings.profile();
    let replay = replay(&t, &layered.config, profile.as_str(), &|l| canonical.source_line(l));
    warnings.extend(settings.inert(&layered.config, &input.path));
    let highest = replay.points.iter().map(|p| p.used).max();
    warnings.extend(crate::engine::over_window(&layered.config, highest, t.session.as_ref(), &input.path));
    then(Loaded { transcript: &t, replay, settings, warnings })
}

/// For a library caller: `replay --json` of a transcript file, under `profile` (the
/// profile of the file's agent when `None`).
pub fn replay_file(
    path: &std::path::Path,
    settings: &crate::engine::Settings,
    profile: Option<crate::config::Profile>,
) -> crate::error::Result<String> {
    let s = profile.map_or_else(|| settings.clone(), |p| settings.clone().with_profile(p));
    let input = crate::inputs::Input::file(path.to_path_buf());
    replay_input(&input, &s, profile.is_none(), |loaded| Ok(loaded.replay.json_lines()))
}

/// At each predicted firing (the first `max`), the transcript up to that point
/// compacted the way `run` would (a local checkpoint at a completed turn of a
/// conversation runtime, the history fallback otherwise), its decision the firing's;
/// each handed to `f` with its point.
pub fn each_firing(
    t: &Transcript<'_>,
    r: &Replay,
    s: &crate::engine::Settings,
    file: &std::path::Path,
    max: usize,
    mut f: impl FnMut(&Point, &crate::engine::Processed<'_>) -> crate::error::Result<()>,
) -> crate::error::Result<()> {
    let checkpoint = s.with_flags(&[Setting::NativeCompaction(false)]);
    let fallback = s.with_flags(&[Setting::Runtime(RuntimeKind::AgentRunner)]);
    let threshold = s.config_for(t, file)?.config.threshold.as_f64();
    for p in r.points.iter().filter(|p| p.fired).take(max) {
        let end = t.records[p.record].span.end;
        let mut prefix = t.src[..end].to_vec();
        if !prefix.ends_with(b"\n") {
            prefix.push(b'\n');
        }
        let conversation = r.summary.path == PressurePath::Conversation;
        let mut settings = if conversation { checkpoint.clone() } else { fallback.clone() };
        settings.manual = true;
        let mut done = crate::engine::process(&prefix, file, &settings)?;
        if !done.plan.changes() {
            // Mid-turn a conversation runtime cannot checkpoint: the fallback can.
            let mut settings = fallback.clone();
            settings.manual = true;
            done = crate::engine::process(&prefix, file, &settings)?;
        }
        describe_firing(&mut done.plan, p, &r.summary, threshold);
        f(p, &done)?;
    }
    Ok(())
}

/// A firing folder's decision is the firing's (SPEC 12): the profile's path, the figure
/// replay measured, the limit and the trigger it fired at, and trigger `auto` — never
/// the figures of the path the compaction was carried out on (a mid-turn conversation
/// point is compacted with the fallback), whose reasons are left out with them.
fn describe_firing(plan: &mut crate::policy::Plan, p: &Point, summary: &Summary, threshold: f64) {
    use crate::policy::{ReasonCode, Trigger};
    let d = &mut plan.decision;
    d.path = summary.path;
    d.denominator = d.path.denominator();
    (d.used, d.limit, d.ratio, d.estimated) = (Some(p.used), p.limit, p.ratio, p.estimated);
    d.threshold = threshold;
    d.trigger_tokens = p.fires_at;
    d.trigger = Trigger::Auto;
    let other_path = [
        ReasonCode::MaxTotalTokensUnknown,
        ReasonCode::ContextWindowUnknown,
        ReasonCode::NativeCompactionNotAdvertised,
        ReasonCode::BelowThreshold,
    ];
    d.reasons.retain(|r| !other_path.contains(&r.code));
}
