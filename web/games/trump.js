// Fibonacci's Trump at the table: seats with whose turn it is, the indicators (trump colour
// and scoring symbol), the trick in progress and the last completed one, the viewer's hand
// with the playable cards (taken from `legal`, never re-derived here), round results,
// scores, and the final result. Rendered wholly from the latest state message; the trick,
// the turn and the counts are read from the round's `plays` (`derive`).

import { flyTrick, h, matchWords, morph, mount, phoneLayout, plateName, roundWords, sameSeats, scrollBox } from '../dom.js';
import { cardEl, cardBack, cardCode, symbolGlyph, SYMBOL_NAMES, sameCard, toCard } from '../cards.js';

/**
 * The position in a trick of its winning card: the highest trump, else the highest
 * card of the led colour. `cards` are codes, in playing order.
 */
export function trickWinnerPos(cards, trump) {
  const led = toCard(cards[0])?.colour;
  let best = 0;
  for (let i = 1; i < cards.length; i++) {
    const c = toCard(cards[i]);
    const b = toCard(cards[best]);
    const beats = c.colour === trump
      ? b.colour !== trump || c.number > b.number
      : c.colour === led && b.colour !== trump && c.number > b.number;
    if (beats) best = i;
  }
  return best;
}

/**
 * The view with what the server leaves out of it (protocol.md §6.4) filled in from the
 * round's `plays` (every card played, in playing order) and `first_leader`: `trick` and
 * `leader` (the trick on the table), `turn`, `led_colour`, `winning` (the seat winning the
 * trick so far), `last_trick`, `tricks_played`, and per seat `hand_counts`, `tricks_won`,
 * `won_counts`, `symbol_counts`; also `play_seats` (who played each of `plays`). A view
 * that has no `plays` is returned as it is.
 */
export function derive(v) {
  if (!v || !Array.isArray(v.plays)) return v;
  const n = v.players;
  const playing = v.phase === 'playing';
  const inRound = v.first_leader !== null && v.first_leader !== undefined;
  let leader = v.first_leader ?? 0;
  const tricksWon = Array(n).fill(0);
  const wonCounts = Array(n).fill(0);
  const symbolCounts = Array(n).fill(0);
  const playSeats = [];
  const win = (s, card) => {
    wonCounts[s] += 1;
    if (toCard(card)?.symbol === v.symbol) symbolCounts[s] += 1;
  };
  let lastTrick = null;
  const complete = Math.floor(v.plays.length / n);
  for (let k = 0; k < complete; k++) {
    const cards = v.plays.slice(k * n, k * n + n);
    const winner = (leader + trickWinnerPos(cards, v.trump_colour)) % n;
    tricksWon[winner] += 1;
    for (const c of cards) win(winner, c);
    lastTrick = { leader, winner, cards: cards.map((card, i) => ({ seat: (leader + i) % n, card })) };
    cards.forEach((_, i) => playSeats.push((leader + i) % n));
    leader = winner;
  }
  // A round over: its last trick's winner took both indicators.
  if (inRound && !playing && lastTrick) {
    for (const c of [v.trump_indicator, v.symbol_indicator]) if (c) win(lastTrick.winner, c);
  }
  const trick = v.plays.slice(complete * n).map((card, i) => ({ seat: (leader + i) % n, card }));
  trick.forEach((p) => playSeats.push(p.seat));
  return {
    ...v,
    leader: playing ? leader : null,
    turn: playing ? (leader + trick.length) % n : null,
    trick,
    led_colour: trick.length ? toCard(trick[0].card)?.colour ?? null : null,
    winning: trick.length ? trick[trickWinnerPos(trick.map((p) => p.card), v.trump_colour)].seat : null,
    hand_counts: Array.from({ length: n }, (_, s) =>
      (inRound ? v.hand_size - complete - (trick.some((p) => p.seat === s) ? 1 : 0) : 0)),
    tricks_won: tricksWon,
    won_counts: wonCounts,
    symbol_counts: symbolCounts,
    tricks_played: complete,
    last_trick: lastTrick,
    play_seats: playSeats,
  };
}

/** What `implied` compares with: where the round's plays stood before an update. */
export const mark = (view) => ({ round: view?.round, plays: view?.plays?.length ?? 0 });

/**
 * The moves an update made, as events for the words and sounds of `describe` (the server
 * sends no event for a card played or a trick won: the patch's card says both):
 * `card_played` for each card added to the round's `plays` since `before` (`mark`), and
 * `trick_won` for each trick it completed (a round's last card, which the next deal in
 * the same update clears from `plays`, from the round result's `last_trick`).
 */
