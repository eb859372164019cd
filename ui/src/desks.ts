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

// A headless session's permission request (`SessionView.permission`): what the Desks view says
// it asks, and whether its input is long enough to fold away.

/** The input shown open up to this many characters and lines; a longer one starts folded. */
export const PERMISSION_INPUT_OPEN_CHARS = 240;
export const PERMISSION_INPUT_OPEN_LINES = 4;

/** "wants to use Bash: touch x", or without a description "wants to use Bash". */
export function permissionAsk(tool: string, description: string | null): string {
  const what = description?.trim() ?? '';
  return what === '' ? `wants to use ${tool}` : `wants to use ${tool}: ${what}`;
}

/** Whether the tool's input (JSON text, up to 2000 characters) starts folded. */
export function isLongInput(input: string): boolean {
  return input.length > PERMISSION_INPUT_OPEN_CHARS || input.split('\n').length > PERMISSION_INPUT_OPEN_LINES;
}

/** An agent kind as the window names it: how a session of it is started, and connected. */
export interface AgentKindInfo {
  /** Its name in sentences. */
  name: string;
  /** The command a user starts it with in a desk's directory. */
  command: string;
  /** What the daemon runs for a headless session of it (`session launch`); null: none. */
  headless: string | null;
  /** How it is connected once (hooks and the MCP server). */
  connect: string;
}

const AGENT_KINDS: Record<string, AgentKindInfo> = {
  'claude-code': {
    name: 'Claude Code',
    command: 'claude',
    headless: 'claude -p',
    connect: 'Settings, or `taskkeeper connect claude-code`',
  },
  codex: { name: 'Codex CLI', command: 'codex', headless: 'codex app-server', connect: '`taskkeeper connect codex`' },
  gemini: { name: 'Gemini CLI', command: 'gemini', headless: 'gemini --acp', connect: '`taskkeeper connect gemini`' },
};

/** The agent kinds the window shows a Connect hint for, in that order. */
export const CONNECTABLE = ['claude-code', 'codex', 'gemini'];

/**
 * What the window knows of a desk's agent kind (the daemon's `AgentKind`); a generic desk's
 * agent, or one this window does not know, is reached only through its own hooks and the
 * desk's command: no headless launch.
 */
export function agentKind(agent: string): AgentKindInfo {
  return AGENT_KINDS[agent] ?? { name: agent, command: agent, headless: null, connect: '`taskkeeper report` from its own hooks' };
}
