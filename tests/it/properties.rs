//! Property tests of the fallback invariants over random transcripts: no call separated
//! from its results, head protected, tail retained, idempotent, deterministic.

use proptest::prelude::*;
use rivumi_compact::config::Config;
use rivumi_compact::engine::{self, Settings};
use rivumi_compact::output::write_transcript;
use rivumi_compact::policy::boundary;
use rivumi_compact::transcript::parse;
use std::path::Path;

/// One step of a session: a user message, or an assistant message with N calls whose
/// results follow (some results may be missing, as in an interrupted turn).
#[derive(Debug, Clone)]
enum Step {
    User(String),
    Assistant { calls: usize, answered: usize, usage: Option<u64>, text: String },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        "[a-zé🙂 ]{0,30}".prop_map(Step::User),
        (0usize..4, 0usize..4, proptest::option::of(1u64..5000), "[a-z ✓]{0,20}").prop_map(
            |(calls, answered, usage, text)| { Step::Assistant { calls, answered: answered.min(calls), usage, text } }
        ),
    ]
}

fn render(steps: &[Step], budget: u64) -> String {
    let mut out = format!("{{\"type\":\"session\",\"id\":\"s\",\"task\":{{\"max_total_tokens\":{budget}}}}}\n");
    let (mut n, mut c) = (0, 0);
    for (t, s) in steps.iter().enumerate() {
        match s {
            Step::User(text) => {
                n += 1;
                out.push_str(&format!(
                    "{{\"type\":\"message\",\"id\":\"i{n}\",\"turn\":\"t{t}\",\"role\":\"user\",\"content\":{}}}\n",
                    serde_json::json!(text)
                ));
            }
            Step::Assistant { calls, answered, usage, text } => {
                n += 1;
                let ids: Vec<String> = (0..*calls).map(|k| format!("c{}", c + k)).collect();
                c += calls;
                let tool_calls: Vec<_> = ids
                    .iter()
                    .map(|id| serde_json::json!({"id": id, "name": "bash", "arguments": {"command": "ls"}}))
                    .collect();
                let mut m = serde_json::json!({"type":"message","id":format!("i{n}"),"turn":format!("t{t}"),"role":"assistant","content":text,"tool_calls":tool_calls});
                if let Some(u) = usage {
                    m["usage"] = serde_json::json!({"input_tokens": u});
                }
                out.push_str(&format!("{m}\n"));
                for id in ids.iter().take(*answered) {
                    n += 1;
                    out.push_str(&format!("{{\"type\":\"tool_result\",\"id\":\"i{n}\",\"turn\":\"t{t}\",\"call_id\":\"{id}\",\"name\":\"bash\",\"content\":\"ok\"}}\n"));
                }
            }
        }
    }
    out
}

fn run_once(input: &[u8]) -> Vec<u8> {
    let done = engine::process(input, Path::new("prop.jsonl"), &Settings::default()).expect("valid transcript");
    let mut out = Vec::new();
    write_transcript(&mut out, &done.transcript, &done.plan).unwrap();
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(crate::cases(256)))]

    #[test]
    fn boundary_keeps_calls_with_results(steps in proptest::collection::vec(step(), 0..30), protect in 0usize..4, retain in 0usize..6) {
        let text = render(&steps, 1000);
        let t = parse(text.as_bytes(), Path::new("p")).unwrap();
        let inputs = t.input_items();
        let b = boundary(&t, &inputs, protect, retain);
        let n = inputs.len();
        prop_assert!(b.protected_end <= b.retained_start && b.retained_start <= n);
        prop_assert!(b.protected_end >= protect.min(n), "head protected");
        prop_assert!(n - b.retained_start >= retain.min(n - b.protected_end), "tail retained");
        let side = |pos: usize| if pos < b.protected_end { 0 } else if pos < b.retained_start { 1 } else { 2 };
        for (pos, &i) in inputs.iter().enumerate() {
            if let Some(owner) = t.items[i].call_item {
                let owner_pos = inputs.iter().position(|&x| x == owner).unwrap();
                prop_assert_eq!(side(owner_pos), side(pos), "a call and its result on different sides");
            }
        }
    }

    #[test]
    fn idempotent_and_deterministic(steps in proptest::collection::vec(step(), 0..30), budget in 1u64..20000) {
        let text = render(&steps, budget);
        let first = run_once(text.as_bytes());
        prop_assert_eq!(&first, &run_once(text.as_bytes()), "same input, same bytes");
        let second = run_once(&first);
        prop_assert_eq!(&second, &first, "running on its own output changes nothing");
        prop_assert!(std::str::from_utf8(&first).is_ok());
    }
}

