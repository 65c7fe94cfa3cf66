#!/usr/bin/env bash
# Lighthouse audit of the web client (docs/web.md): mobile preset with real (devtools)
# throttling, on the home/lobby, rules and table pages of a fresh server on SQLite. Prints
# the four category scores per page and keeps the reports in target/lighthouse/.
#
#   bash scripts/lighthouse.sh            # needs Chromium (CHROMIUM=/usr/bin/chromium) and npm
#
# Not part of the test suite: the scores depend on the machine and take minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
PORT="${LIGHTHOUSE_PORT:-18765}"
OUT=target/lighthouse
mkdir -p "$OUT"
npm ci --prefix tests/lighthouse --no-audit --no-fund --silent
cargo build --release -q -p server --bin fibonacci-cards
DB="$(mktemp -d)/lighthouse.db"
FIB_PORT="$PORT" DATABASE_URL="sqlite://$DB" target/release/fibonacci-cards >"$OUT/server.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT
BASE="http://127.0.0.1:$PORT"
for _ in $(seq 1 100); do curl -fs "$BASE/healthz" >/dev/null && break; sleep 0.1; done

# A signed-in visitor (its cookie is passed to Lighthouse) with a Trump table against bots.
TOKEN=$(curl -fs -X POST -H 'content-type: application/json' -d '{"name":"Lighthouse"}' "$BASE/api/guest" \
  | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).token))')
TABLE=$(curl -fs -X POST -H 'content-type: application/json' -H "authorization: Bearer $TOKEN" \
  -d '{"game":"trump","seats":2,"bots":"normal"}' "$BASE/api/tables" \
  | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).table.id))')
curl -fs -X POST -H "authorization: Bearer $TOKEN" "$BASE/api/tables/$TABLE/start" >/dev/null

audit() { # name url [cookie]
  local name=$1 url=$2 token=
  [ "${3:-}" = cookie ] && token=$TOKEN
  # A real cookie in the browser's jar (tests/lighthouse/audit.mjs), so that the table's
  # socket is the signed-in player's too.
  CHROMIUM="$CHROMIUM" node tests/lighthouse/audit.mjs "$url" "$OUT/$name.json" $token 2>"$OUT/$name.err" || true
  node -e '
    const r = require(process.argv[1]);
    const c = r.categories, s = (k) => c[k] ? Math.round(c[k].score * 100) : "-";
    const lcp = r.audits["largest-contentful-paint"]?.displayValue ?? "-";
    const cls = r.audits["cumulative-layout-shift"]?.displayValue ?? "-";
    console.log([process.argv[2].padEnd(10), "perf", s("performance"), "a11y", s("accessibility"),
      "best", s("best-practices"), "seo", s("seo"), "LCP", lcp, "CLS", cls].join(" "));
  ' "$PWD/$OUT/$name.json" "$name"
}
echo "lighthouse (mobile, devtools throttling) on $BASE"
audit home "$BASE/"
audit lobby "$BASE/#/" cookie
audit rules "$BASE/#/rules/trump" cookie
# The table's own address (the link players share: the state comes in the page), and the
# in-app address of the same table (a reload of a page reached from the lobby).
audit table "$BASE/table/$TABLE" cookie
audit table-hash "$BASE/#/table/$TABLE" cookie
