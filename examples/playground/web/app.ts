// The playground page's script: plays the simulation, drives the live adapter panel, the clients panel, the in-flight, override and shedding panels (web/inflight.ts, web/override.ts, web/shedding.ts) and the Redis race panel.
import { byId, el } from './dom';
import { setupInflight, type InflightInfo } from './inflight';
import { setupOverride, type OverrideInfo } from './override';
import { setupShedding, type SheddingInfo } from './shedding';
import { hotLoop, wellBehaved, HOT_LOOP_MAX_REQUESTS, type ClientName, type ClientStats } from './clients';
import {
  BOUNDS,
  DEFAULT_SETTINGS,
  PRESETS,
  PRESET_TEXT,
  Simulation,
  denseRuns,
  describeLimit,
  formatSeconds,
  scenario,
  type Lane,
  type PresetName,
  type Scenario,
  type Settings,
} from './simulation';

const ABOUT: Record<string, string> = {
  'fixed-window': 'One counter per clock window, reset at each edge.',
  'sliding-window-log': 'A timestamp per admitted request: exact.',
  'sliding-window-counter': 'Two counters, the previous one weighted: the default.',
  'token-bucket': 'Tokens refill continuously; burst = limit.',
  gcra: "Token bucket's behaviour in one timestamp.",
};

/** Why an algorithm passed the limit within one window-long span. */
const WHY_OVER: Record<string, string> = {
  'fixed-window': ': across a window edge',
  'sliding-window-counter': ': an estimate',
  'token-bucket': ': burst + refill',
  gcra: ': burst + refill',
};
/** Overshoot that is the algorithm's known weakness (red), not its design (amber). */
const FLAWED = new Set(['fixed-window']);

const app = byId<HTMLElement>('app');

// ---------------------------------------------------------------- simulation panel

interface RowView {
  lane: Lane;
  root: HTMLElement;
  track: HTMLElement;
  band: HTMLElement;
  playhead: HTMLElement;
  admitted: HTMLElement;
  denied: HTMLElement;
  max: HTMLElement;
  ratio: HTMLElement;
  drawn: number;
  /** The counts drawn beside dense bursts (redrawn as the run goes). */
  counts: HTMLElement[];
}

let preset: PresetName = 'boundary';
let runId = 0;

function readSettings(): Settings {
  const num = (id: string) => Number(byId<HTMLInputElement>(id).value);
  return { limit: num('limit'), windowMs: Math.round(num('window') * 1000), ratePerSecond: num('rate') };
}

/** The page's own bounds; values inside them go to the library, whose option errors are shown as they are. */
function checkBounds(s: Settings): string | undefined {
  if (!(s.limit >= BOUNDS.limit.min && s.limit <= BOUNDS.limit.max)) {
    return `Limit: the page shows ${BOUNDS.limit.min} to ${BOUNDS.limit.max}.`;
  }
  const ws = s.windowMs / 1000;
  if (!(ws >= BOUNDS.windowSeconds.min && ws <= BOUNDS.windowSeconds.max)) {
    return `Window: the page shows ${BOUNDS.windowSeconds.min} to ${BOUNDS.windowSeconds.max} seconds.`;
  }
  if (!(s.ratePerSecond >= BOUNDS.ratePerSecond.min && s.ratePerSecond <= BOUNDS.ratePerSecond.max)) {
    return `Rate: the page shows ${BOUNDS.ratePerSecond.min} to ${BOUNDS.ratePerSecond.max} requests per second.`;
  }
  return undefined;
}

function pct(t: number, duration: number): string {
  return `${((t / duration) * 100).toFixed(3)}%`;
}

/** Where time `t` sits across the drawn part of the timeline, clamped to it. */
function at(t: number, sc: Scenario): string {
  const { fromMs, toMs } = sc.view;
  const share = Math.min(1, Math.max(0, (t - fromMs) / (toMs - fromMs)));
  return `${(share * 100).toFixed(3)}%`;
}

