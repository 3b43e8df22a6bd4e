// The lease book's renewal schedule, on Jest's fake clock: each lease renewed once every leaseMs / 3 from when it was taken or last renewed, released once, never renewed past maxHoldMs.
import { LeaseBook, type LeaseSite } from '../src/engine/lease-book';
import type { StoreRequest } from '../src/stores/store';

/** A site that records each request's mode and token. */
function recordingSite(): LeaseSite & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    evaluate(request: StoreRequest) {
      calls.push(`${request.mode} ${request.token}`);
      return Promise.resolve(undefined);
    },
  };
}

beforeEach(() => jest.useFakeTimers({ now: 0 }));
afterEach(() => jest.useRealTimers());

describe('LeaseBook', () => {
  // leaseMs 3000: renewed every 1000 ms; the book's one timer ticks at 1000, 2000, ... after the first hold.
  const book = (maxHoldMs = Infinity, onCapped = () => undefined) => new LeaseBook([], 3_000, () => Date.now(), maxHoldMs, onCapped);

  it('renews a lease once its 1000 ms have passed since it was taken, not at the first tick after it was taken', () => {
    const leases = book();
    const site = recordingSite();
    leases.hold(['k'], 1, 'a', site);
    jest.advanceTimersByTime(900);
    leases.hold(['k'], 1, 'b', site);
    jest.advanceTimersByTime(100); // t = 1000: a is 1000 ms old, b 100 ms
    expect(site.calls).toEqual(['renew a']);
    jest.advanceTimersByTime(1_000); // t = 2000: a renewed 1000 ms ago, b taken 1100 ms ago
    expect(site.calls).toEqual(['renew a', 'renew a', 'renew b']);
    jest.advanceTimersByTime(1_000); // t = 3000: a 1000 ms since its renewal; b 1000 ms since its own
    expect(site.calls).toEqual(['renew a', 'renew a', 'renew b', 'renew a', 'renew b']);
  });

  it('a released lease is released once and never renewed again; the timer stops with the last lease', async () => {
    const leases = book();
    const site = recordingSite();
    const a = leases.hold(['k'], 1, 'a', site);
    jest.advanceTimersByTime(1_000);
    expect(await a.release()).toBe(true);
    expect(await a.release()).toBe(false);
    jest.advanceTimersByTime(5_000);
    expect(site.calls).toEqual(['renew a', 'release a']);
    expect(leases.size).toBe(0);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('stops renewing a lease whose next renewal would run past maxHoldMs, and says so once per lease', () => {
    let capped = 0;
    const leases = book(5_000, () => void capped++);
    const site = recordingSite();
    const a = leases.hold(['k'], 1, 'a', site);
    jest.advanceTimersByTime(10_000);
    // Renewed at 1000 and 2000 (each runs 3000 ms: to 4000 and 5000); at 3000 a renewal would run to 6000.
    expect(site.calls).toEqual(['renew a', 'renew a']);
    expect([capped, a.capped, leases.capped, leases.size]).toEqual([1, true, 1, 0]);
  });
});
