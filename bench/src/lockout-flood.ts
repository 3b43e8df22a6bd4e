// `pnpm bench:lockout-flood` (issue #40 row 4): a lock-out on the default MemoryStore under a flood of other /64s, and the heap per protected entry.
//
//   pnpm bench:lockout-flood                   both parts, about 20 s
//   pnpm bench:lockout-flood --callers 150000 --entries 10000
//
// Part 1: a login route (2 tries a minute, locked out for an hour at the first refusal) on the
// default MemoryStore (maxKeys 100,000; maxProtectedKeys default) and block cache (10,000). One
// caller is locked out; then `--callers` distinct IPv6 /64s send one request each, and 10,001 more
// get themselves refused and locked out (more blocks than the block cache holds). The line says
// whether the locked-out caller is still refused. Part 2: the heap a refused subject's states take
// in the protected share, against an admitted subject's in the plain LRU (after gc, per key).
import { parseArgs } from 'node:util';
import { createLimiter, MemoryStore, type Limiter } from '@floodgate/core';

const { values } = parseArgs({
  options: {
    callers: { type: 'string', default: '150000' },
    entries: { type: 'string', default: '10000' },
  },
});
const callers = Number(values.callers);
const entries = Number(values.entries);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc (pnpm bench:lockout-flood does)');

const quiet = { warn: (m: string) => void warnings.push(m), error: () => undefined };
const warnings: string[] = [];

/** The /64 of caller i: 65,536 per /48. */
const subject = (tag: string, i: number) => `2001:db8:${tag}${(i >> 16).toString(16)}:${(i & 0xffff).toString(16)}::/64`;

function heapMb(): number {
  gc!();
  gc!();
  return process.memoryUsage().heapUsed / 1e6;
}

async function floodPart(): Promise<void> {
  let now = 1_700_000_000_000;
  const clock = () => now;
  const store = new MemoryStore({ clock });
  const login = createLimiter({ store, prefix: 'login', limit: 2, windowMs: '1m', lockout: { after: 1, baseMs: '1h', maxMs: '1h' }, clock, logger: quiet });
  const victim = '2001:db8:ffff:1::/64';
  for (let i = 0; i < 3; i++) await login.consume(victim);
  const before = heapMb();
  let admitted = 0;
  for (let i = 0; i < callers; i++) if ((await login.consume(subject('a', i))).allowed) admitted++;
  let locked = 0;
  for (let i = 0; i < 10_001; i++) {
    for (let j = 0; j < 3; j++) if ((await login.consume(subject('b', i))).reason === 'locked') locked++;
  }
  const inCache = login.blocked(victim) !== undefined;
  const answer = await login.consume(victim);
  now += 3_600_000 - 1_000;
  const late = await login.consume(victim);
  now += 1_000;
  const after = await login.consume(victim);
  console.log(
    `flood: ${callers} plain /64s (${admitted} admitted) + 10,001 locked-out /64s (${locked} locked answers); store holds ${store.size} keys; heap +${(heapMb() - before).toFixed(1)} MB\n` +
      `  victim (locked out for 1 h): block cache ${inCache ? 'still holds it' : 'lost it'}; store answers ${answer.allowed ? 'ADMITTED' : `refused (${answer.reason}, ${answer.retryAfterMs} ms left)`}; ` +
      `1 s before the hour ends: ${late.allowed ? 'ADMITTED' : `refused (${late.reason})`}; at the hour: ${after.allowed ? 'admitted' : `refused (${after.reason})`}\n` +
      `  warnings: ${warnings.length ? warnings.map((w) => w.slice(0, 60)).join(' | ') : 'none'}`,
  );
}

/** Heap per key of `n` subjects made to leave one state each in the store (`refused`: locked out, so held). */
async function perKey(refused: boolean): Promise<{ mb: number; keys: number }> {
  const now = 1_700_000_000_000;
  const clock = () => now;
  const store = new MemoryStore({ clock, maxKeys: entries * 2 + 10, maxProtectedKeys: entries * 2 + 10 });
  const limiter: Limiter = createLimiter({ store, prefix: 'login', limit: 1, windowMs: '1m', lockout: { after: 1, baseMs: '1h', maxMs: '1h' }, blockCacheSize: 0, clock, logger: quiet });
  await limiter.consume('warm-up');
  const before = heapMb();
  for (let i = 0; i < entries; i++) {
    await limiter.consume(subject('c', i));
    if (refused) await limiter.consume(subject('c', i));
  }
  const mb = heapMb() - before;
  return { mb, keys: store.size - 1 };
}

async function main(): Promise<void> {
  await floodPart();
  const plain = await perKey(false);
  const held = await perKey(true);
  const bytes = (r: { mb: number; keys: number }) => Math.round((r.mb * 1e6) / r.keys);
  console.log(
    `per key: plain LRU ${bytes(plain)} B (${entries} admitted subjects, ${plain.keys} keys, +${plain.mb.toFixed(2)} MB); ` +
      `protected share ${bytes(held)} B (${entries} locked-out subjects, ${held.keys} keys: lock + refusing limit state, +${held.mb.toFixed(2)} MB)`,
  );
}

void main();
