//! Dataset mode (`openai`): one output line per input line, in order; bad lines echoed
//! and reported; a second run changes nothing.

use crate::support::{cmd, path_str, root, run, stderr, stdout, temp_file};

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
    assert!(
        stderr(&o).ends_with("4 row(s): 0 shortened, 1 changed but not shorter, 2 unchanged, 1 bad, echoed\n"),
        "{}",
        stderr(&o)
    );
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
        let (i, o): (serde_json::Value, serde_json::Value) =
            (serde_json::from_str(i).unwrap(), serde_json::from_str(o).unwrap());
        assert_eq!(i["instance_id"], o["instance_id"]);
        assert_eq!(i["test_result"], o["test_result"], "fields other than history are kept");
        let injected: Vec<&str> =
            o["history"].as_array().unwrap().iter().filter_map(|e| e["rivumi"].as_str()).collect();
        assert_eq!(injected, ["history_summary_fallback", "pressure_reminder", "reanchor"]);
        let kept: Vec<&serde_json::Value> =
            o["history"].as_array().unwrap().iter().filter(|e| e.get("rivumi").is_none()).collect();
        assert!(kept.iter().all(|e| i["history"].as_array().unwrap().contains(e)), "kept events are unchanged");
    }
    assert!(
        stderr(&o).ends_with("2 row(s): 0 shortened, 2 changed but not shorter, 0 unchanged, 0 bad, echoed\n"),
        "{}",
        stderr(&o)
    );
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
    let lines: Vec<u64> =
        json.lines().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["line"].as_u64().unwrap()).collect();
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
    assert!(
        out.contains("-:1: result_without_call: message 1: ") && out.contains("-:2: result_without_call: message 1: "),
        "{out}"
    );
    assert!(out.ends_with("2 violation(s) in 2 row(s)\n"), "{out}");
}

/// Checks one OpenAI chat line: roles, calls with JSON-string arguments, results that
/// answer an earlier call; returns the names of injected messages.
fn check_chat_line(line: &str) -> Vec<String> {
    let v: serde_json::Value = serde_json::from_str(line).unwrap();
    let mut calls = std::collections::HashSet::new();
    let mut injected = Vec::new();
    for m in v["messages"].as_array().unwrap() {
        let role = m["role"].as_str().unwrap();
        assert!(["system", "developer", "user", "assistant", "tool"].contains(&role), "{m}");
        for c in m["tool_calls"].as_array().into_iter().flatten() {
            let args = c["function"]["arguments"].as_str().expect("arguments are a JSON string");
            serde_json::from_str::<serde_json::Value>(args).expect("holding JSON");
            calls.insert(c["id"].as_str().unwrap().to_string());
        }
        if role == "tool" {
            assert!(calls.contains(m["tool_call_id"].as_str().unwrap()), "a result answers an earlier call: {m}");
        }
        if let Some(name) = m["name"].as_str() {
            injected.push(name.to_string());
        }
    }
    injected
}

#[test]
#[cfg_attr(realdata_absent, ignore = "../shared/realdata is absent")]
fn every_agents_logs_become_training_lines() {
    let files = [
        "../shared/realdata/claude-code/session-258c7280.jsonl",
        "../shared/realdata/codex/small.jsonl",
        "../shared/realdata/swe-agent/marshmallow-1867.function_calling.traj",
        "../shared/realdata/openhands/basic_gui_mode.json",
        "testdata/cases/codex-agent-runner/input.jsonl",
        // Its current context (after the `compacted` record) is too short for a
        // fallback: the line is checked, and holds only the reminder.
        "testdata/cases/codex-rollout-quirks/input.jsonl",
    ];
    for f in files {
        let args = ["run", f, "--output-format", "openai", "--runtime", "agent-runner", "--max-total-tokens", "2000"];
        let o = run(&args);
        assert!(o.status.success(), "{f}: {}", stderr(&o));
        let out = stdout(&o);
        assert_eq!(out.lines().count(), 1, "{f}: one line per transcript");
        let injected = check_chat_line(out.trim_end());
        let expected: &[&str] = if f.contains("quirks") {
            &["rivumi-pressure_reminder"]
        } else {
            &["rivumi-history_summary_fallback", "rivumi-pressure_reminder", "rivumi-reanchor"]
        };
        assert_eq!(injected, expected, "{f}");
        // A second run over that output, with the same flags, changes nothing.
        let again = cmd()
            .args(["run", "-", "--runtime", "agent-runner", "--max-total-tokens", "2000"])
            .write_stdin(out.clone())
            .output()
            .unwrap();
        assert_eq!(stdout(&again), out, "{f}");
    }
}

