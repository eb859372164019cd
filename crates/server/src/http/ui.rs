//! The web UI for browsers: `taskkeeper serve --ui` serves the built `ui/dist` (the same page
//! the tray app shows in its window) at `/ui/`.
//!
//! Why the files are served without the token: a browser cannot send an `Authorization`
//! header when it loads a page, and the files hold no data, only the code that asks for it.
//! The guard lets exactly `GET /ui` and `GET /ui/...` through without a token (the `Host` and
//! `Origin` checks still apply); every `/api` call the page then makes needs the owner token.
//!
//! How the page gets the token: `taskkeeper open` mints a one-time code in a private sign-in
//! page (`POST /api/ui/codes` with `page`, see [`crate::http::ui_codes`]) and opens that file,
//! which sends the browser on to `/ui/#code=...`; the page trades the code for the token at
//! `POST /ui/session`, the one other route open without a token (a page has none yet). The
//! browser's command line, which every local user can read, so holds only the path of a file
//! no one else can read.
//!
//! The directory is read once at start into memory (it is a few hundred KiB): a request can
//! only ever name a file that was there, so no path (`..`, `%2e%2e`, symlinks made later) can
//! reach the rest of the disk, and a missing or unbuilt directory is a start-up error rather
//! than a blank page. Rebuilding the UI needs a daemon restart.
//!
//! The sign-in's wire types ([`UiCodeView`], [`UiSessionRequest`], [`UiSessionView`]) live here,
//! beside the routes that send them, so HTTP names none of the areas it serves.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::http::routes::{Access, Room};
use axum::body::{Body, Bytes};
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use taskkeeper_core::Timestamp;

use crate::error::{OwnerError, OwnerErrorKind};
use crate::http::ui_codes::{CODE_LIFETIME, UiCodes};

/// The page's Content Security Policy: its own scripts, styles and API only, never framed.
pub const CSP: &str = "default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'";

/// The environment variable naming the built UI when `--ui` is given without a directory.
pub const UI_DIR_ENV: &str = "TASKKEEPER_UI_DIR";

/// A built UI is far smaller; more means `--ui` points at the wrong directory.
const MAX_TOTAL_BYTES: u64 = 64 * 1024 * 1024;
const MAX_DEPTH: usize = 8;

#[derive(Debug, thiserror::Error)]
pub enum UiError {
    #[error(
        "cannot find the built web UI (tried {}); build it with `cd ui && npm ci && npm run build`, or name the directory with `--ui DIR` or {UI_DIR_ENV}",
        list(.tried)
    )]
    NotFound { tried: Vec<PathBuf> },
    #[error(
        "{dir} has no index.html, so it is not a built web UI; build it with `cd ui && npm ci && npm run build` and pass its `ui/dist`"
    )]
    NoIndex { dir: PathBuf },
    #[error("cannot read the web UI in {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{dir} holds more than {} MiB or nests deeper than {MAX_DEPTH} folders, which no built web UI does; pass the `ui/dist` directory",
        MAX_TOTAL_BYTES / (1024 * 1024)
    )]
    TooLarge { dir: PathBuf },
}

