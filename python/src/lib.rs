//! The native part of the `rivumi_compact` Python package: the library's dataset engine,
//! decisions and replay, with the GIL released while they run. The Python side
//! (`rivumi_compact/__init__.py`) turns keyword arguments into a configuration and
//! Python objects into the JSON the engine reads.

use pyo3::exceptions::{PyIsADirectoryError, PyOSError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::pybacked::{PyBackedBytes, PyBackedStr};
use pyo3::types::{PyBytes, PyString};
use rivumi_compact::config::Profile;
use rivumi_compact::dataset::stream::{stream_input, Counts, Observer};
use rivumi_compact::dataset::{self, LineOutcome, Row};
use rivumi_compact::engine::Settings;
use rivumi_compact::error::Error;
use rivumi_compact::formats::InputFormat;
use rivumi_compact::inputs::Input;
use std::collections::VecDeque;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

pyo3::create_exception!(_native, BadLine, PyValueError, "A bad line under on_bad=\"raise\": (index, message).");

/// The name bad lines and errors are reported under.
const SOURCE: &str = "<lines>";

fn to_py(e: Error) -> PyErr {
    match e {
        // A folder is what Python's own `open` says it is.
        Error::Read { ref source, .. } if source.kind() == io::ErrorKind::IsADirectory => {
            PyIsADirectoryError::new_err(e.to_string())
        }
        Error::Read { .. } | Error::Write { .. } => PyOSError::new_err(e.to_string()),
        e => PyValueError::new_err(e.to_string()),
    }
}

fn value_enum<T: clap::ValueEnum>(what: &str, name: &str) -> PyResult<T> {
    T::from_str(name, true).map_err(|_| PyValueError::new_err(format!("unknown {what} {name:?}")))
}

/// Settings from a configuration (a JSON object laid as `--config` is), a profile and
/// an input format.
fn settings(config: &str, profile: Option<&str>, input_format: Option<&str>) -> PyResult<Settings> {
    let value: serde_json::Value =
        serde_json::from_str(config).map_err(|e| PyValueError::new_err(format!("configuration: {e}")))?;
    let mut s = Settings::new(Some((Path::new("configuration"), &value, None)), &[]).map_err(to_py)?;
    if let Some(p) = profile {
        s = s.with_profile(value_enum::<Profile>("profile", p)?);
    }
    if let Some(f) = input_format {
        s.input_format = value_enum::<InputFormat>("input format", f)?;
    }
    Ok(s)
}

/// The configuration tree Python built from its keyword arguments, as the JSON object
/// `--config` holds: the package needs no JSON module of its own to hand it over
/// (importing `json` for it cost every script 12 ms).
#[pyfunction]
fn config_json(tree: &Bound<'_, PyAny>) -> PyResult<String> {
    Ok(config_value(tree, 0)?.to_string())
}

/// A configuration value as JSON: the values JSON holds (no NaN or infinity, which it
/// does not; no integer past 64 bits, which no key takes; string keys only).
fn config_value(v: &Bound<'_, PyAny>, depth: usize) -> PyResult<serde_json::Value> {
    use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyTuple};
    use serde_json::Value;
    if depth > 64 {
        return Err(PyValueError::new_err("the configuration nests deeper than 64 levels (or holds itself)"));
    }
    let value = if v.is_none() {
        Value::Null
    } else if let Ok(b) = v.downcast::<PyBool>() {
        Value::Bool(b.is_true())
    } else if v.is_instance_of::<PyInt>() {
        match (v.extract::<i64>(), v.extract::<u64>()) {
            (Ok(n), _) => n.into(),
            (_, Ok(n)) => n.into(),
            _ => return Err(PyValueError::new_err(format!("configuration value {v} is out of range"))),
        }
    } else if let Ok(f) = v.downcast::<PyFloat>() {
        serde_json::Number::from_f64(f.value())
            .map(Value::Number)
            .ok_or_else(|| PyValueError::new_err(format!("configuration value {v} is not a finite number")))?
    } else if let Ok(s) = v.downcast::<PyString>() {
        Value::String(s.to_cow()?.into_owned())
    } else if let Ok(d) = v.downcast::<PyDict>() {
        let mut map = serde_json::Map::new();
        for (k, item) in d.iter() {
            let key = k
                .downcast::<PyString>()
                .map_err(|_| PyTypeError::new_err(format!("configuration keys are strings, not {}", type_name(&k))))?;
            map.insert(key.to_cow()?.into_owned(), config_value(&item, depth + 1)?);
        }
        Value::Object(map)
    } else if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() {
        Value::Array(v.try_iter()?.map(|item| config_value(&item?, depth + 1)).collect::<PyResult<_>>()?)
    } else {
        return Err(PyTypeError::new_err(format!(
            "a configuration value is a str, int, float, bool, None, list or dict, not {}",
            type_name(v)
        )));
    };
    Ok(value)
}

