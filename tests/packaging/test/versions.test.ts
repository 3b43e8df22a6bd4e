// The versions a user installs today, from the packed tarballs in fresh apps: Hono at the peer range's lower bound and at `latest`, the quickstart's tsconfig under TypeScript 5.9 and 7, and two apps on one Redis with the default prefix.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startRedis, type RedisServer } from '@floodgate/testing';
import { buildOnce } from './build-once';

const exec = promisify(execFile);
const ROOT = join(__dirname, '..', '..', '..');
const FIXTURE = join(__dirname, '..', 'versions-consumer');
// Building and a cold `npm install` dominate; on 2 busy cores allow minutes.
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

const manifestOf = (pkg: string) =>
  JSON.parse(readFileSync(join(ROOT, 'packages', pkg, 'package.json'), 'utf8')) as { devDependencies: Record<string, string>; peerDependencies: Record<string, string> };
const ROOT_DEV = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> }).devDependencies;

/** The lowest version a caret range admits ('^4.8.0' -> '4.8.0'): the version a user on the oldest supported release has. */
function lowerBound(range: string): string {
  const low = /^\^(\d+\.\d+\.\d+)/.exec(range.split('||')[0].trim())?.[1];
  if (!low) throw new Error(`cannot read a lower bound from the range '${range}'`);
  return low;
}

const HONO_RANGE = manifestOf('hono').peerDependencies.hono;
const PACKED = ['core', 'hono', 'client'] as const;

let tmp: string;
let redis: RedisServer | undefined;
const tarballs: Record<string, string> = {};

