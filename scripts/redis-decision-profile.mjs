// Node-side cost of one Floodgate decision on Redis without HTTP: a limiter on a RedisStore (ioredis) asked one request at a time, counted under callgrind or profiled with --cpu-prof.
//
// Usage:
//   node scripts/redis-decision-profile.mjs [--mode callgrind|cpu-prof|plain] [--requests N] [--warmup N]
//        [--regime admit|reject] [--subjects N] [--variant limiter|store|raw] [--out DIR] [--jit-names]
//        [--core DIR]
//
// It builds packages/core/src into one CommonJS file (esbuild, no keepNames, as bench/src/build.ts
// does), starts a redis-server of its own on a free loopback port (hz 1, no persistence), and runs
// a child that creates `createLimiter({ store: new RedisStore({ client }) })` with
// sliding-window-counter and awaits `consume` N times in a row, one decision per event-loop turn
// (what one connection sends). `--variant store` asks the RedisStore itself (`store.evaluate`, no
// limiter, guard nor failure runtime); `--variant raw` sends the same EVALSHA (its arguments
// recorded from the store's first call) with ioredis's `evalsha` (or `evalshaBuffer`, as the store sends it), nothing of Floodgate's around
// it: what the client and Node cost a call. `--mode callgrind`: the child runs under valgrind's callgrind with
// instrumentation off until the warm-up is done, then zeroes, decides N times and dumps; the
// report is the child's instructions per decision, less V8's compilers (as bench:instructions
// counts), and the dump stays in --out for callgrind_annotate. With `--jit-names` the child runs
// with --perf-basic-prof and the report lists the dump's functions by self instructions a
// decision, V8's JIT code named from the perf map (callgrind alone names it by address only).
// `--core DIR` builds another checkout's packages/core/src (e.g. `git archive` of an earlier commit)
// for a before/after of one change. `--mode cpu-prof`: the same loop
// under `node --cpu-prof --cpu-prof-interval 50`, the profile written to --out. This is a
// profiling aid for the Redis store's JavaScript path; the figures the goals are checked
// against come from `pnpm bench:instructions`.
import { execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const fromBench = createRequire(join(REPO, 'bench', 'package.json'));

function option(name, fallback) {
  const at = process.argv.indexOf(`--${name}`);
  return at === -1 ? fallback : process.argv[at + 1];
}

const mode = option('mode', 'callgrind');
const requests = Number(option('requests', '3000'));
const warmup = Number(option('warmup', '15000'));
const regime = option('regime', 'admit');
const subjects = Number(option('subjects', '1'));
const variant = option('variant', 'limiter');
if (!['limiter', 'store', 'raw'].includes(variant)) throw new Error(`--variant: limiter, store or raw, not ${variant}`);
const jitNames = process.argv.includes('--jit-names');
const out = resolve(option('out', mkdtempSync(join(tmpdir(), 'fg-redis-profile-'))));
if (!['callgrind', 'cpu-prof', 'plain'].includes(mode)) throw new Error(`--mode: callgrind, cpu-prof or plain, not ${mode}`);
if (!['admit', 'reject'].includes(regime)) throw new Error(`--regime: admit or reject, not ${regime}`);
mkdirSync(out, { recursive: true });

function freePort() {
  return new Promise((ok, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => ok(port));
    });
  });
}

async function buildCore(dir) {
  const { build } = fromBench('esbuild');
  const file = join(dir, 'floodgate-core.js');
  await build({
    entryPoints: [join(resolve(option('core', join(REPO, 'packages', 'core', 'src'))), 'index.ts')],
    outfile: file,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    keepNames: false,
    logLevel: 'warning',
    // What the bench keeps external: ioredis as installed.
    external: ['ioredis'],
  });
  return file;
}

