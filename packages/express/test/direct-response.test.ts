// Express: the blocked caller's 429 is written straight to Node (not through res.send), with headers set by earlier middleware.
import type { AddressInfo } from 'node:net';
import express from 'express';
import { runDirectResponseSuite } from '../../core/test/direct-response';
import { rateLimit } from '../src';

runDirectResponseSuite({
  name: 'express 5',
  async start(options) {
    const statuses: number[] = [];
    const limiter = rateLimit(options);
    const app = express();
    app.use((_req, res, next) => {
      res.setHeader('X-Before', 'yes');
      // Express has no hook on the way out, so stamp its send path itself: res.send (res.json and
      // res.status().send() go through it) marks what Express sent; a direct write skips it.
      const send = res.send.bind(res);
      res.send = ((body?: unknown) => {
        res.setHeader('X-After', 'yes');
        return send(body);
      }) as typeof res.send;
      res.on('finish', () => statuses.push(res.statusCode));
      next();
    });
    app.use(limiter);
    app.get('/r', (_req, res) => void res.send('ok'));
    const server = app.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => server.once('listening', resolve));
    return {
      port: (server.address() as AddressInfo).port,
      statuses,
      close: () => new Promise<void>((resolve) => server.close(() => resolve())),
    };
  },
});
