//! docs/protocol.md against the code: every JSON example that claims to be a message or a
//! body is validated against the JSON Schema generated from the wire types
//! (docs/protocol.schema.json, kept current by `games::tests::checked_in_schema_is_current`),
//! and every decoder refusal it quotes with an "expected one of" list is the decoder's own
//! text, so the reference cannot drift from the server again (#29). Its numbering and
//! citations are checked in `doc_structure.rs`.
//!
//! The convention, stated in protocol.md's introduction:
//!
//! - Every fenced ` ```json ` block has a marker line right above it:
//!   `<!-- schema: PATH -->`, where PATH names a schema in protocol.schema.json:
//!   `websocket.ServerMsg`, `http.Leaderboard`, `games.trump.view`, a definition inside one
//!   with `#` (`websocket.ServerMsg#SeatInfo`), `events.G` for an event of game G (the
//!   game's `event` schema, or the server's own `round_dealt`), and a trailing `[]` for an
//!   array of them. A block holds one JSON value, or several, one per line. Or the marker is
//!   `<!-- not a message: why -->`, allowed only for a block where no object has a `"type"`.
//! - Every fenced ` ```text ` block with `→` (client to server) or `←` (server to client)
//!   lines is a socket exchange with the marker `<!-- exchange: G -->` (G the table's game).
//!   `→` lines are `ClientMsg`s whose `action` is an action of G; `←` lines are
//!   `ServerMsg`s whose `events` are events of G, or a bare `"events":[…]`. A line that does
//!   not start with an arrow, or a parenthesised one, is commentary; an indented line
//!   continues the message above it. An `act` answered `bad_action` or `unknown_field` on
//!   the next line shows a refusal: its action is not held to the game's schema.
//! - A code span in the text that is a JSON object with a `"type"` (`{"type":"sync"}`) must
//!   be a message, or an action or event of some game. A span that is not JSON
//!   (`{"type":"mute","player":ID}`) is a pattern and is skipped; one followed by
//!   `unknown_field` or `bad_action` shows a refusal.
//! - `…` marks an example shortened by hand: outside strings it stands for left-out members
//!   or elements (`{…TableInfo…}`, `[…24 cards…]`, `, …]`, `"first_leader":…`). Such an
//!   excerpt is checked against the same schema with nothing required: every member it
//!   shows must exist, with the right type and values.
//!
//! Objects are checked closed: a member that the schema does not describe is an error
//! (`unevaluatedProperties: false` is added where serde would ignore it), so a renamed or
//! removed field in the code fails here.

use serde_json::{Value, json};
use std::fmt::Write as _;

const DOC: &str = include_str!("../../../docs/protocol.md");
const SCHEMA: &str = include_str!("../../../docs/protocol.schema.json");

/// The server's own events (protocol.md §3.4, `round_dealt`), put among a game's events:
/// `websocket.ServerEvent` of the schema file.
fn server_event_schema(root: &Value) -> Value {
    split_defs(root["websocket"]["ServerEvent"].clone()).1
}

/// A fenced block of the document.
#[derive(Debug)]
struct Block {
    /// 1-based line of the opening fence.
    line: usize,
    lang: String,
    /// The marker comment right above the fence, without `<!--` and `-->`.
    marker: Option<String>,
    body: String,
}

fn blocks(doc: &str) -> Vec<Block> {
    let lines: Vec<&str> = doc.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if let Some(lang) = lines[i].strip_prefix("```") {
            let start = i;
            let marker = lines[..i]
                .iter()
                .rev()
                .find(|l| !l.trim().is_empty())
                .and_then(|l| l.trim().strip_prefix("<!--"))
                .and_then(|l| l.strip_suffix("-->"))
                .map(|m| m.trim().to_string());
            i += 1;
            let mut body = String::new();
            while i < lines.len() && !lines[i].starts_with("```") {
                body.push_str(lines[i]);
                body.push('\n');
                i += 1;
            }
            out.push(Block {
                line: start + 1,
                lang: lang.trim().to_string(),
                marker,
                body,
            });
        }
        i += 1;
    }
    out
}

