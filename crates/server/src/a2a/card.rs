//! Agent Cards: one per desk at `/a2a/{desk}/.well-known/agent-card.json`, and the machine's
//! at `/.well-known/agent-card.json`, which lists the desks as skills. Each declares
//! Taskkeeper's extension with its numbers (from the live settings), the bearer scheme, and
//! both protocol versions on the same URL.
//!
//! The cards at the well-known paths are public (A2A §8.2: that is where a client learns which
//! scheme to authenticate with), so they carry nothing private: no working directory, no asker
//! names. The extended card (`GetExtendedAgentCard`, v0.3 `agent/getAuthenticatedExtendedCard`)
//! adds the rest for a caller with a token.

use serde_json::{Value, json};
use taskkeeper_core::Desk;
use taskkeeper_core::settings::{Push, Settings};

use super::wire::EXTENSION_URI;

/// The media types a desk takes in a message part, declared as `defaultInputModes`: text and
/// JSON, and files a coding session can read (source and documents as text, images, PDF).
/// A part whose `mediaType` is another is refused with ContentTypeNotSupportedError; a part
/// without one is taken (text as text, data as JSON, a file as bytes).
pub const INPUT_MODES: [&str; 11] = [
    "text/plain",
    "application/json",
    "text/markdown",
    "text/csv",
    "text/html",
    "application/pdf",
    "image/png",
    "image/jpeg",
    "image/gif",
    "image/webp",
    "application/octet-stream",
];

/// What a desk answers with, declared as `defaultOutputModes`: the summary as text, data
/// artifacts as JSON, and file artifacts, each with the media type its name gives.
pub const OUTPUT_MODES: [&str; 3] = ["text/plain", "application/json", "application/octet-stream"];

/// How a card is drawn.
#[derive(Debug, Clone, Copy)]
pub struct CardOptions {
    /// Add v0.3's top-level card fields (`url`, `preferredTransport`, `protocolVersion`) that
    /// v0.3 clients need; a strict v1.0 structure check rejects them.
    pub v03_fields: bool,
    pub detail: Detail,
    /// Callers need a bearer token: declared as the card's security scheme. Off only for the
    /// conformance desk, which lets callers without one in, and says so.
    pub bearer: bool,
}

/// How much a card tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// The well-known card anyone may read.
    Public,
    /// The extended card, for a caller with a token: the desks' directories too.
    Extended,
}

fn secs(d: std::time::Duration) -> u64 {
    d.as_secs()
}

/// The extension declaration, its numbers following the settings.
pub fn extension(settings: &Settings) -> Value {
    json!({
        "uri": EXTENSION_URI,
        "required": false,
        "description": "Tasks stay open until the worker ends them with done, blocked, failed or rejected; a busy desk queues tasks; a quiet worker is reminded on a ladder and the owner is told when a task stalls; open tasks expire; AckTask acknowledges an ended task.",
        "params": {
            "expiresAfterSeconds": secs(settings.expire_after),
            "maxBlockingWaitSeconds": secs(settings.blocking_wait_max),
            "firstReminderSeconds": {
                "claude-code": secs(settings.first_after_claude_code),
                "default": secs(settings.first_after_default),
            },
            "reminderLadderSeconds": settings.ladder.iter().map(|d| secs(*d)).collect::<Vec<_>>(),
            "stallAfterSeconds": secs(settings.stall_after),
            "maxSessionMessagesPerHour": settings.hourly_cap,
            "metadataKeys": [
                "desk", "asker", "queuePosition", "reminders", "lastReminderAt", "stalled", "stalledAt",
                "expired", "expiredAt", "acknowledgedAt", "waitingOnOwner", "deliveredAt", "lastWords"
            ],
            "methods": ["AckTask"],
            "pushTargets": push_targets(&settings.push),
        },
    })
}

/// Where a webhook may point (`core::push::target_refusal`), as the settings have it: the
/// card says it so an asker knows before it is refused.
fn push_targets(push: &Push) -> Value {
    json!({
        "schemes": ["http", "https"],
        "loopbackAllowed": push.allow_loopback_targets,
        "privateRangesAllowed": push.allow_private_targets,
        "rule": "A webhook is an http:// or https:// URL on a public address (https:// verified against this machine's root certificates and the owner's extra roots). This machine (loopback, 0.0.0.0 and ::, in any spelling, IPv6 form or name that resolves there) is refused unless the owner allows it, since local services trust it; so are the private, link-local, shared, unique-local and other special ranges, IPv6 forms that carry such an IPv4 address included, since they reach the owner's network; this daemon's own port is refused always. Addresses are checked when the webhook is set and again when each push connects, on the address it connects to; a name that does not resolve when it is set is judged then.",
    })
}