/** Axis labels: every window, or every quarter window when less than two windows are drawn. */
function axisStep(sc: Scenario, windowMs: number): number {
  return sc.view.toMs - sc.view.fromMs < 2 * windowMs ? windowMs / 4 : windowMs;
}

function buildRows(sim: Simulation, sc: Scenario): RowView[] {
  const rows = byId<HTMLElement>('rows');
  rows.replaceChildren();
  const w = sim.settings.windowMs;
  const views = sim.lanes.map((lane) => {
    const track = el('div', { class: 'track' });
    for (let edge = w; edge < sc.durationMs; edge += w) {
      if (edge > sc.view.fromMs && edge < sc.view.toMs) track.append(el('span', { class: 'edge', style: `left:${at(edge, sc)}` }));
    }
    const band = el('span', { class: 'band', hidden: '' });
    const playhead = el('span', { class: 'playhead', style: 'left:0%' });
    track.append(band, el('span', { class: 'lane-line ok-line' }), el('span', { class: 'lane-line no-line' }), playhead);
    const admitted = el('b', {}, '0');
    const denied = el('b', {}, '0');
    const max = el('strong', { class: 'max-value' }, '0');
    const ratio = el('span', { class: 'ratio' });
    const root = el(
      'section',
      { class: 'row', 'data-algorithm': lane.algorithm, 'aria-label': lane.algorithm },
      el(
        'div',
        { class: 'row-label' },
        el('h3', {}, lane.algorithm),
        el('p', { class: 'config' }, describeLimit(lane.storeLimit)),
        el('p', { class: 'about' }, ABOUT[lane.algorithm] ?? ''),
      ),
      track,
      el(
        'div',
        { class: 'row-stats' },
        el('div', { class: 'max' }, max, el('span', { class: 'max-label' }, `most admitted in any ${formatSeconds(w)}`), ratio),
        el('div', { class: 'counts' }, admitted, ' admitted · ', denied, ' denied'),
      ),
    );
    rows.append(root);
    return { lane, root, track, band, playhead, admitted, denied, max, ratio, drawn: 0, counts: [] };
  });

  const axis = el('div', { class: 'axis' });
  const step = axisStep(sc, w);
  for (let t = Math.ceil(sc.view.fromMs / step) * step; t <= sc.view.toMs; t += step) {
    axis.append(el('span', { style: `left:${at(t, sc)}` }, formatSeconds(t)));
  }
  rows.append(el('div', { class: 'axis-row' }, el('div'), axis, el('div')));
  return views;
}

function paint(views: RowView[], sim: Simulation, sc: Scenario, clockMs: number): void {
  const limit = sim.settings.limit;
  for (const v of views) {
    const fresh = v.lane.outcomes.slice(v.drawn);
    for (const o of fresh) {
      v.track.append(
        el('i', {
          class: o.allowed ? 'tick ok' : 'tick no',
          style: `left:${at(o.t, sc)}`,
          title: `${formatSeconds(o.t)}: ${o.allowed ? 'admitted' : 'denied'}, ${o.remaining} left`,
        }),
      );
    }
    if (fresh.length > 0) {
      for (const old of v.counts) old.remove();
      v.counts = denseRuns(v.lane.outcomes, sc).map((run) =>
        el(
          'span',
          { class: run.allowed ? 'run-count ok' : 'run-count no', 'data-count': String(run.count), style: `left:${at(run.lastT, sc)}` },
          `${run.count}`,
        ),
      );
      v.track.append(...v.counts);
    }
    v.drawn = v.lane.outcomes.length;
    const best = sim.maxAdmittedInWindow(v.lane);
    v.admitted.textContent = String(v.lane.admitted);
    v.denied.textContent = String(v.lane.denied);
    v.max.textContent = String(best.count);
    const over = best.count > limit;
    const far = over && FLAWED.has(v.lane.algorithm);
    let note = best.count === 0 ? '' : 'within the limit';
    if (over) note = `${(best.count / limit).toFixed(1)}× the limit${WHY_OVER[v.lane.algorithm] ?? ''}`;
    v.ratio.textContent = note;
    v.ratio.className = far ? 'ratio over' : over ? 'ratio near' : 'ratio';
    v.root.classList.toggle('is-over', far);
    v.root.classList.toggle('is-near', over && !far);
    v.root.dataset.admitted = String(v.lane.admitted);
    v.root.dataset.denied = String(v.lane.denied);
    v.root.dataset.maxInWindow = String(best.count);
    if (best.count > 0) {
      const from = best.fromMs;
      const to = Math.min(sc.view.toMs, from + sim.settings.windowMs);
      const left = Math.max(from, sc.view.fromMs);
      v.band.hidden = false;
      v.band.style.left = at(left, sc);
      v.band.style.width = `${(((to - left) / (sc.view.toMs - sc.view.fromMs)) * 100).toFixed(3)}%`;
    } else {
      v.band.hidden = true;
    }
    v.playhead.style.left = at(clockMs, sc);
  }
  byId('clock').textContent = `t = ${formatSeconds(Math.min(clockMs, sc.durationMs))} of ${formatSeconds(sc.durationMs)}`;
}

