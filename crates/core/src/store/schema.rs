//! The database schema, as versioned migrations (the version is SQLite's `user_version`).
//! A migration is never edited once released: add a new one.

use rusqlite_migration::{M, Migrations};

pub(crate) fn migrations() -> Migrations<'static> {
    Migrations::new(vec![
        M::up(V1),
        M::up(V2),
        M::up(V3),
        M::up(V4),
        M::up(V5),
        M::up(V6),
    ])
}

/// How many migrations this build knows; a database with a higher `user_version` was written
/// by a newer Taskkeeper and is refused.
pub(crate) const LATEST: i64 = 6;

const V1: &str = r#"
CREATE TABLE desks (
    name        TEXT PRIMARY KEY,
    agent       TEXT NOT NULL,
    dir         TEXT NOT NULL,
    created_at  INTEGER NOT NULL
) STRICT;

-- A task is kept whole as JSON in `body`; the columns beside it are copies for lookups,
-- written together with the body in the same statement.
CREATE TABLE tasks (
    id                  TEXT PRIMARY KEY,
    desk                TEXT NOT NULL,
    asker               TEXT NOT NULL,
    request_message_id  TEXT NOT NULL,
    context_id          TEXT NOT NULL,
    state               TEXT NOT NULL,
    queue_seq           INTEGER NOT NULL,
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL,
    status_at           INTEGER NOT NULL,
    ended_at            INTEGER,
    version             INTEGER NOT NULL,
    body                TEXT NOT NULL,
    UNIQUE (asker, request_message_id)
) STRICT;
CREATE INDEX tasks_open_by_desk ON tasks (desk, queue_seq) WHERE ended_at IS NULL;
CREATE INDEX tasks_ended ON tasks (ended_at) WHERE ended_at IS NOT NULL;
CREATE INDEX tasks_context ON tasks (context_id);
-- ListTasks: an asker's tasks, newest status first, the task id breaking ties.
CREATE INDEX tasks_by_asker_status ON tasks (asker, status_at DESC, id DESC);

-- Askers: agents allowed to give tasks. Only a hash of each token is kept.
CREATE TABLE askers (
    name        TEXT PRIMARY KEY,
    token_hash  TEXT NOT NULL UNIQUE,
    created_at  INTEGER NOT NULL
) STRICT;

-- Agent sessions attached to desks (filled by the worker-side adapters).
CREATE TABLE sessions (
    id          TEXT PRIMARY KEY,
    desk        TEXT NOT NULL,
    body        TEXT NOT NULL,
    updated_at  INTEGER NOT NULL
) STRICT;

CREATE TABLE settings (
    key    TEXT PRIMARY KEY,
    value  TEXT NOT NULL
) STRICT;

-- The watchdog's deadlines, as wall-clock milliseconds, so a restart resumes where it was.
CREATE TABLE deadlines (
    kind     TEXT NOT NULL,
    subject  TEXT NOT NULL,
    due_at   INTEGER NOT NULL,
    PRIMARY KEY (kind, subject)
) STRICT;
CREATE INDEX deadlines_due ON deadlines (due_at);
"#;

/// A desk may name a command that delivers text to its agent (for agents without hooks).
const V2: &str = r#"
ALTER TABLE desks ADD COLUMN deliver_command TEXT;
"#;

/// Push notifications: each task's webhooks, and the queue of what is still to be posted to
/// them, written in the same transaction as the change it tells of (core `push.rs`). Both go
/// with their task when it is pruned.
const V3: &str = r#"
CREATE TABLE push_configs (
    task_id           TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    id                TEXT NOT NULL,
    url               TEXT NOT NULL,
    token             TEXT,
    auth_scheme       TEXT,
    auth_credentials  TEXT,
    version           TEXT NOT NULL,
    created_at        INTEGER NOT NULL,
    PRIMARY KEY (task_id, id)
) STRICT;

CREATE TABLE push_deliveries (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id         TEXT NOT NULL,
    config_id       TEXT NOT NULL,
    item            TEXT NOT NULL,
    body            TEXT NOT NULL,
    queue_position  INTEGER,
    created_at      INTEGER NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    due_at          INTEGER NOT NULL,
    last_error      TEXT,
    FOREIGN KEY (task_id, config_id) REFERENCES push_configs (task_id, id) ON DELETE CASCADE
) STRICT;
CREATE INDEX push_deliveries_by_config ON push_deliveries (task_id, config_id, seq);
"#;

/// A desk may launch a session by itself (`autolaunch.rs`); the daemon keeps a few named
/// times (when the owner last took a digest, when one was last offered).
const V4: &str = r#"
ALTER TABLE desks ADD COLUMN auto_launch INTEGER NOT NULL DEFAULT 0;
CREATE TABLE marks (
    name  TEXT PRIMARY KEY,
    at    INTEGER NOT NULL
) STRICT;
"#;

/// Queue work that does not grow with the queue (issue 13): whether a task holds its desk
/// is a column (written from `queue::holds_desk` with every version; filled here once from
/// the stored bodies by the same rule: working and not stalled), and the queued tasks, the
/// holders and a desk's sessions each have an index.
const V5: &str = r#"
ALTER TABLE tasks ADD COLUMN holds_desk INTEGER NOT NULL DEFAULT 0;
UPDATE tasks SET holds_desk = 1
    WHERE ended_at IS NULL AND state = 'working' AND json_extract(body, '$.stalledAt') IS NULL;
