//! Batches: directories and globs, mirrored out-dir layout, one bad file among good
//! ones, identical output whatever --jobs is, inputs never overwritten, stats.

use crate::support::{path_str, root, run, stderr, stdout};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;

fn tree(dir: &Path) {
    let cases = root().join("testdata/cases");
    for (name, to) in [
        ("fallback-applied", "a/one.jsonl"),
        ("below-threshold", "a/b/two.jsonl"),
        ("conversation-native-request", "three.jsonl"),
    ] {
        let target = dir.join(to);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::copy(cases.join(name).join("input.jsonl"), target).unwrap();
    }
    std::fs::write(dir.join("notes.txt"), "not a transcript").unwrap();
}

fn listing(dir: &Path) -> Vec<String> {
    let mut v = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                v.push(p.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    v.sort();
    v
}

#[test]
fn a_directory_is_mirrored_under_out_dir_and_jobs_do_not_change_bytes() {
    let input = tempfile::tempdir().unwrap();
    tree(input.path());
    let out1 = tempfile::tempdir().unwrap();
    let out2 = tempfile::tempdir().unwrap();
    let o = run(&["run", path_str(input.path()), "--out-dir", path_str(out1.path()), "--jobs", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).ends_with("rivumi-compact: 3 file(s): 2 compacted, 1 unchanged, 0 failed\n"), "{}", stderr(&o));
    let files = listing(out1.path());
    assert!(
        files.contains(&"a/one/reanchor.md".to_string()) && files.contains(&"a/b/two/decision.json".to_string()),
        "{files:?}"
    );
    assert!(files.contains(&"three/transcript.jsonl".to_string()), "{files:?}");
    assert!(!files.iter().any(|f| f.contains(".tmp") || f.contains("notes")), "{files:?}");
    let o = run(&["run", path_str(input.path()), "--out-dir", path_str(out2.path()), "--jobs", "2"]);
    assert!(o.status.success());
    assert_eq!(files, listing(out2.path()));
    for f in &files {
        assert_eq!(std::fs::read(out1.path().join(f)).unwrap(), std::fs::read(out2.path().join(f)).unwrap(), "{f}");
    }
}

#[test]
fn one_bad_file_is_reported_and_the_others_are_written() {
    let input = tempfile::tempdir().unwrap();
    tree(input.path());
    std::fs::write(input.path().join("a/broken.jsonl"), "{\"type\":\"message\",\n").unwrap();
    let out = input.path().join("out"); // inside the input tree: never read back
    let o = run(&["run", path_str(input.path()), "--out-dir", path_str(&out)]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert!(stderr(&o).contains("a/broken.jsonl:1:18: EOF while parsing"), "{}", stderr(&o));
    assert!(stderr(&o).contains("4 file(s): 2 compacted, 1 unchanged, 1 failed"), "{}", stderr(&o));
    assert!(out.join("a/one/transcript.jsonl").exists() && !out.join("a/broken").exists());
    // A second run over the same tree does not pick up its own outputs.
    let o = run(&["run", path_str(input.path()), "--out-dir", path_str(&out)]);
    assert!(stderr(&o).contains("4 file(s)"), "{}", stderr(&o));
}

#[test]
fn globs_and_shared_folders() {
    let input = tempfile::tempdir().unwrap();
    tree(input.path());
    let out = tempfile::tempdir().unwrap();
    let glob = format!("{}/**/*.jsonl", input.path().display());
    let o = run(&["run", &glob, "--out-dir", path_str(out.path())]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(out.path().join("a/b/two/journal.jsonl").exists());
    // Two inputs that would share a folder: a usage error before anything is written.
    let fresh = tempfile::tempdir().unwrap();
    let a = input.path().join("a/one.jsonl");
    let b = input.path().join("a/b/one.jsonl");
    std::fs::copy(&a, &b).unwrap();
    let o = run(&["run", path_str(&a), path_str(&b), "--out-dir", path_str(fresh.path())]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("would share the output folder one"), "{}", stderr(&o));
    assert!(listing(fresh.path()).is_empty());
}

#[test]
fn an_output_never_overwrites_an_input() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("x/transcript.jsonl");
    std::fs::create_dir_all(input.parent().unwrap()).unwrap();
    std::fs::copy(root().join("testdata/cases/fallback-applied/input.jsonl"), &input).unwrap();
    let before = std::fs::read(&input).unwrap();
    // Out-dir DIR/<stem>/transcript.jsonl with DIR = the parent of x and stem x: the input itself.
    let renamed = dir.path().join("x.jsonl");
    std::fs::copy(&input, &renamed).unwrap();
    let o = run(&["run", path_str(&renamed), path_str(&input), "--out-dir", path_str(dir.path())]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("would overwrite the input"), "{}", stderr(&o));
    assert_eq!(std::fs::read(&input).unwrap(), before);
}

#[test]
fn stats_totals() {
    let input = tempfile::tempdir().unwrap();
    tree(input.path());
    let o = run(&["stats", path_str(input.path()), "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(s["transcripts"], 3);
    assert_eq!(s["failed"], 0);
    assert_eq!(s["actions"]["history_fallback"], 1);
    assert_eq!(s["actions"]["native_compaction_requested"], 1);
    assert_eq!(s["actions"]["none"], 1);
    // fallback-applied reports 19455 tokens, below-threshold 5000, the native case
    // 3 × 3200 + 8300 + 8600.
    assert_eq!(s["tokens_reported"], 19455 + 5000 + 26500);
    let text = stdout(&run(&["stats", path_str(input.path())]));
    assert!(text.contains("action history_fallback") && text.contains("tokens saved"), "{text}");
}

#[test]
fn sigint_stops_a_batch_cleanly() {
    let input = tempfile::tempdir().unwrap();
    for k in 0..6 {
        std::fs::copy(
            root().join("testdata/cases/fallback-applied/input.jsonl"),
            input.path().join(format!("s{k}.jsonl")),
        )
        .unwrap();
    }
    let out = tempfile::tempdir().unwrap();
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("rivumi-compact"))
        .args(["run", path_str(input.path()), "--out-dir", path_str(out.path()), "--jobs", "1"])
        .args(["--pre-compact-hook", "sleep 1"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupt once the first file is written (polling, so a slow machine is fine).
    let first = out.path().join("s0/transcript.jsonl");
    let start = std::time::Instant::now();
    while !first.exists() && start.elapsed() < std::time::Duration::from_secs(30) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    unsafe_kill(child.id());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.signal(), Some(2), "dies of the SIGINT it got: {}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not started (interrupted)"));
    let files = listing(out.path());
    assert!(!files.is_empty() && files.len() < 6 * 5, "{files:?}");
    assert!(!files.iter().any(|f| f.contains(".tmp")), "no partial files: {files:?}");
    // Every folder that exists is complete.
    for k in 0..6 {
        let d = out.path().join(format!("s{k}"));
        if d.exists() {
            assert_eq!(std::fs::read_dir(&d).unwrap().count(), 5, "s{k} is incomplete");
        }
    }
}

fn unsafe_kill(pid: u32) {
    let status = std::process::Command::new("kill").args(["-INT", &pid.to_string()]).status().unwrap();
    assert!(status.success());
}

#[test]
fn stdout_closed_early_is_success() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.jsonl");
    let line = r#"{"type":"message","id":"mID","turn":"t","role":"user","content":"a line long enough to fill a pipe buffer quickly, again and again and again"}"#;
    let text: String = (0..50_000).map(|k| format!("{}\n", line.replace("ID", &k.to_string()))).collect();
    std::fs::write(&big, text).unwrap();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("rivumi-compact"))
        .args(["run", path_str(&big)])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut first = [0u8; 10];
    std::io::Read::read_exact(child.stdout.as_mut().unwrap(), &mut first).unwrap();
    drop(child.stdout.take()); // like `head -c 10`
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    assert_eq!(&first, b"{\"type\":\"m");
}

/// The batch is a library function: inputs handed back in input order with what each
/// printed, a bad one failed among good ones, the counts in the summary.
#[test]
fn a_batch_is_a_library_call_that_hands_back_each_input_in_order() {
    use rivumi_compact::engine::Settings;
    use rivumi_compact::formats::InputFormat;
    use rivumi_compact::output::Output;
    use rivumi_compact::run::{run_batch, Finished, RunOptions};
    let dir = tempfile::tempdir().unwrap();
    let cases = root().join("testdata/cases");
    let mut args = Vec::new();
    for (k, name) in ["fallback-applied", "below-threshold", "conversation-native-request"].iter().enumerate() {
        let to = dir.path().join(format!("{k}.jsonl"));
        std::fs::copy(cases.join(name).join("input.jsonl"), &to).unwrap();
        args.push(to.display().to_string());
        if k == 0 {
            let bad = dir.path().join("0-bad.jsonl");
            std::fs::write(&bad, "{\"type\":\"message\"\n").unwrap();
            args.push(bad.display().to_string());
        }
    }
    let inputs = rivumi_compact::inputs::expand(&args, InputFormat::Auto, None).unwrap();
    let opts = RunOptions { dry_run: true, emit: Some(Output::Decision), out: None, jobs: 2, progress: false };
    let mut seen = Vec::new();
    let summary = run_batch(&inputs, &Settings::default(), &opts, |f| {
        seen.push(match f {
            Finished::Done { input, emitted, .. } => {
                let line: serde_json::Value = serde_json::from_slice(&emitted).unwrap();
                assert_eq!(line["input"], input.path.display().to_string());
                format!("{} {}", input.display_name().rsplit('/').next().unwrap(), line["action"])
            }
            Finished::Failed { input, error } => {
                format!("{} failed: {error}", input.display_name().rsplit('/').next().unwrap())
            }
            Finished::NotStarted => "not started".into(),
        });
        Ok(())
    })
    .unwrap();
    assert_eq!(seen.len(), 4, "{seen:#?}");
    assert_eq!(seen[0], "0.jsonl \"history_fallback\"", "{seen:#?}");
    assert!(seen[1].starts_with("0-bad.jsonl failed: ") && seen[1].contains(":1:"), "{seen:#?}");
    assert_eq!(seen[2], "1.jsonl \"none\"", "{seen:#?}");
    assert!(seen[3].starts_with("2.jsonl \""), "{seen:#?}");
    assert_eq!(summary.line(), "4 file(s): 2 compacted, 1 unchanged, 1 failed", "{seen:#?}");
}

/// A canonical transcript of more than 4 MB (the size from which the summary and the
/// re-anchor facts are made side by side) with `session` as its first record: edits,
/// reads and a failed edit across many turns, so the facts and the summary both have
/// something to say.
fn large_session(session: &str) -> String {
    let mut s = format!("{session}\n");
    s.push_str(r#"{"type":"message","id":"sys","turn":"t0","role":"system","content":"You are a coding agent."}"#);
    s.push('\n');
    let body = "line of output\\n    indented é → ✓ ".repeat(120);
    let mut k = 0;
    while s.len() < 5 << 20 {
        let (tool, failed) = match k % 3 {
            0 => ("edit_file", k % 7 == 0),
            1 => ("read_file", false),
            _ => ("bash", false),
        };
        s.push_str(&format!(
            "{{\"type\":\"message\",\"id\":\"u{k}\",\"turn\":\"t{k}\",\"role\":\"user\",\"content\":\"Request {k}: fix module {}.\"}}\n\
             {{\"type\":\"message\",\"id\":\"a{k}\",\"turn\":\"t{k}\",\"role\":\"assistant\",\"content\":\"Working on {k}.\",\"tool_calls\":[{{\"id\":\"c{k}\",\"name\":\"{tool}\",\"arguments\":{{\"path\":\"src/m{}.rs\",\"command\":\"cargo test -p m{k}\"}}}}],\"usage\":{{\"input_tokens\":{},\"output_tokens\":50}}}}\n\
             {{\"type\":\"tool_result\",\"id\":\"r{k}\",\"turn\":\"t{k}\",\"call_id\":\"c{k}\",\"name\":\"{tool}\",\"is_error\":{failed},\"content\":\"{body} {k}\"}}\n",
            k % 11,
            k % 40,
            1000 + k
        ));
        k += 1;
    }
    // The last turn ends with an answer (a turn in progress is never checkpointed).
    s.push_str(&format!(
        "{{\"type\":\"message\",\"id\":\"done\",\"turn\":\"t{}\",\"role\":\"assistant\",\"content\":\"Done.\"}}\n",
        k - 1
    ));
    s
}

/// On a large transcript the summary and the re-anchor facts are made side by side when
/// the run may use two threads: every output is the same bytes as with `--jobs 1`, for
/// the agent runner's fallback and for a conversation's checkpoint.
#[test]
fn a_large_transcript_is_compacted_the_same_whatever_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = [
        (r#"{"type":"session","id":"big","task":{"max_total_tokens":200000}}"#, &[][..], "history_fallback"),
        (
            r#"{"type":"session","id":"big","runtime":{"kind":"conversation","native_compaction":false,"context_window":10000}}"#,
            &["--manual"][..],
            "local_checkpoint",
        ),
    ];
    for (k, (session, args, action)) in sessions.into_iter().enumerate() {
        let input = dir.path().join(format!("large-{k}.jsonl"));
        std::fs::write(&input, large_session(session)).unwrap();
        let outs: Vec<_> = ["1", "2"]
            .iter()
            .map(|jobs| {
                let out = dir.path().join(format!("out-{k}-{jobs}"));
                let o =
                    run(&[&["run", path_str(&input), "--out-dir", path_str(&out), "--jobs", jobs][..], args].concat());
                assert!(o.status.success(), "{}", stderr(&o));
                assert!(stderr(&o).contains(&format!("-> {action}")), "{}", stderr(&o));
                out
            })
            .collect();
        let files = listing(&outs[0]);
        for want in ["summary.md", "reanchor.md", "transcript.jsonl", "decision.json"] {
            assert!(files.contains(&format!("large-{k}/{want}")), "{files:?}");
        }
        assert_eq!(files, listing(&outs[1]));
        for f in &files {
            let (one, two) = (std::fs::read(outs[0].join(f)).unwrap(), std::fs::read(outs[1].join(f)).unwrap());
            assert!(one == two, "{f} differs between --jobs 1 and --jobs 2");
        }
        // The facts saw the edits.
        let reanchor = std::fs::read_to_string(outs[0].join(format!("large-{k}/reanchor.md"))).unwrap();
        assert!(reanchor.contains("src/m"), "{reanchor}");
    }
}
