// The tray app's transport: Tauri commands (in-process, no token in the webview) and the
// app's events, which mirror the SSE stream's.

import {
  deliverNotice,
  deliverSettings,
  deliverTask,
  expectAgentChange,
  expectAgents,
  expectNetwork,
  expectArray,
  expectCatalogue,
  expectDesk,
  expectDetail,
  expectDigest,
  expectEnabled,
  expectSession,
  expectSessions,
  expectSettings,
  expectTask,
  expectTasks,
  fromInvokeError,
  isRecord,
  messageOf,
} from './decode';
import type { DataSource, Env, LiveListener } from './source';
import type { DeskView, SettingsMap } from '../types';

/** The Tauri events the app emits, mirroring the SSE stream's `task`, `notice`, `settings` and `sessions`. */
export const TAURI_TASK_EVENT = 'taskkeeper://task';
export const TAURI_NOTICE_EVENT = 'taskkeeper://notice';
export const TAURI_SETTINGS_EVENT = 'taskkeeper://settings';
/** A hint that the session list changed; its payload (`{}` or null) means nothing. */
export const TAURI_SESSIONS_EVENT = 'taskkeeper://sessions';
/** The app's request to show a view: `"settings"` or `{"task": id}`. */
export const TAURI_NAVIGATE_EVENT = 'taskkeeper://navigate';

export function tauriSource(env: Env): DataSource {
  const call = async (cmd: string, args?: Record<string, unknown>): Promise<unknown> => {
    try {
      return await env.invoke(cmd, args);
    } catch (err) {
      throw fromInvokeError(err);
    }
  };
  // The reminder toggles' answer is not fixed by the contract; the map is read back if absent.
  const settingsAfter = async (cmd: string): Promise<SettingsMap> => {
    const answer = await call(cmd);
    return answer === null || answer === undefined ? expectSettings(await call('get_settings')) : expectSettings(answer);
  };
  return {
    transport: 'tauri',
    canAutostart: true,
    listTasks: async (state) => expectTasks(await call('list_tasks', { state })),
    getTask: async (id) => expectDetail(await call('get_task', { id })),
    cancelTask: async (id, reason) => expectTask(await call('cancel_task', { id, reason })),
    remindTask: async (id) => expectTask(await call('remind_task', { id })),
    resumeTask: async (id) => expectTask(await call('resume_task', { id })),
    listDesks: async () => expectArray<DeskView>(await call('list_desks'), 'desk list'),
    setDeliverCommand: async (name, command) => expectDesk(await call('set_deliver_command', { name, command })),
    setAutoLaunch: async (name, on) => expectDesk(await call('set_auto_launch', { name, on })),
    getDigest: async () => expectDigest(await call('get_digest', { take: false })),
    takeDigest: async () => expectDigest(await call('get_digest', { take: true })),
    listSessions: async () => expectSessions(await call('list_sessions')),
    pauseSession: async (id) => expectSession(await call('pause_session', { id })),
    resumeSession: async (id) => expectSession(await call('resume_session', { id })),
    launchSession: async (desk) => expectSession(await call('launch_session', { desk })),
    stopSession: async (id) => {
      await call('stop_session', { id });
    },
    answerPermission: async (id, allow, message, requestId) =>
      expectSession(
        await call('answer_permission', {
          id,
          allow,
          message: messageOf(message),
          ...(requestId === undefined ? {} : { requestId }),
        }),
      ),
    getSettings: async () => expectSettings(await call('get_settings')),
    getSettingsCatalogue: async () => {
      const answer = await call('get_settings_catalogue');
      return expectCatalogue(isRecord(answer) ? answer.settings : undefined);
    },
    saveSettings: async (changes) => expectSettings(await call('save_settings', { changes })),
    pauseReminders: () => settingsAfter('pause_reminders'),
    resumeReminders: () => settingsAfter('resume_reminders'),
    getNetwork: async () => expectNetwork(await call('get_network')),
    listAgents: async () => expectAgents(await call('list_agents')),
    connectAgent: async (agent, force = false) => expectAgentChange(await call('connect_agent', { agent, force })),
    disconnectAgent: async (agent) => expectAgentChange(await call('disconnect_agent', { agent })),
    getAutostart: async () => expectEnabled(await call('get_autostart')),
    setAutostart: async (enabled) => {
      const answer = await call('set_autostart', { enabled });
      return typeof answer === 'boolean' || isRecord(answer) ? expectEnabled(answer) : expectEnabled(await call('get_autostart'));
    },
    subscribe: (listener) => {
      let stopped = false;
      let unlisten: (() => void)[] = [];
      listener.onStatus({ state: 'connecting' });
      Promise.all([
        env.listen(TAURI_TASK_EVENT, (payload) => deliverTask(payload, listener)),
        env.listen(TAURI_NOTICE_EVENT, (payload) => deliverNotice(payload, listener)),
        env.listen(TAURI_SETTINGS_EVENT, (payload) => deliverSettings(payload, listener)),
        env.listen(TAURI_SESSIONS_EVENT, () => listener.onSessions()),
        env.listen(TAURI_NAVIGATE_EVENT, (payload) => deliverNavigate(payload, listener)),
      ]).then(
        (fns) => {
          if (stopped) return fns.forEach((f) => f());
          unlisten = fns;
          listener.onStatus({ state: 'live' });
          listener.onResync();
        },
        (err: unknown) => {
          if (!stopped) listener.onStatus({ state: 'failed', error: fromInvokeError(err) });
        },
      );
      return () => {
        stopped = true;
        unlisten.forEach((f) => f());
      };
    },
    reportRendered: async (count) => {
      await call('ui_rendered', { count });
    },
    reportFirstFrame: async (pageMs, hiddenMs) => {
      const shown = hiddenMs === undefined ? {} : { hiddenMs: Math.round(hiddenMs) };
      await call('ui_first_frame', { pageMs: Math.round(pageMs), ...shown });
    },
  };
}

function deliverNavigate(payload: unknown, listener: LiveListener): void {
  if (typeof payload === 'string' && payload !== '') listener.onNavigate({ kind: 'view', view: payload });
  else if (isRecord(payload) && typeof payload.task === 'string') listener.onNavigate({ kind: 'task', id: payload.task });
  else console.warn('ignoring a navigate request in an unknown shape');
}