function showError(message: string | undefined): void {
  const box = byId<HTMLElement>('sim-error');
  box.hidden = message === undefined;
  box.textContent = message ?? '';
}

function run(): void {
  const id = ++runId;
  const settings = readSettings();
  for (const button of document.querySelectorAll<HTMLButtonElement>('[data-preset]')) {
    button.setAttribute('aria-pressed', String(button.dataset.preset === preset));
  }
  byId('preset-text').textContent = PRESET_TEXT[preset];
  app.dataset.preset = preset;
  const bad = checkBounds(settings);
  let sim: Simulation;
  try {
    if (bad) throw new Error(bad);
    sim = new Simulation(settings);
  } catch (error) {
    // The library's FG_INVALID_OPTION message, or the page's bounds.
    showError(error instanceof Error ? error.message : String(error));
    // The rows of the last good run would read as results for the settings now shown: clear them.
    byId('rows').replaceChildren();
    byId('clock').textContent = '';
    app.dataset.runState = 'error';
    return;
  }
  showError(undefined);
  const sc = scenario(preset, settings);
  app.dataset.limit = String(settings.limit);
  app.dataset.windowMs = String(settings.windowMs);
  app.dataset.requests = String(sc.times.length);
  app.dataset.runState = 'running';
  const views = buildRows(sim, sc);
  const speed = Number(byId<HTMLSelectElement>('speed').value);
  let next = 0;
  const finish = () => {
    // Requests after the drawn part (none in the presets that frame one) still count.
    while (next < sc.times.length) sim.request(sc.times[next++]);
    paint(views, sim, sc, sc.durationMs);
    for (const v of views) v.playhead.hidden = true;
    app.dataset.runState = 'done';
  };
  if (speed <= 0) {
    finish(); // sends every request at once
    return;
  }
  const started = performance.now();
  const frame = (now: number) => {
    if (id !== runId) return;
    const clock = sc.view.fromMs + (now - started) * speed;
    while (next < sc.times.length && sc.times[next] <= clock) sim.request(sc.times[next++]);
    paint(views, sim, sc, clock);
    if (clock >= sc.view.toMs) finish();
    else requestAnimationFrame(frame);
  };
  requestAnimationFrame(frame);
}