export function implied(before, view) {
  const v = derive(view);
  if (!v?.plays || !before) return [];
  const n = v.players;
  if (v.round !== before.round) {
    // The next deal came with the last card of the round before: `round_ended` has it.
    const lr = v.last_round;
    const cards = lr?.last_trick;
    if (!lr || lr.round !== before.round || !cards?.length || before.plays % n !== n - 1) return [];
    const leader = (lr.last_trick_winner - trickWinnerPos(cards, lr.trump_colour) + n) % n;
    return [
      { type: 'card_played', seat: (leader + n - 1) % n, card: cards[cards.length - 1] },
      { type: 'trick_won', winner: lr.last_trick_winner },
    ];
  }
  const out = [];
  for (let i = before.plays; i < v.plays.length; i++) {
    out.push({ type: 'card_played', seat: v.play_seats[i], card: v.plays[i] });
    if ((i + 1) % n === 0) {
      const k = (i + 1) / n - 1;
      const cards = v.plays.slice(k * n, k * n + n);
      out.push({ type: 'trick_won', winner: v.play_seats[k * n + trickWinnerPos(cards, v.trump_colour)] });
    }
  }
  return out;
}

export const title = "Fibonacci's Trump";

// Which round result the player closed, per table, so the banner does not come back on
// every state message but does appear again for the next round.
const dismissed = new Map();

const cap = (s) => (s ? s[0].toUpperCase() + s.slice(1) : '');

/** The race target at table creation: 144 is the official game. */
export function createOptions(container) {
  const target = h('select', { testid: 'create-target' },
    [[144, '144 (the official race)'], [89, '89'], [55, '55'], [34, '34'], [21, '21 (a short game)']]
      .map(([v, l]) => h('option', { value: String(v) }, l)));
  container.append(h('label', null, 'Race to', target));
  return () => ({ target: Number(target.value) });
}

