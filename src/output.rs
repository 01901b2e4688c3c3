//! Writing results: the compacted transcript (kept records copied through byte for
//! byte), the out-dir layout, and atomic writes (temporary file, then rename).

use crate::policy::Plan;
use crate::transcript::Transcript;
use std::io::{self, Write};
use std::path::Path;

/// Writes the compacted transcript: kept records as read (runs of them in one write),
/// injected records added, each injected line ending with `\n`.
pub fn write_transcript(w: &mut dyn Write, t: &Transcript<'_>, plan: &Plan) -> io::Result<()> {
    let src = t.src;
    let mut removed = vec![false; t.records.len()];
    for &i in &plan.removed {
        removed[t.items[i].record] = true;
    }
    // `pending` is the start of kept bytes not yet written (the BOM included).
    let mut pending = 0;
    let mut ends_with_newline = true;
    for (ri, r) in t.records.iter().enumerate() {
        if removed[ri] {
            w.write_all(&src[pending..r.span.start])?;
            pending = r.span.end;
        } else {
            ends_with_newline = r.terminated(src);
        }
        if let Some((_, line)) = plan.replacement.as_ref().filter(|(at, _)| *at == ri) {
            w.write_all(&src[pending..r.span.end])?;
            pending = r.span.end;
            write_injected(w, line, &mut ends_with_newline)?;
        }
    }
    w.write_all(&src[pending..])?;
    for line in &plan.appended {
        write_injected(w, line, &mut ends_with_newline)?;
    }
    Ok(())
}

fn write_injected(w: &mut dyn Write, line: &str, ends_with_newline: &mut bool) -> io::Result<()> {
    if !*ends_with_newline {
        w.write_all(b"\n")?;
    }
    w.write_all(line.as_bytes())?;
    w.write_all(b"\n")?;
    *ends_with_newline = true;
    Ok(())
}

/// Writes a file atomically: a temporary file in the same folder, then a rename.
pub fn write_atomic(path: &Path, write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> io::Result<()> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !dir.is_dir() {
        std::fs::create_dir_all(dir)?;
    }
    let mut tmp = tempfile::Builder::new().prefix(".rivumi-").suffix(".tmp").tempfile_in(dir)?;
    {
        let mut buf = io::BufWriter::with_capacity(1 << 20, tmp.as_file_mut());
        write(&mut buf)?;
        buf.flush()?;
    }
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// The outputs of one run, by the file name `--out-dir` gives each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    Transcript,
    Decision,
    Journal,
    Summary,
    Reanchor,
}

impl Output {
    pub const ALL: [Output; 5] =
        [Output::Transcript, Output::Decision, Output::Journal, Output::Summary, Output::Reanchor];

    pub fn file_name(self) -> &'static str {
        match self {
            Output::Transcript => "transcript.jsonl",
            Output::Decision => "decision.json",
            Output::Journal => "journal.jsonl",
            Output::Summary => "summary.md",
            Output::Reanchor => "reanchor.md",
        }
    }

    /// Writes this output of a processed transcript.
    pub fn write(self, w: &mut dyn Write, done: &crate::engine::Processed<'_>) -> io::Result<()> {
        match self {
            Output::Transcript => write_transcript(w, &done.transcript, &done.plan),
            Output::Decision => w.write_all(done.decision_json().as_bytes()),
            Output::Journal => w.write_all(done.plan.journal.to_jsonl().as_bytes()),
            Output::Summary => w.write_all(done.plan.summary_text.as_deref().unwrap_or("").as_bytes()),
            Output::Reanchor => w.write_all(done.plan.reanchor_text.as_deref().unwrap_or("").as_bytes()),
        }
    }
}

/// The outputs a run produces: the summary and re-anchor only when one was rendered.
pub fn produced(done: &crate::engine::Processed<'_>) -> Vec<Output> {
    Output::ALL
        .into_iter()
        .filter(|o| match o {
            Output::Summary => done.plan.summary_text.is_some(),
            Output::Reanchor => done.plan.reanchor_text.is_some(),
            _ => true,
        })
        .collect()
}

/// The out-dir layout for one input, each file written atomically.
pub fn write_out_dir(dir: &Path, done: &crate::engine::Processed<'_>) -> Result<(), crate::error::Error> {
    std::fs::create_dir_all(dir)
        .map_err(|e| crate::error::Error::Failed(format!("{}: cannot create: {e}", dir.display())))?;
    for out in produced(done) {
        let path = dir.join(out.file_name());
        write_atomic(&path, |w| out.write(w, done))
            .map_err(|e| crate::error::Error::Failed(format!("{}: cannot write: {e}", path.display())))?;
    }
    Ok(())
}
