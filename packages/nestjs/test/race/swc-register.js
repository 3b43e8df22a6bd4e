// Lets a plain `node` child run the TypeScript sources with Nest's decorators: SWC on require, legacy decorators with metadata, as jest does for this package.
'use strict';
const { readFileSync } = require('node:fs');
const { transformSync } = require('@swc/core');

require.extensions['.ts'] = function compileTypeScript(module, filename) {
  const { code } = transformSync(readFileSync(filename, 'utf8'), {
    filename,
    jsc: { parser: { syntax: 'typescript', decorators: true }, transform: { legacyDecorator: true, decoratorMetadata: true }, target: 'es2022' },
    module: { type: 'commonjs' },
  });
  module._compile(code, filename);
};
