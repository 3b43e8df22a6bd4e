// The socket-chat example's one command on a fresh machine: its own redis-server, a ws chat limited at 10 messages a connection, and SIGTERM stops it all.
import { join } from 'node:path';
import { isProcessAlive, startExample } from '@floodgate/testing';
import WebSocket from 'ws';
import { PER_CONNECTION } from '../src/app';

jest.setTimeout(90_000);

it('starts its own redis-server without REDIS_URL, admits 10 messages on one connection then answers rate-limited, and SIGTERM stops it and its redis-server', async () => {
  const { run, url, redisPid } = await startExample(join(__dirname, '..', '..', '..'), '@floodgate/example-socket-chat', 'socket-chat');
  try {
    expect(run.tree()).toContain(redisPid);
    const ws = new WebSocket(`${url.replace('http', 'ws')}/ws`);
    await new Promise((resolve) => ws.once('open', resolve));
    const frames: { type: string }[] = [];
    const done = new Promise<void>((resolve) =>
      ws.on('message', (data) => {
        frames.push(JSON.parse(String(data)));
        if (frames.length === PER_CONNECTION + 1) resolve();
      }),
    );
    for (let i = 0; i <= PER_CONNECTION; i++) ws.send(`m${i}`);
    await done;
    expect(frames.map((f) => f.type)).toEqual([...Array(PER_CONNECTION).fill('chat'), 'rate-limited']);
    ws.close();
    expect(await run.terminate('SIGTERM')).toEqual([]);
    expect(isProcessAlive(redisPid)).toBe(false);
  } finally {
    await run.terminate('SIGKILL', 2_000);
  }
});
