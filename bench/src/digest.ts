// The per-request SHA-256 of a key: core's portable one (base/digest.ts, what a Worker runs) against node:crypto's one-shot hash, in ns per digest.
import { hash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { portableSha256Base64url } from '../../packages/core/src/base/digest';

// What subjectKey and digestKey hash: a scope and an identity (about 40 bytes), and an API key.
const INPUTS = Array.from({ length: 1000 }, (_, i) => (i % 2 ? `14:GET /users/:id\u0000ip:203.0.113.${i % 256}` : `sk_live_${i.toString(36).padStart(24, 'x')}`));
const N = Number(process.argv[2] ?? 1_000_000);

function nsPerDigest(digest: (text: string) => string): number {
  let sink = 0;
  for (let i = 0; i < 100_000; i++) sink += digest(INPUTS[i % INPUTS.length]).length; // warm-up
  const start = performance.now();
  for (let i = 0; i < N; i++) sink += digest(INPUTS[i % INPUTS.length]).length;
  const ns = ((performance.now() - start) * 1e6) / N;
  if (sink === 0) throw new Error('unreachable');
  return ns;
}

const native = nsPerDigest((text) => hash('sha256', text, 'base64url'));
const portable = nsPerDigest(portableSha256Base64url);
console.log(JSON.stringify({ digests: N, nativeNs: Math.round(native), portableNs: Math.round(portable), ratio: +(portable / native).toFixed(1) }));
