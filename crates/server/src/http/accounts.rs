//! Accounts and devices. A guest may claim an account (a username and a password); then
//! it can sign in on any other device and be the same player there, with its history,
//! ratings and display name. Every device holds its own session token (`auth`); the
//! player can list the devices and sign any of them out, which stops its token at once:
//! requests look the token up every time, and the open sockets of that session are closed
//! through [`AppState::revoked`](crate::state::Inner::revoked).
//!
//! Passwords are hashed with argon2id (the `argon2` crate's defaults, OWASP's first
//! choice: 19 MiB, 2 passes, 1 lane) on the blocking pool, since one hash takes tens of
//! milliseconds. A sign-in's answer never says whether the username or the password was
//! wrong; an unknown username costs the same hash as a known one, so timing does not say
//! it either. Sign-ins are limited per client address (`limits::Class::SignIn`) and per
//! account ([`crate::limits::Limits::sign_in`]), so a password cannot be guessed quickly
//! from one address nor slowly from many.
//!
//! A password is hashed in Unicode's NFKC form (as NIST SP 800-63B advises), so that the
//! same password typed on another keyboard or system (a precomposed `é` or an `e` with a
//! combining accent, full-width letters from an input method) still signs in. An account
//! made before that keeps its hash of the password as typed, which is tried second.

use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use protocol::{AccountInfo, Credentials, DeviceInfo, PlayerInfo, SignInResponse};
use store::{AccountRecord, Claim};
use unicode_normalization::UnicodeNormalization;

use crate::auth;
use crate::error::ApiError;
use crate::extract::{Body, Signed};
use crate::state::{AppState, now_ms};
use crate::wire;

pub const MIN_USERNAME: usize = 3;
pub const MAX_USERNAME: usize = 24;
pub const MIN_PASSWORD: usize = 10;
pub const MAX_PASSWORD: usize = 128;
/// Different characters a password needs (`aaaaaaaaaa`, `1212121212` are refused).
pub const MIN_DISTINCT: usize = 5;

/// Passwords of ten characters or more that lists of leaked passwords put near the top;
/// compared without regard to case. Shorter ones are refused by length already.
const COMMON: &[&str] = &[
    "1234567890",
    "12345678910",
    "123456789a",
    "0123456789",
    "0987654321",
    "1q2w3e4r5t",
    "1qaz2wsx3edc",
    "qwertyuiop",
    "qwerty12345",
    "qwerty123456",
    "asdfghjkl1",
    "zxcvbnm123",
    "password12",
    "password123",
    "password1234",
    "password!1",
    "passw0rd123",
    "iloveyou12",
    "iloveyou123",
    "abcdefghij",
    "abcd123456",
    "abc1234567",
    "football123",
    "baseball123",
    "welcome123",
    "sunshine123",
    "princess123",
    "michael123",
    "superman123",
    "letmein123",
    "trustno1234",
    "starwars123",
    "dragon1234",
    "monkey1234",
    "master1234",
    "qazwsxedcrfv",
    "1q2w3e4r5t6y",
    "computer123",
    "internet123",
    "fibonacci1",
    "fibonacci123",
    "fibonaccicards",
];

/// Checks a username and returns it trimmed with its key (the form that must be unique):
/// `bad_username` otherwise.
pub fn username(name: &str) -> Result<(String, String), ApiError> {
    let name = name.trim();
    let n = name.chars().count();
    let ok_chars = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    let ok_start = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric());
    if !(MIN_USERNAME..=MAX_USERNAME).contains(&n) || !ok_chars || !ok_start {
        return Err(ApiError::BadAccount(
            "bad_username",
            format!(
                "a username has {MIN_USERNAME} to {MAX_USERNAME} characters: ASCII letters, \
                 digits, '_', '.' and '-', beginning with a letter or a digit"
            ),
        ));
    }
    Ok((name.to_string(), name.to_ascii_lowercase()))
}

