//! An imported transcript is built from the importer's typed records, never by reading
//! back the text they are written as: the transcript built must be the one the
//! canonical reader reads from that text, record for record and item for item, on every
//! bundled case and every real file of every format. The records themselves are one
//! type both ways: each reads back from its line as the record it was.

use crate::support::root;
use rivumi_compact::formats::{self, InputFormat};
use rivumi_compact::transcript::record::CanonicalRecord;
use std::path::Path;

/// Imports `path`; returns whether it was an imported format (canonical input is read
/// as it is, with nothing built).
fn same_as_read_back(path: &Path) -> bool {
    let raw = rivumi_compact::source::Opened::file(path).unwrap().read_all().unwrap();
    let canonical = formats::import(raw, path, InputFormat::Auto).unwrap_or_else(|e| panic!("{e}"));
    if canonical.imported.is_none() {
        return false;
    }
    // One type both ways: every record reads back, from the line it is written as, as
    // the record it was.
    let (_, records) = canonical.imported.as_ref().unwrap();
    let text = std::str::from_utf8(&canonical.bytes).unwrap();
    for (record, line) in records.iter().zip(text.lines().skip(1)) {
        let back: CanonicalRecord<'_> = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert_eq!(&back, record, "{}: {line}", path.display());
    }
    assert_eq!(text.lines().count(), records.len() + 1, "{}", path.display());
    let built = canonical.transcript(path).unwrap_or_else(|e| panic!("{e}"));
    let read = rivumi_compact::transcript::parse(&canonical.bytes, path).unwrap();
    let shown = |t: &rivumi_compact::transcript::Transcript<'_>| {
        format!(
            "{:#?}\n{:#?}\n{:#?}\n{:?} {:?} {:?}",
            t.records,
            t.items,
            t.session,
            t.unknown_records,
            t.orphan_results,
            t.call_owner.len()
        )
    };
    let (b, r) = (shown(&built), shown(&read));
    if b != r {
        let line = b.lines().zip(r.lines()).position(|(x, y)| x != y).unwrap_or(0);
        panic!(
            "{}: built and read differ at line {line}:\n{}\n{}",
            path.display(),
            b.lines().nth(line).unwrap_or(""),
            r.lines().nth(line).unwrap_or("")
        );
    }
    true
}

#[test]
fn every_bundled_import_is_built_as_it_would_be_read() {
    let mut n = 0;
    for dir in ["testdata/cases", "testdata/check"] {
        for case in std::fs::read_dir(root().join(dir)).unwrap().map(|e| e.unwrap().path()) {
            for name in ["input.jsonl", "input.json", "input.traj"] {
                let path = case.join(name);
                if path.is_file() && formats::dataset_format(&path, &std::fs::read(&path).unwrap()).is_none() {
                    n += usize::from(same_as_read_back(&path));
                }
            }
        }
    }
    assert!(n >= 20, "{n} imported cases");
}

#[test]
#[cfg_attr(realdata_absent, ignore = "../shared/realdata is absent")]
fn every_real_file_is_built_as_it_would_be_read() {
    let mut n = 0;
    for sub in std::fs::read_dir(root().join("../shared/realdata")).unwrap().map(|e| e.unwrap().path()) {
        if !sub.is_dir() {
            continue;
        }
        for file in std::fs::read_dir(&sub).unwrap().map(|e| e.unwrap().path()) {
            n += usize::from(same_as_read_back(&file));
        }
    }
    assert!(n >= 9, "{n} real files imported");
}
