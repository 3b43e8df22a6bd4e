// The report and chart are pure functions of a results set: check them on a fixed one.
import { evaluateGoals, headersOf, quotaHeaders, storeOf, verdict } from '../src/goals';
import { ceilingRatio, formatHeaderList, formatHeadersSeen, frameworkMarkers, memoryCell, renderMarkdown, spliceFrameworks, warnings } from '../src/report';
import { escapeXml, renderSvg } from '../src/svg';
import { LEGACY, fixture } from './fixture';

/** Tags open and close in order (a small well-formedness check; no XML parser in the bench's dependencies). */
function balanced(svg: string): boolean {
  const stack: string[] = [];
  for (const m of svg.matchAll(/<(\/?)([a-zA-Z]+)[^>]*?(\/?)>/g)) {
    const [, closing, name, selfClosing] = m;
    if (selfClosing) continue;
    if (closing) {
      if (stack.pop() !== name) return false;
    } else stack.push(name);
  }
  return stack.length === 0;
}

describe('renderMarkdown', () => {
  const md = renderMarkdown(fixture(), 'benchmarks.svg');
  const lineOf = (start: string) => md.split('\n').find((l) => l.startsWith(start));

  it('opens with the summary and the goals, then the chart, then the tables', () => {
    expect(md.startsWith('# Benchmarks')).toBe(true);
    expect(md.indexOf('## Summary')).toBeGreaterThan(0);
    expect(md.indexOf('## Summary')).toBeLessThan(md.indexOf('## Goals'));
    expect(md.indexOf('## Goals')).toBeLessThan(md.indexOf('](benchmarks.svg)'));
    expect(md.indexOf('](benchmarks.svg)')).toBeLessThan(md.indexOf('| contender'));
  });

  it('states date, mode, machine, versions and notes', () => {
    expect(md).toContain('Measured 2026-01-02');
    expect(md).toContain('pnpm bench --quick');
    expect(md).toContain('Test CPU <2 GHz> & co');
    expect(md).toContain('| express | 5.3.0 |');
    expect(md).toContain('> a note for the reader');
    expect(md).toContain('3.5, 2, 1 / 0.2, 1, 1');
  });

  it('summarises each framework and load in one row: memory, best memory peers with and without headers, Redis on the default algorithm, best Redis peer, floor, CPU', () => {
    expect(md).toContain(
      '| framework | load | Floodgate in memory | best in-memory peer (that sends rate-limit headers, and best overall) | Floodgate on Redis | best Redis peer | floor: one PING per turn | ' +
        'server CPU µs added per admitted request: Floodgate on Redis / best Redis peer / floor | Redis CPU µs per admitted request: Floodgate / best Redis peer / floor |',
    );
    // Floodgate on Redis is sliding-window-counter (the default) although fixed-window did better;
    // rate-limiter-flexible is faster in memory but sends no header, so it is only "best overall".
    // Added CPU: 50 / 0.8 - 50 = 12.5 for Floodgate, 50 / 0.64 - 50 for the peer, 50 / 0.905 - 50 for the floor.
    expect(lineOf('| express |')).toBe(
      '| express | one subject | 0.93 / 0.91 | express-rate-limit (MemoryStore) 0.90 / 0.94; best overall: rate-limiter-flexible (RateLimiterMemory) 0.96 / 0.97 (no rate-limit headers) | ' +
        '0.80 / 0.90 (sliding-window-counter; 0.88 of the floor) | rate-limiter-flexible (RateLimiterRedis) 0.64 / 0.66 | 0.91 | +12.5 / +28.1 / +5.2 | 20.0 / 20.0 / 20.0 |',
    );
  });

  it('shows the spread over rounds next to a figure when rounds were kept', () => {
    const results = fixture();
    const fg = results.throughput.find((r) => r.id === 'express/floodgate-redis-sliding-window-counter/admit')!;
    fg.rounds = [
      { rps: 8_000, ratio: 0.78, serverCpuUs: 61, redisCpuUs: 19.5 },
      { rps: 8_100, ratio: 0.8, serverCpuUs: 63, redisCpuUs: 20 },
      { rps: 8_200, ratio: 0.83, serverCpuUs: 64, redisCpuUs: 21 },
    ];
    const text = renderMarkdown(results);
    expect(text).toContain('0.80 / 0.90 (sliding-window-counter; 0.88 of the floor; admitting by round 0.78–0.83)');
    expect(text).toContain('| Floodgate, Redis (sliding-window-counter) | RateLimit-Limit/-Remaining/-Reset, RateLimit-Policy; 429: + Retry-After | 8,000 | **0.80** (0.78–0.83) |');
    expect(text).toContain('| Floodgate, Redis (sliding-window-counter) | 63 / 56 (61–64) | 5.0 / 0.0 | 20.0 / 20.0 (19.5–21.0) |');
  });

  it('renders each load shape on its own: the many-caller rows under their own headings, in the summary and the goals', () => {
    const results = fixture();
    results.meta.settings.callers = 10_000;
    for (const r of fixture().throughput) results.throughput.push({ ...r, id: `${r.id}@callers`, load: 'callers', ratio: r.ratio * 0.9 });
    const text = renderMarkdown(results);
    expect(text).toContain('### express, 10,000 callers (X-Forwarded-For)');
    expect(text).toContain('#### express, 10,000 callers (X-Forwarded-For), on Redis');
    const summary = text.slice(text.indexOf('## Summary'), text.indexOf('## Goals'));
    expect(summary.split('\n').filter((l) => l.startsWith('| express | ')).map((l) => l.split(' | ')[1])).toEqual(['one subject', '10,000 callers (X-Forwarded-For)']);
    expect(text).toMatch(/\| \(d\) Redis CPU per admitted decision at most 8 µs \| 10,000 callers \(X-Forwarded-For\) \| \*\*20\.0 µs\*\* ✗/);
    const checks = evaluateGoals(results);
    expect(checks.filter((c) => c.load === 'callers').map((c) => c.id)).toContain('express/floodgate-redis-sliding-window-counter/admit@callers');
    expect(checks.filter((c) => c.load === 'callers')).toHaveLength(checks.filter((c) => c.load === 'one').length);
  });

  it("checks issue #32's goals, each met or missed by how much", () => {
    expect(lineOf('| (a) on Redis, admitting: at least 1.15× the best Redis peer | one subject |')).toContain(
      '**1.25×** ✓ met: Floodgate, Redis (sliding-window-counter) (0.80 × bare route) over rate-limiter-flexible (RateLimiterRedis) (0.64)',
    );
    expect(lineOf('| (b) on Redis')).toContain('**0.88** ✗ missed by 0.02 (2%): Floodgate, Redis (sliding-window-counter), admitting, × the per-turn floor');
    expect(lineOf('| (c) added server CPU per admitted request at most the floor\'s plus 3 µs')).toContain(
      "**12.5 µs** ✗ missed by 4.3 µs (52%): Floodgate, Redis (sliding-window-counter), admitting: server CPU per request over the bare route's (50.0 µs), against the per-turn floor's +5.2 µs",
    );
    expect(lineOf('| (d) Redis CPU per admitted decision at most 8 µs')).toContain('**20.0 µs** ✗ missed by 12.0 µs (150%)');
    expect(lineOf('| (e) in memory: ahead of every in-memory peer that sends rate-limit headers (admitting)')).toContain(
      '**0.93** ✓ met: Floodgate, memory (sliding-window-counter), admitting, × bare route, against express-rate-limit (MemoryStore) (0.90)',
    );
    expect(lineOf('| (e) in memory: ahead of every in-memory peer that sends rate-limit headers (rejecting)')).toContain('**0.91** ✗ missed by 0.03 (3%)');
    expect(lineOf('| (f) rejecting: at least 0.95 of the bare route everywhere (memory and Redis): memory')).toContain('**0.91** ✗ missed by 0.04 (4%)');
    expect(lineOf('| (f) rejecting: at least 0.95 of the bare route everywhere (memory and Redis): Redis')).toContain('**0.90** ✗ missed by 0.05 (5%)');
  });

  it('lists the memory group with the headers each contender sent', () => {
    expect(md).toContain('#### express, in memory');
    expect(md).toContain(
      '| Floodgate, memory (sliding-window-counter) | RateLimit-Limit/-Remaining/-Reset, RateLimit-Policy; 429: + Retry-After | 9,300 | **0.93** | 0.93 | 9,100 | **0.91** | 0.91 |',
    );
    expect(md).toContain('| express-rate-limit (MemoryStore) | X-RateLimit-Limit/-Remaining/-Reset; 429: + Retry-After | 9,000 | **0.90** |');
    expect(md).toContain('| rate-limiter-flexible (RateLimiterMemory) | none | 9,600 | **0.96** |');
    expect(md).toContain('| Floodgate, memory (sliding-window-counter), OpenTelemetry SDK |');
  });

  it('lists the Redis group with its share of the per-turn floor, and the floors on their own', () => {
    expect(md).toContain('#### express, on Redis');
    expect(md).toContain(
      '| Floodgate, Redis (sliding-window-counter) | RateLimit-Limit/-Remaining/-Reset, RateLimit-Policy; 429: + Retry-After | 8,000 | **0.80** | 0.88 | 0.80 | 9,000 | **0.90** | 0.90 |',
    );
    // The CPU-based ratio is its own column: 0.625 rounds to 0.63 (toFixed) or 0.62, never 0.40.
    expect(md).toMatch(/\| peer <one> & two \| X-RateLimit-Limit\/-Remaining\/-Reset; 429: \+ Retry-After \| 4,000 \| \*\*0\.40\*\* \| 0\.44 \| 0\.6[23] \| 5,000 \| \*\*0\.50\*\* \| 0\.50 \|/);
    expect(md).toContain('#### express, bare route and floors');
    expect(md).toContain('| no limiter (bare route) | 10,000 | 1.00 | 1.00 | 2 |');
    expect(md).toContain('| floor: one Redis PING per event-loop turn, no limiting | 9,050 | **0.91** | 0.91 | 2 |');
    // Memory rows are not in the Redis table, floors are in neither group's.
    const redisTable = md.slice(md.indexOf('#### express, on Redis'), md.indexOf('#### express, bare route'));
    expect(redisTable).not.toContain('MemoryStore');
    expect(redisTable).not.toContain('floor:');
  });

  it('keeps the cost per request of every contender', () => {
    // Cost per request: server CPU (50 µs / ratio), Redis commands, Redis CPU, p99, shares.
    expect(md).toContain('| Floodgate, Redis (sliding-window-counter) | 63 / 56 | 5.0 / 0.0 | 20.0 / 20.0 | 4.0 / 4.0 | 100% / 100% |');
    expect(md).toContain('| Floodgate, memory (sliding-window-counter) | 54 / 55 | 0.0 / 0.0 | 0.0 / 0.0 | 4.0 / 4.0 | 100% / 100% |');
  });

  it('has the ceiling, race, accuracy and memory tables', () => {
    expect(md).toContain('| sliding-window-counter | 10 | 40,000 | 36,000 | 30,000 | 24,000 | **0.60** |');
    expect(md).toContain('| naive GET, then INCR | 61 | **1.22** | 1.22 |');
    expect(md).toContain('| fixed-window | 2.00 | 1.00 | **2.00** |');
    expect(md).toContain('| Floodgate | sliding-window-log | 3,176 | 118,496 | 1 |');
    expect(md).toContain('| gcra | 269 ± 12 | below measurement noise (± 60) |');
    expect(md).toContain('holds 1,607,680 bytes');
  });

  it('never prints a negative memory figure, even from results written before the noise bound', () => {
    expect(memoryCell({ algorithm: 'gcra', unitsPerCaller: 100, limit: 100, callers: 5000, bytesPerCaller: -540 })).toBe('below measurement noise');
    expect(memoryCell({ algorithm: 'gcra', unitsPerCaller: 100, limit: 100, callers: 5000, bytesPerCaller: -5, noiseBytes: 30 })).toBe('below measurement noise (± 30)');
    expect(memoryCell({ algorithm: 'gcra', unitsPerCaller: 1, limit: 100, callers: 5000, bytesPerCaller: 395 })).toBe('395');
    expect(memoryCell(undefined)).toBe('n/a');
    const old = fixture();
    old.memoryStore = [{ algorithm: 'gcra', unitsPerCaller: 100, limit: 100, callers: 5000, bytesPerCaller: -540 }];
    expect(renderMarkdown(old)).not.toMatch(/\|\s*-\d/);
  });

  it('shows the micro section, with before / after when two checkouts were measured', () => {
    const micro = {
      job: { ops: 50_000, samples: 7, only: [] },
      rounds: 3,
      sides: ['against ../old', 'this checkout'],
      rows: [
        { name: 'core: limiter.consume, admitted (memory store, sliding-window-counter)', us: [3.21, 0.43], answered: 'allowed' },
        { name: 'fastify: route onRequest hook, admitted (stand-in request/reply)', us: [5.14, 13.6], answered: 'done' },
      ],
    };
    const text = renderMarkdown({ ...fixture(), micro });
    expect(text).toContain('## Per-request work in a tight loop (micro)');
    expect(text).toContain('| case | µs/op, against ../old | µs/op, this checkout | after / before |');
    expect(text).toContain('| core: limiter.consume, admitted (memory store, sliding-window-counter) | 3.21 | 0.43 | 0.13 |');
    expect(text).toContain('| fastify: route onRequest hook, admitted (stand-in request/reply) | 5.14 | 13.6 | 2.65 |');
    const alone = renderMarkdown({ ...fixture(), micro: { ...micro, sides: ['this checkout'], rows: [{ ...micro.rows[0], us: [0.43] }] } });
    expect(alone).toContain('| case | µs/op, this checkout |');
    expect(alone).toContain('| core: limiter.consume, admitted (memory store, sliding-window-counter) | 0.43 |');
    expect(renderMarkdown(fixture())).not.toContain('(micro)');
  });

  it('leaves out sections with no results', () => {
    const empty = { ...fixture(), race: [], accuracy: [], profiles: [] };
    const text = renderMarkdown(empty);
    expect(text).not.toContain('## Races');
    expect(text).not.toContain('## Accuracy');
    expect(text).toContain('## Throughput');
    const none = renderMarkdown({ ...fixture(), throughput: [] });
    expect(none).not.toContain('## Summary');
    expect(none).not.toContain('## Goals');
  });
});

