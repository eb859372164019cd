// One desk: its directory, what waits there, its switches, and its sessions (live, then ended).

import type { DataSource } from '../../data';
import { agentKind } from '../../desks';
import { plural } from '../../tasks';
import type { DeskView, SessionView } from '../../types';
import { DeliverCommand } from './DeliverCommand';
import { AutoLaunch, Launch } from './Launch';
import { SessionRow } from './SessionRow';

export function DeskCard({
  data,
  name,
  desk,
  sessions,
  open,
  now,
  onChanged,
}: {
  data: DataSource;
  name: string;
  desk: DeskView | null;
  sessions: SessionView[];
  open: number | null;
  now: number;
  onChanged: () => void;
}) {
  const live = sessions.filter((s) => s.activity !== 'ended');
  const ended = sessions.filter((s) => s.activity === 'ended');
  return (
    <section class="desk desk-card" aria-label={`desk ${name}`}>
      <h3 class="desk-name">
        {name}
        {desk && <span class="agent">{desk.agent}</span>}
        {open !== null && open > 0 && <span class="desk-count">{plural(open, 'open', 'open')}</span>}
      </h3>
      {desk && (
        <p class="dir mono" title={desk.dir}>
          {desk.dir}
        </p>
      )}
      {desk?.needsSession && (
        <p class="callout needs-session" data-needs-session={desk.name}>
          <strong>Work waits, no session.</strong> This desk has {plural(desk.openTasks ?? 0, 'open task', 'open tasks')}{' '}
          and no live session: nothing moves until one starts.
          {agentKind(desk.agent).headless !== null
            ? ` Launch a headless one below, or start ${agentKind(desk.agent).name} in its directory.`
            : ' Start its agent in its directory.'}
        </p>
      )}
      {desk && <DeliverCommand data={data} desk={desk} onChanged={onChanged} />}
      {desk && agentKind(desk.agent).headless !== null && <Launch data={data} desk={desk} onChanged={onChanged} />}
      {desk && agentKind(desk.agent).headless !== null && <AutoLaunch data={data} desk={desk} now={now} onChanged={onChanged} />}
      {live.length === 0 && !desk?.needsSession && <p class="note">No session is working here now.</p>}
      <ul>
        {live.map((s) => (
          <SessionRow key={s.id} data={data} session={s} now={now} onChanged={onChanged} />
        ))}
      </ul>
      {ended.length > 0 && (
        <details class="ended-sessions">
          <summary>{plural(ended.length, 'ended session', 'ended sessions')}</summary>
          <ul>
            {ended.map((s) => (
              <SessionRow key={s.id} data={data} session={s} now={now} onChanged={onChanged} />
            ))}
          </ul>
        </details>
      )}
    </section>
  );
}
