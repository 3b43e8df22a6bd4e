// Redis CPU per admitted decision: Floodgate's RedisStore, per algorithm, against reference rows (PING,
// bare scripts). Starts its own redis-server; measures server-side cost only (INFO cpu and INFO
// commandstats deltas), so the figures hold on a busy machine, where wall-clock rates would not.
//
//   pnpm --filter @floodgate/bench redis-cost [--decisions 20000] [--reps 5] [--width 16] [--batch 8]
//                                              [--algorithms gcra,token-bucket] [--detail] [--json]
//
// Modes, each rep on a freshly flushed server, the median of --reps reps reported:
//   spread    `width` decisions per event-loop turn, each for a different subject (1000 in rotation):
//             RedisStore 'turn' with many subjects, which sends them in one script call since issue
//             #32 (calls/dec 1/width; before it, one call per subject, calls/dec 1).
//   batch     `batch` decisions per turn for ONE subject (64 in rotation): RedisStore 'turn' sends
//             them in one script call, as under load on a hot subject.
// Columns: cpu  = (used_cpu_user + used_cpu_sys) delta / admitted decisions, in µs: everything Redis
//                 spent (reading, parsing, running, replying, the event loop);
//          cmd  = INFO commandstats usec of EVALSHA/EVAL (the script's run, inner commands
//                 included) / admitted decisions;
//          call = usec_per_call of EVALSHA (µs per script call);
//          calls/dec, reads/dec = script calls and server read events (total_reads_processed) per decision;
//          x bare = cpu / the cpu of the bare TIME+GET+SET+PEXPIRE script row of the same run: a ratio
//                 that travels between machines (issue #15's goal, 15 µs where that script took 18-20 µs,
//                 is about 0.8).
import { parseArgs } from 'node:util';
import type { Redis } from 'ioredis';
import { ALGORITHMS, RedisStore, createLimiter, type AlgorithmName } from '@floodgate/core';
import { startRedis, type RedisServer } from '@floodgate/testing';

const { values: args } = parseArgs({
  options: {
    decisions: { type: 'string', default: '20000' },
    reps: { type: 'string', default: '5' },
    width: { type: 'string', default: '16' },
    batch: { type: 'string', default: '8' },
    algorithms: { type: 'string' },
    detail: { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
  },
});

const DECISIONS = Number(args.decisions);
const REPS = Number(args.reps);
const WIDTH = Number(args.width);
const BATCH = Number(args.batch);
const SPREAD_SUBJECTS = 1000;
const BATCH_SUBJECTS = 64;
const algorithms = (args.algorithms ? args.algorithms.split(',') : [...ALGORITHMS]) as AlgorithmName[];
for (const a of algorithms) if (!ALGORITHMS.includes(a)) throw new Error(`unknown algorithm ${a}`);

interface Sample {
  cpuUs: number;
  cmdUs: number;
  usecPerCall: number;
  callsPerDecision: number;
  readsPerDecision: number;
  inner: Record<string, { calls: number; usec: number }>;
  denied: number;
}

interface Row extends Omit<Sample, 'inner'> {
  name: string;
  mode: string;
  inner: Record<string, { calls: number; usec: number }>;
}

interface Stats {
  cpu: number;
  reads: number;
  commands: Record<string, { calls: number; usec: number }>;
}

function field(info: string, name: string): number {
  const m = new RegExp(`^${name}:([0-9.]+)`, 'm').exec(info);
  if (!m) throw new Error(`INFO has no ${name}`);
  return Number(m[1]);
}

async function stats(admin: Redis): Promise<Stats> {
  const info = (await admin.info('everything')) as string;
  const commands: Stats['commands'] = {};
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) commands[m[1]] = { calls: Number(m[2]), usec: Number(m[3]) };
  return { cpu: field(info, 'used_cpu_user') + field(info, 'used_cpu_sys'), reads: field(info, 'total_reads_processed'), commands };
}

const SCRIPT_COMMANDS = ['evalsha', 'eval'];
// Not decisions: the measuring connection's own commands.
const OWN = new Set(['info', 'config|resetstat', 'flushall', 'script|load', ...SCRIPT_COMMANDS, 'ping']);

