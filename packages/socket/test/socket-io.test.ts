// socketIoLimiter on a real Socket.IO server with real socket.io-client clients, on the memory store and a real redis-server: cost per event name, acks and error events, connections as leases.
import type { Socket as ClientSocket } from 'socket.io-client';
import { eachStore, openIo, startIo, until, type Running } from './harness';

let running: Running[] = [];
let clients: ClientSocket[] = [];
afterEach(async () => {
  for (const s of clients) s.close();
  await Promise.all(running.map((r) => r.stop()));
  running = [];
  clients = [];
});


async function open(url: string, headers?: Record<string, string>): Promise<ClientSocket> {
  const result = await openIo(url, headers);
  if (!result.socket) throw new Error(`refused: ${JSON.stringify(result.refused)}`);
  clients.push(result.socket);
  return result.socket;
}

eachStore((withStore) => {
  async function server(options: Parameters<typeof startIo>[0]): Promise<Running> {
    const r = await startIo(withStore(options));
    running.push(r);
    return r;
  }

  test('one identity over 3 connections emitting 500 events at 50 per 10 s: exactly 50 acked ok, 450 acked with the retry time', async () => {
    const r = await server({ messages: { limit: 50, windowMs: '10s', algorithm: 'sliding-window-log' }, onLimit: 'error', maxPending: 500 });
    const sockets = [await open(r.url), await open(r.url), await open(r.url)];
    const answers = await Promise.all(Array.from({ length: 500 }, (_, i) => sockets[i % 3].emitWithAck('chat', i)));
    expect(answers.filter((a) => a.ok === 'chat')).toHaveLength(50);
    const refused = answers.filter((a) => a.type === 'rate-limited');
    expect(refused).toHaveLength(450);
    expect(refused.every((a) => a.limit === 'identity' && a.retryAfterMs > 0)).toBe(true);
    expect(r.counts.admitted).toBe(50);
  });

  test('a cost per event name: an upload costs 10 of the same budget', async () => {
    const r = await server({ messages: { limit: 25, windowMs: '1m' }, cost: { upload: 10 }, onLimit: 'error' });
    const s = await open(r.url);
    const results = [];
    for (let i = 0; i < 3; i++) results.push(await s.emitWithAck('upload', i));
    expect(results.map((a) => a.ok ?? a.type)).toEqual(['upload', 'upload', 'rate-limited']);
    // 20 of 25 spent: five chat events still fit, the sixth does not.
    const chats = [];
    for (let i = 0; i < 6; i++) chats.push(await s.emitWithAck('chat', i));
    expect(chats.filter((a) => a.ok === 'chat')).toHaveLength(5);
  });

  test("an event without an ack gets the error event; onLimit 'close' disconnects after it", async () => {
    const r = await server({ messages: { limit: 2, windowMs: '1m' }, onLimit: 'close', errorEvent: 'slow-down' });
    const s = await open(r.url);
    const told = new Promise<{ event: string; retryAfterMs: number }>((resolve) => s.once('slow-down', resolve));
    const gone = new Promise<string>((resolve) => s.once('disconnect', resolve));
    for (let i = 0; i < 5; i++) s.emit('chat', i);
    expect(await told).toMatchObject({ event: 'chat', type: 'rate-limited' });
    expect(await gone).toBe('io server disconnect');
    expect(r.counts.admitted).toBe(2);
  });

  test('a 4th connection is refused (connect_error data: status 429) at 3 open, and accepted once one disconnects', async () => {
    const r = await server({ connections: { limit: 3 } });
    const three = [await open(r.url), await open(r.url), await open(r.url)];
    const fourth = await openIo(r.url);
    expect(fourth.refused).toMatchObject({ status: 429 });
    three[0].close();
    await until(() => r.counts.closed === 1, 'the server to see the disconnect');
    await open(r.url);
  });

  test('an invented API key per connection is held to the IP: no fresh connection slot', async () => {
    const r = await server({ connections: { limit: 1 } });
    await open(r.url, { 'x-api-key': 'invented-a' });
    expect((await openIo(r.url, { 'x-api-key': 'invented-b' })).refused).toMatchObject({ status: 429 });
    expect((await openIo(r.url, { authorization: 'Bearer x', 'x-forwarded-for': '192.0.2.9' })).refused).toMatchObject({ status: 429 });
  });

  test("identity.unknownKey 'reject': an unknown key's handshake is refused with status 401", async () => {
    const r = await server({ connections: { limit: 5 }, identity: { resolveKey: () => null, unknownKey: 'reject' } });
    expect((await openIo(r.url, { 'x-api-key': 'nope' })).refused).toMatchObject({ status: 401 });
  });
});
