//! Facts for the re-anchor block (SPEC 5), gathered from the whole transcript —
//! including what was summarized or compacted away, since that is what the model lost.

use crate::config::Config;
use crate::render::ReanchorFacts;
use crate::transcript::{Item, Transcript};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use serde_json::Value;
use std::borrow::Cow;

/// Gathers the facts. `used`/`limit` are the decision's figures.
pub fn gather(t: &Transcript<'_>, cfg: &Config) -> ReanchorFacts {
    let (write_tools, shell_tools) = (&cfg.reanchor.write_tools, &cfg.reanchor.shell_tools);
    let mut changed = Recency::default();
    let mut recent = Recency::default();
    let mut latest_check: Option<(usize, &str, &str, CheckRun)> = None;
    let mut last_plan: Option<(usize, usize)> = None;
    let failed = failed_calls(t);
    let mut kinds: HashMap<&str, (bool, bool)> = HashMap::default();
    let mut behind = crate::mapped::Behind::new(t.src);
    for r in &t.records {
        behind.reached(r.span.start);
        let i = match &r.kind {
            crate::transcript::RecordKind::Item(i) => *i,
            crate::transcript::RecordKind::Event(e) if crate::transcript::Event::FilesChanged.is(&e.name) => {
                let paths = || e.paths.iter().map(|p| normalise(p, cfg.workspace.root.as_deref()));
                recent.touch(paths());
                changed.touch(paths());
                continue;
            }
            _ => continue,
        };
        let item = &t.items[i];
        for (k, call) in item.calls().iter().enumerate() {
            let args = Args::of(&call.arguments);
            let mut paths = args.key_paths(&cfg.reanchor.path_keys);
            // A session calls a few tools many times: each name is matched once.
            let (is_write, is_shell) = *kinds.entry(call.name.as_ref()).or_insert_with(|| {
                (write_tools.is_match(call.name.as_ref()), shell_tools.is_match(call.name.as_ref()))
            });
            let command = if is_shell { args.shell_command() } else { None };
            // A write tool, or a shell command that applies a patch, changes files; an
            // editor's `view` command (`str_replace_editor`) names a path and changes none.
            let writes = (is_write && args.str("command").as_deref() != Some("view"))
                || command.as_deref().is_some_and(|c| c.contains("apply_patch"));
            if writes {
                let mut headers = Vec::new();
                args.patch_headers(&mut headers);
                paths.extend(headers.into_iter().map(Cow::Owned));
            }
            let paths = || paths.iter().map(|p| normalise(p, cfg.workspace.root.as_deref()));
            recent.touch(paths());
            if writes && !failed.contains(&(i, call.id.as_ref())) {
                changed.touch(paths());
            }
            if let Some(cmd) = command {
                if let Some((v, run)) = cfg.verification.iter().find_map(|v| runs_check(&cmd, v).map(|r| (v, r))) {
                    latest_check = Some((i, call.id.as_ref(), v.as_str(), run));
                }
            }
            // Only the last plan counts: its steps are listed once, at the end. A plan
            // the agent refused (Codex 0.171 answers `update_plan` with "unsupported
            // call", Claude Code 2.1 `TodoWrite` with "No such tool available") is none.
            if is_plan(&call.name)
                && !failed.contains(&(i, call.id.as_ref()))
                && plan_list(&call.name, &args.value()).is_some()
            {
                last_plan = Some((i, k));
            }
        }
    }
    let steps = last_plan.and_then(|(i, k)| {
        let call = &t.items[i].calls()[k];
        plan_steps(&call.name, &Args::of(&call.arguments).value())
    });
    let check = latest_check.map(|(owner, id, v, run)| check_status(t, owner, id, v, &run));
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

/// The object a JSON string holds, if it holds one (some importers give arguments so).
fn string_object(args: &Value) -> Option<Value> {
    let Value::String(s) = args else { return None };
    serde_json::from_str::<Value>(s).ok().filter(Value::is_object)
}

/// Calls (by item and call id) whose result reports failure.
fn failed_calls<'t>(t: &'t Transcript<'_>) -> HashSet<(usize, &'t str)> {
    // In file order, giving back a mapped input's pages behind (each id hashed is read),
    // into a set sized once (growing it would hash every id again, bringing them back).
    let mut behind = crate::mapped::Behind::new(t.src);
    let mut failed = HashSet::default();
    failed.reserve(t.items.iter().filter(|r| r.failed()).count());
    for r in t.items.iter().filter(|r| r.failed()) {
        behind.reached(t.records[r.record].span.start);
        if let (Some(owner), Some(id)) = (r.call_item, r.result_call_id()) {
            failed.insert((owner, id));
        }
    }
    failed
}

