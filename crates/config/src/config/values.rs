//! The values with rules: the threshold in basis points, compiled glob lists, and
//! the checks with the messages people see (`key`: message).

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// The threshold in basis points (0.85 → 8500), so comparisons are exact integers.
/// Written as a number in (0, 1] with at most 4 decimals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Threshold(pub(super) u64);

impl Threshold {
    /// From a number, checked: in (0, 1], at most 4 decimals.
    pub fn new(f: f64) -> std::result::Result<Threshold, String> {
        parse_threshold(f, &f.to_string()).map(Threshold)
    }

    pub fn basis_points(self) -> u64 {
        self.0
    }

    pub fn as_f64(self) -> f64 {
        self.0 as f64 / 10_000.0
    }
}

impl Serialize for Threshold {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.as_f64().serialize(s)
    }
}

impl<'de> Deserialize<'de> for Threshold {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        let f = v.as_f64().ok_or_else(|| D::Error::custom(format!("expected a number in (0, 1], found {v}")))?;
        parse_threshold(f, &v.to_string()).map(Threshold).map_err(D::Error::custom)
    }
}

/// Checks a threshold: in (0, 1] with at most 4 decimals, as basis points. The check is
/// on the decimal text of the number (its shortest form), never on a rounded float, so
/// `0.85000000001` is refused from every layer.
pub fn parse_threshold(f: f64, shown: &str) -> std::result::Result<u64, String> {
    if !(f > 0.0 && f <= 1.0) {
        return Err(format!("threshold {shown} is outside (0, 1]"));
    }
    let text = f.to_string();
    let decimals = text.split_once('.').map_or(0, |(_, d)| d.len());
    if decimals > 4 {
        return Err(format!("threshold {shown} has more than 4 decimals"));
    }
    Ok((f * 10_000.0).round() as u64)
}

/// A list of glob patterns, compiled when the configuration is loaded: an invalid
/// pattern is an error naming its key, never a set that silently matches nothing.
#[derive(Debug, Clone, Default)]
pub struct Globs {
    patterns: Vec<String>,
    set: std::sync::Arc<GlobSet>,
}

impl Globs {
    /// Path globs: `*` stops at `/`, `**` crosses it.
    pub fn paths(patterns: &[String]) -> std::result::Result<Globs, String> {
        Globs::compile(patterns)
    }

    pub(super) fn names(patterns: &[&str]) -> Globs {
        let patterns: Vec<String> = patterns.iter().map(std::string::ToString::to_string).collect();
        Globs::compile(&patterns).expect("the default patterns are valid")
    }

    /// Compiles a list once per process: a batch of 10,000 transcripts with the same
    /// lists compiles each list once.
    fn compile(patterns: &[String]) -> std::result::Result<Globs, String> {
        type Compiled = std::result::Result<std::sync::Arc<GlobSet>, String>;
        type Cache = std::sync::Mutex<std::collections::HashMap<Vec<String>, Compiled>>;
        static CACHE: std::sync::OnceLock<Cache> = std::sync::OnceLock::new();
        let cache = CACHE.get_or_init(Default::default);
        let mut cache = cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let set = if let Some(compiled) = cache.get(patterns) {
            compiled.clone()?
        } else {
            let compiled = Globs::build(patterns).map(std::sync::Arc::new);
            cache.insert(patterns.to_vec(), compiled.clone());
            compiled?
        };
        Ok(Globs { patterns: patterns.to_vec(), set })
    }

    fn build(patterns: &[String]) -> std::result::Result<GlobSet, String> {
        let mut b = GlobSetBuilder::new();
        for p in patterns {
            let glob = GlobBuilder::new(p)
                .literal_separator(true)
                .build()
                .map_err(|e| format!("invalid glob {:?}: {}", p, e.kind()))?;
            b.add(glob);
        }
        b.build().map_err(|e| e.to_string())
    }

    pub fn is_match(&self, s: &str) -> bool {
        self.set.is_match(s)
    }

    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }

    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }
}

impl Serialize for Globs {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.patterns.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Globs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let patterns = strings(d)?;
        Globs::compile(&patterns).map_err(D::Error::custom)
    }
}

// Value checks, with the messages people see (`key`: message).

pub(super) fn count<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<usize, D::Error> {
    let v = Value::deserialize(d)?;
    v.as_u64()
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| D::Error::custom(format!("expected a non-negative integer, found {v}")))
}

pub(super) fn seconds<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<u64, D::Error> {
    count(d).map(|n| n as u64)
}

pub(super) fn positive<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<usize, D::Error> {
    match count(d)? {
        0 => Err(D::Error::custom("expected a positive integer, found 0")),
        n => Ok(n),
    }
}

pub(super) fn positive_opt<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<u64>, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        v => match v.as_u64() {
            Some(0) | None => Err(D::Error::custom(format!("expected a positive integer, found {v}"))),
            n => Ok(n),
        },
    }
}

pub(super) fn percent<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<u64, D::Error> {
    match count(d)? {
        n @ 1..=100 => Ok(n as u64),
        n => Err(D::Error::custom(format!("expected a percentage in 1..=100, found {n}"))),
    }
}

pub(super) fn string_opt<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<String>, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        Value::String(s) => Ok(Some(s)),
        v => Err(D::Error::custom(format!("expected a string, found {v}"))),
    }
}

pub(super) fn strings<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Vec<String>, D::Error> {
    let v = Value::deserialize(d)?;
    let arr = v.as_array().ok_or_else(|| D::Error::custom(format!("expected an array of strings, found {v}")))?;
    arr.iter()
        .map(|s| {
            s.as_str().map(str::to_string).ok_or_else(|| D::Error::custom(format!("expected a string, found {s}")))
        })
        .collect()
}

pub(super) fn strings_opt<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<Vec<String>>, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        v => strings(v).map(Some).map_err(D::Error::custom),
    }
}
