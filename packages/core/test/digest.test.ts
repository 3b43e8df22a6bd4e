// The portable SHA-1 / SHA-256 (base/digest.ts) give node:crypto's digests, byte for byte, over generated strings of every kind.
import { createHash, randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { subjectKey } from '../src/base/keys';
import { utf8Bytes, utf8Length } from '../src/base/utf8';
import { digestKey } from '../src/identity/api-key';
import { SCRIPTS } from '../src/stores/redis/protocol';
import { base64url, portableSha256Base64url, portableSha256Hex, sha1Hex, sha256Base64url, sha256Hex } from '../src/base/digest';

const node = (algorithm: string, text: string, encoding: 'hex' | 'base64url') => createHash(algorithm).update(text, 'utf8').digest(encoding);

// ASCII, any UTF-16 (lone surrogates included: both write U+FFFD), and lengths around the 55/56/64-byte padding edges.
const texts = fc.oneof(
  fc.string({ maxLength: 200 }),
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)), maxLength: 100 }),
  fc.integer({ min: 0, max: 300 }).map((n) => 'a'.repeat(n)),
  fc.string({ unit: 'binary', minLength: 3000, maxLength: 6000 }),
);

it('SHA-256 (base64url and hex) and SHA-1 (hex) equal node:crypto', () => {
  fc.assert(
    fc.property(texts, (text) => {
      expect(portableSha256Base64url(text)).toBe(node('sha256', text, 'base64url'));
      expect(portableSha256Hex(text)).toBe(node('sha256', text, 'hex'));
      expect(sha256Base64url(text)).toBe(node('sha256', text, 'base64url'));
      expect(sha256Hex(text)).toBe(node('sha256', text, 'hex'));
      expect(sha1Hex(text)).toBe(node('sha1', text, 'hex'));
    }),
    { numRuns: 3000 },
  );
});

it('gives the same digest after a long input has passed through (no state left in the reused buffer)', () => {
  const short = 'key:abc';
  const before = portableSha256Base64url(short);
  portableSha256Base64url('x'.repeat(10_000));
  sha1Hex('é'.repeat(1_000));
  expect(portableSha256Base64url(short)).toBe(before);
  expect(before).toBe(node('sha256', short, 'base64url'));
});

it('writes base64url as Buffer does, for every length mod 3', () => {
  for (let n = 0; n < 40; n++) {
    const bytes = randomBytes(n);
    expect(base64url(bytes)).toBe(bytes.toString('base64url'));
  }
});

it('counts and writes UTF-8 as Buffer does (Content-Length, Cluster slots)', () => {
  fc.assert(
    fc.property(texts, (text) => {
      expect(utf8Length(text)).toBe(Buffer.byteLength(text));
      expect(Buffer.from(utf8Bytes(text)).equals(Buffer.from(text, 'utf8'))).toBe(true);
    }),
    { numRuns: 2000 },
  );
});

it("names keys, API keys and scripts as main's node:crypto code did", () => {
  fc.assert(
    fc.property(fc.string({ maxLength: 20 }), fc.string({ maxLength: 40 }), fc.string({ unit: 'binary', maxLength: 80 }), (prefix, scope, identity) => {
      const old = createHash('sha256').update(`${scope.length}:${scope}\u0000${identity}`).digest('base64url').slice(0, 22);
      expect(subjectKey(prefix, scope, identity)).toBe(`${prefix}:{${old}}`);
      expect(digestKey(identity)).toBe(createHash('sha256').update(identity, 'utf8').digest('base64url'));
    }),
    { numRuns: 2000 },
  );
  for (const script of Object.values(SCRIPTS)) expect(script.sha).toBe(createHash('sha1').update(script.source).digest('hex'));
});
