//! `replay`'s report for people: the recorded compactions and the predicted firings side
//! by side, then each recorded compaction against the replay.

use super::{Point, Replay};
use std::fmt::Write as _;

impl Replay {
    /// The report `replay` prints for `name`; `chosen` when the profile was named (not
    /// the input's agent's).
    pub fn report(&self, name: &str, chosen: bool) -> String {
        let r = self;
        let s = &r.summary;
        let fires = r.points.iter().find_map(|p| p.fires_at.map(|at| (at, p.limit)));
        let trigger = match fires {
            Some((at, Some(l))) => format!("fires at {at} of {l}"),
            _ => "no trigger (the limit is unknown, or the runtime never auto-compacts)".into(),
        };
        let whose = if chosen { "" } else { " (the input's agent's; --profile names another)" };
        let mut out = format!(
            "{name}: {} profile{whose}, {} path, evaluated at {} ({} points); {trigger}\n",
            s.profile,
            s.path.as_str(),
            s.evaluate_at.as_str(),
            s.points
        );
        let rows: Vec<&Point> = r.points.iter().filter(|p| p.fired || p.recorded.is_some()).collect();
        if rows.is_empty() {
            let top = r.points.iter().max_by_key(|p| p.used);
            if let Some(p) = top {
                let _ = writeln!(
                    out,
                    "no recorded compaction and no predicted firing; highest: {} at call {}",
                    p.used, p.call
                );
            }
        } else {
            let _ = writeln!(
                out,
                "\n{:>7} {:>5} {:>5} {:>10} {:>10} {:>7}  {:<10} {:>11}  replay",
                "line", "turn", "call", "used", "limit", "ratio", "recorded", "pre-tokens"
            );
            for p in rows {
                let line = p.line.map_or("-".into(), |l| l.to_string());
                let limit = p.limit.map_or("-".into(), |l| l.to_string());
                let ratio = p.ratio.map_or("-".into(), |x| format!("{x:.4}"));
                let (recorded, pre) = match &p.recorded {
                    Some(rec) => (rec.trigger.clone(), rec.pre_tokens.map_or("-".into(), |n| n.to_string())),
                    None => ("-".into(), "-".into()),
                };
                let mut what = if p.fired { "predicted firing".to_string() } else { "-".to_string() };
                if p.estimated {
                    what.push_str(" (estimated)");
                }
                let _ = writeln!(
                    out,
                    "{line:>7} {:>5} {:>5} {:>10} {limit:>10} {ratio:>7}  {recorded:<10} {pre:>11}  {what}",
                    p.turn, p.call, p.used
                );
            }
        }
        for m in &s.compactions {
            let when = match m.fired_at_call {
                Some(c) if m.predicted => format!("predicted at call {c}"),
                Some(c) => format!("missed: replay first fired at call {c}"),
                None => "missed: replay did not fire before it".into(),
            };
            let delta = m.pre_tokens.filter(|&n| n > 0).map_or(String::new(), |n| {
                let pct = (m.replayed as f64 - n as f64) * 100.0 / n as f64;
                format!(" (recorded {n}, {pct:+.2}%)")
            });
            let _ = writeln!(out, "  compaction at call {}: replayed {}{delta}; {when}", m.call, m.replayed);
            if let Some(at) =
                fires.map(|f| f.0).filter(|&at| m.trigger == "auto" && m.fired_at_call.is_none() && m.replayed < at)
            {
                let _ = writeln!(
                    out,
                    "    recorded below the profile's limit ({} < {at}): the agent compacted at a lower limit of its own \
                     (a model's configured or server-given limit); set trigger.limit_tokens (--config or --trigger-limit N) to it",
                    m.replayed
                );
            }
            if let Some(at) = fires.map(|f| f.0).filter(|&at| m.trigger == "auto" && !m.predicted && m.replayed > at) {
                let _ = writeln!(
                    out,
                    "    recorded above the profile's trigger ({} > {at}): the agent compacted against a larger window than the profile's \
                     (Claude Code's auto-compact window, set by its server or by /autocompact); set trigger.auto_compact_window (--config) to that window",
                    m.replayed
                );
            }
        }
        let _ = writeln!(out, "{}", s.line());
        out
    }
}
