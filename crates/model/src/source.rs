//! The bytes of an input, read once. A file, a FIFO, `<(zcat f)` and stdin are all
//! opened the same way: a *head* is read first (enough to detect the format), and the
//! rest is either read into memory behind it or streamed after it, so detection never
//! consumes what the reader then misses.
//!
//! What `run`, `decide` and `stats` process whole may be a large regular file mapped
//! rather than read ([`crate::mapped`]: faulting in a fresh buffer the size of the input
//! was most of a large run's time); every other reader reads.
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

/// The whole bytes of an input: read into memory, or a large file mapped.
#[derive(Debug)]
pub enum Source {
    Read(Vec<u8>),
    Mapped(crate::mapped::Mapped),
}

impl Default for Source {
    fn default() -> Self {
        Source::Read(Vec::new())
    }
}

impl Deref for Source {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Source::Read(v) => v,
            Source::Mapped(m) => m.bytes(),
        }
    }
}

impl From<Vec<u8>> for Source {
    fn from(v: Vec<u8>) -> Self {
        Source::Read(v)
    }
}

impl Source {
    /// `Err` (naming `name`) when the input is a mapped file that another process
    /// shrank while it was read: its bytes are then not the file's.
    pub fn intact(&self, name: &Path) -> Result<()> {
        match self {
            Source::Mapped(m) => m.intact().map_err(|e| Error::read(name, e)),
            Source::Read(_) => Ok(()),
        }
    }

    /// Runs `f` with this input as the thread's current one: an output committed
    /// meanwhile is refused if a mapped input shrank ([`crate::mapped::check_current`]).
    pub fn current<T>(&self, f: impl FnOnce() -> T) -> T {
        match self {
            Source::Mapped(m) => m.current(f),
            Source::Read(_) => f(),
        }
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
    /// The regular file itself, for reading it in parallel.
    file: Option<std::sync::Arc<std::fs::File>>,
    /// How the input was compressed (it is read decompressed).
    compressed: Option<Compression>,
}

/// The compressions read transparently, by their magic bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    Gzip,
    Zstd,
}

impl Compression {
    /// The compression whose magic bytes start `head`.
    pub fn of(head: &[u8]) -> Option<Compression> {
        if head.starts_with(&[0x1f, 0x8b]) {
            Some(Compression::Gzip)
        } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd])
            || (head.len() >= 4 && head[0] & 0xf0 == 0x50 && head[1..4] == [0x2a, 0x4d, 0x18])
        {
            // A zstd frame, or a skippable frame before one (every `pzstd` output).
            Some(Compression::Zstd)
        } else {
            None
        }
    }

    /// The compression or archive, not read, whose magic bytes start `head`: its name
    /// and the command that unpacks it to stdout.
    pub fn unread(head: &[u8]) -> Option<(&'static str, &'static str)> {
        const KNOWN: [(&[u8], &str, &str); 4] = [
            (b"\xfd7zXZ\x00", "xz-compressed", "xz -dc"),
            (b"\x04\x22\x4d\x18", "lz4-compressed", "lz4 -dc"),
            (b"PK\x03\x04", "a zip archive", "unzip -p"),
            (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive", "7z x -so"),
        ];
        // bzip2: `BZh`, the block size, then a block's magic or the end's (π, √π).
        let bzip2 = head.len() >= 10
            && head.starts_with(b"BZh")
            && (b'1'..=b'9').contains(&head[3])
            && matches!(&head[4..10], b"\x31\x41\x59\x26\x53\x59" | b"\x17\x72\x45\x38\x50\x90");
        if bzip2 {
            return Some(("bzip2-compressed", "bzip2 -dc"));
        }
        KNOWN.iter().find(|(magic, ..)| head.starts_with(magic)).map(|&(_, name, unpack)| (name, unpack))
    }

    /// The file name suffixes of compressed inputs (a walk finds `x.jsonl.gz`).
    pub const SUFFIXES: [&'static str; 3] = ["gz", "zst", "zstd"];

    /// A file name without its compression suffix (`a.jsonl.gz` → `a.jsonl`).
    pub fn strip_suffix(name: &str) -> &str {
        Compression::SUFFIXES
            .iter()
            .find_map(|c| name.strip_suffix(c).and_then(|n| n.strip_suffix('.')))
            .unwrap_or(name)
    }

    fn decoder(self, raw: Box<dyn Read + Send>) -> io::Result<Box<dyn Read + Send>> {
        Ok(Box::new(Members {
            kind: self,
            member: Some(Member::start(self, io::BufReader::with_capacity(1 << 17, raw))?),
        }))
    }

    /// Whether `next` can start a member of this compression: its magic bytes, or, when
    /// fewer bytes than a magic number are left, its first byte (a member cut that short
    /// is read as one, and its decoder says where it breaks off).
    fn may_start(self, next: &[u8]) -> bool {
        if next.len() >= 4 {
            return Compression::of(next) == Some(self);
        }
        match (self, next.first()) {
            (Compression::Gzip, Some(&b)) => b == 0x1f,
            (Compression::Zstd, Some(&b)) => b == 0x28 || b & 0xf0 == 0x50,
            (_, None) => false,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
        }
    }
}

type Raw = io::BufReader<Box<dyn Read + Send>>;

/// What is left of an input that could not be read further: its error, at every read.
struct Broken {
    kind: io::ErrorKind,
    message: String,
}

impl Read for Broken {
    fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
        Err(io::Error::new(self.kind, self.message.clone()))
    }
}

