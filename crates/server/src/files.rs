//! The daemon's files directory (`<data-dir>/files`): the file parts askers send, saved so
//! the worker can open them by path, and the files workers attach to tasks, copied so the
//! asker can fetch them (`GET /a2a/{desk}/tasks/{task}/files/{file}`) whatever the worker
//! does to the original afterwards. Directories are 0700 and files 0600, like everything in
//! the data directory (`private`).
//!
//! Every name in here is the daemon's (`taskkeeper_core::files`); an asker's file name or a
//! worker's path never chooses where a file is written. A worker's path is read only when,
//! with every symlink resolved, it lies inside its desk's working directory.
//!
//! An inline file part stays in the task as it arrived (the store is where it is durable;
//! `limits.file_bytes` and `limits.message_bytes` bound it), and the file here is a copy
//! written after the commit, before the answer. A worker's file lives only here: the task
//! keeps the artifact, whose part names the fetch URL, so the bytes are not carried in
//! every GetTask and push, and only the task's own asker, with its own token, can read them.
//! A task's files go when the task is pruned. The fetch URL is absolute (clients need one) and
//! names the daemon's port when the file was attached; the path is what the route matches.

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use serde_json::Value;
use taskkeeper_core::limits::LimitExceeded;
use taskkeeper_core::settings::Limits;
use taskkeeper_core::task::PartContent;
use taskkeeper_core::{Artifact, Part, Role, Task, TaskId};

/// The daemon's files directory and the port its fetch URLs name.
#[derive(Clone, Debug)]
pub struct Files {
    root: PathBuf,
    port: u16,
}

/// Why a worker's attachment was refused. Each names the thing and the fix; nothing
/// changed.
#[derive(Debug, thiserror::Error)]
pub enum AttachError {
    #[error(
        "{path} is outside desk {desk}'s directory {dir} (symlinks resolved); attach only files inside the desk's directory, or copy the file there first; nothing changed"
    )]
    OutsideDesk {
        path: String,
        desk: String,
        dir: String,
    },
    #[error("{path} cannot be attached: {why}; nothing changed")]
    Unreadable { path: String, why: String },
    #[error("{0}; nothing changed")]
    Limit(#[from] LimitExceeded),
    #[error("the file could not be kept in Taskkeeper's data directory: {0}; nothing changed")]
    Keep(io::Error),
}

/// Decode an inline file part's bytes: base64 as ProtoJSON writes `bytes` (standard or
/// URL-safe alphabet, padded or not); `None` when it is not base64.
pub fn decode_raw(text: &str) -> Option<Vec<u8>> {
    let config =
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
    let standard = GeneralPurpose::new(&base64::alphabet::STANDARD, config);
    let url_safe = GeneralPurpose::new(&base64::alphabet::URL_SAFE, config);
    standard
        .decode(text)
        .or_else(|_| url_safe.decode(text))
        .ok()
}

/// How large the decoded bytes of `text` are, without decoding them (for the limit check
/// before anything else is done with a part).
pub fn decoded_len(text: &str) -> u64 {
    let data = text.trim_end_matches('=').len() as u64;
    data * 3 / 4
}

/// Write `bytes` at `path` (0600, its directories 0700), beside it first and renamed into
/// place, so a reader never sees half a file. `durable`: flushed to disk before the rename,
/// for a file whose only copy this is (a worker's artifact); an asker's file part is also in
/// the store, and a missing or short copy is written again before a delivery names it.
fn write_private(path: &Path, bytes: &[u8], durable: bool) -> io::Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| io::Error::other("a file needs a directory"))?;
    crate::private::ensure_private_dir(dir)?;
    let tmp = dir.join(format!(
        ".{}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("file")
    ));
    let mut options = std::fs::OpenOptions::new();
    options.create(true).write(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(&tmp)?;
    file.write_all(bytes)?;
    if durable {
        file.sync_all()?;
    }
    drop(file);
    std::fs::rename(&tmp, path)
}

