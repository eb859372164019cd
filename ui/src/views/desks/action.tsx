// One owner action at a time and its outcome line, shared by the desk's and sessions' controls.

import { useState } from 'preact/hooks';
import { asDataError } from '../../data';
import { Code } from '../../parts';

export interface Outcome {
  ok: boolean;
  text: string;
}

export function OutcomeLine({ outcome }: { outcome: Outcome | null }) {
  if (!outcome) return null;
  return (
    <p class={outcome.ok ? 'outcome' : 'outcome is-error'} role={outcome.ok ? 'status' : 'alert'}>
      <Code text={outcome.text} />
    </p>
  );
}

/** One owner action at a time, with its outcome: `run(call, done)` shows `done` or the error. */
export function useAction(onChanged: () => void) {
  const [busy, setBusy] = useState(false);
  const [outcome, setOutcome] = useState<Outcome | null>(null);
  const run = async (call: () => Promise<unknown>, done: string): Promise<boolean> => {
    setBusy(true);
    setOutcome(null);
    try {
      await call();
      setOutcome({ ok: true, text: done });
      onChanged();
      return true;
    } catch (err) {
      setOutcome({ ok: false, text: asDataError(err).message });
      return false;
    } finally {
      setBusy(false);
    }
  };
  return { busy, outcome, setOutcome, run };
}
