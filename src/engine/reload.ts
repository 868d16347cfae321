/**
 * Watches the strategy files for changes (fs.watch, debounced: editors write a file in several steps, and
 * a folder change may touch many files). The watch is a hint; applying is the worker's reload, which
 * validates everything first. SIGHUP triggers the same reload (signals.ts).
 */
import { type FSWatcher, statSync, watch } from 'node:fs';
import { basename, dirname } from 'node:path';
import type { Logger } from '../observability/logger.js';

export interface StrategyWatcher {
  close(): void;
}

export function watchStrategyFiles(
  path: string,
  debounceMs: number,
  onChange: () => void,
  logger: Logger,
): StrategyWatcher {
  let timer: NodeJS.Timeout | undefined;
  const trigger = () => {
    if (timer) clearTimeout(timer);
    timer = setTimeout(onChange, debounceMs);
  };
  let watcher: FSWatcher | undefined;
  try {
    const isFolder = statSync(path).isDirectory();
    // A single file is watched through its folder: editors replace files by renaming over them, and a
    // watch on the file itself would stay on the old, replaced one.
    const target = isFolder ? path : dirname(path);
    const name = isFolder ? undefined : basename(path);
    watcher = watch(target, (_event, filename) => {
      if (name === undefined || filename === null || filename === name) trigger();
    });
    watcher.on('error', (error) =>
      logger.warn({ err: error, path }, 'strategy file watch failed; SIGHUP still reloads'),
    );
  } catch (error) {
    logger.warn({ err: error, path }, 'cannot watch the strategy files; SIGHUP still reloads');
  }
  return {
    close() {
      if (timer) clearTimeout(timer);
      watcher?.close();
    },
  };
}
