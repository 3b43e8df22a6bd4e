// The report and chart are pure functions of a results set: check them on a fixed one.
import { renderMarkdown, warnings } from '../src/report';
import { escapeXml, renderSvg } from '../src/svg';
import { fixture } from './fixture';

/** Tags open and close in order (a small well-formedness check; no XML parser in the bench's dependencies). */
function balanced(svg: string): boolean {
  const stack: string[] = [];
  for (const m of svg.matchAll(/<(\/?)([a-zA-Z]+)[^>]*?(\/?)>/g)) {
    const [, closing, name, selfClosing] = m;
    if (selfClosing) continue;
    if (closing) {
      if (stack.pop() !== name) return false;
    } else stack.push(name);
  }
  return stack.length === 0;
}

describe('renderMarkdown', () => {
  const md = renderMarkdown(fixture(), 'benchmarks.svg');

  it('shows the chart before any table', () => {
    expect(md.startsWith('# Benchmarks')).toBe(true);
    expect(md.indexOf('![')).toBeGreaterThan(0);
    expect(md.indexOf('](benchmarks.svg)')).toBeLessThan(md.indexOf('| contender'));
  });

  it('states date, mode, machine, versions and notes', () => {
    expect(md).toContain('Measured 2026-01-02');
    expect(md).toContain('pnpm bench --quick');
    expect(md).toContain('Test CPU <2 GHz> & co');
    expect(md).toContain('| express | 5.3.0 |');
    expect(md).toContain('> a note for the reader');
    expect(md).toContain('3.5, 2, 1 / 0.2, 1, 1');
  });

  it('puts each contender in one row with both regimes and marks Floodgate against the goals', () => {
    const line = md.split('\n').find((l) => l.startsWith('| Floodgate, Redis (sliding-window-counter)'));
    expect(line).toBeDefined();
    expect(line).toContain('| 8,000 | **0.80** ✓ | 0.80 | 9,000 | **0.90** ✗ | 0.90 |');
    expect(md).toMatch(/\| no limiter \(ceiling\) \| 10,000 \| 1\.00 \|/);
    // The CPU-based ratio is its own column: 0.625 rounds to 0.63 (toFixed) or 0.62, never 0.40.
    expect(md).toMatch(/\| peer <one> & two \| 4,000 \| \*\*0\.40\*\* \| 0\.6[23] \| 5,000 \| \*\*0\.50\*\* \| 0\.50 \|/);
    // Cost per request: server CPU (50 µs / ratio), Redis commands, Redis CPU, p99, shares.
    expect(md).toContain('| Floodgate, Redis (sliding-window-counter) | 63 / 56 | 5.0 / 0.0 | 20.0 / 20.0 | 4.0 / 4.0 | 100% / 100% |');
  });

  it('summarises the goals per framework and regime', () => {
    expect(md).toContain(
      '**express, admitting**: Floodgate on Redis keeps 0.80 of the ceiling (0.80 by server CPU per request): meets the goal of 0.75 (peers: peer <one> & two 0.40).',
    );
    expect(md).toContain('**express, rejecting**: Floodgate on Redis keeps 0.90 of the ceiling (0.90 by server CPU per request): misses the goal of 0.95');
  });

  it('has the ceiling, race, accuracy and memory tables', () => {
    expect(md).toContain('| sliding-window-counter | 10 | 40,000 | 36,000 | 30,000 | 24,000 | **0.60** |');
    expect(md).toContain('| naive GET, then INCR | 61 | **1.22** | 1.22 |');
    expect(md).toContain('| fixed-window | 2.00 | 1.00 | **2.00** |');
    expect(md).toContain('| Floodgate | sliding-window-log | 3,176 | 118,496 | 1 |');
    expect(md).toContain('| gcra | 269 | 219 |');
    expect(md).toContain('holds 1,607,680 bytes');
  });

  it('leaves out sections with no results', () => {
    const empty = { ...fixture(), race: [], accuracy: [], profiles: [] };
    const text = renderMarkdown(empty);
    expect(text).not.toContain('## Races');
    expect(text).not.toContain('## Accuracy');
    expect(text).toContain('## Throughput');
  });
});