fn list(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Where the built UI is: `explicit` (from `--ui DIR`), else `TASKKEEPER_UI_DIR`, else the
/// first of these that holds an `index.html`: `share/taskkeeper/ui` beside an installed
/// binary's `bin/`, the workspace's `ui/dist` above a `target/<profile>/` binary, and the
/// workspace this binary was built from (a development build with its own `CARGO_TARGET_DIR`).
pub fn locate(explicit: Option<&Path>, exe: Option<&Path>) -> Result<PathBuf, UiError> {
    if let Some(dir) = explicit {
        return Ok(dir.to_owned());
    }
    if let Some(dir) = std::env::var_os(UI_DIR_ENV).filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    let mut candidates = Vec::new();
    if let Some(bin_dir) = exe.and_then(Path::parent) {
        candidates.push(bin_dir.join("../share/taskkeeper/ui"));
        candidates.push(bin_dir.join("../../ui/dist"));
    }
    candidates.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ui/dist"));
    first_built(candidates)
}

/// The first directory that holds an `index.html`, or an error naming all of them.
fn first_built(candidates: Vec<PathBuf>) -> Result<PathBuf, UiError> {
    match candidates.iter().find(|d| d.join("index.html").is_file()) {
        Some(dir) => Ok(dir.clone()),
        None => Err(UiError::NotFound { tried: candidates }),
    }
}

/// The UI's files, read once.
#[derive(Debug)]
pub struct UiFiles {
    dir: PathBuf,
    /// Keyed by the path below the directory, with `/` separators (`assets/index-1a2b.js`).
    files: HashMap<String, UiFile>,
}

#[derive(Debug)]
struct UiFile {
    bytes: Bytes,
    content_type: &'static str,
    etag: HeaderValue,
}

impl UiFiles {
    /// Read every file under `dir`; refuses a directory without `index.html`.
    pub fn load(dir: &Path) -> Result<Self, UiError> {
        if !dir.join("index.html").is_file() {
            return Err(UiError::NoIndex {
                dir: dir.to_owned(),
            });
        }
        let mut files = HashMap::new();
        let mut total = 0;
        read_dir_into(dir, dir, 0, &mut total, &mut files)?;
        tracing::info!(dir = %dir.display(), files = files.len(), bytes = total, "serving the web UI at /ui/");
        Ok(Self {
            dir: dir.to_owned(),
            files,
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

fn read_dir_into(
    root: &Path,
    dir: &Path,
    depth: usize,
    total: &mut u64,
    files: &mut HashMap<String, UiFile>,
) -> Result<(), UiError> {
    let read_err = |path: &Path| {
        let path = path.to_owned();
        move |source| UiError::Read { path, source }
    };
    if depth > MAX_DEPTH {
        return Err(UiError::TooLarge {
            dir: root.to_owned(),
        });
    }
    for entry in std::fs::read_dir(dir).map_err(read_err(dir))? {
        let path = entry.map_err(read_err(dir))?.path();
        let meta = std::fs::metadata(&path).map_err(read_err(&path))?;
        if meta.is_dir() {
            read_dir_into(root, &path, depth + 1, total, files)?;
            continue;
        }
        if !meta.is_file() {
            continue;
        }
        *total += meta.len();
        if *total > MAX_TOTAL_BYTES {
            return Err(UiError::TooLarge {
                dir: root.to_owned(),
            });
        }
        // A name that is not UTF-8 cannot be asked for in a URL the page makes; skip it.
        let Some(key) = path
            .strip_prefix(root)
            .ok()
            .and_then(|rel| {
                rel.components()
                    .map(|c| c.as_os_str().to_str())
                    .collect::<Option<Vec<_>>>()
            })
            .map(|parts| parts.join("/"))
        else {
            continue;
        };
        let bytes = std::fs::read(&path).map_err(read_err(&path))?;
        let digest = Sha256::digest(&bytes);
        let hex = hex::encode(&digest[..12]);
        let etag = HeaderValue::from_str(&format!("\"{hex}\"")).map_err(|e| UiError::Read {
            path: path.clone(),
            source: std::io::Error::other(e),
        })?;
        files.insert(
            key,
            UiFile {
                content_type: content_type(&path),
                bytes: Bytes::from(bytes),
                etag,
            },
        );
    }
    Ok(())
}

/// The types a Vite build produces; the rest are served as opaque bytes (with `nosniff`, so a
/// browser never guesses a script out of them).
fn content_type(path: &Path) -> &'static str {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("html") => "text/html; charset=utf-8",
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("json" | "map") => "application/json",
        Some("webmanifest") => "application/manifest+json",
        Some("png") => "image/png",
        Some("svg") => "image/svg+xml",
        Some("ico") => "image/x-icon",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("webp") => "image/webp",
        Some("woff2") => "font/woff2",
        Some("woff") => "font/woff",
        Some("txt") => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// The path at which the page trades its code for the token: open, since the code is its
/// credential.
pub const SESSION_PATH: &str = "/ui/session";

/// What the `/ui` routes and the owner's code route need: the files (if served) and the codes.
#[derive(Debug, Clone)]
pub(crate) struct UiState {
    pub files: Option<Arc<UiFiles>>,
    pub codes: UiCodes,
}

/// `/ui`, `/ui/`, `/ui/{path}` and `POST /ui/session`: open, since a browser cannot send the
/// bearer header when it loads a page, the files hold no data, and the exchange takes a
/// one-time code as its credential; everything the page then asks of `/api` needs the
/// owner's token like any other call. Without a UI directory (`serve` without `--ui`, the
/// tray app) the files answer 404 with what to do; the exchange still works, since a code
/// can only come from the owner.
/// With them, `POST /api/ui/codes`, where the owner mints a code (the owner's, like the rest
/// of `/api`).
pub(crate) fn rooms(ui: UiState) -> [Room; 3] {
    let files = Room::new(Access::Open)
        .route("GET", "/ui", get(redirect))
        .route("GET", "/ui/", get(index))
        .route("GET", "/ui/{*path}", get(file))
        .with_state(ui.files);
    let session = Room::new(Access::Open)
        .route("POST", SESSION_PATH, post(session))
        .with_state(ui.codes.clone());
    let mint = Room::new(Access::Owner)
        .route("POST", "/api/ui/codes", post(mint_code))
        .with_state(ui.codes);
    [files, session, mint]
}

/// `POST /api/ui/codes`: what to mint. `page`: write the code into a sign-in page for the
/// browser to open (`taskkeeper open`), so no command line holds it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UiCodeRequest {
    #[serde(default)]
    pub page: bool,
}

/// `POST /api/ui/codes`: a sign-in code for the web UI (see `ui_codes.rs`), shown once, and
/// the sign-in page that carries it when one was asked for.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct UiCodeView {
    pub code: String,
    pub expires_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub page: Option<String>,
}

/// `POST /ui/session`: the code from the page's address.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UiSessionRequest {
    pub code: String,
}

/// The answer to a good code: the owner token, for the tab's session storage.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct UiSessionView {
    pub token: String,
}

/// `POST /api/ui/codes` (owner token): a code for `taskkeeper open`, in a sign-in page when
/// asked. A page is looked at again once its code has lapsed, and removed if still there.
pub(crate) async fn mint_code(
    State(codes): State<UiCodes>,
    crate::http::Body(request): crate::http::Body<UiCodeRequest>,
) -> Response {
    let minted = if request.page {
        codes.mint_page()
    } else {
        codes.mint()
    };
    match minted {
        Ok(minted) => {
            tracing::info!(expires_at = %minted.expires_at, page = minted.page.is_some(), "minted a web UI sign-in code");
            if minted.page.is_some() {
                let codes = codes.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(CODE_LIFETIME + Duration::from_secs(1)).await;
                    codes.lapse();
                });
            }
            no_store(
                (
                    StatusCode::CREATED,
                    axum::Json(UiCodeView {
                        code: minted.code,
                        expires_at: minted.expires_at,
                        page: minted.page.map(|p| p.display().to_string()),
                    }),
                )
                    .into_response(),
            )
        }
        Err(e) => {
            tracing::warn!(error = %e, "refused to mint a web UI sign-in code");
            OwnerError::from(e).into_response()
        }
    }
}

