//! The layers of the crate point one way: the table in the crate doc (`src/lib.rs`)
//! orders the top-level modules from the bottom, and every `crate::` path in `src/`
//! (outside `#[cfg(test)]` modules and comments) must name a module of its own layer or
//! of a layer below, with no cycle between modules.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The layer table: module → (layer index, layer name), read from the crate doc.
fn table(lib: &str) -> BTreeMap<String, (usize, String)> {
    let mut out = BTreeMap::new();
    let rows = lib.lines().filter_map(|l| l.strip_prefix("//! |")).filter(|r| !r.starts_with("---"));
    for (n, row) in rows.skip(1).enumerate() {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let (layer, modules) = (cells[0], cells[1]);
        for m in modules.split(',').map(str::trim).filter(|m| !m.is_empty()) {
            assert!(out.insert(m.to_string(), (n, layer.to_string())).is_none(), "{m} is in two layers");
        }
    }
    out
}

/// The code of a source file: comments and the `#[cfg(test)]` module left out.
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]\nmod tests").next().unwrap_or_default();
    text.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n")
}

/// The top-level modules a piece of code names through `crate::`, grouped uses
/// (`use crate::{a, b::c}`) included.
fn named(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let ident = |s: &str| s.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect::<String>();
    for (at, _) in code.match_indices("crate::") {
        // `rivumi_compact::crate::` is not a thing; `$crate::` in a macro is this crate too.
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // The names at the group's top level.
            let (mut depth, mut start) = (0, 0);
            for (k, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        out.insert(ident(group[start..k].trim()));
                        break;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        out.insert(ident(group[start..k].trim()));
                        start = k + 1;
                    }
                    _ => {}
                }
            }
        } else {
            out.insert(ident(rest));
        }
    }
    out.retain(|m| !m.is_empty() && m != "self");
    out
}

/// Every edge `(from, to, file)` between top-level modules of `src/`.
fn edges(src: &Path) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(src).unwrap();
            let top = rel.iter().next().unwrap().to_string_lossy().trim_end_matches(".rs").to_string();
            if top == "lib" || top == "main" {
                continue;
            }
            for to in named(&code(&std::fs::read_to_string(&path).unwrap())) {
                if to != top {
                    out.push((top.clone(), to, rel.display().to_string()));
                }
            }
        }
    }
    out.sort();
    out
}

/// What breaks the table: modules it does not place, edges that point up, cycles.
fn violations(
    table: &BTreeMap<String, (usize, String)>,
    modules: &BTreeSet<String>,
    edges: &[(String, String, String)],
) -> Vec<String> {
    let mut out = Vec::new();
    for m in modules.iter().filter(|m| !table.contains_key(*m)) {
        out.push(format!("module {m} is in no layer of the table in src/lib.rs"));
    }
    for m in table.keys().filter(|m| !modules.contains(*m)) {
        out.push(format!("the table names {m}, which is no module"));
    }
    for (from, to, file) in edges {
        let (Some((a, la)), Some((b, lb))) = (table.get(from), table.get(to)) else { continue };
        if b > a {
            out.push(format!("{file}: {from} ({la}) uses {to} ({lb}), a layer above it"));
        }
    }
    // A cycle among the modules of one layer: depth-first search for a back edge.
    let next: BTreeMap<&str, BTreeSet<&str>> = edges.iter().fold(BTreeMap::new(), |mut m, (f, t, _)| {
        m.entry(f.as_str()).or_default().insert(t.as_str());
        m
    });
    let mut done = BTreeSet::new();
    for m in next.keys() {
        visit(m, &next, &mut Vec::new(), &mut done, &mut out);
    }
    out
}

/// Depth-first from `m`: a module already on `path` closes a cycle.
fn visit<'a>(
    m: &'a str,
    next: &BTreeMap<&'a str, BTreeSet<&'a str>>,
    path: &mut Vec<&'a str>,
    done: &mut BTreeSet<&'a str>,
    out: &mut Vec<String>,
) {
    if let Some(k) = path.iter().position(|p| *p == m) {
        out.push(format!("cycle: {} -> {m}", path[k..].join(" -> ")));
        return;
    }
    if !done.insert(m) {
        return;
    }
    path.push(m);
    for &n in next.get(m).into_iter().flatten() {
        visit(n, next, path, done, out);
    }
    path.pop();
}

fn modules(lib: &str) -> BTreeSet<String> {
    lib.lines()
        .filter_map(|l| l.strip_prefix("pub mod ").or_else(|| l.strip_prefix("mod ")))
        .map(|m| m.trim_end_matches(';').to_string())
        .collect()
}

#[test]
fn layers_point_one_way() {
    let lib = std::fs::read_to_string("src/lib.rs").unwrap();
    let table = table(&lib);
    assert!(table.len() >= 20, "the layer table was not found in src/lib.rs: {table:?}");
    let found = violations(&table, &modules(&lib), &edges(Path::new("src")));
    assert!(found.is_empty(), "the layers in src/lib.rs do not hold:\n{}", found.join("\n"));
}

#[test]
fn the_layer_check_finds_what_breaks_it() {
    let lib = "//! | layer | modules |\n//! |---|---|\n//! | leaf | a |\n//! | top | b, c |\n";
    let table = table(lib);
    let modules: BTreeSet<String> = ["a", "b", "c", "d"].map(String::from).into();
    let e = |f: &str, t: &str| (f.to_string(), t.to_string(), format!("{f}.rs"));
    let found = violations(&table, &modules, &[e("a", "b"), e("b", "c"), e("c", "b"), e("b", "a")]);
    assert_eq!(
        found,
        [
            "module d is in no layer of the table in src/lib.rs",
            "a.rs: a (leaf) uses b (top), a layer above it",
            "cycle: a -> b -> a",
            "cycle: b -> c -> b",
        ]
    );
    // Grouped uses, nested groups, comments and the test module are read as they are.
    let src = "use crate::{x::Y, y::{self, Z}, self};\n// crate::comment\nfn f() { crate::w::f() }\n#[cfg(test)]\nmod tests { use crate::t; }";
    assert_eq!(named(&code(src)), ["w", "x", "y"].map(String::from).into());
}