/// The decoder of one gzip member or zstd frame, which gives back the bytes after it.
enum Member {
    Gzip(flate2::bufread::GzDecoder<Raw>),
    Zstd(zstd::stream::read::Decoder<'static, Raw>),
}

impl Member {
    fn start(kind: Compression, raw: Raw) -> io::Result<Member> {
        Ok(match kind {
            Compression::Gzip => Member::Gzip(flate2::bufread::GzDecoder::new(raw)),
            Compression::Zstd => Member::Zstd(zstd::stream::read::Decoder::with_buffer(raw)?.single_frame()),
        })
    }

    fn rest(self) -> Raw {
        match self {
            Member::Gzip(d) => d.into_inner(),
            Member::Zstd(d) => d.finish(),
        }
    }
}

/// Compressed members one after the other, read as one stream: `cat a.gz b.gz`, the
/// frames `pzstd` writes. What follows the last member must be nothing, or zeros after
/// gzip (tape padding, which gzip and Python skip too); anything else is an error that
/// says so, not a lost member: `gzip -dc` would warn and Python would refuse.
struct Members {
    kind: Compression,
    member: Option<Member>,
}

impl Read for Members {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let n = match &mut self.member {
                None => return Ok(0),
                Some(Member::Gzip(d)) => d.read(buf)?,
                Some(Member::Zstd(d)) => d.read(buf)?,
            };
            if n > 0 || buf.is_empty() {
                return Ok(n);
            }
            let mut raw = self.member.take().expect("a member was being read").rest();
            let next = raw.fill_buf()?;
            if next.is_empty() {
                return Ok(0);
            }
            if self.kind.may_start(next) {
                self.member = Some(Member::start(self.kind, raw)?);
                continue;
            }
            let (mut bytes, mut zeros) = (0u64, true);
            loop {
                let chunk = raw.fill_buf()?;
                if chunk.is_empty() {
                    break;
                }
                zeros &= chunk.iter().all(|&b| b == 0);
                bytes += chunk.len() as u64;
                let len = chunk.len();
                raw.consume(len);
            }
            if zeros && self.kind == Compression::Gzip {
                return Ok(0);
            }
            let kind = self.kind.name();
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{bytes} byte(s) after the end of the {kind} data are not {kind} (trailing garbage)"),
            ));
        }
    }
}

