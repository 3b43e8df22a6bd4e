// Types for probe.cjs, so the TypeScript consumers can use it under strict settings.
import type { Server } from 'node:http';

export interface Seen {
  status: number;
  limit: string | null;
  remaining: string | null;
  reset: string | null;
  retryAfter: string | null;
  body: string;
}
export function probe(base: string, path: string, close: () => Promise<void>, times?: number): Promise<Seen[]>;
export function listenOn(
  listen: (port: number, host: string, callback: () => void) => Server,
): Promise<{ base: string; close: () => Promise<void> }>;
/** Structural, so both the CommonJS and the ESM build of @floodgate/core fit. */
export interface CoreLike {
  createLimiter(options: object): { consume(subject: string): Promise<{ allowed: boolean; remaining: number | null; reason: string }> };
  RedisStore: new (options: { client: never; timeoutMs?: number }) => object;
}
export function redisRoundTrip(
  core: CoreLike,
  Redis: typeof import('ioredis').Redis,
  url: string,
): Promise<{ allowed: boolean; remaining: number | null; reason: string }[]>;
export function report(result: unknown): void;
