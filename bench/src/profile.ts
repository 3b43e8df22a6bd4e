// CPU profiles of a server under load (node --cpu-prof): where its time goes, by function and by package.
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { childLogDir, startServer } from './children';
import { runLoad } from './load';
import type { ProfileFrame, ProfileRow, ServerSpec } from './types';

interface CpuProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}

export interface CpuProfile {
  nodes: CpuProfileNode[];
  samples?: number[];
  startTime?: number;
  timeDeltas?: number[];
}

/** Which package or area a script URL belongs to. */
export function areaOf(url: string, functionName: string): string {
  if (!url) return functionName.startsWith('(') ? functionName : '(native)';
  if (url.startsWith('node:')) return 'node internals';
  // pnpm paths nest: node_modules/.pnpm/ioredis@5.9.3/node_modules/ioredis/...: the last one names the package.
  const pkg = [...url.matchAll(/node_modules\/((?:@[^/]+\/)?[^/]+)/g)].pop();
  if (pkg) return pkg[1];
  const own = /packages\/([^/]+)\/src/.exec(url) ?? /bench\/dist\/floodgate-([a-z]+)\.js/.exec(url);
  if (own) return `@floodgate/${own[1]}`;
  if (url.includes('/bench/src/') || url.includes('/bench/dist/')) return 'bench harness';
  return 'other';
}

/**
 * Self time per function and per area, as shares of all samples (idle included, so a waiting server
 * shows). With `fromUs`, samples taken before that time (startup, warm-up) are left out.
 */
export function summarize(
  profile: CpuProfile,
  top = 15,
  fromUs?: number,
): { top: ProfileFrame[]; byArea: { area: string; selfPercent: number }[] } {
  const hits = new Map<number, number>();
  if (profile.samples?.length) {
    const timed = fromUs !== undefined && profile.startTime !== undefined && profile.timeDeltas?.length === profile.samples.length;
    let t = profile.startTime ?? 0;
    profile.samples.forEach((id, i) => {
      if (timed) t += profile.timeDeltas![i];
      if (!timed || t >= fromUs!) hits.set(id, (hits.get(id) ?? 0) + 1);
    });
  } else {
    for (const n of profile.nodes) hits.set(n.id, n.hitCount ?? 0);
  }
  let total = 0;
  for (const h of hits.values()) total += h;
  const byFrame = new Map<string, ProfileFrame>();
  const byArea = new Map<string, number>();
  for (const node of profile.nodes) {
    const h = hits.get(node.id) ?? 0;
    if (!h) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    const key = `${functionName}|${url}|${lineNumber}`;
    const frame = byFrame.get(key) ?? { functionName: functionName || '(anonymous)', url, line: lineNumber + 1, selfPercent: 0 };
    frame.selfPercent += (100 * h) / total;
    byFrame.set(key, frame);
    const area = areaOf(url, functionName);
    byArea.set(area, (byArea.get(area) ?? 0) + (100 * h) / total);
  }
  const round = (x: number) => Math.round(x * 10) / 10;
  return {
    top: [...byFrame.values()]
      .sort((a, b) => b.selfPercent - a.selfPercent)
      .slice(0, top)
      .map((f) => ({ ...f, url: f.url.replace(/^file:\/\/.*?\/(node_modules|packages|bench)\//, '$1/'), selfPercent: round(f.selfPercent) })),
    byArea: [...byArea.entries()].sort((a, b) => b[1] - a[1]).map(([area, p]) => ({ area, selfPercent: round(p) })),
  };
}

/** Runs one server with --cpu-prof under `connections` for `seconds`, and summarises its profile. */
export async function profileServer(
  id: string,
  label: string,
  spec: ServerSpec,
  options: { seconds: number; warmupSeconds: number; connections: number; callers?: number },
): Promise<ProfileRow> {
  const dir = mkdtempSync(join(childLogDir(), 'cpuprof-'));
  const server = await startServer(spec, `profile-${id}`, ['--cpu-prof', `--cpu-prof-dir=${dir}`]);
  let rps = 0;
  let from: number | undefined;
  try {
    await runLoad({ url: server.url, connections: options.connections, durationS: options.warmupSeconds, callers: options.callers });
    from = await server.mark();
    rps = (await runLoad({ url: server.url, connections: options.connections, durationS: options.seconds, callers: options.callers })).rps;
  } finally {
    await server.stop();
  }
  const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
  if (!file) throw new Error(`no .cpuprofile written in ${dir}`);
  const summary = summarize(JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile, 15, from);
  const busyShare = 1 - (summary.byArea.find((a) => a.area === '(idle)')?.selfPercent ?? 0) / 100;
  return { id, label, rps: Math.round(rps), cpuUsPerRequest: rps > 0 ? Math.round((busyShare * 1e6) / rps) : null, ...summary, file: join(dir, file) };
}
