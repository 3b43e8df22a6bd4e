// Small statistics helpers for the bench: medians and ratios, with empty inputs handled.

/** The median; NaN for an empty list. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** a / b, or NaN when b is not a positive number (a missing ceiling must not look like a result). */
export function ratio(a: number, b: number): number {
  return Number.isFinite(a) && Number.isFinite(b) && b > 0 ? a / b : NaN;
}

export function sum(values: readonly number[]): number {
  let total = 0;
  for (const v of values) total += v;
  return total;
}

/**
 * A contender's share of the ceiling, paired by round: its req/s in each round over the ceiling's in
 * the same round (the mean of the ceiling's runs that round), then the median of those. Load on a
 * shared machine drifts over minutes; a ratio of two medians taken minutes apart carries that drift,
 * a ratio within one round mostly cancels it. `ceilingPerRound` runs of the ceiling per round,
 * `contenderPerRound` of the contender (their mean is its figure for the round). Any reference
 * measured in the same rounds works as the ceiling: the per-turn floor does too.
 */
export function pairedRatio(contender: readonly number[], ceiling: readonly number[], ceilingPerRound: number, contenderPerRound = 1): number {
  const ratios: number[] = [];
  for (let round = 0; round * contenderPerRound < contender.length; round++) {
    const runs = ceiling.slice(round * ceilingPerRound, (round + 1) * ceilingPerRound);
    const own = contender.slice(round * contenderPerRound, (round + 1) * contenderPerRound);
    if (runs.length === 0) break;
    ratios.push(ratio(sum(own) / own.length, sum(runs) / runs.length));
  }
  return median(ratios.filter(Number.isFinite));
}