function setupSimulation(): void {
  const params = new URLSearchParams(location.search);
  const wanted = params.get('preset');
  if (wanted && (PRESETS as readonly string[]).includes(wanted)) preset = wanted as PresetName;
  byId<HTMLInputElement>('limit').value = params.get('limit') ?? String(DEFAULT_SETTINGS.limit);
  byId<HTMLInputElement>('window').value = params.get('window') ?? String(DEFAULT_SETTINGS.windowMs / 1000);
  byId<HTMLInputElement>('rate').value = params.get('rate') ?? String(DEFAULT_SETTINGS.ratePerSecond);
  const speed = params.get('speed');
  if (speed) byId<HTMLSelectElement>('speed').value = speed;
  for (const button of document.querySelectorAll<HTMLButtonElement>('[data-preset]')) {
    button.addEventListener('click', () => {
      preset = button.dataset.preset as PresetName;
      run();
    });
  }
  for (const id of ['limit', 'window', 'rate', 'speed']) byId(id).addEventListener('change', run);
  byId('run').addEventListener('click', run);
  run();
}

// ---------------------------------------------------------------- live panel

interface Info {
  live: { framework: string; title: string; path: string; usage: string }[];
  liveLimit: { limit: number; windowMs: number; algorithm: string };
  race: { enabled: boolean; target?: string; hint: string; command: string };
  clients: { path: string; limit: number; windowMs: number; lockout: { after: number; baseMs: number; maxMs: number } };
  inflight: InflightInfo;
  override: OverrideInfo;
  shedding: SheddingInfo;
}

const SHOWN_HEADER = /^(ratelimit|x-ratelimit|retry-after)/i;

function setupLive(info: Info): void {
  const cards = byId('live-cards');
  const { limit, windowMs, algorithm } = info.liveLimit;
  byId('live-text').textContent =
    `Three routes in this server, each behind Floodgate (${algorithm}, ${limit} per ${formatSeconds(windowMs)}, ` +
    'one bucket per framework for your IP). Send requests and read the status and rate-limit headers that come back.';
  for (const route of info.live) {
    const history = el('div', { class: 'history', 'aria-label': 'statuses' });
    const headers = el('dl', { class: 'headers' }, el('div', { class: 'muted' }, 'Status and rate-limit headers show here.'));
    const status = el('span', { class: 'status' }, 'not sent yet');
    const one = el('button', { type: 'button', 'data-send': '1' }, 'Send 1');
    const burst = el('button', { type: 'button', 'data-send': String(limit + 1) }, `Send ${limit + 1}`);
    const card = el(
      'article',
      { class: 'card', 'data-framework': route.framework },
      el('div', { class: 'card-head' }, el('h3', {}, route.title), status),
      el('code', { class: 'usage' }, route.usage),
      el('div', { class: 'card-actions' }, one, burst, el('span', { class: 'path' }, `GET ${route.path}`)),
      history,
      headers,
    );
    cards.append(card);
    const send = async (count: number) => {
      one.disabled = burst.disabled = true;
      try {
        for (let i = 0; i < count; i++) {
          let res: Response;
          try {
            res = await fetch(route.path, { cache: 'no-store' });
          } catch (error) {
            status.textContent = 'network error';
            card.dataset.lastStatus = 'error';
            break;
          }
          await res.text();
          status.textContent = `${res.status} ${res.statusText}`;
          status.className = res.ok ? 'status ok' : 'status no';
          card.dataset.lastStatus = String(res.status);
          history.append(el('span', { class: res.ok ? 'chip ok' : 'chip no', title: res.statusText }, String(res.status)));
          while (history.childElementCount > 24) history.firstElementChild?.remove();
          const rows: HTMLElement[] = [];
          res.headers.forEach((value, name) => {
            if (SHOWN_HEADER.test(name)) {
              rows.push(el('div', { 'data-header': name.toLowerCase() }, el('dt', {}, name), el('dd', {}, value)));
            }
          });
          headers.replaceChildren(...(rows.length ? rows : [el('div', { class: 'muted' }, 'no rate-limit headers')]));
        }
      } finally {
        one.disabled = burst.disabled = false;
        card.dataset.sent = String(Number(card.dataset.sent ?? 0) + count);
      }
    };
    one.addEventListener('click', () => void send(1));
    burst.addEventListener('click', () => void send(limit + 1));
  }
}

// ---------------------------------------------------------------- race panel

interface RaceResult {
  requests: number;
  limit: number;
  naive: { admitted: number; errors: number };
  floodgate: { admitted: number; errors: number };
}

