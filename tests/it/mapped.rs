//! Large inputs are mapped (crates/leaf/src/mapped.rs): a file that another process shrinks while
//! the tool reads it is reported as changed, nothing made of it is committed, and the
//! batch goes on. The shrinking is done by a pre-compact hook, which runs after the
//! input was parsed and before the kept records are copied out of it.

use crate::support::{cmd, path_str, stderr};
use std::path::Path;

/// A canonical transcript of more than 32 MB (the size from which inputs are mapped)
/// whose history the fallback summarizes.
fn large_transcript(path: &Path) {
    let mut s = String::from(r#"{"type":"session","id":"big","task":{"max_total_tokens":20000}}"#);
    s.push('\n');
    s.push_str(r#"{"type":"message","id":"task","turn":"t0","role":"user","content":"Fix the parser."}"#);
    s.push('\n');
    let body = "x".repeat(4000);
    let mut k = 0;
    while s.len() < 34 << 20 {
        s.push_str(&format!(
            "{{\"type\":\"message\",\"id\":\"a{k}\",\"turn\":\"t1\",\"role\":\"assistant\",\"content\":\"step {k}\",\"tool_calls\":[{{\"id\":\"c{k}\",\"name\":\"bash\",\"arguments\":{{\"command\":\"ls\"}}}}],\"usage\":{{\"input_tokens\":100}}}}\n\
             {{\"type\":\"tool_result\",\"id\":\"r{k}\",\"turn\":\"t1\",\"call_id\":\"c{k}\",\"name\":\"bash\",\"content\":\"{body}\"}}\n"
        ));
        k += 1;
    }
    std::fs::write(path, s).unwrap();
}

#[test]
fn a_mapped_input_that_shrinks_is_reported_and_the_batch_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.jsonl");
    large_transcript(&big);
    let small = dir.path().join("small.jsonl");
    std::fs::copy("testdata/cases/fallback-applied/input.jsonl", &small).unwrap();
    let hook = format!("truncate -s 100 {}", path_str(&big));
    let out = dir.path().join("out");

    // A batch: the shrunk input is an error and gets no folder; the other is written.
    let o = cmd()
        .args(["run", path_str(&big), path_str(&small), "--out-dir", path_str(&out), "--jobs", "1"])
        .args(["--pre-compact-hook", &hook])
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(4), "an input of the batch failed: {err}");
    assert!(err.contains("big.jsonl: cannot read: the file changed while it was read"), "{err}");
    let folders: Vec<String> =
        std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(folders, ["small"], "no folder (and no temporary one) for the shrunk input: {err}");
    assert!(err.contains("1 compacted, 0 unchanged, 1 failed"), "{err}");
    assert!(out.join("small/transcript.jsonl").is_file());

    // One input on stdout: the same error, whatever was already written.
    large_transcript(&big);
    let o = cmd().args(["run", path_str(&big), "--pre-compact-hook", &hook]).output().unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("the file changed while it was read"), "{}", stderr(&o));

    // Read instead of mapped (RIVUMI_MMAP=0), the run works on what it read.
    large_transcript(&big);
    let o = cmd().env("RIVUMI_MMAP", "0").args(["run", path_str(&big), "--pre-compact-hook", &hook]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let last = o.stdout.split(|&b| b == b'\n').rev().find(|l| !l.is_empty()).unwrap();
    assert!(std::str::from_utf8(last).unwrap().contains("\"type\":\"message\""), "ends with a whole record");
    assert_eq!(std::fs::metadata(&big).unwrap().len(), 100, "the hook did shrink it");
}

