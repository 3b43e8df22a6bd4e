// The pinned bench's measuring parts: CPU from /proc/<pid>/stat, the many-caller addresses, the pinning plan and the two-run comparison.
import { carryOver, sectionOf } from '../src/carry-over';
import { agreements, compareRuns, relativeDifference } from '../src/compare';
import { callerAddress } from '../src/load';
import { planPinning } from '../src/pinning';
import { parseProcStat, procCpuUs } from '../src/proc-cpu';
import { renderMarkdown, spliceFrameworks } from '../src/report';
import { fixture } from './fixture';

describe('parseProcStat', () => {
  it('adds utime, stime, cutime and cstime (fields 14 to 17), counted after a command name that holds spaces and parentheses', () => {
    // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime ...
    const stat = '4242 (node (my) server) S 1 4242 4242 0 -1 4194304 900 0 0 0 150 50 7 3 20 0 11 0';
    expect(parseProcStat(stat, 100)).toBe(((150 + 50 + 7 + 3) * 1e6) / 100);
    expect(parseProcStat('garbage', 100)).toBeUndefined();
  });

  it("reads this process's own CPU time, which grows as it works", () => {
    const before = procCpuUs(process.pid)!;
    // Works until the kernel's count moves (it ticks every 10 ms of CPU this process gets: on a loaded
    // machine 60 ms of wall clock gave none), or 20 s pass: a reading that never grows fails.
    let x = 0;
    const cap = Date.now() + 20_000;
    do {
      const slice = Date.now() + 20;
      while (Date.now() < slice) x += Math.sqrt(x + 1);
    } while (procCpuUs(process.pid)! === before && Date.now() < cap);
    expect(x).toBeGreaterThan(0);
    expect(procCpuUs(process.pid)!).toBeGreaterThan(before);
    expect(procCpuUs(2 ** 30)).toBeUndefined();
  });
});

describe('callerAddress', () => {
  it('gives each of 10,000 callers its own address in 198.18.0.0/15', () => {
    const all = new Set(Array.from({ length: 10_000 }, (_, i) => callerAddress(i)));
    expect(all.size).toBe(10_000);
    expect(callerAddress(0)).toBe('198.18.0.0');
    expect(callerAddress(258)).toBe('198.18.1.2');
    expect(callerAddress(65_536)).toBe('198.19.0.0');
  });
});

describe('planPinning', () => {
  it('puts the server on the last core and everything else on the others, or says why it does not', () => {
    expect(planPinning(false, 2)).toMatchObject({ pinned: false, how: expect.stringContaining('--no-pin') });
    expect(planPinning(true, 1)).toMatchObject({ pinned: false });
    const two = planPinning(true, 2);
    // taskset is util-linux's: present on this machine's image, and the fallback is named when it is not.
    if (two.pinned) expect(two).toMatchObject({ serverCpus: '1', loadCpus: '0' });
    else expect(two.how).toContain('taskset');
    const four = planPinning(true, 4);
    if (four.pinned) expect(four).toMatchObject({ serverCpus: '3', loadCpus: '0-2' });
  });
});

describe('compareRuns', () => {
  it('compares every Floodgate figure of two runs and counts those within 5%', () => {
    const a = fixture();
    const b = fixture();
    const fg = b.throughput.find((r) => r.id === 'express/floodgate-redis-sliding-window-counter/admit')!;
    fg.ratio *= 1.1;
    const rows = agreements(a, b);
    expect(rows.every((r) => r.id.includes('floodgate') || r.id.endsWith('/none'))).toBe(true);
    const moved = rows.find((r) => r.id === fg.id && r.figure === '× bare route')!;
    expect(moved.difference).toBeCloseTo(relativeDifference(0.8, 0.88));
    const text = compareRuns(a, b, 'a.json', 'b.json');
    expect(text).toContain(`${rows.length - 1} of ${rows.length} figures within 5%`);
    expect(text).toMatch(/\| express\/floodgate-redis-sliding-window-counter\/admit \| × bare route \| 0\.800 \| 0\.880 \| 9\.5% ✗ \|/);
  });
});

describe('carryOver', () => {
  it('keeps the sections a throughput-only run did not measure, from the page as it was, each said to be from that run', () => {
    const old = renderMarkdown(fixture());
    const fresh = renderMarkdown({ ...fixture(), race: [], accuracy: [], redisCeiling: [], redisMemory: [], memoryStore: [] });
    expect(fresh).not.toContain('## Races');
    const { page, carried } = carryOver(old, fresh);
    expect(carried).toEqual(['The Redis ceiling', 'Races', 'Accuracy', 'Memory per caller']);
    for (const heading of carried) {
      expect(page.split('\n').filter((l) => l === `## ${heading}`)).toHaveLength(1);
      expect(sectionOf(page, heading)).toContain('> Not measured by this run: as the full run of 2026-01-02 measured it');
    }
    expect(sectionOf(page, 'Races')).toContain('| naive GET, then INCR | 61 | **1.22** | 1.22 |');
    // This run's own sections are its own, once; the carried ones go before "How this was measured".
    expect(page.split('\n').filter((l) => l === '## Throughput')).toHaveLength(1);
    expect(page.indexOf('## Races')).toBeLessThan(page.indexOf('## How this was measured'));
    expect(carryOver(old, old).carried).toEqual([]);
    // Carried again by the next such run: still one note per section.
    const again = carryOver(page, fresh).page;
    expect(sectionOf(again, 'Races')!.split('\n').filter((l) => l.startsWith('> Not measured by this run'))).toHaveLength(1);
  });
});

describe('carryOver of frameworks measured by runs of their own', () => {
  it('keeps a spliced framework section and its Summary row that the fresh page lacks, once', () => {
    const base = renderMarkdown(fixture());
    const own = fixture();
    own.throughput = own.throughput.map((r) => ({ ...r, framework: 'hono' as const, id: r.id.replace(/^express/, 'hono') }));
    const old = spliceFrameworks(base, own, 'pnpm bench --only throughput --frameworks hono');
    expect(old).toContain('<!-- bench:framework hono one -->');
    const { page, carried } = carryOver(old, base);
    expect(carried).toContain('hono (one)');
    expect(page.split('\n').filter((l) => l === '<!-- bench:framework hono one -->')).toHaveLength(1);
    const summary = page.slice(page.indexOf('## Summary'), page.indexOf('## Goals'));
    expect(summary.split('\n').filter((l) => l.startsWith('| hono (a run of its own'))).toHaveLength(1);
    // Carried again onto a page that has it: nothing doubles.
    expect(carryOver(old, page).page.split('\n').filter((l) => l === '<!-- bench:framework hono one -->')).toHaveLength(1);
  });
});
