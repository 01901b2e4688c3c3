//! The layers that set the configuration (defaults < profile < session record <
//! `--config` file < flags), each checked as it is laid on, and the layer each key
//! came from. The JSON layers are merged into one tree read once; the flags are typed
//! ([`Setting`]) and laid on what it reads.

use super::{Config, Profile, Setting, EXECUTABLE};
use crate::error::{Error, Result};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

/// Where a value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Layer {
    Default,
    Profile,
    Session,
    ConfigFile,
    Flag,
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Layer::Default => "default",
            Layer::Profile => "profile",
            Layer::Session => "session",
            Layer::ConfigFile => "config file",
            Layer::Flag => "flag",
        })
    }
}

/// A configuration with the layer each key came from.
#[derive(Debug, Clone)]
pub struct Layered {
    pub config: Config,
    /// Things worth telling the user (ignored session keys).
    pub warnings: Vec<String>,
    /// The merged layers, for [`Layered::keys`].
    layers: Builder,
}

impl Builder {
    /// Whether any layer laid so far sets `key` (a JSON path).
    pub fn sets(&self, key: &str) -> bool {
        self.flags.iter().any(|s| s.key() == key)
            || self.layers.iter().any(|(leaves, _)| leaves.iter().any(|(k, _)| k == key))
    }
}

impl Layered {
    /// Every key (JSON path), in `config` order, with its value and the layer it came
    /// from (computed on demand: only `config` shows it).
    pub fn keys(&self) -> Vec<(String, Value, Layer)> {
        let from: BTreeMap<&str, Layer> = self
            .layers
            .layers
            .iter()
            .flat_map(|(leaves, layer)| leaves.iter().map(move |(k, _)| (k.as_str(), *layer)))
            .chain(self.layers.flags.iter().map(|s| (s.key(), Layer::Flag)))
            .collect();
        let mut keys = Vec::new();
        let typed = serde_json::to_value(&self.config).expect("a configuration serializes");
        flatten(&typed, "", &mut keys);
        keys.into_iter()
            .map(|(k, v)| {
                let layer = from.get(k.as_str()).copied().unwrap_or(Layer::Default);
                (k, v, layer)
            })
            .collect()
    }
}

/// Merges layers over the defaults. Each layer is checked when it is laid on, so an
/// error names the layer (file, session record or flag) and the key.
#[derive(Debug, Clone)]
pub struct Builder {
    tree: Value,
    /// The leaves each JSON layer set, in order.
    layers: Vec<(Vec<(String, Value)>, Layer)>,
    /// The flags, laid on the typed configuration the tree makes.
    flags: Vec<Setting>,
    warnings: Vec<String>,
}

impl Default for Builder {
    fn default() -> Self {
        static DEFAULTS: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
        let tree = DEFAULTS.get_or_init(|| serde_json::to_value(Config::default()).expect("the defaults serialize"));
        Builder { tree: tree.clone(), layers: Vec::new(), flags: Vec::new(), warnings: Vec::new() }
    }
}

impl Builder {
    /// A profile's preset (SPEC 12), laid between the defaults and the session.
    pub fn profile(&mut self, profile: Profile) {
        self.profile_for(profile, None);
    }

    /// A profile's preset for the agent version a session recorded (SPEC 12: the
    /// version picks the row of the profile's table; one outside it is warned about).
    pub fn profile_for(&mut self, profile: Profile, version: Option<&str>) {
        let (preset, warning) = profile.preset_for(version);
        self.warnings.extend(warning);
        let Value::Object(obj) = preset else { return };
        let mut leaves = Vec::new();
        self.leaves(&obj, "", &mut leaves, &mut |k| unreachable!("profile key `{k}` is a configuration key"))
            .expect("profile presets name known keys");
        self.lay(leaves, Layer::Profile).expect("profile presets are valid");
    }