fn type_name(v: &Bound<'_, PyAny>) -> String {
    v.get_type().name().map_or_else(|_| "?".to_string(), |n| n.to_string())
}

/// A dataset line as Python gave it.
enum Line {
    Str(PyBackedStr),
    Bytes(PyBackedBytes),
}

impl Line {
    fn bytes(&self) -> &[u8] {
        match self {
            Line::Str(s) => s.as_bytes(),
            Line::Bytes(b) => b,
        }
    }
}

/// One line compacted as the command line compacts a dataset line: the output bytes
/// (the line's terminator kept; `None` when the line stays as it was), the message of a
/// bad line, and what the engine did with the row (`None` for a blank or bad line).
fn one_line(raw: &[u8], n: usize, s: &Settings) -> Result<Compacted, Error> {
    let bom = if n == 1 && raw.starts_with(b"\xEF\xBB\xBF") { 3 } else { 0 };
    let text = match dataset::line_text(raw, n) {
        Ok(t) => t,
        Err(column) => {
            let m = format!("{SOURCE}:{n}:{column}: {}", rivumi_compact::error::NOT_UTF8);
            return Ok((None, Some(m), None));
        }
    };
    let body_end = bom + text.len();
    let mut row = None;
    let outcome = dataset::process_line_decided(text, Path::new(SOURCE), n, s, &mut row)?;
    Ok(match outcome {
        LineOutcome::Changed(line) => {
            let mut out = Vec::with_capacity(line.len() + 3);
            out.extend_from_slice(&raw[..bom]);
            out.extend_from_slice(line.as_bytes());
            out.extend_from_slice(&raw[body_end..]);
            (Some(out), None, row)
        }
        LineOutcome::Unchanged => (None, None, row),
        LineOutcome::Bad(m) => (None, Some(m), None),
    })
}

/// A row's figures as Python gets them: (action, tokens before, tokens after).
type Figures = (&'static str, u64, u64);

fn figures(row: &Row) -> Figures {
    (row.decision.action.as_str(), row.tokens_before, row.tokens_after)
}

/// The output lines, the bad lines' (index, message), and each row's figures (`None`
/// for a blank or bad line).
type LinesOut<'py> = (Vec<Bound<'py, PyAny>>, Vec<(usize, String)>, Vec<Option<Figures>>);

/// What a dataset line comes to.
type Compacted = (Option<Vec<u8>>, Option<String>, Option<Row>);

