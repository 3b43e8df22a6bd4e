// The in-flight panel: one caller (this page) fires slow requests at a route limited to 5 in flight; held, refused, finished and aborted ones, and the handler's own count.
import { byId, el } from './dom';

/** What the server says about the route (GET /api/info: `inflight`). */
export interface InflightInfo {
  path: string;
  statePath: string;
  /** Requests of one caller in flight at once. */
  inFlight: number;
  /** The rate limit it composes with. */
  limit: number;
  windowMs: number;
  holdMs: { default: number; min: number; max: number };
}

type RequestState = 'pending' | 'finished' | 'refused' | 'aborted' | 'error';

interface Tracked {
  state: RequestState;
  chip: HTMLElement;
  abort: AbortController;
}

/** This page's caller id: its own slots, apart from any other tab's (the server keys the limit on it). */
const CALLER = `page-${Math.random().toString(36).slice(2, 10)}`;
const HEADERS = { 'x-playground-caller': CALLER };
const POLL_MS = 200;

const LABEL: Record<RequestState, string> = { pending: 'in flight', finished: '200', refused: '429', aborted: 'aborted', error: 'error' };

export function setupInflight(info: InflightInfo): void {
  const panel = byId('inflight');
  byId('inflight-text').textContent =
    `Every request below comes from one caller (this page) to GET ${info.path}, limited to ${info.inFlight} in flight ` +
    `(concurrency: { limit: ${info.inFlight} }, beside ${info.limit} a minute), and its handler holds each one for a while. ` +
    'Fire more than the limit at once: the first ones hold a slot each, the rest are refused at once with 429. ' +
    'A slot comes back when its request finishes or is aborted (the connection closes).';
  const hold = el(
    'select',
    { id: 'inflight-hold' },
    ...[2, 4, 8].map((s) => el('option', { value: String(s * 1000), ...(s * 1000 === info.holdMs.default ? { selected: '' } : {}) }, `${s} s`)),
  );
  const fireMany = el('button', { type: 'button', id: 'inflight-fire', class: 'primary', 'data-fire': String(2 * info.inFlight) }, `Fire ${2 * info.inFlight}`);
  const fireOne = el('button', { type: 'button', id: 'inflight-fire-one', 'data-fire': '1' }, 'Fire 1');
  const abortAll = el('button', { type: 'button', id: 'inflight-abort' }, 'Abort the ones in flight');
  const slots = el('div', { class: 'slots', 'aria-label': 'slots in use' });
  for (let i = 0; i < info.inFlight; i++) slots.append(el('span', { class: 'slot' }));
  const inHandler = el('b', {}, '0');
  const maxInHandler = el('b', {}, '0');
  const list = el('div', { class: 'history inflight-requests', 'aria-label': 'requests' });
  const policy = el('dl', { class: 'headers' }, el('div', { class: 'muted' }, 'The headers of the last 429 show here.'));
  byId('inflight-body').replaceChildren(
    el('div', { class: 'fields' }, el('label', {}, 'Hold each for ', hold), fireMany, fireOne, abortAll),
    el(
      'div',
      { class: 'inflight-meter' },
      slots,
      el('span', {}, 'in the handler now: ', inHandler, ` of ${info.inFlight} · most at once so far: `, maxInHandler, ' (counted by the handler itself)'),
    ),
    list,
    policy,
  );

  const tracked: Tracked[] = [];
  const counts = (): Record<RequestState, number> => {
    const c: Record<RequestState, number> = { pending: 0, finished: 0, refused: 0, aborted: 0, error: 0 };
    for (const t of tracked) c[t.state]++;
    return c;
  };
  const show = () => {
    const c = counts();
    panel.dataset.pending = String(c.pending);
    panel.dataset.finished = String(c.finished);
    panel.dataset.refused = String(c.refused);
    panel.dataset.aborted = String(c.aborted);
    panel.dataset.sent = String(tracked.length);
    abortAll.disabled = c.pending === 0;
  };
  const setState = (t: Tracked, state: RequestState) => {
    t.state = state;
    t.chip.dataset.status = state;
    t.chip.className = `chip req ${state === 'pending' ? 'pending' : state === 'finished' ? 'ok' : 'no'}`;
    t.chip.firstChild!.textContent = LABEL[state];
    if (state !== 'pending') t.chip.querySelector('button')?.remove();
    show();
  };

  let polling: ReturnType<typeof setInterval> | undefined;
  let quietPolls = 0;
  let asking = false;
  const poll = async () => {
    if (asking) return;
    asking = true;
    try {
      const res = await fetch(`${info.statePath}?caller=${CALLER}`, { cache: 'no-store' });
      const state = (await res.json()) as { inHandler: number; maxInHandler: number };
      inHandler.textContent = String(state.inHandler);
      maxInHandler.textContent = String(state.maxInHandler);
      panel.dataset.inHandler = String(state.inHandler);
      panel.dataset.maxInHandler = String(state.maxInHandler);
      slots.querySelectorAll('.slot').forEach((slot, i) => slot.classList.toggle('used', i < state.inHandler));
      // Keeps polling a little after the last request ended, so the count is seen coming back to 0.
      quietPolls = counts().pending === 0 && state.inHandler === 0 ? quietPolls + 1 : 0;
      if (quietPolls >= 3 && polling !== undefined) {
        clearInterval(polling);
        polling = undefined;
        panel.dataset.inflightState = 'idle';
      }
    } catch {
      // The next poll tries again.
    } finally {
      asking = false;
    }
  };
  const startPolling = () => {
    quietPolls = 0;
    panel.dataset.inflightState = 'running';
    polling ??= setInterval(() => void poll(), POLL_MS);
  };

  const fire = (n: number) => {
    startPolling();
    for (let i = 0; i < n; i++) {
      const abort = new AbortController();
      const stop = el('button', { type: 'button', class: 'chip-abort', title: 'abort this request' }, '×');
      const t: Tracked = { state: 'pending', chip: el('span', { class: 'chip req pending', 'data-status': 'pending' }, 'in flight', stop), abort };
      stop.addEventListener('click', () => abort.abort());
      tracked.push(t);
      list.append(t.chip);
      // The browser sends them at once (its six connections per origin: the refused ones come back fast on the sixth).
      fetch(`${info.path}?ms=${hold.value}`, { headers: HEADERS, cache: 'no-store', signal: abort.signal })
        .then(async (res) => {
          await res.text();
          if (res.status === 429) {
            setState(t, 'refused');
            const rows: HTMLElement[] = [];
            for (const name of ['ratelimit-policy', 'ratelimit', 'retry-after']) {
              const value = res.headers.get(name);
              if (value !== null) rows.push(el('div', { 'data-header': name }, el('dt', {}, name), el('dd', {}, value)));
            }
            policy.replaceChildren(...rows);
          } else setState(t, res.ok ? 'finished' : 'error');
        })
        .catch(() => setState(t, abort.signal.aborted ? 'aborted' : 'error'));
    }
    while (tracked.length > 60 && tracked[0].state !== 'pending') tracked.shift()!.chip.remove();
    show();
  };
  fireMany.addEventListener('click', () => fire(2 * info.inFlight));
  fireOne.addEventListener('click', () => fire(1));
  abortAll.addEventListener('click', () => {
    for (const t of tracked) if (t.state === 'pending') t.abort.abort();
  });
  show();
  panel.dataset.inflightState = 'ready';
}
