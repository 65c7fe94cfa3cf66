// The Colyseus 0.16 peer: one Node process serving rooms of the trick-taking game in
// game.mjs. State lives in memory as @colyseus/schema 3 objects; each player's hand is a
// `view` field, so only that player's StateView sees it. Every move is validated (turn,
// card in hand, follow suit) and an illegal one is answered with a "rejected" message.
// The patch goes out right after each move (`broadcastPatch()`), with the 50 ms patch
// interval turned off, so the tick adds no latency and no ceiling on moves per second.
//
// Usage: node server.mjs [PORT]   (prints "listening PORT" once ready; 0 = any port)

import { pathToFileURL } from "node:url";
import { Server, Room } from "@colyseus/core";
import { WebSocketTransport } from "@colyseus/ws-transport";
import { schema, ArraySchema, StateView } from "@colyseus/schema";
import { SEATS, HAND, COLOURS, shuffled, illegal, winnerIndex } from "./game.mjs";

export const Player = schema({
    id: "string", // the player's sessionId
    hand: { array: "uint8", view: true }, // seen only by this player
    handCount: { type: "uint8", default: 0 }, // seen by everyone
    tricks: { type: "uint32", default: 0 }, // tricks won so far
}, "Player");

export const Trick = schema({
    cards: ["uint8"], // leader's card first
    leader: { type: "uint8", default: 0 },
    winner: { type: "uint8", default: 0 },
    trump: { type: "uint8", default: 0 },
    n: { type: "uint32", default: 0 }, // how many tricks this room has finished
}, "Trick");

export const TrumpState = schema({
    players: [Player], // by seat
    started: { type: "boolean", default: false },
    trump: { type: "uint8", default: 0 }, // the trump colour of this deal, 0..4
    turn: { type: "uint8", default: 0 }, // the seat to play
    trick: ["uint8"], // the cards on the table, leader's first
    last: Trick, // the last finished trick
    moves: { type: "uint32", default: 0 }, // accepted moves
    deals: { type: "uint32", default: 0 },
}, "TrumpState");

export class TrumpRoom extends Room {
    maxClients = SEATS;

    onCreate() {
        this.patchRate = null; // no interval: a patch is sent right after each move
        const state = new TrumpState();
        state.last = new Trick();
        this.state = state;
        this.onMessage("play", (client, card) => this.play(client, card));
    }

    onJoin(client) {
        const p = new Player();
        p.id = client.sessionId;
        this.state.players.push(p);
        client.view = new StateView();
        client.view.add(p);
        if (this.state.players.length === SEATS) {
            this.deal(0);
            this.state.started = true;
            // The joiner's full state goes out after onJoin; the other seat needs a patch.
            this.broadcastPatch();
        }
    }

    onLeave() {
        // A table without both players is over.
        this.disconnect();
    }

    deal(leader) {
        const s = this.state;
        const deck = shuffled();
        s.players.forEach((p, i) => {
            p.hand.clear();
            p.hand.push(...deck.slice(i * HAND, (i + 1) * HAND));
            p.handCount = HAND;
        });
        s.trump = Math.floor(Math.random() * COLOURS);
        s.turn = leader;
        s.deals++;
    }

    play(client, card) {
        const s = this.state;
        const seat = s.players.findIndex((p) => p.id === client.sessionId);
        let why = null;
        if (!s.started) why = "not_started";
        else if (seat !== s.turn) why = "not_your_turn";
        else if (typeof card !== "number") why = "bad_card";
        else why = illegal(s.players[seat].hand.toArray(), s.trick.toArray(), card);
        if (why) {
            client.send("rejected", { card, why });
            return;
        }
        const p = s.players[seat];
        p.hand.splice(p.hand.indexOf(card), 1);
        p.handCount = p.hand.length;
        s.trick.push(card);
        s.moves++;
        if (s.trick.length < SEATS) {
            s.turn = (seat + 1) % SEATS;
        } else {
            const cards = s.trick.toArray();
            const leader = (seat + 1) % SEATS; // 2 seats: the other one led
            const winner = (leader + winnerIndex(cards, s.trump)) % SEATS;
            const last = s.last;
            last.cards.clear();
            last.cards.push(...cards);
            last.leader = leader;
            last.winner = winner;
            last.trump = s.trump;
            last.n++;
            s.trick.clear();
            s.players[winner].tricks++;
            if (s.players.every((q) => q.hand.length === 0)) this.deal(winner);
            else s.turn = winner;
        }
        this.broadcastPatch();
    }
}

export async function listen(port = 0) {
    const transport = new WebSocketTransport();
    const server = new Server({ transport, greet: false });
    server.define("trump", TrumpRoom);
    await server.listen(port, "127.0.0.1");
    return { server, port: transport.server.address().port };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
    const { port } = await listen(Number(process.argv[2] ?? 0));
    console.log(`listening ${port}`);
    const stop = () => process.exit(0);
    process.on("SIGTERM", stop);
    process.on("SIGINT", stop);
}
