// The chart: bars drawn from the results (ratios to the ceiling, race and accuracy multiples), as one SVG.
import { GOALS, LOAD_TEXT, loadOf, storeOf } from './goals';
import { FRAMEWORKS, LOAD_SHAPES, type BenchResults, type Regime, type ThroughputRow } from './types';

interface Bar {
  label: string;
  value: number;
  /** A second reading drawn as a tick on the bar (throughput: the ratio by server CPU per request). */
  alt?: number;
  /** Fill colour key. */
  kind: 'floodgate' | 'floodgate-memory' | 'floodgate-hot' | 'peer' | 'peer-memory' | 'floor' | 'naive';
}

interface Group {
  title: string;
  bars: Bar[];
}

interface Panel {
  title: string;
  subtitle: string;
  groups: Group[];
  /** Vertical reference lines: the ideal (1.0) and goals. */
  marks: { at: number; label: string; dashed: boolean; color: string }[];
}

const COLORS: Record<Bar['kind'], string> = {
  floodgate: '#0f766e',
  'floodgate-memory': '#5eead4',
  'floodgate-hot': '#7c3aed',
  peer: '#9ca3af',
  'peer-memory': '#d1d5db',
  floor: '#fbbf24',
  naive: '#dc2626',
};

const LEGEND: { kind: Bar['kind']; text: string }[] = [
  { kind: 'floodgate', text: 'Floodgate on Redis' },
  { kind: 'floodgate-memory', text: 'Floodgate, memory store' },
  { kind: 'floodgate-hot', text: 'Floodgate, hot-key mode' },
  { kind: 'peer-memory', text: 'peer library in memory' },
  { kind: 'peer', text: 'peer library on Redis' },
  { kind: 'floor', text: 'floor: Redis PINGs, no limiting' },
  { kind: 'naive', text: 'naive GET then INCR' },
];

export function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c]!);
}

const fmt = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : 'n/a');

function barKind(row: ThroughputRow): Bar['kind'] {
  if (row.group === 'floodgate-hot') return 'floodgate-hot';
  if (row.group === 'floor') return 'floor';
  const memory = storeOf(row) === 'memory';
  if (row.group === 'peer') return memory ? 'peer-memory' : 'peer';
  return memory ? 'floodgate-memory' : 'floodgate';
}

function throughputPanel(results: BenchResults, regime: Regime): Panel {
  const groups: Group[] = [];
  const shapes = LOAD_SHAPES.filter((load) => results.throughput.some((r) => loadOf(r) === load));
  for (const load of shapes) {
    for (const framework of FRAMEWORKS) {
      const rows = results.throughput.filter((r) => r.framework === framework && r.regime === regime && loadOf(r) === load);
      if (rows.length === 0) continue;
      const ceiling = results.throughput.find((r) => r.framework === framework && r.group === 'ceiling' && loadOf(r) === load);
      const shape = shapes.length > 1 ? `, ${LOAD_TEXT[load]}` : '';
      groups.push({
        title: `${framework}${shape}${ceiling ? ` (ceiling ${Math.round(ceiling.medianRps).toLocaleString('en-US')} req/s)` : ''}`,
        bars: rows.map((r) => ({ label: r.label, value: r.ratio, alt: r.cpuRatio, kind: barKind(r) })),
      });
    }
  }
  return {
    title: regime === 'admit' ? 'Every request admitted: throughput kept' : 'Nearly every request rejected (429): throughput kept',
    subtitle: 'bar: req/s as a share of the same framework with no limiter (1.0), paired by round; tick: the same by server CPU per request; longer is better',
    groups,
    // Admitting, the goals are relative (to the best peer, to the floor): no fixed line to draw.
    marks: [
      { at: 1, label: 'no limiter', dashed: false, color: '#111827' },
      ...(regime === 'reject' ? [{ at: GOALS.reject, label: `goal ${GOALS.reject.toFixed(2)}`, dashed: true, color: '#b91c1c' }] : []),
    ],
  };
}

function racePanel(results: BenchResults): Panel | undefined {
  if (results.race.length === 0) return undefined;
  const r0 = results.race[0];
  return {
    title: `Race: ${r0.processes} processes on one subject, admitted / limit`,
    subtitle: `limit ${r0.limit}, ${r0.attemptsPerRepetition} attempts at once; worst repetition; 1.0 is exact, above it the limiter let a race through`,
    groups: [
      {
        title: 'admitted / limit',
        bars: results.race.map((r) => ({
          label: r.label,
          value: r.maxRatio,
          kind: r.group === 'naive' ? 'naive' : r.group === 'peer' ? 'peer' : r.group === 'floodgate-hot' ? 'floodgate-hot' : 'floodgate',
        })),
      },
    ],
    marks: [{ at: 1, label: 'exact', dashed: false, color: '#111827' }],
  };
}

function accuracyPanel(results: BenchResults): Panel | undefined {
  if (results.accuracy.length === 0) return undefined;
  const a0 = results.accuracy[0];
  return {
    title: 'Accuracy: most admitted in any window-long span, as a multiple of the limit',
    subtitle: `worst adversarial pattern, limit ${a0.limit} per ${a0.windowMs / 1000} s, against the exact log; 1.0 is exact`,
    groups: [
      {
        title: 'worst pattern',
        bars: results.accuracy.map((a) => ({ label: a.algorithm, value: a.worstRatio, kind: 'floodgate' as const })),
      },
    ],
    marks: [{ at: 1, label: 'exact', dashed: false, color: '#111827' }],
  };
}

const WIDTH = 960;
const ROW_H = 18;
const BAR_H = 12;
/** Rough width of 11 px sans-serif text: enough to keep labels inside the canvas. */
const textWidth = (text: string) => text.length * 6.3;

