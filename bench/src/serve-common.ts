// What every framework's bench server shares: the body, how a mount list is read, and listening on loopback.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ServerSpec, Wiring } from './types';

/** Every route's body: the same two bytes in every framework, so only the limiter differs. */
export const BODY = 'ok';

/** A server listening on loopback: its port, how Floodgate was wired into it, and how to close it. */
export interface Started {
  port: number;
  wiring: Wiring;
  close: () => Promise<void>;
}

/** One mount at '/' is applied app-wide (as users mount it); several are mounted per route. */
export const isSingle = (spec: ServerSpec) => spec.mounts.length === 1 && spec.mounts[0].path === '/';

/** Resolves once a node:http server listens, with its port. */
export async function listening(server: Server): Promise<number> {
  if (!server.listening) await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject));
  return (server.address() as AddressInfo).port;
}

export const closing = (server: Server) => () => new Promise<void>((resolve) => server.close(() => resolve()));
