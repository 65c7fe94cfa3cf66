// Checks that the Colyseus peer plays the game right, through two real colyseus.js
// clients against server.mjs as a child process: a few hundred random legal moves, with
// an out-of-turn move, a move that does not follow suit and a card not in hand thrown in
// (each must be rejected and change nothing), hands hidden from the opponent at every
// update, and every trick's winner (and who leads next) checked against the rule.
//
// Usage: node test.mjs [MOVES]   (exit status 0 when every check passed)

import assert from "node:assert/strict";
import { startServer, seatTable, seatOf } from "./client.mjs";
import { legal, colour, winnerIndex, HAND, SEATS } from "./game.mjs";

const MOVES = Number(process.argv[2] ?? 400);
const srv = await startServer();
let failed = false;
try {
    await run();
} catch (e) {
    failed = true;
    console.error(`test.mjs: FAILED: ${e.stack ?? e}`);
} finally {
    srv.child.removeAllListeners("exit");
    srv.child.kill("SIGTERM");
}
process.exit(failed ? 1 : 0);

async function run() {
    const rooms = await seatTable(`ws://127.0.0.1:${srv.port}`, { on: false });
    const rejected = new Map(rooms.map((r) => [r, []]));
    let hiddenChecks = 0;
    const violations = [];
    for (const r of rooms) {
        r.onMessage("rejected", (m) => rejected.get(r).push(m));
        // At every update: the opponent's hand never reaches this client.
        r.onStateChange((s) => {
            const me = seatOf(r);
            if (me < 0 || s.players.length < SEATS) return;
            const opp = s.players[1 - me];
            // (Never synced, the opponent's `hand` stays undefined on this client.)
            if (opp.hand !== undefined && opp.hand.length > 0) violations.push(`seat ${me} saw the opponent's hand ${opp.hand.toArray()}`);
            if (JSON.stringify(opp.toJSON()).includes("hand\"")) violations.push(`seat ${me} decoded the opponent's hand field`);
            if (s.players[me].hand.length !== s.players[me].handCount) violations.push(`seat ${me}: hand of ${s.players[me].hand.length}, handCount ${s.players[me].handCount}`);
            hiddenChecks++;
        });
    }
    const waitFor = (pred, what, ms = 3000) =>
        new Promise((resolve, reject) => {
            const t0 = Date.now();
            const poll = () => {
                if (pred()) return resolve();
                if (Date.now() - t0 > ms) return reject(new Error(`timed out waiting for ${what}`));
                setTimeout(poll, 1);
            };
            poll();
        });
    await waitFor(() => rooms.every((r) => r.state.started && seatOf(r) >= 0 && r.state.players[seatOf(r)].hand.length === HAND), "the deal");
    const bySeat = [];
    for (const r of rooms) bySeat[seatOf(r)] = r;
    assert.ok(bySeat[0] && bySeat[1], "two seats");

    // A move that must be refused: wait for its rejection, and check nothing changed.
    const expectRejected = async (room, card, why) => {
        const before = JSON.stringify(room.state.toJSON());
        const n = rejected.get(room).length;
        room.send("play", card);
        await waitFor(() => rejected.get(room).length > n, `the rejection (${why})`);
        const m = rejected.get(room)[n];
        assert.equal(m.why, why, `rejection of ${card}: ${JSON.stringify(m)}`);
        // A rejected move sends no patch; the state is as it was.
        await new Promise((r) => setTimeout(r, 20));
        assert.equal(JSON.stringify(room.state.toJSON()), before, "a rejected move changed the state");
    };

    const done = { notYourTurn: 0, mustFollow: 0, notInHand: 0, tricks: 0, deals: 0 };
    let trickLeader = null;
    for (let i = 0; i < MOVES; i++) {
        const s = bySeat[0].state;
        const turn = s.turn;
        const mover = bySeat[turn], other = bySeat[1 - turn];
        const hand = mover.state.players[turn].hand.toArray();
        const trick = mover.state.trick.toArray();
        if (trick.length === 0) trickLeader = turn;

        if (i % 50 === 3) {
            await expectRejected(other, other.state.players[1 - turn].hand.at(0), "not_your_turn");
            done.notYourTurn++;
        }
        if (i % 50 === 7) {
            const notMine = [...Array(60).keys()].map((k) => k + 1).find((c) => !hand.includes(c));
            await expectRejected(mover, notMine, "not_in_hand");
            done.notInHand++;
        }
        if (trick.length === 1) {
            const offColour = hand.find((c) => colour(c) !== colour(trick[0]));
            if (offColour !== undefined && hand.some((c) => colour(c) === colour(trick[0]))) {
                await expectRejected(mover, offColour, "must_follow");
                done.mustFollow++;
            }
        }

        const options = legal(hand, trick);
        const card = options[Math.floor(Math.random() * options.length)];
        const trump = s.trump, moves = s.moves, lastN = s.last.n, deals = s.deals;
        const tricksBefore = s.players.map((p) => p.tricks);
        mover.send("play", card);
        await waitFor(() => rooms.every((r) => r.state.moves === moves + 1), `move ${i}`);
        for (const r of rooms) assert.deepEqual(r.state.moves, moves + 1);
        const after = bySeat[0].state;
        // Both clients see the same public state.
        const pub = (st) => JSON.stringify({ ...st.toJSON(), players: st.players.map((p) => ({ id: p.id, handCount: p.handCount, tricks: p.tricks })) });
        assert.equal(pub(bySeat[0].state), pub(bySeat[1].state), "the two clients disagree");
        if (hand.length > 1) assert.ok(!mover.state.players[turn].hand.includes(card), `the card ${card} stayed in hand: ${hand} -> ${mover.state.players[turn].hand.toArray()} (move ${i})`);

        if (trick.length === 0) {
            assert.deepEqual(after.trick.toArray(), [card]);
            assert.equal(after.turn, 1 - turn, "the other seat plays second");
        } else {
            // The trick is complete: check its winner against the rule.
            const cards = [trick[0], card];
            const winner = (trickLeader + winnerIndex(cards, trump)) % SEATS;
            assert.equal(after.last.n, lastN + 1);
            assert.deepEqual(after.last.cards.toArray(), cards);
            assert.equal(after.last.leader, trickLeader);
            assert.equal(after.last.trump, trump);
            assert.equal(after.last.winner, winner, `trick ${JSON.stringify(cards)} trump ${trump}`);
            assert.equal(after.players[winner].tricks, tricksBefore[winner] + 1);
            assert.equal(after.turn, winner, "the winner leads next");
            assert.equal(after.trick.length, 0);
            done.tricks++;
            if (hand.length === 1) {
                assert.equal(after.deals, deals + 1, "a new deal when the hands are empty");
                for (let seat = 0; seat < SEATS; seat++) {
                    assert.equal(bySeat[seat].state.players[seat].hand.length, HAND);
                }
                done.deals++;
            }
        }
    }
    assert.ok(done.notYourTurn > 0 && done.notInHand > 0 && done.mustFollow > 0, JSON.stringify(done));
    assert.ok(hiddenChecks > MOVES, "the hidden-hand check ran");
    assert.deepEqual(violations.slice(0, 5), [], "hands hidden and counted right");
    // (The server closes the table when a player leaves, so the second leave may never
    // be answered: do not wait on it for long.)
    await Promise.race([Promise.all(rooms.map((r) => r.leave().catch(() => {}))), new Promise((r) => setTimeout(r, 500))]);
    console.log(`test.mjs: ok: ${MOVES} moves, ${done.tricks} tricks and ${done.deals} new deals checked; rejected ${done.notYourTurn} out-of-turn, ${done.mustFollow} not following suit, ${done.notInHand} not in hand; opponent's hand hidden in ${hiddenChecks} updates`);
}
