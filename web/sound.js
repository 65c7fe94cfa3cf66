// Short sounds for the table: your turn, a trick won, a round over. Made with Web Audio
// (no files to download), quiet, and off while the page is hidden. The mute toggle in the
// header is remembered in this browser (localStorage `fib.muted`).
//
// Browsers let a page make sound only after the player has interacted with it, so the
// audio context starts on the first click or key press. `window.fibSounds` counts the
// sounds played, by kind, for the browser tests.

const KEY = 'fib.muted';
let ctx = null;

export const isMuted = () => localStorage.getItem(KEY) === '1';

export function setMuted(muted) {
  localStorage.setItem(KEY, muted ? '1' : '0');
}

function audio() {
  if (ctx) return ctx;
  const Ctor = window.AudioContext || window.webkitAudioContext;
  if (!Ctor) return null;
  ctx = new Ctor();
  return ctx;
}

// Created (suspended) at the first gesture, so a later sound may play.
for (const type of ['pointerdown', 'keydown']) {
  window.addEventListener(type, () => audio()?.resume?.(), { once: true, capture: true });
}

/** Notes of each sound: [frequency Hz, start s, length s]. */
const TUNES = {
  turn: [[660, 0, 0.09], [880, 0.1, 0.12]],
  trick: [[523, 0, 0.08], [659, 0.07, 0.08], [784, 0.14, 0.14]],
  round: [[392, 0, 0.12], [523, 0.12, 0.12], [659, 0.24, 0.12], [784, 0.36, 0.25]],
};

/** Plays `kind` ('turn', 'trick', 'round') unless muted or hidden. */
export function play(kind) {
  if (isMuted() || document.visibilityState === 'hidden' || !TUNES[kind]) return;
  window.fibSounds = window.fibSounds || {};
  window.fibSounds[kind] = (window.fibSounds[kind] || 0) + 1;
  // Before the player's first gesture there is no context (it could not play): making one
  // costs a slow phone ~70 ms for nothing.
  const a = ctx;
  if (!a || a.state !== 'running') return;
  const now = a.currentTime;
  for (const [f, at, len] of TUNES[kind]) {
    const osc = a.createOscillator();
    const gain = a.createGain();
    osc.type = 'triangle';
    osc.frequency.value = f;
    gain.gain.setValueAtTime(0.0001, now + at);
    gain.gain.exponentialRampToValueAtTime(0.08, now + at + 0.01);
    gain.gain.exponentialRampToValueAtTime(0.0001, now + at + len);
    osc.connect(gain).connect(a.destination);
    osc.start(now + at);
    osc.stop(now + at + len + 0.02);
  }
}
