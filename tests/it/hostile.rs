//! Hostile conditions (SPEC 9 and 11, issue #10), one test per class of fault, with
//! the files made at test time: names that point outside `--out-dir`, symbolic links,
//! loops, FIFOs and process substitution, unending inputs, signals, closed pipes,
//! terminal escapes in file names and keys, and commands named by untrusted cases.

use crate::support::{cmd, path_str, root, run, stderr, stdout};
use std::os::unix::fs::{symlink, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const FALLBACK: &str = "testdata/cases/fallback-applied/input.jsonl";

fn bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("rivumi-compact")
}

fn fallback() -> Vec<u8> {
    std::fs::read(root().join(FALLBACK)).unwrap()
}

/// Every file below `dir`, relative, sorted (symbolic links listed, not followed).
fn files(dir: &Path) -> Vec<String> {
    let mut v = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                stack.push(p);
            } else {
                v.push(p.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    v.sort();
    v
}

fn no_temporaries(dir: &Path) {
    let all = files(dir);
    assert!(
        !all.iter().any(|f| f.contains(".rivumi-") || std::path::Path::new(f).extension().is_some_and(|e| e == "tmp")),
        "temporary files left: {all:?}"
    );
}

/// Runs the binary through `sh -c` (for pipes, limits and umask).
fn sh(script: &str) -> std::process::Output {
    Command::new("sh").arg("-c").arg(script).env("B", bin()).env("NO_COLOR", "1").current_dir(root()).output().unwrap()
}

fn mkfifo(path: &Path) {
    assert!(Command::new("mkfifo").arg(path).status().unwrap().success());
}

/// Writes `bytes` into a FIFO from a thread (the reader opens it).
fn feed(fifo: &Path, bytes: Vec<u8>) -> std::thread::JoinHandle<()> {
    let fifo = fifo.to_path_buf();
    std::thread::spawn(move || {
        let _ = std::fs::write(fifo, bytes);
    })
}

// 1. No write outside DIR, never over an input.

#[test]
fn names_that_would_be_dot_or_dotdot_stay_inside_out_dir() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = dir.path().join("in");
    std::fs::create_dir(&inputs).unwrap();
    for name in ["...jsonl", "..jsonl", ".jsonl"] {
        std::fs::write(inputs.join(name), fallback()).unwrap();
    }
    let out = dir.path().join("deep/out");
    let mut args = vec!["run".to_string(), "--out-dir".into(), path_str(&out).into()];
    args.extend(["...jsonl", "..jsonl", ".jsonl"].iter().map(|n| path_str(&inputs.join(n)).to_string()));
    let o = cmd().args(&args).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    // Nothing beside the out-dir, nothing in its parent; each input has its own folder.
    assert_eq!(files(&dir.path().join("deep")).iter().filter(|f| !f.starts_with("out/")).count(), 0);
    let made = files(&out);
    for folder in ["_...jsonl", "_..jsonl", ".jsonl"] {
        assert!(made.contains(&format!("{folder}/transcript.jsonl")), "{folder}: {made:?}");
    }
    // The same through a directory walk and a glob whose root holds `..`.
    let out2 = dir.path().join("out2");
    let glob = format!("{}/../in/*.jsonl", inputs.display());
    let o = run(&["run", &glob, "--out-dir", path_str(&out2)]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(files(&out2).len(), 15, "{:?}", files(&out2));
    assert!(files(&out2).iter().all(|f| f.starts_with('_') || f.starts_with(".jsonl/")));
}

#[test]
fn an_input_reached_through_a_link_is_never_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    // The real file sits where `link.jsonl`'s outputs would go: out/link/transcript.jsonl.
    std::fs::create_dir_all(out.join("link")).unwrap();
    let real = out.join("link/transcript.jsonl");
    std::fs::write(&real, fallback()).unwrap();
    let link = dir.path().join("link.jsonl");
    symlink(&real, &link).unwrap();
    let o = run(&["run", path_str(&link), "--out-dir", path_str(&out)]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("would overwrite the input"), "{}", stderr(&o));
    assert_eq!(std::fs::read(&real).unwrap(), fallback());
    assert_eq!(files(&out), vec!["link/transcript.jsonl"]);
}

