const REDACTED = '[REDACTED]';

/**
 * Like the logger, secrets shorter than this are not scrubbed: replacing a one- or two-letter "token" would
 * mangle every body it appears in, and such a token is not a credential worth hiding anyway.
 */
const MIN_SCRUBBED_LENGTH = 4;

/**
 * Removes a secret from a decoded value that an error is about to keep. The service is not expected to
 * echo the bearer token, but error bodies end up in logs and the database, so we do not rely on it.
 */
export function scrubSecret(value: unknown, secret: string): unknown {
  // Every answer passes here, and almost none holds the secret: a copy only when one does.
  if (secret.length < MIN_SCRUBBED_LENGTH || !holdsSecret(value, secret)) return value;
  return scrubbed(value, secret);
}

function holdsSecret(value: unknown, secret: string): boolean {
  if (typeof value === 'string') return value.includes(secret);
  if (Array.isArray(value)) return value.some((item) => holdsSecret(item, secret));
  if (typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype) {
    for (const key in value) {
      if (key.includes(secret) || holdsSecret((value as Record<string, unknown>)[key], secret)) return true;
    }
    return false;
  }
  if (value instanceof Uint8Array)
    return Buffer.from(value.buffer, value.byteOffset, value.byteLength).includes(secret);
  return false;
}

function scrubbed(value: unknown, secret: string): unknown {
  if (typeof value === 'string') return value.split(secret).join(REDACTED);
  if (Array.isArray(value)) return value.map((item) => scrubSecret(item, secret));
  if (typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype) {
    const copy: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) {
      copy[scrubbed(key, secret) as string] = scrubbed(item, secret);
    }
    return copy;
  }
  if (value instanceof Uint8Array)
    return Buffer.from(value).toString('utf8').includes(secret) ? REDACTED : value;
  return value;
}

/**
 * Removes a secret from the messages and stacks of an error and its causes (V8 quotes the start of a
 * broken JSON text in its SyntaxError, so a body echoing the token would otherwise carry it along).
 */
export function scrubErrorChain(error: unknown, secret: string): void {
  let current: unknown = error;
  for (
    let depth = 0;
    depth < 8 && current instanceof Error && secret.length >= MIN_SCRUBBED_LENGTH;
    depth++
  ) {
    if (current.message.includes(secret)) current.message = current.message.split(secret).join(REDACTED);
    if (current.stack?.includes(secret)) current.stack = current.stack.split(secret).join(REDACTED);
    current = current.cause;
  }
}