/// Checks a new password against the rules `weak_password` names, in this order: length,
/// how many different characters, the username inside it, the common list.
pub fn check_password(password: &str, username_key: &str) -> Result<(), ApiError> {
    let weak = |why: String| Err(ApiError::BadAccount("weak_password", why));
    let n = password.chars().count();
    if n < MIN_PASSWORD {
        return weak(format!(
            "a password needs at least {MIN_PASSWORD} characters (this one has {n})"
        ));
    }
    if n > MAX_PASSWORD {
        return weak(format!("a password has at most {MAX_PASSWORD} characters"));
    }
    let distinct: std::collections::BTreeSet<char> = password.chars().collect();
    if distinct.len() < MIN_DISTINCT {
        return weak(format!(
            "a password needs at least {MIN_DISTINCT} different characters"
        ));
    }
    let lower = password.to_lowercase();
    if lower.contains(username_key) {
        return weak("a password may not contain the username".into());
    }
    if COMMON.contains(&lower.as_str()) {
        return weak("this password is one of the most common ones: choose another".into());
    }
    Ok(())
}

/// A password as it is checked and hashed: its NFKC form (see the module's header).
pub fn normalized(password: &str) -> String {
    password.nfkc().collect()
}

/// Whether `password` is the one `hash` was made of: its [`normalized`] form, else (an
/// account made before passwords were normalized) the form it was typed in. Timed as
/// [`verify_password`], an unknown account (`None`) included.
pub async fn password_matches(password: String, hash: Option<String>) -> bool {
    let nfkc = normalized(&password);
    if nfkc == password {
        return verify_password(password, hash).await;
    }
    verify_password(nfkc, hash.clone()).await || verify_password(password, hash).await
}

/// The argon2id PHC string of `password`, on the blocking pool.
pub async fn hash_password(password: String) -> Result<String, ApiError> {
    tokio::task::spawn_blocking(move || {
        let mut salt = [0u8; 16];
        getrandom::fill(&mut salt).map_err(|_| ApiError::Internal)?;
        let salt = SaltString::encode_b64(&salt).map_err(|_| ApiError::Internal)?;
        Argon2::default()
            .hash_password(password.as_bytes(), &salt)
            .map(|h| h.to_string())
            .map_err(|e| {
                tracing::error!(error = %e, "argon2 hash failed");
                ApiError::Internal
            })
    })
    .await
    .map_err(|_| ApiError::Internal)?
}

/// Whether `password` matches the PHC string `hash` (argon2id with the parameters written
/// in it), on the blocking pool. `None` (no such account) checks against a hash of a
/// random password, so both cases take as long.
pub async fn verify_password(password: String, hash: Option<String>) -> bool {
    let hash = match hash {
        Some(h) => h,
        None => decoy_hash().await,
    };
    tokio::task::spawn_blocking(move || {
        PasswordHash::new(&hash).is_ok_and(|parsed| {
            Argon2::default()
                .verify_password(password.as_bytes(), &parsed)
                .is_ok()
        })
    })
    .await
    .unwrap_or(false)
}

/// A hash of a random password, made once: what an unknown username is checked against.
async fn decoy_hash() -> String {
    static DECOY: tokio::sync::OnceCell<String> = tokio::sync::OnceCell::const_new();
    DECOY
        .get_or_init(|| async {
            hash_password(auth::random_hex(16))
                .await
                .unwrap_or_default()
        })
        .await
        .clone()
}

/// A short name for the device a request comes from, from its `User-Agent`: "Firefox on
/// Linux", or the agent's first 60 characters when it is no browser we know.
pub fn device_label(headers: &HeaderMap) -> String {
    let ua = headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .trim();
    if ua.is_empty() {
        return "unknown device".into();
    }
    // Order matters: Edge and Opera also say Chrome, Chrome also says Safari.
    let browser = [
        ("Edg/", "Edge"),
        ("OPR/", "Opera"),
        ("Firefox/", "Firefox"),
        ("HeadlessChrome/", "Headless Chrome"),
        ("Chrome/", "Chrome"),
        ("Safari/", "Safari"),
    ]
    .iter()
    .find(|(k, _)| ua.contains(k))
    .map(|(_, v)| *v);
    let system = [
        ("Android", "Android"),
        ("iPhone", "iPhone"),
        ("iPad", "iPad"),
        ("Windows", "Windows"),
        ("Mac OS X", "macOS"),
        ("CrOS", "ChromeOS"),
        ("Linux", "Linux"),
    ]
    .iter()
    .find(|(k, _)| ua.contains(k))
    .map(|(_, v)| *v);
    match (browser, system) {
        (Some(b), Some(s)) => format!("{b} on {s}"),
        (Some(b), None) => b.to_string(),
        _ => ua.chars().take(60).collect(),
    }
}

