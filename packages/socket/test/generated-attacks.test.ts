// Generated attacks on the ws limiter (fast-check): hostile handshake headers, invented API keys, message floods and connect/disconnect churn never buy more than one identity's budget nor more open connections than its limit.
import fc from 'fast-check';
import type WebSocket from 'ws';
import { closeWs, eachStore, openWs, startWs, until } from './harness';

jest.setTimeout(120_000);

const LIMIT = 12;
const OPEN = 2;

/** Printable header values a client may send: spoofed proxies, made-up keys, junk. */
const headerValue = fc.oneof(
  fc.ipV4(),
  fc.ipV6(),
  fc.stringMatching(/^[ -~]{0,40}$/).map((s) => s.trim()),
  fc.constantFrom('127.0.0.1, 10.0.0.1', 'unknown', '::ffff:127.0.0.1', '0.0.0.0/0'),
);
const headers = fc.record(
  {
    'x-forwarded-for': headerValue,
    forwarded: headerValue,
    'x-real-ip': headerValue,
    'x-api-key': fc.stringMatching(/^[A-Za-z0-9_-]{1,64}$/),
    authorization: fc.stringMatching(/^[A-Za-z0-9_-]{1,64}$/).map((k) => `Bearer ${k}`),
  },
  { requiredKeys: [] },
);
const step = fc.oneof(
  fc.record({ op: fc.constant('connect' as const), headers }),
  fc.record({ op: fc.constant('send' as const), on: fc.nat(), count: fc.integer({ min: 1, max: 15 }) }),
  fc.record({ op: fc.constant('close' as const), on: fc.nat() }),
);

eachStore((withStore) => {
  test('no sequence of handshakes, messages and closes gets more than the limit through, or more than OPEN connections open at once', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 25 }), async (steps) => {
        const r = await startWs(withStore({ messages: { limit: LIMIT, windowMs: '1h' }, perConnection: { limit: 5, windowMs: '1h' }, connections: { limit: OPEN }, onLimit: 'error' }));
        const open: WebSocket[] = [];
        let accepted = 0;
        let maxOpen = 0;
        let sent = 0;
        let answered = 0;
        try {
          for (const s of steps) {
            if (s.op === 'connect') {
              const result = await openWs(r.url, s.headers as Record<string, string>);
              if (result.ws) {
                accepted++;
                open.push(result.ws);
                result.ws.on('message', () => answered++);
                maxOpen = Math.max(maxOpen, accepted - r.counts.closed);
              } else expect(result.status).toBe(429);
            } else if (s.op === 'send' && open.length > 0) {
              const ws = open[s.on % open.length];
              for (let i = 0; i < s.count; i++) ws.send('x');
              sent += s.count;
              // Every message is answered (ok or refused) before the next step: the counts are settled.
              await until(() => answered === sent, 'every message answered');
            } else if (s.op === 'close' && open.length > 0) {
              const [ws] = open.splice(s.on % open.length, 1);
              const closedBefore = r.counts.closed;
              await closeWs(ws);
              await until(() => r.counts.closed > closedBefore, 'the server to see the close');
            }
          }
          expect(maxOpen).toBeLessThanOrEqual(OPEN);
          expect(r.counts.admitted).toBeLessThanOrEqual(LIMIT);
          expect(r.counts.admitted + r.counts.limited.filter((e) => e.kind === 'message').length).toBe(sent);
        } finally {
          for (const ws of open) ws.terminate();
          await r.stop();
        }
      }),
      { numRuns: 25 },
    );
  });
});
