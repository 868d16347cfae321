/**
 * Who may have a password checked now. Three limits, each against a different abuse, none of which lets a
 * stranger keep a person out for good:
 *
 * - per name: after a few wrong passwords, each further attempt at that name (from any address) waits a
 *   delay that doubles per wrong password, up to a ceiling. An attempt inside the delay is refused without
 *   a password check, so guessing one person's password is slow; once the delay is over the person's own
 *   password works again, whoever caused it. A lockout would hand that power to anyone who knows a name.
 * - per address: wrong passwords from one address, across names, are capped per window, so spraying many
 *   names is slow too. Behind a proxy every client shares the proxy's address unless the proxy is trusted
 *   (ops.trustedProxies): then request.ip is the client's.
 * - per process: at most a few password checks run at once (each scrypt takes 128 MiB and a thread for a
 *   fraction of a second); the rest are refused at once rather than queued.
 *
 * The state is this process's memory: a replica restarted forgets it, and each replica counts its own.
 * Both maps forget idle entries and are bounded in size, so a flood of names cannot grow them without end.
 */

/** Wrong passwords for a name before any delay. */
export const LOGIN_FREE_FAILURES = 3;
/** The first delay; it doubles with each further wrong password. */
export const LOGIN_DELAY_BASE_MS = 1_000;
/** The longest delay: the most a stranger can make a person wait. */
export const LOGIN_DELAY_MAX_MS = 60_000;
/** A name's wrong passwords are forgotten after this long without one. */
const NAME_MEMORY_MS = 15 * 60_000;
/** Wrong passwords from one address, across names, per window. */
export const LOGIN_ADDRESS_FAILURES = 20;
export const LOGIN_ADDRESS_WINDOW_MS = 10 * 60_000;
/** Password checks running at once; one scrypt at the stored cost takes 128 MiB. */
export const LOGIN_HASHES_AT_ONCE = 2;
/** Entries kept per map at most; past it the oldest are dropped (they are the least useful). */
const MAX_ENTRIES = 10_000;

export type LoginRefusalReason = 'name_delayed' | 'address_capped' | 'busy';

export interface LoginRefusal {
  reason: LoginRefusalReason;
  /** Whole seconds until an attempt may be checked again (at least 1). */
  retryAfterSeconds: number;
}

interface NameState {
  failures: number;
  lastFailureAt: number;
}

interface AddressState {
  failures: number;
  windowStart: number;
}

export interface LoginThrottle {
  /**
   * Whether this attempt may have its password checked now; when it may, `release` must be called once the
   * check is over (it frees the check's slot).
   */
  admit(name: string, address: string, now: Date): { refusal: LoginRefusal } | { release: () => void };
  failed(name: string, address: string, now: Date): void;
  succeeded(name: string): void;
  /**
   * The per-address cap alone, for a sign-in that checks no password (single sign-on's callback): a refusal
   * while the address is capped, else nothing.
   */
  addressRefusal(address: string, now: Date): LoginRefusal | undefined;
  /** A refused sign-in that named no person of ours (a bad answer of the provider, an unmapped person). */
  failedFrom(address: string, now: Date): void;
}

/** The delay after `failures` wrong passwords for one name, in ms (0 while they are free). */
export function delayAfter(failures: number): number {
  if (failures < LOGIN_FREE_FAILURES) return 0;
  return Math.min(LOGIN_DELAY_MAX_MS, LOGIN_DELAY_BASE_MS * 2 ** (failures - LOGIN_FREE_FAILURES));
}

export function createLoginThrottle(): LoginThrottle {
  const names = new Map<string, NameState>();
  const addresses = new Map<string, AddressState>();
  let hashing = 0;
  // Names are compared as the person-name rule compares them: case-insensitively.
  const keyOf = (name: string) => name.toLowerCase();
  const seconds = (ms: number) => Math.max(1, Math.ceil(ms / 1_000));

  const nameState = (name: string, now: number): NameState | undefined => {
    const state = names.get(keyOf(name));
    if (state && now - state.lastFailureAt > NAME_MEMORY_MS) {
      names.delete(keyOf(name));
      return undefined;
    }
    return state;
  };
  const addressState = (address: string, now: number): AddressState | undefined => {
    const state = addresses.get(address);
    if (state && now - state.windowStart >= LOGIN_ADDRESS_WINDOW_MS) {
      addresses.delete(address);
      return undefined;
    }
    return state;
  };

  const addressRefusal = (address: string, now: number): LoginRefusal | undefined => {
    const byAddress = addressState(address, now);
    if (!byAddress || byAddress.failures < LOGIN_ADDRESS_FAILURES) return undefined;
    const left = byAddress.windowStart + LOGIN_ADDRESS_WINDOW_MS - now;
    return { reason: 'address_capped', retryAfterSeconds: seconds(left) };
  };
  const failedFrom = (address: string, now: number) => {
    const byAddress = addressState(address, now);
    if (byAddress) byAddress.failures++;
    else remember(addresses, address, { failures: 1, windowStart: now });
  };

  return {
    admit(name, address, when) {
      const now = when.getTime();
      const capped = addressRefusal(address, now);
      if (capped) return { refusal: capped };
      const byName = nameState(name, now);
      if (byName) {
        const left = byName.lastFailureAt + delayAfter(byName.failures) - now;
        if (left > 0) return { refusal: { reason: 'name_delayed', retryAfterSeconds: seconds(left) } };
      }
      if (hashing >= LOGIN_HASHES_AT_ONCE) return { refusal: { reason: 'busy', retryAfterSeconds: 1 } };
      hashing++;
      let released = false;
      return {
        release: () => {
          if (released) return;
          released = true;
          hashing--;
        },
      };
    },

    failed(name, address, when) {
      const now = when.getTime();
      const byName = nameState(name, now);
      remember(names, keyOf(name), { failures: (byName?.failures ?? 0) + 1, lastFailureAt: now });
      failedFrom(address, now);
    },

    succeeded(name) {
      names.delete(keyOf(name));
    },

    addressRefusal: (address, when) => addressRefusal(address, when.getTime()),
    failedFrom: (address, when) => failedFrom(address, when.getTime()),
  };
}

/** Sets the entry as the newest, dropping the oldest past the bound. */
function remember<T>(map: Map<string, T>, key: string, value: T): void {
  map.delete(key);
  map.set(key, value);
  if (map.size > MAX_ENTRIES) {
    const oldest = map.keys().next().value;
    if (oldest !== undefined) map.delete(oldest);
  }
}
