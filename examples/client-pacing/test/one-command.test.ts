// The example's one command on a fresh machine: it runs both loops, prints what each did, and exits 0.
import { join } from 'node:path';
import { freshMachineEnv, runCommand } from '@floodgate/testing';

const root = join(__dirname, '..', '..', '..');
jest.setTimeout(90_000);

it('`pnpm --filter @floodgate/example-client-pacing start` shows the paced loop with no 429 and the plain one with several', async () => {
  const run = runCommand('pnpm', ['--filter', '@floodgate/example-client-pacing', 'start', '--requests', '9', '--limit', '3', '--window-ms', '1000'], {
    cwd: root,
    env: freshMachineEnv(),
  });
  try {
    const { code } = await run.exited();
    const out = run.output();
    expect(code).toBe(0);
    expect(out).toMatch(/pacedFetch: 9\/9 done, 0 x 429/);
    const plain = out.match(/plain fetch: (\d+)\/9 done, (\d+) x 429/);
    expect(plain).not.toBeNull();
    expect(Number(plain![2])).toBeGreaterThan(0);
    expect(out).toMatch(/pacedFetch waits \d+ ms \(quota, policy default\)/);
  } finally {
    await run.terminate('SIGKILL', 2_000);
  }
});
