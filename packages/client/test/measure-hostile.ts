// Issue 40 rows 1 and 7, measured: a server with an endless body or an absurd Retry-After, and a pacer fed 200,000 origins.
//
//   cd bench && node --expose-gc --import tsx ../packages/client/test/measure-hostile.ts [--src DIR] [--origins N] [--cap-ms MS]
//
// --src: the client's src folder to measure (default ../src beside this script), so that an older
// checkout's src can be measured with the same probes. Only options and API that the client had
// before issue 40 are used. Prints one line per figure. The figures before the fix (docs/security.md):
//
//   mkdir -p packages/client/.before && git archive f46056e packages/client/src | tar -x --strip-components=2 -C packages/client/.before
//   cd bench && node --expose-gc --import tsx ../packages/client/test/measure-hostile.ts --src ../packages/client/.before/src
//
// (inside packages/client, so that the old src finds the package's dependencies; delete it after.)
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';

/* eslint-disable @typescript-eslint/no-explicit-any -- the measured src is loaded at run time, untyped */
type Client = any;

function arg(name: string, fallback: string): string {
  const at = process.argv.indexOf(name);
  return at > 0 && process.argv[at + 1] !== undefined ? process.argv[at + 1] : fallback;
}

const SRC = resolve(arg('--src', resolve(__dirname, '../src')));
const ORIGINS = Number(arg('--origins', '200000'));
const CAP_MS = Number(arg('--cap-ms', '10000'));
const MB = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MB`;

function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

/** A loopback server whose first answer is a 429 problem+json with `headers` and a body that never ends (`trickle`: a byte every 20 ms). */
async function endless(headers: Record<string, string>, trickle = false): Promise<{ url: string; server: Server; requests: () => number }> {
  let n = 0;
  const server = createServer((req, res) => {
    req.resume();
    if (n++ > 0) return void res.end('ok');
    res.writeHead(429, { 'content-type': 'application/problem+json', ...headers });
    if (trickle) {
      const timer = setInterval(() => res.write(' '), 20);
      res.on('close', () => clearInterval(timer));
      return;
    }
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    const pump = () => {
      while (!res.destroyed && res.write(chunk));
    };
    res.on('drain', pump);
    pump();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, requests: () => n };
}

/** Runs `call` for at most CAP_MS: how it ended, how long it took, and the process's RSS growth meanwhile. */
async function bounded(call: () => Promise<string>): Promise<string> {
  gc();
  const rss0 = process.memoryUsage().rss;
  let peak = rss0;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 50);
  const t0 = performance.now();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const cap = new Promise<string>((r) => (timer = setTimeout(() => r(`still pending after ${CAP_MS} ms`), CAP_MS)));
  const outcome = await Promise.race([call().catch((e: Error) => `rejected ${e.name}: ${e.message.slice(0, 80)}`), cap]);
  const ms = performance.now() - t0;
  clearTimeout(timer);
  clearInterval(sampler);
  return `${outcome} | ${ms.toFixed(0)} ms | peak RSS +${MB(peak - rss0)}`;
}

async function row1(client: Client, undici: Client): Promise<void> {
  const { Agent, request } = await import('undici');
  const cases: [string, Record<string, string>, boolean][] = [
    ['with Retry-After: 0', { 'retry-after': '0' }, false],
    ['without Retry-After', {}, false],
    ['without Retry-After, a byte every 20 ms', {}, true],
  ];
  for (const [name, headers, trickle] of cases) {
    const s = await endless(headers, trickle);
    const fetch = client.pacedFetch(globalThis.fetch, { maxWaitMs: 2000, jitterMs: 0 });
    const line = await bounded(async () => {
      const res: Response = await fetch(s.url);
      await res.body?.cancel();
      return `resolved ${res.status} after ${s.requests()} request(s)`;
    });
    console.log(`row 1 | pacedFetch (maxWaitMs 2000), endless 429 problem+json ${name} | ${line}`);
    s.server.closeAllConnections();
    s.server.close();
  }
  for (const [name, headers, trickle] of cases) {
    const s = await endless(headers, trickle);
    const agent = new Agent();
    const dispatcher = agent.compose(undici.floodgatePacing({ maxWaitMs: 2000, jitterMs: 0 }));
    const line = await bounded(async () => {
      const res = await request(s.url, { dispatcher });
      res.body.on('error', () => undefined).destroy();
      return `resolved ${res.statusCode} after ${s.requests()} request(s)`;
    });
    console.log(`row 1 | undici interceptor (maxWaitMs 2000), endless 429 problem+json ${name} | ${line}`);
    s.server.closeAllConnections();
    s.server.close();
    void agent.destroy();
  }
}

async function row7(client: Client): Promise<void> {
  for (const value of ['100000000000000000000', '86400']) {
    const pacer = new client.Pacer({ jitterMs: 0 });
    const ticket = await pacer.acquire('https://a.example', pacer.budget(undefined));
    pacer.settle(ticket, { status: 429, method: 'GET', headers: { 'retry-after': value }, attempt: 0, retryAllowed: false });
    const blocked = pacer.snapshot('https://a.example').blockedForMs as number;
    console.log(`row 7 | one 429 with Retry-After: ${value} (default options) | origin held for ${blocked.toExponential(3)} ms (${(blocked / 3_600_000).toFixed(2)} h)`);
  }
  // A server that admits two, then refuses once with a huge Retry-After: the spacing it teaches.
  const pacer = new client.Pacer({ jitterMs: 0 });
  for (const status of [200, 200, 429]) {
    const ticket = await pacer.acquire('https://b.example', pacer.budget(Infinity));
    pacer.settle(ticket, { status, method: 'GET', headers: status === 429 ? { 'retry-after': '100000000000000000000' } : {}, attempt: 0, retryAllowed: false });
  }
  const spacing = pacer.snapshot('https://b.example').learnedSpacingMs as number;
  console.log(`row 7 | learned spacing after 2 admitted and one Retry-After: 1e20 (default options) | ${spacing.toExponential(3)} ms`);

  gc();
  const heap0 = process.memoryUsage().heapUsed;
  const many = new client.Pacer({ jitterMs: 0 });
  const budget = many.budget(undefined);
  for (let i = 0; i < ORIGINS; i++) {
    const t = await many.acquire(`https://o${i}.example`, budget);
    many.settle(t, { status: 200, method: 'GET', headers: { 'ratelimit-limit': '10', 'ratelimit-remaining': '9', 'ratelimit-reset': '60' }, attempt: 0 });
  }
  gc();
  const grown = process.memoryUsage().heapUsed - heap0;
  const kept = (many as { scopes: Map<string, unknown> }).scopes.size;
  console.log(`row 7 | ${ORIGINS} distinct origins through one pacer (default options) | heap +${MB(grown)} | scopes kept ${kept}`);
}

async function main(): Promise<void> {
  const client = await import(resolve(SRC, 'index.ts'));
  const undici = await import(resolve(SRC, 'undici.ts'));
  console.log(`measuring ${SRC} (node ${process.version}${(globalThis as { gc?: unknown }).gc ? ', --expose-gc' : ', no --expose-gc: heap figures include garbage'})`);
  await row1(client, undici);
  await row7(client);
  process.exit(0);
}

void main();
