// identity/is-ip.ts answers as node:net's isIP does, over generated address-like text and the classic edge cases.
import { isIP as nodeIsIP } from 'node:net';
import fc from 'fast-check';
import { isIP } from '../src/identity/is-ip';

const char = (alphabet: string) => fc.constantFrom(...alphabet.split(''));

// Text close to addresses: the characters addresses are made of, groups of plausible lengths.
const v4Like = fc.array(fc.oneof(fc.integer({ min: 0, max: 300 }).map(String), fc.string({ unit: char('0123456789x'), maxLength: 4 })), { minLength: 1, maxLength: 5 }).map((p) => p.join('.'));
const v6Like = fc
  .tuple(fc.array(fc.string({ unit: char('0123456789abcdefABCDEFg'), maxLength: 5 }), { minLength: 0, maxLength: 10 }), fc.option(v4Like), fc.option(fc.string({ unit: char('abz09-.:%'), maxLength: 6 })))
  .map(([groups, v4, zone]) => `${groups.join(':')}${v4 === null ? '' : `:${v4}`}${zone === null ? '' : `%${zone}`}`);
const anything = fc.string({ unit: char('0123456789abcdef:.%[]x '), maxLength: 50 });

it('gives node:net isIP family for generated text', () => {
  fc.assert(
    fc.property(fc.oneof(v4Like, v6Like, anything, fc.string()), (text) => {
      expect(isIP(text)).toBe(nodeIsIP(text));
    }),
    { numRuns: 20_000 },
  );
});

it('agrees on the classic cases', () => {
  for (const text of ['127.0.0.1', '255.255.255.255', '256.0.0.1', '01.2.3.4', '1.2.3', '::', '::1', '::ffff:1.2.3.4', 'fe80::1%eth0', '1:2:3:4:5:6:7:8', '1:2:3:4:5:6:7:8:9', '1::2::3', '', ' 1.2.3.4', '0x7f.1', '::%', 'fe80::1%']) {
    expect([text, isIP(text)]).toEqual([text, nodeIsIP(text)]);
  }
});
