//! Signed Agent Cards, checked with our own verifier (`card_key::verify`, which does what the
//! reference SDKs do; `crates/cli/tests/it/interop.rs` runs the SDKs' own verifiers): every
//! card served, public and extended, on both bindings and both listeners, verifies against the
//! JWK Set at `/.well-known/jwks.json`, by the key whose thumbprint the owner API gives; a card
//! changed by one byte, a changed signature, another key, an unsigned card and a header that
//! is not ES256 are refused; after a rotation the new key signs, the set holds it alone, and
//! what the old key signed no longer verifies.

use serde_json::{Value, json};
use taskkeeper_server::card_key::{self, VerifyError};

use crate::support::{Pinned, TOKEN, TestDaemon, network};

const V1: Option<&str> = Some("1.0");

fn anonymous(d: &TestDaemon, path: &str) -> (u16, Vec<(String, String)>, String) {
    d.http_exchange("GET", path, Some(&d.host()), &[], "")
}

fn card(d: &TestDaemon, path: &str) -> Value {
    let (status, _, body) = anonymous(d, path);
    assert_eq!(status, 200, "{path}: {body}");
    serde_json::from_str(&body).unwrap()
}

fn jwks(d: &TestDaemon) -> Value {
    card(d, card_key::JWKS_PATH)
}

fn thumbprint(d: &TestDaemon) -> String {
    let (code, body) = d.call("GET", "/api/card-key", None);
    assert_eq!(code, 200, "{body}");
    body["thumbprint"].as_str().unwrap().to_owned()
}

