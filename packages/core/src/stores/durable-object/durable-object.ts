// FloodgateDurableObject: the in-memory twins (MemoryStore) inside one Cloudflare Durable Object per shard of subjects, deciding by the object's own clock the batches DurableObjectStore sends.
import { calendarWindowFromJson } from '../../calendar/calendar-window';
import { FloodgateError } from '../../base/errors';
import { MemoryStore } from '../memory-store';
import type { StoreRequest } from '../store';
import type { WireAnswer, WireBatch } from './wire';

/** Most requests one batch may carry: a bigger body is refused whole (the sender never makes one). */
export const MAX_WIRE_BATCH = 512;

/** The env names the object reads: a test clock is honoured only where the Worker's env says so. */
interface ObjectEnv {
  /** 'true' only in tests: the batch's `now` then replaces the object's clock (the conformance suite's fake clock). */
  readonly FLOODGATE_UNSAFE_TEST_CLOCK?: unknown;
  /** Most subjects' states one object keeps (MemoryStore's maxKeys). Default 100000. */
  readonly FLOODGATE_MAX_KEYS?: unknown;
}

/** A request off the wire with its calendar windows rebuilt (JSON keeps their fields, not their methods). */
function revive(request: StoreRequest): StoreRequest {
  if (!request.limits.some((limit) => 'calendar' in limit && limit.calendar)) return request;
  const limits = request.limits.map((limit) => {
    if (!('calendar' in limit) || !limit.calendar) return limit;
    const calendar = calendarWindowFromJson(limit.calendar);
    if (!calendar) throw new FloodgateError('FG_STORE_REPLY', 'A calendar window arrived in a form this object cannot rebuild.');
    return { ...limit, calendar };
  });
  return { ...request, limits } as StoreRequest;
}

/**
 * Bind it in wrangler.toml (`[[durable_objects.bindings]] name = "FLOODGATE" class_name =
 * "FloodgateDurableObject"`, with a migration) and export it from the Worker's entry:
 * `export { FloodgateDurableObject } from '@floodgate/core'`. Each object is one shard's
 * MemoryStore: bounded (LRU, `FLOODGATE_MAX_KEYS`), expired lazily, no timer per key. A Durable
 * Object runs one request at a time per object, so a batch is decided in arrival order, each
 * request on its own, exactly as MemoryStore decides it. State lives in the object's memory
 * (docs/edge.md#durable-objects says what an eviction of an idle object forgets).
 */
export class FloodgateDurableObject {
  private readonly store: MemoryStore;
  private readonly testClock: boolean;
  private now: number | undefined;

  constructor(_state: unknown, env?: ObjectEnv) {
    this.testClock = env?.FLOODGATE_UNSAFE_TEST_CLOCK === 'true';
    const maxKeys = env?.FLOODGATE_MAX_KEYS === undefined ? undefined : Number(env.FLOODGATE_MAX_KEYS);
    // The object's own clock: never the caller's (a test clock only where the env allows it).
    this.store = new MemoryStore({ clock: () => this.now ?? Date.now(), ...(maxKeys === undefined ? {} : { maxKeys }) });
  }

  async fetch(request: Request): Promise<Response> {
    let batch: WireBatch;
    try {
      batch = (await request.json()) as WireBatch;
      if (!batch || !Array.isArray(batch.requests) || batch.requests.length > MAX_WIRE_BATCH) throw new Error('not a batch');
    } catch {
      return new Response(JSON.stringify({ error: 'Floodgate: the body is not a batch of store requests.' }), { status: 400 });
    }
    if (Array.isArray(batch.reset)) await this.store.reset(batch.reset.map(String));
    this.now = this.testClock && typeof batch.now === 'number' ? batch.now : undefined;
    const answers: WireAnswer[] = batch.requests.map((one) => {
      try {
        return { ok: this.store.evaluateSync(revive(one)) };
      } catch (error) {
        const code = error instanceof FloodgateError ? error.code : 'FG_STORE_REPLY';
        return { error: { code, message: error instanceof Error ? error.message : String(error) } };
      }
    });
    this.now = undefined;
    return new Response(JSON.stringify({ answers }), { headers: { 'content-type': 'application/json' } });
  }
}