/// File headers inside patches and unified diffs, in every string argument.
fn collect_patch_headers(args: &Value, out: &mut Vec<String>) {
    match args {
        Value::String(s) => headers_in_text(s, out),
        Value::Array(a) => a.iter().for_each(|v| collect_patch_headers(v, out)),
        Value::Object(m) => m.values().for_each(|v| collect_patch_headers(v, out)),
        _ => {}
    }
}

/// The files named by the headers of a patch or unified diff in `s`.
fn headers_in_text(s: &str, out: &mut Vec<String>) {
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

/// Whether a JSON string literal can hold a line [`headers_in_text`] reads: its text
/// has `*** ` or `+++ b` as it is, or a `\u` escape that could spell them. Most
/// arguments (a file's content, a command) have neither and are not decoded.
fn may_hold_headers(literal: &str) -> bool {
    let b = literal.as_bytes();
    // Backslashes apart: in a file's content they come every few bytes, and a search
    // that stops at each costs more than a second pass.
    memchr::memchr2_iter(b'*', b'+', b).any(|i| match b[i] {
        b'*' => b[i..].starts_with(b"*** "),
        _ => b[i..].starts_with(b"+++ b"),
    }) || memchr::memmem::find(b, b"\\u").is_some()
}

/// `./a` is `a`; an absolute path under the workspace root becomes relative. Under a
/// Windows root (`C:\repo`, `C:/repo`, `\\server\share`: Claude Code and Codex run on
/// Windows too) a path is matched with either separator and letters of either case, as
/// Windows does, and one in the workspace is written with `/` (`src/main.rs`), as the
/// allowed-path globs and the other sessions' paths are.
pub fn normalise<'p>(path: &'p str, root: Option<&str>) -> Cow<'p, str> {
    let p = path.trim();
    let root = root.map(|r| r.trim_end_matches(['/', '\\'])).filter(|r| !r.is_empty());
    if let Some(root) = root.filter(|r| is_windows_path(r)) {
        let inside = under_windows_root(p, root).or_else(|| (!is_windows_path(p)).then_some(p));
        if let Some(rest) = inside.filter(|r| r.contains('\\')) {
            return Cow::Owned(dot_slashes(&rest.replace('\\', "/")).to_string());
        }
        return Cow::Borrowed(dot_slashes(inside.unwrap_or(p)));
    }
    let rest = root.and_then(|root| p.strip_prefix(root)).and_then(|r| r.strip_prefix('/'));
    Cow::Borrowed(dot_slashes(rest.unwrap_or(p)))
}

/// A path without its leading `./` (`././a` is `a`).
fn dot_slashes(mut p: &str) -> &str {
    while let Some(rest) = p.strip_prefix("./") {
        p = rest.trim_start_matches('/');
    }
    p
}

/// A Windows absolute path: a drive (`C:\`, `C:/`, `C:` alone) or a UNC share (`\\`).
fn is_windows_path(p: &str) -> bool {
    let b = p.as_bytes();
    let drive =
        b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':' && matches!(b.get(2), None | Some(b'\\' | b'/'));
    drive || p.starts_with("\\\\")
}