/// Replaces the hand-made shortenings (`…` outside strings) by nothing, so that what is left
/// parses as JSON. Returns the text and whether anything was shortened (also inside a
/// string).
fn elide(text: &str) -> (String, bool) {
    const GAP: char = '\u{1}';
    let mut marked = String::new();
    let mut chars = text.chars();
    let mut in_string = false;
    let mut elided = false;
    while let Some(c) = chars.next() {
        if in_string {
            marked.push(c);
            match c {
                '\\' => marked.extend(chars.next()),
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                marked.push(c);
            }
            '…' => {
                elided = true;
                // `…words…` is one gap when the words hold no bracket, quote or line end.
                let rest: String = chars.clone().collect();
                if let Some(end) = rest.find('…') {
                    let words = &rest[..end];
                    if !words.contains(['{', '}', '[', ']', '"', '\n']) {
                        for _ in 0..words.chars().count() + 1 {
                            chars.next();
                        }
                    }
                }
                marked.push(GAP);
            }
            _ => marked.push(c),
        }
    }
    if !elided {
        // An id or hash shortened inside its string still makes an excerpt: its format
        // is not checked.
        return (text.to_string(), text.contains('…'));
    }
    // A left-out member value takes its key with it; a left-out element or member goes
    // with one comma beside it.
    let mut s = marked;
    for pattern in [
        r#",\s*"(?:[^"\\]|\\.)*"\s*:\s*\x01"#,
        r#""(?:[^"\\]|\\.)*"\s*:\s*\x01\s*,?"#,
        r"\s*,\s*\x01",
        r"\x01\s*,\s*",
        r"\x01",
    ] {
        s = regex::Regex::new(pattern)
            .unwrap()
            .replace_all(&s, "")
            .into_owned();
    }
    (s, true)
}

/// Parses a block's text as one JSON value, or as one value per non-empty line.
fn values(text: &str) -> Result<Vec<Value>, String> {
    if let Ok(v) = serde_json::from_str::<Value>(text) {
        return Ok(vec![v]);
    }
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<Value>(l).map_err(|e| format!("{e}: {l}")))
        .collect()
}

/// The schema named by a marker's PATH (see the module header), as a document of its own.
fn schema_at(root: &Value, path: &str) -> Result<Value, String> {
    let (path, array) = match path.strip_suffix("[]") {
        Some(p) => (p, true),
        None => (path, false),
    };
    let one = if let Some(game) = path.strip_prefix("events.") {
        let event = root["games"][game]["event"].clone();
        if event.is_null() {
            return Err(format!("no game {game:?} in the schema"));
        }
        let (defs, event) = split_defs(event);
        with_defs(json!({"anyOf": [event, server_event_schema(root)]}), defs)
    } else {
        let (doc, def) = match path.split_once('#') {
            Some((d, def)) => (d, Some(def)),
            None => (path, None),
        };
        let mut s = root;
        for key in doc.split('.') {
            s = &s[key];
        }
        if s.is_null() {
            return Err(format!("no schema {doc:?} in protocol.schema.json"));
        }
        match def {
            None => s.clone(),
            Some(def) => {
                if s["$defs"][def].is_null() {
                    return Err(format!("no definition {def:?} in {doc:?}"));
                }
                json!({"$defs": s["$defs"], "$ref": format!("#/$defs/{def}")})
            }
        }
    };
    Ok(if array {
        // The definitions stay at the root, where `#/$defs/…` points.
        let (defs, item) = split_defs(one);
        with_defs(json!({"type": "array", "items": item}), defs)
    } else {
        one
    })
}

/// A schema's `$defs`, taken out of it.
fn split_defs(mut s: Value) -> (Option<Value>, Value) {
    let defs = s.as_object_mut().and_then(|o| o.remove("$defs"));
    (defs, s)
}

/// `s` with `defs` at its root, where the `#/$defs/…` references inside point.
fn with_defs(mut s: Value, defs: Option<Value>) -> Value {
    if let Some(d) = defs {
        s["$defs"] = d;
    }
    s
}

