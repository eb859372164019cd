//! The card-signing key as the owner sees it (`GET /api/card-key`, `POST
//! /api/card-key/rotate`, and beside a new asker's token): the thumbprint an asker pins, and
//! the public key itself.

use serde::{Deserialize, Serialize};

/// The key that signs the Agent Cards now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CardKeyView {
    /// Its RFC 7638 thumbprint (SHA-256, base64url), also the `kid` of every signature it
    /// makes: an asker pins it.
    pub thumbprint: String,
    /// The public key as a JWK; the JWK Set at `/.well-known/jwks.json` holds it alone.
    pub jwk: serde_json::Value,
}

impl From<&crate::card_key::CardKey> for CardKeyView {
    fn from(key: &crate::card_key::CardKey) -> Self {
        let jwk = key.jwk();
        Self {
            thumbprint: key.thumbprint(),
            jwk,
        }
    }
}
