//! Dataset mode (`--input-format openai`): a streaming map step. Lines are read in
//! bounded chunks, compacted in parallel, and written back in order, so memory does
//! not grow with the number of lines.

use super::inputs::Input;
use crate::dataset::{process_line, LineOutcome};
use crate::engine::Settings;
use crate::error::{Error, Exit, Result};
use crate::output::OutDir;
use rayon::prelude::*;
use std::io::{self, BufRead, IsTerminal, Read, Write};
use std::path::Path;

/// Counts for the closing line.
#[derive(Default)]
struct Counts {
    lines: usize,
    changed: usize,
    bad: usize,
}

/// Runs dataset mode over the inputs: stdout for one input, else `DIR/<name>/transcript.jsonl`.
pub fn run(inputs: &[Input], settings: &Settings, out_dir: Option<&OutDir>, jobs: usize, w: &mut dyn Write) -> Exit {
    crate::signals::install();
    let pool = crate::batch::pool(jobs);
    let mut total = Counts::default();
    let mut failed = Vec::new();
    for input in inputs {
        match one(input, settings, out_dir, &pool, w) {
            Ok(Some(counts)) => {
                total.lines += counts.lines;
                total.changed += counts.changed;
                total.bad += counts.bad;
            }
            // A reader that closed stdout early (`head`) is not an error.
            Ok(None) => return Exit::Ok,
            Err(e) => {
                crate::ui::error(&e.to_string());
                failed.push(e.exit());
            }
        }
    }
    crate::ui::note(&format!(
        "{} line(s): {} compacted, {} unchanged, {} bad",
        total.lines,
        total.changed,
        total.lines - total.changed - total.bad,
        total.bad
    ));
    match failed[..] {
        // A single input keeps its own exit code (3 for bad input).
        [code] if inputs.len() == 1 => code,
        [] if total.bad == 0 => Exit::Ok,
        _ => Exit::Failed,
    }
}

/// One dataset file: its counts, or `None` when stdout was closed by its reader.
fn one(
    input: &Input,
    settings: &Settings,
    out_dir: Option<&OutDir>,
    pool: &rayon::ThreadPool,
    w: &mut dyn Write,
) -> Result<Option<Counts>> {
    let opened = input.open()?;
    let size = opened.size();
    let reader = opened.into_reader();
    let Some(out) = out_dir else {
        let streamed = stream(reader, w, &input.path, settings, pool, size)
            .and_then(|c| w.flush().map(|()| c).map_err(Stop::Write));
        return match streamed {
            Ok(c) => Ok(Some(c)),
            Err(Stop::Write(e)) if e.kind() == io::ErrorKind::BrokenPipe => Ok(None),
            Err(Stop::Write(e)) => Err(Error::stdout(e)),
            Err(Stop::Input(e)) => Err(e),
        };
    };
    let (mut counts, mut input_error, mut reader) = (None, None, Some(reader));
    let written = out.write_folder(&input.out_name, &["transcript.jsonl"], |_, w| {
        match stream(reader.take().expect("one file"), w, &input.path, settings, pool, size) {
            Ok(c) => {
                counts = Some(c);
                Ok(())
            }
            Err(Stop::Write(e)) => Err(e),
            Err(Stop::Input(e)) => {
                input_error = Some(e);
                Err(io::Error::other("stopped")) // abandons the temporary file
            }
        }
    });
    if let Some(e) = input_error {
        return Err(e);
    }
    written?;
    Ok(Some(counts.unwrap_or_default()))
}

/// Why streaming stopped: the output could not be written, or the input (or a user's
/// hook) failed. Kept apart so a closed stdout is recognised by its kind.
enum Stop {
    Write(io::Error),
    Input(Error),
}

/// Bytes of whole lines read at a time: large enough that a block keeps every core
/// busy, small enough that memory stays flat.
const BLOCK: usize = 4 << 20;

/// Blocks being compacted or written at once (see `stream`).
const IN_FLIGHT: usize = 3;