export function render(root, msg, ctx) {
  const v = derive(msg.view);
  if (!v) {
    mount(root, h('p', { class: 'muted' }, 'The match has not started yet.'));
    return;
  }
  // An abandoned match stopped mid-trick: the turn its game still names is nobody's now.
  if (msg.table?.status === 'abandoned') v.turn = null;
  const n = v.players;
  const me = ctx.mySeat;
  // A legal action is the card's code (`"r7"`); the object form is read too.
  const playable = (msg.legal || [])
    .map((a) => (typeof a === 'string' ? a : a?.type === 'play' ? a.card : null))
    .filter(Boolean);
  const isPlayable = (c) => playable.some((p) => sameCard(p, c));
  const myTurn = me !== null && v.turn === me && playable.length > 0;
  const name = (s) => (s === me ? `${ctx.seatName(s)} (you)` : ctx.seatName(s));

  const parts = [];

  // --- Final result of the match ------------------------------------------------------
  if (v.match_over) {
    // The table's winners: the game's, unless a seat abandoned (it never wins, §1.6).
    const won = Array.isArray(msg.table?.winners) ? msg.table.winners : v.winners;
    const winners = won.map(name).join(' and ');
    const iWon = me !== null && won.includes(me);
    parts.push(
      h('section', { class: `banner final ${iWon ? 'won' : ''}`, testid: 'match-result' },
        h('h2', null, iWon ? 'You won the match!' : `${winners} won the match`),
        h('p', null, 'Final scores: ', orderedScores(v, name).join(' · ')),
        sameSeats(won, v.winners) ? null : h('p', { class: 'small' }, 'A player who abandoned the match cannot win it: the win goes to those who stayed.')),
    );
  }

  // --- Round result banner (until closed) -----------------------------------------------
  const lr = v.last_round;
  // Shown until closed or until the first trick of the next round is done (the scores
  // table keeps the round's points), so it does not push the hand down all round long.
  // It goes below the hand (pushed there further down), so it never pushes the hand out of
  // sight nor covers it.
  let resultPanel = null;
  if (lr && (v.match_over || (dismissed.get(ctx.tableId) !== lr.round && (lr.round === v.round || v.tricks_played === 0)))) {
    resultPanel = roundResult(lr, v, name, v.match_over ? null : () => {
      dismissed.set(ctx.tableId, lr.round);
      root.querySelector('[data-testid="round-result"]')?.remove();
    });
  }

  // --- Indicators and round facts -------------------------------------------------------
  parts.push(
    h('section', { class: 'trump-info', testid: 'indicators' },
      indicator('Trump colour', v.trump_indicator,
        v.trump_colour ? h('span', { class: `swatch swatch-${v.trump_colour}` }, cap(v.trump_colour)) : '—',
        'trump-colour', v.trump_colour),
      indicator('Scoring symbol', v.symbol_indicator,
        v.symbol ? h('span', { class: 'big-sym' }, symbolGlyph(v.symbol), ' ', SYMBOL_NAMES[v.symbol] ?? v.symbol) : '—',
        'trump-symbol', v.symbol),
      h('div', { class: 'facts' },
        h('div', null, h('span', { class: 'muted' }, 'Round '), h('strong', { testid: 'round-no' }, String(v.round))),
        h('div', null, h('span', { class: 'muted' }, 'Race to '), h('strong', null, String(v.options?.target ?? 144))),
        v.dealer !== null && v.dealer !== undefined ? h('div', null, h('span', { class: 'muted' }, 'Dealer: '), name(v.dealer)) : null,
        h('div', null, h('span', { class: 'muted' }, 'Tricks played: '), String(v.tricks_played)))),
  );

  // --- Seats ------------------------------------------------------------------------------
  parts.push(
    h('section', { class: 'seats', testid: 'seats' },
      Array.from({ length: n }, (_, s) =>
        h('div', {
          class: ['seat-plate', v.turn === s ? 'turn' : '', s === me ? 'me' : ''].join(' '),
          testid: `seat-${s}`,
          dataset: { turn: String(v.turn === s) },
        },
          // The plate's marks (D, a card back, the symbol's glyph) are for the eye; a
          // screen reader hears their words instead (a title alone is not read out).
          h('div', { class: 'seat-name' }, plateName(name(s), s === me), v.dealer === s
            ? h('span', { class: 'chip', title: 'dealer' }, h('span', { 'aria-hidden': 'true' }, 'D'), h('span', { class: 'sr-only' }, ', dealer'))
            : null),
          h('div', { class: 'seat-stats' },
            h('span', { title: 'cards in hand' }, cardBack('xs'), h('span', { class: 'sr-only' }, 'cards in hand'), ` ${v.hand_counts[s] ?? 0}`),
            h('span', { title: 'tricks won this round' }, `tricks ${v.tricks_won[s] ?? 0}`),
            h('span', { title: `won cards with the symbol ${SYMBOL_NAMES[v.symbol] ?? ''}` },
              h('span', { 'aria-hidden': 'true' }, symbolGlyph(v.symbol)),
              h('span', { class: 'sr-only' }, `won cards with ${SYMBOL_NAMES[v.symbol] ?? 'the symbol'}`),
              ` ${v.symbol_counts[s] ?? 0}`)),
          h('div', { class: 'seat-score' }, h('strong', null, String(v.scores[s] ?? 0)), h('span', { class: 'muted' }, ' pts')),
          v.turn === s ? h('div', { class: 'turn-tag' }, s === me ? 'your turn' : 'to play') : null)),
    ),
  );

  // --- The trick ---------------------------------------------------------------------
  const trickBox = h('section', { class: 'trick-area', testid: 'trick' });
  if (v.trick.length > 0) {
    trickBox.append(
      h('div', { class: 'trick-title' }, v.led_colour ? `Trick ${v.tricks_played + 1} · ${cap(v.led_colour)} led` : `Trick ${v.tricks_played + 1}`),
      h('div', { class: 'trick-cards', dataset: { key: 'trick-cards' } },
        // The card winning so far, as the server judges it.
        v.trick.map((p) => played(p, name, p.seat === v.winning, 'trick-card', p.seat === v.winning ? 'winning so far' : null, `${v.round}-${v.tricks_played + 1}-${p.seat}`)),
        // Empty slots show how many cards are still to come.
        Array.from({ length: Math.max(0, n - v.trick.length) }, () => h('div', { class: 'slot' }))),
    );
  } else if (v.last_trick) {
    // Between tricks the table shows the trick just won, so nobody misses how it ended.
    trickBox.classList.add('showing-last');
    trickBox.append(
      h('div', { class: 'trick-title', testid: 'trick-winner' }, `${name(v.last_trick.winner)} won trick ${v.tricks_played}`),
      h('div', { class: 'trick-cards', dataset: { key: 'trick-cards' } }, v.last_trick.cards.map((p) => played(p, name, p.seat === v.last_trick.winner, 'trick-card', null, `${v.round}-${v.tricks_played}-${p.seat}`))),
    );
  } else {
    trickBox.append(h('div', { class: 'trick-title muted' },
      v.phase === 'playing' && v.turn !== null ? `${name(v.turn)} leads the first trick` : 'No cards on the table'));
  }
  // The last trick stays to look at, beside the table, while its cards travel to their
  // winner and the next trick is played.
  const lastBox = v.last_trick
    ? h('aside', { class: 'last-trick', testid: 'last-trick' },
        h('div', { class: 'muted small' }, `Last trick: ${name(v.last_trick.winner)}`),
        h('div', { class: 'mini-cards' }, v.last_trick.cards.map((p) =>
          cardEl(p.card, { size: 'xs', extraClass: p.seat === v.last_trick.winner ? 'winner' : '' }))))
    : null;
  // On a phone it comes after the hand: appearing above it after the first trick, it
  // moved the hand down (a walk saw 65 px), and the hand keeps its place all game.
  const phone = phoneLayout();
  parts.push(h('div', { class: 'centre' }, trickBox, phone ? null : lastBox));

  // --- My hand --------------------------------------------------------------------------
  if (v.hand) {
    const hint = myTurn
      ? (ctx.busy ? 'Sending…' : 'Your turn: play one of the highlighted cards.')
      : v.turn !== null && v.turn !== undefined ? `Waiting for ${name(v.turn)}.` : '';
    parts.push(
      h('section', { class: `hand-area ${myTurn ? 'my-turn' : ''}` },
        h('div', { class: 'hand-head' }, h('h3', null, `Your hand (${v.hand.length})`), h('span', { class: 'muted' }, hint)),
        // Keyed by the round: a new deal is new cards (they fly in), a played card is not.
        h('div', { class: 'hand', testid: 'hand', dataset: { key: `deal-${v.round}` }, onkeydown: handKeys },
          v.hand.length === 0 ? h('span', { class: 'muted' }, 'No cards.') : null,
          v.hand.map((c) => {
            const ok = myTurn && !ctx.busy && isPlayable(c);
            return cardEl(c, {
              size: 'lg',
              playable: ok,
              // On your turn a card you may not play can still be pressed: the server's
              // refusal then says why (must follow the led colour).
              explain: myTurn && !ctx.busy,
              testid: 'hand-card',
              key: cardCode(c),
              extraClass: myTurn && !isPlayable(c) ? 'dim' : '',
              onClick: () => ctx.act(cardCode(c)),
            });
          })),
      ),
    );
  } else {
    parts.push(h('p', { class: 'muted spectating' }, 'You are watching this match.'));
  }

  if (phone && lastBox) parts.push(lastBox);
  if (resultPanel) parts.push(resultPanel);

  // --- Scores --------------------------------------------------------------------------
  parts.push(scoresTable(v, name));

  morph(root, h('div', { class: `trump ${myTurn ? 'my-turn' : ''}` }, parts));
  flyTrick(root.querySelector('.trick-area'), '.played', v.last_trick ? root.querySelector(`[data-testid="seat-${v.last_trick.winner}"]`) : null);
}


