// Memo and NestedMemo: one- and two-level lookups by the caller's own strings, bounded by two generations of `max` values each.
import { Memo, NestedMemo } from '../src/base/memo';

it('finds a value by its two strings, and no other', () => {
  const memo = new NestedMemo<number>(10);
  memo.set('GET', '/a', 1);
  memo.set('GET', '/b', 2);
  memo.set('POST', '/a', 3);
  expect([memo.get('GET', '/a'), memo.get('GET', '/b'), memo.get('POST', '/a'), memo.get('POST', '/b'), memo.get('PUT', '/a')]).toEqual([1, 2, 3, undefined, undefined]);
});

it('NestedMemo holds at most 2 x `max` values: past `max` new ones, the older generation goes', () => {
  const memo = new NestedMemo<number>(3);
  for (let i = 0; i < 3; i++) memo.set('s', `k${i}`, i);
  memo.set('s', 'k1', 10); // replacing a value does not count as another
  expect(memo.size).toBe(3);
  memo.set('t', 'k3', 3); // the fourth value: a new generation; the first three are still found
  expect([memo.get('s', 'k0'), memo.get('s', 'k1'), memo.get('s', 'k2'), memo.get('t', 'k3')]).toEqual([0, 10, 2, 3]);
  for (let i = 4; i < 100; i++) memo.set('u', `k${i}`, i);
  expect(memo.size).toBeLessThanOrEqual(6);
  expect([memo.get('s', 'k0'), memo.get('t', 'k3'), memo.get('u', 'k99')]).toEqual([undefined, undefined, 99]);
});

it('Memo: finds a value by its string, and holds at most 2 x `max`: past `max` new ones, the older generation goes', () => {
  const memo = new Memo<number>(2);
  memo.set('a', 1);
  memo.set('b', 2);
  expect([memo.get('a'), memo.get('b'), memo.get('c')]).toEqual([1, 2, undefined]);
  memo.set('b', 3); // replacing a value does not count as another
  expect([memo.get('a'), memo.get('b')]).toEqual([1, 3]);
  memo.set('c', 4);
  expect([memo.get('a'), memo.get('b'), memo.get('c')]).toEqual([1, 3, 4]);
  for (let i = 0; i < 100; i++) memo.set(`x${i}`, i);
  expect(memo.size).toBeLessThanOrEqual(4);
  expect([memo.get('a'), memo.get('c'), memo.get('x99')]).toEqual([undefined, undefined, 99]);
});

/** Misses of a memo of `max` over `passes` rounds of `callers` keys asked in turn (a miss sets the value, as the memos' users do). */
function cycleMisses(get: (k: string) => number | undefined, set: (k: string, v: number) => void, callers: number, passes: number): number[] {
  const perPass: number[] = [];
  for (let pass = 0; pass < passes; pass++) {
    let misses = 0;
    for (let i = 0; i < callers; i++) {
      if (get(`198.18.0.${i}`) === undefined) (misses++, set(`198.18.0.${i}`, i));
    }
    perPass.push(misses);
  }
  return perPass;
}

// Issue #44: a memo that starts over when full misses on every request once callers come back in
// turn and are one more than it holds. Two generations: a handful of misses per pass.
it.each([
  ['Memo', () => new Memo<number>(100), (m: Memo<number>) => [(k: string) => m.get(k), (k: string, v: number) => m.set(k, v)] as const],
  ['NestedMemo', () => new NestedMemo<number>(100), (m: NestedMemo<number>) => [(k: string) => m.get('GET /', k), (k: string, v: number) => m.set('GET /', k, v)] as const],
] as const)('%s: callers in turn at and a little above its capacity still hit', (_name, make, ops) => {
  for (const callers of [100, 101, 110]) {
    const memo = make() as never;
    const [get, set] = ops(memo);
    const misses = cycleMisses(get, set, callers, 10);
    expect(misses[0]).toBe(callers); // the first pass builds every value
    // Later passes: at most (callers - max) / max of the requests, rounded up, and never all of them.
    for (const m of misses.slice(1)) expect(m).toBeLessThanOrEqual(callers - 100 + 1);
  }
});