#[test]
fn a_symbolic_link_inside_out_dir_is_not_written_through() {
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = dir.path().join("elsewhere");
    let out = dir.path().join("out");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::create_dir_all(&out).unwrap();
    symlink(&elsewhere, out.join("a")).unwrap(); // out/a -> elsewhere
    symlink(&elsewhere, out.join("sub")).unwrap(); // out/sub -> elsewhere, as a parent
    let inputs = dir.path().join("in");
    std::fs::create_dir_all(inputs.join("sub")).unwrap();
    std::fs::write(inputs.join("a.jsonl"), fallback()).unwrap();
    std::fs::write(inputs.join("sub/b.jsonl"), fallback()).unwrap();
    std::fs::write(inputs.join("c.jsonl"), fallback()).unwrap();
    let o = run(&["run", path_str(&inputs), "--out-dir", path_str(&out)]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("a: not written: it is a symbolic link"), "{err}");
    assert!(err.contains("sub/b: not written: a symbolic link leads out of --out-dir"), "{err}");
    assert!(files(&elsewhere).is_empty(), "{:?}", files(&elsewhere));
    assert!(out.join("c/transcript.jsonl").is_file(), "the other input is still written");
}

/// Parents of output folders are resolved once a run; one that another process swaps
/// for a link while the batch goes on (here a pre-compact hook, between two inputs) is
/// seen before the next write and is not written through.
#[test]
fn a_parent_swapped_for_a_link_during_the_batch_is_not_written_through() {
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let inputs = dir.path().join("in");
    std::fs::create_dir_all(inputs.join("sub")).unwrap();
    std::fs::write(inputs.join("sub/a.jsonl"), fallback()).unwrap();
    std::fs::write(inputs.join("sub/b.jsonl"), fallback()).unwrap();
    let out = dir.path().join("out");
    // Before the second input's fallback: out/sub (written by the first) becomes a link.
    let hook = format!(
        "if [ -d {sub} ] && [ ! -L {sub} ]; then mv {sub} {moved} && ln -s {elsewhere} {sub}; fi",
        sub = path_str(&out.join("sub")),
        moved = path_str(&out.join("moved")),
        elsewhere = path_str(&elsewhere)
    );
    let o = run(&["run", path_str(&inputs), "--out-dir", path_str(&out), "--jobs", "1", "--pre-compact-hook", &hook]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(4), "{err}");
    assert!(out.join("moved/a/transcript.jsonl").is_file(), "the first input was written before the swap: {err}");
    assert!(err.contains("sub/b: not written: a symbolic link leads out of --out-dir"), "{err}");
    assert!(files(&elsewhere).is_empty(), "{:?}", files(&elsewhere));
}

#[test]
fn bless_never_writes_through_a_symbolic_link() {
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("input.jsonl"), fallback()).unwrap();
    std::fs::write(outside.join("decision.json"), "stale\n").unwrap();
    let cases = dir.path().join("cases");
    std::fs::create_dir_all(cases.join("own")).unwrap();
    symlink(&outside, cases.join("linked")).unwrap();
    std::fs::write(cases.join("own/input.jsonl"), fallback()).unwrap();
    let target = dir.path().join("target.json");
    std::fs::write(&target, "mine\n").unwrap();
    symlink(&target, cases.join("own/decision.json")).unwrap();
    let o = run(&["check", "--bless", path_str(&cases)]);
    assert_eq!(o.status.code(), Some(3), "{}{}", stdout(&o), stderr(&o));
    let report = stdout(&o);
    assert!(
        report.contains("linked: error:") && report.contains("symbolic link out of the checked folder"),
        "{report}"
    );
    // An expected file that links out of DIR is not even read.
    assert!(report.contains("own: error:") && report.contains("a link out of the checked folder"), "{report}");
    assert_eq!(std::fs::read_to_string(outside.join("decision.json")).unwrap(), "stale\n");
    assert_eq!(files(&outside), vec!["decision.json", "input.jsonl"]);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "mine\n");
}

// 2. Pipes are read once.

