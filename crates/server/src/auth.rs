//! Who is calling: the owner (the owner token) or a registered asker (its own token, of which
//! only a SHA-256 hash is kept). The guard resolves the caller once per request and puts it
//! in the request's extensions; handlers scope what they show to it.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

use sha2::{Digest as _, Sha256};
use taskkeeper_core::store::{Asker, OWNER_ASKER};

use crate::token::Token;

/// The authenticated caller of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    Owner,
    Asker(String),
}

impl Caller {
    /// The asker name tasks of this caller carry (`owner` for the owner).
    pub fn asker_name(&self) -> &str {
        match self {
            Caller::Owner => OWNER_ASKER,
            Caller::Asker(name) => name,
        }
    }
}

/// The tokens the daemon accepts.
#[derive(Debug, Clone)]
pub struct Credentials {
    owner: Token,
    /// Token hash → asker name.
    askers: Arc<RwLock<HashMap<String, String>>>,
}

/// The hex SHA-256 of a token: what the store keeps of an asker's token.
pub fn token_hash(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl Credentials {
    pub fn new(owner: Token, askers: &[Asker]) -> Self {
        let map = askers
            .iter()
            .map(|a| (a.token_hash.clone(), a.name.clone()))
            .collect();
        Self {
            owner,
            askers: Arc::new(RwLock::new(map)),
        }
    }

    pub fn identify(&self, presented: &str) -> Option<Caller> {
        if self.owner.matches(presented) {
            return Some(Caller::Owner);
        }
        // Comparing hashes: a timing difference reveals nothing about the token itself.
        let hash = token_hash(presented);
        let askers = self.askers.read().unwrap_or_else(PoisonError::into_inner);
        askers.get(&hash).map(|name| Caller::Asker(name.clone()))
    }

    pub fn add_asker(&self, asker: &Asker) {
        let mut askers = self.askers.write().unwrap_or_else(PoisonError::into_inner);
        askers.insert(asker.token_hash.clone(), asker.name.clone());
    }

    pub fn remove_asker(&self, name: &str) {
        let mut askers = self.askers.write().unwrap_or_else(PoisonError::into_inner);
        askers.retain(|_, n| n != name);
    }
}
