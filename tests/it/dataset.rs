//! Dataset mode (`openai`): one output line per input line, in order; bad lines echoed
//! and reported; a second run changes nothing.

use crate::support::{cmd, run, stderr, stdout};

const DATA: &str = "testdata/dataset/conversations.jsonl";

#[test]
fn every_line_gives_one_line_in_order() {
    let o = run(&["run", DATA, "--max-total-tokens", "300"]);
    assert_eq!(o.status.code(), Some(4), "a bad line makes the run exit 4 at the end");
    let input = std::fs::read_to_string(DATA).unwrap();
    let out = stdout(&o);
    let (inp, outp): (Vec<&str>, Vec<&str>) = (input.lines().collect(), out.lines().collect());
    assert_eq!(inp.len(), outp.len());
    assert_ne!(inp[0], outp[0], "the long conversation is compacted");
    let first: serde_json::Value = serde_json::from_str(outp[0]).unwrap();
    let names: Vec<&str> = first["messages"].as_array().unwrap().iter().filter_map(|m| m["name"].as_str()).collect();
    assert_eq!(names, ["rivumi-history_summary_fallback", "rivumi-pressure_reminder", "rivumi-reanchor"]);
    let last = &first["messages"].as_array().unwrap().last().unwrap()["content"];
    assert!(last.as_str().unwrap().contains("Re-anchor"), "{last}");
    assert_eq!(inp[1], outp[1], "a short conversation is echoed byte for byte");
    assert_eq!(inp[2], outp[2], "a bad line is echoed unchanged");
    assert_eq!(inp[3], outp[3]);
    assert!(stderr(&o).contains("conversations.jsonl:3:46: EOF while parsing a string\n"), "{}", stderr(&o));
    assert!(stderr(&o).ends_with("4 line(s): 1 compacted, 2 unchanged, 1 bad\n"), "{}", stderr(&o));
}

#[test]
fn a_second_run_changes_nothing_and_stdin_streams() {
    let first = run(&["run", DATA, "--max-total-tokens", "300"]).stdout;
    let again = cmd()
        .args(["run", "-", "--input-format", "openai", "--max-total-tokens", "300"])
        .write_stdin(first.clone())
        .output()
        .unwrap();
    assert_eq!(again.stdout, first);
}

#[test]
fn stats_counts_every_line_as_a_transcript() {
    let o = run(&["stats", DATA, "--max-total-tokens", "300", "--json"]);
    assert_eq!(o.status.code(), Some(4), "the bad line is a failure");
    let s: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((s["transcripts"].as_u64(), s["failed"].as_u64()), (Some(3), Some(1)));
    assert_eq!(s["actions"]["history_fallback"], 1);
    assert!(stderr(&o).contains("conversations.jsonl:3:"), "{}", stderr(&o));
}

#[test]
fn an_openhands_evaluation_output_is_a_dataset_of_instances() {
    const EVAL: &str = "testdata/dataset/openhands-output.jsonl";
    let o = run(&["run", EVAL, "--max-total-tokens", "20000"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (input, out) = (std::fs::read_to_string(EVAL).unwrap(), stdout(&o));
    assert_eq!(input.lines().count(), out.lines().count(), "one line per instance, in order");
    for (i, o) in input.lines().zip(out.lines()) {
        let (i, o): (serde_json::Value, serde_json::Value) = (serde_json::from_str(i).unwrap(), serde_json::from_str(o).unwrap());
        assert_eq!(i["instance_id"], o["instance_id"]);
        assert_eq!(i["test_result"], o["test_result"], "fields other than history are kept");
        let injected: Vec<&str> =
            o["history"].as_array().unwrap().iter().filter_map(|e| e["rivumi"].as_str()).collect();
        assert_eq!(injected, ["history_summary_fallback", "pressure_reminder", "reanchor"]);
        let kept: Vec<&serde_json::Value> = o["history"].as_array().unwrap().iter().filter(|e| e.get("rivumi").is_none()).collect();
        assert!(kept.iter().all(|e| i["history"].as_array().unwrap().contains(e)), "kept events are unchanged");
    }
    assert!(stderr(&o).ends_with("2 line(s): 2 compacted, 0 unchanged, 0 bad\n"), "{}", stderr(&o));
    let again = cmd().args(["run", "-", "--max-total-tokens", "20000"]).write_stdin(out.clone()).output().unwrap();
    assert_eq!(stdout(&again), out, "a second run is a no-op");
}

#[test]
fn decide_and_validate_read_every_row_or_the_one_named() {
    let o = run(&["decide", DATA, "--max-total-tokens", "300"]);
    assert_eq!(o.status.code(), Some(3), "a bad row is bad input");
    let rows: Vec<String> = stdout(&o).lines().map(str::to_string).collect();
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert!(rows[0].starts_with(&format!("{DATA}:1: agent-runner: ")) && rows[0].ends_with("-> history_fallback"));
    assert!(rows[1].starts_with(&format!("{DATA}:2: ")), "{}", rows[1]);
    assert!(stderr(&o).contains(&format!("{DATA}:3:46: EOF while parsing a string")), "{}", stderr(&o));
    let json = stdout(&run(&["decide", DATA, "--json", "--max-total-tokens", "300"]));
    let lines: Vec<u64> = json.lines().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["line"].as_u64().unwrap()).collect();
    assert_eq!(lines, [1, 2, 4]);
    let one = run(&["decide", DATA, "--line", "1", "--json", "--max-total-tokens", "300"]);
    assert!(one.status.success(), "{}", stderr(&one));
    let d: serde_json::Value = serde_json::from_slice(&one.stdout).unwrap();
    assert_eq!((d["action"].as_str(), d["input_format"].as_str()), (Some("history_fallback"), Some("openai")));
    assert!(d["turns"].as_array().is_some_and(|t| !t.is_empty()));
    let past = run(&["decide", DATA, "--line", "40"]);
    assert_eq!(past.status.code(), Some(3));
    assert!(stderr(&past).contains("--line 40: there is no row there (4 lines)"), "{}", stderr(&past));
    let v = run(&["validate", DATA, "--json"]);
    assert_eq!(v.status.code(), Some(1));
    let found: serde_json::Value = serde_json::from_slice(&v.stdout).unwrap();
    assert_eq!(found.as_array().unwrap().len(), 1);
    assert_eq!((found[0]["line"].as_u64(), found[0]["code"].as_str()), (Some(3), Some("bad_line")));
    assert_eq!(run(&["validate", DATA, "--line", "2"]).status.code(), Some(0));
    let transcript = run(&["decide", "testdata/cases/fallback-applied/input.jsonl", "--line", "2"]);
    assert_eq!(transcript.status.code(), Some(2), "--line is for datasets");
}

#[test]
fn validate_names_the_message_of_a_row() {
    let row = r#"{"messages":[{"role":"user","content":"a"},{"role":"tool","tool_call_id":"zz","content":"x"}]}"#;
    let o = cmd().args(["validate", "-"]).write_stdin(format!("{row}\n{row}\n")).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(out.contains("-:1: result_without_call: message 1: ") && out.contains("-:2: result_without_call: message 1: "), "{out}");
    assert!(out.ends_with("2 violation(s) in 2 transcript(s)\n"), "{out}");
}