describe('renderSvg', () => {
  const results = fixture();
  const svg = renderSvg(results);

  it('is one well-formed SVG, the same for the same results', () => {
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
    expect(balanced(svg)).toBe(true);
    expect(renderSvg(fixture())).toBe(svg);
  });

  it('escapes text from the results', () => {
    expect(svg).toContain('peer &lt;one&gt; &amp; two');
    expect(svg).toContain('Test CPU &lt;2 GHz&gt; &amp; co');
    expect(svg).not.toContain('<one>');
    expect(escapeXml(`a"b'c`)).toBe('a&quot;b&apos;c');
  });

  it('draws bar lengths in proportion to the numbers', () => {
    const widths = new Map<string, number[]>();
    for (const m of svg.matchAll(/<rect [^>]*width="([\d.]+)"[^>]*data-value="([\d.]+)"/g)) {
      widths.set(m[2], [...(widths.get(m[2]) ?? []), Number(m[1])]);
    }
    const w = (value: string) => widths.get(value)![0];
    expect(w('0.80') / w('0.40')).toBeCloseTo(2, 1);
    expect(w('0.90') / w('0.50')).toBeCloseTo(1.8, 1);
    // The race and accuracy panels have their own scales; their bars are there too.
    expect(widths.has('1.22')).toBe(true);
    expect(widths.has('2.00')).toBe(true);
  });

  it('ticks each throughput bar at its CPU-based ratio', () => {
    const ticks = [...svg.matchAll(/<line x1="([\d.]+)"[^>]*data-alt="([\d.]+)"/g)].map((m) => [m[2], Number(m[1])] as const);
    const at = (value: string) => ticks.find(([v]) => v === value)![1];
    expect(ticks.map(([v]) => v)).toEqual(expect.arrayContaining(['0.80', '0.90', '0.50']));
    // 0.625 is to the right of 0.50 and left of 0.80 on the same scale.
    expect(at('0.63')).toBeGreaterThan(at('0.50'));
    expect(at('0.63')).toBeLessThan(at('0.80'));
  });

  it('draws the goal lines of both regimes', () => {
    expect(svg).toContain('>goal 0.75<');
    expect(svg).toContain('>goal 0.95<');
  });
});

describe('warnings', () => {
  it('flags a quick run, a busy machine, core-inline wiring and contenders that did not behave', () => {
    const results = fixture();
    results.throughput[1] = { ...results.throughput[1], wiring: 'inline-core', okShare: 0.5, errors: 3 };
    const notes = warnings(results);
    expect(notes.some((n) => n.startsWith('Quick run'))).toBe(true);
    expect(notes.some((n) => n.includes('load average 3.5'))).toBe(true);
    expect(notes.some((n) => n.includes('No Floodgate adapter for express'))).toBe(true);
    expect(notes).toContain('express/floodgate-redis-sliding-window-counter/admit: 3 connection errors or timeouts.');
    expect(notes).toContain('express/floodgate-redis-sliding-window-counter/admit: only 50.0% 2xx while it should admit everything.');
  });

  it('calls out a limiter that beat its ceiling as noise', () => {
    const results = fixture();
    results.throughput[2] = { ...results.throughput[2], ratio: 1.3 };
    expect(warnings(results).some((n) => n.startsWith('express/floodgate-redis-sliding-window-counter/reject beat their no-limiter ceiling'))).toBe(true);
  });

  it('says nothing for a clean full run on an idle machine', () => {
    const results = fixture();
    results.meta.mode = 'full';
    results.meta.loadAverageStart = [0.1, 0.1, 0.1];
    expect(warnings(results)).toEqual([]);
  });
});
