//! Benchmark floors (SPEC 10, issue #39): read a file as the tool reads a dataset and
//! parse every line with a JSON parser, doing nothing else. The tool's figures are
//! reported as ratios to these.
//!
//!   bare_parse [--parser serde|sonic|sonic-value|simd-json|scan|view] [--threads N] [--whole] FILE
//!
//! - `serde` (default): serde_json into `IgnoredAny` (validates, builds nothing);
//! - `sonic`: sonic-rs into `IgnoredAny` (its SIMD skip, through serde);
//! - `sonic-value`: sonic-rs into its own DOM (`sonic_rs::Value`);
//! - `simd-json`: simd-json's tape of each line (its stage 1 and 2; the line is parsed
//!   in place, as the crate asks, in the buffer it was read into);
//! - `scan`: the tool's own validating scanner (`rivumi_compact::scan`) over each line,
//!   after its UTF-8 check: the same work as the floors (check everything, build
//!   nothing), to say by how much the hand-written scanner beats the crates;
//! - `view`: the tool's dataset read of each line (scanner, import rules, transcript):
//!   what `run` does to a row before it decides anything.
//!
//! The file is read in pieces of the tool's block size (1 MiB) into a buffer used again,
//! as the tool reads a dataset (a floor that read it whole into fresh memory would pay
//! for faulting in the size of the file, which the tool does not). With `--threads N`
//! it is cut at line ends into N ranges of about equal bytes, each read and parsed on
//! its own thread. With `--whole` it is read whole first, and the read and the parse
//! are timed apart (the parse alone, for the notes). Lines are found with `memchr`, as
//! the tool finds them.
//! Built by bench/run.sh: `cargo build --release --features bench-floors --example
//! bare_parse` twice, as the tool is built (for the serde floor and the tool's own
//! reads) and with `-C target-cpu=native` (for the SIMD parsers).

use serde::de::IgnoredAny;
use std::process::ExitCode;

// The tool's allocator (src/main.rs), so that the tool's own read of each row is timed as
// the tool runs it (with glibc's malloc it took a tenth longer); the floors that
// allocate (simd-json's buffers, sonic-rs's DOM) get it too.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Clone, Copy)]
enum Parser {
    Serde,
    Sonic,
    SimdJson,
    /// sonic-rs into its own DOM (`sonic_rs::Value`), the shape its benchmarks show.
    SonicValue,
    /// The tool's scanner, validating and skipping.
    Scan,
    /// The tool's read of a dataset line into its transcript.
    View,
}

fn main() -> ExitCode {
    let (parser, threads, whole, path) = match args() {
        Ok(a) => a,
        Err(m) => {
            eprintln!("bare_parse: {m}\nusage: bare_parse [--parser {PARSERS}] [--threads N] [--whole] FILE");
            return ExitCode::from(2);
        }
    };
    let started = std::time::Instant::now();
    let counted = if whole { parse_whole(parser, threads, &path) } else { parse_pieces(parser, threads, &path) };
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
    eprintln!("{n} lines in {:.3} s", started.elapsed().as_secs_f64());
    ExitCode::SUCCESS
}

const PARSERS: &str = "serde|sonic|sonic-value|simd-json|scan|view";

/// The file read whole into fresh memory, then cut into `threads` runs of whole lines,
/// each parsed on its own thread; the time of the read and of the parse said apart.
fn parse_whole(parser: Parser, threads: usize, path: &str) -> Vec<Result<usize, String>> {
    let started = std::time::Instant::now();
    let mut data = match std::fs::read(path) {
        Ok(d) => d,
        Err(e) => return vec![Err(e.to_string())],
    };
    let read = started.elapsed();
    let counted = std::thread::scope(|s| {
        let handles: Vec<_> =
            runs(&mut data, threads).into_iter().map(|run| s.spawn(move || parse_run(parser, run))).collect();
        handles.into_iter().map(|h| h.join().expect("a parsing thread")).collect()
    });
    let parse = started.elapsed().saturating_sub(read);
    eprintln!("read {:.3} s, parse {:.3} s", read.as_secs_f64(), parse.as_secs_f64());
    counted
}

/// The file read as the tool reads a dataset: in pieces of its block size into a buffer
/// used again (no fresh memory the size of the file to fault in), each piece's whole
/// lines parsed. With `threads`, the file is cut at line ends into that many ranges of about
/// equal bytes, each read and parsed on its own thread.
fn parse_pieces(parser: Parser, threads: usize, path: &str) -> Vec<Result<usize, String>> {
    let bounds = match bounds(path, threads) {
        Ok(b) => b,
        Err(e) => return vec![Err(e.to_string())],
    };
    std::thread::scope(|s| {
        let handles: Vec<_> = bounds
            .windows(2)
            .map(|w| (w[0], w[1]))
            .map(|(from, to)| s.spawn(move || read_range(parser, path, from, to).map_err(|e| e.to_string())?))
            .collect();
        handles.into_iter().map(|h| h.join().expect("a parsing thread")).collect()
    })
}

