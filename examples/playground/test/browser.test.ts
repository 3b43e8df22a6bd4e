// The playground in real Chromium: the boundary preset, the live panel's headers, the clients, in-flight, override, shedding and race panels, read from the page.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { pollUntil, startRedis, type RedisServer } from '@floodgate/testing';
import { startPlayground, type Playground } from '../src/server';

const CHROMIUM = '/usr/bin/chromium';
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
/** Gitignored; CI keeps it as an artifact. */
const ARTIFACTS = join(__dirname, '..', '..', '..', '.artifacts');

jest.setTimeout(60_000);

describe('playground in Chromium', () => {
  let redis: RedisServer;
  let pg: Playground;
  let profile: string;
  let context: BrowserContext;
  let page: Page;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    redis = await startRedis();
    pg = await startPlayground({ port: 0, redisUrl: redis.url, log: () => {} });
    profile = mkdtempSync(join(tmpdir(), 'pg-chromium-'));
    // A persistent context on a fresh directory: Chromium gets exactly this --user-data-dir.
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: ARGS,
      viewport: { width: 1320, height: 900 },
      timeout: 30_000,
    });
    page = context.pages()[0] ?? (await context.newPage());
    page.on('pageerror', (error) => pageErrors.push(error.message));
    page.on('console', (message) => {
      // Chromium logs every non-2xx fetch; the 429s and the shedding panel's 503s are the point, not a fault.
      if (message.type() === 'error' && !/status of (429|503)/.test(message.text())) pageErrors.push(message.text());
    });
    await page.goto(pg.url);
  });

  afterAll(async () => {
    await context?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
    await pg?.close();
    await redis?.stop();
  });

  const row = (algorithm: string) => page.locator(`.row[data-algorithm="${algorithm}"]`);

  it('boundary preset: fixed window admits 2x the limit in one window-long span, the log exactly the limit', async () => {
    await page.selectOption('#speed', '16');
    await page.fill('#limit', '10');
    await page.fill('#window', '10');
    await page.locator('button[data-preset="boundary"]').click();
    await page.locator('#app[data-preset="boundary"][data-run-state="running"], #app[data-preset="boundary"][data-run-state="done"]').waitFor();
    await page.locator('#app[data-run-state="done"]').waitFor({ timeout: 30_000 });

    expect(await page.getAttribute('#app', 'data-limit')).toBe('10');
    expect(await page.getAttribute('#app', 'data-requests')).toBe('20');
    expect(await row('fixed-window').getAttribute('data-max-in-window')).toBe('20');
    expect(await row('fixed-window').locator('.max-value').textContent()).toBe('20');
    expect(await row('fixed-window').locator('.ratio').textContent()).toContain('2.0× the limit');
    expect(await row('sliding-window-log').getAttribute('data-max-in-window')).toBe('10');
    expect(await row('sliding-window-log').locator('.max-value').textContent()).toBe('10');
    expect(await row('sliding-window-log').getAttribute('data-denied')).toBe('10');
    // The timeline is framed on the window edge: 5 s to 15 s, the edge (10 s) in the middle.
    expect(await page.locator('.axis span').allTextContents()).toEqual(['5 s', '7.5 s', '10 s', '12.5 s', '15 s']);
    // Every request is drawn on every row: 20 ticks, admitted plus denied.
    for (const algorithm of ['fixed-window', 'sliding-window-log', 'sliding-window-counter', 'token-bucket', 'gcra']) {
      expect(await row(algorithm).locator('.tick').count()).toBe(20);
    }
  });

  it('shows the library option error for a bad setting, and recovers', async () => {
    await page.selectOption('#speed', '0');
    await page.fill('#limit', '2.5');
    await page.locator('#limit').dispatchEvent('change');
    await page.locator('#app[data-run-state="error"]').waitFor();
    expect(await page.locator('#sim-error').textContent()).toMatch(/Invalid option `options.limit`: got 2.5.*FG_INVALID_OPTION/);
    // The last good run's rows would read as results for 2.5: they are gone.
    expect(await page.locator('.row').count()).toBe(0);
    await page.fill('#limit', '10');
    await page.locator('#limit').dispatchEvent('change');
    await page.locator('#app[data-run-state="done"]').waitFor();
    expect(await page.locator('#sim-error').isHidden()).toBe(true);
    expect(await row('fixed-window').getAttribute('data-max-in-window')).toBe('20');
  });

  it('burst preset: a burst at one instant carries its count', async () => {
    await page.selectOption('#speed', '0');
    await page.locator('button[data-preset="burst"]').click();
    await page.locator('#app[data-preset="burst"][data-run-state="done"]').waitFor();
    const denied = Number(await row('sliding-window-log').getAttribute('data-denied'));
    const counts = await row('sliding-window-log').locator('.run-count.no').allTextContents();
    expect(counts).toHaveLength(1);
    expect(Number(counts[0])).toBeGreaterThanOrEqual(10);
    expect(Number(counts[0])).toBeLessThanOrEqual(denied);
  });

  it('live panel: each adapter answers with Floodgate headers, then 429 with Retry-After', async () => {
    for (const fw of ['express', 'fastify', 'koa']) {
      const card = page.locator(`.card[data-framework="${fw}"]`);
      await card.locator('button[data-send="6"]').click();
      await page.locator(`.card[data-framework="${fw}"][data-sent="6"]`).waitFor();
      expect(await card.getAttribute('data-last-status')).toBe('429');
      expect(await card.locator('.chip').allTextContents()).toEqual(['200', '200', '200', '200', '200', '429']);
      expect(await card.locator('[data-header="ratelimit-limit"] dd').textContent()).toBe('5');
      expect(await card.locator('[data-header="ratelimit-remaining"] dd').textContent()).toBe('0');
      expect(Number(await card.locator('[data-header="retry-after"] dd').textContent())).toBeGreaterThanOrEqual(1);
    }
  });

  it('clients panel: pacing wins: the well-behaved client gets no 429 and does more work; the hot loop locks itself out', async () => {
    await page.locator('#clients[data-clients-state="ready"]').waitFor();
    await page.selectOption('#clients-seconds', '10');
    await page.locator('#clients-run').click();
    await page.locator('#clients[data-clients-state="done"]').waitFor({ timeout: 40_000 });
    const stats = async (name: string) => {
      const card = page.locator(`.client-card[data-client="${name}"]`);
      return {
        sent: Number(await card.getAttribute('data-sent')),
        tooMany: Number(await card.getAttribute('data-too-many')),
        done: Number(await card.getAttribute('data-done')),
      };
    };
    const polite = await stats('well-behaved');
    const hot = await stats('hot-loop');
    expect(polite.tooMany).toBe(0);
    expect(polite.sent).toBe(polite.done);
    expect(hot.tooMany).toBeGreaterThan(polite.sent);
    expect(hot.sent).toBe(hot.done + hot.tooMany);
    // 10 s at 5 per 2 s: the hot loop takes a window's 5 at once, is refused and locked out for 4 s,
    // takes 5 more, is locked out for 8 s: two rounds. A round whose requests straddle a fixed window's
    // edge (a loaded machine: a clean-clone run at load 25 saw 15) takes both windows' 5, so the bound
    // that holds at any speed is 2 rounds x 2 windows. pacedFetch is never refused, never locked out.
    expect(hot.done).toBeLessThanOrEqual(2 * 2 * 5);
    expect(polite.done).toBeGreaterThan(hot.done);
    expect(await page.locator('#clients-why').textContent()).toMatch(/^Why pacing wins: /);
    expect(await page.locator('.client-card[data-client="hot-loop"] [data-stat="too-many"] b').textContent()).toBe(String(hot.tooMany));
  });

  it('in-flight panel: 10 slow requests from one caller, 5 held and 5 refused with qu="concurrent-requests"; slots come back on abort and on finish', async () => {
    const panel = page.locator('#inflight');
    await page.locator('#inflight[data-inflight-state="ready"]').waitFor();
    // The longest hold the page offers: the first five must still be held when the two sent after the
    // aborts arrive (4 s was not enough at load 25 on 2 cores, with a screenshot between).
    await page.selectOption('#inflight-hold', '8000');
    await page.locator('#inflight-fire').click();
    // The 429s come back at once; the five admitted ones are held by the handler.
    await page.locator('#inflight[data-refused="5"][data-pending="5"]').waitFor({ timeout: 10_000 });
    await page.locator('#inflight[data-in-handler="5"]').waitFor();
    expect(await panel.getAttribute('data-max-in-handler')).toBe('5');
    mkdirSync(ARTIFACTS, { recursive: true });
    await panel.screenshot({ path: join(ARTIFACTS, 'playground-inflight.png') });
    expect(await panel.locator('.req[data-status="refused"]').count()).toBe(5);
    expect(await panel.locator('[data-header="ratelimit-policy"] dd').textContent()).toContain('"concurrency";q=5;qu="concurrent-requests"');
    expect(await panel.locator('[data-header="ratelimit"] dd').textContent()).toContain('"concurrency";r=0');
    expect(Number(await panel.locator('[data-header="retry-after"] dd').textContent())).toBeGreaterThanOrEqual(1);
    // Two aborted: the handler sees them go, and their slots admit two new requests at once.
    const pending = panel.locator('.req[data-status="pending"] .chip-abort');
    await pending.first().click();
    await pending.first().click();
    await page.locator('#inflight[data-aborted="2"][data-in-handler="3"]').waitFor();
    await page.locator('#inflight-fire-one').click();
    await page.locator('#inflight-fire-one').click();
    await page.locator('#inflight[data-pending="5"][data-in-handler="5"]').waitFor();
    expect(await panel.getAttribute('data-refused')).toBe('5');
    // A sixth is refused again; then all finish and every slot is back.
    await page.locator('#inflight-fire-one').click();
    await page.locator('#inflight[data-refused="6"]').waitFor();
    await page.locator('#inflight[data-pending="0"][data-in-handler="0"]').waitFor({ timeout: 30_000 });
    expect(await panel.getAttribute('data-finished')).toBe('5');
    expect(await panel.getAttribute('data-max-in-handler')).toBe('5');
    expect(await panel.locator('.slot.used').count()).toBe(0);
  });

  it('override panel: an override set from the page is the limit in force on the next request (headers and 429), 0 refuses, clearing restores the route limit', async () => {
    const panel = page.locator('#override');
    await page.locator('#override[data-override-state="ready"]').waitFor();
    const send = async (n: number) => {
      await page.locator('#override-send').click();
      await page.locator(`#override[data-sent="${n}"]`).waitFor();
      return {
        status: await panel.getAttribute('data-last-status'),
        limit: await panel.locator('[data-header="ratelimit-limit"] dd').textContent(),
        remaining: await panel.locator('[data-header="ratelimit-remaining"] dd').textContent(),
      };
    };
    expect(await send(1)).toEqual({ status: '200', limit: '10', remaining: '9' });

    // 3 for 60 s: one used already, so two more are admitted, then 429.
    await page.selectOption('#override-limit', '3');
    await page.selectOption('#override-ttl', '60000');
    await page.locator('#override-set').click();
    await page.locator('#override[data-override-state="set"][data-override="3"]').waitFor();
    expect(await page.locator('#override-in-force').textContent()).toMatch(/^Override in force for this caller: limit 3/);
    expect(await send(2)).toEqual({ status: '200', limit: '3', remaining: '1' });
    expect(await send(3)).toEqual({ status: '200', limit: '3', remaining: '0' });
    expect(await send(4)).toEqual({ status: '429', limit: '3', remaining: '0' });
    expect(Number(await panel.locator('[data-header="retry-after"] dd').textContent())).toBeGreaterThanOrEqual(1);
    mkdirSync(ARTIFACTS, { recursive: true });
    await panel.screenshot({ path: join(ARTIFACTS, 'playground-override.png') });

    // Cleared: the route's 10 again, the 3 used kept.
    await page.locator('#override-clear').click();
    await page.locator('#override[data-override-state="cleared"][data-override="none"]').waitFor();
    expect(await send(5)).toEqual({ status: '200', limit: '10', remaining: '6' });

    // 0 refuses every request until cleared.
    await page.selectOption('#override-limit', '0');
    await page.locator('#override-set').click();
    await page.locator('#override[data-override-state="set"][data-override="0"]').waitFor();
    expect((await send(6)).status).toBe('429');
    expect(await page.locator('#override .chip').allTextContents()).toEqual(['200', '200', '200', '429', '200', '429']);
    await page.locator('#override-clear').click();
    await page.locator('#override[data-override-state="cleared"]').waitFor();
    expect(await send(7)).toEqual({ status: '200', limit: '10', remaining: '5' });
    expect(await page.locator('#override .error').isHidden()).toBe(true);
  });

  it('shedding panel: as the load rises background is shed first, then default; critical never; both come back once calm', async () => {
    const panel = page.locator('#shedding');
    await page.locator('#shedding[data-shedding-state="ready"]').waitFor();
    await page.locator('#shedding-run').click();
    await page.locator('#shedding[data-shedding-state="done"]').waitFor({ timeout: 40_000 });
    const row = async (priority: string) => {
      const r = panel.locator(`.shed-row[data-priority="${priority}"]`);
      const first = await r.getAttribute('data-first-shed-ms');
      return { served: Number(await r.getAttribute('data-served')), shed: Number(await r.getAttribute('data-shed')), firstShedMs: first === null ? undefined : Number(first) };
    };
    const background = await row('background');
    const def = await row('default');
    const critical = await row('critical');
    mkdirSync(ARTIFACTS, { recursive: true });
    await panel.screenshot({ path: join(ARTIFACTS, 'playground-shedding.png') });
    console.log(`shedding panel: background ${JSON.stringify(background)}, default ${JSON.stringify(def)}, critical ${JSON.stringify(critical)}`);
    expect(critical.shed).toBe(0);
    expect(critical.served).toBeGreaterThan(0);
    expect(background.shed).toBeGreaterThan(0);
    expect(def.shed).toBeGreaterThan(0);
    expect(background.firstShedMs!).toBeLessThan(def.firstShedMs!);
    expect(await panel.getAttribute('data-max-level')).toBe('2');
    // Calm (the run is over) brings both back, one level per 3 calm samples: background is served again.
    const background200 = async () => ((await fetch(new URL('/api/shed/background', pg.url))).status === 200 ? true : undefined);
    await pollUntil(background200, { timeoutMs: 15_000, intervalMs: 200, what: 'background served again' });
  });

  it('race panel: the naive limiter over-admits, Floodgate admits exactly the limit', async () => {
    await page.locator('#race[data-race-state="ready"]').waitFor();
    await page.fill('#race-requests', '200');
    await page.fill('#race-limit', '20');
    await page.locator('#race-run').click();
    await page.locator('#race[data-race-state="done"]').waitFor({ timeout: 30_000 });
    const naive = Number(await page.getAttribute('[data-naive-admitted]', 'data-naive-admitted'));
    const floodgate = Number(await page.getAttribute('[data-floodgate-admitted]', 'data-floodgate-admitted'));
    expect(naive).toBeGreaterThan(20);
    expect(floodgate).toBe(20);
  });

  it('saves a screenshot of the boundary run with every panel filled', async () => {
    await page.selectOption('#speed', '0');
    await page.locator('button[data-preset="boundary"]').click();
    await page.locator('#app[data-run-state="done"]').waitFor();
    mkdirSync(ARTIFACTS, { recursive: true });
    const path = join(ARTIFACTS, 'playground.png');
    const png = await page.screenshot({ path, fullPage: true });
    expect(png.length).toBeGreaterThan(10_000);
    expect(pageErrors).toEqual([]);
  });
});

describe('playground in Chromium without Redis', () => {
  it('the race panel says how to enable it', async () => {
    const pg = await startPlayground({ port: 0, log: () => {} });
    const profile = mkdtempSync(join(tmpdir(), 'pg-chromium-'));
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: ARGS,
      timeout: 30_000,
    });
    try {
      const page = context.pages()[0] ?? (await context.newPage());
      await page.goto(pg.url);
      await page.locator('#race[data-race-state="disabled"]').waitFor();
      const text = await page.locator('#race-body').textContent();
      expect(text).toContain('No Redis configured');
      expect(text).toContain('REDIS_URL=redis://127.0.0.1:6379 pnpm demo');
    } finally {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
      await pg.close();
    }
  });
});