#[test]
fn defaults_match_the_spec() {
    let c = Config::default();
    let (f, s, r) = (&c.fallback, &c.summary, &c.reanchor);
    assert_eq!((f.protect_first, f.retain_last, f.min_eligible), (2, 4, 2));
    assert_eq!((s.preview_chars, s.max_items, s.max_chars), (240, 40, 8000));
    assert_eq!((r.max_entries, r.max_chars, c.threshold.basis_points()), (20, 4000, 8500));
    assert_eq!((c.checkpoint.retain_turns, c.hooks.timeout_secs, c.summarizer_timeout_secs), (2, 60, 60));
}

/// A random OpenAI-format dataset line, with the shapes real datasets have: text or
/// block content, escapes and non-ASCII, calls with JSON-string, object, plain-string or
/// null arguments, results, usage per message or per line (or null), messages this tool
/// injected, and fields the tool does not read.
fn chat_line() -> impl Strategy<Value = String> {
    let text = "[a-z\"\\\\\n\té🙂 {}\\[\\]]{0,40}";
    let content = prop_oneof![
        text.prop_map(|t| serde_json::json!(t)),
        proptest::collection::vec(text, 0..3).prop_map(|v| serde_json::json!(v
            .iter()
            .map(|t| serde_json::json!({"type": "text", "text": t}))
            .collect::<Vec<_>>())),
        Just(serde_json::Value::Null),
        // One part as an object, parts that are not text, and texts long enough that
        // a preview decodes only a prefix of them.
        text.prop_map(|t| serde_json::json!({"type": "text", "text": t})),
        text.prop_map(|t| serde_json::json!([{"type": "image_url", "image_url": {"url": "x"}}, {"type": "text", "text": t}, "odd"])),
        (text, 20usize..60).prop_map(|(t, n)| serde_json::json!(format!("{t} word\n").repeat(n))),
    ];
    let args = prop_oneof![
        Just(serde_json::json!("{\"command\": \"pytest -q\", \"path\": \"src/a.py\"}")),
        Just(serde_json::json!({"path": "b.rs", "n": 1})),
        Just(serde_json::json!("not json")),
        Just(serde_json::Value::Null),
    ];
    let usage = prop_oneof![
        Just(None),
        (1u64..4000, 0u64..2000, 0u64..500).prop_map(|(p, c, o)| Some(serde_json::json!(
            {"prompt_tokens": p + c, "completion_tokens": o, "prompt_tokens_details": {"cached_tokens": c}}))),
        Just(Some(serde_json::Value::Null)),
    ];
    let input = prop_oneof![
        Just(serde_json::json!("*** Begin Patch\n*** Update File: src/a.rs\n@@\n-a\n+b\n*** End Patch\n")),
        Just(serde_json::json!("{\"path\": \"c.rs\"}")),
        Just(serde_json::json!("[1]")),
        Just(serde_json::Value::Null),
    ];
    let message =
        (0u8..10, content, args, input, usage, any::<bool>()).prop_map(|(kind, content, args, input, usage, extra)| {
            let mut m = match kind {
                // A call of a custom tool (free-form `input`, no `function`), and one that
                // has both.
                8 => serde_json::json!({"role": "assistant", "content": content,
                "tool_calls": [{"id": "c1", "type": "custom", "custom": {"name": "apply_patch", "input": input}}]}),
                9 => serde_json::json!({"role": "assistant", "content": content,
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "bash", "arguments": args},
                    "custom": {"name": "apply_patch", "input": input}}]}),
                // The function calling before `tool_calls`: one call, no id, answered by a
                // `function` message.
                6 => serde_json::json!({"role": "assistant", "content": content,
                "function_call": {"name": "bash", "arguments": args}}),
                7 => serde_json::json!({"role": "function", "name": "bash", "content": content}),
                0 => serde_json::json!({"role": "user", "content": content}),
                1 => serde_json::json!({"role": "assistant", "content": content,
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "bash", "arguments": args}}]}),
                2 => serde_json::json!({"role": "tool", "tool_call_id": "c1", "content": content}),
                3 => serde_json::json!({"role": "user", "name": "rivumi-pressure_reminder", "content": content}),
                4 => serde_json::json!({"role": "system", "content": content}),
                _ => serde_json::json!({"role": "assistant", "content": content}),
            };
            if let Some(u) = usage {
                m["usage"] = u;
            }
            if extra {
                m["weight"] = serde_json::json!(0.5);
                m["type"] = serde_json::json!("message");
                // No refusal (a refusal's text is left to the canonical path), and a
                // reasoning, which is not text of the context.
                m["refusal"] = serde_json::Value::Null;
                m["reasoning_content"] = serde_json::json!("Let me think.");
            }
            m
        });
    (proptest::collection::vec(message, 0..14), proptest::option::of(1u64..3000)).prop_map(|(messages, line_usage)| {
        let mut line = serde_json::json!({"id": "x", "messages": messages});
        if let Some(p) = line_usage {
            line["usage"] = serde_json::json!({"prompt_tokens": p, "completion_tokens": 7});
        }
        line.to_string()
    })
}

