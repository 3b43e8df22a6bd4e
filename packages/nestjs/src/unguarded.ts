// FG_ROUTE_NOT_LIMITED for Nest: FloodgateModule imported but FloodgateGuard registered nowhere (not APP_GUARD, not in @UseGuards()), checked once at init.
import { RequestMethod } from '@nestjs/common';
import { GUARDS_METADATA, METHOD_METADATA, PATH_METADATA } from './nest-metadata';
import { APP_GUARD, type DiscoveryService } from '@nestjs/core';
import { warnRouteNotLimited } from '@floodgate/core/http';
import { FloodgateGuard } from './floodgate-guard';
import type { FloodgateService } from './floodgate-service';

type Controller = abstract new (...args: never[]) => unknown;

/** A FloodgateGuard in a guard list: the class (or a subclass), or an instance. */
const isOurs = (guard: unknown) =>
  guard instanceof FloodgateGuard || (typeof guard === 'function' && (guard === FloodgateGuard || guard.prototype instanceof FloodgateGuard));

const guarded = (target: object) => ((Reflect.getMetadata(GUARDS_METADATA, target) as unknown[] | undefined) ?? []).some(isOurs);

/** 'GET /reports/:id', from Nest's metadata (no global prefix: that is the platform's). */
function routeOf(controller: Controller, handler: Function): string {
  const method = RequestMethod[Reflect.getMetadata(METHOD_METADATA, handler) as number] ?? 'GET';
  const path = [Reflect.getMetadata(PATH_METADATA, controller), Reflect.getMetadata(PATH_METADATA, handler)]
    .map((part) => (Array.isArray(part) ? part[0] : part))
    .filter((part): part is string => typeof part === 'string' && part !== '' && part !== '/')
    .map((part) => part.replace(/^\/+|\/+$/g, ''));
  return `${method} /${path.join('/')}`;
}

/**
 * Warns once (FG_ROUTE_NOT_LIMITED) when handlers that would be limited (not `@SkipRateLimit()`)
 * have no FloodgateGuard: no APP_GUARD gives one, and neither their controller's nor their own
 * `@UseGuards()` does. Importing the module limits nothing by itself, so this is the first-hour
 * trap. A guard made by hand for `app.useGlobalGuards(new FloodgateGuard(...))` counts as global:
 * it is one more guard than the container holds. `handlers` are the routes FloodgateModule found.
 */
export function warnUnguarded(floodgate: FloodgateService, discovery: DiscoveryService, handlers: readonly [Controller, Function][]): void {
  const providers = discovery.getProviders();
  const global = providers.some((w) => typeof w.token === 'string' && w.token.startsWith(`${APP_GUARD} `) && isOurs(w.instance));
  if (global) return;
  const inContainer = providers.filter((w) => w.instance instanceof FloodgateGuard).length;
  if (FloodgateGuard.made(floodgate) > inContainer + handlers.filter(([c, h]) => guarded(c) || guarded(h)).length) return;
  const open = handlers.filter(([controller, handler]) => !guarded(controller) && !guarded(handler) && floodgate.limiterFor(controller, handler) !== null);
  if (open.length === 0) return;
  const [controller, handler] = open[0];
  warnRouteNotLimited(
    floodgate.http,
    `${routeOf(controller, handler)}${open.length > 1 ? ` (and ${open.length - 1} more route${open.length > 2 ? 's' : ''})` : ''}`,
    'FloodgateModule is imported but no FloodgateGuard limits it: register it for every route with providers: [{ provide: APP_GUARD, useClass: FloodgateGuard }], or on a controller with @UseGuards(FloodgateGuard); a route meant to be unlimited takes @SkipRateLimit() (docs/adapters.md#nestjs-floodgatenestjs)',
  );
}
