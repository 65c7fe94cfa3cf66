//! Delivery of the browser client (`server::assets`): compressed answers, versioned asset
//! URLs with the right caching, security headers on every response, and a start-up session
//! question that never fails.

use serde_json::Value;

use crate::support::*;

async fn get(url: &str, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut req = reqwest::Client::new().get(url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    req.send().await.unwrap()
}

fn header<'a>(res: &'a reqwest::Response, name: &str) -> &'a str {
    res.headers()
        .get(name)
        .map(|v| v.to_str().unwrap())
        .unwrap_or("")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn assets_are_versioned_compressed_cached_and_protected() {
    let db = sqlite_db();
    let server = Server::start(&db).await;
    let base = &server.base;

    // The index page: revalidated every time, names app.js by version, preloads its imports.
    let res = get(&format!("{base}/"), &[]).await;
    assert_eq!(res.status(), 200);
    assert_eq!(header(&res, "cache-control"), "no-cache");
    let csp = header(&res, "content-security-policy").to_string();
    for part in [
        "default-src 'self'",
        "frame-ancestors 'none'",
        "object-src 'none'",
        "style-src 'self'",
    ] {
        assert!(csp.contains(part), "{csp}");
    }
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    assert_eq!(header(&res, "x-content-type-options"), "nosniff");
    assert_eq!(header(&res, "x-frame-options"), "DENY");
    assert_eq!(header(&res, "referrer-policy"), "same-origin");
    let index = res.text().await.unwrap();
    assert!(index.contains("<meta name=\"description\""));
    assert!(index.contains("<script type=\"importmap\">"));
    assert!(index.contains("rel=\"modulepreload\" href=\"/dom.js?v="));
    let v = index
        .split("src=\"/app.js?v=")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .to_string();
    assert_eq!(v.len(), 12, "{v}");

    // The current version is cached for a year; any other URL is revalidated.
    let res = get(&format!("{base}/app.js?v={v}"), &[]).await;
    assert_eq!(res.status(), 200);
    assert_eq!(
        header(&res, "cache-control"),
        "public, max-age=31536000, immutable"
    );
    for url in ["/app.js", "/app.js?v=000000000000"] {
        let res = get(&format!("{base}{url}"), &[]).await;
        assert_eq!(header(&res, "cache-control"), "no-cache", "{url}");
    }
    let res = get(&format!("{base}/app.js"), &[]).await;
    let last_modified = header(&res, "last-modified").to_string();
    assert!(!last_modified.is_empty());
    let res = get(
        &format!("{base}/app.js"),
        &[("if-modified-since", &last_modified)],
    )
    .await;
    assert_eq!(res.status(), 304);

    // Compression as the client asks: brotli, gzip, or none.
    for (accept, encoding) in [("br", "br"), ("gzip", "gzip"), ("identity", "")] {
        let res = get(
            &format!("{base}/app.js?v={v}"),
            &[("accept-encoding", accept)],
        )
        .await;
        assert_eq!(header(&res, "content-encoding"), encoding, "{accept}");
        let res = get(&format!("{base}/api/games"), &[("accept-encoding", accept)]).await;
        assert_eq!(header(&res, "content-encoding"), encoding, "{accept}");
        assert_eq!(header(&res, "cache-control"), "no-store");
    }
    let plain = get(&format!("{base}/app.js?v={v}"), &[]).await;
    let plain_len = plain.bytes().await.unwrap().len();
    let br = get(
        &format!("{base}/app.js?v={v}"),
        &[("accept-encoding", "br")],
    )
    .await;
    let br_len = br.bytes().await.unwrap().len();
    assert!(br_len * 2 < plain_len, "{br_len} of {plain_len} bytes");

    // Unknown files are a 404 page under the same policy.
    let res = get(&format!("{base}/no-such-file.js"), &[]).await;
    assert_eq!(res.status(), 404);
    assert!(header(&res, "content-security-policy").contains("frame-ancestors 'none'"));

    // The start-up question: 200 with null before signing in, the player after.
    let res = get(&format!("{base}/api/session"), &[]).await;
    assert_eq!(res.status(), 200);
    assert_eq!(res.json::<Value>().await.unwrap()["player"], Value::Null);
    let ada = Player::guest(&server.base, &server.ws, "Ada").await;
    let (s, me) = ada.get("/api/session").await;
    assert_eq!(s, 200);
    assert_eq!(me["player"]["name"], "Ada");
    server.stop().await;
}

/// A changed file gets a new version, so a browser holding the old one fetches it at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_file_gets_a_new_version() {
    let web = scratch_dir("web-copy");
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../web");
    copy_dir(&src, &web);
    // What follows `before` in `index`, up to the next quote.
    let after_text = |index: &str, before: &str| {
        index
            .split(before)
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .to_string()
    };
    let version = |index: &str| after_text(index, "\"/dom.js\":\"/dom.js?v=");
    let db = sqlite_db();
    let dir = web.clone();
    let server = Server::start_with(&db, move |c| c.web_dir = dir).await;
    let before = get(&format!("{}/", server.base), &[])
        .await
        .text()
        .await
        .unwrap();
    // The files change under the running server: a versioned URL still answers the bytes
    // of its version (cached for a year, they must be), the plain URL the file as it is.
    let dom = web.join("dom.js");
    let mut text = std::fs::read_to_string(&dom).unwrap();
    text.push_str("\n// a new release\n");
    std::fs::write(&dom, text).unwrap();
    let old = get(
        &format!("{}/dom.js?v={}", server.base, version(&before)),
        &[],
    )
    .await;
    assert_eq!(
        header(&old, "cache-control"),
        "public, max-age=31536000, immutable"
    );
    assert!(!old.text().await.unwrap().contains("a new release"));
    let now = get(&format!("{}/dom.js", server.base), &[]).await;
    assert!(now.text().await.unwrap().contains("a new release"));
    // The page names its client version as a whole (an open page compares it).
    let mark = |index: &str| after_text(index, "<meta name=\"fib-client\" content=\"");
    let build_before = mark(&before);
    server.stop().await;
    let dir = web.clone();
    let server = Server::start_with(&db, move |c| c.web_dir = dir).await;
    let after = get(&format!("{}/", server.base), &[])
        .await
        .text()
        .await
        .unwrap();
    assert_ne!(version(&before), version(&after));
    // app.js did not change, so its version stays.
    let app = |i: &str| {
        i.split("\"/app.js\":\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .to_string()
    };
    assert_eq!(app(&before), app(&after));
    assert_ne!(build_before, mark(&after), "the client as a whole changed");
    server.stop().await;
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            if e.file_name() != "node_modules" {
                copy_dir(&e.path(), &target);
            }
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}
