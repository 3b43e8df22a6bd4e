// The shedding panel: the page loads this server's event loop step by step through three routes (one per priority class) and draws which class the real LoadShedder sheds, and when.
import { byId, el } from './dom';

type Priority = 'background' | 'default' | 'critical';

/** What the server says about the routes (GET /api/info: `shedding`). */
export interface SheddingInfo {
  prefix: string;
  statePath: string;
  /** In the order they are shed. */
  priorities: Priority[];
  options: { sampleMs: number; delayMs: number };
  maxWorkMs: number;
}

interface ShedderState {
  level: number;
  utilization: number;
  delayMs: number;
  shed: { background: number; default: number };
}

/**
 * The run: CPU per request (ms) rising step by step, then a calm stretch with none. One loop per
 * class sends one request after another (50 ms apart), so the load is the handlers' own work;
 * a shed request costs next to nothing, which is what shedding buys.
 */
export const RAMP: readonly { workMs: number; forMs: number }[] = [
  { workMs: 0, forMs: 1500 },
  { workMs: 5, forMs: 1500 },
  { workMs: 10, forMs: 1500 },
  { workMs: 20, forMs: 1500 },
  { workMs: 35, forMs: 1500 },
  { workMs: 50, forMs: 2500 },
  { workMs: 0, forMs: 3000 },
];
const PAUSE_MS = 50;
const DURATION_MS = RAMP.reduce((sum, p) => sum + p.forMs, 0);
const LEVEL_TEXT = ['sheds nothing', 'sheds background', 'sheds background and default'];
const ABOUT: Record<Priority, string> = {
  background: 'reports, prefetches: shed first',
  default: 'most routes: shed next',
  critical: 'login, checkout: never shed by it',
};

function workAt(t: number): number {
  let end = 0;
  for (const phase of RAMP) {
    end += phase.forMs;
    if (t < end) return phase.workMs;
  }
  return 0;
}

const at = (t: number) => `${((Math.min(t, DURATION_MS) / DURATION_MS) * 100).toFixed(3)}%`;

interface ClassView {
  root: HTMLElement;
  track: HTMLElement;
  served: number;
  shed: number;
  firstShedMs: number | undefined;
  counts: HTMLElement;
}