#[test]
fn fifos_and_process_substitution_give_the_bytes_of_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe.jsonl");
    mkfifo(&fifo);
    let cases = [
        (FALLBACK, vec!["run"]),
        (FALLBACK, vec!["decide", "--json"]),
        (FALLBACK, vec!["config", "--json"]),
        (FALLBACK, vec!["validate"]),
        (FALLBACK, vec!["stats", "--json"]),
        ("testdata/cases/claude-code-compact-boundary/input.jsonl", vec!["run"]),
        ("testdata/dataset/conversations.jsonl", vec!["run", "--max-total-tokens", "50"]),
        ("testdata/dataset/conversations.jsonl", vec!["stats", "--json"]),
    ];
    for (file, args) in cases {
        let bytes = std::fs::read(root().join(file)).unwrap();
        let expected = cmd().args(&args).arg(file).output().unwrap();
        let writer = feed(&fifo, bytes.clone());
        let piped = cmd().args(&args).arg(&fifo).output().unwrap();
        writer.join().unwrap();
        let from_stdin = cmd().args(&args).arg("-").write_stdin(bytes).output().unwrap();
        for got in [&piped, &from_stdin] {
            assert_eq!(got.status.code(), expected.status.code(), "{args:?} {file}: {}", stderr(got));
            // `config` names the file it read; every other output is the same bytes.
            if args[0] != "validate" {
                assert_eq!(stdout(got), stdout(&expected), "{args:?} {file}");
            }
        }
    }
    let o = sh(&format!("bash -c '\"$B\" run <(cat {FALLBACK})' | md5sum; \"$B\" run {FALLBACK} | md5sum"));
    let sums: Vec<&str> = std::str::from_utf8(&o.stdout).unwrap().lines().collect();
    assert_eq!(sums.len(), 2);
    assert_eq!(sums[0], sums[1], "process substitution reads the same bytes");
}

#[test]
fn a_first_line_longer_than_the_sniffed_head_is_detected() {
    let first = r#"{"parentUuid":null,"isSidechain":false,"sessionId":"s1","type":"user","uuid":"u1","cwd":"/w","message":{"role":"user","content":"PAD"}}"#;
    let second = r#"{"parentUuid":"u1","isSidechain":false,"sessionId":"s1","type":"assistant","uuid":"u2","cwd":"/w","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"done"}],"usage":{"input_tokens":10,"output_tokens":5}}}"#;
    let text = format!("{}\n{second}\n", first.replace("PAD", &"x".repeat(200_000)));
    let (_d, path) = crate::support::temp_file("long.jsonl", text.as_bytes());
    for input in [path_str(&path), "-"] {
        let o = cmd().args(["decide", "--json", input]).write_stdin(text.clone()).output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        let d: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(d["input_format"], "claude-code", "{input}");
    }
}

// 3. Walks end.

#[test]
fn loops_fifos_and_unreadable_entries_do_not_stop_a_walk() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = dir.path().join("in");
    std::fs::create_dir_all(inputs.join("sub")).unwrap();
    std::fs::write(inputs.join("a.jsonl"), fallback()).unwrap();
    std::fs::write(inputs.join("sub/b.jsonl"), fallback()).unwrap();
    symlink(&inputs, inputs.join("sub/loop")).unwrap();
    symlink(inputs.join("missing.jsonl"), inputs.join("dangling.jsonl")).unwrap();
    mkfifo(&inputs.join("fifo.jsonl")); // no writer: reading it would hang
    let out = dir.path().join("out");
    let mut child = Command::new(bin())
        .args(["run", path_str(&inputs), "--out-dir", path_str(&out)])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(start.elapsed() < Duration::from_secs(30), "the walk did not end");
        std::thread::sleep(Duration::from_millis(20));
    }
    let o = child.wait_with_output().unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(4), "{err}");
    assert!(err.contains("sub/loop: skipped: a symbolic link loop"), "{err}");
    assert!(err.contains("fifo.jsonl: skipped: not a regular file"), "{err}");
    assert!(err.contains("dangling.jsonl: cannot read:"), "{err}");
    assert!(err.contains("3 file(s): 2 compacted, 0 unchanged, 1 failed"), "{err}");
    assert_eq!(files(&out).len(), 10, "each file processed once: {:?}", files(&out));
}