/// Compacts dataset lines (str or bytes), each on its own, on every core with the GIL
/// released; returns the output lines (each of the type it came as; a line that stays
/// is the object it came as), the bad lines' (index, message) and each row's figures
/// (action, tokens before and after, from the engine's own values). Byte-identical to
/// `rivumi-compact run` in dataset mode.
#[pyfunction]
#[pyo3(signature = (lines, config, profile=None, input_format=None))]
fn compact_lines<'py>(
    py: Python<'py>,
    lines: Vec<Bound<'py, PyAny>>,
    config: &str,
    profile: Option<&str>,
    input_format: Option<&str>,
) -> PyResult<LinesOut<'py>> {
    // In pieces of about a MB, each compacted by one worker with the GIL released
    // while this thread turns the pieces before it into Python objects (taking the GIL
    // for each): compacting and converting overlap, and the pieces held stay few.
    const PIECE: usize = 1 << 20;
    let mut s = settings(config, profile, input_format)?;
    if s.input_format == InputFormat::Auto {
        s.input_format = InputFormat::Openai;
    }
    let mut owned = Vec::with_capacity(lines.len());
    for (i, l) in lines.iter().enumerate() {
        owned.push(if let Ok(b) = l.extract::<PyBackedBytes>() {
            Line::Bytes(b)
        } else {
            Line::Str(l.extract::<PyBackedStr>().map_err(|_| {
                PyTypeError::new_err(format!("line {} is a {}, not a str or bytes", i + 1, type_name(l)))
            })?)
        });
    }
    let mut pieces = Vec::new();
    let mut start = 0;
    while start < owned.len() {
        let (mut end, mut bytes) = (start, 0);
        while end < owned.len() && (bytes < PIECE || end == start) {
            bytes += owned[end].bytes().len();
            end += 1;
        }
        pieces.push(start..end);
        start = end;
    }
    let mut out: Vec<Py<PyAny>> = Vec::with_capacity(owned.len());
    let mut bad = Vec::new();
    let mut rows = Vec::with_capacity(owned.len());
    let mut failed = None;
    let threads = rivumi_compact::batch::threads();
    let (owned, s) = (&owned, &s);
    let unbound: Vec<Py<PyAny>> = lines.iter().map(|l| l.clone().unbind()).collect();
    let unbound = &unbound;
    py.allow_threads(|| {
        let compact = |r: &std::ops::Range<usize>| -> Result<Vec<Compacted>, Error> {
            owned[r.clone()].iter().enumerate().map(|(k, line)| one_line(line.bytes(), r.start + k + 1, s)).collect()
        };
        rivumi_compact::batch::map_ordered(&pieces, threads, threads + 1, compact, |k, results| {
            let results = match results {
                Ok(r) => r,
                Err(e) => {
                    failed = Some(e);
                    return false;
                }
            };
            let start = pieces[k].start;
            Python::with_gil(|py| {
                for (j, ((changed, message, row), line)) in
                    results.into_iter().zip(&owned[pieces[k].clone()]).enumerate()
                {
                    if let Some(m) = message {
                        bad.push((start + j, m));
                    }
                    rows.push(row.as_ref().map(figures));
                    out.push(match (changed, line) {
                        (None, _) => unbound[start + j].clone_ref(py),
                        // The engine writes UTF-8: what came as text goes back as text.
                        (Some(b), Line::Str(_)) => {
                            PyString::new(py, std::str::from_utf8(&b).unwrap_or_default()).into_any().unbind()
                        }
                        (Some(b), Line::Bytes(_)) => PyBytes::new(py, &b).into_any().unbind(),
                    });
                }
            });
            true
        });
    });
    if let Some(e) = failed {
        return Err(to_py(e));
    }
    let out = out.into_iter().map(|o| o.into_bound(py)).collect();
    Ok((out, bad, rows))
}

/// Compacts one conversation given as the JSON text of its messages: the JSON text of
/// the compacted messages and of the decision.
#[pyfunction]
#[pyo3(signature = (messages, config, profile=None))]
fn compact(py: Python<'_>, messages: &str, config: &str, profile: Option<&str>) -> PyResult<(String, String)> {
    let mut s = settings(config, profile, None)?;
    s.input_format = InputFormat::Openai;
    let line = format!("{{\"messages\":{messages}}}");
    py.allow_threads(|| {
        let mut decision = None;
        let out = dataset::process_line_decided(&line, Path::new(SOURCE), 1, &s, &mut decision).map_err(to_py)?;
        let text = match out {
            LineOutcome::Changed(l) => l,
            LineOutcome::Unchanged => line.clone(),
            LineOutcome::Bad(m) => return Err(PyValueError::new_err(m.replace(&format!("{SOURCE}:1:"), "messages:"))),
        };
        let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| PyValueError::new_err(e.to_string()))?;
        let decision =
            serde_json::to_string(&decision.map(|r| r.decision)).map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok((v["messages"].to_string(), decision))
    })
}

