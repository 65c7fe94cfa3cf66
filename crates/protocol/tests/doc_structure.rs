//! docs/protocol.md's structure: every section sits under its part, numbered in order,
//! and every section it cites (`§2.10`), or another document cites (`protocol.md §2.10`),
//! and every link to one of its headings exists (#29: §1.7 once stood under part 2, and
//! sections were numbered 2.0, 2.1a, 2.13a).

use std::path::Path;

const DOC: &str = include_str!("../../../docs/protocol.md");

/// The `##` and `###` headings outside code blocks, with their 1-based lines.
fn headings(doc: &str) -> Vec<(usize, usize, String)> {
    let mut fence = false;
    let mut out = Vec::new();
    for (i, l) in doc.lines().enumerate() {
        if l.starts_with("```") {
            fence = !fence;
        }
        if fence {
            continue;
        }
        let level = l.chars().take_while(|&c| c == '#').count();
        if (2..=4).contains(&level) && l[level..].starts_with(' ') {
            out.push((i + 1, level, l[level + 1..].to_string()));
        }
    }
    out
}

/// The section numbers of the document: "3" for `## 3. …`, "3.4" for `### 3.4 …`.
fn numbers(doc: &str) -> Vec<String> {
    headings(doc)
        .into_iter()
        .filter(|(_, level, _)| *level <= 3)
        .filter_map(|(_, _, t)| {
            let n = t.split(' ').next()?;
            Some(n.trim_end_matches('.').to_string())
        })
        .collect()
}

fn structure_problems(doc: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let (mut part, mut section) = (0u32, 0u32);
    for (line, level, title) in headings(doc) {
        let number = title.split(' ').next().unwrap_or("");
        match level {
            2 => {
                if number != format!("{}.", part + 1) {
                    problems.push(format!(
                        "line {line}: part `{title}` should be {}.",
                        part + 1
                    ));
                }
                part += 1;
                section = 0;
            }
            3 => {
                if number != format!("{part}.{}", section + 1) {
                    problems.push(format!(
                        "line {line}: `{title}` under part {part} should be {part}.{}",
                        section + 1
                    ));
                }
                section += 1;
            }
            // Subsections (a message, an endpoint of a section) carry no number.
            _ => {
                if number.starts_with(|c: char| c.is_ascii_digit()) {
                    problems.push(format!(
                        "line {line}: `{title}` is numbered below a section"
                    ));
                }
            }
        }
    }
    problems
}

/// The section numbers cited with `§` in `text` (outside code blocks does not matter: a
/// citation in an example is still one).
fn cited(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in text.match_indices('§') {
        let n: String = text[i + '§'.len_utf8()..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '.')
            .collect();
        out.push(n.trim_end_matches('.').to_string());
    }
    out
}

/// GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens.
fn anchor(title: &str) -> String {
    title
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

#[test]
fn every_section_sits_under_its_part_numbered_in_order() {
    let problems = structure_problems(DOC);
    assert!(
        problems.is_empty(),
        "docs/protocol.md:\n{}",
        problems.join("\n")
    );
}

#[test]
fn a_section_under_the_wrong_part_is_caught() {
    let bad = "## 1. A\n### 1.1 a\n## 2. B\n### 1.2 b\n### 2.0 c\n#### 2.0a d\n";
    let p = structure_problems(bad);
    assert_eq!(p.len(), 3, "{p:?}");
}

#[test]
fn every_cited_section_exists() {
    let have = numbers(DOC);
    let mut missing = Vec::new();
    for n in cited(DOC) {
        if !have.contains(&n) {
            missing.push(format!("docs/protocol.md cites §{n}"));
        }
    }
    // Other documents and the code cite it as `protocol.md §N`.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                if !["target", "node_modules", ".git", "fuzz"].contains(&name.as_str()) {
                    stack.push(path);
                }
                continue;
            }
            let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
            // Migrations are left as they were applied (sqlx checks their checksums).
            if !["rs", "md", "js", "mjs", "html", "json"].contains(&ext) {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            // The document itself is checked above; these tests quote citations as examples.
            if path.ends_with("docs/protocol.md")
                || path.starts_with(root.join("crates/protocol/tests"))
            {
                continue;
            }
            for (i, _) in text.match_indices("protocol.md") {
                // `protocol.md §2.3, §4.1`, or `protocol.md` §1.4: the citations up to the
                // end of the sentence's clause.
                let tail: String = text[i..].chars().take(40).collect();
                let tail = tail.split([')', ';', '\n']).next().unwrap_or("");
                for n in cited(tail) {
                    if !have.contains(&n) {
                        missing.push(format!(
                            "{} cites protocol.md §{n}",
                            path.strip_prefix(&root).unwrap_or(&path).display()
                        ));
                    }
                }
                // Links to a heading: `protocol.md#219-get-…`.
                if let Some(a) = text[i..].strip_prefix("protocol.md#") {
                    let a: String = a
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '-' || *c == '_')
                        .collect();
                    if !headings(DOC).iter().any(|(_, _, t)| anchor(t) == a) {
                        missing.push(format!(
                            "{} links to protocol.md#{a}, no heading",
                            path.strip_prefix(&root).unwrap_or(&path).display()
                        ));
                    }
                }
            }
        }
    }
    // The document's own links (its contents).
    for (i, _) in DOC.match_indices("](#") {
        let a: String = DOC[i + 3..].chars().take_while(|&c| c != ')').collect();
        if !headings(DOC).iter().any(|(_, _, t)| anchor(t) == a) {
            missing.push(format!("docs/protocol.md links to #{a}, no heading"));
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}
