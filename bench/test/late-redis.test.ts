// The late-Redis bench's logic on made-up answers (no Redis): admissions per burst, local decisions, waits pooled, arguments parsed and the page's section spliced.
import { lateRow, parseLateArgs, spliceLateSection } from '../src/late-redis';
import type { FloodAnswers } from '../src/flood-worker';

function answers(partial: Partial<FloodAnswers>): FloodAnswers {
  return { type: 'answers', pid: 1, deadlineMs: 100, decisions: 0, byReason: {}, degraded: 0, admittedBySubject: {}, waitsMs: [], overAllowance: 0, worstExcessMs: 0, maxLoopStallMs: 0, cpuMs: 0, rejected: 0, ...partial };
}

describe('late-redis bench', () => {
  it('sums a burst over its processes, counts degraded and blocked decisions as local, and pools the waits', () => {
    const burst1 = [
      answers({ decisions: 3, byReason: { allowed: 2, limited: 1 }, admittedBySubject: { s1: 2 }, waitsMs: [10, 20, 30] }),
      answers({ decisions: 2, byReason: { allowed: 1, blocked: 1 }, admittedBySubject: { s1: 1 }, waitsMs: [40, 50] }),
    ];
    const burst2 = [answers({ decisions: 2, byReason: { 'fail-local': 2 }, degraded: 2, admittedBySubject: {}, waitsMs: [100, 200] })];
    const row = lateRow(150, 100, [burst1, burst2]);
    expect(row.admitted).toEqual([3, 0]);
    expect(row.decisions).toBe(7);
    expect(row.local).toBe(3);
    expect(row.byReason).toEqual({ allowed: 3, limited: 1, blocked: 1, 'fail-local': 2 });
    expect(row.p50WaitMs).toBe(40);
    expect(row.maxWaitMs).toBe(200);
  });

  it('parses the delays and deadlines, and refuses a bad one', () => {
    expect(parseLateArgs(['--delays', '50,300', '--deadlines', '100,400']).settings).toMatchObject({ delaysMs: [50, 300], deadlinesMs: [100, 400], limit: 100 });
    expect(() => parseLateArgs(['--delays', '50,x'])).toThrow(/--delays/);
    expect(() => parseLateArgs(['--algorithm', 'nope'])).toThrow(/--algorithm/);
  });

  it('replaces its section between the markers, or appends it', () => {
    const section = '<!-- late-redis:start -->\nnew\n<!-- late-redis:end -->';
    expect(spliceLateSection('# B\n\n<!-- late-redis:start -->\nold\n<!-- late-redis:end -->\n\n## After\n', section)).toBe(`# B\n\n${section}\n\n## After\n`);
    expect(spliceLateSection('# B\n', section)).toBe(`# B\n\n${section}\n`);
  });
});
