//! Bad input: every kind gets exit 3 and one line naming file:line:column; nothing is written.

use crate::support::{cmd, path_str, root, run, stderr, stdout, temp_file};

fn bad(content: &[u8], expect: &str) {
    let (dir, path) = temp_file("bad.jsonl", content);
    let out_dir = dir.path().join("out");
    let o = run(&["run", path_str(&path), "--out-dir", path_str(&out_dir)]);
    assert_eq!(o.status.code(), Some(3), "stderr: {}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains(expect), "expected {expect:?} in {err:?}");
    assert!(!out_dir.join("bad").exists(), "nothing is written for a bad input");
    assert_eq!(std::fs::read(&path).unwrap(), content, "the input is never modified");
}

const OK: &str = r#"{"type":"message","id":"m1","turn":"t1","role":"user","content":"hi"}"#;

#[test]
fn invalid_json_names_line_and_column() {
    bad(format!("{OK}\n{{\"type\":\"message\",\"id\":}}\n").as_bytes(), "bad.jsonl:2:24: expected value");
}

/// A mark before the first line is read past; one before a later line (two files
/// joined by `cat`) is named as such, in a transcript as in a dataset row, never
/// "expected value".
#[test]
fn a_byte_order_mark_inside_a_file_is_named() {
    let said = "bad.jsonl:2:1: a byte-order mark (U+FEFF) starts this line: only a file's first line may have one";
    let m2 = OK.replace("m1", "m2");
    bad(format!("\u{feff}{OK}\n\u{feff}{m2}\n").as_bytes(), said);
    let row = r#"{"messages":[{"role":"user","content":"hi"}]}"#;
    let (_d, path) = temp_file("bad.jsonl", format!("\u{feff}{row}\n\u{feff}{row}\n").as_bytes());
    for command in ["run", "validate", "stats"] {
        let o = run(&[command, path_str(&path)]);
        let all = format!("{}{}", stdout(&o), stderr(&o));
        let said = if command == "validate" { "bad.jsonl:2: bad_line: column 1: a byte-order mark" } else { said };
        assert!(all.contains(said), "{command}: {all}");
        assert!(!all.contains("bad.jsonl:1"), "{command}: the first line's mark is fine: {all}");
    }
}

#[test]
fn invalid_utf8_names_the_column() {
    let mut line = br#"{"type":"message","id":"m2","turn":"t1","role":"user","content":"caf"#.to_vec();
    line.extend([0xC3, 0x28]);
    line.extend(b"\"}\n");
    bad(&[OK.as_bytes(), b"\n", &line].concat(), "bad.jsonl:2:69: invalid UTF-8");
}

/// A whole-file JSON document (OpenHands, SWE-agent, an older Gemini CLI session) is
/// held to the same rule as a JSONL file: the byte that is not UTF-8 at its line and
/// column, not only the file's name.
#[test]
fn invalid_utf8_in_a_json_document_names_line_and_column() {
    let doc = |text: &[u8]| [b"{\n  \"trajectory\": [\n    {\"action\": \"", text, b"\"}\n  ]\n}\n"].concat();
    bad(&doc(b"ls\xFF"), "bad.jsonl:3:19: invalid UTF-8");
    // Columns count characters: the two bytes of `é` are one.
    bad(&doc(b"\xC3\xA9\xC3\xA9\xC3("), "bad.jsonl:3:19: invalid UTF-8");
}

/// A document that parses but lacks the list its format needs is named where the value
/// stands (or where the document starts), not by the file alone.
#[test]
fn a_document_without_its_list_names_where() {
    for (name, content, said) in [
        (
            "t.traj",
            "{\n  \"environment\": \"x\",\n  \"history\": {\"role\": \"user\"}\n}\n",
            "t.traj:3:14: expected a SWE-agent trajectory with a \"history\" array",
        ),
        ("t.traj", "\n\n  {\"trajectory\": []}\n", "t.traj:3:3: expected a SWE-agent trajectory"),
        (
            "s.json",
            "{\n  \"sessionId\": \"s\",\n  \"startTime\": \"2025-01-01T00:00:00Z\",\n  \"messages\": {\"a\": 1}\n}\n",
            "s.json:4:15: expected a Gemini CLI session with a \"messages\" array",
        ),
    ] {
        let (_d, path) = temp_file(name, content.as_bytes());
        let o = run(&["decide", path_str(&path)]);
        assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
        assert!(stderr(&o).contains(said), "{said:?} in {}", stderr(&o));
    }
}

/// A `\u` escape of half a UTF-16 pair without the other half (Python's `json.dumps`
/// writes one for a string holding a lone surrogate) is named as such, at the escape's
/// own column, not with serde's "unexpected end of hex escape" after it.
#[test]
fn a_lone_surrogate_escape_is_named_at_its_column() {
    let record = |content: &str| {
        format!("{{\"type\":\"message\",\"id\":\"m2\",\"turn\":\"t1\",\"role\":\"user\",\"content\":\"{content}\"}}\n")
    };
    let said = |column: usize, escape: &str| {
        format!("bad.jsonl:2:{column}: a lone surrogate `{escape}` (half of a UTF-16 pair")
    };
    // A leading half at the end, one before another escape, a trailing half after a
    // wide character, and one after an escaped backslash (whose `\\ud800` is text).
    for (content, column, escape) in [
        (r"a\ud800", 67, r"\ud800"),
        (r"a\ud800\u0041", 67, r"\ud800"),
        (r"é\udc00z", 67, r"\udc00"),
        (r"x\\ud800\udc00", 74, r"\udc00"),
    ] {
        bad(format!("{OK}\n{}", record(content)).as_bytes(), &said(column, escape));
    }
    // A dataset row says the same.
    let (_d, path) =
        temp_file("ds.jsonl", "{\"messages\":[{\"role\":\"user\",\"content\":\"a\\ud800b\"}]}\n".as_bytes());
    let o = run(&["run", path_str(&path)]);
    assert!(stderr(&o).contains("ds.jsonl:1:41: a lone surrogate `\\ud800`"), "{}", stderr(&o));
}

#[test]
fn record_without_type() {
    bad(b"{\"id\":\"x\"}\n", "bad.jsonl:1:1: expected a \"type\" field");
    // Detected from this record: the one message also names the formats tried.
    bad(b"\n{\"id\":\"x\"}\n", "bad.jsonl:2:1: expected a \"type\" field in the record (it has \"id\"); no input format fits this file (tried openhands, swe-agent, codex, gemini-cli, claude-code, openai, rivumi");
    // The keys of a record no format has are named (the first eight).
    let keys: Vec<String> = (0..10).map(|k| format!("\"k{k}\":{k}")).collect();
    bad(
        format!("{{\"instance_id\":\"x\",\"trajectory\":[],{}}}\n", keys.join(",")).as_bytes(),
        "bad.jsonl:1:1: expected a \"type\" field in the record (it has \"instance_id\", \"trajectory\", \"k0\", \"k1\", \"k2\", \"k3\", \"k4\", \"k5\", and 4 more); no input format fits",
    );
    bad(
        b"{\n  \"a\": 1\n}\n",
        "bad.jsonl:1:1: a JSON document without `history` or `trajectory`: no input format fits",
    );
}

#[test]
fn non_object_line() {
    bad(format!("{OK}\n  [1, 2]\n").as_bytes(), "bad.jsonl:2:3: expected a JSON object");
}

#[test]
fn truncated_last_line() {
    bad(
        format!("{OK}\n{{\"type\":\"message\",\"id\":\"m2\",\"content\":\"cut").as_bytes(),
        "bad.jsonl:2:42: truncated last line",
    );
}

#[test]
fn duplicate_ids() {
    bad(format!("{OK}\n{OK}\n").as_bytes(), "bad.jsonl:2:1: duplicate id \"m1\" (first used on line 1)");
}

#[test]
fn session_record_not_first() {
    bad(
        format!("{OK}\n{{\"type\":\"session\",\"id\":\"s\"}}\n").as_bytes(),
        "bad.jsonl:2:1: a \"session\" record is only allowed as the first record",
    );
}

#[test]
fn missing_required_field() {
    bad(b"{\"type\":\"tool_result\",\"id\":\"r1\",\"content\":\"x\"}\n", "bad.jsonl:1:");
    bad(b"{\"type\":\"tool_result\",\"id\":\"r1\",\"content\":\"x\"}\n", "missing field `call_id`");
}

#[test]
fn wrong_role() {
    bad(b"{\"type\":\"message\",\"id\":\"m\",\"role\":\"robot\",\"content\":\"x\"}\n", "unknown variant `robot`");
}

/// A refused value of any length is named by its start and what was expected, not
/// echoed whole into the error line.
#[test]
fn a_long_refused_value_is_elided() {
    let role = "r".repeat(100_000);
    let content = format!("{{\"type\":\"message\",\"id\":\"m\",\"role\":\"{role}\",\"content\":\"x\"}}\n");
    bad(content.as_bytes(), "bad.jsonl:1:100036: unknown variant `rrrrrrrrrrrr");
    bad(content.as_bytes(), " characters left out) … ");
    bad(content.as_bytes(), "expected one of `system`, `developer`, `user`, `assistant`");
    let (_d, path) = temp_file("bad.jsonl", content.as_bytes());
    let err = stderr(&run(&["run", path_str(&path)]));
    assert!(err.len() < 1000, "{} bytes: {}", err.len(), &err[..err.len().min(300)]);
}

#[test]
fn negative_usage() {
    bad(b"{\"type\":\"message\",\"id\":\"m\",\"role\":\"assistant\",\"content\":\"x\",\"usage\":{\"input_tokens\":-1}}\n", "bad.jsonl:1:");
}

/// A session value `run` refuses is named at its line and column, by every command
/// that reads the configuration, and `validate` reports it as a bad line.
#[test]
fn session_value_out_of_range() {
    bad(
        b"{\"type\":\"session\",\"id\":\"s\",\"threshold\":1.5}\n",
        "bad.jsonl:1:40: session record: `threshold`: threshold 1.5 is outside (0, 1]",
    );
    let session = "{\"type\":\"session\",\"id\":\"s\",\"task\": {\"name\": \"é\", \"max_total_tokens\": -5}}";
    let (_d, path) = temp_file("bad.jsonl", format!("{session}\n{OK}\n").as_bytes());
    // Column 70 counts `é` as one character (its bytes would make it 71).
    let said = "bad.jsonl:1:70: session record: `task.max_total_tokens`: expected a positive integer, found -5";
    for command in ["run", "decide", "stats", "replay", "config"] {
        let o = run(&[command, path_str(&path)]);
        assert_eq!(o.status.code(), Some(3), "{command}: {}", stderr(&o));
        assert!(stderr(&o).contains(said), "{command}: {}", stderr(&o));
    }
    let o = run(&["validate", path_str(&path)]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let said = "bad.jsonl:1: bad_line: column 70: session record: `task.max_total_tokens`: expected a positive integer";
    assert!(stdout(&o).contains(said), "{}", stdout(&o));
}

/// A `--config` file's errors name the line and column of the key's value (of the
/// document, when it is not an object).
#[test]
fn config_file_unknown_key_and_range() {
    let (dir, input) = temp_file("ok.jsonl", format!("{OK}\n").as_bytes());
    let cfg = dir.path().join("cfg.json");
    for (content, expect) in [
        (
            r#"{"runtime":{"kind":"agent-runner","colour":"red"}}"#,
            "cfg.json:1:44: unknown configuration key `runtime.colour`",
        ),
        (r#"{"threshold":0.85001}"#, "cfg.json:1:14: `threshold`: threshold 0.85001 has more than 4 decimals"),
        (
            r#"{"task":{"max_total_tokens":-5}}"#,
            "cfg.json:1:29: `task.max_total_tokens`: expected a positive integer, found -5",
        ),
        (r#"{"verification":"cargo test"}"#, "cfg.json:1:17: `verification`: expected an array of strings"),
        (
            "{\n  \"threshold\": 0.5,\n  \"reanchor\": {\"write_tools\": [\"ok\", \"a[\"]}\n}\n",
            "cfg.json:3:31: `reanchor.write_tools`: invalid glob \"a[\"",
        ),
        ("\n  [1]\n", "cfg.json:2:3: expected a JSON object of configuration keys"),
        // A key written with an escape, which the locator does not decode: where the
        // document starts.
        (r#" {"thre\u0073hold": 2}"#, "cfg.json:1:2: `threshold`: threshold 2 is outside (0, 1]"),
        ("{\"threshold\":", "cfg.json:1:13: invalid JSON"),
    ] {
        std::fs::write(&cfg, content).unwrap();
        let o = run(&["run", path_str(&input), "--config", path_str(&cfg)]);
        assert_eq!(o.status.code(), Some(3), "{content}: {}", stderr(&o));
        assert!(stderr(&o).contains(expect), "expected {expect:?} in {:?}", stderr(&o));
    }
}

#[test]
fn unreadable_file_and_empty_directory() {
    let o = run(&["run", "does/not/exist.jsonl"]);
    assert_eq!(o.status.code(), Some(3));
    assert!(stderr(&o).contains("does/not/exist.jsonl: cannot read"), "{}", stderr(&o));
    let dir = tempfile::tempdir().unwrap();
    let o = run(&["run", path_str(dir.path())]);
    assert_eq!(o.status.code(), Some(3));
    assert!(stderr(&o).contains("no transcripts (*.jsonl, *.traj, *.json) in this directory"), "{}", stderr(&o));
}

#[test]
fn bad_flag_value_is_a_usage_error() {
    for args in [
        &["run", "x.jsonl", "--threshold", "1.2"][..],
        &["run", "x.jsonl", "--threshold", "0.12345"],
        &["run", "x.jsonl", "--max-total-tokens", "-3"],
        &["run"],
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn imported_formats_keep_file_line_column_errors() {
    let claude = "{\"parentUuid\":null,\"sessionId\":\"s\",\"type\":\"user\",\"uuid\":\"u\",\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n{\"parentUuid\":\"u\",\"type\":\"assistant\",\n";
    let (_d, path) = temp_file("claude.jsonl", claude.as_bytes());
    let o = run(&["run", path_str(&path)]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("claude.jsonl:2:37: truncated record"), "{}", stderr(&o));
    let codex = "{\"timestamp\":\"t\",\"type\":\"session_meta\",\"payload\":{\"id\":\"x\"}}\n[1]\n";
    let (_d, path) = temp_file("rollout.jsonl", codex.as_bytes());
    let o = run(&["run", path_str(&path)]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("rollout.jsonl:2:1: expected a JSON object"), "{}", stderr(&o));
    let (_d, path) = temp_file("broken.traj", b"{\n  \"history\": [\n    {\"role\": \"user\",\n");
    let o = run(&["run", path_str(&path), "--input-format", "swe-agent"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("broken.traj:4:1: truncated record"), "{}", stderr(&o));
}

#[test]
fn an_output_that_cannot_be_made_says_why_without_a_temporary_name() {
    let input = "testdata/cases/fallback-applied/input.jsonl";
    // /proc/self takes no new file, whoever runs the tests (root included).
    for args in [vec!["run", input, "--out", "/proc/self/x.jsonl"], vec!["replay", input, "--svg", "/proc/self/x.svg"]]
    {
        // Found before any input is read: nothing was done (exit 2), not "done, with
        // failures" (exit 4).
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = stderr(&o);
        assert!(err.contains(" /proc/self/x.") && err.contains(": cannot be written ("), "{err}");
        assert!(err.contains("): nothing was done"), "{err}");
        assert!(stdout(&o).is_empty(), "no decision, no transcript: {}", stdout(&o));
        assert!(!err.contains(".rivumi-"), "the temporary name is noise: {err}");
    }
}

/// A path to write that names the wrong kind of thing (a folder for a file, a file for a
/// folder, a link to nothing) is a usage error found before any input is read: exit 2,
/// nothing written, no decision printed. `-` is stdout wherever stdout is free.
#[test]
fn paths_to_write_are_checked_before_any_input_is_read_and_dash_is_stdout() {
    let input = "testdata/cases/fallback-applied/input.jsonl";
    let dataset = "testdata/dataset/conversations.jsonl";
    let dir = tempfile::tempdir().unwrap();
    let (file, folder, dangling) =
        (dir.path().join("a-file"), dir.path().join("a-folder"), dir.path().join("dangling"));
    std::fs::write(&file, b"kept").unwrap();
    std::fs::create_dir(&folder).unwrap();
    std::os::unix::fs::symlink(dir.path().join("nothing"), &dangling).unwrap();
    let (file, folder, dangling) = (path_str(&file), path_str(&folder), path_str(&dangling));
    let out = path_str(&dir.path().join("out.jsonl")).to_owned();
    let cases: [(Vec<&str>, String); 8] = [
        (vec!["run", input, "--out", folder], format!("--out {folder} is a folder: --out names a file")),
        (vec!["run", input, "--out", dangling], format!("--out {dangling} is a link to nothing")),
        (vec!["run", input, "--out-dir", file], format!("--out-dir {file} exists and is not a folder")),
        (vec!["replay", input, "--svg", folder], format!("--svg {folder} is a folder: --svg names a file")),
        (vec!["replay", input, "--out-dir", file], format!("--out-dir {file} exists and is not a folder")),
        (vec!["replay", input, "--svg", "-", "--json"], "--svg - and --json both print on stdout".into()),
        (vec!["run", dataset, "--rejects", folder, "--out", &out], format!("--rejects {folder} is a folder")),
        (vec!["run", dataset, "--rejects", "-"], "--rejects -: stdout carries the dataset".into()),
    ];
    for (args, said) in cases {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(&said), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("-> "), "{args:?}: the input was read: {}", stderr(&o));
        assert!(o.stdout.is_empty(), "{args:?}");
    }
    assert_eq!(std::fs::read(file).unwrap(), b"kept");
    assert!(!dir.path().join("out.jsonl").exists());

    // `-` is stdout: the same bytes as without the flag, and no file named `-`.
    let cwd = tempfile::tempdir().unwrap();
    let at = |args: &[&str]| crate::support::cmd().current_dir(cwd.path()).args(args).output().unwrap();
    let input = root().join(input);
    let input = path_str(&input);
    let plain = at(&["run", input]);
    let o = at(&["run", input, "--out", "-"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(o.stdout, plain.stdout);
    // A file to write whose folder does not exist gets it.
    let deep = cwd.path().join("new/deeper/x.jsonl");
    let o = at(&["run", input, "--out", path_str(&deep)]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read(&deep).unwrap(), plain.stdout);
    let o = at(&["replay", input, "--svg", "-"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        o.stdout.starts_with(b"<svg ") && o.stdout.ends_with(b"</svg>\n"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let (dataset, out) = (root().join(dataset), cwd.path().join("rows.jsonl"));
    let o = at(&["run", path_str(&dataset), "--rejects", "-", "--out", path_str(&out)]);
    let rejects: Vec<serde_json::Value> =
        o.stdout.split(|&b| b == b'\n').filter(|l| !l.is_empty()).map(|l| serde_json::from_slice(l).unwrap()).collect();
    assert_eq!(rejects.len(), 1, "{}", stderr(&o));
    assert_eq!(rejects[0]["line"], 3);
    assert_eq!(std::fs::read(&out).unwrap().split(|&b| b == b'\n').filter(|l| !l.is_empty()).count(), 4);
    assert!(!cwd.path().join("-").exists(), "a file named - was written");
}

/// Every side output is made, or the run fails before any output is committed: a
/// `--rejects`, `--svg` or `--out-dir` that cannot be made leaves `--out` as it was
/// (never replaced by an empty file), and says nothing was done (exit 2).
#[test]
fn a_side_output_that_cannot_be_made_commits_no_other_output() {
    let dir = tempfile::tempdir().unwrap();
    let prev = dir.path().join("prev.jsonl");
    let dataset = "testdata/dataset/conversations.jsonl";
    let input = "testdata/cases/fallback-applied/input.jsonl";
    let (firings, folder) = (dir.path().join("firings"), dir.path().join("o"));
    // /proc/self takes no new file, whoever runs the tests (root included).
    let cases: [Vec<&str>; 4] = [
        vec!["run", dataset, "--rejects", "/proc/self/r.jsonl", "--out", path_str(&prev)],
        vec!["run", input, "--out-dir", "/proc/self/o", "--emit", "decision"],
        vec!["replay", input, "--svg", "/proc/self/x.svg", "--out-dir", path_str(&firings)],
        vec!["run", dataset, "--rejects", "/proc/self/r.jsonl", "--out-dir", path_str(&folder)],
    ];
    for args in cases {
        std::fs::write(&prev, b"previous\n").unwrap();
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("cannot be written (") && stderr(&o).contains("nothing was done"),
            "{}",
            stderr(&o)
        );
        assert!(stdout(&o).is_empty(), "{args:?}: {}", stdout(&o));
        assert_eq!(std::fs::read(&prev).unwrap(), b"previous\n", "{args:?}: --out kept as it was");
        assert!(!firings.exists() && !folder.exists(), "{args:?}: no folder made");
    }
}

/// UTF-16 text (what Windows PowerShell's `>` writes) is named as such, with the
/// conversion to UTF-8, in either byte order, with or without a byte-order mark; UTF-32's
/// mark and a UTF-8 file are not taken for it.
#[test]
fn utf16_text_is_named_with_its_conversion() {
    let utf16 = |big: bool, mark: bool| -> Vec<u8> {
        let mut units: Vec<u16> = OK.encode_utf16().chain("\n".encode_utf16()).collect();
        if mark {
            units.insert(0, 0xFEFF);
        }
        units.iter().flat_map(|u| if big { u.to_be_bytes() } else { u.to_le_bytes() }).collect()
    };
    for (big, mark, order) in [
        (false, true, "little-endian, with a byte-order mark"),
        (true, true, "big-endian, with a byte-order mark"),
        (false, false, "little-endian"),
        (true, false, "big-endian"),
    ] {
        bad(
            &utf16(big, mark),
            &format!("bad.jsonl:1:1: this input is UTF-16 text ({order}), as Windows PowerShell's `>` writes it, and inputs are UTF-8: convert it first, for example `iconv -f UTF-16 -t UTF-8 "),
        );
    }
    // On standard input, and inside gzip.
    let o = cmd().args(["decide", "-"]).write_stdin(utf16(false, true)).output().unwrap();
    assert_eq!(o.status.code(), Some(3));
    assert!(
        stderr(&o).contains("-:1:1: this input is UTF-16 text")
            && stderr(&o).contains("`iconv -f UTF-16 -t UTF-8 FILE`"),
        "{}",
        stderr(&o)
    );
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, &utf16(false, true)).unwrap();
    let (_d, path) = temp_file("s.jsonl.gz", &gz.finish().unwrap());
    let o = run(&["decide", path_str(&path)]);
    assert!(
        stderr(&o).contains(&format!("`gzip -dc {} | iconv -f UTF-16 -t UTF-8`", path.display())),
        "{}",
        stderr(&o)
    );
    // UTF-32's mark is no UTF-16 (and no input either: its own message).
    let mut utf32 = vec![0xFF, 0xFE, 0, 0];
    utf32.extend(OK.chars().flat_map(|c| (c as u32).to_le_bytes()));
    let (_d, path) = temp_file("u32.jsonl", &utf32);
    assert!(!stderr(&run(&["decide", path_str(&path)])).contains("UTF-16"));
}

/// `NaN`, `Infinity` and `-Infinity` (Python's `json.dumps` writes them for floats that
/// are no number) are named at their own column, in records, rows and documents.
#[test]
fn python_non_numbers_are_named() {
    let said =
        |word: &str| format!("`{word}` is not JSON: Python's `json.dumps` writes it for a float that is no number");
    for word in ["NaN", "Infinity", "-Infinity"] {
        let line = OK.replace("\"hi\"}", &format!("\"hi\",\"score\":{word}}}"));
        let column = line.find(word).unwrap() + 1;
        bad(format!("{OK}\n{line}\n").as_bytes(), &format!("bad.jsonl:2:{column}: {}", said(word)));
    }
    let row = r#"{"messages":[{"role":"user","content":"a"}],"score":[1, NaN]}"#;
    let o = cmd().args(["run", "-"]).write_stdin(format!("{row}\n")).output().unwrap();
    assert_eq!(o.status.code(), Some(4));
    assert!(stderr(&o).contains(&format!("-:1:{}: {}", row.find("NaN").unwrap() + 1, said("NaN"))), "{}", stderr(&o));
    // Not where the text is inside a string, or another word.
    for (line, message) in
        [(OK.replace("\"hi\"", "\"\\qNaN\""), "invalid escape"), (OK.replace("\"hi\"", "Nope"), "expected value")]
    {
        bad(format!("{line}\n").as_bytes(), message);
    }
}

/// `validate`'s text report names an id of any length on a line a reader can take in
/// (its start, how much was left out, the end); `--json` gives it whole.
#[test]
fn validate_names_a_long_id_on_a_line_and_gives_it_whole_in_json() {
    let case = root().join("testdata/cases/claude-code-resumed/input.jsonl");
    let text = std::fs::read_to_string(case).unwrap();
    let long = "z".repeat(100_000);
    let mut lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let k = lines.iter().rposition(|r| r["parentUuid"].is_string()).unwrap();
    lines[k]["parentUuid"] = serde_json::json!(long);
    let data: String = lines.iter().map(|r| format!("{r}\n")).collect();
    let (_d, path) = temp_file("session.jsonl", data.as_bytes());
    let o = run(&["validate", path_str(&path)]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let said = stdout(&o);
    let line = said.lines().find(|l| l.contains("dangling_parent")).unwrap_or_else(|| panic!("{said}"));
    assert!(line.len() < 1000, "{} bytes", line.len());
    assert!(line.contains(&format!("dangling_parent: parentUuid \"{}", &long[..100])), "{line}");
    assert!(line.contains(" characters left out) … ") && line.ends_with("\" names no record of this file"), "{line}");
    let o = run(&["validate", path_str(&path), "--json"]);
    let found: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let message = found.as_array().unwrap().iter().find(|v| v["code"] == "dangling_parent").unwrap()["message"].clone();
    assert_eq!(message, format!("parentUuid \"{long}\" names no record of this file"));
}
