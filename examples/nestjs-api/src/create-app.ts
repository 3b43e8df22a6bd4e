// Builds the nestjs-api app on the Express or the Fastify platform, with the platform's trust-proxy setting off.
import { NestFactory } from '@nestjs/core';
import type { INestApplication } from '@nestjs/common';
import { ExpressAdapter, type NestExpressApplication } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { appModule, type AppOptions } from './app-module';

export type Platform = 'express' | 'fastify';

/** The app, not yet listening. Behind a proxy, trust it on the platform (Express `trust proxy`, Fastify `trustProxy`) so that the IP fallback is the client's. */
export async function createApp(platform: Platform, options: AppOptions = {}): Promise<INestApplication> {
  if (platform === 'fastify') return NestFactory.create(appModule(options), new FastifyAdapter({ trustProxy: false }), { logger: ['error', 'warn'] });
  const app = await NestFactory.create<NestExpressApplication>(appModule(options), new ExpressAdapter(), { logger: ['error', 'warn'] });
  app.set('trust proxy', false);
  return app;
}
