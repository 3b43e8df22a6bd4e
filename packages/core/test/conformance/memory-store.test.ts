// The conformance table against MemoryStore, its clock injected.
import { MemoryStore } from '../../src';
import { describeConformance } from './scenarios';

describeConformance('conformance: MemoryStore', (clock) => new MemoryStore({ clock }));
