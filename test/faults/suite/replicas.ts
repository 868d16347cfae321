/**
 * Worker replicas as child processes (`treasury-bot run` on plain node, as `npm start` runs it), each a
 * real process that can be SIGKILLed at any instant and started again. Output is drained (a full pipe
 * would stall a replica); the stderr before a crash is kept, so that a replica that dies on its own is
 * reported in its own words.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

export interface ReplicaEnvironment {
  /** The worker's command line entry: a JavaScript file taking `run`. */
  cliEntry: string;
  databaseUrl: string;
  apiUrl: string;
  apiToken: string;
  strategiesFile: string;
  settingsFile: string;
}

const REPOSITORY_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const KEPT_CHUNKS = 20;
const CRASH_RESTART_MS = 500;
/** A graceful stop drains in-flight cycles (bounded by the worker's drain timeout) and then exits. */
const STOP_TIMEOUT_MS = 45_000;

export class Replica {
  private child: ChildProcess | undefined;
  /** Children we signalled ourselves: their exit is not a failure. */
  private readonly signalled = new WeakSet<ChildProcess>();
  /** Exits nobody asked for (neither our SIGKILL nor our SIGTERM), with the stderr that preceded each. */
  readonly crashes: string[] = [];
  starts = 0;
  private supervising = true;
  private lastOutput: () => string = () => '';

  constructor(
    readonly name: string,
    private readonly environment: ReplicaEnvironment,
  ) {}

  get running(): boolean {
    return this.child !== undefined;
  }

  start(): void {
    if (this.child) return;
    const env = this.environment;
    const child = spawn(process.execPath, [env.cliEntry, 'run'], {
      cwd: REPOSITORY_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        DATABASE_URL: env.databaseUrl,
        TREASURY_API_URL: env.apiUrl,
        TREASURY_API_TOKEN: env.apiToken,
        TREASURY_STRATEGIES: env.strategiesFile,
        TREASURY_CONFIG: env.settingsFile,
        TREASURY_OPS_ADDR: '127.0.0.1:0',
        TREASURY_DRY_RUN: '0',
        LOG_LEVEL: 'warn',
      },
    });
    this.starts++;
    // The last log lines are kept for a replica that does not stop when told to.
    const stdout: string[] = [];
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout.push(chunk.toString());
      if (stdout.length > KEPT_CHUNKS) stdout.shift();
    });
    this.lastOutput = () => stdout.join('').trim();
    const stderr: string[] = [];
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr.push(chunk.toString());
      if (stderr.length > KEPT_CHUNKS) stderr.shift();
    });
    child.once('exit', (code, signal) => {
      if (this.child === child) this.child = undefined;
      if (this.signalled.has(child)) return;
      this.crashes.push(`exit ${code ?? signal}: ${stderr.join('').trim()}`);
      // As a process supervisor would (systemd, Kubernetes): a crashed replica comes back.
      if (this.supervising) setTimeout(() => this.supervising && this.start(), CRASH_RESTART_MS).unref();
    });
    this.child = child;
  }

  /** SIGKILL: no drain, no cleanup, as a crash or an OOM kill. */
  async kill(): Promise<void> {
    await this.signal('SIGKILL');
  }

  /**
   * SIGTERM: the graceful stop, which drains in-flight cycles. No restart after it. A replica that has not
   * exited after STOP_TIMEOUT_MS is reported (a stop that hangs is a defect) and killed.
   */
  async stop(): Promise<void> {
    this.supervising = false;
    const child = this.child;
    const stopped = this.signal('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), STOP_TIMEOUT_MS);
    });
    if ((await Promise.race([stopped, late])) === 'late' && child === this.child) {
      this.crashes.push(
        `did not stop within ${STOP_TIMEOUT_MS} ms of SIGTERM; last output: ${this.lastOutput()}`,
      );
      child?.kill('SIGKILL');
      await stopped;
    }
    clearTimeout(timer);
  }

  /** SIGKILL and no restart: the end of a run. */
  async dispose(): Promise<void> {
    this.supervising = false;
    await this.signal('SIGKILL');
  }

  private async signal(signal: NodeJS.Signals): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.signalled.add(child);
    const exited = once(child, 'exit');
    child.kill(signal);
    await exited;
    this.child = undefined;
  }
}
