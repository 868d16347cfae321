export { credentialFingerprint, DEMO_TOKEN, demoTokenOf, SandboxOptionsError } from './accounts.js';
export { faultConfigSchema } from './faults.js';
export { startSandbox } from './server.js';
export type {
  FaultConfig,
  MalformedKind,
  OrderStatus,
  RouteFaults,
  RouteName,
  RunningSandbox,
  SandboxAccountOptions,
  SandboxOptions,
  SandboxOrderView,
  SandboxRequestRecord,
} from './types.js';
