// What the report says about the run: machine, versions of everything measured, load average.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import * as os from 'node:os';
import { join } from 'node:path';
import { FRAMEWORKS, frameworkInfo } from './frameworks';

export const BENCH_DIR = join(__dirname, '..');
export const REPO_DIR = join(BENCH_DIR, '..');

/** Packages whose versions the report prints, read from the installed package.json files. */
const MEASURED = [
  ...new Set(FRAMEWORKS.flatMap((f) => [...frameworkInfo(f).packages, ...frameworkInfo(f).peerPackages])),
  'ioredis',
  'autocannon',
];

function packageVersion(dir: string): string | undefined {
  const file = join(dir, 'package.json');
  if (!existsSync(file)) return undefined;
  return (JSON.parse(readFileSync(file, 'utf8')) as { version?: string }).version;
}

export function versions(): Record<string, string> {
  const out: Record<string, string> = {};
  out['@floodgate/core'] = packageVersion(join(REPO_DIR, 'packages', 'core')) ?? '?';
  for (const adapter of new Set(FRAMEWORKS.map((f) => frameworkInfo(f).adapter))) {
    const v = packageVersion(join(REPO_DIR, 'packages', adapter.replace('@floodgate/', '')));
    if (v) out[adapter] = v;
  }
  for (const name of MEASURED) out[name] = packageVersion(join(BENCH_DIR, 'node_modules', name)) ?? '?';
  return out;
}

export function redisVersion(): string {
  try {
    const text = execFileSync('redis-server', ['--version'], { encoding: 'utf8' });
    return /v=(\S+)/.exec(text)?.[1] ?? text.trim();
  } catch {
    return '?';
  }
}

export function machine() {
  const cpus = os.cpus();
  return {
    node: process.version,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    cpu: cpus[0]?.model.trim() ?? '?',
    cores: cpus.length,
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
  };
}

export const loadAverage = (): number[] => os.loadavg().map((v) => Math.round(v * 100) / 100);
