// The Redis script protocol, defined once: the scripts and their hashes (composed from the registry).
import { createHash } from 'node:crypto';
import { ALGORITHM, ALGORITHMS, type AlgorithmName, type RegisteredAlgorithm, type StoreLimit } from '../algorithms/registry';
import { LUA_MAIN, LUA_PRELUDE } from '../lua/scripts.generated';

/** One script per algorithm, run when every limit of a call uses it, and `all` for mixed limits. */
export type ScriptName = AlgorithmName | 'all';

export interface Script {
  readonly name: ScriptName;
  readonly source: string;
  /** SHA1 of the source, as EVALSHA wants it: computed when the module loads, never kept by hand. */
  readonly sha: string;
}

/** Prelude, each algorithm's chunk in its own block with its check registered under its registry id, then main. */
function compose(name: ScriptName, algorithms: readonly RegisteredAlgorithm[]): Script {
  const chunks = algorithms.map((a) => `do\n${a.lua}CHECK[${a.id}] = check\nend\n`);
  const source = [LUA_PRELUDE, ...chunks, LUA_MAIN].join('\n');
  return { name, source, sha: createHash('sha1').update(source).digest('hex') };
}

export const SCRIPTS = Object.fromEntries([
  ...ALGORITHMS.map((name) => [name, compose(name, [ALGORITHM[name]])]),
  ['all', compose('all', ALGORITHMS.map((name) => ALGORITHM[name]))],
]) as Readonly<Record<ScriptName, Script>>;

/** The smallest script that holds every limit's algorithm: a single algorithm's own, else `all`. */
export function scriptFor(limits: readonly StoreLimit[]): Script {
  const first = limits[0].algorithm;
  return SCRIPTS[limits.every((l) => l.algorithm === first) ? first : 'all'];
}