/// `decide --json` of a transcript file (any format the tool reads).
#[pyfunction]
#[pyo3(signature = (path, config, profile=None, input_format=None))]
fn decide(
    py: Python<'_>,
    path: &str,
    config: &str,
    profile: Option<&str>,
    input_format: Option<&str>,
) -> PyResult<String> {
    let s = settings(config, profile, input_format)?;
    py.allow_threads(|| rivumi_compact::report::decide_file(Path::new(path), &s)).map_err(to_py)
}

/// `replay --json` of a transcript file, under the profile of its agent unless named.
#[pyfunction]
#[pyo3(signature = (path, config, profile=None, input_format=None))]
fn replay(
    py: Python<'_>,
    path: &str,
    config: &str,
    profile: Option<&str>,
    input_format: Option<&str>,
) -> PyResult<String> {
    let s = settings(config, None, input_format)?;
    let profile = profile.map(|p| value_enum::<Profile>("profile", p)).transpose()?;
    py.allow_threads(|| rivumi_compact::replay::replay_file(Path::new(path), &s, profile)).map_err(to_py)
}

/// Checks a configuration, a profile and an input format as the calls that take them
/// would (a function made for later calls says what is wrong when it is made).
#[pyfunction]
#[pyo3(signature = (config, profile=None, input_format=None))]
fn check_config(config: &str, profile: Option<&str>, input_format: Option<&str>) -> PyResult<()> {
    settings(config, profile, input_format).map(drop)
}

/// The keys a configuration sets that cannot act on the path dataset rows take under
/// it (the command line says them once before the rows), worded with the package's
/// spelling of keys; none when every key set acts.
#[pyfunction]
#[pyo3(signature = (config, profile=None))]
fn inert(config: &str, profile: Option<&str>) -> PyResult<Vec<String>> {
    let s = settings(config, profile, None)?;
    let said = |k: &rivumi_compact::engine::Inert| {
        format!(
            "{} does not act on the {} path the rows take; it acts on the {} path: add runtime__kind=\"{}\"",
            k.key, k.path, k.other, k.other
        )
    };
    Ok(s.inert_keys_for_rows().iter().map(said).collect())
}

/// What a bad line does in a file's stream.
#[derive(Clone, Copy, PartialEq, Eq)]
enum OnBad {
    /// Echoed unchanged, reported.
    Keep,
    /// Left out (the command line's `--bad-lines skip`), reported.
    Skip,
    /// Stops the stream: [`BadLine`].
    Raise,
}

fn on_bad(name: &str) -> PyResult<OnBad> {
    match name {
        "keep" => Ok(OnBad::Keep),
        "skip" => Ok(OnBad::Skip),
        "raise" => Ok(OnBad::Raise),
        _ => Err(PyValueError::new_err(format!("on_bad is keep, skip or raise, not {name:?}"))),
    }
}

/// The settings and the input of a dataset file: its format detected from its head
/// unless named (a file that is not a dataset is refused: it would give no row).
fn file_input(
    path: &Path,
    config: &str,
    profile: Option<&str>,
    input_format: Option<&str>,
    bad: OnBad,
) -> PyResult<(Settings, Input)> {
    let mut s = settings(config, profile, input_format)?;
    s.skip_bad_lines = bad == OnBad::Skip;
    let input = Input::file(path.to_path_buf());
    if s.input_format == InputFormat::Auto {
        s.input_format = match input.peek_dataset() {
            Some(f) => f,
            None => {
                // Opening it again says why it cannot be read, when that is the reason.
                input.open().map_err(to_py)?;
                return Err(PyValueError::new_err(format!(
                    "{}: not a dataset (one OpenAI chat conversation or OpenHands row per line); \
                     name input_format to read it as one",
                    path.display()
                )));
            }
        };
    }
    Ok((s, input))
}

/// The figures of a file's stream: counts, bad lines and warnings (line numbers from 1).
#[derive(Default)]
struct Told {
    bad: Vec<(usize, String)>,
    warnings: Vec<(usize, String)>,
    raise: bool,
}

impl Observer for Told {
    fn bad_line(&mut self, line: usize, message: &str, _text: Option<&[u8]>) -> io::Result<()> {
        self.bad.push((line, message.to_string()));
        if self.raise {
            return Err(io::Error::other("a bad line under on_bad=\"raise\""));
        }
        Ok(())
    }