describe('ceilingRatio', () => {
  const row = { algorithm: 'fixed-window' as const, redisBenchmarkRps: 1, redisBenchmarkPipelinedRps: 1, ioredisRps: 1, coreRps: 2, ratio: 1.52, connections: 10 };
  it('prints the ratio only when Redis admitted every core decision', () => {
    expect(ceilingRatio({ ...row, coreAdmittedShare: 1 })).toBe('**1.52**');
    expect(ceilingRatio({ ...row, coreAdmittedShare: 0.4 })).toBe("n/a: only 40% of the core's calls were admitted by Redis");
    expect(ceilingRatio(row)).toBe('**1.52**');
    // Runs from before the share was recorded: the log's core ran capped on one subject.
    expect(ceilingRatio({ ...row, algorithm: 'sliding-window-log', ratio: 34.58 })).toMatch(/^n\/a: capped at 10,000\/s/);
  });
});

describe('evaluateGoals', () => {
  const checks = evaluateGoals(fixture());
  const of = (goal: string, regime = 'admit') => checks.filter((c) => c.goal === goal && c.regime === regime);

  it('checks every goal on the default algorithm and the memory store without OpenTelemetry', () => {
    expect(checks.map((c) => `${c.goal}/${c.regime}`)).toEqual(['a/admit', 'b/admit', 'c/admit', 'd/admit', 'e/admit', 'e/reject', 'f/reject', 'f/reject']);
    expect(new Set(checks.map((c) => c.id))).toEqual(
      new Set([
        'express/floodgate-memory/admit',
        'express/floodgate-memory/reject',
        'express/floodgate-redis-sliding-window-counter/admit',
        'express/floodgate-redis-sliding-window-counter/reject',
      ]),
    );
    expect(new Set(checks.map((c) => c.load))).toEqual(new Set(['one']));
  });

  it('says by how much each missed goal is missed', () => {
    expect(of('a')[0].figure).toBeCloseTo(0.8 / 0.64);
    expect(of('a')[0]).toMatchObject({ met: true, missedBy: 0, target: 1.15 });
    expect(of('b')[0].met).toBe(false);
    expect(of('b')[0].missedBy).toBeCloseTo(0.016);
    // (c): Floodgate adds 50 / 0.8 - 50 = 12.5 µs over the bare route; the floor 50 / 0.905 - 50 (+ 3 µs allowed).
    expect(of('c')[0].figure).toBeCloseTo(12.5);
    expect(of('c')[0].target).toBeCloseTo(50 / 0.905 - 50 + 3);
    expect(of('c')[0]).toMatchObject({ met: false, unit: 'µs', compare: '<=' });
    expect(of('d')[0]).toMatchObject({ met: false, missedBy: 12, unit: 'µs', compare: '<=' });
    expect(verdict(of('d')[0])).toBe('**20.0 µs** ✗ missed by 12.0 µs (150%)');
  });

  it('meets the CPU goals when Floodgate adds no more than the floor plus 3 µs and Redis spends at most 8 µs', () => {
    const results = fixture();
    const fg = results.throughput.find((r) => r.id === 'express/floodgate-redis-sliding-window-counter/admit')!;
    const floor = results.throughput.find((r) => r.id === 'express/redis-floor-turn/admit')!;
    fg.serverCpuUsPerRequest = floor.serverCpuUsPerRequest! + 3;
    fg.redisCpuUsPerRequest = 8;
    const all = evaluateGoals(results);
    expect(all.find((c) => c.goal === 'c')!.met).toBe(true);
    expect(all.find((c) => c.goal === 'd')!.met).toBe(true);
    fg.serverCpuUsPerRequest = floor.serverCpuUsPerRequest! + 3.2;
    expect(evaluateGoals(results).find((c) => c.goal === 'c')!.met).toBe(false);
  });

  it('compares Floodgate in memory only with peers that sent rate-limit headers', () => {
    // rate-limiter-flexible (0.96, no headers) is faster, but express-rate-limit (0.90, X-RateLimit-*) is the one to beat.
    expect(of('e')[0]).toMatchObject({ met: true, target: 0.9 });
    expect(of('e', 'reject')[0].target).toBe(0.94);
    expect(of('e', 'reject')[0].missedBy).toBeCloseTo(0.03);
    // Without any header-sending peer there is nothing to be ahead of: not measured, neither met nor missed.
    const results = fixture();
    results.throughput = results.throughput.filter((r) => !r.id.includes('express-rate-limit-memory'));
    const e = evaluateGoals(results).find((c) => c.goal === 'e')!;
    expect(e.met).toBeNull();
    expect(verdict(e)).toBe('0.93: nothing to compare with');
  });

  it('reads results written before rows recorded their store', () => {
    const results = fixture();
    for (const r of results.throughput) delete r.store;
    expect(storeOf(results.throughput.find((r) => r.id === 'express/floodgate-memory-otel/admit')!)).toBe('memory');
    expect(storeOf(results.throughput.find((r) => r.id === 'express/express-rate-limit/admit')!)).toBe('redis');
    expect(storeOf(results.throughput.find((r) => r.id === 'express/none')!)).toBeNull();
    expect(evaluateGoals(results).map((c) => c.goal)).toEqual(checks.map((c) => c.goal));
  });
});

