import { Writable } from 'node:stream';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { handleSignals } from '../../src/engine/signals.js';
import { createLogger } from '../../src/observability/logger.js';

function capture() {
  const lines: { msg: string }[] = [];
  const logger = createLogger({
    level: 'info',
    destination: new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line));
        done();
      },
    }),
  });
  return { lines, logger };
}

/** Signals are emitted on `process` itself: the handlers are the real ones, only exit is intercepted. */
describe('stop signals', () => {
  let dispose = () => {};
  afterEach(() => {
    dispose();
    vi.restoreAllMocks();
  });

  it('treats the echo of one Ctrl-C (terminal group plus npm forwarding) as one stop request', () => {
    const { lines, logger } = capture();
    const exit = vi.spyOn(process, 'exit').mockImplementation((() => undefined) as never);
    let clock = 1_000;
    const stops: NodeJS.Signals[] = [];
    dispose = handleSignals(
      { stop: async (signal) => void stops.push(signal), reload: async () => undefined },
      logger,
      () => clock,
    );
    process.emit('SIGINT', 'SIGINT');
    clock += 20;
    process.emit('SIGINT', 'SIGINT');
    expect(stops).toEqual(['SIGINT']);
    expect(exit).not.toHaveBeenCalled();
    expect(lines.filter((line) => line.msg.startsWith('stop signal received'))).toHaveLength(1);
  });

  it('exits at once on a second stop request after the echo window, or on a different signal', () => {
    const { logger } = capture();
    const exit = vi.spyOn(process, 'exit').mockImplementation((() => undefined) as never);
    let clock = 1_000;
    dispose = handleSignals(
      { stop: async () => undefined, reload: async () => undefined },
      logger,
      () => clock,
    );
    process.emit('SIGINT', 'SIGINT');
    clock += 1_500;
    process.emit('SIGINT', 'SIGINT');
    expect(exit).toHaveBeenCalledWith(1);

    exit.mockClear();
    dispose();
    dispose = handleSignals(
      { stop: async () => undefined, reload: async () => undefined },
      logger,
      () => clock,
    );
    process.emit('SIGTERM', 'SIGTERM');
    process.emit('SIGINT', 'SIGINT');
    expect(exit).toHaveBeenCalledWith(1);
  });
});
