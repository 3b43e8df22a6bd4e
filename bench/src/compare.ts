// `pnpm bench --compare A.json,B.json`: do two runs agree? Every Floodgate figure of both, side by side, and by how much they differ.
import { FRAMEWORKS, type BenchResults, type ThroughputRow } from './types';

/** The figures compared per Floodgate row: the ones the goals and the summary quote. */
const FIGURES: { name: string; of: (r: ThroughputRow) => number | null | undefined }[] = [
  { name: '× bare route', of: (r) => r.ratio },
  { name: '× floor', of: (r) => r.floorRatio },
  { name: 'server CPU µs/req', of: (r) => r.serverCpuUsPerRequest },
  { name: 'Redis CPU µs/req', of: (r) => r.redisCpuUsPerRequest },
];

/** How far two figures are apart, as a share of their mean (symmetric: the same whichever run is first). */
export function relativeDifference(a: number, b: number): number {
  const mean = (Math.abs(a) + Math.abs(b)) / 2;
  return mean === 0 ? 0 : Math.abs(a - b) / mean;
}

export interface Agreement {
  id: string;
  figure: string;
  a: number;
  b: number;
  difference: number;
}

/** Every figure both runs have of every Floodgate row (the bare route's CPU too: the reference of the rest). */
export function agreements(a: BenchResults, b: BenchResults): Agreement[] {
  const out: Agreement[] = [];
  for (const ra of a.throughput) {
    if (ra.group !== 'floodgate' && ra.group !== 'floodgate-hot' && ra.group !== 'ceiling') continue;
    const rb = b.throughput.find((r) => r.id === ra.id);
    if (!rb) continue;
    for (const f of ra.group === 'ceiling' ? FIGURES.slice(2, 3) : FIGURES) {
      const [x, y] = [f.of(ra), f.of(rb)];
      // Figures near zero (Redis CPU of a block-cache denial, ~0.3 µs) carry no relative meaning.
      if (x === null || x === undefined || y === null || y === undefined || !Number.isFinite(x) || !Number.isFinite(y)) continue;
      if (f.name === 'Redis CPU µs/req' && Math.max(x, y) < 1) continue;
      out.push({ id: ra.id, figure: f.name, a: x, b: y, difference: relativeDifference(x, y) });
    }
  }
  const order = (id: string) => FRAMEWORKS.indexOf(id.split('/')[0] as (typeof FRAMEWORKS)[number]);
  return out.sort((x, y) => order(x.id) - order(y.id));
}

export function compareRuns(a: BenchResults, b: BenchResults, nameA: string, nameB: string, tolerance = 0.05): string {
  const rows = agreements(a, b);
  const within = rows.filter((r) => r.difference <= tolerance).length;
  const fmt = (x: number) => (Math.abs(x) >= 10 ? x.toFixed(1) : x.toFixed(3));
  const lines = [
    `A: ${nameA} (${a.meta.date}, load ${a.meta.loadAverageStart.join(' ')}; ${a.meta.pinning?.how ?? 'not pinned'})`,
    `B: ${nameB} (${b.meta.date}, load ${b.meta.loadAverageStart.join(' ')}; ${b.meta.pinning?.how ?? 'not pinned'})`,
    '',
    '| row | figure | A | B | difference |',
    '| --- | --- | --- | --- | --- |',
    ...rows.map((r) => `| ${r.id} | ${r.figure} | ${fmt(r.a)} | ${fmt(r.b)} | ${(r.difference * 100).toFixed(1)}%${r.difference > tolerance ? ' ✗' : ''} |`),
    '',
    `${within} of ${rows.length} figures within ${Math.round(tolerance * 100)}%; largest difference ${rows.length ? (Math.max(...rows.map((r) => r.difference)) * 100).toFixed(1) : 'n/a'}%.`,
  ];
  return lines.join('\n');
}