#[utoipa::path(
    get,
    path = "/api/account",
    tag = "players",
    summary = "The signed-in player and its username, if claimed",
    security(("cookie" = []), ("bearer" = [])),
    responses(
        (status = 200, description = "the player; `username` is null for a guest", body = wire::AccountInfo),
        (status = 401, description = "`code`: unauthorized (no valid token)", body = wire::ErrorBody),
    ),
)]
pub async fn account(
    State(app): State<AppState>,
    Signed(who, _): Signed,
) -> Result<Json<AccountInfo>, ApiError> {
    let username = app.store.account_of(who.id).await?.map(|a| a.username);
    let bot = app.core.is_bot_account(who.id);
    Ok(Json(AccountInfo {
        player: PlayerInfo {
            id: who.id,
            name: who.name,
        },
        username,
        bot,
    }))
}

#[utoipa::path(
    post,
    path = "/api/account/claim",
    tag = "players",
    summary = "Claim the signed-in guest as an account (username and password)",
    security(("cookie" = []), ("bearer" = [])),
    request_body = wire::Credentials,
    responses(
        (status = 201, description = "the player is claimed; this device stays signed in", body = wire::AccountInfo),
        (status = 400, description = "`code`: malformed, bad_username, weak_password (the message names the rule)", body = wire::ErrorBody),
        (status = 401, description = "`code`: unauthorized (no valid token)", body = wire::ErrorBody),
        (status = 409, description = "`code`: username_taken (by another account, in any case), already_claimed (this player has an account)", body = wire::ErrorBody),
        (status = 413, description = "`code`: too_large", body = wire::ErrorBody),
    ),
)]
pub async fn claim(
    State(app): State<AppState>,
    Signed(who, _): Signed,
    Body(req): Body<Credentials>,
) -> Result<(StatusCode, Json<AccountInfo>), ApiError> {
    let (name, key) = username(&req.username)?;
    let password = normalized(&req.password);
    check_password(&password, &key)?;
    // A cheap refusal before the costly hash.
    if app.store.account_of(who.id).await?.is_some() {
        return Err(already_claimed());
    }
    let record = AccountRecord {
        player_id: who.id,
        username: name.clone(),
        username_key: key,
        password_hash: hash_password(password).await?,
        created_at: now_ms(),
    };
    match app.store.create_account(&record).await? {
        Claim::Claimed => {}
        Claim::AlreadyClaimed => return Err(already_claimed()),
        Claim::UsernameTaken => {
            return Err(ApiError::conflict(
                "username_taken",
                format!("the username {name:?} is taken (usernames ignore case): choose another"),
            ));
        }
    }
    tracing::info!(player = %who.id, "account claimed");
    Ok((
        StatusCode::CREATED,
        Json(AccountInfo {
            player: PlayerInfo {
                id: who.id,
                name: who.name,
            },
            username: Some(name),
            bot: false,
        }),
    ))
}

/// What a bot account's API tokens are called in the device list.
pub const BOT_TOKEN_LABEL: &str = "bot API token";

#[utoipa::path(
    post,
    path = "/api/account/bot",
    tag = "players",
    summary = "Make the signed-in account a bot account (irreversible; docs/protocol.md §2.26)",
    security(("cookie" = []), ("bearer" = [])),
    responses(
        (status = 200, description = "the account is a bot account now (`bot`: true)", body = wire::AccountInfo),
        (status = 401, description = "`code`: unauthorized (no valid token)", body = wire::ErrorBody),
        (status = 409, description = "`code`: not_claimed (a guest: claim an account first), already_bot, has_played (only an account that holds no seat at any table may become a bot account)", body = wire::ErrorBody),
    ),
)]
pub async fn make_bot(
    State(app): State<AppState>,
    Signed(who, _): Signed,
) -> Result<Json<AccountInfo>, ApiError> {
    use store::BotConversion as B;
    match app.store.make_bot(who.id, now_ms()).await? {
        B::Done => {}
        B::NoPlayer => return Err(ApiError::Unauthorized),
        B::NotClaimed => {
            return Err(ApiError::conflict(
                "not_claimed",
                "only a claimed account may become a bot account: claim one first",
            ));
        }
        B::AlreadyBot => {
            return Err(ApiError::conflict(
                "already_bot",
                "this account is a bot account already",
            ));
        }
        B::HasPlayed => {
            return Err(ApiError::conflict(
                "has_played",
                "only an account that holds no seat at any table may become a bot account; \
                 claim a new one for the bot",
            ));
        }
    }
    app.core.mark_bot_account(who.id);
    let username = app.store.account_of(who.id).await?.map(|a| a.username);
    tracing::info!(player = %who.id, "became a bot account");
    Ok(Json(AccountInfo {
        player: PlayerInfo {
            id: who.id,
            name: who.name,
        },
        username,
        bot: true,
    }))
}

