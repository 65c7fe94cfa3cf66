//! Fuzz target `client_msg`: arbitrary bytes as one text message on a table socket. The
//! server's own decoder (`protocol::ClientMsg::decode`, which `server::ws` calls and
//! nothing else) must never panic: it returns a message or a typed error. A message that
//! decodes re-encodes to one that decodes the same; an `act`'s action, decoded by every
//! game as the table would (`games::decode_action`), is accepted or refused with
//! `unknown_field` or `bad_action`, never anything else.

#![no_main]

use libfuzzer_sys::fuzz_target;
use protocol::ClientMsg;
use serde_json::Value;

/// Whether `v` holds a float: serde_json's default float parsing may move the last bit, so
/// the re-encoding check is made on messages without floats.
fn has_float(v: &Value) -> bool {
    match v {
        Value::Number(n) => n.is_f64(),
        Value::Array(a) => a.iter().any(has_float),
        Value::Object(o) => o.values().any(has_float),
        _ => false,
    }
}

fuzz_target!(|data: &[u8]| {
    // The socket only ever sees valid UTF-8 text (a text frame that is not UTF-8 is a
    // protocol error, closed with 1002 before any decoding).
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let msg = match ClientMsg::decode(text) {
        Ok(msg) => msg,
        Err(e) => {
            // What the client is sent.
            let _ = format!("not a valid message: {e}");
            return;
        }
    };
    if let ClientMsg::Act { action, .. } = &msg {
        for info in games::catalogue() {
            if let Err(e) = games::decode_action(info.kind, action) {
                assert!(
                    matches!(e.code(), "unknown_field" | "bad_action"),
                    "{}: {action} refused as {e}",
                    info.kind
                );
            }
        }
        if has_float(action) {
            return;
        }
    }
    let again = serde_json::to_string(&msg).expect("a message encodes");
    let back = ClientMsg::decode(&again).expect("an encoded message decodes");
    assert_eq!(back, msg, "{again}");
});