/** The child: one limiter, `warmup` decisions, then (counters zeroed) `requests` decisions, one at a time. */
const CHILD = String.raw`
const [core, ioredis, port, warmup, requests, regime, subjects, counted, variant] = process.argv.slice(2);
const { createLimiter, RedisStore } = require(core);
const { Redis } = require(ioredis);
const client = new Redis({ host: '127.0.0.1', port: Number(port), maxRetriesPerRequest: 1, autoResendUnfulfilledCommands: false });
client.on('error', (e) => console.error('redis:', e.message));
const store = new RedisStore({ client, timeoutMs: 1000 });
const limiter = createLimiter({
  store,
  algorithm: 'sliding-window-counter',
  limit: regime === 'admit' ? 1e9 : 1,
  windowMs: 3_600_000,
  prefix: 'fgprof',
});
const names = Array.from({ length: Number(subjects) }, (_, i) => 'subject-' + i);
let sent = 0;
// 'store' and 'raw': the request (and, raw, the EVALSHA's arguments) of the limiter's first call.
let request;
let evalArgs;
// The method the store sent it with (evalshaBuffer where ioredis has it), so 'raw' sends it the same way.
let evalMethod = 'evalsha';
const limit = { algorithm: 'sliding-window-counter', capacity: regime === 'admit' ? 1e9 : 1, windowMs: 3_600_000 };
async function decide(n) {
  let allowed = 0;
  for (let i = 0; i < n; i++) {
    if (variant === 'limiter') {
      if ((await limiter.consume(names[sent++ % names.length])).allowed) allowed++;
    } else if (variant === 'store') {
      if ((await store.evaluate(request)).allowed) allowed++;
    } else {
      const reply = await client[evalMethod](...evalArgs);
      if (reply[1] === 1) allowed++;
    }
  }
  return allowed;
}
async function firstCall() {
  if (variant === 'limiter') return;
  const evaluate = store.evaluate.bind(store);
  store.evaluate = (r) => ((request = r), evaluate(r));
  // The limiter asks through the store's sink where it has one (Store.evaluateTo).
  const evaluateTo = store.evaluateTo.bind(store);
  store.evaluateTo = (r, sink) => ((request = r), evaluateTo(r, sink));
  const evalsha = client.evalsha.bind(client);
  client.evalsha = (...args) => ((evalArgs ??= args), evalsha(...args));
  const evalshaBuffer = client.evalshaBuffer.bind(client);
  client.evalshaBuffer = (...args) => (evalArgs ??= ((evalMethod = 'evalshaBuffer'), args), evalshaBuffer(...args));
  const sendCommand = client.sendCommand.bind(client);
  client.sendCommand = (command, ...rest) => ((evalArgs ??= command.name === 'evalsha' ? [...command.args] : undefined), sendCommand(command, ...rest));
  await limiter.consume(names[0]);
  delete store.evaluate;
  delete store.evaluateTo;
  delete client.evalsha;
  delete client.evalshaBuffer;
  delete client.sendCommand;
  if (!request || !evalArgs) throw new Error('the first call was not seen');
}
// Told by the parent (SIGUSR2) when to go on: it turns instrumentation on, zeroes and dumps the
// counters from outside, so no child process of this one runs (and compiles) in the counted window.
// Signals and fs.writeSync, not stdin and process.stdout: a second kind of stream through Node's
// stream code would deoptimise it (wrong map) as the window starts, and the window would count that.
const { writeSync } = require('node:fs');
let signals = 0;
let wake;
process.on('SIGUSR2', () => { signals++; if (wake) { const w = wake; wake = undefined; w(); } });
let seen = 0;
const told = () => new Promise((ok) => { if (signals > seen) ok(); else wake = ok; }).then(() => { seen++; });
const say = (line) => writeSync(1, line + '\n');
(async () => {
  await client.ping();
  await firstCall();
  await decide(Number(warmup));
  if (counted === '1') {
    say('warm');
    await told();
    await decide(1000);
    say('settled');
    await told();
  }
  const allowed = await decide(Number(requests));
  say(JSON.stringify({ allowed, requests: Number(requests) }));
  if (counted === '1') await told();
  client.disconnect();
  setTimeout(() => process.exit(0), 50).unref();
})().catch((e) => { console.error(e); process.exit(1); });
`;

/**
 * Runs the child; under callgrind, turns instrumentation on when it is warm, zeroes the counters
 * when it has settled, dumps them when it is done (callgrind_control from here, not from the child).
 */
async function runChild(argv, counted) {
  const child = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'inherit'] });
  const control = (...args) => run('callgrind_control', [...args, String(child.pid)], { timeout: 120_000 });
  let buffered = '';
  let result;
  const exited = new Promise((ok, fail) => child.once('exit', (code) => (code === 0 ? ok() : fail(new Error(`child exited with ${code}`)))));
  const steps = (async () => {
    for await (const chunk of child.stdout) {
      buffered += chunk;
      let at;
      while ((at = buffered.indexOf('\n')) !== -1) {
        const line = buffered.slice(0, at);
        buffered = buffered.slice(at + 1);
        if (line === 'warm') await control('-i', 'on');
        else if (line === 'settled') await control('-z');
        else if (line.startsWith('{')) {
          result = JSON.parse(line);
          if (counted) await control('-d');
        } else continue;
        child.kill('SIGUSR2');
      }
    }
  })();
  await Promise.all([steps, exited]);
  return result;
}

/** perf-<pid>.map (node --perf-basic-prof): JIT code ranges and their names, sorted by start. */
function readPerfMap(pid) {
  const ranges = [];
  for (const line of readFileSync(`/tmp/perf-${pid}.map`, 'utf8').split('\n')) {
    const m = /^([0-9a-f]+) ([0-9a-f]+) (.*)$/.exec(line);
    if (m) ranges.push({ start: parseInt(m[1], 16), end: parseInt(m[1], 16) + parseInt(m[2], 16), name: m[3] });
  }
  return ranges.sort((a, b) => a.start - b.start);
}

