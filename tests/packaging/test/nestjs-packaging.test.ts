// Packs @floodgate/core and @floodgate/nestjs as a user gets them, installs the tarballs with Nest 11 into a fresh CommonJS app, and runs it on Express and Fastify.
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const exec = promisify(execFile);
const ROOT = join(__dirname, '..', '..', '..');
// Building (tsup's declaration pass) and a cold `npm install` dominate; on 2 busy cores allow minutes.
jest.setTimeout(600_000);

async function run(command: string, args: string[], cwd: string): Promise<string> {
  try {
    const { stdout } = await exec(command, args, { cwd, maxBuffer: 64 * 1024 * 1024, env: { ...process.env, CI: 'true' } });
    return stdout;
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(`${command} ${args.join(' ')} failed in ${cwd}:\n${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`);
  }
}

/** The version the workspace tests against, so the consumer installs the same. */
const devVersion = (name: string) => (JSON.parse(readFileSync(join(ROOT, 'packages', 'nestjs', 'package.json'), 'utf8')) as { devDependencies: Record<string, string> }).devDependencies[name];

let tmp: string;
afterAll(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

it('the packed @floodgate/nestjs installs into a fresh CommonJS app and answers 200, 200, 429 with headers and problem+json on Express and Fastify', async () => {
  tmp = mkdtempSync(join(tmpdir(), 'floodgate-nestjs-packaging-'));
  const tarballs: Record<string, string> = {};
  for (const pkg of ['core', 'nestjs']) {
    await run('pnpm', ['run', 'build'], join(ROOT, 'packages', pkg));
    const out = await run('pnpm', ['pack', '--pack-destination', tmp], join(ROOT, 'packages', pkg));
    const tarball = out.split('\n').map((l) => l.trim()).find((l) => l.endsWith('.tgz'));
    if (!tarball) throw new Error(`pnpm pack printed no tarball for ${pkg}:\n${out}`);
    tarballs[pkg] = tarball;
  }
  const manifest = JSON.parse(await run('tar', ['-xzOf', tarballs.nestjs, 'package/package.json'], tmp)) as { dependencies: Record<string, string>; peerDependencies: Record<string, string> };
  // workspace:* became the real version; Nest itself is the app's (peers).
  expect(manifest.dependencies['@floodgate/core']).toMatch(/^\d+\.\d+\.\d+/);
  expect(Object.keys(manifest.peerDependencies)).toEqual(expect.arrayContaining(['@nestjs/common', '@nestjs/core', 'reflect-metadata', 'rxjs']));

  const consumer = join(tmp, 'consumer');
  cpSync(join(__dirname, '..', 'nestjs-consumer'), consumer, { recursive: true });
  const dependencies: Record<string, string> = { '@floodgate/core': `file:${tarballs.core}`, '@floodgate/nestjs': `file:${tarballs.nestjs}` };
  for (const name of ['@nestjs/common', '@nestjs/core', '@nestjs/platform-express', '@nestjs/platform-fastify', 'reflect-metadata', 'rxjs']) dependencies[name] = devVersion(name);
  writeFileSync(join(consumer, 'package.json'), `${JSON.stringify({ name: 'floodgate-nestjs-consumer', private: true, dependencies }, null, 2)}\n`);
  await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], consumer);

  const report = JSON.parse(await run(process.execPath, ['app.cjs'], consumer)) as Record<'express' | 'fastify', { status: number; limit: string; remaining: string; retryAfter: string | null; type: string; body: string }[]> & { resolved: string };
  console.log(`packaging | @floodgate/nestjs tarball, CommonJS: ${JSON.stringify(report)}`);
  expect(report.resolved).toBe(join(consumer, 'node_modules', '@floodgate', 'nestjs', 'dist', 'index.js'));
  for (const platform of ['express', 'fastify'] as const) {
    const seen = report[platform];
    expect(seen.map((s) => s.status)).toEqual([200, 200, 429]);
    expect(seen.map((s) => s.remaining)).toEqual(['1', '0', '0']);
    expect(seen.every((s) => s.limit === '2')).toBe(true);
    expect(Number(seen[2].retryAfter)).toBeGreaterThanOrEqual(1);
    expect(seen[2].type).toMatch(/^application\/problem\+json/);
    expect(JSON.parse(seen[2].body)).toMatchObject({ status: 429, title: 'Quota Exceeded' });
  }
});
