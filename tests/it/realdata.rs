//! Real transcripts from public projects, read in place from `../shared/realdata`
//! (never copied here). Marked ignored, with the reason, when that folder is absent
//! (a user's clone; see build.rs); `.ci/run` refuses to run without it, so in CI these
//! always run.

use crate::support::{root, run, stderr, stdout};
use std::path::PathBuf;

fn realdata() -> PathBuf {
    let dir = root().join("../shared/realdata");
    assert!(dir.is_dir(), "../shared/realdata is absent: these tests are ignored without it (build.rs)");
    dir
}

fn files(dir: &std::path::Path, sub: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir.join(sub)).unwrap().map(|e| e.unwrap().path()).collect();
    v.sort();
    v
}

fn settings() -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_snapshot_path(root().join("snapshots"));
    s.set_prepend_module_to_snapshot(false);
    s
}

/// Items, warnings and the decision for one real file, as text to pin.
fn summary(path: &std::path::Path) -> String {
    let p = path.to_str().unwrap();
    let d = run(&["decide", "--json", p]);
    assert!(d.status.success(), "{p}: {}", stderr(&d));
    let canonical = run(&["run", p, "--runtime", "agent-runner", "--max-total-tokens", "999999999999"]);
    assert!(canonical.status.success(), "{p}: {}", stderr(&canonical));
    let text = stdout(&canonical);
    let count = |ty: &str| text.lines().filter(|l| l.contains(&format!("{{\"type\":\"{ty}\""))).count();
    let warnings: Vec<String> = stderr(&d).lines().map(|l| l.replace(p, "FILE")).collect();
    format!(
        "messages: {}\ntool_results: {}\nevents: {}\nwarnings:\n{}\ndecision:\n{}",
        count("message"),
        count("tool_result"),
        count("event"),
        warnings.join("\n"),
        stdout(&d)
    )
}

#[test]
#[cfg_attr(realdata_absent, ignore = "../shared/realdata is absent")]
fn every_real_file_imports_and_decides() {
    let dir = realdata();
    settings().bind(|| {
        for sub in ["claude-code", "codex", "swe-agent", "openhands"] {
            for path in files(&dir, sub) {
                let name = format!("realdata-{sub}-{}", path.file_stem().unwrap().to_string_lossy());
                insta::assert_snapshot!(name, summary(&path));
            }
        }
    });
}

#[test]
#[cfg_attr(realdata_absent, ignore = "../shared/realdata is absent")]
fn claude_code_sessions_are_past_their_auto_compaction() {
    let dir = realdata();
    for name in ["session-258c7280.jsonl", "session-8463c716.jsonl"] {
        let p = dir.join("claude-code").join(name);
        let o = run(&["run", p.to_str().unwrap(), "--runtime", "agent-runner", "--max-total-tokens", "999999999999"]);
        let text = stdout(&o);
        assert_eq!(text.matches("\"name\":\"compaction_completed\"").count(), 1, "{name}: one real auto-compaction");
        let d: serde_json::Value =
            serde_json::from_slice(&run(&["decide", "--json", p.to_str().unwrap()]).stdout).unwrap();
        assert_eq!(d["path"], "conversation");
        assert_eq!(d["input_format"], "claude-code");
        // FORMAT-NOTES: the last assistant usage on the leaf path is 77419 and 132649.
        let expected = if name.starts_with("session-258c") { 77_419 } else { 132_649 };
        assert_eq!(d["used"], expected, "{name}: occupancy after the boundary");
    }
}

#[test]
#[cfg_attr(realdata_absent, ignore = "../shared/realdata is absent")]
fn agent_runner_fallback_on_a_claude_code_session_lists_real_edits() {
    let dir = realdata();
    let p = dir.join("claude-code/session-258c7280.jsonl");
    let args = ["run", "--input-format", "claude-code", "--runtime", "agent-runner", "--max-total-tokens", "5000000"];
    let o = run(&[&args[..], &[p.to_str().unwrap(), "--emit", "reanchor"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    // Both were written with Write/Edit in this session (relative to its cwd).
    assert!(text.contains("- lib/spotter/services/review_context_builder.ex\n"), "{text}");
    assert!(text.contains("- test/spotter_web/live/project_review_live_test.exs\n"), "{text}");
    assert!(!text.contains("/home/USER/projects/spotter-worktrees/spotter-gqc/lib"), "paths are relative to cwd");
    settings().bind(|| insta::assert_snapshot!("realdata-claude-code-258c-agent-runner-reanchor", text));
}

#[test]
#[cfg_attr(realdata_absent, ignore = "../shared/realdata is absent")]
fn occupancy_at_the_boundary_matches_claude_codes_pre_tokens() {
    let dir = realdata();
    // FORMAT-NOTES: compactMetadata.preTokens is 167094 and 167731; Claude Code measures
    // the last reported usage plus the tool results after it, as SPEC 3 does.
    for (name, pre_tokens) in [("session-258c7280.jsonl", "167094"), ("session-8463c716.jsonl", "167731")] {
        let p = dir.join("claude-code").join(name);
        let o = run(&["decide", p.to_str().unwrap()]);
        let text = stdout(&o);
        let row = text.lines().find(|l| l.trim_end().ends_with(pre_tokens));
        assert!(row.is_some(), "{name}: no turn ends at preTokens {pre_tokens}:\n{text}");
        assert!(text.contains("after compaction claude-compact-1"), "{text}");
    }
}

/// OpenHands before V1 kept a conversation in its file store as
/// `sessions/<id>/events/<event id>.json` (with `metadata.json` and pages of events in
/// `event_cache/` beside them). Laid out so from each real event list, the conversation
/// folder is one transcript with the same items as the list, and a folder of sessions
/// gives one input each (the cached pages are not read again as transcripts).
#[test]
#[cfg_attr(realdata_absent, ignore = "../shared/realdata is absent")]
fn a_session_folder_of_openhands_before_v1_reads_as_its_event_list() {
    let dir = realdata();
    let store = tempfile::tempdir().unwrap();
    let lists = files(&dir, "openhands");
    for list in &lists {
        let events: Vec<serde_json::Value> = serde_json::from_slice(&std::fs::read(list).unwrap()).unwrap();
        let session = store.path().join("sessions").join(list.file_stem().unwrap());
        std::fs::create_dir_all(session.join("events")).unwrap();
        std::fs::create_dir_all(session.join("event_cache")).unwrap();
        for e in &events {
            let name = format!("{}.json", e["id"].as_u64().unwrap());
            std::fs::write(session.join("events").join(name), serde_json::to_vec(e).unwrap()).unwrap();
        }
        // A page holds some of the events only (OpenHands writes one per 25 events).
        let half = events.len() / 2;
        let page: Vec<&serde_json::Value> = events.iter().take(half).collect();
        let page_name = format!("event_cache/0-{half}.json");
        std::fs::write(session.join(page_name), serde_json::to_vec(&page).unwrap()).unwrap();
        std::fs::write(session.join("metadata.json"), br#"{"conversation_id": "c", "title": "t"}"#).unwrap();
        let items = |p: &std::path::Path| {
            let o = run(&["run", p.to_str().unwrap()]);
            assert!(o.status.success(), "{}: {}", p.display(), stderr(&o));
            stdout(&o).lines().skip(1).map(str::to_string).collect::<Vec<_>>()
        };
        assert_eq!(items(&session), items(list), "{}", list.display());
    }
    let o = run(&["stats", "--json", store.path().join("sessions").to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["transcripts"], lists.len(), "{v}");
}
