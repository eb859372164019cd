//! The Agent Cards as a client without credentials finds them: public at the well-known
//! paths (also with a trailing slash), holding no directory and no asker name; the extended
//! card, for a caller with a token, holds the rest. A2A's endpoints take a trailing slash too.

use serde_json::{Value, json};

use crate::support::{TOKEN, TestDaemon};

const V1: Option<&str> = Some("1.0");

/// A GET with no Authorization header at all.
fn get_anonymous(d: &TestDaemon, path: &str) -> (u16, Value) {
    let (status, text) = d.raw("GET", path, &d.host(), &[], "");
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// A desk whose directory is a path no other part of a card could contain by chance.
fn daemon_with_private_desk() -> (TestDaemon, String) {
    let d = TestDaemon::start();
    let dir = d.data_dir.join("private-project");
    std::fs::create_dir_all(&dir).unwrap();
    let dir = dir.display().to_string();
    let (code, body) = d.call(
        "POST",
        "/api/desks",
        Some(&json!({"name": "site", "dir": dir, "agent": "claude-code"})),
    );
    assert_eq!(code, 201, "{body}");
    (d, dir)
}

#[test]
fn the_cards_are_public_and_name_no_directory_and_no_asker() {
    let (d, dir) = daemon_with_private_desk();
    let (code, body) = d.call("POST", "/api/askers", Some(&json!({"name": "bobby"})));
    assert_eq!(code, 201, "{body}");
    let bob = body["token"].as_str().unwrap().to_owned();
    // Bob has a task on the desk, so there is an asker name the cards could leak.
    let send = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
        "message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "x"}]},
        "configuration": {"returnImmediately": true}}});
    let sent = d.rpc("/a2a/site", &bob, V1, &send);
    assert!(sent["result"]["task"]["id"].is_string(), "{sent}");

    for path in [
        "/.well-known/agent-card.json",
        "/.well-known/agent-card.json/",
        "/a2a/site/.well-known/agent-card.json",
        "/a2a/site/.well-known/agent-card.json/",
    ] {
        let (status, card) = get_anonymous(&d, path);
        assert_eq!(status, 200, "{path} without a token: {card}");
        let text = card.to_string();
        assert!(!text.contains(&dir), "{path} shows the directory: {text}");
        assert!(!text.contains("bobby"), "{path} shows an asker: {text}");
        assert_eq!(
            card["capabilities"]["extendedAgentCard"], true,
            "{path}: the rest is in the extended card"
        );
        assert_eq!(card["supportsAuthenticatedExtendedCard"], true, "{path}");
        assert_eq!(
            card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"], "Bearer",
            "{path}: the public card says which scheme to use"
        );
    }
    let (_, desk_card) = get_anonymous(&d, "/a2a/site/.well-known/agent-card.json");
    assert_eq!(desk_card["skills"][0]["id"], "site");
    let (_, machine) = get_anonymous(&d, "/.well-known/agent-card.json");
    assert_eq!(machine["skills"][0]["id"], "site");
}

#[test]
fn the_extended_card_is_for_a_caller_with_a_token_and_holds_the_rest() {
    let (d, dir) = daemon_with_private_desk();
    let (code, body) = d.call("POST", "/api/askers", Some(&json!({"name": "bob"})));
    assert_eq!(code, 201, "{body}");
    let bob = body["token"].as_str().unwrap().to_owned();
    let get_card =
        json!({"jsonrpc": "2.0", "id": 3, "method": "GetExtendedAgentCard", "params": {}});

    for (path, skill) in [("/a2a/site", "site"), ("/a2a", "site")] {
        let v = d.rpc(path, &bob, V1, &get_card);
        let card = &v["result"];
        assert!(card.to_string().contains(&dir), "{path}: {v}");
        assert_eq!(card["skills"][0]["id"], skill, "{v}");
        assert_eq!(card["capabilities"]["extendedAgentCard"], true);
    }
    let v = d.rpc("/a2a/site", &bob, V1, &get_card);
    assert_eq!(
        v["result"]["supportedInterfaces"][0]["url"],
        format!("http://127.0.0.1:{}/a2a/site", d.addr.port())
    );
    // v0.3's name for it answers the v0.3 card, with the fields a v0.3 client reads.
    let v03 = json!({"jsonrpc": "2.0", "id": 4, "method": "agent/getAuthenticatedExtendedCard", "params": {}});
    let v = d.rpc("/a2a/site", TOKEN, None, &v03);
    assert!(v["result"].to_string().contains(&dir), "{v}");
    assert_eq!(v["result"]["protocolVersion"], "0.3.0", "{v}");
    assert_eq!(
        v["result"]["url"],
        format!("http://127.0.0.1:{}/a2a/site", d.addr.port())
    );

    // Without a token there is no extended card: the endpoint is closed.
    let headers = vec![
        ("Content-Type".to_owned(), "application/json".to_owned()),
        ("A2A-Version".to_owned(), "1.0".to_owned()),
    ];
    let (status, text) = d.raw(
        "POST",
        "/a2a/site",
        &d.host(),
        &headers,
        &get_card.to_string(),
    );
    assert_eq!(status, 401, "{text}");
    assert!(!text.contains(&dir));
}

#[test]
fn a2a_endpoints_take_a_trailing_slash() {
    let d = TestDaemon::start();
    d.with_desk("web");
    let send = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
        "message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "x"}]},
        "configuration": {"returnImmediately": true}}});
    let sent = d.rpc("/a2a/web/", TOKEN, V1, &send);
    let id = sent["result"]["task"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{sent}"))
        .to_owned();
    let get = json!({"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": id}});
    for path in ["/a2a/web/", "/a2a/"] {
        let v = d.rpc(path, TOKEN, V1, &get);
        assert_eq!(v["result"]["id"], id.as_str(), "{path}: {v}");
    }
}
