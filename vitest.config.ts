import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    pool: 'forks',
    // Most test files wait on sockets, child processes and the database rather than the CPU; vitest's default
    // of one worker per core but one would run them one at a time on a 2-core machine.
    maxWorkers: 3,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    teardownTimeout: 20_000,
    reporters: ['default'],
  },
});
