//! The askers service: registering, listing and removing the agents allowed to give tasks.

use taskkeeper_core::StoreError;
use taskkeeper_core::store::Asker;

use super::Stored;

/// See the module doc.
#[derive(Clone, Debug)]
pub struct AskerStore(pub(crate) Stored);

impl AskerStore {
    /// Register an asker by the hash of its token.
    pub async fn add(&self, name: &str, token_hash: &str) -> Result<Asker, StoreError> {
        let (name, hash) = (name.to_owned(), token_hash.to_owned());
        self.0
            .blocking(move |s, now| s.add_asker(&name, &hash, now))
            .await
    }

    pub async fn list(&self) -> Result<Vec<Asker>, StoreError> {
        self.0.blocking(|s, _| s.askers()).await
    }

    pub async fn remove(&self, name: &str) -> Result<(), StoreError> {
        let name = name.to_owned();
        self.0.blocking(move |s, _| s.remove_asker(&name)).await
    }
}
