// Shared by every consumer script: real HTTP requests against a listening app, and a RedisStore round trip.
'use strict';

/** GETs `path` `times` times on `base` and records what a client sees; then closes the app. */
async function probe(base, path, close, times = 3) {
  const seen = [];
  try {
    for (let i = 0; i < times; i++) {
      const res = await fetch(new URL(path, base));
      const body = await res.text();
      seen.push({
        status: res.status,
        limit: res.headers.get('ratelimit-limit'),
        remaining: res.headers.get('ratelimit-remaining'),
        reset: res.headers.get('ratelimit-reset'),
        retryAfter: res.headers.get('retry-after'),
        body,
      });
    }
  } finally {
    await close();
  }
  return seen;
}

/** Listens on a free loopback port with a Node http.Server-returning `listen(port, host, cb)`. */
function listenOn(listen) {
  return new Promise((resolve, reject) => {
    const server = listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      resolve({
        base: `http://127.0.0.1:${port}`,
        close: () => new Promise((done) => server.close(() => done())),
      });
    });
    server.on('error', reject);
  });
}

/** Four decisions of a limit of 3 through RedisStore on a real Redis: proves the Lua shipped in dist. */
async function redisRoundTrip(core, Redis, url) {
  const client = new Redis(url, { autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 1 });
  client.on('error', () => undefined);
  try {
    const limiter = core.createLimiter({
      limit: 3,
      windowMs: 60_000,
      // 30 s, not the default 100 ms: this proves the shipped Lua, not a deadline, and a cold script load on a busy machine passes 100 ms.
      store: new core.RedisStore({ client, timeoutMs: 30_000 }),
      prefix: `pk${Math.random().toString(36).slice(2, 10)}`,
    });
    const decisions = [];
    for (let i = 0; i < 4; i++) {
      const d = await limiter.consume('packaging-test');
      decisions.push({ allowed: d.allowed, remaining: d.remaining, reason: d.reason });
    }
    return decisions;
  } finally {
    client.disconnect();
  }
}

/** Prints the consumer's findings as the last stdout line, for the test to parse. */
function report(result) {
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

module.exports = { probe, listenOn, redisRoundTrip, report };