/// An input's name as a command to run on it shows it: `FILE` for standard input.
fn shown_in_command(name: &Path) -> String {
    if name == Path::new("-") {
        "FILE".into()
    } else {
        crate::ui::escape(&name.display().to_string())
    }
}

/// Whether a head is UTF-16 text, and in which byte order: a byte-order mark (not
/// UTF-32's), or the first two characters ASCII with a NUL beside each (JSON text
/// starts with ASCII, and UTF-8 JSON holds no NUL byte there).
fn utf16(head: &[u8]) -> Option<&'static str> {
    match head {
        [0xFF, 0xFE, 0, 0, ..] | [0, 0, 0xFE, 0xFF, ..] => None,
        [0xFF, 0xFE, ..] => Some("little-endian, with a byte-order mark"),
        [0xFE, 0xFF, ..] => Some("big-endian, with a byte-order mark"),
        [a, 0, b, 0, ..] if a.is_ascii() && b.is_ascii() && *a != 0 && *b != 0 => Some("little-endian"),
        [0, a, 0, b, ..] if a.is_ascii() && b.is_ascii() && *a != 0 && *b != 0 => Some("big-endian"),
        _ => None,
    }
}

impl Opened {
    /// Opens a file (or a FIFO, or a device) and reads its head.
    pub fn file(path: &Path) -> Result<Opened> {
        let cannot = |e: io::Error| Error::read(path, e);
        let file = std::fs::File::open(path).map_err(cannot)?;
        let meta = file.metadata().map_err(cannot)?;
        if meta.is_dir() {
            // Worded as any file that cannot be read ("cannot read: is a directory"),
            // with the kind a caller can tell (Python raises `IsADirectoryError`).
            return Err(Error::read(path, io::ErrorKind::IsADirectory.into()));
        }
        let size = meta.is_file().then_some(meta.len());
        let file = std::sync::Arc::new(file);
        let mut opened = Opened::new(Box::new(SharedFile(file.clone())), path, size)?;
        if opened.compressed.is_none() {
            opened.file = size.map(|_| file);
        }
        Ok(opened)
    }

    /// Bytes already in memory (a case file of `check`), decompressed when they are
    /// compressed, with the bounds of any input.
    pub fn bytes(bytes: Vec<u8>, name: &Path) -> Result<Source> {
        let size = bytes.len() as u64;
        Opened::new(Box::new(io::Cursor::new(bytes)), name, Some(size))?.read_all()
    }

    /// An input made in memory (a folder's files joined), its head read as a file's.
    pub fn memory(bytes: Vec<u8>, name: &Path) -> Result<Opened> {
        let size = bytes.len() as u64;
        Opened::new(Box::new(io::Cursor::new(bytes)), name, Some(size))
    }

    /// Standard input, read once.
    pub fn stdin() -> Result<Opened> {
        Opened::new(Box::new(io::stdin()), Path::new("-"), None)
    }