/** A fresh app in its own folder: the fixture, the tarballs and `dependencies`, installed by npm (which refuses a peer outside its range). */
async function app(name: string, dependencies: Record<string, string>): Promise<string> {
  const dir = join(tmp, name);
  cpSync(FIXTURE, dir, { recursive: true });
  for (const pkg of PACKED) dependencies[`@floodgate/${pkg}`] = `file:${tarballs[pkg]}`;
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify({ name: `floodgate-${name}`, private: true, type: 'module', dependencies }, null, 2)}\n`);
  await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], dir);
  return dir;
}

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'floodgate-versions-'));
  await buildOnce(PACKED);
  for (const pkg of PACKED) {
    const out = join(tmp, pkg);
    await run('pnpm', ['pack', '--pack-destination', out], join(ROOT, 'packages', pkg));
    tarballs[pkg] = join(out, readdirSync(out).find((f) => f.endsWith('.tgz'))!);
  }
});

/** A child's state from /proc (Linux), for a failure message: its state letter, what it waits in, its open files. */
function procState(child: ChildProcess): string {
  try {
    const stat = readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1].split(' ');
    const wchan = readFileSync(`/proc/${child.pid}/wchan`, 'utf8');
    return `pid ${child.pid} state ${stat[0]} utime ${stat[11]} stime ${stat[12]} wchan ${wchan} fds ${readdirSync(`/proc/${child.pid}/fd`).length}`;
  } catch (error) {
    return `pid ${child.pid} exit ${child.exitCode}: ${(error as Error).message}`;
  }
}

/** The shared-prefix apps, stopped after their test even when it failed (a timed-out test never reaches its own clean-up). */
const running: ChildProcess[] = [];

afterAll(async () => {
  for (const child of running) if (child.exitCode === null) child.kill('SIGKILL');
  await redis?.stop();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe('Hono: the declared peer range is the range the package loads in', () => {
  it('the range starts at 4.8.0: hono/route (matchedRoutes) is exported from 4.8 on', () => {
    expect(lowerBound(HONO_RANGE)).toBe('4.8.0');
  });

  it("hono 4.7 (no 'hono/route': ERR_PACKAGE_PATH_NOT_EXPORTED at load) is refused by npm at install, below the range", async () => {
    await expect(app('hono-4.7', { hono: '4.7.11', '@hono/node-server': manifestOf('hono').devDependencies['@hono/node-server'] })).rejects.toThrow(/ERESOLVE[\s\S]*peer hono@"\^4\.8\.0"/);
  });

  // `latest` is what `npm i hono` gives today: a new major outside the range fails the install (ERESOLVE) here first.
  it.each([
    ['the lower bound', lowerBound(HONO_RANGE)],
    ['latest', 'latest'],
  ])('hono at %s (%s), on @hono/node-server with no getConnInfo: 200, 200, 429 with headers, no warning', async (row, version) => {
    const dir = await app(`hono-${row.replace(/ /g, '-')}`, { hono: version, '@hono/node-server': manifestOf('hono').devDependencies['@hono/node-server'] });
    const report = JSON.parse(await run(process.execPath, ['hono-app.mjs'], dir)) as {
      hono: string;
      node: string;
      seen: { status: number; limit: string; remaining: string; retryAfter: string | null; body: string }[];
      warnings: string[];
    };
    console.log(`packaging | hono ${report.hono} on Node ${report.node}: ${JSON.stringify(report)}`);
    if (version !== 'latest') expect(report.hono).toBe(version);
    expect(report.seen.map((s) => s.status)).toEqual([200, 200, 429]);
    expect(report.seen.map((s) => [s.limit, s.remaining])).toEqual([['2', '1'], ['2', '0'], ['2', '0']]);
    expect(Number(report.seen[2].retryAfter)).toBeGreaterThanOrEqual(1);
    expect(JSON.parse(report.seen[2].body)).toMatchObject({ status: 429 });
    // The client IP came from the Node socket: no FG_IP_MISSING (nor any other warning).
    expect(report.warnings).toEqual([]);
  });
});

/** The quickstart's tsconfig.json, as the page shows it (the json block that has compilerOptions). */
function quickstartTsconfig(): string {
  const page = readFileSync(join(ROOT, 'docs', 'quickstart.md'), 'utf8');
  const block = [...page.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => m[1]).find((b) => b.includes('compilerOptions'));
  if (!block) throw new Error('docs/quickstart.md shows no tsconfig.json');
  return block;
}

let typescriptApp: Promise<string> | undefined;
/** The app with TypeScript 5.9 and 7, Hono, the client and ioredis, installed once for the tests that need it. */
function typescriptAppDir(): Promise<string> {
  typescriptApp ??= app('typescript', {
    hono: manifestOf('hono').devDependencies.hono,
    '@types/node': ROOT_DEV['@types/node'],
    typescript: ROOT_DEV.typescript,
    typescript7: 'npm:typescript@^7',
    ioredis: manifestOf('core').devDependencies.ioredis,
  });
  return typescriptApp;
}

describe("TypeScript 5.9 and 7: the quickstart's tsconfig and a newcomer's file that reads process.env", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await typescriptAppDir();
    writeFileSync(join(dir, 'tsconfig.json'), quickstartTsconfig());
  });

  it.each([
    ['5.9', 'typescript'],
    ['7', 'typescript7'],
  ])('TypeScript %s type-checks it against the packed types', async (major, pkg) => {
    const tsc = join(dir, 'node_modules', pkg, 'bin', 'tsc');
    expect((await run(process.execPath, [tsc, '--version'], dir)).trim()).toMatch(new RegExp(`^Version ${major.replace('.', '\\.')}\\.`));
    // Emits dist/server.js, as `npx tsc` in the quickstart does; a type error fails here with tsc's output.
    await run(process.execPath, [tsc, '-p', 'tsconfig.json'], dir);
    expect(readFileSync(join(dir, 'dist', 'server.js'), 'utf8')).toContain('@floodgate/hono');
  });
});

it('two apps on one Redis with the default prefix and different limits: each writes FG_PREFIX_SHARED, naming the prefix option', async () => {
  const dir = await typescriptAppDir();
  redis = await startRedis();
  // Each app prints its first warning and runs on (announcing) until its stdin ends: both printing is
  // the proof; then both are told to exit.
  const apps = ['100', '5'].map((limit) => spawn(process.execPath, ['shared-prefix.mjs', limit], { cwd: dir, env: { ...process.env, REDIS_URL: redis!.url }, stdio: ['pipe', 'pipe', 'pipe'] }));
  running.push(...apps);
  const seen = apps.map(() => '');
  const errors = apps.map(() => '');
  apps.forEach((child, i) => child.stderr!.on('data', (chunk) => (errors[i] += chunk)));
  const warned = Promise.all(
    apps.map(
      (child, i) =>
        new Promise<{ limit: number; warning: string }>((resolve, reject) => {
          child.stdout!.on('data', (chunk) => {
            seen[i] += chunk;
            if (seen[i].includes('\n')) resolve(JSON.parse(seen[i].slice(0, seen[i].indexOf('\n'))) as { limit: number; warning: string });
          });
          child.once('exit', (code) => reject(new Error(`shared-prefix.mjs exited (${code}) before a warning: ${seen[i]}`)));
        }),
    ),
  );
  // Both warn within a few seconds (announcements every 200 ms); past 60 s, fail with what Redis holds
  // (each app's announcement and configuration record), what each app printed and its /proc state.
  const why = (redisSays: string) =>
    new Error(`no FG_PREFIX_SHARED from both apps within 60 s; printed: ${JSON.stringify(seen)}; stderr: ${JSON.stringify(errors.map((e) => e.slice(0, 2_000)))}; ${redisSays}; apps: ${apps.map(procState).join(' / ')}`);
  let stall: NodeJS.Timeout | undefined;
  const stalled = new Promise<never>((_, reject) => {
    stall = setTimeout(() => {
      Promise.all([redis!.command(['ZRANGE', 'fg.instances', '0', '-1', 'WITHSCORES']), redis!.command(['HVALS', 'fg.configs'])]).then(
        ([instances, configs]) => reject(why(`fg.instances ${JSON.stringify(instances)}; fg.configs ${JSON.stringify(configs)}`)),
        (error: Error) => reject(why(`Redis: ${error.message}`)),
      );
    }, 60_000);
  });
  const outputs = await Promise.race([warned, stalled]).finally(() => clearTimeout(stall)).finally(() => Promise.all(apps.map((child) => new Promise((resolve) => (child.exitCode !== null ? resolve(null) : (child.once('exit', resolve), child.stdin!.end()))))));
  console.log(`packaging | two apps, one Redis, prefix 'fg': ${JSON.stringify(outputs)}`);
  for (const out of outputs) {
    expect(out.warning).toMatch(/^\[floodgate\] FG_PREFIX_SHARED: another app uses the prefix 'fg'/);
    expect(out.warning).toContain('`prefix` option');
  }
}, 120_000);
