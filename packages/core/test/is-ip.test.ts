// identity/is-ip.ts answers as node:net's isIP does, over generated address-like text and the classic edge cases.
import { isIP as nodeIsIP } from 'node:net';
import fc from 'fast-check';
import { isIP } from '../src/identity/is-ip';

const char = (alphabet: string) => fc.constantFrom(...alphabet.split(''));

// Text close to addresses: the characters addresses are made of, groups of plausible lengths.
const v4Like = fc.array(fc.oneof(fc.integer({ min: 0, max: 300 }).map(String), fc.string({ unit: char('0123456789x'), maxLength: 4 })), { minLength: 1, maxLength: 5 }).map((p) => p.join('.'));
// Near-valid IPv4: four parts around 0-255, some with a leading zero.
const v4Parts = fc.array(fc.oneof(fc.integer({ min: 0, max: 260 }).map(String), fc.integer({ min: 0, max: 99 }).map((n) => `0${n}`)), { minLength: 4, maxLength: 4 }).map((p) => p.join('.'));
const v6Like = fc
  .tuple(fc.array(fc.string({ unit: char('0123456789abcdefABCDEFg'), maxLength: 5 }), { minLength: 0, maxLength: 10 }), fc.option(fc.oneof(v4Like, v4Parts)), fc.option(fc.string({ unit: char('abz09-.:%'), maxLength: 6 })))
  .map(([groups, v4, zone]) => `${groups.join(':')}${v4 === null ? '' : `:${v4}`}${zone === null ? '' : `%${zone}`}`);
// Near-valid IPv6: 1 to 8 groups of 1 to 5 hex digits, '::' somewhere or nowhere.
const v6Groups = fc
  .tuple(fc.array(fc.string({ unit: char('0123456789abcdefABCDEF'), minLength: 1, maxLength: 5 }), { minLength: 1, maxLength: 8 }), fc.integer({ min: -1, max: 8 }))
  .map(([groups, gap]) => (gap < 0 || gap > groups.length ? groups.join(':') : `${groups.slice(0, gap).join(':')}::${groups.slice(gap).join(':')}`));
const anything = fc.string({ unit: char('0123456789abcdef:.%[]x '), maxLength: 50 });

it('gives node:net isIP family for generated text', () => {
  const seen = { 0: 0, 4: 0, 6: 0 };
  fc.assert(
    fc.property(fc.oneof(v4Like, v4Parts, v6Like, v6Groups, anything, fc.string()), (text) => {
      const family = isIP(text);
      seen[family]++;
      expect(family).toBe(nodeIsIP(text));
    }),
    { numRuns: 20_000 },
  );
  // The generators reach every answer, not only "not an address".
  expect([seen[0] > 100, seen[4] > 100, seen[6] > 100, seen]).toEqual([true, true, true, seen]);
});

it('agrees on the classic cases', () => {
  for (const text of ['127.0.0.1', '255.255.255.255', '256.0.0.1', '01.2.3.4', '1.2.3', '::', '::1', '::ffff:1.2.3.4', 'fe80::1%eth0', '1:2:3:4:5:6:7:8', '1:2:3:4:5:6:7:8:9', '1::2::3', '', ' 1.2.3.4', '0x7f.1', '::%', 'fe80::1%']) {
    expect([text, isIP(text)]).toEqual([text, nodeIsIP(text)]);
  }
});
