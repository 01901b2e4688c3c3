//! A case's `args` file: flags of `run`, one per line, `#` comments; a first line
//! `replay` makes a replay case. The one parser of it (the golden tests use it too).

/// The flags of an `args` file, grouped by the line their flag is on: one flag per
/// line, with its value on the same line (`--max-total-tokens 20000`, the rest of the
/// line, spaces included) or alone on the next lines (the older layout). Blank lines,
/// lines starting with `#` and what follows ` #` on a line are comments. A first line
/// `replay` makes the case a replay case (returned first).
pub fn args_lines(text: &str) -> (bool, Vec<(usize, Vec<String>)>) {
    let mut groups: Vec<(usize, Vec<String>)> = Vec::new();
    let mut replay = false;
    for (k, raw) in text.lines().enumerate() {
        let line = strip_comment(raw).trim();
        if line.is_empty() {
            continue;
        }
        if groups.is_empty() && !replay && line == "replay" {
            replay = true;
            continue;
        }
        if line.starts_with('-') || groups.is_empty() {
            let words = match line.split_once(char::is_whitespace) {
                Some((flag, value)) if line.starts_with("--") && !flag.contains('=') => {
                    vec![flag.to_string(), value.trim().to_string()]
                }
                _ => vec![line.to_string()],
            };
            groups.push((k + 1, words));
        } else if let Some((_, words)) = groups.last_mut() {
            words.push(line.to_string());
        }
    }
    (replay, groups)
}

/// A line without its comment: from a `#` that starts the line or follows a space.
pub(super) fn strip_comment(line: &str) -> &str {
    if line.trim_start().starts_with('#') {
        return "";
    }
    let b = line.as_bytes();
    (1..b.len()).find(|&i| b[i] == b'#' && b[i - 1].is_ascii_whitespace()).map_or(line, |i| &line[..i])
}

/// The value of a `--config` flag in one group of words.
pub fn config_value(words: &[String]) -> Option<String> {
    match words {
        [flag, value] if flag == "--config" => Some(value.clone()),
        [one] => one.strip_prefix("--config=").map(str::to_string),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_comments_and_replay_cases() {
        let (replay, groups) = args_lines("replay\n# a comment\n--verify cargo test # the suite\n--threshold 0.9\n");
        assert!(replay);
        assert_eq!(
            groups,
            vec![(3, vec!["--verify".into(), "cargo test".into()]), (4, vec!["--threshold".into(), "0.9".into()])]
        );
        assert_eq!(strip_comment("--verify make#all"), "--verify make#all", "a # inside a word stays");
    }
}
