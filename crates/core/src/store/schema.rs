//! The database schema, as versioned migrations (the version is SQLite's `user_version`).
//! A migration is never edited once released: add a new one.

use rusqlite_migration::{M, Migrations};

pub(crate) fn migrations() -> Migrations<'static> {
    Migrations::new(vec![M::up(V1), M::up(V2)])
}

/// How many migrations this build knows; a database with a higher `user_version` was written
/// by a newer Taskkeeper and is refused.
pub(crate) const LATEST: i64 = 2;

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

#[cfg(test)]
mod tests {
    #[test]
    fn migrations_are_valid() {
        super::migrations().validate().unwrap();
        assert_eq!(super::LATEST, 2);
    }
}