#[utoipa::path(
    post,
    path = "/api/account/bot/token",
    tag = "players",
    summary = "A new API token for the signed-in bot account, shown once",
    security(("cookie" = []), ("bearer" = [])),
    responses(
        (status = 201, description = "the token (only its SHA-256 is stored): send it as `Authorization: Bearer`", body = wire::BotToken),
        (status = 401, description = "`code`: unauthorized (no valid token)", body = wire::ErrorBody),
        (status = 409, description = "`code`: not_a_bot (make the account a bot account first), too_many_tokens (at most 10)", body = wire::ErrorBody),
    ),
)]
pub async fn bot_token(
    State(app): State<AppState>,
    Signed(who, _): Signed,
) -> Result<(StatusCode, Json<protocol::BotToken>), ApiError> {
    if !app.core.is_bot_account(who.id) {
        return Err(not_a_bot());
    }
    let tokens = app
        .store
        .sessions_of(who.id)
        .await?
        .into_iter()
        .filter(|s| s.label == BOT_TOKEN_LABEL)
        .count();
    if tokens >= MAX_BOT_TOKENS {
        return Err(ApiError::conflict(
            "too_many_tokens",
            format!("a bot account has at most {MAX_BOT_TOKENS} API tokens: revoke one first"),
        ));
    }
    let token = auth::random_hex(32);
    let session = app
        .store
        .create_session(who.id, &auth::hash_token(&token), BOT_TOKEN_LABEL, now_ms())
        .await?;
    tracing::info!(player = %who.id, "bot API token made");
    Ok((
        StatusCode::CREATED,
        Json(protocol::BotToken {
            id: session.id,
            token,
        }),
    ))
}

/// API tokens one bot account may hold.
pub const MAX_BOT_TOKENS: usize = 10;

fn not_a_bot() -> ApiError {
    ApiError::conflict(
        "not_a_bot",
        "this account is not a bot account: POST /api/account/bot first",
    )
}

#[utoipa::path(
    delete,
    path = "/api/account/bot/token/{id}",
    tag = "players",
    summary = "Revoke one of the bot account's API tokens (its sockets close)",
    security(("cookie" = []), ("bearer" = [])),
    params(("id" = String, Path, description = "the token's id, from its creation or the device list")),
    responses(
        (status = 204, description = "the token no longer works and its open sockets were closed (code 4001)"),
        (status = 401, description = "`code`: unauthorized (no valid token)", body = wire::ErrorBody),
        (status = 404, description = "`code`: device_not_found (no API token of this account has this id)", body = wire::ErrorBody),
        (status = 409, description = "`code`: not_a_bot", body = wire::ErrorBody),
    ),
)]
pub async fn revoke_bot_token(
    State(app): State<AppState>,
    Signed(who, _): Signed,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    if !app.core.is_bot_account(who.id) {
        return Err(not_a_bot());
    }
    let is_token = app
        .store
        .sessions_of(who.id)
        .await?
        .iter()
        .any(|s| s.id == id && s.label == BOT_TOKEN_LABEL);
    if !is_token || !revoke(&app, who.id, &id).await? {
        return Err(ApiError::DeviceNotFound(id));
    }
    Ok(StatusCode::NO_CONTENT)
}

fn already_claimed() -> ApiError {
    ApiError::conflict(
        "already_claimed",
        "this player already has an account: sign in with it on other devices",
    )
}