    fn new(mut rest: Box<dyn Read + Send>, name: &Path, mut size: Option<u64>) -> Result<Opened> {
        let mut compressed = None;
        let mut layers = 0;
        let head = loop {
            let mut head = Vec::with_capacity(SNIFF_BYTES);
            if let Err(e) = (&mut rest).take(SNIFF_BYTES as u64).read_to_end(&mut head) {
                // An input that breaks off in its head (a small cut `.gz`) is read as
                // far as it goes: the error comes where the rest would, so a dataset
                // still gives its whole rows and every reader names where it broke.
                rest = Box::new(Broken { kind: e.kind(), message: e.to_string() });
            }
            let Some(compression) = Compression::of(&head) else { break head };
            // A compressed input is read through its decoder (known by its magic bytes,
            // whatever its name); the head is read again, decompressed. Layers are
            // peeled in a loop, and only a few: a compression of a compression of … is
            // an attack on memory, not an input.
            layers += 1;
            if layers > MAX_COMPRESSION_LAYERS {
                return Err(Error::bad_input(
                    name,
                    format!(
                        "compressed more than {MAX_COMPRESSION_LAYERS} times over: refusing to decompress it further"
                    ),
                ));
            }
            let raw: Box<dyn Read + Send> = Box::new(io::Cursor::new(head).chain(rest));
            rest = compression.decoder(raw).map_err(|e| Error::read(name, e))?;
            compressed = compressed.or(Some(compression));
            size = None;
        };
        if let Some((what, unpack)) = Compression::unread(&head) {
            let shown = shown_in_command(name);
            return Err(Error::bad_line(
                name,
                1,
                1,
                format!(
                    "this input is {what}, which is not read (gzip and zstd are): unpack it first, for example `{unpack} {shown}` piped in as `-`"
                ),
            ));
        }
        if let Some(order) = utf16(&head) {
            let shown = shown_in_command(name);
            let convert = match compressed {
                Some(c) => format!("{} -dc {shown} | iconv -f UTF-16 -t UTF-8", c.name()),
                None => format!("iconv -f UTF-16 -t UTF-8 {shown}"),
            };
            return Err(Error::bad_line(
                name,
                1,
                1,
                format!(
                    "this input is UTF-16 text ({order}), as Windows PowerShell's `>` writes it, and inputs are UTF-8: convert it first, for example `{convert}` piped in as `-`"
                ),
            ));
        }
        let opened = Opened { head, rest, name: name.to_path_buf(), size, file: None, compressed };
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
        self.read_whole(false)
    }

    /// [`Opened::read_all`], a large regular file mapped instead (see [`crate::mapped`]);
    /// the caller checks [`Source::intact`] before it trusts what it made of it.
    pub fn map_or_read_all(self) -> Result<Source> {
        self.read_whole(crate::mapped::enabled())
    }

    fn read_whole(self, map: bool) -> Result<Source> {
        let limit = max_input_bytes();
        if self.size.is_some_and(|s| s > limit) {
            return Err(too_large(&self.name, limit));
        }
        if let (Some(size), Some(file)) = (self.size, self.file.as_ref()) {
            if size >= PARALLEL_READ_AT {
                let len = usize::try_from(size).map_err(|_| too_large(&self.name, limit))?;
                if let Some(m) = map.then(|| crate::mapped::Mapped::new(file, len)).flatten() {
                    return Ok(Source::Mapped(m));
                }
                return read_regular(file, size, &self.name).map(Source::Read);
            }
        }
        let mut buf = self.head;
        buf.reserve(self.size.map_or(0, |s| (s as usize).saturating_sub(buf.len()) + 1));
        let room = limit.saturating_sub(buf.len() as u64);
        let mut rest = self.rest.take(room.saturating_add(1));
        read_bounded(&mut rest, &mut buf, limit).map_err(|e| broken_after(&self.name, &buf, &e))?;
        if buf.len() as u64 > limit {
            return Err(too_large(&self.name, limit));
        }
        Ok(Source::Read(buf))
    }

    /// The size of a regular file, when known.
    pub fn size(&self) -> Option<u64> {
        self.size
    }

    /// The whole input as a buffered stream: the head, then the rest.
    pub fn into_reader(self) -> impl BufRead + Send {
        io::BufReader::with_capacity(1 << 20, self.into_stream())
    }

    /// The whole input unbuffered, for a reader that reads large blocks itself (a
    /// buffer between would be zeroed and copied through for nothing).
    pub fn into_stream(self) -> impl Read + Send {
        io::Cursor::new(self.head).chain(self.rest)
    }
}

/// How many compressions of a compression an input may be (a `.jsonl.gz.zst` is two).
pub const MAX_COMPRESSION_LAYERS: usize = 4;

