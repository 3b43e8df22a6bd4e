// Express routing read, never run: which route (its full pattern, mounts included) a request will reach.
import type { Request } from 'express';

/** Marks Floodgate's middleware, so an app-level one can see that a route has its own. */
export const FLOODGATE = Symbol.for('floodgate.express.middleware');

interface Route {
  path: unknown;
  stack: { handle: unknown }[];
  _handles_method?(method: string): boolean; // Express 4
  _handlesMethod?(method: string): boolean; // Express 5 (router 2)
}

interface Layer {
  route?: Route;
  handle: { stack?: Layer[] };
  keys?: { name: string | number }[];
  regexp?: RegExp & { fast_slash?: boolean };
  path?: string;
  /** Express 4 and router < 2.3: a boolean, with the matched part left on `path`. Router >= 2.3: the match. */
  match(path: string): boolean | { path: string; pattern?: unknown } | false;
}

export interface FoundRoute {
  /** The full pattern, e.g. '/orgs/:org/items/:id'. */
  readonly pattern: string;
  readonly route: Route;
}

type App = { parent?: App; mountpath?: unknown; _router?: { stack: Layer[] }; router?: { stack: Layer[] } };

/** An app's own router: Express 4 keeps it on `_router`, Express 5 on `router` (a getter that throws on 4). */
function stackOf(app: App | undefined): Layer[] | undefined {
  try {
    return (app?._router ?? app?.router)?.stack;
  } catch {
    return undefined;
  }
}

/** A mounted sub-app's place in its parents, as the patterns given to app.use ('/v1', '/orgs/:org'). */
function mountPrefix(app: App): string {
  let prefix = '';
  for (let a: App | undefined = app; a?.parent; a = a.parent) {
    const given = Array.isArray(a.mountpath) ? a.mountpath.join(',') : String(a.mountpath ?? '');
    prefix = given.replace(/\/+$/, '') + prefix;
  }
  return prefix;
}

/** The path routing starts from, as Express's own `parseurl(req).pathname` reads it. */
function pathnameOf(url: string): string {
  const end = url.search(/[?#]/);
  let path = end === -1 ? url : url.slice(0, end);
  if (!path.startsWith('/')) {
    const scheme = path.indexOf('://');
    const slash = scheme === -1 ? -1 : path.indexOf('/', scheme + 3);
    path = slash === -1 ? '/' : path.slice(slash);
  }
  return path;
}

/** Static text as a pattern: matching ignores case and a trailing slash by default, so must the key. */
function normalise(text: string, caseInsensitive: boolean): string {
  const trimmed = text.replace(/\/+$/, '');
  return caseInsensitive ? trimmed.toLowerCase() : trimmed;
}

/**
 * The pattern of a mount that matched `matched` of `path`. Express 4 keeps only the regexp: its
 * parameter groups are cut back to `:name` using the match indices, so the key never holds a value.
 * Router 2.0-2.2 (early Express 5) keep neither: a parameterised mount is then named by its place.
 */
function mountPattern(layer: Layer, path: string, matched: string, index: number): string {
  const { regexp, keys = [] } = layer;
  const ci = regexp ? regexp.flags.includes('i') : true;
  if (keys.length === 0) return normalise(matched, ci);
  const m = regexp ? new RegExp(regexp.source, regexp.flags.replace(/[gyd]/g, '') + 'd').exec(path) : null;
  if (!m?.indices) return `/{mount ${index}}`;
  const text = (from: number, to: number) => (ci ? path.slice(from, to).toLowerCase() : path.slice(from, to));
  let out = '';
  let at = m.index;
  keys.forEach((key, i) => {
    const span = m.indices![i + 1];
    if (!span) return; // an optional parameter that is absent
    out += text(at, span[0]) + `:${key.name}`;
    at = span[1];
  });
  return (out + text(at, m.index + m[0].length)).replace(/\/+$/, '');
}

function handles(route: Route, method: string): boolean {
  const check = (m: string) => (route._handlesMethod ?? route._handles_method)?.call(route, m) ?? false;
  return check(method) || (method === 'HEAD' && check('GET'));
}

/** Every route this request matches, in the order Express would try them, with its full pattern. */
function* walk(stack: Layer[], path: string, prefix: string, method: string): Generator<FoundRoute> {
  for (let i = 0; i < stack.length; i++) {
    const layer = stack[i];
    const nested = layer.handle?.stack;
    if (!layer.route && !Array.isArray(nested)) continue;
    let result: ReturnType<Layer['match']>;
    try {
      result = layer.match(path);
    } catch {
      continue; // a malformed %-escape: Express answers 400 itself
    }
    if (!result) continue;
    const matched = typeof result === 'object' ? result.path : (layer.path ?? '');
    const given = typeof result === 'object' ? result.pattern : undefined;
    if (layer.route) {
      if (handles(layer.route, method)) {
        yield { pattern: prefix + String(given ?? layer.route.path), route: layer.route };
      }
      continue;
    }
    const mount = given !== undefined ? normalise(String(given), false) : mountPattern(layer, path, matched, i);
    const rest = path.slice(matched.length);
    yield* walk(nested!, rest.startsWith('/') ? rest : `/${rest}`, prefix + mount, method);
  }
}

/**
 * The first route an app-level middleware's request will reach; undefined when none matches. In a
 * mounted sub-app the URL's prefix belongs to the parents, so the walk starts from the sub-app with
 * req.url, which is only relative to the sub-app when `handler` sits at its root.
 */
export function firstRoute(req: Request, handler: unknown): FoundRoute | undefined {
  const app = req.app as unknown as App;
  const stack = stackOf(app);
  if (!stack) return undefined;
  let path = pathnameOf(req.originalUrl ?? req.url);
  let prefix = '';
  if (app.parent) {
    const atRoot = stack.some((l) => l.handle === handler && (l.regexp?.fast_slash || (l as { slash?: boolean }).slash));
    if (!atRoot) return undefined;
    path = pathnameOf(req.url);
    prefix = mountPrefix(app);
  }
  for (const found of walk(stack, path, prefix, req.method)) return found;
  return undefined;
}

/**
 * The full pattern of the route a route-level middleware runs in (req.route), mounts included. In a
 * sub-app the part of the URL the parents consumed is unknown here: each '/'-suffix is tried, and
 * only a walk that reaches this very route counts.
 */
export function currentRoutePattern(req: Request): string {
  const route = req.route as Route;
  const app = req.app as unknown as App;
  const stack = stackOf(app);
  const path = pathnameOf(req.originalUrl ?? req.url);
  const prefix = app.parent ? mountPrefix(app) : '';
  for (let at = 0; stack && at !== -1; at = app.parent ? path.indexOf('/', at + 1) : -1) {
    for (const found of walk(stack, path.slice(at) || '/', prefix, req.method)) {
      if (found.route === route) return found.pattern;
    }
  }
  // Not reachable by a walk: the route's own path, never the raw URL.
  return prefix + String(route.path);
}

/** True when this route runs a Floodgate middleware of its own, which then decides instead. */
export function hasOwnLimiter(route: Route): boolean {
  return route.stack.some((layer) => typeof layer.handle === 'function' && FLOODGATE in layer.handle);
}

/** True when `handler` runs inside req.route's own stack (mounted on the route, not app-wide). */
export function isRouteLevel(req: Request, handler: unknown): boolean {
  const route = req.route as Route | undefined;
  return !!route && route.stack.some((layer) => layer.handle === handler);
}