function renderPanel(panel: Panel, top: number, LABEL_W: number): { svg: string; height: number } {
  const PLOT_W = WIDTH - LABEL_W - 60;
  const values = panel.groups.flatMap((g) => g.bars.flatMap((b) => [b.value, b.alt ?? 0]));
  const max = Math.max(1.1, ...values.filter(Number.isFinite)) * 1.05;
  const x = (v: number) => LABEL_W + (Math.max(0, v) / max) * PLOT_W;
  const parts: string[] = [];
  let y = top;
  parts.push(`<text x="10" y="${y + 14}" class="title">${escapeXml(panel.title)}</text>`);
  parts.push(`<text x="10" y="${y + 30}" class="sub">${escapeXml(panel.subtitle)}</text>`);
  y += 44;
  const plotTop = y;
  for (const group of panel.groups) {
    parts.push(`<text x="10" y="${y + 12}" class="group">${escapeXml(group.title)}</text>`);
    y += ROW_H;
    for (const bar of group.bars) {
      const ok = Number.isFinite(bar.value);
      const w = ok ? Math.max(1, x(bar.value) - LABEL_W) : 0;
      parts.push(`<text x="${LABEL_W - 8}" y="${y + 11}" class="label" text-anchor="end">${escapeXml(bar.label)}</text>`);
      parts.push(`<rect x="${LABEL_W}" y="${y + 2}" width="${w.toFixed(1)}" height="${BAR_H}" fill="${COLORS[bar.kind]}" data-value="${fmt(bar.value)}"/>`);
      let textX = LABEL_W + w + 5;
      if (bar.alt !== undefined && Number.isFinite(bar.alt)) {
        const ax = x(bar.alt);
        parts.push(`<line x1="${ax.toFixed(1)}" y1="${y}" x2="${ax.toFixed(1)}" y2="${y + BAR_H + 4}" stroke="#111827" stroke-width="2" data-alt="${fmt(bar.alt)}"/>`);
        textX = Math.max(textX, ax + 5);
      }
      parts.push(`<text x="${textX.toFixed(1)}" y="${y + 12}" class="value">${fmt(bar.value)}</text>`);
      y += ROW_H;
    }
    y += 4;
  }
  panel.marks.forEach((mark, i) => {
    const mx = x(mark.at).toFixed(1);
    parts.push(
      `<line x1="${mx}" y1="${plotTop - 4}" x2="${mx}" y2="${y}" stroke="${mark.color}" stroke-width="1"${mark.dashed ? ' stroke-dasharray="4 3"' : ''}/>`,
    );
    // Labels of marks close together would overlap: the second goes to the left of its line.
    const anchor = i === 0 ? 'start' : 'end';
    const dx = i === 0 ? 3 : -3;
    parts.push(`<text x="${(Number(mx) + dx).toFixed(1)}" y="${plotTop - 6}" class="mark" text-anchor="${anchor}" fill="${mark.color}">${escapeXml(mark.label)}</text>`);
  });
  return { svg: parts.join('\n'), height: y - top + 16 };
}

/** The whole chart. Pure: the same results always give the same SVG. */
export function renderSvg(results: BenchResults): string {
  const panels = [
    throughputPanel(results, 'admit'),
    throughputPanel(results, 'reject'),
    racePanel(results),
    accuracyPanel(results),
  ].filter((p): p is Panel => p !== undefined && p.groups.some((g) => g.bars.length > 0));
  const body: string[] = [];
  let y = 10;
  body.push(
    `<text x="10" y="${y + 16}" class="head">Floodgate benchmarks, ${escapeXml(results.meta.date.slice(0, 10))} (${results.meta.mode} run, ${escapeXml(results.meta.cpu)}, ${results.meta.cores} cores)</text>`,
  );
  y += 30;
  let lx = 10;
  const legendItem = (width: number) => {
    if (lx + width > WIDTH - 10) {
      lx = 10;
      y += 18;
    }
    const at = lx;
    lx += width;
    return at;
  };
  for (const item of LEGEND) {
    const at = legendItem(28 + textWidth(item.text));
    body.push(`<rect x="${at}" y="${y}" width="12" height="12" fill="${COLORS[item.kind]}"/>`);
    body.push(`<text x="${at + 16}" y="${y + 10}" class="label">${escapeXml(item.text)}</text>`);
  }
  const tickText = 'tick: by server CPU per request';
  const at = legendItem(28 + textWidth(tickText));
  body.push(`<line x1="${at + 6}" y1="${y - 2}" x2="${at + 6}" y2="${y + 14}" stroke="#111827" stroke-width="2"/>`);
  body.push(`<text x="${at + 14}" y="${y + 10}" class="label">${tickText}</text>`);
  y += 26;
  const longest = Math.max(0, ...panels.flatMap((p) => p.groups.flatMap((g) => g.bars.map((b) => textWidth(b.label)))));
  const labelWidth = Math.min(480, Math.max(200, Math.ceil(longest + 16)));
  for (const panel of panels) {
    const { svg, height } = renderPanel(panel, y, labelWidth);
    body.push(svg);
    y += height;
  }
  const height = Math.ceil(y + 10);
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif">`,
    '<style>.head{font-size:16px;font-weight:600}.title{font-size:14px;font-weight:600}.sub{font-size:11px;fill:#4b5563}.group{font-size:12px;font-weight:600;fill:#111827}.label{font-size:11px;fill:#1f2937}.value{font-size:11px;fill:#111827}.mark{font-size:10px}</style>',
    `<rect width="${WIDTH}" height="${height}" fill="#ffffff"/>`,
    ...body,
    '</svg>',
    '',
  ].join('\n');
}
