// The generated attack suite every adapter runs, on the memory store and a real redis-server: fast-check request sequences that vary what a client controls, checked against the limiter's invariants.
//
// Each run makes 1 to 3 real callers (IPv4 or IPv6 /64, named fresh per run) and up to 24 requests
// among them, most to one route, sent over real HTTP on 127.0.0.1 through the framework, often in
// concurrent bursts. The test is the one trusted proxy (one hop on loopback): it appends the real
// caller last to X-Forwarded-For, after whatever the client wrote. Varied: the method (any llhttp
// method, invented tokens), the path's spelling (case, trailing and duplicate slashes, a percent-encoded letter, dot
// segments, parameters, queries), X-Forwarded-For (junk hops, its name's case, separate lines),
// Forwarded and X-Real-IP, API key headers (Authorization: Bearer and X-Api-Key, issued or invented,
// several at once, the scheme's case), the JSON body's `username` on /login, and `x-cost` on /cost and /rawcost.
//
// Invariants, each run: (1) admitted at most the limit per real caller or issued key, per route
// pattern (and per account on /login); (2) the store's entries and the store's bucket claims grow
// by a bound of the run's real callers, keys and accounts, not by the values sent; (3) no unhandled
// rejection; (4) every 429 carries RateLimit-Limit/-Remaining/-Reset and Retry-After, once each
// (no Retry-After for a cost that can never fit), and every answer from a handler its quota headers.
//
// Replay and longer runs (docs/security.md#the-generated-attack-suite):
//   FG_ATTACK_SEED=<seed> FG_ATTACK_PATH=<path> pnpm exec jest packages/koa/test/generated-attacks.test.ts -t 'memory'
//   FG_ATTACK_RUNS=500 pnpm exec jest packages/hono/test/generated-attacks.test.ts
// FG_ATTACK_RUNS sets the runs per adapter and store (default DEFAULT_RUNS); FG_ATTACK_SHOW=1 prints every run;
// FG_ATTACK_ALL=1 (or a comma-separated list of names) puts back what KNOWN_OPEN leaves out (attack-arbitraries.ts).
import { Agent } from 'node:http';
import { MemoryStore, RedisStore, type HttpRateLimitOptions, type Store } from '@floodgate/core';
import { runtimeFor } from '@floodgate/core/internal';
import fc from 'fast-check';
import { attackRun, KNOWN_OPEN, type AttackRequest, type AttackRun } from './attack-arbitraries';
import { accountOf, costOf, headerViolations, limitViolations, rawCostOf, ROUTES } from './attack-invariants';
import { callerOf, ISSUED_KEY, poolsFor, sendRun, toWire, type RunPools, type WireAnswer, type WireRequest } from './attack-wire';
import type { AdapterHarness, AppSpec, RunningApp } from './harness';
import { exactly, quietLogger, useRedisSuite } from './requests';

/** Runs per adapter and store in `pnpm test` (docs/security.md#the-generated-attack-suite has the measured time). */
export const DEFAULT_RUNS = 100;
/** Store entries one bucket may hold (a gcra state is one key; slack for the extra key's refunds and the block record). */
const ENTRIES_PER_BUCKET = 2;
/** Bucket claims one store may hold: 5 routes and `<unmatched>`, and the account key's scope on /login, for each mounting's limiters. */
const CLAIMS_MAX = 8;
/**
 * Claims a request may add to those the app made when it started (Fastify claims its routes at
 * registration, one per method of an all-method route): `<unmatched>` and the account key's scope.
 */
const LAZY_CLAIMS = 2;

/** The time one property may take, shrinking included: far above a passing run's (about 0.1 s per run). */
const timeLimitMs = (numRuns: number) => 30_000 + numRuns * 2_000;

const envNumber = (name: string): number | undefined => (process.env[name] === undefined || process.env[name] === '' ? undefined : Number(process.env[name]));