#[test]
#[cfg_attr(realdata_absent, ignore = "../shared/realdata is absent")]
fn a_folder_of_sessions_is_one_line_each_in_input_order() {
    let dir = "../shared/realdata/claude-code";
    let o = run(&["run", dir, "--output-format", "openai"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut names: Vec<String> = std::fs::read_dir(crate::support::root().join(dir))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let lines: Vec<String> = stdout(&o).lines().map(str::to_string).collect();
    assert_eq!(lines.len(), names.len());
    for (name, line) in names.iter().zip(&lines) {
        let single = stdout(&run(&["run", &format!("{dir}/{name}"), "--output-format", "openai"]));
        assert_eq!(&single, &format!("{line}\n"), "{name} in its place");
        check_chat_line(line);
    }
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("train.jsonl");
    let o = run(&["run", dir, "--output-format", "openai", "--out", crate::support::path_str(&file)]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(o.stdout.is_empty());
    assert_eq!(std::fs::read_to_string(&file).unwrap(), lines.join("\n") + "\n");
}

#[test]
fn out_is_written_whole_or_not_at_all() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("out.jsonl");
    let (_d, bad) = crate::support::temp_file("bad.jsonl", b"{\"type\":\"message\",\"id\":\n");
    let o = run(&["run", crate::support::path_str(&bad), "--out", crate::support::path_str(&file)]);
    assert_eq!(o.status.code(), Some(3));
    assert!(!file.exists(), "a failed run leaves no file");
    let o = run(&["run", DATA, "--max-total-tokens", "300", "--out", crate::support::path_str(&file)]);
    assert_eq!(o.status.code(), Some(4), "a bad line: exit 4, the others written");
    assert_eq!(std::fs::read_to_string(&file).unwrap().lines().count(), 4);
    let o = run(&["run", DATA, "--out", DATA]);
    assert_eq!(o.status.code(), Some(2), "--out may not be an input: {}", stderr(&o));
}

#[test]
fn an_appended_event_is_not_a_chat_message() {
    let line = r#"{"messages":[{"role":"user","content":"hi there, please do the thing"},{"role":"assistant","content":"ok doing it now","usage":{"prompt_tokens":900,"completion_tokens":10}}]}"#;
    let (dir, path) = crate::support::temp_file("ds.jsonl", format!("{line}\n").as_bytes());
    let o = crate::support::run(&[
        "run",
        crate::support::path_str(&path),
        "--runtime",
        "conversation",
        "--native-compaction",
        "--context-window",
        "1000",
    ]);
    assert!(o.status.success(), "{}", crate::support::stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let names: Vec<&str> = v["messages"].as_array().unwrap().iter().filter_map(|m| m["name"].as_str()).collect();
    // The native compaction is requested (an event, not a message): only the pending re-anchor is a message.
    assert_eq!(names, ["rivumi-reanchor"], "{v}");
    drop(dir);
}

/// Many blocks, compacted two at a time on every core: every line comes out once, in
/// order, the same with one job or two; a bad line deep in the file is reported with
/// its number and echoed; the lines nothing happens to are their own bytes.
#[test]
fn a_dataset_of_many_blocks_keeps_its_order() {
    let mut text = String::new();
    for k in 0..2600 {
        if k == 2222 {
            text.push_str("{\"messages\": [\n");
            continue;
        }
        // Lines of 1 to 12 KB: some compact at this budget, some do not.
        let steps = 1 + k % 12;
        let mut messages = vec![serde_json::json!({"role": "user", "content": format!("task {k}")})];
        for s in 0..steps {
            messages.push(serde_json::json!({"role": "assistant", "content": "step",
                "tool_calls": [{"id": format!("c{s}"), "type": "function",
                    "function": {"name": "bash", "arguments": "{\"command\": \"ls\"}"}}]}));
            messages
                .push(serde_json::json!({"role": "tool", "tool_call_id": format!("c{s}"), "content": "x".repeat(900)}));
        }
        text.push_str(&serde_json::json!({"id": k, "messages": messages}).to_string());
        text.push('\n');
    }
    assert!(text.len() > 9 << 20, "more than two blocks: {}", text.len());
    let (dir, path) = crate::support::temp_file("big.jsonl", text.as_bytes());
    let p = crate::support::path_str(&path);
    let run = |jobs: &str| crate::support::run(&["run", p, "--max-total-tokens", "2000", "--jobs", jobs]);
    let (one, two) = (run("1"), run("2"));
    for o in [&one, &two] {
        assert_eq!(o.status.code(), Some(4), "a bad line: exit 4");
        assert!(crate::support::stderr(o).contains(&format!("{p}:2223:")), "{}", crate::support::stderr(o));
    }
    assert_eq!(two.stdout, one.stdout, "one job (one thread) or two, the same bytes");
    let out = String::from_utf8(two.stdout).unwrap();
    let (ins, outs): (Vec<&str>, Vec<&str>) = (text.lines().collect(), out.lines().collect());
    assert_eq!(ins.len(), outs.len());
    let mut changed = 0;
    for (k, (a, b)) in ins.iter().zip(&outs).enumerate() {
        if a == b {
            continue;
        }
        changed += 1;
        let v: serde_json::Value = serde_json::from_str(b).unwrap();
        assert_eq!(v["id"], k, "line {} holds its own conversation", k + 1);
    }
    assert!(changed > 500 && changed < 2500, "{changed} lines compacted: both kinds are in the file");
    drop(dir);
}

/// A long conversation with tool calls, as one dataset line.
fn long_row(calls: usize, output: usize) -> String {
    let mut msgs = vec![
        serde_json::json!({"role": "system", "content": "You are a coding agent."}),
        serde_json::json!({"role": "user", "content": "Fix the bug."}),
    ];
    for s in 0..calls {
        msgs.push(serde_json::json!({"role": "assistant", "content": format!("Step {s}."), "tool_calls": [
            {"id": format!("c{s}"), "type": "function", "function": {"name": "bash", "arguments": format!("{{\"command\":\"pytest t{s}.py\"}}")}}]}));
        msgs.push(serde_json::json!({"role": "tool", "tool_call_id": format!("c{s}"), "content": "x".repeat(output)}));
    }
    msgs.push(serde_json::json!({"role": "assistant", "content": "Done."}));
    serde_json::json!({"messages": msgs}).to_string()
}

/// The estimate of a dataset's rows, one per line, from `stats --json`.
fn row_sizes(data: &str) -> Vec<u64> {
    data.lines()
        .map(|l| {
            let o = cmd().args(["stats", "--json", "-"]).write_stdin(format!("{l}\n")).output().unwrap();
            serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()["tokens_estimated"].as_u64().unwrap()
        })
        .collect()
}

#[test]
fn a_target_size_keeps_the_newest_items_that_fit() {
    let data: String =
        [long_row(30, 1500), long_row(10, 100), long_row(60, 800)].iter().map(|r| format!("{r}\n")).collect();
    for target in [16000u64, 4000, 1000] {
        let o = cmd()
            .args(["run", "-", "--target-tokens", &target.to_string()])
            .write_stdin(data.clone())
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        let out = stdout(&o);
        assert_eq!(out.lines().count(), 3);
        for (size, line) in row_sizes(&out).iter().zip(out.lines()) {
            assert!(*size <= target, "target {target}: a row of {size} tokens: {}", &line[..200.min(line.len())]);
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            let m = v["messages"].as_array().unwrap();
            assert_eq!(m[1]["content"], "Fix the bug.", "the head is protected");
            // Calls keep their results: every tool message answers a call kept before it.
            let mut calls = std::collections::HashSet::new();
            for msg in m {
                for c in msg["tool_calls"].as_array().into_iter().flatten() {
                    calls.insert(c["id"].as_str().unwrap().to_string());
                }
                if msg["role"] == "tool" {
                    assert!(calls.contains(msg["tool_call_id"].as_str().unwrap()), "{msg}");
                }
            }
        }
        // A row already within the target is unchanged.
        assert_eq!(out.lines().nth(1).unwrap(), data.lines().nth(1).unwrap(), "target {target}");
    }
    // Too small a target: said plainly, with the row's size and the least it can come
    // to; that least is written, counted and warned about, never "unchanged".
    let o = cmd()
        .args(["decide", "-", "--line", "1", "--target-tokens", "200"])
        .write_stdin(data.clone())
        .output()
        .unwrap();
    let text = stdout(&o);
    let first = row_sizes(&data)[0];
    assert!(
        text.contains(&format!(
            "target_unreachable: the transcript comes to {first} tokens and the least it can come to"
        )),
        "{text}"
    );
    assert!(text.contains(&format!("\ntarget:      200 tokens (not reached): {first} before, ")), "{text}");
    let o = cmd().args(["run", "-", "--target-tokens", "200"]).write_stdin(data.clone()).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let sizes = row_sizes(&stdout(&o));
    assert!(sizes[0] < 1000 && sizes[2] < 1000, "the least each row can come to: {sizes:?}");
    assert!(
        stderr(&o).contains(&format!("-:1: target_unreachable: the transcript comes to {first} tokens")),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("0 unchanged, 0 bad, echoed, 2 over the target"), "{}", stderr(&o));
}

#[test]
fn the_builder_chooses_what_is_injected_and_counts_say_shortened() {
    let data = format!("{}\n", long_row(30, 1500));
    let o = cmd()
        .args(["run", "-", "--target-tokens", "4000", "--inject", "summary"])
        .write_stdin(data.clone())
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    let names: Vec<&str> = v["messages"].as_array().unwrap().iter().filter_map(|m| m["name"].as_str()).collect();
    assert_eq!(names, ["rivumi-history_summary_fallback"], "no reminder, no re-anchor");
    assert!(
        stderr(&o).contains("1 row(s): 1 shortened, 0 changed but not shorter, 0 unchanged, 0 bad"),
        "{}",
        stderr(&o)
    );
    // A reminder alone makes a row longer: not counted as shortened.
    let short = r#"{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b","usage":{"prompt_tokens":900,"completion_tokens":10}}]}"#;
    let o = cmd().args(["run", "-", "--max-total-tokens", "500"]).write_stdin(format!("{short}\n")).output().unwrap();
    assert!(stderr(&o).contains("1 row(s): 0 shortened, 1 changed but not shorter"), "{}", stderr(&o));
}

#[test]
fn chat_lines_can_say_where_they_come_from() {
    let o = run(&["run", "testdata/cases/fallback-applied/input.jsonl", "--output-format", "openai", "--provenance"]);
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    let p = &v["rivumi"];
    assert_eq!(p["source"], "testdata/cases/fallback-applied/input.jsonl");
    assert_eq!((p["session"].as_str(), p["action"].as_str()), (Some("s-fallback"), Some("history_fallback")));
    // The figures are the transcript as read and as written, what `stats` counts in
    // each (this short session comes out longer: the summary, reminder and re-anchor).
    let before = cmd().args(["stats", "--json", "testdata/cases/fallback-applied/input.jsonl"]).output().unwrap();
    let before: serde_json::Value = serde_json::from_slice(&before.stdout).unwrap();
    let after = cmd().args(["stats", "--json", "-"]).write_stdin(stdout(&o)).output().unwrap();
    let after: serde_json::Value = serde_json::from_slice(&after.stdout).unwrap();
    assert_eq!(
        (&p["tokens_before"], &p["tokens_after"]),
        (&before["tokens_estimated"], &after["tokens_estimated"]),
        "{p}"
    );
    // Off by default; a second run over a line that carries it changes nothing.
    let plain = run(&["run", "testdata/cases/fallback-applied/input.jsonl", "--output-format", "openai"]);
    assert!(!stdout(&plain).contains("\"rivumi\":{"));
    let again = cmd().args(["run", "-"]).write_stdin(stdout(&o)).output().unwrap();
    assert_eq!(stdout(&again), stdout(&o));
}

#[test]
fn bad_lines_are_kept_skipped_or_rejected_and_counted_alike() {
    let good = r#"{"messages":[{"role":"user","content":"a"}]}"#;
    let data = format!("{good}\n\n{{bad\n{good}\n");
    let dir = tempfile::tempdir().unwrap();
    let rejects = dir.path().join("rejects.jsonl");
    let o = cmd()
        .args(["run", "-", "--bad-lines", "skip", "--rejects", path_str(&rejects)])
        .write_stdin(data.clone())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(4));
    assert_eq!(stdout(&o), format!("{good}\n\n{good}\n"), "the bad line is left out");
    let r: serde_json::Value = serde_json::from_str(std::fs::read_to_string(&rejects).unwrap().trim()).unwrap();
    assert_eq!((r["line"].as_u64(), r["text"].as_str()), (Some(3), Some("{bad")), "{r}");
    assert!(
        stderr(&o).contains("3 row(s) (and 1 blank line(s)):") && stderr(&o).contains("1 bad, left out"),
        "{}",
        stderr(&o)
    );
    let v = cmd().args(["validate", "-"]).write_stdin(data.clone()).output().unwrap();
    assert!(stdout(&v).ends_with("1 violation(s) in 3 row(s)\n"), "{}", stdout(&v));
    let s = cmd().args(["stats", "--json", "-"]).write_stdin(data).output().unwrap();
    let s: serde_json::Value = serde_json::from_slice(&s.stdout).unwrap();
    assert_eq!((s["transcripts"].as_u64(), s["failed"].as_u64()), (Some(2), Some(1)), "2 good rows and 1 bad: 3 rows");
    assert!(s["percentiles"]["before"]["p50"].as_u64().is_some(), "{s}");
}

/// A line the parser refuses is a bad line in every command, whichever reader saw it
/// first: a `\u` escape with a sign once passed the fast scanner, and `run` counted
/// the line unchanged where `validate` called it bad.
#[test]
fn a_line_the_parser_refuses_is_bad_in_run_as_in_validate() {
    for bad in [r"a\u+041b", r"a\u-041b"] {
        let line =
            format!(r#"{{"messages":[{{"role":"user","content":"{bad}"}},{{"role":"assistant","content":"ok"}}]}}"#);
        let o = cmd().args(["run", "-"]).write_stdin(format!("{line}\n")).output().unwrap();
        assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
        assert!(stderr(&o).contains("error: -:1:46: invalid escape"), "{}", stderr(&o));
        assert!(stderr(&o).contains("0 unchanged, 1 bad, echoed"), "{}", stderr(&o));
        assert_eq!(stdout(&o), format!("{line}\n"), "echoed as it was");
    }
}

/// `run` and `stats` read the same rows and word a bad one the same way (file, line and
/// column, then why), whichever reader refused it: the scanner, the parser (a nesting
/// too deep), or the mapping to canonical records.
#[test]
fn run_and_stats_word_a_bad_row_alike() {
    let deep = format!(r#"{{"messages":[{{"role":"user","content":{}{}}}]}}"#, "[".repeat(300), "]".repeat(300));
    let rows = [
        r#"{"messages":[{"role":"user","content":"fine"},{"role":"assistant","content":"ok"}]}"#,
        r#"{"messages":[}"#,
        r#"{"messages":3}"#,
        &deep,
        r#"{"messages":[{"role":"user","content":"caf\u00e9 \x"}]}"#,
    ];
    let data = rows.join("\n") + "\n";
    let errors = |o: &std::process::Output| -> Vec<String> {
        stderr(o).lines().filter(|l| l.contains("error: -:")).map(str::to_string).collect()
    };
    let r = cmd().args(["run", "-"]).write_stdin(data.clone()).output().unwrap();
    let s = cmd().args(["stats", "-"]).write_stdin(data).output().unwrap();
    assert_eq!(errors(&r).len(), 4, "{}", stderr(&r));
    assert!(
        errors(&r).iter().all(|e| e.split(':').nth(4).is_some_and(|c| c.parse::<usize>().is_ok())),
        "{:?}",
        errors(&r)
    );
    assert_eq!(errors(&s), errors(&r), "stats words the bad rows as run does");
}

/// `--rejects FILE` is an output like `--out`: written atomically, left as it was when
/// the run fails as a whole, and never the same file as `--out`.
#[test]
fn the_rejects_file_is_written_as_out_is() {
    let dir = tempfile::tempdir().unwrap();
    let rejects = dir.path().join("rejects.jsonl");
    std::fs::write(&rejects, "earlier\n").unwrap();
    // An input that cannot be read at all (a cut gzip stream): exit 3, nothing replaced.
    let cut = [0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xab];
    let (_d, broken) = crate::support::temp_file("broken.jsonl.gz", &cut);
    let o = run(&["run", path_str(&broken), "--input-format", "openai", "--rejects", path_str(&rejects)]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&rejects).unwrap(), "earlier\n", "a failed run replaced the rejects");
    // A run with a bad line replaces it whole.
    let o = cmd()
        .args(["run", "-", "--rejects", path_str(&rejects)])
        .write_stdin("{\"messages\":[}\n{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}\n")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let text = std::fs::read_to_string(&rejects).unwrap();
    assert!(text.starts_with(r#"{"line":1,"error":"-:1:14: expected value""#) && text.lines().count() == 1, "{text}");
    let leftovers: Vec<_> =
        std::fs::read_dir(dir.path()).unwrap().filter_map(|e| e.ok()?.file_name().into_string().ok()).collect();
    assert_eq!(leftovers, ["rejects.jsonl"], "no temporary file is left");
    // The same file as --out, by another spelling: a usage error before anything is read.
    let out = dir.path().join(".").join("rejects.jsonl");
    let o = run(&["run", DATA, "--out", path_str(&out), "--rejects", path_str(&rejects)]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--rejects and --out name the same file"), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&rejects).unwrap(), text);
}

/// A rejects file that cannot be written (no room: `/dev/full`) stops neither the
/// dataset nor is taken for stdout failing: every row comes out, the rejects' own error
/// is said once, naming it, and the run exits 4. More than a buffer of rejects, so the
/// error comes while the dataset streams, not at the end.
#[test]
#[cfg_attr(not(target_os = "linux"), ignore = "needs /dev/full (Linux)")]
fn a_rejects_file_that_cannot_be_written_loses_no_row() {
    assert!(std::path::Path::new("/dev/full").exists(), "Linux has /dev/full");
    let mut data = String::new();
    for i in 0..3000 {
        if i % 2 == 1 {
            data.push_str(&format!("{{\"messages\": [{{\"role\": \"user\", \"content\": \"cut {}\n", "x".repeat(1000)));
        } else {
            data.push_str(&format!("{{\"messages\":[{{\"role\":\"user\",\"content\":\"hi {i}\"}}]}}\n"));
        }
    }
    let (_d, path) = crate::support::temp_file("bad.jsonl", data.as_bytes());
    for jobs in ["1", "2"] {
        let o = run(&["run", path_str(&path), "--rejects", "/dev/full", "--jobs", jobs]);
        assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
        assert_eq!(o.stdout, data.as_bytes(), "--jobs {jobs}: every row, as read (nothing compacts, bad lines kept)");
        let err = stderr(&o);
        assert_eq!(err.matches("/dev/full: cannot write: ").count(), 1, "{err}");
        assert!(!err.contains("standard output"), "{err}");
        assert!(err.contains("3000 row(s): "), "{err}");
    }
}

/// `stats` predicts exactly what `run` writes: its total and percentiles after are the
/// figures of `run`'s output read back (one formula, worked out once by the plan).
#[test]
fn stats_predicts_exactly_what_run_writes() {
    let data: String = [long_row(30, 1500), long_row(10, 100), long_row(60, 800), long_row(3, 20)]
        .iter()
        .map(|r| format!("{r}\n"))
        .collect();
    for args in [&["--target-tokens", "4000"][..], &["--target-tokens", "300"], &["--max-total-tokens", "3000"], &[]] {
        let o = cmd().args(["stats", "-", "--json"]).args(args).write_stdin(data.clone()).output().unwrap();
        let predicted: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let written = cmd().args(["run", "-"]).args(args).write_stdin(data.clone()).output().unwrap();
        let o = cmd().args(["stats", "-", "--json"]).write_stdin(written.stdout).output().unwrap();
        let actual: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let after = predicted["tokens_estimated"].as_i64().unwrap() - predicted["tokens_saved"].as_i64().unwrap();
        assert_eq!(after, actual["tokens_estimated"].as_i64().unwrap(), "{args:?}");
        assert_eq!(predicted["percentiles"]["after"], actual["percentiles"]["before"], "{args:?}");
    }
}

/// `--provenance` acts on every input that gives lines: dataset rows say where they come
/// from (file and line) and what was done; a session written in its own format cannot
/// carry it, and is refused.
#[test]
fn provenance_marks_every_dataset_row_and_is_refused_where_it_cannot_act() {
    let o = run(&["run", DATA, "--provenance", "--max-total-tokens", "300"]);
    let out = stdout(&o);
    let rows: Vec<&str> = out.lines().collect();
    let input = std::fs::read_to_string(crate::support::root().join(DATA)).unwrap();
    let input: Vec<&str> = input.lines().collect();
    assert_eq!(rows.len(), input.len(), "one line per line");
    for (k, row) in rows.iter().enumerate() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(row) else { continue }; // the bad line, echoed
        assert_eq!(v["rivumi"]["source"], DATA, "{row}");
        assert_eq!(v["rivumi"]["line"], k + 1, "{row}");
        assert!(v["rivumi"]["action"].is_string() && v["rivumi"]["tokens_after"].is_u64(), "{row}");
    }
    // Marked again, the figures are replaced, never doubled.
    let again = cmd().args(["run", "-", "--provenance"]).write_stdin(stdout(&o)).output().unwrap();
    assert!(stdout(&again).lines().all(|l| l.matches("\"rivumi\":{").count() <= 1), "{}", stdout(&again));
    let o = run(&["run", "testdata/cases/fallback-applied/input.jsonl", "--provenance"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("add --output-format openai"), "{}", stderr(&o));
    // The closing line counts what the compaction did: a row it left as it was is
    // unchanged, though it is written again with its provenance.
    for budget in ["300", "100000000"] {
        let closing = |extra: &[&str]| {
            let o = run(&[&["run", DATA, "--max-total-tokens", budget][..], extra].concat());
            stderr(&o).lines().last().unwrap_or_default().to_string()
        };
        let (plain, marked) = (closing(&[]), closing(&["--provenance"]));
        assert_eq!(plain, marked, "--max-total-tokens {budget}");
        if budget != "300" {
            assert!(plain.contains(" 0 shortened, 0 changed but not shorter, "), "{plain}");
        }
    }
}

/// A pre-compact hook that fails fails for every row: the run stops at the first row it
/// would compact, says why once, and exits 4; no row is counted bad for it.
#[test]
fn a_failing_hook_stops_a_dataset_run() {
    let first = std::fs::read_to_string(DATA).unwrap().lines().next().unwrap().to_string();
    let (_dir, path) = crate::support::temp_file("rows.jsonl", format!("{first}\n{first}\n").as_bytes());
    let o = run(&["run", path_str(&path), "--max-total-tokens", "300", "--pre-compact-hook", "exit 7"]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.matches("pre-compact hook `exit 7` failed with exit code 7").count(), 1, "{err}");
    assert!(!err.contains("rows.jsonl:1:"), "the failure is not a bad row: {err}");
    assert!(!err.contains(" 1 bad") && !err.contains(" 2 bad"), "{err}");
}

/// An evaluation output of OpenHands V1 (the agent SDK; its events told by `kind`): the
/// compaction takes the events out whose items it removed — also those a condensation
/// restated, and every action of a model response whose message it removed — and writes
/// what it injects as the SDK's own user `MessageEvent`s; a second run changes nothing.
#[test]
fn an_openhands_sdk_evaluation_output_gets_events_of_its_own_kind() {
    let case = std::fs::read_to_string(root().join("testdata/cases/openhands-sdk-condensation/input.jsonl")).unwrap();
    let mut events: Vec<serde_json::Value> = case.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    // The conversation's state: an evaluation output keeps no state, but the agent's
    // metrics (its usage per model response) beside the history.
    let state = events.pop().unwrap();
    let metrics = state["stats"]["usage_to_metrics"]["agent"].clone();
    let row = serde_json::json!({"instance_id": "calc__calc-1", "instruction": "Fix calc.divide",
        "history": events, "metrics": metrics, "test_result": {"git_patch": "diff --git a/calc.py b/calc.py"}});
    let (_d, path) = temp_file("output.jsonl", format!("{row}\n").as_bytes());
    let d = run(&["decide", "--json", path_str(&path), "--max-total-tokens", "2000"]);
    assert!(d.status.success(), "{}", stderr(&d));
    let d: serde_json::Value = serde_json::from_str(stdout(&d).lines().next().unwrap()).unwrap();
    assert_eq!((d["used"].as_u64(), d["estimated"].as_bool()), (Some(41_520), Some(false)), "the metrics' usage: {d}");
    let o = run(&["run", path_str(&path), "--max-total-tokens", "2000"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("1 row(s): 1 shortened"), "{}", stderr(&o));
    let out: serde_json::Value = serde_json::from_str(stdout(&o).trim_end()).unwrap();
    let history = out["history"].as_array().unwrap();
    let injected: Vec<&serde_json::Value> = history.iter().filter(|e| e.get("rivumi").is_some()).collect();
    let kinds: Vec<&str> = injected.iter().map(|e| e["rivumi"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["history_summary_fallback", "pressure_reminder", "reanchor"]);
    for e in &injected {
        assert_eq!((e["kind"].as_str(), e["source"].as_str()), (Some("MessageEvent"), Some("user")), "{e}");
        assert_eq!(e["llm_message"]["role"], "user", "{e}");
        assert!(e["llm_message"]["content"][0]["text"].as_str().is_some_and(|t| t.starts_with("[rivumi]")), "{e}");
    }
    // The summarized events after the condensation are gone (the task tracker's call and
    // result among them); the condensation itself and the events before it are kept.
    let ids: Vec<&str> = history.iter().filter_map(|e| e["id"].as_str()).collect();
    let original: Vec<&str> = events.iter().filter_map(|e| e["id"].as_str()).collect();
    let tracker = events.iter().find(|e| e["tool_name"] == "task_tracker" && e["kind"] == "ActionEvent").unwrap();
    assert!(!ids.contains(&tracker["id"].as_str().unwrap()), "the summarized call is taken out");
    assert!(history.iter().any(|e| e["kind"] == "Condensation"));
    assert!(ids.len() < original.len() + 3, "events were taken out");
    let kept: Vec<&serde_json::Value> = history.iter().filter(|e| e.get("rivumi").is_none()).collect();
    assert!(kept.iter().all(|e| events.contains(e)), "kept events are unchanged");
    // Read again, the injected events are this tool's: a second run is a no-op.
    let out = stdout(&o);
    let again = cmd().args(["run", "-", "--max-total-tokens", "2000"]).write_stdin(out.clone()).output().unwrap();
    assert_eq!(stdout(&again), out, "a second run is a no-op");
}

/// A row of the function calling before `tool_calls` (an assistant's `function_call`,
/// answered by a `role: "function"` message; no ids): the rows of 2023's fine-tuning
/// sets. Its calls are read as calls, each answered by the `function` message after it.
/// `legacy` gives that row, or the same conversation with `tool_calls` and `tool`.
fn function_calling_row(legacy: bool) -> serde_json::Value {
    use serde_json::json;
    let mut m = vec![
        json!({"role": "system", "content": "You are a helpful assistant."}),
        json!({"role": "user", "content": "Fix the failing test in src/app.py"}),
    ];
    for i in 0..12 {
        let name = if i % 2 == 1 { "bash" } else { "str_replace_editor" };
        let args =
            json!({"command": if i % 2 == 1 { "pytest -q" } else { "str_replace" }, "path": format!("src/f{i}.py"),
            "old_str": "a", "new_str": "b"})
            .to_string();
        let output = format!("line {i} of output\n").repeat(150);
        if legacy {
            m.push(json!({"role": "assistant", "content": null, "function_call": {"name": name, "arguments": args}}));
            m.push(json!({"role": "function", "name": name, "content": output}));
        } else {
            m.push(json!({"role": "assistant", "content": null,
                "tool_calls": [{"id": format!("c{i}"), "type": "function", "function": {"name": name, "arguments": args}}]}));
            m.push(json!({"role": "tool", "tool_call_id": format!("c{i}"), "content": output}));
        }
    }
    m.push(json!({"role": "assistant", "content": "All tests pass."}));
    json!({"messages": m, "functions": [{"name": "bash", "parameters": {}}]})
}

/// One row compacted on stdin under `budget`, which must succeed and shorten it.
fn compact_row(row: &serde_json::Value, budget: &str) -> serde_json::Value {
    let o = cmd().args(["run", "-", "--max-total-tokens", budget]).write_stdin(format!("{row}\n")).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("1 shortened"), "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The text of the message the compaction injected under `name` (`rivumi-<kind>`).
fn injected_text<'a>(row: &'a serde_json::Value, name: &str) -> &'a str {
    let found = row["messages"].as_array().unwrap().iter().find(|m| m["name"] == name);
    found.unwrap_or_else(|| panic!("no {name} in {row}"))["content"].as_str().unwrap()
}

#[test]
fn rows_of_the_function_calling_before_tool_calls_compact_as_their_calls() {
    let compact = |row: &serde_json::Value| compact_row(row, "8000");
    let (legacy, tools) = (function_calling_row(true), function_calling_row(false));
    let (out, out_tools) = (compact(&legacy), compact(&tools));
    let injected = |v: &serde_json::Value| -> Vec<(String, String)> {
        let messages = v["messages"].as_array().unwrap();
        let named = messages.iter().filter(|m| m["name"].as_str().is_some_and(|n| n.starts_with("rivumi-")));
        named.map(|m| (m["name"].as_str().unwrap().to_string(), m["content"].as_str().unwrap().to_string())).collect()
    };
    let names: Vec<String> = injected(&out).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["rivumi-history_summary_fallback", "rivumi-pressure_reminder", "rivumi-reanchor"]);
    assert_eq!(injected(&out), injected(&out_tools), "the same decision, summary and re-anchor as with tool_calls");
    let reanchor = &injected(&out)[2].1;
    assert!(reanchor.contains("Changed files (most recent first):\n- src/f10.py\n"), "{reanchor}");
    // What is kept is the row's own messages, each call with the `function` message
    // that answers it, and the row's other fields.
    let input = legacy["messages"].as_array().unwrap();
    let kept: Vec<&serde_json::Value> = out["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["name"].as_str().is_none_or(|n| !n.starts_with("rivumi-")))
        .collect();
    assert!(kept.len() < input.len(), "messages were summarized");
    for (k, m) in kept.iter().enumerate() {
        assert!(input.contains(m), "kept as it was: {m}");
        if m["role"] == "function" {
            assert!(kept[k - 1]["function_call"]["name"] == m["name"], "a result kept with its call: {m}");
        }
    }
    assert_eq!(out["functions"], legacy["functions"]);
    let again =
        cmd().args(["run", "-", "--max-total-tokens", "8000"]).write_stdin(format!("{out}\n")).output().unwrap();
    assert_eq!(serde_json::from_slice::<serde_json::Value>(&again.stdout).unwrap(), out, "a second run is a no-op");
    // A `function` message with no call before it answers nothing.
    let orphan = r#"{"messages":[{"role":"user","content":"a"},{"role":"function","name":"bash","content":"x"}]}"#;
    let v = cmd().args(["validate", "-"]).write_stdin(format!("{orphan}\n")).output().unwrap();
    assert_eq!(v.status.code(), Some(1));
    assert!(stdout(&v).contains("-:1: result_without_call: message 1: "), "{}", stdout(&v));
}

/// A call of a custom tool (`type: "custom"`, a free-form `input` instead of
/// `function`) is read by its `custom.name` and `input`, as Codex's custom calls are: an
/// `apply_patch` call's patch names the files it changes.
#[test]
fn a_call_of_a_custom_tool_is_read_by_its_name_and_input() {
    use serde_json::json;
    let mut m = vec![json!({"role": "system", "content": "s"}), json!({"role": "user", "content": "Fix it"})];
    for i in 0..10 {
        let patch = format!("*** Begin Patch\n*** Update File: src/m{i}.rs\n@@\n-a\n+b\n*** End Patch\n");
        m.push(json!({"role": "assistant", "content": null,
            "tool_calls": [{"id": format!("c{i}"), "type": "custom", "custom": {"name": "apply_patch", "input": patch}}]}));
        m.push(json!({"role": "tool", "tool_call_id": format!("c{i}"), "content": "Done!\n".repeat(200)}));
    }
    m.push(json!({"role": "assistant", "content": "ok"}));
    let row = json!({ "messages": m });
    let out = compact_row(&row, "3000");
    let reanchor = injected_text(&out, "rivumi-reanchor");
    assert!(reanchor.contains("Changed files (most recent first):\n- src/m9.rs\n- src/m8.rs\n"), "{reanchor}");
    let summary = injected_text(&out, "rivumi-history_summary_fallback");
    assert!(
        summary.contains("- assistant: [call apply_patch({\"input\":\"*** Begin Patch\\n*** Update File: src/m1.rs\\n")
            && summary.contains("- result of apply_patch (ok): Done! Done!"),
        "{summary}"
    );
}

/// A dataset's rows are written back as rows: an output format asked for that would
/// not be written is refused, not ignored.
#[test]
fn an_output_format_a_dataset_is_not_written_in_is_refused() {
    for (format, says) in [
        ("canonical", "--output-format canonical writes one transcript per input: openai files are datasets"),
        ("claude-code", "--output-format claude-code writes a session back: openai files are datasets"),
    ] {
        let o = run(&["run", DATA, "--max-total-tokens", "300", "--output-format", format]);
        assert_eq!(o.status.code(), Some(2), "{format}");
        assert!(stderr(&o).contains(says), "{}", stderr(&o));
        assert!(o.stdout.is_empty());
    }
    let o = run(&["run", DATA, "--max-total-tokens", "300", "--output-format", "openai"]);
    assert_eq!((o.status.code(), stdout(&o).lines().count()), (Some(4), 4), "openai is the rows' own format");
}

/// The chat templates' shape (Hugging Face's tool-use documentation): calls without
/// ids, each answered by a `{"role": "tool", "name": …}` message. A result is named by
/// its own `name`, so parallel calls' results are told apart in the summary.
#[test]
fn a_result_without_a_call_id_is_named_by_its_own_name() {
    use serde_json::json;
    let mut m = vec![json!({"role": "system", "content": "s"}), json!({"role": "user", "content": "Fix it"})];
    for i in 0..6 {
        m.push(json!({"role": "assistant", "tool_calls": [
            {"type": "function", "function": {"name": "read_file", "arguments": {"path": format!("src/h{i}.py")}}},
            {"type": "function", "function": {"name": "run_tests", "arguments": {}}}]}));
        m.push(json!({"role": "tool", "name": "read_file", "content": "contents\n".repeat(200)}));
        m.push(json!({"role": "tool", "name": "run_tests", "content": "passed\n".repeat(200)}));
    }
    m.push(json!({"role": "assistant", "content": "ok"}));
    let row = json!({ "messages": m });
    let out = compact_row(&row, "3000");
    let summary = injected_text(&out, "rivumi-history_summary_fallback");
    assert!(summary.contains("- result of read_file (ok): contents contents"), "{summary}");
    assert!(summary.contains("- result of run_tests (ok): passed passed"), "{summary}");
    assert!(!summary.contains("- result of run_tests (ok): contents"), "{summary}");
}

/// A row in the Anthropic Messages API's shape (`tool_use` blocks in the assistant's
/// content, `tool_result` blocks in the user's) has calls and results this format does
/// not read: it is refused as a bad row, named, and echoed, never read as a short
/// conversation below its threshold.
#[test]
fn a_row_of_anthropic_tool_blocks_is_refused_not_under_counted() {
    use serde_json::json;
    let mut m = vec![json!({"role": "user", "content": "Fix it"})];
    for i in 0..10 {
        m.push(json!({"role": "assistant", "content": [{"type": "text", "text": "Let me edit."},
            {"type": "tool_use", "id": format!("toolu_{i}"), "name": "str_replace_based_edit_tool",
             "input": {"command": "create", "path": format!("src/a{i}.py"), "file_text": "x = 1\n".repeat(300)}}]}));
        m.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": format!("toolu_{i}"),
            "content": "File created\n".repeat(300)}]}));
    }
    let row = json!({"system": "You are Claude.", "messages": m}).to_string();
    let o = cmd().args(["run", "-", "--max-total-tokens", "3000"]).write_stdin(format!("{row}\n")).output().unwrap();
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert_eq!(stdout(&o), format!("{row}\n"), "echoed unchanged");
    assert!(
        stderr(&o)
            .contains("-:1:1: message 1: content block 1 is a \"tool_use\" block, the Anthropic Messages API's shape"),
        "{}",
        stderr(&o)
    );
    // A result block alone, as one object, and a server tool's result are refused too.
    for content in [
        json!({"type": "tool_result", "tool_use_id": "t", "content": "x"}),
        json!([{"type": "text", "text": "a"}, {"type": "web_search_tool_result", "tool_use_id": "t", "content": []}]),
    ] {
        let row = json!({"messages": [{"role": "user", "content": content}]});
        let o = cmd().args(["validate", "-"]).write_stdin(format!("{row}\n")).output().unwrap();
        assert_eq!(o.status.code(), Some(1), "{row}");
        assert!(
            stdout(&o).contains("bad_line") && stdout(&o).contains("the Anthropic Messages API's shape"),
            "{}",
            stdout(&o)
        );
    }
    assert!(!rivumi_compact::dataset::reads_through_view(&row), "the view leaves the refusal to the canonical path");
}

/// A row whose `messages` is the list as JSON text (a data frame's export) says so.
#[test]
fn messages_encoded_twice_are_named_as_such() {
    let row = r#"{"messages": "[{\"role\": \"user\", \"content\": \"hi\"}]"}"#;
    let o = cmd().args(["run", "-"]).write_stdin(format!("{row}\n")).output().unwrap();
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert_eq!(stdout(&o), format!("{row}\n"));
    assert!(
        stderr(&o).contains("-:1:1: \"messages\" is a string that holds the list as JSON text (encoded twice)"),
        "{}",
        stderr(&o)
    );
    // A string that is no list is the plain complaint.
    let o =
        cmd().args(["run", "-", "--input-format", "openai"]).write_stdin("{\"messages\": \"hi\"}\n").output().unwrap();
    assert!(stderr(&o).contains("-:1:1: expected an object with a \"messages\" array"), "{}", stderr(&o));
}

/// A row of Responses API items (no `role`, a `type`) is named as such.
#[test]
fn responses_api_items_in_a_row_are_named_as_such() {
    let row = r#"{"messages":[{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]},{"type":"function_call","call_id":"c1","name":"bash","arguments":"{}"}]}"#;
    let o = cmd().args(["run", "-"]).write_stdin(format!("{row}\n")).output().unwrap();
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "-:1:1: message 1: expected a \"role\": this is an item of type \"function_call\" (the Responses API's shape)"
        ),
        "{}",
        stderr(&o)
    );
    let plain = r#"{"messages":[{"content":"hi"}]}"#;
    let o = cmd().args(["run", "-"]).write_stdin(format!("{plain}\n")).output().unwrap();
    assert!(stderr(&o).contains("-:1:1: message 0: expected a \"role\"\n"), "{}", stderr(&o));
}