/// Reads `r` to its end into `buf`, growing it at most to `limit + 1` bytes: what is
/// decompressed is counted as it streams, and the buffer never doubles past the bound
/// (`read_to_end` would reserve twice a 4 GiB input before refusing it).
fn read_bounded(r: &mut impl Read, buf: &mut Vec<u8>, limit: u64) -> io::Result<()> {
    let cap = usize::try_from(limit.saturating_add(1)).unwrap_or(usize::MAX);
    loop {
        let want = buf.capacity().max(1 << 20).saturating_mul(2).min(cap);
        if buf.len() == buf.capacity() {
            if want <= buf.len() {
                return Ok(()); // full: the caller refuses it
            }
            buf.reserve_exact(want - buf.len());
        }
        // Exactly the room there is: `read_to_end` then never grows the buffer itself.
        let room = buf.capacity() - buf.len();
        let n = (&mut *r).take(room as u64).read_to_end(buf)?;
        if n < room {
            return Ok(());
        }
    }
}

/// Regular files at least this large are mapped, or read by several threads at once.
const PARALLEL_READ_AT: u64 = 32 << 20;

/// A shared file read through its cursor (the head, then the rest).
struct SharedFile(std::sync::Arc<std::fs::File>);

impl Read for SharedFile {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        (&*self.0).read(buf)
    }
}

/// Reads a large regular file whole, in pieces read at their offsets by two threads
/// into one buffer: the copy out of the page cache and the page faults of a fresh
/// buffer are what reading costs over mapping, and they split across cores. The size
/// is the one seen at open; a file that shrinks meanwhile is an error, never garbage.
fn read_regular(file: &std::fs::File, size: u64, name: &Path) -> Result<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let len = usize::try_from(size).map_err(|_| too_large(name, max_input_bytes()))?;
    let mut buf = vec![0u8; len];
    let half = len / 2;
    let (first, second) = buf.split_at_mut(half);
    let read_at = |part: &mut [u8], at: u64| file.read_exact_at(part, at);
    let (a, b) = std::thread::scope(|s| {
        let other = s.spawn(|| read_at(second, half as u64));
        (read_at(first, 0), other.join().unwrap_or_else(|_| Err(io::Error::other("reader thread panicked"))))
    });
    a.and(b).map_err(|e| Error::read(name, e))?;
    Ok(buf)
}

// No transparent-huge-page advice on this buffer: with the kernel's default `defrag`
// setting (`madvise`), a region advised MADV_HUGEPAGE is compacted for huge pages in the
// page fault itself, and right after another program freed its memory (jq, a build)
// that stall cost 0.1 s of system time on a 156 MB input (0.35 s against 0.25 s without
// the advice); warm, the advice saved 0.05 s. Measured the way users run (bench/README.md),
// no advice is the faster and the steadier.

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
/// `limit` instead of growing without end. Returns the bytes read (0 at the end). After
/// a read error `buf` holds what was read of the line (see [`broken_at`]); after a line
/// too long, nothing (the error is at its start).
pub fn read_line_bounded(r: &mut impl BufRead, buf: &mut Vec<u8>, limit: u64) -> io::Result<usize> {
    let n = r.take(limit.saturating_add(1)).read_until(b'\n', buf)?;
    if n as u64 > limit {
        buf.clear();
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("a line longer than {limit} bytes")));
    }
    Ok(n)
}

/// The error of an input that could not be read past line `line`, of which `partial`
/// was read: named where it broke off (a truncated gzip or zstd stream, a failing
/// disk), at the character after the last one read (a character cut in two counts).
pub fn broken_at(file: &Path, line: usize, partial: &[u8], e: &io::Error) -> Error {
    let characters = partial.iter().filter(|&&b| !is_continuation(b)).count();
    Error::bad_line(file, line, characters + 1, format!("cannot read: {e}"))
}

/// A byte that continues a UTF-8 character rather than starting one.
fn is_continuation(b: u8) -> bool {
    b & 0xc0 == 0x80
}

/// [`broken_at`] for an input read whole up to the error: `read` is all it gave.
fn broken_after(file: &Path, read: &[u8], e: &io::Error) -> Error {
    let start = memchr::memrchr(b'\n', read).map_or(0, |p| p + 1);
    broken_at(file, 1 + memchr::memchr_iter(b'\n', &read[..start]).count(), &read[start..], e)
}