    /// A session record (or an importer's session layer): keys that are not
    /// configuration are ignored; executable keys are ignored with a warning.
    pub fn session(&mut self, obj: &Map<String, Value>, file: &Path) -> Result<()> {
        let mut leaves = Vec::new();
        self.leaves(obj, "", &mut leaves, &mut |_| Ok(()))?;
        leaves.retain(|(key, _)| {
            let executable = EXECUTABLE.contains(&key.as_str());
            if executable {
                self.warnings
                    .push(format!("ignored `{key}` in the session record: a transcript never chooses what runs"));
            }
            !executable
        });
        // Checked once, with the layers above it, by `build_for_session`.
        let _ = file;
        for (key, value) in &leaves {
            set(&mut self.tree, key, value.clone());
        }
        self.layers.push((leaves, Layer::Session));
        Ok(())
    }

    /// Builds a configuration whose session layer was laid unchecked (the other layers
    /// are checked when laid): an error can only be the session record's, and names it,
    /// at the line and column `at` gives for the key's path when it knows them.
    /// One deserialization per transcript.
    pub fn build_for_session(self, file: &Path, at: &dyn Fn(&str) -> Option<(usize, usize)>) -> Result<Layered> {
        let tree = self.tree_under_flags();
        let Ok(config) = Config::deserialize(&*tree) else {
            let e = serde_path_to_error::deserialize::<_, Config>(&*tree).expect_err("it failed once");
            let (path, message) = (e.path().to_string(), format!("session record: `{}`: {}", e.path(), e.inner()));
            return Err(Error::located(file, at(&path), message));
        };
        drop(tree);
        Ok(self.layered(config))
    }

    /// The merged tree without the keys a flag sets: what a lower layer wrote there is
    /// not read (a session's invalid value under a flag is no error).
    fn tree_under_flags(&self) -> std::borrow::Cow<'_, Value> {
        if self.flags.is_empty() {
            return std::borrow::Cow::Borrowed(&self.tree);
        }
        let mut tree = self.tree.clone();
        for s in &self.flags {
            remove(&mut tree, s.key());
        }
        std::borrow::Cow::Owned(tree)
    }

    /// The flags laid on the configuration the tree made.
    fn layered(self, mut config: Config) -> Layered {
        for s in &self.flags {
            s.apply(&mut config);
        }
        let warnings = self.warnings.clone();
        Layered { config, warnings, layers: self }
    }

    /// A `--config` JSON file's object: unknown keys are errors, named at the line and
    /// column `at` gives for a key's path (`""`: the document) when it knows them.
    pub fn file(&mut self, value: &Value, file: &Path, at: &dyn Fn(&str) -> Option<(usize, usize)>) -> Result<()> {
        let error = |path: &str, message: String| Error::located(file, at(path), message);
        let Value::Object(obj) = value else {
            return Err(error("", "expected a JSON object of configuration keys".into()));
        };
        let mut leaves = Vec::new();
        let unknown = |key: &str| Err(error(key, self.unknown_key(key)));
        self.leaves(obj, "", &mut leaves, &mut |k| unknown(k))?;
        self.lay(leaves, Layer::ConfigFile).map_err(|(key, m)| error(&key, format!("`{key}`: {m}")))
    }

    /// The command line's layer: typed settings, checked when the flags were parsed. A
    /// later setting of the same key wins.
    pub fn flags(&mut self, settings: &[Setting]) {
        self.flags.extend_from_slice(settings);
    }

    /// An object of keys laid as the flags are (a library caller's typed configuration,
    /// written out): an unknown key or a value the rules refuse is a usage error.
    pub fn overrides(&mut self, obj: &Map<String, Value>) -> Result<()> {
        let mut leaves = Vec::new();
        self.leaves(obj, "", &mut leaves, &mut |k| Err(Error::Usage(self.unknown_key(k))))?;
        self.lay(leaves, Layer::Flag).map_err(|(key, m)| Error::Usage(format!("{key}: {m}")))
    }

    /// The typed configuration and where each value came from.
    pub fn build(self) -> Layered {
        let config: Config = Config::deserialize(&*self.tree_under_flags()).expect("every layer was checked");
        self.layered(config)
    }

    /// "unknown configuration key `k`", with the nearest known key when one is near:
    /// the whole dotted key compared, or its last part (`max_total_token` →
    /// `task.max_total_tokens`).
    fn unknown_key(&self, key: &str) -> String {
        let mut known = Vec::new();
        leaf_keys(&self.tree, "", &mut known);
        let last = |k: &str| k.rsplit('.').next().unwrap_or(k).to_string();
        let near = known
            .iter()
            .map(|k| {
                let whole = strsim::damerau_levenshtein(key, k);
                let part = strsim::damerau_levenshtein(&last(key), &last(k));
                (whole.min(part), k)
            })
            .filter(|(d, k)| *d <= (last(k).chars().count() / 3).max(1))
            .min();
        match near {
            Some((_, k)) => format!("unknown configuration key `{key}` (did you mean `{k}`?)"),
            None => format!("unknown configuration key `{key}`"),
        }
    }

    /// The known leaves of `obj` (known keys come from the defaults' tree).
    fn leaves(
        &self,
        obj: &Map<String, Value>,
        prefix: &str,
        out: &mut Vec<(String, Value)>,
        unknown: &mut dyn FnMut(&str) -> Result<()>,
    ) -> Result<()> {
        for (k, v) in obj {
            let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
            match (at(&self.tree, &key), v) {
                (Some(Value::Object(_)), Value::Object(inner)) => self.leaves(inner, &key, out, unknown)?,
                (Some(Value::Object(_)) | None, _) => unknown(&key)?,
                (Some(_), _) => out.push((key, v.clone())),
            }
        }
        Ok(())
    }

    /// Lays leaves on the tree and checks the result; an error names the first key.
    fn lay(&mut self, leaves: Vec<(String, Value)>, layer: Layer) -> std::result::Result<(), (String, String)> {
        let mut tree = self.tree.clone();
        for (key, value) in &leaves {
            set(&mut tree, key, value.clone());
        }
        if Config::deserialize(&tree).is_err() {
            let e = serde_path_to_error::deserialize::<_, Config>(&tree).expect_err("it failed once");
            return Err((e.path().to_string(), e.inner().to_string()));
        }
        self.tree = tree;
        self.layers.push((leaves, layer));
        Ok(())
    }

    /// This builder's layers laid over `base` (a session layer laid later under them):
    /// every key's value is checked on its own, so layers checked once stay valid.
    #[must_use]
    pub fn over(&self, base: &Builder) -> Builder {
        let mut b = base.clone();
        for (leaves, layer) in &self.layers {
            for (key, value) in leaves {
                set(&mut b.tree, key, value.clone());
            }
            b.layers.push((leaves.clone(), *layer));
        }
        b.flags.extend_from_slice(&self.flags);
        b
    }
}

