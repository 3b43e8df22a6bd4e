// The shared runtime-limits suite (issue #45) on express: limit functions of the request, their ceiling, a bad answer.
import { Agent } from 'node:http';
import { getStatus, listenOnLoopback, runRuntimeLimitSuite, runGeneratedRuntimeLimitSuite } from '@floodgate/adapter-suites';
import { MemoryStore } from '@floodgate/core';
import express from 'express';
import { rateLimit } from '../src';
import { expressHarness } from './harness';

runRuntimeLimitSuite(expressHarness(5));
runGeneratedRuntimeLimitSuite(expressHarness(5));

describe('express: overrides from an admin route', () => {
  it('limiter.override on the middleware changes the next decision of that caller on that route', async () => {
    const limiter = rateLimit({ store: new MemoryStore(), limit: 100, overrides: true });
    const app = express();
    app.use(limiter);
    app.get('/r', (_req, res) => void res.send('ok'));
    const running = await listenOnLoopback(app, []);
    const agent = new Agent({ keepAlive: true });
    try {
      expect(await getStatus(agent, running.port, '/r')).toBe(200);
      await limiter.override({ ip: '127.0.0.1', route: 'GET /r' }, 0, { ttlMs: '1h', reason: 'test' });
      expect(await getStatus(agent, running.port, '/r')).toBe(429);
      expect((await limiter.listOverrides()).map((o) => o.scope)).toEqual(['GET /r']);
      await limiter.clearOverride({ ip: '127.0.0.1', route: 'GET /r' });
      expect(await getStatus(agent, running.port, '/r')).toBe(200);
    } finally {
      agent.destroy();
      await running.close();
    }
  });
});
