//! Who is calling. Three kinds of caller, three credentials (ARCHITECTURE.md, "Who may call
//! which route"):
//!
//! - the **owner**: the owner token (`<data-dir>/token`); may do everything;
//! - **askers**: other agents, each with its own token (only a SHA-256 hash is kept); they
//!   reach A2A and the cards, nothing else;
//! - **workers**: the agent sessions of this machine, through the hook helper and MCP, with
//!   the worker token (`<data-dir>/worker-token`); they reach `/hooks/*` and `/mcp`, nothing
//!   of `/api`.
//!
//! The guard resolves the caller once per request; each router's layer ([`crate::http::routes`])
//! decides whether that kind of caller may pass.
//!
//! A worker token says "some session of this machine", not which one. A session proves
//! which it is with a [`SessionProof`]: an HMAC of its id under a key that lives only in the
//! daemon's memory, handed to the session by its own hooks (the PreToolUse answer adds it to
//! the tool input) or, for a session the daemon launched, written into its private MCP
//! configuration. The model in a session never sees another session's proof, so an argument
//! it writes cannot make it act as another session.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

use hmac::{Hmac, Mac as _};
use rand::RngCore as _;
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;
use taskkeeper_core::asker;
use taskkeeper_core::store::Asker;

use crate::token::Token;

/// The authenticated caller of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    Owner,
    /// An agent session of this machine (the worker token); which one is proven per call.
    Worker,
    Asker(String),
}

/// The asker name of a caller without a token on the conformance desk (`serve --conformance`,
/// [`crate::http::routes::Access::Conformance`]): one anonymous asker, a name no registered asker can
/// have (asker names cannot contain ':'), so its tasks are nobody else's.
pub const ANONYMOUS_ASKER: &str = "anonymous:tck";

/// The kinds of caller, for the route table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CallerKind {
    Owner,
    Worker,
    Asker,
}

impl CallerKind {
    pub const ALL: [CallerKind; 3] = [CallerKind::Owner, CallerKind::Worker, CallerKind::Asker];

    pub fn as_str(self) -> &'static str {
        match self {
            CallerKind::Owner => "owner",
            CallerKind::Worker => "worker",
            CallerKind::Asker => "asker",
        }
    }
}

impl Caller {
    pub fn kind(&self) -> CallerKind {
        match self {
            Caller::Owner => CallerKind::Owner,
            Caller::Worker => CallerKind::Worker,
            Caller::Asker(_) => CallerKind::Asker,
        }
    }

    /// Who this caller is as a reader of tasks ([`asker::may_read`]): the owner reads every
    /// task; an asker (a worker, should one get here, under a name no task carries) its own.
    pub fn reader(&self) -> asker::Reader<'_> {
        match self {
            Caller::Owner => asker::Reader::Owner,
            other => asker::Reader::Asker(other.asker_name()),
        }
    }

    /// The asker name tasks of this caller carry (`owner` for the owner). Workers never reach
    /// A2A (the route layer refuses them); should one ever get here, its name is one no
    /// registered asker can have (asker names cannot contain ':').
    pub fn asker_name(&self) -> &str {
        match self {
            Caller::Owner => asker::OWNER,
            Caller::Worker => "worker:",
            Caller::Asker(name) => name,
        }
    }
}

/// What a request presented, as the guard found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Presented {
    /// No `Authorization: Bearer` header.
    Nothing,
    /// A token no caller has.
    Unknown,
    Caller(Caller),
}

/// The tokens the daemon accepts, and the key of its session proofs.
#[derive(Debug, Clone)]
pub struct Credentials {
    owner: Token,
    worker: Token,
    /// Token hash → asker name.
    askers: Arc<RwLock<HashMap<String, String>>>,
    proofs: ProofKey,
}

/// The hex SHA-256 of a token: what the store keeps of an asker's token.
pub fn token_hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

impl Credentials {
    pub fn new(owner: Token, worker: Token, askers: &[Asker]) -> Self {
        let map = askers
            .iter()
            .map(|a| (a.token_hash.clone(), a.name.clone()))
            .collect();
        Self {
            owner,
            worker,
            askers: Arc::new(RwLock::new(map)),
            proofs: ProofKey::generate(),
        }
    }