/// `POST /ui/session` (no token): the page's code, traded once for the owner token. The body
/// must be JSON, so a form posted from another site is refused before any code is looked at.
async fn session(
    State(codes): State<UiCodes>,
    crate::http::Body(request): crate::http::Body<UiSessionRequest>,
) -> Response {
    let answer = match codes.redeem(&request.code) {
        Ok(token) => {
            tracing::info!("a web UI page signed in with a code");
            (
                StatusCode::OK,
                axum::Json(UiSessionView {
                    token: token.as_str().to_owned(),
                }),
            )
                .into_response()
        }
        Err(e) => {
            tracing::warn!(error = %e, "refused a web UI sign-in code");
            OwnerError::from(e).into_response()
        }
    };
    no_store(answer)
}

/// An answer that carries a secret (the code, the token) is kept by no cache.
fn no_store(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// The page's assets are relative (`./assets/...`), so the page must be at `/ui/`. A browser
/// keeps the URL's fragment (the code) across this redirect.
async fn redirect() -> Response {
    secured(
        (
            StatusCode::PERMANENT_REDIRECT,
            [(header::LOCATION, HeaderValue::from_static("/ui/"))],
        )
            .into_response(),
    )
}

async fn index(State(files): State<Option<Arc<UiFiles>>>, headers: HeaderMap) -> Response {
    serve(files.as_deref(), "index.html", &headers)
}

async fn file(
    State(files): State<Option<Arc<UiFiles>>>,
    UrlPath(path): UrlPath<String>,
    headers: HeaderMap,
) -> Response {
    let path = if path.is_empty() || path.ends_with('/') {
        format!("{path}index.html")
    } else {
        path
    };
    serve(files.as_deref(), &path, &headers)
}

fn serve(files: Option<&UiFiles>, path: &str, request: &HeaderMap) -> Response {
    let Some(files) = files else {
        return not_found(
            "this daemon does not serve the web UI; start it with `taskkeeper serve --ui`",
        );
    };
    // An exact name of a file read at start; nothing else on the disk can be named.
    let Some(file) = files.files.get(path) else {
        return not_found(format!("the web UI has no file {path:?}"));
    };
    let fresh = request
        .get(header::IF_NONE_MATCH)
        .is_some_and(|tag| tag.as_bytes() == file.etag.as_bytes());
    let mut response = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let mut r = Response::new(Body::from(file.bytes.clone()));
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(file.content_type),
        );
        r
    };
    response
        .headers_mut()
        .insert(header::ETAG, file.etag.clone());
    secured(response)
}

