import type { Logger } from '../observability/logger.js';

/**
 * One Ctrl-C can arrive twice: the terminal signals the whole foreground process group, and `npm start`
 * forwards the signal it got to its child as well. A repeat this soon is that echo, not an operator asking
 * for an immediate exit.
 */
const ECHO_WINDOW_MS = 1_000;

/**
 * The one place where the worker handles process signals: SIGINT and SIGTERM stop it gracefully (a second
 * one while stopping exits at once), SIGHUP reloads the strategy files. Returns a function that removes
 * the handlers.
 */
export function handleSignals(
  handlers: { stop: (signal: NodeJS.Signals) => Promise<void>; reload: () => Promise<unknown> },
  logger: Logger,
  now: () => number = () => performance.now(),
): () => void {
  let first: { signal: NodeJS.Signals; at: number } | undefined;
  const onStop = (signal: NodeJS.Signals) => {
    if (first !== undefined) {
      if (signal === first.signal && now() - first.at < ECHO_WINDOW_MS) return;
      logger.warn({ signal }, 'second stop signal: exiting without waiting for in-flight cycles');
      process.exit(1);
    }
    first = { signal, at: now() };
    logger.info({ signal }, 'stop signal received: draining in-flight cycles');
    void handlers.stop(signal);
  };
  const onReload = () => {
    logger.info('SIGHUP received: reloading the strategy files');
    void handlers.reload();
  };
  process.on('SIGINT', onStop);
  process.on('SIGTERM', onStop);
  process.on('SIGHUP', onReload);
  return () => {
    process.off('SIGINT', onStop);
    process.off('SIGTERM', onStop);
    process.off('SIGHUP', onReload);
  };
}
