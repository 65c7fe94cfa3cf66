//! Accounts end to end, on every database: a guest claims an account (with the errors for
//! a bad username, a weak password, a taken name and a second claim), signs in on another
//! device as the same player, lists its devices and signs one out remotely, which refuses
//! that device's token at once and closes its open sockets; sign-in failures never say
//! which part was wrong, and sign-ins are limited per account and per address.

use serde_json::{Value, json};

use crate::support::*;

/// A client with no token yet (a new device).
async fn sign_in(base: &str, username: &str, password: &str) -> (u16, Value, Option<String>) {
    let r = reqwest::Client::new()
        .post(format!("{base}/api/account/signin"))
        .header(
            "user-agent",
            "Mozilla/5.0 (Linux; Android 14) Chrome/120.0 Mobile Safari/537.36",
        )
        .json(&json!({"username": username, "password": password}))
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let cookie = r
        .headers()
        .get("set-cookie")
        .map(|v| v.to_str().unwrap().to_string());
    (status, r.json().await.unwrap_or(Value::Null), cookie)
}

async fn delete(p: &Player, path: &str) -> (u16, Value) {
    let r = p
        .http
        .delete(format!("{}{path}", p.base))
        .bearer_auth(&p.token)
        .send()
        .await
        .unwrap();
    let s = r.status().as_u16();
    (s, r.json().await.unwrap_or(Value::Null))
}

