// @floodgate/adapter-suites: the suites every adapter runs, and the one harness interface they drive.
export {
  askedDelay,
  askedStatus,
  listenOnLoopback,
  routeLimiters,
  settleAsked,
  type AdapterHarness,
  type AppSpec,
  type Mounting,
  type RouteSpec,
  type RunningApp,
  type SettleAnswer,
} from './harness';
export { runUsageSettleSuite } from './usage-settle';
export { runBehaviourTable } from './behaviour-table';
export { runFaultScenarios } from './failure-modes';
export { runIdentitySuite } from './identity';
export { runAttackSuite } from './attacks';
export { runMethodSuite } from './methods';
export { runRouteMergeSuite } from './route-merge';
export { runGeneratedAttackSuite } from './generated-attacks';
export { runDirectResponseSuite } from './direct-response';
export { runAuthRouteSuite } from './auth-routes';
export { expectServedInOneTurn, turnMarker } from './same-turn';
export { runWarningSuite, recordingLogger, getStatus } from './warnings';
export { runConcurrencySuite } from './concurrency';
export { runQuotaSuite } from './quotas';
export { runShapingSuite } from './shaping';
export { runShapeAttackSuite } from './shape-attacks';
export { runRuntimeLimitSuite, headerOf } from './runtime-limits';
export { runGeneratedRuntimeLimitSuite } from './runtime-limit-attacks';
