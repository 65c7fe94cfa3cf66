//! The real-time core speaks no HTTP and no WebSocket: neither it nor anything it depends
//! on (normal dependencies, all the way down) is a web framework, an HTTP library or a
//! WebSocket library. Sockets are the server's; the core hands them text.

use std::collections::{BTreeSet, HashMap};

/// Packages the core must never pull in.
const FORBIDDEN: &[&str] = &[
    "axum",
    "axum-core",
    "tower",
    "tower-http",
    "hyper",
    "http",
    "http-body",
    "reqwest",
    "tungstenite",
    "tokio-tungstenite",
    "utoipa",
];

#[test]
fn the_core_depends_on_no_http_or_websocket_crate() {
    let out = std::process::Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--locked"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: HashMap<&str, &str> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["id"].as_str().unwrap(), p["name"].as_str().unwrap()))
        .collect();
    let nodes: HashMap<&str, &serde_json::Value> = meta["resolve"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["id"].as_str().unwrap(), n))
        .collect();
    let core = names
        .iter()
        .find(|(_, n)| **n == "realtime")
        .map(|(id, _)| *id)
        .expect("the realtime package");
    // Everything reachable through normal (not dev, not build) dependencies.
    let mut seen = BTreeSet::new();
    let mut todo = vec![core];
    while let Some(id) = todo.pop() {
        if !seen.insert(id) {
            continue;
        }
        for dep in nodes[id]["deps"].as_array().unwrap() {
            let normal = dep["dep_kinds"]
                .as_array()
                .unwrap()
                .iter()
                .any(|k| k["kind"].is_null());
            if normal {
                todo.push(dep["pkg"].as_str().unwrap());
            }
        }
    }
    let pulled: Vec<&str> = seen
        .iter()
        .map(|id| names[id])
        .filter(|n| FORBIDDEN.contains(n))
        .collect();
    assert!(pulled.is_empty(), "the real-time core pulls in {pulled:?}");
    assert!(seen.len() > 10, "the walk found the core's dependencies");
}
