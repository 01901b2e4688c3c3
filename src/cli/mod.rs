//! The command line, in one place: clap definitions for every subcommand and the
//! shared flags. The man page and completions are generated from these definitions.

mod check;
mod common;
mod completions;
mod config;
mod dataset;
mod decide;
mod manpage;
mod replay;
mod run;
mod stats;
mod validate;

use crate::config::{Profile, RuntimeKind, Setting, Tokenizer};
use crate::error::Exit;
use crate::formats::InputFormat;
use crate::formats::OutputFormat;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::num::NonZeroU64;
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "rivumi-compact",
    version,
    about = "Reproduce Rivumi's context compaction policy offline over agent transcripts",
    long_about = "Reads agent transcripts (JSONL), decides which compaction threshold applies \
(a conversation runtime against the provider's context window, or the native agent runner \
against the task's max_total_tokens), and emits the compacted transcript, the rendered \
fallback summary, the re-anchor block, a decision and a journal. Same input and configuration, \
same bytes out.",
    after_help = Exit::help_text(),
    propagate_version = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// When to colour diffs, errors and warnings (NO_COLOR set: no colour under auto)
    #[arg(long, global = true, value_enum, value_name = "WHEN", default_value_t = crate::ui::ColorWhen::Auto)]
    pub color: crate::ui::ColorWhen,
}

impl Cli {
    /// The command line of this process; a usage error is printed with this tool's
    /// `rivumi-compact: error:` prefix and exits 2, help and version as clap prints them.
    pub fn parse_or_exit() -> Cli {
        use clap::{CommandFactory, FromArgMatches};
        let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
        let when = color_from_args(&args);
        crate::ui::set_color(when);
        let color = match when {
            crate::ui::ColorWhen::Always => clap::ColorChoice::Always,
            crate::ui::ColorWhen::Never => clap::ColorChoice::Never,
            crate::ui::ColorWhen::Auto => clap::ColorChoice::Auto,
        };
        let parsed = Cli::command().color(color).try_get_matches_from(&args).and_then(|m| Cli::from_arg_matches(&m));
        match parsed {
            Ok(cli) => cli,
            Err(e)
                if !e.use_stderr() || e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand =>
            {
                e.exit()
            }
            Err(e) => {
                crate::ui::clap_error(&e.render().to_string());
                std::process::exit(Exit::Usage.code());
            }
        }
    }
}

/// `--color WHEN` / `--color=WHEN` as given, before clap has parsed (so that even a usage
/// error is coloured as asked); the last one wins, an unknown value is clap's to report.
fn color_from_args(args: &[std::ffi::OsString]) -> crate::ui::ColorWhen {
    let mut when = crate::ui::ColorWhen::Auto;
    let mut it = args.iter().skip(1).map(|a| a.to_string_lossy());
    while let Some(a) = it.next() {
        if a == "--" {
            break;
        }
        let value = match a.strip_prefix("--color") {
            Some("") => it.next().map(std::borrow::Cow::into_owned),
            Some(v) if v.starts_with('=') => Some(v[1..].to_string()),
            _ => None,
        };
        if let Some(w) = value.and_then(|v| <crate::ui::ColorWhen as ValueEnum>::from_str(&v, false).ok()) {
            when = w;
        }
    }
    when
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Decide and compact transcripts; write the compacted transcript and the other outputs
    #[command(after_help = "Examples:
  rivumi-compact run session.jsonl --max-total-tokens 100000 > compacted.jsonl
  rivumi-compact run session.jsonl --out-dir out/ --emit summary
  rivumi-compact run session.jsonl --dry-run
  rivumi-compact run ~/.openhands/conversations/ --max-total-tokens 200000 --out-dir out/  # one transcript per conversation")]
    Run(RunArgs),
    /// Show the decision and its reasons, with the ratio per turn against the denominator
    #[command(after_help = "Example:\n  rivumi-compact decide session.jsonl --max-total-tokens 100000")]
    Decide(DecideArgs),
    /// Walk a transcript and evaluate a profile's trigger at every point where that runtime
    /// evaluates it, beside the compactions the session recorded
    #[command(after_help = "Examples:
  rivumi-compact replay session.jsonl --profile claude-code
  rivumi-compact replay rollout.jsonl --profile codex --json | jq 'select(.fired)'
  rivumi-compact replay session.jsonl --profile claude-code --svg occupancy.svg --out-dir firings/")]
    Replay(ReplayArgs),
    /// Golden-file regression: run every case folder again and diff its expected outputs
    #[command(after_help = "Each case folder holds input.jsonl, an optional config.json (and optional `args`, \
flags one per line) and the expected outputs under the names --out-dir writes.

