// Failure modes through @floodgate/express: fail-open, fail-closed and local routes on one app while Redis is killed, paused and restarted.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type Request, type Response } from 'express';
import { runFaultScenarios, type FaultAppSpec } from '../../core/test/failure-http';
import { rateLimit } from '../src';

runFaultScenarios('express 5 (app-level, per-route overrides)', async (spec: FaultAppSpec) => {
  const app = express();
  const limiter = rateLimit(spec.options);
  app.use(limiter);
  const router = express.Router();
  for (const route of spec.routes) {
    const method = route.method === 'GET' ? 'get' : 'post';
    router[method](route.path, limiter.route(route.options), (req: Request, res: Response) => {
      res.json({ reason: req.rateLimit?.reason ?? null });
    });
  }
  app.use(router);
  const server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
});
