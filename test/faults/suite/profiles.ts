import type { ChaosSettings } from './chaos.js';

/** How big and how long a fault run is. */
export interface FaultProfile {
  name: string;
  replicas: number;
  strategies: number;
  /** Time under chaos. */
  chaosMs: number;
  /** Once chaos stops, how long the replicas get to settle every cycle before the run fails. */
  settleTimeoutMs: number;
  chaos: ChaosSettings;
}

/** Inside `npm test`: every kind of fault at least once, in well under a minute. */
export const SHORT_PROFILE: FaultProfile = {
  name: 'short',
  replicas: 3,
  strategies: 4,
  chaosMs: 18_000,
  settleTimeoutMs: 25_000,
  chaos: {
    seed: 20_240_601,
    killEveryMs: 3_500,
    restartWithinMs: 1_000,
    faultWindowMs: 2_500,
    faultGapMs: 1_000,
    terminateEveryMs: 4_000,
  },
};

/** `npm run test:faults`: two minutes of chaos, each fault kind many times. */
export const LONG_PROFILE: FaultProfile = {
  name: 'long',
  replicas: 3,
  strategies: 8,
  chaosMs: 120_000,
  settleTimeoutMs: 60_000,
  chaos: {
    seed: 7_301,
    killEveryMs: 3_000,
    restartWithinMs: 1_500,
    faultWindowMs: 4_000,
    faultGapMs: 1_500,
    terminateEveryMs: 4_000,
  },
};
