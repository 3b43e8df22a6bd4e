// @floodgate/core and @floodgate/hono on the edge runtimes, each started as a child process from its npm package: Bun, Deno, and workerd (through miniflare); the adapter suite's core cases on each, and a race on the memory store.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Miniflare } from 'miniflare';
import { LIMITS } from '../app/app';
import { bundle } from './bundle';

const BIN = join(__dirname, '..', 'node_modules', '.bin');

/** One runtime serving the app: send a request to a path, stop it. */
interface Runtime {
  fetch(path: string, headers?: Record<string, string>): Promise<Response>;
  stop(): Promise<void>;
}

/** Starts `command` and resolves once it printed its `{ "port": N }` line (an event, not a sleep). */
function startServer(command: string, args: string[], cwd: string): Promise<Runtime> {
  // A process group of its own: the npm package's `deno` launcher runs the real binary as its child,
  // which a SIGTERM to the launcher alone left running (two deno servers orphaned by every run).
  const child: ChildProcess = spawn(command, args, { cwd, detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1', DENO_NO_UPDATE_CHECK: '1' } });
  let output = '';
  return new Promise((resolve, reject) => {
    const failed = (why: string) => reject(new Error(`${command} ${args.join(' ')}: ${why}\n${output}`));
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', (error) => failed(String(error)));
    child.once('exit', (code) => failed(`exited with ${code}`));
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /\{"port":(\d+)\}/.exec(output);
      if (!match) return;
      child.removeAllListeners('exit');
      const origin = `http://127.0.0.1:${match[1]}`;
      resolve({
        fetch: (path, headers) => fetch(`${origin}${path}`, { headers }),
        stop: () =>
          new Promise<void>((done) => {
            child.stdout!.destroy();
            child.stderr!.destroy();
            if (child.exitCode !== null) return done();
            child.once('exit', () => done());
            // The whole group (launcher and runtime); the launcher alone if the group is gone.
            try {
              process.kill(-child.pid!, 'SIGTERM');
            } catch {
              child.kill('SIGTERM');
            }
          }),
      });
    });
  });
}

/** workerd through miniflare (which runs workerd as its child process), without `nodejs_compat`: core needs no node: module (docs/edge.md). */
async function startWorkerd(file: string): Promise<Runtime> {
  const mf = new Miniflare({ modules: true, script: readFileSync(file, 'utf8'), compatibilityDate: '2025-07-01' });
  await mf.ready;
  return {
    fetch: async (path, headers) => (await mf.dispatchFetch(`http://worker${path}`, { headers: { 'cf-connecting-ip': '203.0.113.9', ...headers } })) as unknown as Response,
    stop: () => mf.dispose(),
  };
}

const RUNTIMES: Record<string, () => Promise<Runtime>> = {
  bun: async () => {
    const file = await bundle('bun.ts');
    return startServer(join(BIN, 'bun'), [file], dirname(file));
  },
  deno: async () => {
    const file = await bundle('deno.ts');
    return startServer(join(BIN, 'deno'), ['run', '--allow-net=127.0.0.1', '--no-prompt', file], dirname(file));
  },
  workerd: async () => startWorkerd(await bundle('worker.ts')),
};

/** The same cases through core's fetch-style entry, with no framework. */
const FETCH_ENTRY: Record<string, () => Promise<Runtime>> = {
  bun: async () => {
    const file = await bundle('fetch-bun.ts');
    return startServer(join(BIN, 'bun'), [file], dirname(file));
  },
  deno: async () => {
    const file = await bundle('fetch-deno.ts');
    return startServer(join(BIN, 'deno'), ['run', '--allow-net=127.0.0.1', '--no-prompt', file], dirname(file));
  },
  workerd: async () => startWorkerd(await bundle('fetch-worker.ts')),
};

describe.each(Object.keys(FETCH_ENTRY))('rateLimitFetch (no framework) on %s', (name) => {
  let runtime: Runtime;
  beforeAll(async () => {
    runtime = await FETCH_ENTRY[name]();
  }, 60_000);
  afterAll(async () => {
    await runtime?.stop();
  });

  it('passes admitted requests through with RateLimit headers, then answers 429 with Retry-After', async () => {
    const seen: (string | number | null)[][] = [];
    for (let i = 0; i <= 3; i++) {
      const res = await runtime.fetch('/anything');
      seen.push([res.status, res.headers.get('ratelimit-remaining'), await res.text()]);
      if (res.status === 429) expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    }
    expect(seen.map((s) => s.slice(0, 2))).toEqual([
      [200, '2'],
      [200, '1'],
      [200, '0'],
      [429, '0'],
    ]);
    expect(seen[0][2]).toBe('ok');
  });
});

describe.each(Object.keys(RUNTIMES))('on %s', (name) => {
  let runtime: Runtime;
  beforeAll(async () => {
    runtime = await RUNTIMES[name]();
  }, 60_000);
  afterAll(async () => {
    await runtime?.stop();
  });

  it('admits up to the limit, then answers 429 with RateLimit headers and Retry-After', async () => {
    const seen: (string | number | null)[][] = [];
    for (let i = 0; i <= LIMITS.limited; i++) {
      const res = await runtime.fetch('/limited');
      seen.push([res.status, res.headers.get('ratelimit-limit'), res.headers.get('ratelimit-remaining'), await res.text()]);
      if (res.status === 429) {
        expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
        expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      }
    }
    expect(seen.map((s) => s.slice(0, 3))).toEqual([
      [200, '3', '2'],
      [200, '3', '1'],
      [200, '3', '0'],
      [429, '3', '0'],
    ]);
    expect(seen[0][3]).toBe('ok');
  });

  it('keeps one budget per identity', async () => {
    const statuses = async (user: string) => {
      const out: number[] = [];
      for (let i = 0; i <= LIMITS.byUser; i++) out.push((await runtime.fetch('/by-user', { 'x-user': user })).status);
      return out;
    };
    expect(await statuses('alice')).toEqual([200, 200, 429]);
    expect(await statuses('bob')).toEqual([200, 200, 429]);
  });

  it('race on the memory store: 8 clients x 400 requests at once for one subject admit exactly 100', async () => {
    const counts = { admitted: 0, limited: 0, other: 0 };
    const client = async () => {
      for (let i = 0; i < 400; i++) {
        const res = await runtime.fetch('/race');
        await res.arrayBuffer();
        if (res.status === 200) counts.admitted++;
        else if (res.status === 429) counts.limited++;
        else counts.other++;
      }
    };
    await Promise.all(Array.from({ length: 8 }, client));
    expect(counts).toEqual({ admitted: LIMITS.race, limited: 8 * 400 - LIMITS.race, other: 0 });
  }, 120_000);
});

describe('on workerd, per client IP (CF-Connecting-IP through getConnInfo)', () => {
  it('gives another IP its own budget', async () => {
    const runtime = await RUNTIMES.workerd();
    try {
      const statuses = async (ip: string) => {
        const out: number[] = [];
        for (let i = 0; i <= LIMITS.limited; i++) out.push((await runtime.fetch('/limited', { 'cf-connecting-ip': ip })).status);
        return out;
      };
      expect(await statuses('198.51.100.1')).toEqual([200, 200, 200, 429]);
      expect(await statuses('198.51.100.2')).toEqual([200, 200, 200, 429]);
    } finally {
      await runtime.stop();
    }
  }, 60_000);
});
