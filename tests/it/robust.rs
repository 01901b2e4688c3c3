//! Untrusted input never panics (SPEC 11): random and mutated bytes through every
//! reader and the policy. The machine has no nightly toolchain for cargo-fuzz, so this
//! is proptest-driven; inputs that once broke something live in `testdata/fuzz/` and
//! are replayed here.

use proptest::prelude::*;
use rivumi_compact::engine::{self, Settings};
use rivumi_compact::formats;
use std::path::Path;

const SEEDS: &[&str] = &[
    r#"{"type":"session","id":"s","task":{"max_total_tokens":10},"runtime":{"kind":"conversation","native_compaction":true,"context_window":5}}"#,
    r#"{"type":"message","id":"m1","turn":"t1","role":"user","content":[{"type":"text","text":"hé 🙂"}]}"#,
    r#"{"type":"message","id":"a1","turn":"t1","role":"assistant","content":"x","tool_calls":[{"id":"c1","name":"apply_patch","arguments":{"input":"*** Update File: a\n"}}],"usage":{"input_tokens":9}}"#,
    r#"{"type":"tool_result","id":"r1","turn":"t1","call_id":"c1","content":"ok","exit_code":1}"#,
    r#"{"type":"event","name":"compaction_requested","id":"compaction-1"}"#,
    r#"{"type":"message","id":"rivumi:checkpoint-1","turn":"t1","role":"user","synthetic":"checkpoint","occupancy_after":3,"content":"c"}"#,
    r#"{"messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"x","function":{"name":"bash","arguments":"{}"}}]},{"role":"tool","tool_call_id":"x","content":"y"}]}"#,
    r#"{"parentUuid":null,"sessionId":"s","type":"user","uuid":"u","message":{"role":"user","content":"hi"}}"#,
    r#"{"timestamp":"t","type":"response_item","payload":{"type":"function_call","call_id":"c","name":"shell","arguments":null}}"#,
];

/// Runs every reader and, where it parses, the policy with the budget exceeded.
fn exercise(bytes: &[u8]) {
    use formats::InputFormat::*;
    for format in [Auto, Rivumi, ClaudeCode, Codex, SweAgent, Openhands] {
        let Ok(canonical) = formats::import(bytes.to_vec().into(), Path::new("fuzz"), format) else { continue };
        for manual in [false, true] {
            let mut settings = Settings::default();
            (settings.manual, settings.dry_run) = (manual, true);
            let _ = engine::process(&canonical.bytes, Path::new("fuzz"), &settings);
        }
    }
    if let Ok(text) = std::str::from_utf8(bytes) {
        for (k, line) in text.lines().enumerate() {
            let _ = rivumi_compact::dataset::process_line(line, Path::new("fuzz"), k + 1, &Settings::default());
        }
    }
    let _ = rivumi_compact::validate::validate(bytes, Path::new("fuzz"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(crate::cases(300)))]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        exercise(&bytes);
    }

    /// Canonical seeds only, so most inputs parse and reach the policy.
    #[test]
    fn mutated_canonical_records_never_panic(picks in proptest::collection::vec((0..CANONICAL, 0usize..200, any::<u8>(), 0u8..6), 1..16)) {
        exercise(&mutate(picks));
    }

    #[test]
    fn mutated_records_of_every_format_never_panic(picks in proptest::collection::vec((0..SEEDS.len(), 0usize..200, any::<u8>(), 0u8..4), 1..12)) {
        exercise(&mutate(picks));
    }
}

/// The first seeds are canonical records.
const CANONICAL: usize = 6;

fn mutate(picks: Vec<(usize, usize, u8, u8)>) -> Vec<u8> {
    let mut text = Vec::new();
    for (seed, at, byte, op) in picks {
        let mut line = SEEDS[seed].as_bytes().to_vec();
        let at = at.min(line.len());
        match op {
            0 => line.insert(at, byte),
            1 if at < line.len() => {
                line.remove(at);
            }
            2 => line.truncate(at),
            _ => {}
        }
        text.extend(line);
        text.push(b'\n');
    }
    text
}

#[test]
fn corpus_replays() {
    let dir = crate::support::root().join("testdata/fuzz");
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        exercise(&std::fs::read(e.unwrap().path()).unwrap());
        n += 1;
    }
    assert!(n > 0);
}
