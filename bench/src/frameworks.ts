// The frameworks the bench measures: one descriptor each, from which every list of frameworks (types, peers, report, versions) is derived.
import type { LimiterKind, StoreKind } from './types';

/** A peer limiter as its library's docs set it up, in memory (its default store) or on Redis. */
export interface PeerSpec {
  kind: LimiterKind;
  store: StoreKind;
  label: string;
  /**
   * The framework's cheapest peer in this store, as issue #44 measured them (Express: rate-limiter-flexible,
   * in memory and on Redis; the others have one peer a store): `pnpm bench:instructions --peers best` measures only these.
   */
  best?: boolean;
}

export interface FrameworkInfo {
  /** How the page names it in prose (ids and headings use the key). */
  title: string;
  /** The framework's own packages whose installed versions the report prints. */
  packages: readonly string[];
  /** The Floodgate package that serves it. */
  adapter: string;
  /** The peers' packages, whose versions the report prints. */
  peerPackages: readonly string[];
  peers: readonly PeerSpec[];
}

/**
 * Every framework, in the order the page lists them. Adding one: a descriptor here, a server in
 * src/server.ts (`SERVERS`, which the compiler then asks for) and its contenders in src/limiters.ts.
 */
export const FRAMEWORK_INFO = {
  express: {
    title: 'Express',
    packages: ['express'],
    adapter: '@floodgate/express',
    peerPackages: ['express-rate-limit', 'rate-limit-redis', 'rate-limiter-flexible'],
    peers: [
      { kind: 'express-rate-limit', store: 'memory', label: 'express-rate-limit (MemoryStore)' },
      { kind: 'rate-limiter-flexible', store: 'memory', label: 'rate-limiter-flexible (RateLimiterMemory)', best: true },
      { kind: 'express-rate-limit', store: 'redis', label: 'express-rate-limit + rate-limit-redis' },
      { kind: 'rate-limiter-flexible', store: 'redis', label: 'rate-limiter-flexible (RateLimiterRedis)', best: true },
    ],
  },
  fastify: {
    title: 'Fastify',
    packages: ['fastify'],
    adapter: '@floodgate/fastify',
    peerPackages: ['@fastify/rate-limit'],
    peers: [
      { kind: 'fastify-rate-limit', store: 'memory', label: '@fastify/rate-limit (memory)', best: true },
      { kind: 'fastify-rate-limit', store: 'redis', label: '@fastify/rate-limit (Redis)', best: true },
    ],
  },
  koa: {
    title: 'Koa',
    packages: ['koa'],
    adapter: '@floodgate/koa',
    peerPackages: ['koa-ratelimit'],
    peers: [
      { kind: 'koa-ratelimit', store: 'memory', label: 'koa-ratelimit (memory driver)', best: true },
      { kind: 'koa-ratelimit', store: 'redis', label: 'koa-ratelimit (Redis)', best: true },
    ],
  },
  'nestjs-express': {
    title: 'NestJS on the Express platform',
    packages: ['@nestjs/core', '@nestjs/platform-express'],
    adapter: '@floodgate/nestjs',
    peerPackages: ['@nestjs/throttler', '@nest-lab/throttler-storage-redis'],
    peers: [
      { kind: 'nestjs-throttler', store: 'memory', label: '@nestjs/throttler (default storage)', best: true },
      { kind: 'nestjs-throttler', store: 'redis', label: '@nestjs/throttler + @nest-lab/throttler-storage-redis', best: true },
    ],
  },
  'nestjs-fastify': {
    title: 'NestJS on the Fastify platform',
    packages: ['@nestjs/core', '@nestjs/platform-fastify'],
    adapter: '@floodgate/nestjs',
    peerPackages: ['@nestjs/throttler', '@nest-lab/throttler-storage-redis'],
    peers: [
      { kind: 'nestjs-throttler', store: 'memory', label: '@nestjs/throttler (default storage)', best: true },
      { kind: 'nestjs-throttler', store: 'redis', label: '@nestjs/throttler + @nest-lab/throttler-storage-redis', best: true },
    ],
  },
  hono: {
    title: 'Hono on @hono/node-server',
    packages: ['hono', '@hono/node-server'],
    adapter: '@floodgate/hono',
    peerPackages: ['hono-rate-limiter'],
    peers: [
      { kind: 'hono-rate-limiter', store: 'memory', label: 'hono-rate-limiter (MemoryStore)', best: true },
      { kind: 'hono-rate-limiter', store: 'redis', label: 'hono-rate-limiter (RedisStore)', best: true },
    ],
  },
} as const satisfies Record<string, FrameworkInfo>;

export type Framework = keyof typeof FRAMEWORK_INFO;
export const FRAMEWORKS = Object.keys(FRAMEWORK_INFO) as readonly Framework[];

/** A framework's descriptor, typed as the interface. */
export const frameworkInfo = (framework: Framework): FrameworkInfo => FRAMEWORK_INFO[framework];

/** Whether a string names a framework (ids start with one: `nestjs-fastify/none`). */
export const isFramework = (name: string): name is Framework => Object.hasOwn(FRAMEWORK_INFO, name);

/** The framework an id (`<framework>/<contender>/<regime>`) belongs to, or undefined. */
export function frameworkOf(id: string): Framework | undefined {
  const head = id.split('/')[0];
  return isFramework(head) ? head : undefined;
}