/// What follows `root` in `p` when `p` is under it, compared as Windows does: `\` and
/// `/` alike, letters of either case alike.
fn under_windows_root<'p>(p: &'p str, root: &str) -> Option<&'p str> {
    let same = |a: u8, b: u8| a.eq_ignore_ascii_case(&b) || (matches!(a, b'\\' | b'/') && matches!(b, b'\\' | b'/'));
    let (pb, rb) = (p.as_bytes(), root.as_bytes());
    let matched = pb.len() > rb.len() && pb.iter().zip(rb).all(|(&a, &b)| same(a, b));
    // Only ASCII bytes differ when matched, so the cut is at a character's boundary.
    matched.then(|| &p[rb.len()..]).and_then(|r| r.strip_prefix(['\\', '/']))
}

/// Distinct paths with the moment each was last seen, newest first on output.
#[derive(Default)]
struct Recency {
    last_seen: HashMap<String, usize>,
    clock: usize,
}

impl Recency {
    fn touch<'p>(&mut self, paths: impl Iterator<Item = Cow<'p, str>>) {
        for p in paths {
            self.clock += 1;
            // A path seen before (most are) is looked up, not copied again.
            match self.last_seen.get_mut(p.as_ref()) {
                Some(seen) => *seen = self.clock,
                None => {
                    self.last_seen.insert(p.into_owned(), self.clock);
                }
            }
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
    match args {
        Value::Object(m) => command_text(m.get("command").or_else(|| m.get("cmd"))?),
        other => command_text(other),
    }
}

/// A command given as a string or an array of words, `bash -lc` unwrapped.
fn command_text(raw: &Value) -> Option<String> {
    let joined = match raw {
        Value::String(s) => s.clone(),
        Value::Array(a) => {
            a.iter().map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string)).collect::<Vec<_>>().join(" ")
        }
        _ => return None,
    };
    Some(unwrap_shell(joined.trim()).to_string())
}

/// The command a shell is asked to run (`bash -lc '…'` and the like, the shell named by
/// its path too: Codex prints `/bin/bash -lc …`; on Windows `powershell.exe -NoProfile
/// -Command …`, `pwsh -c …`, `cmd /c …`), or `cmd` itself.
fn unwrap_shell(cmd: &str) -> &str {
    let (first, rest) = cmd.split_once(' ').unwrap_or((cmd, ""));
    // The program's name, without its folder or `.exe`, in any case (no allocation: this
    // runs for every shell call of a session).
    let name = first.rsplit(['/', '\\']).next().unwrap_or(first);
    let name = name.len().checked_sub(4).filter(|&n| name.is_char_boundary(n)).map_or(name, |n| {
        if name[n..].eq_ignore_ascii_case(".exe") {
            &name[..n]
        } else {
            name
        }
    });
    let is = |names: &[&str]| names.iter().any(|n| name.eq_ignore_ascii_case(n));
    let script = if is(&["bash", "sh", "zsh"]) {
        let rest = rest.trim_start();
        rest.strip_prefix("-lc ").or_else(|| rest.strip_prefix("-c "))
    } else if is(&["powershell", "pwsh"]) {
        powershell_script(rest)
    } else if is(&["cmd"]) {
        let rest = rest.trim_start();
        ["/c ", "/C ", "/s /c ", "/S /C ", "/d /c ", "/D /C "].iter().find_map(|flag| rest.strip_prefix(flag))
    } else {
        None
    };
    let Some(rest) = script.map(str::trim) else { return cmd };
    let unquoted =
        ['"', '\''].iter().find_map(|q| rest.strip_prefix(*q).and_then(|r| r.strip_suffix(*q))).unwrap_or(rest);
    unquoted.trim()
}

/// What follows PowerShell's `-Command` (or `-c`) after its other switches
/// (`-NoProfile`, `-NoLogo`, `-ExecutionPolicy Bypass` …); `None` without one.
fn powershell_script(mut rest: &str) -> Option<&str> {
    loop {
        rest = rest.trim_start();
        let (word, after) = rest.split_once(' ').unwrap_or((rest, ""));
        let is = |names: &[&str]| names.iter().any(|n| word.eq_ignore_ascii_case(n));
        if is(&["-command", "-c"]) {
            return Some(after);
        }
        if !word.starts_with('-') || after.is_empty() {
            return None;
        }
        rest = after;
        if is(&["-executionpolicy", "-ep", "-ex", "-windowstyle", "-w"]) {
            // A switch that takes a value: the value is skipped too.
            rest = rest.trim_start().split_once(' ').map_or("", |(_, a)| a);
        }
    }
}