/// A JSON value written as Python's `json.dumps` writes it by default: `", "` and
/// `": "` between items, every character outside printable ASCII as `\uXXXX`.
fn python_dumps(v: &serde_json::Value) -> String {
    use serde_json::Value;
    match v {
        Value::String(s) => rivumi_compact::text::ascii_literal(s),
        Value::Array(a) => format!("[{}]", a.iter().map(python_dumps).collect::<Vec<_>>().join(", ")),
        Value::Object(m) => format!(
            "{{{}}}",
            m.iter()
                .map(|(k, v)| format!("{}: {}", python_dumps(&Value::from(k.as_str())), python_dumps(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => other.to_string(),
    }
}

/// A dataset line as serde_json writes it, or as Python does.
fn any_chat_line() -> impl Strategy<Value = String> {
    (chat_line(), any::<bool>()).prop_map(|(line, python)| {
        if python {
            python_dumps(&serde_json::from_str(&line).unwrap())
        } else {
            line
        }
    })
}

/// Whether a dataset line gives the same outcome through the view and the canonical path.
fn same_outcome(line: &str, budget: u64, agent: bool) -> Result<(), TestCaseError> {
    use rivumi_compact::dataset::{process_line, process_line_canonical, LineOutcome};
    let mut cfg = Config::default();
    cfg.task.max_total_tokens = Some(budget);
    if !agent {
        cfg.runtime.kind = rivumi_compact::config::RuntimeKind::Conversation;
        cfg.runtime.native_compaction = false;
        cfg.runtime.context_window = Some(budget);
    }
    let mut settings = Settings::from_config(&cfg).unwrap();
    settings.input_format = rivumi_compact::formats::InputFormat::Openai;
    let file = Path::new("d.jsonl");
    let shape = |o: LineOutcome| match o {
        LineOutcome::Changed(s) => format!("changed {}", serde_json::from_str::<serde_json::Value>(&s).unwrap()),
        LineOutcome::Unchanged => "unchanged".to_string(),
        LineOutcome::Bad(m) => format!("bad {m}"),
    };
    let fast = shape(process_line(line, file, 1, &settings).unwrap());
    let reference = shape(process_line_canonical(line, file, 1, &settings).unwrap());
    prop_assert_eq!(fast, reference, "line: {}", line);
    // The two extractors field by field, the transcripts the rules make of them, and
    // the decisions taken: equal wherever the scanner reads the line.
    if let (Some(fast), reference) = rivumi_compact::dataset::readings(line, &settings) {
        let reference =
            reference.map_err(|e| TestCaseError::fail(format!("the reference refuses what the scanner read: {e}")))?;
        for part in ["extracted", "items", "decision"] {
            prop_assert_eq!(&fast[part], &reference[part], "{} differ; line: {}", part, line);
        }
    }
    Ok(())
}

/// Any JSON value, as text: nested arrays and objects of numbers (integers, decimals,
/// exponents), literals and strings with escapes.
fn json_value() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("null".to_string()),
        any::<bool>().prop_map(|b| b.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        (-1e6f64..1e6).prop_map(|f| serde_json::to_string(&f).unwrap()),
        proptest::sample::select(vec!["1e5", "-0.5E-3", "1e400", "0.0", "-0"]).prop_map(str::to_string),
        "[a-z\"\\\\/\n\u{1}é🙂]{0,6}".prop_map(|s| serde_json::to_string(&s).unwrap()),
    ];
    leaf.prop_recursive(4, 32, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(|v| format!("[{}]", v.join(", "))),
            proptest::collection::vec(("[a-z]{1,3}", inner), 0..4).prop_map(|kv| {
                let members: Vec<String> = kv.iter().map(|(k, v)| format!("\"{k}\": {v}")).collect();
                format!("{{{}}}", members.join(","))
            }),
        ]
    })
}

/// A change made to a line: text put in, a character taken out or replaced.
#[derive(Debug, Clone)]
enum Edit {
    Insert(proptest::sample::Index, &'static str),
    Remove(proptest::sample::Index),
    Replace(proptest::sample::Index, &'static str),
}

fn edit() -> impl Strategy<Value = Edit> {
    // What breaks JSON, or makes a line valid in a way the view does not read.
    let piece = proptest::sample::select(vec![
        "\"",
        "\\",
        "{",
        "}",
        "[",
        "]",
        ",",
        ":",
        " ",
        "0",
        "00",
        "-",
        ".",
        "1e400",
        "e5",
        "n",
        "null",
        "true",
        "\\u",
        "\\ud83d",
        "\\ude00",
        "\\x",
        "\u{1}",
        "\u{1f}",
        "\u{7f}",
        "é",
        "\t",
        "\r",
        "\"messages\":[]",
        "\"role\":\"user\"",
        "\"content\":1",
        "\"usage\":null",
        "\"tool_calls\":{}",
    ]);
    prop_oneof![
        (any::<proptest::sample::Index>(), piece.clone()).prop_map(|(i, p)| Edit::Insert(i, p)),
        any::<proptest::sample::Index>().prop_map(Edit::Remove),
        (any::<proptest::sample::Index>(), piece).prop_map(|(i, p)| Edit::Replace(i, p)),
    ]
}

/// `line` with `edits` made, each at a character boundary.
fn edited(line: &str, edits: &[Edit]) -> String {
    let mut chars: Vec<String> = line.chars().map(String::from).collect();
    for e in edits {
        match e {
            Edit::Insert(i, p) => chars.insert(i.index(chars.len() + 1), (*p).to_string()),
            Edit::Remove(i) if !chars.is_empty() => drop(chars.remove(i.index(chars.len()))),
            Edit::Replace(i, p) if !chars.is_empty() => {
                let at = i.index(chars.len());
                chars[at] = (*p).to_string();
            }
            _ => {}
        }
    }
    chars.concat()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(crate::cases(300)))]

    /// Dataset lines read through the borrowed view give what the canonical path gives.
    #[test]
    fn the_dataset_view_and_the_canonical_path_agree(line in any_chat_line(), budget in 20u64..3000, agent in any::<bool>()) {
        prop_assert!(rivumi_compact::dataset::reads_through_view(&line), "every well-formed shape is read by the view: {}", line);
        same_outcome(&line, budget, agent)?;
    }

    /// A value the view only steps over is checked as the parser checks it: numbers,
    /// literals, strings, escapes and nesting of any shape, valid or not.
    #[test]
    fn values_the_view_steps_over_are_checked(value in prop_oneof![
        "[\\[\\]{}\",: 0-9.eE+\\-tfnrulsx\\\\/\u{1}é]{0,30}",
        json_value(),
        (json_value(), proptest::collection::vec(edit(), 1..3)).prop_map(|(v, edits)| edited(&v, &edits)),
    ]) {
        let line = format!("{{\"messages\":[{{\"role\":\"user\",\"content\":\"hi\"}}],\"x\":{value}}}");
        if rivumi_compact::dataset::reads_through_view(&line) {
            prop_assert!(serde_json::from_str::<serde_json::Value>(&line).is_ok(), "read by the view, refused by the parser: {}", line);
        }
    }

    /// The view reads no line that the JSON parser refuses, and a changed line it does
    /// read gives what the canonical path gives.
    #[test]
    fn the_view_reads_no_line_the_parser_refuses(line in any_chat_line(), edits in proptest::collection::vec(edit(), 1..4)) {
        let line = edited(&line, &edits);
        if rivumi_compact::dataset::reads_through_view(&line) {
            prop_assert!(serde_json::from_str::<serde_json::Value>(&line).is_ok(), "read by the view, refused by the parser: {}", line);
            same_outcome(&line, 200, true)?;
        }
    }
}

/// A trajectory of answered calls that ends on calls not all answered (an agent that
/// stopped after `submit`, a session cut mid-call).
fn ends_on_a_call() -> impl Strategy<Value = Vec<Step>> {
    let answered_step = prop_oneof![
        "[a-z ]{0,30}".prop_map(Step::User),
        (0usize..4, proptest::option::of(1u64..5000), "[a-z ]{0,20}")
            .prop_map(|(calls, usage, text)| Step::Assistant { calls, answered: calls, usage, text }),
    ];
    (proptest::collection::vec(answered_step, 0..30), 1usize..4, 0usize..3, "[a-z ]{0,20}").prop_map(
        |(mut steps, calls, answered, text)| {
            steps.push(Step::Assistant { calls, answered: answered.min(calls - 1), usage: Some(100), text });
            steps
        },
    )
}

/// No message of this tool's comes between a call and its result: after an assistant
/// message, until all its calls are answered, only their results follow.
fn no_injected_after_open_calls(messages: &[serde_json::Value]) -> Result<(), TestCaseError> {
    let mut open: Vec<String> = Vec::new();
    for m in messages {
        let injected = m.get("synthetic").is_some()
            || m.get("name").and_then(|n| n.as_str()).is_some_and(|n| n.starts_with("rivumi-"));
        let result = m.get("call_id").or_else(|| m.get("tool_call_id")).and_then(|c| c.as_str());
        if injected {
            prop_assert!(open.is_empty(), "an injected message after unanswered calls {:?}: {}", open, m);
        } else if let Some(call) = result {
            open.retain(|c| c != call);
        } else {
            open = m
                .get("tool_calls")
                .and_then(|c| c.as_array())
                .into_iter()
                .flatten()
                .filter_map(|c| c.get("id").and_then(|i| i.as_str()).map(str::to_string))
                .collect();
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(crate::cases(256)))]

    #[test]
    fn no_injected_message_follows_an_unanswered_call(steps in ends_on_a_call(), budget in 1u64..4000) {
        let text = render(&steps, budget);
        let done = engine::process(text.as_bytes(), Path::new("prop.jsonl"), &Settings::default()).expect("valid");
        let mut canonical = Vec::new();
        write_transcript(&mut canonical, &done.transcript, &done.plan).unwrap();
        let records: Vec<serde_json::Value> = std::str::from_utf8(&canonical).unwrap().lines()
            .map(|l| serde_json::from_str(l).unwrap()).filter(|r: &serde_json::Value| r["type"] != "session").collect();
        no_injected_after_open_calls(&records)?;
        let chat: serde_json::Value = serde_json::from_str(&rivumi_compact::output::chat::chat_line(&done)).unwrap();
        no_injected_after_open_calls(chat["messages"].as_array().unwrap())?;
    }
}

/// Every bundled case's input and every real session, in name order, each with the
/// `--input-format` its case's `args` names (none for the real sessions).
fn bundled_and_real_inputs() -> Vec<(std::path::PathBuf, Vec<String>)> {
    use crate::support::root;
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(root().join("testdata/cases"))
        .unwrap()
        .map(|e| e.unwrap().path().join("input.jsonl"))
        .collect();
    for sub in std::fs::read_dir(root().join("../shared/realdata")).unwrap().map(|e| e.unwrap().path()) {
        if sub.is_dir() {
            files.extend(std::fs::read_dir(sub).unwrap().map(|e| e.unwrap().path()));
        }
    }
    files.sort();
    files
        .into_iter()
        .map(|f| {
            let args = std::fs::read_to_string(f.with_file_name("args")).unwrap_or_default();
            let lines: Vec<&str> = args.lines().collect();
            let format = lines
                .windows(2)
                .find(|w| w[0] == "--input-format")
                .map_or(Vec::new(), |w| w.iter().map(|a| (*a).to_string()).collect());
            (f, format)
        })
        .collect()
}

/// The same on every bundled case and real trajectory, forced to inject (a budget of one
/// token), in canonical JSONL and as a chat line.
#[test]
#[cfg_attr(realdata_absent, ignore = "../shared/realdata is absent")]
fn no_injected_message_follows_an_unanswered_call_in_any_bundled_or_real_file() {
    use crate::support::{stderr, stdout};
    for (f, format) in bundled_and_real_inputs() {
        let p = f.to_str().unwrap();
        let o = crate::support::cmd()
            .args(["run", p, "--runtime", "agent-runner", "--max-total-tokens", "1"])
            .args(&format)
            .output()
            .unwrap();
        assert!(o.status.success(), "{p}: {}", stderr(&o));
        let records: Vec<serde_json::Value> = stdout(&o)
            .trim_start_matches('\u{feff}')
            .lines()
            .map(|l| serde_json::from_str(l).map_err(|e| format!("{p}: {e}: {l}")).unwrap())
            .collect();
        let messages: Vec<serde_json::Value> = records.into_iter().filter(|r| r["type"] != "session").collect();
        no_injected_after_open_calls(&messages).map_err(|e| format!("{p}: {e}")).unwrap();
        let o = crate::support::cmd()
            .args(["run", p, "--runtime", "agent-runner", "--max-total-tokens", "1", "--output-format", "openai"])
            .args(&format)
            .output()
            .unwrap();
        let chat: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
        no_injected_after_open_calls(chat["messages"].as_array().unwrap()).map_err(|e| format!("{p}: {e}")).unwrap();
    }
}

/// A chat row of `calls` assistant calls (some parallel) with results of random sizes.
fn fit_row() -> impl Strategy<Value = String> {
    proptest::collection::vec((1usize..4, 0usize..3000, "[a-z ]{0,40}"), 1..25).prop_map(|steps| {
        let mut msgs = vec![
            serde_json::json!({"role": "system", "content": "You are a coding agent."}),
            serde_json::json!({"role": "user", "content": "Fix the bug in the parser."}),
        ];
        for (k, (calls, out, text)) in steps.into_iter().enumerate() {
            let ids: Vec<String> = (0..calls).map(|j| format!("c{k}_{j}")).collect();
            let tool_calls: Vec<_> = ids
                .iter()
                .map(|id| {
                    serde_json::json!({"id": id, "type": "function",
                "function": {"name": "bash", "arguments": "{\"command\":\"pytest -q\"}"}})
                })
                .collect();
            msgs.push(serde_json::json!({"role": "assistant", "content": text, "tool_calls": tool_calls}));
            for id in ids {
                msgs.push(serde_json::json!({"role": "tool", "tool_call_id": id, "content": "x".repeat(out)}));
            }
        }
        msgs.push(serde_json::json!({"role": "assistant", "content": "Done."}));
        serde_json::json!({"messages": msgs}).to_string()
    })
}

/// The estimate of a chat row, as `stats` counts it.
fn row_tokens(line: &str) -> u64 {
    let canonical = rivumi_compact::dataset::row_canonical(line, rivumi_compact::formats::InputFormat::Openai).unwrap();
    let t = parse(&canonical, Path::new("row")).unwrap();
    rivumi_compact::tokens::item_estimates(&t, rivumi_compact::config::Tokenizer::Heuristic).iter().sum()
}

/// The row under a size to fit of `n`: its size, and whether the target was said out of reach.
fn fitted(line: &str, n: u64) -> (u64, bool) {
    let mut cfg = Config::default();
    cfg.fallback.target_tokens = Some(n);
    let mut s = Settings::from_config(&cfg).unwrap();
    s.input_format = rivumi_compact::formats::InputFormat::Openai;
    let mut decision = None;
    let out = rivumi_compact::dataset::process_line_decided(line, Path::new("d"), 1, &s, &mut decision).unwrap();
    let unreachable = decision.is_some_and(|d| {
        d.decision.reasons.iter().any(|r| r.code == rivumi_compact::policy::ReasonCode::TargetUnreachable)
    });
    match out {
        rivumi_compact::dataset::LineOutcome::Changed(l) => (row_tokens(&l), unreachable),
        _ => (row_tokens(line), unreachable),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(crate::cases(96)))]

    /// Size to fit never lies: the output is within N whenever the least plan is; it
    /// never grows as N shrinks; a row over N is said to be.
    #[test]
    fn size_to_fit_is_monotonic_and_honest(row in fit_row(), a in 1u64..12000, b in 1u64..12000) {
        let (hi, lo) = (a.max(b), a.min(b));
        let (least, _) = fitted(&row, 1);
        let (out_hi, over_hi) = fitted(&row, hi);
        let (out_lo, over_lo) = fitted(&row, lo);
        for (n, out, over) in [(hi, out_hi, over_hi), (lo, out_lo, over_lo)] {
            if least <= n {
                prop_assert!(out <= n, "the least plan ({least}) fits {n}, the output is {out}");
            }
            prop_assert_eq!(out > n, over, "over {} ({}) is said exactly when it is", n, out);
        }
        prop_assert!(out_lo <= out_hi, "a smaller target ({lo}) gave more ({out_lo}) than {hi} ({out_hi})");
    }
}

