// `pnpm soak [--duration 5m] [--seed N] [--no-overload]`: runs the chaos soak (soak.ts) and prints its figures; exits 1 on any violation.
import { parseDuration } from '@floodgate/core';
import { formatReport, runSoak } from './soak';

function flag(name: string): string | undefined {
  const args = process.argv.slice(2);
  const i = args.indexOf(`--${name}`);
  if (i >= 0) return args[i + 1];
  return args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
}

async function main(): Promise<void> {
  const durationMs = parseDuration('--duration', flag('duration') ?? '3m', 5_000, 24 * 3_600_000);
  const seedFlag = flag('seed');
  const seed = seedFlag === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(seedFlag);
  if (!Number.isInteger(seed)) throw new Error(`--seed: a whole number, got ${seedFlag}`);
  console.log(`soak: ${(durationMs / 1000).toFixed(0)} s, seed ${seed} (replay with --seed ${seed})`);
  // --no-overload: the soak as it was before issue 24 (no floods, no default or hot routes, no recovery check).
  const overload = !process.argv.includes('--no-overload');
  const report = await runSoak({ durationMs, seed, overload, log: (line) => console.log(line) });
  console.log(formatReport(report));
  process.exitCode = report.violationCount === 0 ? 0 : 1;
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
