// `pnpm bench:client`: the client loop against every server, paced and plain, rendered into docs/client.md between markers.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startRedis } from '@floodgate/testing';
import { fastestMs, hotRetryLoop, pacedLoop, plainLoop, type LoopResult } from './client-loop';
import { PACING_SERVERS, SERVER_INFO, startPacingServer, type PacingServerId } from './client-servers';
import { REPO_DIR, machine } from './env';

const BEGIN = '<!-- bench:client:begin -->';
const END = '<!-- bench:client:end -->';

export interface ClientRow {
  readonly id: PacingServerId;
  readonly paced: LoopResult;
  readonly plain: LoopResult;
  /** The hot-retry loop (hotRetryLoop): the least time this server lets any client take; absent when not run. */
  readonly floor?: LoopResult;
}

const seconds = (ms: number) => (ms / 1000).toFixed(1);

/**
 * Issue #46's goal for the paced loop: within 1.3x the fastest the limit allows, with at most one 429.
 * A server that sends only Retry-After is held to the 429s alone: it names no limit before its first refusal.
 */
export const CLIENT_GOAL = { ratio: 1.3, tooMany: 1 } as const;

/** Whether a paced loop met CLIENT_GOAL against `id`, and if not, by what. */
export function clientGoal(id: PacingServerId, paced: LoopResult, idealMs: number): { met: boolean; text: string } {
  const misses: string[] = [];
  const ratio = paced.ms / idealMs;
  if (!SERVER_INFO[id].retryAfterOnly && ratio > CLIENT_GOAL.ratio) misses.push(`${ratio.toFixed(2)}x > ${CLIENT_GOAL.ratio}x`);
  if (paced.tooMany > CLIENT_GOAL.tooMany) misses.push(`${paced.tooMany} x 429 > ${CLIENT_GOAL.tooMany}`);
  if (paced.ok < paced.requests) misses.push(`${paced.ok}/${paced.requests} done`);
  return misses.length === 0 ? { met: true, text: 'met' } : { met: false, text: `missed (${misses.join(', ')})` };
}

/** The table and the lines around it, as docs/client.md shows them. */
export function renderClientTable(rows: readonly ClientRow[], requests: number, limit: number, windowMs: number, note: string): string {
  const ideal = fastestMs(requests, limit, windowMs);
  const lines = [
    `${requests} requests, one after another, to a limit of ${limit} per ${windowMs / 1000} s per client, each server on its own keys in one real`,
    `redis-server. "Fastest" is the least the limit allows: ${Math.ceil(requests / limit)} batches of ${limit}, the last starting ${seconds(ideal)} s after the first.`,
    'pacedFetch runs with its defaults (jitter up to 250 ms per wait, a tenth of a reset\'s wait at most); "plain fetch" sends the same calls at once and does',
    'not retry, so each 429 is a call that did no work. Goal: 0 429s where the server sends quota fields (1 against a',
    'server that rounds a Unix-second reset down: how the client learns it), at most 1 where it sends only Retry-After.',
    '"Floor" is a loop that retries every 429 after 5 ms: the first moment this server takes each request, the least',
    'time any client can take against it (its 429s are the price); "x floor" is the paced time over it.',
    `Goal (issue #46): paced within ${CLIENT_GOAL.ratio}x the fastest with at most ${CLIENT_GOAL.tooMany} 429 (Retry-After only: the 429s alone).`,
    '',
    '| server | sends | paced: 429s | paced: done | paced: time | x fastest | goal | plain fetch: 429s | plain fetch: done | plain fetch: time | floor: time | floor: x fastest | paced: x floor |',
    '| --- | --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const { id, paced, plain, floor } of rows) {
    const info = SERVER_INFO[id];
    const floorCells = floor ? `${seconds(floor.ms)} s | ${(floor.ms / ideal).toFixed(2)} | ${(paced.ms / floor.ms).toFixed(2)}` : '- | - | -';
    lines.push(
      `| ${info.label} | ${info.sends} | ${paced.tooMany} | ${paced.ok}/${paced.requests} | ${seconds(paced.ms)} s | ${(paced.ms / ideal).toFixed(2)} | ${clientGoal(id, paced, ideal).text} | ${plain.tooMany} | ${plain.ok}/${plain.requests} | ${seconds(plain.ms)} s | ${floorCells} |`,
    );
  }
  lines.push('', note);
  return lines.join('\n');
}

