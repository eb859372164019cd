//! The settings table: the owner's changes over the defaults, read once and kept in memory
//! until a setting changes (`cache`). What a setting means and which values it takes is
//! `crate::settings`; this module only keeps them.

use rusqlite::{Connection, params};

use super::error::StoreError;
use super::open::Store;
use crate::settings::Settings;

impl Store {
    /// The settings: the defaults overlaid with what the owner changed. Read from the table
    /// once, then from memory until a setting changes ([`super::cache::SettingsCache`]).
    pub fn settings(&self) -> Result<Settings, StoreError> {
        let generation = {
            let cache = self.settings_cache();
            if let Some(settings) = &cache.settings {
                return Ok(settings.clone());
            }
            cache.generation
        };
        let settings = self.read(load_settings)?;
        let mut cache = self.settings_cache();
        if cache.generation == generation {
            cache.settings = Some(settings.clone());
        }
        Ok(settings)
    }

    /// The settings if [`Store::settings`] has them in memory: never touches the database,
    /// so an async caller may ask without moving to a blocking thread.
    pub fn cached_settings(&self) -> Option<Settings> {
        self.settings_cache().settings.clone()
    }

    /// Change one setting; an invalid value is refused and nothing is written.
    pub fn set_setting(&self, key: &str, value: &str) -> Result<Settings, StoreError> {
        self.set_settings(vec![(key.to_owned(), value.to_owned())])
    }

    /// Change several settings in one transaction: each is checked over the ones before it,
    /// and one invalid value refuses them all and writes nothing.
    pub fn set_settings(&self, changes: Vec<(String, String)>) -> Result<Settings, StoreError> {
        let written = self.write(move |c| {
            let mut settings = load_settings(c)?;
            for (key, value) in &changes {
                settings.set(key, value)?;
                let canonical = settings.get(key)?;
                c.prepare_cached(
                    "INSERT INTO settings (key, value) VALUES (?1, ?2) \
                     ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                )?
                .execute(params![key, canonical])?;
            }
            Ok(settings)
        });
        // Whatever the outcome: the next read goes to the table.
        let mut cache = self.settings_cache();
        cache.generation = cache.generation.wrapping_add(1);
        cache.settings = None;
        written
    }
}

pub(super) fn load_settings(c: &Connection) -> Result<Settings, StoreError> {
    let mut settings = Settings::default();
    let mut stmt = c.prepare_cached("SELECT key, value FROM settings")?;
    let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
    for row in rows {
        let (key, value) = row?;
        if let Err(e) = settings.set(&key, &value) {
            tracing::warn!(%key, %value, error = %e, "ignoring a stored setting; using the default");
        }
    }
    Ok(settings)
}