/** The app every run goes through: five routes, an issued-key lookup, a body parser, one trusted proxy hop. */
function specFor(store: Store, mounting: AppSpec['mounting']): AppSpec {
  const username = (req: { body?: { username?: unknown }; request?: { body?: { username?: unknown } } }) => (req.body ?? req.request?.body)?.username as string | undefined;
  const options: HttpRateLimitOptions<any> = {
    logger: quietLogger,
    store,
    prefix: `gen${Math.random().toString(36).slice(2, 10)}`,
    ...exactly(ROUTES.all.limit),
    // A lookup that takes a few ms (by the key's length, so a replay takes the same), so that lookups interleave with decisions.
    resolveKey: async (key: string) => {
      await new Promise((resolve) => setTimeout(resolve, key.length % 3));
      return ISSUED_KEY.test(key) ? { account: key } : null;
    },
  };
  return {
    options,
    mounting,
    trustProxy: true,
    jsonBody: true,
    routes: [
      { method: 'ALL', path: ROUTES.all.pattern },
      { method: 'GET', path: ROUTES.items.pattern },
      { method: 'POST', path: ROUTES.login.pattern, options: { ...exactly(ROUTES.login.limit), extraKeys: [{ name: 'account', key: username, ...exactly(2) }] } },
      { method: 'POST', path: ROUTES.cost.pattern, options: { ...exactly(ROUTES.cost.limit), cost: (req: { headers: Record<string, unknown> }) => costOf(req.headers['x-cost']) } },
      { method: 'POST', path: ROUTES.rawcost.pattern, options: { ...exactly(ROUTES.rawcost.limit), cost: (req: { headers: Record<string, unknown> }) => rawCostOf(req.headers['x-cost']) } },
    ],
  };
}

interface Target {
  readonly label: string;
  readonly app: RunningApp;
  readonly store: Store;
  /** The store's bucket claims once the app had started. */
  readonly claimsAtStart: number;
}

/** What one store holds now: its entry count (the memory store's LRU, or the Redis server's keys). */
async function entriesOf(store: Store, redis: () => Promise<number>): Promise<number> {
  return store instanceof MemoryStore ? store.size : redis();
}

/** A request and its answer, one line each, for a failure's message. */
function describeRun(run: AttackRun, pools: RunPools, wires: readonly WireRequest[], answers: readonly WireAnswer[]): string {
  const callers = pools.callers.map((c, i) => `caller ${i}: ${c.family === 'v4' ? c.base : `${c.base}::/64`}`).join('; ');
  const lines = run.requests.map((r: AttackRequest, i) => {
    const w = wires[i];
    const pairs: string[] = [];
    for (let k = 0; k < w.headers.length; k += 2) pairs.push(`${w.headers[k]}: ${w.headers[k + 1].length > 60 ? `${w.headers[k + 1].slice(0, 60)}...` : w.headers[k + 1]}`);
    const a = answers[i];
    const quota = a.headers.filter(([n]) => /^(ratelimit|retry-after)/i.test(n)).map(([n, v]) => `${n}: ${v}`);
    const account = accountOf(r, pools);
    return `  #${i}${r.withPrevious && i > 0 ? ' (with the previous)' : ''} caller ${callerOf(r, pools).index} -> ${w.method} ${w.path.length > 80 ? `${w.path.slice(0, 80)}...` : w.path} [${pairs.join(' | ')}]${w.body !== undefined ? ` body ${w.body.slice(0, 80)}` : ''}${account ? ` (account ${account})` : ''}\n      => ${a.status}${a.error ? ` (${a.error})` : ''} ${quota.join(', ')} ${a.body.slice(0, 80)}`;
  });
  return `${callers}\n${lines.join('\n')}`;
}

let runCount = 0;