function bar(label: string, admitted: number, requests: number, limit: number, key: string): HTMLElement {
  const over = admitted > limit;
  return el(
    'div',
    { class: `race-row ${over ? 'over' : 'exact'}`, [`data-${key}-admitted`]: String(admitted) },
    el('div', { class: 'race-label' }, label),
    el(
      'div',
      { class: 'race-track' },
      el('span', { class: 'race-fill', style: `width:${pct(admitted, requests)}` }),
      el('span', { class: 'race-limit', style: `left:${pct(limit, requests)}`, title: `limit ${limit}` }),
    ),
    el('div', { class: 'race-num' }, el('b', {}, String(admitted)), ` admitted of ${requests}`, over ? ` (limit ${limit})` : ''),
  );
}

function setupRace(info: Info): void {
  const panel = byId('race');
  const body = byId('race-body');
  if (!info.race.enabled) {
    panel.dataset.raceState = 'disabled';
    body.replaceChildren(
      el('div', { class: 'notice' }, el('b', {}, 'No Redis configured. '), info.race.hint, el('pre', {}, info.race.command)),
    );
    return;
  }
  panel.dataset.raceState = 'ready';
  const requests = el('input', { id: 'race-requests', type: 'number', min: '2', max: '1000', value: '200' });
  const limit = el('input', { id: 'race-limit', type: 'number', min: '1', max: '1000', value: '20' });
  const go = el('button', { type: 'button', id: 'race-run', class: 'primary' }, 'Race');
  const out = el('div', { class: 'race-out' });
  body.replaceChildren(
    el(
      'div',
      { class: 'fields' },
      el('label', {}, 'Requests ', requests),
      el('label', {}, 'Limit ', limit),
      go,
      el('span', { class: 'muted' }, `Redis at ${info.race.target}`),
    ),
    out,
  );
  go.addEventListener('click', async () => {
    go.disabled = true;
    panel.dataset.raceState = 'running';
    try {
      const res = await fetch('/api/race', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ requests: Number(requests.value), limit: Number(limit.value) }),
      });
      const data = (await res.json()) as RaceResult & { error?: string };
      if (!res.ok) throw new Error(data.error ?? `HTTP ${res.status}`);
      const errors = data.naive.errors + data.floodgate.errors;
      out.replaceChildren(
        bar('naive: GET, then INCR', data.naive.admitted, data.requests, data.limit, 'naive'),
        bar('Floodgate: RedisStore', data.floodgate.admitted, data.requests, data.limit, 'floodgate'),
        el('p', { class: 'muted' }, errors ? `${errors} calls failed.` : `${data.requests} concurrent requests each; the line marks the limit.`),
      );
      panel.dataset.raceState = 'done';
    } catch (error) {
      out.replaceChildren(el('p', { class: 'error' }, error instanceof Error ? error.message : String(error)));
      panel.dataset.raceState = 'error';
    } finally {
      go.disabled = false;
    }
  });
}

// ---------------------------------------------------------------- clients panel

const CLIENT_TEXT: Record<ClientName, { title: string; about: string }> = {
  'well-behaved': {
    title: 'Well-behaved: pacedFetch',
    about: 'Reads the RateLimit fields and waits for the reset when the quota runs out (@floodgate/client).',
  },
  'hot-loop': {
    title: 'Hot loop: plain fetch',
    about: `Knows nothing of the limit: a 429 is tried again at once (at most ${HOT_LOOP_MAX_REQUESTS} requests a run).`,
  },
};

