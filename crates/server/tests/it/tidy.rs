//! Rules about the source tree itself, checked by reading it (rust-analyzer's "tidy" idea):
//! every module says why it exists, the code map names every part of the daemon and no part
//! of it (nor any source file of the workspace) is too long to read at a sitting, only the
//! task service writes tasks, only the services reach the store, only the sessions registry
//! marks a desk waiting on the owner, the daemon's areas name each other
//! without an import cycle, every reference to a design note resolves to a
//! file (and a section) inside the repository, and every file or folder a doc names exists.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use regex::Regex;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every file under `dir` whose name ends in one of `exts`, skipping build output and
/// installed packages.
fn files(dir: &Path, exts: &[&str], out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if !matches!(
                name.as_str(),
                "target" | "node_modules" | "dist" | "gen" | ".git"
            ) && !name.starts_with("tgt")
            {
                files(&path, exts, out);
            }
        } else if exts.iter().any(|e| name.ends_with(e)) {
            out.push(path);
        }
    }
}

/// The Rust sources of the product: each crate's `src/` (the app's too) and the app's build script.
fn product_sources() -> Vec<PathBuf> {
    let root = root();
    let mut out = Vec::new();
    for krate in std::fs::read_dir(root.join("crates")).unwrap().flatten() {
        files(&krate.path().join("src"), &[".rs"], &mut out);
    }
    out.push(root.join("crates/app/build.rs"));
    out.sort();
    out
}