On a difference: exit 1, unified diffs headed a/PATH and b/PATH, and the command that accepts the \
actual outputs. Lines of an args file hold a flag and its value (--max-total-tokens 20000); \
an error names the file and line.

Examples:
  rivumi-compact check tests/golden                      # exit 1 and unified diffs on any difference
  rivumi-compact check tests/golden 'reanchor-*' --json  # some cases, one JSON report
  rivumi-compact check tests/golden --bless              # rewrite the expected files")]
    Check(CheckArgs),
    /// Report every broken invariant of transcripts, with file and line
    #[command(after_help = "Example:\n  rivumi-compact validate sessions/ --json")]
    Validate(ValidateArgs),
    /// Dataset totals: transcripts, items, tokens, actions, tokens saved
    #[command(after_help = "Example:\n  rivumi-compact stats 'data/**/*.jsonl' --max-total-tokens 200000 --json")]
    Stats(StatsArgs),
    /// Print the merged configuration and the layer each value came from
    #[command(after_help = "Example:\n  rivumi-compact config session.jsonl --config rivumi.json --threshold 0.9")]
    Config(ConfigArgs),
    /// Print a shell completion script
    #[command(after_help = "Examples:
  rivumi-compact completions bash > ~/.local/share/bash-completion/completions/rivumi-compact
  rivumi-compact completions zsh > ~/.zfunc/_rivumi-compact  # with fpath+=(~/.zfunc) before compinit
  rivumi-compact completions fish > ~/.config/fish/completions/rivumi-compact.fish")]
    Completions {
        /// The shell to generate for
        shell: Shell,
    },
    /// Print the man page (roff) generated from these definitions
    #[command(hide = true)]
    Man,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

/// What dataset mode does with a line it cannot read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BadLines {
    Keep,
    Skip,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Transcript files, directories, globs, or `-` for stdin (gzip or zstd compressed too); an
    /// OpenHands conversation folder (`base_state.json`, `events/`) is one transcript
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<String>,
    /// Write each input's outputs into DIR/<name>/ (transcript.jsonl, decision.json, journal.jsonl, summary.md, reanchor.md)
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
    /// Print this output on stdout instead of the transcript
    #[arg(long, value_enum, value_name = "OUTPUT")]
    pub emit: Option<crate::output::Output>,
    /// Decide without side effects: no files, no hooks, no summarizer; print the decision
    #[arg(long)]
    pub dry_run: bool,
    /// The format of the compacted transcript: canonical JSONL (the default; a dataset's rows stay in their own format), one OpenAI chat line per transcript, or the agent's own session to resume (claude-code, codex, gemini-cli)
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub output_format: Option<OutputFormat>,
    /// Write what would go to stdout into FILE instead (atomically; `-`: stdout)
    #[arg(long, value_name = "FILE", conflicts_with = "out_dir")]
    pub out: Option<PathBuf>,
    /// Add to each chat line (--output-format openai) or dataset row where it comes from and
    /// what was done (source, line, session, model, action, tokens before and after) under the
    /// key `rivumi`; refused where no line is written (sessions in their own format)
    #[arg(long)]
    pub provenance: bool,
    /// Dataset mode: what to do with a line that cannot be read: keep (echo it unchanged,
    /// so lines stay matched) or skip (leave it out)
    #[arg(long, value_name = "WHAT", value_enum, default_value_t = BadLines::Keep)]
    pub bad_lines: BadLines,
    /// Dataset mode: also write each bad line to FILE (JSON Lines: line, error, text; written as --out is, atomically; `-`: stdout, when the dataset goes to --out or --out-dir)
    #[arg(long, value_name = "FILE")]
    pub rejects: Option<PathBuf>,
    /// Files, dataset lines or the pieces of one large transcript processed in parallel (0: one per core; 1: one thread reads, compacts and writes)
    #[arg(long, short = 'j', value_name = "N", default_value_t = 0)]
    pub jobs: usize,
    #[command(flatten)]
    pub policy: PolicyArgs,
    #[command(flatten)]
    pub actions: ActionArgs,
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The transcript
    #[arg(value_name = "INPUT")]
    pub input: String,
    /// Print JSON Lines: one object per evaluation point, then a summary object
    #[arg(long)]
    pub json: bool,
    /// For each predicted firing, write the context the model would have seen next into DIR/<name>/call-<N>/
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
    /// With --out-dir: write at most N firing folders (each holds a whole compacted
    /// context; a session with thousands of compactions would fill a disk)
    #[arg(long, value_name = "N", default_value_t = 100, requires = "out_dir")]
    pub max_firings: usize,
    /// Draw the figure per model call against the trigger line (SVG; `-`: on stdout, in place of the report)
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    #[command(flatten)]
    pub policy: PolicyArgs,
}