#[test]
fn check_walks_a_case_folder_with_a_loop_once() {
    let dir = tempfile::tempdir().unwrap();
    let case = dir.path().join("cases/one");
    std::fs::create_dir_all(&case).unwrap();
    std::fs::copy(root().join(FALLBACK), case.join("input.jsonl")).unwrap();
    symlink(dir.path().join("cases"), case.join("loop")).unwrap();
    let o = run(&["check", "--bless", path_str(&dir.path().join("cases"))]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).ends_with("1 case(s), 1 blessed\n"), "{}", stdout(&o));
    assert!(stderr(&o).contains("skipped: a symbolic link"), "{}", stderr(&o));
}

// 4. No crash.

#[test]
fn a_closed_stderr_is_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    for k in 0..300 {
        let text = "{\"type\":\"odd\"}\n{\"type\":\"message\",\"id\":\"m\",\"turn\":\"t\",\"role\":\"user\",\"content\":\"x\"}\n";
        std::fs::write(dir.path().join(format!("u{k:03}.jsonl")), text).unwrap();
    }
    // Every file warns about its unknown record; `head -1` closes the pipe after one line.
    let o = sh(&format!("\"$B\" run --dry-run {} 2>&1 >/dev/null | head -1; exit $(( $? ))", dir.path().display()));
    assert_eq!(stdout(&o).lines().count(), 1);
    let o = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "\"$B\" run --dry-run {} 2>&1 | head -1 >/dev/null; echo \"${{PIPESTATUS[0]}}\"",
            dir.path().display()
        ))
        .env("B", bin())
        .output()
        .unwrap();
    assert_eq!(stdout(&o).trim(), "0", "no panic (101) when stderr is closed");
}

#[test]
fn a_file_truncated_during_a_run_is_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.jsonl");
    let line = r#"{"type":"message","id":"mID","turn":"t","role":"user","content":"some text that fills the file up"}"#;
    let text: String = (0..400_000).map(|k| format!("{}\n", line.replace("ID", &k.to_string()))).collect();
    std::fs::write(&big, &text).unwrap();
    let child =
        Command::new(bin()).args(["run", path_str(&big)]).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    std::fs::OpenOptions::new().write(true).open(&big).unwrap().set_len(10).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_ne!(o.status.signal(), Some(libc_sigbus()), "SIGBUS");
    assert!(o.status.code().is_some(), "ended by {:?}", o.status.signal());
}

fn libc_sigbus() -> i32 {
    7
}

#[test]
fn jobs_far_above_the_machine_are_capped() {
    let o = run(&["run", "--dry-run", "--jobs", "1000000", FALLBACK, "testdata/cases/below-threshold/input.jsonl"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("--jobs 1000000: this machine has"), "{}", stderr(&o));
}

#[test]
fn usage_sums_saturate_and_numbers_past_64_bits_are_bad_input() {
    let big = 1u64 << 63;
    let text = format!(
        "{{\"type\":\"session\",\"id\":\"s\",\"task\":{{\"max_total_tokens\":100}}}}\n\
         {{\"type\":\"message\",\"id\":\"u\",\"turn\":\"t1\",\"role\":\"user\",\"content\":\"hi\"}}\n\
         {{\"type\":\"message\",\"id\":\"a1\",\"turn\":\"t1\",\"role\":\"assistant\",\"content\":\"x\",\"usage\":{{\"input_tokens\":{big},\"output_tokens\":{big}}}}}\n\
         {{\"type\":\"message\",\"id\":\"a2\",\"turn\":\"t1\",\"role\":\"assistant\",\"content\":\"y\",\"usage\":{{\"input_tokens\":{big}}}}}\n"
    );
    let o = cmd().args(["decide", "--json", "-"]).write_stdin(text.clone()).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let d: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(d["used"], u64::MAX, "saturated, not wrapped");
    assert_eq!(d["action"], "pressure_reminder");
    let past = text.replacen(&big.to_string(), "18446744073709551616", 1);
    let o = cmd().args(["decide", "-"]).write_stdin(past).output().unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("<stdin>:3:") || stderr(&o).contains("-:3:"), "{}", stderr(&o));
}

