//! The settings service: the settings as the store keeps them, and the owner's change of
//! several at once, in one transaction.

use taskkeeper_core::StoreError;
use taskkeeper_core::settings::Settings;

use super::Stored;

/// See the module doc.
#[derive(Clone, Debug)]
pub struct SettingStore(pub(crate) Stored);

impl SettingStore {
    /// The settings (the store keeps them in memory once read).
    pub async fn get(&self) -> Result<Settings, StoreError> {
        self.0.blocking(|s, _| s.settings()).await
    }

    /// The settings if the store has them in memory: no trip.
    pub fn cached(&self) -> Option<Settings> {
        self.0.store.cached_settings()
    }

    /// Change settings in one transaction: one invalid value changes nothing
    /// (`Store::set_settings`).
    pub async fn set(&self, changes: Vec<(String, String)>) -> Result<Settings, StoreError> {
        self.0.blocking(move |s, _| s.set_settings(changes)).await
    }
}
