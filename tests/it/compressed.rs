//! Compressed inputs (SPEC 1): gzip and zstd are read transparently, known by their
//! magic bytes, in every mode; the decompressed size is bounded like any input.

use crate::support::{cmd, path_str, root, run, stderr, stdout};
use std::io::Write;

const CASE: &str = "testdata/cases/fallback-applied/input.jsonl";

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

fn zstd(bytes: &[u8]) -> Vec<u8> {
    zstd::stream::encode_all(bytes, 3).unwrap()
}

#[test]
fn compressed_transcripts_give_the_same_bytes_as_plain_ones() {
    let plain = std::fs::read(root().join(CASE)).unwrap();
    let expected = run(&["run", CASE]).stdout;
    let dir = tempfile::tempdir().unwrap();
    // Named after their compression, or not at all: the magic bytes decide.
    for (name, bytes) in [("a.jsonl.gz", gzip(&plain)), ("b.jsonl.zst", zstd(&plain)), ("c.jsonl", gzip(&plain))] {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let o = run(&["run", path_str(&path)]);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        assert_eq!(o.stdout, expected, "{name}");
    }
    let o = cmd().args(["run", "-"]).write_stdin(zstd(&plain)).output().unwrap();
    assert_eq!(o.stdout, expected, "stdin");
}

#[test]
fn a_walk_finds_compressed_files_and_names_their_folders_plainly() {
    let dir = tempfile::tempdir().unwrap();
    let plain = std::fs::read(root().join(CASE)).unwrap();
    std::fs::write(dir.path().join("a.jsonl.gz"), gzip(&plain)).unwrap();
    let traj = std::fs::read(root().join("testdata/cases/swe-agent-action-strings/input.jsonl")).unwrap();
    std::fs::write(dir.path().join("s.traj.zst"), zstd(&traj)).unwrap();
    std::fs::write(dir.path().join("notes.txt.gz"), gzip(b"not a transcript")).unwrap();
    let out = dir.path().join("out");
    let o = run(&["run", path_str(dir.path()), "--out-dir", path_str(&out), "--max-total-tokens", "1500"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut folders: Vec<String> =
        std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    folders.sort();
    assert_eq!(folders, ["a", "s"]);
    let d: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("s/decision.json")).unwrap()).unwrap();
    assert_eq!(d["input_format"], "swe-agent", "a .traj under .zst is still a trajectory");
}

#[test]
fn a_compressed_dataset_streams() {
    let data = std::fs::read(root().join("testdata/dataset/conversations.jsonl")).unwrap();
    let plain = run(&["run", "testdata/dataset/conversations.jsonl", "--max-total-tokens", "300"]);
    let o = cmd().args(["run", "-", "--max-total-tokens", "300"]).write_stdin(gzip(&data)).output().unwrap();
    assert_eq!(o.status.code(), Some(4), "the bad line is still reported");
    assert_eq!(stdout(&o), stdout(&plain));
}

#[test]
fn decompression_is_bounded_and_a_cut_stream_is_bad_input() {
    let line = format!(
        "{{\"type\":\"message\",\"id\":\"m\",\"turn\":\"t\",\"role\":\"user\",\"content\":\"{}\"}}\n",
        "x".repeat(1 << 20)
    );
    let bomb = gzip(line.repeat(40).as_bytes()); // 40 MB in a few hundred KB
    let (_d, path) = crate::support::temp_file("bomb.jsonl.gz", &bomb);
    let o = cmd().env("RIVUMI_MAX_INPUT_BYTES", "10000000").args(["run", path_str(&path)]).output().unwrap();
    assert_eq!(o.status.code(), Some(3));
    assert!(stderr(&o).contains("larger than 10000000 bytes"), "{}", stderr(&o));
    let (_d, cut) = crate::support::temp_file("cut.jsonl.gz", &bomb[..200]);
    let o = run(&["run", path_str(&cut)]);
    assert_eq!(o.status.code(), Some(3));
    let (line, column) = where_it_breaks(&bomb[..200]);
    assert!(stderr(&o).contains(&format!("cut.jsonl.gz:{line}:{column}: cannot read: ")), "{}", stderr(&o));
}

/// The line and column where a cut gzip stream breaks off: the line it cuts, at the
/// character after the last one it gives (columns count characters; one cut in two
/// counts, by the byte that starts it).
fn where_it_breaks(cut: &[u8]) -> (usize, usize) {
    let got = decompressed_prefix(cut);
    let start = got.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
    let characters = got[start..].iter().filter(|&&b| b & 0xc0 != 0x80).count();
    (1 + memchr::memchr_iter(b'\n', &got[..start]).count(), characters + 1)
}

/// All that a cut gzip stream gives before its error.
fn decompressed_prefix(cut: &[u8]) -> Vec<u8> {
    use std::io::Read;
    let mut d = flate2::read::GzDecoder::new(cut);
    let (mut got, mut chunk) = (Vec::new(), [0u8; 4096]);
    loop {
        match d.read(&mut chunk) {
            Ok(0) => panic!("the stream is not cut"),
            Ok(n) => got.extend_from_slice(&chunk[..n]),
            Err(_) => return got,
        }
    }
}

