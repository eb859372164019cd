//! Where an asker's webhook may point, against a real daemon: this machine in every spelling
//! (decimal, hex, octal and short IPv4, bracketed IPv6, `localhost`, `0.0.0.0`, and the IPv6
//! transition forms that stand for 127.0.0.1) is refused by default with nothing stored, and
//! taken once the owner allows loopback targets; the private ranges in their transition forms
//! likewise, by their own setting; the daemon's own port is refused whatever the settings,
//! when the webhook is set and again when a push connects (the network listener's port too);
//! and a name that resolves to
//! loopback is refused at connect time once the owner withdraws the allowance.

use serde_json::{Value, json};

use crate::push::{Webhook, call, send, task_id, worker};
use crate::support::{TOKEN, TestDaemon, until};

const V1: Option<&str> = Some("1.0");

/// `CreateTaskPushNotificationConfig` for `url` on task `id` of desk `web`.
pub(crate) fn create(d: &TestDaemon, id: &str, url: &str) -> Value {
    d.rpc(
        "/a2a/web",
        TOKEN,
        V1,
        &call(
            "CreateTaskPushNotificationConfig",
            json!({"taskId": id, "url": url}),
        ),
    )
}

fn configs(d: &TestDaemon, id: &str) -> usize {
    d.daemon()
        .store()
        .push_configs(&taskkeeper_core::TaskId::from(id))
        .unwrap()
        .len()
}

/// A refusal that names the address's range and the setting that would allow it, with no
/// config stored.
pub(crate) fn assert_refused(d: &TestDaemon, id: &str, url: &str, says: &[&str]) {
    let before = configs(d, id);
    let v = create(d, id, url);
    assert_eq!(v["error"]["code"], -32602, "{url}: {v}");
    let message = v["error"]["message"].as_str().unwrap();
    for s in says {
        assert!(message.contains(s), "{url}: {message} (wanted {s:?})");
    }
    assert_eq!(configs(d, id), before, "{url} was stored");
}

/// Every spelling of this machine, on port `port`, and what the refusal says about each.
fn this_machine(port: u16) -> Vec<(String, &'static str)> {
    [
        ("127.0.0.1", "loopback (127.0.0.0/8)"),
        ("127.1", "loopback (127.0.0.0/8)"),
        ("2130706433", "loopback (127.0.0.0/8)"),
        ("0x7f000001", "loopback (127.0.0.0/8)"),
        ("0177.0.0.1", "loopback (127.0.0.0/8)"),
        ("127.0.0.1.", "loopback (127.0.0.0/8)"),
        ("localhost", "loopback"),
        ("[::1]", "loopback (::1)"),
        ("0.0.0.0", "this network"),
        ("[::]", "unspecified (::)"),
        (
            "[::ffff:127.0.0.1]",
            "IPv4-mapped (::ffff:0:0/96) for loopback",
        ),
        ("[::127.0.0.1]", "IPv4-compatible (::/96) for loopback"),
        (
            "[::ffff:0:127.0.0.1]",
            "IPv4-translated (::ffff:0:0:0/96) for loopback",
        ),
        ("[64:ff9b::127.0.0.1]", "NAT64 (64:ff9b::/96) for loopback"),
        ("[2002:7f00:1::]", "6to4 (2002::/16) for loopback"),
        (
            "[2001:0:4136:e378:8000:63bf:80ff:fffe]",
            "Teredo (2001::/32) for loopback",
        ),
    ]
    .into_iter()
    .map(|(host, says)| (format!("http://{host}:{port}/hook?x=1"), says))
    .collect()
}

