// The pinned bench's measuring parts: CPU from /proc/<pid>/stat, the many-caller addresses, the pinning plan and the two-run comparison.
import { agreements, compareRuns, relativeDifference } from '../src/compare';
import { callerAddress } from '../src/load';
import { planPinning } from '../src/pinning';
import { parseProcStat, procCpuUs } from '../src/proc-cpu';
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
    let x = 0;
    const until = Date.now() + 60;
    while (Date.now() < until) x += Math.sqrt(x + 1);
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
