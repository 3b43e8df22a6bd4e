// Jest: one project per package, TypeScript through SWC, workspace packages resolved to their sources.
import type { Config } from 'jest';
import { readdirSync, existsSync } from 'node:fs';
import { join } from 'node:path';

const moduleNameMapper: Config['moduleNameMapper'] = {
  // Absolute, so it holds for projects at any depth (packages/x, examples/x, bench).
  '^@floodgate/(core|express|fastify|koa|testing)$': join(__dirname, 'packages/$1/src/index.ts'),
  '^@floodgate/core/internal$': join(__dirname, 'packages/core/src/internal.ts'),
};

const transform: Config['transform'] = {
  '^.+\\.(t|j)sx?$': [
    '@swc/jest',
    { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'commonjs' } },
  ],
};

function project(dir: string): Config {
  return {
    displayName: dir,
    rootDir: join(__dirname, dir),
    testMatch: ['<rootDir>/**/*.test.ts'],
    testPathIgnorePatterns: ['/node_modules/', '/dist/'],
    moduleNameMapper,
    transform,
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

const config: Config = {
  projects: dirs.map(project),
  testTimeout: 30_000,
};

export default config;
