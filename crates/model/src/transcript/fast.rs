//! The canonical reader's fast path: a message or a tool result read by the validating
//! scanner ([`crate::scan`]) in one pass, without serde. For every record it reads it
//! gives exactly what serde's derive gives (the property test below holds it to that);
//! whatever it does not read as serde would — a duplicate or escaped key, a value of
//! another type, a number it cannot vouch for, the rare fields of an earlier run's
//! records — is `None`, and the line goes to serde, which also words the errors.

use super::record::{MessageRecord, TextLen, ToolResultRecord};
use super::{Call, Mark, Role, Usage};
use crate::scan::{Scan, Seen};
use std::borrow::Cow;

/// A `message` record, or `None` for serde to read.
pub(super) fn message(text: &str) -> Option<MessageRecord<'_, Option<TextLen>>> {
    let mut s = Scan::new(text);
    let mut seen = Seen::default();
    let (mut id, mut turn, mut role, mut content, mut tool_calls, mut usage, mut synthetic) =
        (None, None, None, None, None, None, None);
    s.object(0, |s, key| {
        match key {
            "id" => {
                seen.first(1)?;
                id = Some(s.str()?);
            }
            "turn" => {
                seen.first(2)?;
                turn = s.optional_str()?;
            }
            "role" => {
                seen.first(4)?;
                role = Some(s.str()?.parse::<Role>().ok()?);
            }
            "content" => {
                seen.first(8)?;
                content = text_len(s)?;
            }
            "tool_calls" => {
                seen.first(16)?;
                tool_calls = if s.null()? { None } else { Some(calls(s)?) };
            }
            "usage" => {
                seen.first(32)?;
                usage = if s.null()? { None } else { Some(usage_of(s)?) };
            }
            "synthetic" => {
                seen.first(64)?;
                synthetic = s.optional_str()?.map(Mark::of);
            }
            // An earlier run's fields (rare): serde reads them.
            "summarized_usage"
            | "occupancy_after"
            | "occupancy_before"
            | "summarized_turn_ids"
            | "retained_turn_ids" => return None,
            _ => s.skip(1)?,
        }
        Some(())
    })?;
    if !s.at_end() {
        return None;
    }
    let mut m = MessageRecord::new(id?, "", role?, content);
    (m.turn, m.tool_calls, m.usage, m.synthetic) = (turn, tool_calls, usage, synthetic);
    Some(m)
}

/// A `tool_result` record, or `None` for serde to read.
pub(super) fn tool_result(text: &str) -> Option<ToolResultRecord<'_, Option<TextLen>>> {
    let mut s = Scan::new(text);
    let mut seen = Seen::default();
    let (mut id, mut turn, mut call_id, mut name, mut content, mut is_error, mut exit_code) =
        (None, None, None, None, None, None, None);
    s.object(0, |s, key| {
        match key {
            "id" => {
                seen.first(1)?;
                id = Some(s.str()?);
            }
            "turn" => {
                seen.first(2)?;
                turn = s.optional_str()?;
            }
            "call_id" => {
                seen.first(4)?;
                call_id = Some(s.str()?);
            }
            "name" => {
                seen.first(8)?;
                name = s.optional_str()?;
            }
            "content" => {
                seen.first(16)?;
                content = text_len(s)?;
            }
            "is_error" => {
                seen.first(32)?;
                is_error = if s.null()? { None } else { Some(s.bool()?) };
            }
            "exit_code" => {
                seen.first(64)?;
                exit_code = if s.null()? { None } else { Some(s.i64()?) };
            }
            _ => s.skip(1)?,
        }
        Some(())
    })?;
    if !s.at_end() {
        return None;
    }
    let mut r = ToolResultRecord::new(id?, "", call_id?, content);
    (r.turn, r.name, r.is_error, r.exit_code) = (turn, name, is_error.unwrap_or(false), exit_code);
    Some(r)
}

