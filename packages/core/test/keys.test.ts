// Subject keys: fixed length, one hash tag, no raw identity, and no two (scope, identity) pairs share one.
import { subjectKey } from '../src/base/keys';

it('gives a bounded key with one hash tag, never containing the identity', () => {
  const secret = `sk_live_${'x'.repeat(10_000)}{}:`;
  const key = subjectKey('fg', 'GET /users/:id', secret);
  expect(key).toMatch(/^fg:\{[A-Za-z0-9_-]{22}\}$/);
  expect(key).not.toContain('sk_live');
});

it('keeps scope and identity apart, even when a NUL could make two pairs spell one input', () => {
  expect(subjectKey('fg', 'a\u0000b', 'c')).not.toBe(subjectKey('fg', 'a', 'b\u0000c'));
  expect(subjectKey('fg', 'ab', 'c')).not.toBe(subjectKey('fg', 'a', 'bc'));
  expect(subjectKey('fg', 's', 'x')).not.toBe(subjectKey('fg2', 's', 'x'));
});

it('answers the same key from its memo as from a fresh digest', () => {
  const first = subjectKey('fg', 'GET /a', 'ip:10.0.0.1');
  expect(subjectKey('fg', 'GET /a', 'ip:10.0.0.1')).toBe(first); // memo hit
  // A long identity bypasses the memo and still gets the same digest every time.
  const long = 'k'.repeat(600);
  expect(subjectKey('fg', 'GET /a', long)).toBe(subjectKey('fg', 'GET /a', long));
  expect(subjectKey('fg', 'GET /a', long)).not.toBe(first);
});