#[test]
fn a_threshold_with_more_than_four_decimals_is_refused_from_every_layer() {
    let o = run(&["decide", "--threshold", "0.850000000000000000001", FALLBACK]);
    assert_eq!(o.status.code(), Some(2), "flag: {}", stderr(&o));
    let (_d, config) = crate::support::temp_file("c.json", br#"{"threshold": 0.85000000001}"#);
    let o = run(&["decide", "--config", path_str(&config), FALLBACK]);
    assert_eq!(o.status.code(), Some(3), "config file: {}", stderr(&o));
    assert!(stderr(&o).contains("more than 4 decimals"), "{}", stderr(&o));
    let session = "{\"type\":\"session\",\"id\":\"s\",\"threshold\":0.12345}\n";
    let o = cmd().args(["decide", "-"]).write_stdin(session).output().unwrap();
    assert_eq!(o.status.code(), Some(3), "session record: {}", stderr(&o));
    assert!(stderr(&o).contains("more than 4 decimals"), "{}", stderr(&o));
}

#[test]
fn a_broken_line_of_an_unknown_type_is_bad_input() {
    let o = cmd().args(["run", "-"]).write_stdin("{\"type\":\"foo\", broken\n").output().unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("-:1:16: key must be a string"), "{}", stderr(&o));
}

// 5. Bounded memory.

/// Runs a shell script under a 1 GiB address-space limit.
fn bounded(script: &str) -> std::process::Output {
    sh(&format!("ulimit -v 1048576; {script}"))
}

#[test]
fn unending_and_degenerate_inputs_stay_bounded() {
    let start = Instant::now();
    let o = bounded("exec \"$B\" run /dev/zero");
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("/dev/zero:1:1: expected a JSON object"), "{}", stderr(&o));
    let o = bounded("exec \"$B\" run --input-format openai /dev/zero");
    assert_eq!(o.status.code(), Some(3), "dataset mode: {}", stderr(&o));
    let o = bounded("yes '{\"type\":\"event\",\"name\":\"x\"}' | RIVUMI_MAX_INPUT_BYTES=1000000 \"$B\" run -");
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("larger than 1000000 bytes"), "{}", stderr(&o));
    let o =
        bounded("yes '' | head -n 3000000 | RIVUMI_MAX_INPUT_BYTES=1000000 \"$B\" run --input-format openai - | wc -l");
    assert_eq!(o.status.code(), Some(0), "blank dataset lines stream: {}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "3000000", "{}", stderr(&o));
    // One job reads on the thread that compacts; more have a reader thread.
    for jobs in ["1", "2"] {
        // A line longer than the bound is a bad line (exit 4), skipped as it is read and
        // never held; an empty line takes its place, and the lines after it are read.
        let o = bounded(&format!("(head -c 3000000 /dev/zero | tr '\\0' x | sed 's/^/{{\"messages\":\"/'; echo; echo '{{\"messages\":[]}}') | RIVUMI_MAX_INPUT_BYTES=1000000 \"$B\" run --input-format openai --jobs {jobs} -"));
        assert_eq!(o.status.code(), Some(4), "a dataset line without end, {jobs} job(s): {}", stderr(&o));
        assert!(stderr(&o).contains("-:1:1: a line longer than 1000000 bytes"), "{}", stderr(&o));
        assert_eq!(stdout(&o), "\n{\"messages\":[]}\n", "one output line per input line");
    }
    assert!(start.elapsed() < Duration::from_secs(60));
}

#[test]
fn millions_of_blank_lines_are_one_record() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("blank.jsonl");
    let mut text = vec![b'\n'; 30_000_000];
    text.extend_from_slice(
        b"{\"type\":\"message\",\"id\":\"m\",\"turn\":\"t\",\"role\":\"user\",\"content\":\"hi\"}\n",
    );
    std::fs::write(&path, &text).unwrap();
    let o = bounded(&format!("\"$B\" run {} | md5sum; md5sum < {}", path.display(), path.display()));
    let sums: Vec<&str> = std::str::from_utf8(&o.stdout).unwrap().lines().collect();
    assert_eq!(sums.len(), 2, "{}", stderr(&o));
    assert_eq!(sums[0], sums[1], "byte-identical, within 1 GiB: {}", stderr(&o));
}

