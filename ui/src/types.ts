// The owner API's wire types, as both transports deliver them: the `/api` JSON of
// crates/server and the tray app's Tauri commands return the same shapes, because both wrap
// the one owner service. They are generated from the Rust types (generated/wire.ts; `make
// ui-types` regenerates it, and a server test fails while it is out of date), so this file
// only re-exports them and adds what is not a Rust wire type.

export type {
  Activity,
  AgentChange,
  AgentList,
  AgentView,
  ArtifactView,
  CancelRequest,
  ConnectRequest,
  DeskChange,
  DeskList,
  DeskView,
  DigestCounts,
  DigestView,
  ErrorBody,
  Hold,
  LabelKind,
  MessageView,
  NetworkStateView,
  NetworkView,
  Notice,
  OwnerError,
  PermissionAnswer,
  PermissionView,
  SessionList,
  SessionView,
  SettingKind,
  SettingView,
  SettingsCatalogue,
  StepView,
  TaskDetail,
  TaskList,
  TaskState,
  TaskView,
  TimelineView,
  Timestamp,
  TurnView,
  UiSessionRequest,
  UiSessionView,
} from './generated/wire';

import type { Notice } from './generated/wire';

// Written by hand, because no Rust type describes them:

/**
 * Every setting as text, keyed by name (`reminders.ladder` → `1m,2m,5m,10m`). The owner API
 * sends the core's settings map as it is (`{"settings": {...}}`, the `settings` event, the
 * `get_settings` command); the UI types it here.
 */
export type SettingsMap = Record<string, string>;

/**
 * The notices the window lists. `blocked` and `finished` are the desktop's (the app's
 * notifications, each kind a setting); the window's lists already show the task's change.
 */
export type WindowNotice = Exclude<Notice, { kind: 'blocked' } | { kind: 'finished' }>;
