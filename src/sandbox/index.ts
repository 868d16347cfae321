export { faultConfigSchema } from './faults.js';
export { DEMO_TOKEN, startSandbox } from './server.js';
export type {
  FaultConfig,
  MalformedKind,
  OrderStatus,
  RouteFaults,
  RouteName,
  RunningSandbox,
  SandboxOptions,
  SandboxOrderView,
} from './types.js';
