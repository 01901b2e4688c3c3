//! Byte fidelity (SPEC 1): kept records are written back exactly as read.

use crate::support::{path_str, run, stderr, temp_file};

const A: &str = r#"{"type":"message","id":"m1","turn":"t1","role":"user","content":"hi"}"#;
const B: &str =
    r#"{"type":"message","id":"m2","turn":"t1","role":"assistant","content":"hello","usage":{"input_tokens":10}}"#;

#[test]
fn unchanged_output_is_byte_identical() {
    // BOM, CRLF, a blank line, an unknown record type, unknown fields, no final newline.
    let input = format!(
        "\u{feff}{A}\r\n\r\n{{\"type\":\"telemetry\",\"x\":1}}\n{}",
        B.replace("\"usage\"", "\"extra\":[1,2],\"usage\"")
    );
    let (_d, path) = temp_file("t.jsonl", input.as_bytes());
    let o = run(&["run", path_str(&path), "--max-total-tokens", "1000"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(o.stdout, input.as_bytes());
    assert!(stderr(&o).contains("1 record(s) of unknown type passed through"), "{}", stderr(&o));
}

#[test]
fn injected_records_get_a_newline_and_kept_lines_keep_crlf() {
    let input = format!("{A}\r\n{B}");
    let (_d, path) = temp_file("t.jsonl", input.as_bytes());
    let o = run(&["run", path_str(&path), "--max-total-tokens", "10"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8(o.stdout).unwrap();
    let expected_start = format!("{A}\r\n{B}\n{{\"type\":\"message\",\"id\":\"rivumi:pressure_reminder\"");
    assert!(out.starts_with(&expected_start), "{out}");
    assert!(out.ends_with("\"}\n"));
    assert_eq!(out.matches("\r\n").count(), 1);
}

#[test]
fn crlf_fallback_keeps_each_kept_line_exactly() {
    let input = std::fs::read("testdata/cases/crlf-bom-no-final-newline/input.jsonl").unwrap();
    let (_d, path) = temp_file("t.jsonl", &input);
    let o = run(&["run", path_str(&path)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = o.stdout;
    assert!(out.starts_with(b"\xEF\xBB\xBF{\"type\":\"session\""), "the BOM stays first");
    let text = String::from_utf8(out).unwrap();
    for line in String::from_utf8(input).unwrap().split_inclusive('\n') {
        // The system message is not history (SPEC 4): the head is m1, a0 and r0, and the
        // first eligible pair a1, r1 is summarized.
        if !line.contains("\"id\":\"a1\"") && !line.contains("\"id\":\"r1\"") {
            let line = line.trim_start_matches('\u{feff}');
            assert!(text.contains(line), "kept line missing or changed: {line:?}");
        }
    }
    assert!(!text.contains("\"id\":\"a1\",\"turn\""), "a1 was summarized");
    assert!(text.contains("\"id\":\"a0\",\"turn\""), "a0 is protected");
}
