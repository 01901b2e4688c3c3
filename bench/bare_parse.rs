//! Benchmark floors (SPEC 10, issue #39): read a file whole and parse every line with a
//! JSON parser, doing nothing else. The tool's figures are reported as ratios to these.
//!
//!   bare_parse [--parser serde|sonic|sonic-value|simd-json] [--threads N] FILE
//!
//! - `serde` (default): serde_json into `IgnoredAny` (validates, builds nothing);
//! - `sonic`: sonic-rs into `IgnoredAny` (its SIMD skip, through serde);
//! - `sonic-value`: sonic-rs into its own DOM (`sonic_rs::Value`);
//! - `simd-json`: simd-json's tape of each line (its stage 1 and 2; the line is parsed
//!   in place, as the crate asks, in the buffer the file was read into).
//!
//! With `--threads N` the lines are cut into N runs of about equal bytes, each parsed on
//! its own thread. Built by bench/run.sh: `cargo build --release --features bench-floors
//! --example bare_parse`.

use serde::de::IgnoredAny;
use std::process::ExitCode;

#[derive(Clone, Copy)]
enum Parser {
    Serde,
    Sonic,
    SimdJson,
    /// sonic-rs into its own DOM (`sonic_rs::Value`), the shape its benchmarks show.
    SonicValue,
}

fn main() -> ExitCode {
    let (parser, threads, path) = match args() {
        Ok(a) => a,
        Err(m) => {
            eprintln!(
                "bare_parse: {m}\nusage: bare_parse [--parser serde|sonic|sonic-value|simd-json] [--threads N] FILE"
            );
            return ExitCode::from(2);
        }
    };
    let started = std::time::Instant::now();
    let mut data = match std::fs::read(&path) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("bare_parse: {path}: {e}");
            return ExitCode::from(2);
        }
    };
    let read = started.elapsed();
    let runs = runs(&mut data, threads);
    let counted: Vec<Result<usize, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = runs.into_iter().map(|run| s.spawn(move || parse_run(parser, run))).collect();
        handles.into_iter().map(|h| h.join().expect("a parsing thread")).collect()
    });
    let mut n = 0;
    for c in counted {
        match c {
            Ok(k) => n += k,
            Err(m) => {
                eprintln!("bare_parse: {path}: {m}");
                return ExitCode::FAILURE;
            }
        }
    }
    // The parse alone (the file already in memory) beside the read, for the note.
    let parse = started.elapsed().saturating_sub(read);
    eprintln!("{n} lines; read {:.3} s, parse {:.3} s", read.as_secs_f64(), parse.as_secs_f64());
    ExitCode::SUCCESS
}

fn args() -> Result<(Parser, usize, String), String> {
    let (mut parser, mut threads, mut path) = (Parser::Serde, 1usize, None);
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--parser" => {
                parser = match it.next().as_deref() {
                    Some("serde") => Parser::Serde,
                    Some("sonic") => Parser::Sonic,
                    Some("simd-json") => Parser::SimdJson,
                    Some("sonic-value") => Parser::SonicValue,
                    other => return Err(format!("--parser is serde, sonic, sonic-value or simd-json, not {other:?}")),
                }
            }
            "--threads" => {
                threads = it
                    .next()
                    .and_then(|n| n.parse().ok())
                    .filter(|&n| n > 0)
                    .ok_or("--threads takes a number of threads, 1 or more")?;
            }
            _ if path.is_none() && !a.starts_with("--") => path = Some(a),
            _ => return Err(format!("unexpected argument {a:?}")),
        }
    }
    Ok((parser, threads, path.ok_or("no FILE")?))
}

/// The data cut into `n` runs of whole lines of about equal bytes.
fn runs(data: &mut [u8], n: usize) -> Vec<&mut [u8]> {
    let mut out = Vec::with_capacity(n);
    let mut rest = data;
    for k in (1..=n).rev() {
        let want = rest.len() / k;
        let cut = match memchr::memchr(b'\n', &rest[want..]) {
            Some(at) if k > 1 => want + at + 1,
            _ => rest.len(),
        };
        let (run, tail) = rest.split_at_mut(cut);
        out.push(run);
        rest = tail;
    }
    out
}

/// Parses every non-empty line of a run: the number of lines.
fn parse_run(parser: Parser, run: &mut [u8]) -> Result<usize, String> {
    let mut buffers = simd_json::Buffers::default();
    let mut n = 0;
    for line in run.split_mut(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        n += 1;
        let parsed = match parser {
            Parser::Serde => serde_json::from_slice::<IgnoredAny>(line).map(drop).map_err(|e| e.to_string()),
            Parser::Sonic => sonic_rs::from_slice::<IgnoredAny>(line).map(drop).map_err(|e| e.to_string()),
            Parser::SimdJson => {
                simd_json::to_tape_with_buffers(line, &mut buffers).map(drop).map_err(|e| e.to_string())
            }
            Parser::SonicValue => sonic_rs::from_slice::<sonic_rs::Value>(line).map(drop).map_err(|e| e.to_string()),
        };
        parsed.map_err(|m| format!("a line that is not JSON ({m})"))?;
    }
    Ok(n)
}
