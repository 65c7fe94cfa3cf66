#!/usr/bin/env bash
# Regenerates docs/screenshots/ (the pictures in the README and docs/web.md): each game's
# table mid-match against bots, at desktop and phone size, taken by the browser test
# tests/browser/screenshots.mjs against a fresh server on SQLite.
#
#   bash scripts/screenshots.sh        # needs Chromium (CHROMIUM=/usr/bin/chromium) and npm
set -euo pipefail
cd "$(dirname "$0")/.."
export CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
PORT="${SCREENSHOTS_PORT:-18766}"
[ -d tests/browser/node_modules/playwright-core ] || npm ci --prefix tests/browser --no-audit --no-fund --silent
cargo build -q -p server --bin fibonacci-cards
DB="$(mktemp -d)/screenshots.db"
FIB_PORT="$PORT" DATABASE_URL="sqlite://$DB" FIB_BOT_DELAY_MS=0 target/debug/fibonacci-cards >/dev/null 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT
BASE="http://127.0.0.1:$PORT"
for _ in $(seq 1 100); do curl -fs "$BASE/healthz" >/dev/null && break; sleep 0.1; done
node tests/browser/screenshots.mjs "$BASE" "$PWD/docs/screenshots"
ls -la docs/screenshots
