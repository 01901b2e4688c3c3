//! The man page, generated from the clap definitions plus the sections clap does not
//! know (configuration keys, reason codes, exit codes). `man/rivumi-compact.1` is its output.

use super::Cli;
use clap::CommandFactory;
use clap_mangen::roff::{roman, Roff};

/// Renders the whole page as roff.
pub fn render() -> Vec<u8> {
    let cmd = Cli::command();
    let man = clap_mangen::Man::new(cmd.clone()).date("2026-12-02");
    let mut out = Vec::new();
    man.render_title(&mut out).expect("write to memory");
    man.render_name_section(&mut out).expect("write to memory");
    man.render_synopsis_section(&mut out).expect("write to memory");
    man.render_description_section(&mut out).expect("write to memory");
    man.render_options_section(&mut out).expect("write to memory");
    let mut examples = Vec::new();
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let mut roff = Roff::new();
        roff.control("SH", [format!("COMMAND: {}", sub.get_name().to_uppercase()).as_str()]);
        let about = sub.get_about().map(std::string::ToString::to_string).unwrap_or_default();
        roff.text([roman(about)]);
        let full: &'static str = Box::leak(format!("rivumi-compact {}", sub.get_name()).into_boxed_str());
        let sub_man = clap_mangen::Man::new(sub.clone().name(full));
        let mut section = Vec::new();
        sub_man.render_synopsis_section(&mut section).expect("write to memory");
        sub_man.render_options_section(&mut section).expect("write to memory");
        out.extend(roff.render().into_bytes());
        out.extend(section);
        let after = sub.get_after_help().map(std::string::ToString::to_string).unwrap_or_default();
        let (prose, lines) = split_examples(&after);
        if !prose.is_empty() {
            // Its own paragraph, never glued to the last option's text.
            let mut p = Roff::new();
            p.control("PP", []);
            p.text([roman(prose)]);
            out.extend(p.render().into_bytes());
        }
        examples.extend(lines);
    }
    // Every command's examples in one EXAMPLES section, one per paragraph, as typed.
    let mut ex = Roff::new();
    ex.control("SH", ["EXAMPLES"]);
    for (command, comment) in examples {
        ex.control("PP", []);
        if !comment.is_empty() {
            ex.text([roman(comment)]);
            ex.control("br", []);
        }
        ex.control("RS", ["4"]);
        ex.text([clap_mangen::roff::bold(command)]);
        ex.control("RE", []);
    }
    out.extend(ex.render().into_bytes());
    out.extend(extra_sections().into_bytes());
    man.render_version_section(&mut out).expect("write to memory");
    out
}

/// A subcommand's after-help split into its prose and its examples: the lines after
/// `Example:` / `Examples:`, each a command with an optional `# comment`.
fn split_examples(after: &str) -> (String, Vec<(String, String)>) {
    let (prose, examples) = match after.find("Example") {
        Some(at) => (&after[..at], after[at..].split_once('\n').map_or("", |(_, rest)| rest)),
        None => (after, ""),
    };
    let lines = examples
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|l| match l.split_once("  #") {
            Some((command, comment)) => (command.trim().to_string(), comment.trim().to_string()),
            None => (l.to_string(), String::new()),
        })
        .collect();
    (prose.split_whitespace().collect::<Vec<_>>().join(" "), lines)
}

fn extra_sections() -> String {
    let mut roff = Roff::new();
    roff.control("SH", ["CONFIGURATION"]);
    roff.text([roman(
        "Layers, later wins: built-in defaults < the transcript's session record (or what an importer supplies) < --config FILE (JSON) < flags. A list from a later layer replaces the earlier list; a repeated flag adds to the list the flags build. Keys (JSON paths) and defaults:",
    )]);
    for (key, default) in crate::config::keys() {
        roff.control("TP", []);
        roff.text([roman(key)]);
        roff.text([roman(format!("default: {default}"))]);
    }
    roff.control("SH", ["REASON CODES"]);
    for code in crate::policy::ReasonCode::ALL {
        roff.control("TP", []);
        roff.text([roman(code.as_str())]);
        roff.text([roman(code.meaning())]);
    }
    roff.control("SH", ["RECORDS"]);
    roff.text([roman(
        "Every record of an input is read into an item (a message or a tool result) or counted under one of these reasons; run's summary line on stderr and decide show the counts (decide --json as \"records\"). A non-empty input that gives no item is bad input (exit 3), naming the format read and what was left out; detection never settles on a format under which most records are of an unknown type.",
    )]);
    for why in <crate::transcript::Skip as strum::VariantArray>::VARIANTS {
        roff.control("TP", []);
        roff.text([roman(why.as_str())]);
        roff.text([roman(why.meaning())]);
    }
    roff.control("SH", ["EXIT STATUS"]);
    for (code, meaning) in crate::error::Exit::TABLE {
        roff.control("TP", []);
        roff.text([roman(code)]);
        roff.text([roman(meaning)]);
    }
    roff.control("SH", ["ENVIRONMENT"]);
    roff.text([roman("NO_COLOR: when set (and not empty), --color auto prints no colour; --color always still does.")]);
    roff.control("TP", []);
    roff.text([roman("RIVUMI_MAX_INPUT_BYTES")]);
    roff.text([roman(
        "The most bytes held in memory for one transcript or one dataset line (default 4 GiB); a larger input is bad input (exit 3) instead of a run out of memory.",
    )]);
    roff.control("TP", []);
    roff.text([roman("RIVUMI_MMAP")]);
    roff.text([roman(
        "0: read every input into memory. Otherwise a regular file of 32 MB or more that run, decide or stats processes is memory-mapped; if another program shrinks it during the run, that input fails (the file changed while it was read), nothing made of it is committed, and a batch goes on.",
    )]);
    roff.render()
}