/// `content`: a string's UTF-8 length (measured from its escapes, never decoded), the
/// sum of the `text` of a list of blocks (objects), none for `null`.
#[allow(clippy::option_option)] // `None`: for serde; `Some(None)`: no content
fn text_len(s: &mut Scan<'_>) -> Option<Option<TextLen>> {
    match s.peek()? {
        b'n' => {
            s.null()?;
            Some(None)
        }
        b'"' => Some(Some(TextLen(s.string()?.len))),
        b'[' => {
            let mut n = 0;
            s.array(1, |s| {
                let mut seen = Seen::default();
                let mut text = 0;
                s.object(2, |s, key| {
                    if key == "text" {
                        seen.first(1)?;
                        if !s.null()? {
                            text = s.string()?.len;
                        }
                        Some(())
                    } else {
                        s.skip(3)
                    }
                })?;
                n += text;
                Some(())
            })?;
            Some(Some(TextLen(n)))
        }
        _ => None,
    }
}

fn calls<'a>(s: &mut Scan<'a>) -> Option<Vec<Call<'a>>> {
    let mut out = Vec::new();
    s.array(1, |s| {
        let mut seen = Seen::default();
        let (mut id, mut name, mut arguments) = (None, None, None);
        s.object(2, |s, key| {
            match key {
                "id" => {
                    seen.first(1)?;
                    id = Some(s.str()?);
                }
                "name" => {
                    seen.first(2)?;
                    name = Some(s.str()?);
                }
                "arguments" => {
                    seen.first(4)?;
                    // The scanner checked the value.
                    arguments = Some(Cow::Borrowed(s.raw_value(3)?));
                }
                _ => s.skip(3)?,
            }
            Some(())
        })?;
        out.push(Call { id: id?, name: name?, arguments: arguments? });
        Some(())
    })?;
    // Without the room a growing vector leaves: a large transcript holds tens of
    // thousands of them.
    out.shrink_to_fit();
    Some(out)
}

