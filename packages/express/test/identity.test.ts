// Identity through Express 4 and 5: trust proxy, /64 rotation, IPv4-mapped addresses, cheap rejections in Redis; and the attack suite.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import express5 from 'express';
import { runAttackSuite } from '../../core/test/attack-http';
import { runIdentitySuite, type IdentityHarness } from '../../core/test/identity-http';
import { rateLimit } from '../src';

const express4: typeof express5 = require('express4');

for (const [name, express] of [['express 5', express5], ['express 4', express4]] as const) {
  const harness: IdentityHarness = {
    name,
    // The flood tests exercise core, not routing: once per adapter keeps this file short.
    floodTests: name === 'express 5',
    async start(options, trustProxy) {
      const app = express();
      // Express's own setting decides whether X-Forwarded-For is read: trust a proxy on loopback, or none.
      app.set('trust proxy', trustProxy ? 'loopback' : false);
      app.use(rateLimit(options));
      app.get('/r', (_req, res) => void res.send('ok'));
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
    },
  };
  runIdentitySuite(harness);
  runAttackSuite(harness);
}
