// Jest reporter for `pnpm test`: a passing run prints a summary and the slowest files; a failing file prints its failures and its console output in full.
'use strict';
/*
 * Jest buffers each test file's console output (non-verbose runs) and hands it to the reporters
 * with the file's result: here it is printed only for a file that failed, beside its failures, so a
 * passing file's measurements and expected warnings stay out of the way. The JSON of
 * `--json --outputFile=...` is written by Jest itself, whatever the reporter.
 *
 * Options (jest.config.ts): `slowest` (how many of the slowest files to list, default 10).
 * Environment: FLOODGATE_TEST_CONSOLE=1 prints every file's console output, passing or not.
 *
 * Run in band (one worker: Jest's default on 2 cores), the tests share this process: what a file
 * left open (a timer, a socket, a child process: process.getActiveResourcesInfo()) and what is
 * still open when the run ends are named with the files after which they appeared, so a run that
 * would not exit says why.
 * `pnpm exec jest --reporters=default` brings Jest's own reporter back for one run.
 */

const SHOW_ALL_CONSOLE = process.env.FLOODGATE_TEST_CONSOLE === '1';

/** One buffered console entry as Jest would print it: its type, where it came from, and its message. */
function formatConsole(entries) {
  return entries.map((e) => `  console.${e.type} (${e.origin.split('\n')[0].trim()})\n${indent(e.message, '    ')}`).join('\n');
}

function indent(text, pad) {
  return String(text)
    .split('\n')
    .map((line) => pad + line)
    .join('\n');
}

/** A file's path relative to the repository root. */
function relative(rootDir, path) {
  return path.startsWith(`${rootDir}/`) ? path.slice(rootDir.length + 1) : path;
}

const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;

/** Open resources of this process by type (Timeout, TCPSocketWrap, ProcessWrap, ...). */
function openResources() {
  const counts = {};
  for (const type of process.getActiveResourcesInfo()) counts[type] = (counts[type] ?? 0) + 1;
  return counts;
}

class QuietReporter {
  constructor(globalConfig, options = {}) {
    this.rootDir = globalConfig.rootDir;
    this.slowest = options.slowest ?? 10;
    this.files = [];
    this.startedAt = Date.now();
    this.resourcesAtStart = openResources();
    /** After each file: [path, resources of each type it added (from the previous file's end)]. */
    this.grew = [];
    this.lastResources = this.resourcesAtStart;
  }

  onRunStart(results) {
    this.startedAt = Date.now();
    this.total = results.numTotalTestSuites;
    process.stderr.write(`jest: ${results.numTotalTestSuites} test files\n`);
  }

  onTestFileResult(test, result) {
    const path = relative(this.rootDir, result.testFilePath);
    const durationMs = result.perfStats.end - result.perfStats.start;
    const failed = result.numFailingTests > 0 || result.testExecError !== undefined || result.failureMessage;
    this.files.push({ path, durationMs, failed: Boolean(failed) });
    const now = openResources();
    const added = Object.entries(now).filter(([type, n]) => n > (this.lastResources[type] ?? 0));
    if (added.length > 0) this.grew.push([path, Object.fromEntries(added.map(([type, n]) => [type, n - (this.lastResources[type] ?? 0)]))]);
    this.lastResources = now;
    // A long run says it is alive: one line per 20 files.
    if (this.files.length % 20 === 0 && this.files.length < this.total) {
      const failedSoFar = this.files.filter((f) => f.failed).length;
      process.stderr.write(`  ${this.files.length}/${this.total} files, ${failedSoFar} failed, ${seconds(Date.now() - this.startedAt)}\n`);
    }
    if (failed) {
      const out = [`\nFAIL ${path} (${seconds(durationMs)})`];
      if (result.failureMessage) out.push(result.failureMessage);
      else if (result.testExecError) out.push(result.testExecError.stack ?? result.testExecError.message);
      if (result.console?.length) out.push(`console output of ${path}:\n${formatConsole(result.console)}`);
      process.stderr.write(`${out.join('\n')}\n`);
    } else if (SHOW_ALL_CONSOLE && result.console?.length) {
      process.stderr.write(`\nconsole output of ${path}:\n${formatConsole(result.console)}\n`);
    }
  }

  async onRunComplete(_contexts, results) {
    const wallMs = Date.now() - this.startedAt;
    // A handle being closed (a child process just exited, a socket just ended) goes in a moment.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const slow = [...this.files].sort((a, b) => b.durationMs - a.durationMs).slice(0, this.slowest);
    const out = [''];
    if (slow.length > 0) {
      out.push(`slowest ${slow.length} files:`);
      for (const f of slow) out.push(`  ${seconds(f.durationMs).padStart(8)}  ${f.path}`);
    }
    const failedFiles = this.files.filter((f) => f.failed);
    if (failedFiles.length > 0) {
      out.push(`failed files:`);
      for (const f of failedFiles) out.push(`  ${f.path}`);
    }
    const end = openResources();
    const left = Object.entries(end).filter(([type, n]) => n > (this.resourcesAtStart[type] ?? 0));
    if (left.length > 0) {
      out.push(`still open when the run ended: ${left.map(([type, n]) => `${type} x${n - (this.resourcesAtStart[type] ?? 0)}`).join(', ')}; added by:`);
      for (const [path, added] of this.grew.filter(([, a]) => left.some(([type]) => a[type]))) {
        out.push(`  ${path}: ${Object.entries(added).map(([type, n]) => `${type} x${n}`).join(', ')}`);
      }
    }
    const t = results;
    out.push(
      `test files: ${t.numFailedTestSuites} failed, ${t.numPassedTestSuites} passed, ${t.numTotalTestSuites} total` +
        (t.numRuntimeErrorTestSuites ? ` (${t.numRuntimeErrorTestSuites} could not run)` : ''),
    );
    out.push(`tests:      ${t.numFailedTests} failed, ${t.numPassedTests} passed, ${t.numPendingTests + t.numTodoTests} skipped, ${t.numTotalTests} total`);
    out.push(`time:       ${seconds(wallMs)} wall clock`);
    if (t.snapshot && t.snapshot.failure) out.push('snapshots:  obsolete or failed snapshots (run with --ci=false to see them)');
    process.stderr.write(`${out.join('\n')}\n`);
  }

  getLastError() {
    return undefined;
  }
}

module.exports = QuietReporter;
