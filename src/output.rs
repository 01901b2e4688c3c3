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
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::Builder::new().prefix(".rivumi-").suffix(".tmp").tempfile_in(dir)?;
    {
        let mut buf = io::BufWriter::with_capacity(1 << 20, tmp.as_file_mut());
        write(&mut buf)?;
        buf.flush()?;
    }
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