#[utoipa::path(
    post,
    path = "/api/account/signin",
    tag = "players",
    summary = "Sign in to an account on this device",
    request_body = wire::Credentials,
    responses(
        (status = 200, description = "the account's player and a new token for this device, also set as the `fib_token` cookie", body = wire::SignInResponse),
        (status = 400, description = "`code`: malformed", body = wire::ErrorBody),
        (status = 401, description = "`code`: bad_credentials (the username or the password is wrong; never which)", body = wire::ErrorBody),
        (status = 413, description = "`code`: too_large", body = wire::ErrorBody),
        (status = 429, description = "`code`: rate_limited (sign-ins from this address), too_many_attempts (sign-ins to this account)", body = wire::ErrorBody, headers(("Retry-After" = u64, description = "seconds to wait before trying again"))),
    ),
)]
pub async fn sign_in(
    State(app): State<AppState>,
    headers: HeaderMap,
    Body(req): Body<Credentials>,
) -> Result<Response, ApiError> {
    // A username that cannot exist is a wrong username like any other.
    let key = username(&req.username)
        .map(|(_, k)| k)
        .unwrap_or_else(|_| req.username.trim().to_lowercase());
    app.limits
        .sign_in(&key)
        .inspect_err(|_| app.metrics.limited("signin_account"))?;
    let account = app.store.account_by_key(&key).await?;
    let hash = account.as_ref().map(|a| a.password_hash.clone());
    let ok = password_matches(req.password, hash).await;
    let (Some(account), true) = (account, ok) else {
        app.metrics.rejected("bad_credentials");
        return Err(ApiError::BadCredentials);
    };
    let player = app
        .store
        .player(account.player_id)
        .await?
        .ok_or(ApiError::Internal)?;
    let token = auth::random_hex(32);
    app.store
        .create_session(
            player.id,
            &auth::hash_token(&token),
            &device_label(&headers),
            now_ms(),
        )
        .await?;
    tracing::info!(player = %player.id, "signed in");
    let body = SignInResponse {
        player: PlayerInfo {
            id: player.id,
            name: player.name,
        },
        username: account.username,
        token: token.clone(),
    };
    Ok((
        [(
            header::SET_COOKIE,
            auth::set_cookie(&token, app.config.secure_cookies),
        )],
        Json(body),
    )
        .into_response())
}

#[utoipa::path(
    post,
    path = "/api/account/signout",
    tag = "players",
    summary = "Sign this device out (its token stops working; its sockets close)",
    security(("cookie" = []), ("bearer" = [])),
    responses(
        (status = 204, description = "signed out; the cookie is cleared"),
        (status = 401, description = "`code`: unauthorized (no valid token)", body = wire::ErrorBody),
    ),
)]
pub async fn sign_out(
    State(app): State<AppState>,
    Signed(who, session): Signed,
) -> Result<Response, ApiError> {
    revoke(&app, who.id, &session).await?;
    Ok((
        StatusCode::NO_CONTENT,
        [(
            header::SET_COOKIE,
            auth::clear_cookie(app.config.secure_cookies),
        )],
    )
        .into_response())
}

#[utoipa::path(
    get,
    path = "/api/account/devices",
    tag = "players",
    summary = "The devices signed in as this player",
    security(("cookie" = []), ("bearer" = [])),
    responses(
        (status = 200, description = "every signed-in device, the most recently seen first; `current` marks the one asking", body = Vec<wire::DeviceInfo>),
        (status = 401, description = "`code`: unauthorized (no valid token)", body = wire::ErrorBody),
    ),
)]
pub async fn devices(
    State(app): State<AppState>,
    Signed(who, session): Signed,
) -> Result<Json<Vec<DeviceInfo>>, ApiError> {
    let list = app.store.sessions_of(who.id).await?;
    Ok(Json(
        list.into_iter()
            .map(|s| DeviceInfo {
                current: s.id == session,
                id: s.id,
                label: s.label,
                created_at: s.created_at,
                last_seen_at: s.last_seen_at,
            })
            .collect(),
    ))
}

#[utoipa::path(
    delete,
    path = "/api/account/devices/{id}",
    tag = "players",
    summary = "Sign a device out remotely",
    security(("cookie" = []), ("bearer" = [])),
    params(("id" = String, Path, description = "the device's id from the list")),
    responses(
        (status = 204, description = "the device's token no longer works and its open sockets were closed (code 4001)"),
        (status = 401, description = "`code`: unauthorized (no valid token)", body = wire::ErrorBody),
        (status = 404, description = "`code`: device_not_found", body = wire::ErrorBody),
    ),
)]
pub async fn revoke_device(
    State(app): State<AppState>,
    Signed(who, _): Signed,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    if !revoke(&app, who.id, &id).await? {
        return Err(ApiError::DeviceNotFound(id));
    }
    Ok(StatusCode::NO_CONTENT)
}

