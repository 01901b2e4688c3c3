//! Errors the library reports, each knowing the exit code it maps to (SPEC 9).

use std::fmt;
use std::path::{Path, PathBuf};

/// The documented exit codes, in one place (also in the man page and README).
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
    /// A file that cannot be read or a configuration that is wrong: exit 3.
    BadInput { file: PathBuf, message: String },
    /// Misuse of the command line found before reading input: exit 2.
    Usage(String),
    /// A hook or summarizer failed, or a checkpoint was refused: exit 4.
    Failed(String),
}

impl Error {
    pub fn bad_line(file: &Path, line: usize, column: usize, message: impl Into<String>) -> Self {
        Error::BadLine { at: Location { file: file.to_path_buf(), line, column }, message: message.into() }
    }

    pub fn bad_input(file: &Path, message: impl Into<String>) -> Self {
        Error::BadInput { file: file.to_path_buf(), message: message.into() }
    }

    pub fn exit(&self) -> Exit {
        match self {
            Error::BadLine { .. } | Error::BadInput { .. } => Exit::BadInput,
            Error::Usage(_) => Exit::Usage,
            Error::Failed(_) => Exit::Failed,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::BadLine { at, message } => write!(f, "{at}: {message}"),
            Error::BadInput { file, message } => write!(f, "{}: {message}", file.display()),
            Error::Usage(m) | Error::Failed(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for Error {}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Where serde_json stopped in `line`: the 1-based character column, and its message
/// without the " at line L column C" it appends (the location is put in front instead).
pub fn serde_position(e: &serde_json::Error, line: &str) -> (usize, String) {
    let mut cut = e.column().saturating_sub(1).min(line.len());
    while !line.is_char_boundary(cut) {
        cut -= 1;
    }
    let msg = e.to_string();
    let msg = msg.rfind(" at line ").map_or(msg.as_str(), |i| &msg[..i]).to_string();
    (line[..cut].chars().count() + 1, msg)
}
