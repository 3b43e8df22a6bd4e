// The graphql-api example's one command on a fresh machine: no REDIS_URL, its own redis-server; requested 10 / actual 3, a dry run, the per-operation maximum, THROTTLED at the limit; SIGTERM stops it all.
import { join } from 'node:path';
import { isProcessAlive, startExample } from '@floodgate/testing';
import { CATALOGUE_SIZE, LIMIT, MAX_OPERATION_COST } from '../src/app';

jest.setTimeout(90_000);

interface Body {
  data?: unknown;
  errors?: { extensions?: { code?: string; retryAfterMs?: number } }[];
  extensions?: { cost?: { requestedQueryCost: number; actualQueryCost: number | null; throttleStatus: { maximumAvailable: number; currentlyAvailable: number } | null } };
}

async function gql(url: string, query: string, headers: Record<string, string> = {}): Promise<{ status: number; body: Body }> {
  const res = await fetch(`${url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json', ...headers }, body: JSON.stringify({ query }) });
  return { status: res.status, body: (await res.json()) as Body };
}

it('starts its own redis-server, charges the actual cost, refuses over the maximum and at the limit, and SIGTERM stops it and its redis-server', async () => {
  const { run, url, redisPid } = await startExample(join(__dirname, '..', '..', '..'), '@floodgate/example-graphql-api', 'graphql-api');
  try {
    expect(run.tree()).toContain(redisPid);
    const first = await gql(url, '{ products(first: 10) { name } }');
    expect(first.body.extensions?.cost).toMatchObject({ requestedQueryCost: 10, actualQueryCost: CATALOGUE_SIZE, throttleStatus: { maximumAvailable: LIMIT, currentlyAvailable: LIMIT - CATALOGUE_SIZE } });
    const dry = await gql(url, 'mutation { restock }', { 'x-floodgate-dry-run': '1' });
    expect(dry.body).toMatchObject({ data: null, extensions: { cost: { requestedQueryCost: 10, actualQueryCost: null } } });
    const over = await gql(url, `{ products(first: ${MAX_OPERATION_COST + 1}) { name } }`);
    expect(over.body.errors?.[0].extensions?.code).toBe('MAX_COST_EXCEEDED');
    // Each restock costs 10: 9 fit in the 97 left, the 10th is throttled.
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) statuses.push((await gql(url, 'mutation { restock }')).status);
    expect(statuses).toEqual([...Array(9).fill(200), 429]);
    expect(await run.terminate('SIGTERM')).toEqual([]);
    expect(isProcessAlive(redisPid)).toBe(false);
  } finally {
    await run.terminate('SIGKILL', 2_000);
  }
});
