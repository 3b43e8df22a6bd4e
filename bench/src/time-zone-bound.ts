// `pnpm bench:time-zone-bound` (issue #40 row 10): how long createLimiter blocks the event loop refusing an unknown time zone of 64, 65 characters and of 100 KB.
import { performance } from 'node:perf_hooks';
import { createLimiter } from '@floodgate/core';

const REPS = 3;
createLimiter({ limit: 10, window: { every: 'month', timeZone: 'Europe/Berlin' } }); // warm-up: the first limiter's one-time costs

for (const [label, zone] of [
  ['64-char unknown zone (looked up, "did you mean" sought)', `America/${'A'.repeat(56)}`],
  ['65-char unknown zone', `America/${'A'.repeat(57)}`],
  ['100 KB unknown zone', 'x'.repeat(100_000)],
] as const) {
  const times: number[] = [];
  let message = '';
  for (let i = 0; i < REPS; i++) {
    const start = performance.now();
    try {
      createLimiter({ limit: 10, window: { every: 'month', timeZone: zone } });
    } catch (error) {
      message = (error as Error).message;
    }
    times.push(performance.now() - start);
  }
  const at = message.indexOf('expected');
  console.log(`${label}: ${Math.min(...times).toFixed(1)} ms blocked (least of ${REPS}); error of ${message.length} characters: ${message.slice(at, at + 90)}`);
}
