//! Delivery of the browser client from `web/`: versioned URLs, caching, security headers.
//!
//! The client has no build step, so the server does the little a bundler would. At start-up it
//! hashes every file under `web/` (SHA-256, first 12 hex digits) and rewrites `index.html`:
//! - the stylesheet and the entry module get `?v=<hash>`;
//! - an import map sends every module URL (`/dom.js`, `/games/trump.js`, …) to its versioned
//!   URL, so the modules' relative imports, static and dynamic, load the current version;
//! - `<link rel="modulepreload">` lists the entry module's static imports (and the few it
//!   imports dynamically at once), so the browser fetches them all at once instead of one
//!   level at a time.
//!
//! A versioned URL whose hash is current is cached for a year (`immutable`): a new release
//! changes the hash, so it is picked up at once. Everything else is revalidated (`no-cache`
//! with Last-Modified); API answers are never stored (`no-store`). Every response carries a
//! strict Content-Security-Policy (the import map is allowed by its hash, nothing else inline),
//! `frame-ancestors 'none'`, `nosniff` and a referrer policy. The files are read once: after
//! editing `web/`, restart the server.

use std::collections::BTreeMap;
use std::path::Path;

use base64::Engine;
use sha2::{Digest, Sha256};

/// The client's files as this process serves them.
#[derive(Debug, Default)]
pub struct Assets {
    /// URL path (`/app.js`) → version (12 hex digits of the file's SHA-256).
    versions: BTreeMap<String, String>,
    /// URL path → the file's bytes as they were hashed: a versioned URL (`?v=`, cached
    /// for a year) is served from these, so that its bytes are always the version's. A
    /// walk changed a file under a running server: its old URL then served the new bytes,
    /// to be cached under the old version for a year.
    files: BTreeMap<String, axum::body::Bytes>,
    /// The rewritten `index.html`.
    pub(crate) index: String,
    /// The Content-Security-Policy of every response.
    pub(crate) csp: String,
    /// Per game kind, `<link rel="modulepreload">`s of its modules (what a table page of
    /// that game needs beyond the start-up set).
    game_preloads: BTreeMap<String, String>,
}

fn version_of(bytes: &[u8]) -> String {
    hex::encode(&Sha256::digest(bytes)[..6])
}

fn walk(
    dir: &Path,
    root: &Path,
    out: &mut BTreeMap<String, String>,
    files: &mut BTreeMap<String, axum::body::Bytes>,
) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            walk(&path, root, out, files)?;
        } else {
            let rel = path.strip_prefix(root).expect("under the root");
            let url = format!("/{}", rel.to_string_lossy().replace('\\', "/"));
            let bytes = std::fs::read(&path)?;
            out.insert(url.clone(), version_of(&bytes));
            files.insert(url, bytes.into());
        }
    }
    Ok(())
}

/// Modules the entry module imports dynamically at once (not as static imports, so it runs
/// without waiting for them) that most pages need soon after: preloaded with the static
/// ones. Six requests after the page fit the browser's six connections to one host over
/// HTTP/1.1: the stylesheet, the entry and the four static imports; these come next.
const EAGER: &[&str] = &["/online.js"];

/// The page's first script, run before any module has arrived (a classic inline script,
/// allowed by its hash): it asks for the session and, on a table's page, for the table's
/// state, and preloads the game's modules as soon as that state names the game. The
/// modules take these answers over (`early` in `api.js`). Without it a table page waits
/// for four round trips in a row (page, modules, state, game module); with it, three
/// overlap. `__GAMES__` becomes each game's modules (the game's and what it imports that
/// the page does not preload already) by their versioned URLs.
const EARLY: &str = r#"(() => {
  try {
    const early = (window.fibEarly = {});
    const get = (path) => {
      const p = fetch(path, { credentials: 'same-origin', priority: 'high' });
      p.catch(() => {}); // the module that takes it over sees the failure
      return p;
    };
    // A table's own address carries the session in the page.
    if (!location.pathname.startsWith('/table/')) early.session = get('/api/session');
    const parts = location.hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
    if (parts[0] !== 'table' || !parts[1]) return;
    const id = parts[1];
    const invite = parts[2] || localStorage.getItem('fib.invite.' + id) || null;
    early.table = { id, invite };
    early.state = get('/api/tables/' + encodeURIComponent(id) + '/state' + (invite ? '?invite=' + encodeURIComponent(invite) : ''));
    const games = __GAMES__;
    early.state.then((r) => (r.ok ? r.clone().json() : null)).then((st) => {
      for (const href of games[st && st.table && st.table.game] || []) {
        const l = document.createElement('link');
        l.rel = 'modulepreload';
        l.href = href;
        document.head.append(l);
      }
    }).catch(() => {});
  } catch (e) {
    // An odd address or no storage: the modules ask for everything themselves.
  }
})();"#;

