// The shared behaviour table through @floodgate/express: Express 4 and 5, app-level and per-route, memory and Redis.
import { createServer } from 'node:http';
import type { Express, Request, Response } from 'express';
import express5 from 'express';
import { parseList } from 'structured-headers';
import request from 'supertest';
import { behaviourStores, runBehaviourTable, type AppSpec, type Harness, type TestApp } from '../../core/test/http-behaviour';
import { rateLimit } from '../src';

// Express 4 is installed under an alias; both versions share @types/express's surface used here.
const express4: typeof express5 = require('express4');

type Mode = 'app-level' | 'per-route';

function build(express: typeof express5, mode: Mode) {
  return async (spec: AppSpec): Promise<TestApp> => {
    const app: Express = express();
    const router = express.Router();
    const limiter = mode === 'app-level' ? rateLimit(spec.options) : undefined;
    if (limiter) app.use(limiter);
    for (const route of spec.routes) {
      const handler = (req: Request, res: Response) => {
        res.json({ route: route.path, remaining: req.rateLimit?.remaining ?? null, reason: req.rateLimit?.reason ?? null });
      };
      const method = route.method === 'GET' ? 'get' : 'post';
      if (limiter) {
        if (route.options === undefined) router[method](route.path, handler);
        else router[method](route.path, limiter.route(route.options), handler);
      } else if (route.options === false) {
        router[method](route.path, handler);
      } else {
        router[method](route.path, rateLimit({ ...spec.options, ...route.options }), handler);
      }
    }
    app.use(router);
    // One listening server per app: supertest would otherwise bind a new one for every request.
    const server = createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const agent = request(server);
    return {
      async request(method, url, headers = {}) {
        const call = method === 'GET' ? agent.get(url) : method === 'POST' ? agent.post(url) : agent.head(url);
        const res = await call.set(headers);
        return { status: res.status, headers: res.headers as Record<string, string>, body: res.text ?? '' };
      },
      close: () => new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
    };
  };
}

const stores = behaviourStores();

for (const [version, express] of [['4', express4], ['5', express5]] as const) {
  for (const mode of ['app-level', 'per-route'] as const) {
    for (const [storeName, store] of Object.entries(stores)) {
      const harness: Harness = {
        name: `express ${version} (${mode}) on ${storeName}`,
        build: build(express, mode),
        store,
        limitsUnmatched: mode === 'app-level',
        parseList: (value) => parseList(value) as unknown as [unknown, Map<string, unknown>][],
      };
      runBehaviourTable(harness);
    }
  }
}