#[test]
fn hooks_and_summarizers_that_print_without_end_are_cut() {
    let o = bounded(&format!("\"$B\" run {FALLBACK} --pre-compact-hook 'yes; exit 0' --hook-timeout 2 > /dev/null"));
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert!(stderr(&o).contains("timed out"), "{}", stderr(&o));
    let o = bounded(
        "\"$B\" run testdata/cases/conversation-manual-checkpoint/input.jsonl --manual \
         --summarizer 'head -c 3000000 /dev/zero | tr \"\\0\" s; exit 0' > /dev/null",
    );
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert!(stderr(&o).contains("printed more than 1048576 bytes"), "{}", stderr(&o));
}

// 6. Faults leave only complete files.

fn slow_batch(dir: &Path, n: usize) -> (PathBuf, PathBuf) {
    let inputs = dir.join("in");
    std::fs::create_dir_all(&inputs).unwrap();
    for k in 0..n {
        std::fs::write(inputs.join(format!("s{k}.jsonl")), fallback()).unwrap();
    }
    (inputs, dir.join("out"))
}

fn wait_for(path: &Path) {
    let start = Instant::now();
    while !path.exists() {
        assert!(start.elapsed() < Duration::from_secs(30), "{} never appeared", path.display());
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn kill(pid: u32, sig: &str) {
    assert!(Command::new("kill").args([&format!("-{sig}"), &pid.to_string()]).status().unwrap().success());
}

fn complete_folders(out: &Path) {
    no_temporaries(out);
    for e in std::fs::read_dir(out).unwrap() {
        let d = e.unwrap().path();
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 5, "{} is half-written", d.display());
    }
}

#[test]
fn sigterm_stops_a_batch_with_complete_folders_only() {
    let dir = tempfile::tempdir().unwrap();
    let (inputs, out) = slow_batch(dir.path(), 6);
    let child = Command::new(bin())
        .args(["run", path_str(&inputs), "--out-dir", path_str(&out), "--jobs", "1", "--pre-compact-hook", "sleep 0.5"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&out.join("s0/transcript.jsonl"));
    kill(child.id(), "TERM");
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.signal(), Some(15), "{}", stderr(&o));
    assert!(stderr(&o).contains("not started (interrupted)"), "{}", stderr(&o));
    complete_folders(&out);
}

#[test]
fn a_second_signal_stops_at_once_and_cleans_up() {
    let dir = tempfile::tempdir().unwrap();
    let (inputs, out) = slow_batch(dir.path(), 4);
    let marker = dir.path().join("started");
    let hook = format!("touch {}; sleep 30", marker.display());
    let child = Command::new(bin())
        .args(["run", path_str(&inputs), "--out-dir", path_str(&out), "--jobs", "2", "--pre-compact-hook", &hook])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&marker);
    let start = Instant::now();
    kill(child.id(), "INT");
    std::thread::sleep(Duration::from_millis(200));
    kill(child.id(), "INT");
    let o = child.wait_with_output().unwrap();
    assert!(start.elapsed() < Duration::from_secs(10), "the hooks were not waited for");
    assert_eq!(o.status.signal(), Some(2));
    if out.exists() {
        complete_folders(&out);
    }
}

#[test]
fn sigterm_in_dataset_mode_leaves_no_partial_file() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("data.jsonl");
    mkfifo(&fifo);
    let out = dir.path().join("out");
    let child = Command::new(bin())
        .args(["run", "--input-format", "openai", path_str(&fifo), "--out-dir", path_str(&out)])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Write some lines and keep the pipe open, so the run is mid-stream.
    let mut writer = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    let line = std::fs::read_to_string(root().join("testdata/dataset/conversations.jsonl")).unwrap();
    for _ in 0..50 {
        std::io::Write::write_all(&mut writer, line.as_bytes()).unwrap();
    }
    let start = Instant::now();
    while files(&out).is_empty() {
        assert!(start.elapsed() < Duration::from_secs(30), "the run never started writing");
        std::thread::sleep(Duration::from_millis(10));
    }
    kill(child.id(), "TERM");
    let o = child.wait_with_output().unwrap();
    drop(writer);
    assert_eq!(o.status.signal(), Some(15), "{}", stderr(&o));
    assert!(files(&out).is_empty(), "{:?}", files(&out));
}