/** Replaces what lies between the markers of `doc` with `body`. */
export function spliceBetweenMarkers(doc: string, body: string): string {
  const a = doc.indexOf(BEGIN);
  const b = doc.indexOf(END);
  if (a < 0 || b < a) throw new Error(`docs/client.md has no ${BEGIN} ... ${END} section to fill`);
  return `${doc.slice(0, a + BEGIN.length)}\n${body}\n${doc.slice(b)}`;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      requests: { type: 'string', default: '60' },
      limit: { type: 'string', default: '10' },
      'window-ms': { type: 'string', default: '2000' },
      only: { type: 'string' },
      'no-docs': { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    console.log(`Usage: pnpm bench:client [--requests 60] [--limit 10] [--window-ms 2000] [--only id,id] [--no-docs]\n\nServers: ${PACING_SERVERS.join(', ')}`);
    return;
  }
  const requests = Number(values.requests);
  const limit = Number(values.limit);
  const windowMs = Number(values['window-ms']);
  const ids = values.only ? (values.only.split(',') as PacingServerId[]) : [...PACING_SERVERS];
  for (const id of ids) if (!PACING_SERVERS.includes(id)) throw new Error(`--only: "${id}" is not one of ${PACING_SERVERS.join(', ')}`);
  const redis = await startRedis();
  const rows: ClientRow[] = [];
  try {
    for (const id of ids) {
      // One server at a time, so no loop's timing shares the cores with another's.
      const run = Math.random().toString(36).slice(2, 8);
      const pacedServer = await startPacingServer(id, redis.port, `cp${run}`, { limit, windowMs });
      const paced = await pacedLoop(pacedServer.url, requests);
      await pacedServer.close();
      const plainServer = await startPacingServer(id, redis.port, `cq${run}`, { limit, windowMs });
      const plain = await plainLoop(plainServer.url, requests);
      await plainServer.close();
      const floorServer = await startPacingServer(id, redis.port, `cr${run}`, { limit, windowMs });
      const floor = await hotRetryLoop(floorServer.url, requests);
      await floorServer.close();
      rows.push({ id, paced, plain, floor });
      console.log(
        `${id}: paced ${paced.tooMany} x 429, ${paced.ok}/${requests} done in ${seconds(paced.ms)} s; plain ${plain.tooMany} x 429, ${plain.ok} done in ${seconds(plain.ms)} s; floor ${seconds(floor.ms)} s (${floor.tooMany} x 429)`,
      );
    }
  } finally {
    await redis.stop();
  }
  const ideal = fastestMs(requests, limit, windowMs);
  const missed = rows.filter((r) => !clientGoal(r.id, r.paced, ideal).met);
  const m = machine();
  const note = `Measured by \`pnpm bench:client\` on ${new Date().toISOString().slice(0, 10)}: ${m.cpu} (${m.cores} cores), Node ${m.node}, loopback.`;
  const table = renderClientTable(rows, requests, limit, windowMs, note);
  console.log(`\n${table}`);
  console.log(`\ngoal (${CLIENT_GOAL.ratio}x, <= ${CLIENT_GOAL.tooMany} x 429): met against ${rows.length - missed.length} of ${rows.length} servers${missed.length ? `; missed: ${missed.map((r) => r.id).join(', ')}` : ''}`);
  if (!values['no-docs'] && !values.only) {
    const path = join(REPO_DIR, 'docs', 'client.md');
    writeFileSync(path, spliceBetweenMarkers(readFileSync(path, 'utf8'), table));
    console.log(`\nwrote ${path}`);
  }
}

if (require.main === module) {
  main().then(
    () => process.exit(0),
    (error) => {
      console.error(error);
      process.exit(1);
    },
  );
}
