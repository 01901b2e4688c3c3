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
    assert!(stderr(&o).contains("cut.jsonl.gz: cannot read: "), "{}", stderr(&o));
}
