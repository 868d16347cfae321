/**
 * `treasury-bot` as a child process (plain node on the program transpiled once by global setup), for tests where process
 * boundaries matter: replicas sharing a database, SIGKILL at random points, signals, exit codes and the
 * stdout/stderr contract of the CLI.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { cliInvocation } from './cli.js';

const ROOT = resolve(import.meta.dirname, '..', '..');

export interface RunningCommand {
  child: ChildProcess;
  /** stdout and stderr lines so far (log lines are JSON). */
  lines: string[];
  /** Resolves with the first line containing `text` (rejects if the process exits first). */
  waitForLine(text: string): Promise<string>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export function startCommand(args: string[], env: Record<string, string>): RunningCommand {
  const [command, commandArgs] = cliInvocation(args);
  const child = spawn(command, commandArgs, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  const watchers: { text: string; resolve: (line: string) => void }[] = [];
  const exited = once(child, 'exit').then(([code, signal]) => ({
    code: code as number | null,
    signal: signal as NodeJS.Signals | null,
  }));
  for (const stream of [child.stdout!, child.stderr!]) {
    let rest = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      const parts = (rest + chunk).split('\n');
      rest = parts.pop() ?? '';
      for (const line of parts) {
        lines.push(line);
        for (const watcher of [...watchers]) {
          if (line.includes(watcher.text)) {
            watchers.splice(watchers.indexOf(watcher), 1);
            watcher.resolve(line);
          }
        }
      }
    });
  }
  return {
    child,
    lines,
    exited,
    waitForLine(text) {
      const seen = lines.find((line) => line.includes(text));
      if (seen) return Promise.resolve(seen);
      return new Promise((resolvePromise, reject) => {
        watchers.push({ text, resolve: resolvePromise });
        void exited.then(({ code, signal }) =>
          reject(
            new Error(
              `process exited (${code ?? signal}) before printing "${text}":\n${lines.slice(-20).join('\n')}`,
            ),
          ),
        );
      });
    },
  };
}

/** Runs a command to completion: exit code, stdout and stderr. */
export async function runCommand(args: string[], env: Record<string, string>) {
  const [command, commandArgs] = cliInvocation(args);
  const child = spawn(command, commandArgs, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, stdout, stderr };
}

/** A folder with one strategies file and a settings file; returns the env pointing at both. */
export async function writeWorkerFiles(
  strategiesYaml: string,
  settingsYaml: string,
): Promise<Record<string, string>> {
  const folder = await mkdtemp(join(tmpdir(), 'tb-worker-'));
  await writeFile(join(folder, 'strategies.yaml'), strategiesYaml);
  await writeFile(join(folder, 'settings.yaml'), settingsYaml);
  return {
    TREASURY_STRATEGIES: join(folder, 'strategies.yaml'),
    TREASURY_CONFIG: join(folder, 'settings.yaml'),
    TREASURY_DATA_DIR: join(folder, 'data'),
  };
}

/** The environment of a `run` replica against a test database and a sandbox (demo token), logging at info. */
export async function replicaEnvironment(options: {
  strategiesYaml: string;
  settingsYaml: string;
  databaseUrl: string;
  apiUrl: string;
  apiToken: string;
}): Promise<Record<string, string>> {
  return {
    ...(await writeWorkerFiles(options.strategiesYaml, options.settingsYaml)),
    DATABASE_URL: options.databaseUrl,
    TREASURY_API_URL: options.apiUrl,
    TREASURY_API_TOKEN: options.apiToken,
    TREASURY_OPS_ADDR: '127.0.0.1:0',
    LOG_LEVEL: 'info',
  };
}