    fn warning(&mut self, line: usize, message: &str) {
        self.warnings.push((line, message.to_string()));
    }
}

/// A file's summary as Python gets it: (lines, changed, shortened, blank, bad,
/// over_target), bad lines and warnings as (line, message).
type FileSummary = ((usize, usize, usize, usize, usize, usize), Vec<(usize, String)>, Vec<(usize, String)>);

fn counts(c: &Counts) -> (usize, usize, usize, usize, usize, usize) {
    (c.lines, c.changed, c.shortened, c.blank, c.bad, c.over_target)
}

/// Compacts a dataset file into `output` as `rivumi-compact run FILE --out OUTPUT` does:
/// read, compacted on every core and written by the engine with the GIL released; the
/// output is written atomically (a temporary file renamed into place) and not at all
/// when the input fails or a bad line raises.
#[pyfunction]
#[pyo3(signature = (path, output, config, profile=None, input_format=None, on_bad="keep"))]
fn compact_file(
    py: Python<'_>,
    path: PathBuf,
    output: PathBuf,
    config: &str,
    profile: Option<&str>,
    input_format: Option<&str>,
    on_bad: &str,
) -> PyResult<FileSummary> {
    let bad = self::on_bad(on_bad)?;
    // Everything that touches the file system, the opening of the input and the read of
    // its head included, with the GIL released: an input that is slow to open (a named
    // pipe that a Python thread feeds, a network file system) does not stop Python.
    py.allow_threads(|| {
        rivumi_compact::output::check_file_path(&output, "output").map_err(to_py)?;
        if rivumi_compact::output::same_file(&path, &output) {
            return Err(PyValueError::new_err(format!(
                "output {} is the input: an input is never written over",
                output.display()
            )));
        }
        let (s, input) = file_input(&path, config, profile, input_format, bad)?;
        let mut told = Told { raise: bad == OnBad::Raise, ..Told::default() };
        let mut total = Counts::default();
        let mut failed = None;
        let threads = rivumi_compact::batch::threads();
        let written = rivumi_compact::output::write_output(&output, |w| {
            match stream_input(&input, &s, None, threads, w, &mut told, &mut total) {
                Ok(_) => Ok(()),
                Err(e) => {
                    failed = Some(e);
                    Err(io::Error::other("stopped")) // abandons the temporary file
                }
            }
        });
        if told.raise && !told.bad.is_empty() {
            let (line, message) = told.bad.swap_remove(0);
            return Err(BadLine::new_err((line - 1, message)));
        }
        if let Some(e) = failed {
            return Err(to_py(e));
        }
        written.map_err(|e| to_py(Error::Write { path: output.clone(), source: e }))?;
        Ok((counts(&total), told.bad, told.warnings))
    })
}

/// What a file's stream sends to its reader.
enum Msg {
    Bytes(Vec<u8>),
    Bad(usize, String),
    Warning(usize, String),
    End(Result<Counts, Error>),
}

/// The bytes a stream writes, sent in pieces of about a MB.
struct Send {
    tx: SyncSender<Msg>,
    buf: Vec<u8>,
}

/// What a piece sent to the reader holds at least.
const PIECE_SENT: usize = 1 << 20;

impl Write for Send {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(bytes);
        // Sent where a line ends (the engine writes whole lines or runs of them), so
        // the reader never joins a piece's last line to the next piece: no copy of the
        // piece again. A write that ends nowhere near a line's end is sent further on.
        if self.buf.len() >= PIECE_SENT && (self.buf.ends_with(b"\n") || self.buf.len() >= 8 * PIECE_SENT) {
            self.flush()?;
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if !self.buf.is_empty() {
            let piece = std::mem::replace(&mut self.buf, Vec::with_capacity(PIECE_SENT + (64 << 10)));
            // The reader went away (the iterator was dropped): the stream stops as a
            // pipe that was closed.
            self.tx.send(Msg::Bytes(piece)).map_err(|_| io::Error::from(io::ErrorKind::BrokenPipe))?;
        }
        Ok(())
    }
}