/// `threads + 1` offsets: 0, a line start near each `k/threads` of the file, its length.
fn bounds(path: &str, threads: usize) -> std::io::Result<Vec<u64>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path)?;
    let len = f.metadata()?.len();
    let mut out = vec![0];
    let mut buf = vec![0; 64 << 10];
    for k in 1..threads as u64 {
        let mut at = (len * k / threads as u64).max(*out.last().unwrap_or(&0));
        f.seek(SeekFrom::Start(at))?;
        loop {
            let n = f.read(&mut buf)?;
            if n == 0 {
                at = len;
                break;
            }
            if let Some(i) = memchr::memchr(b'\n', &buf[..n]) {
                at += i as u64 + 1;
                break;
            }
            at += n as u64;
        }
        out.push(at);
    }
    out.push(len);
    Ok(out)
}

/// Reads bytes `from..to` of the file in pieces and parses their lines: how many.
fn read_range(parser: Parser, path: &str, from: u64, to: u64) -> std::io::Result<Result<usize, String>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path)?;
    f.seek(SeekFrom::Start(from))?;
    let mut f = f.take(to - from);
    // The tool's own block size, so that the floor reads as it does.
    let (mut buf, mut filled, mut n) = (vec![0u8; rivumi_compact::dataset::stream::BLOCK], 0, 0);
    loop {
        if filled == buf.len() {
            // A line longer than the buffer: room for more of it.
            buf.resize(buf.len() * 2, 0);
        }
        let got = f.read(&mut buf[filled..])?;
        filled += got;
        // Whole lines now; at the end of the range, the rest is the last line.
        let end = if got == 0 { filled } else { memchr::memrchr(b'\n', &buf[..filled]).map_or(0, |i| i + 1) };
        match parse_run(parser, &mut buf[..end]) {
            Ok(k) => n += k,
            Err(m) => return Ok(Err(m)),
        }
        if got == 0 {
            return Ok(Ok(n));
        }
        buf.copy_within(end..filled, 0);
        filled -= end;
    }
}

fn args() -> Result<(Parser, usize, bool, String), String> {
    let (mut parser, mut threads, mut whole, mut path) = (Parser::Serde, 1usize, false, None);
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--parser" => {
                parser = match it.next().as_deref() {
                    Some("serde") => Parser::Serde,
                    Some("sonic") => Parser::Sonic,
                    Some("simd-json") => Parser::SimdJson,
                    Some("sonic-value") => Parser::SonicValue,
                    Some("scan") => Parser::Scan,
                    Some("view") => Parser::View,
                    other => return Err(format!("--parser is one of {PARSERS}, not {other:?}")),
                }
            }
            "--threads" => {
                threads = it
                    .next()
                    .and_then(|n| n.parse().ok())
                    .filter(|&n| n > 0)
                    .ok_or("--threads takes a number of threads, 1 or more")?;
            }
            "--whole" => whole = true,
            _ if path.is_none() && !a.starts_with("--") => path = Some(a),
            _ => return Err(format!("unexpected argument {a:?}")),
        }
    }
    Ok((parser, threads, whole, path.ok_or("no FILE")?))
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
    // Lines found as the tool finds them (`memchr`): a byte-at-a-time split cost the
    // floors a fifth to a quarter of their parse time.
    let mut rest = run;
    while !rest.is_empty() {
        let end = memchr::memchr(b'\n', rest).unwrap_or(rest.len());
        let (line, tail) = rest.split_at_mut(end);
        rest = tail.get_mut(1..).unwrap_or_default();
        if line.is_empty() {
            continue;
        }
        n += 1;
        let parsed = match parser {
            Parser::Serde => serde_json::from_slice::<IgnoredAny>(line).map(drop).map_err(not_json),
            Parser::Sonic => sonic_rs::from_slice::<IgnoredAny>(line).map(drop).map_err(not_json),
            Parser::SimdJson => simd_json::to_tape_with_buffers(line, &mut buffers).map(drop).map_err(not_json),
            Parser::SonicValue => sonic_rs::from_slice::<sonic_rs::Value>(line).map(drop).map_err(not_json),
            Parser::Scan => text(line).and_then(|t| {
                let mut s = rivumi_compact::scan::Scan::new(t);
                (s.skip(0).is_some() && s.at_end())
                    .then_some(())
                    .ok_or_else(|| "a line the tool's scanner refuses (run the tool on it for why)".to_string())
            }),
            Parser::View => text(line).and_then(|t| {
                rivumi_compact::dataset::reads_through_view(t)
                    .then_some(())
                    .ok_or_else(|| "a line the tool's dataset read does not take (not a chat row?)".to_string())
            }),
        };
        parsed?;
    }
    Ok(n)
}

fn not_json(e: impl std::fmt::Display) -> String {
    format!("a line that is not JSON ({e})")
}

/// A line as text, checked as the tool checks it.
fn text(line: &[u8]) -> Result<&str, String> {
    rivumi_compact::error::utf8(line).map_err(|col| format!("invalid UTF-8 at column {col}"))
}
