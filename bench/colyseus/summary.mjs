// Prints compare.sh's one-line summary of a run from its JSON report:
//   node summary.mjs colyseus FILE   (load.mjs --json)
//   node summary.mjs loadgen FILE    (loadgen run --json)
// Exits 1 when a figure is missing. The line goes to stdout; the context (CPU shares,
// latency, problems) to stderr.

import { readFileSync } from "node:fs";

const [kind, file] = process.argv.slice(2);
const r = JSON.parse(readFileSync(file, "utf8"));
let label, tables, movesPerSec, cpuUs, frame, context;
if (kind === "colyseus") {
    label = "colyseus 0.16";
    tables = r.tables;
    movesPerSec = r.moves_per_sec;
    cpuUs = r.server_cpu_us_per_move;
    frame = r.avg_frame_bytes;
    context = `server ${fmt(r.server_cores, 2)} cores, client ${fmt(r.client_cores, 2)} cores, other processes ${fmt(r.others_cores, 2)} cores; ` +
        `${fmt(r.frames_per_move, 2)} frames/move; move round trip p50 ${fmt(r.move_rtt_ms.p50, 2)} ms p99 ${fmt(r.move_rtt_ms.p99, 2)} ms; ` +
        `problems: ${r.problems.length === 0 ? "none" : r.problems.slice(0, 3).join("; ")}`;
} else if (kind === "loadgen") {
    const p = r.play ?? {};
    label = "fibonacci-cards";
    tables = r.tables;
    movesPerSec = p.actions_per_sec;
    cpuUs = p.server_cpu_us_per_action;
    frame = p.frames?.mean_frame_bytes;
    const patch = p.frames?.median_patch_message_bytes;
    const rtt = p.move_rtt;
    context = `server ${fmt(p.server_cores, 2)} cores, client ${fmt(p.client_cores, 2)} cores, other processes ${fmt(p.others_cores, 2)} cores; ` +
        `${movesPerSec > 0 && p.frames ? fmt(p.frames.frames / (movesPerSec * r.seconds), 2) : "-"} frames/move; median patch ${patch ?? "-"} B; ` +
        `move round trip p50 ${rtt ? fmt(rtt.p50_ms, 2) : "-"} ms p99 ${rtt ? fmt(rtt.p99_ms, 2) : "-"} ms; ` +
        `problems: ${r.problems.length === 0 ? "none" : r.problems.slice(0, 3).join("; ")}`;
} else {
    console.error("usage: node summary.mjs colyseus|loadgen FILE");
    process.exit(2);
}

function fmt(x, d = 1) {
    return typeof x === "number" && Number.isFinite(x) ? x.toFixed(d) : "-";
}

const ok = [movesPerSec, cpuUs, frame].every((x) => typeof x === "number" && Number.isFinite(x) && x > 0);
console.log(
    `${label.padEnd(16)}${String(tables).padStart(3)} tables  ${(movesPerSec / 1000).toFixed(1).padStart(5)}k moves/s  ` +
    `${fmt(cpuUs).padStart(6)} µs server CPU/move  ${fmt(frame, 0).padStart(5)} B avg frame`,
);
console.error(`  ${label}: ${context}`);
if (!ok) {
    console.error(`summary.mjs: ${label}: a figure is missing from ${file}`);
    process.exit(1);
}