/// Tells the reader of bad lines and warnings as the stream meets them (before their
/// lines are written), and hands it a block's rewritten lines as the engine made them
/// (no copy into [`Send`]'s pieces), taking back a buffer the reader is done with.
struct Tell {
    tx: SyncSender<Msg>,
    spent: Receiver<Vec<u8>>,
}

impl Observer for Tell {
    fn takes_output(&self) -> bool {
        true
    }

    fn take_output(&mut self, bytes: &mut String) -> io::Result<()> {
        let mut spare = self.spent.try_recv().unwrap_or_default();
        spare.clear();
        let full = std::mem::replace(bytes, String::from_utf8(spare).expect("an empty buffer"));
        self.tx.send(Msg::Bytes(full.into_bytes())).map_err(|_| io::Error::from(io::ErrorKind::BrokenPipe))
    }

    fn bad_line(&mut self, line: usize, message: &str, _text: Option<&[u8]>) -> io::Result<()> {
        self.tx.send(Msg::Bad(line, message.to_string())).map_err(|_| io::Error::from(io::ErrorKind::BrokenPipe))
    }

    fn warning(&mut self, line: usize, message: &str) {
        let _ = self.tx.send(Msg::Warning(line, message.to_string()));
    }
}

/// The output lines of a dataset file, as the engine writes them: the file is read,
/// compacted and written on other threads, a few MB ahead of the reader; each line is
/// handed over with its terminator, as iterating over a file gives it.
#[pyclass(module = "rivumi_compact._native")]
struct FileLines {
    /// Locked by one reader at a time (a pyclass is shared between threads).
    rx: std::sync::Mutex<Receiver<Msg>>,
    /// Buffers read to the end, given back to the stream to fill again (a few at most:
    /// one that finds no room is freed).
    spent: SyncSender<Vec<u8>>,
    piece: Vec<u8>,
    at: usize,
    /// Output lines handed over (in keep and raise modes, the input line number too).
    line: usize,
    ended: bool,
    binary: bool,
    mode: OnBad,
    /// Bad lines not handed over yet (keep and raise: their numbers are output lines).
    pending: VecDeque<(usize, String)>,
    #[pyo3(get)]
    bad: Vec<(usize, String)>,
    #[pyo3(get)]
    warnings: Vec<(usize, String)>,
    counts: Option<Counts>,
}

impl FileLines {
    /// The next whole line of what was received (the last one may have no terminator).
    fn next_line(&mut self) -> Option<std::ops::Range<usize>> {
        let rest = &self.piece[self.at..];
        let end = match memchr::memchr(b'\n', rest) {
            Some(k) => self.at + k + 1,
            None if self.ended && !rest.is_empty() => self.piece.len(),
            None => return None,
        };
        let line = self.at..end;
        self.at = end;
        Some(line)
    }

    fn take(&mut self, bytes: Vec<u8>) {
        if self.at < self.piece.len() {
            let mut joined = self.piece[self.at..].to_vec();
            joined.extend_from_slice(&bytes);
            self.piece = joined;
        } else {
            let spent = std::mem::replace(&mut self.piece, bytes);
            if spent.capacity() > 0 {
                let _ = self.spent.try_send(spent);
            }
        }
        self.at = 0;
    }
}