/// Closes every object schema: where serde ignores an unknown member, the example may not
/// have one. `unevaluatedProperties: false` goes where a value is described (the root, a
/// property, an array's items), and sees the members that its `$ref`, `oneOf`, `anyOf` and
/// `allOf` evaluate; definitions and branches stay open, since they are also parts of
/// bigger objects (an internally tagged enum adds `type` to its variant's struct).
fn close(s: &mut Value, value_position: bool) {
    let Some(o) = s.as_object_mut() else { return };
    let composed = ["properties", "$ref", "oneOf", "anyOf", "allOf"]
        .iter()
        .any(|k| o.contains_key(*k));
    if composed
        && value_position
        && !o.contains_key("additionalProperties")
        && !o.contains_key("unevaluatedProperties")
    {
        o.insert("unevaluatedProperties".into(), Value::Bool(false));
    }
    for (k, v) in o.iter_mut() {
        match k.as_str() {
            "oneOf" | "anyOf" | "allOf" => {
                for b in v.as_array_mut().into_iter().flatten() {
                    close(b, false);
                }
            }
            "properties" | "$defs" => {
                for (_, p) in v.as_object_mut().into_iter().flatten() {
                    close(p, k == "properties");
                }
            }
            "items" | "additionalProperties" => close(v, true),
            _ => {}
        }
    }
}

