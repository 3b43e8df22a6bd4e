// Every limiter and key cache built from one createHttpLimiter (routes, groups, plans, extra keys), for one health snapshot.
import { healthOf, type Health, type HealthOptions, type HealthSource } from '../observe/health';
import { identifyFrom, type Identify } from '../identity';
import type { EngineLimiter } from '../engine/limiter';
import { metricsFor, type KeyLookupCounts } from '../observe/metrics';
import type { ResolvedHttpOptions } from './resolve-http-options';
import type { LoadShedder } from '../shedding/load-shedder';
import type { FleetShedder } from '../shedding/fleet-shedder';

/** Most scopes a family remembers the pipeline of (for usage routes); scopes come from the app's routes. */
const SCOPES_MAX = 10_000;

export class Family {
  private readonly sources = new Set<HealthSource>();
  private readonly keyLookups = new Set<KeyLookupCounts>();
  /** Which pipeline counts each scope (the first to claim it), so a usage route reads a route with that route's own limits (a Pipeline: typed in http/usage-route.ts, which reads it). */
  private readonly counters = new Map<string, object>();

  /** `shedding`: one shedder for the app-level limiter and every route made from it. */
  constructor(
    readonly shedder?: LoadShedder,
    /** `fleet`: the fleet's in-flight budget, shared the same way. */
    readonly fleet?: FleetShedder,
  ) {}

  /** Counts this limiter in the snapshot; returns it. */
  join(limiter: EngineLimiter): EngineLimiter {
    this.sources.add(limiter.healthSource);
    return limiter;
  }

  /** Stops counting a limiter that was dropped (an evicted plan). */
  leave(limiter: EngineLimiter): void {
    this.sources.delete(limiter.healthSource);
  }

  /** The identify function for these options; its key cache's counts go to the metrics and to this snapshot. */
  identify<Req>(o: ResolvedHttpOptions<Req>): Identify {
    return identifyFrom(o.identity, (stats) => {
      this.keyLookups.add(stats);
      metricsFor(o.limiter.meterProvider).keyLookups.add(stats);
    });
  }

  /** Remembers the pipeline that counts `scope` (called once per scope and pipeline, when it claims the scope). */
  counts(scope: string, pipe: object): void {
    if (!this.counters.has(scope) && this.counters.size < SCOPES_MAX) this.counters.set(scope, pipe);
  }

  /** The pipeline that counts `scope`, when one has claimed it. */
  counterOf(scope: string): object | undefined {
    return this.counters.get(scope);
  }

  health(options?: HealthOptions): Health {
    const health = healthOf(this.sources, this.keyLookups, options);
    return this.shedder ? { ...health, shedding: this.shedder.stats } : health;
  }
}