impl Files {
    pub fn new(data_dir: &Path, port: u16) -> Self {
        Self {
            root: data_dir.join("files"),
            port,
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Save the inline file parts of every message of the asker's in `task` that is not
    /// saved yet (a new task's request, a follow-up), where the delivery text names them.
    pub fn save_inbound(&self, task: &Task) -> io::Result<()> {
        for (index, m) in task.history.iter().enumerate() {
            if m.role != Role::User {
                continue;
            }
            for (i, p) in m.parts.iter().enumerate() {
                let PartContent::Raw(raw) = &p.content else {
                    continue;
                };
                let path = taskkeeper_core::files::inbound_path(
                    &self.root,
                    &task.id,
                    index,
                    i,
                    p.media_type.as_deref(),
                );
                // Checked when the message came in; a part that does not decode now was
                // stored by an older version and is left out.
                let Some(bytes) = decode_raw(raw) else {
                    continue;
                };
                // Saved already (a crash may have left it short: then again).
                if std::fs::metadata(&path).is_ok_and(|m| m.len() == bytes.len() as u64) {
                    continue;
                }
                write_private(&path, &bytes, false)?;
            }
        }
        Ok(())
    }

    /// The fetch URL of file artifact `file` of `task`.
    pub fn url(&self, task: &Task, file: &str) -> String {
        format!(
            "http://127.0.0.1:{}/a2a/{}/tasks/{}/files/{file}",
            self.port, task.desk, task.id
        )
    }

    /// Artifacts from what a worker attaches: each file (a path inside `desk_dir`; a
    /// relative one is read from there) copied here as a file artifact named by its file
    /// name, its media type from that name; each data value as a data artifact. Refused
    /// whole (nothing kept) when one file is outside the desk's directory, not a readable
    /// file, or larger than `limits.file_bytes`.
    pub fn attach(
        &self,
        task: &Task,
        desk_dir: &Path,
        paths: &[String],
        data: Vec<Value>,
        limits: &Limits,
    ) -> Result<Vec<Artifact>, AttachError> {
        let dir = desk_dir
            .canonicalize()
            .map_err(|e| AttachError::Unreadable {
                path: desk_dir.display().to_string(),
                why: format!("the desk's directory cannot be read ({e})"),
            })?;
        let mut read = Vec::new();
        for given in paths {
            let path = dir.join(given);
            let unreadable = |why: String| AttachError::Unreadable {
                path: given.clone(),
                why,
            };
            let real = path
                .canonicalize()
                .map_err(|e| unreadable(format!("it cannot be found ({e})")))?;
            if !real.starts_with(&dir) {
                return Err(AttachError::OutsideDesk {
                    path: given.clone(),
                    desk: task.desk.to_string(),
                    dir: dir.display().to_string(),
                });
            }
            let file = std::fs::File::open(&real)
                .map_err(|e| unreadable(format!("it cannot be opened ({e})")))?;
            let meta = file
                .metadata()
                .map_err(|e| unreadable(format!("it cannot be read ({e})")))?;
            if !meta.is_file() {
                return Err(unreadable("it is not a file".into()));
            }
            let fix = "attach a smaller file, or put it where the asker can fetch it and attach its URL as data";
            taskkeeper_core::limits::file(&format!("file {given}"), meta.len(), fix, limits)?;
            let mut bytes = Vec::new();
            // Read at most one byte past the limit: a file that grew meanwhile is refused too.
            file.take(limits.file_bytes + 1)
                .read_to_end(&mut bytes)
                .map_err(|e| unreadable(format!("it cannot be read ({e})")))?;
            taskkeeper_core::limits::file(
                &format!("file {given}"),
                bytes.len() as u64,
                fix,
                limits,
            )?;
            let name = real
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "file".to_owned());
            read.push((name, bytes));
        }
        let mut artifacts = Vec::new();
        for (name, bytes) in read {
            let id = taskkeeper_core::files::new_file_id();
            let Some(path) = taskkeeper_core::files::artifact_path(&self.root, &task.id, &id)
            else {
                continue;
            };
            write_private(&path, &bytes, true).map_err(AttachError::Keep)?;
            let part = Part {
                content: PartContent::Url(self.url(task, &id)),
                metadata: None,
                media_type: Some(taskkeeper_core::files::media_type_of(&name)),
                filename: Some(name.clone()),
            };
            artifacts.push(Artifact {
                artifact_id: id,
                name: Some(name),
                description: None,
                parts: vec![part],
                metadata: None,
                extensions: Vec::new(),
            });
        }
        for value in data {
            let size = serde_json::to_vec(&value).map_or(0, |v| v.len() as u64);
            taskkeeper_core::limits::file(
                "a data artifact",
                size,
                "attach less data, or write it to a file and attach the file",
                limits,
            )?;
            artifacts.push(Artifact {
                artifact_id: taskkeeper_core::files::new_data_id(),
                name: Some("data".to_owned()),
                description: None,
                parts: vec![Part {
                    content: PartContent::Data(value),
                    metadata: None,
                    media_type: Some("application/json".to_owned()),
                    filename: None,
                }],
                metadata: None,
                extensions: Vec::new(),
            });
        }
        Ok(artifacts)
    }

    /// The bytes of file artifact `file` of `task`, with its media type and name, when the
    /// task has that artifact and its file is kept.
    pub fn artifact(&self, task: &Task, file: &str) -> Option<(Vec<u8>, String, String)> {
        let artifact = task.artifacts.iter().find(|a| a.artifact_id == file)?;
        let part = artifact
            .parts
            .iter()
            .find(|p| matches!(p.content, PartContent::Url(_)))?;
        let path = taskkeeper_core::files::artifact_path(&self.root, &task.id, file)?;
        let bytes = std::fs::read(path).ok()?;
        Some((
            bytes,
            part.media_type
                .clone()
                .unwrap_or_else(|| "application/octet-stream".to_owned()),
            part.filename.clone().unwrap_or_else(|| file.to_owned()),
        ))
    }

    /// Remove the files of every task `kept` says is gone (after pruning).
    pub fn prune(&self, kept: impl Fn(&TaskId) -> bool) -> io::Result<usize> {
        let entries = match std::fs::read_dir(&self.root) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(e),
        };
        let mut removed = 0;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !kept(&TaskId::from(name.as_str())) {
                std::fs::remove_dir_all(entry.path())?;
                removed += 1;
            }
        }
        Ok(removed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_bytes_decode_in_either_alphabet_with_or_without_padding() {
        assert_eq!(decode_raw("aGVsbG8="), Some(b"hello".to_vec()));
        assert_eq!(decode_raw("aGVsbG8"), Some(b"hello".to_vec()));
        assert_eq!(decode_raw("-_8"), Some(vec![0xfb, 0xff]));
        assert_eq!(decode_raw("not base64!"), None);
        assert_eq!(decoded_len("aGVsbG8="), 5);
    }
}
