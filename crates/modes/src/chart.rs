//! The replay picture (SPEC 12, `replay --svg`): the figure per model call against the
//! trigger line, recorded compactions and predicted firings marked and labelled where
//! they are, so it reads without a legend. Plain SVG text, deterministic.

use crate::replay::Replay;
use std::fmt::Write;

const W: f64 = 960.0;
const H: f64 = 440.0;
const LEFT: f64 = 84.0;
const RIGHT: f64 = 24.0;
const TOP: f64 = 56.0;
const BOTTOM: f64 = 56.0;

/// The plot area and its scales.
struct Frame {
    max_call: usize,
    top: f64,
}

impl Frame {
    fn x(&self, call: usize) -> f64 {
        LEFT + (W - LEFT - RIGHT) * call as f64 / self.max_call as f64
    }

    fn y(&self, tokens: u64) -> f64 {
        TOP + (H - TOP - BOTTOM) * (1.0 - tokens as f64 / self.top)
    }
}

/// Renders the SVG document. `title` names the input (escaped here).
pub fn svg(r: &Replay, title: &str) -> String {
    let pts = &r.points;
    let fires_at = pts.iter().find_map(|p| p.fires_at);
    let limit = pts.iter().find_map(|p| p.limit);
    let highest = pts.iter().map(|p| p.used).chain(fires_at).chain(limit).max().unwrap_or(1).max(1);
    let f = Frame { max_call: pts.iter().map(|p| p.call).max().unwrap_or(0).max(1), top: nice(highest as f64 * 1.05) };
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r##"<rect width="{W}" height="{H}" fill="#ffffff"/>"##);
    let what = if r.summary.path == crate::policy::PressurePath::Conversation {
        "context occupancy"
    } else {
        "cumulative task usage"
    };
    let _ = writeln!(
        s,
        r#"<text x="{LEFT}" y="22" font-size="15" font-weight="bold">{}</text>"#,
        xml(&format!("{title}: {what} per model call ({} profile)", r.summary.profile))
    );
    let _ = writeln!(s, r##"<text x="{LEFT}" y="40" fill="#444444">{}</text>"##, xml(&r.summary.line()));
    axes(&mut s, &f);
    levels(&mut s, &f, limit, fires_at);
    marks(&mut s, &f, r);
    s.push_str("</svg>\n");
    s
}

/// Axes, ticks and their names.
fn axes(s: &mut String, f: &Frame) {
    let (x0, x1, y0, y1) = (LEFT, W - RIGHT, TOP, H - BOTTOM);
    let _ = writeln!(s, r##"<path d="M{x0} {y0} V{y1} H{x1}" fill="none" stroke="#333333"/>"##);
    for k in 0..=5u32 {
        let v = (f.top * f64::from(k) / 5.0) as u64;
        let yy = f.y(v);
        let _ = writeln!(
            s,
            r##"<line x1="{x0}" x2="{x1}" y1="{yy:.1}" y2="{yy:.1}" stroke="#eeeeee"/><text x="{}" y="{:.1}" text-anchor="end">{v}</text>"##,
            x0 - 6.0,
            yy + 4.0
        );
    }
    for c in (0..=f.max_call).step_by((f.max_call / 10).max(1)) {
        let _ = writeln!(s, r#"<text x="{:.1}" y="{}" text-anchor="middle">{c}</text>"#, f.x(c), y1 + 16.0);
    }
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{}" text-anchor="middle">model call</text>"#,
        f64::midpoint(x0, x1),
        H - 12.0
    );
    let mid = f64::midpoint(y0, y1);
    let _ = writeln!(
        s,
        r#"<text x="16" y="{mid:.1}" transform="rotate(-90 16 {mid:.1})" text-anchor="middle">tokens</text>"#
    );
}

/// The denominator and the trigger, each labelled on its line.
fn levels(s: &mut String, f: &Frame, limit: Option<u64>, fires_at: Option<u64>) {
    let (x0, x1) = (LEFT, W - RIGHT);
    if let Some(l) = limit {
        let yy = f.y(l);
        let _ = writeln!(
            s,
            r##"<line x1="{x0}" x2="{x1}" y1="{yy:.1}" y2="{yy:.1}" stroke="#999999"/><text x="{:.1}" y="{:.1}" text-anchor="end" fill="#666666">limit {l}</text>"##,
            x1 - 4.0,
            yy - 4.0
        );
    }
    if let Some(at) = fires_at {
        let yy = f.y(at);
        let _ = writeln!(
            s,
            r##"<line x1="{x0}" x2="{x1}" y1="{yy:.1}" y2="{yy:.1}" stroke="#d62728" stroke-dasharray="6 4"/><text x="{:.1}" y="{:.1}" fill="#d62728">trigger: fires at {at}</text>"##,
            x0 + 6.0,
            yy - 4.0
        );
    }
}

/// Recorded compactions (vertical lines), the figure, estimated points and firings.
fn marks(s: &mut String, f: &Frame, r: &Replay) {
    let (y0, y1) = (TOP, H - BOTTOM);
    let pts = &r.points;
    for p in pts {
        let Some(rec) = &p.recorded else { continue };
        let (xx, ly) = (f.x(p.call) - 4.0, y1 - 6.0);
        let pre = rec.pre_tokens.map_or(String::new(), |n| format!(", recorded {n}"));
        let _ = writeln!(
            s,
            r##"<line x1="{:.1}" x2="{:.1}" y1="{y0}" y2="{y1}" stroke="#1f77b4" stroke-dasharray="2 3"/><text x="{xx:.1}" y="{ly:.1}" fill="#1f77b4" transform="rotate(-90 {xx:.1} {ly:.1})">{} compaction at call {}{}</text>"##,
            xx + 4.0,
            xx + 4.0,
            rec.trigger,
            p.call,
            xml(&pre)
        );
    }
    let line: Vec<String> = pts.iter().map(|p| format!("{:.1},{:.1}", f.x(p.call), f.y(p.used))).collect();
    let _ = writeln!(s, r##"<polyline points="{}" fill="none" stroke="#2ca02c" stroke-width="1.5"/>"##, line.join(" "));
    for p in pts.iter().filter(|p| p.estimated) {
        let _ = writeln!(s, r##"<circle cx="{:.1}" cy="{:.1}" r="1.8" fill="#ff7f0e"/>"##, f.x(p.call), f.y(p.used));
    }
    for p in pts.iter().filter(|p| p.fired) {
        let (xx, yy) = (f.x(p.call), f.y(p.used));
        // Beside the point, clear of a recorded compaction's label (left of its line).
        let (tx, anchor) = if xx > W / 2.0 { (xx - 20.0, "end") } else { (xx + 10.0, "start") };
        let _ = writeln!(
            s,
            r##"<circle cx="{xx:.1}" cy="{yy:.1}" r="5" fill="none" stroke="#d62728" stroke-width="2"/><text x="{tx:.1}" y="{:.1}" fill="#d62728" text-anchor="{anchor}">predicted firing, call {} ({})</text>"##,
            yy - 8.0,
            p.call,
            p.used
        );
    }
    if pts.iter().any(|p| p.estimated) {
        let _ = writeln!(
            s,
            r##"<text x="{:.1}" y="{}" text-anchor="end" fill="#ff7f0e">orange dots: estimated figures</text>"##,
            W - RIGHT,
            H - 12.0
        );
    }
}

/// A round axis maximum at or above `v`.
fn nice(v: f64) -> f64 {
    let mag = 10f64.powf(v.max(1.0).log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0].iter().map(|m| m * mag).find(|&c| c >= v).unwrap_or(10.0 * mag)
}

/// Text as XML character data.
fn xml(s: &str) -> String {
    crate::ui::xml(s, false)
}
