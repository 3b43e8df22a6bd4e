// trustProxyOf (@floodgate/core/http): the one mapping from a framework's trust-proxy setting to core's 'none' | 'some' | 'all'.
import { trustProxyOf } from '../src/http';

it('maps every adapter framework setting as the adapters did each on its own', () => {
  // Express `trust proxy`, Fastify `trustProxy`: true every hop; undefined, false, 0 none; a count, list or function some.
  expect([true, undefined, false, 0, 1, 'loopback', ['10.0.0.1'], () => true].map(trustProxyOf)).toEqual(['all', 'none', 'none', 'none', 'some', 'some', 'some', 'some']);
  // Koa: app.proxy ? app.maxIpsCount || true : false.
  const koa = (proxy: boolean, maxIpsCount: number) => trustProxyOf(proxy ? maxIpsCount || true : false);
  expect([koa(false, 0), koa(true, 0), koa(true, 1)]).toEqual(['none', 'all', 'some']);
  // Hono: its list, or true when an entry holds every address; an empty list trusts none.
  expect([trustProxyOf([]), trustProxyOf(['10.0.0.0/8'])]).toEqual(['none', 'some']);
});
