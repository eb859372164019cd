// The window: five tabs (open tasks, recent, the digest, desks and sessions, settings) and a task's
// detail, kept current by the live feed (the SSE stream in a browser, Tauri events in the
// app; the data layer hides which). A change is applied to the open list at once and then
// confirmed by a re-read, because some things a change moves (the other tasks' queue
// positions) come with no event of their own.

import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { type DataSource, type LiveStatus } from './data';
import { useNow, useResource, valueOf } from './hooks';
import { Code } from './parts';
import { parseRoute, routeHref, TABS, type Route, type Tab } from './route';
import { countTasks, firstLine, isOpen, mergeTask, plural } from './tasks';
import { permissionAsk } from './desks';
import type { WindowNotice, SettingsMap } from './types';
import { DesksView } from './views/DesksView';
import { DigestView, digestCounts } from './views/DigestView';
import { OpenView } from './views/OpenView';
import { RecentView } from './views/RecentView';
import { SettingsView } from './views/SettingsView';
import { TaskDetailView } from './views/TaskDetailView';

/** Without a live feed (it failed for good), the open list is re-read this often instead. */
const FALLBACK_POLL_MS = 10_000;
const MAX_NOTICES = 3;

const TAB_LABELS: Record<Tab, string> = {
  open: 'Open',
  recent: 'Recent',
  digest: 'Digest',
  desks: 'Desks',
  settings: 'Settings',
};

interface ShownNotice {
  seq: number;
  notice: WindowNotice;
}

