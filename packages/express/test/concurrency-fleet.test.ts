// In-flight limits across a fleet: 8 Express processes on one real Redis, one caller limited to 5 in flight, a 50 ms handler that measures itself.
import { fork, type ChildProcess } from 'node:child_process';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { leasesHeld, pollUntil, startRedis, type RedisServer } from '@floodgate/testing';
import type { FleetReply, FleetSetup } from './fleet/fleet-child';

const REPO = join(__dirname, '..', '..', '..');
const PROCESSES = 8;
const IN_FLIGHT = 5;
const LEASE_MS = 2_000;

let redis: RedisServer;
/** The test's own connection, for reading the lease keys. */
let probe: ReturnType<RedisServer['client']>;
let children: ChildProcess[] = [];
let ports: number[] = [];
const agent = new Agent({ keepAlive: true, maxSockets: 64 });

function nextMessage<T extends FleetReply['type']>(child: ChildProcess, type: T): Promise<Extract<FleetReply, { type: T }>> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`child ${child.pid}: no '${type}'`)), 40_000);
    const on = (m: FleetReply) => {
      if (m.type !== type) return;
      clearTimeout(timer);
      child.off('message', on);
      resolve(m as Extract<FleetReply, { type: T }>);
    };
    child.on('message', on);
  });
}

/** One GET /work from the one caller (127.0.0.1); resolves with its status (0 when the connection failed). */
function work(port: number, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/work', agent, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', () => resolve(0));
    req.end();
  });
}

/** One GET /work from the one caller that the test aborts itself (`abort()` destroys the request); `done` resolves with its status, 0 once aborted. */
function abortable(port: number, headers: Record<string, string>): { abort: () => void; done: Promise<number> } {
  let abort!: () => void;
  const done = new Promise<number>((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/work', agent, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', () => resolve(0));
    });
    req.on('error', () => resolve(0));
    abort = () => req.destroy();
    req.end();
  });
  return { abort, done };
}

/** Leases held now by the caller (members whose expiry is after Redis TIME), over every lease key of `prefix`. */
async function held(prefix: string): Promise<number> {
  return leasesHeld(probe, `${prefix}:*:concurrency.cc`);
}

/** The most spans open at one instant. */
function maxOverlap(spans: [number, number][]): number {
  const edges = spans.flatMap(([a, b]) => [[a, 1], [b, -1]] as [number, number][]).sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  let open = 0;
  let most = 0;
  for (const [, step] of edges) most = Math.max(most, (open += step));
  return most;
}

async function startFleet(prefix: string): Promise<void> {
  children = Array.from({ length: PROCESSES }, () =>
    fork(join(__dirname, 'fleet', 'fleet-child.ts'), [], {
      cwd: REPO,
      execArgv: ['--conditions=source', '-r', join(REPO, 'packages', 'core', 'test', 'race', 'swc-register.js')],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    }),
  );
  const setup: FleetSetup = { type: 'setup', redisPort: redis.port, prefix, inFlight: IN_FLIGHT, leaseMs: LEASE_MS, handlerMs: 50 };
  ports = await Promise.all(
    children.map((child) => {
      const ready = nextMessage(child, 'ready');
      child.send(setup);
      return ready.then((m) => m.port);
    }),
  );
}

beforeAll(async () => {
  redis = await startRedis();
  probe = redis.client();
}, 30_000);

afterEach(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  children = [];
});

afterAll(async () => {
  agent.destroy();
  probe?.disconnect();
  await redis.stop();
});

it(`8 processes: the handler never sees more than ${IN_FLIGHT} of one caller's requests at once, over thousands of requests`, async () => {
  const prefix = `fleet-${Math.random().toString(36).slice(2, 8)}`;
  await startFleet(prefix);
  // FG_FLEET_REQUESTS=8000 for a longer run (docs/concurrency.md gives both); the suite sends 2,000.
  const total = Number(process.env.FG_FLEET_REQUESTS ?? 2_000);
  let sent = 0;
  const statuses: number[] = [];
  // 40 in flight across the 8 instances, round robin: far more than the caller may hold.
  await Promise.all(
    Array.from({ length: 40 }, async () => {
      while (sent < total) {
        const port = ports[sent++ % PROCESSES];
        statuses.push(await work(port));
      }
    }),
  );
  const spans = (await Promise.all(children.map((c) => {
    const reply = nextMessage(c, 'spans');
    c.send({ type: 'spans' });
    return reply;
  }))).flatMap((m) => m.spans);
  const admitted = statuses.filter((s) => s === 200).length;
  const refused = statuses.filter((s) => s === 429).length;
  const most = maxOverlap(spans);
  console.log(`concurrency fleet: ${total} requests, ${admitted} admitted, ${refused} refused (429), most in the handler at once: ${most} (limit ${IN_FLIGHT})`);
  const other = statuses.filter((s) => s !== 200 && s !== 429);
  expect({ other }).toEqual({ other: [] });
  expect(admitted + refused).toBe(total);
  expect(spans.length).toBe(admitted);
  expect(most).toBeLessThanOrEqual(IN_FLIGHT);
  // The limit was reached, so the bound was under test.
  expect(most).toBe(IN_FLIGHT);
  expect(await pollUntil(async () => ((await held(prefix)) === 0 ? 0 : undefined), { timeoutMs: 5_000, what: 'every lease released' })).toBe(0);
}, Math.max(120_000, Number(process.env.FG_FLEET_REQUESTS ?? 0) * 60));

