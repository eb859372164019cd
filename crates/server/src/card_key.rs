//! Signed Agent Cards (A2A 1.0 §8.4): every card the daemon serves carries `signatures`, one
//! JWS (ES256, `typ` JOSE) by this machine's card-signing key, whose public half is published
//! as a JWK Set at [`JWKS_PATH`] on both listeners. Each signature's protected header names
//! the key (`kid`, its RFC 7638 thumbprint, which `taskkeeper asker add` prints for the asker
//! to pin) and where the set is (`jku`). The key is made on first start and kept in the data
//! directory, 0600 ([`KEY_FILE`]); `taskkeeper card rotate-key` makes a new one in the
//! running daemon: from then on every card is signed by it and the set holds it alone, so a
//! signature by the old key no longer verifies against what is published.
//!
//! What is signed is what the reference SDKs verify (Python `a2a.utils.signing`, JS
//! `verifyAgentCardSignature`): the card as the v1.0 proto reads it (members outside the v1.0
//! AgentCard dropped, v0.3's among them; a plain proto3 bool that is false omitted), without
//! `signatures`, with empty strings, lists and objects removed, in its RFC 8785 canonical
//! form. So v0.3's duplicate fields are not covered; every v1.0 field is.
//!
//! ECDSA signs with a fresh nonce, so each key keeps the signatures it made per signing input:
//! a card that did not change is the same bytes, and its ETag holds.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::SystemRandom;
use ring::signature::{
    ECDSA_P256_SHA256_FIXED, ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _,
    UnparsedPublicKey,
};
use rustls::pki_types::PrivatePkcs8KeyDer;
use rustls::pki_types::pem::PemObject as _;
use serde_json::{Map, Value, json};
use sha2::{Digest as _, Sha256};

/// The card-signing key's file in the data directory (PKCS#8 PEM, 0600).
pub const KEY_FILE: &str = "card-signing-key.pem";
/// Where the public key is published, as a JWK Set (RFC 7517 §5), on both listeners.
pub const JWKS_PATH: &str = "/.well-known/jwks.json";
/// The one algorithm: ECDSA P-256 with SHA-256.
pub const ALG: &str = "ES256";
/// Signatures kept per key before the oldest go (cards differ by desk, listener, detail,
/// dialect and the settings' numbers).
const KEPT: usize = 256;

#[derive(Debug, thiserror::Error)]
pub enum CardKeyError {
    #[error(
        "cannot keep the card-signing key in {path}: {reason}; check that the data directory is writable"
    )]
    Write { path: PathBuf, reason: String },
    #[error("cannot make a card-signing key: {0}")]
    Make(String),
}

/// Why a card's signatures do not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    #[error("the card has no signatures")]
    NoSignatures,
    #[error("no signature on the card verifies: {}", .0.join("; "))]
    NoneVerifies(Vec<String>),
}

/// The machine's card-signing key, shared by the cards (which it signs) and the owner service
/// (which rotates it).
#[derive(Clone)]
pub struct CardKey {
    path: PathBuf,
    current: Arc<RwLock<Arc<Loaded>>>,
    /// Held while a new key is written and put in place, so two rotations do not cross.
    rotating: Arc<Mutex<()>>,
}

impl std::fmt::Debug for CardKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CardKey")
            .field("path", &self.path)
            .field("thumbprint", &self.thumbprint())
            .finish()
    }
}

struct Loaded {
    pair: EcdsaKeyPair,
    /// The public JWK (with `kid`, `alg`, `use`).
    jwk: Value,
    thumbprint: String,
    /// Signatures made, by the SHA-256 of their signing input.
    signed: Mutex<HashMap<[u8; 32], String>>,
}