#[test]
fn a_full_disk_leaves_nothing_partial() {
    let o = Command::new(bin())
        .args(["run", FALLBACK])
        .current_dir(root())
        .stdout(std::fs::File::create("/dev/full").unwrap())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert!(stderr(&o).contains("cannot write to standard output"), "{}", stderr(&o));
    // A file size limit (RLIMIT_FSIZE, SIGXFSZ ignored, so a write past it fails with
    // EFBIG as a full disk fails it) for --out-dir: no mount, so it runs everywhere.
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("big.jsonl");
    let line = r#"{"type":"message","id":"mID","turn":"t","role":"user","content":"text"}"#;
    std::fs::write(&input, (0..5000).map(|k| format!("{}\n", line.replace("ID", &k.to_string()))).collect::<String>())
        .unwrap();
    let out = dir.path().join("out");
    let mut c = Command::new(bin());
    c.args(["run", path_str(&input), "--out-dir", path_str(&out)]);
    // SAFETY: setrlimit and signal are async-signal-safe, as a pre_exec closure must be.
    unsafe {
        c.pre_exec(|| {
            let limit = libc::rlimit { rlim_cur: 64 << 10, rlim_max: 64 << 10 };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &raw const limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            Ok(())
        });
    }
    let o = c.output().unwrap();
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert!(stderr(&o).contains("File too large"), "the limit was hit: {}", stderr(&o));
    let listing = files(&out);
    assert!(listing.is_empty(), "{listing:?}");
}

#[test]
fn a_hook_that_times_out_is_killed_with_its_children() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("child.pid");
    let hook = format!("sleep 60 & echo $! > {}; wait", pid_file.display());
    let o = run(&["run", FALLBACK, "--pre-compact-hook", &hook, "--hook-timeout", "1"]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let pid = std::fs::read_to_string(&pid_file).unwrap().trim().to_string();
    std::thread::sleep(Duration::from_millis(200));
    let alive = Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default().contains(") Z ");
    assert!(!alive, "the hook's child {pid} outlived the timeout");
}

// 7. Inert text.

#[test]
fn file_names_keys_and_parser_messages_cannot_drive_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let name = "evil\nrivumi-compact: error: forged\u{1b}[2J\u{202e}lnosj.jsonl";
    let path = dir.path().join(name);
    // The role is JSON-escaped: serde's message quotes it decoded, with the raw escapes.
    std::fs::write(&path, "{\"type\":\"message\",\"id\":\"m\",\"role\":\"\\u001b[31m\\u009bx\"}\n").unwrap();
    let o = run(&["run", path_str(&path)]);
    assert_eq!(o.status.code(), Some(3));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "one line, whatever the name holds: {err:?}");
    for raw in ['\u{1b}', '\u{9b}', '\u{202e}'] {
        assert!(!err.contains(raw), "{err:?}");
    }
    assert!(
        err.contains("evil\\u{a}rivumi-compact") && err.contains("\\u{202e}") && err.contains("\\u{1b}[31m"),
        "{err}"
    );
    // A configuration key and a directory walk's warning.
    let (_d, config) = crate::support::temp_file("c.json", br#"{"\u001b]0;title\u0007": 1}"#);
    let o = run(&["decide", "--config", path_str(&config), FALLBACK]);
    assert_eq!(o.status.code(), Some(3));
    assert!(!stderr(&o).contains('\u{1b}') && stderr(&o).contains("\\u{1b}]0;title\\u{7}"), "{}", stderr(&o));
    mkfifo(&dir.path().join("\u{1b}[5mfifo.jsonl"));
    std::fs::write(dir.path().join("ok.jsonl"), fallback()).unwrap();
    let o = run(&["run", "--dry-run", path_str(dir.path())]);
    assert!(!stderr(&o).contains('\u{1b}') && stderr(&o).contains("\\u{1b}[5mfifo.jsonl"), "{}", stderr(&o));
    assert!(!stdout(&o).contains('\u{1b}'));
}

