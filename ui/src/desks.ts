// A desk's delivery command, checked the way the daemon checks it (`checked_command` in
// crates/server owner.rs) so a typo or a pasted script is caught before a round trip. The
// API's answer still has the last word: its refusal is shown as it comes.

/** The longest command the daemon stores, in UTF-8 bytes. */
export const DELIVER_COMMAND_MAX_BYTES = 4096;

// Rust's `char::is_whitespace` (Unicode White_Space), which the daemon's `trim` uses; JavaScript's
// `\s` differs in two characters (U+FEFF, U+0085).
const BLANK = /^[\t-\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*$/u;

/** What the daemon makes of the text: blank is no command (null); anything else is kept as typed. */
export function deliverCommandOf(text: string): string | null {
  return BLANK.test(text) ? null : text;
}

/** Why the daemon would refuse this command, or null if it would take it. */
export function checkDeliverCommand(text: string): string | null {
  const command = deliverCommandOf(text);
  if (command === null) return null;
  if (/[\n\r\0]/.test(command)) {
    return 'The delivery command must be one line; put a longer one in a script and run that.';
  }
  const bytes = new TextEncoder().encode(command).length;
  if (bytes > DELIVER_COMMAND_MAX_BYTES) {
    return `The delivery command must be at most ${DELIVER_COMMAND_MAX_BYTES} bytes (this one has ${bytes}); put it in a script and run that.`;
  }
  return null;
}
