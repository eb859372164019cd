import { describe, expect, it } from 'vitest';
import { createSseParser, type SseEvent } from '../src/sse';

function parse(chunks: string[]): SseEvent[] {
  const events: SseEvent[] = [];
  const parser = createSseParser((e) => events.push(e));
  for (const c of chunks) parser.push(c);
  return events;
}

describe('SSE parser', () => {
  it('parses named events and skips comments (the keep-alive)', () => {
    expect(parse([':\n\nevent: task\ndata: {"id":"a"}\n\n'])).toEqual([{ type: 'task', data: '{"id":"a"}' }]);
  });

  it('joins data lines, defaults the type, and ignores events without data', () => {
    expect(parse(['data: one\ndata:two\n\nevent: empty\n\n'])).toEqual([{ type: 'message', data: 'one\ntwo' }]);
  });

  it('handles chunks split anywhere, including between \\r and \\n', () => {
    const text = 'event: task\r\ndata: {"a":1}\r\n\r\nevent: notice\rdata: x\r\r\n';
    const whole = parse([text]);
    expect(whole).toEqual([
      { type: 'task', data: '{"a":1}' },
      { type: 'notice', data: 'x' },
    ]);
    for (let i = 1; i < text.length; i++) {
      expect(parse([text.slice(0, i), text.slice(i)])).toEqual(whole);
    }
    expect(parse(text.split(''))).toEqual(whole);
  });

  it("reads the daemon's settings event: the map as one data line", () => {
    expect(parse(['event: settings\ndata: {"reminders.paused":"true"}\n\n'])).toEqual([
      { type: 'settings', data: '{"reminders.paused":"true"}' },
    ]);
  });

  it('waits for the blank line before dispatching', () => {
    expect(parse(['event: task\ndata: {}\n'])).toEqual([]);
  });
});