/// The relative static imports of a module (`import … from './x.js'`), as URL paths.
fn static_imports(web: &Path, url: &str) -> Vec<String> {
    let Ok(src) = std::fs::read_to_string(web.join(url.trim_start_matches('/'))) else {
        return Vec::new();
    };
    let base = url.rsplit_once('/').map_or("", |(b, _)| b);
    src.lines()
        .filter(|l| l.starts_with("import ") && l.contains(" from "))
        .filter_map(|l| l.split(['\'', '"']).nth(1))
        .filter_map(|spec| {
            let mut parts: Vec<&str> = base.split('/').filter(|p| !p.is_empty()).collect();
            for seg in spec.split('/') {
                match seg {
                    "." => {}
                    ".." => {
                        parts.pop();
                    }
                    s => parts.push(s),
                }
            }
            spec.starts_with('.')
                .then(|| format!("/{}", parts.join("/")))
        })
        .collect()
}

impl Assets {
    /// Reads `web_dir`. A directory without `index.html` serves an empty page (API-only use).
    pub fn load(web_dir: &Path) -> std::io::Result<Assets> {
        let mut versions = BTreeMap::new();
        let mut files = BTreeMap::new();
        if web_dir.is_dir() {
            walk(web_dir, web_dir, &mut versions, &mut files)?;
        }
        let index = std::fs::read_to_string(web_dir.join("index.html")).unwrap_or_default();
        let v = |u: &str| versions.get(u).cloned().unwrap_or_default();
        let imports: BTreeMap<&str, String> = versions
            .keys()
            .filter(|u| u.ends_with(".js"))
            .map(|u| (u.as_str(), format!("{u}?v={}", v(u))))
            .collect();
        let map = serde_json::json!({ "imports": imports }).to_string();
        // Everything the entry module needs before it can run, fetched in parallel, and
        // the modules it asks for at once without waiting for them ([`EAGER`]).
        let mut preload = Vec::new();
        let mut todo = static_imports(web_dir, "/app.js");
        todo.extend(EAGER.iter().map(|u| u.to_string()));
        while let Some(u) = todo.pop() {
            if preload.contains(&u) || !versions.contains_key(&u) {
                continue;
            }
            todo.extend(static_imports(web_dir, &u));
            preload.push(u);
        }
        preload.sort();
        let map_tag = format!("<script type=\"importmap\">{map}</script>\n");
        // Each game's modules beyond the start-up set, for the early script.
        let game_modules: BTreeMap<&str, Vec<String>> = games::catalogue()
            .iter()
            .map(|g| {
                let mut mods = Vec::new();
                let mut todo = vec![format!("/games/{}.js", g.kind)];
                while let Some(u) = todo.pop() {
                    if mods.contains(&u) || preload.contains(&u) || !versions.contains_key(&u) {
                        continue;
                    }
                    todo.extend(static_imports(web_dir, &u));
                    mods.push(u);
                }
                (
                    g.kind,
                    mods.iter().map(|u| format!("{u}?v={}", v(u))).collect(),
                )
            })
            .collect();
        let game_preloads = game_modules
            .iter()
            .map(|(kind, urls)| {
                let links: String = urls
                    .iter()
                    .map(|u| format!("  <link rel=\"modulepreload\" href=\"{u}\">\n"))
                    .collect();
                (kind.to_string(), links)
            })
            .collect();
        let early = EARLY.replace(
            "__GAMES__",
            &serde_json::to_string(&game_modules)
                .expect("serializes")
                .replace('<', "\\u003c"),
        );
        let early_tag = format!("<script>{early}</script>\n");
        let mut rest = String::new();
        // The game catalogue (the same for every visitor of this release) comes with the
        // page: one request fewer before the first render. A JSON data block is never run,
        // so the Content-Security-Policy has nothing to allow. `<` is escaped so that no
        // text in it can close the element.
        let games = serde_json::to_string(&games::catalogue())
            .expect("the catalogue serializes")
            .replace('<', "\\u003c");
        rest.push_str(&format!(
            "  <script type=\"application/json\" id=\"fib-games\">{games}</script>\n"
        ));
        for u in &preload {
            rest.push_str(&format!(
                "  <link rel=\"modulepreload\" href=\"{u}?v={}\">\n",
                v(u)
            ));
        }
        // The client's version as a whole (every file's): an open page compares it with the
        // server's page when its socket comes back, and offers a reload if they differ
        // (`web/app.js`, `newVersionCheck`): old and new modules must not mix in one page.
        let build = version_of(
            versions
                .iter()
                .map(|(u, v)| format!("{u}={v}\n"))
                .collect::<String>()
                .as_bytes(),
        );
        let index = index
            // First in the head, so that its requests go out with the page's first ones (and
            // before any stylesheet, which a classic script would wait for).
            .replacen(
                "<meta charset=\"utf-8\">\n",
                &format!(
                    "<meta charset=\"utf-8\">\n  <meta name=\"fib-client\" content=\"{build}\">\n  {early_tag}"
                ),
                1,
            )
            .replace(
                "href=\"/style.css\"",
                &format!("href=\"/style.css?v={}\"", v("/style.css")),
            )
            .replace(
                "<script type=\"module\" src=\"/app.js\"></script>",
                // The entry module first: it is the longest, and the browser fetches in
                // document order (at most six at a time from one host over HTTP/1.1).
                &format!(
                    "{map_tag}  <script type=\"module\" src=\"/app.js?v={}\"></script>\n{rest}",
                    v("/app.js")
                ),
            );
        let map_hash = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(&map));
        let early_hash = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(&early));
        let csp = format!(
            "default-src 'self'; script-src 'self' 'sha256-{map_hash}' 'sha256-{early_hash}'; style-src 'self'; \
             img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; \
             form-action 'self'; frame-ancestors 'none'"
        );
        Ok(Assets {
            versions,
            files,
            index,
            csp,
            game_preloads,
        })
    }

    /// Whether `path?query` names the current version of a file.
    /// A versioned URL's bytes and content type, as read at start-up (`None` for any other
    /// URL, which is served from the folder as it is now, not to be cached).
    pub(crate) fn snapshot(
        &self,
        path: &str,
        query: Option<&str>,
    ) -> Option<(axum::body::Bytes, &'static str)> {
        if !self.current(path, query) {
            return None;
        }
        let kind = match path.rsplit_once('.').map(|(_, ext)| ext) {
            Some("js") => "text/javascript",
            Some("css") => "text/css",
            Some("html") => "text/html; charset=utf-8",
            Some("json") => "application/json",
            Some("svg") => "image/svg+xml",
            Some("png") => "image/png",
            Some("woff2") => "font/woff2",
            _ => "application/octet-stream",
        };
        self.files.get(path).map(|b| (b.clone(), kind))
    }

    pub(crate) fn current(&self, path: &str, query: Option<&str>) -> bool {
        let Some(v) = query.and_then(|q| q.split('&').find_map(|kv| kv.strip_prefix("v="))) else {
            return false;
        };
        self.versions.get(path).is_some_and(|cur| cur == v)
    }
}