/// Every bundled case and real session as a dataset row (the chat line the tool writes
/// of it with `--manual`), and the same row as Python's `json.dumps` writes it (every
/// character past ASCII a `\u` escape): the borrowed view gives what the canonical path
/// gives, on real arguments, outputs and ids, under budgets from one token to more than
/// the row holds, on both pressure paths.
#[test]
#[cfg_attr(realdata_absent, ignore = "../shared/realdata is absent")]
fn the_dataset_view_and_the_canonical_path_agree_on_every_bundled_and_real_session() {
    use crate::support::{stderr, stdout};
    let mut rows = 0;
    for (f, format) in bundled_and_real_inputs() {
        let p = f.to_str().unwrap();
        let o = crate::support::cmd()
            .args(["run", p, "--output-format", "openai", "--manual"])
            .args(&format)
            .output()
            .unwrap();
        assert!(o.status.success(), "{p}: {}", stderr(&o));
        let line = stdout(&o).trim_end().to_string();
        let escaped = python_dumps(&serde_json::from_str(&line).unwrap());
        for row in [&line, &escaped] {
            assert!(rivumi_compact::dataset::reads_through_view(row), "{p}: the view refuses the row the tool wrote");
            for budget in [1, 300, 3000, 30_000, 3_000_000] {
                for agent in [true, false] {
                    same_outcome(row, budget, agent)
                        .map_err(|e| format!("{p} (budget {budget}, agent {agent}): {e}"))
                        .unwrap();
                }
            }
            rows += 1;
        }
    }
    assert!(rows >= 20, "only {rows} rows were checked");
}
