// A claude-code, codex or gemini desk's headless sessions: launch one now, or let the desk
// launch one by itself.

import type { DataSource } from '../../data';
import { agentKind } from '../../desks';
import { formatTime } from '../../tasks';
import type { DeskView } from '../../types';
import { OutcomeLine, useAction } from './action';

/** Launch a headless session of the desk's agent (`claude -p`, `codex app-server`, `gemini --acp`; owned by the daemon). */
export function Launch({ data, desk, onChanged }: { data: DataSource; desk: DeskView; onChanged: () => void }) {
  const { busy, outcome, run } = useAction(onChanged);
  const { name, headless } = agentKind(desk.agent);
  return (
    <div class="launch">
      <button
        type="button"
        disabled={busy}
        title={`Start ${name} without a terminal (\`${headless ?? ''}\`); Taskkeeper hands it this desk's tasks on its stdin`}
        onClick={() => void run(() => data.launchSession(desk.name), 'Launched a headless session; it appears below.')}
      >
        {busy ? 'Launching…' : 'Launch headless session'}
      </button>
      <OutcomeLine outcome={outcome} />
    </div>
  );
}

/** Whether the desk launches a headless session by itself when it has work and none is live. */
export function AutoLaunch({ data, desk, now, onChanged }: { data: DataSource; desk: DeskView; now: number; onChanged: () => void }) {
  const { busy, outcome, run } = useAction(onChanged);
  const on = desk.autoLaunch === true;
  return (
    <div class="auto-launch">
      <label>
        <input
          type="checkbox"
          checked={on}
          disabled={busy}
          data-auto-launch={desk.name}
          onChange={(e) => {
            const next = e.currentTarget.checked;
            void run(
              () => data.setAutoLaunch(desk.name, next),
              next
                ? 'This desk now launches a headless session by itself when it has work and no live session.'
                : 'This desk launches only when you do.',
            );
          }}
        />{' '}
        Launch a session by itself when work waits (also after a restart)
      </label>
      {on && desk.autoLaunchGaveUp && (
        <p class="note is-warning">
          Gave up after several launches that did not move the work. Launch once yourself to try again.
        </p>
      )}
      {on && !desk.autoLaunchGaveUp && desk.autoLaunchRetryAt && (
        <p class="note">The last launch did not last; the next try is at {formatTime(desk.autoLaunchRetryAt, now)}.</p>
      )}
      <OutcomeLine outcome={outcome} />
    </div>
  );
}
