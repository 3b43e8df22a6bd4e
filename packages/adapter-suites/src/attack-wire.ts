// The generated attack suite's wire: a generated request made concrete from its run's pools (callers, issued keys, accounts) and sent through Node's HTTP client, raw header list and all.
import { type Agent, request as httpRequest } from 'node:http';
import { ACCOUNTS, ISSUED_KEYS, type AttackRequest, type AttackRun } from './attack-arbitraries';

/** Issued keys look like this; resolveKey answers every other key unknown. */
export const ISSUED_KEY = /^fgissued\d+x\d+$/;

/** A run's own callers, keys and accounts: fresh names per run, so no run shares a bucket with another. */
export interface RunPools {
  readonly callers: readonly { readonly family: 'v4' | 'v6'; readonly base: string }[];
  readonly issued: readonly string[];
  readonly accounts: readonly string[];
}

export function poolsFor(run: AttackRun, id: number): RunPools {
  const hi = (id >> 8) & 255;
  const lo = id & 255;
  return {
    callers: run.callers.map((family, k) => ({ family, base: family === 'v4' ? `10.${hi}.${lo}.${k + 1}` : `2001:db8:${id.toString(16)}:${k + 1}` })),
    issued: Array.from({ length: ISSUED_KEYS }, (_, i) => `fgissued${id}x${i}`),
    accounts: Array.from({ length: ACCOUNTS }, (_, i) => `victim${id}x${i}`),
  };
}

/** The pool names behind the generator's placeholders, in any string or structure. */
export function fill(value: unknown, pools: RunPools): unknown {
  if (typeof value === 'string') {
    return value.replace(/\u0000(issued|account|long)(\d+)/g, (_m, kind: string, i: string) =>
      kind === 'issued' ? pools.issued[Number(i)] : kind === 'account' ? pools.accounts[Number(i)] : 'x'.repeat(Number(i)),
    );
  }
  if (Array.isArray(value)) return value.map((v) => fill(v, pools));
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fill(v, pools)]));
  return value;
}

/** The real caller of a request: its index in the pool, and the address the trusted proxy writes for it. */
export function callerOf(r: AttackRequest, pools: RunPools): { index: number; address: string } {
  const index = r.caller % pools.callers.length;
  const { family, base } = pools.callers[index];
  const s = r.spelling;
  if (family === 'v4') return { index, address: s.mapped ? `::ffff:${base}` : base };
  const iid = s.iid.toString(16);
  const full = `${base.split(':').map((p) => p.padStart(4, '0')).join(':')}:0000:0000:0000:${iid.padStart(4, '0')}`;
  const spelled = s.full ? full : `${base}::${iid}`;
  return { index, address: s.upper ? spelled.toUpperCase() : spelled };
}

/** What goes on the wire for one request: method, path, the flat raw header list (names as spelled, duplicates kept) and the body. */
export interface WireRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: string[];
  readonly body: string | undefined;
}

export function toWire(r: AttackRequest, pools: RunPools): WireRequest {
  const headers: string[] = [];
  const real = callerOf(r, pools).address;
  const f = r.forwarded;
  // The test is the trusted proxy: it appends the real caller last, on the attacker's line or on a line of its own.
  if (f.junk.length > 0 && f.ownLine) headers.push(f.name, f.junk.join(', '), 'X-Forwarded-For', real);
  else headers.push(f.name, [...f.junk, real].join(', '));
  if (f.forwardedHeader !== null) headers.push('Forwarded', f.forwardedHeader);
  if (f.realIp !== null) headers.push('X-Real-IP', f.realIp);
  for (const [name, value] of r.keys) headers.push(name, fill(value, pools) as string);
  if (r.cost !== null) headers.push('x-cost', r.cost);
  let body: string | undefined;
  if (r.body) {
    body = r.body.malformed ? '{"username":' : JSON.stringify(r.body.username === undefined ? {} : { username: fill(r.body.username, pools) });
    if (r.body.contentType !== null) headers.push('Content-Type', r.body.contentType);
    headers.push('Content-Length', String(Buffer.byteLength(body)));
  }
  return { method: r.method, path: fill(r.path, pools) as string, headers, body };
}

/** One answer: status (0 when the server closed the connection or Node's client refused), raw header pairs, and the body's first 64 KB. */
export interface WireAnswer {
  readonly status: number;
  readonly headers: readonly (readonly [string, string])[];
  readonly body: string;
  readonly error?: string;
}

export function send(agent: Agent, port: number, w: WireRequest): Promise<WireAnswer> {
  return new Promise((resolve) => {
    let req;
    try {
      // A raw list: names go out as spelled and duplicates as separate lines (Node's server requires Host).
      const headers = ['Host', `127.0.0.1:${port}`, ...w.headers];
      req = httpRequest({ host: '127.0.0.1', port, method: w.method, path: w.path, headers: headers as unknown as Record<string, string>, agent });
    } catch (error) {
      resolve({ status: 0, headers: [], body: '', error: (error as Error).message });
      return;
    }
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        if (size < 65_536) chunks.push(c);
        size += c.length;
      });
      res.on('end', () => {
        const pairs: [string, string][] = [];
        for (let i = 0; i < res.rawHeaders.length; i += 2) pairs.push([res.rawHeaders[i], res.rawHeaders[i + 1]]);
        resolve({ status: res.statusCode ?? 0, headers: pairs, body: Buffer.concat(chunks).toString('utf8') });
      });
      res.on('error', (error) => resolve({ status: 0, headers: [], body: '', error: error.message }));
    });
    req.on('error', (error) => resolve({ status: 0, headers: [], body: '', error: error.message }));
    req.end(w.body);
  });
}

/** Sends a run's requests in order, each group of `withPrevious` requests together; answers in request order. */
export async function sendRun(agent: Agent, port: number, wires: readonly WireRequest[], together: readonly boolean[]): Promise<WireAnswer[]> {
  const answers: WireAnswer[] = new Array(wires.length);
  let i = 0;
  while (i < wires.length) {
    let j = i + 1;
    while (j < wires.length && together[j]) j++;
    const group = await Promise.all(wires.slice(i, j).map((w) => send(agent, port, w)));
    group.forEach((a, k) => (answers[i + k] = a));
    i = j;
  }
  return answers;
}