fn header(card: &Value) -> Value {
    use base64::Engine as _;
    let protected = card["signatures"][0]["protected"].as_str().unwrap();
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(protected)
        .unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

fn extended(d: &TestDaemon, path: &str, version: Option<&str>) -> Value {
    let method = if version.is_some() {
        "GetExtendedAgentCard"
    } else {
        "agent/getAuthenticatedExtendedCard"
    };
    let answer = d.rpc(
        path,
        TOKEN,
        version,
        &json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": {}}),
    );
    assert!(answer["result"].is_object(), "{answer}");
    answer["result"].clone()
}

#[test]
fn every_card_is_signed_by_the_published_key_and_the_owner_api_names_it() {
    let d = TestDaemon::start();
    d.with_desk("web");
    let set = jwks(&d);
    let kid = thumbprint(&d);
    assert_eq!(set["keys"].as_array().unwrap().len(), 1, "{set}");
    let key = &set["keys"][0];
    assert_eq!(
        (&key["kty"], &key["crv"], &key["kid"]),
        (&json!("EC"), &json!("P-256"), &json!(kid))
    );
    assert!(
        key.get("d").is_none(),
        "the private key is not published: {key}"
    );
    let (_, headers, _) = anonymous(&d, card_key::JWKS_PATH);
    assert!(
        headers
            .iter()
            .any(|(k, v)| k == "cache-control" && v == "no-cache"),
        "{headers:?}"
    );

    let port = d.addr.port();
    let mut cards = vec![
        card(&d, "/.well-known/agent-card.json"),
        card(&d, "/a2a/web/.well-known/agent-card.json"),
        extended(&d, "/a2a/web", V1),
        extended(&d, "/a2a", V1),
        extended(&d, "/a2a/web", None),
    ];
    let (code, rest) = d.raw(
        "GET",
        "/a2a/web/extendedAgentCard",
        &d.host(),
        &[
            ("Authorization".to_owned(), format!("Bearer {TOKEN}")),
            ("A2A-Version".to_owned(), "1.0".to_owned()),
        ],
        "",
    );
    assert_eq!(code, 200, "{rest}");
    cards.push(serde_json::from_str(&rest).unwrap());
    for c in &cards {
        assert_eq!(card_key::verify(c, &set), Ok(kid.clone()), "{c}");
        assert_eq!(
            header(c),
            json!({"alg": "ES256", "typ": "JOSE", "kid": kid,
                   "jku": format!("http://127.0.0.1:{port}/.well-known/jwks.json")})
        );
    }
    // A card that did not change is the same bytes (its ETag holds).
    assert_eq!(
        anonymous(&d, "/a2a/web/.well-known/agent-card.json").2,
        anonymous(&d, "/a2a/web/.well-known/agent-card.json").2
    );
    // The live numbers are signed as served: a settings change is a new, valid signature.
    let before = card(&d, "/a2a/web/.well-known/agent-card.json");
    d.set_setting("reminders.ladder", "10s,20s");
    let after = card(&d, "/a2a/web/.well-known/agent-card.json");
    assert_ne!(before["signatures"], after["signatures"]);
    assert_eq!(card_key::verify(&after, &set), Ok(kid.clone()));
    assert!(card_key::verify(&before, &set).is_ok());
}

#[test]
fn a_changed_card_another_key_or_no_signature_is_refused() {
    let d = TestDaemon::start();
    d.with_desk("web");
    let set = jwks(&d);
    let signed = card(&d, "/a2a/web/.well-known/agent-card.json");
    let refused = |c: &Value, keys: &Value| {
        assert!(
            matches!(card_key::verify(c, keys), Err(VerifyError::NoneVerifies(_))),
            "{c}"
        );
    };

    // One byte of a signed field.
    let mut changed = signed.clone();
    let description = changed["description"]
        .as_str()
        .unwrap()
        .replacen('w', "v", 1);
    changed["description"] = json!(description);
    refused(&changed, &set);
    // A number the extension declares.
    let mut changed = signed.clone();
    changed["capabilities"]["extensions"][0]["params"]["stallAfterSeconds"] = json!(1);
    refused(&changed, &set);
    // The signature itself.
    let mut changed = signed.clone();
    let sig = changed["signatures"][0]["signature"].as_str().unwrap();
    let flipped = format!(
        "{}{}",
        if sig.starts_with('A') { 'B' } else { 'A' },
        &sig[1..]
    );
    changed["signatures"][0]["signature"] = json!(flipped);
    refused(&changed, &set);
    // Another machine's key, even under this key's kid.
    let other = TestDaemon::start();
    let mut elsewhere = jwks(&other);
    elsewhere["keys"][0]["kid"] = set["keys"][0]["kid"].clone();
    refused(&signed, &elsewhere);
    // Another machine's set, by its own kid: no key for this signature.
    refused(&signed, &jwks(&other));
    // A header that says another algorithm.
    use base64::Engine as _;
    let mut header = header(&signed);
    header["alg"] = json!("HS256");
    let mut changed = signed.clone();
    changed["signatures"][0]["protected"] =
        json!(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(header.to_string()));
    refused(&changed, &set);
    // No signatures at all.
    let mut bare = signed.clone();
    bare.as_object_mut().unwrap().remove("signatures");
    assert_eq!(
        card_key::verify(&bare, &set),
        Err(VerifyError::NoSignatures)
    );
    bare["signatures"] = json!([]);
    assert_eq!(
        card_key::verify(&bare, &set),
        Err(VerifyError::NoSignatures)
    );
    // v0.3's duplicates are outside what the SDKs read, so outside what is signed.
    let mut v03 = signed.clone();
    v03["url"] = json!("http://elsewhere.invalid/a2a/web");
    assert!(card_key::verify(&v03, &set).is_ok());
}

#[test]
fn a_rotated_key_signs_from_then_on_and_the_old_signatures_stop_verifying() {
    let mut d = TestDaemon::start();
    d.with_desk("web");
    let old_kid = thumbprint(&d);
    let old_set = jwks(&d);
    let old_card = card(&d, "/a2a/web/.well-known/agent-card.json");
    let old_file = std::fs::read(d.data_dir.join(card_key::KEY_FILE)).unwrap();

    let (code, body) = d.call("POST", "/api/card-key/rotate", Some(&json!({})));
    assert_eq!(code, 200, "{body}");
    let new_kid = body["thumbprint"].as_str().unwrap().to_owned();
    assert_ne!(new_kid, old_kid);
    assert_eq!(body["jwk"]["kid"], new_kid);
    assert_eq!(thumbprint(&d), new_kid);

    let set = jwks(&d);
    assert_eq!(set["keys"].as_array().unwrap().len(), 1, "{set}");
    assert_eq!(set["keys"][0]["kid"], new_kid);
    let new_card = card(&d, "/a2a/web/.well-known/agent-card.json");
    assert_eq!(header(&new_card)["kid"], new_kid);
    assert_eq!(card_key::verify(&new_card, &set), Ok(new_kid.clone()));
    assert_eq!(
        card_key::verify(&extended(&d, "/a2a/web", V1), &set),
        Ok(new_kid.clone())
    );
    // What the old key signed: refused by the set published now, and a pinned old key does
    // not take the new cards.
    assert!(card_key::verify(&old_card, &set).is_err());
    assert!(card_key::verify(&new_card, &old_set).is_err());

    // Kept, private, and the one signing after a restart.
    let file = d.data_dir.join(card_key::KEY_FILE);
    assert_ne!(std::fs::read(&file).unwrap(), old_file);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
    d.restart();
    assert_eq!(thumbprint(&d), new_kid);
    assert_eq!(
        card_key::verify(&card(&d, "/a2a/web/.well-known/agent-card.json"), &jwks(&d)),
        Ok(new_kid)
    );
}

#[test]
fn only_the_owner_rotates_the_key() {
    let d = TestDaemon::start();
    let bob = d.add_asker("bob");
    let kid = thumbprint(&d);
    for token in [bob.as_str(), "not-a-token"] {
        let (status, _) = d.raw(
            "POST",
            "/api/card-key/rotate",
            &d.host(),
            &[("Authorization".to_owned(), format!("Bearer {token}"))],
            "",
        );
        assert!(status == 401 || status == 403, "{token}: {status}");
    }
    let (status, _) = d.raw("POST", "/api/card-key/rotate", &d.host(), &[], "");
    assert_eq!(status, 401);
    assert_eq!(thumbprint(&d), kid, "nobody but the owner changed it");
}

#[test]
fn an_unreadable_key_is_replaced_by_a_new_one_at_start() {
    let mut d = TestDaemon::start();
    let old = thumbprint(&d);
    std::fs::write(d.data_dir.join(card_key::KEY_FILE), "not a key").unwrap();
    d.restart();
    let new = thumbprint(&d);
    assert_ne!(new, old);
    let text = std::fs::read_to_string(d.data_dir.join(card_key::KEY_FILE)).unwrap();
    assert!(text.starts_with("-----BEGIN PRIVATE KEY-----"), "{text}");
    d.with_desk("web");
    let c = card(&d, "/a2a/web/.well-known/agent-card.json");
    assert_eq!(card_key::verify(&c, &jwks(&d)), Ok(new));
}

#[test]
fn on_the_network_listener_the_cards_name_the_public_key_set_and_verify_against_it() {
    let d = TestDaemon::start_configured(|c| {
        c.network = Some(network(&[("network.listen", "127.0.0.1:0")]));
    });
    d.with_desk("web");
    let addr = d.network_addr();
    let pinned = Pinned::new(&[&d.self_signed_pem()]);
    let get = |path: &str| {
        let answer = pinned.exchange(addr, "127.0.0.1", "GET", path, &[], "");
        assert_eq!(answer.status, 200, "{path}: {}", answer.body);
        answer.json()
    };
    let set = get(card_key::JWKS_PATH);
    let kid = thumbprint(&d);
    for path in [
        "/a2a/web/.well-known/agent-card.json",
        "/.well-known/agent-card.json",
    ] {
        let c = get(path);
        assert_eq!(
            header(&c)["jku"],
            format!("https://{addr}/.well-known/jwks.json"),
            "{c}"
        );
        assert_eq!(card_key::verify(&c, &set), Ok(kid.clone()), "{c}");
    }
    // The extended card, asked for over the network with an asker's token.
    let bob = d.add_asker("bob");
    let auth = format!("Bearer {bob}");
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "GetExtendedAgentCard", "params": {}});
    let answer = pinned.exchange(
        addr,
        "127.0.0.1",
        "POST",
        "/a2a/web",
        &[
            ("Authorization", &auth),
            ("Content-Type", "application/json"),
            ("A2A-Version", "1.0"),
        ],
        &body.to_string(),
    );
    let c = answer.json()["result"].clone();
    assert_eq!(card_key::verify(&c, &set), Ok(kid), "{c}");
}

#[test]
fn the_conformance_desks_card_is_signed_and_keeps_to_the_v1_members() {
    let d = TestDaemon::start_configured(|c| c.conformance = true);
    let c = card(&d, "/a2a/tck/.well-known/agent-card.json");
    assert_eq!(c["signatures"].as_array().map(Vec::len), Some(1), "{c}");
    assert!(card_key::verify(&c, &jwks(&d)).is_ok());
    let root = card(&d, "/.well-known/agent-card.json");
    assert!(card_key::verify(&root, &jwks(&d)).is_ok());
}
