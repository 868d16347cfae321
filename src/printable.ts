/**
 * Text from outside (a name, a reason, an id the service sent) made safe to show where a character can act:
 * a terminal, where a line break forges a line and an escape sequence moves the cursor or erases, and a
 * spreadsheet opening a CSV file, where a cell that begins like a formula is run.
 */

/**
 * C0 controls and DEL, C1 controls, the line and paragraph separators, and the bidirectional overrides
 * that reorder what a reader sees.
 */
const CONTROL = /[\p{Cc}\u2028\u2029\u202a-\u202e\u2066-\u2069]/gu;
const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/** Every control character as its escape (`\n`, `\u001b`), so the text shows on one line as it is. */
export function printable(text: string): string {
  return text.replace(
    CONTROL,
    (char) => NAMED[char] ?? `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/**
 * A CSV cell of text from outside: printable, and with a leading apostrophe when it begins with what a
 * spreadsheet takes for a formula (OWASP's list: `=`, `+`, `-`, `@`, tab, carriage return).
 */
export function spreadsheetSafe(text: string): string {
  const shown = printable(text);
  return /^[=+\-@\t\r]/.test(text) ? `'${shown}` : shown;
}