fn loaded(pkcs8: &[u8]) -> Result<Loaded, String> {
    let pair = EcdsaKeyPair::from_pkcs8(
        &ECDSA_P256_SHA256_FIXED_SIGNING,
        pkcs8,
        &SystemRandom::new(),
    )
    .map_err(|e| format!("not a P-256 PKCS#8 key ({e})"))?;
    // The uncompressed point: 0x04, then x and y, 32 bytes each.
    let point = pair.public_key().as_ref();
    let (x, y) = (
        URL_SAFE_NO_PAD.encode(&point[1..33]),
        URL_SAFE_NO_PAD.encode(&point[33..65]),
    );
    let thumbprint = thumbprint(&x, &y);
    let jwk = json!({"kty": "EC", "crv": "P-256", "x": x, "y": y, "kid": thumbprint, "alg": ALG, "use": "sig"});
    Ok(Loaded {
        pair,
        jwk,
        thumbprint,
        signed: Mutex::new(HashMap::new()),
    })
}

/// The RFC 7638 thumbprint of a P-256 public key: the SHA-256 of its required members in
/// lexicographic order without whitespace, base64url.
fn thumbprint(x: &str, y: &str) -> String {
    let members = format!(r#"{{"crv":"P-256","kty":"EC","x":"{x}","y":"{y}"}}"#);
    URL_SAFE_NO_PAD.encode(Sha256::digest(members.as_bytes()))
}

/// A new key, as PKCS#8 DER and PEM.
fn make() -> Result<(Vec<u8>, String), CardKeyError> {
    let doc = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &SystemRandom::new())
        .map_err(|e| CardKeyError::Make(e.to_string()))?;
    let der = doc.as_ref().to_vec();
    let body = base64::engine::general_purpose::STANDARD.encode(&der);
    let mut pem = String::from("-----BEGIN PRIVATE KEY-----\n");
    for line in body.as_bytes().chunks(64) {
        pem.push_str(&String::from_utf8_lossy(line));
        pem.push('\n');
    }
    pem.push_str("-----END PRIVATE KEY-----\n");
    Ok((der, pem))
}

impl CardKey {
    /// The key in `data_dir`, made (0600) when there is none. One that cannot be read is
    /// replaced by a new one, and the log says so: askers who pinned it must pin the new one.
    pub fn load_or_make(data_dir: &Path) -> Result<Self, CardKeyError> {
        let path = data_dir.join(KEY_FILE);
        let kept = match std::fs::read(&path) {
            Ok(bytes) => match PrivatePkcs8KeyDer::from_pem_slice(&bytes)
                .map_err(|e| e.to_string())
                .and_then(|der| loaded(der.secret_pkcs8_der()))
            {
                Ok(key) => Some(key),
                Err(reason) => {
                    tracing::warn!(path = %path.display(), %reason, "the card-signing key could not be read; making a new one (askers who pinned the old thumbprint must pin the new one)");
                    None
                }
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "the card-signing key could not be read; making a new one");
                None
            }
        };
        let key = match kept {
            Some(key) => key,
            None => {
                let key = Self::write_new(&path)?;
                tracing::info!(thumbprint = %key.thumbprint, "made a card-signing key");
                key
            }
        };
        Ok(Self {
            path,
            current: Arc::new(RwLock::new(Arc::new(key))),
            rotating: Arc::new(Mutex::new(())),
        })
    }

    fn write_new(path: &Path) -> Result<Loaded, CardKeyError> {
        let (der, pem) = make()?;
        crate::private::replace_private(path, pem.as_bytes()).map_err(|e| CardKeyError::Write {
            path: path.to_owned(),
            reason: e.to_string(),
        })?;
        loaded(&der).map_err(CardKeyError::Make)
    }

    fn now(&self) -> Arc<Loaded> {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Make a new key, keep it in place of the old one and sign with it from now on; its
    /// thumbprint. The old key is gone: nothing it signed verifies against the published set.
    /// Blocking (it writes the file): call it off the async runtime.
    pub fn rotate(&self) -> Result<String, CardKeyError> {
        let _one = self.rotating.lock().unwrap_or_else(PoisonError::into_inner);
        let key = Self::write_new(&self.path)?;
        let thumbprint = key.thumbprint.clone();
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(key);
        tracing::info!(%thumbprint, "rotated the card-signing key; cards are signed by the new one");
        Ok(thumbprint)
    }

    /// The RFC 7638 thumbprint of the key signing now (also its `kid`).
    pub fn thumbprint(&self) -> String {
        self.now().thumbprint.clone()
    }

    /// The public key as a JWK.
    pub fn jwk(&self) -> Value {
        self.now().jwk.clone()
    }

    /// The JWK Set served at [`JWKS_PATH`]: the key signing now, alone.
    pub fn jwks(&self) -> Value {
        json!({"keys": [self.jwk()]})
    }

    /// `card` with `signatures` holding one signature by the key signing now, its `jku` the
    /// JWK Set at `origin` (where the card is served from). Signatures it had are replaced.
    pub fn sign(&self, mut card: Value, origin: &str) -> Value {
        let key = self.now();
        let header = json!({"alg": ALG, "typ": "JOSE", "kid": key.thumbprint, "jku": format!("{origin}{JWKS_PATH}")});
        let protected = URL_SAFE_NO_PAD.encode(header.to_string());
        let input = format!("{protected}.{}", URL_SAFE_NO_PAD.encode(canonical(&card)));
        let digest: [u8; 32] = Sha256::digest(input.as_bytes()).into();
        let mut signed = key.signed.lock().unwrap_or_else(PoisonError::into_inner);
        let signature = match signed.get(&digest) {
            Some(s) => s.clone(),
            None => match key.pair.sign(&SystemRandom::new(), input.as_bytes()) {
                Ok(s) => {
                    let s = URL_SAFE_NO_PAD.encode(s.as_ref());
                    if signed.len() >= KEPT {
                        signed.clear();
                    }
                    signed.insert(digest, s.clone());
                    s
                }
                Err(e) => {
                    // ring fails only without a random source; the card goes out unsigned,
                    // which a verifier refuses, rather than not at all.
                    tracing::error!(error = %e, "could not sign a card");
                    return card;
                }
            },
        };
        drop(signed);
        if let Some(map) = card.as_object_mut() {
            map.insert(
                "signatures".into(),
                json!([{"protected": protected, "signature": signature}]),
            );
        }
        card
    }
}