/** One property run against one of the targets: sends the run, then checks the four invariants; throws a readable report on a violation. */
async function checkRun(run: AttackRun, targets: readonly Target[], agent: Agent, redisKeys: () => Promise<number>, tally: Map<string, number>): Promise<void> {
  const target = targets[run.mounting % targets.length];
  const id = ++runCount;
  const pools = poolsFor(run, id);
  const wires = run.requests.map((r) => toWire(r, pools));
  const rejections: unknown[] = [];
  const onRejection = (reason: unknown) => rejections.push(reason);
  process.on('unhandledRejection', onRejection);
  const entriesBefore = await entriesOf(target.store, redisKeys);
  const claimsBefore = runtimeFor(target.store).claims.size;
  let answers: WireAnswer[];
  try {
    answers = await sendRun(agent, target.app.port, wires, run.requests.map((r) => r.withPrevious));
    // A rejection nobody handled is reported after the microtasks of its turn: let them run.
    await new Promise((resolve) => setImmediate(resolve));
  } finally {
    process.off('unhandledRejection', onRejection);
  }
  for (const a of answers) {
    const key = a.status === 0 ? `0 (${a.error})` : String(a.status);
    tally.set(key, (tally.get(key) ?? 0) + 1);
  }
  const problems = [...limitViolations(run.requests, answers, pools), ...headerViolations(run.requests, answers)];
  const issuedUsed = new Set(wires.flatMap((w) => w.headers.filter((_, k) => k % 2 === 1)).flatMap((v) => v.split(/[\s,]+/)).filter((v) => ISSUED_KEY.test(v)));
  const accounts = new Set(run.requests.map((r) => accountOf(r, pools)).filter((a) => a !== undefined));
  const patterns = Object.keys(ROUTES).length + 1; // and <unmatched>
  const bound = ENTRIES_PER_BUCKET * ((pools.callers.length + issuedUsed.size) * patterns + accounts.size);
  const grown = (await entriesOf(target.store, redisKeys)) - entriesBefore;
  if (grown > bound) problems.push(`the store grew by ${grown} entries in this run; its bound for ${pools.callers.length} callers, ${issuedUsed.size} issued keys and ${accounts.size} accounts is ${bound}`);
  // Claims outlive a run: a run fails when it adds one past the bound (the scopes listed say what minted them).
  const claims = [...runtimeFor(target.store).claims.keys()];
  if (claims.length > Math.max(CLAIMS_MAX, target.claimsAtStart + LAZY_CLAIMS) && claims.length > claimsBefore) {
    const scopes = claims.map((c) => c.split('\u0000').slice(1).join(' '));
    const bound = Math.max(CLAIMS_MAX, target.claimsAtStart + LAZY_CLAIMS);
    problems.push(`the store holds ${claims.length} bucket claims (at most ${bound} for this app's routes), ${claims.length - claimsBefore} new in this run: ${scopes.join('; ')}`);
  }
  for (const reason of rejections) problems.push(`unhandled rejection: ${reason instanceof Error ? (reason.stack ?? reason.message) : String(reason)}`);
  if (process.env.FG_ATTACK_SHOW === '1') console.log(`${target.label}, run ${id}:\n${describeRun(run, pools, wires, answers)}`);
  if (problems.length > 0) throw new Error(`${target.label}, run ${id}:\n- ${problems.join('\n- ')}\n${describeRun(run, pools, wires, answers)}`);
}

/**
 * Registers the generated attack suite for these harnesses (one test file per adapter): one
 * redis-server for the file, and per harness and store one app per mounting, started once.
 */
export function runGeneratedAttackSuite(harnesses: readonly AdapterHarness[]): void {
  const numRuns = envNumber('FG_ATTACK_RUNS') ?? DEFAULT_RUNS;
  const seed = envNumber('FG_ATTACK_SEED');
  const path = process.env.FG_ATTACK_PATH || undefined;
  const open = Object.entries(KNOWN_OPEN).filter(([, on]) => on).map(([name]) => name);
  describe(`generated attacks (${numRuns} runs per store${open.length ? `; known open, left out: ${open.join(', ')}` : ''})`, () => {
    const suite = useRedisSuite();
    const agent = new Agent({ keepAlive: true, maxSockets: 8 });
    afterAll(() => agent.destroy());
    for (const h of harnesses) {
      for (const kind of ['memory', 'redis'] as const) {
        it(`through ${h.name} on the ${kind} store: no caller gets more than its limit, state stays bounded, every 429 has its headers`, async () => {
          const targets: Target[] = [];
          for (const mounting of h.mountings) {
            const store = kind === 'memory' ? new MemoryStore() : new RedisStore({ client: suite().client, timeoutMs: 5_000 });
            const app = await h.start(specFor(store, mounting));
            suite().apps.push(app);
            targets.push({ label: `${h.name}, ${kind} store, ${mounting}`, app, store, claimsAtStart: runtimeFor(store).claims.size });
          }
          const redisKeys = () => suite().client.dbsize();
          const tally = new Map<string, number>();
          await fc.assert(
            fc.asyncProperty(attackRun(targets.length), (run) => checkRun(run, targets, agent, redisKeys, tally)),
            // A bound on the whole property, shrinking included (each shrink step sends a run again): past it fast-check
            // reports the failure with the smallest counterexample found so far.
            { numRuns, seed, path, endOnFailure: path !== undefined, interruptAfterTimeLimit: timeLimitMs(numRuns) },
          );
          // What the runs met, so that a run that stops reaching the limiter shows (0 is a refused or cut-off request).
          const seen = [...tally].sort(([a], [b]) => a.localeCompare(b)).map(([status, n]) => `${n} x ${status}`);
          console.log(`generated | ${h.name} | ${kind} | ${numRuns} runs: ${seen.join(', ')}`);
        }, timeLimitMs(numRuns) + 30_000);
      }
    }
  });
}