export function setupShedding(info: SheddingInfo): void {
  const panel = byId('shedding');
  byId('shedding-text').textContent =
    `Three routes on this server, one per priority class, behind rateLimit({ shedding: { sampleMs: ${info.options.sampleMs}, delayMs: ${info.options.delayMs} } }): ` +
    'the load shedder samples this process\'s event loop and, while it is overloaded, answers 503 to the lowest class first. ' +
    'The run below makes each request burn more CPU, step by step, then stops. While it runs, the rest of this page\'s server answers late too: the overload is real.';
  const go = el('button', { type: 'button', id: 'shedding-run', class: 'primary' }, 'Ramp the load');
  const status = el('span', { class: 'muted', id: 'shedding-status' }, 'level 0: sheds nothing');
  const rows = el('div', { class: 'rows' });
  byId('shedding-body').replaceChildren(el('div', { class: 'fields' }, go, status), rows);

  let views = new Map<Priority, ClassView>();
  const build = () => {
    views = new Map();
    const phases = el('div', { class: 'track shed-load' });
    let start = 0;
    for (const phase of RAMP) {
      phases.append(el('span', { class: 'shed-phase', style: `left:${at(start)};width:${at(phase.forMs)}` }, phase.workMs ? `${phase.workMs} ms` : 'idle'));
      start += phase.forMs;
    }
    const children: HTMLElement[] = [
      el('section', { class: 'shed-row' }, el('div', { class: 'row-label' }, el('h3', {}, 'CPU per request'), el('p', { class: 'about' }, 'what each handler burns')), phases, el('div')),
    ];
    for (const priority of [...info.priorities].reverse()) {
      const track = el('div', { class: 'track' }, el('span', { class: 'lane-line ok-line' }), el('span', { class: 'lane-line no-line' }));
      const counts = el('div', { class: 'counts' }, 'not run yet');
      const root = el(
        'section',
        { class: 'shed-row', 'data-priority': priority, 'data-served': '0', 'data-shed': '0' },
        el('div', { class: 'row-label' }, el('h3', {}, `priority: '${priority}'`), el('p', { class: 'about' }, ABOUT[priority])),
        track,
        counts,
      );
      views.set(priority, { root, track, served: 0, shed: 0, firstShedMs: undefined, counts });
      children.push(root);
    }
    rows.replaceChildren(...children);
  };
  build();

  const record = (priority: Priority, t: number, ok: boolean) => {
    const v = views.get(priority)!;
    v.track.append(el('i', { class: ok ? 'tick ok' : 'tick no', style: `left:${at(t)}` }));
    if (ok) v.served++;
    else {
      v.shed++;
      if (v.firstShedMs === undefined) {
        v.firstShedMs = Math.round(t);
        v.root.dataset.firstShedMs = String(v.firstShedMs);
      }
    }
    v.root.dataset.served = String(v.served);
    v.root.dataset.shed = String(v.shed);
    v.counts.textContent = `${v.served} served · ${v.shed} shed (503)` + (v.firstShedMs === undefined ? '' : ` · first shed at ${(v.firstShedMs / 1000).toFixed(1)} s`);
  };
  const showLevel = (s: ShedderState) => {
    status.textContent = `level ${s.level}: ${LEVEL_TEXT[s.level] ?? ''} · event loop ${(s.utilization * 100).toFixed(0)}% busy in the last sample`;
    panel.dataset.level = String(s.level);
    panel.dataset.maxLevel = String(Math.max(s.level, Number(panel.dataset.maxLevel ?? 0)));
  };

  /** One class's loop: a request, its outcome drawn at the time it was answered, a pause, until the run ends. */
  const lane = async (priority: Priority, started: number) => {
    for (let t = 0; t < DURATION_MS; t = performance.now() - started) {
      const res = await fetch(`${info.prefix}${priority}?work=${workAt(t)}`, { cache: 'no-store' });
      const body = (await res.json()) as { shedding?: ShedderState };
      record(priority, performance.now() - started, res.ok);
      if (res.ok && body.shedding) showLevel(body.shedding);
      await new Promise((resolve) => setTimeout(resolve, PAUSE_MS));
    }
  };

  /**
   * A fresh server's first requests compile its code paths, which on a busy machine can keep its
   * loop overloaded for a second: warm the three routes up, then wait for the shedder to be calm,
   * so that the drawn run starts from level 0.
   */
  const warmUp = async () => {
    for (let i = 0; i < 10; i++) for (const p of info.priorities) await (await fetch(`${info.prefix}${p}?work=0`, { cache: 'no-store' })).text();
    const until = performance.now() + 10_000;
    for (;;) {
      const state = (await (await fetch(info.statePath, { cache: 'no-store' })).json()) as ShedderState;
      showLevel(state);
      if (state.level === 0 || performance.now() > until) return;
      await new Promise((resolve) => setTimeout(resolve, info.options.sampleMs));
    }
  };

  go.addEventListener('click', async () => {
    go.disabled = true;
    panel.dataset.sheddingState = 'warming';
    build();
    try {
      await warmUp();
      panel.dataset.sheddingState = 'running';
      panel.dataset.maxLevel = '0';
      const started = performance.now();
      await Promise.all(info.priorities.map((p) => lane(p, started)));
      const res = await fetch(info.statePath, { cache: 'no-store' });
      showLevel((await res.json()) as ShedderState);
      panel.dataset.sheddingState = 'done';
    } catch (error) {
      status.textContent = error instanceof Error ? error.message : String(error);
      panel.dataset.sheddingState = 'error';
    } finally {
      go.disabled = false;
    }
  });
  panel.dataset.sheddingState = 'ready';
}
