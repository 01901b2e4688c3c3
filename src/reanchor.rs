//! Facts for the re-anchor block (SPEC 5), gathered from the whole transcript —
//! including what was summarized or compacted away, since that is what the model lost.

use crate::config::Config;
use crate::render::ReanchorFacts;
use crate::transcript::{Item, Transcript};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use serde_json::Value;

/// Gathers the facts. `used`/`limit` are the decision's figures.
pub fn gather(t: &Transcript<'_>, cfg: &Config) -> ReanchorFacts {
    let (write_tools, shell_tools) = (&cfg.reanchor.write_tools, &cfg.reanchor.shell_tools);
    let mut changed = Recency::default();
    let mut recent = Recency::default();
    let mut latest_check: Option<(usize, &str, &str)> = None;
    let mut last_plan: Option<(usize, usize)> = None;
    let failed = failed_calls(t);
    let mut kinds: HashMap<&str, (bool, bool)> = HashMap::default();
    for (ri, r) in t.records.iter().enumerate() {
        let i = match &r.kind {
            crate::transcript::RecordKind::Item(i) => *i,
            crate::transcript::RecordKind::Event(e) if crate::transcript::Event::FilesChanged.is(&e.name) => {
                let v: Value = serde_json::from_str(t.line_text(ri)).unwrap_or(Value::Null);
                let paths: Vec<String> = v
                    .get("paths")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(|p| normalise(p, cfg.workspace.root.as_deref()))
                    .collect();
                recent.touch(&paths);
                changed.touch(&paths);
                continue;
            }
            _ => continue,
        };
        let item = &t.items[i];
        for (k, call) in item.calls().iter().enumerate() {
            let args = call_args(call);
            let args = args.as_ref();
            let mut paths = key_paths(args, &cfg.reanchor.path_keys);
            // A session calls a few tools many times: each name is matched once.
            let (is_write, is_shell) = *kinds.entry(call.name.as_ref()).or_insert_with(|| {
                (write_tools.is_match(call.name.as_ref()), shell_tools.is_match(call.name.as_ref()))
            });
            let command = if is_shell { shell_command(args) } else { None };
            // A write tool, or a shell command that applies a patch, changes files.
            let writes =
                (is_write && !reads_only(args)) || command.as_deref().is_some_and(|c| c.contains("apply_patch"));
            if writes {
                collect_patch_headers(args, &mut paths);
            }
            let paths: Vec<String> = paths.iter().map(|p| normalise(p, cfg.workspace.root.as_deref())).collect();
            recent.touch(&paths);
            if writes && !failed.contains(&(i, call.id.as_ref())) {
                changed.touch(&paths);
            }
            if let Some(cmd) = command {
                if let Some(v) = cfg.verification.iter().find(|v| starts_with_word(&cmd, v)) {
                    latest_check = Some((i, call.id.as_ref(), v.as_str()));
                }
            }
            // Only the last plan counts: its steps are listed once, at the end.
            if plan_list(&call.name, args).is_some() {
                last_plan = Some((i, k));
            }
        }
    }
    let steps = last_plan.and_then(|(i, k)| {
        let call = &t.items[i].calls()[k];
        plan_steps(&call.name, call_args(call).as_ref())
    });
    let check = latest_check.map(|(owner, id, v)| check_status(t, owner, id, v));
    let changed = changed.newest_first();
    let outside = outside_allowed(&changed, &cfg.workspace.allowed_paths);
    ReanchorFacts {
        changed_files: changed.into_iter().map(|p| flag(p, &outside)).collect(),
        check_status: check.unwrap_or_else(|| "unknown (no verification command has run)".into()),
        recent_paths: recent.newest_first(),
        allowed_paths: cfg.workspace.allowed_paths.patterns().to_vec(),
        verification: cfg.verification.clone(),
        remaining_steps: cfg.remaining_steps.clone().or(steps).unwrap_or_default(),
        used: None,
        limit: cfg.task.max_total_tokens,
        context_window: cfg.runtime.context_window,
        runtime: cfg.runtime.kind.as_str().to_string(),
        native_compaction: cfg.runtime.native_compaction,
        root: cfg.workspace.root.clone(),
        mode: cfg.workspace.mode.clone(),
        permission: cfg.workspace.permission.clone(),
    }
}

/// An editor tool's read-only command (`str_replace_editor` / `str_replace_based_edit_tool`
/// with `command: "view"`): the call names a path but changes nothing.
fn reads_only(args: &Value) -> bool {
    args.get("command").and_then(Value::as_str) == Some("view")
}