/// Every leaf key of a tree, dotted.
fn leaf_keys(tree: &Value, prefix: &str, out: &mut Vec<String>) {
    if let Value::Object(m) = tree {
        for (k, v) in m {
            let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
            if v.is_object() {
                leaf_keys(v, &key, out);
            } else {
                out.push(key);
            }
        }
    }
}

fn at<'v>(tree: &'v Value, key: &str) -> Option<&'v Value> {
    key.split('.').try_fold(tree, |v, k| v.get(k))
}

fn set(tree: &mut Value, key: &str, value: Value) {
    let mut v = tree;
    let mut parts = key.split('.').peekable();
    while let Some(k) = parts.next() {
        if parts.peek().is_none() {
            v[k] = value;
            return;
        }
        v = &mut v[k];
    }
}

fn remove(tree: &mut Value, key: &str) {
    let (path, last) = key.rsplit_once('.').unwrap_or(("", key));
    let parent = path.split('.').filter(|k| !k.is_empty()).try_fold(tree, |v, k| v.get_mut(k));
    if let Some(Value::Object(m)) = parent {
        m.remove(last);
    }
}

fn flatten(v: &Value, prefix: &str, out: &mut Vec<(String, Value)>) {
    let Value::Object(obj) = v else { return };
    for (k, v) in obj {
        let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
        match v {
            Value::Object(_) => flatten(v, &key, out),
            _ => out.push((key, v.clone())),
        }
    }
}

/// Every configuration key (JSON path) with its default, in `config` order.
pub fn keys() -> Vec<(String, Value)> {
    let mut out = Vec::new();
    flatten(&serde_json::to_value(Config::default()).expect("the defaults serialize"), "", &mut out);
    out
}