function nameAt(ranges, address) {
  let lo = 0;
  let hi = ranges.length - 1;
  let found;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (ranges[mid].start <= address) {
      found = ranges[mid];
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found && address < found.end ? found.name : undefined;
}

/** The dump's functions by self instructions a decision (JIT code named from the perf map; the newest range wins). */
async function printByFunction(dump, n) {
  const pid = Number(/\.(\d+)\.\d+$/.exec(dump)[1]);
  const ranges = readPerfMap(pid);
  const { stdout } = await run('callgrind_annotate', ['--threshold=100', dump], { maxBuffer: 256 * 1024 * 1024 });
  const self = new Map();
  for (const line of stdout.split('\n')) {
    const m = /^\s*([\d,]+) \([ \d.]+%\)\s+(.*)$/.exec(line);
    if (!m || m[2].startsWith('PROGRAM TOTALS')) continue;
    const ir = Number(m[1].replace(/,/g, ''));
    const jit = /^\?\?\?:0x([0-9a-f]+) \[\?\?\?\]/.exec(m[2]);
    const name = jit ? (nameAt(ranges, parseInt(jit[1], 16)) ?? `jit 0x${jit[1]}`) : m[2].replace(/\[\/usr\/bin\/node\]$/, '').replace(/^\?\?\?:/, '');
    self.set(name, (self.get(name) ?? 0) + ir);
  }
  const rows = [...self].sort((a, b) => b[1] - a[1]);
  for (const [name, ir] of rows.slice(0, Number(option('top', '80')))) console.log(String(Math.round(ir / n)).padStart(7), name.slice(0, 160));
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'fg-redis-profile-build-'));
  const core = await buildCore(dir);
  const childFile = join(dir, 'child.cjs');
  writeFileSync(childFile, CHILD);
  const port = await freePort();
  const redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--hz', '1'], { stdio: 'ignore' });
  try {
    for (let i = 0; i < 100; i++) {
      try {
        await run('redis-cli', ['-p', String(port), 'PING']);
        break;
      } catch {
        await new Promise((ok) => setTimeout(ok, 50));
      }
    }
    const nodeFlags = ['--single-threaded', '--predictable-gc-schedule', '--no-memory-reducer', ...(jitNames ? ['--perf-basic-prof'] : [])];
    const childArgs = [childFile, core, fromBench.resolve('ioredis'), String(port), String(warmup), String(requests), regime, String(subjects), mode === 'callgrind' ? '1' : '0', variant];
    let argv;
    if (mode === 'callgrind') {
      argv = ['valgrind', '--tool=callgrind', `--callgrind-out-file=${join(out, 'node.%p')}`, '--dump-instr=no', '--compress-strings=no', '--instr-atstart=no', process.execPath, ...nodeFlags, ...childArgs];
    } else if (mode === 'cpu-prof') {
      argv = [process.execPath, ...nodeFlags, '--cpu-prof', '--cpu-prof-interval', '50', `--cpu-prof-dir=${out}`, ...childArgs];
    } else argv = [process.execPath, ...nodeFlags, ...childArgs];
    const before = new Set(readdirSync(out));
    const result = await runChild(argv, mode === 'callgrind');
    const fresh = readdirSync(out).filter((f) => !before.has(f));
    if (mode === 'callgrind') {
      const dump = fresh.map((f) => join(out, f)).find((f) => /^summary:/m.test(readFileSync(f, 'utf8')) && /\.\d+\.\d+$/.test(f));
      const ir = Number(/^summary:\s*(\d+)/m.exec(readFileSync(dump, 'utf8'))[1]);
      const { stdout: annotated } = await run('callgrind_annotate', ['--inclusive=yes', '--threshold=100', dump], { maxBuffer: 256 * 1024 * 1024 });
      const sum = (re) => annotated.split('\n').reduce((t, line) => t + Number((re.exec(line) ?? [0, '0'])[1].replace(/,/g, '')), 0);
      const compile = sum(/^\s*([\d,]+)\s.*v8::internal::Runtime_Compile\w*\(/);
      const gc = sum(/^\s*([\d,]+)\s.*v8::internal::Heap::CollectGarbage\(/);
      const n = result.requests;
      console.log(JSON.stringify({ variant, regime, subjects, requests: n, allowed: result.allowed, irPerDecision: Math.round((ir - compile) / n), compilePerDecision: Math.round(compile / n), gcPerDecision: Math.round(gc / n), dump }));
      if (jitNames) await printByFunction(dump, n);
    } else {
      console.log(JSON.stringify({ variant, regime, subjects, ...result, written: fresh.map((f) => join(out, f)) }));
    }
  } finally {
    redis.kill('SIGKILL');
  }
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
