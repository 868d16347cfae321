export { clearTextWarnings } from './clear-text.js';
export { CONFIG_FILE_ENV, DEFAULT_CONFIG_FILE, ENV_BINDINGS, type Environment } from './env.js';
export {
  consoleHosts,
  DEFAULT_OPS_ADDR,
  DEFAULT_WEBHOOK_ADDR,
  type ListenAddress,
  type ListenerPlan,
  planListeners,
} from './listeners.js';
export {
  formatProblem,
  type LoadSettingsInput,
  loadSettings,
  SettingsError,
  type SettingsProblem,
} from './load.js';
export {
  type ChannelSettings,
  channelSecrets,
  type NotificationSettings,
  notificationsSchema,
} from './notifications-schema.js';
export {
  type AccountSettings,
  type ApiSettings,
  type EngineSettings,
  engineSchema,
  isDemo,
  type Settings,
  settingsSchema,
  type TrackingSettings,
  trackingSettingsSchema,
} from './schema.js';
export { createAccountClient, MissingTokenError, requireToken } from './service-client.js';
