// Parses INFO commandstats output into call counts per command and sums such maps.

/**
 * `cmdstat_get:calls=3,usec=...` lines to `{ get: 3 }`. Names are lower-case; Redis 7 reports
 * subcommands as `config|resetstat`.
 */
export function parseCommandStats(info: string): Record<string, number> {
  const stats: Record<string, number> = {};
  for (const line of info.split(/\r?\n/)) {
    const match = /^cmdstat_([^:]+):.*?\bcalls=(\d+)/.exec(line);
    if (match) stats[match[1].toLowerCase()] = Number(match[2]);
  }
  return stats;
}

/** Adds up several command-stats maps. */
export function sumCommandStats(all: Record<string, number>[]): Record<string, number> {
  const total: Record<string, number> = {};
  for (const stats of all) {
    for (const [name, calls] of Object.entries(stats)) total[name] = (total[name] ?? 0) + calls;
  }
  return total;
}
