//! The server crate's rooms stand on floors, and a room imports only rooms on floors below
//! its own: no circle, no arrow back up (ARCHITECTURE.md, "Invariants"). A room is a file
//! directly under `src/` or a folder there (its files count as one room); an import is any
//! `crate::NAME` in its text, `use crate::{…}` groups included, doc comments too (a doc
//! that names a room above leads a reader the wrong way as surely as an import).
//!
//! A new module must be given a floor here: the test fails on a room it does not know.

use std::collections::BTreeSet;
use std::path::Path;

/// The floors, from the ground up. A room may import the rooms of lower floors only.
const FLOORS: &[&[&str]] = &[
    &["error", "wire", "assets", "replay", "config"],
    &["node", "auth", "quickplay", "challenges", "conns"],
    &["limits", "lobby"],
    &["state"],
    &["extract", "matcher", "analysis", "tournaments"],
    &["ws"],
    &["cluster"],
    &["http"],
    &["openapi"],
    &["lib"],
    &["cli"],
    &["main"],
];

fn floor(room: &str) -> Option<usize> {
    FLOORS.iter().position(|f| f.contains(&room))
}

/// The text of a room: its file, or every `.rs` file under its folder.
fn text_of(path: &Path) -> String {
    if path.is_dir() {
        let mut s = String::new();
        for e in std::fs::read_dir(path).unwrap() {
            s.push_str(&text_of(&e.unwrap().path()));
        }
        s
    } else if path.extension().is_some_and(|e| e == "rs") {
        std::fs::read_to_string(path).unwrap()
    } else {
        String::new()
    }
}

/// The rooms a text names through `crate::`: a module's name, or `lib` for an item that
/// `lib.rs` defines itself (`crate::build`, `crate::app`, …).
fn imports(text: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let room = |name: String| {
        if modules.contains(&name) {
            name
        } else {
            "lib".to_string()
        }
    };
    let mut out = BTreeSet::new();
    for (i, _) in text.match_indices("crate::") {
        let rest = &text[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // `use crate::{a, b::c, d::{e, f}}`: the first segment of each top-level part.
            let mut depth = 0;
            let mut part_start = true;
            for (j, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => part_start = true,
                    c if part_start && (c.is_ascii_alphabetic() || c == '_') => {
                        out.insert(room(ident(&group[j..])));
                        part_start = false;
                    }
                    _ => {}
                }
            }
        } else {
            let name = ident(rest);
            if !name.is_empty() {
                out.insert(room(name));
            }
        }
    }
    out
}

#[test]
fn every_room_imports_only_rooms_below_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut rooms = Vec::new();
    for e in std::fs::read_dir(&src).unwrap() {
        let path = e.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        if path.is_dir() || path.extension().is_some_and(|e| e == "rs") {
            rooms.push((name, path));
        }
    }
    let modules: BTreeSet<String> = rooms
        .iter()
        .map(|(n, _)| n.clone())
        .filter(|n| n != "lib" && n != "main")
        .collect();
    let mut wrong = Vec::new();
    for (name, path) in &rooms {
        let Some(mine) = floor(name) else {
            wrong.push(format!(
                "{name}: a room with no floor in this test's FLOORS"
            ));
            continue;
        };
        for other in imports(&text_of(path), &modules) {
            if &other == name {
                continue;
            }
            match floor(&other) {
                Some(theirs) if theirs < mine => {}
                Some(_) => wrong.push(format!(
                    "{name} (floor {mine}) imports {other}, which is not below it"
                )),
                None => wrong.push(format!("{name} imports {other}, a room with no floor")),
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "the server's rooms break their floors:\n{}",
        wrong.join("\n")
    );
}

/// The checker itself: a group import and a plain path are both read, and an item of
/// `lib.rs` counts as the room `lib`.
#[test]
fn imports_are_read_from_paths_and_groups() {
    let modules: BTreeSet<String> = ["state", "http", "error"]
        .into_iter()
        .map(String::from)
        .collect();
    let found = imports(
        "use crate::{error::ApiError, state::{AppState, now_ms}};\nlet x = crate::http::y; crate::build(c);",
        &modules,
    );
    let want: BTreeSet<String> = ["error", "state", "http", "lib"]
        .into_iter()
        .map(String::from)
        .collect();
    assert_eq!(found, want);
}
