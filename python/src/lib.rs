//! The native part of the `rivumi_compact` Python package: the library's dataset engine,
//! decisions and replay, with the GIL released while they run. The Python side
//! (`rivumi_compact/__init__.py`) turns keyword arguments into a configuration and
//! Python objects into the JSON the engine reads.

use pyo3::exceptions::{PyOSError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::pybacked::{PyBackedBytes, PyBackedStr};
use pyo3::types::{PyBytes, PyString};
use rivumi_compact::config::Profile;
use rivumi_compact::dataset::{self, LineOutcome};
use rivumi_compact::engine::Settings;
use rivumi_compact::error::Error;
use rivumi_compact::formats::InputFormat;
use std::path::Path;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The name bad lines and errors are reported under.
const SOURCE: &str = "<lines>";

fn to_py(e: Error) -> PyErr {
    match e {
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
    let mut s = Settings::new(Some((Path::new("configuration"), &value)), &[]).map_err(to_py)?;
    if let Some(p) = profile {
        s = s.with_profile(value_enum::<Profile>("profile", p)?);
    }
    if let Some(f) = input_format {
        s.input_format = value_enum::<InputFormat>("input format", f)?;
    }
    Ok(s)
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
/// (the line's terminator kept; `None` when the line stays as it was), and the message
/// of a bad line.
fn one_line(raw: &[u8], n: usize, s: &Settings) -> Result<(Option<Vec<u8>>, Option<String>), Error> {
    let bom = if n == 1 && raw.starts_with(b"\xEF\xBB\xBF") { 3 } else { 0 };
    let text = match dataset::line_text(raw, n) {
        Ok(t) => t,
        Err(column) => {
            let m = format!("{SOURCE}:{n}:{column}: {}", rivumi_compact::error::NOT_UTF8);
            return Ok((None, Some(m)));
        }
    };
    let body_end = bom + text.len();
    Ok(match dataset::process_line(text, Path::new(SOURCE), n, s)? {
        LineOutcome::Changed(line) => {
            let mut out = Vec::with_capacity(line.len() + 3);
            out.extend_from_slice(&raw[..bom]);
            out.extend_from_slice(line.as_bytes());
            out.extend_from_slice(&raw[body_end..]);
            (Some(out), None)
        }
        LineOutcome::Unchanged => (None, None),
        LineOutcome::Bad(m) => (None, Some(m)),
    })
}

/// The output lines, and the bad lines' (index, message).
type LinesOut<'py> = (Vec<Bound<'py, PyAny>>, Vec<(usize, String)>);

/// What a dataset line comes to.
type Compacted = (Option<Vec<u8>>, Option<String>);

/// Compacts dataset lines (str or bytes), each on its own, on every core with the GIL
/// released; returns the output lines (each of the type it came as; a line that stays
/// is the object it came as) and the bad lines' (index, message). Byte-identical to
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
                let kind = l.get_type().name().map_or_else(|_| "?".to_string(), |n| n.to_string());
                PyTypeError::new_err(format!("line {} is a {kind}, not a str or bytes", i + 1))
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
                for (j, ((changed, message), line)) in results.into_iter().zip(&owned[pieces[k].clone()]).enumerate() {
                    if let Some(m) = message {
                        bad.push((start + j, m));
                    }
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
    Ok((out, bad))
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
        let decision = serde_json::to_string(&decision).map_err(|e| PyValueError::new_err(e.to_string()))?;
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

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(compact_lines, m)?)?;
    m.add_function(wrap_pyfunction!(compact, m)?)?;
    m.add_function(wrap_pyfunction!(decide, m)?)?;
    m.add_function(wrap_pyfunction!(replay, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