#[derive(Debug, Args)]
pub struct StatsArgs {
    /// Transcript files, directories, globs, or `-` for stdin (gzip or zstd compressed too); an
    /// OpenHands conversation folder (`base_state.json`, `events/`) is one transcript
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<String>,
    /// Print the totals as JSON
    #[arg(long)]
    pub json: bool,
    /// Files processed in parallel (0: one per core)
    #[arg(long, short = 'j', value_name = "N", default_value_t = 0)]
    pub jobs: usize,
    #[command(flatten)]
    pub policy: PolicyArgs,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The folder holding the case folders (with --accept-file: the folder above the file's
    /// case, when not given)
    #[arg(value_name = "DIR", value_hint = clap::ValueHint::DirPath, required_unless_present = "accept_file")]
    pub dir: Option<PathBuf>,
    /// Only these cases: names (folders below DIR) or globs (`'reanchor-*'`)
    #[arg(value_name = "CASE")]
    pub cases: Vec<String>,
    /// How to report: text for people, json (one document), github (annotations for
    /// GitHub Actions), junit (XML for GitLab and Jenkins)
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = crate::check::Format::Text)]
    pub format: crate::check::Format,
    /// The same as --format json
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// Write each actual output that differs beside its expected file as NAME.new, for review
    /// (NAME.removed beside an expected file the run no longer produces)
    #[arg(long, conflicts_with_all = ["bless", "accept", "accept_file"])]
    pub pending: bool,
    /// Turn the pending NAME.new files of the cases (all, or those named) into expected files,
    /// and remove the expected files marked NAME.removed
    #[arg(long, conflicts_with_all = ["bless", "accept_file"])]
    pub accept: bool,
    /// Turn one pending file into its expected file, or carry out one removal (PATH is either
    /// of them); repeatable
    #[arg(long, value_name = "PATH", conflicts_with = "bless")]
    pub accept_file: Vec<PathBuf>,
    /// Write the expected files from this run (atomically) and say what changed: accept everything
    #[arg(long)]
    pub bless: bool,
    /// Run the hooks and summarizers that case folders name (off: a case folder is untrusted)
    #[arg(long)]
    pub allow_case_commands: bool,
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Transcript files, directories, globs, or `-` for stdin (gzip or zstd compressed too); an
    /// OpenHands conversation folder (`base_state.json`, `events/`) is one transcript
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<String>,
    /// Print the violations as a JSON array
    #[arg(long)]
    pub json: bool,
    /// Only this row of a dataset (1-based line number)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub line: Option<u64>,
    /// Input format
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = InputFormat::Auto)]
    pub input_format: InputFormat,
}

#[derive(Debug, Args)]
pub struct DecideArgs {
    /// The transcript (or a dataset: one decision per row)
    #[arg(value_name = "INPUT")]
    pub input: String,
    /// Print the decision as JSON (JSON Lines for the rows of a dataset)
    #[arg(long)]
    pub json: bool,
    /// Only this row of a dataset (1-based line number)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub line: Option<u64>,
    #[command(flatten)]
    pub policy: PolicyArgs,
}

