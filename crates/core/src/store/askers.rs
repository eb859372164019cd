//! The askers table: the agents allowed to give tasks, known by the hash of their token.

use rusqlite::params;

use super::error::StoreError;
use super::open::Store;
use crate::clock::Timestamp;
use crate::desk::DeskName;

/// An agent allowed to give tasks, known by the hash of its token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asker {
    pub name: String,
    pub token_hash: String,
    pub created_at: Timestamp,
}

/// Asker names follow the desk-name rule (they appear in listings and logs), and `owner` is
/// taken.
fn validate_asker_name(name: &str) -> Result<(), StoreError> {
    if name == crate::asker::OWNER {
        return Err(StoreError::AskerExists(name.to_owned()));
    }
    name.parse::<DeskName>()
        .map(drop)
        .map_err(|_| StoreError::InvalidAskerName(name.to_owned()))
}

impl Store {
    /// Register an asker by the hash of its token.
    pub fn add_asker(
        &self,
        name: &str,
        token_hash: &str,
        now: Timestamp,
    ) -> Result<Asker, StoreError> {
        validate_asker_name(name)?;
        let (name, hash) = (name.to_owned(), token_hash.to_owned());
        self.write(move |c| {
            let exists: bool = c.query_row(
                "SELECT EXISTS(SELECT 1 FROM askers WHERE name = ?1)",
                [&name],
                |r| r.get(0),
            )?;
            if exists {
                return Err(StoreError::AskerExists(name));
            }
            c.execute(
                "INSERT INTO askers (name, token_hash, created_at) VALUES (?1, ?2, ?3)",
                params![name, hash, now.as_millis()],
            )?;
            Ok(Asker {
                name,
                token_hash: hash,
                created_at: now,
            })
        })
    }

    pub fn remove_asker(&self, name: &str) -> Result<(), StoreError> {
        let name = name.to_owned();
        self.write(
            move |c| match c.execute("DELETE FROM askers WHERE name = ?1", [&name])? {
                0 => Err(StoreError::NoSuchAsker(name)),
                _ => Ok(()),
            },
        )
    }

    pub fn askers(&self) -> Result<Vec<Asker>, StoreError> {
        self.read(|c| {
            let mut stmt =
                c.prepare_cached("SELECT name, token_hash, created_at FROM askers ORDER BY name")?;
            let rows = stmt.query_map([], |r| {
                Ok(Asker {
                    name: r.get(0)?,
                    token_hash: r.get(1)?,
                    created_at: Timestamp::from_millis(r.get(2)?),
                })
            })?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })
    }
}
