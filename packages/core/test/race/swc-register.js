// Lets a plain `node` child process run the TypeScript sources: compiles each .ts file with SWC on require, as jest does, and keeps the output in a cache on disk.
'use strict';
const { mkdirSync, readFileSync, renameSync, writeFileSync } = require('node:fs');
const { createHash } = require('node:crypto');
const { join } = require('node:path');

// Nest's race children set the global first (packages/nestjs/test/race/swc-register.js): legacy decorators with metadata, as jest compiles that package.
const OPTIONS = globalThis.__floodgateSwcDecorators === true
  ? { jsc: { parser: { syntax: 'typescript', decorators: true }, transform: { legacyDecorator: true, decoratorMetadata: true }, target: 'es2022' }, module: { type: 'commonjs' } }
  : { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'commonjs' } };
/*
 * The tests fork many children (8 race processes at a time, fleets of 3 to 8) that each load the
 * same hundred-odd source files: compiled once, kept under node_modules/.cache by a digest of the
 * source, the file name, the options and SWC's version, a change to any of them compiles anew. The
 * file is written under a temporary name and renamed, so children starting together never read half
 * of one. SWC itself is loaded only on a miss.
 */
const CACHE = join(__dirname, '..', '..', '..', '..', 'node_modules', '.cache', 'floodgate-swc');
const SWC_VERSION = require('@swc/core/package.json').version;
let swc;

function compile(source, filename) {
  const key = createHash('sha256').update(`${SWC_VERSION}\0${JSON.stringify(OPTIONS)}\0${filename}\0`).update(source).digest('hex');
  const cached = join(CACHE, `${key}.js`);
  try {
    return readFileSync(cached, 'utf8');
  } catch {
    swc ??= require('@swc/core');
    const { code } = swc.transformSync(source, { filename, ...OPTIONS });
    try {
      mkdirSync(CACHE, { recursive: true });
      const partial = `${cached}.${process.pid}.tmp`;
      writeFileSync(partial, code);
      renameSync(partial, cached);
    } catch {
      // A cache that cannot be written only costs the next child this compile again.
    }
    return code;
  }
}

require.extensions['.ts'] = function compileTypeScript(module, filename) {
  module._compile(compile(readFileSync(filename, 'utf8'), filename), filename);
};
