// The core's race children (race-child.ts, over every Redis client) on the shared race protocol of @floodgate/testing, which the adapters' race tests use too.
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { allInFlightTogether, forkRaceChildren, inFlightTogetherMs, raceRound as sharedRound, stopRaceChildren, type Pausable } from '@floodgate/testing';
import type { RaceGo, RaceReply, RaceSetup } from './race-child';

const REPO = join(__dirname, '..', '..', '..', '..');

/**
 * Forks `count` race children and waits until each has connected with `setup`. The child runs the
 * TypeScript sources compiled by SWC on require, as jest does (ts-node takes seconds per process to
 * load the TypeScript compiler; this takes a tenth of one).
 */
export function startChildren(count: number, setup: RaceSetup): Promise<ChildProcess[]> {
  return forkRaceChildren(count, { entry: join(__dirname, 'race-child.ts'), execArgv: ['-r', join(__dirname, 'swc-register.js')], cwd: REPO, setup });
}

export const stopChildren = stopRaceChildren;

/** One round behind the start barrier (see raceRound in @floodgate/testing), with the core child's messages. */
export const raceRound = (children: readonly ChildProcess[], go: RaceGo, redis: Pausable) => sharedRound<RaceReply>(children, go, redis);

export { allInFlightTogether, inFlightTogetherMs, type Pausable };

/** Script calls a coalesced child makes for `inFlight` requests made in one turn (RedisStore sends at most 64 per call). */
export const TURN_BATCH = 64;
