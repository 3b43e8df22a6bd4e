// A loopback TCP proxy in front of a real redis-server that holds every reply for `delayMs` before passing it on, intact and in order: a store that answers late but answers.
import { createServer, connect, type Server, type Socket } from 'node:net';

/** How the proxy waits: a timer by default; a test may pass its own to release replies by hand. */
export type DelaySchedule = (release: () => void, delayMs: number) => void;

export interface StartDelayProxyOptions {
  /** The redis-server's loopback port. */
  targetPort: number;
  /** How long each reply is held, ms from when the server sent it (0: passed on at once). */
  delayMs: number;
  /** Default: setTimeout. */
  schedule?: DelaySchedule;
}

export interface DelayProxy {
  /** Connect clients here instead of the server's port. */
  readonly port: number;
  /** Bytes the server has sent, and bytes passed on to clients so far. */
  readonly fromServer: number;
  readonly toClients: number;
  /** Changes the delay of replies the server sends from now on. */
  setDelay(delayMs: number): void;
  /** Closes every connection and the listener. */
  stop(): Promise<void>;
}

/**
 * Each chunk the server sends is held for the delay, measured from its arrival, then written to
 * the client. Chunks of one connection leave in the order they came (a queue per connection, so a
 * shorter delay set later never overtakes a reply held under a longer one); requests pass at once.
 */
export async function startDelayProxy(options: StartDelayProxyOptions): Promise<DelayProxy> {
  const schedule: DelaySchedule = options.schedule ?? ((release, ms) => void setTimeout(release, ms));
  let delayMs = options.delayMs;
  let fromServer = 0;
  let toClients = 0;
  const sockets = new Set<Socket>();

  const pipe = (client: Socket): void => {
    const upstream = connect({ host: '127.0.0.1', port: options.targetPort });
    sockets.add(client).add(upstream);
    const held: { chunk: Buffer; ready: boolean }[] = [];
    const drain = (): void => {
      while (held.length > 0 && held[0].ready) {
        const { chunk } = held.shift()!;
        toClients += chunk.length;
        if (!client.destroyed) client.write(chunk);
      }
    };
    upstream.on('data', (chunk: Buffer) => {
      fromServer += chunk.length;
      const entry = { chunk, ready: false };
      held.push(entry);
      const release = () => {
        entry.ready = true;
        drain();
      };
      if (delayMs <= 0) release();
      else schedule(release, delayMs);
    });
    client.on('data', (chunk: Buffer) => upstream.write(chunk));
    const close = (): void => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('close', close).on('error', close);
    upstream.on('close', close).on('error', close);
  };

  const server: Server = createServer(pipe);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('delay proxy: no TCP address');
  return {
    port: address.port,
    get fromServer() {
      return fromServer;
    },
    get toClients() {
      return toClients;
    },
    setDelay(ms: number) {
      delayMs = ms;
    },
    stop() {
      // Stops listening and drops every connection (held replies are dropped with them).
      for (const s of sockets) s.destroy();
      server.close();
      server.unref();
      return Promise.resolve();
    },
  };
}