/// The object a JSON string holds, if it holds one (some importers give arguments so).
fn string_object(args: &Value) -> Option<Value> {
    let Value::String(s) = args else { return None };
    serde_json::from_str::<Value>(s).ok().filter(Value::is_object)
}

/// Calls (by item and call id) whose result reports failure.
fn failed_calls<'t>(t: &'t Transcript<'_>) -> HashSet<(usize, &'t str)> {
    t.items.iter().filter(|r| r.failed()).filter_map(|r| Some((r.call_item?, r.result_call_id()?))).collect()
}

fn key_paths(args: &Value, keys: &[String]) -> Vec<String> {
    let Value::Object(map) = args else {
        return Vec::new();
    };
    keys.iter().filter_map(|k| map.get(k)?.as_str()).filter(|p| !p.is_empty()).map(str::to_string).collect()
}

/// File headers inside patches and unified diffs, in every string argument.
fn collect_patch_headers(args: &Value, out: &mut Vec<String>) {
    match args {
        Value::String(s) => {
            for line in s.lines() {
                let line = line.trim_end_matches('\r');
                let path = ["*** Update File: ", "*** Add File: ", "*** Delete File: ", "+++ b/"]
                    .iter()
                    .find_map(|h| line.strip_prefix(h));
                if let Some(p) = path.map(str::trim).filter(|p| !p.is_empty()) {
                    out.push(p.to_string());
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|v| collect_patch_headers(v, out)),
        Value::Object(m) => m.values().for_each(|v| collect_patch_headers(v, out)),
        _ => {}
    }
}

/// `./a` is `a`; an absolute path under the workspace root becomes relative.
pub fn normalise(path: &str, root: Option<&str>) -> String {
    let mut p = path.trim();
    if let Some(root) = root.map(|r| r.trim_end_matches('/')).filter(|r| !r.is_empty()) {
        if let Some(rest) = p.strip_prefix(root).and_then(|r| r.strip_prefix('/')) {
            p = rest;
        }
    }
    while let Some(rest) = p.strip_prefix("./") {
        p = rest.trim_start_matches('/');
    }
    p.to_string()
}

/// Distinct paths with the moment each was last seen, newest first on output.
#[derive(Default)]
struct Recency {
    last_seen: HashMap<String, usize>,
    clock: usize,
}

impl Recency {
    fn touch(&mut self, paths: &[String]) {
        for p in paths {
            self.clock += 1;
            self.last_seen.insert(p.clone(), self.clock);
        }
    }

    fn newest_first(self) -> Vec<String> {
        let mut v: Vec<(String, usize)> = self.last_seen.into_iter().collect();
        v.sort_by_key(|p| std::cmp::Reverse(p.1));
        v.into_iter().map(|(p, _)| p).collect()
    }
}

/// The command of a shell call: `command` or `cmd`, arrays joined, `bash -lc` unwrapped.
pub fn shell_command(args: &Value) -> Option<String> {
    let raw = match args {
        Value::Object(m) => m.get("command").or_else(|| m.get("cmd"))?,
        other => other,
    };
    let joined = match raw {
        Value::String(s) => s.clone(),
        Value::Array(a) => {
            a.iter().map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string)).collect::<Vec<_>>().join(" ")
        }
        _ => return None,
    };
    Some(unwrap_shell(joined.trim()))
}

fn unwrap_shell(cmd: &str) -> String {
    for prefix in ["bash -lc ", "bash -c ", "sh -c ", "sh -lc ", "zsh -lc ", "zsh -c "] {
        if let Some(rest) = cmd.strip_prefix(prefix) {
            let rest = rest.trim();
            let unquoted =
                ['"', '\''].iter().find_map(|q| rest.strip_prefix(*q).and_then(|r| r.strip_suffix(*q))).unwrap_or(rest);
            return unquoted.trim().to_string();
        }
    }
    cmd.to_string()
}

/// `cargo test --release` starts with `cargo test` at a word boundary; `cargo tests` does not.
pub fn starts_with_word(cmd: &str, prefix: &str) -> bool {
    let prefix = prefix.trim();
    !prefix.is_empty()
        && cmd.strip_prefix(prefix).is_some_and(|rest| rest.is_empty() || rest.starts_with(char::is_whitespace))
}