/// Ends a session and closes its sockets; whether it existed.
async fn revoke(app: &AppState, player: uuid::Uuid, session: &str) -> Result<bool, ApiError> {
    let gone = app.store.revoke_session(player, session).await?;
    if gone {
        // No socket listening is fine.
        let _ = app.revoked.send(session.to_string());
        tracing::info!(player = %player, "device signed out");
    }
    Ok(gone)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code<T>(r: Result<T, ApiError>) -> &'static str {
        match r {
            Ok(_) => "ok",
            Err(e) => e.code(),
        }
    }

    #[test]
    fn usernames() {
        assert_eq!(
            username("  Ada_L.ovelace-1 ").unwrap(),
            ("Ada_L.ovelace-1".into(), "ada_l.ovelace-1".into())
        );
        assert_eq!(username("ADA").unwrap().1, username("ada").unwrap().1);
        for bad in [
            "ab",
            "",
            "_ada",
            ".ada",
            "ada lovelace",
            "adá",
            "a\u{200B}da",
            &"x".repeat(25),
        ] {
            assert_eq!(code(username(bad)), "bad_username", "{bad:?}");
        }
        assert_eq!(code(username(&"x".repeat(24))), "ok");
    }

    #[test]
    fn weak_passwords_are_named() {
        let msg = |p: &str| check_password(p, "ada").unwrap_err().to_string();
        assert!(msg("short1!").contains("at least 10 characters"));
        assert!(msg("abababababab").contains("different characters"));
        assert!(msg("my-ADA-secret").contains("username"));
        assert!(msg("Password123").contains("most common"));
        assert!(msg(&"abcdef".repeat(22)).contains("at most 128"));
        assert_eq!(code(check_password("correct horse battery", "ada")), "ok");
        assert_eq!(code(check_password("Zoë-Ødegård-42", "ada")), "ok");
    }

    #[tokio::test]
    async fn hashes_are_argon2id_and_verify() {
        let h = hash_password("correct horse battery".into()).await.unwrap();
        assert!(h.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{h}");
        assert_ne!(
            h,
            hash_password("correct horse battery".into()).await.unwrap(),
            "salted"
        );
        assert!(verify_password("correct horse battery".into(), Some(h.clone())).await);
        assert!(!verify_password("correct horse batterY".into(), Some(h)).await);
        assert!(!verify_password("anything".into(), None).await);
        assert!(!verify_password("x".into(), Some("not a hash".into())).await);
    }

    /// A password signs in however its letters were composed: an accent precomposed or
    /// combining, full-width letters; an account hashed before normalization still signs
    /// in with the password as it was typed then.
    #[tokio::test]
    async fn passwords_are_compared_in_nfkc() {
        let typed = "caf\u{e9} \u{ff26}ibonacci 21"; // é precomposed, a full-width F
        let h = hash_password(normalized(typed)).await.unwrap();
        assert!(password_matches(typed.into(), Some(h.clone())).await);
        assert!(password_matches("cafe\u{301} Fibonacci 21".into(), Some(h.clone())).await);
        assert!(!password_matches("cafe Fibonacci 21".into(), Some(h)).await);
        // Made before: the hash of the password as typed (not in NFKC).
        let old = hash_password(typed.into()).await.unwrap();
        assert!(password_matches(typed.into(), Some(old.clone())).await);
        assert!(!password_matches("cafe Fibonacci 21".into(), Some(old)).await);
        assert!(!password_matches(typed.into(), None).await);
    }

    #[test]
    fn device_labels() {
        let label = |ua: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::USER_AGENT, ua.parse().unwrap());
            device_label(&h)
        };
        assert_eq!(
            label("Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"),
            "Firefox on Linux"
        );
        assert_eq!(
            label(
                "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1"
            ),
            "Safari on iPhone"
        );
        assert_eq!(
            label(
                "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36 Edg/120.0"
            ),
            "Edge on Windows"
        );
        assert_eq!(label("curl/8.5.0"), "curl/8.5.0");
        assert_eq!(device_label(&HeaderMap::new()), "unknown device");
    }
}
