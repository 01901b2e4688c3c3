//! What each subcommand does: turn arguments into settings, run the engine, write.

use super::inputs::{self, Input};
use super::{CaseFlags, CheckArgs, Cli, Command, ConfigArgs, DecideArgs, PolicyArgs, Shell, StatsArgs, ValidateArgs};
use crate::engine::{self, Processed, Settings};
use crate::error::{Error, Exit, Result};
use crate::render::escape_controls;
use clap::CommandFactory;
use serde_json::{json, Value};
use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};

/// Runs a parsed command line; returns the exit code.
pub fn dispatch(cli: Cli) -> Exit {
    let result = match cli.command {
        Command::Run(args) => super::run::run(args),
        Command::Decide(args) => decide(args),
        Command::Config(args) => config(args),
        Command::Check(args) => check(args),
        Command::Stats(args) => stats(args),
        Command::Validate(args) => validate(args),
        Command::Completions { shell } => completions(shell),
        Command::Man => man(),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            report(&e.to_string());
            e.exit()
        }
    }
}

/// Prints one error line with the program prefix.
pub fn report(msg: &str) {
    crate::ui::error(msg);
}

pub(super) fn warn(msg: &str) {
    crate::ui::warn(msg);
}

/// Settings from the flags; a bad config file is bad input (exit 3).
pub(super) fn settings(p: &PolicyArgs, dry_run: bool) -> Result<Settings> {
    let mut flags: Vec<(&'static str, Value)> = Vec::new();
    if let Some(r) = &p.runtime {
        flags.push(("runtime.kind", json!(r)));
    }
    if p.native_compaction {
        flags.push(("runtime.native_compaction", json!(true)));
    }
    if p.no_native_compaction {
        flags.push(("runtime.native_compaction", json!(false)));
    }
    let optional: [(&'static str, Option<Value>); 6] = [
        ("runtime.context_window", p.context_window.map(Value::from)),
        ("task.max_total_tokens", p.max_total_tokens.map(Value::from)),
        ("threshold", p.threshold.map(Value::from)),
        ("tokenizer", p.tokenizer.clone().map(Value::from)),
        ("hooks.pre_compact", p.pre_compact_hook.clone().map(Value::from)),
        ("hooks.post_compact", p.post_compact_hook.clone().map(Value::from)),
    ];
    flags.extend(optional.into_iter().filter_map(|(k, v)| Some((k, v?))));
    if let Some(s) = p.hook_timeout {
        flags.push(("hooks.timeout_secs", json!(s)));
    }
    if let Some(s) = &p.summarizer {
        flags.push(("summarizer", json!(s)));
    }
    if !p.allow.is_empty() {
        flags.push(("workspace.allowed_paths", json!(p.allow)));
    }
    if !p.verify.is_empty() {
        flags.push(("verification", json!(p.verify)));
    }
    if !crate::formats::FORMATS.contains(&p.input_format.as_str()) {
        return Err(Error::Usage(format!(
            "unknown --input-format `{}` (expected one of {})",
            p.input_format,
            crate::formats::FORMATS.join(", ")
        )));
    }
    let config_file = match &p.config {
        None => None,
        Some(path) => Some((path.clone(), read_config_file(path)?)),
    };
    Ok(Settings { config_file, flags, manual: p.manual, dry_run, input_format: p.input_format.clone() })
}

fn read_config_file(path: &Path) -> Result<Value> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::bad_input(path, format!("cannot read: {e}")))?;
    serde_json::from_str(&text).map_err(|e| {
        let line = text.lines().nth(e.line().saturating_sub(1)).unwrap_or("");
        let (column, msg) = crate::error::serde_position(&e, line);
        Error::bad_line(path, e.line(), column, format!("invalid JSON: {msg}"))
    })
}

/// Reads one input and turns it into canonical JSONL bytes.
pub(super) fn load(input: &Input, format: &str) -> Result<crate::formats::Canonical> {
    let raw = input.read()?;
    crate::formats::import(raw, &input.path, format)
}

