//! The man page, completions, help and version stay true to the command line.

use crate::support::{root, run, stderr, stdout};

#[test]
fn man_page_is_current() {
    let o = run(&["man"]);
    assert!(o.status.success());
    let committed = std::fs::read(root().join("man/rivumi-compact.1")).expect("man/rivumi-compact.1 is committed");
    assert!(
        o.stdout == committed,
        "man/rivumi-compact.1 is stale: run `cargo run -- man > man/rivumi-compact.1` and commit it"
    );
    let page = stdout(&o);
    for needle in [
        "COMMAND: RUN",
        "COMMAND: DECIDE",
        "COMMAND: CONFIG",
        "EXIT STATUS",
        "task.max_total_tokens",
        "not_enough_history",
        ".SH EXAMPLES",
    ] {
        assert!(page.contains(needle), "the man page lacks {needle}");
    }
    // Examples have their own section: never glued onto an option's text.
    assert!(!page.contains("Example:") && !page.contains("Examples:"), "an after-help block leaked into the page");
    let examples = &page[page.find(".SH EXAMPLES").unwrap()..];
    assert!(examples.contains("check tests/golden") && examples.contains("completions fish"), "{examples}");
}

#[test]
fn completions_for_each_shell() {
    for shell in ["bash", "zsh", "fish"] {
        let o = run(&["completions", shell]);
        assert!(o.status.success());
        let text = stdout(&o);
        assert!(
            text.contains("rivumi-compact") && text.contains("max-total-tokens"),
            "{shell} completion is incomplete"
        );
        // Value flags complete their values.
        for value in ["agent-runner", "claude-code", "o200k", "reanchor", "always"] {
            assert!(text.contains(value), "{shell} completion does not offer {value}");
        }
    }
}

#[test]
fn every_command_has_help_with_an_example() {
    for cmd in ["run", "decide", "config", "check", "validate", "stats", "completions"] {
        let o = run(&[cmd, "--help"]);
        assert!(o.status.success());
        assert!(stdout(&o).contains("Example"), "`{cmd} --help` has no example");
    }
    let o = run(&["--version"]);
    assert_eq!(stdout(&o).trim(), format!("rivumi-compact {}", env!("CARGO_PKG_VERSION")));
}

#[test]
fn the_ci_workflow_in_the_docs_runs() {
    let doc = std::fs::read_to_string(root().join("docs/ci.md")).unwrap();
    let workflow = doc.split("```yaml").nth(1).and_then(|s| s.split("```").next()).expect("a workflow");
    let commands: Vec<&str> = workflow
        .lines()
        .filter_map(|l| l.trim().trim_start_matches("- ").strip_prefix("run: rivumi-compact "))
        .collect();
    assert!(commands.len() >= 2, "{workflow}");
    for c in commands {
        let c = c.split(" > ").next().unwrap();
        let args: Vec<&str> = c.split_whitespace().collect();
        let o = run(&args);
        assert_eq!(o.status.code(), Some(0), "rivumi-compact {c}: {}{}", stdout(&o), stderr(&o));
        assert!(!stdout(&o).contains("::error"), "{c}");
    }
}

/// The review loop docs/ci.md shows, run as written (in order) on a copy of
/// `testdata/check` with one expected file made to differ: every command works, and the
/// loop ends with nothing left to review.
#[test]
fn the_review_commands_in_the_docs_run_as_written() {
    let doc = std::fs::read_to_string(root().join("docs/ci.md")).unwrap();
    let block = doc.split("## Review like insta").nth(1).and_then(|s| s.split("```sh").nth(1)).expect("a block");
    let commands: Vec<&str> = block
        .split("```")
        .next()
        .unwrap()
        .lines()
        .filter_map(|l| l.split('#').next().unwrap().trim().strip_prefix("rivumi-compact "))
        .collect();
    assert!(commands.iter().any(|c| c.contains("--accept-file")) && commands.len() >= 5, "{commands:?}");
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("testdata/check");
    std::fs::create_dir_all(&copy).unwrap();
    crate::check::copy_dir(&root().join("testdata/check"), &copy);
    let decision = copy.join("fallback-applied/decision.json");
    let differ = || {
        let text = std::fs::read_to_string(&decision).unwrap().replace("19455", "19000");
        std::fs::write(&decision, text).unwrap();
    };
    differ();
    let pending = copy.join("fallback-applied/decision.json.new");
    for c in commands {
        // Each accepting command is run with something to accept.
        if c.contains("--accept") && !pending.exists() {
            differ();
            let o = crate::support::cmd()
                .current_dir(dir.path())
                .args(["check", "testdata/check", "--pending"])
                .output()
                .unwrap();
            assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
        }
        let args: Vec<&str> = c.split_whitespace().collect();
        let o = crate::support::cmd().current_dir(dir.path()).args(&args).output().unwrap();
        let code = o.status.code();
        assert!(matches!(code, Some(0 | 1)), "rivumi-compact {c}: {code:?} {}{}", stdout(&o), stderr(&o));
        if c.contains("--accept") {
            assert!(stdout(&o).contains("decision.json: accepted") && !pending.exists(), "{c}: {}", stdout(&o));
        }
    }
    let o = crate::support::cmd().current_dir(dir.path()).args(["check", "testdata/check"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}

/// The code cites the spec as "SPEC N": docs/spec.md holds it, equal to the copy kept
/// current beside the project (its comment at the top aside). A spec that moves on fails
/// here until the copy follows.
#[test]
#[cfg_attr(shared_spec_absent, ignore = "../shared/SPEC.md is absent")]
fn the_spec_in_the_docs_is_the_current_one() {
    let ours = std::fs::read_to_string(root().join("docs/spec.md")).expect("docs/spec.md is committed");
    let body = ours.split_once("-->\n").map(|(_, b)| b).expect("docs/spec.md opens with its comment");
    let current = std::fs::read_to_string(root().join("../shared/SPEC.md")).expect("../shared/SPEC.md");
    assert!(body == current, "docs/spec.md is not ../shared/SPEC.md: copy it again below the comment");
    // Every "SPEC N" the code cites is a section of it.
    let sections: Vec<String> =
        body.lines().filter_map(|l| l.strip_prefix("## ")?.split('.').next().map(str::to_string)).collect();
    for dir in ["src", "crates", "tests/it", "python/src"] {
        for entry in walk(&root().join(dir)) {
            let text = std::fs::read_to_string(&entry).unwrap_or_default();
            for (at, _) in text.match_indices("SPEC ") {
                let n: String = text[at + 5..].chars().take_while(char::is_ascii_digit).collect();
                if !n.is_empty() {
                    assert!(sections.contains(&n), "{}: SPEC {n} is no section of docs/spec.md", entry.display());
                }
            }
        }
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out
}
