/**
 * Opens a purchase-service client for one operator command: from the settings, or, when no service
 * address is configured, against the built-in sandbox started in this process (demo mode).
 */
import type { PurchaseClient } from '../api/index.js';
import { openService } from '../app.js';
import { createClientFromSettings, loadSettings, type Settings } from '../config/index.js';

export interface ApiSession {
  client: PurchaseClient;
  settings: Settings;
  /** Values that must not reach the terminal (token, webhook secret). */
  secrets: string[];
}

export async function withApiSession<T>(run: (session: ApiSession) => Promise<T>): Promise<T> {
  const settings = loadSettings({ env: process.env });
  const service = await openService(settings);
  if (service.demo) process.stderr.write(`treasury-bot: ${service.demo.notice}\n`);
  const client = createClientFromSettings(settings, { baseUrl: service.baseUrl, token: service.token });
  const secrets = [service.token, settings.webhook.secret].filter(
    (value): value is string => value !== undefined,
  );
  try {
    return await run({ client, settings, secrets });
  } finally {
    await client.close();
    await service.demo?.close();
  }
}
