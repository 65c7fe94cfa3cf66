//! Guest identities. A guest gets an opaque random token (32 bytes from the OS's CSPRNG,
//! hex); the store keeps only its SHA-256. The token travels in the `fib_token` HttpOnly
//! cookie (browsers) or an `Authorization: Bearer` header (other clients), never in a URL,
//! and is never logged.

use axum::http::{HeaderMap, header};
use sha2::{Digest, Sha256};
use unicode_normalization::UnicodeNormalization;
use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};

use crate::error::ApiError;

pub const COOKIE: &str = "fib_token";

/// Tokens, invite codes and session ids: the core's random hex (the OS's source).
pub use realtime::random_hex;

pub fn hash_token(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// The token sent with a request, if any: the bearer header wins over the cookie.
pub fn token_from(headers: &HeaderMap) -> Option<String> {
    if let Some(v) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        && let Some((scheme, t)) = v.trim_start().split_once(' ')
        // An authentication scheme's name is case-insensitive (RFC 9110 §11.1).
        && scheme.eq_ignore_ascii_case("bearer")
    {
        return Some(t.trim().to_string());
    }
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == COOKIE)
        .map(|(_, v)| v.to_string())
}

/// The `Set-Cookie` value for a fresh token (a year; SameSite=Strict keeps other sites'
/// pages from riding on it).
pub fn set_cookie(token: &str, secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!("{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict; Max-Age=31536000{secure}")
}

/// The `Set-Cookie` value that makes the browser forget its token (signing out).
pub fn clear_cookie(secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!("{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0{secure}")
}

