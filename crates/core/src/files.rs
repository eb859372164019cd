//! Files that travel with tasks, as naming rules: where the daemon keeps a file part an asker
//! sent (so the worker can open it by path) and a file a worker attached (so the asker can
//! fetch it), and which media type a file has.
//!
//! Every name under the files directory is the daemon's own: the task's id (a UUID the
//! server chose), then the position of the message and the part, or an artifact id the
//! daemon made. A name or path an asker or a worker gives never becomes part of one, so no
//! `..`, separator or odd character of theirs can choose where a file is written. Nothing
//! here touches the disk; the server reads and writes the files.

use std::path::{Path, PathBuf};

use crate::task::TaskId;

/// The directory of one task's files, under the daemon's files directory.
pub fn task_dir(root: &Path, task: &TaskId) -> PathBuf {
    root.join(task.as_str())
}

/// Where the file of part `part` of message `message` (positions in the task's history)
/// is kept: `<root>/<task>/in/m<message>-p<part>` and an extension for its media type, so the
/// worker's tools can tell what it is.
pub fn inbound_path(
    root: &Path,
    task: &TaskId,
    message: usize,
    part: usize,
    media_type: Option<&str>,
) -> PathBuf {
    let ext = media_type
        .and_then(extension_for)
        .map(|e| format!(".{e}"))
        .unwrap_or_default();
    task_dir(root, task)
        .join("in")
        .join(format!("m{message}-p{part}{ext}"))
}

/// Where the bytes of file artifact `file` of a task are kept.
pub fn artifact_path(root: &Path, task: &TaskId, file: &str) -> Option<PathBuf> {
    is_file_id(file).then(|| task_dir(root, task).join("out").join(file))
}

/// A new id for a file artifact (also its artifact id).
pub fn new_file_id() -> String {
    format!("file-{}", uuid::Uuid::new_v4().simple())
}

/// A new id for a data artifact.
pub fn new_data_id() -> String {
    format!("data-{}", uuid::Uuid::new_v4().simple())
}

/// Whether `id` is one [`new_file_id`] makes: only such ids are ever looked up on disk.
pub fn is_file_id(id: &str) -> bool {
    id.strip_prefix("file-")
        .is_some_and(|hex| hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The media type of a file, from its name (`application/octet-stream` when unknown).
pub fn media_type_of(name: &str) -> String {
    mime_guess::from_path(name)
        .first_or_octet_stream()
        .essence_str()
        .to_owned()
}

/// The usual extension of a media type, if it has a well-known one. Only the table's own
/// extensions come back (letters and digits), never the asker's text.
pub fn extension_for(media_type: &str) -> Option<&'static str> {
    let essence = media_type.split(';').next()?.trim().to_ascii_lowercase();
    let exts = mime_guess::get_mime_extensions_str(&essence)?;
    // The table lists some types' extensions in no useful order: prefer the common ones.
    let preferred = ["txt", "json", "md", "csv", "html", "png", "jpg", "pdf"];
    preferred
        .iter()
        .find_map(|p| exts.iter().find(|e| *e == p))
        .or_else(|| exts.first())
        .copied()
        .filter(|e| e.bytes().all(|b| b.is_ascii_alphanumeric()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_daemon_names_every_file_itself() {
        let root = Path::new("/data/files");
        let t = TaskId::from("3f0c");
        assert_eq!(
            inbound_path(root, &t, 0, 1, Some("text/plain; charset=utf-8")),
            Path::new("/data/files/3f0c/in/m0-p1.txt")
        );
        assert_eq!(
            inbound_path(root, &t, 2, 0, Some("application/x-made-up")),
            Path::new("/data/files/3f0c/in/m2-p0")
        );
        assert_eq!(
            inbound_path(root, &t, 2, 0, None),
            Path::new("/data/files/3f0c/in/m2-p0")
        );
        let id = new_file_id();
        assert!(is_file_id(&id), "{id}");
        assert!(artifact_path(root, &t, &id).is_some());
        for bad in ["../token", "file-../../x", "file-", "data-00", "file-zz"] {
            assert!(artifact_path(root, &t, bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn media_types_come_from_the_name() {
        assert_eq!(media_type_of("report.pdf"), "application/pdf");
        assert_eq!(media_type_of("out/notes.txt"), "text/plain");
        assert_eq!(media_type_of("Makefile"), "application/octet-stream");
        assert_eq!(extension_for("application/json"), Some("json"));
        assert_eq!(extension_for("image/png"), Some("png"));
    }
}
