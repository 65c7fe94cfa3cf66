// The Colyseus peer's load client: N tables × 2 colyseus.js 0.16 clients against
// server.mjs (a separate process it starts), each client playing a random legal card from
// its own hand as soon as it may, flat out. After a warm-up, it measures a window of S
// seconds: moves per second (the tables' accepted-move counters), the server process's
// CPU per move (/proc/PID/stat utime+stime over the window), the average payload size of
// server→client WebSocket messages, and the move round trip (send → the patch with my
// move).
//
// Usage: node load.mjs [--tables 64] [--seconds 10] [--warmup 2] [--json]

import { startServer, seatTable, seatOf, processCpu, machineCpu } from "./client.mjs";
import { legal } from "./game.mjs";

function args() {
    const o = { tables: 64, seconds: 10, warmup: 2, json: false };
    const a = process.argv.slice(2);
    for (let i = 0; i < a.length; i++) {
        const k = a[i];
        if (k === "--json") o.json = true;
        else if (k === "--tables") o.tables = Number(a[++i]);
        else if (k === "--seconds") o.seconds = Number(a[++i]);
        else if (k === "--warmup") o.warmup = Number(a[++i]);
        else throw new Error(`unknown argument ${k}`);
    }
    if (!(o.tables >= 1 && o.seconds > 0 && o.warmup >= 0)) throw new Error("bad arguments");
    return o;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function percentile(sorted, p) {
    if (sorted.length === 0) return null;
    const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
    return sorted[i];
}

async function main() {
    const o = args();
    const srv = await startServer();
    const endpoint = `ws://127.0.0.1:${srv.port}`;
    const counting = { on: false };
    const measuring = { on: false, stop: false };
    const rtts = [];
    const problems = [];

    // Set-up: every table seated (batches of 16 to keep the matchmaker's HTTP calls short).
    const tables = [];
    for (let i = 0; i < o.tables; i += 16) {
        const n = Math.min(16, o.tables - i);
        tables.push(...(await Promise.all(Array.from({ length: n }, () => seatTable(endpoint, counting)))));
    }

    for (const rooms of tables) {
        for (const room of rooms) {
            let sentAt = -1; // the `moves` value my last move was sent against
            let sentTime = 0;
            room.onMessage("rejected", (m) => problems.push(`rejected ${JSON.stringify(m)}`));
            room.onLeave((code) => {
                if (!measuring.stop) problems.push(`left mid-run (code ${code})`);
            });
            const react = (s) => {
                if (sentAt >= 0 && s.moves > sentAt) {
                    if (measuring.on) rtts.push(performance.now() - sentTime);
                    sentAt = -1;
                }
                if (measuring.stop || !s.started || sentAt >= 0) return;
                const seat = seatOf(room);
                if (seat < 0 || s.turn !== seat) return;
                const hand = s.players[seat].hand;
                if (hand.length === 0) return;
                const options = legal(hand.toArray(), s.trick.toArray());
                const card = options[Math.floor(Math.random() * options.length)];
                sentAt = s.moves;
                sentTime = performance.now();
                room.send("play", card);
            };
            room.onStateChange(react);
            room.react = react;
        }
    }
    // The deal may have arrived before the handlers were set: let the player to move start.
    for (const rooms of tables) for (const room of rooms) room.react(room.state);

    await sleep(o.warmup * 1000);

    const moves = () => tables.reduce((n, [r0, r1]) => n + Math.max(r0.state.moves, r1.state.moves), 0);
    const m0 = moves(), s0 = processCpu(srv.pid), c0 = process.cpuUsage(), k0 = machineCpu();
    const t0 = performance.now();
    counting.on = true;
    measuring.on = true;
    await sleep(o.seconds * 1000);
    measuring.on = false;
    counting.on = false;
    const m1 = moves(), s1 = processCpu(srv.pid), c1 = process.cpuUsage(), k1 = machineCpu();
    const secs = (performance.now() - t0) / 1000;
    measuring.stop = true;

    let frames = 0, bytes = 0;
    for (const rooms of tables) for (const r of rooms) { frames += r.frames; bytes += r.bytes; }
    const n = m1 - m0;
    const serverCpu = s1 - s0;
    const clientCpu = (c1.user - c0.user + c1.system - c0.system) / 1e6;
    rtts.sort((a, b) => a - b);
    const report = {
        server: "colyseus 0.16",
        tables: o.tables,
        seconds: secs,
        moves: n,
        moves_per_sec: n / secs,
        server_cpu_us_per_move: n > 0 ? (serverCpu / n) * 1e6 : null,
        server_cores: serverCpu / secs,
        client_cores: clientCpu / secs,
        others_cores: Math.max(0, (k1.busy - k0.busy) - serverCpu - clientCpu) / secs,
        frames,
        frames_per_move: n > 0 ? frames / n : null,
        avg_frame_bytes: frames > 0 ? bytes / frames : null,
        move_rtt_ms: { p50: percentile(rtts, 50), p99: percentile(rtts, 99), max: rtts.at(-1) ?? null },
        problems,
    };
    for (const rooms of tables) for (const r of rooms) r.leave().catch(() => {});
    await sleep(200);
    srv.child.removeAllListeners("exit");
    srv.child.kill("SIGTERM");

    if (o.json) {
        console.log(JSON.stringify(report, null, 2));
    } else {
        const f = (x, d = 1) => (x == null ? "-" : x.toFixed(d));
        console.log(`colyseus 0.16: ${o.tables} tables, ${f(secs, 2)} s window`);
        console.log(`  moves/s ${f(report.moves_per_sec, 0)} (${n} moves)`);
        console.log(`  server CPU/move ${f(report.server_cpu_us_per_move)} µs, server cores ${f(report.server_cores, 2)}, client cores ${f(report.client_cores, 2)}, other processes ${f(report.others_cores, 2)} cores`);
        console.log(`  server→client frames ${frames} (${f(report.frames_per_move, 2)} per move), avg ${f(report.avg_frame_bytes)} B`);
        console.log(`  move round trip p50 ${f(report.move_rtt_ms.p50, 2)} ms, p99 ${f(report.move_rtt_ms.p99, 2)} ms, max ${f(report.move_rtt_ms.max, 2)} ms`);
        console.log(`  problems: ${problems.length === 0 ? "none" : problems.slice(0, 5).join("; ")}`);
    }
    process.exit(problems.length === 0 && n > 0 ? 0 : 1);
}

main().catch((e) => {
    console.error(`load.mjs: ${e.stack ?? e}`);
    process.exit(1);
});