function setupClients(info: Info): void {
  const panel = byId('clients');
  const { limit, windowMs, path, lockout } = info.clients;
  byId('clients-text').textContent =
    `Both clients call ${path}, limited to ${limit} requests per ${formatSeconds(windowMs)}, each with a bucket of its own, ` +
    `for the same time. Like many public APIs, the route locks out a caller it has to refuse: for ${formatSeconds(lockout.baseMs)}, ` +
    `doubling with each refusal after that, up to ${formatSeconds(lockout.maxMs)}. Count what each sent, how many 429s it got back, and how much work got done.`;
  const seconds = el('select', { id: 'clients-seconds' }, ...[4, 6, 10, 20].map((n) => el('option', { value: String(n), ...(n === 6 ? { selected: '' } : {}) }, `${n} s`)));
  const go = el('button', { type: 'button', id: 'clients-run', class: 'primary' }, 'Run both');
  const left = el('span', { class: 'muted', id: 'clients-left' });
  const cards = el('div', { class: 'cards clients-cards' });
  const views = new Map<ClientName, HTMLElement>();
  for (const name of ['well-behaved', 'hot-loop'] as const) {
    const stat = (key: string, label: string) => el('div', { class: 'stat', 'data-stat': key }, el('b', {}, '0'), el('span', {}, label));
    const card = el(
      'div',
      { class: 'card client-card', 'data-client': name, 'data-sent': '0', 'data-too-many': '0', 'data-done': '0' },
      el('h3', {}, CLIENT_TEXT[name].title),
      el('p', { class: 'muted' }, CLIENT_TEXT[name].about),
      el('div', { class: 'stats' }, stat('sent', 'requests sent'), stat('too-many', '429s received'), stat('done', 'useful work')),
    );
    views.set(name, card);
    cards.append(card);
  }
  const show = (name: ClientName, s: ClientStats) => {
    const card = views.get(name)!;
    card.dataset.sent = String(s.sent);
    card.dataset.tooMany = String(s.tooMany);
    card.dataset.done = String(s.done);
    card.querySelector('[data-stat="sent"] b')!.textContent = String(s.sent);
    card.querySelector('[data-stat="too-many"] b')!.textContent = String(s.tooMany);
    card.querySelector('[data-stat="done"] b')!.textContent = String(s.done);
  };
  const why = el(
    'p',
    { class: 'muted', id: 'clients-why' },
    'Why pacing wins: a limit gives both clients the same units per window, so retrying at once buys no more of them; ' +
      'it only adds requests the server must refuse, and here a refusal locks the caller out, for longer each time. ' +
      'pacedFetch sends only what the RateLimit fields say is left and waits for the reset, so it is never refused, never locked out, ' +
      'and keeps working at the rate of the limit.',
  );
  byId('clients-body').replaceChildren(el('div', { class: 'fields' }, el('label', {}, 'Run for ', seconds), go, left), cards, why);
  panel.dataset.clientsState = 'ready';
  go.addEventListener('click', async () => {
    go.disabled = true;
    panel.dataset.clientsState = 'running';
    const ms = Number(seconds.value) * 1000;
    const stop = new AbortController();
    const end = performance.now() + ms;
    const tick = setInterval(() => (left.textContent = `${Math.max(0, Math.ceil((end - performance.now()) / 1000))} s left`), 250);
    setTimeout(() => stop.abort(), ms);
    try {
      await Promise.all([
        wellBehaved(path, stop.signal, (s) => show('well-behaved', s)),
        hotLoop(path, stop.signal, (s) => show('hot-loop', s)),
      ]);
      panel.dataset.clientsState = 'done';
      left.textContent = 'done';
    } catch (error) {
      left.textContent = error instanceof Error ? error.message : String(error);
      panel.dataset.clientsState = 'error';
    } finally {
      clearInterval(tick);
      go.disabled = false;
    }
  });
}

// ---------------------------------------------------------------- start

setupSimulation();
fetch('/api/info')
  .then((res) => res.json() as Promise<Info>)
  .then((info) => {
    setupLive(info);
    setupClients(info);
    setupInflight(info.inflight);
    setupOverride(info.override);
    setupShedding(info.shedding);
    setupRace(info);
  })
  .catch((error: unknown) => {
    byId('live-cards').append(el('p', { class: 'error' }, `Could not reach the server: ${String(error)}`));
  });
