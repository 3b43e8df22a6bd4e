// Jest: one project per package, TypeScript through SWC, workspace packages resolved to their sources.
import type { Config } from 'jest';
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';

const moduleNameMapper: Config['moduleNameMapper'] = {
  // Absolute, so it holds for projects at any depth (packages/x, examples/x, bench).
  // Every package by its folder name, so a new package needs no line here.
  '^@floodgate/([a-z-]+)$': join(__dirname, 'packages/$1/src/index.ts'),
  '^@floodgate/core/(internal|http)$': join(__dirname, 'packages/core/src/$1.ts'),
  '^@floodgate/client/undici$': join(__dirname, 'packages/client/src/undici.ts'),
};

const transform: Config['transform'] = {
  '^.+\\.(t|j)sx?$': [
    '@swc/jest',
    { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'commonjs' } },
  ],
};
/**
 * For a project whose tsconfig.json turns on experimentalDecorators (Nest's packages): TypeScript's
 * legacy decorators, with the design-type metadata Nest's dependency injection reads when
 * emitDecoratorMetadata is on too. Every other project keeps the plain transform.
 */
const decoratorTransform = (metadata: boolean): Config['transform'] => ({
  '^.+\\.(t|j)sx?$': [
    '@swc/jest',
    {
      jsc: { parser: { syntax: 'typescript', decorators: true }, transform: { legacyDecorator: true, decoratorMetadata: metadata }, target: 'es2022' },
      module: { type: 'commonjs' },
    },
  ],
});

/** The transform for one project: by its own tsconfig.json's decorator settings, if it has one. */
function transformFor(dir: string): Config['transform'] {
  const path = join(__dirname, dir, 'tsconfig.json');
  if (!existsSync(path)) return transform;
  // tsconfig.json allows comments; these two flags are all that is read.
  const text = readFileSync(path, 'utf8');
  if (!/"experimentalDecorators"\s*:\s*true/.test(text)) return transform;
  return decoratorTransform(/"emitDecoratorMetadata"\s*:\s*true/.test(text));
}

function project(dir: string): Config {
  return {
    displayName: dir,
    rootDir: join(__dirname, dir),
    testMatch: ['<rootDir>/**/*.test.ts'],
    testPathIgnorePatterns: ['/node_modules/', '/dist/'],
    moduleNameMapper,
    transform: transformFor(dir),
    testEnvironment: 'node',
  };
}

const dirs = ['packages', 'examples', 'tests']
  .flatMap((top) =>
    existsSync(join(__dirname, top))
      ? readdirSync(join(__dirname, top)).map((name) => `${top}/${name}`)
      : [],
  )
  .filter((dir) => existsSync(join(__dirname, dir, 'package.json')));
if (existsSync(join(__dirname, 'bench', 'package.json'))) dirs.push('bench');

/** Every *.test.ts in the repository (outside node_modules, dist and dot folders), as repo-relative paths. */
function testFiles(dir = ''): string[] {
  return readdirSync(join(__dirname, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = dir ? `${dir}/${entry.name}` : entry.name;
    if (entry.isDirectory()) return entry.name === 'node_modules' || entry.name === 'dist' || entry.name.startsWith('.') ? [] : testFiles(path);
    return entry.name.endsWith('.test.ts') ? [path] : [];
  });
}
// A test file that no project picks up would be skipped in silence (a folder without a
// package.json, a file outside the project folders): fail instead, naming it.
const orphans = testFiles().filter((file) => !dirs.some((dir) => file.startsWith(`${dir}/`)));
if (orphans.length > 0) {
  throw new Error(`jest.config.ts: no project runs ${orphans.join(', ')} (a test folder needs a package.json under packages/, examples/ or tests/, or bench/)`);
}

const config: Config = {
  projects: dirs.map(project),
  testTimeout: 30_000,
  // Most of the suite waits (on redis-server, child processes, timers), not computes: two workers
  // on the 2-core machine took the full run from 1,334 s (Jest's default there: one, in band) to
  // 695 s, measured with `pnpm exec jest --json --outputFile=...` beside the same shared load; three
  // took a clean clone's run from 474 s to 336 s (the sum of the files' own times at two workers
  // was exactly twice the wall clock: both workers busy, mostly waiting).
  maxWorkers: 3,
  // A summary, the slowest files, and each failing file in full with its console output
  // (scripts/quiet-reporter.cjs); `--reporters=default` brings Jest's own output back.
  reporters: [[join(__dirname, 'scripts', 'quiet-reporter.cjs'), { slowest: 10 }]],
  // Jest turns verbose on for a run of one file, which prints console output as it comes, bypassing the reporter.
  verbose: false,
};

export default config;
