// FloodgateModule: forRoot / forRootAsync build one FloodgateService per app; at init every route's limiter is built, 404s are limited and a missing guard is reported.
import { Inject, Module, type DynamicModule, type InjectionToken, type ModuleMetadata, type OnModuleInit, type OptionalFactoryDependency } from '@nestjs/common';
import { GATEWAY_METADATA, MESSAGE_MAPPING_METADATA, PATH_METADATA } from './nest-metadata';
import { DiscoveryModule, DiscoveryService, HttpAdapterHost, MetadataScanner, ModuleRef } from '@nestjs/core';
import { FloodgateGuard } from './floodgate-guard';
import { FloodgateService, type FloodgateModuleOptions, type GlobalFilters } from './floodgate-service';
import { rejectThrottlerNames } from './peer-names';
import { fastifyTrust, type ExpressAppLike } from './platform';
import { warnUnguarded } from './unguarded';
import { limitUnmatched } from './unmatched';

/** The token of the module's options (forRoot's object, or what forRootAsync's factory returned). */
export const FLOODGATE_OPTIONS = Symbol.for('floodgate.nestjs.options');

export interface FloodgateModuleAsyncOptions extends Pick<ModuleMetadata, 'imports'> {
  /** Providers handed to `useFactory`, e.g. a ConfigService or your Redis client's token. */
  inject?: (InjectionToken | OptionalFactoryDependency)[];
  /** Builds the options, e.g. `(config) => ({ store: new RedisStore({ client: new Redis(config.getOrThrow('REDIS_URL')) }) })`. */
  useFactory: (...args: any[]) => FloodgateModuleOptions | Promise<FloodgateModuleOptions>;
}

const serviceFrom = {
  provide: FloodgateService,
  inject: [FLOODGATE_OPTIONS],
  useFactory: (options: FloodgateModuleOptions) => new FloodgateService(options),
};

/**
 * Rate limiting for a Nest app on the Express or the Fastify platform. Import it once, with
 * `FloodgateModule.forRoot({ limit, windowMs, store })` or `forRootAsync({ imports, inject,
 * useFactory })`; it is global. Then register FloodgateGuard as APP_GUARD (every route) or with
 * `@UseGuards(FloodgateGuard)`, and set per-handler options with `@RateLimit()` / `@SkipRateLimit()`.
 */
@Module({})
export class FloodgateModule implements OnModuleInit {
  constructor(
    @Inject(FloodgateService) private readonly floodgate: FloodgateService,
    @Inject(DiscoveryService) private readonly discovery: DiscoveryService,
    @Inject(MetadataScanner) private readonly scanner: MetadataScanner,
    @Inject(HttpAdapterHost) private readonly adapterHost: HttpAdapterHost,
    @Inject(ModuleRef) private readonly moduleRef: ModuleRef,
  ) {}

  static forRoot(options: FloodgateModuleOptions = {}): DynamicModule {
    // @nestjs/throttler's names fail here, where the app author wrote them; the rest when the app starts.
    rejectThrottlerNames(options, 'FloodgateModule.forRoot()');
    return FloodgateModule.with([{ provide: FLOODGATE_OPTIONS, useValue: options }], []);
  }

  static forRootAsync(options: FloodgateModuleAsyncOptions): DynamicModule {
    return FloodgateModule.with([{ provide: FLOODGATE_OPTIONS, inject: options.inject ?? [], useFactory: options.useFactory }], options.imports ?? []);
  }

  private static with(providers: DynamicModule['providers'] & object, imports: NonNullable<ModuleMetadata['imports']>): DynamicModule {
    return {
      module: FloodgateModule,
      global: true,
      imports: [DiscoveryModule, ...imports],
      providers: [...providers, serviceFrom, FloodgateGuard],
      exports: [FLOODGATE_OPTIONS, FloodgateService, FloodgateGuard],
    };
  }

  /**
   * Runs after Nest registered the routes and before its 404 handler: every handler's limiter is
   * built now (a bad `@RateLimit()` option fails the app's start, not its first request), and the
   * hook for requests that match no route goes in.
   */
  onModuleInit(): void {
    const handlers: [abstract new (...args: never[]) => unknown, Function][] = [];
    for (const wrapper of this.discovery.getControllers()) {
      const controller = wrapper.metatype as (abstract new (...args: never[]) => unknown) | null;
      if (!controller || typeof controller !== 'function') continue;
      const proto = controller.prototype as Record<string, unknown>;
      for (const name of this.scanner.getAllMethodNames(proto)) {
        const handler = proto[name];
        if (typeof handler !== 'function' || Reflect.getMetadata(PATH_METADATA, handler) === undefined) continue;
        this.floodgate.limiterFor(controller, handler);
        handlers.push([controller, handler]);
      }
    }
    this.buildGateways();
    warnUnguarded(this.floodgate, this.discovery, handlers);
    const adapter = this.adapterHost?.httpAdapter;
    if (adapter?.getType() === 'fastify') this.floodgate.fastifyTrust = fastifyTrust(adapter.getInstance() as object);
    if (adapter?.getType() === 'express') {
      this.floodgate.expressApp = adapter.getInstance() as ExpressAppLike;
      this.floodgate.globalFilters = globalFiltersOf(this.moduleRef);
    }
    if (adapter && this.floodgate.limitsUnmatched) limitUnmatched(adapter, this.floodgate);
  }

  /** Every gateway's @SubscribeMessage handler's limiter, built now as the routes' are: a bad `@RateLimit()` option fails the app's start, not its first message. */
  private buildGateways(): void {
    for (const wrapper of this.discovery.getProviders()) {
      const gateway = wrapper.metatype as (abstract new (...args: never[]) => unknown) | null;
      if (!gateway || typeof gateway !== 'function' || Reflect.getMetadata(GATEWAY_METADATA, gateway) !== true) continue;
      const proto = gateway.prototype as Record<string, unknown>;
      for (const name of this.scanner.getAllMethodNames(proto)) {
        const handler = proto[name];
        if (typeof handler === 'function' && Reflect.getMetadata(MESSAGE_MAPPING_METADATA, handler) === true) this.floodgate.limiterFor(gateway, handler);
      }
    }
  }
}

/**
 * The app's global exception filters, from the application config Nest's container holds (not
 * public API: reached through ModuleRef's container, each step checked). Undefined where it cannot
 * be read: then every denial goes through Nest's exception filters, as if one were there.
 */
export function globalFiltersOf(moduleRef: ModuleRef): GlobalFilters | undefined {
  const container = (moduleRef as unknown as { container?: { applicationConfig?: Partial<GlobalFilters> } }).container;
  const config = container?.applicationConfig;
  if (typeof config?.getGlobalFilters !== 'function' || typeof config.getGlobalRequestFilters !== 'function') return undefined;
  const filters = config as GlobalFilters;
  return Array.isArray(filters.getGlobalFilters()) && Array.isArray(filters.getGlobalRequestFilters()) ? filters : undefined;
}
