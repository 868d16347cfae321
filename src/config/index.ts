export { type EngineSettings, engineSchema } from './engine-schema.js';
export { CONFIG_FILE_ENV, DEFAULT_CONFIG_FILE, ENV_BINDINGS, type Environment } from './env.js';
export { formatProblem, SettingsError, type SettingsProblem } from './errors.js';
export {
  DEFAULT_OPS_ADDR,
  DEFAULT_WEBHOOK_ADDR,
  type ListenAddress,
  type ListenerPlan,
  planListeners,
} from './listeners.js';
export { type LoadSettingsInput, loadSettings } from './load.js';
export { type Settings, settingsSchema } from './schema.js';
export { createClientFromSettings, MissingTokenError, requireToken } from './service-client.js';
export { type TrackingSettings, trackingSettingsSchema } from './tracking-schema.js';
