// In-flight limits: the `concurrency` option, the lease a limiter hands out, and which store limits hold leases.
import type { StoreLimit } from '../algorithms/registry';
import { parseDuration, type Duration } from '../base/duration';
import { invalidOption } from '../base/errors';
import type { ResolvedLimit } from './limit';
import { checkOptionNames, MAX_UNITS, optionNames, wholeNumber } from '../base/validate';

/** How many of one subject's requests may be in flight at once (docs/concurrency.md). */
export interface ConcurrencyOptions {
  /** Requests (slots: a request takes `cost` of them) in flight at once per subject. A whole number from 1. Required. */
  limit: number;
  /**
   * How long a lease lasts without renewal: a lease whose holder crashed or hung frees its slots
   * this long after its last renewal. The limiter renews the leases of requests still running
   * every leaseMs / 3. From 1 s to 1 h. Default 30_000 ms.
   */
  leaseMs?: Duration;
  /**
   * The longest the limiter renews one lease for: a request still running this long after it was
   * admitted (a hung handler, a response that never ends) stops being renewed, and its slots free
   * themselves within maxHoldMs of its admission (the last renewal never takes the lease past it),
   * even though the request may still run: the slot is then counted free early, never held forever.
   * Set it above your longest legitimate request (a long export, a stream). From leaseMs to 24 h.
   * Default 600_000 ms (10 minutes).
   */
  maxHoldMs?: Duration;
  /** Policy name in headers and the key. `[A-Za-z0-9_.-]{1,64}`. Default 'concurrency'. */
  name?: string;
}

const CONCURRENCY_OPTION_NAMES = optionNames<ConcurrencyOptions>()(['limit', 'leaseMs', 'maxHoldMs', 'name']);

/** The default `maxHoldMs`: 10 minutes, past most requests, short of "forever". */
export const DEFAULT_MAX_HOLD_MS = 600_000;
const MAX_HOLD_CEILING_MS = 86_400_000;

/** The in-flight limit as a limit of the lease kind, plus how long its leases may be renewed. */
export interface ResolvedConcurrency extends ResolvedLimit {
  /** `maxHoldMs`: no lease is renewed past this long after its admission. */
  readonly maxHoldMs: number;
}

/** The `concurrency` option as a limit of the lease kind, decided with the request's rate limits in one store call. */
export function resolveConcurrency(raw: ConcurrencyOptions | undefined, option = 'concurrency'): ResolvedConcurrency | undefined {
  if (raw === undefined) return undefined;
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) invalidOption(option, raw, 'an object such as { limit: 10 }');
  checkOptionNames(option, raw, CONCURRENCY_OPTION_NAMES);
  const limit = wholeNumber(`${option}.limit`, raw.limit, 1, MAX_UNITS);
  const leaseMs = parseDuration(`${option}.leaseMs`, raw.leaseMs ?? 30_000, 1_000, 3_600_000);
  // Below one lease it would mean nothing (an unrenewed lease already lasts leaseMs): the range starts at leaseMs.
  const maxHoldMs = parseDuration(`${option}.maxHoldMs`, raw.maxHoldMs ?? Math.max(DEFAULT_MAX_HOLD_MS, leaseMs), leaseMs, MAX_HOLD_CEILING_MS);
  const name = raw.name ?? 'concurrency';
  if (typeof name !== 'string' || !/^[A-Za-z0-9_.-]{1,64}$/.test(name)) invalidOption(`${option}.name`, name, 'a string matching [A-Za-z0-9_.-]{1,64}');
  return { name, algorithm: 'concurrency', limit, windowMs: leaseMs, store: { algorithm: 'concurrency', capacity: limit, leaseMs }, keySuffix: `${name}.cc`, maxHoldMs };
}

/** A lease id: unique per request (122 random bits), a letter first (the stores' token rule). Web Crypto: core also runs in the browser (the playground). */
export function newLeaseToken(): string {
  return `L${globalThis.crypto.randomUUID().replace(/-/g, '')}`;
}

/** The slots one admitted request holds until it finishes. */
export interface Lease {
  /** The lease's id in the store. */
  readonly token: string;
  /**
   * Gives the slots back (once: later calls resolve false at once). Resolves true when the store
   * applied it, false when it failed (the lease then expires after `leaseMs`). Never rejects.
   */
  release(): Promise<boolean>;
  /** True once the lease has been held `maxHoldMs` and is no longer renewed (it expires on its own). */
  readonly capped: boolean;
}

/** Whether a store limit holds leases (release and renew go to these only). */
export const isLease = (l: StoreLimit): boolean => l.algorithm === 'concurrency';