export function App({ data }: { data: DataSource }) {
  const [route, setRoute] = useState<Route>(() => parseRoute(window.location.hash));
  const [live, setLive] = useState<LiveStatus>({ state: 'connecting' });
  const [changeSeq, setChangeSeq] = useState(0);
  const [sessionSeq, setSessionSeq] = useState(0);
  const [notices, setNotices] = useState<ShownNotice[]>([]);
  const noticesRef = useRef(notices);
  noticesRef.current = notices;
  const lastTab = useRef<Tab>(route.view === 'tab' ? route.tab : 'open');
  const cameFrom = useRef<string | null>(null);
  const now = useNow(30_000);

  const open = useResource(() => data.listTasks('open'), [data]);
  const settings = useResource(() => data.getSettings(), [data]);

  // Routing: the fragment is the source of truth.
  useEffect(() => {
    const onHash = () => setRoute(parseRoute(window.location.hash));
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, []);
  const go = useCallback((next: Route) => {
    window.location.hash = routeHref(next);
  }, []);
  if (route.view === 'tab') lastTab.current = route.tab;

  // The live feed. Every change bumps `changeSeq`, which the other views re-read on; a session
  // change bumps `sessionSeq`, which only the desks view (the one showing sessions) re-reads on.
  useEffect(() => {
    let noticeSeq = 0;
    // A permission notice goes once its session no longer waits (answered here, in another
    // window or with the CLI; withdrawn; ended): it would only mislead. Only notices older than
    // the re-read are dropped, so one that arrives meanwhile is never judged on a stale list.
    const dropAnswered = (upTo: number) => {
      if (!noticesRef.current.some((n) => n.notice.kind === 'permission-asked' && n.seq <= upTo)) return;
      data.listSessions().then(
        (sessions) => {
          const waiting = new Set(sessions.filter((s) => s.permission !== null && s.activity !== 'ended').map((s) => s.id));
          setNotices((list) =>
            list.filter((n) => n.notice.kind !== 'permission-asked' || n.seq > upTo || waiting.has(n.notice.session)),
          );
        },
        () => {},
      );
    };
    return data.subscribe({
      onTask: (task) => {
        open.update((list) => mergeTask(list, task, isOpen));
        // A stall notice goes once its task is resumed or ended: it would only mislead.
        if (task.stalledAt === null || !isOpen(task)) {
          setNotices((list) =>
            list.filter((n) => !(n.notice.kind === 'stalled' && n.notice.task.id === task.id)),
          );
        }
        open.refreshSoon();
        setChangeSeq((n) => n + 1);
      },
      onNotice: (notice) => {
        noticeSeq += 1;
        const seq = noticeSeq;
        setNotices((list) => [{ seq, notice }, ...list].slice(0, MAX_NOTICES));
        if (notice.kind === 'stalled') open.update((list) => mergeTask(list, notice.task, isOpen));
      },
      // A setting changed here or elsewhere (a browser, the tray, the CLI): the paused bar, the
      // desks' pause switch and the settings form follow; the re-read confirms it.
      onSettings: (map) => {
        settings.update(() => map);
        settings.refresh();
      },
      onSessions: () => {
        setSessionSeq((n) => n + 1);
        dropAnswered(noticeSeq);
      },
      onResync: () => {
        open.refresh();
        settings.refresh();
        setChangeSeq((n) => n + 1);
      },
      onStatus: setLive,
      onNavigate: (to) => {
        if (to.kind === 'task') go({ view: 'task', id: to.id });
        else if ((TABS as readonly string[]).includes(to.view)) go({ view: 'tab', tab: to.view as Tab });
      },
    });
  }, [data]);

  // A window shown again (the tray app's, or a browser tab) re-reads what it shows.
  useEffect(() => {
    const onVisible = () => {
      if (document.visibilityState !== 'visible') return;
      open.refresh();
      settings.refresh();
      setChangeSeq((n) => n + 1);
    };
    document.addEventListener('visibilitychange', onVisible);
    return () => document.removeEventListener('visibilitychange', onVisible);
  }, [data]);

  // No live feed for good (not a refused token: then nothing would load anyway): poll.
  const polling = live.state === 'failed' && live.error.kind !== 'unauthorized' && live.error.kind !== 'forbidden';
  useEffect(() => {
    if (!polling) return;
    const timer = setInterval(() => {
      if (document.visibilityState === 'visible') {
        open.refresh();
        setChangeSeq((n) => n + 1);
      }
    }, FALLBACK_POLL_MS);
    return () => clearInterval(timer);
  }, [polling]);

  // Keyboard: Escape leaves a task's detail for the list it came from.
  const back = useCallback(() => go({ view: 'tab', tab: lastTab.current }), [go]);
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape' && route.view === 'task' && !e.defaultPrevented) back();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [route, back]);

  // Focus follows the view: the detail's heading when a task opens, the task's row on return.
  useEffect(() => {
    const target = route.view === 'task' ? null : cameFrom.current;
    cameFrom.current = route.view === 'task' ? route.id : null;
    const frame = requestAnimationFrame(() => {
      const row = target ? document.querySelector<HTMLElement>(`[data-task-link="${CSS.escape(target)}"]`) : null;
      if (row) row.focus();
      else if (route.view === 'task') document.querySelector<HTMLElement>('[data-view-heading]')?.focus();
    });
    return () => cancelAnimationFrame(frame);
  }, [route]);

  // The app's window test reads what reached the DOM, so count rendered rows, not fetched tasks.
  const listRef = useRef<HTMLDivElement>(null);
  const reported = useRef<number | null>(null);
  useEffect(() => {
    if (open.load.status !== 'ready' || route.view !== 'tab' || route.tab !== 'open') return;
    const count = listRef.current?.querySelectorAll('[data-task-id]').length ?? 0;
    if (reported.current === count) return;
    reported.current = count;
    data.reportRendered(count).catch((err: unknown) => console.warn('ui_rendered failed', err));
  }, [open.load, route, data]);

  const tasks = valueOf(open.load);
  const counts = tasks ? countTasks(tasks) : null;
  const settingsValue = valueOf(settings.load);
  const onSettings = useCallback((map: SettingsMap) => settings.update(() => map), []);
  const paused = settingsValue?.['reminders.paused'] === 'true';

  return (
    <div class="app">
      <header class="top">
        <div class="title-row">
          <h1>Taskkeeper</h1>
          <LiveDot status={live} polling={polling} />
          {counts && (
            <p class="summary" aria-live="polite">
              {plural(counts.open, 'open', 'open')}
              {counts.stalled > 0 && <span class="stalled-count"> · {counts.stalled} stalled</span>}
            </p>
          )}
        </div>
        <nav class="tabs" aria-label="views">
          {(Object.keys(TAB_LABELS) as Tab[]).map((tab) => {
            const current = route.view === 'tab' ? route.tab === tab : lastTab.current === tab;
            return (
              <a key={tab} href={routeHref({ view: 'tab', tab })} class={current ? 'tab is-current' : 'tab'} aria-current={current ? 'page' : undefined}>
                {TAB_LABELS[tab]}
                {tab === 'open' && counts && counts.open > 0 && <span class="tab-count">{counts.open}</span>}
              </a>
            );
          })}
        </nav>
      </header>
      {paused && !(route.view === 'tab' && route.tab === 'desks') && (
        <p class="paused-bar">
          All reminders are paused. <a href={routeHref({ view: 'tab', tab: 'desks' })}>Resume</a>
        </p>
      )}
      {live.state === 'failed' && tasks !== null && (
        <p class="live-failed" role="alert">
          <Code text={`Live updates stopped: ${live.error.message}`} />
        </p>
      )}
      {notices.length > 0 && (
        <Notices
          notices={notices}
          onDismiss={(seq) => setNotices((list) => list.filter((n) => n.seq !== seq))}
        />
      )}
      <main class="content">
        {route.view === 'task' ? (
          <TaskDetailView
            key={route.id}
            data={data}
            id={route.id}
            now={now}
            changeSeq={changeSeq}
            onBack={back}
            backLabel={TAB_LABELS[lastTab.current]}
          />
        ) : route.tab === 'open' ? (
          <OpenView load={open.load} now={now} listRef={listRef} />
        ) : route.tab === 'recent' ? (
          <RecentView data={data} now={now} changeSeq={changeSeq} keepEnded={settingsValue?.['tasks.keep_ended'] ?? null} />
        ) : route.tab === 'digest' ? (
          <DigestView data={data} now={now} changeSeq={changeSeq} />
        ) : route.tab === 'desks' ? (
          <DesksView
            data={data}
            now={now}
            changeSeq={changeSeq}
            sessionSeq={sessionSeq}
            live={live.state === 'live'}
            openTasks={tasks}
            settings={settingsValue}
            onSettings={onSettings}
          />
        ) : (
          <SettingsView data={data} load={settings.load} onSaved={onSettings} />
        )}
      </main>
    </div>
  );
}

function LiveDot({ status, polling }: { status: LiveStatus; polling: boolean }) {
  const [label, cls] =
    status.state === 'live'
      ? ['live', 'is-live']
      : status.state === 'connecting'
        ? ['connecting…', 'is-connecting']
        : status.state === 'reconnecting'
          ? ['reconnecting…', 'is-connecting']
          : [polling ? 'refreshing every 10 s' : 'not live', 'is-down'];
  const title = status.state === 'reconnecting' || status.state === 'failed' ? status.error.message : `updates: ${label}`;
  return (
    <span class={`live ${cls}`} title={title} role="status" data-live={status.state}>
      <span class="dot" aria-hidden="true" />
      <span class="live-label">{label}</span>
    </span>
  );
}

function Notices({ notices, onDismiss }: { notices: ShownNotice[]; onDismiss: (seq: number) => void }) {
  return (
    <section class="notices" aria-label="notices" aria-live="polite">
      {notices.map(({ seq, notice }) => (
        <p key={seq} class={`notice notice-${notice.kind}`}>
          <span class="notice-text">
            {notice.kind === 'stalled' ? (
              <>
                <strong>Stalled</strong> at {notice.task.desk}:{' '}
                <a href={routeHref({ view: 'task', id: notice.task.id })}>{firstLine(notice.task.request) || notice.task.id}</a>
              </>
            ) : notice.kind === 'permission-asked' ? (
              <>
                <strong>Asks you</strong> at {notice.desk}: a session {permissionAsk(notice.tool, notice.description)}.{' '}
                <a href={routeHref({ view: 'tab', tab: 'desks' })}>Answer in Desks</a>
              </>
            ) : notice.kind === 'digest' ? (
              <>
                <strong>Digest</strong>: {digestCounts(notice.counts)}.{' '}
                <a href={routeHref({ view: 'tab', tab: 'digest' })}>Open the digest</a>
              </>
            ) : (
              <>
                <strong>Session ended</strong> at {notice.desk} with {plural(notice.openTasks, 'task', 'tasks')} open.
              </>
            )}
          </span>
          <button type="button" class="dismiss" aria-label="Dismiss" onClick={() => onDismiss(seq)}>
            ×
          </button>
        </p>
      ))}
    </section>
  );
}
