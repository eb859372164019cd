//! The web UI's wire types (`ui/src/generated/wire.ts`) are generated from the Rust types the
//! daemon sends, so the UI cannot assume a shape the daemon does not send. The file is checked
//! in (the UI builds without Rust); this test fails when it differs from what the Rust types
//! generate, which is how CI catches a wire type changed on one side only.
//!
//! Regenerate with `make ui-types` (this test with `UPDATE_UI_TYPES=1`).
//!
//! Only test builds derive `ts_rs::TS` (`#[cfg_attr(test, derive(ts_rs::TS))]` on the types),
//! so the daemon carries none of it; core's `Timestamp` derives it behind core's `ts` feature,
//! which only the server's dev-dependencies turn on.

use std::any::TypeId;
use std::path::PathBuf;

use ts_rs::{Config, TS};

use crate::http::ui;
use crate::owner::api;

/// One exported type: its id (to check every type it uses is exported too) and its text.
struct Decl {
    id: TypeId,
    name: String,
    text: String,
    uses: Vec<(TypeId, String)>,
}

fn decl<T: TS + 'static>(cfg: &Config) -> Decl {
    let mut text = T::docs().unwrap_or_default();
    text.push_str("export ");
    text.push_str(&T::decl(cfg));
    Decl {
        id: TypeId::of::<T>(),
        name: T::ident(cfg),
        text,
        uses: T::dependencies(cfg)
            .into_iter()
            .map(|d| (d.type_id, d.ts_name))
            .collect(),
    }
}

/// What the UI reads and sends, in the order the file lists them.
fn decls(cfg: &Config) -> Vec<Decl> {
    vec![
        decl::<taskkeeper_core::Timestamp>(cfg),
        // Tasks.
        decl::<api::TaskStateView>(cfg),
        decl::<api::LabelKindView>(cfg),
        decl::<api::TaskView>(cfg),
        decl::<api::TaskList>(cfg),
        decl::<api::TaskDetail>(cfg),
        decl::<api::MessageFrom>(cfg),
        decl::<api::MessageView>(cfg),
        decl::<api::ArtifactView>(cfg),
        decl::<api::CancelRequest>(cfg),
        // A task's ladder.
        decl::<api::TimelineView>(cfg),
        decl::<api::HoldView>(cfg),
        decl::<api::StepView>(cfg),
        decl::<api::StepKind>(cfg),
        decl::<api::TurnView>(cfg),
        decl::<api::TurnOriginView>(cfg),
        // The digest.
        decl::<api::DigestView>(cfg),
        decl::<api::DigestCounts>(cfg),
        decl::<api::ReminderView>(cfg),
        // The settings catalogue.
        decl::<api::SettingsCatalogue>(cfg),
        decl::<api::SettingView>(cfg),
        decl::<api::SettingKindView>(cfg),
        // Desks.
        decl::<api::DeskView>(cfg),
        decl::<api::DeskList>(cfg),
        decl::<api::DeskChange>(cfg),
        // Sessions.
        decl::<api::ActivityView>(cfg),
        decl::<api::SessionView>(cfg),
        decl::<api::SessionList>(cfg),
        decl::<api::PermissionView>(cfg),
        decl::<api::PermissionAnswer>(cfg),
        decl::<api::DeliveryProblemView>(cfg),
        // Agents.
        decl::<api::AgentView>(cfg),
        decl::<api::AgentList>(cfg),
        decl::<api::AgentChange>(cfg),
        decl::<api::ConnectRequest>(cfg),
        // The network listener for askers on other machines.
        decl::<api::NetworkStateView>(cfg),
        decl::<api::NetworkView>(cfg),
        // The event stream's notices.
        decl::<api::NoticeView>(cfg),
        // Errors.
        decl::<crate::error::OwnerErrorKind>(cfg),
        decl::<crate::error::OwnerError>(cfg),
        decl::<crate::error::ErrorBody>(cfg),
        // Signing a browser page in.
        decl::<ui::UiCodeRequest>(cfg),
        decl::<ui::UiCodeView>(cfg),
        decl::<ui::UiSessionRequest>(cfg),
        decl::<ui::UiSessionView>(cfg),
    ]
}

const HEADER: &str = "\
// Generated from the daemon's Rust wire types (crates/server/src/owner/ui_types.rs, with ts-rs).
// Do not edit: change the Rust type, then run `make ui-types`. A server test fails while this
// file differs from what the Rust types generate.
";

/// The file as the Rust types make it.
fn generate() -> String {
    // Counts and versions are u64/usize in Rust; none comes near 2^53, and JSON sends numbers.
    let cfg = Config::new().with_large_int("number");
    let decls = decls(&cfg);
    let mut out = String::from(HEADER);
    for d in &decls {
        out.push('\n');
        out.push_str(&d.text);
        out.push('\n');
    }
    // A type used but not listed would be a name the file cannot resolve.
    for d in &decls {
        for (id, name) in &d.uses {
            assert!(
                decls.iter().any(|x| x.id == *id),
                "{} uses {name}, which ui_types.rs does not export: add it to `decls`",
                d.name
            );
        }
    }
    out
}

/// Where the file lives, from the workspace's root.
const FILE: &str = "ui/src/generated/wire.ts";

fn path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(FILE)
}

#[test]
fn the_uis_wire_types_are_what_the_rust_types_generate() {
    let want = generate();
    let path = path();
    if std::env::var_os("UPDATE_UI_TYPES").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &want).unwrap();
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "{FILE} differs from what the Rust wire types generate: run `make ui-types` \
         (UPDATE_UI_TYPES=1 cargo test -p taskkeeper-server --lib ui_types) and check it in, \
         then fix what the UI's type check (`cd ui && npm run typecheck`) finds"
    );
}