/// A dataset of `rows` conversations whose text does not repeat (so its gzip stream is
/// long enough to cut in the middle of a row).
fn varied_dataset(rows: usize) -> Vec<u8> {
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut words = |n: usize| -> String {
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // Some words not ASCII: columns count characters, not bytes.
                if x.is_multiple_of(4) {
                    format!("é{:x}→", x % 100_000)
                } else {
                    format!("w{:x}", x % 100_000)
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut out = String::new();
    for r in 0..rows {
        let mut msgs = vec![
            serde_json::json!({"role": "system", "content": "You are a coding agent."}),
            serde_json::json!({"role": "user", "content": words(30)}),
        ];
        for t in 0..6 {
            let id = format!("call_{r}_{t}");
            let args = serde_json::json!({"command": words(4)}).to_string();
            msgs.push(serde_json::json!({"role": "assistant", "content": words(10), "tool_calls": [
                {"id": id, "type": "function", "function": {"name": "bash", "arguments": args}}]}));
            msgs.push(serde_json::json!({"role": "tool", "tool_call_id": id, "content": words(60)}));
        }
        out.push_str(&serde_json::json!({"messages": msgs}).to_string());
        out.push('\n');
    }
    out.into_bytes()
}

#[test]
fn a_dataset_cut_short_gives_every_row_before_the_break_and_names_where_it_broke() {
    // A cut far into a long stream, and one inside what is read first to detect the
    // format (the first 64 KiB decompressed): both give their whole rows.
    for (total, at_least) in [(120, 20), (12, 3)] {
        let data = varied_dataset(total);
        if total == 12 {
            assert!(data.len() < rivumi_compact::source::SNIFF_BYTES, "{} bytes", data.len());
        }
        a_dataset_cut_in_half(&data, at_least);
    }
}

fn a_dataset_cut_in_half(data: &[u8], at_least: usize) {
    let packed = gzip(data);
    let cut = &packed[..packed.len() / 2];
    let (line, column) = where_it_breaks(cut);
    let rows = line - 1;
    assert!(rows > at_least && column > 1, "the cut falls inside a row after many: line {line}, column {column}");
    let whole_rows: usize = data.split_inclusive(|&b| b == b'\n').take(rows).map(<[u8]>::len).sum();
    let dir = tempfile::tempdir().unwrap();
    let (plain, broken) = (dir.path().join("rows.jsonl"), dir.path().join("cut.jsonl.gz"));
    std::fs::write(&plain, &data[..whole_rows]).unwrap();
    std::fs::write(&broken, cut).unwrap();
    let budget = ["--max-total-tokens", "600"];
    let expected = run(&[&["run", path_str(&plain)][..], &budget].concat());
    assert!(expected.status.success(), "{}", stderr(&expected));
    assert!(stderr(&expected).contains(&format!("{rows} row(s): ")), "{}", stderr(&expected));

    // From the file and from stdin, with one job and two: the rows before the break come
    // out as they do alone (none lost with the block they were read in), then the error.
    for jobs in ["1", "2"] {
        for (name, o) in [
            ("cut.jsonl.gz", run(&[&["run", path_str(&broken), "--jobs", jobs][..], &budget].concat())),
            ("-", cmd().args([&["run", "-", "--jobs", jobs][..], &budget].concat()).write_stdin(cut).output().unwrap()),
        ] {
            let err = stderr(&o);
            assert_eq!(o.status.code(), Some(3), "{name}, --jobs {jobs}: {err}");
            assert!(o.stdout == expected.stdout, "{name}, --jobs {jobs}: not the rows before the break: {err}");
            assert!(err.contains(&format!("{name}:{line}:{column}: cannot read: ")), "{name}: {err}");
            assert!(err.contains(&format!("{rows} row(s): ")), "{name}: the rows written are counted: {err}");
        }
    }

    // `--out` is atomic: a run whose input broke off leaves no file.
    let out = dir.path().join("out.jsonl");
    let o = run(&[&["run", path_str(&broken), "--out", path_str(&out)][..], &budget].concat());
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(!out.exists(), "a failed run left {}", out.display());

    // `validate` and `stats` count the same rows, and report the same break.
    let o = run(&["validate", path_str(&broken)]);
    assert_eq!(o.status.code(), Some(3));
    assert_eq!(stdout(&o), format!("0 violation(s) in {rows} row(s)\n"));
    assert!(stderr(&o).contains(&format!("cut.jsonl.gz:{line}:{column}: cannot read: ")), "{}", stderr(&o));
    let o = run(&["stats", path_str(&broken), "--json"]);
    assert_eq!(o.status.code(), Some(3));
    let s: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((s["transcripts"].as_u64(), s["failed"].as_u64()), (Some(rows as u64), Some(1)), "{s}");
}

#[test]
fn a_cut_stream_on_stdin_is_bad_input_not_an_empty_transcript() {
    let packed = gzip(std::fs::read(root().join(CASE)).unwrap().as_slice());
    for n in [2, 10, 40] {
        let o = cmd().args(["run", "-"]).write_stdin(&packed[..n]).output().unwrap();
        assert_eq!(o.status.code(), Some(3), "{n} bytes: {}", stderr(&o));
        assert!(stderr(&o).contains("-:1:") && stderr(&o).contains(": cannot read: "), "{n} bytes: {}", stderr(&o));
        assert!(o.stdout.is_empty(), "{n} bytes");
    }
}

#[test]
fn a_compression_that_is_not_read_is_named_with_how_to_unpack_it() {
    let dir = tempfile::tempdir().unwrap();
    // The first bytes of real streams: the magic, then what follows it.
    let heads: [(&str, &[u8], &str); 4] = [
        ("a.jsonl.xz", b"\xfd7zXZ\x00\x00\x04\xe6\xd6\xb4\x46", "xz-compressed, which is not read"),
        ("b.jsonl.bz2", b"BZh91AY&SY\x8e\x1d\x7a\x5b", "bzip2-compressed, which is not read"),
        ("c.zip", b"PK\x03\x04\x14\x00\x00\x00", "a zip archive, which is not read"),
        ("d.jsonl", b"\x04\x22\x4d\x18\x64\x40\xa7", "lz4-compressed, which is not read"),
    ];
    for (name, head, says) in heads {
        let path = dir.path().join(name);
        std::fs::write(&path, head).unwrap();
        for args in [vec!["run", path_str(&path)], vec!["run", path_str(&path), "--input-format", "openai"]] {
            let o = run(&args);
            assert_eq!(o.status.code(), Some(3), "{args:?}");
            let err = stderr(&o);
            let shown = path.display();
            assert!(err.contains(&format!("{shown}:1:1: this input is {says} (gzip and zstd are)")), "{args:?}: {err}");
            assert!(err.contains(&format!(" {shown}` piped in as `-`")), "{args:?}: {err}");
        }
    }
    // Text that merely starts as bzip2 does is not taken for it.
    let (_d, path) = crate::support::temp_file("t.jsonl", b"BZh9 is not a stream\n");
    let o = run(&["run", path_str(&path)]);
    assert_eq!(o.status.code(), Some(3));
    assert!(!stderr(&o).contains("bzip2"), "{}", stderr(&o));
}

/// Members one after the other are one stream; what follows the last one is named, not
/// lost or misread: zeros after gzip are skipped (tape padding, as gzip and Python do),
/// other bytes are an error that says they are trailing garbage; a member cut short is
/// an input that breaks off.
#[test]
fn members_one_after_the_other_and_what_follows_the_last() {
    let plain = std::fs::read(root().join(CASE)).unwrap();
    let expected = run(&["run", CASE]).stdout;
    let half = plain.iter().enumerate().filter(|(_, b)| **b == b'\n').nth(5).unwrap().0 + 1;
    let (a, b) = plain.split_at(half);
    // A skippable frame, as `pzstd` writes before each frame.
    let skippable = [&[0x50, 0x2a, 0x4d, 0x18, 4, 0, 0, 0][..], &[1, 2, 3, 4]].concat();
    let members: [(&str, Vec<u8>); 4] = [
        ("m.jsonl.gz", [gzip(a), gzip(b)].concat()),
        ("m.jsonl.zst", [zstd(a), zstd(b)].concat()),
        ("p.jsonl.zst", [skippable.clone(), zstd(a), skippable, zstd(b)].concat()),
        ("z.jsonl.gz", [gzip(&plain), vec![0; 512]].concat()),
    ];
    for (name, bytes) in members {
        let (_d, path) = crate::support::temp_file(name, &bytes);
        let o = run(&["run", path_str(&path)]);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        assert_eq!(o.stdout, expected, "{name}");
    }
    let lines = 1 + memchr::memchr_iter(b'\n', &plain).count();
    for (name, bytes, kind) in [
        ("g.jsonl.gz", [gzip(&plain), b"garbage\n".to_vec()].concat(), "gzip"),
        ("g.jsonl.zst", [zstd(&plain), b"garbage\n".to_vec()].concat(), "zstd"),
        ("zeros.jsonl.zst", [zstd(&plain), vec![0; 8]].concat(), "zstd"),
    ] {
        let (_d, path) = crate::support::temp_file(name, &bytes);
        let o = run(&["run", path_str(&path)]);
        assert_eq!(o.status.code(), Some(3), "{name}");
        let said = format!("{name}:{lines}:1: cannot read: 8 byte(s) after the end of the {kind} data are not {kind} (trailing garbage)");
        assert!(stderr(&o).contains(&said), "{name}: {}", stderr(&o));
        assert!(o.stdout.is_empty(), "{name}");
    }
    let second = gzip(b);
    let (_d, path) = crate::support::temp_file("c.jsonl.gz", &[gzip(a), second[..20].to_vec()].concat());
    let o = run(&["run", path_str(&path)]);
    assert_eq!(o.status.code(), Some(3));
    assert!(stderr(&o).contains("c.jsonl.gz:7:1: cannot read: "), "{}", stderr(&o));
}
