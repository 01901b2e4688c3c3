//! Errors the library reports, each knowing the exit code it maps to (SPEC 9), and the
//! exit codes themselves: one table that `--help`, the man page and the README use.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// The documented exit codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Exit {
    /// Success, also when nothing needed compaction.
    Ok = 0,
    /// `check` found differences or `validate` found violations.
    Differences = 1,
    /// A usage error, found before any input is read.
    Usage = 2,
    /// Bad input: a transcript or configuration that cannot be read or parsed.
    BadInput = 3,
    /// A hook or summarizer failed, a checkpoint was refused, or a batch had failures.
    Failed = 4,
    // A signal is not an exit code: the process re-raises it (see `signals`).
}

impl Exit {
    pub fn code(self) -> i32 {
        self as i32
    }

    /// Every exit status with its meaning, in order (the last row is the signals').
    pub const TABLE: [(&'static str, &'static str); 6] = [
        ("0", "success, also when nothing needed compaction, and when stdout is closed early by a reader such as head"),
        ("1", "check found differences, or validate found violations"),
        (
            "2",
            "usage error, or an output that cannot be made (--out, --rejects, --svg, --out-dir), found before any \
             input is read: nothing was done and no output was committed",
        ),
        (
            "3",
            "bad input: a transcript or configuration that cannot be read or parsed (file:line:column in the message; \
             3 wins over 1); a dataset whose input breaks off (a cut gzip stream) still gives the rows before the break",
        ),
        (
            "4",
            "done, with failures: a pre-compact hook or summarizer failed, a checkpoint was refused, an input of a \
             batch failed, dataset rows were bad, or an output failed while it was written",
        ),
        (
            "128+N",
            "killed by signal N (130 SIGINT, 143 SIGTERM, 129 SIGHUP): the signal is re-raised after cleaning up; \
             in a batch the first signal lets the files being written finish, a second stops at once; \
             no temporary file and no half-written output folder is left",
        ),
    ];

    /// The table as `--help` shows it.
    pub fn help_text() -> String {
        let mut s = String::from("Exit codes:\n");
        for (code, meaning) in Exit::TABLE {
            s.push_str(&format!("  {code:>5}  {meaning}\n"));
        }
        s.pop();
        s
    }
}

/// Where in a file something went wrong: 1-based line and column (columns count characters).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub file: PathBuf,
    pub line: usize,
    pub column: usize,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file.display(), self.line, self.column)
    }
}

/// An error a caller must be able to tell apart from the others.
#[derive(Debug)]
pub enum Error {
    /// A line of a transcript that cannot be read: exit 3.
    BadLine { at: Location, message: String },
    /// A file that cannot be parsed or a configuration that is wrong: exit 3.
    BadInput { file: PathBuf, message: String },
    /// A file that cannot be read: exit 3, with the I/O error as its cause.
    Read { path: PathBuf, source: io::Error },
    /// An output that cannot be written: exit 4, with the I/O error as its cause (a
    /// closed stdout is found by walking the causes, and is not an error).
    Write { path: PathBuf, source: io::Error },
    /// Misuse of the command line found before reading input: exit 2.
    Usage(String),
    /// One of the user's commands (a hook, the summarizer) failed: exit 4.
    Command { which: Command, command: String, failure: CommandFailure },
    /// A local checkpoint was refused (its turns overlap, or it would not shrink the
    /// context): exit 4, nothing written.
    CheckpointRefused { file: PathBuf, reason: String },
    /// Any other failure of an action (an output not accepted, a row not written): exit 4.
    Failed(String),
}

/// Which of the user's commands it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    PreCompactHook,
    PostCompactHook,
    Summarizer,
}

impl Command {
    /// How messages name it.
    pub fn as_str(self) -> &'static str {
        match self {
            Command::PreCompactHook => "pre-compact hook",
            Command::PostCompactHook => "post-compact hook",
            Command::Summarizer => "summarizer",
        }
    }
}

/// How one of the user's commands failed.
#[derive(Debug)]
pub enum CommandFailure {
    /// It could not be started (`sh` missing, too many processes).
    Start(io::Error),
    /// Waiting for it failed.
    Wait(io::Error),
    /// It was still running after this many seconds, and was killed with what it started.
    TimedOut(u64),
    /// It exited with this code; what it printed on stderr (escaped, the first line for a
    /// hook, the whole of it for the summarizer).
    Exit { code: i32, stderr: String },
    /// A signal ended it.
    Killed { stderr: String },
    /// The summarizer printed more than this many bytes.
    TooLong(usize),
    /// The summarizer printed nothing.
    Empty,
}

impl Error {
    pub fn bad_line(file: &Path, line: usize, column: usize, message: impl Into<String>) -> Self {
        Error::BadLine { at: Location { file: file.to_path_buf(), line, column }, message: message.into() }
    }

