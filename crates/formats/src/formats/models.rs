//! The model-window table (`models.json`, data in one file, each row naming its
//! source): the context window each agent uses for a model, and how it places its
//! trigger. The importers take the session's window from it, the profiles their
//! trigger figures.

use serde::Deserialize;
use std::sync::OnceLock;

/// The file the table is read from, as `config` names it.
pub const TABLE: &str = "crates/formats/src/formats/models.json";

#[derive(Debug, Deserialize)]
struct Table {
    #[serde(rename = "claude-code")]
    claude_code: Vec<Row>,
    codex: Vec<Row>,
    /// Per profile, the agent versions it was measured on, newest first.
    profiles: Profiles,
}

#[derive(Debug, Deserialize)]
struct Profiles {
    #[serde(rename = "claude-code")]
    claude_code: Vec<VersionRow>,
    codex: Vec<VersionRow>,
    #[serde(rename = "gemini-cli")]
    gemini_cli: Vec<VersionRow>,
}

/// The trigger an agent's versions use: the versions it covers (a prefix such as
/// `2.0.`, and from one version on), the version measured, and what it lays over the
/// profile's preset.
#[derive(Debug, Clone, Deserialize)]
pub struct VersionRow {
    pub versions: String,
    /// The first version the row covers (semantic versions compared; a version that
    /// is not one is not covered): a change inside a prefix, such as Claude Code
    /// 2.1.337's.
    #[serde(default)]
    pub from: Option<String>,
    pub measured: String,
    #[serde(default)]
    pub preset: serde_json::Value,
    pub source: String,
}

impl VersionRow {
    /// Whether a version a session recorded is one this row covers.
    pub fn matches_version(&self, version: &str) -> bool {
        version.starts_with(&self.versions)
            && self.from.as_deref().is_none_or(|from| {
                let from = semver::Version::parse(from).expect("models.json: `from` is a semantic version");
                semver::Version::parse(version).is_ok_and(|v| v >= from)
            })
    }
}

/// The version rows of the profile of an agent (`claude-code`, `codex`, `gemini-cli`),
/// newest first; none for another name.
pub fn profile_rows(agent: &str) -> &'static [VersionRow] {
    let p = &table().profiles;
    match agent {
        "claude-code" => &p.claude_code,
        "codex" => &p.codex,
        "gemini-cli" => &p.gemini_cli,
        _ => &[],
    }
}

/// One row of the table.
#[derive(Debug, Clone, Deserialize)]
pub struct Row {
    pub model: String,
    #[serde(rename = "match")]
    matching: Match,
    pub window: u64,
    /// Claude Code: how it estimates what follows the last usage when it decides to
    /// compact (characters per token, unrounded); `None`: round(characters / 4) per
    /// block, the figure it records as `preTokens`.
    #[serde(default)]
    pub check_chars_per_token: Option<u64>,
    /// Codex: the figure it compacts at.
    #[serde(default)]
    pub auto_compact_limit: Option<u64>,
    /// Codex: the window its rollouts record (`model_context_window`).
    #[serde(default)]
    pub reported_window: Option<u64>,
    pub source: String,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Match {
    Exact,
    Prefix,
    Suffix,
}

impl Row {
    fn matches(&self, model: &str) -> bool {
        match self.matching {
            Match::Exact => model == self.model,
            Match::Prefix => model.starts_with(&self.model),
            Match::Suffix => model.ends_with(&self.model),
        }
    }
}

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| serde_json::from_str(include_str!("models.json")).expect("models.json is valid"))
}

/// The window Claude Code uses for a model assumed when the table does not know it.
pub const CLAUDE_CODE_ASSUMED: u64 = 200_000;

/// Claude Code's row for a model (suffix rows, such as `[1m]`, win over the others).
pub fn claude_code(model: &str) -> Option<&'static Row> {
    let rows = &table().claude_code;
    rows.iter()
        .find(|r| matches!(r.matching, Match::Suffix) && r.matches(model))
        .or_else(|| rows.iter().filter(|r| !matches!(r.matching, Match::Suffix)).find(|r| r.matches(model)))
}

/// Codex's row for a model (the first that matches; the last row matches any model).
pub fn codex(model: &str) -> Option<&'static Row> {
    table().codex.iter().find(|r| r.matches(model))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_table_reads_and_names_a_source_per_row() {
        let opus = super::claude_code("claude-opus-5-5").unwrap();
        assert_eq!((opus.window, opus.check_chars_per_token), (1_000_000, Some(3)));
        assert_eq!(super::claude_code("claude-opus-4-6-20260115").unwrap().window, 200_000);
        assert_eq!(super::claude_code("claude-opus-4-6[1m]").unwrap().window, 1_000_000);
        assert!(super::claude_code("claude-mystery-9").is_none());
        assert_eq!(super::codex("scripted-model").unwrap().auto_compact_limit, Some(244_800));
        let t = super::table();
        assert!(t.claude_code.iter().chain(&t.codex).all(|r| !r.source.is_empty() && r.window > 0));
    }

    #[test]
    fn a_version_picks_the_first_row_that_covers_it() {
        let rows = super::profile_rows("claude-code");
        let measured = |v: &str| rows.iter().find(|r| r.matches_version(v)).map(|r| r.measured.as_str());
        assert_eq!(measured("2.1.337"), Some("2.1.337"));
        assert_eq!(measured("2.1.400"), Some("2.1.337"));
        assert_eq!(measured("2.1.336"), Some("2.1.332"));
        assert_eq!(measured("2.1.337-beta.1"), Some("2.1.332"), "a pre-release comes before its release");
        assert_eq!(measured("2.1.7"), Some("2.1.332"));
        assert_eq!(measured("2.0.76"), Some("2.0.76"));
        assert_eq!(measured("3.0.0"), None);
        assert!(rows.iter().filter_map(|r| r.from.as_deref()).all(|f| semver::Version::parse(f).is_ok()));
    }
}
