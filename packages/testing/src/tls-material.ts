// A throwaway certificate authority, server and client certificates made with openssl at run time, so no key is ever checked in.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OWNER_FILE, TEMP_DIR_PREFIX, onProcessExit, ownerPid, removeDirQuietly, sweepStaleTempDirs } from './process-cleanup';

/** PEM files (paths, for redis-server) and their text (for clients) of one test CA and the certificates it signed. */
export interface TlsMaterial {
  readonly dir: string;
  readonly caFile: string;
  readonly serverCertFile: string;
  readonly serverKeyFile: string;
  readonly clientCertFile: string;
  readonly clientKeyFile: string;
  /** The CA certificate (PEM): what a client passes as `ca` to trust the server. */
  readonly ca: string;
  /** A client certificate and key signed by the same CA (PEM), for servers that require client certificates. */
  readonly clientCert: string;
  readonly clientKey: string;
}

const OPENSSL = process.env.FLOODGATE_OPENSSL ?? 'openssl';
let cached: TlsMaterial | undefined;

function openssl(dir: string, args: string[]): void {
  try {
    execFileSync(OPENSSL, args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (error) {
    const e = error as NodeJS.ErrnoException & { stderr?: Buffer };
    if (e.code === 'ENOENT') {
      throw new Error('openssl is not installed: the TLS tests make their certificates with it (apt-get install openssl; .ci/run installs it where missing).');
    }
    throw new Error(`openssl ${args.join(' ')} failed: ${e.stderr?.toString() ?? e.message}`);
  }
}

/**
 * A CA valid for two days, a server certificate for 127.0.0.1 and localhost, and a client
 * certificate, on EC P-256 keys (fast to make). Made once per process and removed at its exit.
 */
export function tlsMaterial(): TlsMaterial {
  if (cached) return cached;
  sweepStaleTempDirs();
  const dir = mkdtempSync(join(tmpdir(), `${TEMP_DIR_PREFIX}tls-`));
  writeFileSync(join(dir, OWNER_FILE), String(ownerPid()));
  onProcessExit(() => removeDirQuietly(dir));
  const key = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(dir, ['req', '-x509', '-new', ...key, '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=Floodgate test CA']);
  writeFileSync(join(dir, 'server.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n');
  writeFileSync(join(dir, 'client.ext'), 'extendedKeyUsage=clientAuth\n');
  for (const who of ['server', 'client']) {
    openssl(dir, ['req', '-new', ...key, '-keyout', `${who}.key`, '-out', `${who}.csr`, '-subj', `/CN=floodgate-test-${who}`]);
    openssl(dir, ['x509', '-req', '-in', `${who}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${who}.crt`, '-days', '2', '-extfile', `${who}.ext`]);
  }
  const file = (name: string) => join(dir, name);
  cached = {
    dir,
    caFile: file('ca.crt'),
    serverCertFile: file('server.crt'),
    serverKeyFile: file('server.key'),
    clientCertFile: file('client.crt'),
    clientKeyFile: file('client.key'),
    ca: readFileSync(file('ca.crt'), 'utf8'),
    clientCert: readFileSync(file('client.crt'), 'utf8'),
    clientKey: readFileSync(file('client.key'), 'utf8'),
  };
  return cached;
}
