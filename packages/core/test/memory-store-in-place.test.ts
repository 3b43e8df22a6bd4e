// MemoryStore rewrites a sliding-window-counter state in place on an admission (issue #44): no new state object per request for the collector to keep.
import { MemoryStore } from '../src/stores/memory-store';
import type { StoreRequest } from '../src/stores/store';

/** The stored entry of a key, read without touching its recency (the private LRU's peek). */
function entryOf(store: MemoryStore, key: string): { state: unknown; expiresAt: number } | undefined {
  return (store as unknown as { entries: { peek(key: string): { state: unknown; expiresAt: number } | undefined } }).entries.peek(key);
}

it('keeps one state object per key across admissions, its fields rewritten, and the same decisions', () => {
  let now = 1_700_000_000_000;
  const store = new MemoryStore({ clock: () => now });
  const request: StoreRequest = { keys: ['k'], limits: [{ algorithm: 'sliding-window-counter', capacity: 10, windowMs: 60_000 }], cost: 1, mode: 'consume' };
  expect(store.evaluateSync(request).results[0].remaining).toBe(9);
  const first = entryOf(store, 'k')!.state;
  const seen: number[] = [];
  for (let i = 0; i < 3; i++) {
    now += 1000;
    seen.push(store.evaluateSync(request).results[0].remaining);
  }
  expect(seen).toEqual([8, 7, 6]);
  const entry = entryOf(store, 'k')!;
  expect(entry.state).toBe(first); // the same object...
  expect(entry.state).toEqual({ w: Math.floor(now / 60_000), c: 4, p: 0 }); // ...holding the latest counts
  // A denial writes nothing; the next window's admission still counts the previous window.
  now += 60_000;
  expect(store.evaluateSync({ ...request, cost: 20 }).allowed).toBe(false);
  expect(store.evaluateSync(request).allowed).toBe(true);
  expect(entryOf(store, 'k')!.state).toEqual({ w: Math.floor(now / 60_000), c: 1, p: 4 });
});
