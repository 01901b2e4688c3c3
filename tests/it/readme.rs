//! Keeps the README and docs/ honest: every ```console block that starts with
//! `$ rivumi-compact …` is run, and its stdout must be the block's text.

use crate::support::{cmd, root};

/// The README and every page of docs/, one after the other.
fn pages() -> String {
    let mut text = std::fs::read_to_string(root().join("README.md")).unwrap();
    let mut docs: Vec<_> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    for d in docs {
        text.push('\n');
        text.push_str(&std::fs::read_to_string(d).unwrap());
    }
    text
}

/// Splits a command line on spaces, honouring single quotes.
fn words(line: &str) -> Vec<String> {
    let (mut out, mut cur, mut quoted, mut any) = (Vec::new(), String::new(), false, false);
    for c in line.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                any = true;
            }
            ' ' if !quoted => {
                if any || !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                any = false;
            }
            _ => cur.push(c),
        }
    }
    if any || !cur.is_empty() {
        out.push(cur);
    }
    out
}

#[test]
fn readme_console_examples_are_real() {
    let readme = pages();
    let mut checked = 0;
    let blocks = readme.split("```console\n").skip(1);
    for block in blocks {
        let body = block.split("\n```").next().unwrap();
        let (first, expected) = body.split_once('\n').unwrap_or((body, ""));
        let Some(command) = first.strip_prefix("$ rivumi-compact ") else { continue };
        let o = cmd().args(words(command)).output().unwrap();
        let actual = String::from_utf8_lossy(&o.stdout);
        assert_eq!(actual.trim_end(), expected.trim_end(), "README example `{command}` is out of date");
        checked += 1;
    }
    assert!(checked >= 4, "only {checked} README examples found");
}

/// The README's Spark recipe is the function the Spark example runs and checks.
#[test]
fn readme_spark_recipe_is_the_tested_script() {
    let readme = pages();
    let script = std::fs::read_to_string(root().join("examples/spark/compact_with_spark.py")).unwrap();
    let start = script.find("def compact(").expect("the script defines compact()");
    let end = start + script[start..].find("# ---").expect("the recipe ends at a marker line");
    let recipe = script[start..end].trim_end();
    assert!(readme.contains(&format!("```python\n{recipe}\n```")), "README's Spark recipe differs from the script's");
    // What makes RDD.pipe work at all: a full environment and a checked exit status.
    assert!(recipe.contains("env=env") && recipe.contains("checkCode=True"), "{recipe}");
}

/// Lines the README shows on stderr are the lines the tool prints.
#[test]
fn readme_stderr_lines_are_as_printed() {
    let readme = pages();
    let o = cmd().args(["run", "testdata/cases/fallback-applied/input.jsonl"]).output().unwrap();
    let line = String::from_utf8_lossy(&o.stderr).lines().next().unwrap().to_string();
    assert!(readme.contains(&format!("\n{line}\n")), "README lacks the stderr line as printed: {line}");
}