/// Whether a shell command runs the check `verify`: it starts with it, or one command of
/// its `&&` chains does (`cd /testbed && python -m pytest -q`, as agents run checks from
/// the repository's folder). A chain's exit code is 0 only when every command of it
/// succeeded, so the call's result says whether the check passed — unless another
/// command's exit code is the call's, which the status then says: its output piped into
/// one (`mix test 2>&1 | tail -5`, and the shell not told `pipefail`), its failure caught
/// (`|| true`), or a command run after it (`; echo`, or on a later line).
fn runs_check(cmd: &str, verify: &str) -> Option<CheckRun> {
    // Most shell calls are not the check: nothing is split for them.
    if !cmd.contains(verify.trim()) {
        return None;
    }
    // Commands one after the other: `;` or a line end (not one escaped or quoted).
    let lists: Vec<&str> = split_unquoted(cmd, ";").into_iter().flat_map(|l| split_unquoted(l, "\n")).collect();
    let (k, part) = lists.iter().enumerate().find_map(|(k, list)| {
        split_unquoted(list, "&&").into_iter().find(|p| starts_with_word(p.trim(), verify)).map(|p| (k, p))
    })?;
    let shown = |s: &str| crate::text::cut(s.trim().trim_start_matches('&').trim(), 60);
    let caught = split_unquoted(part, "||");
    if let Some(then) = caught.get(1) {
        return Some(CheckRun::Hidden(format!("failing runs `{}`", shown(then))));
    }
    let stages = split_unquoted(part, "|");
    if let Some(consumer) = stages.last().filter(|_| stages.len() > 1 && !cmd.contains("pipefail")) {
        return Some(CheckRun::Hidden(format!("was piped into `{}`", shown(consumer))));
    }
    let after = lists[k + 1..].iter().map(|l| l.trim()).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("; ");
    Some(if after.is_empty() {
        CheckRun::Status
    } else {
        CheckRun::Hidden(format!("was followed by `{}`", shown(&after)))
    })
}

/// How a call ran the check: its exit code is the check's, or it is another command's
/// (what happened to the check, said beside the status).
#[derive(Debug, PartialEq, Eq)]
enum CheckRun {
    Status,
    Hidden(String),
}