const PASSWORD: &str = "correct horse battery";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claim_sign_in_devices_and_remote_sign_out() {
    for db in databases().await {
        let server = Server::start(&db).await;
        let ada = Player::guest(&server.base, &server.ws, "Ada").await;
        let (s, v) = ada.get("/api/account").await;
        assert_eq!((s, &v["username"]), (200, &Value::Null), "{v}");

        // Refusals, each with its code, and nothing claimed by them.
        let claim = |u: &str, p: &str| json!({"username": u, "password": p});
        let (s, v) = ada.post("/api/account/claim", claim("a", PASSWORD)).await;
        assert_eq!((s, v["code"].as_str()), (400, Some("bad_username")), "{v}");
        let (s, v) = ada.post("/api/account/claim", claim("Ada", "short")).await;
        assert_eq!((s, v["code"].as_str()), (400, Some("weak_password")), "{v}");
        assert!(
            v["message"].as_str().unwrap().contains("10 characters"),
            "{v}"
        );
        let (s, v) = ada
            .post("/api/account/claim", claim("Ada", "password123"))
            .await;
        assert_eq!(v["code"], "weak_password", "{s} {v}");
        let (s, v) = ada
            .post("/api/account/claim", claim("Ada", "Ada-is-my-name"))
            .await;
        assert_eq!(v["code"], "weak_password", "{s} {v}");
        let (s, v) = ada
            .post("/api/account/claim", json!({"username": "Ada"}))
            .await;
        assert_eq!((s, v["code"].as_str()), (400, Some("malformed")), "{v}");
        let anonymous = reqwest::Client::new()
            .post(format!("{}/api/account/claim", server.base))
            .json(&claim("Nobody", PASSWORD))
            .send()
            .await
            .unwrap();
        assert_eq!(anonymous.status(), 401);

        let (s, v) = ada
            .post("/api/account/claim", claim("Ada.L", PASSWORD))
            .await;
        assert_eq!(s, 201, "{v}");
        assert_eq!(v["username"], "Ada.L");
        assert_eq!(v["player"]["id"], ada.id.as_str());
        let (s, v) = ada
            .post("/api/account/claim", claim("Ada2", PASSWORD))
            .await;
        assert_eq!(
            (s, v["code"].as_str()),
            (409, Some("already_claimed")),
            "{v}"
        );
        // Usernames are unique whatever their case.
        let bob = Player::guest(&server.base, &server.ws, "Bob").await;
        let (s, v) = bob
            .post("/api/account/claim", claim("ADA.l", PASSWORD))
            .await;
        assert_eq!(
            (s, v["code"].as_str()),
            (409, Some("username_taken")),
            "{v}"
        );
        let (_, card) = bob.get(&format!("/api/players/{}", ada.id)).await;
        assert_eq!(card["claimed"], true, "{card}");
        assert_eq!(card["name"], "Ada");
        assert!(
            card.get("username").is_none(),
            "the username is not public: {card}"
        );

        // Wrong password and unknown username: the same answer.
        let (s1, wrong, _) = sign_in(&server.base, "ada.l", "not the password").await;
        let (s2, unknown, _) = sign_in(&server.base, "nobody", PASSWORD).await;
        assert_eq!((s1, s2), (401, 401));
        assert_eq!(wrong, unknown);
        assert_eq!(wrong["code"], "bad_credentials");

        // Another device: the same player, with a token of its own (case ignored).
        let (s, v, cookie) = sign_in(&server.base, "ADA.L", PASSWORD).await;
        assert_eq!(s, 200, "{v}");
        assert_eq!(v["player"]["id"], ada.id.as_str());
        assert_eq!(v["player"]["name"], "Ada");
        assert_eq!(v["username"], "Ada.L");
        assert!(cookie.unwrap().contains("HttpOnly"));
        let phone = Player {
            token: v["token"].as_str().unwrap().to_string(),
            ..ada.clone()
        };
        assert_ne!(phone.token, ada.token);
        let (_, me) = phone.get("/api/me").await;
        assert_eq!(me["id"], ada.id.as_str());

        // Both devices are listed, the asking one marked.
        let (s, list) = ada.get("/api/account/devices").await;
        assert_eq!(s, 200, "{list}");
        let list = list.as_array().unwrap().clone();
        assert_eq!(list.len(), 2, "{list:?}");
        let phone_entry = list.iter().find(|d| d["current"] == false).unwrap();
        assert_eq!(phone_entry["label"], "Chrome on Android");
        let phone_id = phone_entry["id"].as_str().unwrap().to_string();
        let (_, from_phone) = phone.get("/api/account/devices").await;
        let mine = from_phone
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["current"] == true)
            .unwrap()
            .clone();
        assert_eq!(mine["id"], phone_id.as_str());

        // The phone has a table and the lobby open; the laptop signs it out.
        let table = bob.create_trump(2, false).await;
        let mut at_table = phone.connect(&table).await;
        at_table.next_state().await;
        let mut in_lobby = lobby(&phone).await;
        lobby_until(&mut in_lobby, "tables").await;
        // Someone else cannot sign Ada's device out, nor can a made-up id.
        let (s, v) = delete(&bob, &format!("/api/account/devices/{phone_id}")).await;
        assert_eq!(
            (s, v["code"].as_str()),
            (404, Some("device_not_found")),
            "{v}"
        );
        let (s, _) = delete(&ada, &format!("/api/account/devices/{phone_id}")).await;
        assert_eq!(s, 204);
        assert_eq!(at_table.close_code().await, Some(4001));
        assert_eq!(in_lobby.close_code().await, Some(4001));
        let (s, v) = phone.get("/api/me").await;
        assert_eq!((s, v["code"].as_str()), (401, Some("unauthorized")));
        let (s, _) = delete(&ada, &format!("/api/account/devices/{phone_id}")).await;
        assert_eq!(s, 404, "signed out once only");
        let (_, list) = ada.get("/api/account/devices").await;
        assert_eq!(list.as_array().unwrap().len(), 1);

        // Signing out here: the cookie is cleared and the token refused.
        let r = ada
            .http
            .post(format!("{}/api/account/signout", server.base))
            .bearer_auth(&ada.token)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 204);
        let cleared = r.headers()["set-cookie"].to_str().unwrap().to_string();
        assert!(cleared.contains("Max-Age=0"), "{cleared}");
        assert_eq!(ada.get("/api/me").await.0, 401);
        // The account lives on: signing in again finds the same player.
        let (s, v, _) = sign_in(&server.base, "ada.l", PASSWORD).await;
        assert_eq!(
            (s, v["player"]["id"].as_str()),
            (200, Some(ada.id.as_str()))
        );
        server.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_ins_are_limited_per_account_and_per_address() {
    let db = sqlite_db();
    let server = Server::start_with(&db, |c| c.signins_per_account = 3).await;
    let ada = Player::guest(&server.base, &server.ws, "Ada").await;
    let (s, _) = ada
        .post(
            "/api/account/claim",
            json!({"username": "ada", "password": PASSWORD}),
        )
        .await;
    assert_eq!(s, 201);
    for _ in 0..3 {
        assert_eq!(sign_in(&server.base, "ada", "wrong password!").await.0, 401);
    }
    // Now even the right password waits: the limit is on the account, not on failures.
    let (s, v, _) = sign_in(&server.base, "ADA", PASSWORD).await;
    assert_eq!(
        (s, v["code"].as_str()),
        (429, Some("too_many_attempts")),
        "{v}"
    );
    // An account that does not exist is limited the same (nothing tells them apart).
    for _ in 0..3 {
        assert_eq!(sign_in(&server.base, "ghost", PASSWORD).await.0, 401);
    }
    assert_eq!(sign_in(&server.base, "ghost", PASSWORD).await.0, 429);
    let text = metrics(&server).await;
    assert!(text.contains("signin_account"), "counted in /metrics");
    server.stop().await;

    // Per address: every attempt counts, whatever the account.
    let server = Server::start_with(&sqlite_db(), |c| c.signins_per_minute = 2).await;
    for name in ["a1", "a2"] {
        assert_eq!(sign_in(&server.base, name, PASSWORD).await.0, 401);
    }
    let r = reqwest::Client::new()
        .post(format!("{}/api/account/signin", server.base))
        .json(&json!({"username": "a3", "password": PASSWORD}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 429);
    assert!(r.headers().contains_key("retry-after"));
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["code"], "rate_limited");
    server.stop().await;
}
