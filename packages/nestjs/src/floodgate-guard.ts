// FloodgateGuard: the guard that limits each HTTP request on its handler's route, global (APP_GUARD) or per controller (@UseGuards).
import { Inject, Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { FloodgateService } from './floodgate-service';
import { decideResolver } from './graphql-context';
import { decideMessage } from './ws-context';
import { answersEveryMethod, routePattern, type PlatformRequest, type PlatformResponse } from './platform';

/**
 * Limits each HTTP request on its handler's bucket (method + the route pattern Nest registered,
 * e.g. 'GET /users/:id'; 'ALL /pattern' for an `@All()` handler, whatever the method), with the
 * handler's and its controller's `@RateLimit()` options over FloodgateModule's. Admits (headers
 * set, `req.rateLimit` the decision) or throws RateLimitException (429, 503 or 401) for Nest's
 * exception filters. Guards run before interceptors and pipes: a denied request reaches neither.
 * GraphQL resolvers are limited per resolver (graphql-context.ts), WebSocket gateway messages per
 * handler (ws-context.ts); other contexts (RPC) pass.
 */
/** Guards made per service, so that one made by hand for `app.useGlobalGuards()` can be told from the container's (FG_ROUTE_NOT_LIMITED). */
const made = new WeakMap<FloodgateService, number>();

@Injectable()
export class FloodgateGuard implements CanActivate {
  constructor(@Inject(FloodgateService) private readonly floodgate: FloodgateService) {
    made.set(floodgate, (made.get(floodgate) ?? 0) + 1);
  }

  /** How many guards were made for this service (the container's, @UseGuards' and any made by hand). */
  static made(floodgate: FloodgateService): number {
    return made.get(floodgate) ?? 0;
  }

  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    if (context.getType<string>() === 'graphql') return decideResolver(this.floodgate, context);
    if (context.getType() === 'ws') return decideMessage(this.floodgate, context);
    if (context.getType() !== 'http') return true;
    const controller = context.getClass();
    const handler = context.getHandler();
    const limiter = this.floodgate.limiterFor(controller, handler);
    if (!limiter) return true;
    const http = context.switchToHttp();
    const req = http.getRequest<PlatformRequest>();
    return this.floodgate.decide(limiter, req, http.getResponse<PlatformResponse>(), routePattern(req, controller, handler), answersEveryMethod(handler), controller, handler);
  }
}
