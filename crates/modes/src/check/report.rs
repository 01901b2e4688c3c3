//! Reporters: the text people read, GitHub annotations, JUnit XML.

use super::diff::write_diff;
use super::{CaseReport, CheckOptions, Mode, PENDING, PENDING_REMOVAL};
use std::io::Write;
use std::path::Path;

/// A path as a CI log shows it: relative to the working folder when it is below it.
pub(super) fn shown(path: &Path) -> String {
    let rel = std::env::current_dir().ok().and_then(|cwd| path.strip_prefix(&cwd).ok().map(Path::to_path_buf));
    rel.unwrap_or_else(|| path.to_path_buf()).display().to_string()
}

/// A word a shell reads back as it is (quoted when it needs to be).
pub(super) fn shell_word(s: &str) -> String {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_./:=+,@%".contains(&b)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// One case's findings as text: a line per file (a diff for a changed one).
pub(super) fn write_case_text(w: &mut dyn Write, r: &CaseReport, color: bool) {
    let name = crate::ui::escape(&r.name);
    if let Some(e) = &r.error {
        let _ = writeln!(w, "{name}: error: {}", crate::ui::escape(e));
    }
    for f in &r.files {
        let file = crate::ui::escape(&f.file);
        match (f.status, &f.diff) {
            ("changed", Some(diff)) => write_diff(w, diff, color),
            ("missing", _) => {
                let _ = writeln!(w, "{name}/{file}: missing expected file (the run produces it)");
            }
            ("extra", _) => {
                let _ = writeln!(w, "{name}/{file}: extra expected file (the run no longer produces it)");
            }
            ("pending", _) => {
                let _ = writeln!(w, "{name}/{file}{PENDING}: pending review (accept it with check --accept)");
            }
            ("pending_removal", _) => {
                let _ = writeln!(
                    w,
                    "{name}/{file}{PENDING_REMOVAL}: pending review: the run no longer produces {file} (accept its removal with check --accept)"
                );
            }
            ("accepted", _) => {
                let _ = writeln!(w, "{name}/{file}: accepted");
            }
            (written, _) => {
                let _ = writeln!(w, "{name}/{file}: {} ({written})", r.status);
            }
        }
    }
    for f in &r.ignored {
        let _ = writeln!(w, "{name}/{}: note: not an output name; ignored", crate::ui::escape(f));
    }
    for f in &r.dropped {
        let _ = writeln!(
            w,
            "{name}/{}: note: removed, stale (the case no longer produces what it holds)",
            crate::ui::escape(f)
        );
    }
}

/// The closing lines for people: the totals and the command that goes on from here.
pub(super) fn write_totals(w: &mut dyn Write, dir: &Path, reports: &[CaseReport], opts: &CheckOptions) {
    let count = |s: &str| reports.iter().filter(|r| r.status == s).count();
    let (differing, pending, errors) = (count("differ"), count("pending"), count("error"));
    let (n, verb) = match opts.mode {
        Mode::Bless => (count("blessed"), "blessed"),
        Mode::Accept(_) => (count("accepted"), "accepted"),
        _ => (differing + pending, "differ"),
    };
    let unreadable = if errors > 0 { format!(", {errors} unreadable") } else { String::new() };
    let _ = writeln!(w, "{} case(s), {n} {verb}{unreadable}", reports.len());
    let again = |flag: &str| {
        let mut words = vec!["rivumi-compact".to_string(), "check".into(), flag.into(), shell_word(&shown(dir))];
        words.extend(opts.cases.iter().map(|c| shell_word(c)));
        words.join(" ")
    };
    // Differences not yet written for review: every kind can be (an expected file the
    // run no longer produces as a pending removal).
    let unwritten =
        reports.iter().flat_map(|r| &r.files).filter(|f| matches!(f.status, "changed" | "missing" | "extra")).count();
    if differing > 0 && opts.mode == Mode::Pending {
        let _ = writeln!(
            w,
            "the actual outputs are written beside them as NAME{PENDING} (NAME{PENDING_REMOVAL} where the run no longer produces NAME); to accept them, run: {}",
            again("--accept")
        );
    } else if unwritten > 0 {
        let _ = writeln!(w, "to review them as NAME{PENDING} files, run: {}", again("--pending"));
        let _ = writeln!(w, "to accept the actual outputs as expected, run: {}", again("--bless"));
    } else if pending > 0 {
        let _ = writeln!(w, "pending files wait for review; to accept them, run: {}", again("--accept"));
    }
}

/// GitHub Actions annotations: one `::error` at the first difference of each file
/// (and of each case that could not be read), then the totals.
pub(super) fn write_github(w: &mut dyn Write, dir: &Path, reports: &[CaseReport], opts: &CheckOptions) {
    for r in reports {
        if let Some(e) = &r.error {
            let _ = writeln!(
                w,
                "::error file={},line={},title={}::{}",
                gh_property(r.error_file.as_deref().unwrap_or(&r.path)),
                r.error_line.unwrap_or(1),
                gh_property("rivumi-compact check"),
                gh_data(e)
            );
        }
        for f in &r.files {
            let what = match f.status {
                "changed" => "differs from the actual output",
                "missing" => "is missing: the run produces it",
                "extra" => "is no longer produced by the run",
                "pending" => "has a pending .new file to review",
                "pending_removal" => "has a pending .removed file to review (the run no longer produces it)",
                _ => continue,
            };
            // What is written for review already is accepted next, never written again.
            let next = if f.status.starts_with("pending") { "--accept" } else { "--pending" };
            let _ = writeln!(
                w,
                "::error file={},line={},title={}::{}",
                gh_property(&f.path),
                f.line,
                gh_property("rivumi-compact check"),
                gh_data(&format!("{}/{} {what} (rivumi-compact check {next} {})", r.name, f.file, shown(dir)))
            );
        }
    }
    write_totals(w, dir, reports, opts);
}

/// GitHub's escaping of a workflow command's message.
pub(super) fn gh_data(s: &str) -> String {
    s.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A")
}

/// GitHub's escaping of a workflow command's property value.
pub(super) fn gh_property(s: &str) -> String {
    gh_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// JUnit XML: one test suite, one test case per case, a failure holding its diffs.
pub(super) fn write_junit(w: &mut dyn Write, dir: &Path, reports: &[CaseReport]) {
    let failures = reports.iter().filter(|r| matches!(r.status, "differ" | "pending")).count();
    let errors = reports.iter().filter(|r| r.status == "error").count();
    let _ = writeln!(w, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>");
    let _ = writeln!(w, "<testsuites tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\">", reports.len());
    let suite = xml(&shown(dir));
    let _ = writeln!(
        w,
        "  <testsuite name=\"rivumi-compact check {suite}\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\">",
        reports.len()
    );
    for r in reports {
        let _ = write!(w, "    <testcase classname=\"{suite}\" name=\"{}\" file=\"{}\"", xml(&r.name), xml(&r.path));
        match r.status {
            "error" => {
                let e = xml(r.error.as_deref().unwrap_or(""));
                let _ = writeln!(w, ">\n      <error message=\"{e}\">{e}</error>\n    </testcase>");
            }
            "differ" | "pending" => {
                let files: Vec<String> = r.files.iter().map(|f| format!("{} ({})", f.file, f.status)).collect();
                let body: String = r
                    .files
                    .iter()
                    .map(|f| f.diff.clone().unwrap_or_else(|| format!("{}: {}\n", f.path, f.status)))
                    .collect();
                let _ = writeln!(
                    w,
                    ">\n      <failure message=\"{}\">{}</failure>\n    </testcase>",
                    xml(&format!("differs: {}", files.join(", "))),
                    xml(&body)
                );
            }
            _ => {
                let _ = writeln!(w, "/>");
            }
        }
    }
    let _ = writeln!(w, "  </testsuite>\n</testsuites>");
}

/// Text as XML character data or an attribute value (a diff keeps its lines).
pub(super) fn xml(s: &str) -> String {
    crate::ui::xml(s, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn github_commands_cannot_be_forged() {
        assert_eq!(gh_data("x\n::error file=README.md::injected"), "x%0A::error file=README.md::injected");
        assert_eq!(gh_property("a,b:c"), "a%2Cb%3Ac");
    }
}
