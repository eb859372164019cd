// Desks and the agent sessions working at them: what each session is doing, its background
// commands, and the owner's switches for reminders (one session, or all). A claude-code, codex
// or gemini desk can get a headless session the daemon launches (and the owner can stop, and whose permission
// requests the owner allows or denies here); every desk shows
// its delivery command, which the owner sets or clears here. The live feed's session hint
// (`sessions`) makes this view re-read them at once (so a permission request shows within a
// moment), as does every task change; a slow poll while shown is the fallback, a fast one
// while the feed is down. Its parts are in desks/, a job a file.

import { useEffect } from 'preact/hooks';
import type { DataSource } from '../data';
import { useResource, useWhileVisible, valueOf } from '../hooks';
import { Code, Empty, ErrorBanner, Loading } from '../parts';
import type { DeskView, SessionView, SettingsMap, TaskView } from '../types';
import { CONNECTABLE } from '../desks';
import { AllReminders } from './desks/AllReminders';
import { ConnectHint } from './desks/ConnectHint';
import { DeskCard } from './desks/DeskCard';

/** The fallback re-read while the live feed is up (its session hint does the real work)... */
const SESSIONS_EVERY_MS = 30_000;
/** ...and while it is not (connecting, reconnecting, failed). */
const SESSIONS_OFFLINE_EVERY_MS = 5000;

interface DesksAndSessions {
  desks: DeskView[];
  sessions: SessionView[];
}

export function DesksView({
  data,
  now,
  changeSeq,
  sessionSeq,
  live,
  openTasks,
  settings,
  onSettings,
}: {
  data: DataSource;
  now: number;
  changeSeq: number;
  /** Bumped by the feed's session hint. */
  sessionSeq: number;
  /** Whether the live feed is up (then the poll can be slow). */
  live: boolean;
  openTasks: TaskView[] | null;
  settings: SettingsMap | null;
  onSettings: (settings: SettingsMap) => void;
}) {
  const res = useResource(
    async (): Promise<DesksAndSessions> => {
      const [desks, sessions] = await Promise.all([data.listDesks(), data.listSessions()]);
      return { desks, sessions };
    },
    [data],
  );
  useEffect(() => {
    if (changeSeq > 0) res.refreshSoon();
  }, [changeSeq]);
  // The hint is already coalesced by its sender, and a re-read while one runs collapses into one.
  useEffect(() => {
    if (sessionSeq > 0) res.refresh();
  }, [sessionSeq]);
  useWhileVisible(res.refresh, live ? SESSIONS_EVERY_MS : SESSIONS_OFFLINE_EVERY_MS, true);

  const value = valueOf(res.load);
  const sessions = value?.sessions ?? [];
  return (
    <div class="view">
      <h2 class="visually-hidden" tabIndex={-1} data-view-heading>
        Desks and sessions
      </h2>
      <AllReminders data={data} settings={settings} onSettings={onSettings} />
      {res.load.status === 'error' && <ErrorBanner title="Can't load desks and sessions" error={res.load.error} />}
      {res.load.status === 'loading' && <Loading />}
      {value && value.desks.length === 0 && value.sessions.length === 0 && (
        <Empty title="No desks yet.">
          <p>A desk is a named place where agent sessions work: a directory and the kind of agent.</p>
          <p>
            <Code text="Add one: `taskkeeper desk add NAME --dir DIR`" />
          </p>
          <p class="note">Or connect Claude Code below: a session started in a new directory gets a desk of its own.</p>
        </Empty>
      )}
      {value &&
        desksWithSessions(value).map(({ desk, name, sessions: here }) => (
          <DeskCard
            key={name}
            data={data}
            name={name}
            desk={desk}
            sessions={here}
            open={openTasks?.filter((t) => t.desk === name).length ?? null}
            now={now}
            onChanged={res.refresh}
          />
        ))}
      {CONNECTABLE.map((kind) => (
        <ConnectHint key={kind} kind={kind} sessions={value === null ? null : sessions.filter((s) => s.agent === kind)} />
      ))}
    </div>
  );
}

/** Every desk with its sessions (live ones first), plus any desk a session names that the list lacks. */
function desksWithSessions({ desks, sessions }: DesksAndSessions) {
  const names = new Set([...desks.map((d) => d.name), ...sessions.map((s) => s.desk)]);
  return [...names].sort().map((name) => ({
    name,
    desk: desks.find((d) => d.name === name) ?? null,
    sessions: sessions
      .filter((s) => s.desk === name)
      .sort((a, b) => Number(a.activity === 'ended') - Number(b.activity === 'ended') || b.updatedAt.localeCompare(a.updatedAt)),
  }));
}