#[test]
fn reports_for_people_escape_transcript_text() {
    let text = "{\"type\":\"session\",\"id\":\"s\",\"task\":{\"max_total_tokens\":10}}\n\
        {\"type\":\"message\",\"id\":\"u\u{1b}[1m\",\"turn\":\"t\u{202e}1\",\"role\":\"user\",\"content\":\"go\"}\n\
        {\"type\":\"tool_result\",\"id\":\"r\u{9b}\",\"turn\":\"t1\",\"call_id\":\"c\u{1b}9\",\"content\":\"x\"}\n";
    for args in [vec!["decide", "-"], vec!["validate", "-"], vec!["run", "-"], vec!["stats", "-"]] {
        let o = cmd().args(&args).write_stdin(text).output().unwrap();
        let all = format!("{}{}", stdout(&o), stderr(&o));
        let shown = if args[0] == "run" { stderr(&o) } else { all };
        for raw in ['\u{1b}', '\u{9b}', '\u{202e}'] {
            assert!(!shown.contains(raw), "{args:?}: {shown:?}");
        }
    }
}

// 8. check runs no command a case names.

#[test]
fn check_runs_no_command_named_by_a_case_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let case = dir.path().join("cases/hooked");
    std::fs::create_dir_all(&case).unwrap();
    std::fs::write(case.join("input.jsonl"), fallback()).unwrap();
    std::fs::write(case.join("args"), format!("--post-compact-hook\ntouch {}\n", marker.display())).unwrap();
    let other = dir.path().join("cases/configured");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("input.jsonl"), fallback()).unwrap();
    std::fs::write(
        other.join("config.json"),
        format!("{{\"hooks\":{{\"pre_compact\":\"touch {}\"}}}}", marker.display()),
    )
    .unwrap();
    let cases = dir.path().join("cases");
    let o = run(&["check", "--bless", path_str(&cases)]);
    assert_eq!(o.status.code(), Some(3), "{}", stdout(&o));
    assert!(!marker.exists(), "a case's command ran");
    let report = stdout(&o);
    assert!(report.contains("hooked: error:") && report.contains("hooks.post_compact"), "{report}");
    assert!(report.contains("configured: error:") && report.contains("hooks.pre_compact"), "{report}");
    assert!(report.contains("--allow-case-commands"), "{report}");
    let o = run(&["check", "--bless", "--allow-case-commands", path_str(&cases)]);
    assert!(o.status.success(), "{}", stdout(&o));
    assert!(marker.exists(), "allowed explicitly, the command runs");
}

// 9. Permissions from the umask.

#[test]
fn outputs_get_the_permissions_the_umask_gives() {
    let dir = tempfile::tempdir().unwrap();
    for (umask, file_mode, dir_mode) in [("022", 0o644, 0o755), ("077", 0o600, 0o700), ("002", 0o664, 0o775)] {
        let out = dir.path().join(format!("out{umask}"));
        let o = sh(&format!("umask {umask}; \"$B\" run {FALLBACK} --out-dir {}", out.display()));
        assert!(o.status.success(), "{}", stderr(&o));
        let folder = out.join("input");
        assert_eq!(std::fs::metadata(&folder).unwrap().permissions().mode() & 0o777, dir_mode, "umask {umask}");
        for f in ["transcript.jsonl", "decision.json", "summary.md"] {
            let mode = std::fs::metadata(folder.join(f)).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, file_mode, "{f} with umask {umask}");
        }
        // A second run replaces the files in place: same modes.
        let o = sh(&format!("umask {umask}; \"$B\" run {FALLBACK} --out-dir {}", out.display()));
        assert!(o.status.success());
        let mode = std::fs::metadata(folder.join("journal.jsonl")).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, file_mode, "rewritten, umask {umask}");
    }
}

#[test]
fn a_second_run_removes_outputs_this_run_no_longer_makes() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let input = dir.path().join("s.jsonl");
    std::fs::write(&input, fallback()).unwrap();
    assert!(run(&["run", path_str(&input), "--out-dir", path_str(&out)]).status.success());
    assert!(out.join("s/summary.md").exists());
    let o = run(&["run", path_str(&input), "--out-dir", path_str(&out), "--max-total-tokens", "10000000"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(files(&out), vec!["s/decision.json", "s/journal.jsonl", "s/transcript.jsonl"]);
}