fn not_found(message: impl Into<String>) -> Response {
    secured(crate::http::error_response(
        StatusCode::NOT_FOUND,
        OwnerError {
            kind: OwnerErrorKind::NotFound,
            message: message.into(),
        },
    ))
}

/// The headers every `/ui` answer carries. `no-cache` makes the browser revalidate (cheap,
/// with the ETag), so a rebuilt UI is picked up after a daemon restart without stale scripts.
fn secured(mut response: Response) -> Response {
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn content_types_cover_a_vite_build() {
        assert_eq!(
            content_type(Path::new("index.html")),
            "text/html; charset=utf-8"
        );
        assert_eq!(
            content_type(Path::new("assets/index-1a2b.JS")),
            "text/javascript; charset=utf-8"
        );
        assert_eq!(
            content_type(Path::new("assets/index.css")),
            "text/css; charset=utf-8"
        );
        assert_eq!(content_type(Path::new("favicon.png")), "image/png");
        assert_eq!(
            content_type(Path::new("LICENSE")),
            "application/octet-stream"
        );
    }

    #[test]
    fn load_reads_nested_files_and_refuses_a_directory_without_index() {
        let dir = tempfile::tempdir().unwrap();
        let err = UiFiles::load(dir.path()).unwrap_err();
        assert!(err.to_string().contains("npm run build"), "{err}");

        std::fs::write(dir.path().join("index.html"), "<!doctype html>").unwrap();
        std::fs::create_dir(dir.path().join("assets")).unwrap();
        std::fs::write(dir.path().join("assets/app.js"), "1").unwrap();
        let files = UiFiles::load(dir.path()).unwrap();
        let mut names: Vec<_> = files.files.keys().cloned().collect();
        names.sort();
        assert_eq!(names, ["assets/app.js", "index.html"]);
    }

    #[test]
    fn locate_prefers_the_flag_then_the_first_built_candidate() {
        let flag = Path::new("/somewhere/dist");
        assert_eq!(locate(Some(flag), None).unwrap(), flag);

        let tree = tempfile::tempdir().unwrap();
        let (unbuilt, built) = (tree.path().join("a"), tree.path().join("b"));
        std::fs::create_dir_all(&unbuilt).unwrap();
        std::fs::create_dir_all(&built).unwrap();
        let err = first_built(vec![unbuilt.clone()]).unwrap_err().to_string();
        assert!(err.contains(&unbuilt.display().to_string()), "{err}");
        assert!(
            err.contains("--ui DIR") && err.contains(UI_DIR_ENV),
            "{err}"
        );

        std::fs::write(built.join("index.html"), "").unwrap();
        assert_eq!(first_built(vec![unbuilt, built.clone()]).unwrap(), built);
    }
}
