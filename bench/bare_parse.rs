//! Benchmark baseline (SPEC 10): parse every line of a file with serde_json into
//! `IgnoredAny` and do nothing else. `cargo build --release --example bare_parse` (built by bench/run.sh).

use serde::de::IgnoredAny;

fn main() {
    let path = std::env::args().nth(1).expect("usage: bare_parse FILE");
    let data = std::fs::read(&path).expect("readable file");
    let mut n = 0usize;
    for line in data.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        serde_json::from_slice::<IgnoredAny>(line).expect("valid JSON line");
        n += 1;
    }
    eprintln!("{n} lines");
}