/// The page for a table's own address (`/table/{id}`): the index with the viewer's first
/// state and session (what `/api/session` answers) in JSON data blocks (`fib-state`,
/// `fib-session`: never run, so the CSP has nothing to allow), and the game's modules and
/// the chat's (the table's frame needs it) preloaded, so the table is drawn with no request
/// after the page's modules. `<` is escaped so that no text in them can close the element.
pub fn table_index(assets: &Assets, game: &str, state: &str, session: &str) -> String {
    let block = format!(
        "  <script type=\"application/json\" id=\"fib-state\">{}</script>\n  \
         <script type=\"application/json\" id=\"fib-session\">{}</script>\n{}  \
         <link rel=\"modulepreload\" href=\"/chat.js?v={}\">\n",
        state.replace('<', "\\u003c"),
        session.replace('<', "\\u003c"),
        assets.game_preloads.get(game).map_or("", String::as_str),
        assets.versions.get("/chat.js").map_or("", String::as_str),
    );
    assets
        .index
        .replacen("</head>", &format!("{block}</head>"), 1)
}

/// The index page, for a table's address when its state cannot be put in (nobody signed
/// in, or the table cannot be shown to them: the page says why, as it would for `#/table`).
pub fn plain_index(assets: &Assets) -> String {
    assets.index.clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn web() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../web")
    }

    /// The page carries the game catalogue as a JSON data block, equal to `/api/games`.
    #[test]
    fn index_carries_the_catalogue() {
        let a = Assets::load(&web()).unwrap();
        let start = a
            .index
            .find("<script type=\"application/json\" id=\"fib-games\">")
            .unwrap();
        let rest = &a.index[start..];
        let json = &rest[rest.find('>').unwrap() + 1..rest.find("</script>").unwrap()];
        let parsed: serde_json::Value = serde_json::from_str(json).unwrap();
        assert_eq!(parsed, serde_json::to_value(games::catalogue()).unwrap());
        assert!(!json.contains('<'));
    }

    /// The index names every start-up module by its current version, preloads the entry
    /// module's imports, and the CSP allows exactly its import map.
    #[test]
    fn index_is_versioned_and_preloaded() {
        let a = Assets::load(&web()).unwrap();
        let v = &a.versions["/app.js"];
        assert!(a.index.contains(&format!("src=\"/app.js?v={v}\"")));
        assert!(a.index.contains(&format!(
            "href=\"/style.css?v={}\"",
            a.versions["/style.css"]
        )));
        for m in [
            "/dom.js",
            "/api.js",
            "/account.js",
            "/online.js",
            "/games/registry.js",
        ] {
            assert!(
                a.index.contains(&format!(
                    "<link rel=\"modulepreload\" href=\"{m}?v={}\">",
                    a.versions[m]
                )),
                "{m} is not preloaded"
            );
        }
        // Game modules, and what only some pages need, load on demand through the import
        // map: the start-up set fits in one round of six requests.
        for m in [
            "/games/trump.js",
            "/socket.js",
            "/chat.js",
            "/sound.js",
            "/replay.js",
            "/profile.js",
        ] {
            assert!(
                !a.index.contains(&format!("modulepreload\" href=\"{m}")),
                "{m} is preloaded"
            );
        }
        let preloaded = a.index.matches("rel=\"modulepreload\"").count();
        assert!(
            preloaded <= 5,
            "{preloaded} modules preloaded besides app.js"
        );
        assert!(a.index.contains(&format!(
            "\"/games/trump.js\":\"/games/trump.js?v={}\"",
            a.versions["/games/trump.js"]
        )));
        let map = a
            .index
            .split("<script type=\"importmap\">")
            .nth(1)
            .unwrap()
            .split("</script>")
            .next()
            .unwrap();
        let hash = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(map));
        assert!(a.csp.contains(&format!("'sha256-{hash}'")));
        assert!(a.current("/app.js", Some(&format!("v={v}"))));
        assert!(!a.current("/app.js", Some("v=000000000000")));
        assert!(!a.current("/app.js", None));
    }

    /// The page's first script comes before the stylesheet (a classic script waits for
    /// the stylesheets above it), the CSP allows exactly it by its hash, and it names each
    /// game's modules by their current versions.
    #[test]
    fn early_script_is_first_allowed_and_versioned() {
        let a = Assets::load(&web()).unwrap();
        let start = a.index.find("<script>").unwrap() + "<script>".len();
        let script = &a.index[start..start + a.index[start..].find("</script>").unwrap()];
        assert!(start < a.index.find("<link rel=\"stylesheet\"").unwrap());
        let hash = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(script));
        assert!(a.csp.contains(&format!("'sha256-{hash}'")));
        for m in [
            "/games/trump.js",
            "/cards.js",
            "/games/rummy.js",
            "/games/nachos.js",
            "/games/fibfib.js",
        ] {
            assert!(
                script.contains(&format!("\"{m}?v={}\"", a.versions[m])),
                "{m}"
            );
        }
        // Modules the page preloads anyway are not asked for twice.
        assert!(!script.contains("/dom.js"));
        assert!(!script.contains("__GAMES__"));
    }

    /// Relative imports resolve like a browser resolves them.
    #[test]
    fn static_imports_resolve_relative_paths() {
        let mut got = static_imports(&web(), "/games/trump.js");
        got.sort();
        assert_eq!(got, vec!["/cards.js".to_string(), "/dom.js".to_string()]);
    }
}
