// SubjectMemory: a subject's later answers rewrite its remembered figures (in place), keep its local use while its quota is out, and forget it once the quota is back.
import { PENDING_SWEEP, SubjectMemory } from '../src/failure/subject-memory';
import type { StoreLimit } from '../src/algorithms/registry';
import type { StoreRequest, StoreResult } from '../src/stores/store';

const limits: readonly StoreLimit[] = [
  { algorithm: 'sliding-window-counter', capacity: 100, windowMs: 1000 },
  { algorithm: 'fixed-window', capacity: 10, windowMs: 500 },
] as unknown as StoreLimit[];
const request: StoreRequest = { keys: ['p:{s}:a', 'p:{s}:b'], limits, cost: 1, mode: 'consume' };
const answer = (a: number, b: number, resetA = 1000, resetB = 500): StoreResult => ({
  at: 0,
  allowed: true,
  results: [
    { allowed: true, remaining: a, resetMs: resetA, retryAfterMs: 0 },
    { allowed: true, remaining: b, resetMs: resetB, retryAfterMs: 0 },
  ],
});

describe('SubjectMemory', () => {
  it('takes each later answer as the figure, and keeps the units used locally while the quota is out', () => {
    let now = 0;
    const memory = new SubjectMemory(() => now);
    memory.remember(request, answer(90, 8));
    // Two instances: half of what is left, the smallest limit's: floor(8 / 2).
    expect(memory.allowance(request.keys, limits, 2, 0)).toBe(4);
    memory.used(request.keys, limits, 3);
    expect(memory.allowance(request.keys, limits, 2, 0)).toBe(1);
    now = 100;
    memory.remember(request, answer(80, 6));
    // The new figure (6 left: 3 each), less the 3 used locally since: the quota is still out.
    expect(memory.allowance(request.keys, limits, 2, 0)).toBe(0);
    expect(memory.size).toBe(1);
    now = 700;
    // Both limits came back (100 + 1000 > 700 for the first: still out), the 3 used stay counted.
    memory.remember(request, answer(99, 9, 1000, 500));
    expect(memory.allowance(request.keys, limits, 1, 0)).toBe(9 - 3);
  });

  it('starts the local use again once every limit is back', () => {
    let now = 0;
    const memory = new SubjectMemory(() => now);
    memory.remember(request, answer(50, 5, 100, 100));
    memory.used(request.keys, limits, 2);
    now = 1000;
    // Both limits were back (fullAt 100): the answer's figure alone, nothing used carried over.
    memory.remember(request, answer(40, 4, 100, 100));
    expect(memory.allowance(request.keys, limits, 1, 0)).toBe(4);
    expect(memory.size).toBe(1);
  });
});

describe('SubjectMemory pending units', () => {
  it('counts each subject exactly, and holds a bounded number of subjects however many pass', () => {
    const memory = new SubjectMemory(() => 0);
    const keysOf = (i: number) => [`p:{${i}}:a`];
    memory.pending(keysOf(1), 2);
    memory.pending(keysOf(1), 3);
    expect(memory.pendingOf(keysOf(1))).toBe(5);
    memory.pending(keysOf(1), -5);
    expect(memory.pendingOf(keysOf(1))).toBe(0);
    // A release of nothing pending holds nothing.
    memory.pending(keysOf(2), -1);
    expect(memory.pendingOf(keysOf(2))).toBe(0);
    // 10,000 subjects, each asked and answered: what is held stays bounded.
    for (let i = 0; i < 10_000; i++) {
      memory.pending(keysOf(i), 1);
      memory.pending(keysOf(i), -1);
    }
    expect(memory.pendingHeld).toBeLessThanOrEqual(PENDING_SWEEP + 1);
    // One still in flight survives every sweep.
    memory.pending(keysOf(-1), 1);
    for (let i = 0; i < 3_000; i++) {
      memory.pending(keysOf(20_000 + i), 1);
      memory.pending(keysOf(20_000 + i), -1);
    }
    expect(memory.pendingOf(keysOf(-1))).toBe(1);
  });
});
