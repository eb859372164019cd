// The one kind of failure the views see. Every transport turns what went wrong (an HTTP error
// body, a Tauri rejection, no daemon at all, a shape it did not expect) into a DataError.

/** A failure the UI can show; `kind` is stable for branching, `message` is for people. */
export class DataError extends Error {
  readonly kind: string;

  constructor(kind: string, message: string) {
    super(message);
    this.name = 'DataError';
    this.kind = kind;
  }
}

/** Anything thrown, as a DataError (components only ever show DataErrors). */
export function asDataError(err: unknown): DataError {
  return err instanceof DataError ? err : new DataError('unknown', describe(err));
}

export function unreachable(err: unknown): DataError {
  return new DataError(
    'unreachable',
    `Can't reach the Taskkeeper daemon (${describe(err)}). Is \`taskkeeper serve --ui\` still running?`,
  );
}

export function describe(err: unknown): string {
  if (err instanceof Error) return err.message;
  if (typeof err === 'string') return err;
  return String(err);
}
