/** One thing wrong with the settings, located where an operator can fix it. */
export interface SettingsProblem {
  /** `path/to/file.yaml:12:5`, `env TREASURY_HTTP_PORT`, or the file alone when no position is known. */
  where: string;
  /** Dotted settings key, e.g. `api.timeouts.connectMs`. */
  key: string;
  message: string;
}

/**
 * Settings that cannot be used. The message lists every problem, one per line, and never a secret's value
 * (the loader leaves the value out for secret keys).
 */
export class SettingsError extends Error {
  override readonly name = 'SettingsError';
  readonly code = 'SETTINGS_INVALID';

  constructor(
    readonly problems: readonly SettingsProblem[],
    options?: { cause?: unknown },
  ) {
    super(
      problems.length === 1
        ? `invalid settings: ${formatProblem(problems[0]!)}`
        : `invalid settings:\n${problems.map((problem) => `  ${formatProblem(problem)}`).join('\n')}`,
      options,
    );
  }
}

export function formatProblem(problem: SettingsProblem): string {
  return problem.key
    ? `${problem.where}: ${problem.key}: ${problem.message}`
    : `${problem.where}: ${problem.message}`;
}
