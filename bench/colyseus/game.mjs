// The rules of the simplified two-player trick-taking game that both benchmarks play
// (the same shape as Fibonacci's Trump under `loadgen run --mode flat`): a 60-card deck of
// 5 colours × 12 numbers, 15 cards dealt to each of 2 players, a random trump colour,
// follow the led colour if you can, the highest trump wins the trick if any was played,
// else the highest card of the led colour; the winner leads next; when the hands are
// empty, deal again.
//
// Card ids run from 1 to 60 (never 0: @colyseus/schema 3.0.76 mis-decodes a 0 when a
// list loses an item and gains a 0 in the same update).

export const COLOURS = 5;
export const NUMBERS = 12;
export const HAND = 15;
export const SEATS = 2;

export const colour = (card) => Math.floor((card - 1) / NUMBERS);
export const number = (card) => ((card - 1) % NUMBERS) + 1;

/** A shuffled 60-card deck. */
export function shuffled(random = Math.random) {
    const deck = [];
    for (let c = 1; c <= COLOURS * NUMBERS; c++) deck.push(c);
    for (let i = deck.length - 1; i > 0; i--) {
        const j = Math.floor(random() * (i + 1));
        [deck[i], deck[j]] = [deck[j], deck[i]];
    }
    return deck;
}

/** The cards of `hand` that may be played onto `trick` (the cards on the table, leader's first). */
export function legal(hand, trick) {
    if (trick.length === 0) return [...hand];
    const led = colour(trick[0]);
    const following = hand.filter((c) => colour(c) === led);
    return following.length > 0 ? following : [...hand];
}

/** Why `card` may not be played from `hand` onto `trick`, or null if it may. */
export function illegal(hand, trick, card) {
    if (!hand.includes(card)) return "not_in_hand";
    if (trick.length > 0) {
        const led = colour(trick[0]);
        if (colour(card) !== led && hand.some((c) => colour(c) === led)) return "must_follow";
    }
    return null;
}

/** The index in `trick` (leader's card first) of the card that wins it. */
export function winnerIndex(trick, trump) {
    let best = 0;
    for (let i = 1; i < trick.length; i++) {
        const c = trick[i], b = trick[best];
        const cTrump = colour(c) === trump, bTrump = colour(b) === trump;
        if (cTrump && !bTrump) best = i;
        else if (cTrump === bTrump && colour(c) === colour(b) && number(c) > number(b)) best = i;
        // Otherwise c is an off-colour discard, or lower: b stays ahead.
    }
    return best;
}