it(`a SIGKILLed instance's leases free the caller's full limit within leaseMs (${LEASE_MS} ms); 1,000 aborted requests leave 0 leases`, async () => {
  const prefix = `fleet-${Math.random().toString(36).slice(2, 8)}`;
  await startFleet(prefix);
  // Instance 0 holds 3 slots with long requests, then dies without releasing them.
  const doomed = [0, 1, 2].map(() => work(ports[0], { 'x-delay': '60000' }));
  await pollUntil(async () => ((await held(prefix)) === 3 ? true : undefined), { timeoutMs: 5_000, what: '3 leases held' });
  children[0].kill('SIGKILL');
  const killedAt = Date.now();
  await Promise.all(doomed);
  // Meanwhile the survivors still see the dead instance's 3 slots taken: 2 of 5 free.
  const during = await Promise.all([1, 2, 3].map((i) => work(ports[i], { 'x-delay': '300' })));
  expect(during.sort()).toEqual([200, 200, 429]);
  await pollUntil(async () => ((await held(prefix)) === 0 ? true : undefined), { timeoutMs: LEASE_MS + 5_000, intervalMs: 50, what: 'the dead leases expired' });
  const freedAfterMs = Date.now() - killedAt;
  const full = await Promise.all([1, 2, 3, 4, 5].map((i) => work(ports[i], { 'x-delay': '300' })));
  console.log(`concurrency fleet: the dead instance's leases freed ${freedAfterMs} ms after SIGKILL (leaseMs ${LEASE_MS})`);
  expect(full).toEqual([200, 200, 200, 200, 200]);
  // Renewed every leaseMs / 3 at most, a lease outlives its holder by at most leaseMs (+ the poll's step and this machine's noise).
  expect(freedAfterMs).toBeLessThanOrEqual(LEASE_MS + 1_000);

  // 1,000 requests aborted by the client mid-handler, 5 at a time over the live instances: each batch
  // is aborted only once its 5 leases are seen in Redis (every one admitted, holding a slot), and the
  // next starts once they are gone (each abort freed its slot).
  await pollUntil(async () => ((await held(prefix)) === 0 ? true : undefined), { timeoutMs: 5_000, what: 'the 5 requests above released' });
  let aborted = 0;
  const abortStarted = Date.now();
  for (let round = 0; round < 200; round++) {
    const batch = [0, 1, 2, 3, 4].map((k) => abortable(ports[1 + ((round * 5 + k) % (PROCESSES - 1))], { 'x-delay': '60000' }));
    await pollUntil(async () => ((await held(prefix)) === IN_FLIGHT ? true : undefined), { timeoutMs: 5_000, intervalMs: 5, what: `round ${round}: 5 leases held` });
    for (const b of batch) b.abort();
    expect(await Promise.all(batch.map((b) => b.done))).toEqual([0, 0, 0, 0, 0]);
    aborted += batch.length;
    await pollUntil(async () => ((await held(prefix)) === 0 ? true : undefined), { timeoutMs: 5_000, intervalMs: 5, what: `round ${round}: the aborted leases gone` });
  }
  const left = await held(prefix);
  // The handlers' own count: every aborted request was inside a handler (holding its lease) when its connection closed.
  const live = children.slice(1);
  const replies = await Promise.all(live.map((c) => {
    const reply = nextMessage(c, 'spans');
    c.send({ type: 'spans' });
    return reply;
  }));
  const inHandler = replies.reduce((n, m) => n + m.abortedInHandler, 0);
  // Closed after its lease was admitted but before the handler began (seen once in ci27's 1,000 on a loaded machine).
  const beforeHandler = replies.reduce((n, m) => n + m.closedBeforeHandler, 0);
  console.log(`concurrency fleet: ${aborted} aborted requests (${inHandler} of them aborted inside the handler, ${beforeHandler} between the lease and the handler, each seen holding its lease first), ${left} leases left (${Date.now() - abortStarted} ms)`);
  expect(aborted).toBe(1_000);
  expect(inHandler + beforeHandler).toBe(1_000);
  expect(left).toBe(0);
}, 120_000);