#[derive(Debug, Args)]
pub struct ConfigArgs {
    /// The transcript whose session layer to include
    #[arg(value_name = "INPUT")]
    pub input: String,
    /// Print JSON: {key: {value, from}}
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub policy: PolicyArgs,
}

/// Flags that set configuration keys (SPEC 2) or how the policy is triggered.
/// The flags a `check` case's `args` file may hold.
#[derive(Debug, Parser)]
#[command(name = "args", no_binary_name = true)]
pub struct CaseFlags {
    #[command(flatten)]
    pub policy: PolicyArgs,
    #[command(flatten)]
    pub actions: ActionArgs,
    /// The format `transcript.jsonl` is written in
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = OutputFormat::Canonical)]
    pub output_format: OutputFormat,
    /// Accepted and changes nothing: the case pins every output `--emit` can print
    #[arg(long, value_name = "OUTPUT", value_enum)]
    pub emit: Option<crate::output::Output>,
}

#[derive(Debug, Args, Clone, Default)]
pub struct PolicyArgs {
    /// Input format
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = InputFormat::Auto)]
    pub input_format: InputFormat,
    /// A JSON configuration file (layered over the transcript's session record)
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// How the runtime decides to compact: a preset laid under the session, file and flags
    /// [default: rivumi; replay: the input's agent]
    #[arg(long, value_name = "NAME", value_enum)]
    pub profile: Option<Profile>,
    /// Which pressure path applies [runtime.kind]
    #[arg(long, value_name = "KIND", value_enum)]
    pub runtime: Option<RuntimeKind>,
    /// The conversation runtime advertises native compaction [runtime.native_compaction]
    #[arg(long, overrides_with = "no_native_compaction")]
    pub native_compaction: bool,
    /// The conversation runtime does not advertise native compaction
    #[arg(long)]
    pub no_native_compaction: bool,
    /// Provider context capacity in tokens [runtime.context_window]
    #[arg(long, value_name = "N", value_parser = parse_positive)]
    pub context_window: Option<NonZeroU64>,
    /// Conversation runtime: also fire at N tokens when that is below the threshold's
    /// figure (Codex's configured auto_compact_token_limit) [trigger.limit_tokens]
    #[arg(long, value_name = "N", value_parser = parse_positive)]
    pub trigger_limit: Option<NonZeroU64>,
    /// Agent runner: keep the newest items that fit in N tokens with the head and the injected
    /// records, and compact any context (the items after the latest compaction) larger than N
    /// [fallback.target_tokens]
    #[arg(long, value_name = "N", value_parser = parse_positive)]
    pub target_tokens: Option<NonZeroU64>,
    /// What the agent runner injects: summary, reminder, reanchor; repeatable (the flags
    /// replace the default of all three) [inject]
    #[arg(long, value_name = "KIND", value_enum)]
    pub inject: Vec<crate::config::Inject>,
    /// Task budget in tokens [task.max_total_tokens]
    #[arg(long, value_name = "N", value_parser = parse_positive)]
    pub max_total_tokens: Option<NonZeroU64>,
    /// Both paths fire at >= F, in (0, 1] with at most 4 decimals [threshold]
    #[arg(long, value_name = "F", value_parser = parse_threshold_flag)]
    pub threshold: Option<crate::config::Threshold>,
    /// A glob of paths the task may edit; repeatable [workspace.allowed_paths]
    #[arg(long = "allow", value_name = "GLOB")]
    pub allow: Vec<String>,
    /// A command that verifies the work; repeatable [verification]
    #[arg(long = "verify", value_name = "CMD")]
    pub verify: Vec<String>,
    /// Token estimate where no usage is reported [tokenizer]
    #[arg(long, value_name = "NAME", value_enum)]
    pub tokenizer: Option<Tokenizer>,
}