CREATE INDEX tasks_holding_desk ON tasks (desk) WHERE holds_desk = 1;
CREATE INDEX tasks_queued_by_desk ON tasks (desk, queue_seq) WHERE state = 'submitted';
CREATE INDEX sessions_by_desk ON sessions (desk, updated_at DESC);
CREATE INDEX tasks_ended_by_desk ON tasks (desk, ended_at) WHERE ended_at IS NOT NULL;
CREATE INDEX tasks_unqueued_by_desk ON tasks (desk) WHERE ended_at IS NULL AND state != 'submitted';
CREATE INDEX tasks_open_by_desk_created ON tasks (desk, created_at) WHERE ended_at IS NULL;
CREATE INDEX tasks_open_by_asker ON tasks (asker) WHERE ended_at IS NULL;
"#;

/// Counts a submit needs, kept instead of counted (issue 13): each asker's open tasks (the
/// per-asker limit) and each desk's queued tasks (the new task's place in the queue). A count
/// over an index walks one entry per task; these are one row each. Triggers keep them in the
/// same statement as the change to `tasks`, so every write (a submit, a transition, a prune)
/// keeps them true without each caller remembering to. Filled here once from the tasks.
/// `scope` is `open` (by asker) or `queued` (by desk); a row is never removed, so a count
/// that falls to 0 stays as a row of 0. And the index of a desk's unqueued tasks gets their
/// order, and the desks set to launch by themselves get an index.
const V6: &str = r#"
CREATE TABLE task_counts (
    scope  TEXT NOT NULL,
    name   TEXT NOT NULL,
    n      INTEGER NOT NULL,
    PRIMARY KEY (scope, name)
) STRICT, WITHOUT ROWID;
INSERT INTO task_counts (scope, name, n)
    SELECT 'open', asker, COUNT(*) FROM tasks WHERE ended_at IS NULL GROUP BY asker;
INSERT INTO task_counts (scope, name, n)
    SELECT 'queued', desk, COUNT(*) FROM tasks WHERE state = 'submitted' GROUP BY desk;

CREATE TRIGGER task_counts_insert AFTER INSERT ON tasks
WHEN NEW.ended_at IS NULL OR NEW.state = 'submitted'
BEGIN
    INSERT INTO task_counts (scope, name, n) SELECT 'open', NEW.asker, 1
        WHERE NEW.ended_at IS NULL
        ON CONFLICT (scope, name) DO UPDATE SET n = n + 1;
    INSERT INTO task_counts (scope, name, n) SELECT 'queued', NEW.desk, 1
        WHERE NEW.state = 'submitted'
        ON CONFLICT (scope, name) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER task_counts_delete AFTER DELETE ON tasks
WHEN OLD.ended_at IS NULL OR OLD.state = 'submitted'
BEGIN
    UPDATE task_counts SET n = n - 1
        WHERE scope = 'open' AND name = OLD.asker AND OLD.ended_at IS NULL;
    UPDATE task_counts SET n = n - 1
        WHERE scope = 'queued' AND name = OLD.desk AND OLD.state = 'submitted';
END;

-- Only a change that moves a task into or out of a count touches the counts.
CREATE TRIGGER task_counts_update_open AFTER UPDATE OF ended_at, asker ON tasks
WHEN (OLD.ended_at IS NULL) != (NEW.ended_at IS NULL) OR OLD.asker != NEW.asker
BEGIN
    UPDATE task_counts SET n = n - 1
        WHERE scope = 'open' AND name = OLD.asker AND OLD.ended_at IS NULL;
    INSERT INTO task_counts (scope, name, n) SELECT 'open', NEW.asker, 1
        WHERE NEW.ended_at IS NULL
        ON CONFLICT (scope, name) DO UPDATE SET n = n + 1;
END;

-- A desk's working and blocked tasks in creation order (what the watchdog and a session's
-- claim read on every change of the desk): with `created_at` in this index SQLite reads
-- them from it, instead of walking the desk's open tasks by creation time to skip the sort.
DROP INDEX tasks_unqueued_by_desk;
CREATE INDEX tasks_unqueued_by_desk ON tasks (desk, created_at)
    WHERE ended_at IS NULL AND state != 'submitted';

-- The desks set to launch a session by themselves, which the auto-launch loop reads on
-- every change of any task, without walking every desk.
CREATE INDEX desks_auto_launch ON desks (name) WHERE auto_launch = 1;

CREATE TRIGGER task_counts_update_queued AFTER UPDATE OF state, desk ON tasks
WHEN (OLD.state = 'submitted') != (NEW.state = 'submitted') OR OLD.desk != NEW.desk
BEGIN
    UPDATE task_counts SET n = n - 1
        WHERE scope = 'queued' AND name = OLD.desk AND OLD.state = 'submitted';
    INSERT INTO task_counts (scope, name, n) SELECT 'queued', NEW.desk, 1
        WHERE NEW.state = 'submitted'
        ON CONFLICT (scope, name) DO UPDATE SET n = n + 1;
END;
"#;

#[cfg(test)]
mod tests {
    #[test]
    fn migrations_are_valid() {
        super::migrations().validate().unwrap();
        assert_eq!(super::LATEST, 6);
    }
}