/// `cmd` cut at each `sep` outside quotes (`|` never as half of `||`, `;` never in `;;`).
fn split_unquoted<'c>(cmd: &'c str, sep: &str) -> Vec<&'c str> {
    let b = cmd.as_bytes();
    let (mut parts, mut start, mut quote, mut i) = (Vec::new(), 0, None, 0);
    while i < b.len() {
        match (quote, b[i]) {
            (None, q @ (b'\'' | b'"')) => quote = Some(q),
            (Some(q), c) if c == q => quote = None,
            (None | Some(b'"'), b'\\') => i += 1,
            (None, _) if cmd[i..].starts_with(sep) => {
                let one = sep.as_bytes()[0];
                let doubled = sep.len() == 1 && (b.get(i + 1) == Some(&one) || (i > 0 && b[i - 1] == one));
                if !doubled {
                    parts.push(&cmd[start..i]);
                    start = i + sep.len();
                    i = start;
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    parts.push(&cmd[start..]);
    parts
}

/// `cargo test --release` starts with `cargo test` at a word boundary; `cargo tests` does not.
pub fn starts_with_word(cmd: &str, prefix: &str) -> bool {
    let prefix = prefix.trim();
    !prefix.is_empty()
        && cmd.strip_prefix(prefix).is_some_and(|rest| rest.is_empty() || rest.starts_with(char::is_whitespace))
}

fn check_status(t: &Transcript<'_>, owner: usize, call_id: &str, verify: &str, run: &CheckRun) -> String {
    let result: Option<&Item> =
        t.items.iter().skip(owner + 1).rfind(|r| r.call_item == Some(owner) && r.result_call_id() == Some(call_id));
    let (state, code) = match result {
        None => return format!("unknown (`{verify}` has no result yet)"),
        Some(r) => match &r.kind {
            crate::transcript::ItemKind::ToolResult { exit_code, .. } => (r.failed(), *exit_code),
            crate::transcript::ItemKind::Message { .. } => (false, None),
        },
    };
    // SPEC 5: pass or fail by the call's exit code. When that code is another
    // command's, the status says so beside it rather than passing for the check's.
    let check = match run {
        CheckRun::Status => format!("`{verify}`"),
        CheckRun::Hidden(what) => format!("`{verify}` {what}, whose exit code this is, not the check's"),
    };
    match (state, code) {
        (false, _) => format!("pass ({check})"),
        (true, Some(c)) => format!("fail (exit code {c}, {check})"),
        (true, None) => format!("fail (error, {check})"),
    }
}

/// A call's arguments as the re-anchor reads them: an object's members, each parsed
/// only when a fact needs it (most calls are read for a path or a command and nothing
/// more), or any other value whole — a JSON string holding an object read as that
/// object. Members read as a parser reads the object: a duplicate key's last value, in
/// the first one's place.
enum Args<'c> {
    Members { raw: &'c str, members: smallvec::SmallVec<[(&'c str, &'c str); 4]> },
    Whole(Value),
}

impl<'c> Args<'c> {
    fn of(raw: &'c str) -> Args<'c> {
        let mut s = crate::scan::Scan::new(raw);
        // Most calls have a few members: held in place, not allocated.
        let mut members: smallvec::SmallVec<[(&str, &str); 4]> = smallvec::SmallVec::new();
        let read = s.peek() == Some(b'{')
            && s.object(0, |s, key| {
                let value = s.raw_value(1)?;
                match members.iter_mut().find(|(k, _)| *k == key) {
                    Some(m) => m.1 = value,
                    None => members.push((key, value)),
                }
                Some(())
            })
            .is_some()
            && s.at_end();
        if read {
            return Args::Members { raw, members };
        }
        let v = serde_json::from_str(raw).unwrap_or(Value::Null);
        Args::Whole(string_object(&v).unwrap_or(v))
    }

    /// The raw text of member `key`.
    fn raw(&self, key: &str) -> Option<&'c str> {
        match self {
            Args::Members { members, .. } => members.iter().find(|(k, _)| *k == key).map(|m| m.1),
            Args::Whole(_) => None,
        }
    }

    /// Member `key` when it is a string.
    fn str(&self, key: &str) -> Option<Cow<'_, str>> {
        match self {
            Args::Members { .. } => {
                self.raw(key).filter(|raw| raw.starts_with('"')).and_then(crate::text::unescape_literal)
            }
            Args::Whole(v) => v.get(key)?.as_str().map(Cow::Borrowed),
        }
    }

    /// The whole value (for the few facts that walk it: plans).
    fn value(&self) -> Cow<'_, Value> {
        match self {
            Args::Members { raw, .. } => Cow::Owned(serde_json::from_str(raw).unwrap_or(Value::Null)),
            Args::Whole(v) => Cow::Borrowed(v),
        }
    }

    /// File headers of patches in every string (see [`collect_patch_headers`]).
    fn patch_headers(&self, out: &mut Vec<String>) {
        match self {
            Args::Members { members, .. } => {
                for (_, raw) in members {
                    if !raw.starts_with('"') {
                        collect_patch_headers(&serde_json::from_str(raw).unwrap_or(Value::Null), out);
                    } else if may_hold_headers(raw) {
                        match crate::text::unescape_literal(raw) {
                            Some(text) => headers_in_text(&text, out),
                            None => collect_patch_headers(&serde_json::from_str(raw).unwrap_or(Value::Null), out),
                        }
                    }
                }
            }
            Args::Whole(v) => collect_patch_headers(v, out),
        }
    }

    /// The non-empty strings under the path keys, in the keys' order.
    fn key_paths(&self, keys: &[String]) -> Vec<Cow<'_, str>> {
        if matches!(self, Args::Whole(v) if !v.is_object()) {
            return Vec::new();
        }
        keys.iter().filter_map(|k| self.str(k)).filter(|p| !p.is_empty()).collect()
    }

    /// The command of a shell call (see [`shell_command`]): borrowed from the arguments
    /// when it holds no escape, the decoded text itself when it is the command whole.
    fn shell_command(&self) -> Option<Cow<'c, str>> {
        match self {
            Args::Members { .. } => {
                let raw = self.raw("command").or_else(|| self.raw("cmd"))?;
                match raw.starts_with('"').then(|| crate::text::unescape_literal(raw)).flatten() {
                    Some(Cow::Borrowed(text)) => Some(Cow::Borrowed(unwrap_shell(text.trim()))),
                    Some(Cow::Owned(text)) => {
                        let command = unwrap_shell(text.trim());
                        Some(if command.len() == text.len() {
                            Cow::Owned(text)
                        } else {
                            Cow::Owned(command.to_string())
                        })
                    }
                    None => command_text(&serde_json::from_str(raw).unwrap_or(Value::Null)).map(Cow::Owned),
                }
            }
            Args::Whole(v) => shell_command(v).map(Cow::Owned),
        }
    }
}