#[test]
fn this_machine_in_every_spelling_is_refused_until_the_owner_allows_loopback_targets() {
    let d = TestDaemon::start();
    d.with_desk("web");
    d.set_setting("push.configs_per_task", "100");
    let id = task_id(&d.rpc("/a2a/web", TOKEN, V1, &send("m-1", None)));
    let hook = Webhook::start(0);
    for (url, says) in this_machine(hook.port) {
        assert_refused(&d, &id, &url, &[says, "push.allow_loopback_targets"]);
    }
    // Inline in SendMessage: refused before a task is made.
    let before = d.task_count();
    let v = d.rpc(
        "/a2a/web",
        TOKEN,
        V1,
        &send("m-2", Some(json!({"url": hook.url("/inline")}))),
    );
    assert_eq!(v["error"]["code"], -32602, "{v}");
    assert_eq!(d.task_count(), before);
    // Allowing private ranges does not allow this machine.
    d.set_setting("push.allow_private_targets", "true");
    assert_refused(
        &d,
        &id,
        &hook.url("/still"),
        &["loopback", "push.allow_loopback_targets"],
    );
    assert!(hook.hits("/still").is_empty() && hook.hits("/hook").is_empty());

    d.set_setting("push.allow_private_targets", "false");
    d.set_setting("push.allow_loopback_targets", "true");
    for (url, _) in this_machine(hook.port) {
        let v = create(&d, &id, &url);
        assert_eq!(v["result"]["url"], url.as_str(), "{v}");
    }
    // And the first push reaches the webhook.
    let id2 = task_id(&d.rpc(
        "/a2a/web",
        TOKEN,
        V1,
        &send("m-3", Some(json!({"url": hook.url("/inline")}))),
    ));
    let first = hook.delivered("/inline", 1);
    assert_eq!(first[0].body["task"]["id"], id2.as_str());
}

#[test]
fn private_ranges_in_their_ipv6_transition_forms_are_refused_until_the_owner_allows_them() {
    let d = TestDaemon::start();
    d.with_desk("web");
    d.set_setting("push.allow_loopback_targets", "true");
    d.set_setting("push.configs_per_task", "100");
    let id = task_id(&d.rpc("/a2a/web", TOKEN, V1, &send("m-1", None)));
    let forms = [
        (
            "http://[::169.254.169.254]/latest",
            "IPv4-compatible (::/96) for link-local (169.254.0.0/16)",
        ),
        (
            "http://[::ffff:169.254.169.254]/",
            "IPv4-mapped (::ffff:0:0/96) for link-local",
        ),
        (
            "http://[::ffff:0:10.0.0.1]/",
            "IPv4-translated (::ffff:0:0:0/96) for private (10.0.0.0/8)",
        ),
        (
            "http://[64:ff9b::169.254.169.254]/",
            "NAT64 (64:ff9b::/96) for link-local",
        ),
        (
            "http://[64:ff9b:1::a00:1]/",
            "local-use IPv4/IPv6 translation (64:ff9b:1::/48)",
        ),
        (
            "http://[2002:c0a8:101::1]:8080/",
            "6to4 (2002::/16) for private (192.168.0.0/16)",
        ),
        (
            "http://[2001:0:4136:e378:8000:63bf:3f57:fefe]/",
            "Teredo (2001::/32) for private (192.168.0.0/16)",
        ),
        ("http://[fec0::1]/", "site-local (fec0::/10)"),
        ("http://0xa9fea9fe/", "link-local (169.254.0.0/16)"),
        ("http://10.1/", "private (10.0.0.0/8)"),
    ];
    for (url, says) in forms {
        assert_refused(&d, &id, url, &[says, "push.allow_private_targets"]);
    }
    d.set_setting("push.allow_private_targets", "true");
    for (url, _) in forms {
        assert!(create(&d, &id, url)["result"].is_object(), "{url}");
    }
}

#[test]
fn the_daemons_own_port_is_refused_whatever_the_settings() {
    let d = TestDaemon::start();
    d.with_desk("web");
    d.set_setting("push.allow_loopback_targets", "true");
    d.set_setting("push.allow_private_targets", "true");
    d.set_setting("push.configs_per_task", "100");
    let id = task_id(&d.rpc("/a2a/web", TOKEN, V1, &send("m-1", None)));
    for (url, says) in this_machine(d.addr.port()) {
        assert_refused(&d, &id, &url, &[says, "the daemon's own port"]);
    }
    let v = d.rpc(
        "/a2a/web",
        TOKEN,
        V1,
        &send(
            "m-2",
            Some(json!({"url": format!("http://127.0.0.1:{}/a2a/web", d.addr.port())})),
        ),
    );
    assert_eq!(v["error"]["code"], -32602, "{v}");
}

/// The network listener's port is the daemon's too: a webhook on it is refused whatever the
/// settings, in every spelling of this machine.
#[test]
fn the_network_listeners_port_is_refused_whatever_the_settings() {
    let d = TestDaemon::start_configured(|c| {
        c.network = Some(crate::support::network(&[(
            "network.listen",
            "127.0.0.1:0",
        )]))
    });
    d.with_desk("web");
    d.set_setting("push.allow_loopback_targets", "true");
    d.set_setting("push.allow_private_targets", "true");
    d.set_setting("push.configs_per_task", "100");
    let port = d.network_addr().port();
    assert_ne!(port, d.addr.port());
    let id = task_id(&d.rpc("/a2a/web", TOKEN, V1, &send("m-1", None)));
    for (url, says) in this_machine(port) {
        assert_refused(&d, &id, &url, &[says, "the daemon's own port"]);
    }
    let https = format!("https://localhost:{port}/a2a/web");
    assert_refused(&d, &id, &https, &["the daemon's own port"]);
}

