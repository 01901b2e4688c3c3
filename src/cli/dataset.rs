//! Dataset mode (`--input-format openai`): a streaming map step. Lines are read in
//! bounded chunks, compacted in parallel, and written back in order, so memory does
//! not grow with the number of lines.

use super::inputs::Input;
use crate::dataset::{process_line, LineOutcome};
use crate::engine::Settings;
use crate::error::{Error, Exit, Result};
use crate::output::OutDir;
use std::io::{self, BufRead, IsTerminal, Read, Write};
use std::path::Path;

/// Counts for the closing line.
#[derive(Default)]
struct Counts {
    lines: usize,
    changed: usize,
    /// Changed lines that came out shorter than they went in.
    shortened: usize,
    blank: usize,
    bad: usize,
}

impl Counts {
    fn add(&mut self, other: &Counts) {
        self.lines += other.lines;
        self.changed += other.changed;
        self.shortened += other.shortened;
        self.blank += other.blank;
        self.bad += other.bad;
    }
}

/// Runs dataset mode over the inputs: stdout for one input, else `DIR/<name>/transcript.jsonl`.
pub fn run(inputs: &[Input], settings: &Settings, out_dir: Option<&OutDir>, jobs: usize, w: &mut dyn Write) -> Exit {
    crate::signals::install();
    let threads = jobs.max(1);
    let mut total = Counts::default();
    let mut failed = Vec::new();
    let mut rejects: Rejects = match &settings.rejects {
        None => None,
        Some(path) => match std::fs::File::create(path) {
            Ok(f) => Some(io::BufWriter::new(f)),
            Err(e) => {
                crate::ui::error(&Error::write(path, e).to_string());
                return Exit::Failed;
            }
        },
    };
    for input in inputs {
        match one(input, settings, out_dir, threads, w, &mut rejects) {
            Ok(Some(counts)) => total.add(&counts),
            // A reader that closed stdout early (`head`) is not an error.
            Ok(None) => return Exit::Ok,
            Err(e) => {
                crate::ui::error(&e.to_string());
                failed.push(e.exit());
            }
        }
    }
    if let (Some(r), Some(path)) = (rejects.as_mut(), &settings.rejects) {
        if let Err(e) = r.flush() {
            crate::ui::error(&Error::write(path, e).to_string());
            failed.push(Exit::Failed);
        }
    }
    // Rows are the lines that are not blank, as `validate` and `stats` count them.
    let rows = total.lines - total.blank;
    let blank = if total.blank > 0 { format!(" (and {} blank line(s))", total.blank) } else { String::new() };
    let what = if settings.skip_bad_lines { "bad, left out" } else { "bad, echoed" };
    crate::ui::note(&format!(
        "{rows} row(s){blank}: {} shortened, {} changed but not shorter, {} unchanged, {} {what}",
        total.shortened,
        total.changed - total.shortened,
        rows - total.changed - total.bad,
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
    threads: usize,
    w: &mut dyn Write,
    rejects: &mut Rejects,
) -> Result<Option<Counts>> {
    let opened = input.open()?;
    let size = opened.size();
    let reader = opened.into_reader();
    let Some(out) = out_dir else {
        let streamed = stream(reader, w, &input.path, settings, threads, size, rejects)
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
        match stream(reader.take().expect("one file"), w, &input.path, settings, threads, size, rejects) {
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

/// Where bad lines go besides stderr (`--rejects FILE`): one JSON object a line, with
/// the line's number, the error and its text.
type Rejects = Option<io::BufWriter<std::fs::File>>;

/// Why streaming stopped: the output could not be written, or the input (or a user's
/// hook) failed. Kept apart so a closed stdout is recognised by its kind.
enum Stop {
    Write(io::Error),
    Input(Error),
}

/// Bytes of whole lines read at a time: large enough that handing a block over costs
/// nothing beside compacting it, small enough that memory stays flat.
const BLOCK: usize = 4 << 20;

/// The block size for an input of `size` bytes (when known) and `threads` workers: a
/// small dataset is still cut into enough blocks to keep every worker busy.
fn block_size(size: Option<u64>, threads: usize) -> usize {
    match size {
        Some(n) if threads > 1 => usize::try_from(n / (threads as u64 * 8)).unwrap_or(BLOCK).clamp(64 << 10, BLOCK),
        _ => BLOCK,
    }
}

/// A block of whole lines (the first `len` bytes of `bytes`; the rest is a recycled
/// buffer's old content) and the number of the first line.
struct Block {
    bytes: Vec<u8>,
    len: usize,
    first_line: usize,
    /// The block stands for one line longer than the input limit, skipped as it was
    /// read: it is a bad line, and an empty line takes its place in the output.
    oversized: bool,
}

impl Block {
    fn data(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// Streams a dataset: the input is cut into blocks of whole lines (no copy per line),
/// each block is compacted whole by one thread, and the outputs are written in order.
/// With one job, one thread reads, compacts and writes in turn (a process per core, as
/// under Spark or `xargs -P`, gets no helper threads competing for it). With more, each
/// worker takes the next block from the input, compacts it on its own core (the bytes
/// it read are still in its cache) and hands it to this thread, which writes blocks in
/// the order read.
fn stream(
    reader: impl BufRead + Send + 'static,
    w: &mut dyn Write,
    file: &Path,
    settings: &Settings,
    threads: usize,
    size: Option<u64>,
    rejects: &mut Rejects,
) -> std::result::Result<Counts, Stop> {
    let progress = Progress::new(size);
    let mut blocks = BlockReader::new(reader, file, block_size(size, threads));
    let mut counts = Counts::default();
    if threads == 1 {
        let (mut piece, mut spent) = (Piece::default(), Vec::new());
        while let Some(block) = blocks.next(std::mem::take(&mut spent)) {
            let block = block?;
            piece.fill(&block, file, settings);
            write_block(&block, &piece, w, &mut counts, &progress, rejects)?;
            spent = block.bytes;
        }
        progress.finish();
        return Ok(counts);
    }
    // A block's buffer and output come back here once written, to be filled again: so
    // many exist (memory is bounded, and touched once rather than per block).
    let (free_tx, free_rx) = std::sync::mpsc::channel::<(Vec<u8>, Piece)>();
    for _ in 0..threads + 2 {
        let _ = free_tx.send((Vec::new(), Piece::default()));
    }
    let input = std::sync::Arc::new(std::sync::Mutex::new(Shared { blocks, free: free_rx, next: 0, done: false }));
    let (tx, rx) = std::sync::mpsc::channel::<Compacted>();
    // The workers are not joined: after an error here (a closed stdout) one may be
    // waiting on an input that never ends, and the process does not wait for it. They
    // stop once this thread has gone (their results or buffers have nowhere to go).
    let shared = std::sync::Arc::new((file.to_path_buf(), settings.clone()));
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let (input, tx, shared) = (input.clone(), tx.clone(), shared.clone());
            std::thread::spawn(move || work(&input, &tx, &shared.0, &shared.1))
        })
        .collect();
    drop(tx);
    // Blocks finish out of order: each waits here until those read before it are written.
    let mut waiting = std::collections::BTreeMap::new();
    let mut next = 0;
    for (seq, compacted) in &rx {
        waiting.insert(seq, compacted);
        while let Some(compacted) = waiting.remove(&next) {
            next += 1;
            // A read error ends the stream after the blocks read before it are written.
            let Some((block, piece)) = compacted? else {
                progress.finish();
                return Ok(counts);
            };
            write_block(&block, &piece, w, &mut counts, &progress, rejects)?;
            let _ = free_tx.send((block.bytes, piece));
        }
    }
    // Every worker has gone and the end was never reached: one of them panicked (they
    // can all be joined now); its panic goes on here rather than a short output.
    for worker in workers {
        if let Err(panic) = worker.join() {
            std::panic::resume_unwind(panic);
        }
    }
    unreachable!("dataset workers ended before the input did, without a panic")
}

/// A block compacted by a worker, with its number; `None` where the input ends, or the
/// error that ended it.
type Compacted = (usize, std::result::Result<Option<(Block, Piece)>, Stop>);

/// The input shared by the workers: the next block is read by whoever takes the lock.
struct Shared<R> {
    blocks: BlockReader<R>,
    free: std::sync::mpsc::Receiver<(Vec<u8>, Piece)>,
    /// The number of the next block read.
    next: usize,
    done: bool,
}

/// A worker: takes the next block, compacts it, hands it over; until the input ends or
/// the writer has gone.
fn work<R: Read>(
    input: &std::sync::Mutex<Shared<R>>,
    tx: &std::sync::mpsc::Sender<Compacted>,
    file: &Path,
    settings: &Settings,
) {
    loop {
        let (seq, block, mut piece) = {
            let mut input = input.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if input.done {
                return;
            }
            let Ok((buf, piece)) = input.free.recv() else { return };
            let seq = input.next;
            match input.blocks.next(buf) {
                Some(Ok(block)) => {
                    input.next += 1;
                    (seq, block, piece)
                }
                end => {
                    input.done = true;
                    let end = match end {
                        Some(Err(e)) => Err(e),
                        _ => Ok(None),
                    };
                    let _ = tx.send((seq, end));
                    return;
                }
            }
        };
        piece.fill(&block, file, settings);
        if tx.send((seq, Ok(Some((block, piece))))).is_err() {
            return;
        }
    }
}

/// Writes a compacted block's pieces in order and counts them; the first piece that a
/// user's hook failed stops the stream after what came before it is written.
fn write_block(
    block: &Block,
    out: &Piece,
    w: &mut dyn Write,
    counts: &mut Counts,
    progress: &Progress,
    rejects: &mut Rejects,
) -> std::result::Result<(), Stop> {
    counts.lines += out.lines;
    counts.changed += out.changed;
    counts.shortened += out.shortened;
    counts.blank += out.blank;
    counts.bad += out.bad.len();
    for (n, message, range) in &out.bad {
        progress.suspend(|| crate::ui::error(message));
        if let Some(r) = rejects {
            let text =
                range.as_ref().map(|range| String::from_utf8_lossy(strip_terminator(&block.data()[range.clone()])));
            let line = serde_json::json!({"line": n, "error": message, "text": text});
            writeln!(r, "{line}").map_err(Stop::Write)?;
        }
    }
    out.write(block, w).map_err(Stop::Write)?;
    if let Some(e) = &out.failed {
        return Err(Stop::Input(Error::Failed(e.clone())));
    }
    progress.advance(out.lines, block.len);
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
    shortened: usize,
    blank: usize,
    /// The bad lines: number, message, and where the line is in the block (`None`: a
    /// line too long to hold).
    bad: Vec<(usize, String, Option<std::ops::Range<usize>>)>,
    failed: Option<String>,
}

/// A run of output bytes: from the block (lines kept), or from the piece's own bytes.
enum Part {
    Block(std::ops::Range<usize>),
    Own(std::ops::Range<usize>),
}

impl Piece {
    /// Compacts the lines of a block.
    fn fill(&mut self, block: &Block, file: &Path, settings: &Settings) {
        self.bytes.clear();
        self.parts.clear();
        self.bad.clear();
        (self.lines, self.changed, self.shortened, self.blank, self.failed) = (0, 0, 0, 0, None);
        let limit = crate::source::max_input_bytes();
        for (k, range) in split_lines(block.data()).into_iter().enumerate() {
            let n = block.first_line + k;
            let raw = &block.data()[range.clone()];
            if block.oversized || strip_terminator(raw).len() as u64 > limit {
                // Not held, not echoed: an empty line keeps the lines matched.
                self.lines += 1;
                let message = format!(
                    "{}:{n}:1: a line longer than {limit} bytes, the most this tool holds for one line \
                     (set RIVUMI_MAX_INPUT_BYTES to change it): an empty line is written in its place",
                    file.display()
                );
                self.bad.push((n, message, None));
                if !settings.skip_bad_lines {
                    let start = self.bytes.len();
                    self.bytes.push(b'\n');
                    self.parts.push(Part::Own(start..self.bytes.len()));
                }
                continue;
            }
            let outcome = match crate::dataset::line_text(raw, n) {
                Ok(text) => process_line(text, file, n, settings),
                Err(column) => {
                    Ok(LineOutcome::Bad(format!("{}:{n}:{column}: {}", file.display(), crate::error::NOT_UTF8)))
                }
            };
            // A byte-order mark before the first line stays before it.
            let bom = if n == 1 && raw.starts_with(b"\xEF\xBB\xBF") { 3 } else { 0 };
            self.lines += 1;
            if strip_terminator(raw).iter().all(u8::is_ascii_whitespace) {
                self.blank += 1;
            }
            match outcome {
                Ok(LineOutcome::Changed(line)) => {
                    self.changed += 1;
                    self.shortened += usize::from(line.len() < strip_terminator(raw).len() - bom);
                    let start = self.bytes.len();
                    self.bytes.extend_from_slice(&raw[..bom]);
                    self.bytes.extend_from_slice(line.as_bytes());
                    self.bytes.extend_from_slice(&raw[strip_terminator(raw).len()..]);
                    self.parts.push(Part::Own(start..self.bytes.len()));
                }
                Ok(LineOutcome::Unchanged) => self.keep(range.clone()),
                Ok(LineOutcome::Bad(message)) => {
                    self.bad.push((n, message, Some(range.clone())));
                    if !settings.skip_bad_lines {
                        self.keep(range.clone());
                    }
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
    /// Bytes of whole lines in a block (at least: a line is never cut).
    block: usize,
    limit: u64,
    /// The start of a line that ran past the last block.
    carry: Vec<u8>,
    line_no: usize,
    eof: bool,
    /// A line longer than the limit whose start was read: the rest is skipped next.
    skipping: Option<usize>,
}

impl<R: Read> BlockReader<R> {
    fn new(reader: R, file: &Path, block: usize) -> BlockReader<R> {
        let limit = crate::source::max_input_bytes();
        BlockReader {
            reader,
            file: file.to_path_buf(),
            block,
            limit,
            carry: Vec::new(),
            line_no: 1,
            eof: false,
            skipping: None,
        }
    }

    /// The next block, read into `buf`; `None` at the end (or after an error).
    fn next(&mut self, mut buf: Vec<u8>) -> Option<std::result::Result<Block, Stop>> {
        /// More bytes read at a time for a line that runs past the block.
        const MORE: usize = 1 << 20;
        if buf.capacity() == 0 {
            // Room for a block at once (touched only as it fills), never moved by growth.
            buf.reserve_exact(self.block + MORE);
        }
        if let Some(line) = self.skipping.take() {
            return Some(self.skip_line(buf, line));
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
            while len < self.block || last_end.is_none() {
                if (len - last_end.unwrap_or(0)) as u64 > self.limit {
                    // A line too long to hold: the lines before it go on as a block, the
                    // line itself is skipped as it is read (it never fills memory) and
                    // stands as one bad line; the lines after it are read as ever.
                    let start = last_end.unwrap_or(0);
                    let before = memchr::memchr_iter(b'\n', &buf[..start]).count();
                    self.skipping = Some(self.line_no + before);
                    if start == 0 {
                        let line = self.skipping.take().expect("just set");
                        return Some(self.skip_line(buf, line));
                    }
                    let first_line = self.line_no;
                    self.line_no += before;
                    return Some(Ok(Block { bytes: buf, len: start, first_line, oversized: false }));
                }
                // A new buffer grows with what is read (a small input touches little).
                let full = if len < self.block { self.block - len } else { MORE };
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
            if cut == 0 {
                continue;
            }
            let first_line = self.line_no;
            self.line_no += memchr::memchr_iter(b'\n', &buf[..cut]).count();
            return Some(Ok(Block { bytes: buf, len: cut, first_line, oversized: false }));
        }
        None
    }

    /// Reads past the rest of line `line` (too long to hold) up to its newline; what
    /// follows it is carried to the next block. The block stands for the line.
    fn skip_line(&mut self, mut buf: Vec<u8>, line: usize) -> std::result::Result<Block, Stop> {
        self.carry.clear();
        let mut chunk = vec![0u8; 64 << 10];
        loop {
            match self.reader.read(&mut chunk) {
                Ok(0) => {
                    self.eof = true;
                    break;
                }
                Ok(n) => {
                    if let Some(p) = memchr::memchr(b'\n', &chunk[..n]) {
                        self.carry.extend_from_slice(&chunk[p + 1..n]);
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.eof = true;
                    let message = format!("cannot read: {e}");
                    return Err(Stop::Input(Error::bad_line(&self.file, line, 1, message)));
                }
            }
        }
        self.line_no = line + 1;
        buf.clear();
        buf.push(b'\n');
        Ok(Block { bytes: buf, len: 1, first_line: line, oversized: true })
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

/// The progress of a dataset on a terminal: lines, MB and MB/s (nothing otherwise).
struct Progress {
    bar: Option<indicatif::ProgressBar>,
    lines: std::cell::Cell<usize>,
}

impl Progress {
    fn new(size: Option<u64>) -> Progress {
        let lines = std::cell::Cell::new(0);
        // On a terminal that stdout shares, a bar would draw over the lines written.
        if !io::stderr().is_terminal() || io::stdout().is_terminal() {
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
