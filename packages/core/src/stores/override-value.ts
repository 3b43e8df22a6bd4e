// A subject's override as stored (one string under its hash tag): written by the limiter, read by lua/main.lua's Override and by its twin here.
import type { StoreLimit } from '../algorithms/registry';

/** The string stored: ';<suffix>=<cap>[,<rate>]' per overridden limit (the rate for token-bucket and gcra). */
export function overrideValue(entries: readonly { suffix: string; cap: number; rate?: number }[]): string {
  let out = '';
  for (const e of entries) out += `;${e.suffix}=${e.cap}${e.rate === undefined ? '' : `,${e.rate}`}`;
  return out;
}

/**
 * The twin of main.lua's Override: each limit whose key's suffix (after `base:`) the value names gets
 * its cap (capped at `ceiling`, 0: none) and rate (scaled down with the cap). Returns the limits to
 * decide with and the capacity in force per limit (0: refused until the override expires).
 */
export function applyOverride(
  value: string | undefined,
  keys: readonly string[],
  overrideKey: string,
  limits: readonly StoreLimit[],
  ceiling: number,
): { limits: StoreLimit[]; caps: number[] } {
  const out = limits.slice();
  const caps = limits.map((l) => l.capacity);
  if (value === undefined) return { limits: out, caps };
  const cut = overrideKey.length - 3;
  for (let i = 0; i < limits.length; i++) {
    const at = value.indexOf(`;${keys[i].slice(cut)}=`);
    if (at < 0) continue;
    const from = value.indexOf('=', at + 1) + 1;
    const stop = value.indexOf(';', from);
    const [c0, r0] = value.slice(from, stop < 0 ? undefined : stop).split(',');
    let c = Number(c0);
    let r = r0 === undefined || r0 === '' ? undefined : Number(r0);
    if (ceiling > 0 && c > ceiling) {
      if (r !== undefined) r = (r * ceiling) / c;
      c = ceiling;
    }
    caps[i] = c;
    const l = limits[i];
    out[i] = r !== undefined && 'refillPerSecond' in l ? { ...l, capacity: c, refillPerSecond: r } : ({ ...l, capacity: c } as StoreLimit);
  }
  return { limits: out, caps };
}
