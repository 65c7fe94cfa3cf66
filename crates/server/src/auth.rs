//! Guest identities. A guest gets an opaque random token (32 bytes from the OS's CSPRNG,
//! hex); the store keeps only its SHA-256. The token travels in the `fib_token` HttpOnly
//! cookie (browsers) or an `Authorization: Bearer` header (other clients), never in a URL,
//! and is never logged.

use axum::http::{HeaderMap, header};
use sha2::{Digest, Sha256};

use crate::error::ApiError;

pub const COOKIE: &str = "fib_token";

/// 32 random bytes from the OS, hex-encoded.
pub fn random_hex(bytes: usize) -> String {
    let mut b = vec![0u8; bytes];
    getrandom::fill(&mut b).expect("the OS random source is available");
    hex::encode(b)
}

pub fn hash_token(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// The token sent with a request, if any: the bearer header wins over the cookie.
pub fn token_from(headers: &HeaderMap) -> Option<String> {
    if let Some(v) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        && let Some(t) = v.strip_prefix("Bearer ")
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

/// Checks a display name: trimmed, 1 to `MAX_NAME_CHARS` characters, no control characters.
pub fn clean_name(name: &str) -> Result<String, ApiError> {
    let name = name.trim();
    let n = name.chars().count();
    if n == 0 || n > protocol::MAX_NAME_CHARS {
        return Err(ApiError::BadName(format!(
            "a name has 1 to {} characters",
            protocol::MAX_NAME_CHARS
        )));
    }
    if name.chars().any(char::is_control) {
        return Err(ApiError::BadName(
            "a name cannot contain control characters".into(),
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
    if allowed.iter().any(|a| a.trim_end_matches('/') == origin) {
        return Ok(());
    }
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    let origin_host = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"));
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
    }

    #[test]
    fn names_are_checked() {
        assert_eq!(clean_name("  Ada ").unwrap(), "Ada");
        assert!(clean_name("   ").is_err());
        assert!(clean_name(&"x".repeat(25)).is_err());
        assert!(clean_name("a\u{7}b").is_err());
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
    }

    #[test]
    fn tokens_are_random_and_hashed() {
        let a = random_hex(32);
        assert_eq!(a.len(), 64);
        assert_ne!(a, random_hex(32));
        assert_ne!(hash_token(&a), a);
    }
}
