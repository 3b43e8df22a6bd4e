// Runs tsc over types.test-d.ts: the public options and the Hono Variables typing type-check, and every @ts-expect-error line errs.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

it('type-checks the public options, with each @ts-expect-error line an error', () => {
  const tsc = require.resolve('typescript/bin/tsc');
  const run = spawnSync(process.execPath, [tsc, '-p', join(__dirname, 'tsconfig.types.json')], { encoding: 'utf8' });
  // tsc prints nothing and exits 0 only when every line checks and no @ts-expect-error went unused.
  expect(run.stdout + run.stderr).toBe('');
  expect(run.status).toBe(0);
}, 120_000);
