// How big the lobby's first message is with N public tables (docs/performance.md): makes N
// open Trump tables on a running server, then reads `GET /api/tables` and the first message
// of `/ws/lobby`. The server must run with its per-address limits off, e.g.
//   target/release/fibonacci-cards --port 18901 --database-url sqlite:///tmp/lobby/fib.db \
//     --guests-per-minute 0 --tables-per-minute 0 --joins-per-minute 0 --sockets-per-minute 0 \
//     --sockets-per-address 0 --connections-per-address 0 --open-tables-per-player 0
//   node --experimental-websocket scripts/lobby-size.mjs http://127.0.0.1:18901 2000
const base = process.argv[2] ?? 'http://127.0.0.1:18901';
const N = Number(process.argv[3] ?? 2000);
const g = await (await fetch(`${base}/api/guest`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Meas' }) })).json();
const tok = g.token;
let made = 0;
const one = async () => {
  const r = await fetch(`${base}/api/tables`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${tok}` }, body: JSON.stringify({ game: 'trump', seats: 3 }) });
  if (r.status !== 201) throw new Error(`create ${r.status} ${await r.text()}`);
  made += 1;
};
for (let i = 0; i < N; i += 50) await Promise.all(Array.from({ length: Math.min(50, N - i) }, one));
const r = await fetch(`${base}/api/tables`);
const body = await r.text();
const list = JSON.parse(body);
console.log(`tables made ${made}; GET /api/tables: ${list.length} entries, ${body.length} B, X-Total-Count ${r.headers.get('x-total-count')}; average entry ${Math.round(body.length / list.length)} B`);
const ws = new WebSocket(`${base.replace(/^http/, 'ws')}/ws/lobby`);
ws.onmessage = (e) => {
  const m = JSON.parse(e.data);
  if (m.type === 'tables') {
    console.log(`first lobby message: ${m.tables.length} tables of ${m.total}, ${e.data.length} B; the whole list would be about ${Math.round(m.total * e.data.length / m.tables.length / 1024)} KB`);
    ws.close();
    process.exit(0);
  }
};