/// Webhooks on a port nothing listens on yet, set while the owner allows loopback: the
/// daemon then moves to that port, and each push is refused when it connects, never sent to
/// the daemon itself (which would answer 401).
#[test]
fn a_push_to_the_daemons_own_port_is_refused_when_it_connects() {
    let mut d = TestDaemon::start();
    d.with_desk("web");
    d.set_setting("push.allow_loopback_targets", "true");
    d.set_setting("push.retry_first", "1s");
    d.set_setting("push.retry_max", "1s");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    for (n, host) in ["127.0.0.1", "localhost"].into_iter().enumerate() {
        let push = json!({"url": format!("http://{host}:{port}/a2a/web")});
        let sent = d.rpc("/a2a/web", TOKEN, V1, &send(&format!("m-{n}"), Some(push)));
        task_id(&sent);
    }
    d.restart_configured(|c| c.port = port);
    assert_eq!(d.addr.port(), port);
    let errors = until("both pushes refused on the daemon's port", || {
        let errors = d.daemon().store().push_errors().unwrap();
        (errors.len() == 2 && errors.iter().all(|e| e.contains("the daemon's own port")))
            .then_some(errors)
    });
    assert!(errors.iter().all(|e| !e.contains("HTTP 401")), "{errors:?}");
    assert_eq!(d.daemon().store().push_queued().unwrap(), 2);
}

#[test]
fn a_name_that_resolves_to_loopback_is_refused_when_the_push_connects() {
    let d = TestDaemon::start();
    d.with_desk("web");
    d.set_setting("push.retry_first", "1s");
    d.set_setting("push.retry_max", "1s");
    let hook = Webhook::start(0);
    let url = format!("http://localhost:{}/named", hook.port);
    d.set_setting("push.allow_loopback_targets", "true");
    let id = task_id(&d.rpc(
        "/a2a/web",
        TOKEN,
        V1,
        &send("m-1", Some(json!({"url": url}))),
    ));
    hook.delivered("/named", 1);

    // The owner withdraws the allowance: the next push resolves `localhost` again and stops.
    d.set_setting("push.allow_loopback_targets", "false");
    worker(&d, &id, "blocked", "Which flag name?");
    let errors = until("the push refused at connect time", || {
        let errors = d.daemon().store().push_errors().unwrap();
        (!errors.is_empty()).then_some(errors)
    });
    assert!(
        errors[0].contains("localhost resolves to")
            && errors[0].contains("push.allow_loopback_targets"),
        "{errors:?}"
    );
    assert_eq!(
        hook.hits("/named").len(),
        1,
        "only the push before the refusal"
    );

    // Allowed again, the queued push goes out.
    d.set_setting("push.allow_loopback_targets", "true");
    let hits = hook.delivered("/named", 2);
    assert_eq!(
        hits[1].body["statusUpdate"]["status"]["state"],
        "TASK_STATE_INPUT_REQUIRED"
    );
}

#[test]
fn the_card_says_where_webhooks_may_point() {
    let d = TestDaemon::start();
    d.with_desk("web");
    let targets = || {
        let (status, text) = d.raw(
            "GET",
            "/a2a/web/.well-known/agent-card.json",
            &d.host(),
            &[],
            "",
        );
        assert_eq!(status, 200, "{text}");
        let card: Value = serde_json::from_str(&text).unwrap();
        card["capabilities"]["extensions"][0]["params"]["pushTargets"].clone()
    };
    let before = targets();
    assert_eq!(before["schemes"], json!(["http", "https"]), "{before}");
    assert_eq!(before["loopbackAllowed"], false, "{before}");
    assert_eq!(before["privateRangesAllowed"], false, "{before}");
    let rule = before["rule"].as_str().unwrap();
    assert!(
        rule.contains("This machine") && rule.contains("own port is refused always"),
        "{rule}"
    );
    d.set_setting("push.allow_loopback_targets", "true");
    assert_eq!(targets()["loopbackAllowed"], true);
}
