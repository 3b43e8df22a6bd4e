// MemoryStore's protected share under generated sequences of holds, deletes and time: bounded, and a lock-out in force is never displaced.
import fc from 'fast-check';
import { ProtectedShare, type HoldKind } from '../src/stores/protected-share';

type Op = { op: 'hold'; key: number; forMs: number; kind: HoldKind } | { op: 'delete'; key: number } | { op: 'advance'; ms: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ op: fc.constant('hold' as const), key: fc.nat(30), forMs: fc.integer({ min: 1, max: 100 }), kind: fc.constantFrom<HoldKind>('block', 'lock') }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('delete' as const), key: fc.nat(30) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 40 }) }) },
);

it('stays within max, never displaces a lock in force, hands ended holds back, and refuses only when every place is taken by a longer or stronger hold', () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 8 }), fc.array(opArb, { maxLength: 300 }), (max, ops) => {
      let now = 0;
      const released: string[] = [];
      const share = new ProtectedShare<string>(max, (key) => void released.push(key), () => undefined);
      // The model: what each key is held as, as far as the share told us.
      const model = new Map<string, { until: number; kind: HoldKind }>();
      for (const o of ops) {
        if (o.op === 'advance') now += o.ms;
        else if (o.op === 'delete') {
          share.delete(`k${o.key}`);
          model.delete(`k${o.key}`);
        } else {
          const key = `k${o.key}`;
          const until = now + o.forMs;
          const before = [...model.entries()];
          released.length = 0;
          const held = share.hold(key, key, until, o.kind, now);
          if (!held) {
            // Refused: full, nothing ended, and no block it may displace.
            expect(model.size).toBe(max);
            for (const [, h] of before) {
              expect(h.until).toBeGreaterThan(now);
              if (h.kind === 'block') expect(o.kind === 'block' && h.until >= until).toBe(true);
            }
          } else {
            const old = model.get(key);
            model.set(key, { until: Math.max(until, old?.until ?? 0), kind: o.kind === 'lock' || old?.kind === 'lock' ? 'lock' : 'block' });
          }
          // Whatever left the share for this hold: an ended hold (released) or a block in force (dropped), never a lock in force.
          for (const [k, h] of before) {
            if (k === key || share.get(k) !== undefined) continue;
            if (released.includes(k)) expect(h.until).toBeLessThanOrEqual(now);
            else {
              // A block in force, displaced by a lock or by a block that ends later; the one that ends first.
              expect({ k, kind: h.kind, inForce: h.until > now, forStronger: o.kind === 'lock' || h.until < until }).toEqual({ k, kind: 'block', inForce: true, forStronger: true });
              for (const [, other] of before) if (other.kind === 'block') expect(h.until).toBeLessThanOrEqual(other.until);
            }
            model.delete(k);
          }
        }
        expect(share.size).toBe(model.size);
        expect(share.size).toBeLessThanOrEqual(max);
        for (const [k, h] of model) expect(share.get(k)).toMatchObject({ until: h.until, kind: h.kind });
      }
    }),
    { numRuns: 300 },
  );
});