/** Left and right arrows move along the hand. */
function handKeys(e) {
  if (e.key !== 'ArrowLeft' && e.key !== 'ArrowRight') return;
  const cards = [...e.currentTarget.querySelectorAll('button.card')];
  const i = cards.indexOf(document.activeElement);
  if (i < 0) return;
  const next = cards[(i + (e.key === 'ArrowRight' ? 1 : -1) + cards.length) % cards.length];
  next.focus();
  e.preventDefault();
}

function indicator(label, card, text, testid, value) {
  return h('div', { class: 'indicator', testid, dataset: { value: value ?? '' } },
    card ? cardEl(card, { size: 'md' }) : cardBack('md'),
    h('div', null, h('div', { class: 'muted small' }, label), h('div', { class: 'ind-value' }, text)));
}

function played(p, name, winner, testid, note = null, key = null) {
  return h('div', { class: `played ${winner ? 'winner' : ''}`, testid, dataset: { seat: String(p.seat), winning: String(winner), ...(key ? { key } : {}) } },
    cardEl(p.card, { size: 'md' }),
    h('div', { class: 'played-by' }, plateName(name(p.seat))),
    note ? h('div', { class: 'win-note', testid: 'winning-note' }, note) : null);
}

const cardWords = (card) => {
  const c = toCard(card);
  return c ? `${c.colour} ${c.number}` : 'a card';
};