/// A write in place that keeps the size (a SIGBUS never comes) is seen too: the file's
/// modification time moved while it was mapped, so nothing made from it is kept.
#[test]
fn a_mapped_input_written_in_place_is_reported_and_nothing_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.jsonl");
    large_transcript(&big);
    let size = std::fs::metadata(&big).unwrap().len();
    // Same bytes written over the first ones: only the modification time tells.
    let hook = format!("sleep 0.05; dd if={0} of={0} bs=16 count=1 conv=notrunc status=none", path_str(&big));
    let out = dir.path().join("out");
    let o =
        cmd().args(["run", path_str(&big), "--out-dir", path_str(&out), "--pre-compact-hook", &hook]).output().unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(3), "its only input failed: {err}");
    assert!(err.contains("big.jsonl: cannot read: the file changed while it was read"), "{err}");
    assert!(!out.join("big").exists(), "no folder for it: {err}");
    assert_eq!(std::fs::metadata(&big).unwrap().len(), size, "the hook kept its size");

    // Untouched, the same run keeps its output.
    let o = cmd().args(["run", path_str(&big), "--out-dir", path_str(&out)]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(out.join("big/transcript.jsonl").is_file());
}

/// A mapped input's reader copies out the short strings of each item before it gives
/// the pages back, and leaves a long argument in the input: every output is the same
/// bytes as when the input is read into memory (`RIVUMI_MMAP=0`), the facts of edits
/// (failed ones left out) and the summary of the newest removed items included.
#[test]
fn a_mapped_input_gives_the_outputs_of_a_read_one() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.jsonl");
    let mut s = String::from(r#"{"type":"session","id":"big","task":{"max_total_tokens":20000}}"#);
    s.push('\n');
    let body = "output line\\n    é → ✓ ".repeat(400);
    let long = "x".repeat(6000);
    let mut k = 0;
    while s.len() < 34 << 20 {
        let (tool, args) = match k % 4 {
            0 => ("edit_file", format!(r#"{{"path":"src/m{}.rs","old":"a","new":"b"}}"#, k % 13)),
            1 => ("write_file", format!(r#"{{"path":"src/long{}.rs","content":"{long}"}}"#, k % 5)),
            2 => ("read_file", format!(r#"{{"path":"docs/d{}.md"}}"#, k % 7)),
            _ => ("bash", format!(r#"{{"command":"cargo test -p m{k}"}}"#)),
        };
        let failed = k % 9 == 0;
        s.push_str(&format!(
            "{{\"type\":\"message\",\"id\":\"u{k}\",\"turn\":\"t{k}\",\"role\":\"user\",\"content\":\"Step {k}.\"}}\n\
             {{\"type\":\"message\",\"id\":\"a{k}\",\"turn\":\"t{k}\",\"role\":\"assistant\",\"content\":\"On it.\",\"tool_calls\":[{{\"id\":\"c{k}\",\"name\":\"{tool}\",\"arguments\":{args}}}],\"usage\":{{\"input_tokens\":100}}}}\n\
             {{\"type\":\"tool_result\",\"id\":\"r{k}\",\"turn\":\"t{k}\",\"call_id\":\"c{k}\",\"name\":\"{tool}\",\"is_error\":{failed},\"content\":\"{body}{k}\"}}\n"
        ));
        k += 1;
    }
    std::fs::write(&big, s).unwrap();
    let outs: Vec<_> = ["1", "0"]
        .iter()
        .map(|mmap| {
            let out = dir.path().join(format!("out-{mmap}"));
            let o = cmd()
                .env("RIVUMI_MMAP", mmap)
                .args(["run", path_str(&big), "--out-dir", path_str(&out)])
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", stderr(&o));
            assert!(stderr(&o).contains("-> history_fallback"), "{}", stderr(&o));
            out.join("big")
        })
        .collect();
    for f in ["transcript.jsonl", "summary.md", "reanchor.md", "decision.json", "journal.jsonl"] {
        let (mapped, read) = (std::fs::read(outs[0].join(f)).unwrap(), std::fs::read(outs[1].join(f)).unwrap());
        assert!(mapped == read, "{f}: mapped and read differ");
    }
    let reanchor = std::fs::read_to_string(outs[0].join("reanchor.md")).unwrap();
    assert!(reanchor.contains("src/m") && reanchor.contains("src/long"), "{reanchor}");
}
