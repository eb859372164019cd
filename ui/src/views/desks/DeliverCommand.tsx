// A desk's delivery command (how text reaches an agent without hooks), set or cleared here.

import { useEffect, useRef, useState } from 'preact/hooks';
import type { DataSource } from '../../data';
import { checkDeliverCommand, deliverCommandOf } from '../../desks';
import { Code } from '../../parts';
import type { DeskView } from '../../types';
import { OutcomeLine, useAction } from './action';

/** The desk's delivery command, and a small form to set or clear it. */
export function DeliverCommand({ data, desk, onChanged }: { data: DataSource; desk: DeskView; onChanged: () => void }) {
  const current = desk.deliverCommand ?? null;
  const { busy, outcome, setOutcome, run } = useAction(onChanged);
  const [editing, setEditing] = useState(false);
  const [draft, setDraft] = useState('');
  const [problem, setProblem] = useState<string | null>(null);
  const input = useRef<HTMLTextAreaElement>(null);
  const id = `deliver-${desk.name.replace(/[^a-z0-9-]/gi, '-')}`;

  useEffect(() => {
    if (editing) input.current?.focus();
  }, [editing]);

  const open = () => {
    setDraft(current ?? '');
    setProblem(null);
    setOutcome(null);
    setEditing(true);
  };
  const save = async (text: string) => {
    const found = checkDeliverCommand(text);
    setProblem(found);
    if (found) return input.current?.focus();
    const command = deliverCommandOf(text);
    const ok = await run(
      () => data.setDeliverCommand(desk.name, command),
      command === null ? 'This desk has no delivery command now.' : 'Delivery command saved.',
    );
    if (ok) setEditing(false);
  };

  return (
    <div class="deliver" data-deliver-command={desk.name}>
      <p class="deliver-line">
        <span class="note">Delivery command:</span>{' '}
        {current === null ? <span class="note">none</span> : <code class="deliver-command">{current}</code>}
        {!editing && (
          <button type="button" class="link" onClick={open}>
            {current === null ? 'Set…' : 'Edit…'}
          </button>
        )}
      </p>
      {editing && (
        <form
          class="edit"
          noValidate
          onSubmit={(e) => {
            e.preventDefault();
            void save(draft);
          }}
          onKeyDown={(e) => {
            if (e.key === 'Escape') {
              e.stopPropagation();
              setEditing(false);
            } else if (e.key === 'Enter' && !e.shiftKey && !e.isComposing && e.target === input.current) {
              // One line: Enter saves, as in a text field.
              e.preventDefault();
              void save(draft);
            }
          }}
        >
          <label for={id}>Delivery command for {desk.name}</label>
          <textarea
            id={id}
            ref={input}
            class="mono"
            rows={2}
            spellcheck={false}
            autoComplete="off"
            placeholder="none"
            value={draft}
            aria-invalid={problem ? 'true' : undefined}
            aria-describedby={`${id}-help${problem ? ` ${id}-error` : ''}`}
            onInput={(e) => {
              setDraft(e.currentTarget.value);
              setProblem(checkDeliverCommand(e.currentTarget.value));
            }}
          />
          <p class="help" id={`${id}-help`}>
            <Code text="Run with `sh -c` in the desk's directory, the text on its stdin, when there is no better way into the session (agents without hooks); exit status 0 means delivered. One line; empty for none." />
          </p>
          {problem && (
            <p class="field-error" id={`${id}-error`} role="alert">
              {problem}
            </p>
          )}
          <div class="row">
            <button type="submit" class="primary" disabled={busy}>
              {busy ? 'Saving…' : 'Save'}
            </button>
            {current !== null && (
              <button type="button" disabled={busy} onClick={() => void save('')}>
                Remove
              </button>
            )}
            <button type="button" disabled={busy} onClick={() => setEditing(false)}>
              Cancel
            </button>
          </div>
        </form>
      )}
      <OutcomeLine outcome={outcome} />
    </div>
  );
}
