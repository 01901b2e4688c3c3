//! Replay and profiles (SPEC 12): fidelity against the compactions real sessions
//! recorded (Claude Code files read in place from ../shared/realdata; Codex rollouts
//! hand-made in testdata/ after the public format), and what replay writes.

use crate::support::{path_str, root, run, stderr, stdout, temp_file};
use serde_json::Value;
use std::path::{Path, PathBuf};

const CODEX: &str = "testdata/cases/codex-rollout-quirks/input.jsonl";
const MANUAL: &str = "testdata/cases/claude-code-dangling-logical-parent/input.jsonl";

fn replay(args: &[&str]) -> (Vec<Value>, Value) {
    let o = run(&[&["replay", "--json"], args].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let mut rows: Vec<Value> = stdout(&o).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let summary = rows.pop().unwrap();
    assert_eq!(summary["type"], "summary");
    assert!(rows.iter().all(|r| r["type"] == "point"));
    (rows, summary)
}

/// The recorded compactions of a Claude Code session, read from the file itself:
/// (1-based line, trigger, preTokens).
fn claude_boundaries(path: &Path) -> Vec<(usize, String, u64)> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .enumerate()
        .filter_map(|(i, l)| {
            let v: Value = serde_json::from_str(l).ok()?;
            (v["subtype"] == "compact_boundary").then(|| {
                let m = &v["compactMetadata"];
                (i + 1, m["trigger"].as_str().unwrap().to_string(), m["preTokens"].as_u64().unwrap())
            })
        })
        .collect()
}

/// Checks one recorded compaction: the first firing of its segment is at its model
/// call or one earlier, and the replayed figure there is within `tolerance` of the
/// recorded one. Returns (pre-tokens, replayed, call where replay fired).
fn check_fidelity(rows: &[Value], line: usize, pre: u64, tolerance: f64) -> (u64, u64, u64) {
    let at = rows.iter().position(|r| r["recorded"]["line"].as_u64() == Some(line as u64)).expect("recorded point");
    let p = &rows[at];
    assert_eq!(p["recorded"]["pre_tokens"].as_u64(), Some(pre), "{p}");
    let segment_start = rows[..at].iter().rposition(|r| !r["recorded"].is_null()).map_or(0, |k| k + 1);
    let fired =
        rows[segment_start..=at].iter().find(|r| r["fired"] == true).expect("replay fires before the compaction");
    let (call, fired_call) = (p["call"].as_u64().unwrap(), fired["call"].as_u64().unwrap());
    assert!(fired_call == call || fired_call + 1 == call, "fired at call {fired_call}, compacted after {call}");
    let used = p["used"].as_u64().unwrap();
    let off = (used as f64 - pre as f64).abs() / pre as f64;
    assert!(off <= tolerance, "replayed {used} vs recorded {pre}: {:.3}%", off * 100.0);
    (pre, used, fired_call)
}

#[test]
#[cfg_attr(realdata_absent, ignore = "../shared/realdata is absent")]
fn claude_code_profile_fires_where_real_sessions_compacted() {
    let dir = root().join("../shared/realdata/claude-code");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    let mut checked = 0;
    for f in files {
        let recorded = claude_boundaries(&f);
        if recorded.is_empty() {
            continue;
        }
        let (rows, summary) = replay(&["--profile", "claude-code", path_str(&f)]);
        let auto = recorded.iter().filter(|r| r.1 == "auto").count();
        assert_eq!(summary["recorded_auto"].as_u64(), Some(auto as u64), "{summary}");
        assert_eq!(summary["predicted_within_one_call"], summary["recorded_auto"], "{summary}");
        for (line, trigger, pre) in recorded.iter().filter(|r| r.1 == "auto") {
            // One tool result after the last usage: the tighter bound applies.
            let (pre, used, call) = check_fidelity(&rows, *line, *pre, 0.005);
            eprintln!(
                "{}: {trigger} compaction at line {line}: preTokens {pre}, replayed {used}, fired at call {call}",
                f.file_name().unwrap().to_string_lossy()
            );
            checked += 1;
        }
    }
    assert!(checked >= 2, "the real Claude Code sessions with a compact boundary were checked");
}

