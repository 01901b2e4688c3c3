//! `replay`: the profile's trigger at every evaluation point, beside the compactions the
//! session recorded; JSON Lines for programs, an SVG picture, and the compacted
//! context at each predicted firing for dataset builders.

use super::common::{settings, single_input, stdout_write};
use super::ReplayArgs;
use crate::engine::{self, Settings};
use crate::error::{Error, Exit, Result};
use crate::output::{self, OutDir};
use crate::replay::{Point, Replay};
use crate::transcript::{self, Transcript};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

pub(super) fn replay(args: ReplayArgs) -> Result<Exit> {
    // Replay never runs hooks or a summarizer: it is a dry run at every point.
    let settings = settings(&args.policy, None, true)?;
    let input = single_input(&args.input, args.policy.input_format)?;
    // `--svg -`: the picture on stdout, in place of the report.
    let svg_out = args.svg.as_deref().is_some_and(output::is_stdout);
    if svg_out && args.json {
        return Err(Error::Usage("--svg - and --json both print on stdout: name a file for the picture".into()));
    }
    if let Some(dir) = &args.out_dir {
        output::check_folder_path(dir, "--out-dir")?;
    }
    if let Some(path) = args.svg.as_deref().filter(|_| !svg_out) {
        output::check_file_path(path, "--svg")?;
        output::refuse_input(path, &crate::inputs::real_paths(std::slice::from_ref(&input)), "--svg")?;
        if args.out_dir.as_deref().is_some_and(|dir| output::same_file(dir, path)) {
            return Err(Error::Usage(format!(
                "--svg and --out-dir name the same path ({}): the picture goes beside the folder, or in it",
                crate::ui::escape(&path.display().to_string())
            )));
        }
    }
    let canonical = crate::engine::load(&input, settings.input_format)?;
    canonical.warnings.iter().for_each(|w| crate::ui::warn(w));
    let mut settings = settings;
    settings.input_format = canonical.format;
    // Replay follows the agent that wrote the input unless told otherwise (SPEC 12).
    let chosen = args.policy.profile.is_some();
    if !chosen {
        settings = settings.with_profile(crate::config::Profile::of_format(canonical.format));
    }
    let t = transcript::parse(&canonical.bytes, &input.path).map_err(|e| canonical.relocate(e))?;
    canonical.accounting_of(&t, &input.path)?;
    let layered = settings.config_for(t.session.as_ref(), &input.path)?;
    layered.warnings.iter().for_each(|w| crate::ui::warn(w));
    let profile = settings.profile();
    let r = crate::replay::replay(&t, &layered.config, profile.as_str(), &|l| canonical.source_line(l));
    settings.inert(&layered.config, &input.path).iter().for_each(|w| crate::ui::warn(w));
    let highest = r.points.iter().map(|p| p.used).max();
    if let Some(w) = engine::over_window(&layered.config, highest, t.session.as_ref(), &input.path) {
        crate::ui::warn(&w);
    }
    let picture = args.svg.as_ref().map(|_| {
        let name = input.path.file_name().map_or("<stdin>".into(), |n| n.to_string_lossy().into_owned());
        crate::chart::svg(&r, &name)
    });
    if let (Some(path), Some(picture), false) = (&args.svg, &picture, svg_out) {
        output::write_output(path, |w| w.write_all(picture.as_bytes())).map_err(|e| Error::write(path, e))?;
    }
    if let Some(dir) = &args.out_dir {
        write_firings(dir, &input, &t, &r, &settings, args.max_firings)?;
    }
    if let (Some(picture), true) = (picture, svg_out) {
        return stdout_write(|w| w.write_all(picture.as_bytes()));
    }
    let text = if args.json { r.json_lines() } else { report(&r, &input.display_name(), chosen) };
    stdout_write(|w| w.write_all(text.as_bytes()))
}

/// For people: the recorded compactions and predicted firings side by side.
fn report(r: &Replay, name: &str, chosen: bool) -> String {
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
            let _ =
                writeln!(out, "no recorded compaction and no predicted firing; highest: {} at call {}", p.used, p.call);
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
    }
    let _ = writeln!(out, "{}", s.line());
    out
}

/// `--out-dir`: a `run --out-dir` folder per predicted firing (the first `max`).
fn write_firings(
    dir: &Path,
    input: &crate::inputs::Input,
    t: &Transcript<'_>,
    r: &Replay,
    s: &Settings,
    max: usize,
) -> Result<()> {
    let real: std::collections::HashSet<PathBuf> = std::fs::canonicalize(&input.path).into_iter().collect();
    let out = OutDir::create(dir, real)?;
    let firings = r.points.iter().filter(|p| p.fired).count();
    if firings > max {
        crate::ui::warn(&format!(
            "{}: {firings} predicted firings; the first {max} are written (--max-firings N for more)",
            input.display_name()
        ));
    }
    crate::replay::each_firing(t, r, s, &input.path, max, |p, done| {
        output::write_out_dir(&out, &input.out_name.join(format!("call-{}", p.call)), done)
    })
}
