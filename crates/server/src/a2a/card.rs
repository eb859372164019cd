//! Agent Cards: one per desk at `/a2a/{desk}/.well-known/agent-card.json`, and the machine's
//! at `/.well-known/agent-card.json`, which lists the desks as skills. Each declares
//! Taskkeeper's extension with its numbers (from the live settings), the bearer scheme, and
//! both protocol versions on the same URL.

use serde_json::{Value, json};
use taskkeeper_core::Desk;
use taskkeeper_core::settings::Settings;

use super::wire::EXTENSION_URI;

/// Whether to add v0.3's top-level card fields (`url`, `preferredTransport`,
/// `protocolVersion`) that v0.3 clients need; a strict v1.0 structure check rejects them.
#[derive(Debug, Clone, Copy)]
pub struct CardOptions {
    pub v03_fields: bool,
}

fn secs(d: std::time::Duration) -> u64 {
    d.as_secs()
}

/// The extension declaration, its numbers following the settings.
pub fn extension(settings: &Settings) -> Value {
    json!({
        "uri": EXTENSION_URI,
        "required": false,
        "description": "Tasks stay open until the worker ends them with done, blocked or failed; a busy desk queues tasks; a quiet worker is reminded on a ladder and the owner is told when a task stalls; open tasks expire; AckTask acknowledges an ended task.",
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
        },
    })
}

fn base(
    name: String,
    description: String,
    url: &str,
    skills: Vec<Value>,
    settings: &Settings,
    opts: CardOptions,
) -> Value {
    let mut card = json!({
        "name": name,
        "description": description,
        "supportedInterfaces": [
            {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
        ],
        "provider": {"organization": "Taskkeeper", "url": "https://taskkeeper.dev"},
        "version": env!("CARGO_PKG_VERSION"),
        "capabilities": {
            "streaming": true,
            "pushNotifications": true,
            "extendedAgentCard": false,
            "extensions": [extension(settings)],
        },
        "securitySchemes": {
            "bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer", "description": "an asker token from `taskkeeper asker add`, or the owner's token"}},
        },
        "securityRequirements": [{"schemes": {"bearer": {"list": []}}}],
        "defaultInputModes": ["text/plain", "application/json"],
        "defaultOutputModes": ["text/plain"],
        "skills": skills,
    });
    if opts.v03_fields {
        // v0.3 reads a security scheme by its OpenAPI-style `type`; v1.0 by the member name.
        card["securitySchemes"]["bearer"]["type"] = json!("http");
        card["securitySchemes"]["bearer"]["scheme"] = json!("bearer");
        card["security"] = json!([{"bearer": []}]);
        card["url"] = json!(url);
        card["preferredTransport"] = json!("JSONRPC");
        card["protocolVersion"] = json!("0.3.0");
    }
    card
}

fn skill(desk: &Desk) -> Value {
    json!({
        "id": desk.name.as_str(),
        "name": desk.name.as_str(),
        "description": format!("A {} session working in {}; the task stays open until it says done, blocked or failed.", desk.agent, desk.dir.display()),
        "tags": [desk.agent.as_str(), "coding"],
        "examples": ["Add a --json flag to the list command, with tests."],
    })
}

pub fn desk_card(desk: &Desk, port: u16, settings: &Settings, opts: CardOptions) -> Value {
    let url = format!("http://127.0.0.1:{port}/a2a/{}", desk.name);
    base(
        desk.name.to_string(),
        format!(
            "Taskkeeper desk {}: a {} worker in {}.",
            desk.name,
            desk.agent,
            desk.dir.display()
        ),
        &url,
        vec![skill(desk)],
        settings,
        opts,
    )
}

/// The machine's card: every desk as a skill. Its interface is the machine endpoint `/a2a`
/// (reads, cancels and acks of the caller's tasks on any desk); new tasks go to a desk's URL.
pub fn machine_card(desks: &[Desk], port: u16, settings: &Settings, opts: CardOptions) -> Value {
    let url = format!("http://127.0.0.1:{port}/a2a");
    base(
        "Taskkeeper".to_owned(),
        "The desks of this machine: each skill is a desk with its own A2A endpoint at /a2a/{desk}."
            .to_owned(),
        &url,
        desks.iter().map(skill).collect(),
        settings,
        opts,
    )
}