    /// The same error with its line `by` lines further on (a piece of an input read on
    /// its own, numbered from its start).
    #[must_use]
    pub fn shift_line(mut self, by: usize) -> Self {
        if let Error::BadLine { at, .. } = &mut self {
            at.line += by;
        }
        self
    }

    /// A bad line at `at` (line, column) when the place is known; the file otherwise.
    pub fn located(file: &Path, at: Option<(usize, usize)>, message: impl Into<String>) -> Self {
        match at {
            Some((line, column)) => Error::bad_line(file, line, column, message),
            None => Error::bad_input(file, message),
        }
    }

    pub fn bad_input(file: &Path, message: impl Into<String>) -> Self {
        Error::BadInput { file: file.to_path_buf(), message: message.into() }
    }

    pub fn read(path: &Path, source: io::Error) -> Self {
        Error::Read { path: path.to_path_buf(), source }
    }

    pub fn write(path: &Path, source: io::Error) -> Self {
        Error::Write { path: path.to_path_buf(), source }
    }

    /// Standard output could not be written.
    pub fn stdout(source: io::Error) -> Self {
        Error::write(Path::new("<stdout>"), source)
    }

    pub fn exit(&self) -> Exit {
        match self {
            Error::BadLine { .. } | Error::BadInput { .. } | Error::Read { .. } => Exit::BadInput,
            Error::Usage(_) => Exit::Usage,
            Error::Write { .. } | Error::Command { .. } | Error::CheckpointRefused { .. } | Error::Failed(_) => {
                Exit::Failed
            }
        }
    }

    /// Whether it stops a dataset run rather than marking one row bad: a failed hook or
    /// summarizer (the user's command fails the same way for every row) or another
    /// failed action.
    pub fn stops_a_dataset(&self) -> bool {
        matches!(self, Error::Command { .. } | Error::Failed(_))
    }

    /// Whether the cause is a reader that closed our stdout or pipe (`head`).
    pub fn is_closed_pipe(&self) -> bool {
        let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(self);
        while let Some(e) = cause {
            if e.downcast_ref::<io::Error>().is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe) {
                return true;
            }
            cause = e.source();
        }
        false
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::BadLine { at, message } => write!(f, "{at}: {message}"),
            Error::BadInput { file, message } => write!(f, "{}: {message}", file.display()),
            Error::Read { path, source } if path == Path::new("-") => {
                write!(f, "-: cannot read standard input: {source}")
            }
            Error::Read { path, source } => write!(f, "{}: cannot read: {source}", path.display()),
            Error::Write { path, source } if path == Path::new("<stdout>") => {
                write!(f, "cannot write to standard output: {source}")
            }
            Error::Write { path, source } => write!(f, "{}: cannot write: {source}", path.display()),
            Error::Usage(m) | Error::Failed(m) => f.write_str(m),
            Error::Command { which, command, failure } => command_failed(f, *which, command, failure),
            Error::CheckpointRefused { file, reason } => write!(f, "{}: {reason}", file.display()),
        }
    }
}