/** The events of one update in words, for the screen-reader live region. */
export function describe(events, seatName, me) {
  const who = (s) => (s === me ? 'You' : seatName(s));
  const lines = [];
  for (const e of events) {
    if (e.type === 'card_played') lines.push(`${who(e.seat)} played ${cardWords(e.card)}.`);
    else if (e.type === 'trick_won') lines.push(`${who(e.winner)} won the trick.`);
    else if (e.type === 'round_started') lines.push(`Round ${e.round}: ${e.trump_colour} is trump.`);
    else if (e.type === 'round_ended') lines.push(roundWords(e, who));
    else if (e.type === 'match_ended') lines.push(matchWords(e.winners, e.scores, who));
  }
  return lines.join(' ');
}


/**
 * A refusal of the server in the player's words (the server's message is for developers).
 * `view` is the state the move was tried in.
 */
export function explainError(err, view) {
  if (err.code === 'must_follow_colour') {
    const led = derive(view)?.led_colour;
    return led ? `You must follow ${led}: you hold a ${led} card, so play one of them.` : 'You must follow the colour that was led.';
  }
  if (err.code === 'not_your_turn') return 'It is not your turn yet.';
  if (err.code === 'card_not_in_hand') return 'That card is no longer in your hand.';
  return null;
}

function orderedScores(v, name) {
  return v.scores
    .map((sc, s) => ({ sc, s }))
    .sort((a, b) => b.sc - a.sc)
    .map(({ sc, s }) => `${name(s)} ${sc}`);
}

function roundResult(lr, v, name, onClose) {
  return h('section', { class: 'banner round-result', testid: 'round-result', dataset: { round: String(lr.round) } },
    h('div', { class: 'banner-head' },
      h('h3', null, `Round ${lr.round} result`),
      onClose ? h('button', { type: 'button', class: 'btn small', onclick: onClose, testid: 'round-result-close' }, 'Close') : null),
    h('p', null,
      `${name(lr.last_trick_winner)} won the last trick and takes the indicators. `,
      'Trump was ', h('span', { class: `swatch swatch-${lr.trump_colour}` }, cap(lr.trump_colour)),
      ', the scoring symbol ', h('span', { class: 'big-sym' }, symbolGlyph(lr.symbol)), '.'),
    scrollBox(`Round ${lr.round} result`,
      h('table', { class: 'grid' },
        h('thead', null, h('tr', null,
          h('th', null, 'Player'), h('th', { class: 'num' }, 'Cards won'),
          h('th', { class: 'num' }, `${symbolGlyph(lr.symbol)} cards`), h('th', { class: 'num' }, 'Points'),
          h('th', { class: 'num' }, 'Total'))),
        h('tbody', null, lr.points.map((_, s) =>
          h('tr', null,
            h('td', null, name(s)),
            h('td', { class: 'num' }, String(lr.won_counts[s])),
            h('td', { class: 'num' }, String(lr.symbol_counts[s])),
            h('td', { class: 'num' }, (lr.points[s] > 0 ? '+' : '') + lr.points[s]),
            h('td', { class: 'num' }, h('strong', null, String(lr.totals[s]))))))),
    ),
  );
}

function scoresTable(v, name) {
  const lr = v.last_round;
  return h('section', { class: 'panel' },
    h('h3', null, 'Scores'),
    scrollBox('Scores',
      h('table', { class: 'grid scores', testid: 'scores' },
        h('thead', null, h('tr', null,
          h('th', null, 'Player'),
          h('th', { class: 'num', title: 'tricks won this round' }, 'Tricks'),
          h('th', { class: 'num', title: 'cards won this round' }, 'Cards'),
          h('th', { class: 'num', title: 'won cards with the scoring symbol' }, symbolGlyph(v.symbol)),
          lr ? h('th', { class: 'num' }, `Round ${lr.round}`) : null,
          h('th', { class: 'num' }, 'Total'))),
        h('tbody', null, v.scores.map((sc, s) =>
          h('tr', { class: [v.turn === s ? 'turn' : '', v.winners.includes(s) ? 'winner' : ''].join(' '), dataset: { seat: String(s) } },
            h('td', null, name(s)),
            h('td', { class: 'num' }, String(v.tricks_won[s] ?? 0)),
            h('td', { class: 'num' }, String(v.won_counts[s] ?? 0)),
            h('td', { class: 'num' }, String(v.symbol_counts[s] ?? 0)),
            lr ? h('td', { class: 'num' }, (lr.points[s] > 0 ? '+' : '') + lr.points[s]) : null,
            h('td', { class: 'num total', testid: `score-${s}` }, h('strong', null, String(sc)))))))),
  );
}