#[pymethods]
impl FileLines {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&mut self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        loop {
            if let Some(range) = self.next_line() {
                self.line += 1;
                if self.pending.front().is_some_and(|(n, _)| *n == self.line) {
                    let (n, message) = self.pending.pop_front().expect("a pending bad line");
                    if self.mode == OnBad::Raise {
                        self.ended = true;
                        self.piece.clear();
                        self.at = 0;
                        return Err(BadLine::new_err((n - 1, message)));
                    }
                    self.bad.push((n, message));
                }
                let bytes = &self.piece[range];
                let line = if self.binary {
                    PyBytes::new(py, bytes).into_any()
                } else {
                    match std::str::from_utf8(bytes) {
                        Ok(text) => PyString::new(py, text).into_any(),
                        // Only a bad line echoed as read can be other than UTF-8: it is
                        // decoded as Python's own files decode with surrogateescape, so
                        // writing it back with that handler gives its bytes again.
                        Err(_) => {
                            PyString::from_object(&PyBytes::new(py, bytes), "utf-8", "surrogateescape")?.into_any()
                        }
                    }
                };
                return Ok(Some(line.unbind()));
            }
            if self.ended {
                return Ok(None);
            }
            let rx = &self.rx;
            match py.allow_threads(|| rx.lock().map_err(drop).and_then(|r| r.recv().map_err(drop))) {
                Ok(Msg::Bytes(b)) => self.take(b),
                Ok(Msg::Bad(n, message)) if self.mode == OnBad::Skip => self.bad.push((n, message)),
                Ok(Msg::Bad(n, message)) => self.pending.push_back((n, message)),
                Ok(Msg::Warning(n, message)) => self.warnings.push((n, message)),
                Ok(Msg::End(Ok(c))) => {
                    self.counts = Some(c);
                    self.ended = true;
                }
                Ok(Msg::End(Err(e))) => {
                    self.ended = true;
                    self.piece.clear();
                    self.at = 0;
                    return Err(to_py(e));
                }
                Err(_) => {
                    self.ended = true;
                    return Err(PyRuntimeError::new_err("the stream of the file stopped without a word"));
                }
            }
        }
    }

    /// (lines, changed, shortened, blank, bad, over_target) once every line was read;
    /// `None` before.
    #[getter]
    fn counts(&self) -> Option<(usize, usize, usize, usize, usize, usize)> {
        self.counts.as_ref().map(counts)
    }
}

/// The output lines of a dataset file, read, compacted and written by the engine on
/// other threads (the GIL released), a few MB ahead of the reader.
#[pyfunction]
#[pyo3(signature = (path, config, profile=None, input_format=None, on_bad="keep", binary=false))]
fn file_lines(
    py: Python<'_>,
    path: PathBuf,
    config: &str,
    profile: Option<&str>,
    input_format: Option<&str>,
    on_bad: &str,
    binary: bool,
) -> PyResult<FileLines> {
    let mode = self::on_bad(on_bad)?;
    // Opened and its head read with the GIL released, as `compact_file` does.
    let (s, input) = py.allow_threads(|| file_input(&path, config, profile, input_format, mode))?;
    // A few pieces in flight: the engine stays ahead of the reader, memory stays flat.
    let (tx, rx) = sync_channel(4);
    let (spent, spent_rx) = sync_channel(2);
    std::thread::spawn(move || {
        let mut w = Send { tx: tx.clone(), buf: Vec::with_capacity(PIECE_SENT + (64 << 10)) };
        let mut tell = Tell { tx: tx.clone(), spent: spent_rx };
        let mut total = Counts::default();
        let threads = rivumi_compact::batch::threads();
        let streamed = stream_input(&input, &s, None, threads, &mut w, &mut tell, &mut total);
        // `Ok(false)`: the reader went away; nobody is left to tell.
        if !matches!(streamed, Ok(false)) {
            let _ = tx.send(Msg::End(streamed.map(|_| total)));
        }
    });
    Ok(FileLines {
        rx: std::sync::Mutex::new(rx),
        spent,
        piece: Vec::new(),
        at: 0,
        line: 0,
        ended: false,
        binary,
        mode,
        pending: VecDeque::new(),
        bad: Vec::new(),
        warnings: Vec::new(),
        counts: None,
    })
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(compact_lines, m)?)?;
    m.add_function(wrap_pyfunction!(compact, m)?)?;
    m.add_function(wrap_pyfunction!(decide, m)?)?;
    m.add_function(wrap_pyfunction!(replay, m)?)?;
    m.add_function(wrap_pyfunction!(check_config, m)?)?;
    m.add_function(wrap_pyfunction!(inert, m)?)?;
    m.add_function(wrap_pyfunction!(config_json, m)?)?;
    m.add_function(wrap_pyfunction!(compact_file, m)?)?;
    m.add_function(wrap_pyfunction!(file_lines, m)?)?;
    m.add_class::<FileLines>()?;
    m.add("BadLine", m.py().get_type::<BadLine>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