/// The schema for an excerpt: nothing required, no minimum length, and a `oneOf` becomes an
/// `anyOf` (with fewer members, several branches may fit).
fn relax(s: &mut Value) {
    match s {
        Value::Object(o) => {
            if o.get("required").is_some_and(Value::is_array) {
                o.remove("required");
            }
            o.remove("minItems");
            o.remove("minProperties");
            if let Some(b) = o.remove("oneOf") {
                o.insert("anyOf".into(), b);
            }
            for (k, v) in o.iter_mut() {
                // A property's name is not a keyword: look only into the schemas.
                if k == "properties" || k == "$defs" {
                    for (_, p) in v.as_object_mut().into_iter().flatten() {
                        relax(p);
                    }
                } else {
                    relax(v);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(relax),
        _ => {}
    }
}

/// Validates `value` against `schema` (closed; relaxed for an excerpt) and returns the
/// problems, one per line.
fn check(schema: &Value, value: &Value, excerpt: bool) -> Vec<String> {
    let mut schema = schema.clone();
    close(&mut schema, true);
    if excerpt {
        relax(&mut schema);
    }
    let validator = jsonschema::draft202012::options()
        .should_validate_formats(!excerpt)
        .build(&schema)
        .unwrap_or_else(|e| panic!("the schema does not compile: {e}"));
    validator
        .iter_errors(value)
        .map(|e| format!("at {:?}: {e}", e.instance_path().as_str()))
        .collect()
}

fn has_type_key(v: &Value) -> bool {
    match v {
        Value::Object(o) => o.contains_key("type") || o.values().any(has_type_key),
        Value::Array(a) => a.iter().any(has_type_key),
        _ => false,
    }
}

/// Checks one socket message of an exchange (or a `"events":[…]` line) for game `game`.
fn check_exchange_line(
    root: &Value,
    game: &str,
    arrow: char,
    text: &str,
    refused_undecoded: bool,
) -> Vec<String> {
    let text = text.trim();
    let (text, events_only) = match text.strip_prefix("\"events\":") {
        Some(rest) => (format!("{{\"events\":{rest}}}"), true),
        None => (text.to_string(), false),
    };
    let (json_text, excerpt) = elide(&text);
    let v: Value = match serde_json::from_str(&json_text) {
        Ok(v) => v,
        Err(e) => return vec![format!("does not parse ({e}): {json_text}")],
    };
    let mut problems = Vec::new();
    if !events_only {
        let path = if arrow == '→' {
            "websocket.ClientMsg"
        } else {
            "websocket.ServerMsg"
        };
        problems.extend(check(&schema_at(root, path).unwrap(), &v, excerpt));
    }
    if let Some(action) = v.get("action") {
        let s = schema_at(root, &format!("games.{game}.action")).unwrap();
        // An action answered `bad_action` or `unknown_field` is shown not decoding on
        // purpose.
        if !refused_undecoded {
            problems.extend(check(&s, action, excerpt));
        }
    }
    if let Some(events) = v.get("events") {
        let s = schema_at(root, &format!("events.{game}[]")).unwrap();
        problems.extend(check(&s, events, excerpt));
    }
    problems
}

/// Every example of protocol.md, checked; the problems found, one per line.
fn doc_problems(doc: &str, root: &Value) -> String {
    let mut report = String::new();
    let mut checked = 0;
    for b in blocks(doc) {
        let at = format!("docs/protocol.md:{} ({} block)", b.line, b.lang);
        match b.lang.as_str() {
            "json" => {
                let (text, excerpt) = elide(&b.body);
                let vals = match values(&text) {
                    Ok(v) => v,
                    Err(e) => {
                        writeln!(report, "{at}: does not parse as JSON: {e}").unwrap();
                        continue;
                    }
                };
                match b.marker.as_deref() {
                    Some(m) if m.starts_with("schema:") => {
                        let path = m["schema:".len()..].trim();
                        let schema = match schema_at(root, path) {
                            Ok(s) => s,
                            Err(e) => {
                                writeln!(report, "{at}: {e}").unwrap();
                                continue;
                            }
                        };
                        for v in &vals {
                            for p in check(&schema, v, excerpt) {
                                writeln!(report, "{at}: not a {path}: {p}").unwrap();
                            }
                        }
                        checked += 1;
                    }
                    Some(m) if m.starts_with("not a message:") => {
                        if vals.iter().any(has_type_key) {
                            writeln!(
                                report,
                                "{at}: marked `not a message` but holds an object with a \"type\": \
                                 mark it `<!-- schema: PATH -->`"
                            )
                            .unwrap();
                        }
                    }
                    _ => writeln!(
                        report,
                        "{at}: no marker: put `<!-- schema: PATH -->` (or `<!-- not a message: \
                         why -->`) on the line above the block"
                    )
                    .unwrap(),
                }
            }
            "text" => {
                let is_arrow = |l: &str| {
                    let l = l.trim_start_matches(|c: char| c.is_ascii_uppercase());
                    l.starts_with('→') || l.starts_with('←')
                };
                if !b.body.lines().any(is_arrow) {
                    continue;
                }
                let Some(game) = b
                    .marker
                    .as_deref()
                    .and_then(|m| m.strip_prefix("exchange:"))
                    .map(str::trim)
                else {
                    writeln!(
                        report,
                        "{at}: a socket exchange without `<!-- exchange: GAME -->` above it"
                    )
                    .unwrap();
                    continue;
                };
                // Messages: an arrow line and the indented lines that continue it.
                let mut msgs: Vec<(char, String)> = Vec::new();
                for l in b.body.lines() {
                    if is_arrow(l) {
                        let rest = l.trim_start_matches(|c: char| c.is_ascii_uppercase());
                        let arrow = rest.chars().next().unwrap();
                        msgs.push((arrow, l.to_string()));
                    } else if l.starts_with(' ') && !l.trim_start().starts_with('(') {
                        if let Some((_, m)) = msgs.last_mut() {
                            m.push_str(l.trim());
                        }
                    } else if !l.trim().is_empty() && !l.trim_start().starts_with('(') {
                        writeln!(
                            report,
                            "{at}: a line that is neither message nor (comment): {l}"
                        )
                        .unwrap();
                    }
                }
                let body = |m: &str| {
                    m.trim_start_matches(|c: char| c.is_ascii_uppercase())
                        .trim_start_matches(['→', '←'])
                        .to_string()
                };
                for (i, (arrow, m)) in msgs.iter().enumerate() {
                    let refused_undecoded = msgs.get(i + 1).is_some_and(|(a, next)| {
                        *a == '←'
                            && ["\"code\":\"bad_action\"", "\"code\":\"unknown_field\""]
                                .iter()
                                .any(|c| next.contains(c))
                    });
                    for p in check_exchange_line(root, game, *arrow, &body(m), refused_undecoded) {
                        writeln!(report, "{at}: {m}\n    {p}").unwrap();
                    }
                }
                checked += 1;
            }
            _ => {}
        }
    }
    report.push_str(&inline_problems(doc, root));
    if checked <= 20 {
        writeln!(
            report,
            "only {checked} examples checked: is the convention still used?"
        )
        .unwrap();
    }
    report
}

/// Code spans in the text (outside fenced blocks) that are a JSON object with a `"type"`:
/// each must be a message or a game's action or event (any of them; formats unchecked,
/// since ids there are placeholders). A span that is not JSON (`{"type":"mute","player":ID}`,
/// `true|false`) is a pattern, not an example; one followed by `→ \`unknown_field\`` or
/// `bad_action` shows a refusal.
fn inline_problems(doc: &str, root: &Value) -> String {
    let mut candidates: Vec<Value> = ["ClientMsg", "ServerMsg", "LobbyClientMsg", "LobbyMsg"]
        .iter()
        .map(|m| root["websocket"][*m].clone())
        .collect();
    for game in root["games"].as_object().unwrap().keys() {
        for part in ["action", "event"] {
            candidates.push(schema_at(root, &format!("games.{game}.{part}")).unwrap());
        }
    }
    candidates.push(server_event_schema(root));
    // Closed, and closed and relaxed for shortened spans.
    let build = |relaxed: bool| -> Vec<jsonschema::Validator> {
        candidates
            .iter()
            .map(|s| {
                let mut s = s.clone();
                close(&mut s, true);
                if relaxed {
                    relax(&mut s);
                }
                jsonschema::draft202012::options().build(&s).unwrap()
            })
            .collect()
    };
    let (full, relaxed) = (build(false), build(true));
    let mut report = String::new();
    let mut checked = 0;
    let mut fence = false;
    for (n, line) in doc.lines().enumerate() {
        if line.starts_with("```") {
            fence = !fence;
        }
        if fence {
            continue;
        }
        // Single-backtick spans: split on backticks, the odd pieces are code.
        let pieces: Vec<&str> = line.split('`').collect();
        for i in (1..pieces.len()).step_by(2) {
            let span = pieces[i];
            if !span.starts_with("{\"type\":") {
                continue;
            }
            let after: String = pieces[i + 1..].join("`").chars().take(30).collect();
            if after.contains("unknown_field") || after.contains("bad_action") {
                continue;
            }
            let (text, excerpt) = elide(span);
            let Ok(v) = serde_json::from_str::<Value>(&text) else {
                continue;
            };
            checked += 1;
            let validators = if excerpt { &relaxed } else { &full };
            if !validators.iter().any(|val| val.is_valid(&v)) {
                writeln!(
                    report,
                    "docs/protocol.md:{}: `{span}` is no message, action or event of the schema",
                    n + 1
                )
                .unwrap();
            }
        }
    }
    if checked < 30 {
        writeln!(report, "only {checked} inline messages checked").unwrap();
    }
    report
}

#[test]
fn every_message_example_of_protocol_md_matches_the_schema() {
    let root: Value = serde_json::from_str(SCHEMA).unwrap();
    let report = doc_problems(DOC, &root);
    assert!(
        report.is_empty(),
        "docs/protocol.md has examples that are not what the server sends:\n{report}"
    );
}

/// The check itself: a broken example, an unmarked one and a new field are all caught.
#[test]
fn a_broken_example_is_caught() {
    let root: Value = serde_json::from_str(SCHEMA).unwrap();
    let good = "<!-- schema: websocket.ServerMsg -->\n```json\n{\"type\":\"pong\"}\n```\n";
    let pad = good.repeat(21) + &"`{\"type\":\"pong\"}`\n".repeat(30);
    assert_eq!(doc_problems(&pad, &root), "");
    for (bad, why) in [
        (
            "<!-- schema: websocket.ServerMsg -->\n```json\n{\"type\":\"pongg\"}\n```\n",
            "not a websocket.ServerMsg",
        ),
        (
            "<!-- schema: http.ErrorBody -->\n```json\n{\"code\":\"x\",\"message\":\"y\",\"extra\":1}\n```\n",
            "extra",
        ),
        ("```json\n{\"type\":\"pong\"}\n```\n", "no marker"),
        (
            "<!-- not a message: x -->\n```json\n{\"type\":\"pong\"}\n```\n",
            "marked `not a message`",
        ),
        (
            "<!-- exchange: trump -->\n```text\n→ {\"type\":\"act\",\"version\":1,\"action\":{\"type\":\"bid\"}}\n```\n",
            "act",
        ),
        (
            "<!-- schema: websocket.ServerMsg#SeatInfo -->\n```json\n{\"kind\":\"player\",\"id\":\"e052b058-…\",\"nmae\":\"Ada\"}\n```\n",
            "nmae",
        ),
        (
            "`{\"type\":\"queue_leave\",\"x\":1}`\n",
            "no message, action or event",
        ),
    ] {
        let report = doc_problems(&format!("{pad}{bad}"), &root);
        assert!(report.contains(why), "{bad}\n→ {report}");
    }
}

#[test]
fn elisions_leave_json() {
    for (shortened, full) in [
        ("{…TableInfo…}", "{}"),
        (r#"[{"a":1}, …]"#, r#"[{"a":1}]"#),
        (r#"{"a":1,…,"b":2}"#, r#"{"a":1,"b":2}"#),
        (r#"{"a":…,"b":[…24 cards…]}"#, r#"{"b":[]}"#),
        (r#"{"a":1,"b":…,"c":3}"#, r#"{"a":1,"c":3}"#),
        (r#"[…, {"a":1}]"#, r#"[{"a":1}]"#),
        (r#"{"b":2,"a":…}"#, r#"{"b":2}"#),
        (r#"{"id":"e052b058-…"}"#, r#"{"id":"e052b058-…"}"#),
        (
            "{\"view\":{…the game's view for `you`, or null…}}",
            r#"{"view":{}}"#,
        ),
    ] {
        let (text, _) = elide(shortened);
        let got: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(
            got,
            serde_json::from_str::<Value>(full).unwrap(),
            "{shortened}"
        );
    }
}

/// Serde's refusals name what a type takes ("unknown variant `teleport`, expected one of
/// `act`, …"), and the document quotes some: each quote must be the decoder's own text
/// (less its " at line 1 column N"), so a new variant or field must reach the document.
/// §3.5 once lacked `rematch`, §2.10 `pace`. Every "expected one of" of the document must
/// be one of these checked quotes.
#[test]
fn every_expected_one_of_list_in_protocol_md_is_the_decoders() {
    fn without_position(e: serde_json::Error) -> String {
        let s = e.to_string();
        match s.rfind(" at line ") {
            Some(i) => s[..i].to_string(),
            None => s,
        }
    }
    // The server decodes a body as `protocol::strict::decode` does (its schema's walk,
    // then serde, naming the path of the bad member).
    let table = |body: &str| {
        let body: Value = serde_json::from_str(body).unwrap();
        protocol::strict::decode::<protocol::CreateTableRequest>(&body, "body").unwrap_err()
    };
    let quotes = [
        // §3.5: the table socket prefixes the decoder's error.
        format!(
            "not a valid message: {}",
            without_position(protocol::ClientMsg::decode(r#"{"type":"teleport"}"#).unwrap_err())
        ),
        // §2.10: the schema's walk lists what the body takes; serde's path leads.
        table(r#"{"game":"trump","seats":2,"color":1}"#),
        table(r#"{"game":"trump","seats":2,"bots":"godlike"}"#),
    ];
    let mut covered = Vec::new();
    let mut wrong = Vec::new();
    for q in &quotes {
        // The quote in the document starts as the decoder's text does, up to its list
        // (serde's `, expected one of …`, the walk's `: expected …`).
        let head = &q[..q
            .find(", expected")
            .or_else(|| q.find(": expected"))
            .unwrap()];
        let Some(at) = DOC.find(head) else {
            wrong.push(format!(
                "protocol.md no longer quotes {head:?}: drop it here"
            ));
            continue;
        };
        let shown = &DOC[at..][..DOC[at..].find("``").unwrap()];
        let shown = shown.trim_end();
        let shown = shown.split(" at line ").next().unwrap();
        if shown != q {
            wrong.push(format!(
                "protocol.md shows\n  {shown}\nthe decoder says\n  {q}"
            ));
        }
        covered.push(at..at + shown.len());
    }
    for (i, _) in DOC.match_indices("expected one of") {
        if !covered.iter().any(|r| r.contains(&i)) {
            let line = DOC[..i].lines().count();
            wrong.push(format!(
                "protocol.md:{line} quotes an \"expected one of\" that no test compares with its decoder"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