#[test]
fn codex_profile_fires_where_the_rollout_compacted() {
    let (rows, summary) = replay(&["--profile", "codex", CODEX]);
    // The compacted record's line, read from the file.
    let text = std::fs::read_to_string(root().join(CODEX)).unwrap();
    let line = text.lines().position(|l| l.contains("\"type\":\"compacted\"")).unwrap() + 1;
    // Codex records no figure: the latest call's total_tokens before it is the recorded one.
    let total_before = text
        .lines()
        .take(line)
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["payload"]["info"]["last_token_usage"]["total_tokens"].as_u64())
        .filter(|&t| t > 0)
        .last()
        .unwrap();
    let (pre, used, call) = check_fidelity(&rows, line, total_before, 0.005);
    eprintln!("codex rollout: compacted at line {line}: recorded {pre}, replayed {used}, fired at call {call}");
    assert_eq!(rows[0]["fires_at"], 244_800, "90% of the model window 272,000 (258,400 recorded = 95%)");
    assert_eq!(summary["line"], Value::Null);
    assert_eq!((summary["recorded_auto"].as_u64(), summary["predicted_within_one_call"].as_u64()), (Some(1), Some(1)));
    let o = run(&["replay", "--profile", "codex", CODEX]);
    assert!(
        stdout(&o).ends_with("recorded 1 auto compaction, predicted within one model call: 1/1\n"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn a_manual_compaction_is_reported_as_manual_never_as_a_miss() {
    let (rows, summary) = replay(&["--profile", "claude-code", MANUAL]);
    let rec: Vec<&Value> = rows.iter().filter(|r| !r["recorded"].is_null()).collect();
    assert_eq!(rec.len(), 1);
    assert_eq!(rec[0]["recorded"]["trigger"], "manual");
    assert_eq!(rec[0]["fired"], false, "149,633 is under 167,000: no firing");
    assert_eq!((summary["recorded_auto"].as_u64(), summary["recorded_manual"].as_u64()), (Some(0), Some(1)));
    let text = stdout(&run(&["replay", "--profile", "claude-code", MANUAL]));
    assert!(
        text.ends_with("recorded 0 auto compactions (and 1 manual), predicted within one model call: 0/0\n"),
        "{text}"
    );
}

#[test]
fn json_points_name_input_lines_calls_and_turns() {
    let (rows, _) = replay(&["--profile", "codex", CODEX]);
    let text = std::fs::read_to_string(root().join(CODEX)).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    for (k, r) in rows.iter().enumerate() {
        assert_eq!(r["call"].as_u64(), Some(k as u64 + 1), "one point per model call: {r}");
        let line = r["line"].as_u64().unwrap() as usize;
        let v: Value = serde_json::from_str(lines[line - 1]).unwrap();
        assert_eq!(v["type"], "response_item", "a point is at the last item of its call: {r}");
        assert_eq!(r["turn_id"], "t1");
        let used = r["used"].as_u64().unwrap();
        assert_eq!(r["ratio"].as_f64(), Some((used as f64 / 258_400.0 * 10_000.0).round() / 10_000.0));
    }
    assert_eq!(rows.iter().filter(|r| r["fired"] == true).count(), 1, "fired only at the first point over");
    // After the compaction the figure starts again from the context Codex kept.
    let after = rows.iter().position(|r| !r["recorded"].is_null()).unwrap() + 1;
    assert!(rows[after]["used"].as_u64().unwrap() < 30_000, "{}", rows[after]);
}

#[test]
fn codex_rollout_usage_is_counted_once_per_model_call() {
    let text = std::fs::read_to_string(root().join(CODEX)).unwrap();
    let last_total = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["payload"]["info"]["total_token_usage"]["total_tokens"].as_u64())
        .next_back()
        .unwrap();
    let o = run(&["decide", "--json", "--runtime", "agent-runner", "--max-total-tokens", "100000000", CODEX]);
    let d: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(d["used"].as_u64(), Some(last_total), "the rollout's final total_token_usage");
    assert_eq!(d["estimated"], false, "every model call has its count");
    let out = stdout(&run(&["run", CODEX]));
    let records: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let by_id = |id: &str| records.iter().find(|r| r["id"] == id).unwrap().clone();
    assert_eq!(by_id("L3")["turn"], "t1", "a user message before its turn_context joins that turn");
    let restated = by_id("L26.1");
    assert_eq!(restated["usage"]["output_tokens"], 0, "no usage on a restated item: {restated}");
    assert_eq!(
        by_id("L29")["usage"]["cache_read_tokens"],
        19_000,
        "the zero count after the compaction replaced nothing"
    );
    assert!(records.iter().any(|r| r["name"] == "files_changed" && r["paths"][0] == "/work/app/src/lexer.rs"));
}

#[test]
fn profiles_are_a_layer_under_session_file_and_flags() {
    let o = run(&["config", "--profile", "claude-code", "--json", MANUAL]);
    let c: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(c["trigger.reserve_tokens"], serde_json::json!({"value": 33000, "from": "profile"}));
    let from = c["runtime.context_window"]["from"].as_str().unwrap();
    assert!(
        from.starts_with("session (model claude-sonnet-4-5, crates/formats/src/formats/models.json: "),
        "the importer's window wins over the profile's, and says where it comes from: {from}"
    );
    let (rows, _) = replay(&["--profile", "claude-code", "--context-window", "100000", MANUAL]);
    assert_eq!(rows[0]["fires_at"], 67_000, "a flag still overrides: 100,000 - 33,000");
    let d: Value = serde_json::from_slice(&run(&["decide", "--json", "--profile", "codex", CODEX]).stdout).unwrap();
    assert_eq!((d["trigger_tokens"].as_u64(), d["threshold"].as_f64()), (Some(244_800), Some(0.9)));
    let d: Value = serde_json::from_slice(&run(&["decide", "--json", CODEX]).stdout).unwrap();
    assert!(d.get("trigger_tokens").is_none(), "the default profile keeps the decision as it was: {d}");
}

#[test]
fn the_rivumi_profile_evaluates_a_conversation_at_completed_turns() {
    let case = "testdata/cases/conversation-lifecycle-completed/input.jsonl";
    let (rows, summary) = replay(&[case]);
    assert_eq!(
        (summary["profile"].as_str(), summary["evaluate_at"].as_str()),
        (Some("rivumi"), Some("completed-turns"))
    );
    let text = std::fs::read_to_string(root().join(case)).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    for r in rows.iter().filter(|r| r["recorded"].is_null()) {
        let v: Value = serde_json::from_str(lines[r["line"].as_u64().unwrap() as usize - 1]).unwrap();
        assert_eq!(v["role"], "assistant", "{r}");
        assert!(v.get("tool_calls").is_none_or(|c| c.as_array().unwrap().is_empty()), "a completed turn: {v}");
    }
}

#[test]
#[cfg_attr(realdata_absent, ignore = "../shared/realdata is absent")]
fn out_dir_holds_the_context_at_each_firing_and_svg_draws_it() {
    let session = root().join("../shared/realdata/claude-code/session-258c7280.jsonl");
    let dir = tempfile::tempdir().unwrap();
    let (out, svg) = (dir.path().join("firings"), dir.path().join("replay.svg"));
    let written = run(&[
        "replay",
        "--profile",
        "claude-code",
        path_str(&session),
        "--out-dir",
        path_str(&out),
        "--svg",
        path_str(&svg),
    ]);
    assert!(written.status.success(), "{}", stderr(&written));
    let (rows, _) = replay(&["--profile", "claude-code", path_str(&session)]);
    let firings: Vec<u64> = rows.iter().filter(|r| r["fired"] == true).map(|r| r["call"].as_u64().unwrap()).collect();
    assert!(!firings.is_empty());
    let folders: Vec<String> = std::fs::read_dir(out.join("session-258c7280"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(folders.len(), firings.len(), "{folders:?}");
    for call in firings {
        let folder = out.join("session-258c7280").join(format!("call-{call}"));
        let d: Value = serde_json::from_str(&std::fs::read_to_string(folder.join("decision.json")).unwrap()).unwrap();
        assert!(["history_fallback", "local_checkpoint"].contains(&d["action"].as_str().unwrap()), "{d}");
        // It describes the firing: the profile's path and figures, an automatic trigger.
        let row = rows.iter().find(|r| r["fired"] == true && r["call"] == call).unwrap();
        assert_eq!((d["path"].as_str(), d["trigger"].as_str()), (Some("conversation"), Some("auto")), "{d}");
        assert_eq!(
            (&d["used"], &d["limit"], &d["trigger_tokens"]),
            (&row["used"], &row["limit"], &row["fires_at"]),
            "{d}"
        );
        let codes: Vec<&str> = d["reasons"].as_array().unwrap().iter().map(|r| r["code"].as_str().unwrap()).collect();
        assert!(!codes.contains(&"max_total_tokens_unknown"), "{d}");
        // The compacted context reads back as a valid transcript, shorter than the session.
        let t = folder.join("transcript.jsonl");
        let v = run(&["validate", path_str(&t)]);
        assert_eq!(v.status.code(), Some(0), "{}{}", stdout(&v), stderr(&v));
        let kept = std::fs::read_to_string(&t).unwrap().lines().filter(|l| l.contains("\"type\":\"message\"")).count();
        assert!(kept < 20, "the history was compacted to a bounded context: {kept} messages");
        assert!(folder.join("summary.md").is_file() && folder.join("reanchor.md").is_file());
    }
    let picture = std::fs::read_to_string(&svg).unwrap();
    assert!(picture.starts_with("<svg ") && picture.trim_end().ends_with("</svg>"));
    for label in ["trigger: fires at 167000", "auto compaction at call", "predicted firing, call", "model call"] {
        assert!(picture.contains(label), "the picture labels {label:?}");
    }
    assert_eq!(picture.matches("<polyline").count(), 1);
}

#[test]
fn a_pretty_printed_trajectory_of_any_size_is_detected_on_stdin() {
    // A long `trajectory` first: `history` comes long after the sniffed head.
    let long = "x".repeat(200_000);
    let traj = serde_json::json!({
        "trajectory": [{"action": "ls", "observation": long, "thought": "look"}],
        "history": [
            {"role": "system", "content": "You are a programmer."},
            {"role": "user", "content": "Fix it."},
            {"role": "assistant", "content": "ls", "action": "ls"},
            {"role": "user", "content": "a.py"}
        ],
        "info": {}
    });
    let text = serde_json::to_string_pretty(&traj).unwrap();
    let (_d, path) = temp_file("t", text.as_bytes());
    let o = crate::support::cmd().args(["decide", "--json", "-"]).pipe_stdin(&path).unwrap().output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let d: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(d["input_format"], "swe-agent");
}

#[test]
fn a_file_no_format_fits_names_the_formats_tried() {
    let (_d, path) = temp_file("chat.jsonl", b"{\"role\":\"user\",\"content\":\"hi\"}\n");
    let o = run(&["replay", path_str(&path)]);
    assert_eq!(o.status.code(), Some(3));
    let e = stderr(&o);
    assert!(
        e.contains("chat.jsonl:1:1:")
            && e.contains("tried openhands, swe-agent, codex, gemini-cli, claude-code, openai, rivumi"),
        "{e}"
    );
    assert!(e.contains("--input-format") && e.lines().count() == 1, "{e}");
}

#[test]
fn replay_finds_the_compaction_run_itself_wrote() {
    let case = "testdata/cases/fallback-applied/input.jsonl";
    let (rows, summary) = replay(&[case]);
    assert_eq!(rows.iter().filter(|r| r["fired"] == true).count(), 1);
    assert_eq!(summary["recorded_auto"], 0);
    let compacted = run(&["run", case]);
    let (_d, path) = temp_file("compacted.jsonl", &compacted.stdout);
    let (rows, summary) = replay(&[path_str(&path)]);
    let recorded: Vec<&Value> = rows.iter().filter(|r| !r["recorded"].is_null()).collect();
    assert_eq!(recorded.len(), 1, "the reminder and the re-anchor are one compaction: {rows:?}");
    assert_eq!((summary["recorded_auto"].as_u64(), summary["predicted_within_one_call"].as_u64()), (Some(1), Some(1)));
}

#[test]
fn svg_and_out_dir_naming_one_path_is_a_usage_error_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("firings");
    let same = dir.path().join(".").join("firings");
    let o = run(&[
        "replay",
        "testdata/cases/fallback-applied/input.jsonl",
        "--out-dir",
        path_str(&out),
        "--svg",
        path_str(&same),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--svg and --out-dir name the same path"), "{}", stderr(&o));
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none(), "something was written");
}

/// A file without usage (a Gemini CLI saved chat) gives the gemini-cli profile's figure
/// nothing to read: the tool's own estimate stands in for it, said to be one (it was 0
/// at every call, and nothing could ever fire).
#[test]
fn a_file_without_usage_replays_on_the_tools_estimate() {
    const SAVED: &str = "testdata/cases/gemini-cli-saved-chat/input.jsonl";
    let (points, summary) = replay(&[SAVED]);
    assert_eq!(summary["profile"], "gemini-cli");
    assert!(!points.is_empty());
    assert!(points.iter().all(|p| p["estimated"] == true && p["used"].as_u64().unwrap() > 0), "{points:?}");
    let used: Vec<u64> = points.iter().map(|p| p["used"].as_u64().unwrap()).collect();
    assert!(used.windows(2).all(|w| w[0] <= w[1]), "the history only grows: {used:?}");
    // A threshold low enough fires on it.
    let (points, _) = replay(&[SAVED, "--threshold", "0.001"]);
    assert!(points.iter().any(|p| p["fired"] == true), "{points:?}");
}

/// Claude Code 2.1.337 places its trigger against an auto-compact window of 400,000
/// when the model's window is larger (measured: claude-opus-5-5 compacts at 367,000,
/// where 2.1.332 compacted at 967,000); a 200,000 window is as it was. The session's
/// recorded version picks the row, and the key can be set like any other.
#[test]
fn claude_code_from_2_1_337_compacts_against_an_auto_compact_window_of_400k() {
    let text = std::fs::read_to_string(root().join(MANUAL)).unwrap();
    let fires_at = |version: &str, model: &str, extra: &[&str]| {
        let changed = text
            .replace("\"version\":\"2.1.0\"", &format!("\"version\":\"{version}\""))
            .replace("claude-sonnet-4-5", model);
        let (_d, path) = temp_file("s.jsonl", changed.as_bytes());
        let (rows, _) = replay(&[&[path_str(&path)], extra].concat());
        rows[0]["fires_at"].as_u64().unwrap()
    };
    assert_eq!(fires_at("2.1.332", "claude-opus-5-5", &[]), 967_000);
    assert_eq!(fires_at("2.1.337", "claude-opus-5-5", &[]), 367_000);
    assert_eq!(fires_at("2.1.340", "claude-opus-5-5", &[]), 367_000);
    assert_eq!(fires_at("2.1.337", "claude-sonnet-4-5", &[]), 167_000);
    let (_c, config) = temp_file("c.json", br#"{"trigger": {"auto_compact_window": 1000000}}"#);
    assert_eq!(
        fires_at("2.1.337", "claude-opus-5-5", &["--config", path_str(&config)]),
        967_000,
        "a user's own window"
    );
}

/// A recorded auto compaction above the profile's trigger (the agent's own window was
/// larger: Claude Code's auto-compact window comes from its server or the user) is a
/// miss that says which key would place the trigger where the agent had it.
#[test]
#[cfg_attr(realdata_absent, ignore = "../shared/realdata is absent")]
fn a_compaction_recorded_above_the_trigger_names_the_window_key() {
    let f = root().join("../shared/realdata/claude-code/session-258c7280.jsonl");
    let (_c, config) = temp_file("c.json", br#"{"trigger": {"auto_compact_window": 100000}}"#);
    let o = run(&["replay", path_str(&f), "--config", path_str(&config)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("fires at 67000 of 200000"), "{out}");
    assert!(out.contains("recorded above the profile's trigger (167212 > 67000)"), "{out}");
    assert!(out.contains("set trigger.auto_compact_window (--config)"), "{out}");
    let o = run(&["replay", path_str(&f)]);
    assert!(!stdout(&o).contains("recorded above"), "{}", stdout(&o));
}
