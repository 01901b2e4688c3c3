//! The bytes of an input, read once. A file, a FIFO, `<(zcat f)` and stdin are all
//! opened the same way: a *head* is read first (enough to detect the format), and the
//! rest is either read into memory behind it or streamed after it, so detection never
//! consumes what the reader then misses.
//!
//! Inputs are read, never memory-mapped: a mapped file that another process truncates
//! during a run kills the reader with SIGBUS, and reading costs little more (the page
//! cache is copied once; peak memory is the same, as mapped pages count as resident).
//!
//! Memory is bounded: what is held whole (a transcript, one dataset line) may not pass
//! [`max_input_bytes`], and a stream whose first byte cannot start JSON (`/dev/zero`,
//! `/dev/urandom`) is refused at once instead of being read to its end.

use crate::error::{Error, Result};
use std::io::{self, BufRead, Read};
use std::ops::Deref;
use std::path::{Path, PathBuf};

/// The default of [`max_input_bytes`]: 4 GiB.
pub const DEFAULT_MAX_INPUT_BYTES: u64 = 4 << 30;

/// How much is read before the format is detected.
pub const SNIFF_BYTES: usize = 64 * 1024;

/// The most bytes held in memory for one transcript or one dataset line: the
/// environment variable `RIVUMI_MAX_INPUT_BYTES`, or 4 GiB.
pub fn max_input_bytes() -> u64 {
    std::env::var("RIVUMI_MAX_INPUT_BYTES").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(DEFAULT_MAX_INPUT_BYTES)
}

/// The whole bytes of an input.
#[derive(Debug, Default)]
pub struct Source(Vec<u8>);

impl Deref for Source {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl From<Vec<u8>> for Source {
    fn from(v: Vec<u8>) -> Self {
        Source(v)
    }
}

/// An input opened for reading, its head already read.
pub struct Opened {
    head: Vec<u8>,
    rest: Box<dyn Read + Send>,
    /// The name errors give (the path, or `-`).
    name: PathBuf,
    /// The size of a regular file, when known.
    size: Option<u64>,
}

impl Opened {
    /// Opens a file (or a FIFO, or a device) and reads its head.
    pub fn file(path: &Path) -> Result<Opened> {
        let cannot = |e: io::Error| Error::read(path, e);
        let file = std::fs::File::open(path).map_err(cannot)?;
        let meta = file.metadata().map_err(cannot)?;
        if meta.is_dir() {
            return Err(Error::bad_input(path, "cannot read: is a directory"));
        }
        let size = meta.is_file().then_some(meta.len());
        Opened::new(Box::new(file), path, size)
    }

    /// Standard input, read once.
    pub fn stdin() -> Result<Opened> {
        Opened::new(Box::new(io::stdin()), Path::new("-"), None)
    }

    fn new(mut rest: Box<dyn Read + Send>, name: &Path, size: Option<u64>) -> Result<Opened> {
        let mut head = Vec::with_capacity(SNIFF_BYTES);
        (&mut rest).take(SNIFF_BYTES as u64).read_to_end(&mut head).map_err(|e| read_error(name, &e))?;
        let opened = Opened { head, rest, name: name.to_path_buf(), size };
        if opened.size.is_none() {
            opened.check_start()?;
        }
        Ok(opened)
    }

    /// What was read before anything else: the format is detected from it.
    pub fn head(&self) -> &[u8] {
        &self.head
    }

    /// A stream that cannot hold JSON is refused before it is read any further.
    fn check_start(&self) -> Result<()> {
        let head = self.head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&self.head);
        let Some(at) = head.iter().position(|b| !b.is_ascii_whitespace()) else { return Ok(()) };
        if matches!(head[at], b'{' | b'[') {
            return Ok(());
        }
        let line = 1 + memchr::memchr_iter(b'\n', &head[..at]).count();
        let start = head[..at].iter().rposition(|b| *b == b'\n').map_or(0, |p| p + 1);
        Err(Error::bad_line(
            &self.name,
            line,
            at - start + 1,
            "expected a JSON object: this input does not start with one",
        ))
    }

    /// Reads the rest, up to [`max_input_bytes`].
    pub fn read_all(self) -> Result<Source> {
        let limit = max_input_bytes();
        if self.size.is_some_and(|s| s > limit) {
            return Err(too_large(&self.name, limit));
        }
        let mut buf = self.head;
        buf.reserve(self.size.map_or(0, |s| (s as usize).saturating_sub(buf.len()) + 1));
        let room = limit.saturating_sub(buf.len() as u64);
        let mut rest = self.rest.take(room.saturating_add(1));
        rest.read_to_end(&mut buf).map_err(|e| read_error(&self.name, &e))?;
        if buf.len() as u64 > limit {
            return Err(too_large(&self.name, limit));
        }
        Ok(Source(buf))
    }

    /// The whole input as a buffered stream: the head, then the rest.
    pub fn into_reader(self) -> impl BufRead + Send {
        io::BufReader::with_capacity(1 << 20, io::Cursor::new(self.head).chain(self.rest))
    }
}

fn read_error(name: &Path, e: &io::Error) -> Error {
    Error::read(name, io::Error::new(e.kind(), e.to_string()))
}

fn too_large(name: &Path, limit: u64) -> Error {
    Error::bad_input(
        name,
        format!(
            "larger than {limit} bytes, the most this tool holds in memory for one transcript \
             (set RIVUMI_MAX_INPUT_BYTES to change it)"
        ),
    )
}

/// Reads one line (with its terminator) into `buf`, refusing a line longer than
/// `limit` instead of growing without end. Returns the bytes read (0 at the end).
pub fn read_line_bounded(r: &mut impl BufRead, buf: &mut Vec<u8>, limit: u64) -> io::Result<usize> {
    let n = r.take(limit.saturating_add(1)).read_until(b'\n', buf)?;
    if n as u64 > limit {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("a line longer than {limit} bytes")));
    }
    Ok(n)
}