/// A block of whole lines (the first `len` bytes of `bytes`; the rest is a recycled
/// buffer's old content) and the number of the first line.
struct Block {
    bytes: Vec<u8>,
    len: usize,
    first_line: usize,
}

impl Block {
    fn data(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// Streams a dataset: a reader thread cuts the input into blocks of whole lines (no
/// copy per line), the pool compacts each block's lines in parallel, and the outputs
/// are written in order while the next block is read.
fn stream(
    reader: impl BufRead + Send + 'static,
    w: &mut dyn Write,
    file: &Path,
    settings: &Settings,
    pool: &rayon::ThreadPool,
    size: Option<u64>,
) -> std::result::Result<Counts, Stop> {
    let progress = Progress::new(size);
    let mut blocks = BlockReader::new(reader, file);
    let threads = pool.current_num_threads();
    if threads == 1 {
        // One job is one thread: read, compact and write in turn (a process per core,
        // as under Spark or `xargs -P`, gets no helper threads competing for it).
        let (mut counts, mut piece, mut spent) = (Counts::default(), Piece::default(), Vec::new());
        while let Some(block) = blocks.next(std::mem::take(&mut spent)) {
            let block = block?;
            piece.fill(&block, 0, &split_lines(block.data()), file, settings);
            write_block(&block, std::slice::from_ref(&piece), w, &mut counts, &progress)?;
            spent = block.bytes;
        }
        progress.finish();
        return Ok(counts);
    }
    // The reader is not joined: after an error here (a closed stdout) it may be waiting
    // on an input that never ends, and the process does not wait for it.
    let (tx, rx) = std::sync::mpsc::sync_channel::<std::result::Result<Block, Stop>>(2);
    // Read blocks come back to be filled again: memory is touched once, not per block.
    let (spent_tx, spent_rx) = std::sync::mpsc::channel::<Vec<u8>>();
    std::thread::spawn(move || {
        while let Some(block) = blocks.next(spent_rx.try_recv().unwrap_or_default()) {
            let failed = block.is_err();
            if tx.send(block).is_err() || failed {
                return;
            }
        }
    });
    let mut counts = Counts::default();
    // Three blocks in flight: while this thread writes block k, the pool works on k+1
    // and k+2, so neither the writing nor the last pieces of a block leave a core
    // waiting (with two, the end of each block could leave one idle: `perf stat` gave
    // 1.6–1.9 CPUs used with two, 1.85–2.0 with three, on a noisy machine).
    // Each block reports back on its own channel, waited for in the order read; its
    // pieces come back with it, to be filled again for a later block.
    let mut free: Vec<Vec<Piece>> = Vec::new();
    pool.in_place_scope(|scope| {
        let mut in_flight: std::collections::VecDeque<std::sync::mpsc::Receiver<Compacted>> =
            std::collections::VecDeque::new();
        let mut result = Ok(());
        // A read error ends the stream after the blocks read before it are written.
        let mut read_error = None;
        for block in &rx {
            let block = match block {
                Ok(b) => b,
                Err(e) => {
                    read_error = Some(e);
                    break;
                }
            };
            let mut outputs = free.pop().unwrap_or_default();
            let (done, report) = std::sync::mpsc::channel();
            scope.spawn(move |_| {
                let lines = split_lines(block.data());
                let pieces = pieces(&lines, block.len, threads);
                outputs.resize_with(pieces.len().max(outputs.len()), Piece::default);
                outputs.par_iter_mut().zip(pieces.par_iter()).for_each(|(out, &(first, piece))| {
                    out.fill(&block, first, piece, file, settings);
                });
                let _ = done.send((block, outputs, pieces.len()));
            });
            in_flight.push_back(report);
            if in_flight.len() == IN_FLIGHT {
                let oldest = in_flight.pop_front().expect("blocks in flight");
                let (block, outputs, n) = oldest.recv().expect("a spawned block reports back");
                result = write_block(&block, &outputs[..n], w, &mut counts, &progress);
                let _ = spent_tx.send(block.bytes);
                free.push(outputs);
                if result.is_err() {
                    break;
                }
            }
        }
        // The blocks still in flight finish (the scope waits for them); written unless
        // writing or a hook failed before.
        for report in in_flight {
            let (block, outputs, n) = report.recv().expect("a spawned block reports back");
            if result.is_ok() {
                result = write_block(&block, &outputs[..n], w, &mut counts, &progress);
            }
        }
        result.and(read_error.map_or(Ok(()), Err))
    })?;
    progress.finish();
    Ok(counts)
}

/// A compacted block: its pieces, and how many of them it used.
type Compacted = (Block, Vec<Piece>, usize);

/// Writes a compacted block's pieces in order and counts them; the first piece that a
/// user's hook failed stops the stream after what came before it is written.
fn write_block(
    block: &Block,
    outputs: &[Piece],
    w: &mut dyn Write,
    counts: &mut Counts,
    progress: &Progress,
) -> std::result::Result<(), Stop> {
    let mut lines = 0;
    for out in outputs {
        lines += out.lines;
        counts.lines += out.lines;
        counts.changed += out.changed;
        counts.bad += out.bad.len();
        for message in &out.bad {
            progress.suspend(|| crate::ui::error(message));
        }
        out.write(block, w).map_err(Stop::Write)?;
        if let Some(e) = &out.failed {
            return Err(Stop::Input(Error::Failed(e.clone())));
        }
    }
    progress.advance(lines, block.len);
    Ok(())
}

/// The output of a piece of a block: what to write, in order — runs of lines kept as
/// they were (written straight from the block, never copied) and rewritten lines (in
/// `bytes`) — the bad lines' messages, and the failure that stopped it (a user's hook).
#[derive(Default)]
struct Piece {
    bytes: Vec<u8>,
    parts: Vec<Part>,
    lines: usize,
    changed: usize,
    bad: Vec<String>,
    failed: Option<String>,
}

/// A run of output bytes: from the block (lines kept), or from the piece's own bytes.
enum Part {
    Block(std::ops::Range<usize>),
    Own(std::ops::Range<usize>),
}

impl Piece {
    /// Compacts the lines of `ranges` (the first is line `first` of the block).
    fn fill(
        &mut self,
        block: &Block,
        first: usize,
        ranges: &[std::ops::Range<usize>],
        file: &Path,
        settings: &Settings,
    ) {
        self.bytes.clear();
        self.parts.clear();
        self.bad.clear();
        (self.lines, self.changed, self.failed) = (0, 0, None);
        for (k, range) in ranges.iter().enumerate() {
            let n = block.first_line + first + k;
            let raw = &block.data()[range.clone()];
            let outcome = match std::str::from_utf8(strip_terminator(raw)) {
                Ok(text) => process_line(text, file, n, settings),
                Err(e) => {
                    Ok(LineOutcome::Bad(format!("{}:{n}:{}: invalid UTF-8", file.display(), e.valid_up_to() + 1)))
                }
            };
            self.lines += 1;
            match outcome {
                Ok(LineOutcome::Changed(line)) => {
                    self.changed += 1;
                    let start = self.bytes.len();
                    self.bytes.extend_from_slice(line.as_bytes());
                    self.bytes.extend_from_slice(&raw[strip_terminator(raw).len()..]);
                    self.parts.push(Part::Own(start..self.bytes.len()));
                }
                Ok(LineOutcome::Unchanged) => self.keep(range.clone()),
                Ok(LineOutcome::Bad(message)) => {
                    self.bad.push(message);
                    self.keep(range.clone());
                }
                Err(e) => {
                    self.lines -= 1;
                    self.failed = Some(e.to_string());
                    return;
                }
            }
        }
    }

    /// A line kept as it was: joined to the run of kept lines before it.
    fn keep(&mut self, range: std::ops::Range<usize>) {
        if let Some(Part::Block(run)) = self.parts.last_mut() {
            if run.end == range.start {
                run.end = range.end;
                return;
            }
        }
        self.parts.push(Part::Block(range));
    }

    fn write(&self, block: &Block, w: &mut dyn Write) -> io::Result<()> {
        for part in &self.parts {
            match part {
                Part::Block(r) => w.write_all(&block.data()[r.clone()])?,
                Part::Own(r) => w.write_all(&self.bytes[r.clone()])?,
            }
        }
        Ok(())
    }
}

/// Cuts an input into blocks of whole lines, read straight into buffers the consumer
/// gives back (their bytes already initialised: nothing is zeroed again); a line longer
/// than the input limit is an error, found while it is read (an endless line never
/// fills memory).
struct BlockReader<R> {
    reader: R,
    file: std::path::PathBuf,
    limit: u64,
    /// The start of a line that ran past the last block.
    carry: Vec<u8>,
    line_no: usize,
    eof: bool,
}

impl<R: Read> BlockReader<R> {
    fn new(reader: R, file: &Path) -> BlockReader<R> {
        let limit = crate::source::max_input_bytes();
        BlockReader { reader, file: file.to_path_buf(), limit, carry: Vec::new(), line_no: 1, eof: false }
    }

    fn too_long(&self, line: usize) -> Stop {
        Stop::Input(Error::bad_line(
            &self.file,
            line,
            1,
            format!("cannot read: a line longer than {} bytes", self.limit),
        ))
    }

    /// The next block, read into `buf`; `None` at the end (or after an error).
    fn next(&mut self, mut buf: Vec<u8>) -> Option<std::result::Result<Block, Stop>> {
        /// More bytes read at a time for a line that runs past the block.
        const MORE: usize = 1 << 20;
        if buf.capacity() == 0 {
            // Room for a block at once (touched only as it fills), never moved by growth.
            buf.reserve_exact(BLOCK + MORE);
        }
        while !self.eof {
            let mut len = self.carry.len();
            if buf.len() < len {
                buf.resize(len, 0);
            }
            buf[..len].copy_from_slice(&self.carry);
            self.carry.clear();
            // The end of the last whole line in the block (a carried part has none).
            let mut last_end: Option<usize> = None;
            while len < BLOCK || last_end.is_none() {
                if (len - last_end.unwrap_or(0)) as u64 > self.limit {
                    let at = self.line_no + memchr::memchr_iter(b'\n', &buf[..len]).count();
                    self.eof = true;
                    return Some(Err(self.too_long(at)));
                }
                // A new buffer grows with what is read (a small input touches little).
                let full = BLOCK.saturating_sub(len).max(MORE);
                let want = if buf.len() >= len + full { full } else { full.min(len.max(64 << 10)) };
                if buf.len() < len + want {
                    buf.resize(len + want, 0);
                }
                match read_full(&mut self.reader, &mut buf[len..len + want]) {
                    Ok(0) => {
                        self.eof = true;
                        break;
                    }
                    Ok(n) => {
                        if let Some(p) = memchr::memrchr(b'\n', &buf[len..len + n]) {
                            last_end = Some(len + p + 1);
                        }
                        len += n;
                    }
                    Err(e) => {
                        self.eof = true;
                        let message = format!("cannot read: {e}");
                        return Some(Err(Stop::Input(Error::bad_line(&self.file, self.line_no, 1, message))));
                    }
                }
            }
            let cut = if self.eof { len } else { last_end.unwrap_or(len) };
            self.carry.extend_from_slice(&buf[cut..len]);
            if let Some(k) = long_line(&buf[..cut], self.limit) {
                self.eof = true;
                return Some(Err(self.too_long(self.line_no + k)));
            }
            if cut == 0 {
                continue;
            }
            let first_line = self.line_no;
            self.line_no += memchr::memchr_iter(b'\n', &buf[..cut]).count();
            return Some(Ok(Block { bytes: buf, len: cut, first_line }));
        }
        None
    }
}

/// Reads until `buf` is full or the input ends; the number of bytes read.
fn read_full(reader: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match reader.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// The byte ranges of the lines of a block, terminators included.
/// Contiguous pieces of a block's lines (with the index of each piece's first line), cut
/// by bytes so that every thread gets many pieces of about the same work: the block
/// ends when its last piece does, and a piece of a few long lines would keep the other
/// cores waiting.
fn pieces(lines: &[std::ops::Range<usize>], bytes: usize, threads: usize) -> Vec<(usize, &[std::ops::Range<usize>])> {
    let target = (bytes / (threads.max(1) * 32)).max(16 << 10);
    let mut out = Vec::new();
    let (mut first, mut size) = (0, 0);
    for (k, line) in lines.iter().enumerate() {
        size += line.len();
        if size >= target {
            out.push((first, &lines[first..=k]));
            (first, size) = (k + 1, 0);
        }
    }
    if first < lines.len() {
        out.push((first, &lines[first..]));
    }
    out
}

fn split_lines(bytes: &[u8]) -> Vec<std::ops::Range<usize>> {
    let mut lines = Vec::with_capacity(bytes.len() / 256 + 1);
    let mut start = 0;
    for end in memchr::memchr_iter(b'\n', bytes) {
        lines.push(start..end + 1);
        start = end + 1;
    }
    if start < bytes.len() {
        lines.push(start..bytes.len());
    }
    lines
}

/// The index of the first line of a block longer than `limit`, if any.
fn long_line(bytes: &[u8], limit: u64) -> Option<usize> {
    let mut start = 0;
    for (k, end) in memchr::memchr_iter(b'\n', bytes).chain(std::iter::once(bytes.len())).enumerate() {
        if (end - start) as u64 > limit {
            return Some(k);
        }
        start = end + 1;
    }
    None
}

/// The progress of a dataset on a terminal: lines, MB and MB/s (nothing otherwise).
struct Progress {
    bar: Option<indicatif::ProgressBar>,
    lines: std::cell::Cell<usize>,
}

impl Progress {
    fn new(size: Option<u64>) -> Progress {
        let lines = std::cell::Cell::new(0);
        if !io::stderr().is_terminal() {
            return Progress { bar: None, lines };
        }
        let bar = size.map_or_else(indicatif::ProgressBar::new_spinner, indicatif::ProgressBar::new);
        let template = if size.is_some() {
            "{bar:30} {bytes}/{total_bytes} ({binary_bytes_per_sec}) {msg} {eta}"
        } else {
            "{spinner} {bytes} ({binary_bytes_per_sec}) {msg}"
        };
        if let Ok(style) = indicatif::ProgressStyle::with_template(template) {
            bar.set_style(style);
        }
        bar.set_draw_target(indicatif::ProgressDrawTarget::stderr_with_hz(4));
        Progress { bar: Some(bar), lines }
    }

    fn advance(&self, lines: usize, bytes: usize) {
        self.lines.set(self.lines.get() + lines);
        if let Some(bar) = &self.bar {
            bar.set_message(format!("{} lines", self.lines.get()));
            bar.inc(bytes as u64);
        }
    }

    fn suspend(&self, f: impl FnOnce()) {
        match &self.bar {
            Some(bar) => bar.suspend(f),
            None => f(),
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

fn strip_terminator(raw: &[u8]) -> &[u8] {
    let raw = raw.strip_suffix(b"\n").unwrap_or(raw);
    raw.strip_suffix(b"\r").unwrap_or(raw)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    proptest! {
        /// Pieces cover every line once, in order, each with the index of its first line.
        #[test]
        fn pieces_cover_the_lines_in_order(sizes in prop::collection::vec(1usize..60_000, 0..300), threads in 1usize..9) {
            let mut lines = Vec::new();
            let mut at = 0;
            for n in &sizes {
                lines.push(at..at + n);
                at += n;
            }
            let pieces = super::pieces(&lines, at, threads);
            let mut next = 0;
            for (first, piece) in &pieces {
                prop_assert_eq!(*first, next);
                prop_assert!(!piece.is_empty());
                prop_assert_eq!(*piece, &lines[next..next + piece.len()]);
                next += piece.len();
            }
            prop_assert_eq!(next, lines.len());
        }
    }
}