/// The form two names are compared in: compatibility-folded (NFKC: fullwidth `Ｂｏｔ` and
/// mathematical `𝐁𝐨𝐭` become `Bot`), lower-case, every run of whitespace one space.
fn comparable(name: &str) -> String {
    let folded: String = name.nfkc().collect::<String>().to_lowercase();
    folded.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `name` (already [`comparable`]) as it looks, for the bot check: accents and other
/// combining marks taken off (`B̶o̶t̶`), and the letters of other scripts drawn like b, o
/// and t mapped to them (Cyrillic `Вот`, Greek `Βοτ`, the digit 0).
fn skeleton(name: &str) -> String {
    name.nfkd()
        .filter(|c| {
            !matches!(
                c.general_category(),
                GeneralCategory::NonspacingMark
                    | GeneralCategory::SpacingMark
                    | GeneralCategory::EnclosingMark
            )
        })
        .map(|c| match c {
            // Cyrillic ve and soft sign, Greek beta, Latin tone six, Cherokee (both cases:
            // names are lower-cased first), small capital b, b with stroke or hook,
            // Canadian syllabics.
            'в' | 'ь' | 'β' | 'ƅ' | 'Ꮟ' | 'ꮟ' | 'ᏼ' | 'ʙ' | 'ƀ' | 'ɓ' | 'ᑲ' | 'ᖯ' => {
                'b'
            }
            // Cyrillic o, Greek omicron, Armenian oh, small capital o, barred o, digit
            // zero.
            'о' | 'ο' | 'օ' | 'ᴏ' | 'ɵ' | '0' => 'o',
            // Cyrillic te, Greek tau, small capital t, t with stroke, hook or retroflex hook.
            'т' | 'τ' | 'ᴛ' | 'ŧ' | 'ƭ' | 'ʈ' => 't',
            c => c,
        })
        .collect()
}

/// Whether a name could pass for a bot's. The web client shows a bot as `Bot 2`,
/// `Bot 2 (hard)` or `Bot (hard)` (web/app.js), so a name that is "bot" followed by
/// anything but a letter ("Bot", "bot 3", "BOT(hard)", "Bot-9") is refused; words that
/// merely begin with those letters ("Botond", "Bottle") are names like any other.
fn looks_like_a_bot(name: &str) -> bool {
    let name = skeleton(&comparable(name));
    match name.strip_prefix("bot") {
        Some(rest) => !rest.chars().next().is_some_and(char::is_alphabetic),
        None => false,
    }
}

/// The rule of [`protocol::text`] for display names: no emoji joiners (a joiner makes two
/// names that look alike compare different).
const NAME_FIELD: protocol::text::Field = protocol::text::Field {
    max_chars: protocol::MAX_NAME_CHARS,
    emoji_joiners: false,
};

/// Whether a name ends as the web client marks the player's own seat ("Ada (you)"): on
/// the other player's page, that name would read as them.
fn ends_like_you(name: &str) -> bool {
    skeleton(&comparable(name))
        .trim_end()
        .trim_end_matches('.')
        .ends_with("(you)")
}

/// Checks a display name and returns it trimmed. In this order: it must have a visible
/// character (`bad_name`), no control character anywhere, not even at its ends
/// (`name_forbidden_char`), 1 to `MAX_NAME_CHARS` characters (`bad_name`), no forbidden
/// character of [`protocol::text`] and no stack of more than four marks
/// (`name_forbidden_char`, naming the first one), and it may not pass for a bot
/// (`name_looks_like_bot`) or end as the client marks one's own seat (`bad_name`).
pub fn clean_name(name: &str) -> Result<String, ApiError> {
    use protocol::text::TextError;
    let checked = protocol::text::check(name, NAME_FIELD);
    if checked == Err(TextError::Invisible) {
        return Err(ApiError::BadName(
            "bad_name",
            TextError::Invisible.describe("a name"),
        ));
    }
    // A line break or other control at a name's ends is refused too, not trimmed away.
    if let Some((i, c)) = name
        .chars()
        .enumerate()
        .find(|(_, c)| c.is_control() || matches!(c, '\u{2028}' | '\u{2029}'))
    {
        return Err(ApiError::BadName(
            "name_forbidden_char",
            TextError::Forbidden { c, at: i + 1 }.describe("a name"),
        ));
    }
    let name = checked.map_err(|e| {
        let code = match e {
            TextError::Invisible | TextError::TooLong { .. } => "bad_name",
            TextError::Forbidden { .. } | TextError::Stacked => "name_forbidden_char",
        };
        ApiError::BadName(code, e.describe("a name"))
    })?;
    if looks_like_a_bot(name) {
        return Err(ApiError::BadName(
            "name_looks_like_bot",
            "a name cannot pass for a bot's: it may not be \"Bot\" followed by anything \
             but a letter"
                .into(),
        ));
    }
    if ends_like_you(name) {
        return Err(ApiError::BadName(
            "bad_name",
            "a name cannot end in \"(you)\": that is how a page marks its own player's seat".into(),
        ));
    }
    Ok(name.to_string())
}

/// Whether a WebSocket upgrade's `Origin` may connect: absent (not a browser), the server's
/// own origin (`Origin`'s host equals the `Host` header), or configured.
pub fn origin_allowed(headers: &HeaderMap, allowed: &[String]) -> Result<(), ApiError> {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return Ok(());
    };
    let origin = origin.to_str().unwrap_or("");
    // Scheme and host are case-insensitive (RFC 6454): `--allowed-origins` entries and
    // the header are compared as lowercase, without a trailing slash.
    let origin_key = origin.trim_end_matches('/').to_ascii_lowercase();
    if allowed
        .iter()
        .filter(|a| !a.is_empty())
        .any(|a| a.trim_end_matches('/').eq_ignore_ascii_case(&origin_key))
    {
        return Ok(());
    }
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    let origin_host = origin_key
        .strip_prefix("http://")
        .or_else(|| origin_key.strip_prefix("https://"));
    match (host, origin_host) {
        (Some(h), Some(o)) if h.eq_ignore_ascii_case(o) => Ok(()),
        _ => Err(ApiError::ForbiddenOrigin(origin.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn token_from_bearer_or_cookie() {
        let mut h = HeaderMap::new();
        assert_eq!(token_from(&h), None);
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("a=b; fib_token=abc; c=d"),
        );
        assert_eq!(token_from(&h).as_deref(), Some("abc"));
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer xyz"),
        );
        assert_eq!(token_from(&h).as_deref(), Some("xyz"));
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("bearer  lower"),
        );
        assert_eq!(token_from(&h).as_deref(), Some("lower"));
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Basic Zm9v"),
        );
        assert_eq!(token_from(&h).as_deref(), Some("abc"), "not a bearer token");
    }

    fn code_of(name: &str) -> &'static str {
        match clean_name(name) {
            Ok(_) => "ok",
            Err(e) => e.code(),
        }
    }

    #[test]
    fn names_are_checked() {
        assert_eq!(clean_name("  Ada ").unwrap(), "Ada");
        assert_eq!(clean_name("Zoë Ødegård").unwrap(), "Zoë Ødegård");
        assert_eq!(clean_name("李小龍").unwrap(), "李小龍");
        assert_eq!(clean_name(&"x".repeat(24)).unwrap(), "x".repeat(24));
        assert_eq!(code_of("   "), "bad_name");
        assert_eq!(code_of(""), "bad_name");
        assert_eq!(code_of(&"x".repeat(25)), "bad_name");
        assert_eq!(code_of("a\u{7}b"), "name_forbidden_char");
    }

    /// Every kind of invisible character, alone (then the name is empty
    /// once they are removed: `bad_name`) and inside a name (`name_forbidden_char`).
    #[test]
    fn invisible_and_control_characters_are_refused() {
        for c in [
            '\u{202E}', // right-to-left override
            '\u{202A}', // left-to-right embedding
            '\u{2066}', // left-to-right isolate
            '\u{2069}', // pop directional isolate
            '\u{200E}', // left-to-right mark
            '\u{200B}', // zero-width space
            '\u{200C}', // zero-width non-joiner
            '\u{200D}', // zero-width joiner
            '\u{2060}', // word joiner
            '\u{FEFF}', // byte order mark
            '\u{00AD}', // soft hyphen
            '\u{2028}', // line separator
            '\u{2029}', // paragraph separator
            '\u{0000}', '\n', '\u{0085}', // next line (C1 control)
            '\u{3164}', // Hangul filler: a letter drawn as nothing
            '\u{FFA0}', // halfwidth Hangul filler
            '\u{115F}', // Hangul choseong filler
            '\u{2800}', // blank Braille pattern
        ] {
            assert_eq!(code_of(&format!("Ada{c}")), "name_forbidden_char", "{c:?}");
            assert_eq!(code_of(&format!("A{c}da")), "name_forbidden_char", "{c:?}");
            assert_eq!(code_of(&c.to_string()), "bad_name", "{c:?}");
            assert_eq!(code_of(&format!(" {c} {c} ")), "bad_name", "{c:?}");
        }
        let err = clean_name("Ad\u{202E}a").unwrap_err();
        assert!(err.to_string().contains("U+202E at character 3"), "{err}");
    }

    /// What a walk got past the rule: an unassigned or default-ignorable character in
    /// front of a bot's name (drawn as nothing), a name of nothing but one invisible
    /// character or mark, marks stacked over the page, and a name ending as the client
    /// marks one's own seat.
    #[test]
    fn names_that_look_like_others_or_like_nothing_are_refused() {
        for prefix in ['\u{FFF0}', '\u{E0080}', '\u{E01F0}', '\u{E000}', '\u{180B}'] {
            let name = format!("{prefix}Bot 3 (hard)");
            assert_eq!(code_of(&name), "name_forbidden_char", "{name:?}");
        }
        for name in [
            "\u{034F}",
            "\u{FE0F}",
            "\u{E0100}",
            "\u{17B4}",
            "\u{0301}",
            "\u{FFF0}",
        ] {
            assert_eq!(code_of(name), "bad_name", "{name:?}");
        }
        for name in [
            format!("\u{E01}{}", "\u{E49}".repeat(23)),
            format!("Z{}", "\u{489}".repeat(23)),
        ] {
            assert_eq!(code_of(&name), "name_forbidden_char", "{name:?}");
        }
        for name in ["Ada (you)", "Ada(YOU)", "Ada （you）", "Ada (yоu)."] {
            assert_eq!(code_of(name), "bad_name", "{name:?}");
        }
        for name in [
            "You",
            "Youssef",
            "Ada (your friend)",
            "❤\u{FE0F} Ada",
            "Jose\u{301}",
        ] {
            assert_eq!(code_of(name), "ok", "{name:?}");
        }
    }

    #[test]
    fn names_that_pass_for_bots_are_refused() {
        for name in [
            "Bot",
            "bot",
            "BOT 2",
            "Bot 2 (hard)",
            "Bot (easy)",
            "Bot\u{00A0}1",
            "  bot   3  ",
            "Bot-9",
            "bot_hard",
            "Bot2",
            "Ｂｏｔ 1",
            "𝐁𝐨𝐭 (hard)",
            // Other scripts' look-alikes and combining marks (a black-box walk passed both).
            "B\u{43E}t 1",
            "\u{412}\u{43E}\u{442} 2",
            "\u{392}\u{3BF}\u{3C4}",
            "B\u{336}o\u{336}t\u{336} 1",
            "Bót 3",
            "B0t",
            // Small capitals (a walk passed them).
            "\u{299}\u{1D0F}\u{1D1B} 1",
            "\u{13CF}ot",
            "\u{180}\u{275}\u{167}",
        ] {
            assert_eq!(code_of(name), "name_looks_like_bot", "{name:?}");
        }
        for name in [
            "Botond",
            "Bottle",
            "Abbot",
            "Robot",
            "Ada the bot",
            "B0b",
            "Вова",
        ] {
            assert_eq!(code_of(name), "ok", "{name:?}");
        }
    }

    #[test]
    fn origins() {
        let mut h = HeaderMap::new();
        h.insert(header::HOST, HeaderValue::from_static("127.0.0.1:8080"));
        assert!(origin_allowed(&h, &[]).is_ok());
        h.insert(
            header::ORIGIN,
            HeaderValue::from_static("http://127.0.0.1:8080"),
        );
        assert!(origin_allowed(&h, &[]).is_ok());
        h.insert(
            header::ORIGIN,
            HeaderValue::from_static("http://evil.example"),
        );
        assert!(origin_allowed(&h, &[]).is_err());
        assert!(origin_allowed(&h, &["http://evil.example".into()]).is_ok());
        // Scheme and host in any case, a trailing slash: the same origin.
        assert!(origin_allowed(&h, &["http://Evil.Example/".into()]).is_ok());
        for same in ["HTTP://127.0.0.1:8080", "http://127.0.0.1:8080/"] {
            h.insert(header::ORIGIN, HeaderValue::from_static(same));
            assert!(origin_allowed(&h, &[]).is_ok(), "{same}");
        }
        h.insert(
            header::ORIGIN,
            HeaderValue::from_static("http://127.0.0.1:8080.evil.example"),
        );
        assert!(origin_allowed(&h, &[]).is_err());
    }

    #[test]
    fn tokens_are_random_and_hashed() {
        let a = random_hex(32);
        assert_eq!(a.len(), 64);
        assert_ne!(a, random_hex(32));
        assert_ne!(hash_token(&a), a);
    }
}
