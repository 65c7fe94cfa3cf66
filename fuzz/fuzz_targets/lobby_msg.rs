//! Fuzz target `lobby_msg`: arbitrary bytes as one text message on the lobby socket,
//! through the server's own decoder (`protocol::LobbyClientMsg::decode`, which `server::ws`
//! calls and nothing else). It must never panic: a message or a typed error. A decoded
//! message re-encodes to one that decodes the same, and a chat line's text goes through
//! the server's text check (`protocol::check_chat_text`) to a line or a specific code.

#![no_main]

use libfuzzer_sys::fuzz_target;
use protocol::LobbyClientMsg;

fuzz_target!(|data: &[u8]| {
    // Text frames are UTF-8 (anything else is a protocol error, closed with 1002).
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let msg = match LobbyClientMsg::decode(text) {
        Ok(msg) => msg,
        Err(e) => {
            let _ = format!("not a valid message: {e}");
            return;
        }
    };
    if let LobbyClientMsg::Chat { text } = &msg {
        match protocol::check_chat_text(text) {
            Ok(line) => assert!(!line.is_empty() && text.contains(line)),
            Err((code, _)) => assert!(
                matches!(code, "chat_empty" | "chat_too_long" | "chat_bad_character"),
                "{code}"
            ),
        }
    }
    let again = serde_json::to_string(&msg).expect("a message encodes");
    let back = LobbyClientMsg::decode(&again).expect("an encoded message decodes");
    assert_eq!(back, msg, "{again}");
});
