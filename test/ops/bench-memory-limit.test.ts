import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import {
  containerRows,
  createMemoryLimit,
  deployedContainer,
  insideLimit,
  memoryLimitMibOf,
  runtimeEnvOf,
} from '../../bench/harness/memory-limit.js';

/** Prints what a Node process started inside the limit sees: the memory V8 sized its heap from. */
const REPORTER = `console.log(JSON.stringify({ constrained: process.constrainedMemory(), pid: process.pid }))`;

describe('the bench replicas run under the deployment memory limit', () => {
  it("reads the first container's limits.memory in Mi or Gi, and names the file of any other", () => {
    const deployment = (memory: string) =>
      `apiVersion: apps/v1\nkind: Deployment\nspec:\n  template:\n    spec:\n      containers:\n        - name: worker\n          resources:\n            limits: { cpu: "2", memory: ${memory} }\n`;
    expect(memoryLimitMibOf(deployment('512Mi'), 'd.yaml')).toBe(512);
    expect(memoryLimitMibOf(deployment('2Gi'), 'd.yaml')).toBe(2048);
    expect(() => memoryLimitMibOf(deployment('500M'), 'd.yaml')).toThrow(
      'd.yaml: expected limits.memory in Mi or Gi, got "500M"',
    );
    expect(() => memoryLimitMibOf('kind: Deployment\n', 'd.yaml')).toThrow('got undefined');
  });

  it("reads deploy/kubernetes's worker limit and the runtime settings it runs with", async () => {
    const container = await deployedContainer();
    expect(container.memoryLimitMib).toBeGreaterThanOrEqual(256);
    // The young generation the burst figures were measured with (bench/README.md, "ninth session").
    expect(container.runtimeEnv.NODE_OPTIONS).toMatch(/--max-semi-space-size=\d+/);
  });

  it("takes the container's memory settings of the runtime, given as values, and nothing else", () => {
    const deployment = `apiVersion: apps/v1
kind: Deployment
spec:
  template:
    spec:
      containers:
        - name: worker
          env:
            - { name: NODE_OPTIONS, value: "--max-semi-space-size=4" }
            - { name: MALLOC_ARENA_MAX, value: "1" }
            - { name: TREASURY_OPS_ADDR, value: "0.0.0.0:9464" }
            - name: MALLOC_TOP_PAD_
              valueFrom: { configMapKeyRef: { name: tuning, key: pad } }
        - name: sidecar
          env:
            - { name: NODE_OPTIONS, value: "--max-old-space-size=64" }
`;
    const env = runtimeEnvOf(deployment);
    expect(env).toEqual({ NODE_OPTIONS: '--max-semi-space-size=4', MALLOC_ARENA_MAX: '1' });
    const printed = (runtimeEnv: Record<string, string>) =>
      containerRows('s', { memoryLimitMib: 512, runtimeEnv }, '')[1]!.value;
    expect(printed(env)).toBe('NODE_OPTIONS=--max-semi-space-size=4 MALLOC_ARENA_MAX=1');
    expect(printed(runtimeEnvOf('kind: Deployment\n'))).toBe('none');
  });

  it('starts a process inside a cgroup of that size, same pid, where this machine lets it make one', async (context) => {
    const limit = await createMemoryLimit('treasury-limit-test', 300);
    if (!limit) {
      context.skip('no memory cgroup can be created here: the bench then reports its replicas as unlimited');
      return;
    }
    try {
      const [command, args] = insideLimit(limit, process.execPath, ['-e', REPORTER]);
      const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      child.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString();
      });
      const [code] = await once(child, 'exit');
      expect(code).toBe(0);
      const seen = JSON.parse(out) as { constrained: number; pid: number };
      expect(seen.constrained).toBe(300 * 1024 * 1024);
      // The shell execs node: the pid the bench reads /proc of is the worker's own.
      expect(seen.pid).toBe(child.pid);
    } finally {
      await limit.remove();
    }
  });

  it('leaves the command as it is without a limit', () => {
    expect(insideLimit(undefined, '/usr/bin/node', ['a.js', 'run'])).toEqual([
      '/usr/bin/node',
      ['a.js', 'run'],
    ]);
  });
});
