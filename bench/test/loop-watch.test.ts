// The loop watch's stall accounting: what an answer's wait is allowed to owe its own process (the flood bench and the soak judge waits by it).
import { stallOverlap, type Tick } from '../src/loop-watch';

// Ticks every 10 ms; a stall is [at - stall, at].
const ticks: Tick[] = [
  { at: 10, stall: 0 },
  { at: 20, stall: 0 },
  // The loop blocked from 30 to 200 (one tick, 170 ms late).
  { at: 200, stall: 170 },
  { at: 210, stall: 0 },
  // Off the CPU from 220 to 260.
  { at: 260, stall: 40 },
  { at: 270, stall: 0 },
];

describe('stallOverlap', () => {
  it('credits an answer delivered in the middle of a block with the part of the block before it', () => {
    // Called at 5, answered at 150 while the loop was still blocked (the block's tick only came at 200).
    expect(stallOverlap(ticks, 5, 150)).toBe(120);
  });

  it('credits a call made in the middle of a block only with the rest of the block', () => {
    // Made at 100 (a call made by a callback of that long turn), answered at 205.
    expect(stallOverlap(ticks, 100, 205)).toBe(100);
  });

  it('sums every stall inside the span', () => {
    expect(stallOverlap(ticks, 0, 300)).toBe(210);
  });

  it('owes nothing to stalls that ended before the call or began after the answer', () => {
    expect(stallOverlap(ticks, 200, 220)).toBe(0);
    expect(stallOverlap(ticks, 0, 25)).toBe(0);
    expect(stallOverlap(ticks, 262, 300)).toBe(0);
  });

  it('is zero for an empty watch', () => {
    expect(stallOverlap([], 0, 1_000)).toBe(0);
  });
});
