// Where flooded processes spend their CPU during the bursts only: the profiles FLOOD_CPU_PROF wrote, cut to the burst spans their logs name.
//
//   FLOOD_CPU_PROF=/tmp/fprof pnpm bench:flood --no-docs --outages none ...
//   node --import tsx src/flood-profile.ts /tmp/fprof $TMPDIR/floodgate-bench-XXXX [off|default] [one|fresh]
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { areaOf, type CpuProfile } from './profile';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

const [profiles, logs, coalesce, subjects] = process.argv.slice(2);
if (!profiles || !logs) {
  console.error('usage: flood-profile.ts PROFILE_DIR LOG_DIR [off|default] [one|fresh]');
  process.exit(2);
}

// Every burst span any flood process logged (monotonic µs, the profiles' clock), of the kind asked.
const spans: [number, number][] = [];
for (const file of readdirSync(logs)) {
  for (const line of readFileSync(join(logs, file), 'utf8').split('\n')) {
    if (!line.startsWith('{"burst"')) continue;
    const b = JSON.parse(line) as { coalesce: string; subjects: string; fromUs: string; toUs: string };
    if ((coalesce && b.coalesce !== coalesce) || (subjects && b.subjects !== subjects)) continue;
    spans.push([Number(b.fromUs), Number(b.toUs)]);
  }
}

const byFrame = new Map<string, number>();
const byArea = new Map<string, number>();
let total = 0;
for (const file of readdirSync(profiles)) {
  const profile = JSON.parse(readFileSync(join(profiles, file), 'utf8')) as CpuProfile & { nodes: Node[] };
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  let t = profile.startTime ?? 0;
  (profile.samples ?? []).forEach((id, i) => {
    t += profile.timeDeltas?.[i] ?? 0;
    if (!spans.some(([from, to]) => t >= from && t <= to)) return;
    const { functionName, url, lineNumber } = nodes.get(id)!.callFrame;
    total++;
    const frame = `${functionName || '(anonymous)'} ${url.replace(/^.*\/(node_modules|dist)\//, '')}:${lineNumber + 1}`;
    byFrame.set(frame, (byFrame.get(frame) ?? 0) + 1);
    const area = areaOf(url, functionName);
    byArea.set(area, (byArea.get(area) ?? 0) + 1);
  });
}

const top = (m: Map<string, number>, n: number) =>
  [...m]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, v]) => `${((100 * v) / total).toFixed(1).padStart(5)}% ${k}`)
    .join('\n');
console.log(`${total} samples in ${spans.length} burst spans (idle included)\n\nby area:\n${top(byArea, 12)}\n\nby function (self):\n${top(byFrame, 30)}`);