fn shown(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

#[test]
fn every_rust_module_says_why_it_exists() {
    let sources = product_sources();
    assert!(
        sources.len() > 40,
        "the scan found the sources: {sources:?}"
    );
    let undocumented: Vec<String> = sources
        .iter()
        .filter(|p| {
            let text = std::fs::read_to_string(p).unwrap();
            let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            !first.starts_with("//!")
        })
        .map(|p| shown(p))
        .collect();
    assert!(
        undocumented.is_empty(),
        "these modules start without a `//!` doc saying why they exist; add one: {undocumented:?}"
    );
}

/// The store's calls that create, change or delete tasks. Inside the daemon only the task
/// service (`crates/server/src/tasks.rs`) makes them, so every change is published.
const TASK_WRITES: &str =
    "submit|submit_with_push|submit_each|apply|apply_at|prune_ended|submit_then|apply_then";

/// Receivers that may make such a call: the task service itself, and `Session::apply`
/// (which folds an edge into a session's activity; no task changes).
const ALLOWED: &[&str] = &["tasks", "tasks()", "session"];

/// Each call of [`TASK_WRITES`] in `text` whose receiver is not in [`ALLOWED`], as
/// `receiver.method`.
fn task_writes_outside_the_service(text: &str) -> Vec<String> {
    // Comments out, then the space around each `.`, so a call split over lines reads as one.
    let code: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect();
    let code = Regex::new(r"\s*\.\s*")
        .unwrap()
        .replace_all(&code.join("\n"), ".")
        .into_owned();
    let call = Regex::new(&format!(
        r"([A-Za-z_][A-Za-z0-9_]*(?:\(\))?)\.({TASK_WRITES})\(|Store::({TASK_WRITES})\("
    ))
    .unwrap();
    call.captures_iter(&code)
        .filter_map(|c| match (c.get(1), c.get(2), c.get(3)) {
            (Some(receiver), Some(method), _) if !ALLOWED.contains(&receiver.as_str()) => {
                Some(format!("{}.{}", receiver.as_str(), method.as_str()))
            }
            (_, _, Some(method)) => Some(format!("Store::{}", method.as_str())),
            _ => None,
        })
        .collect()
}

#[test]
fn the_scan_for_task_writes_finds_a_direct_store_call() {
    // The shapes the old code had: a closure's store, a daemon's store, split over lines.
    let found = task_writes_outside_the_service(
        "s.apply(&t.id, Event::Cancel { reason }, now)?;\n\
         let n = store\n    .prune_ended(now, keep)?;\n\
         // store.apply(&id, e, now) in a comment is fine\n\
         self.tasks.apply(&id, e).await?; sessions.tasks().apply(&id, e).await?;\n\
         match tasks\n    .apply(&id, e).await {}\n\
         session.apply(edge, now);",
    );
    assert_eq!(found, ["s.apply", "store.prune_ended"]);
}

#[test]
fn only_the_task_service_writes_tasks() {
    let service = root().join("crates/server/src/tasks.rs");
    let mut found = Vec::new();
    for path in product_sources() {
        // The store is where the writes live; the task service is the one caller.
        if path == service || path.starts_with(root().join("crates/core")) {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for call in task_writes_outside_the_service(&text) {
            found.push(format!("{}: {call}", shown(&path)));
        }
    }
    assert!(
        found.is_empty(),
        "task writes outside the task service (crates/server/src/tasks.rs), which would go \
         unpublished; call `Tasks` instead: {found:?}"
    );
}
/// Where the daemon may name the store itself: the services (`services/`, and `tasks.rs`
/// for tasks) and the daemon's start and stop, which open it, hand it to the services and
/// close it.
fn may_name_the_store(relative: &str) -> bool {
    relative.starts_with("crates/server/src/services/")
        || relative == "crates/server/src/tasks.rs"
        || relative == "crates/server/src/daemon.rs"
}

/// Each line of `text` (comments out) that names the store's raw type (`Store`, not an enum
/// variant of that name) or runs a closure on the store (`.blocking(`), with its number.
fn raw_store_uses(text: &str) -> Vec<String> {
    let raw =
        Regex::new(r"(taskkeeper_core|store)::Store\b|(^|[^:\w])Store([^\w(]|$)|\.blocking\(")
            .unwrap();
    let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or("");
    code.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim_start().starts_with("//"))
        .filter(|(_, l)| raw.is_match(l.split(" // ").next().unwrap_or("")))
        .map(|(n, l)| format!("{}: {}", n + 1, l.trim()))
        .collect()
}

#[test]
fn the_scan_for_raw_store_uses_finds_the_type_and_a_closure_on_it() {
    let found = raw_store_uses(
        "fn f(s: &taskkeeper_core::Store) {}\n\
         let x = tasks.blocking(|s, _| s.desks()).await;\n\
         use taskkeeper_core::{Store, StoreError};\n\
         // Store::submit in a comment is fine\n\
         Err(UpdateRefused::Store(e)) => {}\n\
         Store(#[from] StoreError),\n\
         let d = tasks.desks().list().await?;",
    );
    assert_eq!(found.len(), 3, "{found:?}");
}

/// Every part of the daemon reaches the store through a service that says what it does: no
/// file outside the services names the store or hands a closure to it
/// (`Tasks::blocking(|store, now| …)` is gone).
#[test]
fn only_the_services_reach_the_store() {
    let mut found = Vec::new();
    for path in product_sources() {
        let relative = shown(&path);
        if path.starts_with(root().join("crates/core")) || may_name_the_store(&relative) {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        found.extend(
            raw_store_uses(&text)
                .into_iter()
                .map(|u| format!("{relative}:{u}")),
        );
    }
    // The daemon opens and closes the store but runs no closure on it.
    let daemon = std::fs::read_to_string(root().join("crates/server/src/daemon.rs")).unwrap();
    found.extend(
        raw_store_uses(&daemon)
            .into_iter()
            .filter(|u| u.contains(".blocking("))
            .map(|u| format!("crates/server/src/daemon.rs:{u}")),
    );
    assert!(
        found.is_empty(),
        "the store reached outside the services (crates/server/src/services/, tasks.rs); add a \
         named method to the service that keeps that table and call it: {found:?}"
    );
}

/// The core's store is laid out by table on machinery modules of its own; its `mod.rs` only
/// declares the modules and names the public API, so no store module imports items from its
/// parent and the store has no import cycle through it.
#[test]
fn the_stores_root_only_declares_and_reexports() {
    let text = std::fs::read_to_string(root().join("crates/core/src/store/mod.rs")).unwrap();
    let other: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| {
            !(l.is_empty()
                || l.starts_with("//")
                || l.starts_with("mod ")
                || l.starts_with("pub mod ")
                || l.starts_with("pub use "))
        })
        .collect();
    assert!(
        other.is_empty(),
        "crates/core/src/store/mod.rs holds more than module declarations and re-exports; move \
         these into the module of the table or the machinery they belong to: {other:?}"
    );
}

/// Every session write of the daemon goes through the sessions registry
/// (`crates/server/src/sessions/mod.rs`: `Sessions::update`, `attach`, `put`, …), the one
/// caller of the sessions service's writes, so a change to a session has one owner.
#[test]
fn only_the_sessions_registry_writes_sessions() {
    let registry = root().join("crates/server/src/sessions/mod.rs");
    let write = Regex::new(
        r"session_store\(\)\.(put|update|update_holder|update_each|attach|reconcile|reconcile_all)\(",
    )
    .unwrap();
    let space = Regex::new(r"\s*\.\s*").unwrap();
    let mut found = Vec::new();
    for path in product_sources() {
        if path == registry || path.starts_with(root().join("crates/server/src/services")) {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let code: Vec<&str> = text
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect();
        let code = space.replace_all(&code.join("\n"), ".").into_owned();
        for m in write.find_iter(&code) {
            found.push(format!("{}: {}", shown(&path), m.as_str()));
        }
    }
    assert!(
        found.is_empty(),
        "session writes outside the sessions registry; call `Sessions` instead: {found:?}"
    );
}

/// The waiting-on-owner mark is derived once, from activity changes
/// (`core::session::owner_wait_change`, applied in `crates/server/src/sessions/mod.rs`): no
/// adapter sets or clears it on its own, so they cannot disagree again.
#[test]
fn only_the_sessions_registry_marks_a_desk_waiting_on_the_owner() {
    let registry = root().join("crates/server/src/sessions/mod.rs");
    let mut found = Vec::new();
    for path in product_sources() {
        if path == registry || path.starts_with(root().join("crates/core")) {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if code.contains("OwnerWait") || code.contains("mark_owner_wait") {
                found.push(format!("{}:{}", shown(&path), n + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "the waiting-on-owner mark is set or cleared outside the sessions registry; fold an \
         edge into the session instead (`Sessions::edge`), and the mark follows: {found:?}"
    );
}

/// The names a crate root's `pub use` lines re-export (`pub use owner::{OwnerError, ..}`,
/// `pub use token::{OWNER_FILE as OWNER_TOKEN_FILE}`), each with the area it comes from, so
/// `crate::OwnerError` counts as naming `owner`.
fn root_reexports(lib: &str) -> BTreeMap<String, String> {
    let line = Regex::new(
        r"(?m)^pub use ([a-z_][a-z0-9_]*)(?:::[a-z_][a-z0-9_]*)*::(\{[^}]*\}|[A-Za-z_][A-Za-z0-9_]*)\s*;",
    )
    .unwrap();
    let mut out = BTreeMap::new();
    for c in line.captures_iter(lib) {
        for item in c[2].trim_matches(['{', '}']).split(',') {
            let name = item.rsplit(" as ").next().unwrap_or("").trim();
            if !name.is_empty() {
                out.insert(name.to_owned(), c[1].to_owned());
            }
        }
    }
    out
}

/// The daemon's areas `text` names, comments left out: `crate::area` paths (in a `use` or
/// inline), each first name of a group (`use crate::{config, http::auth}`), and a name the
/// crate root re-exports (`crate::OwnerError`) as the area it comes from (`reexports`).
fn areas_named(text: &str, reexports: &BTreeMap<String, String>) -> BTreeSet<String> {
    let code: Vec<&str> = text
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect();
    let code = code.join("\n");
    let path = Regex::new(r"\bcrate::(\{|[A-Za-z_][A-Za-z0-9_]*)").unwrap();
    let nested = Regex::new(r"\{[^{}]*\}").unwrap();
    let first_name = Regex::new(r"^\s*([A-Za-z_][A-Za-z0-9_]*)").unwrap();
    let mut names = Vec::new();
    for c in path.captures_iter(&code) {
        let m = c.get(1).unwrap();
        if m.as_str() != "{" {
            names.push(m.as_str().to_owned());
            continue;
        }
        // The group up to its closing brace, inner groups dropped: what is left is the
        // group's own items, each starting with the name it takes from the crate root.
        let mut depth = 0;
        let end = code[m.start()..]
            .char_indices()
            .find_map(|(i, ch)| {
                depth += match ch {
                    '{' => 1,
                    '}' => -1,
                    _ => 0,
                };
                (depth == 0).then_some(m.start() + i)
            })
            .unwrap_or(code.len());
        let mut group = code[m.start() + 1..end].to_owned();
        while nested.is_match(&group) {
            group = nested.replace_all(&group, "").into_owned();
        }
        for item in group.split(',') {
            if let Some(n) = first_name.captures(item) {
                names.push(n[1].to_owned());
            }
        }
    }
    names
        .into_iter()
        .map(|n| reexports.get(&n).cloned().unwrap_or(n))
        .collect()
}

/// The area a file of `crates/server/src` belongs to: its first directory, or its name.
fn area_of(relative: &Path) -> String {
    let first = relative.components().next().map_or_else(String::new, |c| {
        c.as_os_str().to_string_lossy().into_owned()
    });
    first.trim_end_matches(".rs").to_owned()
}

#[test]
fn the_import_scan_finds_a_path_into_another_area() {
    let reexports = root_reexports(
        "pub use daemon::{Daemon, DaemonError};\n\
         pub use token::{OWNER_FILE as OWNER_TOKEN_FILE, Token};\n\
         pub use tasks::Tasks;\n",
    );
    assert_eq!(reexports["OWNER_TOKEN_FILE"], "token");
    assert_eq!(reexports["Tasks"], "tasks");
    let named = areas_named(
        "use crate::owner::api::TaskView;\n\
         let n = crate::notify::Notice::SessionEnded { .. };\n\
         // crate::http in a comment is fine\n\
         use crate::sessions::{Sessions, lock}; // crate::agents here too\n\
         use crate::{config::X, delivery::{self, Delivery},\n    mcp};\n\
         let t: crate::Tasks = todo!();",
        &reexports,
    );
    assert_eq!(
        named.into_iter().collect::<Vec<_>>(),
        [
            "config", "delivery", "mcp", "notify", "owner", "sessions", "tasks"
        ]
    );
    assert_eq!(area_of(Path::new("delivery/push.rs")), "delivery");
    assert_eq!(area_of(Path::new("notify.rs")), "notify");
}

/// Every cycle of `graph` a depth-first walk meets, each as the areas along it with the first
/// repeated at the end; none when the graph has no cycle (every cycle has an edge back to an
/// area still on the walk's path).
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    fn walk(
        area: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
        found: &mut Vec<Vec<String>>,
    ) {
        path.push(area.to_owned());
        for next in graph.get(area).into_iter().flatten() {
            if let Some(at) = path.iter().position(|a| a == next) {
                let mut cycle = path[at..].to_vec();
                cycle.push(next.clone());
                found.push(cycle);
            } else if !done.contains(next) {
                walk(next, graph, path, done, found);
            }
        }
        path.pop();
        done.insert(area.to_owned());
    }
    let mut found = Vec::new();
    let mut done = BTreeSet::new();
    for area in graph.keys() {
        if !done.contains(area) {
            walk(area, graph, &mut Vec::new(), &mut done, &mut found);
        }
    }
    found
}

#[test]
fn the_cycle_check_finds_a_cycle_and_names_it() {
    let graph = |edges: &[(&str, &str)]| {
        let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (from, to) in edges {
            g.entry((*from).into()).or_default().insert((*to).into());
        }
        g
    };
    let layered = graph(&[("http", "error"), ("owner", "http"), ("router", "owner")]);
    assert!(cycles(&layered).is_empty());
    let tangled = graph(&[
        ("http", "owner"),
        ("owner", "agents"),
        ("agents", "http"),
        ("router", "http"),
        ("logging", "private"),
        ("private", "logging"),
    ]);
    assert_eq!(
        cycles(&tangled),
        [
            vec!["agents", "http", "owner", "agents"],
            vec!["logging", "private", "logging"],
        ]
    );
}

/// The daemon's areas (`crates/server/src/<area>/` or `<area>.rs`) name each other one way
/// only: the graph of `crate::` paths between them has no cycle. A lower area that needs
/// something of a higher one gets it passed in (`delivery::Stdins`, the generic report's
/// `SessionReply`, `private::secure_data_dir`'s file names) or leaves the conversion to it
/// (`owner::api::NoticeView`, the owner's `From<LaunchError>`); what every area shares is a
/// leaf (`error.rs`). Test code is scanned too: none of it needs an area above its own.
#[test]
fn the_areas_of_the_daemon_name_each_other_without_a_cycle() {
    let src = root().join("crates/server/src");
    let reexports = root_reexports(&std::fs::read_to_string(src.join("lib.rs")).unwrap());
    let mut sources = Vec::new();
    files(&src, &[".rs"], &mut sources);
    let areas: BTreeSet<String> = sources
        .iter()
        .map(|p| area_of(p.strip_prefix(&src).unwrap()))
        .filter(|a| a != "lib")
        .collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut where_named: BTreeMap<(String, String), String> = BTreeMap::new();
    for path in &sources {
        let area = area_of(path.strip_prefix(&src).unwrap());
        if area == "lib" {
            continue;
        }
        let text = std::fs::read_to_string(path).unwrap();
        for named in areas_named(&text, &reexports) {
            if named != area && areas.contains(&named) {
                graph.entry(area.clone()).or_default().insert(named.clone());
                where_named
                    .entry((area.clone(), named))
                    .or_insert_with(|| shown(path));
            }
        }
    }
    assert!(
        graph.len() > 10
            && ["router", "http", "owner", "a2a", "agents", "sessions"]
                .iter()
                .all(|a| graph.contains_key(*a)),
        "the scan found the areas and their paths: {graph:?}"
    );
    let found: Vec<String> = cycles(&graph)
        .iter()
        .map(|cycle| {
            let steps: Vec<String> = cycle
                .windows(2)
                .map(|w| {
                    let file = &where_named[&(w[0].clone(), w[1].clone())];
                    format!("{file} names crate::{}", w[1])
                })
                .collect();
            format!("{} ({})", cycle.join(" → "), steps.join("; "))
        })
        .collect();
    assert!(
        found.is_empty(),
        "the daemon's areas name each other in a cycle; pass what the lower one needs in (as \
         `delivery::Stdins` is), let the higher one convert, or move what both use into a \
         leaf (as `error.rs`): {found:#?}"
    );
}

/// Every text file that may cite a design note.
fn cited_in() -> Vec<PathBuf> {
    let root = root();
    let exts = [
        ".rs", ".md", ".ts", ".tsx", ".sh", ".toml", ".py", ".json", "Makefile",
    ];
    let mut out = Vec::new();
    for dir in ["crates", "ui", "tests", "bench", "docs", ".ci"] {
        files(&root.join(dir), &exts, &mut out);
    }
    for file in std::fs::read_dir(&root).unwrap().flatten() {
        let path = file.path();
        let name = file.file_name().to_string_lossy().into_owned();
        if path.is_file()
            && (exts.iter().any(|e| name.ends_with(e)) || name.starts_with('.'))
            && name != "Cargo.lock"
        {
            out.push(path);
        }
    }
    out.retain(|p| !p.ends_with("package-lock.json"));
    out.sort();
    out
}

/// Where `name.md` lives: the four pages at the root, every other note in `docs/`.
fn doc_path(name: &str) -> PathBuf {
    match name {
        "README" | "ARCHITECTURE" | "TESTING" | "BENCHMARKS" => root().join(format!("{name}.md")),
        _ => root().join("docs").join(format!("{name}.md")),
    }
}

/// The broken references in `text`: notes outside the repository, files that do not exist,
/// sections a note does not have. `docs` reads a note by its name.
fn broken_references(text: &str, docs: &dyn Fn(&str) -> Option<String>) -> Vec<String> {
    let mut broken = Vec::new();
    for outside in [
        "../shared",
        "/work/shared",
        "shared docs",
        "DESIGN.md",
        "DESIGN §",
    ] {
        if text.contains(outside) {
            broken.push(format!(
                "{outside:?}: the design notes live in docs/ (docs/design.md for the product)"
            ));
        }
    }
    let reference =
        Regex::new(r"(?:docs/)?\b([A-Za-z][A-Za-z0-9_-]*)\.md\b((?:[ ,/–and]*§[0-9.]*[0-9])*)")
            .unwrap();
    let section = Regex::new(r"§([0-9]+(?:\.[0-9]+)*)").unwrap();
    for c in reference.captures_iter(text) {
        let name = &c[1];
        let whole = c.get(0).map_or("", |m| m.as_str());
        // A file name in code or a command (`"report.md"`, `out/report.md`) is not a note.
        let before = text[..c.get(0).map_or(0, |m| m.start())]
            .chars()
            .next_back();
        if !whole.starts_with("docs/") && matches!(before, Some('"' | '\'' | '/')) {
            continue;
        }
        let Some(note) = docs(name) else {
            broken.push(format!("{name}.md does not exist"));
            continue;
        };
        for s in section.captures_iter(&c[2]) {
            let number = &s[1];
            let heading = Regex::new(&format!(r"(?m)^#+ {}[. ]", regex::escape(number))).unwrap();
            if !heading.is_match(&note) {
                broken.push(format!("{name}.md has no section {number}"));
            }
        }
    }
    broken
}

#[test]
fn the_reference_check_finds_what_does_not_resolve() {
    let docs = |name: &str| match name {
        "reliability" => {
            Some("# Reliability\n\n## 3. Durability\n\n### 8.2 Due times\n".to_owned())
        }
        _ => None,
    };
    assert!(
        broken_references("see docs/reliability.md §3 and reliability.md §8.2", &docs).is_empty()
    );
    assert_eq!(
        broken_references(
            "docs/reliability.md §3, §4; nowhere.md; \"a-file.md\", out/b.md; ../shared/x",
            &docs
        ),
        [
            "\"../shared\": the design notes live in docs/ (docs/design.md for the product)",
            "reliability.md has no section 4",
            "nowhere.md does not exist",
        ]
    );
}

#[test]
fn every_reference_to_a_design_note_resolves_inside_the_repository() {
    let docs = |name: &str| std::fs::read_to_string(doc_path(name)).ok();
    let files = cited_in();
    assert!(
        files.iter().any(|p| p.ends_with("ARCHITECTURE.md")),
        "the scan found the docs: {files:?}"
    );
    let mut broken = Vec::new();
    for path in files {
        // This file names the broken forms on purpose.
        if path.ends_with("tests/it/tidy.rs") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        for b in broken_references(&text, &docs) {
            broken.push(format!("{}: {b}", shown(&path)));
        }
    }
    assert!(
        broken.is_empty(),
        "references that do not resolve inside the repository; point them at a note in docs/ \
         and a section it has: {broken:#?}"
    );
}

/// The pages a newcomer reads: the four at the root and every note in `docs/`.
fn doc_pages() -> Vec<PathBuf> {
    let root = root();
    let mut out: Vec<PathBuf> = ["README", "ARCHITECTURE", "TESTING", "BENCHMARKS"]
        .iter()
        .map(|name| root.join(format!("{name}.md")))
        .collect();
    let mut notes = Vec::new();
    files(&root.join("docs"), &[".md"], &mut notes);
    notes.sort();
    out.extend(notes);
    out
}

/// What builds and test runs make, which the repository does not hold (`.gitignore`), so a
/// page may name it without its being there.
const MADE_BY_BUILDS: &[&str] = &["ui/dist", "tests/artifacts", "crates/app/gen", "target"];

/// The paths `text` names in backquotes that do not exist. A path is a word inside backquotes
/// whose first segment is an entry at the repository's root (`crates/…`, `ui/…`,
/// `tests/leftovers.sh`), so a path relative to a crate (`agents/hooks.rs`) or outside the
/// repository (`~/.claude`, `/proc/PID/stat`) is not one. A placeholder (`<kind>`, `{id}`,
/// `*`, `...`) ends it, and then the folder before it must exist. `top` is the root's
/// entries; `exists` says whether a repository-relative path is there.
fn missing_paths(text: &str, top: &BTreeSet<String>, exists: &dyn Fn(&str) -> bool) -> Vec<String> {
    let quoted = Regex::new(r"`([^`\n]+)`").unwrap();
    let line_number = Regex::new(r":[0-9]+$").unwrap();
    let mut missing = Vec::new();
    for span in quoted.captures_iter(text) {
        for word in span[1].split_whitespace() {
            let word = word.trim_matches(|c: char| "\"'(),;:".contains(c));
            let Some((first, _)) = word.split_once('/') else {
                continue;
            };
            if !top.contains(first) {
                continue;
            }
            let mut path = line_number.replace(word, "").into_owned();
            if let Some(at) = ["...", "…", "<", "{", "*", "[", "$", "|"]
                .iter()
                .filter_map(|p| path.find(p))
                .min()
            {
                path.truncate(path[..at].rfind('/').map_or(0, |slash| slash + 1));
            }
            let path = path.trim_end_matches('.').trim_end_matches('/');
            let made = MADE_BY_BUILDS
                .iter()
                .any(|m| path == *m || path.starts_with(&format!("{m}/")));
            if !path.is_empty() && !made && !exists(path) {
                missing.push(word.to_owned());
            }
        }
    }
    missing
}

#[test]
fn the_path_check_finds_a_path_that_is_gone() {
    let top: BTreeSet<String> = ["crates", "tests", "ui", "bench", "docs"]
        .map(String::from)
        .into();
    let there = [
        "crates/server/src/a2a/push.rs",
        "crates/server/src/agents",
        "tests/leftovers.sh",
        "ui/src",
        "bench/a2a/run.sh",
    ];
    let exists = |p: &str| there.contains(&p);
    let text = "`crates/server/src/a2a/push.rs`, `tests/leftovers.sh`, `ui/src/...`, \
                `crates/server/src/agents/<kind>/adapter.rs`, `bench/a2a/run.sh 5`, \
                `cargo bench -p taskkeeper-core --bench store`, `agents/hooks.rs`, \
                `~/.claude/settings.json`, `ui/dist`, `tests/artifacts/app-window.png`; \
                gone: `crates/server/src/gone.rs`, (`tests/it/routes.rs:12`), \
                `docs/nowhere/`";
    assert_eq!(
        missing_paths(text, &top, &exists),
        [
            "crates/server/src/gone.rs",
            "tests/it/routes.rs:12",
            "docs/nowhere/"
        ]
    );
}

/// Every file or folder of the repository a page names exists: a move or a removal that
/// forgets the docs fails here, naming the page and the path.
#[test]
fn every_path_a_doc_names_exists() {
    let root = root();
    let top: BTreeSet<String> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name != ".git" && name != "target")
        .collect();
    assert!(top.contains("crates"), "the root was read: {top:?}");
    let exists = |p: &str| root.join(p).exists();
    let pages = doc_pages();
    assert!(pages.len() > 8, "the pages were found: {pages:?}");
    let mut missing = Vec::new();
    for page in pages {
        let text = std::fs::read_to_string(&page).unwrap();
        for path in missing_paths(&text, &top, &exists) {
            missing.push(format!("{}: {path}", shown(&page)));
        }
    }
    assert!(
        missing.is_empty(),
        "these pages name files or folders the repository does not have; name where the \
         thing is now (a path from the repository's root), or drop it: {missing:#?}"
    );
}

/// Every package `root` depends on, directly or not, as `Cargo.lock` resolved them (dev and
/// build dependencies included, so this is the wider set).
fn dependency_tree(lock: &str, root: &str) -> std::collections::BTreeSet<String> {
    let name = Regex::new(r#"(?m)^name = "([^"]+)""#).unwrap();
    let dependency = Regex::new(r#"(?m)^ "([^" ]+)"#).unwrap();
    let mut graph = std::collections::HashMap::<String, Vec<String>>::new();
    for package in lock.split("[[package]]").skip(1) {
        let Some(n) = name.captures(package) else {
            continue;
        };
        graph
            .entry(n[1].to_owned())
            .or_default()
            .extend(dependency.captures_iter(package).map(|d| d[1].to_owned()));
    }
    let mut seen = std::collections::BTreeSet::new();
    let mut next = vec![root.to_owned()];
    while let Some(package) = next.pop() {
        if seen.insert(package.clone()) {
            next.extend(graph.get(&package).into_iter().flatten().cloned());
        }
    }
    seen
}

#[test]
fn the_core_knows_no_web_async_or_gui_crate_and_only_the_app_knows_tauri() {
    let lock = std::fs::read_to_string(root().join("Cargo.lock")).unwrap();
    let gui =
        Regex::new(r"^(tauri|wry|tao|gtk|gdk|webkit2gtk|javascriptcore|muda|tray-icon)").unwrap();
    let web = Regex::new(r"^(axum|hyper|tokio|tower|rmcp|ureq|reqwest|async-)").unwrap();
    let core = dependency_tree(&lock, "taskkeeper-core");
    assert!(core.len() > 10, "the tree was read: {core:?}");
    let found: Vec<_> = core
        .iter()
        .filter(|p| gui.is_match(p) || web.is_match(p))
        .collect();
    assert!(
        found.is_empty(),
        "crates/core is plain data, pure functions and the store; move what needs these to \
         crates/server: {found:?}"
    );
    for package in ["taskkeeper-server", "taskkeeper-cli"] {
        let tree = dependency_tree(&lock, package);
        assert!(
            tree.iter().any(|p| p == "axum"),
            "the tree of {package} was read"
        );
        let found: Vec<_> = tree.iter().filter(|p| gui.is_match(p)).collect();
        assert!(
            found.is_empty(),
            "only crates/app knows Tauri; {package} must build without GTK or WebKit: {found:?}"
        );
    }
}

/// The names the code map's daemon section gives in backticks that look like parts of the
/// tree: `name.rs` files and `dir/` directories (paths of tests and other crates aside). The
/// section runs from its `###` heading to the next heading of its level or above, so its
/// areas' `####` headings are inside it.
fn code_map_parts(map: &str) -> Vec<String> {
    let start = map
        .find("### `crates/server` — the daemon")
        .expect("ARCHITECTURE.md has a section for crates/server");
    let section = &map[start..];
    let end = section[4..].find("\n### ").map_or(section.len(), |e| e + 4);
    let part = Regex::new(r"`([a-z0-9_/]+(?:\.rs|/))`").unwrap();
    part.captures_iter(&section[..end])
        .map(|c| c[1].to_owned())
        .filter(|t| !t.starts_with(['/']) && !t.starts_with("tests/") && !t.starts_with("crates/"))
        .collect()
}

/// Is `file` (relative to `crates/server/src`) named by one of `parts`? A file by its name or
/// a tail of its path (`events.rs`, `owner/events.rs`); a `mod.rs` by its directory (`http/`)
/// or a path through it (`claude_code/hooks.rs`). The crate root needs no entry.
fn named(file: &str, parts: &[String]) -> bool {
    if file == "lib.rs" {
        return true;
    }
    let segments: Vec<&str> = file.split('/').collect();
    if let ["mod.rs"] | [.., "mod.rs"] = segments.as_slice() {
        let dir = segments[segments.len() - 2];
        return parts.iter().any(|p| {
            p == &format!("{dir}/")
                || p.starts_with(&format!("{dir}/"))
                || p.contains(&format!("/{dir}/"))
        });
    }
    parts
        .iter()
        .any(|p| p.ends_with(".rs") && (file == p || file.ends_with(&format!("/{p}"))))
}

/// Does a part the map names exist in the tree?
fn exists(part: &str, files: &[String]) -> bool {
    files.iter().any(|f| {
        if part.ends_with(".rs") {
            f == part || f.ends_with(&format!("/{part}"))
        } else {
            format!("/{f}").contains(&format!("/{part}"))
        }
    })
}

#[test]
fn the_code_map_check_finds_a_missing_and_a_dangling_part() {
    let map = "### `crates/server` — the daemon\n#### `http/` — who may call what\n\
               `guard.rs`, `gone.rs`; `tests/it/x.rs`\n#### The rest\n\
               `crates/server/src/x.rs`\n### `crates/cli`\n`mcp/`";
    let parts = code_map_parts(map);
    assert_eq!(parts, ["http/", "guard.rs", "gone.rs"]);
    let files: Vec<String> = ["lib.rs", "http/mod.rs", "http/guard.rs", "http/error.rs"]
        .map(String::from)
        .into();
    let unnamed: Vec<_> = files.iter().filter(|f| !named(f, &parts)).collect();
    assert_eq!(unnamed, ["http/error.rs"]);
    let dangling: Vec<_> = parts.iter().filter(|p| !exists(p, &files)).collect();
    assert_eq!(dangling, ["gone.rs"]);
}

/// The code map is the tree: every file of the daemon is named in `ARCHITECTURE.md`'s
/// section for it, and everything that section names exists, so a move or a new file that
/// forgets the map fails here.
#[test]
fn the_code_map_names_every_part_of_the_daemon_and_nothing_that_is_gone() {
    let map = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let parts = code_map_parts(&map);
    let src = root().join("crates/server/src");
    let mut found = Vec::new();
    files(&src, &[".rs"], &mut found);
    let files: Vec<String> = found
        .iter()
        .map(|f| f.strip_prefix(&src).unwrap().display().to_string())
        .collect();
    assert!(files.len() > 40, "the tree was read: {files:?}");
    let unnamed: Vec<_> = files.iter().filter(|f| !named(f, &parts)).collect();
    assert!(
        unnamed.is_empty(),
        "name these in ARCHITECTURE.md's code map (crates/server), saying what each is for: \
         {unnamed:?}"
    );
    let dangling: Vec<_> = parts.iter().filter(|p| !exists(p, &files)).collect();
    assert!(
        dangling.is_empty(),
        "ARCHITECTURE.md's code map (crates/server) names parts that are not in the tree; \
         update the map: {dangling:?}"
    );
}

/// A part of the daemon one person can read at a sitting: no file over about 600 lines (the
/// bound leaves room to grow a little before a split is due).
#[test]
fn no_file_of_the_daemon_is_longer_than_a_sitting() {
    const MOST: usize = 700;
    let src = root().join("crates/server/src");
    let mut found = Vec::new();
    files(&src, &[".rs"], &mut found);
    let long: Vec<_> = found
        .iter()
        .map(|f| {
            (
                shown(f),
                std::fs::read_to_string(f).unwrap().lines().count(),
            )
        })
        .filter(|(_, lines)| *lines > MOST)
        .collect();
    assert!(
        long.is_empty(),
        "split these by what their parts do (over {MOST} lines): {long:?}"
    );
}

/// The lines of `text` before its unit tests (`#[cfg(test)] mod tests`), which may be long.
fn lines_before_tests(text: &str) -> usize {
    let mut lines = text.lines().peekable();
    let mut n = 0;
    while let Some(line) = lines.next() {
        if line.trim() == "#[cfg(test)]"
            && lines
                .peek()
                .is_some_and(|next| next.starts_with("mod tests"))
        {
            break;
        }
        n += 1;
    }
    n
}

#[test]
fn the_line_count_stops_at_the_unit_tests() {
    assert_eq!(
        lines_before_tests("a\nb\n#[cfg(test)]\nmod tests {\n}\n"),
        2
    );
    assert_eq!(
        lines_before_tests("a\n#[cfg(test)]\nfn only_in_tests() {}\nb\n"),
        4
    );
}

/// No source file anywhere in the workspace (every crate's `src/`, and the web UI's
/// `ui/src`) is longer than about a sitting's reading before its tests: 800 lines. The
/// daemon keeps its own, tighter bound (above).
#[test]
fn no_source_file_is_longer_than_a_sitting() {
    const MOST: usize = 800;
    let root = root();
    let mut found = Vec::new();
    for krate in std::fs::read_dir(root.join("crates")).unwrap().flatten() {
        files(&krate.path().join("src"), &[".rs"], &mut found);
    }
    files(&root.join("ui/src"), &[".ts", ".tsx", ".css"], &mut found);
    assert!(
        found.iter().any(|f| shown(f).ends_with("style.css")),
        "the scan found the UI's sources: {found:?}"
    );
    let long: Vec<_> = found
        .iter()
        .map(|f| {
            (
                shown(f),
                lines_before_tests(&std::fs::read_to_string(f).unwrap()),
            )
        })
        .filter(|(_, lines)| *lines > MOST)
        .collect();
    assert!(
        long.is_empty(),
        "split these by what their parts do (over {MOST} lines before their tests): {long:?}"
    );
}

/// Each place in `text` (code before its tests, comments out) that decides by a particular
/// kind of agent: a match arm on an `AgentKind` variant, a comparison with one, a `matches!`
/// over one, or a hook vocabulary (`HookAgent::`).
fn kind_decisions(text: &str) -> Vec<String> {
    let code = text.split("#[cfg(test)]").next().unwrap_or("");
    let decision = Regex::new(
        r"AgentKind::[A-Z][A-Za-z]*\)*\s*(?:=>|\|)|[!=]=\s*(?:taskkeeper_core::)?AgentKind::[A-Z]|matches!\([^)]*AgentKind::[A-Z]|HookAgent::[A-Z]",
    )
    .unwrap();
    code.lines()
        .enumerate()
        .filter_map(|(n, line)| {
            let line = line.split("//").next().unwrap_or("");
            decision
                .find(line)
                .map(|m| format!("{}: {}", n + 1, m.as_str()))
        })
        .collect()
}

#[test]
fn the_scan_for_kind_decisions_finds_a_match_a_comparison_and_a_vocabulary() {
    let found = kind_decisions(
        "match desk.agent {\n    AgentKind::Codex => 1,\n    AgentKind::ClaudeCode | AgentKind::Generic => 2,\n}\n\
         if desk.agent != AgentKind::ClaudeCode {}\n\
         Some(Ok(AgentKind::ClaudeCode)) => return,\n\
         let a = HookAgent::Gemini;\n\
         let kind = AgentKind::Generic; // a value, not a decision\n\
         // AgentKind::Codex => in a comment\n\
         #[cfg(test)]\nmod tests { fn t() { let _ = AgentKind::Codex == k; } }",
    );
    assert_eq!(
        found,
        [
            "2: AgentKind::Codex =>",
            "3: AgentKind::ClaudeCode |",
            "5: != AgentKind::C",
            "6: AgentKind::ClaudeCode)) =>",
            "7: HookAgent::G",
        ]
    );
}

/// Every fact about a kind of agent is its adapter's (`crates/server/src/agents/adapter.rs`,
/// and one `adapter.rs` per kind under `agents/`): the rest of the daemon, the hook intakes,
/// the launcher and delivery included, asks `agents::adapter(kind)` (the lookup, in
/// `agents/mod.rs`, the one match on the kind outside an adapter) and decides by nothing
/// else, so adding an agent is one new module and one line in the lookup. Core defines the kinds
/// (`desk.rs`) and their hook vocabularies (`agent_hooks.rs`); the one other per-kind fact in
/// core is an owner's setting named by its kind (`reminders.first_after.claude-code`, in
/// `settings.rs`).
#[test]
fn only_the_agents_adapters_decide_by_the_kind_of_agent() {
    let core = root().join("crates/core/src");
    let allowed = [
        core.join("desk.rs"),
        core.join("agent_hooks.rs"),
        core.join("settings.rs"),
    ];
    let agents = root().join("crates/server/src/agents");
    let mut found = Vec::new();
    let mut scanned = 0;
    for path in product_sources() {
        let ours = path.starts_with(root().join("crates/server/src")) || path.starts_with(&core);
        let an_adapter = path.starts_with(&agents) && path.ends_with("adapter.rs");
        if !ours || an_adapter || allowed.contains(&path) {
            continue;
        }
        scanned += 1;
        let mut text = std::fs::read_to_string(&path).unwrap();
        if path == agents.join("mod.rs") {
            let lookup = "pub(crate) fn adapter(kind: AgentKind)";
            let start = text.find(lookup).expect("agents/mod.rs holds the lookup");
            let end = start + text[start..].find("\n}\n").unwrap();
            // Blanked, not cut, so the places found elsewhere keep their line numbers.
            let blank: String = text[start..end]
                .chars()
                .map(|c| if c == '\n' { c } else { ' ' })
                .collect();
            text.replace_range(start..end, &blank);
        }
        for place in kind_decisions(&text) {
            found.push(format!("{}:{place}", shown(&path)));
        }
    }
    assert!(scanned > 40, "the tree was read");
    assert!(
        found.is_empty(),
        "a decision by the kind of agent outside its adapter; ask \
         `agents::adapter(kind)` (add a capability or a method to `agents::adapter::Adapter`) \
         instead: {found:?}"
    );
}

// The module graph of every crate: no module names another in a cycle, at any depth.

/// `text` with its comments and the insides of its string and char literals blanked (each
/// byte a space, newlines kept, so offsets and line numbers still point into `text`), cut at
/// its unit tests (`#[cfg(test)] mod tests`, which may reach up to what they test).
fn code_of(text: &str) -> String {
    let kept: usize = text
        .split_inclusive('\n')
        .take(lines_before_tests(text))
        .map(str::len)
        .sum();
    let mut b = text.as_bytes()[..kept].to_vec();
    let blank = |b: &mut Vec<u8>, from: usize, to: usize| {
        let to = to.min(b.len());
        for byte in &mut b[from..to] {
            if *byte != b'\n' {
                *byte = b' ';
            }
        }
    };
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut i = 0;
    let at = |b: &[u8], k: usize| b.get(k).copied().unwrap_or(0);
    while i < b.len() {
        match b[i] {
            b'/' if at(&b, i + 1) == b'/' => {
                let end = b[i..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(b.len(), |n| i + n);
                blank(&mut b, i, end);
                i = end;
            }
            b'/' if at(&b, i + 1) == b'*' => {
                let (mut depth, mut j) = (1, i + 2);
                while j < b.len() && depth > 0 {
                    if b[j] == b'/' && at(&b, j + 1) == b'*' {
                        depth += 1;
                        j += 1;
                    } else if b[j] == b'*' && at(&b, j + 1) == b'/' {
                        depth -= 1;
                        j += 1;
                    }
                    j += 1;
                }
                blank(&mut b, i, j);
                i = j;
            }
            b'r' if (i == 0 || !ident(b[i - 1]) || b[i - 1] == b'b')
                && matches!(at(&b, i + 1), b'"' | b'#') =>
            {
                let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
                if at(&b, i + 1 + hashes) != b'"' {
                    i += 1;
                    continue;
                }
                let close: Vec<u8> = std::iter::once(b'"')
                    .chain(std::iter::repeat_n(b'#', hashes))
                    .collect();
                let start = i + 2 + hashes;
                let end = b[start..]
                    .windows(close.len())
                    .position(|w| w == close.as_slice())
                    .map_or(b.len(), |n| start + n);
                blank(&mut b, start, end);
                i = end + close.len();
            }
            b'"' => {
                let mut j = i + 1;
                while j < b.len() && b[j] != b'"' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                blank(&mut b, i + 1, j);
                i = j + 1;
            }
            b'\'' => {
                // A char literal ('x', '\n', '\'', 'é') or a lifetime ('a), which has no close.
                let end = if at(&b, i + 1) == b'\\' {
                    b[i + 3..]
                        .iter()
                        .position(|&c| c == b'\'')
                        .map(|n| i + 3 + n)
                } else {
                    let width = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                    (at(&b, i + 1 + width) == b'\'').then_some(i + 1 + width)
                };
                match end {
                    Some(end) => {
                        blank(&mut b, i + 1, end);
                        i = end + 1;
                    }
                    None => i += 1,
                }
            }
            _ => i += 1,
        }
    }
    String::from_utf8(b).expect("only whole characters were blanked")
}

/// Each leaf of a `use` tree (`super::{stream, wire::{self, Dialect}, send as sent}`): its
/// path, the name it brings into scope (`None` for a glob), and where it is in `tree`.
fn use_leaves(tree: &str) -> Vec<(Vec<String>, Option<String>, usize)> {
    let token = Regex::new(r"[A-Za-z_][A-Za-z0-9_]*|::|[{},*]").unwrap();
    let tokens: Vec<(usize, &str)> = token
        .find_iter(tree)
        .map(|m| (m.start(), m.as_str()))
        .collect();
    fn walk(
        tokens: &[(usize, &str)],
        pos: &mut usize,
        prefix: Vec<String>,
        out: &mut Vec<(Vec<String>, Option<String>, usize)>,
    ) {
        let mut path = prefix;
        let mut at = tokens.get(*pos).map_or(0, |t| t.0);
        while let Some(&(offset, tok)) = tokens.get(*pos) {
            *pos += 1;
            match tok {
                "{" => {
                    while tokens.get(*pos).is_some_and(|t| t.1 != "}") {
                        walk(tokens, pos, path.clone(), out);
                        if tokens.get(*pos).is_some_and(|t| t.1 == ",") {
                            *pos += 1;
                        }
                    }
                    *pos += 1;
                    return;
                }
                "*" => {
                    out.push((path, None, offset));
                    return;
                }
                "::" if path.is_empty() => path.push("::".into()),
                "::" => {}
                name => {
                    path.push(name.to_owned());
                    at = offset;
                    if tokens.get(*pos).is_none_or(|t| t.1 != "::") {
                        break;
                    }
                }
            }
        }
        if path.last().is_some_and(|s| s == "self") {
            path.pop();
        }
        let mut name = path.last().cloned();
        if tokens.get(*pos).is_some_and(|t| t.1 == "as") {
            name = tokens.get(*pos + 1).map(|t| t.1.to_owned());
            *pos += 2;
        }
        out.push((path, name, at));
    }
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < tokens.len() {
        walk(&tokens, &mut pos, Vec::new(), &mut out);
    }
    out
}

/// The module a file of a crate's `src/` is: `a2a/send.rs` and `a2a/send/mod.rs` are
/// `a2a::send`, the crate root (`lib.rs`, `main.rs`) is the empty path.
fn module_of(relative: &Path) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.len() == 1 && matches!(parts[0].as_str(), "lib" | "main")
        || parts.last().is_some_and(|p| p == "mod")
    {
        parts.pop();
    }
    parts
}

/// What a module imports under a name: the path it was brought from.
type Imported<'a> = dyn Fn(&[String], &str) -> Option<Vec<String>> + 'a;

/// One file of a crate as the module scan reads it: its module (`module_of`), the name it
/// is shown by, and its text.
struct ModuleFile {
    module: Vec<String>,
    shown: String,
    text: String,
}

/// What the modules of one crate name of each other, lifted to where it matters: a path from
/// module `a::x` to module `b::y` (through `crate::`, `super::`, `self::`, a child's name, or a
/// name a `use` brought in, and through the re-exports on the way) is an edge between the
/// two siblings that hold them, `a` → `b`, so every level of the tree is checked on its own
/// (the crate's top modules as the daemon's areas are, then the parts of each). A module
/// naming its own parts, or a part naming its parent (`super::Ctx`), is no edge: a parent is
/// made of its parts. Each edge keeps the first place it is made (`file:line names module`).
fn module_edges(files: &[ModuleFile]) -> BTreeMap<(String, String), String> {
    let join = |m: &[String]| m.join("::");
    let inline_mod = Regex::new(r"\bmod\s+([a-z_][a-z0-9_]*)\s*\{").unwrap();
    let test_only =
        Regex::new(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+([a-z_][a-z0-9_]*)\s*;")
            .unwrap();
    let use_item = Regex::new(r"\buse\s+([^;]+);").unwrap();
    let path =
        Regex::new(r"(?:^|[^:A-Za-z0-9_$])((?:[A-Za-z_][A-Za-z0-9_]*::)+[A-Za-z_][A-Za-z0-9_]*)")
            .unwrap();

    // Each file's code, with the inline modules it opens (`mod sni { .. }`) as spans.
    struct Read<'a> {
        file: &'a ModuleFile,
        code: String,
        inline: Vec<(usize, usize, String)>,
    }
    let mut read: Vec<Read> = files
        .iter()
        .map(|file| {
            let code = code_of(&file.text);
            let mut inline = Vec::new();
            for c in inline_mod.captures_iter(&code) {
                let open = c.get(0).unwrap().end() - 1;
                let mut depth = 0;
                let close = code[open..]
                    .char_indices()
                    .find_map(|(i, ch)| {
                        depth += match ch {
                            '{' => 1,
                            '}' => -1,
                            _ => 0,
                        };
                        (depth == 0).then_some(open + i)
                    })
                    .unwrap_or(code.len());
                inline.push((open, close, c[1].to_owned()));
            }
            Read { file, code, inline }
        })
        .collect();
    // A module declared for the unit tests only (`#[cfg(test)] mod ui_types;`) is test code.
    let mut tests_only = BTreeSet::new();
    for r in &read {
        for c in test_only.captures_iter(&r.code) {
            let mut m = r.file.module.clone();
            m.push(c[1].to_owned());
            tests_only.insert(m);
        }
    }
    read.retain(|r| !tests_only.iter().any(|t| r.file.module.starts_with(t)));
    let module_at = |r: &Read, offset: usize| {
        let mut m = r.file.module.clone();
        for (open, close, name) in &r.inline {
            if *open < offset && offset < *close {
                m.push(name.clone());
            }
        }
        m
    };

    let mut modules: BTreeSet<Vec<String>> = BTreeSet::new();
    for r in &read {
        for n in 0..=r.file.module.len() {
            modules.insert(r.file.module[..n].to_vec());
        }
        for (open, _, _) in &r.inline {
            modules.insert(module_at(r, *open + 1));
        }
    }
    // Every name a `use` brings into a module, as the path it was brought from.
    let mut imports: BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    let mut uses = Vec::new();
    for (index, r) in read.iter().enumerate() {
        for c in use_item.captures_iter(&r.code) {
            let tree = c.get(1).unwrap();
            for (segments, name, at) in use_leaves(tree.as_str()) {
                let module = module_at(r, tree.start() + at);
                if let Some(name) = name.filter(|n| n != "_") {
                    imports
                        .entry(module.clone())
                        .or_default()
                        .insert(name, segments.clone());
                }
                uses.push((index, tree.start() + at, module, segments));
            }
        }
    }
    let empty = BTreeMap::new();
    let imported = |m: &[String], name: &str| imports.get(m).unwrap_or(&empty).get(name).cloned();
    // The module `segments`, written in `module`, names: the deepest module along the path
    // (through the names each module on the way imports); `None` for another crate's path.
    fn resolve(
        module: &[String],
        segments: &[String],
        modules: &BTreeSet<Vec<String>>,
        imported: &Imported<'_>,
        depth: usize,
    ) -> Option<Vec<String>> {
        let first = segments.first()?;
        let child = |m: &[String], s: &str| {
            let mut c = m.to_vec();
            c.push(s.to_owned());
            modules.contains(&c).then_some(c)
        };
        let (mut at, mut i) = match first.as_str() {
            "crate" => (Vec::new(), 1),
            "self" => (module.to_vec(), 1),
            "super" => {
                let ups = segments.iter().take_while(|s| *s == "super").count();
                (module[..module.len().checked_sub(ups)?].to_vec(), ups)
            }
            name => match (child(module, name), imported(module, name)) {
                (Some(c), _) => (c, 1),
                (None, Some(target)) if depth < 8 => {
                    let whole = [target.as_slice(), &segments[1..]].concat();
                    return resolve(module, &whole, modules, imported, depth + 1);
                }
                _ => return None,
            },
        };
        while let Some(s) = segments.get(i) {
            if let Some(c) = child(&at, s) {
                at = c;
            } else if let Some(target) = imported(&at, s).filter(|_| depth < 8) {
                let whole = [target.as_slice(), &segments[i + 1..]].concat();
                return resolve(&at, &whole, modules, imported, depth + 1);
            } else {
                break;
            }
            i += 1;
        }
        Some(at)
    }

    let mut named = uses;
    for (index, r) in read.iter().enumerate() {
        let in_use: Vec<(usize, usize)> = use_item
            .find_iter(&r.code)
            .map(|m| (m.start(), m.end()))
            .collect();
        for c in path.captures_iter(&r.code) {
            let m = c.get(1).unwrap();
            if in_use.iter().any(|(s, e)| (*s..*e).contains(&m.start())) {
                continue;
            }
            let segments = m.as_str().split("::").map(str::to_owned).collect();
            named.push((index, m.start(), module_at(r, m.start()), segments));
        }
    }
    let mut edges = BTreeMap::new();
    for (index, offset, module, segments) in named {
        let Some(to) = resolve(&module, &segments, &modules, &imported, 0) else {
            continue;
        };
        let shared = module.iter().zip(&to).take_while(|(a, b)| a == b).count();
        if shared == module.len() || shared == to.len() {
            continue;
        }
        let r = &read[index];
        let line = r.code[..offset].matches('\n').count() + 1;
        edges
            .entry((join(&module[..=shared]), join(&to[..=shared])))
            .or_insert_with(|| format!("{}:{line} names {}", r.file.shown, join(&to)));
    }
    edges
}

/// Each cycle of a crate's module graph, with the place each step is made.
fn module_cycles(files: &[ModuleFile]) -> Vec<String> {
    let edges = module_edges(files);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, to) in edges.keys() {
        graph.entry(from.clone()).or_default().insert(to.clone());
    }
    cycles(&graph)
        .iter()
        .map(|cycle| {
            let steps: Vec<&str> = cycle
                .windows(2)
                .map(|w| edges[&(w[0].clone(), w[1].clone())].as_str())
                .collect();
            format!("{} ({})", cycle.join(" → "), steps.join("; "))
        })
        .collect()
}

#[test]
fn the_module_scan_finds_a_cycle_through_super_and_a_group() {
    let file = |module: &str, shown: &str, text: &str| ModuleFile {
        module: module
            .split("::")
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect(),
        shown: shown.to_owned(),
        text: text.to_owned(),
    };
    let root = file("", "lib.rs", "mod a2a;\nmod http;\npub use a2a::Sent;\n");
    let a2a = file(
        "a2a",
        "a2a/mod.rs",
        "mod send;\nmod stream;\npub use send::Sent;\npub struct Ctx;\nfn route() { send::send(); }\n",
    );
    let send = file(
        "a2a::send",
        "a2a/send.rs",
        "use super::{Ctx, stream::{self, open}};\npub struct Sent;\n",
    );
    let stream = file(
        "a2a::stream",
        "a2a/stream.rs",
        "// super::send::settled in a comment is no edge\n\
         const NOT_A_PATH: &str = \"crate::http::Up\";\n\
         const BRACE: char = '{';\n\
         pub fn open() -> Option<crate::http::Up> { None }\n\
         fn settled() { let _ = super::send::Sent; }\n",
    );
    let http = file(
        "http",
        "http/mod.rs",
        "pub struct Up;\n\
         #[cfg(test)]\nmod tests {\n    use crate::Sent;\n}\n",
    );
    let layered = [root, a2a, send, http];
    assert!(
        module_cycles(&layered).is_empty(),
        "a parent's own parts are no edge, nor is test code: {:?}",
        module_edges(&layered)
    );
    let [root, a2a, send, http] = layered;
    let tangled = [root, a2a, send, stream, http];
    assert_eq!(
        module_cycles(&tangled),
        [
            "a2a::send → a2a::stream → a2a::send (a2a/send.rs:1 names a2a::stream; \
             a2a/stream.rs:5 names a2a::send)"
        ]
    );
    // A name taken through a re-export counts as its own module's, and a path deep in one
    // module to deep in another is an edge between the top ones that hold them.
    let mut with_http = tangled;
    with_http[4].text = "use crate::Sent;\npub struct Up;\n".into();
    assert_eq!(
        module_cycles(&with_http),
        [
            "a2a → http → a2a (a2a/stream.rs:4 names http; http/mod.rs:1 names a2a::send)",
            "a2a::send → a2a::stream → a2a::send (a2a/send.rs:1 names a2a::stream; \
             a2a/stream.rs:5 names a2a::send)",
        ]
    );
}

/// No module of any crate names another in a cycle, at any level of the tree
/// (`module_edges`): the daemon's areas, the parts of each area, the store's parts, the
/// CLI's commands. What two modules both need is a leaf they both name (as `a2a/wire.rs`),
/// what a lower one needs of a higher one is passed in, and two modules that cannot do
/// without each other are one. Unit tests are left out: they may reach up to what they test.
#[test]
fn every_crate_names_its_modules_without_a_cycle() {
    let mut found = Vec::new();
    let mut scanned = 0;
    for krate in ["core", "server", "cli", "app"] {
        let src = root().join("crates").join(krate).join("src");
        let mut sources = Vec::new();
        files(&src, &[".rs"], &mut sources);
        // A package with a library has its binary (`main.rs`) as a crate of its own.
        let library = sources.iter().any(|p| p.ends_with("src/lib.rs"));
        let read: Vec<ModuleFile> = sources
            .iter()
            .filter(|p| !(library && p.strip_prefix(&src).unwrap() == Path::new("main.rs")))
            .map(|p| ModuleFile {
                module: module_of(p.strip_prefix(&src).unwrap()),
                shown: shown(p),
                text: std::fs::read_to_string(p).unwrap(),
            })
            .collect();
        scanned += module_edges(&read).len();
        found.extend(
            module_cycles(&read)
                .into_iter()
                .map(|c| format!("{krate}: {c}")),
        );
    }
    assert!(
        scanned > 100,
        "the scan found the modules' paths ({scanned} edges)"
    );
    assert!(
        found.is_empty(),
        "modules name each other in a cycle; move what both need into a leaf, pass what the \
         lower one needs in, or make the two one module: {found:#?}"
    );
}
