// Route option `shape` refused at construction with FG_INVALID_OPTION naming the option, the value and what is valid; and a limiter's maxDelayMs checked per call.
import { createLimiter, FloodgateError, MemoryStore } from '../src';
import { createHttpLimiter } from '../src/http';
import type { HttpRateLimitOptions } from '../src/http';

const rate = { algorithm: 'gcra', burst: 1, refillPerSecond: 10 } as const;
const http = (options: unknown) => () => createHttpLimiter({ store: new MemoryStore(), ...(options as HttpRateLimitOptions) });

const rows: { label: string; build: () => unknown; option: string; fragment: string; code?: string }[] = [
  { label: 'a window algorithm', build: http({ algorithm: 'fixed-window', limit: 10, windowMs: 1000, shape: { maxDelayMs: 2000 } }), option: 'algorithm', fragment: "'gcra' or 'token-bucket' with `shape`" },
  { label: 'the default algorithm (sliding-window-counter)', build: http({ limit: 10, windowMs: 1000, shape: { maxDelayMs: 2000 } }), option: 'algorithm', fragment: 'got "sliding-window-counter"' },
  { label: 'a window among several limits', build: http({ limits: [{ name: 'a', ...rate }, { name: 'b', algorithm: 'sliding-window-log', limit: 5, windowMs: 1000 }], shape: { maxDelayMs: 10 } }), option: 'algorithm', fragment: "limit 'b'" },
  { label: 'no maxDelayMs', build: http({ ...rate, shape: {} }), option: 'shape.maxDelayMs', fragment: 'from 1 to 300000 (required)' },
  { label: 'maxDelayMs 0', build: http({ ...rate, shape: { maxDelayMs: 0 } }), option: 'shape.maxDelayMs', fragment: 'a whole number from 1 to 300000' },
  { label: 'maxDelayMs as a string', build: http({ ...rate, shape: { maxDelayMs: '2s' } }), option: 'shape.maxDelayMs', fragment: 'got "2s"' },
  { label: 'maxWaiting 0', build: http({ ...rate, shape: { maxDelayMs: 100, maxWaiting: 0 } }), option: 'shape.maxWaiting', fragment: 'from 1 to 100000' },
  { label: 'an unknown name (express-slow-down delayMs)', build: http({ ...rate, shape: { maxDelayMs: 100, delayMs: 5 } }), option: 'delayMs', fragment: 'maxDelayMs', code: 'FG_UNKNOWN_OPTION' },
  { label: 'not an object', build: http({ ...rate, shape: 2000 }), option: 'shape', fragment: 'an object { maxDelayMs, maxWaiting? }' },
  { label: 'with concurrency', build: http({ ...rate, concurrency: { limit: 5 }, shape: { maxDelayMs: 100 } }), option: 'concurrency', fragment: 'no `concurrency` with `shape`' },
];

describe('shape: construction errors', () => {
  it.each(rows)('$label', ({ build, option, fragment, code = 'FG_INVALID_OPTION' }) => {
    let error: unknown;
    try {
      build();
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(FloodgateError);
    const e = error as FloodgateError;
    expect({ code: e.code, names: e.message.includes(option), says: e.message.includes(fragment) }).toEqual({ code, names: true, says: true });
  });

  it('a route may shape over global rate limits, and a route override is checked against its own limits', () => {
    const global = createHttpLimiter({ store: new MemoryStore(), ...rate });
    expect(global.route({ shape: { maxDelayMs: 2000 } })?.options.shape).toEqual({ maxDelayMs: 2000, maxWaiting: 1000 });
    expect(() => global.route({ shape: { maxDelayMs: 2000 }, limits: [{ name: 'w', algorithm: 'fixed-window', limit: 5, windowMs: 1000 }] })).toThrow(/Invalid option `algorithm`/);
  });

  it('shadow mode never holds: a request over its rate is reported and served at once', async () => {
    const limited: unknown[] = [];
    const http = createHttpLimiter({ store: new MemoryStore(), ...rate, shape: { maxDelayMs: 60_000 }, shadow: true, onLimited: (e) => void limited.push(e.decision.reason) });
    const facts = { ip: '192.0.2.1', headers: {}, method: 'GET', route: '/r' };
    const first = await http.handle(facts, {});
    const second = await http.handle(facts, {});
    expect([first.status, second.status, second.decision?.allowed, second.decision?.delayMs, limited]).toEqual(['next', 'next', false, undefined, ['limited']]);
  });

  it('limiter.consume: a bad maxDelayMs or one with concurrency throws FG_INVALID_OPTION', async () => {
    const l = createLimiter({ store: new MemoryStore(), ...rate });
    await expect(l.consume('s', { maxDelayMs: -1 })).rejects.toMatchObject({ code: 'FG_INVALID_OPTION' });
    await expect(l.consume('s', { maxDelayMs: 1.5 })).rejects.toMatchObject({ code: 'FG_INVALID_OPTION' });
    const leased = createLimiter({ store: new MemoryStore(), ...rate, concurrency: { limit: 2 } });
    await expect(leased.consume('s', { maxDelayMs: 100 })).rejects.toMatchObject({ code: 'FG_INVALID_OPTION', message: expect.stringContaining('concurrency') });
  });
});
