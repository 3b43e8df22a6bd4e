// `pnpm demo`: starts the playground (examples/playground) with tsx, passing arguments and signals through.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const playground = join(dirname(fileURLToPath(import.meta.url)), '..', 'examples', 'playground');

let tsxCli;
try {
  tsxCli = createRequire(join(playground, 'package.json')).resolve('tsx/cli');
} catch {
  console.error('demo: tsx is not installed for examples/playground. Run `pnpm install` at the repository root first.');
  process.exit(1);
}

// --conditions=source makes the workspace packages load from their TypeScript sources: no build step.
const child = spawn(process.execPath, [tsxCli, '--conditions=source', 'src/main.ts', ...process.argv.slice(2)], {
  cwd: playground,
  stdio: 'inherit',
});

for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => child.kill(signal));
}
child.on('exit', (code, signal) => {
  process.exit(code ?? (signal ? 1 : 0));
});
