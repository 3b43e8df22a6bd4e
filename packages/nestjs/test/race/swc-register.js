// Lets a plain `node` child run the TypeScript sources with Nest's decorators: core's compile-on-require (with its disk cache), legacy decorators with metadata, as jest does for this package.
'use strict';
globalThis.__floodgateSwcDecorators = true;
require('../../../core/test/race/swc-register.js');