/// A check run through Windows PowerShell (`powershell.exe -NoProfile -Command …`, how a
/// Windows session's shell calls look) is the check: the re-anchor says it passed.
#[test]
fn a_check_run_through_powershell_is_the_check() {
    use serde_json::json;
    let mut m = vec![json!({"role": "system", "content": "s"}), json!({"role": "user", "content": "Fix it"})];
    for i in 0..8 {
        let script = if i == 7 { "cargo test" } else { r"Get-Content src\a.rs" };
        let args = json!({"command": ["powershell.exe", "-NoProfile", "-Command", script]}).to_string();
        m.push(json!({"role": "assistant", "content": null,
            "tool_calls": [{"id": format!("c{i}"), "type": "function", "function": {"name": "shell", "arguments": args}}]}));
        m.push(json!({"role": "tool", "tool_call_id": format!("c{i}"), "content": "out\n".repeat(200)}));
    }
    m.push(json!({"role": "assistant", "content": "done"}));
    let row = json!({ "messages": m });
    let o = cmd()
        .args(["run", "-", "--max-total-tokens", "3000", "--verify", "cargo test"])
        .write_stdin(format!("{row}\n"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let out: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let reanchor = injected_text(&out, "rivumi-reanchor");
    assert!(reanchor.contains("\nCheck status: pass (`cargo test`)\n"), "{reanchor}");
}

/// A flag that cannot act on the path the rows take is said once for the dataset, as it
/// is for a transcript: each row's own warnings are not printed.
#[test]
fn a_flag_that_cannot_act_on_the_rows_is_said_once() {
    for flag in ["--target-tokens", "--max-total-tokens"] {
        let o = run(&["run", DATA, "--runtime", "conversation", flag, "100"]);
        let said = stderr(&o).matches(&format!("({flag}) does not act on the conversation path its rows take")).count();
        assert_eq!(said, 1, "{}", stderr(&o));
        let o = run(&["run", DATA, flag, "100"]);
        assert!(!stderr(&o).contains("does not act"), "{}", stderr(&o));
    }
}

/// What an assistant said instead of answering — a `refusal` beside the content, or a
/// `{"type": "refusal"}` content block — is text the next request sends back, and
/// counts as much as an answer; a model's reasoning (`reasoning_content`) is not sent
/// back and does not count. Both stay in the row as they were written.
#[test]
fn a_refusal_counts_as_text_and_reasoning_does_not() {
    use serde_json::json;
    let refusal = "I can't help with that. ".repeat(250); // 6,000 bytes
    let estimate = |assistant: serde_json::Value| {
        let row = json!({"messages": [{"role": "user", "content": "abcd"}, assistant]});
        let o = cmd().args(["stats", "-", "--json"]).write_stdin(format!("{row}\n")).output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        let stats: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        stats["tokens_estimated"].as_u64().unwrap()
    };
    // 1 token for the user's 4 bytes, then ceil(bytes / 4) of the assistant's text.
    let beside = json!({"role": "assistant", "content": null, "refusal": refusal});
    assert_eq!(estimate(beside), 1 + 1500);
    let block = json!({"role": "assistant", "content": [{"type": "refusal", "refusal": refusal}]});
    assert_eq!(estimate(block), 1 + 1500);
    // After the content's text, on a line of its own: 9 + 1 + 6,000 bytes.
    let both = json!({"role": "assistant", "content": "123456789", "refusal": refusal});
    assert_eq!(estimate(both), 1 + 1503);
    let blocks = json!({"role": "assistant",
        "content": [{"type": "text", "text": "123456789"}, {"refusal": refusal, "type": "refusal"}]});
    assert_eq!(estimate(blocks), 1 + 1503);
    let reasoning = json!({"role": "assistant", "content": "ok", "reasoning_content": "Let me think. ".repeat(3000)});
    assert_eq!(estimate(reasoning), 1 + 1);
    let none = json!({"role": "assistant", "content": "ok", "refusal": null});
    assert_eq!(estimate(none.clone()), 1 + 1);
    assert!(rivumi_compact::dataset::reads_through_view(&json!({"messages": [none]}).to_string()));

    // Refusals early in a long task: counted, the budget is crossed, they are
    // summarized by what they said, and the kept ones are written as they were.
    let mut m = vec![json!({"role": "user", "content": "Fix the failing test"})];
    for i in 0..6 {
        m.push(json!({"role": "assistant", "content": null, "refusal": format!("Refusal {i}: {refusal}"),
            "reasoning_content": "Thinking it over. ".repeat(400)}));
        m.push(json!({"role": "user", "content": format!("Please try again ({i})")}));
    }
    m.push(json!({"role": "assistant", "content": [{"type": "refusal", "refusal": refusal}]}));
    let row = json!({"messages": m});
    assert!(!rivumi_compact::dataset::reads_through_view(&row.to_string()));
    let out = compact_row(&row, "8000");
    let summary = injected_text(&out, "rivumi-history_summary_fallback");
    assert!(summary.contains("- assistant: Refusal 1: I can't help with that."), "{summary}");
    let kept = out["messages"].as_array().unwrap();
    let last = kept.iter().rev().find(|k| k["name"].is_null()).unwrap();
    assert_eq!(last, m.last().unwrap(), "the last message is kept as it was");
}

/// A row of another dataset shape is refused saying which shape it is, or which keys
/// it has: a batch of them reads as what it is, not as bare "bad lines".
#[test]
fn a_row_of_another_dataset_shape_is_named_by_its_shape() {
    // A key of any length is named by its first 40 characters.
    let long_row = format!(r#"{{"{}":1}}"#, "k".repeat(100_000));
    let long_said = format!("this one has \"{}…\"", "k".repeat(40));
    let rows = [
        (r#"{"conversations":[{"from":"human","value":"hi"},{"from":"gpt","value":"yo"}]}"#, "the ShareGPT shape"),
        (r#"{"prompt":[{"role":"user","content":"hi"}],"completion":[{"role":"assistant","content":"yo"}]}"#,
         "TRL's prompt-completion shape"),
        (r#"{"prompt":"hi","chosen":[],"rejected":[]}"#, "a preference pair"),
        (r#"{"instruction":"hi","input":"","output":"yo"}"#, "the Alpaca shape"),
        (r#"{"input":[{"role":"user","content":"hi"}]}"#, "the Responses API's shape"),
        (r#"{"text":"hi","id":7}"#, "this one has \"text\", \"id\""),
        (r#"{"input":"hi","target":"yo"}"#, "this one has \"input\", \"target\""),
        (long_row.as_str(), long_said.as_str()),
        (r"{}", "this one is empty"),
        (r#"{"messages":[{"role":"human","content":"hi"}]}"#,
         "message 0: unknown role \"human\": the chat format's roles are system, developer, user, assistant, tool and function"),
    ];
    let data: String = rows.iter().map(|(r, _)| format!("{r}\n")).collect();
    let o = cmd().args(["run", "-", "--input-format", "openai"]).write_stdin(data.clone()).output().unwrap();
    assert!(stderr(&o).len() < 4000, "a row's keys are named, not echoed whole");
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert_eq!(stdout(&o), data, "every row echoed");
    for (k, (_, said)) in rows.iter().enumerate() {
        let line = stderr(&o).lines().find(|l| l.contains(&format!("-:{}:1: ", k + 1))).map(str::to_string);
        let line = line.unwrap_or_else(|| panic!("row {} not named: {}", k + 1, stderr(&o)));
        assert!(line.contains(said), "{line}");
    }
}