pub(super) fn with_processed<T>(
    input: &Input,
    settings: &Settings,
    f: impl FnOnce(&Processed<'_>) -> Result<T>,
) -> Result<T> {
    let canonical = load(input, &settings.input_format)?;
    let mut s = settings.clone();
    s.input_format = canonical.format.clone();
    let mut done = engine::process(&canonical.bytes, &input.path, &s)?;
    done.warnings.splice(0..0, canonical.warnings);
    f(&done)
}

pub(super) fn display(input: &Input) -> String {
    if input.is_stdin() {
        "<stdin>".into()
    } else {
        escape_controls(&input.path.display().to_string())
    }
}

pub(super) fn print_warnings(done: &Processed<'_>) {
    done.warnings.iter().for_each(|w| warn(w));
}

/// Writes to stdout; a reader that closes early (`head`) is not an error.
pub(super) fn stdout_write(f: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<Exit> {
    let stdout = io::stdout();
    let mut w = io::BufWriter::with_capacity(1 << 20, stdout.lock());
    match f(&mut w).and_then(|_| w.flush()) {
        Ok(()) => Ok(Exit::Ok),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(Exit::Ok),
        Err(e) => Err(Error::Failed(format!("cannot write to standard output: {e}"))),
    }
}

fn single_input(arg: &str, format: &str) -> Result<Input> {
    let mut inputs = inputs::expand(&[arg.to_string()], format, None)?;
    if inputs.len() != 1 {
        return Err(Error::Usage(format!("`{arg}` names {} transcripts; this command takes one", inputs.len())));
    }
    Ok(inputs.remove(0))
}

fn decide(args: DecideArgs) -> Result<Exit> {
    let settings = settings(&args.policy, true)?;
    let input = single_input(&args.input, &args.policy.input_format)?;
    with_processed(&input, &settings, |done| {
        print_warnings(done);
        if args.json {
            return stdout_write(|w| w.write_all(done.decision_json().as_bytes()));
        }
        let text = super::super::report::decision_report(done);
        stdout_write(|w| w.write_all(text.as_bytes()))
    })
}

fn config(args: ConfigArgs) -> Result<Exit> {
    let settings = settings(&args.policy, true)?;
    let input = single_input(&args.input, &args.policy.input_format)?;
    let canonical = load(&input, &settings.input_format)?;
    let t = crate::transcript::parse(&canonical.bytes, &input.path)?;
    let cfg = settings.config_for(t.session.as_ref(), &input.path)?;
    cfg.warnings.iter().for_each(|w| warn(w));
    let prov = cfg.provenance();
    if args.json {
        let mut s = serde_json::to_string_pretty(&prov).expect("json");
        s.push('\n');
        return stdout_write(|w| w.write_all(s.as_bytes()));
    }
    let mut out = String::new();
    for key in crate::config::KEYS {
        let entry = &prov[*key];
        out.push_str(&format!(
            "{key:<28} {:<40} {}\n",
            escape_controls(&entry["value"].to_string()),
            entry["from"].as_str().unwrap_or("")
        ));
    }
    stdout_write(|w| w.write_all(out.as_bytes()))
}

fn completions(shell: Shell) -> Result<Exit> {
    let mut cmd = Cli::command();
    let shell = match shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut cmd, "rivumi-compact", &mut buf);
    stdout_write(|w| w.write_all(&buf))
}

fn man() -> Result<Exit> {
    let page = super::super::manpage::render();
    stdout_write(|w| w.write_all(&page))
}

fn check(args: CheckArgs) -> Result<Exit> {
    let color =
        std::io::IsTerminal::is_terminal(&io::stdout()) && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let opts = crate::check::CheckOptions { bless: args.bless, color, allow_case_commands: args.allow_case_commands };
    let parse = |flags: &[String]| -> Result<Settings> {
        let parsed = <CaseFlags as clap::Parser>::try_parse_from(flags).map_err(|e| {
            Error::Usage(format!("bad flags in a case's args file: {}", e.to_string().lines().next().unwrap_or("")))
        })?;
        settings(&parsed.policy, false)
    };
    let mut report = Vec::new();
    let code = crate::check::check(&args.dir, &opts, &parse, &mut report)?;
    stdout_write(|w| w.write_all(&report))?;
    Ok(code)
}

fn validate(args: ValidateArgs) -> Result<Exit> {
    if !crate::formats::FORMATS.contains(&args.input_format.as_str()) {
        return Err(Error::Usage(format!("unknown --input-format `{}`", args.input_format)));
    }
    let inputs = inputs::expand(&args.inputs, &args.input_format, None)?;
    let mut all = Vec::new();
    let mut unreadable = false;
    for input in &inputs {
        match load(input, &args.input_format) {
            Ok(canonical) => {
                // Imported files are validated in their canonical form: say so, since
                // the line numbers are those of that form.
                let shown = if canonical.format == "rivumi" {
                    input.path.clone()
                } else {
                    PathBuf::from(format!("{} (as canonical {})", input.path.display(), canonical.format))
                };
                all.extend(crate::validate::validate(&canonical.bytes, &shown));
            }
            Err(e) => {
                unreadable = true;
                report(&e.to_string());
            }
        }
    }
    let text = if args.json {
        let mut s = serde_json::to_string_pretty(&all).expect("json");
        s.push('\n');
        s
    } else {
        let mut s: String = all
            .iter()
            .map(|v| format!("{}:{}: {}: {}\n", escape_controls(&v.file), v.line, v.code, escape_controls(&v.message)))
            .collect();
        s.push_str(&format!("{} violation(s) in {} transcript(s)\n", all.len(), inputs.len()));
        s
    };
    stdout_write(|w| w.write_all(text.as_bytes()))?;
    Ok(if unreadable {
        Exit::BadInput
    } else if all.is_empty() {
        Exit::Ok
    } else {
        Exit::Differences
    })
}

/// Totals over many transcripts; decides as `run --dry-run` would (no hooks, no files).
fn stats(args: StatsArgs) -> Result<Exit> {
    let settings = settings(&args.policy, true)?;
    let inputs = inputs::expand(&args.inputs, &args.policy.input_format, None)?;
    crate::signals::install();
    let progress = io::stderr().is_terminal() && inputs.len() > 1;
    let dataset = inputs::is_dataset(&args.policy.input_format, &inputs);
    let per_file = crate::batch::map(&inputs, super::run::jobs(args.jobs), progress, |input| {
        if dataset {
            return dataset_stats(input, &settings);
        }
        with_processed(input, &settings, |done| {
            let mut one = crate::stats::Stats::new();
            one.add(done);
            Ok(one)
        })
    });
    let mut total = crate::stats::Stats::new();
    for r in per_file.into_iter().flatten() {
        match r {
            Ok(one) => total.merge(one),
            Err(e) => {
                total.failed += 1;
                report(&e.to_string());
            }
        }
    }
    let text = if args.json {
        let mut s = serde_json::to_string_pretty(&total).expect("json");
        s.push('\n');
        s
    } else {
        total.table()
    };
    stdout_write(|w| w.write_all(text.as_bytes()))?;
    Ok(if total.failed > 0 { Exit::Failed } else { Exit::Ok })
}

/// Stats over a dataset file: every line is a transcript; bad lines are reported and
/// counted as failed.
fn dataset_stats(input: &Input, settings: &Settings) -> Result<crate::stats::Stats> {
    let mut s = settings.clone();
    s.input_format = "openai".into();
    let text = input.read()?;
    let mut stats = crate::stats::Stats::new();
    for (k, line) in String::from_utf8_lossy(&text).lines().enumerate() {
        if let Some(m) = crate::formats::openai::add_line_stats(line, &input.path, k + 1, &s, &mut stats) {
            report(&escape_controls(&m));
        }
    }
    Ok(stats)
}