/// Where a card's interfaces are reached: `http://127.0.0.1:PORT` on loopback, the public
/// URL on the network listener, with the certificate an asker pins there.
#[derive(Debug, Clone)]
pub struct At {
    /// The origin the interface URLs start with.
    pub base: String,
    /// The SHA-256 fingerprint of the listener's certificate (network listener with TLS).
    pub certificate_sha256: Option<String>,
    /// Where gRPC is reached (`host:port`): the loopback port, or the network listener where
    /// it serves TLS itself ([`crate::http::network::Outside::grpc_target`]).
    pub grpc: Option<String>,
}

impl At {
    pub fn loopback(port: u16) -> Self {
        Self {
            base: format!("http://127.0.0.1:{port}"),
            certificate_sha256: None,
            grpc: Some(format!("127.0.0.1:{port}")),
        }
    }
}

/// Which bindings an interface URL serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bindings {
    /// JSON-RPC only (the machine endpoint).
    JsonRpc,
    /// JSON-RPC (v1.0 and v0.3) and HTTP+JSON (v1.0): a desk.
    JsonRpcAndRest,
}

#[allow(clippy::too_many_arguments)]
fn base(
    name: String,
    description: String,
    url: &str,
    at: &At,
    bindings: Bindings,
    skills: Vec<Value>,
    settings: &Settings,
    opts: CardOptions,
) -> Value {
    // JSON-RPC v1.0 first: the first entry is the preferred one. HTTP+JSON is v1.0 only
    // (v0.3's REST paths are not served), so v0.3's `additionalInterfaces` names none.
    let mut interfaces =
        vec![json!({"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"})];
    if bindings == Bindings::JsonRpcAndRest {
        interfaces
            .push(json!({"url": url, "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}));
    }
    if let Some(target) = &at.grpc {
        // gRPC names the desk as the tenant (a desk's card is named after its desk).
        let tenant = (bindings == Bindings::JsonRpcAndRest).then_some(name.as_str());
        interfaces.push(super::grpc::interface(target, tenant));
    }
    interfaces.push(json!({"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}));
    let mut card = json!({
        "name": name,
        "description": description,
        "supportedInterfaces": interfaces,
        "provider": {"organization": "Taskkeeper", "url": "https://taskkeeper.dev"},
        "version": env!("CARGO_PKG_VERSION"),
        "capabilities": {
            "streaming": true,
            "pushNotifications": true,
            // The extended card is for callers with a token; without a scheme there is none.
            "extendedAgentCard": opts.bearer,
            "extensions": [extension(settings)],
        },
        "defaultInputModes": INPUT_MODES,
        "defaultOutputModes": OUTPUT_MODES,
        "skills": skills,
    });
    if let Some(fingerprint) = &at.certificate_sha256 {
        // The certificate an asker pins, named where it fetched the card (over that same
        // certificate); `taskkeeper asker add` prints it to the owner to hand over.
        card["capabilities"]["extensions"][0]["params"]["tlsCertificateSha256"] =
            json!(fingerprint);
    }
    let bearer = json!({"scheme": "Bearer", "description": "an asker token from `taskkeeper asker add`, or the owner's token"});
    if opts.bearer {
        card["securitySchemes"] = json!({"bearer": {"httpAuthSecurityScheme": bearer}});
        card["securityRequirements"] = json!([{"schemes": {"bearer": {"list": []}}}]);
    }
    if opts.v03_fields {
        if opts.bearer {
            // v0.3 reads a security scheme by its OpenAPI-style `type`; v1.0 by the member name.
            // The same words in both: the Python SDK reads a card with `type` by v0.3's
            // members alone, and its reading must be the one signed (`crate::card_key`).
            card["securitySchemes"]["bearer"]["type"] = json!("http");
            card["securitySchemes"]["bearer"]["scheme"] = bearer["scheme"].clone();
            card["securitySchemes"]["bearer"]["description"] = bearer["description"].clone();
            card["security"] = json!([{"bearer": []}]);
        }
        card["supportsAuthenticatedExtendedCard"] = json!(opts.bearer);
        card["url"] = json!(url);
        card["preferredTransport"] = json!("JSONRPC");
        card["protocolVersion"] = json!("0.3.0");
    }
    card
}

/// Where a desk works, for the extended card only: a directory names the owner's projects
/// (and often the owner), which is nobody's business before they hold a token.
fn place(desk: &Desk, detail: Detail) -> String {
    match detail {
        Detail::Public => String::new(),
        Detail::Extended => format!(" working in {}", desk.dir.display()),
    }
}

fn skill(desk: &Desk, detail: Detail) -> Value {
    json!({
        "id": desk.name.as_str(),
        "name": desk.name.as_str(),
        "description": format!("A {} session{}; the task stays open until it says done, blocked, failed or rejected.", desk.agent, place(desk, detail)),
        "tags": [desk.agent.as_str(), "coding"],
        "examples": ["Add a --json flag to the list command, with tests."],
    })
}

pub fn desk_card(desk: &Desk, at: &At, settings: &Settings, opts: CardOptions) -> Value {
    let url = format!("{}/a2a/{}", at.base, desk.name);
    base(
        desk.name.to_string(),
        format!(
            "Taskkeeper desk {}: a {} worker{}.",
            desk.name,
            desk.agent,
            place(desk, opts.detail)
        ),
        &url,
        at,
        Bindings::JsonRpcAndRest,
        vec![skill(desk, opts.detail)],
        settings,
        opts,
    )
}

/// The machine's card: every desk as a skill. Its interface is the machine endpoint `/a2a`
/// (reads, cancels and acks of the caller's tasks on any desk); new tasks go to a desk's URL.
pub fn machine_card(desks: &[Desk], at: &At, settings: &Settings, opts: CardOptions) -> Value {
    let url = format!("{}/a2a", at.base);
    base(
        "Taskkeeper".to_owned(),
        "The desks of this machine: each skill is a desk with its own A2A endpoint at /a2a/{desk}."
            .to_owned(),
        &url,
        at,
        Bindings::JsonRpc,
        desks.iter().map(|d| skill(d, opts.detail)).collect(),
        settings,
        opts,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use taskkeeper_core::AgentKind;

    fn desk() -> Desk {
        Desk {
            name: "web".parse().unwrap(),
            agent: AgentKind::ClaudeCode,
            dir: "/home/alice/secret-project".into(),
            deliver_command: None,
            auto_launch: false,
            created_at: taskkeeper_core::Timestamp::from_millis(0),
        }
    }

    fn opts(detail: Detail, bearer: bool) -> CardOptions {
        CardOptions {
            v03_fields: true,
            detail,
            bearer,
        }
    }

    #[test]
    fn the_public_card_names_no_directory_and_the_extended_one_does() {
        let s = Settings::default();
        for card in [
            desk_card(&desk(), &At::loopback(1), &s, opts(Detail::Public, true)),
            machine_card(&[desk()], &At::loopback(1), &s, opts(Detail::Public, true)),
        ] {
            assert!(!card.to_string().contains("secret-project"), "{card}");
            assert_eq!(card["capabilities"]["extendedAgentCard"], true);
            assert_eq!(card["supportsAuthenticatedExtendedCard"], true);
        }
        for card in [
            desk_card(&desk(), &At::loopback(1), &s, opts(Detail::Extended, true)),
            machine_card(
                &[desk()],
                &At::loopback(1),
                &s,
                opts(Detail::Extended, true),
            ),
        ] {
            assert!(
                card.to_string().contains("/home/alice/secret-project"),
                "{card}"
            );
        }
    }

    #[test]
    fn v0_3s_security_scheme_says_what_v1_0s_says() {
        let card = desk_card(
            &desk(),
            &At::loopback(1),
            &Settings::default(),
            opts(Detail::Public, true),
        );
        let scheme = &card["securitySchemes"]["bearer"];
        for member in ["scheme", "description"] {
            assert_eq!(
                scheme[member], scheme["httpAuthSecurityScheme"][member],
                "{member}"
            );
        }
    }

    #[test]
    fn a_card_without_bearer_declares_no_scheme_and_no_extended_card() {
        let card = desk_card(
            &desk(),
            &At::loopback(1),
            &Settings::default(),
            opts(Detail::Public, false),
        );
        for field in ["securitySchemes", "securityRequirements", "security"] {
            assert!(card.get(field).is_none(), "{field} in {card}");
        }
        assert_eq!(card["capabilities"]["extendedAgentCard"], false);
        assert_eq!(card["supportsAuthenticatedExtendedCard"], false);
    }
}