/// Which members of an object the v1.0 proto reads, and how.
enum Shape {
    /// Anything, kept whole (a string, a list of strings, a `Struct`).
    Value,
    /// A proto3 bool without presence: false is its default and is omitted.
    PlainBool,
    Message(&'static [(&'static str, Shape)]),
    Repeated(&'static Shape),
    /// A map from names to messages.
    Map(&'static Shape),
}

const INTERFACE: Shape = Shape::Message(&[
    ("url", Shape::Value),
    ("protocolBinding", Shape::Value),
    ("tenant", Shape::Value),
    ("protocolVersion", Shape::Value),
]);
const EXTENSION: Shape = Shape::Message(&[
    ("uri", Shape::Value),
    ("description", Shape::Value),
    ("required", Shape::PlainBool),
    ("params", Shape::Value),
]);
const CAPABILITIES: Shape = Shape::Message(&[
    ("streaming", Shape::Value),
    ("pushNotifications", Shape::Value),
    ("extensions", Shape::Repeated(&EXTENSION)),
    ("extendedAgentCard", Shape::Value),
]);
/// A security scheme is a oneof: v0.3's `type`, `scheme`, … beside it are not the proto's.
const SCHEME: Shape = Shape::Message(&[
    ("apiKeySecurityScheme", Shape::Value),
    ("httpAuthSecurityScheme", Shape::Value),
    ("oauth2SecurityScheme", Shape::Value),
    ("openIdConnectSecurityScheme", Shape::Value),
    ("mtlsSecurityScheme", Shape::Value),
]);
const SKILL: Shape = Shape::Message(&[
    ("id", Shape::Value),
    ("name", Shape::Value),
    ("description", Shape::Value),
    ("tags", Shape::Value),
    ("examples", Shape::Value),
    ("inputModes", Shape::Value),
    ("outputModes", Shape::Value),
    ("securityRequirements", Shape::Value),
]);
/// The v1.0 AgentCard, but `signatures`, which the signed form leaves out.
const CARD: Shape = Shape::Message(&[
    ("name", Shape::Value),
    ("description", Shape::Value),
    ("supportedInterfaces", Shape::Repeated(&INTERFACE)),
    (
        "provider",
        Shape::Message(&[("url", Shape::Value), ("organization", Shape::Value)]),
    ),
    ("version", Shape::Value),
    ("documentationUrl", Shape::Value),
    ("capabilities", CAPABILITIES),
    ("securitySchemes", Shape::Map(&SCHEME)),
    ("securityRequirements", Shape::Value),
    ("defaultInputModes", Shape::Value),
    ("defaultOutputModes", Shape::Value),
    ("skills", Shape::Repeated(&SKILL)),
    ("iconUrl", Shape::Value),
]);

/// `value` as the proto reads it by `shape`; `None` for what it omits.
fn project(value: &Value, shape: &Shape) -> Option<Value> {
    match (shape, value) {
        (Shape::Value, v) => Some(v.clone()),
        (Shape::PlainBool, Value::Bool(false)) => None,
        (Shape::PlainBool, v) => Some(v.clone()),
        (Shape::Message(members), Value::Object(map)) => Some(Value::Object(
            members
                .iter()
                .filter_map(|(name, shape)| {
                    let v = project(map.get(*name)?, shape)?;
                    Some(((*name).to_owned(), v))
                })
                .collect(),
        )),
        (Shape::Repeated(item), Value::Array(items)) => Some(Value::Array(
            items.iter().filter_map(|v| project(v, item)).collect(),
        )),
        (Shape::Map(item), Value::Object(map)) => Some(Value::Object(
            map.iter()
                .filter_map(|(k, v)| Some((k.clone(), project(v, item)?)))
                .collect(),
        )),
        // A member of the wrong kind: the SDKs would not parse the card at all.
        (_, v) => Some(v.clone()),
    }
}

/// Empty strings, lists and objects and nulls removed, at every depth (as the SDKs do).
fn clean(value: Value) -> Option<Value> {
    match value {
        Value::Null => None,
        Value::String(s) if s.is_empty() => None,
        Value::Array(items) => {
            let items: Vec<Value> = items.into_iter().filter_map(clean).collect();
            (!items.is_empty()).then_some(Value::Array(items))
        }
        Value::Object(map) => {
            let map: Map<String, Value> = map
                .into_iter()
                .filter_map(|(k, v)| Some((k, clean(v)?)))
                .collect();
            (!map.is_empty()).then_some(Value::Object(map))
        }
        v => Some(v),
    }
}

/// The bytes a card's signature covers: its v1.0 proto reading without `signatures`,
/// cleaned of empties, in RFC 8785 canonical form.
pub fn canonical(card: &Value) -> Vec<u8> {
    let read = project(card, &CARD).and_then(clean).unwrap_or(json!({}));
    // A `Value` always serializes; its keys are strings.
    serde_json_canonicalizer::to_vec(&read).unwrap_or_default()
}

/// Verify `card`'s signatures against the keys of `jwks`, the way the reference SDKs do: at
/// least one must be an ES256 signature, with `kid` and `typ` in its protected header, by a
/// key of the set with that `kid`. The `kid` of the one that verifies.
pub fn verify(card: &Value, jwks: &Value) -> Result<String, VerifyError> {
    let signatures = card
        .get("signatures")
        .and_then(Value::as_array)
        .filter(|s| !s.is_empty())
        .ok_or(VerifyError::NoSignatures)?;
    let payload = URL_SAFE_NO_PAD.encode(canonical(card));
    let mut why = Vec::new();
    for (i, s) in signatures.iter().enumerate() {
        match verify_one(s, &payload, jwks) {
            Ok(kid) => return Ok(kid),
            Err(reason) => why.push(format!("signature {i}: {reason}")),
        }
    }
    Err(VerifyError::NoneVerifies(why))
}

fn verify_one(signature: &Value, payload: &str, jwks: &Value) -> Result<String, String> {
    let text = |name: &str| {
        signature
            .get(name)
            .and_then(Value::as_str)
            .ok_or(format!("no `{name}`"))
    };
    let (protected, sig) = (text("protected")?, text("signature")?);
    let header: Value = URL_SAFE_NO_PAD
        .decode(protected)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .ok_or("the protected header is not base64url JSON")?;
    if header["alg"] != ALG {
        return Err(format!("alg {} is not {ALG}", header["alg"]));
    }
    let kid = header["kid"]
        .as_str()
        .ok_or("no kid in the protected header")?;
    if !header["typ"].is_string() {
        return Err("no typ in the protected header".into());
    }
    let jwk = jwks["keys"]
        .as_array()
        .and_then(|keys| keys.iter().find(|k| k["kid"] == kid))
        .ok_or(format!("no key {kid} in the key set"))?;
    let coordinate = |name: &str| {
        jwk[name]
            .as_str()
            .and_then(|c| URL_SAFE_NO_PAD.decode(c).ok())
            .filter(|c| c.len() == 32)
            .ok_or(format!("key {kid} has no P-256 `{name}`"))
    };
    if jwk["kty"] != "EC" || jwk["crv"] != "P-256" {
        return Err(format!("key {kid} is not an EC P-256 key"));
    }
    let mut point = vec![4u8];
    point.extend(coordinate("x")?);
    point.extend(coordinate("y")?);
    let sig = URL_SAFE_NO_PAD
        .decode(sig)
        .map_err(|_| "the signature is not base64url")?;
    UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, point)
        .verify(format!("{protected}.{payload}").as_bytes(), &sig)
        .map_err(|_| format!("the signature does not verify with key {kid}"))?;
    Ok(kid.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn card() -> Value {
        json!({
            "name": "web", "description": "a desk", "version": "1",
            "supportedInterfaces": [{"url": "http://127.0.0.1:1/a2a/web", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
            "capabilities": {"streaming": true, "pushNotifications": false,
                "extensions": [{"uri": "urn:x", "required": false, "params": {"n": 3600, "off": false, "none": []}}]},
            "securitySchemes": {"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}, "type": "http", "scheme": "Bearer"}},
            "securityRequirements": [{"schemes": {"bearer": {"list": []}}}],
            "defaultInputModes": ["text/plain"], "skills": [],
            "url": "http://127.0.0.1:1/a2a/web", "protocolVersion": "0.3.0",
        })
    }

    #[test]
    fn the_canonical_form_is_the_v1_reading_sorted_without_empties() {
        let text = String::from_utf8(canonical(&card())).unwrap();
        assert_eq!(
            text,
            r#"{"capabilities":{"extensions":[{"params":{"n":3600,"off":false},"uri":"urn:x"}],"pushNotifications":false,"streaming":true},"defaultInputModes":["text/plain"],"description":"a desk","name":"web","securitySchemes":{"bearer":{"httpAuthSecurityScheme":{"scheme":"Bearer"}}},"supportedInterfaces":[{"protocolBinding":"JSONRPC","protocolVersion":"1.0","url":"http://127.0.0.1:1/a2a/web"}],"version":"1"}"#
        );
    }

    #[test]
    fn a_signed_card_verifies_and_a_changed_one_or_another_key_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let key = CardKey::load_or_make(dir.path()).unwrap();
        let signed = key.sign(card(), "http://127.0.0.1:1");
        assert_eq!(verify(&signed, &key.jwks()), Ok(key.thumbprint()));
        // The same card twice is the same signature (the ETag holds).
        assert_eq!(signed, key.sign(card(), "http://127.0.0.1:1"));
        let mut changed = signed.clone();
        changed["description"] = json!("a desl");
        assert!(matches!(
            verify(&changed, &key.jwks()),
            Err(VerifyError::NoneVerifies(_))
        ));
        let other = CardKey::load_or_make(tempfile::tempdir().unwrap().path()).unwrap();
        let mut elsewhere = other.jwks();
        elsewhere["keys"][0]["kid"] = json!(key.thumbprint());
        assert!(verify(&signed, &elsewhere).is_err());
        assert_eq!(verify(&card(), &key.jwks()), Err(VerifyError::NoSignatures));
    }

    #[test]
    fn the_thumbprint_is_rfc_7638s() {
        // RFC 7517's example P-256 key; the thumbprint as `jose`'s calculateJwkThumbprint
        // (an independent implementation) gives it.
        assert_eq!(
            thumbprint(
                "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
                "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"
            ),
            "oKIywvGUpTVTyxMQ3bwIIeQUudfr_CkLMjCE19ECD-U"
        );
    }
}
