import { describe, expect, it } from 'vitest';
import {
  agentKind,
  CONNECTABLE,
  checkDeliverCommand,
  DELIVER_COMMAND_MAX_BYTES,
  deliverCommandOf,
  isLongInput,
  PERMISSION_INPUT_OPEN_CHARS,
  permissionAsk,
} from '../src/desks';

describe('delivery command checks', () => {
  it('takes one line of at most 4096 bytes, as typed', () => {
    for (const ok of ['cat >> ~/inbox.txt', 'tmux send-keys -t work:1 -l "$(cat)" Enter', ' cat ', 'x'.repeat(4096)]) {
      expect(checkDeliverCommand(ok)).toBeNull();
      expect(deliverCommandOf(ok)).toBe(ok);
    }
  });

  it('reads blank as no command, with the daemon’s idea of blank', () => {
    for (const blank of ['', '   ', '\t', ' \n ', '\u00a0', '\u3000', '\u0085']) {
      expect(deliverCommandOf(blank)).toBeNull();
      // A blank one is no command, so never refused, even with a line break in it.
      expect(checkDeliverCommand(blank)).toBeNull();
    }
    // Rust's trim keeps U+FEFF, so the daemon would store it.
    expect(deliverCommandOf('\ufeff')).toBe('\ufeff');
  });

  it('refuses what the daemon refuses', () => {
    for (const bad of ['cat\nrm -rf ~', 'cat\r', 'cat\r\n', 'a\0b', 'cat\n']) {
      expect(checkDeliverCommand(bad)).toMatch(/one line/);
    }
    expect(checkDeliverCommand('x'.repeat(DELIVER_COMMAND_MAX_BYTES + 1))).toMatch(/at most 4096 bytes \(this one has 4097\)/);
    // Bytes, not characters: 2048 two-byte letters fit, one more does not.
    expect(checkDeliverCommand('é'.repeat(2048))).toBeNull();
    expect(checkDeliverCommand('é'.repeat(2049))).toMatch(/this one has 4098/);
  });
});

describe('permission requests', () => {
  it('says what the session wants, with or without a description', () => {
    expect(permissionAsk('Bash', 'touch x')).toBe('wants to use Bash: touch x');
    expect(permissionAsk('Write', null)).toBe('wants to use Write');
    expect(permissionAsk('Write', '  ')).toBe('wants to use Write');
  });

  it('folds a long input, by characters or by lines', () => {
    expect(isLongInput('{"command":"touch x"}')).toBe(false);
    expect(isLongInput('x'.repeat(PERMISSION_INPUT_OPEN_CHARS))).toBe(false);
    expect(isLongInput('x'.repeat(PERMISSION_INPUT_OPEN_CHARS + 1))).toBe(true);
    expect(isLongInput('a\nb\nc\nd')).toBe(false);
    expect(isLongInput('a\nb\nc\nd\ne')).toBe(true);
    // What the daemon cut: 2000 characters and an ellipsis.
    expect(isLongInput(`${'x'.repeat(2000)}…`)).toBe(true);
  });
});

describe('agent kinds', () => {
  it('names each kind, and launches headless exactly the kinds the daemon launches', () => {
    expect(agentKind('claude-code').headless).toBe('claude -p');
    expect(agentKind('codex')).toMatchObject({ name: 'Codex CLI', headless: 'codex app-server' });
    expect(agentKind('gemini')).toMatchObject({ name: 'Gemini CLI', headless: 'gemini --acp' });
    expect(agentKind('generic').headless).toBeNull();
    expect(agentKind('something-new')).toMatchObject({ name: 'something-new', headless: null });
    expect(CONNECTABLE.map((k) => agentKind(k).connect)).toEqual([
      'Settings, or `taskkeeper connect claude-code`',
      '`taskkeeper connect codex`',
      '`taskkeeper connect gemini`',
    ]);
  });
});
