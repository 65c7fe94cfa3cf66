// Pieces the load client (load.mjs) and the rules test (test.mjs) share: starting the
// server as a child process, reading CPU times from /proc, and seating two colyseus.js
// clients at a new table.

import { spawn, execSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Client } from "colyseus.js";

const here = fileURLToPath(new URL(".", import.meta.url));

/** Starts `node server.mjs 0` and resolves to { child, pid, port } once it listens. */
export function startServer() {
    return new Promise((resolve, reject) => {
        const child = spawn(process.execPath, [here + "server.mjs", "0"], {
            stdio: ["ignore", "pipe", "inherit"],
        });
        let out = "";
        const timer = setTimeout(() => reject(new Error("the server did not start in 20 s")), 20000);
        child.on("exit", (code) => reject(new Error(`the server exited early (${code})`)));
        child.stdout.on("data", (d) => {
            out += d;
            const m = out.match(/listening (\d+)/);
            if (m) {
                clearTimeout(timer);
                child.stdout.resume();
                resolve({ child, pid: child.pid, port: Number(m[1]) });
            }
        });
    });
}

export const CLK_TCK = (() => {
    try {
        return Number(execSync("getconf CLK_TCK").toString().trim()) || 100;
    } catch {
        return 100;
    }
})();

/** A process's utime+stime in seconds (/proc/PID/stat). */
export function processCpu(pid) {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // After "pid (comm) ", field 3 (state) is f[0]: utime is field 14, stime field 15.
    return (Number(f[11]) + Number(f[12])) / CLK_TCK;
}

/** The machine's busy and total CPU seconds (/proc/stat's first line). */
export function machineCpu() {
    const f = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(1).map(Number);
    const total = f.slice(0, 8).reduce((a, b) => a + b, 0);
    const idle = f[3] + f[4];
    return { busy: (total - idle) / CLK_TCK, total: total / CLK_TCK };
}

/**
 * Seats two clients at a new table: the first creates the room, the second joins it by
 * id. Each room gets `frames` / `bytes` counters of the server→client WebSocket messages
 * (their payload bytes, as the socket received them) while `counting.on` is true.
 */
export async function seatTable(endpoint, counting) {
    const a = new Client(endpoint);
    const b = new Client(endpoint);
    const r0 = await a.create("trump");
    const r1 = await b.joinById(r0.roomId);
    for (const r of [r0, r1]) {
        r.frames = 0;
        r.bytes = 0;
        r.connection.transport.ws.addEventListener("message", (e) => {
            if (!counting.on) return;
            r.frames++;
            r.bytes += typeof e.data === "string" ? Buffer.byteLength(e.data) : e.data.byteLength;
        });
    }
    return [r0, r1];
}

/** This client's seat at its table (-1 until both players are in the state). */
export function seatOf(room) {
    const players = room.state.players;
    if (!players) return -1;
    for (let i = 0; i < players.length; i++) if (players[i].id === room.sessionId) return i;
    return -1;
}