describe('headers sent', () => {
  it('shortens full Limit/Remaining/Reset sets and says what a 429 adds', () => {
    expect(formatHeaderList(['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'RateLimit-Policy'])).toBe('RateLimit-Limit/-Remaining/-Reset, RateLimit-Policy');
    expect(formatHeaderList(['X-RateLimit-Limit', 'X-RateLimit-Reset'])).toBe('X-RateLimit-Limit, X-RateLimit-Reset');
    expect(formatHeaderList([])).toBe('none');
    expect(formatHeadersSeen({ admitted: ['RateLimit', 'RateLimit-Policy'], limited: ['RateLimit', 'RateLimit-Policy', 'Retry-After'] })).toBe(
      'RateLimit, RateLimit-Policy; 429: + Retry-After',
    );
    expect(formatHeadersSeen({ admitted: [], limited: ['Retry-After'] })).toBe('none; 429: + Retry-After');
    expect(formatHeadersSeen({ admitted: ['X-RateLimit-Limit'], limited: ['Retry-After'] })).toBe('X-RateLimit-Limit; 429: Retry-After');
    expect(formatHeadersSeen({ admitted: ['Retry-After'], limited: null })).toBe('Retry-After');
    expect(formatHeadersSeen(undefined)).toBe('n/a');
  });

  it('counts only quota headers as rate-limit headers, and merges both regimes of a contender', () => {
    expect(quotaHeaders({ admitted: ['Retry-After'], limited: ['Retry-After'] })).toEqual([]);
    expect(quotaHeaders({ admitted: ['X-RateLimit-Limit', 'Retry-After'], limited: null })).toEqual(['X-RateLimit-Limit']);
    const rows = fixture().throughput;
    expect(headersOf(rows, 'express-rate-limit (MemoryStore)')).toEqual({ admitted: LEGACY.admitted, limited: LEGACY.limited });
    expect(headersOf(rows, 'nobody')).toBeUndefined();
  });
});

describe('renderSvg', () => {
  const results = fixture();
  const svg = renderSvg(results);

  it('is one well-formed SVG, the same for the same results', () => {
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
    expect(balanced(svg)).toBe(true);
    expect(renderSvg(fixture())).toBe(svg);
  });

  it('escapes text from the results', () => {
    expect(svg).toContain('peer &lt;one&gt; &amp; two');
    expect(svg).toContain('Test CPU &lt;2 GHz&gt; &amp; co');
    expect(svg).not.toContain('<one>');
    expect(escapeXml(`a"b'c`)).toBe('a&quot;b&apos;c');
  });

  it('draws bar lengths in proportion to the numbers', () => {
    const widths = new Map<string, number[]>();
    for (const m of svg.matchAll(/<rect [^>]*width="([\d.]+)"[^>]*data-value="([\d.]+)"/g)) {
      widths.set(m[2], [...(widths.get(m[2]) ?? []), Number(m[1])]);
    }
    const w = (value: string) => widths.get(value)![0];
    expect(w('0.80') / w('0.40')).toBeCloseTo(2, 1);
    expect(w('0.90') / w('0.50')).toBeCloseTo(1.8, 1);
    // The race and accuracy panels have their own scales; their bars are there too.
    expect(widths.has('1.22')).toBe(true);
    expect(widths.has('2.00')).toBe(true);
  });

  it('ticks each throughput bar at its CPU-based ratio', () => {
    const ticks = [...svg.matchAll(/<line x1="([\d.]+)"[^>]*data-alt="([\d.]+)"/g)].map((m) => [m[2], Number(m[1])] as const);
    const at = (value: string) => ticks.find(([v]) => v === value)![1];
    expect(ticks.map(([v]) => v)).toEqual(expect.arrayContaining(['0.80', '0.90', '0.50']));
    // 0.625 is to the right of 0.50 and left of 0.80 on the same scale.
    expect(at('0.63')).toBeGreaterThan(at('0.50'));
    expect(at('0.63')).toBeLessThan(at('0.80'));
  });

  it('draws the rejecting goal line (the admitting goals are relative to peers and floors: no fixed line)', () => {
    expect(svg).toContain('>goal 0.95<');
    expect(svg).not.toContain('memory goal');
    expect(svg).not.toContain('0.75');
  });

  it('colours memory peers and floors apart from the Redis peers', () => {
    const fill = (value: string) => [...svg.matchAll(/<rect [^>]*fill="(#[0-9a-f]+)" data-value="([\d.]+)"/g)].filter((m) => m[2] === value).map((m) => m[1]);
    expect(fill('0.97')).toEqual(['#d1d5db']); // rate-limiter-flexible in memory, rejecting
    expect(fill('0.64')).toEqual(['#9ca3af']); // rate-limiter-flexible on Redis
    expect(fill('0.82')).toEqual(['#fbbf24']); // the per-request floor
    expect(svg).toContain('>peer library in memory<');
  });
});

describe('warnings', () => {
  it('flags a quick run, a busy machine, core-inline wiring and contenders that did not behave', () => {
    const results = fixture();
    const i = results.throughput.findIndex((r) => r.id === 'express/floodgate-redis-sliding-window-counter/admit');
    results.throughput[i] = { ...results.throughput[i], wiring: 'inline-core', okShare: 0.5, errors: 3 };
    const notes = warnings(results);
    expect(notes.some((n) => n.startsWith('Quick run'))).toBe(true);
    expect(notes.some((n) => n.includes('load average 3.5'))).toBe(true);
    expect(notes.some((n) => n.includes('No Floodgate adapter for express'))).toBe(true);
    expect(notes).toContain('express/floodgate-redis-sliding-window-counter/admit: 3 connection errors or timeouts.');
    expect(notes).toContain('express/floodgate-redis-sliding-window-counter/admit: only 50.0% 2xx while it should admit everything.');
  });

  it("names sliding-window-log's capped admit regime as the cap, not as a limiter that misbehaved", () => {
    const results = fixture();
    const template = results.throughput.find((r) => r.id === 'express/floodgate-redis-sliding-window-counter/admit')!;
    results.throughput.push({ ...template, id: 'fastify/floodgate-redis-sliding-window-log/admit', okShare: 0.638 });
    const notes = warnings(results);
    expect(notes).toContain(
      "fastify/floodgate-redis-sliding-window-log/admit: 63.8% 2xx: its admit regime is capped at 10,000 per second on one caller (sliding-window-log's largest limit), so requests past that rate are 429s by design.",
    );
    expect(notes.filter((n) => n.includes('sliding-window-log') && n.includes('should admit everything'))).toEqual([]);
  });

  it('calls out a limiter that beat its ceiling as noise', () => {
    const results = fixture();
    const i = results.throughput.findIndex((r) => r.id === 'express/floodgate-redis-sliding-window-counter/reject');
    results.throughput[i] = { ...results.throughput[i], ratio: 1.3 };
    expect(warnings(results).some((n) => n.startsWith('express/floodgate-redis-sliding-window-counter/reject beat their no-limiter ceiling'))).toBe(true);
  });

  it('says when a server gave no admitted response or no 429 to read its headers from', () => {
    const results = fixture();
    const i = results.throughput.findIndex((r) => r.id === 'express/express-rate-limit-memory/reject');
    results.throughput[i] = { ...results.throughput[i], headers: { admitted: ['X-RateLimit-Limit'], limited: null } };
    expect(warnings(results)).toContain('express/express-rate-limit-memory/reject: no 429 when its headers were read, so its "headers sent" has no 429 part.');
  });

  it('does not take a memory peer with no Redis commands for a broken Redis contender', () => {
    const results = fixture();
    const i = results.throughput.findIndex((r) => r.id === 'express/express-rate-limit/admit');
    results.throughput[i] = { ...results.throughput[i], redisCallsPerRequest: 0 };
    expect(warnings(results).filter((n) => n.includes('may not be using Redis'))).toEqual([
      'express/express-rate-limit/admit: 0.00 Redis commands per admitted request; it may not be using Redis.',
    ]);
  });

  it('says nothing for a clean full run on an idle machine', () => {
    const results = fixture();
    results.meta.mode = 'full';
    results.meta.loadAverageStart = [0.1, 0.1, 0.1];
    expect(warnings(results)).toEqual([]);
  });
});

describe('spliceFrameworks', () => {
  /** The fixture's express rows as another framework's: a run of that framework alone. */
  function runOf(framework: 'hono' | 'nestjs-fastify', scale: number) {
    const results = fixture();
    results.meta.date = '2026-02-03T00:00:00.000Z';
    results.throughput = results.throughput
      .filter((r) => r.framework === 'express')
      .map((r) => ({ ...r, framework, id: r.id.replace(/^express\//, `${framework}/`), ratio: r.group === 'ceiling' ? 1 : r.ratio * scale }));
    return results;
  }
  const page = renderMarkdown(fixture(), 'benchmarks.svg');
  const rowsOf = (md: string, framework: string) => md.split('\n').filter((l) => l.startsWith(`| ${framework} (`));

  it("adds a framework's section after the last one and its Summary row, and keeps the rest of the page", () => {
    const out = spliceFrameworks(page, runOf('hono', 1), 'pnpm bench --only throughput --frameworks hono');
    const [start, end] = frameworkMarkers('hono');
    expect(out.indexOf(start)).toBeGreaterThan(out.indexOf(frameworkMarkers('express')[1]));
    expect(out.indexOf(end)).toBeLessThan(out.indexOf('\n## The Redis ceiling'));
    const section = out.slice(out.indexOf(start), out.indexOf(end) + end.length);
    expect(section).toContain('Measured 2026-02-03 by `pnpm bench --only throughput --frameworks hono`');
    expect(section).toContain('#### hono, in memory');
    // Its own goal verdicts: the page's Goals table is the other run's.
    expect(section).toMatch(/\| \(a\) admitting \|/);
    expect(rowsOf(out, 'hono')).toEqual([expect.stringMatching(/^\| hono \(a run of its own: \[below\]\(#hono\)\) \| one subject \|/)]);
    // Everything outside the new section and row is the page as it was.
    const rest = out.replace(section, '').split('\n').filter((l) => !l.startsWith('| hono (')).join('\n');
    expect(rest.replace(/\n{3,}/g, '\n\n')).toBe(page.replace(/\n{3,}/g, '\n\n'));
  });

  it('replaces its own section and row on a later run, and leaves the other frameworks alone', () => {
    const once = spliceFrameworks(page, runOf('hono', 1), 'first');
    const twice = spliceFrameworks(spliceFrameworks(once, runOf('nestjs-fastify', 1), 'other'), runOf('hono', 0.5), 'second');
    expect(twice.split(frameworkMarkers('hono')[0])).toHaveLength(2);
    expect(twice).toContain('by `second`');
    expect(twice).not.toContain('by `first`');
    expect(twice).toContain('by `other`');
    expect(rowsOf(twice, 'hono')).toHaveLength(1);
    expect(rowsOf(twice, 'nestjs-fastify')).toHaveLength(1);
    expect(rowsOf(twice, 'hono')[0]).not.toBe(rowsOf(once, 'hono')[0]);
  });

  it("keeps the row in the framework's own section, out of a Summary table of other columns (a page from an older run)", () => {
    const head = page.split('\n').find((l) => l.startsWith('| framework | load |'))!;
    const older = page.replace(head, '| framework | Floodgate in memory |');
    const out = spliceFrameworks(older, runOf('hono', 1), 'x');
    expect(rowsOf(out, 'hono')).toEqual([]);
    const section = out.slice(out.indexOf(frameworkMarkers('hono')[0]));
    expect(section).toContain(head);
    expect(section).toMatch(/\n\| hono \| one subject \|/);
  });

  it('refuses a page with no Throughput section to add to', () => {
    expect(() => spliceFrameworks('# Benchmarks\n', runOf('hono', 1), 'x')).toThrow(/no "## Throughput" section/);
  });
});
