// Memo and NestedMemo: one- and two-level lookups by the caller's own strings, bounded by starting over.
import { Memo, NestedMemo } from '../src/base/memo';

it('finds a value by its two strings, and no other', () => {
  const memo = new NestedMemo<number>(10);
  memo.set('GET', '/a', 1);
  memo.set('GET', '/b', 2);
  memo.set('POST', '/a', 3);
  expect([memo.get('GET', '/a'), memo.get('GET', '/b'), memo.get('POST', '/a'), memo.get('POST', '/b'), memo.get('PUT', '/a')]).toEqual([1, 2, 3, undefined, undefined]);
});

it('holds at most `max` values: past it, it starts over with the new one', () => {
  const memo = new NestedMemo<number>(3);
  for (let i = 0; i < 3; i++) memo.set('s', `k${i}`, i);
  expect(memo.get('s', 'k2')).toBe(2);
  memo.set('t', 'k3', 3); // the fourth value: the first three are dropped
  expect([memo.get('s', 'k0'), memo.get('s', 'k1'), memo.get('s', 'k2'), memo.get('t', 'k3')]).toEqual([undefined, undefined, undefined, 3]);
});

it('Memo: finds a value by its string, and holds at most `max`: past it, it starts over with the new one', () => {
  const memo = new Memo<number>(2);
  memo.set('a', 1);
  memo.set('b', 2);
  expect([memo.get('a'), memo.get('b'), memo.get('c')]).toEqual([1, 2, undefined]);
  memo.set('b', 3); // replacing a value does not count as another
  expect([memo.get('a'), memo.get('b')]).toEqual([1, 3]);
  memo.set('c', 4);
  expect([memo.get('a'), memo.get('b'), memo.get('c')]).toEqual([undefined, undefined, 4]);
});