/// The words of a command's failure (a hook's name its stderr's first line; the
/// summarizer's the whole of it).
fn command_failed(f: &mut fmt::Formatter<'_>, which: Command, cmd: &str, failure: &CommandFailure) -> fmt::Result {
    let (name, summarizer) = (which.as_str(), which == Command::Summarizer);
    let lead = if summarizer { "summarizer: " } else { "" };
    match failure {
        CommandFailure::Start(e) => write!(f, "{lead}cannot start `{cmd}`: {e}"),
        CommandFailure::Wait(e) => write!(f, "{lead}{e}"),
        CommandFailure::TimedOut(secs) => write!(f, "{lead}`{cmd}` timed out after {secs}s"),
        CommandFailure::Exit { code, stderr } if summarizer => {
            write!(f, "{name} `{cmd}` failed (exit code {code}): {stderr}")
        }
        CommandFailure::Exit { code, stderr } => write!(f, "{name} `{cmd}` failed with exit code {code}: {stderr}"),
        CommandFailure::Killed { stderr } if summarizer => {
            write!(f, "{name} `{cmd}` failed (killed by a signal): {stderr}")
        }
        CommandFailure::Killed { .. } => write!(f, "{name} `{cmd}` was killed by a signal"),
        CommandFailure::TooLong(limit) => {
            write!(f, "{name} `{cmd}` printed more than {limit} bytes, the most a summary may hold")
        }
        CommandFailure::Empty => write!(f, "{name} `{cmd}` printed no summary"),
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Read { source, .. } | Error::Write { source, .. } => Some(source),
            Error::Command { failure: CommandFailure::Start(e) | CommandFailure::Wait(e), .. } => Some(e),
            _ => None,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Where serde_json stopped in `line`: the 1-based character column, and its message
/// without the " at line L column C" it appends (the location is put in front instead).
pub fn serde_position(e: &serde_json::Error, line: &str) -> (usize, String) {
    // A file's first line has its mark left out before it is parsed; one that starts a
    // later line is most often a file joined after another, mark and all, by `cat`.
    if line.starts_with('\u{feff}') && e.column() <= 1 {
        return (1, BOM_INSIDE.to_string());
    }
    let mut cut = e.column().saturating_sub(1).min(line.len());
    while !line.is_char_boundary(cut) {
        cut -= 1;
    }
    let msg = e.to_string();
    let msg = msg.rfind(" at line ").map_or(msg.as_str(), |i| &msg[..i]).to_string();
    // serde_json's two words for a surrogate escape without its pair ("unexpected end
    // of hex escape", "lone leading surrogate in hex escape") name neither the escape
    // nor what is wrong with it: the escape, at its own column. Python's `json.dumps`
    // writes one for a string holding a lone surrogate.
    if msg.contains("hex escape") {
        if let Some((at, escape)) = lone_surrogate_before(line, cut) {
            let said = format!(
                "a lone surrogate `{escape}` (half of a UTF-16 pair without the other half): no character, and JSON \
                 parsers refuse it"
            );
            return (line[..at].chars().count() + 1, said);
        }
    }
    // Python's `json.dumps` writes a float that is no number as `NaN`, `Infinity` or
    // `-Infinity` (unless `allow_nan=False`); no JSON parser reads them.
    let start = if line[..cut].ends_with('-') { cut - 1 } else { cut };
    let where_a_value = matches!(msg.as_str(), "expected value" | "invalid number");
    if let Some(word) =
        ["NaN", "Infinity", "-Infinity"].into_iter().find(|w| where_a_value && line[start..].starts_with(w))
    {
        let said = format!(
            "`{word}` is not JSON: Python's `json.dumps` writes it for a float that is no number (write null, or pass \
             allow_nan=False to find where)"
        );
        return (line[..start].chars().count() + 1, said);
    }
    (line[..cut].chars().count() + 1, elided(&msg).into_owned())
}

/// A message as a line of a report can hold it: serde quotes the value it refuses
/// (`unknown variant `…``, `invalid type: string "…"`), `validate` the ids it names, and
/// a value may be of any length. A long message keeps its start and its end (what was
/// expected), the middle elided.
pub fn elided(msg: &str) -> std::borrow::Cow<'_, str> {
    const HEAD: usize = 200;
    const TAIL: usize = 150;
    let count = msg.chars().count();
    if count <= HEAD + TAIL + 50 {
        return std::borrow::Cow::Borrowed(msg);
    }
    let head: String = msg.chars().take(HEAD).collect();
    let tail: String = msg.chars().skip(count - TAIL).collect();
    std::borrow::Cow::Owned(format!("{head} … ({} characters left out) … {tail}", count - HEAD - TAIL))
}

/// The last `\uXXXX` escape of a surrogate (D800 to DFFF) that starts in `text` before
/// the byte offset `cut` (serde may point inside it): its offset and its text. A `\u`
/// after an escaped backslash (`\\ud800`) is text, not an escape.
fn lone_surrogate_before(text: &str, cut: usize) -> Option<(usize, &str)> {
    text.rmatch_indices("\\u").filter(|&(at, _)| at < cut).find_map(|(at, _)| {
        let backslashes = text.as_bytes()[..at].iter().rev().take_while(|&&b| b == b'\\').count();
        let escape = text.get(at..at + 6).filter(|_| backslashes % 2 == 0)?;
        let unit = u16::from_str_radix(&escape[2..], 16).ok()?;
        (0xD800..=0xDFFF).contains(&unit).then_some((at, escape))
    })
}

/// The one wording of a byte-order mark that does not start the file.
pub const BOM_INSIDE: &str = "a byte-order mark (U+FEFF) starts this line: only a file's first line may have one \
     (was a file joined to another with its mark, as `cat` does?)";

/// The one wording of a text that is not UTF-8.
pub const NOT_UTF8: &str = "invalid UTF-8: expected UTF-8 text";

/// `bytes` as text, or the 1-based column (in characters) of the first byte that is
/// not UTF-8: every reader reports a bad byte at the same place.
/// Checked with SIMD (`simdutf8`, several times the standard library's speed on long
/// lines); a bad line is looked at again to find where.
pub fn utf8(bytes: &[u8]) -> std::result::Result<&str, usize> {
    simdutf8::basic::from_utf8(bytes).or_else(|_| {
        std::str::from_utf8(bytes).map_err(|e| String::from_utf8_lossy(&bytes[..e.valid_up_to()]).chars().count() + 1)
    })
}
