//! The marks table: named times the daemon keeps across restarts (when the owner last took
//! or was offered the digest).

use rusqlite::{OptionalExtension, params};

use super::error::StoreError;
use super::open::Store;
use crate::clock::Timestamp;

impl Store {
    /// A named time the daemon keeps (`digest::TAKEN`, `digest::OFFERED`).
    pub fn mark(&self, name: &str) -> Result<Option<Timestamp>, StoreError> {
        let name = name.to_owned();
        self.read(move |c| {
            Ok(
                c.query_row("SELECT at FROM marks WHERE name = ?1", [name], |r| {
                    r.get::<_, i64>(0)
                })
                .optional()?
                .map(Timestamp::from_millis),
            )
        })
    }

    pub fn set_mark(&self, name: &str, at: Timestamp) -> Result<(), StoreError> {
        let name = name.to_owned();
        self.write(move |c| {
            c.execute(
                "INSERT INTO marks (name, at) VALUES (?1, ?2) \
                 ON CONFLICT (name) DO UPDATE SET at = excluded.at",
                params![name, at.as_millis()],
            )?;
            Ok(())
        })
    }
}