fn usage_of(s: &mut Scan<'_>) -> Option<Usage> {
    let (mut u, mut seen) = (Usage::default(), Seen::default());
    s.object(2, |s, key| {
        let (bit, field) = match key {
            "input_tokens" => (1, &mut u.input_tokens),
            "cache_read_tokens" => (2, &mut u.cache_read_tokens),
            "cache_write_tokens" => (4, &mut u.cache_write_tokens),
            "output_tokens" => (8, &mut u.output_tokens),
            _ => return s.skip(3),
        };
        seen.first(bit)?;
        *field = s.u64()?;
        Some(())
    })?;
    Some(u)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    type Message<'a> = MessageRecord<'a, Option<TextLen>>;
    type ToolResult<'a> = ToolResultRecord<'a, Option<TextLen>>;

    /// A JSON value of the kinds a record's fields hold, right and wrong.
    fn value() -> impl Strategy<Value = String> {
        let string = "[a-z \"\\\\\n\u{1}é🙂\u{2028}]{0,8}".prop_map(|s| serde_json::to_string(&s).unwrap());
        let escaped = "[a-z]{0,4}".prop_map(|s| format!("\"\\u0061{s}\\n\""));
        let number = prop_oneof![
            Just("0".to_string()),
            Just("-0".to_string()),
            Just("7".to_string()),
            Just("-3".to_string()),
            Just("1.5".to_string()),
            Just("2e3".to_string()),
            Just("18446744073709551615".to_string()),
            Just("18446744073709551616".to_string()),
            Just("9223372036854775808".to_string()),
            Just("-9223372036854775808".to_string()),
            Just("-9223372036854775809".to_string()),
            Just("01".to_string()),
        ];
        let leaf = prop_oneof![
            4 => string,
            1 => escaped,
            2 => number,
            1 => Just("null".to_string()),
            1 => Just("true".to_string()),
            1 => Just("false".to_string()),
            1 => Just("user".to_string()),
            2 => prop_oneof![Just("\"user\""), Just("\"assistant\""), Just("\"system\""), Just("\"User\"")].prop_map(String::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            let key = prop_oneof![
                Just("text"),
                Just("id"),
                Just("name"),
                Just("arguments"),
                Just("input_tokens"),
                Just("output_tokens"),
                Just("cache_read_tokens"),
                Just("type"),
                Just("x")
            ];
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(|v| format!("[{}]", v.join(","))),
                prop::collection::vec((key, inner), 0..4).prop_map(|kv| {
                    let members: Vec<String> = kv.iter().map(|(k, v)| format!("\"{k}\": {v}")).collect();
                    format!("{{{}}}", members.join(" ,"))
                }),
            ]
        })
    }

    /// A value mostly of the type `key` holds, sometimes of any other.
    fn good(key: &'static str) -> BoxedStrategy<String> {
        let text = "[a-z \"\\\\\n\u{1}é🙂]{0,8}".prop_map(|s| serde_json::to_string(&s).unwrap());
        let right: BoxedStrategy<String> = match key {
            "id" | "call_id" => text.boxed(),
            "turn" | "name" | "synthetic" => prop_oneof![3 => text, 1 => Just("null".to_string())].boxed(),
            "role" => prop::sample::select(
                &["\"user\"", "\"assistant\"", "\"system\"", "\"developer\"", "\"\\u0075ser\""][..],
            )
            .prop_map(String::from)
            .boxed(),
            "content" => {
                let block = (text.clone(), any::<bool>()).prop_map(|(t, first)| {
                    if first {
                        format!("{{\"text\": {t}, \"type\":\"text\"}}")
                    } else {
                        r#"{"type":"image","text":null}"#.to_string()
                    }
                });
                prop_oneof![
                    3 => text,
                    1 => Just("null".to_string()),
                    2 => prop::collection::vec(block, 0..3).prop_map(|b| format!("[{}]", b.join(","))),
                ]
                .boxed()
            }
            "tool_calls" => {
                let call = (text.clone(), text, value())
                    .prop_map(|(i, n, a)| format!("{{\"id\":{i},\"name\":{n},\"arguments\":{a}}}"));
                prop_oneof![3 => prop::collection::vec(call, 0..3).prop_map(|c| format!("[ {} ]", c.join(","))), 1 => Just("null".to_string())].boxed()
            }
            "usage" => {
                let count =
                    prop_oneof![any::<u32>().prop_map(|n| n.to_string()), Just("18446744073709551615".to_string())];
                let member = (
                    prop::sample::select(
                        &["input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "x"][..],
                    ),
                    count,
                );
                prop_oneof![
                    3 => prop::collection::vec(member, 0..4).prop_map(|m| {
                        let m: Vec<String> = m.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
                        format!("{{{}}}", m.join(","))
                    }),
                    1 => Just("null".to_string()),
                ]
                .boxed()
            }
            "is_error" => prop::sample::select(&["true", "false", "null"][..]).prop_map(String::from).boxed(),
            "exit_code" => prop_oneof![any::<i64>().prop_map(|n| n.to_string()), Just("null".to_string())].boxed(),
            _ => value().boxed(),
        };
        prop_oneof![7 => right, 1 => value()].boxed()
    }

    /// A record of `ty`: each of `keys` mostly there with a value mostly of its type,
    /// and a few others (unknown, escaped, rare, repeated), in any order.
    fn record(ty: &'static str, keys: &'static [&'static str]) -> impl Strategy<Value = String> {
        let known: Vec<BoxedStrategy<Option<(String, String)>>> = keys
            .iter()
            .map(|&k| prop::option::weighted(0.9, good(k).prop_map(move |v| (k.to_string(), v))).boxed())
            .collect();
        let other = prop_oneof![
            3 => prop::sample::select(keys).prop_map(String::from),
            1 => prop::sample::select(&["other", "\\u0069d", "summarized_usage", "occupancy_after", "retained_turn_ids"][..]).prop_map(String::from),
        ];
        let extra = prop::collection::vec((other, value()), 0..2);
        (known, extra)
            .prop_map(|(known, extra)| known.into_iter().flatten().chain(extra).collect::<Vec<_>>())
            .prop_shuffle()
            .prop_map(move |kv| {
                let mut line = format!("{{\"type\":\"{ty}\"");
                for (k, v) in kv {
                    line.push_str(&format!(",\"{k}\":{v}"));
                }
                line.push('}');
                line
            })
    }

    const MESSAGE_KEYS: &[&str] = &["id", "turn", "role", "content", "tool_calls", "usage", "synthetic"];
    const RESULT_KEYS: &[&str] = &["id", "turn", "call_id", "name", "content", "is_error", "exit_code"];

    /// Runs `check` on `cases` generated records; `check` says whether the scanner read
    /// the record. Fails unless it read at least `min_read` of them (so the comparison
    /// compares something) and left at least as many to serde (so it is tried on what
    /// it must refuse).
    fn held_to_serde(
        strategy: impl Strategy<Value = String>,
        min_read: usize,
        check: impl Fn(&str) -> Result<bool, TestCaseError>,
    ) {
        let (read, refused) = (std::cell::Cell::new(0), std::cell::Cell::new(0));
        let mut runner =
            proptest::test_runner::TestRunner::new(ProptestConfig { cases: 4000, ..ProptestConfig::default() });
        runner
            .run(&strategy, |line| {
                let counter = if check(&line)? { &read } else { &refused };
                counter.set(counter.get() + 1);
                Ok(())
            })
            .unwrap();
        assert!(read.get() >= min_read && refused.get() >= min_read, "read {} refused {}", read.get(), refused.get());
    }

    /// Whatever message the scanner reads, serde reads the same.
    #[test]
    fn a_message_is_read_as_serde_reads_it() {
        held_to_serde(record("message", MESSAGE_KEYS), 300, |line| {
            let Some(fast) = message(line) else { return Ok(false) };
            let slow: Message<'_> =
                serde_json::from_str(line).map_err(|e| TestCaseError::fail(format!("{e}: {line}")))?;
            prop_assert_eq!(fast, slow, "{}", line);
            Ok(true)
        });
    }

    /// Found by the property test below (a CI run): serde reads `-0` as the float
    /// `-0.0` and refuses it as an exit code, so the scanner must leave it to serde
    /// rather than read it as 0; `-1` and `0` it reads.
    #[test]
    fn a_negative_zero_exit_code_is_left_to_serde() {
        let line = |code: &str| format!(r#"{{"type":"tool_result","id":"r","call_id":"c","exit_code":{code}}}"#);
        assert!(tool_result(&line("-0")).is_none());
        assert!(serde_json::from_str::<ToolResult<'_>>(&line("-0")).is_err());
        assert_eq!(tool_result(&line("-1")).unwrap().exit_code, Some(-1));
        assert_eq!(tool_result(&line("0")).unwrap().exit_code, Some(0));
    }

    /// Whatever tool result the scanner reads, serde reads the same.
    #[test]
    fn a_tool_result_is_read_as_serde_reads_it() {
        held_to_serde(record("tool_result", RESULT_KEYS), 300, |line| {
            let Some(fast) = tool_result(line) else { return Ok(false) };
            let slow: ToolResult<'_> =
                serde_json::from_str(line).map_err(|e| TestCaseError::fail(format!("{e}: {line}")))?;
            prop_assert_eq!(fast, slow, "{}", line);
            Ok(true)
        });
    }

    proptest! {
        /// Well-formed records of every shape the tool writes take the fast path (so the
        /// test above compares something), and read as serde reads them.
        #[test]
        fn well_formed_records_take_the_fast_path(
            id in "[a-z0-9\"\\\\é]{1,6}",
            content in "[a-z \"\\\\\n\u{1}é🙂]{0,20}",
            blocks in prop::option::of(prop::collection::vec(prop::option::of("[a-z\"é]{0,6}"), 0..3)),
            n in any::<u64>(),
            code in any::<i64>(),
            ws in prop_oneof![Just(""), Just(" "), Just("\t\r\n ")],
        ) {
            let content = match &blocks {
                None => serde_json::json!(content),
                Some(b) => serde_json::json!(b.iter().map(|t| serde_json::json!({"type": "text", "text": t})).collect::<Vec<_>>()),
            };
            let m = serde_json::json!({"type": "message", "id": id, "turn": null, "role": "assistant", "content": content,
                "tool_calls": [{"id": id, "name": "bash", "arguments": {"cmd": [1, {"a": null}]}}],
                "usage": {"input_tokens": n, "output_tokens": 0, "extra": -1.5}, "synthetic": "pressure_reminder"});
            let r = serde_json::json!({"type": "tool_result", "id": id, "call_id": id, "name": null, "content": content,
                "is_error": true, "exit_code": code});
            for v in [&m, &r] {
                let line = serde_json::to_string_pretty(v).unwrap().replace('\n', ws);
                let line = format!("{ws}{line}{ws}");
                if v == &m {
                    let fast = message(&line).ok_or_else(|| TestCaseError::fail(line.clone()))?;
                    prop_assert_eq!(fast, serde_json::from_str::<Message<'_>>(&line).unwrap());
                } else {
                    let fast = tool_result(&line).ok_or_else(|| TestCaseError::fail(line.clone()))?;
                    prop_assert_eq!(fast, serde_json::from_str::<ToolResult<'_>>(&line).unwrap());
                }
            }
        }
    }
}
