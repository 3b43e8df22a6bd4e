// The Express harness every shared adapter suite drives (@floodgate/adapter-suites): Express 4 or 5, app-level or per-route.
import { askedDelay, askedStatus, listenOnLoopback, routeLimiters, settleAsked, type AdapterHarness, type AppSpec, type RunningApp } from '@floodgate/adapter-suites';
import express5, { type NextFunction, type Request, type Response } from 'express';
import { rateLimit } from '../src';

// Express 4 is installed under an alias; both versions share @types/express's surface used here.
const express4: typeof express5 = require('express4');

/** Express has no hook on the way out: stamp its send path itself. res.send (res.json and res.status().send() go through it) marks what Express sent; a direct write skips it. */
function markSendPath(statuses: number[]) {
  return (_req: Request, res: Response, next: NextFunction) => {
    res.setHeader('X-Before', 'yes');
    const send = res.send.bind(res);
    res.send = ((body?: unknown) => {
      res.setHeader('X-After', 'yes');
      return send(body);
    }) as typeof res.send;
    res.on('finish', () => statuses.push(res.statusCode));
    next();
  };
}

export function expressHarness(version: 4 | 5): AdapterHarness {
  const express = version === 4 ? express4 : express5;
  return {
    name: `express ${version}`,
    mountings: ['app-level', 'per-route'],
    async start(spec: AppSpec): Promise<RunningApp> {
      const statuses: number[] = [];
      const app = express();
      // Express's own setting decides whether X-Forwarded-For is read: trust a proxy on loopback, or none.
      app.set('trust proxy', spec.trustProxy === 'all' ? true : spec.trustProxy ? 'loopback' : false);
      if (spec.sendPathMarkers) app.use(markSendPath(statuses));
      // Before the limiter, so that extraKeys can read req.body; Express's own error handler answers bad JSON 400.
      if (spec.jsonBody) app.use(express.json());
      const limiter = (spec.mounting ?? 'app-level') === 'app-level' ? rateLimit({ ...spec.options, ...spec.groupOptions }) : undefined;
      if (limiter) app.use(limiter);
      const router = express.Router();
      for (const route of spec.routes) {
        const answer = (req: Request, res: Response, extra?: object) => {
          res.status(askedStatus(spec, req.headers)).json({ route: route.path, remaining: req.rateLimit?.remaining ?? null, reason: req.rateLimit?.reason ?? null, ...extra });
        };
        // Only with delayFromHeader (or settleFromHeader) does the route wait: the same-turn suite needs an answer at once.
        const handler = spec.settleFromHeader
          ? (req: Request, res: Response) => void settleAsked(spec, req.headers, req.floodgate).then((extra) => answer(req, res, extra))
          : spec.delayFromHeader
            ? (req: Request, res: Response) => void askedDelay(spec, req.headers).then(() => answer(req, res))
            : answer;
        router[route.method === 'GET' ? 'get' : route.method === 'ALL' ? 'all' : 'post'](route.path, ...routeLimiters(spec, route, limiter, rateLimit), handler);
      }
      if (spec.usage) {
        if (!limiter) throw new Error('express harness: a usage route needs the app-level mounting');
        app.get(spec.usage.path, limiter.usageRoute([...spec.usage.routes]));
      }
      app.use(router);
      return listenOnLoopback(app, statuses);
    },
  };
}
