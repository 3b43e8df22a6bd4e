// Minimal RESP2 client for one-off admin commands over a short-lived TCP or TLS connection (no ioredis side traffic).
import { connect, type Socket } from 'node:net';
import { connect as connectTls } from 'node:tls';

/** A decoded RESP2 reply. Bulk strings stay Buffers; errors nested in arrays are Error objects. */
export type RespReply = string | number | Buffer | null | Error | RespReply[];

/** A `-ERR ...` reply from the server. */
export class RespReplyError extends Error {
  override name = 'RespReplyError';
}

type Parsed = { value: RespReply; end: number } | undefined;

function parseReply(buf: Buffer, start: number): Parsed {
  const lineEnd = buf.indexOf('\r\n', start);
  if (lineEnd === -1) return undefined;
  const type = String.fromCharCode(buf[start]);
  const line = buf.toString('utf8', start + 1, lineEnd);
  const next = lineEnd + 2;
  switch (type) {
    case '+':
      return { value: line, end: next };
    case '-':
      return { value: new RespReplyError(line), end: next };
    case ':':
      return { value: Number(line), end: next };
    case '$': {
      const length = Number(line);
      if (length < 0) return { value: null, end: next };
      if (buf.length < next + length + 2) return undefined;
      return { value: Buffer.from(buf.subarray(next, next + length)), end: next + length + 2 };
    }
    case '*': {
      const count = Number(line);
      if (count < 0) return { value: null, end: next };
      const items: RespReply[] = [];
      let offset = next;
      for (let i = 0; i < count; i++) {
        const item = parseReply(buf, offset);
        if (item === undefined) return undefined;
        items.push(item.value);
        offset = item.end;
      }
      return { value: items, end: offset };
    }
    default:
      throw new Error(`Unexpected RESP type byte ${JSON.stringify(type)}`);
  }
}

function encodeCommand(args: (string | number | Buffer)[]): Buffer {
  const parts: Buffer[] = [Buffer.from(`*${args.length}\r\n`)];
  for (const arg of args) {
    const bytes = Buffer.isBuffer(arg) ? arg : Buffer.from(String(arg), 'utf8');
    parts.push(Buffer.from(`$${bytes.length}\r\n`), bytes, Buffer.from('\r\n'));
  }
  return Buffer.concat(parts);
}

export interface RespCommandOptions {
  host?: string;
  /** Whole-operation timeout (connect + reply). Default 5000 ms. */
  timeoutMs?: number;
  /** Connect over TLS, trusting this CA (PEM). */
  tls?: { ca: string };
  /** AUTH [user] password, sent before the command (its error rejects). */
  auth?: { user?: string; password: string };
}

/**
 * Opens a connection, sends one command, returns its reply and closes the connection.
 * A top-level error reply rejects with RespReplyError.
 */
export function respCommand(
  port: number,
  args: (string | number | Buffer)[],
  options: RespCommandOptions = {},
): Promise<RespReply> {
  const host = options.host ?? '127.0.0.1';
  const timeoutMs = options.timeoutMs ?? 5000;
  const auth = options.auth;
  const commands = auth ? [auth.user ? ['AUTH', auth.user, auth.password] : ['AUTH', auth.password], args] : [args];
  return new Promise<RespReply>((resolve, reject) => {
    let received: Buffer = Buffer.alloc(0);
    let settled = false;
    let offset = 0;
    let replies = 0;
    const socket: Socket = options.tls
      ? connectTls({ host, port, ca: options.tls.ca, servername: host === '127.0.0.1' ? undefined : host })
      : connect({ host, port });
    const finish = (error: Error | undefined, value?: RespReply): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (error) reject(error);
      else resolve(value as RespReply);
    };
    const timer = setTimeout(
      () => finish(new Error(`${args[0]} to ${host}:${port} timed out after ${timeoutMs} ms`)),
      timeoutMs,
    );
    socket.setNoDelay(true);
    socket.on(options.tls ? 'secureConnect' : 'connect', () => socket.write(Buffer.concat(commands.map(encodeCommand))));
    socket.on('data', (chunk: Buffer) => {
      received = received.length === 0 ? chunk : Buffer.concat([received, chunk]);
      // One reply per command sent (AUTH first): an error ends it, the last reply is the answer.
      for (;;) {
        let parsed: Parsed;
        try {
          parsed = parseReply(received, offset);
        } catch (error) {
          finish(error as Error);
          return;
        }
        if (parsed === undefined) return;
        offset = parsed.end;
        replies++;
        if (parsed.value instanceof Error) return finish(parsed.value);
        if (replies === commands.length) return finish(undefined, parsed.value);
      }
    });
    socket.on('error', (error) => finish(error));
    socket.on('close', () =>
      finish(new Error(`Connection to ${host}:${port} closed before ${args[0]} replied`)),
    );
  });
}

/** respCommand, with a bulk/simple string reply decoded as UTF-8 text. */
export async function respText(
  port: number,
  args: (string | number | Buffer)[],
  options?: RespCommandOptions,
): Promise<string> {
  const reply = await respCommand(port, args, options);
  if (Buffer.isBuffer(reply)) return reply.toString('utf8');
  if (typeof reply === 'string' || typeof reply === 'number') return String(reply);
  throw new Error(`${args[0]}: expected a string reply, got ${JSON.stringify(reply)}`);
}
