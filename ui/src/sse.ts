// A server-sent events parser for the browser transport. `EventSource` would parse the stream
// for us, but it cannot send the `Authorization` header the daemon requires (design.md §9), so
// the data layer reads `/api/events` with `fetch` and feeds the text to this parser.
// It follows the WHATWG "event stream interpretation" for the fields the daemon uses.

export interface SseEvent {
  /** The `event:` field; `message` when the server sent none. */
  type: string;
  /** The `data:` lines, joined with newlines. */
  data: string;
}

export interface SseParser {
  /** Feed decoded text as it arrives; chunks may split lines anywhere. */
  push(chunk: string): void;
}

export function createSseParser(onEvent: (event: SseEvent) => void): SseParser {
  let buffer = '';
  let type = '';
  let data: string[] = [];

  const dispatch = () => {
    if (data.length > 0) onEvent({ type: type || 'message', data: data.join('\n') });
    type = '';
    data = [];
  };

  const line = (text: string) => {
    if (text === '') return dispatch();
    if (text.startsWith(':')) return; // a comment: the daemon's keep-alive
    const colon = text.indexOf(':');
    const field = colon === -1 ? text : text.slice(0, colon);
    let value = colon === -1 ? '' : text.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') type = value;
    else if (field === 'data') data.push(value);
    // `id` and `retry` are not used by the daemon; unknown fields are ignored by the spec.
  };

  return {
    push(chunk) {
      buffer += chunk;
      for (;;) {
        const end = buffer.search(/\r\n|\r|\n/);
        if (end === -1) return;
        // A lone '\r' at the end may be the first half of '\r\n': wait for the next chunk.
        if (buffer[end] === '\r' && end === buffer.length - 1) return;
        const width = buffer.startsWith('\r\n', end) ? 2 : 1;
        line(buffer.slice(0, end));
        buffer = buffer.slice(end + width);
      }
    },
  };
}
