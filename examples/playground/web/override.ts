// The override panel: this page's requests to one limited route, an override set and cleared for this caller through the server's endpoints (limiter.override), and the limit in force read back from each response's RateLimit headers.
import { byId, el } from './dom';

/** What the server says about the route (GET /api/info: `override`). */
export interface OverrideInfo {
  prefix: string;
  path: string;
  /** The route as the override names it, e.g. 'GET /api/override/hello'. */
  route: string;
  limit: number;
  windowMs: number;
  /** The most an override may set (`limitCeiling`). */
  ceiling: number;
  ttlMs: { default: number; min: number; max: number };
}

interface OverrideView {
  limit: number;
  reason?: string;
  endsAt: number;
}

/** This page's caller id: its own bucket and its own override, apart from any other tab's. */
const CALLER = `page-${Math.random().toString(36).slice(2, 10)}`;
const HEADERS = { 'x-playground-caller': CALLER };
const SHOWN = ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset', 'retry-after'];

export function setupOverride(info: OverrideInfo): void {
  const panel = byId('override');
  byId('override-text').textContent =
    `GET ${info.path} allows ${info.limit} requests a minute per caller (this page is one). ` +
    `Set an override for this caller on '${info.route}' and the very next request is decided with it: ` +
    'RateLimit-Limit says the limit in force, the count already used is kept, 0 refuses every request until the override ends. ' +
    'Clear it and the route\'s own limit is back. The server calls limiter.override({ key, route }, limit, { ttlMs }) and limiter.clearOverride(...).';
  const limit = el(
    'select',
    { id: 'override-limit' },
    ...[0, 2, 3, 5, 20].map((n) => el('option', { value: String(n), ...(n === 3 ? { selected: '' } : {}) }, String(n))),
  );
  const ttl = el(
    'select',
    { id: 'override-ttl' },
    ...[10, 60, 120].map((s) => el('option', { value: String(s * 1000), ...(s * 1000 === info.ttlMs.default ? { selected: '' } : {}) }, `${s} s`)),
  );
  const setBtn = el('button', { type: 'button', id: 'override-set', class: 'primary' }, 'Set override');
  const clearBtn = el('button', { type: 'button', id: 'override-clear' }, 'Clear override');
  const one = el('button', { type: 'button', id: 'override-send', 'data-send': '1' }, 'Send 1');
  const status = el('span', { class: 'status', id: 'override-status' }, 'not sent yet');
  const inForce = el('p', { class: 'muted', id: 'override-in-force' }, `No override: the route's limit, ${info.limit} a minute.`);
  const history = el('div', { class: 'history', 'aria-label': 'statuses' });
  const headers = el('dl', { class: 'headers' }, el('div', { class: 'muted' }, 'Status and rate-limit headers show here.'));
  const error = el('p', { class: 'error', role: 'alert', hidden: '' });
  byId('override-body').replaceChildren(
    el('div', { class: 'fields' }, el('label', {}, 'Limit ', limit), el('label', {}, 'for ', ttl), setBtn, clearBtn),
    inForce,
    el('div', { class: 'card-actions' }, one, el('span', { class: 'path' }, `GET ${info.path}`), status),
    history,
    headers,
    error,
  );

  const showOverride = (view: OverrideView | null) => {
    panel.dataset.override = view ? String(view.limit) : 'none';
    inForce.textContent = view
      ? `Override in force for this caller: limit ${view.limit}, until ${new Date(view.endsAt).toLocaleTimeString()} (it expires by itself).`
      : `No override: the route's limit, ${info.limit} a minute.`;
  };
  const fail = (message: string) => {
    error.textContent = message;
    error.hidden = false;
  };

  let sent = 0;
  const send = async () => {
    one.disabled = true;
    try {
      const res = await fetch(info.path, { headers: HEADERS, cache: 'no-store' });
      await res.text();
      status.textContent = `${res.status} ${res.statusText}`;
      status.className = res.ok ? 'status ok' : 'status no';
      panel.dataset.lastStatus = String(res.status);
      panel.dataset.lastLimit = res.headers.get('ratelimit-limit') ?? '';
      panel.dataset.lastRemaining = res.headers.get('ratelimit-remaining') ?? '';
      history.append(el('span', { class: res.ok ? 'chip ok' : 'chip no', title: `limit ${panel.dataset.lastLimit}` }, String(res.status)));
      while (history.childElementCount > 24) history.firstElementChild?.remove();
      const rows: HTMLElement[] = [];
      for (const name of SHOWN) {
        const value = res.headers.get(name);
        if (value !== null) rows.push(el('div', { 'data-header': name }, el('dt', {}, name), el('dd', {}, value)));
      }
      headers.replaceChildren(...rows);
    } catch {
      status.textContent = 'network error';
      panel.dataset.lastStatus = 'error';
    } finally {
      one.disabled = false;
      panel.dataset.sent = String(++sent);
    }
  };
  const change = async (action: 'set' | 'clear') => {
    setBtn.disabled = clearBtn.disabled = true;
    error.hidden = true;
    try {
      const res = await fetch(`${info.prefix}${action}`, {
        method: 'POST',
        headers: { ...HEADERS, 'content-type': 'application/json' },
        body: action === 'set' ? JSON.stringify({ limit: Number(limit.value), ttlMs: Number(ttl.value) }) : undefined,
      });
      const body = res.status === 204 ? {} : ((await res.json()) as { override?: OverrideView; error?: string });
      if (!res.ok) return fail(body.error ?? `${res.status} ${res.statusText}`);
      // What the limiter lists now (listOverrides), not what the page asked for.
      const listed = (await (await fetch(`${info.prefix}state`, { headers: HEADERS, cache: 'no-store' })).json()) as { override: OverrideView | null };
      showOverride(listed.override);
      panel.dataset.overrideState = action === 'set' ? 'set' : 'cleared';
    } catch (e) {
      fail(e instanceof Error ? e.message : String(e));
    } finally {
      setBtn.disabled = clearBtn.disabled = false;
    }
  };
  one.addEventListener('click', () => void send());
  setBtn.addEventListener('click', () => void change('set'));
  clearBtn.addEventListener('click', () => void change('clear'));

  // A new page is a new caller: it starts with no override.
  showOverride(null);
  panel.dataset.overrideState = 'ready';
}