/** One measured run: `drive` makes `DECISIONS` decisions and returns how many were admitted. */
async function measure(admin: Redis, drive: () => Promise<number>): Promise<Sample> {
  await admin.config('RESETSTAT');
  const before = await stats(admin);
  const admitted = await drive();
  const after = await stats(admin);
  const calls = SCRIPT_COMMANDS.reduce((n, c) => n + (after.commands[c]?.calls ?? 0), 0);
  const usec = SCRIPT_COMMANDS.reduce((n, c) => n + (after.commands[c]?.usec ?? 0), 0);
  const inner: Sample['inner'] = {};
  for (const [name, s] of Object.entries(after.commands)) {
    if (!OWN.has(name)) inner[name] = { calls: s.calls / admitted, usec: s.usec / admitted };
  }
  const ping = after.commands.ping;
  const units = admitted;
  return {
    cpuUs: ((after.cpu - before.cpu) * 1e6) / units,
    // The PING reference rows have no script: their command time is PING's.
    cmdUs: (calls > 0 ? usec : (ping?.usec ?? 0)) / units,
    usecPerCall: calls > 0 ? usec / calls : (ping ? ping.usec / ping.calls : 0),
    callsPerDecision: (calls > 0 ? calls : (ping?.calls ?? 0)) / units,
    readsPerDecision: (after.reads - before.reads) / units,
    inner,
    denied: DECISIONS - admitted,
  };
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

function summarise(name: string, mode: string, samples: Sample[]): Row {
  const inner: Row['inner'] = {};
  for (const key of new Set(samples.flatMap((s) => Object.keys(s.inner)))) {
    inner[key] = { calls: median(samples.map((s) => s.inner[key]?.calls ?? 0)), usec: median(samples.map((s) => s.inner[key]?.usec ?? 0)) };
  }
  return {
    name,
    mode,
    cpuUs: median(samples.map((s) => s.cpuUs)),
    cmdUs: median(samples.map((s) => s.cmdUs)),
    usecPerCall: median(samples.map((s) => s.usecPerCall)),
    callsPerDecision: median(samples.map((s) => s.callsPerDecision)),
    readsPerDecision: median(samples.map((s) => s.readsPerDecision)),
    denied: Math.max(...samples.map((s) => s.denied)),
    inner,
  };
}

/** Runs `reps` + 1 measurements (the first warms up and is dropped), each on a flushed server. */
async function repeat(admin: Redis, name: string, mode: string, drive: () => Promise<number>): Promise<Row> {
  const samples: Sample[] = [];
  for (let rep = 0; rep <= REPS; rep++) {
    await admin.flushall();
    const sample = await measure(admin, drive);
    if (rep > 0) samples.push(sample);
  }
  const row = summarise(name, mode, samples);
  if (!args.json) process.stderr.write(`  ${name} ${mode}: ${row.cpuUs.toFixed(1)} µs\n`);
  return row;
}

// Every decision is admitted: limits far above what a run draws from one subject in one window
// (sliding-window-log's limit is capped at 10,000 per subject).
const LIMIT = { limit: 10_000, windowMs: 60_000 };

async function storeRows(client: Redis, admin: Redis): Promise<Row[]> {
  const rows: Row[] = [];
  for (const algorithm of algorithms) {
    const store = new RedisStore({ client, timeoutMs: 5_000 });
    const limiter = createLimiter({ store, algorithm, ...LIMIT, prefix: 'cost', blockCacheSize: 0 });
    const admittedOf = (decisions: { allowed: boolean; reason: string }[]) => decisions.filter((d) => d.allowed && d.reason === 'allowed').length;
    let next = 0;
    rows.push(
      await repeat(admin, algorithm, `spread x${WIDTH}`, async () => {
        let admitted = 0;
        for (let done = 0; done < DECISIONS; done += WIDTH) {
          const turn = [];
          for (let i = 0; i < WIDTH; i++) turn.push(limiter.consume(`s${next++ % SPREAD_SUBJECTS}`));
          admitted += admittedOf(await Promise.all(turn));
        }
        return admitted;
      }),
    );
    rows.push(
      await repeat(admin, algorithm, `batch x${BATCH}`, async () => {
        let admitted = 0;
        for (let done = 0; done < DECISIONS; done += BATCH) {
          const subject = `b${next++ % BATCH_SUBJECTS}`;
          const turn = [];
          for (let i = 0; i < BATCH; i++) turn.push(limiter.consume(subject));
          admitted += admittedOf(await Promise.all(turn));
        }
        return admitted;
      }),
    );
  }
  return rows;
}

// Reference scripts: the least a decision's script can do. Each is one call per decision.
const BARE = 'TIME+GET+SET+PEXPIRE';
const REFERENCE_SCRIPTS: Record<string, string> = {
  // The script call itself, running nothing: what any script costs Redis before its first command.
  'return 1 (an empty script)': 'return 1',
  // One command: with the row above, what each redis.call costs beyond the command's own usec.
  'TIME alone': "local t = redis.call('TIME') return tonumber(t[1])",
  [BARE]: "local t = redis.call('TIME') local v = redis.call('GET', KEYS[1]) redis.call('SET', KEYS[1], ARGV[1]) redis.call('PEXPIRE', KEYS[1], 60000) return tonumber(t[1])",
  'TIME+GET+SET PX': "local t = redis.call('TIME') local v = redis.call('GET', KEYS[1]) redis.call('SET', KEYS[1], ARGV[1], 'PX', 60000) return tonumber(t[1])",
  'TIME+HMGET+HSET+PEXPIRE': "local t = redis.call('TIME') local v = redis.call('HMGET', KEYS[1], 'a', 'b') redis.call('HSET', KEYS[1], 'a', ARGV[1], 'b', ARGV[1]) redis.call('PEXPIRE', KEYS[1], 60000) return tonumber(t[1])",
};

async function referenceRows(client: Redis, admin: Redis): Promise<Row[]> {
  const rows: Row[] = [];
  let next = 0;
  const spread = (send: (i: number) => Promise<unknown>) => async () => {
    for (let done = 0; done < DECISIONS; done += WIDTH) {
      const turn = [];
      for (let i = 0; i < WIDTH; i++) turn.push(send(next++));
      await Promise.all(turn);
    }
    return DECISIONS;
  };
  rows.push(await repeat(admin, 'PING', `spread x${WIDTH}`, spread(() => client.ping())));
  rows.push(
    await repeat(admin, 'PING, one write per turn', `spread x${WIDTH}`, async () => {
      for (let done = 0; done < DECISIONS; done += WIDTH) {
        const pipeline = client.pipeline();
        for (let i = 0; i < WIDTH; i++) pipeline.ping();
        await pipeline.exec();
      }
      return DECISIONS;
    }),
  );
  for (const [name, source] of Object.entries(REFERENCE_SCRIPTS)) {
    const sha = (await client.script('LOAD', source)) as string;
    rows.push(
      // FLUSHALL keeps loaded scripts.
      await repeat(admin, name, `spread x${WIDTH}`, spread((i) => client.evalsha(sha, 1, `ref:{s${i % SPREAD_SUBJECTS}}`, String(i)))),
    );
    if (name !== BARE) continue;
    // The same calls, a turn's in one write: what RedisStore's 'turn' now sends for many subjects.
    rows.push(
      await repeat(admin, `${name}, one write per turn`, `spread x${WIDTH}`, async () => {
        for (let done = 0; done < DECISIONS; done += WIDTH) {
          const pipeline = client.pipeline();
          for (let i = 0; i < WIDTH; i++, next++) pipeline.evalsha(sha, 1, `ref:{s${next % SPREAD_SUBJECTS}}`, String(next));
          await pipeline.exec();
        }
        return DECISIONS;
      }),
    );
  }
  return rows;
}

function table(rows: Row[]): string {
  const bare = rows.find((r) => r.name === BARE)?.cpuUs;
  const head = ['row', 'mode', 'cpu µs/dec', 'x bare', 'cmd µs/dec', 'µs/call', 'calls/dec', 'reads/dec', 'denied'];
  const body = rows.map((r) => [
    r.name,
    r.mode,
    r.cpuUs.toFixed(1),
    bare ? (r.cpuUs / bare).toFixed(2) : '-',
    r.cmdUs.toFixed(1),
    r.usecPerCall.toFixed(1),
    r.callsPerDecision.toFixed(3),
    r.readsPerDecision.toFixed(3),
    String(r.denied),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => (i < 2 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join(' | ')} |`;
  const out = [line(head), `|${widths.map((w, i) => (i < 2 ? '-'.repeat(w + 2) : `${'-'.repeat(w + 1)}:`)).join('|')}|`, ...body.map(line)];
  if (args.detail) {
    out.push('', 'Commands run inside the scripts, per admitted decision (calls, usec):');
    for (const r of rows) {
      const inner = Object.entries(r.inner)
        .filter(([, s]) => s.calls > 0)
        .map(([name, s]) => `${name} ${s.calls.toFixed(2)}x ${s.usec.toFixed(2)}us`);
      if (inner.length) out.push(`  ${r.name} ${r.mode}: ${inner.join(', ')}`);
    }
  }
  return out.join('\n');
}

async function main(): Promise<void> {
  const redis: RedisServer = await startRedis();
  const client = redis.client({ autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 1 });
  const admin = redis.client();
  try {
    const version = /^redis_version:(\S+)/m.exec((await admin.info('server')) as string)?.[1] ?? 'unknown';
    if (!args.json) process.stderr.write(`redis-server ${version} on port ${redis.port}: ${DECISIONS} decisions x ${REPS} reps (+1 warm-up)\n`);
    const rows = [...(await referenceRows(client, admin)), ...(await storeRows(client, admin))];
    if (args.json) console.log(JSON.stringify({ redisVersion: version, decisions: DECISIONS, reps: REPS, width: WIDTH, batch: BATCH, rows }, null, 2));
    else console.log(`\nRedis ${version}, ${DECISIONS} decisions per rep, median of ${REPS} reps\n\n${table(rows)}`);
  } finally {
    client.disconnect();
    admin.disconnect();
    await redis.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
