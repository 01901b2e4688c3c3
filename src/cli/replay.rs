//! `replay`: the profile's trigger at every evaluation point, beside the compactions the
//! session recorded; JSON Lines for programs, an SVG picture, and the compacted
//! context at each predicted firing for dataset builders.

use super::common::{settings, single_input, stdout_write};
use super::ReplayArgs;
use crate::engine::Settings;
use crate::error::{Error, Exit, Result};
use crate::output::{self, OutDir};
use crate::replay::{Loaded, Replay};
use crate::transcript::Transcript;
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
    // Replay follows the agent that wrote the input unless told otherwise (SPEC 12).
    let chosen = args.policy.profile.is_some();
    crate::replay::replay_input(&input, &settings, !chosen, |loaded| {
        loaded.warnings.iter().for_each(|w| crate::ui::warn(w));
        show(&args, &input, &loaded, chosen)
    })
}

/// What `replay` writes of a replay: the picture, the firings' folders, the report.
fn show(args: &ReplayArgs, input: &crate::inputs::Input, loaded: &Loaded<'_>, chosen: bool) -> Result<Exit> {
    let (t, r) = (loaded.transcript, &loaded.replay);
    let svg_out = args.svg.as_deref().is_some_and(output::is_stdout);
    let picture = args.svg.as_ref().map(|_| {
        let name = input.path.file_name().map_or("<stdin>".into(), |n| n.to_string_lossy().into_owned());
        crate::chart::svg(r, &name)
    });
    if let (Some(path), Some(picture), false) = (&args.svg, &picture, svg_out) {
        output::write_output(path, |w| w.write_all(picture.as_bytes())).map_err(|e| Error::write(path, e))?;
    }
    if let Some(dir) = &args.out_dir {
        write_firings(dir, input, t, r, &loaded.settings, args.max_firings)?;
    }
    if let (Some(picture), true) = (picture, svg_out) {
        return stdout_write(|w| w.write_all(picture.as_bytes()));
    }
    let text = if args.json { r.json_lines() } else { r.report(&input.display_name(), chosen) };
    stdout_write(|w| w.write_all(text.as_bytes()))
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
