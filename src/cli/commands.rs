//! What each subcommand does: turn arguments into settings, run the engine, write.

use super::inputs::{self, Input};
use super::{
    CaseFlags, CheckArgs, Cli, Command, ConfigArgs, DecideArgs, Emit, PolicyArgs, RunArgs, Shell, StatsArgs,
    ValidateArgs,
};
use crate::engine::{self, Processed, Settings};
use crate::error::{Error, Exit, Result};
use crate::output::{self, Output};
use crate::render::escape_controls;
use clap::CommandFactory;
use serde_json::{json, Value};
use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};

/// Runs a parsed command line; returns the exit code.
pub fn dispatch(cli: Cli) -> Exit {
    let result = match cli.command {
        Command::Run(args) => run(args),
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
    eprintln!("rivumi-compact: error: {msg}");
}

fn warn(msg: &str) {
    eprintln!("rivumi-compact: warning: {msg}");
}

/// Settings from the flags; a bad config file is bad input (exit 3).
fn settings(p: &PolicyArgs, dry_run: bool) -> Result<Settings> {
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
    serde_json::from_str(&text).map_err(|e| Error::bad_line(path, e.line(), e.column(), format!("invalid JSON: {e}")))
}

/// Reads one input and turns it into canonical JSONL bytes.
fn load(input: &Input, format: &str) -> Result<crate::formats::Canonical> {
    let raw = input.read()?;
    crate::formats::import(raw, &input.path, format)
}

fn with_processed<T>(input: &Input, settings: &Settings, f: impl FnOnce(&Processed<'_>) -> Result<T>) -> Result<T> {
    let canonical = load(input, &settings.input_format)?;
    let mut s = settings.clone();
    s.input_format = canonical.format.clone();
    let mut done = engine::process(&canonical.bytes, &input.path, &s)?;
    done.warnings.splice(0..0, canonical.warnings);
    f(&done)
}

fn run(args: RunArgs) -> Result<Exit> {
    let settings = settings(&args.policy, args.dry_run)?;
    let inputs = inputs::expand(&args.inputs, &args.policy.input_format, args.out_dir.as_deref())?;
    if is_dataset(&args.policy.input_format, &inputs) {
        if args.dry_run || args.emit.is_some_and(|e| e != Emit::Transcript) {
            return Err(Error::Usage("dataset mode (openai) writes conversations only: no --dry-run or --emit".into()));
        }
        if inputs.len() > 1 && args.out_dir.is_none() {
            return Err(Error::Usage(format!("{} inputs need --out-dir", inputs.len())));
        }
        if let Some(dir) = &args.out_dir {
            check_distinct(&inputs)?;
            check_not_input(dir, &inputs)?;
        }
        let mut s = settings.clone();
        s.input_format = "openai".into();
        return super::dataset::run(&inputs, &s, args.out_dir.as_deref(), args.jobs);
    }
    if inputs.len() > 1 && args.out_dir.is_none() && !args.dry_run {
        return Err(Error::Usage(format!(
            "{} inputs need --out-dir (one input prints its transcript on stdout)",
            inputs.len()
        )));
    }
    if let Some(dir) = &args.out_dir {
        check_distinct(&inputs)?;
        check_not_input(dir, &inputs)?;
    }
    if inputs.len() == 1 && args.out_dir.is_none() {
        let input = &inputs[0];
        return with_processed(input, &settings, |done| {
            print_warnings(done);
            if let (Some(e), false) = (done.refusal(), args.dry_run) {
                return Err(e);
            }
            eprintln!("rivumi-compact: {}: {}", display(input), escape_controls(&done.plan.decision.one_line()));
            let emit = args.emit.unwrap_or(if args.dry_run { Emit::Decision } else { Emit::Transcript });
            let code = stdout_write(|w| emit_to(w, done, emit))?;
            Ok(if done.plan.refused { Exit::Failed } else { code })
        });
    }
    run_batch(&args, &settings, &inputs)
}

/// Several inputs (or an out-dir): processed in parallel, reported in input order.
fn run_batch(args: &RunArgs, settings: &Settings, inputs: &[Input]) -> Result<Exit> {
    crate::batch::install_interrupt_handler();
    let progress = io::stderr().is_terminal() && inputs.len() > 1;
    let results = crate::batch::map(inputs, args.jobs, progress, |input| {
        with_processed(input, settings, |done| {
            if let Some(e) = done.refusal() {
                return Err(e);
            }
            if let (Some(dir), false) = (&args.out_dir, args.dry_run) {
                output::write_out_dir(&dir.join(&input.out_name), done)?;
            }
            let line = format!("{}: {}", display(input), escape_controls(&done.plan.decision.one_line()));
            Ok((line, done.warnings.clone(), done.plan.changes()))
        })
    });
    let (mut failed, mut compacted, mut skipped) = (0, 0, 0);
    for r in &results {
        match r {
            None => skipped += 1,
            Some(Ok((line, warnings, changed))) => {
                warnings.iter().for_each(|w| warn(w));
                compacted += usize::from(*changed);
                if inputs.len() == 1 {
                    eprintln!("rivumi-compact: {line}");
                }
            }
            Some(Err(e)) => {
                failed += 1;
                report(&e.to_string());
            }
        }
    }
    let total = results.len();
    let done = total - skipped;
    let stopped = if skipped > 0 { format!(", {skipped} not started (interrupted)") } else { String::new() };
    eprintln!(
        "rivumi-compact: {total} file(s): {compacted} compacted, {} unchanged, {failed} failed{stopped}",
        done - compacted - failed
    );
    if crate::batch::interrupted() {
        return Ok(Exit::Interrupted);
    }
    if total == 1 && failed == 1 {
        // A single input keeps its own exit code (3 for bad input, 4 for a hook failure).
        if let Some(Some(Err(e))) = results.into_iter().next() {
            return Ok(e.exit());
        }
    }
    Ok(if failed > 0 { Exit::Failed } else { Exit::Ok })
}

fn check_distinct(inputs: &[Input]) -> Result<()> {
    let mut seen = std::collections::BTreeMap::new();
    for i in inputs {
        if let Some(other) = seen.insert(i.out_name.clone(), i.path.clone()) {
            return Err(Error::Usage(format!(
                "{} and {} would share the output folder {}",
                other.display(),
                i.path.display(),
                i.out_name.display()
            )));
        }
    }
    Ok(())
}

/// An output may never land on an input: refuse before anything is written.
fn check_not_input(dir: &Path, inputs: &[Input]) -> Result<()> {
    let Ok(dir) = std::fs::canonicalize(dir) else {
        return Ok(()); // a new folder holds no input
    };
    // Canonicalize each input's folder once (a batch has few folders and many files).
    let mut folders: std::collections::HashMap<PathBuf, Option<PathBuf>> = std::collections::HashMap::new();
    let mut sources: std::collections::HashSet<PathBuf> = std::collections::HashSet::new();
    for i in inputs.iter().filter(|i| !i.is_stdin()) {
        let (Some(parent), Some(name)) = (i.path.parent(), i.path.file_name()) else { continue };
        let parent = if parent.as_os_str().is_empty() { Path::new(".") } else { parent };
        let canon = folders.entry(parent.to_path_buf()).or_insert_with(|| std::fs::canonicalize(parent).ok());
        if let Some(c) = canon {
            sources.insert(c.join(name));
        }
    }
    if sources.contains(&dir) {
        return Err(Error::Usage(format!("--out-dir {} is an input", dir.display())));
    }
    for i in inputs {
        for o in Output::ALL {
            let target = dir.join(&i.out_name).join(o.file_name());
            if sources.contains(&target) {
                return Err(Error::Usage(format!("{} would overwrite the input {}", o.file_name(), target.display())));
            }
        }
    }
    Ok(())
}

fn display(input: &Input) -> String {
    if input.is_stdin() {
        "<stdin>".into()
    } else {
        escape_controls(&input.path.display().to_string())
    }
}

fn print_warnings(done: &Processed<'_>) {
    done.warnings.iter().for_each(|w| warn(w));
}

/// Writes one output to a writer.
fn emit_to(w: &mut dyn Write, done: &Processed<'_>, emit: Emit) -> io::Result<()> {
    let out = match emit {
        Emit::Transcript => Output::Transcript,
        Emit::Decision => Output::Decision,
        Emit::Journal => Output::Journal,
        Emit::Summary => Output::Summary,
        Emit::Reanchor => Output::Reanchor,
    };
    out.write(w, done)
}

/// Writes to stdout; a reader that closes early (`head`) is not an error.
fn stdout_write(f: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<Exit> {
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
    let opts = crate::check::CheckOptions { bless: args.bless, color };
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
            Ok(canonical) => all.extend(crate::validate::validate(&canonical.bytes, &input.path)),
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
    crate::batch::install_interrupt_handler();
    let progress = io::stderr().is_terminal() && inputs.len() > 1;
    let per_file = crate::batch::map(&inputs, args.jobs, progress, |input| {
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
    Ok(if crate::batch::interrupted() {
        Exit::Interrupted
    } else if total.failed > 0 {
        Exit::Failed
    } else {
        Exit::Ok
    })
}

/// Dataset mode: `--input-format openai`, or `auto` on files whose first line is a
/// `{"messages": …}` conversation (stdin needs the flag: it is not read twice).
fn is_dataset(format: &str, inputs: &[Input]) -> bool {
    match format {
        "openai" => true,
        "auto" => inputs.iter().filter(|i| !i.is_stdin()).any(|i| {
            let mut head = vec![0u8; 64 * 1024];
            let n = std::fs::File::open(&i.path).and_then(|mut f| io::Read::read(&mut f, &mut head)).unwrap_or(0);
            crate::formats::detect(&head[..n]) == "openai"
        }),
        _ => false,
    }
}
