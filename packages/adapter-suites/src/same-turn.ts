// Same-turn checks: an admitted request on the memory store reaches its handler in the turn its
// request arrived in. A middleware or hook placed before the limiter makes a marker; the handler
// answers whether it still reads `sync: true` (its microtask has not run yet).

/** A marker whose `sync` turns false when the current turn's microtasks run. */
export function turnMarker(): { sync: boolean } {
  const marker = { sync: true };
  queueMicrotask(() => (marker.sync = false));
  return marker;
}

/** Asks `/` once: 200, answered in one turn, and (when limited, limit 2) Floodgate's remaining quota 1. */
export async function expectServedInOneTurn(port: number, limited: boolean): Promise<void> {
  const res = await fetch(`http://127.0.0.1:${port}/`);
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual({ sync: true });
  if (limited) expect(res.headers.get('ratelimit-remaining')).toBe('1');
}