/// Whether a tool keeps a plan or todo list.
fn is_plan(name: &str) -> bool {
    matches!(name, "update_plan" | "TodoWrite" | "write_todos" | "task_tracker")
}

/// The step list of a plan/todo call — `update_plan` (`plan[].step`), `TodoWrite`
/// (`todos[].content`), Gemini CLI's `write_todos` (`todos[].description`) or
/// OpenHands' `task_tracker` (`task_list[].title`, its `plan` command; `view` lists
/// none) — and the key of each step's text.
fn plan_list<'v>(name: &str, args: &'v Value) -> Option<(&'v Vec<Value>, &'static str)> {
    let (list, text_key) = match name {
        "update_plan" => (args.get("plan")?, "step"),
        "TodoWrite" => (args.get("todos")?, "content"),
        "write_todos" => (args.get("todos")?, "description"),
        "task_tracker" if args.get("command").and_then(Value::as_str).unwrap_or("plan") == "plan" => {
            (args.get("task_list")?, "title")
        }
        _ => return None,
    };
    Some((list.as_array()?, text_key))
}

/// Open steps of a plan/todo call.
fn plan_steps(name: &str, args: &Value) -> Option<Vec<String>> {
    let (list, text_key) = plan_list(name, args)?;
    let open = list
        .iter()
        .filter(|s| !matches!(s.get("status").and_then(Value::as_str), Some("completed" | "cancelled" | "done")))
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
    use proptest::prelude::*;
    use serde_json::json;

    /// The arguments as every reader of them once read them: one parsed value, a JSON
    /// string holding an object read as that object.
    fn parsed(raw: &str) -> Value {
        let v = serde_json::from_str(raw).unwrap_or(Value::Null);
        string_object(&v).unwrap_or(v)
    }

    fn member_text() -> impl Strategy<Value = String> {
        let key = prop::sample::select(vec!["path", "command", "cmd", "file_path", "x", "a\\u0062"]);
        let value = prop_oneof![
            prop::sample::select(vec![
                "\"src/a.rs\"",
                "\"\"",
                "\"view\"",
                "\"vi\\u0065w\"",
                "\"bash -lc 'cargo test'\"",
                "[\"bash\", \"-lc\", \"ls\"]",
                "[1, {\"a\": null}]",
                "{\"command\": \"ls\"}",
                "null",
                "7",
                "\"*** Update File: b.rs\\n+++ b/c.rs\"",
                // Headers spelled with escapes, and after a line end.
                "\"\\u002a** Add File: d.rs\"",
                "\"x\\n\\u002b++ b\\/e.rs\"",
                "\"x\\r\\n*** Delete File: f.rs\"",
            ])
            .prop_map(String::from),
            "[a-z/. ]{0,12}".prop_map(|s| Value::from(s).to_string()),
        ];
        let object = prop::collection::vec((key, value), 0..6).prop_map(|members| {
            let members: Vec<String> = members.into_iter().map(|(k, v)| format!("\"{k}\" : {v}")).collect();
            format!("{{ {} }}", members.join(", "))
        });
        prop_oneof![
            4 => object.clone(),
            1 => object.prop_map(|o| Value::from(o).to_string()),
            1 => prop::sample::select(vec!["\"ls -la\"", "[\"ls\", 1]", "null", "3", "\"{\\\"a\\\":\""]).prop_map(String::from),
        ]
    }

    proptest! {
        /// Reading members one by one gives every fact the parsed value gives.
        #[test]
        fn members_read_as_the_parsed_value(raw in member_text()) {
            let args = Args::of(&raw);
            let v = parsed(&raw);
            let keys: Vec<String> = ["path", "file_path", "x"].map(String::from).to_vec();
            let want_paths: Vec<String> = match &v {
                Value::Object(m) => keys.iter().filter_map(|k| m.get(k)?.as_str()).filter(|p| !p.is_empty()).map(str::to_string).collect(),
                _ => Vec::new(),
            };
            prop_assert_eq!(args.key_paths(&keys), want_paths, "{}", raw);
            prop_assert_eq!(args.shell_command().map(Cow::into_owned), shell_command(&v), "{}", raw);
            prop_assert_eq!(args.str("command").map(Cow::into_owned), v.get("command").and_then(Value::as_str).map(str::to_string));
            let mut headers = (Vec::new(), Vec::new());
            args.patch_headers(&mut headers.0);
            collect_patch_headers(&v, &mut headers.1);
            prop_assert_eq!(headers.0, headers.1, "{}", raw);
            prop_assert_eq!(args.value().into_owned(), v);
        }
    }

    #[test]
    fn an_editor_view_changes_nothing() {
        let call = |id: &str, args: &str| {
            format!(
                r#"{{"type":"message","id":"{id}","turn":"t1","role":"assistant","content":"","tool_calls":[{{"id":"c{id}","name":"str_replace_editor","arguments":{args}}}]}}"#
            )
        };
        let text = [
            r#"{"type":"message","id":"u","turn":"t1","role":"user","content":"go"}"#.to_string(),
            call("a", r#"{"command":"view","path":"seen.py"}"#),
            call("b", r#"{"command":"str_replace","path":"edited.py"}"#),
            call("c", r#""{\"command\": \"vi\\u0065w\", \"path\": \"also-seen.py\"}""#),
        ]
        .join("\n");
        let t = crate::transcript::parse(text.as_bytes(), std::path::Path::new("t.jsonl")).unwrap();
        let facts = gather(&t, &Config::default());
        assert_eq!(facts.changed_files, ["edited.py"]);
        assert_eq!(facts.recent_paths, ["also-seen.py", "edited.py", "seen.py"]);
    }

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
            // Windows: either separator, letters of either case; the path in the
            // workspace written with `/`.
            (r"C:\Users\dev\proj\src\parser.rs", Some(r"C:\Users\dev\proj"), "src/parser.rs"),
            (r"c:/users/DEV/proj/src/a.rs", Some(r"C:\Users\dev\proj\"), "src/a.rs"),
            (r"C:\Users\dev\project\a.rs", Some(r"C:\Users\dev\proj"), r"C:\Users\dev\project\a.rs"),
            (r"D:\other\a.rs", Some(r"C:\proj"), r"D:\other\a.rs"),
            (r".\src\b.rs", Some(r"C:\proj"), "src/b.rs"),
            (r"C:\a.rs", Some("C:"), "a.rs"),
            (r"\\srv\share\w\x.rs", Some(r"\\srv\share\w"), "x.rs"),
            ("C:/proj/é/ü.rs", Some("C:/proj"), "é/ü.rs"),
            // A POSIX root leaves backslashes as they are (a file name may hold one).
            (r"/w/a\b.rs", Some("/w"), r"a\b.rs"),
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
            (json!({"command": ["/bin/bash", "-lc", "cargo test dates"]}), Some("cargo test dates")),
            (json!({"command": "/usr/bin/zsh -c 'make check'"}), Some("make check")),
            (json!({"command": "/opt/mybash -lc 'make'"}), Some("/opt/mybash -lc 'make'")),
            (json!({"command": "sh -c 'npm test'"}), Some("npm test")),
            // Windows: PowerShell after its switches, `cmd /c`, named by path or not.
            (json!({"command": ["powershell.exe", "-NoProfile", "-Command", "cargo test"]}), Some("cargo test")),
            (json!({"command": "pwsh -NoLogo -ExecutionPolicy Bypass -c \"npm test\""}), Some("npm test")),
            (
                json!({"command": [r"C:\Windows\System32\WindowsPowerShell\v1.0\powershell.exe", "-Command", "pytest -q"]}),
                Some("pytest -q"),
            ),
            (json!({"command": "cmd /c \"make check\""}), Some("make check")),
            (json!({"command": "CMD.EXE /C dir"}), Some("dir")),
            (
                json!({"command": [r"C:\Program Files\Git\bin\bash.exe", "-lc", "make"]}),
                Some(r"C:\Program Files\Git\bin\bash.exe -lc make"),
            ),
            (json!({"command": "powershell.exe Get-ChildItem"}), Some("powershell.exe Get-ChildItem")),
            (json!({"command": "pwsh -NoProfile"}), Some("pwsh -NoProfile")),
            (json!({"command": r"C:\msys64\usr\bin\bash.exe -lc 'make'"}), Some("make")),
            (json!(["ls", "-la"]), Some("ls -la")),
            (json!({"command": 5}), None),
            (json!({"path": "x"}), None),
        ] {
            assert_eq!(shell_command(&args).as_deref(), want, "{args}");
        }
    }

    #[test]
    fn a_check_run_in_an_and_chain_is_the_check_and_a_pipe_hides_its_exit_code() {
        use super::{runs_check, CheckRun};
        let hidden = |what: &str| Some(CheckRun::Hidden(what.to_string()));
        let piped = |into: &str| hidden(&format!("was piped into `{into}`"));
        assert_eq!(
            runs_check("cd /testbed && python -m pytest -q tests/test_a.py", "python -m pytest"),
            Some(CheckRun::Status)
        );
        assert_eq!(runs_check("python -m pytest -x&&git diff", "python -m pytest"), Some(CheckRun::Status));
        assert_eq!(runs_check("cd /testbed && python -m pytesting", "python -m pytest"), None);
        assert_eq!(runs_check("echo python -m pytest", "python -m pytest"), None);
        assert_eq!(runs_check("mix test 2>&1 | tail -5", "mix test"), piped("tail -5"));
        assert_eq!(runs_check("mix compile && mix test a.exs 2>&1 | tail -10", "mix test"), piped("tail -10"));
        assert_eq!(runs_check("mix test | tee log | tail -3", "mix test"), piped("tail -3"));
        assert_eq!(runs_check("set -o pipefail && mix test | tail -5", "mix test"), Some(CheckRun::Status));
        assert_eq!(runs_check("mix test || true", "mix test"), hidden("failing runs `true`"), "|| is no pipe");
        assert_eq!(runs_check("set -o pipefail; mix test | tail -5", "mix test"), Some(CheckRun::Status));
        assert_eq!(runs_check("mix test; echo done", "mix test"), hidden("was followed by `echo done`"));
        assert_eq!(runs_check("cd a; mix test", "mix test"), Some(CheckRun::Status));
        assert_eq!(runs_check("cd /testbed\npython -m pytest -q\n", "python -m pytest"), Some(CheckRun::Status));
        assert_eq!(
            runs_check("python -m pytest \\\n  -q\ngit status", "python -m pytest"),
            hidden("was followed by `git status`")
        );
        assert_eq!(runs_check("python -c \"1\npytest\"", "pytest"), None, "a quoted line end ends no command");
        assert_eq!(runs_check("case x in x) mix test;; esac", "mix test"), None, "`;;` ends no command");
        assert_eq!(runs_check("pytest -k 'a|b' \"x|y\"", "pytest"), Some(CheckRun::Status), "a quoted bar is no pipe");
        assert_eq!(runs_check("cd a && echo '&& pytest'", "pytest"), None, "a quoted && is no chain");
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
