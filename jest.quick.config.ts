// Jest for `pnpm test:quick`: the suite without the files that start a redis-server, a Cluster, a Sentinel, a browser or child processes (a contributor's loop of about a minute; `pnpm test` runs everything).
import type { Config } from 'jest';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import full from './jest.config';

/** What in a test file (or a test helper it imports) means it needs more than this process. */
const HEAVY = /\b(startRedis\w*|startCluster|startSentinel|serverWithClient|serverAndCluster|forkRaceChildren|startChildren|startExample|chromium|puppeteer|playwright)\b|node:child_process|\bfork\(|\bspawn\(|\bexecFile\(|from '@floodgate\/adapter-suites'/;

/** Whether `file` or a relative module it imports outside src/ (test helpers, transitively) is heavy. */
function heavy(file: string, seen = new Set<string>()): boolean {
  if (seen.has(file)) return false;
  seen.add(file);
  const text = readFileSync(file, 'utf8');
  if (HEAVY.test(text)) return true;
  for (const [, spec] of text.matchAll(/from '(\.{1,2}\/[^']+)'/g)) {
    const base = resolve(dirname(file), spec);
    if (/\/packages\/(?!testing\/|adapter-suites\/)[^/]+\/src\//.test(base)) continue; // the product's own modules start nothing
    const found = [`${base}.ts`, join(base, 'index.ts')].find((f) => existsSync(f));
    if (found && heavy(found, seen)) return true;
  }
  return false;
}

// The examples and the bench are whole apps and runs: `pnpm test` checks them.
const projects = (full.projects as Config[]).filter((project) => /\/(packages|tests)\/[^/]+$/.test(project.rootDir!)).map((project) => {
  const root = project.rootDir!;
  return { ...project, testPathIgnorePatterns: [...(project.testPathIgnorePatterns ?? []), heavyFiles(root)] };
});

/** One pattern matching every heavy test file under `root` (or nothing). */
function heavyFiles(root: string): string {
  const files = testFilesUnder(root).filter((f) => heavy(f));
  return files.length === 0 ? '^$' : `^(${files.map((f) => f.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|')})$`;
}

function testFilesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' || e.name === 'dist' || e.name.startsWith('.') ? [] : testFilesUnder(path);
    return e.name.endsWith('.test.ts') ? [path] : [];
  });
}

const config: Config = { ...full, projects };
export default config;
