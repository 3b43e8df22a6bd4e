// `pnpm bench:runtime-limits` (issue #45): a limit function keyed on a header plan, through the HTTP pipeline, returning 100,000 distinct values: each plan its own limit, the heap bounded by limitValuesMax.
//
//   pnpm bench:runtime-limits                          100,000 distinct plans, limitValuesMax 1000
//   pnpm bench:runtime-limits --values 200000 --max 1000
//
// One route, MemoryStore (maxKeys 10,000). Part 1: three named plans (free 2, team 5, pro 9 a
// minute) from an `x-plan` header: the requests each plan's caller gets admitted out of 20. Part 2:
// a caller per distinct plan value (the limit is the header's number), one request each; the line
// gives the distinct answers held (at most limitValuesMax), the heap after gc before and after, and
// the heap per distinct value seen.
import { parseArgs } from 'node:util';
import { MemoryStore } from '@floodgate/core';
import { createHttpLimiter } from '@floodgate/core/http';

const { values } = parseArgs({ options: { values: { type: 'string', default: '100000' }, max: { type: 'string', default: '1000' } } });
const distinct = Number(values.values);
const max = Number(values.max);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc (pnpm bench:runtime-limits does)');
const heapMb = () => (gc!(), gc!(), process.memoryUsage().heapUsed / 1e6);
const warnings: string[] = [];
const logger = { warn: (m: string) => void warnings.push(m), error: () => undefined };
type Req = { plan: string };
const facts = (ip: string, plan: string) => ({ ip, headers: { 'x-plan': plan }, method: 'GET', route: '/r' });
const PLANS: Record<string, number> = { free: 2, team: 5, pro: 9 };

async function main(): Promise<void> {
  const named = createHttpLimiter<Req>({ store: new MemoryStore(), logger, limit: (req) => PLANS[req.plan] ?? 1 });
  const got: string[] = [];
  for (const [i, plan] of Object.keys(PLANS).entries()) {
    let ok = 0;
    for (let n = 0; n < 20; n++) if ((await named.handle(facts(`198.51.100.${i}`, plan), { plan })).status === 'next') ok++;
    got.push(`${plan} ${ok}/20 (limit ${PLANS[plan]})`);
  }
  console.log(`plans from a header: ${got.join(', ')}`);

  const http = createHttpLimiter<Req>({ store: new MemoryStore({ maxKeys: 10_000 }), logger, limitValuesMax: max, limitCeiling: 1_000_000_000, limit: (req) => Number(req.plan) });
  await http.handle(facts('203.0.113.1', '1'), { plan: '1' });
  const before = heapMb();
  let admitted = 0;
  for (let i = 0; i < distinct; i++) {
    const ip = `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
    const r = http.handleNow(facts(ip, String(i + 1)), { plan: String(i + 1) });
    if ((r instanceof Promise ? await r : r).status === 'next') admitted++;
  }
  const after = heapMb();
  const held = (http.limiter as unknown as { limitValuesHeld: number }).limitValuesHeld;
  console.log(
    `${distinct} distinct limit values: ${admitted} admitted, ${held} held (limitValuesMax ${max}), heap ${before.toFixed(1)} -> ${after.toFixed(1)} MB ` +
      `(${(((after - before) * 1e6) / distinct).toFixed(1)} bytes per value seen), warnings: ${warnings.map((w) => /FG_[A-Z_]+/.exec(w)?.[0]).join(', ')}`,
  );
}

void main();