fn check_status(t: &Transcript<'_>, owner: usize, call_id: &str, verify: &str) -> String {
    let result: Option<&Item> =
        t.items.iter().skip(owner + 1).rfind(|r| r.call_item == Some(owner) && r.result_call_id() == Some(call_id));
    let (state, code) = match result {
        None => return format!("unknown (`{verify}` has no result yet)"),
        Some(r) => match &r.kind {
            crate::transcript::ItemKind::ToolResult { exit_code, .. } => (r.failed(), *exit_code),
            crate::transcript::ItemKind::Message { .. } => (false, None),
        },
    };
    match (state, code) {
        (false, _) => format!("pass (`{verify}`)"),
        (true, Some(c)) => format!("fail (exit code {c}, `{verify}`)"),
        (true, None) => format!("fail (error, `{verify}`)"),
    }
}

/// A call's arguments as a value (parsed once by the reader when it could), a JSON
/// string holding an object read as that object.
fn call_args<'c>(call: &'c crate::transcript::Call<'_>) -> std::borrow::Cow<'c, Value> {
    if let Some(v) = &call.parsed {
        return string_object(v).map_or(std::borrow::Cow::Borrowed(v), std::borrow::Cow::Owned);
    }
    let v = serde_json::from_str(call.arguments.get()).unwrap_or(Value::Null);
    std::borrow::Cow::Owned(string_object(&v).unwrap_or(v))
}

/// The step list of a plan/todo call — `update_plan` (`plan[].step`) or `TodoWrite`
/// (`todos[].content`) — and the key of each step's text.
fn plan_list<'v>(name: &str, args: &'v Value) -> Option<(&'v Vec<Value>, &'static str)> {
    let (list, text_key) = match name {
        "update_plan" => (args.get("plan")?, "step"),
        "TodoWrite" => (args.get("todos")?, "content"),
        _ => return None,
    };
    Some((list.as_array()?, text_key))
}

/// Open steps of a plan/todo call.
fn plan_steps(name: &str, args: &Value) -> Option<Vec<String>> {
    let (list, text_key) = plan_list(name, args)?;
    let open = list
        .iter()
        .filter(|s| s.get("status").and_then(Value::as_str) != Some("completed"))
        .filter_map(|s| {
            let text = s.get(text_key).and_then(Value::as_str)?;
            let status = s.get("status").and_then(Value::as_str).unwrap_or("pending");
            Some(format!("{text} ({status})"))
        })
        .collect();
    Some(open)
}

/// Changed files outside the allowed paths (none when no paths are set).
fn outside_allowed(paths: &[String], allowed: &crate::config::Globs) -> Vec<String> {
    if allowed.is_empty() {
        return Vec::new();
    }
    paths.iter().filter(|p| !allowed.is_match(p.as_str())).cloned().collect()
}

fn flag(path: String, outside: &[String]) -> String {
    if outside.contains(&path) {
        format!("{path} (outside allowed paths)")
    } else {
        path
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_are_normalised() {
        for (path, root, want) in [
            ("./a/b.rs", None, "a/b.rs"),
            ("././a", None, "a"),
            ("/w/src/x.rs", Some("/w"), "src/x.rs"),
            ("/w/src/x.rs", Some("/w/"), "src/x.rs"),
            ("/wx/src/x.rs", Some("/w"), "/wx/src/x.rs"),
            ("/other/x.rs", Some("/w"), "/other/x.rs"),
            ("  a.rs ", None, "a.rs"),
            ("a.rs", Some(""), "a.rs"),
        ] {
            assert_eq!(normalise(path, root), want, "{path} under {root:?}");
        }
    }

    #[test]
    fn shell_commands_are_unwrapped() {
        for (args, want) in [
            (json!({"command": "cargo test"}), Some("cargo test")),
            (json!({"cmd": ["bash", "-lc", "cargo test --release"]}), Some("cargo test --release")),
            (json!({"command": "bash -lc \"make check\""}), Some("make check")),
            (json!({"command": "sh -c 'npm test'"}), Some("npm test")),
            (json!(["ls", "-la"]), Some("ls -la")),
            (json!({"command": 5}), None),
            (json!({"path": "x"}), None),
        ] {
            assert_eq!(shell_command(&args).as_deref(), want, "{args}");
        }
    }

    #[test]
    fn verification_matches_at_a_word_boundary() {
        for (cmd, prefix, want) in [
            ("cargo test --release", "cargo test", true),
            ("cargo test", "cargo test", true),
            ("cargo tests-extra", "cargo test", false),
            ("cargo test\t-q", "cargo test", true),
            ("cargo", "cargo test", false),
            ("anything", " ", false),
        ] {
            assert_eq!(starts_with_word(cmd, prefix), want, "{cmd:?} / {prefix:?}");
        }
    }
}