/// What only `run` does: run hooks and a summarizer, compact on request. (Other
/// commands decide or report, and never run a command.)
#[derive(Debug, Args, Clone, Default)]
pub struct ActionArgs {
    /// Shell command run before a compaction; may deny it [hooks.pre_compact]
    #[arg(long, value_name = "CMD", value_hint = clap::ValueHint::CommandString)]
    pub pre_compact_hook: Option<String>,
    /// Shell command run after a compaction [hooks.post_compact]
    #[arg(long, value_name = "CMD", value_hint = clap::ValueHint::CommandString)]
    pub post_compact_hook: Option<String>,
    /// Seconds a hook may run [hooks.timeout_secs]
    #[arg(long, value_name = "S")]
    pub hook_timeout: Option<u64>,
    /// Shell command that writes a checkpoint summary [summarizer]
    #[arg(long, value_name = "CMD", value_hint = clap::ValueHint::CommandString)]
    pub summarizer: Option<String>,
    /// The user asked for compaction (like /compact): skip the threshold
    #[arg(long)]
    pub manual: bool,
}

impl ActionArgs {
    /// The settings these flags make.
    pub fn add_to(&self, settings: &mut Vec<Setting>) {
        settings.extend(self.pre_compact_hook.clone().map(Setting::PreCompactHook));
        settings.extend(self.post_compact_hook.clone().map(Setting::PostCompactHook));
        settings.extend(self.hook_timeout.map(Setting::HookTimeout));
        settings.extend(self.summarizer.clone().map(Setting::Summarizer));
    }
}

/// A count of tokens: a positive integer, worded as a configuration file's is.
fn parse_positive(s: &str) -> Result<NonZeroU64, String> {
    let n: u64 = s.parse().map_err(|_| format!("expected a positive integer, found `{s}`"))?;
    NonZeroU64::new(n).ok_or_else(|| "expected a positive integer, found 0".to_string())
}

fn parse_threshold_flag(s: &str) -> Result<crate::config::Threshold, String> {
    let f: f64 = s.parse().map_err(|_| format!("`{s}` is not a number"))?;
    // The text itself, too: `0.850000000000000000001` is 0.85 as a float.
    let digits = s.split_once('.').map_or("", |(_, d)| d).trim_end_matches('0');
    if digits.len() > 4 && digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("threshold {s} has more than 4 decimals"));
    }
    crate::config::parse_threshold(f, s)?;
    crate::config::Threshold::new(f)
}

impl PolicyArgs {
    /// The settings the flags make (the command line's layer). A repeated flag builds
    /// one list, which replaces the lists of earlier layers; an invalid `--allow` glob
    /// is a usage error.
    pub fn settings(&self) -> crate::error::Result<Vec<Setting>> {
        let p = self;
        let mut s = Vec::new();
        s.extend(p.runtime.map(Setting::Runtime));
        if p.native_compaction || p.no_native_compaction {
            s.push(Setting::NativeCompaction(p.native_compaction));
        }
        s.extend(p.target_tokens.map(Setting::TargetTokens));
        if !p.inject.is_empty() {
            s.push(Setting::Inject(p.inject.clone()));
        }
        s.extend(p.trigger_limit.map(Setting::TriggerLimit));
        s.extend(p.context_window.map(Setting::ContextWindow));
        s.extend(p.max_total_tokens.map(Setting::MaxTotalTokens));
        s.extend(p.threshold.map(Setting::Threshold));
        s.extend(p.tokenizer.map(Setting::Tokenizer));
        if !p.allow.is_empty() {
            s.push(Setting::allowed_paths(&p.allow).map_err(crate::error::Error::Usage)?);
        }
        if !p.verify.is_empty() {
            s.push(Setting::Verification(p.verify.clone()));
        }
        Ok(s)
    }
}

/// Runs a parsed command line; returns the exit code.
pub fn dispatch(cli: Cli) -> Exit {
    let result = match cli.command {
        Command::Run(args) => run::run(args),
        Command::Decide(args) => decide::decide(args),
        Command::Replay(args) => replay::replay(args),
        Command::Config(args) => config::config(args),
        Command::Check(args) => check::check(args),
        Command::Stats(args) => stats::stats(args),
        Command::Validate(args) => validate::validate(args),
        Command::Completions { shell } => completions::completions(shell),
        Command::Man => completions::man(),
    };
    match result {
        Ok(code) => code,
        // A reader that closed stdout early (`head`) is not an error.
        Err(e) if e.is_closed_pipe() => Exit::Ok,
        Err(e) => {
            crate::ui::error(&e.to_string());
            e.exit()
        }
    }
}
