import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import {
  createMemoryLimit,
  deploymentMemoryLimitMib,
  insideLimit,
} from '../../bench/harness/memory-limit.js';

/** Prints what a Node process started inside the limit sees: the memory V8 sized its heap from. */
const REPORTER = `console.log(JSON.stringify({ constrained: process.constrainedMemory(), pid: process.pid }))`;

describe('the bench replicas run under the deployment memory limit', () => {
  it('reads the worker container limit from deploy/kubernetes', async () => {
    const text = await readFile('deploy/kubernetes/base/deployment.yaml', 'utf8');
    const container = (
      parseAllDocuments(text)[0]!.toJS() as {
        spec: { template: { spec: { containers: { resources: { limits: { memory: string } } }[] } } };
      }
    ).spec.template.spec.containers[0]!;
    const [, amount, unit] = /^(\d+)(Mi|Gi)$/.exec(container.resources.limits.memory)!;
    expect(await deploymentMemoryLimitMib()).toBe(Number(amount) * (unit === 'Gi' ? 1024 : 1));
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