    pub fn identify(&self, presented: &str) -> Option<Caller> {
        if self.owner.matches(presented) {
            return Some(Caller::Owner);
        }
        if self.worker.matches(presented) {
            return Some(Caller::Worker);
        }
        // The presented token's hash against every asker's, each in constant time, and all of
        // them whatever matched: what a stranger on the network could time tells it nothing of
        // any asker's hash, let alone of a token.
        let hash = token_hash(presented);
        let askers = self.askers.read().unwrap_or_else(PoisonError::into_inner);
        let mut found = None;
        for (kept, name) in askers.iter() {
            if bool::from(kept.as_bytes().ct_eq(hash.as_bytes())) {
                found = Some(Caller::Asker(name.clone()));
            }
        }
        found
    }

    pub fn add_asker(&self, asker: &Asker) {
        let mut askers = self.askers.write().unwrap_or_else(PoisonError::into_inner);
        askers.insert(asker.token_hash.clone(), asker.name.clone());
    }

    pub fn remove_asker(&self, name: &str) {
        let mut askers = self.askers.write().unwrap_or_else(PoisonError::into_inner);
        askers.retain(|_, n| n != name);
    }

    /// The proof a session presents to say it is `session`.
    pub fn session_proof(&self, session: &str) -> String {
        self.proofs.prove(session)
    }

    /// Whether `proof` proves `session`, compared in constant time.
    pub fn proves(&self, session: &str, proof: &str) -> bool {
        self.proofs.verify(session, proof)
    }
}

/// The daemon's key for session proofs: random at every start, never written anywhere, so
/// a proof is good for one run of the daemon (launched sessions end with it; hook-driven
/// sessions get a fresh proof with each PreToolUse).
#[derive(Clone)]
struct ProofKey(Arc<[u8; 64]>);

impl std::fmt::Debug for ProofKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProofKey(..)")
    }
}

impl ProofKey {
    fn generate() -> Self {
        // HMAC-SHA-256's block size: the key is used as it is.
        let mut key = [0u8; 64];
        rand::rng().fill_bytes(&mut key);
        Self(Arc::new(key))
    }

    fn mac(&self, session: &str) -> Hmac<Sha256> {
        let key = hmac::digest::generic_array::GenericArray::from_slice(&self.0[..]);
        let mut mac = <Hmac<Sha256> as hmac::digest::KeyInit>::new(key);
        mac.update(b"taskkeeper session proof\0");
        mac.update(session.as_bytes());
        mac
    }

    fn prove(&self, session: &str) -> String {
        hex::encode(self.mac(session).finalize().into_bytes())
    }

    fn verify(&self, session: &str, proof: &str) -> bool {
        let Ok(bytes) = hex::decode(proof.trim()) else {
            return false;
        };
        self.mac(session).verify_slice(&bytes).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn credentials() -> Credentials {
        Credentials::new(Token::new("owner"), Token::new("worker"), &[])
    }

    #[test]
    fn each_token_names_its_kind() {
        let c = credentials();
        assert_eq!(c.identify("owner"), Some(Caller::Owner));
        assert_eq!(c.identify("worker"), Some(Caller::Worker));
        assert_eq!(c.identify("someone"), None);
        let bob = Asker {
            name: "bob".into(),
            token_hash: token_hash("bob-token"),
            created_at: taskkeeper_core::Timestamp::from_millis(0),
        };
        c.add_asker(&bob);
        assert_eq!(c.identify("bob-token"), Some(Caller::Asker("bob".into())));
        assert_eq!(c.identify("bob-token "), None);
        c.remove_asker("bob");
        assert_eq!(c.identify("bob-token"), None);
    }

    #[test]
    fn a_proof_proves_its_session_only() {
        let c = credentials();
        let proof = c.session_proof("s1");
        assert!(c.proves("s1", &proof));
        assert!(!c.proves("s2", &proof));
        assert!(!c.proves("s1", ""));
        assert!(!c.proves("s1", "zz"));
        assert!(!c.proves("s1", &proof[..proof.len() - 2]));
        // Another daemon (another key) does not take it.
        assert!(!credentials().proves("s1", &proof));
    }
}
