// @floodgate/testing/adapter-suites: the suites every adapter runs, and the one harness interface they drive.
export type { AdapterHarness, AppSpec, Mounting, RouteSpec, RunningApp } from './harness';
export { runBehaviourTable } from './behaviour-table';
export { runFaultScenarios } from './failure-modes';
export { runIdentitySuite } from './identity';
export { runAttackSuite } from './attacks';
export { runDirectResponseSuite } from './direct-response';
