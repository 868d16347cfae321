/**
 * Opens a purchase-service client for one operator command: from the settings, or, when no service
 * address is configured, against the built-in sandbox started in this process (demo mode).
 */
import type { PurchaseClient } from '../api/index.js';
import { createClientFromSettings, loadSettings, requireToken, type Settings } from '../config/index.js';

export interface ApiSession {
  client: PurchaseClient;
  settings: Settings;
  /** Values that must not reach the terminal (token, webhook secret). */
  secrets: string[];
}

export async function withApiSession<T>(run: (session: ApiSession) => Promise<T>): Promise<T> {
  const settings = loadSettings({ env: process.env });
  let baseUrl = settings.api.url;
  let token = settings.api.token;
  let closeSandbox: (() => Promise<void>) | undefined;
  if (baseUrl === undefined) {
    // Loaded on demand: the simulator (and its web framework) is only needed in demo mode.
    const { startSandbox, DEMO_TOKEN } = await import('../sandbox/index.js');
    const sandbox = await startSandbox();
    closeSandbox = () => sandbox.close();
    baseUrl = sandbox.url;
    token = DEMO_TOKEN;
    process.stderr.write(
      `treasury-bot: DEMO MODE: TREASURY_API_URL is unset, using the built-in sandbox at ${sandbox.url} (simulated prices, nothing real is bought)\n`,
    );
  } else {
    token = requireToken(settings);
  }
  const client = createClientFromSettings(settings, { baseUrl, token });
  const secrets = [token, settings.webhook.secret].filter((value): value is string => value !== undefined);
  try {
    return await run({ client, settings, secrets });
  } finally {
    await client.close();
    await closeSandbox?.();
  }
}
